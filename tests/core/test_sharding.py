"""DataSplitNew stages: factor spaces, split tries, slice propagation (seed 001)."""

from __future__ import annotations

import math
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.ops.ophelpers import build
from tests.core.ops.test_op_registry import SAMPLES
from tx8lab.core import Builder
from tx8lab.core.attrs import ParallelAttr
from tx8lab.core.grouping import is_compute, outline
from tx8lab.core.ir import IdCounter, Module, Op, TensorType
from tx8lab.core.ops import OPS
from tx8lab.core.ops.registry import OpDef, slice_extent
from tx8lab.core.ops.registry import ShardingSplitParam as P
from tx8lab.core.passes import build_pipeline
from tx8lab.core.runner import run_pipeline
from tx8lab.core.schedule.search import halo_dims
from tx8lab.core.schedule.sharding import (
    PropagateCache,
    Propagation,
    align_base,
    effective_tiles,
    get_shardings,
    level_rows,
    next_split,
    op_sharding_levels,
    output_ops,
    param_for,
    propagate,
    propagation_rows,
    sharding_levels,
    split_tries,
    split_try_rows,
)
from tx8lab.core.schedule.slicing import groups_of, schedule_input
from tx8lab.core.schedule.tasks import OpStrategy
from tx8lab.core.zoo import build as zoo_build
from tx8lab.errors import Tx8labError
from tx8lab.hw.presets import TX81

F16 = "f16"


# ---------------------------------------------------------------- 1. factor spaces


def test_the_seed_example_level_by_level() -> None:
    """The store op of outShape [3, 4, 128, 4096] over 16 tiles (seed 001, DS_SpaceInitPass)."""
    levels = sharding_levels((3, 4, 128, 4096), F16, 16)
    assert [lv.tiles for lv in levels] == [16, 8, 4, 2, 1]
    # level0: [1, 1, 1, 16], [1, 1, 2, 8], [1, 1, 4, 4]...   factor=16
    assert levels[0].shardings[:3] == ((1, 1, 1, 16), (1, 1, 2, 8), (1, 1, 4, 4))
    assert set(levels[0].effective) == {16}
    assert len(levels[0].shardings) == 21
    # level1: [1, 8, 1, 2], [1, 8, 2, 1]....                  factor=8
    assert levels[1].shardings[:2] == ((1, 8, 1, 2), (1, 8, 2, 1))
    assert levels[1].shardings == (
        (1, 8, 1, 2),
        (1, 8, 2, 1),
        (2, 8, 1, 1),
        (4, 1, 1, 4),
        (4, 1, 2, 2),
        (4, 1, 4, 1),
        (4, 2, 1, 2),
        (4, 2, 2, 1),
        (4, 4, 1, 1),
    )
    assert levels[1].effective == (8, 8, 8, 12, 12, 12, 12, 12, 12)
    # level2: [1, 16, 1, 1]                                   factor=4
    assert levels[2].shardings == ((1, 16, 1, 1), (8, 1, 1, 2), (8, 1, 2, 1), (8, 2, 1, 1))
    assert levels[2].effective == (4, 6, 6, 6)
    # level3: [16, 1, 1, 1]                                   factor=2
    assert levels[3].shardings == ((16, 1, 1, 1),)
    assert levels[3].effective == (3,)
    # the no-shard vector the seed adds by hand
    assert levels[4].shardings == ((1, 1, 1, 1),)
    # every vector of product 16 appears exactly once
    every = [v for lv in levels for v in lv.shardings]
    assert len(every) == len(set(every)) == len(get_shardings(4, 16)) + 1


def test_get_factor_counts_every_dim_not_only_the_first() -> None:
    """The seed returns inside its loop (dim 0 only): [1, 1, 1, 16] would score 1 tile."""
    assert effective_tiles((3, 4, 128, 4096), F16, (1, 1, 1, 16)) == 16
    assert effective_tiles((3, 4, 128, 4096), F16, (16, 1, 1, 1)) == 3
    # the last dim counts Cx blocks: 200 f16 channels are 4 blocks of 64
    assert effective_tiles((1, 200), F16, (1, 16)) == 4
    assert effective_tiles((1, 200), "i8", (1, 16)) == 2


