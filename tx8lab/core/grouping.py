"""Outline sets of ops into ``tx8be.Group`` region ops: the one rewrite every grouping pass uses.

Spec: seed 001 ("GroupPatternPass": matched ops become a GroupOp "并进行拓扑排序";
"GroupOptimizationPass": one group per remaining compute op) and seed 002 (a group is a
subgraph cut out of the function, its inputs become the group's arguments).

Readings chosen where the seeds are vague:

- A group's operands are the values its members read from outside, in first-use order;
  its results are the members' results read after the group (by later ops or the
  function's return), in member order. Inside, block argument ``i`` stands for operand
  ``i`` and a ``tx8be.Return`` lists the results.
- Members need not be contiguous. After outlining, the top-level ops are sorted again
  (Kahn's algorithm, ties broken by the earliest original position, so an already valid
  order is kept). A set that is not *convex* (a path leaves the set and comes back) would
  make the group depend on itself; that is an error naming the group and the op on the
  path, never a silently reordered graph.
- Body ops keep their ids (stable ids survive passes); the group gets a fresh id.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import Any

from tx8lab.core.ir import (
    TERMINATORS,
    Block,
    Function,
    IdCounter,
    Op,
    Value,
    remap_operands,
)
from tx8lab.errors import Tx8labError

ValueKey = tuple[int, int, bool]

#: Ops that are not compute: data holders and movers, tuples, groups, terminators. Every
#: other op is a compute op, which the grouping passes put in exactly one group.
NON_COMPUTE = frozenset(
    {
        "tx8be.Constant",
        "tx8be.LoadConst",
        "tx8be.LoadVar",
        "tx8be.StoreVar",
        "tx8be.Tuple",
        "tx8be.Group",
        *TERMINATORS,
    }
)


def is_compute(op: Op) -> bool:
    """True for a compute op (seed GroupOptimizationPass: "为每个 compute op 创建一个 group")."""
    return op.kind not in NON_COMPUTE


def make_group(
    members: Sequence[Op],
    later_uses: set[ValueKey],
    group_id: int,
    attrs: Mapping[str, Any] | None = None,
    created_by: str | None = None,
) -> tuple[Op, dict[ValueKey, Value]]:
    """A ``tx8be.Group`` holding ``members`` (in order) and the map old value -> group result.

    ``later_uses`` are the keys of values read outside the group after it; those of the
    members' results become the group's results.
    """
    inside = {r.key for op in members for r in op.results}
    inputs: list[Value] = []
    seen: set[ValueKey] = set()
    for op in members:
        for v in op.operands:
            if v.key not in inside and v.key not in seen:
                seen.add(v.key)
                inputs.append(v)
    outputs = [r for op in members for r in op.results if r.key in later_uses]
    args = tuple(Value(group_id, i, v.type, is_arg=True) for i, v in enumerate(inputs))
    body = remap_operands(members, {v.key: a for v, a in zip(inputs, args, strict=True)})
    ret = Op(-1, "tx8be.Return", tuple(outputs), ())
    results = tuple(Value(group_id, i, v.type) for i, v in enumerate(outputs))
    group = Op(
        group_id,
        "tx8be.Group",
        tuple(inputs),
        results,
        dict(attrs or {}),
        (Block(args, (*body, ret)),),
        created_by,
    )
    return group, {v.key: r for v, r in zip(outputs, results, strict=True)}


def outline(
    func: Function,
    groups: Sequence[Sequence[int]],
    ids: IdCounter,
    *,
    attrs: Sequence[Mapping[str, Any]] | None = None,
    created_by: str | None = None,
) -> tuple[Function, list[Op]]:
    """``func`` with each list of top-level op ids in ``groups`` outlined into a group.

    Returns the new function and the group ops (in the order of ``groups``). Raises
    :class:`Tx8labError` for an id that is not a top-level op, an op in two groups, an
    empty group or a non-convex group.
    """
    ops = [op for op in func.ops if op.kind not in TERMINATORS]
    position = {op.id: p for p, op in enumerate(ops)}
    owner: dict[int, int] = {}
    for g, members in enumerate(groups):
        if not members:
            raise Tx8labError(f"group {g} is empty")
        for op_id in members:
            if op_id not in position:
                raise Tx8labError(f"group {g}: %{op_id} is not a top-level op of {func.name}")
            if op_id in owner:
                raise Tx8labError(f"%{op_id} is in group {owner[op_id]} and group {g}")
            owner[op_id] = g
    # values read outside their group (by any other top-level op or the terminator)
    outside_uses: list[set[ValueKey]] = [set() for _ in groups]
    producer_group: dict[ValueKey, int] = {}
    for op in ops:
        if op.id in owner:
            for r in op.results:
                producer_group[r.key] = owner[op.id]
    for op in func.ops:
        here = owner.get(op.id, -1)
        for v in op.operands:
            source = producer_group.get(v.key)
            if source is not None and source != here:
                outside_uses[source].add(v.key)
    made: list[Op] = []
    mapping: dict[ValueKey, Value] = {}
    for g, members in enumerate(groups):
        member_ops = sorted((ops[position[i]] for i in members), key=lambda o: position[o.id])
        group, outs = make_group(
            member_ops, outside_uses[g], ids(), attrs[g] if attrs else None, created_by
        )
        made.append(group)
        mapping.update(outs)
    # the new top level: ungrouped ops and groups, remapped, then sorted topologically
    first_pos = {g: min(position[i] for i in members) for g, members in enumerate(groups)}
    nodes: list[tuple[int, Op]] = [(position[op.id], op) for op in ops if op.id not in owner]
    nodes += [(first_pos[g], group) for g, group in enumerate(made)]
    # top-level operands only: group bodies are isolated from above (and a member's
    # result read inside its own group must stay the member's value)
    order = _topological([(pos, _remap_top(op, mapping)) for pos, op in nodes])
    terminator = _remap_top(func.body.ops[-1], mapping)
    final = {op.id: op for op in order}
    return func.with_ops([*order, terminator]), [final[g.id] for g in made]


def _remap_top(op: Op, mapping: Mapping[ValueKey, Value]) -> Op:
    if not any(v.key in mapping for v in op.operands):
        return op
    return op.replace(operands=tuple(mapping.get(v.key, v) for v in op.operands))


def _topological(nodes: list[tuple[int, Op]]) -> list[Op]:
    """Kahn's algorithm over ``(original position, op)``, earliest position first."""
    produced_by: dict[ValueKey, int] = {}
    for index, (_, op) in enumerate(nodes):
        for r in op.results:
            produced_by[r.key] = index
    users: list[list[int]] = [[] for _ in nodes]
    indegree = [0] * len(nodes)
    for index, (_, op) in enumerate(nodes):
        deps = {produced_by[v.key] for v in op.operands if v.key in produced_by}
        deps.discard(index)
        indegree[index] = len(deps)
        for d in deps:
            users[d].append(index)
    ready = [(pos, index) for index, (pos, _) in enumerate(nodes) if indegree[index] == 0]
    heapq.heapify(ready)
    out: list[Op] = []
    while ready:
        _, index = heapq.heappop(ready)
        out.append(nodes[index][1])
        for u in users[index]:
            indegree[u] -= 1
            if indegree[u] == 0:
                heapq.heappush(ready, (nodes[u][0], u))
    if len(out) != len(nodes):
        stuck = [op for i, (_, op) in enumerate(nodes) if indegree[i] > 0]
        groups = [op.label for op in stuck if op.kind == "tx8be.Group"]
        others = [op.label for op in stuck if op.kind != "tx8be.Group"]
        raise Tx8labError(
            "grouping is not convex: "
            + (f"{', '.join(groups)} would depend on itself" if groups else "a cycle")
            + (f" through {', '.join(others[:3])}" if others else "")
            + "; a group must not contain ops on both ends of a path that leaves it"
        )
    return out


def group_members(func: Function) -> dict[int, list[int]]:
    """Group op id -> ids of its body ops (terminator excluded), for the top level."""
    return {
        op.id: [inner.id for inner in op.regions[0].ops if inner.kind not in TERMINATORS]
        for op in func.ops
        if op.kind == "tx8be.Group"
    }


__all__ = ["NON_COMPUTE", "group_members", "is_compute", "make_group", "outline"]
