"""opt-barrier: number the groups in layers from the outputs back; one barrier per layer.

Spec: seed 001 ("Compile Option 1: opt_barrier", ``groupDAGPass``): set every group's
``need_barrier`` false; walk the groups from last to first; a group whose results have no
user or are returned gets layer 0, otherwise its user's layer + 1; record the first and the
last group of each layer; set ``need_barrier`` on the last group of each layer. Without
the option every group has a barrier (``need_barrier`` defaults to true), so the saving is
one barrier per group minus one per layer.

Readings chosen where the seed is vague:

- **Several users.** A group's layer is 1 + the *largest* layer among the groups that read
  it (0 when no group reads it). Then a group's readers are all in lower layers, so the
  groups of one layer do not depend on each other and may run without a barrier between
  them. A returned group that another group also reads is not put in layer 0 (the seed's
  "要 return"): it would share a layer with its own reader.
- Non-group top-level ops (a constant read by the return, a ``tx8be.Tuple``) are nodes of
  the graph like groups (a Tuple between two groups passes the dependency on), but carry
  no barrier and do not count as layers.
- **"Last" is last in program order**, after sorting: the seed's rule is only safe when
  each layer is contiguous in program order (a barrier after the last group of layer k
  must separate every layer-k group from its readers), which the seed does not say. With
  ``sort_layers`` (default) the top level is stably sorted by descending layer first (a
  valid topological order: every edge goes from a higher to a lower layer). With
  ``sort_layers=false`` the order is kept and, where the seed's barriers leave a
  dependency with no barrier between producer and reader, the fewest extra barriers are
  added (interval stabbing: each at the latest group before the reader); their count is
  the stat ``extra_barriers``.
- Post-condition (:meth:`OptBarrier.check`): every group has ``need_barrier``, and between
  every group and each group that reads it (through non-group ops too) there is a group
  with a barrier, at or after the producer and before the reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from tx8lab.core.ir import TERMINATORS, Function, Module, Op
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.hw.config import ChipConfig

ValueKey = tuple[int, int, bool]


def node_layers(ops: Sequence[Op]) -> list[int]:
    """Layer of each op of a top-level op list (no terminator): 0 = nothing reads it.

    Examples:
        >>> from tx8lab.core.builder import Builder
        >>> b = Builder(); x = b.input((2,)); y = b.op("Neg", x)
        >>> b.output(b.op("Add", b.op("Relu", y), y))
        >>> node_layers(b.finish().main.ops[:-1])
        [2, 1, 0]
    """
    producer: dict[ValueKey, int] = {}
    for index, op in enumerate(ops):
        for r in op.results:
            producer[r.key] = index
    readers: list[set[int]] = [set() for _ in ops]
    for index, op in enumerate(ops):
        for v in op.operands:
            source = producer.get(v.key)
            if source is not None and source != index:
                readers[source].add(index)
    layers = [0] * len(ops)
    for index in range(len(ops) - 1, -1, -1):
        if readers[index]:
            layers[index] = 1 + max(layers[u] for u in readers[index])
    return layers


def group_layers(func: Function) -> dict[int, int]:
    """Group id -> layer, for the top-level groups of ``func`` (see the module docstring)."""
    ops = [op for op in func.ops if op.kind not in TERMINATORS]
    return {
        op.id: layer
        for op, layer in zip(ops, node_layers(ops), strict=True)
        if op.kind == "tx8be.Group"
    }


def group_dependencies(ops: Sequence[Op]) -> list[tuple[int, int]]:
    """(producer, reader) positions among the groups of ``ops``, through non-group ops too."""
    position: dict[int, int] = {}
    for op in ops:
        if op.kind == "tx8be.Group":
            position[op.id] = len(position)
    sources: dict[ValueKey, frozenset[int]] = {}
    edges: set[tuple[int, int]] = set()
    for op in ops:
        feeding: frozenset[int] = frozenset().union(
            *(sources.get(v.key, frozenset()) for v in op.operands)
        )
        if op.kind == "tx8be.Group":
            me = position[op.id]
            edges.update((g, me) for g in feeding)
            feeding = frozenset({me})
        for r in op.results:
            sources[r.key] = feeding
    return sorted(edges)


def uncovered(edges: Sequence[tuple[int, int]], barriers: Sequence[bool]) -> list[tuple[int, int]]:
    """Dependencies (group positions) with no barrier at a position in [producer, reader)."""
    # next_barrier[i]: first barrier position >= i
    next_barrier = [len(barriers)] * (len(barriers) + 1)
    for i in range(len(barriers) - 1, -1, -1):
        next_barrier[i] = i if barriers[i] else next_barrier[i + 1]
    return [(g, u) for g, u in edges if next_barrier[g] >= u]


@dataclass(frozen=True)
class OptBarrier(Pass):
    """Layer the groups (groupDAG) and keep only the last barrier of each layer."""

    name: ClassVar[str] = "opt-barrier"
    summary: ClassVar[str] = "group layers from the outputs back; need_barrier on each layer's last"

    sort_layers: bool = knob(
        True, "sort the top level by descending layer so each layer is contiguous"
    )
    """Set from Python or ``--set opt-barrier.sort_layers=false`` (then extra barriers)."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        decisions: list[Decision] = []
        functions = []
        stats: dict[str, int] = {
            "groups": 0,
            "layers": 0,
            "barriers": 0,
            "barriers_saved": 0,
            "extra_barriers": 0,
            "moved": 0,
        }
        layers_out: dict[int, int] = {}
        for func in module.functions:
            new = self._function(func, decisions, stats, layers_out)
            functions.append(new)
        result_stats: dict[str, int | float | str] = dict(stats)
        artifacts = {"layers": layers_out}
        if all(a is b for a, b in zip(functions, module.functions, strict=True)):
            return PassResult(module, tuple(decisions), result_stats, artifacts)
        out = Module(tuple(functions), module.attrs, module.next_id)
        return PassResult(out, tuple(decisions), result_stats, artifacts)

    def _function(
        self,
        func: Function,
        decisions: list[Decision],
        stats: dict[str, int],
        layers_out: dict[int, int],
    ) -> Function:
        ops = list(func.ops[:-1])
        if not any(op.kind == "tx8be.Group" for op in ops):
            return func
        layers = node_layers(ops)
        before = [op.id for op in ops if op.kind == "tx8be.Group"]
        if self.sort_layers:
            order = sorted(range(len(ops)), key=lambda i: -layers[i])
            ops = [ops[i] for i in order]
            layers = [layers[i] for i in order]
        groups = [
            (op, layer) for op, layer in zip(ops, layers, strict=True) if op.kind == "tx8be.Group"
        ]
        stats["moved"] += sum(
            1 for old, (new, _) in zip(before, groups, strict=True) if old != new.id
        )
        # the seed's rule: the last group (program order) of each layer holds the barrier
        last: dict[int, int] = {}
        members: dict[int, list[int]] = {}
        for position, (op, layer) in enumerate(groups):
            last[layer] = position
            members.setdefault(layer, []).append(op.id)
        barriers = [last[layer] == position for position, (_, layer) in enumerate(groups)]
        extra: set[int] = set()
        if not self.sort_layers:
            extra = self._cover(ops, barriers)
        for position, (op, layer) in enumerate(groups):
            layers_out[op.id] = layer
            decisions.append(
                self._decision(op, layer, members[layer], position in extra, barriers[position])
            )
        stats["groups"] += len(groups)
        stats["layers"] += len(members)
        stats["barriers"] += sum(barriers)
        stats["barriers_saved"] += len(groups) - sum(barriers)
        stats["extra_barriers"] += len(extra)
        marked = iter(barriers)
        out = [
            op.with_attrs(need_barrier=next(marked)) if op.kind == "tx8be.Group" else op
            for op in ops
        ]
        # keep unchanged ops as the same objects
        out = [old if old.attrs == new.attrs else new for old, new in zip(ops, out, strict=True)]
        if all(a is b for a, b in zip(out, func.ops[:-1], strict=True)):
            return func
        return func.with_ops([*out, func.ops[-1]])

    @staticmethod
    def _cover(ops: list[Op], barriers: list[bool]) -> set[int]:
        """Add the fewest barriers so every dependency has one (greedy interval stabbing)."""
        missing = sorted(uncovered(group_dependencies(ops), barriers), key=lambda e: e[1])
        added: set[int] = set()
        latest = -1
        for producer, reader in missing:
            if producer <= latest < reader:
                continue
            latest = reader - 1
            barriers[latest] = True
            added.add(latest)
        return added

    def _decision(
        self, op: Op, layer: int, members: list[int], extra: bool, barrier: bool
    ) -> Decision:
        others = len(members) - 1
        if extra:
            reason = (
                f"layer {layer}: not the layer's last group, but a group it follows is read "
                "after it with no barrier between (order kept: sort_layers=false)"
            )
            return self.decide(op.id, "barrier", reason, layer=layer, extra=True)
        if barrier:
            reason = f"last group of layer {layer} in program order" + (
                f"; the {others} other group(s) of the layer share its barrier" if others else ""
            )
            return self.decide(op.id, "barrier", reason, related=members, layer=layer)
        reason = (
            f"layer {layer}: %{members[-1]}, the layer's last group, holds the barrier; "
            "groups of one layer do not depend on each other"
        )
        return self.decide(op.id, "no_barrier", reason, related=[members[-1]], layer=layer)

    def check(self, module: Module) -> list[str]:
        """Post-condition: need_barrier set, and a barrier between every producer and reader."""
        problems: list[str] = []
        for func in module.functions:
            ops = list(func.ops[:-1])
            groups = [op for op in ops if op.kind == "tx8be.Group"]
            flags = [op.attrs.get("need_barrier") for op in groups]
            problems += [
                f"{op.label}: need_barrier not set by opt-barrier"
                for op, flag in zip(groups, flags, strict=True)
                if not isinstance(flag, bool)
            ]
            barriers = [flag is True for flag in flags]
            for producer, reader in uncovered(group_dependencies(ops), barriers):
                problems.append(
                    f"{groups[reader].label} reads {groups[producer].label} with no barrier "
                    "between them"
                )
        return problems


__all__ = ["OptBarrier", "group_dependencies", "group_layers", "node_layers", "uncovered"]
