"""group: the pipeline's grouping step, by pattern automaton or by HDFG matching.

Spec: DESIGN.md §5 ("group-pattern (or group-hdfg)") and §7 ("the grouping choice is
``group.strategy=pattern|hdfg``"); seed 001 GroupPatternPass and seed 002 fuse_op_hw.

The two groupers are passes of their own (``group-pattern``, ``group-hdfg``) that can be
run by name. This pass is the one the default pipeline holds: its knob ``strategy`` picks
which of the two runs, so a notebook's knob panel (and ``--set group.strategy=hdfg``)
switches grouping without rebuilding the pipeline.

Readings chosen:

- The step is named ``group`` whichever grouper runs; its stats say which
  (``strategy``) and its decisions keep the grouper's own pass name
  (``group-pattern`` / ``group-hdfg``), so a view shows which algorithm decided.
- The other grouper's knobs are ignored (and say so in the knob help), not rejected, so a
  panel can keep both sets of values while the strategy toggles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tx8lab.core.ir import Module
from tx8lab.core.passes.base import Pass, PassResult, knob
from tx8lab.core.passes.group_hdfg import UNMAPPED_MODES, GroupHDFG
from tx8lab.core.passes.group_pattern import GroupPattern
from tx8lab.hw.config import ChipConfig

#: strategy -> the pass that does the grouping (the registry lists the same classes)
GROUPERS: dict[str, type[Pass]] = {"pattern": GroupPattern, "hdfg": GroupHDFG}


@dataclass(frozen=True)
class Group(Pass):
    """Run group-pattern or group-hdfg (see the module docstring)."""

    name: ClassVar[str] = "group"
    summary: ClassVar[str] = "group ops: pattern automaton (seed 001) or HDFG matching (seed 002)"

    strategy: str = knob(
        "pattern",
        "pattern: group-pattern's trie of op-kind patterns; hdfg: seed 002's dataflow graph",
        choices=tuple(GROUPERS),
    )
    """Set from Python or ``--set group.strategy=hdfg``."""
    opt_group: str = knob(
        "auto", "pattern config for strategy=pattern (auto: cnn when Conv2d ops >= matmuls)"
    )
    """The group-pattern config (``tx8lab/core/data/group_patterns_<name>.txt``)."""
    patterns_file: str = knob(
        "", "a pattern file to use instead of opt_group's config (strategy=pattern)"
    )
    """group-pattern's ``patterns_file``: a file of one's own patterns; empty: none."""
    graph: str = knob("opu", "HDFG for strategy=hdfg (tx8lab/core/data/hdfg_<name>.txt)")
    """The group-hdfg hardware dataflow graph."""
    unmapped: str = knob(
        "seed",
        "for strategy=hdfg, ops outside the op map: seed (ride along) or out (stay out)",
        choices=UNMAPPED_MODES,
    )
    """group-hdfg's ``unmapped``: the seed's virtually mapped ops, or the earlier reading."""

    def grouper(self) -> Pass:
        """The pass this strategy runs, with its knob."""
        # the knob's choices are checked when the pass is made, so the key exists
        cls = GROUPERS[self.strategy]
        knobs = (
            {"opt_group": self.opt_group, "patterns_file": self.patterns_file}
            if self.strategy == "pattern"
            else {"graph": self.graph, "unmapped": self.unmapped}
        )
        return cls(**knobs)

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        inner = self.grouper()
        result = inner.run(module, hw)
        stats: dict[str, int | float | str] = {"strategy": self.strategy, **result.stats}
        return PassResult(result.module, result.decisions, stats, result.artifacts)

    def check(self, module: Module) -> list[str]:
        """The grouper's own post-condition."""
        return self.grouper().check(module)
