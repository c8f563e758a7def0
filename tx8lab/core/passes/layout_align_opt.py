"""layout-align-opt: erase the ChannelNorms that layout-align-npu did not need.

Spec: seed 001 ("LayoutAlignOptPass": the ``ConstChannelNormErase`` and
``RedundantChannelNormErase`` rewrite patterns), applied greedily until neither matches
(a fixpoint, as MLIR's pattern driver does).

- **ConstChannelNormErase**: a constant of rank <= 1 whose only user is a ChannelNorm.
  The ChannelNorm's users read the constant directly, the constant takes the layout the
  ChannelNorm produced (``dev_info.mem_layout``), and the ChannelNorm goes. Constants are
  data the compiler lays out itself, so converting them costs nothing at run time.
- **RedundantChannelNormErase**: two ChannelNorms of the same value; the later one's users
  read the earlier one and the later one goes.

Readings chosen where the seed is vague or its code is off:

- The seed's ConstChannelNormErase sets the constant to Cx (``align = true``) whatever
  the direction; we give it the layout the ChannelNorm produced, which is Cx for every
  ChannelNorm layout-align-npu puts after a constant (constants start NALIGN) and stays
  right should a ChannelNorm to NALIGN follow an aligned constant.
- The seed's RedundantChannelNormErase merges with *any* other ChannelNorm of the same
  input. Two ChannelNorms of one value with opposite directions produce different layouts
  and must both stay, so we merge only ChannelNorms with the same direction. Its guard
  ``isa<ConstantOp>(def) && def->getNumResults() > 1`` can never hold (a constant has one
  result); we drop it, and a function argument as input is allowed too.
- Values are unchanged: ChannelNorm's reference compute is the identity.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from tx8lab.core.attrs import DevInfo
from tx8lab.core.ir import Function, Module, Op, Value, remap_operands
from tx8lab.core.layouts import layout_for
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.core.passes.layout_align_npu import alignment_conflicts
from tx8lab.hw.config import ChipConfig

ValueKey = tuple[int, int, bool]


def _users(func: Function) -> dict[ValueKey, list[Op]]:
    uses: dict[ValueKey, list[Op]] = {}
    for op in func.ops:
        for v in op.operands:
            uses.setdefault(v.key, []).append(op)
    return uses


@dataclass(frozen=True)
class LayoutAlignOpt(Pass):
    """Erase ChannelNorms of small constants and duplicate ChannelNorms (to a fixpoint)."""

    name: ClassVar[str] = "layout-align-opt"
    summary: ClassVar[str] = "erase redundant ChannelNorms (ConstChannelNormErase, Redundant...)"

    const_erase: bool = knob(True, "apply ConstChannelNormErase (rank <= 1 constants)")
    """Set from Python or ``--set layout-align-opt.const_erase=false``."""
    redundant_erase: bool = knob(True, "apply RedundantChannelNormErase (same value, direction)")
    """Set from Python or ``--set layout-align-opt.redundant_erase=false``."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        decisions: list[Decision] = []
        functions = []
        rounds = 0
        for func in module.functions:
            ops = list(func.ops)
            while True:
                rounds += 1
                step = self._one_round(func.with_ops(ops), decisions)
                if step is None:
                    break
                ops = step
            functions.append(
                func
                if len(ops) == len(func.ops)
                and all(a is b for a, b in zip(ops, func.ops, strict=True))
                else func.with_ops(ops)
            )
        const = sum(1 for d in decisions if d.data.get("rule") == "ConstChannelNormErase")
        redundant = sum(1 for d in decisions if d.data.get("rule") == "RedundantChannelNormErase")
        stats: dict[str, int | float | str] = {
            "erased_const": const,
            "erased_redundant": redundant,
            "rounds": rounds,
            "channel_norms": sum(
                1 for f in functions for op in f.ops if op.kind == "tx8be.ChannelNorm"
            ),
        }
        if not decisions:
            return PassResult(module, (), stats)
        return PassResult(
            Module(tuple(functions), module.attrs, module.next_id), tuple(decisions), stats
        )

    def _one_round(self, func: Function, decisions: list[Decision]) -> list[Op] | None:
        """Apply every pattern once over the function; None when none matched.

        Matches are collected first and applied in one sweep (``remap_operands``), so a
        round costs O(ops) however many ChannelNorms go.
        """
        users = _users(func)
        mapping: dict[ValueKey, Value] = {}
        erased: set[int] = set()
        replaced: dict[int, Op] = {}
        first_norm: dict[tuple[ValueKey, bool], Op] = {}
        for op in func.ops:
            if op.id in erased:
                continue
            if self.const_erase and op.kind == "tx8be.Constant" and op.results:
                norm = self._const_match(op, users)
                if norm is not None:
                    new_const = self._const_erase(op, norm, decisions)
                    replaced[op.id] = new_const
                    mapping[norm.result.key] = new_const.result
                    erased.add(norm.id)
                    continue
            if self.redundant_erase and op.kind == "tx8be.ChannelNorm":
                key = (op.operands[0].key, bool(op.attrs.get("direction")))
                earlier = first_norm.setdefault(key, op)
                if earlier is op:
                    continue
                mapping[op.result.key] = earlier.result
                erased.add(op.id)
                decisions.append(
                    self.decide(
                        op.id,
                        "erased",
                        f"{earlier.label} already converts the same value "
                        f"(direction {str(key[1]).lower()}); its users read that one",
                        related=[earlier.id],
                        rule="RedundantChannelNormErase",
                    )
                )
        if not erased:
            return None
        kept = [replaced.get(o.id, o) for o in func.ops if o.id not in erased]
        return remap_operands(kept, mapping)

    @staticmethod
    def _const_match(op: Op, users: dict[ValueKey, list[Op]]) -> Op | None:
        uses = users.get(op.result.key, [])
        if len(uses) != 1 or op.result.type.rank > 1 or uses[0].kind != "tx8be.ChannelNorm":
            return None
        return uses[0]

    def _const_erase(self, const: Op, norm: Op, decisions: list[Decision]) -> Op:
        aligned = bool(norm.attrs.get("direction"))
        layout = layout_for(const.result.type.shape, aligned)
        old = const.attrs.get("dev_info")
        dev = (
            dataclasses.replace(old, mem_layout=layout)
            if isinstance(old, DevInfo)
            else DevInfo(mem_layout=layout)
        )
        decisions.append(
            self.decide(
                norm.id,
                "erased",
                f"its input {const.label} is a rank-{const.result.type.rank} constant with "
                f"no other user: the constant is stored {layout.value} instead",
                related=[const.id],
                rule="ConstChannelNormErase",
            )
        )
        return const.with_attrs(dev_info=dev)

    def check(self, module: Module) -> list[str]:
        """Post-condition: erasing kept every edge's layouts in agreement."""
        return alignment_conflicts(module)


__all__ = ["LayoutAlignOpt"]
