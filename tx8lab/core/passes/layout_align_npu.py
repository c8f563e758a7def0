"""layout-align-npu: color every op ALIGN or NALIGN and insert ChannelNorms where they clash.

Spec: seed 000 (LayoutAlignToNPU, whole) and seed 001 ("layoutAlignToNpuPass"): the op
graph is a directed graph whose nodes need ALIGN (Cx/NCx), NALIGN (compact Tensor/NTensor)
or either (BOTH); where a producer and a user disagree a ChannelNorm converts between the
two, and at the end ``layout_str`` is mapped to ``dev_info.mem_layout``.

The rules, in the order they are tried (the first that fires decides; the order is the
order the seed lists them in, but for ``odd_rank``, see "Odd ranks" below):

| rule | color | what fires it |
|---|---|---|
| ``dev_info`` | its layout | the op already has ``dev_info`` (the user fixed it) |
| ``channel_norm`` | its direction | a ChannelNorm already in the graph |
| ``odd_rank`` | NALIGN | an output of rank 0, 1, 3 or >= 5, or an operand of rank 3 or >= 5 |
| ``align_only`` | ALIGN | the op library says ALIGN only (Gemm, MatMul, Conv, Pool, ...) |
| ``nalign_only`` | NALIGN | the op library says NALIGN only |
| ``slice`` | either | Slice: C start > 0 and C end a multiple of 64 -> NALIGN, else ALIGN |
| ``broadcast`` | follows | a V_VS op (one operand broadcast) takes its complete input's color |
| ``both`` | follows | the parents' common color, else the earliest parent's |
| ``no_parent`` | NALIGN | a BOTH op without operands (a constant) |
| ``input`` / ``output`` | NALIGN | function arguments; values returned by the function |

**Odd ranks.** Seed 000 ("Odd-Dimension Output"): "如果输出的维度是奇数(1,3),这种Op只能
看作是NALIGN,因为Cx模式需要数据的维度是2或者4" — an output of odd rank can only be NALIGN,
because Cx needs rank 2 or 4. We read the reason as the rule: a value whose rank is not 2
or 4 has no Cx/NCx (:mod:`tx8lab.core.layouts` refuses it), so an op with such an output
(rank 0 and >= 5 too, not only 1 and 3) is NALIGN, and so is an op reading a rank-3 or
rank >= 5 operand (it could only read it in Cx through a ChannelNorm to a layout that does
not exist). Rank-0/1 operands stay allowed: seed 000 says one-dimensional data meets both
modes and its broadcast ChannelNorms are removed later (seed 001 ConstChannelNormErase),
so an ALIGN op still reads a rank-1 bias through a ChannelNorm. The rule is absolute, so
it goes before the ALIGN-only and Slice rules, and seed 000 then leaves a contradiction:
an ALIGN-only op (its op library kernel is ALIGN only) with an odd-rank result. The knob
``odd_rank`` picks how a TX8 frontend resolves it:

- ``view`` (default): the op is computed on rank-4 (or rank-2) views of its tensors, as a
  frontend emits it: ``Reshape`` -> the op -> ``Reshape`` back (``[B, M, K] @ [K, N]``
  runs as ``[B, 1, M, K] @ [K, N] -> [B, 1, M, N]``; a rank-5 Transpose drops a dim of
  size 1 or merges dims the permutation keeps together; :mod:`tx8lab.core.ops.views`).
  The Reshapes sit on the compact side, where a reshape moves no byte, and the op keeps
  its only kernel, ALIGN. Seed 001 supports it: BatchNorm's ALIGN kernel takes rank 2/3/4
  input, i.e. an ALIGN kernel reads a rank-3 tensor through a rank-4 view. An op with no
  such view (a rank-5 Transpose that mixes every dim) falls back to ``nalign``. Reshape
  chains fold as a frontend emits them: an operand made by a Reshape nothing else reads
  is reshaped to the view by that Reshape, and a result read by one Reshape only feeds
  it directly (:func:`view_odd_ranks`).
- ``nalign``: the seed's sentence read literally, "this op can only be NALIGN": the op runs
  on compact data, its neighbours pay the ChannelNorms. Fewer ChannelNorms, but it assumes
  a compact kernel the seed's ALIGN-only list says the op library does not have.

Either way an ALIGN-only op whose tensors all have rank <= 1 is NALIGN without a view:
the Cx of one pixel is its compact image, so its ALIGN kernel reads and writes the same
bytes.

Readings chosen where the seed is vague or contradicts itself:

- **ChannelNorm direction.** Seed 000's text says the ALIGN-producer/NALIGN-user case
  gets ``False`` and the NALIGN-producer/ALIGN-user case ``True``; its code says
  ``direction = opAlignMode == NALIGN ? false : true``, the reverse. We follow the text:
  ``direction`` names the layout the ChannelNorm *produces*, true = to ALIGN (as the op
  library's ChannelNorm reads it), so NALIGN -> ALIGN is ``true``. The code's expression
  describes the producer's side, which is the opposite layout.
- **Precedence.** The odd-rank rule beats the ALIGN-only and Slice rules (see "Odd
  ranks"); with ``odd_rank=view`` it only fires for those ops when no view exists.
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
from tx8lab.core.layout_str import TENSOR_FAMILY, join_layout, split_layout, tensor_layout
from tx8lab.core.layouts import has_aligned_layout, layout_for
from tx8lab.core.ops.views import KERNEL_RANKS, needs_view
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.errors import Tx8labError
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
        bad = [v for v in op.results if aligned and not has_aligned_layout(v.type.rank)]
        if bad:
            raise Tx8labError(
                f"{op.label}: dev_info fixes mem_layout = {dev.mem_layout.value} but its result "
                f"{bad[0].type} has rank {bad[0].type.rank}; Cx/NCx exist for rank 2 and 4 "
                "(seed 000): set Tensor/NTensor"
            )
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
    odd = odd_rank_reason(op)
    if odd is not None:
        if mode is AlignMode.ALIGN:
            odd += f"; the odd-rank rule goes before {op.kind}'s ALIGN-only kernel"
        return Requirement("odd_rank", False, odd)
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


def odd_rank_reason(op: Op) -> str | None:
    """Why ``op`` can only be NALIGN by the odd-rank rule, or None (module docstring)."""
    for v in op.results:
        if v.type.rank not in (2, 4):
            return f"output rank {v.type.rank}: Cx needs rank 2 or 4"
    for i, v in enumerate(op.operands):
        if v.type.rank not in KERNEL_RANKS:
            return f"operand {i} has rank {v.type.rank}, which has no Cx (Cx needs rank 2 or 4)"
    return None


# ------------------------------------------------------------------ odd-rank views


@dataclass(frozen=True, slots=True)
class View:
    """What the ``view`` step did to one ALIGN-only op with an odd-rank tensor."""

    op: Op
    """The op as it now is (the same id; the original when no view exists)."""
    before: Op
    """The op as it was."""
    reshapes: tuple[int, ...] = ()
    """Ids of the Reshapes inserted before and after it."""
    folded: tuple[int, ...] = ()
    """Ids of the graph's own Reshapes that now read or make the view directly."""

    @property
    def viewed(self) -> bool:
        """Whether the op now runs on views (False: it has none and stays as it was)."""
        return self.op is not self.before


