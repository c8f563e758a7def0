"""Seed 000's odd-rank rule: a value whose rank is not 2 or 4 is never Cx/NCx.

Oracles: hand derivations from seed 000's rules for small graphs (each written next to
its test), the interpreter (values unchanged by the views), and a walk of the zoo models
after the layout passes. The two readings of an ALIGN-only op with an odd-rank result
(``odd_rank=view``: rank-4 views, ``odd_rank=nalign``: the op is NALIGN) are both shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import same_outputs
from tx8lab.core import Builder, verify, zoo
from tx8lab.core.attrs import DevInfo, LayoutMode
from tx8lab.core.ir import Module, Op, Value
from tx8lab.core.passes import DEFAULT_PIPELINE
from tx8lab.core.passes.layout_align_npu import LayoutAlignNPU, alignment_conflicts
from tx8lab.core.runner import run_pipeline
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81

CX = (LayoutMode.Cx, LayoutMode.NCx)
T, NT, C, NC = LayoutMode.Tensor, LayoutMode.NTensor, LayoutMode.Cx, LayoutMode.NCx


def _run(module: Module, odd_rank: str = "view", strategy: str = "greedy") -> Any:
    result = LayoutAlignNPU(strategy=strategy, odd_rank=odd_rank).run(module, TX81)
    verify(result.module)
    assert alignment_conflicts(result.module) == []
    same_outputs(module, result.module)
    return result


def _layout(op: Op) -> LayoutMode:
    dev = op.attrs["dev_info"]
    assert isinstance(dev, DevInfo)
    return dev.mem_layout


def _chain(module: Module) -> list[tuple[str, tuple[int, ...], LayoutMode]]:
    """(kind, result shape, layout) of every op but constants and the return, in order."""
    return [
        (op.kind.removeprefix("tx8be."), op.results[0].type.shape, _layout(op))
        for op in module.main.ops
        if op.results and op.kind != "tx8be.Constant"
    ]


def _odd_cx(module: Module) -> list[str]:
    """Ops whose result is Cx/NCx but has rank 3 or >= 5 (no Cx at all)."""
    return [
        f"{op.label} {op.results[0].type}"
        for op in module.walk()
        if op.results
        and isinstance(op.attrs.get("dev_info"), DevInfo)
        and _layout(op) in CX
        and op.results[0].type.rank not in (0, 1, 2, 4)
    ]


def _rules(result: Any) -> dict[int, tuple[str, str]]:
    return {
        d.op_id: (d.choice, d.data["rule"])
        for d in result.decisions
        if d.choice in ("ALIGN", "NALIGN", "viewed", "not viewed")
    }


# ------------------------------------------------------------------ rank-3 MatMul


def _matmul3() -> Module:
    b = Builder()
    x = b.input((1, 8, 32), "f16")
    y = b.op("MatMul", x, b.weight((32, 16), "f16"))  # %1: [1, 8, 16], rank 3
    b.output(y)
    return b.finish()


def test_rank3_matmul_runs_on_a_rank4_view() -> None:
    # By hand (seed 000): MatMul is ALIGN only; its rank-3 x and result have no Cx. As a
    # frontend emits it: x -> Reshape [1,1,8,32] (reads rank 3: NALIGN) -> ChannelNorm(true)
    # -> MatMul [1,1,8,32] @ [32,16] (ALIGN, Cx: dim 0 is 1) -> ChannelNorm(false) -> Reshape
    # back [1,8,16] (rank 3: NALIGN) -> output. The weight (constant, NALIGN; dim 0 = 32:
    # NTensor) gets a ChannelNorm(true) to NCx. Three ChannelNorms.
    result = _run(_matmul3())
    assert _chain(result.module) == [
        ("ChannelNorm", (32, 16), NC),
        ("Reshape", (1, 1, 8, 32), T),
        ("ChannelNorm", (1, 1, 8, 32), C),
        ("MatMul", (1, 1, 8, 16), C),
        ("ChannelNorm", (1, 1, 8, 16), T),
        ("Reshape", (1, 8, 16), T),
    ]
    assert result.stats["channel_norms"] == 3
    assert result.stats["viewed"] == 1
    assert _rules(result)[1] == ("ALIGN", "align_only")
    assert _odd_cx(result.module) == []


def test_rank3_matmul_nalign_reading() -> None:
    # By hand, the literal reading: the odd-rank rule goes first, the MatMul is NALIGN and
    # reads x and the weight as they are; no ChannelNorm.
    result = _run(_matmul3(), odd_rank="nalign")
    assert _chain(result.module) == [("MatMul", (1, 8, 16), T)]
    assert result.stats["channel_norms"] == 0
    assert _rules(result)[1] == ("NALIGN", "odd_rank")


# ------------------------------------------------------------------ rank-3 / rank-5 Slice


def test_rank3_slice_runs_on_a_rank4_view() -> None:
    # By hand: Slice C 0:64 (start 0) is ALIGN (seed 000 Slice rule) but [1,8,64] -> [1,1,64]
    # is rank 3: x -> Reshape [1,1,8,64] -> ChannelNorm(true) -> Slice [0:1,0:1,0:1,0:64]
    # (ALIGN) -> ChannelNorm(false) -> Reshape [1,1,64]. Two ChannelNorms; nalign: none.
    b = Builder()
    x = b.input((1, 8, 64), "f16")
    b.output(b.op("Slice", x, starts=(0, 0, 0), ends=(1, 1, 64)))
    module = b.finish()
    result = _run(module)
    assert _chain(result.module) == [
        ("Reshape", (1, 1, 8, 64), T),
        ("ChannelNorm", (1, 1, 8, 64), C),
        ("Slice", (1, 1, 1, 64), C),
        ("ChannelNorm", (1, 1, 1, 64), T),
        ("Reshape", (1, 1, 64), T),
    ]
    sliced = next(op for op in result.module.main.ops if op.kind == "tx8be.Slice")
    assert (sliced.attrs["starts"], sliced.attrs["ends"]) == ((0, 0, 0, 0), (1, 1, 1, 64))
    assert _rules(result)[0] == ("ALIGN", "slice")
    literal = _run(module, odd_rank="nalign")
    assert _chain(literal.module) == [("Slice", (1, 1, 64), T)]
    assert _rules(literal)[0] == ("NALIGN", "odd_rank")


def test_rank5_slice_merges_a_whole_dim_into_its_outer_neighbour() -> None:
    # [2,3,4,5,64] cut to 0:2 on dim 1: no dim of size 1 to drop; dims 0 and 1 cannot merge
    # (dim 1 is cut), dims 1 and 2 can (dim 2 whole, dim 1 step 1): [2, 12, 5, 64], and
    # dim 1's 0:2 of 3 rows of 4 becomes 0:8 of 12.
    b = Builder()
    x = b.input((2, 3, 4, 5, 64), "f32")
    b.output(b.op("Slice", x, starts=(0, 0, 0, 0, 0), ends=(2, 2, 4, 5, 64)))
    result = _run(b.finish())
    sliced = next(op for op in result.module.main.ops if op.kind == "tx8be.Slice")
    assert sliced.operands[0].type.shape == (2, 12, 5, 64)
    assert (sliced.attrs["starts"], sliced.attrs["ends"]) == ((0, 0, 0, 0), (2, 8, 5, 64))
    assert _layout(sliced) is NC
    assert _odd_cx(result.module) == []


# ------------------------------------------------------------------ rank-5 Transpose / Split


def _qkv(batch: int) -> Module:
    """ViT's head split: [B,T,3,H,D] -> Transpose (2,0,3,1,4) -> Split in 3 -> [B,H,T,D]."""
    b = Builder()
    x = b.input((batch, 4, 3, 2, 16), "f16")
    t = b.op("Transpose", x, perm=(2, 0, 3, 1, 4))  # %0: [3, B, 2, 4, 16]
    parts = b.op("Split", t, axis=0, sizes=(1, 1, 1))  # %1
    b.output(*(b.op("Reshape", p, shape=(batch, 2, 4, 16)) for p in parts))
    return b.finish()


