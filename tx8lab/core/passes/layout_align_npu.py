"""layout-align-npu: color every op ALIGN or NALIGN and insert ChannelNorms where they clash.

Spec: seed 000 (LayoutAlignToNPU, whole) and seed 001 ("layoutAlignToNpuPass"): the op
graph is a directed graph whose nodes need ALIGN (Cx/NCx), NALIGN (compact Tensor/NTensor)
or either (BOTH); where a producer and a user disagree a ChannelNorm converts between the
two, and at the end ``layout_str`` is mapped to ``dev_info.mem_layout``.

The rules, in the order they are tried (the first that fires decides; the order is the
order the seed lists them in):

| rule | color | what fires it |
|---|---|---|
| ``dev_info`` | its layout | the op already has ``dev_info`` (the user fixed it) |
| ``channel_norm`` | its direction | a ChannelNorm already in the graph |
| ``align_only`` | ALIGN | the op library says ALIGN only (Gemm, MatMul, Conv, Pool, ...) |
| ``nalign_only`` | NALIGN | the op library says NALIGN only |
| ``slice`` | either | Slice: C start > 0 and C end a multiple of 64 -> NALIGN, else ALIGN |
| ``odd_rank`` | NALIGN | the output has rank 1 or 3 (Cx needs rank 2 or 4) |
| ``broadcast`` | follows | a V_VS op (one operand broadcast) takes its complete input's color |
| ``both`` | follows | the parents' common color, else the earliest parent's |
| ``no_parent`` | NALIGN | a BOTH op without operands (a constant) |
| ``input`` / ``output`` | NALIGN | function arguments; values returned by the function |

Readings chosen where the seed is vague or contradicts itself:

- **ChannelNorm direction.** Seed 000's text says the ALIGN-producer/NALIGN-user case
  gets ``False`` and the NALIGN-producer/ALIGN-user case ``True``; its code says
  ``direction = opAlignMode == NALIGN ? false : true``, the reverse. We follow the text:
  ``direction`` names the layout the ChannelNorm *produces*, true = to ALIGN (as the op
  library's ChannelNorm reads it), so NALIGN -> ALIGN is ``true``. The code's expression
  describes the producer's side, which is the opposite layout.
- **Precedence.** ALIGN-only beats the odd-rank rule: a Gemm with a rank-3 output stays
  ALIGN (the op library has no other kernel) and its rank-3 users pay a ChannelNorm.
- **BOTH ops without parents** (constants) start NALIGN, as the seed makes graph inputs:
  constants are then converted by a ChannelNorm that ``layout-align-opt`` and
  ``const-norm`` later fold into the constant's own layout.
- **Multi-input BOTH**: "parents" are all operands, broadcast ones included; a function
  argument counts as earlier than any op.
- **Constants impose no color.** In the seed's code a parent that imposes no color never
  decides, and a constant can be laid out for free (``const-norm`` folds its
  ChannelNorm). So a constant (an op without operands, of any rank) and every op fed
  only by constants whose color the op library does not fix are left out of the parents
  of the ``both`` and ``broadcast`` rules; an op whose parents are all such starts
  NALIGN, as ``no_parent`` does; a ``broadcast`` op whose complete input is constant
  follows its other parents as ``both`` does.
  ``Add(conv, constant)`` is therefore ALIGN whichever of the two is printed first.
- **Topologically earliest** (the seed's rule for parents that disagree) is read on
  the graph, not the text: the parent of lowest depth (an argument is depth 0, an op
  one more than its deepest operand), then the lower argument index, then the first
  operand. Text order would make the color depend on how independent ops are printed.
- **Sharing.** One ChannelNorm per (value, direction): every user of a value that needs
  the other layout reads the same ChannelNorm, placed right after the producer. Since a
  value has one color, all its converting users need the same direction.
- Only the top-level ops of each function are colored; an op with regions (a group,
  which does not exist yet at this point of the pipeline) is colored as a whole.

``strategy="optimal"`` replaces the greedy walk by the exact minimum (see
:mod:`tx8lab.core.passes.layout_mincut`): the free ops are those the ``broadcast``,
``both`` and ``no_parent`` rules color; everything else is fixed. The ChannelNorm count of
the strategy not run is computed too (``compare``), so the report has both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from tx8lab.core.attrs import AlignMode, DevInfo, LayoutMode
from tx8lab.core.builder import make_op
from tx8lab.core.ir import TERMINATORS, Function, IdCounter, Module, Op, Value
from tx8lab.core.layouts import layout_for
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.hw.config import ChipConfig

if TYPE_CHECKING:
    from tx8lab.core.passes.layout_mincut import ColoringProblem

ValueKey = tuple[int, int, bool]

ALIGNED_LAYOUTS = frozenset({LayoutMode.Cx, LayoutMode.NCx})

#: Rules whose color does not depend on the neighbours (fixed in the optimal mode).
FIXED_RULES = frozenset(
    {"dev_info", "channel_norm", "align_only", "nalign_only", "slice", "odd_rank"}
)
#: Rules that let the op take its color from its neighbours.
FREE_RULES = frozenset({"broadcast", "both", "no_parent"})
#: Rules under which an op fed by constants only is itself a constant for coloring: its
#: color (NALIGN unless a neighbour decides) imposes nothing on its users.
_CONSTANT_RULES = FREE_RULES | {"odd_rank"}


def color_name(aligned: bool) -> str:
    """``"ALIGN"`` or ``"NALIGN"``."""
    return "ALIGN" if aligned else "NALIGN"


@dataclass(frozen=True, slots=True)
class Requirement:
    """What the rules say about one op before any color is chosen."""

    rule: str
    """Name of the rule that fired (see the module docstring's table)."""
    fixed: bool | None
    """True/False: the op must be ALIGN/NALIGN; None: it follows its neighbours."""
    why: str
    """The rule in words, for the decision's reason."""
    follow: int | None = None
    """For ``broadcast``: the operand index of the complete input."""


def requirement(op: Op) -> Requirement:
    """The seed-000 rule that decides ``op``'s color (first match in the table's order)."""
    from tx8lab.core.ops import get_op_def
    from tx8lab.core.ops.elementwise import is_broadcast

    dev = op.attrs.get("dev_info")
    if isinstance(dev, DevInfo):
        aligned = dev.mem_layout in ALIGNED_LAYOUTS
        return Requirement(
            "dev_info", aligned, f"dev_info fixes mem_layout = {dev.mem_layout.value}"
        )
    if op.kind == "tx8be.ChannelNorm":
        aligned = bool(op.attrs.get("direction"))
        return Requirement(
            "channel_norm", aligned, f"a ChannelNorm with direction {str(aligned).lower()}"
        )
    entry = get_op_def(op.kind)
    mode = entry.align_mode(op)
    if op.kind == "tx8be.Slice" and mode in (AlignMode.ALIGN, AlignMode.NALIGN):
        aligned = mode is AlignMode.ALIGN
        why = (
            "Slice whose C start is 0 or C end is not a multiple of 64"
            if aligned
            else "Slice with C start > 0 and C end a multiple of 64"
        )
        return Requirement("slice", aligned, why)
    if mode is AlignMode.ALIGN:
        return Requirement("align_only", True, f"{op.kind} has only an ALIGN kernel")
    if mode is AlignMode.NALIGN:
        return Requirement("nalign_only", False, f"{op.kind} has only a NALIGN kernel")
    if op.results and op.results[0].type.rank in (1, 3):
        rank = op.results[0].type.rank
        return Requirement("odd_rank", False, f"output rank {rank}: Cx needs rank 2 or 4")
    out = op.results[0].type.shape if op.results else ()
    complete = next((i for i, v in enumerate(op.operands) if v.type.shape == out), None)
    if is_broadcast(op) and complete is not None:
        # every operand broadcast (e.g. [1,S,1] + [1,1,S]): no complete input, the BOTH rule
        return Requirement(
            "broadcast",
            None,
            f"a broadcast (V_VS) op follows its complete input (operand {complete})",
            complete,
        )
    if not op.operands:
        return Requirement("no_parent", None, "a BOTH op without operands starts NALIGN")
    return Requirement("both", None, "a BOTH op follows its parents")


# ------------------------------------------------------------------ the coloring


@dataclass
class _Graph:
    """One function's ops with their requirements and producers, for coloring."""

    func: Function
    ops: list[Op]
    reqs: list[Requirement]
    index: dict[int, int]
    """Op id -> position in ``ops``."""
    producer: dict[ValueKey, int]
    """Value key -> position of its producing op, or -1 - arg index for an argument."""

    @classmethod
    def of(cls, func: Function) -> _Graph:
        ops = [op for op in func.ops if op.kind not in TERMINATORS]
        producer: dict[ValueKey, int] = {v.key: -1 - i for i, v in enumerate(func.args)}
        for pos, op in enumerate(ops):
            for r in op.results:
                producer[r.key] = pos
        return cls(
            func,
            ops,
            [requirement(op) for op in ops],
            {op.id: p for p, op in enumerate(ops)},
            producer,
        )

    def value_color(self, value: Value, colors: Sequence[bool]) -> bool:
        pos = self.producer[value.key]
        return False if pos < 0 else colors[pos]


def greedy_colors(graph: _Graph) -> tuple[list[bool], list[str]]:
    """Seed 000's one-pass coloring: colors by op position, with each op's reason.

    The result does not depend on the text order of independent ops (module docstring,
    "Constants impose no color" and "Topologically earliest").
    """
    colors: list[bool] = []
    reasons: list[str] = []
    floating: list[bool] = []
    depth: list[int] = []

    def rank(pos: int) -> int:
        return 0 if pos < 0 else depth[pos]

    for op, req in zip(graph.ops, graph.reqs, strict=True):
        parents = [(graph.producer[v.key], i, v) for i, v in enumerate(op.operands)]
        depth.append(1 + max((rank(p) for p, _, _ in parents), default=0))
        # parents that impose a color: arguments and ops outside a constant subgraph
        deciding = [pv for pv in parents if pv[0] < 0 or not floating[pv[0]]]
        floating.append(req.rule in _CONSTANT_RULES and not deciding)
        if req.fixed is not None:
            colors.append(req.fixed)
            reasons.append(req.why)
            continue
        if req.rule == "no_parent":
            colors.append(False)
            reasons.append(req.why)
            continue
        if not deciding:
            colors.append(False)
            reasons.append(f"{req.why}: its parents are constants, which impose no color; NALIGN")
            continue
        ignored = len(parents) - len(deciding)
        note = f" ({ignored} constant parent{'s' * (ignored > 1)} ignored)" if ignored else ""
        if req.rule == "broadcast" and any(i == req.follow for _, i, _ in deciding):
            assert req.follow is not None
            parent = op.operands[req.follow]
            color = graph.value_color(parent, colors)
            colors.append(color)
            reasons.append(
                f"{req.why}, {_value_label(graph, parent)}, which is {color_name(color)}{note}"
            )
            continue
        why = "a BOTH op follows its parents" if req.rule == "broadcast" else req.why
        seen = {graph.value_color(v, colors) for _, _, v in deciding}
        if len(seen) == 1:
            color = seen.pop()
            which = "its parent" if len(parents) == 1 else "all its parents"
            if ignored:
                which = "its other parent" if len(deciding) == 1 else "its other parents"
            reasons.append(f"{why}: {which} {color_name(color)}{note}")
        else:
            # the lowest depth (arguments first, in index order), then the first operand
            pos, _, first = min(
                deciding, key=lambda pv: (rank(pv[0]), -pv[0] if pv[0] < 0 else 0, pv[1])
            )
            color = graph.value_color(first, colors)
            reasons.append(
                f"{why}: parents disagree; the topologically earliest, "
                f"{_value_label(graph, first)} (depth {rank(pos)}), is {color_name(color)}"
                f"{note}"
            )
        colors.append(color)
    return colors, reasons


def _value_label(graph: _Graph, value: Value) -> str:
    pos = graph.producer[value.key]
    if pos < 0:
        return f"argument {-1 - pos}"
    return graph.ops[pos].label


def _consumer_need(op: Op, colors: Sequence[bool], graph: _Graph) -> bool:
    """The layout ``op`` needs on its operands.

    That is its own color; for a ChannelNorm the opposite of its direction; for the
    function's return NALIGN.
    """
    if op.kind in TERMINATORS:
        return False
    if op.kind == "tx8be.ChannelNorm":
        return not bool(op.attrs.get("direction"))
    return colors[graph.index[op.id]]


@dataclass(frozen=True, slots=True)
class Conversion:
    """One ChannelNorm to insert: ``value`` converted to ``to_align`` for its ``users``."""

    value: Value
    to_align: bool
    users: tuple[tuple[int, int], ...]
    """(op id, operand index) pairs that read the converted value."""


def plan_conversions(graph: _Graph, colors: Sequence[bool]) -> list[Conversion]:
    """Where the coloring clashes: one conversion per (value, direction), in value order."""
    found: dict[ValueKey, list[tuple[int, int]]] = {}
    values: dict[ValueKey, Value] = {}
    for op in (*graph.ops, *(o for o in graph.func.ops if o.kind in TERMINATORS)):
        need = _consumer_need(op, colors, graph)
        for index, v in enumerate(op.operands):
            if graph.value_color(v, colors) != need:
                found.setdefault(v.key, []).append((op.id, index))
                values[v.key] = v
    # creation order: arguments first (by index), then ops
    order = sorted(found, key=lambda k: (graph.producer[k] >= 0, abs(graph.producer[k])))
    return [
        Conversion(values[k], not graph.value_color(values[k], colors), tuple(found[k]))
        for k in order
    ]


def coloring_problem(graph: _Graph) -> tuple[ColoringProblem, list[int]]:
    """The optimal-mode problem for ``graph`` and the positions of its free ops.

    Node ``p`` is op ``p``; then one node per function argument (fixed NALIGN), one for the
    function's return (fixed NALIGN), and one per ChannelNorm for its input side (fixed to
    the opposite of its direction). One net per value with users.
    """
    from tx8lab.core.passes.layout_mincut import ColoringProblem

    n_ops = len(graph.ops)
    n_args = len(graph.func.args)
    ret_node = n_ops + n_args
    fixed: dict[int, bool] = {}
    free: list[int] = []
    for pos, req in enumerate(graph.reqs):
        if req.fixed is None:
            free.append(pos)
        else:
            fixed[pos] = req.fixed
    for i in range(n_args):
        fixed[n_ops + i] = False
    fixed[ret_node] = False
    next_node = ret_node + 1
    cn_input: dict[int, int] = {}
    for pos, op in enumerate(graph.ops):
        if op.kind == "tx8be.ChannelNorm":
            cn_input[pos] = next_node
            fixed[next_node] = not bool(op.attrs.get("direction"))
            next_node += 1
    consumers: dict[ValueKey, list[int]] = {}
    for pos, op in enumerate(graph.ops):
        node = cn_input.get(pos, pos)
        for v in op.operands:
            consumers.setdefault(v.key, []).append(node)
    for op in graph.func.ops:
        if op.kind in TERMINATORS:
            for v in op.operands:
                consumers.setdefault(v.key, []).append(ret_node)
    nets = []
    for key, users in consumers.items():
        pos = graph.producer[key]
        nets.append((pos if pos >= 0 else n_ops + (-1 - pos), sorted(set(users))))
    return ColoringProblem(next_node, fixed, nets), free


def optimal_colors(graph: _Graph) -> list[bool]:
    """The coloring with the fewest ChannelNorms (see :mod:`.layout_mincut`)."""
    from tx8lab.core.passes.layout_mincut import solve_optimal

    problem, _ = coloring_problem(graph)
    return solve_optimal(problem)[: len(graph.ops)]


# ------------------------------------------------------------------ rewriting


def _dev_info(op: Op, aligned: bool) -> DevInfo:
    shape = op.results[0].type.shape if op.results else ()
    layout = layout_for(shape, aligned)
    old = op.attrs.get("dev_info")
    if isinstance(old, DevInfo):
        return old if old.mem_layout is layout else _replace_layout(old, layout)
    return DevInfo(mem_layout=layout)


def _replace_layout(dev: DevInfo, layout: LayoutMode) -> DevInfo:
    import dataclasses

    return dataclasses.replace(dev, mem_layout=layout)


def _out_layout_str(op: Op) -> str | None:
    text = op.attrs.get("layout_str")
    if not isinstance(text, str) or text in ("", "Unknown"):
        return None
    return text.rsplit("-", 1)[-1]


def rewrite(
    func: Function,
    graph: _Graph,
    colors: Sequence[bool],
    conversions: Sequence[Conversion],
    ids: IdCounter,
    pass_name: str,
) -> tuple[Function, list[tuple[Conversion, Op]]]:
    """``func`` with ``dev_info`` set from ``colors`` and a ChannelNorm per conversion.

    Returns the new function and each conversion with the ChannelNorm made for it.
    """
    by_producer: dict[int, list[Conversion]] = {}
    for conv in conversions:
        by_producer.setdefault(graph.producer[conv.value.key], []).append(conv)
    remap: dict[tuple[int, int], Value] = {}
    inserted: list[tuple[Conversion, Op]] = []

    def make_norms(pos: int, source: Op | None) -> list[Op]:
        made = []
        for conv in by_producer.get(pos, ()):
            attrs: dict[str, object] = {"direction": conv.to_align}
            shape = conv.value.type.shape
            attrs["dev_info"] = DevInfo(mem_layout=layout_for(shape, conv.to_align))
            layout = _out_layout_str(source) if source is not None else None
            if layout is not None:
                attrs["layout_str"] = f"{layout}-{layout}"
            norm = make_op("ChannelNorm", [conv.value], attrs, op_id=ids(), created_by=pass_name)
            for user in conv.users:
                remap[user] = norm.result
            made.append(norm)
            inserted.append((conv, norm))
        return made

    out: list[Op] = []
    for i in range(len(func.args)):
        out.extend(make_norms(-1 - i, None))
    for op in func.ops:
        if op.kind not in TERMINATORS:
            pos = graph.index[op.id]
            op = op.with_attrs(dev_info=_dev_info(op, colors[pos])) if op.results else op
        operands = tuple(remap.get((op.id, i), v) for i, v in enumerate(op.operands))
        if any(a is not b for a, b in zip(operands, op.operands, strict=True)):
            op = op.replace(operands=operands)
        out.append(op)
        if op.kind not in TERMINATORS:
            out.extend(make_norms(graph.index[op.id], op))
    return func.with_ops(out), inserted


# ------------------------------------------------------------------ post-condition


def alignment_conflicts(module: Module) -> list[str]:
    """Edges whose two ends disagree on the layout with no ChannelNorm between them.

    A value's layout is its producer's ``dev_info.mem_layout`` (function arguments are
    compact); an op needs its own layout on its operands, a ChannelNorm the opposite of its
    direction, the function's return compact. Ops without ``dev_info`` are not checked.
    """
    problems: list[str] = []
    for func in module.functions:
        aligned: dict[ValueKey, bool] = {v.key: False for v in func.args}
        for op in func.ops:
            if op.kind in TERMINATORS:
                need: bool | None = False
            elif op.kind == "tx8be.ChannelNorm":
                need = not bool(op.attrs.get("direction"))
            else:
                dev = op.attrs.get("dev_info")
                need = dev.mem_layout in ALIGNED_LAYOUTS if isinstance(dev, DevInfo) else None
            if need is not None:
                for index, v in enumerate(op.operands):
                    have = aligned.get(v.key)
                    if have is not None and have != need:
                        problems.append(
                            f"{op.label}: operand {index} is {color_name(have)} but the op "
                            f"needs {color_name(need)} and no ChannelNorm converts it"
                        )
            dev = op.attrs.get("dev_info")
            if isinstance(dev, DevInfo):
                for r in op.results:
                    aligned[r.key] = dev.mem_layout in ALIGNED_LAYOUTS
    return problems


# ------------------------------------------------------------------ the pass


@dataclass(frozen=True)
class LayoutAlignNPU(Pass):
    """Color ops ALIGN/NALIGN, insert ChannelNorms at clashes, set dev_info.mem_layout."""

    name: ClassVar[str] = "layout-align-npu"
    summary: ClassVar[str] = (
        "color ops ALIGN/NALIGN (seed 000 rules), insert ChannelNorms where they clash"
    )

    strategy: Literal["greedy", "optimal"] = knob(
        "greedy",
        "greedy: seed 000's one-pass walk; optimal: fewest ChannelNorms (min cut)",
        choices=("greedy", "optimal"),
    )
    """Set from Python or ``--set layout-align-npu.strategy=optimal``."""
    compare: bool = knob(True, "also count the ChannelNorms the other strategy would insert")
    """The report's ``channel_norms_greedy`` / ``channel_norms_optimal`` need both."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        ids = IdCounter(module.next_id)
        decisions: list[Decision] = []
        functions = []
        counts = {"greedy": 0, "optimal": 0}
        rules: Counter[str] = Counter()
        for func in module.functions:
            graph = _Graph.of(func)
            greedy, reasons = greedy_colors(graph)
            if self.strategy == "optimal":
                colors = optimal_colors(graph)
                reasons = [
                    r
                    if graph.reqs[p].fixed is not None
                    else f"the minimum cut puts it {color_name(colors[p])} ({graph.reqs[p].why})"
                    for p, r in enumerate(reasons)
                ]
            else:
                colors = greedy
            conversions = plan_conversions(graph, colors)
            counts[self.strategy] += len(conversions)
            if self.compare:
                other = optimal_colors(graph) if self.strategy == "greedy" else greedy
                other_name = "optimal" if self.strategy == "greedy" else "greedy"
                counts[other_name] += len(plan_conversions(graph, other))
            for op, req, color, reason in zip(graph.ops, graph.reqs, colors, reasons, strict=True):
                rules[req.rule] += 1
                decisions.append(self.decide(op.id, color_name(color), reason, rule=req.rule))
            new_func, inserted = rewrite(func, graph, colors, conversions, ids, self.name)
            decisions += [self._insertion(graph, conv, norm) for conv, norm in inserted]
            functions.append(new_func)
        out = Module(tuple(functions), module.attrs, ids.next_id)
        stats: dict[str, int | float | str] = {
            "channel_norms": counts[self.strategy],
            "strategy": self.strategy,
        }
        if self.compare or self.strategy == "greedy":
            stats["channel_norms_greedy"] = counts["greedy"]
        if self.compare or self.strategy == "optimal":
            stats["channel_norms_optimal"] = counts["optimal"]
        for rule, count in sorted(rules.items()):
            stats[f"rule_{rule}"] = count
        return PassResult(out, tuple(decisions), stats)

    def _insertion(self, graph: _Graph, conv: Conversion, norm: Op) -> Decision:
        have = color_name(not conv.to_align)
        want = color_name(conv.to_align)
        users = ", ".join(
            f"%{op_id} (operand {i})" if op_id in graph.index else f"the function's output {i}"
            for op_id, i in conv.users
        )
        pos = graph.producer[conv.value.key]
        source = f"argument {-1 - pos}" if pos < 0 else graph.ops[pos].label
        reason = (
            f"{source} is {have} but {users} need{'s' if len(conv.users) == 1 else ''} "
            f"{want}: ChannelNorm(direction={str(conv.to_align).lower()})"
        )
        related = [graph.ops[pos].id] if pos >= 0 else []
        related += [op_id for op_id, _ in conv.users if op_id in graph.index]
        return self.decide(
            norm.id,
            "inserted",
            reason,
            related=related,
            rule="conflict",
            direction=conv.to_align,
        )

    def check(self, module: Module) -> list[str]:
        """Post-condition: no ALIGN/NALIGN edge without a ChannelNorm between."""
        return alignment_conflicts(module)


__all__ = [
    "ALIGNED_LAYOUTS",
    "Conversion",
    "LayoutAlignNPU",
    "Requirement",
    "alignment_conflicts",
    "coloring_problem",
    "greedy_colors",
    "optimal_colors",
    "plan_conversions",
    "requirement",
]
