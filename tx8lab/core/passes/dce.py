"""DCE: remove ops whose results nobody uses and that have no side effect.

Spec: none of the seeds names it; it is the clean-up every MLIR pipeline runs (the
canonicalizer's dead-op erasure), needed here after ``fold-constants`` leaves the constants
it folded away unused. One backward walk per block: an op is live when it has a side effect
or one of its results is used by a live op or the terminator.

Readings chosen:

- Side effects: ``tx8be.StoreVar`` (writes DDR), any op without results (it exists for its
  effect), an op kind the op library does not know (be safe), and a ``tx8be.Group`` whose
  body holds one of these. Loads (``LoadVar``, ``LoadConst``) only read, so a dead load
  goes.
- A multi-result op stays when any one of its results is used; results are never dropped
  from an op (that would renumber ``%7#1`` for its users).
- With ``recurse_groups`` (the default) dead ops inside a live ``tx8be.Group`` body go
  too; the group keeps its signature, so every value its ``tx8be.Return`` names stays. A
  dead group goes as a whole, with one decision that lists its body ops.
- Function arguments are never removed (they are the module's interface).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from tx8lab.core.ir import TERMINATORS, Block, Module, Op
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.hw.config import ChipConfig

#: Op kinds that act on the world besides defining their results.
SIDE_EFFECT_KINDS = frozenset({"tx8be.StoreVar"})


def has_side_effects(op: Op) -> bool:
    """Whether removing ``op`` could change more than its results' users see."""
    from tx8lab.core.ops import OPS

    if op.kind in SIDE_EFFECT_KINDS or not op.results:
        return True
    if op.kind == "tx8be.Group":
        return any(
            has_side_effects(inner) for inner in op.regions[0].ops if inner.kind not in TERMINATORS
        )
    return op.kind not in OPS


def _names(ids: Sequence[int]) -> str:
    return ", ".join(f"%{i}" for i in ids)


def dead_ops(block: Block) -> list[Op]:
    """Top-level ops of ``block`` that DCE would remove, in block order.

    Examples:
        >>> from tx8lab.core.builder import Builder
        >>> b = Builder(); x = b.input((2,)); _ = b.op("Neg", x); b.output(b.op("Relu", x))
        >>> [op.kind for op in dead_ops(b.finish().main.body)]
        ['tx8be.Neg']
    """
    used = {v.key for v in block.ops[-1].operands} if block.ops else set()
    dead: list[Op] = []
    for op in reversed(block.ops[:-1]):
        if has_side_effects(op) or any(r.key in used for r in op.results):
            used.update(v.key for v in op.operands)
        else:
            dead.append(op)
    dead.reverse()
    return dead


@dataclass(frozen=True)
class DCE(Pass):
    """Dead-code elimination (see the module docstring)."""

    name: ClassVar[str] = "dce"
    summary: ClassVar[str] = "remove ops whose results are unused and that have no side effect"

    recurse_groups: bool = knob(True, "also remove dead ops inside tx8be.Group bodies")
    """Set from Python or ``--set dce.recurse_groups=false``."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        decisions: list[Decision] = []
        functions = []
        for func in module.functions:
            body = self._sweep(func.body, decisions)
            functions.append(func if body is func.body else func.with_ops(body.ops))
        removed = [d for d in decisions if d.choice == "removed"]
        stats = {
            # ops removed, the bodies of removed groups included
            "removed": sum(1 + len(d.related_ids) for d in removed),
            "kept_for_side_effects": sum(1 for d in decisions if d.choice == "kept"),
        }
        if all(f is g for f, g in zip(functions, module.functions, strict=True)):
            return PassResult(module, tuple(decisions), stats)
        out = Module(tuple(functions), module.attrs, module.next_id)
        return PassResult(out, tuple(decisions), stats)

    def _sweep(self, block: Block, decisions: list[Decision]) -> Block:
        """``block`` without its dead ops (the same object when nothing is dead)."""
        users: dict[tuple[int, int, bool], list[int]] = {}
        for op in block.ops:
            for v in op.operands:
                users.setdefault(v.key, []).append(op.id)
        used = {v.key for v in block.ops[-1].operands}
        kept: list[Op] = [block.ops[-1]]
        found: list[Decision] = []
        changed = False
        for op in reversed(block.ops[:-1]):
            live_use = any(r.key in used for r in op.results)
            if live_use or has_side_effects(op):
                if not live_use:
                    found.append(self._kept(op))
                if op.kind == "tx8be.Group" and self.recurse_groups:
                    inner_found: list[Decision] = []
                    inner = self._sweep(op.regions[0], inner_found)
                    # ``found`` is in reverse block order until the end
                    found.extend(reversed(inner_found))
                    if inner is not op.regions[0]:
                        op = op.replace(regions=(inner,))
                        changed = True
                used.update(v.key for v in op.operands)
                kept.append(op)
                continue
            changed = True
            found.append(self._removed(op, users))
        decisions.extend(reversed(found))
        if not changed:
            return block
        kept.reverse()
        return Block(block.args, tuple(kept))

    def _removed(self, op: Op, users: dict[tuple[int, int, bool], list[int]]) -> Decision:
        op_users = sorted({u for r in op.results for u in users.get(r.key, ())})
        if not op_users:
            what = (
                "its result has no user"
                if len(op.results) == 1
                else ("none of its results has a user")
            )
            reason = f"{what} and {op.kind} has no side effect"
        else:
            # every user is dead too: a live one would have kept this op
            reason = f"its only users ({_names(op_users)}) are dead and removed too"
        inner = [i.id for i in op.walk() if i is not op and i.kind not in TERMINATORS]
        if inner:
            reason += f"; its body ops {_names(inner)} go with it"
        return self.decide(op.id, "removed", reason, related=inner, kind=op.kind)

    def _kept(self, op: Op) -> Decision:
        if op.kind in SIDE_EFFECT_KINDS:
            why = f"{op.kind} has a side effect (it writes DDR)"
        elif not op.results:
            why = "an op without results exists for its side effect"
        elif op.kind == "tx8be.Group":
            why = "its body has an op with a side effect"
        else:
            why = f"{op.kind} is not in the op library, so its effects are unknown"
        return self.decide(op.id, "kept", f"unused, but kept: {why}", kind=op.kind)

    def check(self, module: Module) -> list[str]:
        """Post-condition: no dead op is left (in group bodies too with ``recurse_groups``)."""
        problems = []
        for func in module.functions:
            blocks = [func.body]
            if self.recurse_groups:
                blocks += [op.regions[0] for op in func.walk() if op.kind == "tx8be.Group"]
            problems += [
                f"{op.label}: dead op left after dce" for b in blocks for op in dead_ops(b)
            ]
        return problems
