"""layout-transmit: spread the Gemm/Conv layouts over the graph, then default the rest.

Spec: seed 001 ("Layout Initialization and Pass", layoutTransmitPass): every op is a node
with its input and output nodes; the Gemm and Conv ops are the first frontier; from each,
layouts are inferred forward (users) and backward (producers) with the op's
``inferLayout``, the ops that become known form the next frontier, an op that cannot infer
(Reshape, Broadcast) stops the spread, and every op left over gets ``Tensor``. Breadth
first from the ops whose ``layout_str`` is known (after ``layout-init``: the Gemm/Conv
ops), in program order.

Readings chosen where the seed is vague:

- **Layouts live on values.** Each SSA value has one layout; an op's ``layout_str`` lists
  its operands' then its results' (:mod:`tx8lab.core.layout_str`). So a producer and all
  its users agree on the layout of the tensor between them.
- **One step.** When a neighbour of a known op is reached, its op-library entry infers
  the unknown parts: :meth:`~tx8lab.core.ops.registry.OpDef.infer_layout` gives the
  results from the known operands (forward), then
  :meth:`~tx8lab.core.ops.registry.OpDef.infer_operand_layouts` the operands from the
  results (backward; so an ``Add`` reached from a Conv also fixes its other operand's
  producer). The op becomes known when either gives something; if both give nothing it
  stops the spread, keeps the parts its neighbours fixed, and is retried when another
  neighbour becomes known.
- **Neighbours** are the producers of an op's operands (backward) and the users of its
  operands and results (forward): two users of the same function argument reach each
  other through it. ``backward=False`` spreads forward only.
- **Conflicts.** When an op implies a layout for a value that already has another one,
  the first stays and a ``conflict`` decision names both ops (once per op and value).
- **Default.** After the fixpoint every value still without a layout gets ``Tensor`` or
  ``NTensor`` by its shape (:func:`~tx8lab.core.layout_str.tensor_layout`); the seed says
  ``Tensor``, and the seed's own rule "NTensor when dim 0 is not 1" picks between the two.
- **Groups.** The pass walks into ``tx8be.Group`` bodies: block argument i is the group's
  operand i and the group's result j is its Return's operand j, so layouts flow through a
  group's boundary; the group's own ``layout_str`` is read off its operands and results.
- Values are never changed: the pass only sets ``layout_str`` attributes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from tx8lab.core.ir import TERMINATORS, Block, Module, Op, TensorType, Value
from tx8lab.core.layout_str import (
    UNKNOWN,
    is_dim_named,
    is_known,
    join_layout,
    op_layouts,
    set_layout_strs,
    split_layout,
    tensor_layout,
)
from tx8lab.core.ops.registry import OpDef
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

ValueKey = tuple[int, int, bool]


@dataclass
class LayoutGraph:
    """The op graph layout-transmit walks: ops as nodes, linked through values.

    Group block arguments and group results are aliases: ``canon`` maps them to the value
    they stand for, so edges run straight through a group's boundary.
    """

    ops: dict[int, Op] = field(default_factory=dict)
    """Every op that carries a layout (not groups, not terminators), by id, in walk order."""
    groups: list[Op] = field(default_factory=list)
    """The ``tx8be.Group`` ops, outermost first."""
    canon: dict[ValueKey, ValueKey] = field(default_factory=dict)
    """Alias -> the value it stands for (group block arguments and results only)."""
    types: dict[ValueKey, TensorType] = field(default_factory=dict)
    """Type of each value."""
    producer: dict[ValueKey, int] = field(default_factory=dict)
    """Value -> the op that defines it (function arguments have none)."""
    users: dict[ValueKey, list[int]] = field(default_factory=dict)
    """Value -> the ops that read it, each once, in walk order."""
    results_of: dict[int, int] = field(default_factory=dict)
    """Owner id -> number of results (to name values ``%7`` or ``%7#1``)."""

    @classmethod
    def build(cls, module: Module) -> LayoutGraph:
        """The graph of every function of ``module``."""
        graph = cls()
        for func in module.functions:
            for arg in func.args:
                graph.types[arg.key] = arg.type
            graph._add_block(func.body)
        return graph

    def key(self, value: Value) -> ValueKey:
        """The value ``value`` stands for (itself unless it is a group alias)."""
        return self.canon.get(value.key, value.key)

    def in_keys(self, op: Op) -> list[ValueKey]:
        """The op's operands, de-aliased."""
        return [self.key(v) for v in op.operands]

    def out_keys(self, op: Op) -> list[ValueKey]:
        """The op's results, de-aliased."""
        return [self.key(v) for v in op.results]

    def name(self, key: ValueKey) -> str:
        """How messages name a value: ``%7``, ``%7#1`` or ``%arg0``."""
        owner, index, is_arg = key
        if is_arg:
            return f"%arg{index}"
        return f"%{owner}" if self.results_of.get(owner, 1) == 1 else f"%{owner}#{index}"

    def _add_block(self, block: Block) -> None:
        for op in block.ops:
            if op.kind in TERMINATORS:
                continue
            if op.kind == "tx8be.Group" and op.regions:
                self._add_group(op)
                continue
            self.ops[op.id] = op
            self.results_of[op.id] = len(op.results)
            for value in op.results:
                self.types[value.key] = value.type
                self.producer[value.key] = op.id
            for key in dict.fromkeys(self.key(v) for v in op.operands):
                self.users.setdefault(key, []).append(op.id)

    def _add_group(self, group: Op) -> None:
        self.groups.append(group)
        body = group.regions[0]
        for arg, outer in zip(body.args, group.operands, strict=False):
            self.canon[arg.key] = self.key(outer)
        self._add_block(body)
        if body.ops and body.ops[-1].kind in TERMINATORS:
            returned = body.ops[-1].operands
            for result, inner in zip(group.results, returned, strict=False):
                self.canon[result.key] = self.key(inner)


@dataclass
class _State:
    """Layouts found so far and how (mutable while the pass runs)."""

    layout: dict[ValueKey, str] = field(default_factory=dict)
    source: dict[ValueKey, int] = field(default_factory=dict)
    known: dict[int, tuple[str, int | None]] = field(default_factory=dict)
    """Op id -> (rule, op it was reached from): rule seed, forward or backward."""
    reached: dict[int, int] = field(default_factory=dict)
    """Op id -> first known neighbour, for ops that could not infer."""
    conflicts: dict[tuple[int, ValueKey], Decision] = field(default_factory=dict)


def _check_parts(op: Op, parts: Sequence[str | None], values: Sequence[Value], what: str) -> None:
    """An op-library answer must name one layout per tensor, fitting its rank."""
    if len(parts) != len(values):
        raise Tx8labError(
            f"{op.label}: {what} gave {len(parts)} layouts for {len(values)} tensors "
            "(an op-library bug)"
        )
    for part, value in zip(parts, values, strict=True):
        if part is None:
            continue
        if not isinstance(part, str) or "-" in part or not part:
            raise Tx8labError(f"{op.label}: {what} gave {part!r}, not a layout name")
        if is_dim_named(part) and len(part) != value.type.rank:
            raise Tx8labError(
                f"{op.label}: {what} gave {part!r} for {value.type} (an op-library bug)"
            )


@dataclass(frozen=True)
class LayoutTransmit(Pass):
    """Seed layoutTransmitPass (see the module docstring)."""

    name: ClassVar[str] = "layout-transmit"
    summary: ClassVar[str] = "spread Gemm/Conv layouts forward and backward; default the rest"

    backward: bool = knob(True, "also infer producers' layouts from their users (seed: both ways)")
    """Set from Python or ``--set layout-transmit.backward=false``."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        from tx8lab.core.ops import OPS

        graph = LayoutGraph.build(module)
        entries: dict[int, OpDef] = {}
        for op in graph.ops.values():
            entry = OPS.get(op.kind)
            if entry is None:
                raise Tx8labError(
                    f"{op.label}: not in the op library, so its layout cannot be inferred; "
                    "add an OpDef entry for it"
                )
            entries[op.id] = entry
        state = _State()
        queue = self._seed(graph, state)
        if not queue:
            decisions = [
                self.decide(
                    None,
                    "no-seed",
                    "no op has a known layout_str (run layout-init first, or the module has "
                    "no Gemm/Conv): every layout is defaulted by shape",
                )
            ]
        else:
            decisions = []
        self._spread(graph, entries, state, queue)
        defaulted = self._default(graph, state)
        layouts, op_decisions = self._finish(graph, state)
        decisions += op_decisions
        decisions += list(state.conflicts.values())
        rules = [state.known.get(op_id, ("default", None))[0] for op_id in graph.ops]
        stats: dict[str, int | float | str] = {
            "seeds": rules.count("seed"),
            "forward": rules.count("forward"),
            "backward": rules.count("backward"),
            "defaulted_ops": rules.count("default"),
            "defaulted_values": defaulted,
            "conflicts": len(state.conflicts),
        }
        return PassResult(set_layout_strs(module, layouts), tuple(decisions), stats)

    # -- stages
    def _seed(self, graph: LayoutGraph, state: _State) -> deque[int]:
        """The first frontier: ops whose layout_str is known already, in program order."""
        queue: deque[int] = deque()
        for op in graph.ops.values():
            ins, outs = op_layouts(op)
            if not any(ins) and not any(outs):
                continue
            state.known[op.id] = ("seed", None)
            self._assign(graph, state, op, graph.in_keys(op), ins)
            self._assign(graph, state, op, graph.out_keys(op), outs)
            queue.append(op.id)
        return queue

    def _spread(
        self, graph: LayoutGraph, entries: dict[int, OpDef], state: _State, queue: deque[int]
    ) -> None:
        """Breadth first: each known op tries its neighbours; ops that learn join the queue."""
        while queue:
            origin = queue.popleft()
            op = graph.ops[origin]
            for key in dict.fromkeys([*graph.in_keys(op), *graph.out_keys(op)]):
                if key not in state.layout:
                    continue
                producer = graph.producer.get(key)
                if (
                    self.backward
                    and producer is not None
                    and producer not in state.known
                    and self._infer(graph, entries[producer], state, producer, origin, "backward")
                ):
                    queue.append(producer)
                for user in graph.users.get(key, ()):
                    if user not in state.known and self._infer(
                        graph, entries[user], state, user, origin, "forward"
                    ):
                        queue.append(user)

    def _infer(
        self,
        graph: LayoutGraph,
        entry: OpDef,
        state: _State,
        op_id: int,
        origin: int,
        direction: str,
    ) -> bool:
        """Let op ``op_id`` infer its unknown parts; True when it became known."""
        op = graph.ops[op_id]
        in_keys, out_keys = graph.in_keys(op), graph.out_keys(op)
        ins = [state.layout.get(k) for k in in_keys]
        outs: list[str | None] = [state.layout.get(k) for k in out_keys]
        forward: list[str | None] = [None] * len(outs)
        if any(ins) and op.results:
            text = entry.infer_layout(op, ins)
            if text is not None:
                forward = split_layout(text, len(outs), f"{op.label}: infer_layout")
                _check_parts(op, forward, op.results, "infer_layout")
        merged = [have or new for have, new in zip(outs, forward, strict=True)]
        backward: list[str | None] = [None] * len(ins)
        if self.backward and any(merged):
            backward = list(entry.infer_operand_layouts(op, merged))
            _check_parts(op, backward, op.operands, "infer_operand_layouts")
        learned = any(forward) or any(backward) or (not op.operands and any(merged))
        if not learned:
            state.reached.setdefault(op_id, origin)
            return False
        state.known[op_id] = (direction, origin)
        self._assign(graph, state, op, out_keys, forward)
        self._assign(graph, state, op, in_keys, backward)
        return True

    def _assign(
        self,
        graph: LayoutGraph,
        state: _State,
        op: Op,
        keys: Sequence[ValueKey],
        layouts: Sequence[str | None],
    ) -> None:
        """Give values their layouts; a value that has another one keeps it (a conflict)."""
        for key, layout in zip(keys, layouts, strict=True):
            if not is_known(layout):
                continue
            assert layout is not None
            have = state.layout.get(key)
            if have is None:
                state.layout[key] = layout
                state.source[key] = op.id
            elif have != layout and (op.id, key) not in state.conflicts:
                first = state.source[key]
                state.conflicts[(op.id, key)] = self.decide(
                    op.id,
                    "conflict",
                    f"implies {layout} for {graph.name(key)}, which %{first} already made "
                    f"{have}; kept {have} (first wins)",
                    related=[first],
                    rule="conflict",
                    value=graph.name(key),
                    kept=have,
                    implied=layout,
                )

    def _default(self, graph: LayoutGraph, state: _State) -> int:
        """Tensor/NTensor by shape for every value left without a layout; returns the count."""
        count = 0
        for op in graph.ops.values():
            for key in [*graph.in_keys(op), *graph.out_keys(op)]:
                if key not in state.layout:
                    state.layout[key] = tensor_layout(graph.types[key].shape)
                    count += 1
        return count

    def _finish(self, graph: LayoutGraph, state: _State) -> tuple[dict[int, str], list[Decision]]:
        """Each op's layout_str from its values, and a decision saying how it was found."""
        layouts: dict[int, str] = {}
        decisions: list[Decision] = []
        for op in graph.ops.values():
            parts = [state.layout[k] for k in [*graph.in_keys(op), *graph.out_keys(op)]]
            text = join_layout(parts) if parts else UNKNOWN
            layouts[op.id] = text
            rule, origin = state.known.get(op.id, ("default", None))
            related: list[int] = []
            if rule == "seed":
                reason = "set before (layout-init: Gemm/Conv); the propagation starts here"
                if text != op.attrs.get("layout_str"):
                    reason += "; a conflict kept another op's layout for one of its tensors"
            elif rule in ("forward", "backward"):
                assert origin is not None
                reason = f"propagated from op %{origin} {rule}"
                related = [origin]
            else:
                near = state.reached.get(op.id)
                if near is not None:
                    reason = (
                        f"cannot infer: {op.kind} does not carry a layout (reached from "
                        f"%{near}); defaulted to Tensor/NTensor by shape where unknown"
                    )
                    related = [near]
                else:
                    reason = (
                        "cannot infer: no Gemm/Conv layout reaches it; defaulted to "
                        "Tensor/NTensor by shape"
                    )
            decisions.append(self.decide(op.id, text, reason, related=related, rule=rule))
        for group in graph.groups:
            keys = [graph.key(v) for v in (*group.operands, *group.results)]
            text = join_layout([state.layout.get(k) or self._fallback(graph, k) for k in keys])
            layouts[group.id] = text
            decisions.append(
                self.decide(
                    group.id,
                    text,
                    "read off its operands and results, whose layouts its body's ops fixed",
                    rule="group",
                )
            )
        return layouts, decisions

    @staticmethod
    def _fallback(graph: LayoutGraph, key: ValueKey) -> str:
        # a group operand its body never reads, or an empty group's pass-through
        return tensor_layout(graph.types[key].shape)

    def check(self, module: Module) -> list[str]:
        """Post-condition: every op's layout_str is complete (no Unknown part)."""
        problems = []
        for op in module.walk():
            if op.kind in TERMINATORS:
                continue
            try:
                ins, outs = op_layouts(op)
            except Tx8labError as err:
                problems.append(str(err))
                continue
            if (op.operands or op.results) and not all([*ins, *outs]):
                got = op.attrs.get("layout_str", UNKNOWN)
                problems.append(f"{op.label}: layout_str {got!r} still has Unknown parts")
        return problems