def test_rank5_transpose_drops_a_dim_of_one() -> None:
    # By hand, batch 1: the Transpose (ALIGN only) drops x's dim 0 (size 1): [4,3,2,16] with
    # perm (1,2,0,3) -> [3,2,4,16] (ALIGN; dim 0 = 3: NCx) between ChannelNorm(true) and
    # ChannelNorm(false), and a Reshape back to [3,1,2,4,16]. The Split has rank-5 results
    # and the Reshapes read rank-5 values: both NALIGN (odd_rank), so the outputs need no
    # ChannelNorm. Two ChannelNorms (seed 000 with ALIGN-only first had four: x, and the
    # three outputs, and rank-5 NCx values).
    result = _run(_qkv(1))
    assert _chain(result.module)[:5] == [
        ("Reshape", (4, 3, 2, 16), NT),
        ("ChannelNorm", (4, 3, 2, 16), NC),
        ("Transpose", (3, 2, 4, 16), NC),
        ("ChannelNorm", (3, 2, 4, 16), NT),
        ("Reshape", (3, 1, 2, 4, 16), NT),
    ]
    transpose = next(op for op in result.module.main.ops if op.kind == "tx8be.Transpose")
    assert transpose.attrs["perm"] == (1, 2, 0, 3)
    rules = _rules(result)
    assert rules[0] == ("ALIGN", "align_only")
    assert rules[1] == ("NALIGN", "odd_rank")  # the Split
    assert {rules[i] for i in (2, 3, 4)} == {("NALIGN", "odd_rank")}
    assert result.stats["channel_norms"] == 2
    assert _odd_cx(result.module) == []