def _wants_view(op: Op) -> bool:
    from tx8lab.core.ops import get_op_def

    if op.kind in TERMINATORS or op.regions or isinstance(op.attrs.get("dev_info"), DevInfo):
        return False
    ranks = ([v.type.rank for v in op.operands], [v.type.rank for v in op.results])
    return get_op_def(op.kind).align_mode(op) is AlignMode.ALIGN and needs_view(*ranks)


def _carried_layout_str(op: Op, shapes: Sequence[tuple[int, ...]]) -> str | None:
    """``op``'s ``layout_str`` carried to new shapes of its operands then results."""
    text = op.attrs.get("layout_str")
    old = [v.type.shape for v in (*op.operands, *op.results)]
    if not isinstance(text, str) or len(shapes) != len(old):
        return None
    parts = split_layout(text, len(old), op.label)
    return join_layout(
        [
            part if a == b else (tensor_layout(b) if part in TENSOR_FAMILY else None)
            for part, a, b in zip(parts, old, shapes, strict=True)
        ]
    )


def _relaid(op: Op, new: Op) -> Op:
    """``new`` (``op`` with other operand or result shapes) with its ``layout_str`` carried."""
    layout = _carried_layout_str(op, [v.type.shape for v in (*new.operands, *new.results)])
    return new if layout is None else new.with_attrs(layout_str=layout)


