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