def test_rank5_transpose_without_a_view_is_nalign() -> None:
    # Batch 2: no dim of size 1, and perm (2,0,3,1,4) keeps no two neighbours together, so
    # no rank-4 view exists: the odd-rank rule makes the Transpose NALIGN; no ChannelNorm.
    for odd_rank in ("view", "nalign"):
        result = _run(_qkv(2), odd_rank=odd_rank)
        assert _rules(result)[0] == ("NALIGN", "odd_rank")
        assert result.stats["channel_norms"] == 0
    view = LayoutAlignNPU().run(_qkv(2), TX81)
    assert next(d.choice for d in view.decisions if d.op_id == 0) == "not viewed"


# ------------------------------------------------------------------ rank 0


def test_rank0_results_are_nalign() -> None:
    # x -> Conv2d %1 -> ReduceMax over every dim (no keepdims: rank 0) %2 -> Relu %3 -> out.
    # By hand: the ReduceMax (ALIGN only) has a rank-0 result, which has no Cx: it runs on
    # its keepdims view [1,1,1,1] (ALIGN) and a Reshape to [] follows; that Reshape and the
    # Relu have rank-0 results: NALIGN, rule odd_rank (seed 000 read as "not rank 2 or 4").
    # ChannelNorms: x and the weight to Cx, the [1,1,1,1] result back: three, none of rank 0.
    b = Builder()
    x = b.input((1, 4, 4, 8), "f16")
    conv = b.op("Conv2d", x, b.weight((8, 1, 1, 8), "f16"))
    top = b.op("ReduceMax", conv, axes=(0, 1, 2, 3), keepdims=False)
    b.output(b.op("Relu", top))
    module = b.finish()
    result = _run(module)
    assert _rules(result)[3] == ("NALIGN", "odd_rank")
    assert _chain(result.module)[-4:] == [
        ("ReduceMax", (1, 1, 1, 1), C),
        ("ChannelNorm", (1, 1, 1, 1), T),
        ("Reshape", (), T),
        ("Relu", (), T),
    ]
    norms = [op for op in result.module.main.ops if op.kind == "tx8be.ChannelNorm"]
    assert len(norms) == 3
    assert all(op.results[0].type.rank == 4 for op in norms)
    # nalign: the ReduceMax itself is NALIGN (its Conv2d input converts back)
    literal = _run(module, odd_rank="nalign")
    assert _rules(literal)[2] == ("NALIGN", "odd_rank")
    assert _odd_cx(literal.module) == []