def test_levels_use_floor_log2_as_the_example_needs() -> None:
    """Ceil would put 3 useful tiles ([16,1,1,1]) in the level of 4 ([1,16,1,1])."""
    levels = sharding_levels((3, 4, 128, 4096), F16, 16)
    level_of = {v: lv.factor for lv in levels for v in lv.shardings}
    assert level_of[(1, 16, 1, 1)] == 2
    assert level_of[(16, 1, 1, 1)] == 1
    for lv in levels:
        assert all(lv.tiles <= e < 2 * lv.tiles for e in lv.effective)


def test_align_base_is_the_cx_channel_block() -> None:
    assert align_base(4096, F16) == 64
    assert align_base(4096, "f32") == 64
    assert align_base(4096, "i8") == 128
    assert align_base(20, F16) == 20  # padded as one group: one useful piece
    assert align_base(64, "i8") == 64
    assert align_base(4096, "i64") == 1  # no Cx layout


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.sampled_from([1, 2, 4, 6, 8, 12, 16]))
def test_get_shardings_are_exactly_the_factorisations(rank: int, tiles: int) -> None:
    got = get_shardings(rank, tiles)
    assert all(math.prod(v) == tiles for v in got)
    assert len(got) == len(set(got))
    brute = [
        v
        for v in _product(range(1, tiles + 1), rank)
        if math.prod(v) == tiles  # every vector of positive ints
    ]
    assert sorted(got) == sorted(brute)
    assert got == sorted(got)  # the seed's order: dim 0 the outer loop


def _product(values: range, rank: int) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for _ in range(rank):
        out = [(*v, x) for v in out for x in values]
    return out


def test_op_levels_leave_out_what_the_op_forbids() -> None:
    op = build("Softmax", TensorType((4, 8, 256), F16), axis=-1)
    levels = op_sharding_levels(op, 16)
    assert all(v[-1] == 1 for lv in levels for v in lv.shardings)
    assert levels[0].shardings[0] == (2, 8, 1)


def test_bad_factor_space_inputs() -> None:
    with pytest.raises(Tx8labError, match="tile count must be >= 1"):
        get_shardings(2, 0)
    with pytest.raises(Tx8labError, match="rank 2"):
        effective_tiles((4, 4), F16, (1, 2, 2))
    with pytest.raises(Tx8labError, match="shardable has 1 flags"):
        sharding_levels((4, 4), F16, 4, shardable=[True])


# ---------------------------------------------------------------- 2. split tries


def test_gemm_split_tries_reduce_k_first_then_m() -> None:
    op = build("Gemm", TensorType((256, 512), F16), TensorType((512, 1024), F16))
    tries = split_tries(op, (1, 16, 1))
    assert [(t.dim, t.split) for t in tries[:4]] == [
        ("K", (1, 1, 2)),
        ("K", (1, 1, 4)),
        ("K", (1, 1, 8)),
        ("M", (2, 1, 8)),
    ]
    assert all(t.reduce for t in tries[:3])
    assert not any(t.reduce for t in tries[3:])
    # K stops at one Cx block (64), N is already one block per tile, M goes down to 1
    assert tries[2].slice == (256, 64, 64)
    assert tries[-1].split == (256, 1, 8)
    assert tries[-1].slice == (1, 64, 64)
    assert [t.step for t in tries] == list(range(1, 12))


def test_conv_split_tries_from_the_back_and_with_n_first() -> None:
    x, w = TensorType((2, 56, 56, 256), F16), TensorType((64, 3, 3, 256), F16)
    op = build("Conv2d", x, w, pads=(1, 1, 1, 1))
    back = split_tries(op, (1, 1, 1, 4, 1))
    assert [t.dim for t in back[:3]] == ["IC", "IC", "OW"]
    assert back[1].slice[4] == 64  # IC 256 -> 64, one Cx block
    dims_back = [t.dim for t in back]
    assert dims_back.index("OH") > max(i for i, d in enumerate(dims_back) if d == "OW")
    assert "OC" not in dims_back  # 16 channels per tile: below one block already
    front = split_tries(op, (1, 1, 1, 4, 1), n_first=True)
    assert [t.dim for t in front[:4]] == ["IC", "IC", "N", "OH"]
    for t in (*back, *front):
        dims = OPS[op.kind].iter_dims(op)
        assert t.slice == tuple(
            slice_extent(d.size, s, p)
            for d, s, p in zip(dims, (1, 1, 1, 4, 1), t.split, strict=True)
        )