def view_odd_ranks(func: Function, ids: IdCounter, created_by: str) -> tuple[Function, list[View]]:
    """``func`` with its ALIGN-only ops that have a rank-3/5+ tensor on rank-2/4 views.

    Each such op reads ``Reshape``s of its operands (one per value and shape, shared by
    the ops that read the same view) and its results are reshaped back for their users;
    the op keeps its id. Reshape chains fold as a frontend folds them: an operand made
    by a Reshape used only here is reshaped to the view by that Reshape, and a result
    used only by a Reshape feeds it directly. An op whose ``aligned_view`` is None is
    left as it is (the odd-rank rule then makes it NALIGN).
    """
    from tx8lab.core.ops import get_op_def

    users: dict[ValueKey, list[Op]] = {}
    for user in func.ops:
        for v in user.operands:
            users.setdefault(v.key, []).append(user)
    out: list[Op | None] = []
    where: dict[int, int] = {}
    views: list[View] = []
    remap: dict[ValueKey, Value] = {}
    shared: dict[tuple[ValueKey, tuple[int, ...]], Value] = {}

    def reshape(value: Value, shape: tuple[int, ...], op_id: int | None = None) -> Op:
        layout = join_layout([tensor_layout(value.type.shape), tensor_layout(shape)])
        attrs = {"shape": shape, "layout_str": layout}
        made_by = created_by if op_id is None else None
        return make_op(
            "Reshape", [value], attrs, op_id=ids() if op_id is None else op_id, created_by=made_by
        )

    def only_reshape(value: Value) -> Op | None:
        """The graph's Reshape that makes ``value`` when nothing else reads it."""
        pos = where.get(value.key[0])
        producer = None if pos is None or value.key[2] else out[pos]
        if producer is None or producer.kind != "tx8be.Reshape":
            return None
        return producer if len(users.get(value.key, ())) == 1 else None

    def emit(op: Op) -> None:
        where[op.id] = len(out)
        out.append(op)

    for op in func.ops:
        operands = tuple(remap.get(v.key, v) for v in op.operands)
        if any(a is not b for a, b in zip(operands, op.operands, strict=True)):
            op = _relaid(op, op.replace(operands=operands))
        if not _wants_view(op):
            emit(op)
            continue
        view = get_op_def(op.kind).aligned_view(op)
        if view is None:
            views.append(View(op, op))
            emit(op)
            continue
        made: list[Op] = []
        folded: list[int] = []
        inputs = []
        for value, shape in zip(op.operands, view.operands, strict=True):
            key = (value.key, shape)
            producer = only_reshape(value)
            if value.type.shape == shape or key in shared:
                inputs.append(shared.get(key, value))
            elif producer is not None:
                # the graph's own Reshape makes the view (or goes, if it then does nothing)
                source = producer.operands[0]
                folded.append(producer.id)
                out[where[producer.id]] = None
                if source.type.shape == shape:
                    inputs.append(source)
                else:
                    retargeted = reshape(source, shape, producer.id)
                    out[where[producer.id]] = retargeted
                    inputs.append(retargeted.result)
            else:
                made.append(reshape(value, shape))
                shared[key] = made[-1].result
                inputs.append(made[-1].result)
        attrs = {k: v for k, v in {**op.attrs, **view.attrs}.items() if k != "layout_str"}
        viewed = make_op(view.kind or op.kind, inputs, attrs, op_id=op.id, created_by=op.created_by)
        if isinstance(op.attrs.get("layout_str"), str):
            viewed = _relaid(op, viewed.with_attrs(layout_str=op.attrs["layout_str"]))
        for m in made:
            emit(m)
        emit(viewed)
        for old, new in zip(op.results, viewed.results, strict=True):
            readers = users.get(old.key, [])
            if old.type.shape == new.type.shape:
                continue
            if len(readers) == 1 and readers[0].kind == "tx8be.Reshape":
                folded.append(readers[0].id)
                remap[old.key] = new
                continue
            made.append(reshape(new, old.type.shape))
            emit(made[-1])
            remap[old.key] = made[-1].result
            users[made[-1].result.key] = readers
        views.append(View(viewed, op, tuple(m.id for m in made), tuple(folded)))
    return func.with_ops([o for o in out if o is not None]), views


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
    odd_rank: Literal["view", "nalign"] = knob(
        "view",
        "ALIGN-only op with an odd-rank tensor: view: computed on rank-4 views (Reshapes "
        "around it); nalign: the op is NALIGN",
        choices=("view", "nalign"),
    )
    """The two readings of seed 000's odd-rank rule (module docstring, "Odd ranks")."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        ids = IdCounter(module.next_id)
        decisions: list[Decision] = []
        functions = []
        counts = {"greedy": 0, "optimal": 0}
        rules: Counter[str] = Counter()
        viewed = 0
        for func in module.functions:
            if self.odd_rank == "view":
                func, views = view_odd_ranks(func, ids, self.name)
                present = {o.id: o for o in func.ops}
                decisions += [d for v in views for d in self._view_decisions(v, present)]
                viewed += sum(1 for v in views if v.viewed)
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
            "odd_rank": self.odd_rank,
            "viewed": viewed,
        }
        if self.compare or self.strategy == "greedy":
            stats["channel_norms_greedy"] = counts["greedy"]
        if self.compare or self.strategy == "optimal":
            stats["channel_norms_optimal"] = counts["optimal"]
        for rule, count in sorted(rules.items()):
            stats[f"rule_{rule}"] = count
        return PassResult(out, tuple(decisions), stats)

    def _view_decisions(self, view: View, present: dict[int, Op]) -> list[Decision]:
        op, before = view.op, view.before
        ranks = ", ".join(str(v.type.rank) for v in (*before.operands, *before.results))
        if not view.viewed:
            why = (
                f"{before.kind} has only an ALIGN kernel, but its tensors have ranks {ranks} "
                "and no rank-2/4 view exists: the odd-rank rule makes it NALIGN"
            )
            return [self.decide(op.id, "not viewed", why, rule="view")]
        shapes = " x ".join(str(list(v.type.shape)) for v in op.operands)
        results = ", ".join(str(list(v.type.shape)) for v in op.results)
        why = (
            f"{before.kind} has only an ALIGN kernel and tensors of ranks {ranks} (Cx needs "
            f"rank 2 or 4): computed as {op.kind} on {shapes} -> {results}"
        )
        reshapes = [present[i] for i in (*view.reshapes, *view.folded) if i in present]
        out = [self.decide(op.id, "viewed", why, related=[r.id for r in reshapes], rule="view")]
        for r in reshapes:
            made = r.id in view.reshapes
            out.append(
                self.decide(
                    r.id,
                    "view reshape" if made else "folded",
                    f"{'a' if made else 'an existing'} Reshape of compact data (no byte moves): "
                    f"{list(r.operands[0].type.shape)} -> {list(r.results[0].type.shape)}, "
                    f"for the view of {op.label}",
                    related=[op.id],
                    rule="view",
                )
            )
        return out

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
    "View",
    "alignment_conflicts",
    "coloring_problem",
    "greedy_colors",
    "odd_rank_reason",
    "optimal_colors",
    "plan_conversions",
    "requirement",
    "view_odd_ranks",
]
