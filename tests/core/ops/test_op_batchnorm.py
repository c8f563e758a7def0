"""BatchNorm_Inference in the op library: the seed 001 interfaces one by one."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.ops.ophelpers import build, infer
from tx8lab.core.attrs import AlignMode
from tx8lab.core.dtypes import round_to
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.ops import OPS
from tx8lab.core.ops.norm import batchnorm_steps
from tx8lab.core.ops.registry import ALL_BITS, ShardingSplitParam, SliceShape
from tx8lab.core.schedule.tasks import OpStrategy
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81, laws

BN = OPS["tx8be.BatchNorm_Inference"]


def _op(shape: tuple[int, ...], dtype: str = "f16", param_rank: int | None = None) -> Op:
    c = shape[-1]
    rank = len(shape) if param_rank is None else param_rank
    p = TensorType((1,) * (rank - 1) + (c,), "f32")
    return build("BatchNorm_Inference", TensorType(shape, dtype), p, p, p, p)


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32", "tf32"])
@pytest.mark.parametrize("shape", [(8, 33), (2, 7, 129), (4, 112, 2, 30)])
def test_infer_shapes_is_the_input_type(shape: tuple[int, ...], dtype: str) -> None:
    # seed inferShapes: getOutput().setType(getInput().getType())
    p = TensorType((shape[-1],), "f32")
    assert infer("BatchNorm_Inference", TensorType(shape, dtype), p, p, p, p) == (
        TensorType(shape, dtype),
    )


def test_infer_rejects_what_the_seed_does_not_support() -> None:
    p = TensorType((4,), "f32")
    with pytest.raises(Tx8labError, match=r"BatchNorm_Inference: input must have rank 2, 3 or 4"):
        infer("BatchNorm_Inference", TensorType((1, 1, 2, 2, 4), "f16"), p, p, p, p)
    with pytest.raises(Tx8labError, match=r"BatchNorm_Inference: variance must be f32"):
        infer("BatchNorm_Inference", TensorType((2, 4), "f16"), p, p, p, TensorType((4,), "f16"))
    with pytest.raises(
        Tx8labError, match=r"BatchNorm_Inference: input must have a float element type"
    ):
        infer("BatchNorm_Inference", TensorType((2, 4), "i8"), p, p, p, p)


def test_infer_layout_copies_the_input_layout() -> None:
    # seed inferLayout: the output's layout_str is the input's
    op = _op((4, 8, 8, 16))
    assert BN.infer_layout(op, ["NHWC", None, None, None, None]) == "NHWC"
    assert BN.infer_operand_layouts(op, ["NHWC"])[0] == "NHWC"


@pytest.mark.parametrize(("batch", "layout"), [(1, "Tensor"), (4, "NTensor")])
def test_query_op_attr_as_the_seed_sets_it(batch: int, layout: str) -> None:
    attr = BN.op_attr(_op((batch, 112, 2, 129)))
    assert attr.align_mode is AlignMode.ALIGN  # NPU_ALIGN: Cx/NCx input
    assert attr.need_preset_to_npu is True
    assert attr.default_layout == layout  # batch == 1 ? "Tensor" : "NTensor"
    # everything else keeps the seed's OpAttr defaults
    assert attr.need_load == ALL_BITS
    assert attr.need_store == ALL_BITS
    assert attr.mem_inplace is False
    assert attr.parallel
    assert attr.align_cx


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_imm_is_twice_the_input_slice(dtype: str) -> None:
    op = _op((4, 112, 2, 129), dtype)
    got = BN.temporal_slice_shape(op, OpStrategy((1, 1, 1, 1), (4, 2, 1, 1)))
    assert got.operands[0] == (1, 56, 2, 129)
    elem = 2 if dtype == "f16" else 4
    # sizeof(input) is the slice's Cx image: Cx = 2 blocks of HW x 64, C0 = 1 padded to 4
    hw = 56 * 2
    assert BN.imm_bytes(op, got) == 2 * (2 * hw * 64 + hw * 4) * elem


def test_tile_sharding_split_the_seed_example() -> None:
    op = _op((4, 112, 2, 129))
    got = BN.tile_sharding_split(op, ShardingSplitParam((1, 1, 1, 4), (4, 2, 1, 1)))
    assert got[0] == ShardingSplitParam((1, 1, 1, 4), (4, 2, 1, 1))
    # scale, offset, mean, variance: the input's sharding, never split
    assert got[1:] == [ShardingSplitParam((1, 1, 1, 4), (1, 1, 1, 1))] * 4
    assert all(p.is_valid for p in got)


def test_tile_sharding_split_clears_what_the_seed_clears() -> None:
    op = _op((4, 112, 2, 129))
    sharded_h = BN.tile_sharding_split(op, ShardingSplitParam((1, 2, 1, 1), (1, 1, 1, 1)))
    assert sharded_h[0] == ShardingSplitParam((), (1, 1, 1, 1))
    assert not sharded_h[0].is_valid
    assert sharded_h[1] == ShardingSplitParam((), (1, 1, 1, 1))  # seed: paramMean left empty
    split_c = BN.tile_sharding_split(op, ShardingSplitParam((1, 1, 1, 2), (1, 1, 1, 2)))
    assert split_c[0] == ShardingSplitParam((1, 1, 1, 2), ())
    assert split_c[4] == ShardingSplitParam((1, 1, 1, 2), (1, 1, 1, 1))


def test_tile_sharding_split_for_rank_one_parameters() -> None:
    op = _op((8, 64), param_rank=1)
    got = BN.tile_sharding_split(op, ShardingSplitParam((1, 4), (2, 1)))
    assert got[1:] == [ShardingSplitParam((4,), (1,))] * 4


def test_tile_sharding_split_checks_the_vector_lengths() -> None:
    op = _op((4, 8, 8, 16))
    with pytest.raises(Tx8labError, match=r"BatchNorm_Inference: .*outSharding and outSplit"):
        BN.tile_sharding_split(op, ShardingSplitParam((1, 1, 16), (1, 1, 1, 1)))


def test_elementwise_ops_pass_their_sharding_through() -> None:
    # not BatchNorm's C-only rule: a Relu's input takes the requested factors as they are
    op = build("Relu", TensorType((2, 4), "f32"))
    (param,) = OPS["tx8be.Relu"].tile_sharding_split(op, ShardingSplitParam((2, 1), (1, 2)))
    assert (param.out_sharding, param.out_split) == ((2, 1), (1, 2))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 3), min_size=4, max_size=4),
    st.lists(st.integers(1, 3), min_size=4, max_size=4),
)
def test_tile_sharding_split_agrees_with_the_slicing_rule(
    shard: list[int], split: list[int]
) -> None:
    """A candidate the seed keeps valid is exactly one temporal_slice_shape accepts."""
    op = _op((6, 6, 6, 6))
    got = BN.tile_sharding_split(op, ShardingSplitParam(tuple(shard), tuple(split)))
    try:
        BN.temporal_slice_shape(op, OpStrategy(tuple(shard), tuple(split)))
        accepted = True
    except Tx8labError:
        accepted = False
    assert got[0].is_valid == accepted
    assert all(p.out_split == (1, 1, 1, 1) for p in got[1:])


def test_compute_matches_the_formula_in_each_dtype() -> None:
    rng = np.random.default_rng(5)
    x = rng.uniform(-3, 3, (2, 3, 4, 40)).astype(np.float32)
    scale, offset, mean = (rng.uniform(-1, 1, 40).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.2, 2, 40).astype(np.float32)
    for dtype in ("bf16", "f16", "f32", "tf32"):
        xr = round_to(x, dtype)
        op = _op(xr.shape, dtype, param_rank=1)
        (got,) = BN.compute(op, xr, scale, offset, mean, var)
        x64 = xr.astype(np.float64)
        want = scale * (x64 - mean) / np.sqrt(var.astype(np.float64) + 1e-6) + offset
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- the operand it overwrites


def _vector_op(c: int, epsilon: float) -> Op:
    return build(
        "BatchNorm_Inference",
        TensorType((2, c), "f16"),
        *[TensorType((c,), "f32")] * 4,
        epsilon=epsilon,
    )


def _clobbered(op: Op, var: np.ndarray) -> np.ndarray:
    c = var.shape[-1]
    return BN.clobbered_value(
        op, 4, [np.zeros((2, c), np.float16), *[np.ones(c, np.float32)] * 3, var]
    )


def test_the_kernel_overwrites_only_the_variance() -> None:
    # seed 001 "BatchNorm Design" step 4 (addVS with varAddr as source and result) and
    # step 5 (rsqrt in place); operands: input, scale, offset, mean, variance
    op = _op((4, 112, 2, 30))
    assert BN.clobbered_operands(op) == (4,)
    assert op.operands[4].type == TensorType((1, 1, 1, 30), "f32")


def test_clobbered_value_exact_cases() -> None:
    # var + 0.5 = 4, 1, 16, 0.5625: 1/sqrt gives 0.5, 1, 0.25 and 4/3 (rounded once)
    got = _clobbered(_vector_op(4, 0.5), np.array([3.5, 0.5, 15.5, 0.0625], np.float32))
    assert got.dtype == np.float32
    assert got.shape == (4,)
    assert got.tolist() == [0.5, 1.0, 0.25, float(np.float32(4.0 / 3.0))]
    # the parameters' shape is kept (1x..x1xC here), and only the variance is used
    op = _op((1, 1, 1, 2), "f32")
    var = np.array([[[[0.25, 4.0]]]], np.float32)
    got = BN.clobbered_value(op, 4, [np.full((1, 1, 1, 2), np.nan, np.float32)] * 4 + [var])
    assert got.shape == (1, 1, 1, 2)
    assert np.allclose(got, [[[[2.0, 0.5]]]], rtol=1e-5)  # epsilon 1e-6 shifts them


def test_clobbered_value_adds_eps_in_fp32_then_rounds_the_rsqrt_once() -> None:
    """Hand derivation at 64-bit mantissa precision: step 4 in fp32, step 5 correctly rounded."""
    var = np.array([float.fromhex("0x1.128cd0p+0"), 410.69427490234375, 1e8], np.float32)
    eps = 1e-6  # the seed's epsilon
    step4 = var + np.float32(eps)  # addVS: fp32 + fp32, round to nearest even
    assert step4.dtype == np.float32
    want = (1 / np.sqrt(step4.astype(np.longdouble))).astype(np.float32)
    got = _clobbered(_vector_op(3, eps), var)
    np.testing.assert_array_equal(got, want)
    # the first case needs the fp32 addition: exact arithmetic would give another value
    exact = (1 / np.sqrt(var.astype(np.longdouble) + np.longdouble(eps))).astype(np.float32)
    assert got[0] != exact[0]
    # the second needs one rounding: fp32 sqrt, then fp32 divide is one ulp off
    assert got[1] != (np.float32(1) / np.sqrt(step4))[1]
    # 1e8 + 1e-6 is 1e8 in fp32, and 1/sqrt(1e8) = 1e-4
    assert got[2] == np.float32(1e-4)


def test_clobbered_value_of_another_operand_is_an_error_naming_the_op() -> None:
    op = _op((2, 4))
    with pytest.raises(
        Tx8labError, match=r"BatchNorm_Inference: %0 .* does not overwrite operand 3"
    ):
        BN.clobbered_value(op, 3, [np.zeros(4, np.float32)] * 5)
    relu = build("Relu", TensorType((2, 4), "f32"))
    assert OPS["tx8be.Relu"].clobbered_operands(relu) == ()
    with pytest.raises(
        Tx8labError, match=r"tx8be\.Relu: .*does not overwrite operand 0.*no operand"
    ):
        OPS["tx8be.Relu"].clobbered_value(relu, 0, [np.zeros((2, 4), np.float32)])


def test_only_batchnorm_declares_an_overwritten_operand() -> None:
    """The audit of the module doc: no other kind's kernel is shown overwriting an input."""
    from tests.core.ops.test_op_registry import SAMPLES

    declared = {}
    for kind, (types, attrs) in SAMPLES.items():
        op = build(kind, *types, **attrs)
        got = OPS[op.kind].clobbered_operands(op)
        if got:
            declared[kind] = got
    assert declared == {"BatchNorm_Inference": (4,)}