def test_split_tries_limit_and_checks() -> None:
    op = build("Relu", TensorType((64, 64), F16))
    assert len(split_tries(op, (1, 1), limit=3)) == 3
    with pytest.raises(Tx8labError, match=r"shard \(1,\) has 1 entries"):
        split_tries(op, (1,))
    soft = build("Softmax", TensorType((8, 256), F16), axis=-1)
    assert all(t.dim == "d0" for t in split_tries(soft, (1, 1)))


def test_next_split_doubles_until_the_minimum() -> None:
    assert next_split(512, 1, 1, 64) == 2
    assert next_split(512, 1, 8, 64) is None
    assert next_split(100, 1, 1, 64) is None  # 50 < one block
    assert next_split(5, 1, 4, 1) == 5  # capped at the per-tile size: slice 1
    assert next_split(5, 1, 5, 1) is None  # slice already 1
    assert next_split(64, 16, 2, 1) == 4  # 4 per tile


# ---------------------------------------------------------------- 3. op rules per family


def _tss(op: Op, sharding: tuple[int, ...], split: tuple[int, ...]) -> list[P]:
    return OPS[op.kind].tile_sharding_split(op, P(sharding, split))


def test_rule_elementwise_broadcast() -> None:
    op = build("Add", TensorType((2, 8, 8, 64), F16), TensorType((64,), F16))
    assert _tss(op, (1, 2, 1, 8), (2, 1, 2, 1)) == [P((1, 2, 1, 8), (2, 1, 2, 1)), P((8,), (1,))]
    op = build("Mul", TensorType((2, 8, 1, 64), F16), TensorType((2, 8, 8, 64), F16))
    assert _tss(op, (1, 2, 4, 2), (1, 1, 2, 1))[0] == P((1, 2, 1, 2), (1, 1, 1, 1))


def test_rule_activation_is_dim_for_dim() -> None:
    op = build("Relu", TensorType((4, 128), F16))
    assert _tss(op, (4, 4), (1, 2)) == [P((4, 4), (1, 2))]


def test_rule_row_norm_keeps_the_row_whole() -> None:
    op = build("Softmax", TensorType((8, 256), F16), axis=-1)
    assert _tss(op, (8, 1), (2, 1)) == [P((8, 1), (2, 1))]
    assert _tss(op, (1, 8), (1, 1)) == [P((), (1, 1))]
    assert _tss(op, (1, 1), (1, 2)) == [P((1, 1), ())]


def test_rule_batchnorm_is_the_seeds_own() -> None:
    x, p = TensorType((2, 8, 8, 64), F16), TensorType((1, 1, 1, 64), "f32")
    op = build("BatchNorm_Inference", x, p, p, p, p)
    got = _tss(op, (1, 1, 1, 4), (2, 2, 1, 1))
    assert got[0] == P((1, 1, 1, 4), (2, 2, 1, 1))
    assert got[1:] == [P((1, 1, 1, 4), (1, 1, 1, 1))] * 4


def test_rule_reduce_takes_extra_factors_for_reduced_axes() -> None:
    op = build("ReduceSum", TensorType((4, 8, 256), F16), axes=(2,), keepdims=False)
    assert _tss(op, (2, 2), (1, 2)) == [P((2, 2, 1), (1, 2, 1))]
    assert _tss(op, (2, 2, 1), (1, 2, 4)) == [P((2, 2, 1), (1, 2, 4))]
    assert _tss(op, (2, 2, 2), (1, 1, 1)) == [P((), (1, 1, 1))]  # no cross-tile reduction