def test_dev_info_asking_cx_for_rank3_is_a_clear_error() -> None:
    b = Builder()
    x = b.input((1, 8, 32), "f16")
    b.output(b.op("Relu", x, dev_info=DevInfo(mem_layout=LayoutMode.Cx)))
    with pytest.raises(
        Tx8labError, match=r"%0 tx8be.Relu: dev_info fixes mem_layout = Cx .* rank 3"
    ):
        LayoutAlignNPU().run(b.finish(), TX81)


def test_channel_norm_of_rank3_is_refused() -> None:
    b = Builder()
    x = b.input((1, 8, 32), "f16")
    with pytest.raises(Tx8labError, match=r"ChannelNorm: x .* has rank 3, which has no Cx"):
        b.op("ChannelNorm", x, direction=True)


def test_rank3_scatter_runs_on_a_rank4_view() -> None:
    # Scatter (ALIGN only) on [1, 4, 8] along axis 1: a 1 after the batch dim for data,
    # indices and updates alike ([1, 1, 4, 8], [1, 1, 2, 8]), the axis becomes 2
    b = Builder()
    data = b.input((1, 4, 8), "f32")
    rows = np.array([[[3] * 8, [0] * 8]], dtype=np.int32)
    b.output(b.op("Scatter", data, b.constant(rows, "i32"), b.input((1, 2, 8), "f32"), axis=1))
    result = _run(b.finish())
    scatter = next(op for op in result.module.main.ops if op.kind == "tx8be.Scatter")
    assert [v.type.shape for v in scatter.operands] == [(1, 1, 4, 8), (1, 1, 2, 8), (1, 1, 2, 8)]
    assert scatter.attrs["axis"] == 2
    assert _layout(scatter) is C


# ------------------------------------------------------------------ every view keeps values


def _shapes(rank: int) -> st.SearchStrategy[tuple[int, ...]]:
    return st.tuples(*[st.integers(1, 3)] * (rank - 1), st.integers(1, 70))


@st.composite
def _odd_rank_ops(draw: st.DrawFn) -> tuple[Module, bool]:
    """One ALIGN-only op with rank-3 or rank-5 tensors; whether a view must exist (rank 3)."""
    rank = draw(st.sampled_from((3, 5)))
    kind = draw(
        st.sampled_from(
            (
                *("MatMul", "BatchMatMul", "Slice", "Concatenate", "Pad", "Transpose"),
                *("ReduceSum", "ReduceMax", "BatchNorm_Inference"),
            )
        )
    )
    b = Builder()
    if kind == "BatchMatMul" or kind == "BatchNorm_Inference":
        rank = 3
    shape = draw(_shapes(rank))
    x = b.input(shape, "f32")
    out: Value
    if kind in ("MatMul", "BatchMatMul"):
        n = draw(st.integers(1, 40))
        if kind == "MatMul" and draw(st.booleans()):
            other = b.input((shape[-1], n), "f32")  # rank 2: broadcast over the batch dims
        else:
            batch = tuple(draw(st.sampled_from((d, 1))) for d in shape[:-2])
            batch = shape[:-2] if kind == "BatchMatMul" else batch
            other = b.input((*batch, shape[-1], n), "f32")
        out = b.op(kind, x, other)
    elif kind == "Slice":
        starts, ends = [], []
        for d in shape:
            lo = draw(st.integers(0, d - 1))
            starts.append(lo)
            ends.append(draw(st.integers(lo + 1, d)))
        out = b.op("Slice", x, starts=tuple(starts), ends=tuple(ends))
    elif kind == "Concatenate":
        axis = draw(st.integers(0, rank - 1))
        other = list(shape)
        other[axis] = draw(st.integers(1, 4))
        out = b.op("Concatenate", x, b.input(tuple(other), "f32"), axis=axis)
    elif kind == "Pad":
        pads = draw(st.lists(st.integers(0, 2), min_size=2 * rank, max_size=2 * rank))
        out = b.op("Pad", x, pads=tuple(pads))
    elif kind == "Transpose":
        out = b.op("Transpose", x, perm=tuple(draw(st.permutations(range(rank)))))
    elif kind == "BatchNorm_Inference":
        c = shape[-1]
        params = [b.input((c,), "f32") for _ in range(3)]
        var = b.op("Add", b.op("Abs", b.input((c,), "f32")), b.constant(np.float32(1.0), "f32"))
        out = b.op(kind, x, *params, var)
    else:
        axes = tuple(draw(st.sets(st.integers(0, rank - 1), min_size=1)))
        out = b.op(kind, x, axes=axes, keepdims=draw(st.booleans()))
    b.output(out)
    return b.finish(), rank == 3


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_odd_rank_ops(), st.sampled_from(["greedy", "optimal"]))
def test_views_keep_every_value_and_leave_no_odd_rank_cx(
    case: tuple[Module, bool], strategy: str
) -> None:
    module, must_view = case
    result = _run(module, strategy=strategy)  # verify, no conflicts, same outputs
    assert _odd_cx(result.module) == []
    if must_view:
        assert result.stats["viewed"] == 1