# ------------------------------------------------------------------ cost (seed getOpClockCycle)
# Oracle: seed 001 "BatchNorm Design" (the ten steps of the fp16 flow, written out by hand
# below) timed with the engine-law formulas and the constants of tx8lab/hw/calibration.json
# (fitted on the board rows), the vendor's CT rates (micro.csv "vector (CT) peak per tile":
# 64 GOPS for FP16/BF16, 32 for FP32) and the 1024-bit vector datapath (32 fp32 lanes).

CALIBRATION = Path(__file__).resolve().parents[3] / "tx8lab" / "hw" / "calibration.json"


def _fitted(name: str) -> float:
    return float(json.loads(CALIBRATION.read_text())["constants"][f"tile.{name}"]["value"])


def _ns(seconds: float) -> int:
    return math.ceil(seconds * 1e9 - 1e-9)  # cycles at the preset's 1 GHz, rounded up


def _ct_fp32(elements: int, ops: float) -> int:
    padded = -(-elements // 32) * 32
    return _ns(_fitted("ct_command_s") + padded * ops / 32e9)


def _gather_scatter(elements: int) -> int:
    # one 2-byte inner transfer per 16-bit element
    return _ns(
        _fitted("tdma_command_s")
        + elements * _fitted("tdma_iteration_s")
        + elements * 2 / _fitted("tdma_stream_bytes_per_s")
    )


def _whole(op: Op) -> SliceShape:
    rank = op.operands[0].type.rank
    return BN.temporal_slice_shape(op, OpStrategy((1,) * rank, (1,) * rank))


def test_cost_of_a_small_fp16_batchnorm_by_hand() -> None:
    # 2x1x2x70 f16: C = 70 is one 64-channel block and a tail of 6 padded to 8. The fp32
    # image of a batch: 2 pixels x 64 + 2 x 8 = 144 slots (4608 bits), the next batch on
    # a 2048-bit boundary (6144 bits = 192 slots), so the image is 192 + 144 = 336 slots.
    # A VuV step per batch: one VuV_*_loop over 2 x 64 = 128, one VuV_* over 2 x 8 = 16.
    vuv = [128, 16, 128, 16]
    flow = [  # (step, instruction, engine, dtype, elements of each command, cycles)
        (1, "op_gatherScatter", "tdma", "f16", [280], _gather_scatter(280)),
        (2, "convert_fp16_fp32", "ct", "f32", [336], _ct_fp32(336, 1)),
        (3, "VuV_sub", "ct", "f32", vuv, sum(_ct_fp32(n, 1) for n in vuv)),
        (4, "addVS", "ct", "f32", [70], _ct_fp32(70, 1)),
        (5, "rsqrt", "ct", "f32", [70], _ct_fp32(70, 3)),
        (6, "VuV_mul", "ct", "f32", vuv, sum(_ct_fp32(n, 1) for n in vuv)),
        (7, "VuV_mul", "ct", "f32", vuv, sum(_ct_fp32(n, 1) for n in vuv)),
        (8, "VuV_add", "ct", "f32", vuv, sum(_ct_fp32(n, 1) for n in vuv)),
        (9, "convert_fp32_fp16", "ct", "f32", [336], _ct_fp32(336, 1)),
        (10, "op_gatherScatter", "tdma", "f16", [280], _gather_scatter(280)),
    ]
    op = _op((2, 1, 2, 70))
    sl = _whole(op)
    got = BN.steps(op, sl, TX81)
    assert [
        (s.index, s.instruction, s.engine, s.dtype, list(s.commands), s.cycles) for s in got
    ] == [tuple(row) for row in flow]
    total = sum(row[-1] for row in flow)
    assert BN.law(op, sl, TX81).cycles(TX81) == total
    cost = BN.cost(op, sl, TX81)
    assert (cost.engine, cost.work_cycles) == ("ct", total)
    assert cost.issue_cycles == _ns(TX81.tile.command_issue_s)  # the op is issued once


def test_the_cgra_steps_run_at_the_fp32_rate_not_the_inputs() -> None:
    # 1x1x64x64 bf16: C = 64 is one block, no tail; each VuV step is one 4096-element loop
    op = _op((1, 1, 64, 64), "bf16")
    sl = _whole(op)
    ct_steps = [s for s in BN.steps(op, sl, TX81) if s.engine == "ct"]
    assert [s.index for s in ct_steps] == [2, 3, 4, 5, 6, 7, 8, 9]
    for s in ct_steps:
        ops = 3.0 if s.instruction == "rsqrt" else 1.0
        at_fp32 = sum(laws.ct(n, ops, "f32", TX81).cycles(TX81) for n in s.commands)
        at_bf16 = sum(laws.ct(n, ops, "bf16", TX81).cycles(TX81) for n in s.commands)
        assert s.dtype == "f32"
        assert s.cycles == at_fp32
        if s.elements >= 4096:  # the big steps: twice the work per element at half the rate
            assert at_fp32 > at_bf16
    # so the CGRA part of a bf16 op is the CGRA part of the same op in f32: the two
    # costs differ by exactly the 16-bit flow's extra steps 1, 2, 9 and 10
    f32 = _op((1, 1, 64, 64), "f32")
    extra = [s for s in BN.steps(op, sl, TX81) if s.index in (1, 2, 9, 10)]
    assert len(extra) == 4
    assert BN.cost(op, sl, TX81).work_cycles - BN.cost(f32, _whole(f32), TX81).work_cycles == sum(
        s.cycles for s in extra
    )


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_the_two_gather_scatters_are_charged_on_the_tdma(dtype: str) -> None:
    op = _op((4, 112, 2, 129), dtype)  # seed 001's example
    sl = _whole(op)
    steps = {s.index: s for s in BN.steps(op, sl, TX81)}
    points = 4 * 112 * 2 * 129
    for index in (1, 10):
        s = steps[index]
        assert (s.instruction, s.engine, s.dtype, s.commands) == (
            "op_gatherScatter",
            "tdma",
            dtype,
            (points,),
        )
        assert s.cycles == _gather_scatter(points)
    assert BN.cost(op, sl, TX81).work_cycles == sum(s.cycles for s in steps.values())
    # a 32-bit input has nothing to widen: no GatherScatter
    f32 = _op((4, 112, 2, 129), "f32")
    assert [s.index for s in BN.steps(f32, _whole(f32), TX81)] == [3, 4, 5, 6, 7, 8]


def test_batchnorm_steps_reject_a_type_the_op_does_not_take() -> None:
    with pytest.raises(Tx8labError, match=r"BatchNorm_Inference cost: input type 'i8'"):
        batchnorm_steps((2, 8), "i8", TX81)
