"""BatchNorm_Inference in the op library: the seed 001 interfaces one by one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.ops.ophelpers import build, infer
from tx8lab.core.attrs import AlignMode
from tx8lab.core.dtypes import round_to
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.ops import OPS
from tx8lab.core.ops.registry import ALL_BITS, ShardingSplitParam
from tx8lab.core.schedule.tasks import OpStrategy
from tx8lab.errors import Tx8labError

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