def test_rule_matmul_k_split_reaches_both_operands() -> None:
    op = build("Gemm", TensorType((256, 512), F16), TensorType((512, 1024), F16))
    assert _tss(op, (2, 8), (1, 2)) == [P((2, 1), (1, 1)), P((1, 8), (1, 2))]
    assert _tss(op, (2, 8, 1), (1, 2, 4)) == [P((2, 1), (1, 4)), P((1, 8), (4, 2))]
    # K across 2 tiles (a NoC reduction): A [M, K] and B [K, N] are both cut on K
    assert _tss(op, (2, 4, 2), (1, 1, 1)) == [P((2, 2), (1, 1)), P((2, 4), (1, 1))]
    bmm = build("BatchMatMul", TensorType((4, 64, 32), F16), TensorType((4, 32, 128), F16))
    assert _tss(bmm, (4, 2, 2), (1, 1, 1))[1] == P((4, 1, 2), (1, 1, 1))


def test_rule_conv_input_weight_bias() -> None:
    x, w = TensorType((2, 56, 56, 256), F16), TensorType((64, 3, 3, 256), F16)
    op = build("Conv2d", x, w, TensorType((64,), F16), pads=(1, 1, 1, 1))
    got = _tss(op, (1, 2, 1, 4), (1, 2, 2, 1, 4))
    assert got == [
        P((1, 2, 1, 1), (1, 2, 2, 4)),
        P((4, 1, 1, 1), (1, 1, 1, 4)),
        P((4,), (1,)),
    ]


def test_rule_pools() -> None:
    op = build("MaxPool2d", TensorType((1, 56, 56, 64), F16), kernel=(3, 3), strides=(2, 2))
    assert _tss(op, (1, 4, 2, 2), (1, 2, 1, 1)) == [P((1, 4, 2, 2), (1, 2, 1, 1))]
    gap = build("GlobalAvgPool", TensorType((2, 7, 7, 512), F16))
    rank = gap.results[0].type.rank
    got = _tss(gap, (2,) + (1,) * (rank - 2) + (8,), (1,) * rank)
    assert got[0].out_sharding[0] == 2
    assert got[0].out_sharding[-1] == 8
    assert got[0].out_sharding[1:3] == (1, 1)  # H, W taken whole


def test_rule_data_ops_follow_their_maps() -> None:
    op = build("Transpose", TensorType((2, 8, 16, 64), F16), perm=(0, 3, 1, 2))
    # output dims (N, C, H, W): the input (N, H, W, C) takes them back
    assert _tss(op, (2, 4, 2, 1), (1, 1, 2, 1)) == [P((2, 2, 1, 4), (1, 2, 1, 1))]
    cat = build("Concatenate", TensorType((4, 8), F16), TensorType((4, 8), F16), axis=1)
    got = _tss(cat, (4, 1), (2, 1))
    assert got == [P((4, 1), (2, 1))] * 2


def test_rule_memory_and_layout_ops() -> None:
    t = TensorType((4, 128), F16)
    for kind in ("StoreVar", "LoadVar", "ChannelNorm"):
        op = build(kind, t) if kind != "ChannelNorm" else build(kind, t, direction=True)
        assert _tss(op, (2, 2), (1, 2)) == [P((2, 2), (1, 2))]


def test_rule_checks_the_vector_lengths() -> None:
    op = build("Relu", TensorType((4, 128), F16))
    with pytest.raises(Tx8labError, match=r"Relu: .*output's rank 2"):
        _tss(op, (1, 1, 1), (1, 1))
    gemm = build("Gemm", TensorType((8, 16), F16), TensorType((16, 32), F16))
    with pytest.raises(Tx8labError, match="plus one for each of K"):
        _tss(gemm, (1,), (1, 1))


# ---------------------------------------------------------------- 3. propagation


def _group(module: Module, ids: list[int]) -> Op:
    counter = IdCounter(module.next_id)
    func, _ = outline(module.main, [ids], counter, created_by="test")
    return next(op for op in func.ops if op.kind == "tx8be.Group")


def _two_users() -> Op:
    b = Builder()
    x = b.input((1, 8, 8, 128), F16)
    a = b.op("Relu", x)  # %0: two users
    c = b.op("Neg", a)  # %1
    d = b.op("Abs", a)  # %2
    b.output(c, d)
    return _group(b.finish(), [0, 1, 2])


