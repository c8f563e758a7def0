"""group-optimization: every compute op still in no group gets its own ``tx8be.Group``.

Spec: seed 001 ("GroupOptimizationPass", ``createSingleGroup``): for each op that is not a
GroupOp, ReturnOp, LoadConstOp or NoneOp, a new GroupOp whose inputs are the op's
operands produced by other compute ops, whose outputs are the op's results, and into
which the op's LoadConst dependencies are moved, before the op. One walk over the top
level: outline the singletons (:func:`tx8lab.core.grouping.outline`), then move each
constant that feeds a group into that group's body.

Readings chosen where the seed is vague:

- **Which ops.** Compute ops (:func:`tx8lab.core.grouping.is_compute`) at the top level of
  every function. Constants, loads, stores and tuples are not compute and stay where they
  are unless they are moved as dependencies. Each new group has ``group_rule = "single"``.
- **Constants too.** Before ``move-constant`` every weight is still a ``tx8be.Constant``;
  it is moved like a ``LoadConst`` (it is what the LoadConst would be), so the pass gives
  self-contained groups whichever passes ran before it.
- **Every group.** A constant feeding a group that already existed (``group-pattern``,
  ``group-hdfg``) is moved into it too: its operand and block argument go, the constant
  stands first in the body. So after the pass no group reads a top-level constant.
- **Shared constants are cloned.** A constant read by several groups cannot sit in all of
  their bodies, so the first reading group (program order) gets the op itself and every
  other one a copy with a fresh id, the same attributes (``const_id``, data) and
  ``tx8.created_by = "group-optimization"``; values stay identical and the copies share
  one DDR buffer (``opt-ddr`` places by ``const_id``). A constant that a non-group op or
  the function's return also reads stays at the top level and every group gets a copy.
  The seed's ConstantToLoadConst makes one LoadConst per use, so this is rare after it.
- **Where inside.** Moved constants stand at the start of the body, in operand order (the
  seed moves them "to group end" before moving the op, i.e. before the op).
- The top level stays topologically sorted (``outline`` re-sorts; moving a constant into a
  group cannot break an order). Post-condition (:meth:`GroupOptimization.check`): no
  compute op at the top level, no group inside a group, every operand defined before its
  user (groups acyclic), and with ``move_constants`` no group reading a top-level constant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from tx8lab.core.grouping import is_compute, outline
from tx8lab.core.ir import (
    TERMINATORS,
    Block,
    Function,
    IdCounter,
    Module,
    Op,
    Value,
    remap_operands,
)
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.hw.config import ChipConfig

ValueKey = tuple[int, int, bool]

#: Ops moved into the groups they feed (seed: LoadConstOp, NoneOp; here also Constant).
CONST_KINDS = frozenset({"tx8be.Constant", "tx8be.LoadConst"})

#: ``group_rule`` of the groups this pass makes.
SINGLE_RULE = "single"


def ungrouped_compute_ops(func: Function) -> list[Op]:
    """Top-level compute ops of ``func`` (those group-optimization puts in a group).

    Examples:
        >>> from tx8lab.core.builder import Builder
        >>> b = Builder(); x = b.input((2,)); b.output(b.op("Relu", b.op("Neg", x)))
        >>> [op.kind for op in ungrouped_compute_ops(b.finish().main)]
        ['tx8be.Neg', 'tx8be.Relu']
    """
    return [op for op in func.ops if op.kind not in TERMINATORS and is_compute(op)]


def absorb_constants(group: Op, inside: Mapping[int, Op]) -> Op:
    """``group`` with the operands listed in ``inside`` (operand index -> const op) moved in.

    Each listed operand and its block argument go; the const op stands at the start of the
    body (once per distinct op) and the body reads it where it read the argument. The
    remaining block arguments are renumbered; the results do not change.
    """
    body = group.regions[0]
    kept = [i for i in range(len(group.operands)) if i not in inside]
    new_args = tuple(Value(group.id, n, body.args[i].type, is_arg=True) for n, i in enumerate(kept))
    mapping: dict[ValueKey, Value] = {
        body.args[i].key: arg for i, arg in zip(kept, new_args, strict=True)
    }
    placed: list[Op] = []
    for index in sorted(inside):
        const = inside[index]
        if all(p is not const for p in placed):
            placed.append(const)
        mapping[body.args[index].key] = const.results[0]
    ops = remap_operands(body.ops, mapping)
    return group.replace(
        operands=tuple(group.operands[i] for i in kept),
        regions=(Block(new_args, (*placed, *ops)),),
    )


def _names(ids: Sequence[int]) -> str:
    return ", ".join(f"%{i}" for i in ids)


@dataclass(frozen=True)
class GroupOptimization(Pass):
    """One group per remaining compute op; constants move into the groups they feed."""

    name: ClassVar[str] = "group-optimization"
    summary: ClassVar[str] = (
        "a tx8be.Group for every compute op in none (createSingleGroup), constants moved in"
    )

    move_constants: bool = knob(
        True, "move the Constant/LoadConst ops feeding a group into its body (seed: yes)"
    )
    """Set from Python or ``--set group-optimization.move_constants=false``."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        ids = IdCounter(module.next_id)
        decisions: list[Decision] = []
        functions = []
        counts = {"single_groups": 0, "moved": 0, "cloned": 0}
        for func in module.functions:
            new = self._singles(func, ids, decisions, counts)
            if self.move_constants:
                new = self._move_constants(new, ids, decisions, counts)
            functions.append(new)
        stats: dict[str, int | float | str] = {
            **counts,
            "groups": sum(1 for f in functions for op in f.ops if op.kind == "tx8be.Group"),
        }
        if all(a is b for a, b in zip(functions, module.functions, strict=True)):
            return PassResult(module, tuple(decisions), stats)
        return PassResult(
            Module(tuple(functions), module.attrs, ids.next_id), tuple(decisions), stats
        )

    def _singles(
        self, func: Function, ids: IdCounter, decisions: list[Decision], counts: dict[str, int]
    ) -> Function:
        singles = ungrouped_compute_ops(func)
        if not singles:
            return func
        new, groups = outline(
            func,
            [[op.id] for op in singles],
            ids,
            attrs=[{"group_rule": SINGLE_RULE}] * len(singles),
            created_by=self.name,
        )
        for op, group in zip(singles, groups, strict=True):
            decisions.append(
                self.decide(
                    group.id,
                    "single",
                    f"{op.label} was in no group: it gets its own (createSingleGroup)",
                    related=[op.id],
                    kind=op.kind,
                )
            )
        counts["single_groups"] += len(singles)
        return new

    def _move_constants(
        self, func: Function, ids: IdCounter, decisions: list[Decision], counts: dict[str, int]
    ) -> Function:
        ops = func.ops
        consts = {op.results[0].key: op for op in ops if op.kind in CONST_KINDS and op.results}
        if not consts:
            return func
        # const key -> groups reading it (program order), and consts other ops also read
        readers: dict[ValueKey, list[Op]] = {}
        kept_outside: set[ValueKey] = set()
        for op in ops:
            for v in op.operands:
                if v.key not in consts:
                    continue
                if op.kind == "tx8be.Group":
                    groups = readers.setdefault(v.key, [])
                    if not groups or groups[-1] is not op:
                        groups.append(op)
                else:
                    kept_outside.add(v.key)
        if not readers:
            return func
        # group id -> operand index -> the const op its body gets
        inside: dict[int, dict[int, Op]] = {}
        for key, groups in readers.items():
            const = consts[key]
            copies: list[Op] = []
            for n, group in enumerate(groups):
                if n == 0 and key not in kept_outside:
                    copy = const
                    decisions.append(self._moved(const, group, groups))
                    counts["moved"] += 1
                else:
                    copy = const.replace(
                        id=(new_id := ids()),
                        results=(Value(new_id, 0, const.results[0].type),),
                        created_by=self.name,
                    )
                    decisions.append(self._cloned(const, copy, group, key in kept_outside))
                    counts["cloned"] += 1
                copies.append(copy)
                slots = inside.setdefault(group.id, {})
                for index, v in enumerate(group.operands):
                    if v.key == key:
                        slots[index] = copy
        gone = {consts[key].id for key in readers if key not in kept_outside}
        out = [
            absorb_constants(op, inside[op.id]) if op.id in inside else op
            for op in ops
            if op.id not in gone
        ]
        return func.with_ops(out)

    def _moved(self, const: Op, group: Op, groups: list[Op]) -> Decision:
        if len(groups) == 1:
            reason = f"{const.label} feeds only {group.label}: moved inside as a dependency"
        else:
            others = _names([g.id for g in groups[1:]])
            reason = (
                f"{const.label} feeds {len(groups)} groups: moved into the first, "
                f"{group.label}; {others} get copies"
            )
        return self.decide(const.id, "moved", reason, related=[group.id], group=group.id)

    def _cloned(self, const: Op, copy: Op, group: Op, outside: bool) -> Decision:
        why = (
            "a non-group op or the return also reads it, so it stays at the top level"
            if outside
            else "another group already holds the op itself"
        )
        return self.decide(
            copy.id,
            "cloned",
            f"copy of {const.label} (same attributes and data) moved into {group.label}: {why}",
            related=[const.id, group.id],
            group=group.id,
            original=const.id,
        )

    def check(self, module: Module) -> list[str]:
        """Post-condition: every compute op in exactly one group, groups acyclic."""
        problems: list[str] = []
        for func in module.functions:
            defined: set[ValueKey] = {a.key for a in func.args}
            consts: set[ValueKey] = set()
            for op in func.ops:
                if op.kind not in TERMINATORS and is_compute(op):
                    problems.append(
                        f"{op.label}: compute op outside any group after group-optimization"
                    )
                for index, v in enumerate(op.operands):
                    if v.key not in defined:
                        problems.append(
                            f"{op.label}: operand {index} is defined after it "
                            "(the groups depend on each other in a cycle)"
                        )
                    elif self.move_constants and op.kind == "tx8be.Group" and v.key in consts:
                        problems.append(
                            f"{op.label}: reads top-level constant %{v.owner}; it should "
                            "have been moved into the group"
                        )
                if op.kind == "tx8be.Group":
                    problems += [
                        f"{inner.label}: group inside group {op.label} (a compute op must be "
                        "in exactly one group)"
                        for inner in op.walk()
                        if inner is not op and inner.kind == "tx8be.Group"
                    ]
                if op.kind in CONST_KINDS:
                    consts.update(r.key for r in op.results)
                defined.update(r.key for r in op.results)
        return problems


__all__ = ["CONST_KINDS", "SINGLE_RULE", "GroupOptimization", "absorb_constants"]
