"""The JSON report of one pipeline run (``tx8lab run --json OUT.json``).

Spec: DESIGN.md §7: at least ``model``, ``num_ops``, ``passes`` (name, wall_s, changed,
num_ops_after), ``layout.channel_norms``, ``groups``, ``total_cycles``, ``hw`` (preset name
and values).

Readings chosen:

- A section whose pass has not run is **absent**, never faked: ``layout`` appears only
  when a ``layout-align-npu`` step ran (see :func:`layout_section`); ``constants`` when
  ``move-constant`` ran (:func:`~tx8lab.core.constants.constants_summary` of the final
  module); ``groups`` when a grouping pass ran (``group``, ``group-pattern``,
  ``group-hdfg`` or ``group-optimization``): one entry per ``tx8be.Group`` of the final
  module (:func:`~tx8lab.core.group_report.group_entries`: id, ops, rule, group_tag,
  need_barrier). ``sharding``, ``split``, ``cycles`` and ``spm_peak_bytes`` per group and
  ``total_cycles`` / ``latency_s`` come only from a ``group-cost`` step (that step's
  ``artifacts["groups"]``, merged by group id, and its model estimate; see
  :func:`_cost_section` for the barriers). ``codegen`` (when the codegen pass ran) holds
  its stats (groups, calls, bytes, lines of main.c) and ``files``, the paths
  ``--emit-c`` wrote (empty without it).
- Per group, ``cycles`` are group-cost's simulated kernel body and ``plan_cycles`` the
  plan's (the lock-step timeline); ``plan_vs_simulated`` (:func:`plan_vs_simulated`)
  sums the two per engine over the model. ``simulated`` (after opt-ddr) is the whole
  program played by the tile simulator: groups not separated by a barrier may overlap
  there, so its ``latency_ms`` can be below ``total_cycles``.
- ``import_notes`` lists the conversions the ONNX import reported (a uint8 input held as
  i32, ...; :attr:`~tx8lab.core.ir.Module.import_notes`), empty for other inputs.
- ``num_ops`` counts the input module's ops (nested ones included, terminators not);
  ``num_ops_final`` the output's. Each pass entry adds its index, knobs, ops before,
  decision count, stats and whether the result came from a cache.
- Values that JSON lacks (tuples, enums, numpy scalars, dataclasses) are converted by
  :func:`to_jsonable`; anything else becomes its ``str``.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tx8lab.core.ir import Module
from tx8lab.core.passes.base import Step
from tx8lab.core.schedule.estimate import SIM_ENGINES, ModelEstimate
from tx8lab.hw.config import ChipConfig

if TYPE_CHECKING:
    from tx8lab.core.program import Program

#: Version of the report layout; bump when a key changes meaning.
REPORT_VERSION = 1

#: Steps after which the final module's tx8be.Group ops are reported as ``groups``.
GROUPING_PASSES = ("group", "group-pattern", "group-hdfg", "group-optimization")


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (dicts, lists, str, int, float, bool, None).

    Examples:
        >>> to_jsonable({"a": (1, 2), "b": np.int64(3), "c": float("inf")})
        {'a': [1, 2], 'b': 3, 'c': 'inf'}
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return f"<array {value.shape} {value.dtype}>"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    return str(value)


def step_to_json(step: Step) -> dict[str, Any]:
    """One ``passes`` entry."""
    return {
        "index": step.index,
        "name": step.name,
        "spec": step.pass_.spec(),
        "knobs": to_jsonable(step.knobs),
        "wall_s": step.elapsed_s,
        "changed": step.changed,
        "num_ops_before": step.num_ops_before,
        "num_ops_after": step.num_ops_after,
        "num_decisions": len(step.decisions),
        "stats": to_jsonable(step.stats),
        "cached": step.cached,
    }


def hw_to_json(hw: ChipConfig) -> dict[str, Any]:
    """``{"preset": name, "values": {...}}``."""
    return {"preset": hw.name, "values": to_jsonable(hw.to_dict())}


def _count_norms(module: Module) -> int:
    return sum(1 for op in module.walk() if op.kind == "tx8be.ChannelNorm")


def layout_section(align: Step, opt: Step | None) -> dict[str, Any]:
    """The report's ``layout`` section from the layout-align-npu (and -opt) steps.

    ``channel_norms`` counts the ChannelNorms left after the layout passes (after
    layout-align-opt when it ran); ``channel_norms_inserted`` those layout-align-npu
    inserted with its strategy; ``channel_norms_greedy`` / ``_optimal`` what each strategy
    inserts (the one not run is counted too unless its ``compare`` knob is off, and is
    then absent); ``rules`` how many ops each seed-000 rule colored.
    """
    stats = align.stats
    section: dict[str, Any] = {
        "channel_norms": _count_norms((opt or align).after),
        "channel_norms_inserted": stats.get("channel_norms"),
        "strategy": stats.get("strategy"),
    }
    for key in ("channel_norms_greedy", "channel_norms_optimal"):
        if key in stats:
            section[key] = stats[key]
    section["rules"] = {
        key.removeprefix("rule_"): value for key, value in stats.items() if key.startswith("rule_")
    }
    if opt is not None:
        section["erased"] = {
            "const": opt.stats.get("erased_const", 0),
            "redundant": opt.stats.get("erased_redundant", 0),
        }
    return section


def _cost_section(cost: Step, final: Module, groups: list[dict[str, Any]]) -> dict[str, Any]:
    """``groups`` merged with group-cost's per-group figures, and the model totals.

    group-cost runs before opt-barrier (the seed's order), so its own model estimate puts a
    barrier after every group (``total_cycles_all_barriers``); ``total_cycles`` and
    ``latency_s`` use the ``need_barrier`` flags of the final module, i.e. after
    opt-barrier when it ran. Across several chips (group-cost ``tp``) ``c2c_cycles`` is
    the chip-to-chip part of ``total_cycles``.
    """
    artifacts = cost.result.artifacts
    costed = {g["id"]: g for g in to_jsonable(artifacts.get("groups", []))}
    merged = [g | costed.pop(g["id"], {}) for g in groups] + list(costed.values())
    section: dict[str, Any] = {"groups": merged}
    model = artifacts.get("model")
    if model is None:
        return section
    flags = {
        op.id: op.attrs.get("need_barrier", True) is not False
        for func in final.functions
        for op in func.ops
        if op.kind == "tx8be.Group"
    }
    need = tuple(flags.get(g.group_id, True) for g in model.groups)
    final_model = dataclasses.replace(model, need_barrier=need)
    section["total_cycles"] = final_model.total_cycles
    section["latency_s"] = final_model.latency_s
    section["barriers"] = sum(need)
    section["barrier_cycles"] = model.barrier_cycles
    section["total_cycles_all_barriers"] = model.total_cycles
    if model.c2c_cycles:
        section["c2c_cycles"] = sum(model.c2c_cycles)
    section["plan_vs_simulated"] = plan_vs_simulated(final_model)
    return section


def plan_vs_simulated(model: ModelEstimate) -> dict[str, Any]:
    """The plan beside the simulated execution, summed over the groups, per engine.

    ``cycles``: the model total by the plan (lock-step makespans) and as group-cost
    reports it (simulated bodies where simulated), barriers and chip-to-chip transfers
    included alike. ``busy_cycles``: per simulator engine, the plan's busy cycles (its
    ``ld`` tasks run on ``rdma``, ``st`` on ``wdma``) and the simulated ones, each on the
    group's slowest tile; ``kcore`` (command issue) has no plan figure, as the plan
    charges issue inside each task. ``stall_cycles``: the simulated stalls per engine and
    reason. ``groups_simulated`` counts the groups with a simulation.
    """
    extra = model.barriers * model.barrier_cycles + sum(model.c2c_cycles)
    busy: dict[str, dict[str, int | None]] = {
        e: {"plan": None if e in ("dte", "kcore") else 0, "simulated": 0} for e in SIM_ENGINES
    }
    stalls: dict[str, dict[str, int]] = {}
    simulated = 0
    for g in model.groups:
        for engine, cycles in g.plan_busy_by_sim_engine.items():
            row = busy[engine]
            row["plan"] = (row["plan"] or 0) + cycles
        if g.sim is None:
            continue
        simulated += 1
        for engine, cycles in g.sim.busy.items():
            row = busy[engine]
            row["simulated"] = (row["simulated"] or 0) + cycles
        for engine, reasons in g.sim.stalls.items():
            for reason, cycles in reasons.items():
                if cycles:
                    per = stalls.setdefault(engine, {})
                    per[reason] = per.get(reason, 0) + cycles
    return {
        "cycles": {
            "plan": sum(g.plan_cycles for g in model.groups) + extra,
            "simulated": model.total_cycles,
        },
        "busy_cycles": busy,
        "stall_cycles": stalls,
        "groups_simulated": simulated,
        "groups": len(model.groups),
    }


def build_report(
    module: Module,
    steps: Iterable[Step],
    hw: ChipConfig,
    *,
    model: str | None = None,
    model_args: Mapping[str, Any] | None = None,
    knobs: Mapping[str, Any] | None = None,
    hw_overrides: Mapping[str, Any] | None = None,
    until: str | None = None,
    emitted_files: Iterable[str | Path] = (),
    program: Callable[[], Program] | None = None,
) -> dict[str, Any]:
    """The report for a run of ``steps`` on ``module`` (the pipeline's input).

    ``emitted_files`` are the files ``--emit-c`` wrote (listed under ``codegen.files``);
    ``program`` gives the final module's Program when the caller already has one
    (else it is built here for the ``simulated`` section).
    """
    steps = list(steps)
    final = steps[-1].after if steps else module
    name = model or str(module.attrs.get("tx8.model", "module"))
    report: dict[str, Any] = {
        "report_version": REPORT_VERSION,
        "model": name,
        "model_args": to_jsonable(dict(model_args or {})),
        "import_notes": list(module.import_notes),
        "num_ops": module.num_ops,
        "num_ops_final": final.num_ops,
        "pipeline": [s.name for s in steps],
        "knobs": to_jsonable(dict(knobs or {})),
        "until": until,
        "wall_s": sum(s.elapsed_s for s in steps),
        "passes": [step_to_json(s) for s in steps],
        "hw": hw_to_json(hw) | {"overrides": to_jsonable(dict(hw_overrides or {}))},
    }
    by_name = {s.name: s for s in steps}
    layout = by_name.get("layout-align-npu")
    if layout is not None:
        report["layout"] = layout_section(layout, by_name.get("layout-align-opt"))
    if "move-constant" in by_name:
        from tx8lab.core.constants import constants_summary

        report["constants"] = to_jsonable(constants_summary(final))
    if any(name in by_name for name in GROUPING_PASSES):
        from tx8lab.core.group_report import group_entries

        report["groups"] = to_jsonable(group_entries(final))
    cost = by_name.get("group-cost")
    if cost is not None:
        report.update(_cost_section(cost, final, report.get("groups", [])))
    if "opt-ddr" in by_name:
        report["simulated"] = _simulated(final, hw, program)
    codegen = by_name.get("codegen")
    if codegen is not None:
        report["codegen"] = to_jsonable(dict(codegen.stats)) | {
            "files": [str(p) for p in emitted_files]
        }
    return report


def _simulated(
    module: Module, hw: ChipConfig, program: Callable[[], Program] | None
) -> dict[str, Any]:
    """The program played by the tile simulator, or why it could not be."""
    from tx8lab.core.program import build_program
    from tx8lab.core.simulate import simulate_program, simulated_report
    from tx8lab.errors import Tx8labError

    try:
        built = program() if program is not None else build_program(module, hw)
    except Tx8labError as err:
        return {"error": str(err)}
    out: dict[str, Any] = to_jsonable(simulated_report(built, simulate_program(built, module, hw)))
    return out


def write_report(path: str | Path, report: Mapping[str, Any]) -> None:
    """Write ``report`` as indented JSON (keys in insertion order)."""
    Path(path).write_text(json.dumps(to_jsonable(report), indent=2) + "\n", encoding="utf-8")


__all__ = [
    "REPORT_VERSION",
    "build_report",
    "hw_to_json",
    "layout_section",
    "plan_vs_simulated",
    "step_to_json",
    "to_jsonable",
    "write_report",
]