def test_propagation_reaches_producers_and_records_each_op() -> None:
    b = Builder()
    x = b.input((2, 16, 16, 64), F16)
    a = b.op("Relu", x)  # %0
    s = b.op("Sigmoid", a)  # %1
    b.output(s)
    group = _group(b.finish(), [0, 1])
    got = propagate(group, {1: P((2, 8, 1, 1), (1, 1, 2, 1))})
    assert [r.source for r in got.records] == ["users", "output"]
    assert got.strategy.ops[0].shard == (2, 8, 1, 1)
    assert got.strategy.ops[0].split == (1, 1, 2, 1)
    assert got.conflicts == ()


def test_conflict_takes_gcd_shard_and_drops_a_disputed_split() -> None:
    group = _two_users()
    ids = [op.id for op in group.regions[0].ops if is_compute(op)]
    relu, neg, abs_ = ids
    got = propagate(
        group,
        {neg: P((1, 4, 1, 4), (1, 2, 1, 1)), abs_: P((1, 2, 8, 1), (1, 1, 1, 1))},
    )
    (conflict,) = got.conflicts
    assert conflict.op_id == relu
    assert got.strategy.ops[relu].shard == (1, 2, 1, 1)  # gcd per dim
    assert got.strategy.ops[relu].split == (1, 1, 1, 1)  # 2 vs 1: taken whole
    assert "Neg" in conflict.detail
    assert "Abs" in conflict.detail


def test_agreeing_users_are_no_conflict() -> None:
    group = _two_users()
    relu, neg, abs_ = [op.id for op in group.regions[0].ops if is_compute(op)]
    same = P((1, 4, 1, 4), (1, 2, 1, 1))
    got = propagate(group, {neg: same, abs_: same})
    assert got.conflicts == ()
    assert got.strategy.ops[relu] == got.strategy.ops[neg]


def test_output_factors_the_op_forbids_are_an_error_and_no_output_is_no_shard() -> None:
    b = Builder()
    x = b.input((2, 8, 8, 64), F16)
    a = b.op("Relu", x)
    s = b.op("Softmax", a, axis=-1)
    b.output(s)
    group = _group(b.finish(), [0, 1])
    relu, soft = [op.id for op in group.regions[0].ops if is_compute(op)]
    with pytest.raises(Tx8labError, match="cannot take sharding"):
        propagate(group, {soft: P((1, 1, 1, 16), (1, 1, 1, 1))})
    got = propagate(group, {soft: P((2, 8, 1, 1), (1, 1, 1, 1))})
    assert got.strategy.ops[relu].shard == (2, 8, 1, 1)
    none = propagate(group, {})
    assert [r.source for r in none.records] == ["users", "no-shard"]
    assert none.strategy.ops[relu].shard == (1, 1, 1, 1)


def _softmax_then_relu(parallel: ParallelAttr | None) -> Op:
    b = Builder()
    x = b.input((2, 8, 8, 64), F16)
    attrs = {"tile_parallel": parallel} if parallel else {}
    s = b.op("Softmax", x, axis=-1, **attrs)  # %0: cannot shard its row
    r = b.op("Relu", s)  # %1
    b.output(r)
    return _group(b.finish(), [0, 1])


def test_a_producer_that_cannot_take_the_request_reads_tile_parallel() -> None:
    group = _softmax_then_relu(ParallelAttr(shape_spatial_sharding=(2, 4, 1, 1)))
    soft, relu = [op.id for op in group.regions[0].ops if is_compute(op)]
    got = propagate(group, {relu: P((1, 1, 1, 16), (1, 1, 1, 1))})
    rec = {r.op_id: r for r in got.records}
    assert rec[soft].source == "tile_parallel"
    assert "cannot take its users' (1, 1, 1, 16)" in rec[soft].detail
    assert got.strategy.ops[soft].shard == (2, 4, 1, 1)
    plain = _softmax_then_relu(None)
    soft2, relu2 = [op.id for op in plain.regions[0].ops if is_compute(op)]
    got2 = propagate(plain, {relu2: P((1, 1, 1, 16), (1, 1, 1, 1))})
    assert {r.op_id: r.source for r in got2.records}[soft2] == "no-shard"
    assert got2.strategy.ops[soft2].shard == (1, 1, 1, 1)
    # a tile_parallel of the wrong rank (or one the op forbids) is not used
    bad = _softmax_then_relu(ParallelAttr(shape_spatial_sharding=(1, 1, 1, 4)))
    soft3, relu3 = [op.id for op in bad.regions[0].ops if is_compute(op)]
    got3 = propagate(bad, {relu3: P((1, 1, 1, 16), (1, 1, 1, 1))})
    assert got3.strategy.ops[soft3].shard == (1, 1, 1, 1)