# ------------------------------------------------------------------ the zoo


#: The default pipeline up to the last pass that sets layouts.
LAYOUT_PASSES = DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index("const-norm") + 1]
CONSTANTS = ("tx8be.Constant", "tx8be.LoadConst")


def _odd_cx_beyond_constants(module: Module) -> list[str]:
    """Cx/NCx values of rank other than 2 and 4 that are not rank-0/1 constants.

    Seed 001's ConstChannelNormErase stores ``dim < 2`` constants Cx (their one-pixel Cx
    is the compact image); nothing else of such a rank may be Cx.
    """
    producers = {v.key: op for op in module.walk() for v in op.results}

    def constant(value: Value) -> bool:
        op = producers.get(value.key)
        return op is not None and op.kind in CONSTANTS

    bad = []
    for op in module.walk():
        if not (op.results and isinstance(op.attrs.get("dev_info"), DevInfo)):
            continue
        rank = op.results[0].type.rank
        if _layout(op) not in CX or rank in (2, 4):
            continue
        small_constant = rank <= 1 and (
            op.kind in CONSTANTS or (op.kind == "tx8be.ChannelNorm" and constant(op.operands[0]))
        )
        if not small_constant:
            bad.append(f"{op.label} {op.results[0].type}")
    return bad


@pytest.mark.parametrize(
    ("name", "views"),
    [("bert_base", True), ("llama_decoder", True), ("vit_tiny", True), ("resnet50", False)],
)
def test_zoo_stores_no_odd_rank_value_cx(name: str, views: bool) -> None:
    steps = list(run_pipeline(zoo.build(name), LAYOUT_PASSES, TX81))
    by_name = {s.name: s for s in steps}
    for step in ("layout-align-npu", "layout-align-opt", "const-norm"):
        assert _odd_cx_beyond_constants(by_name[step].after) == [], step
    for op in by_name["layout-align-npu"].after.walk():
        if op.kind == "tx8be.ChannelNorm":
            assert op.results[0].type.rank in (0, 1, 2, 4)
    # the transformers' rank-3 MatMuls run on views; ResNet-50 has no odd-rank ALIGN op
    assert (by_name["layout-align-npu"].stats["viewed"] > 0) == views


def _ranks(values: Sequence[Value]) -> list[int]:
    return [v.type.rank for v in values]


def test_views_reshape_compact_data_only() -> None:
    # Every Reshape the view step makes reads and writes compact data: the bytes of a
    # row-major tensor do not move when its shape changes.
    result = LayoutAlignNPU().run(zoo.build("tiny_transformer_block"), TX81)
    made = [
        op
        for op in result.module.main.ops
        if op.kind == "tx8be.Reshape" and op.created_by == "layout-align-npu"
    ]
    assert made
    producers = {v.key: op for op in result.module.main.ops for v in op.results}
    for op in made:
        assert _layout(op) in (T, NT)
        source = producers.get(op.operands[0].key)
        assert source is None or _layout(source) in (T, NT), _ranks(op.operands)
