"""The pass registry: ``PASSES`` (name -> pass class), ``DEFAULT_PIPELINE``, name resolution.

Spec: DESIGN.md §5 and STYLE.md ("Registry"). Passes do not register themselves when
imported; each is imported here and listed once. ``DEFAULT_PIPELINE`` names the passes
that exist so far, in the order the seed's pipeline would run them (constant folding and
DCE clean the graph before layout-init), ending with ``codegen`` (main.c). Grouping is
the ``group`` pass, whose knob ``strategy`` runs ``group-pattern`` or ``group-hdfg`` (both
also runnable by name).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tx8lab.core.passes.base import Pass, parse_spec_entry, split_spec
from tx8lab.core.passes.codegen import Codegen
from tx8lab.core.passes.const_norm import ConstNorm
from tx8lab.core.passes.dce import DCE
from tx8lab.core.passes.fold_constants import FoldConstants
from tx8lab.core.passes.group import Group
from tx8lab.core.passes.group_cost import GroupCost
from tx8lab.core.passes.group_hdfg import GroupHDFG
from tx8lab.core.passes.group_ldst import GroupLdSt
from tx8lab.core.passes.group_mapping import GroupMapping
from tx8lab.core.passes.group_optimization import GroupOptimization
from tx8lab.core.passes.group_pattern import GroupPattern
from tx8lab.core.passes.layout_align_npu import LayoutAlignNPU
from tx8lab.core.passes.layout_align_opt import LayoutAlignOpt
from tx8lab.core.passes.layout_init import LayoutInit
from tx8lab.core.passes.layout_transmit import LayoutTransmit
from tx8lab.core.passes.move_constant import MoveConstant
from tx8lab.core.passes.opt_barrier import OptBarrier
from tx8lab.core.passes.opt_ddr import OptDDR
from tx8lab.errors import Tx8labError

#: Pass name -> pass class (the only registry).
PASSES: dict[str, type[Pass]] = {
    p.name: p
    for p in (
        FoldConstants,
        DCE,
        LayoutInit,
        LayoutTransmit,
        LayoutAlignNPU,
        LayoutAlignOpt,
        MoveConstant,
        ConstNorm,
        Group,
        GroupPattern,
        GroupHDFG,
        GroupOptimization,
        GroupLdSt,
        GroupMapping,
        GroupCost,
        OptBarrier,
        OptDDR,
        Codegen,
    )
}

#: Passes ``tx8lab run`` runs when no pipeline is named, in order.
DEFAULT_PIPELINE: list[str] = [
    "fold-constants",
    "dce",
    "layout-init",
    "layout-transmit",
    "layout-align-npu",
    "layout-align-opt",
    "move-constant",
    "const-norm",
    "group",
    "group-optimization",
    "group-ldst",
    "group-mapping",
    "group-cost",
    "opt-barrier",
    "opt-ddr",
    "codegen",
]


def get_pass(name: str) -> type[Pass]:
    """The pass class called ``name``, or an error listing the known passes."""
    cls = PASSES.get(name)
    if cls is None:
        raise Tx8labError(f"unknown pass {name!r}; known passes: {', '.join(PASSES)}")
    return cls


def build_pipeline(
    names: Sequence[str] | None = None,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
) -> list[Pass]:
    """Pass instances for ``names`` (default: ``DEFAULT_PIPELINE``) with knobs overridden.

    ``overrides`` maps ``"pass.knob"`` to a value (strings are parsed for the knob's type),
    or is a list of ``"pass.knob=value"`` strings as ``--set`` gives them.

    Examples:
        >>> [p.name for p in build_pipeline()][:3]
        ['fold-constants', 'dce', 'layout-init']
        >>> build_pipeline(overrides={"fold-constants.max_bytes": "4Ki"})[0].max_bytes
        4096
        >>> build_pipeline(overrides=["dce.depth=1"])
        Traceback (most recent call last):
        ...
        tx8lab.errors.Tx8labError: pass 'dce' has no knob 'depth'; its knobs: recurse_groups
    """
    chosen = list(DEFAULT_PIPELINE if names is None else names)
    return resolve_passes([get_pass(n)() for n in chosen], overrides)


def resolve_passes(
    passes: Iterable[Pass | str], knobs: Mapping[str, Any] | Iterable[str] | None = None
) -> list[Pass]:
    """Pass instances for names or instances, with ``pass.knob`` overrides applied.

    ``knobs`` maps ``"pass.knob"`` to a value (strings are parsed), or is a list of
    ``"pass.knob=value"`` strings as the command line gives them. A knob set for a pass
    name applies to every instance of that pass in the pipeline.
    """
    out: list[Pass] = []
    for item in passes:
        if isinstance(item, Pass):
            out.append(item)
        elif isinstance(item, str):
            out.append(get_pass(item)())
        else:
            raise Tx8labError(f"pipeline entry {item!r} is neither a Pass nor a pass name")
    for key, value in parse_knob_settings(knobs).items():
        pass_name, knob_name = split_knob_key(key)
        hits = [i for i, p in enumerate(out) if p.name == pass_name]
        if not hits:
            in_pipeline = ", ".join(p.name for p in out) or "none"
            if pass_name not in PASSES:
                known = ", ".join(PASSES)
                raise Tx8labError(f"knob {key}: unknown pass {pass_name!r}; known passes: {known}")
            raise Tx8labError(
                f"knob {key}: pass {pass_name!r} is not in the pipeline ({in_pipeline})"
            )
        for i in hits:
            out[i] = out[i].with_knobs(**{knob_name: value})
    return out


def split_knob_key(key: str) -> tuple[str, str]:
    """``"fold-constants.max_bytes"`` -> ``("fold-constants", "max_bytes")``."""
    pass_name, dot, knob_name = key.strip().rpartition(".")
    if not dot or not pass_name or not knob_name:
        raise Tx8labError(
            f"knob {key!r} is not <pass>.<knob>: write e.g. fold-constants.max_bytes=4096"
        )
    return pass_name, knob_name


def parse_knob_settings(knobs: Mapping[str, Any] | Iterable[str] | None) -> dict[str, Any]:
    """``{"pass.knob": value}`` from a mapping or from ``"pass.knob=value"`` strings."""
    if knobs is None:
        return {}
    if isinstance(knobs, Mapping):
        return dict(knobs)
    out: dict[str, Any] = {}
    for text in knobs:
        key, eq, value = str(text).partition("=")
        if not eq or not key.strip():
            raise Tx8labError(
                f"knob setting {text!r} is not pass.knob=value: write e.g. "
                "fold-constants.max_bytes=4096"
            )
        out[key.strip()] = value.strip()
    return out


def parse_pipeline_spec(text: str) -> list[Pass]:
    """The passes that MLIR pass-pipeline text names: ``'dce{recurse_groups=false},group'``.

    Each entry is ``name`` or ``name{knob=value knob2=value2}`` (:meth:`Pass.spec`);
    ``parse_pipeline_spec(pipeline_spec(ps)) == ps``.

    Examples:
        >>> parse_pipeline_spec("fold-constants{max_bytes=4Ki}, dce")
        [FoldConstants(max_bytes=4096), DCE(recurse_groups=True)]
        >>> parse_pipeline_spec("dce{depth=1}")
        Traceback (most recent call last):
        ...
        tx8lab.errors.Tx8labError: pass 'dce' has no knob 'depth'; its knobs: recurse_groups

    Raises:
        Tx8labError: unknown pass or knob, bad value, unbalanced braces or quotes.
    """
    if not text.strip():
        raise Tx8labError("empty pass pipeline: write e.g. 'dce{recurse_groups=false},group'")
    return [get_pass(parse_spec_entry(entry)[0]).from_spec(entry) for entry in split_spec(text)]


def pipeline_spec(passes: Iterable[Pass]) -> str:
    """The pass-pipeline text of ``passes``: their :meth:`Pass.spec` joined by commas."""
    return ",".join(p.spec() for p in passes)


def describe_passes() -> list[str]:
    """One line per registered pass with its knobs, for ``--help`` texts."""
    lines = []
    for name, cls in PASSES.items():
        knobs = "; ".join(k.describe() for k in cls.knobs()) or "no knobs"
        lines.append(f"{name}: {cls.summary} [{knobs}]")
    return lines


__all__ = [
    "DCE",
    "DEFAULT_PIPELINE",
    "PASSES",
    "Codegen",
    "ConstNorm",
    "FoldConstants",
    "Group",
    "GroupCost",
    "GroupHDFG",
    "GroupLdSt",
    "GroupMapping",
    "GroupOptimization",
    "GroupPattern",
    "LayoutInit",
    "LayoutTransmit",
    "MoveConstant",
    "OptBarrier",
    "OptDDR",
    "build_pipeline",
    "describe_passes",
    "get_pass",
    "parse_knob_settings",
    "parse_pipeline_spec",
    "pipeline_spec",
    "resolve_passes",
    "split_knob_key",
]
