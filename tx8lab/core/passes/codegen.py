"""codegen: write main.c, one C function per group plus ``main`` (seed 001 genOpCode).

Spec: seed 001 ("TX8 Compiler": BEIR calls the op library to generate main.c;
OpLibInterface ``genOpCode``; the BatchNorm main.c load -> compute -> store loop; TSR /
L_SHAPE / G_SHAPE; the AddVS example's cycle accumulation). The last pass of the default
pipeline: for every top-level group it rebuilds the schedule group-cost wrote into the IR
and emits the loop nest with one op-library call per task (``tx8lab.core.codegen``, whose
module docstring lists the readings); the IR is returned unchanged.

Readings chosen where the seed is vague:

- The C is an artifact, not IR: ``PassResult.artifacts["c"]`` maps each group id to its
  C text (tables and function) and ``artifacts["main_c"]`` is the whole main.c; the
  module comes back as it came in (the same object), so the passes before stay cached.
- One decision per group: ``emitted`` with its call count, or ``reused`` when the text is
  a renamed copy of an earlier group with the same structure and schedule (the cache).
- The ``#include "tx8_oplib.h"`` names the header the package ships
  (``tx8lab/kernels/include/tx8_oplib.h``); ``header_path()`` gives its path and
  :func:`write_c` (``tx8lab run --emit-c OUT_DIR``) writes ``main.c`` beside a copy of it,
  so ``gcc -fsyntax-only OUT_DIR/main.c`` works there; one file for the whole module (the
  per-group texts are in the artifacts and the views).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import ClassVar

from tx8lab.core.codegen import CodegenCache, groups_c, main_c
from tx8lab.core.ir import Module
from tx8lab.core.passes.base import Pass, PassResult, Step
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

#: The header main.c includes, as shipped in the package.
HEADER_NAME = "tx8_oplib.h"


def header_path() -> Path:
    """Path of the shipped ``tx8_oplib.h`` (``tx8lab/kernels/include``)."""
    return Path(str(resources.files("tx8lab.kernels").joinpath("include", HEADER_NAME)))


@dataclass(frozen=True)
class Codegen(Pass):
    """Emit main.c (see the module docstring)."""

    name: ClassVar[str] = "codegen"
    summary: ClassVar[str] = "write main.c: per group the loop nest of op-library calls"

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        cache = CodegenCache()
        groups = groups_c(module, hw, cache)
        decisions = []
        for g in groups:
            if g.template is None:
                decision = self.decide(
                    g.group_id,
                    "emitted",
                    f"{g.function}: {g.calls} op-library calls"
                    + (", then a barrier" if g.need_barrier else ""),
                    calls=g.calls,
                    c_bytes=len(g.text),
                )
            else:
                decision = self.decide(
                    g.group_id,
                    "reused",
                    f"{g.function}: the text of group %{g.template} (same structure and "
                    "schedule) with this group's ids",
                    related=[g.template],
                    calls=g.calls,
                    c_bytes=len(g.text),
                )
            decisions.append(decision)
        text = main_c(module, hw, groups)
        stats = {
            "groups": len(groups),
            "calls": sum(g.calls for g in groups),
            "bytes": len(text.encode()),
            "lines": text.count("\n"),
            "cache_hits": cache.hits,
            "cache_misses": cache.misses,
        }
        artifacts = {"c": {g.group_id: g.text for g in groups}, "main_c": text}
        return PassResult(module, tuple(decisions), stats, artifacts)


def write_c(out_dir: str | Path, steps: Iterable[Step]) -> list[Path]:
    """Write the codegen step's main.c and a copy of ``tx8_oplib.h`` into ``out_dir``.

    Returns the written paths (main.c first). The directory is created when missing.

    Raises:
        Tx8labError: no codegen step among ``steps``, or ``out_dir`` cannot be written.
    """
    step = next((s for s in steps if s.name == Codegen.name), None)
    if step is None:
        raise Tx8labError(
            "--emit-c needs the codegen pass (the last of the default pipeline); it did not "
            "run (check --passes / --until)"
        )
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        main = out / "main.c"
        main.write_text(step.result.artifacts["main_c"], encoding="utf-8")
        header = out / HEADER_NAME
        header.write_text(header_path().read_text(encoding="utf-8"), encoding="utf-8")
    except OSError as err:
        raise Tx8labError(
            f"--emit-c: cannot write to {out_dir} ({err.strerror or err}); give a writable "
            "directory"
        ) from err
    return [main, header]