def test_propagate_errors_name_the_problem() -> None:
    group = _two_users()
    relu = next(op.id for op in group.regions[0].ops if is_compute(op))
    with pytest.raises(Tx8labError, match="not output compute ops"):
        propagate(group, {relu: P((1, 1, 1, 1), (1, 1, 1, 1))})
    with pytest.raises(Tx8labError, match=r"needs a tx8be\.Group"):
        propagate(build("Relu", TensorType((2, 2), F16)), {})


@cache
def _zoo_groups(name: str) -> tuple[Op, ...]:
    module = zoo_build(name)
    steps = list(run_pipeline(module, build_pipeline(), TX81))
    return tuple(groups_of(steps[-1].result.module))


def _outcome(group: Op, outputs: dict[int, P], cache: PropagateCache | None) -> Propagation | str:
    try:
        return propagate(group, outputs, cache=cache)
    except Tx8labError as exc:
        return str(exc)


def test_a_propagate_cache_gives_what_propagate_without_it_gives() -> None:
    for group in _zoo_groups("tiny_cnn"):
        cache = PropagateCache(group)
        first = output_ops(group)[0]
        rank = first.results[0].type.rank
        asked = [
            P(vec, split[:rank])
            for level in op_sharding_levels(first, 16)
            for vec in level.shardings
            for split in [(1,) * rank, *(t.split for t in split_tries(first, (1,) * rank))]
        ]
        for param in [*asked, *asked]:  # the second time from what the cache kept
            with_cache = _outcome(group, {first.id: param}, cache)
            assert with_cache == _outcome(group, {first.id: param}, None)
    # a factor that only equals an int is refused every time, as without the cache
    group = _two_users()
    cache = PropagateCache(group)
    _, neg, abs_ = [op.id for op in group.regions[0].ops if is_compute(op)]
    whole = {neg: P((1, 1, 1, 1), (1, 1, 1, 1)), abs_: P((1, 1, 1, 1), (1, 1, 1, 1))}
    assert propagate(group, whole, cache=cache) == propagate(group, whole)
    odd = {**whole, neg: P((1, 1, 1, 1), (1, True, 1, 1))}
    for _ in range(2):
        with pytest.raises(Tx8labError, match="cannot take sharding"):
            propagate(group, odd, cache=cache)
    with pytest.raises(Tx8labError, match=r"a cache of group %\d+ was given for %\d+"):
        propagate(_zoo_groups("tiny_cnn")[0], {}, cache=cache)


def test_output_ops_and_param_for() -> None:
    group = _two_users()
    _, neg, abs_ = [op.id for op in group.regions[0].ops if is_compute(op)]
    assert [op.id for op in output_ops(group)] == [neg, abs_]
    gemm = build("Gemm", TensorType((256, 512), F16), TensorType((512, 1024), F16))
    assert param_for(gemm, OpStrategy((2, 8, 1), (1, 2, 1))) == P((2, 8), (1, 2))
    assert param_for(gemm, OpStrategy((2, 8, 1), (1, 2, 4))) == P((2, 8, 1), (1, 2, 4))
    # K across tiles is a factor of its own after the result's
    assert param_for(gemm, OpStrategy((1, 1, 2), (1, 1, 1))) == P((1, 1, 2), (1, 1, 1))
    softmax = build("Softmax", TensorType((8, 64), F16), axis=-1)
    with pytest.raises(Tx8labError, match="cannot be sharded"):
        param_for(softmax, OpStrategy((1, 2), (1, 1)))
    with pytest.raises(Tx8labError, match=r"needs a tx8be\.Group"):
        output_ops(gemm)


@pytest.mark.parametrize(
    "name", ["tiny_cnn", "resnet50", "tiny_transformer_block", "llama_decoder"]
)
def test_strategy_is_accepted_by_schedule_input_on_zoo_groups(name: str) -> None:
    """Best sharding level of each output op, no split and a few split tries deep."""
    groups = _zoo_groups(name)
    assert groups
    sources: dict[str, int] = {}
    for group in groups:
        body = {op.id: op for op in group.regions[0].ops}
        outs = output_ops(group)
        assert outs, f"group %{group.id} has no output op"
        for depth in (0, 3):
            outputs = {}
            for op in outs:
                entry = OPS[op.kind]
                dims, rmap = entry.iter_dims(op), entry.result_dims(op)[0]
                best = op_sharding_levels(op, 16)[0].shardings[0]
                shard = [1] * len(dims)
                for e, d in enumerate(rmap):
                    if d is not None:
                        shard[d] = best[e]
                # as the search walks: a dim whose chunks would read each other's halo
                # (the stem's pool over its Relu) stays whole in time
                tries = split_tries(op, shard, whole=halo_dims(group, op))
                split = tries[min(depth, len(tries)) - 1].split if depth and tries else None
                st = OpStrategy(tuple(shard), split or (1,) * len(dims))
                outputs[op.id] = param_for(op, st)
            got = propagate(group, outputs)
            for rec in got.records:
                sources[rec.source] = sources.get(rec.source, 0) + 1
            si = schedule_input(group, got.strategy, TX81)
            assert si.group_id == group.id
            assert set(got.strategy.ops) == {op.id for op in body.values() if is_compute(op)}
            assert si.tiles == max(math.prod(s.shard) for s in got.strategy.ops.values())
    assert sources.get("users", 0) > 0


def test_rows_for_notebook_tables() -> None:
    levels = sharding_levels((3, 4, 128, 4096), F16, 16)
    rows = level_rows(levels)
    assert len(rows) == sum(len(lv.shardings) for lv in levels)
    assert rows[0] == {
        "level": 0,
        "tiles": 16,
        "factor": 4,
        "sharding": (1, 1, 1, 16),
        "effective": 16,
    }
    assert rows[-1]["sharding"] == (1, 1, 1, 1)
    gemm = build("Gemm", TensorType((256, 512), F16), TensorType((512, 1024), F16))
    tries = split_try_rows(split_tries(gemm, (1, 16, 1)))
    assert tries[0] == {
        "op": "%0",
        "step": 1,
        "dim": "K",
        "reduce": True,
        "split": (1, 1, 2),
        "slice": (256, 64, 256),
    }
    group = _two_users()
    _, neg, _ = [op.id for op in group.regions[0].ops if is_compute(op)]
    table = propagation_rows(propagate(group, {neg: P((1, 4, 1, 4), (1, 1, 1, 1))}))
    # the Abs, not given, is not sharded and asks (1, 1, 1, 1): a conflict with the Neg
    assert [r["source"] for r in table] == ["conflict", "output", "no-shard"]
    assert table[0]["shard (iter dims)"] == (1, 1, 1, 1)  # gcd with the unsharded Abs


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_every_op_kind_has_a_rule_that_agrees_with_its_slices(kind: str) -> None:
    """Each operand's factors give the slice ``temporal_slice_shape`` gives it.

    (Ops with their own ``operand_slice`` — windows, gathers — only check the ranks.)
    """
    types, attrs = SAMPLES[kind]
    op = build(kind, *types, **attrs)
    entry = OPS[op.kind]
    dims = entry.iter_dims(op)
    ones = P((1,) * op.results[0].type.rank, (1,) * op.results[0].type.rank)
    got = entry.tile_sharding_split(op, ones)
    assert [len(p.out_sharding) for p in got] == [v.type.rank for v in op.operands]
    assert all(set(p.out_sharding) <= {1} and set(p.out_split) <= {1} for p in got)
    shard = tuple(2 if d.shardable and d.size >= 2 else 1 for d in dims)
    split = tuple(2 if d.splittable and d.size >= 4 else 1 for d in dims)
    strategy = OpStrategy(shard, split)
    param = param_for(op, strategy)
    got = entry.tile_sharding_split(op, param)
    assert len(got) == len(op.operands)
    if type(entry).operand_slice is not OpDef.operand_slice:
        return
    want = entry.temporal_slice_shape(op, strategy).operands
    for value, p, slice_ in zip(op.operands, got, want, strict=True):
        assert p.is_valid or value.type.rank == 0
        assert (
            tuple(
                slice_extent(d, s, q)
                for d, s, q in zip(value.type.shape, p.out_sharding, p.out_split, strict=True)
            )
            == slice_
        ), f"{kind} operand {value.type}"


# ---------------------------------------------------------------- chips


def test_chip_cut_data_parallel_cuts_every_ops_batch() -> None:
    from tx8lab.core.schedule.chip_cuts import chip_cut

    b = Builder()
    x = b.input((8, 16, 16, 64), F16)
    a = b.op("Relu", x)  # %0
    s = b.op("Sigmoid", a)  # %1
    b.output(s)
    group = _group(b.finish(), [0, 1])
    cut = chip_cut(group, dp=4)
    assert cut.chips == {0: (4, 1, 1, 1), 1: (4, 1, 1, 1)}
    assert cut.gathered_bytes == 0
    assert cut.notes == ()
    # the slice of a tile on one chip: the batch divided by the chips, then the tiles
    st = OpStrategy((2, 1, 1, 1), (1, 1, 1, 1), cut.chips[1])
    assert OPS["tx8be.Sigmoid"].temporal_slice_shape(group.regions[0].ops[1], st).iteration == (
        1, 16, 16, 64,
    )  # fmt: skip
    with pytest.raises(Tx8labError, match="dp must be an int >= 1"):
        chip_cut(group, dp=0)


def test_chip_cut_tensor_parallel_cuts_the_last_dim_and_counts_the_gather() -> None:
    from tx8lab.core.schedule.chip_cuts import chip_cut

    b = Builder()
    x = b.input((32, 64), F16)
    w = b.weight((64, 128), F16)
    m = b.op("MatMul", x, w)
    r = b.op("Relu", m)
    b.output(r)
    module = b.finish()
    ids = [op.id for op in module.main.ops if op.kind in ("tx8be.MatMul", "tx8be.Relu")]
    group = _group(module, ids)
    matmul, relu = ids
    cut = chip_cut(group, tp=2)
    assert cut.chips[relu] == (1, 2)
    assert cut.chips[matmul][:2] == (1, 2)  # M, N; K stays whole
    assert cut.gathered_bytes == 32 * 128 * 2  # the output, f16
    # a Softmax reduces its last dim: tp cannot cut it, and says so
    b = Builder()
    x = b.input((32, 64), F16)
    sm = b.op("Softmax", x, axis=-1)
    b.output(sm)
    soft = _group(b.finish(), [0])
    got = chip_cut(soft, tp=2)
    assert got.gathered_bytes == 0
    assert any("cannot cut its last dim" in n for n in got.notes)


def test_chip_cuts_pairs_column_and_row_parallel_matmuls() -> None:
    """An FFN: the up-projection cut on N, the down-projection on K, one all-reduce."""
    from tx8lab.core.schedule.chip_cuts import chip_cuts

    b = Builder()
    x = b.input((32, 64), F16)
    up = b.op("MatMul", x, b.weight((64, 256), F16))
    act = b.op("Relu", up)
    down = b.op("MatMul", act, b.weight((256, 64), F16))
    b.output(down)
    module = b.finish()
    ids = [op.id for op in module.main.ops if op.kind in ("tx8be.MatMul", "tx8be.Relu")]
    group = _group(module, ids)
    up_id, act_id, down_id = ids
    gather, reduce = chip_cuts(group, tp=4)
    assert (gather.plan, reduce.plan) == ("gather", "reduce")
    assert gather.gathered_bytes == 32 * 64 * 2
    assert reduce.gathered_bytes == 0
    assert reduce.reduced_bytes == 32 * 64 * 2
    assert reduce.chips[down_id] == (1, 1, 4)  # M, N whole; K cut
    assert reduce.chips[act_id] == (1, 4)
    assert reduce.chips[up_id][:2] == (1, 4)  # column parallel: N cut
    # dp alone has one plan, named batch
    (batch,) = chip_cuts(group, dp=2)
    assert batch.plan == "batch"
    assert batch.chips[up_id][0] == 2
