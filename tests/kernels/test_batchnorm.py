"""The BatchNorm walkthrough: the seed's ten steps on SPM byte images (seed 001)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.ops.ophelpers import build
from tx8lab.core import zoo
from tx8lab.core.dtypes import round_to, to_bits_image
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.layouts import aligned_view, element_offset_bits, layout_for, pack
from tx8lab.core.ops import OPS
from tx8lab.core.schedule.slicing import default_strategy
from tx8lab.core.schedule.tasks import OpStrategy
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81
from tx8lab.kernels.batchnorm import (
    Spm,
    batchnorm_flow,
    buffer_plan,
    main_c,
    main_c_for_group,
    main_loop,
    vuv,
    vuv_loop,
)

BN = OPS["tx8be.BatchNorm_Inference"]
#: mantissa bits of each output type: the flow (fp32) and the reference (float64) may
#: round to neighbouring values of the output type
MANTISSA = {"f16": 10, "bf16": 7, "tf32": 10, "f32": 21}


def _data(shape: tuple[int, ...], seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    c = shape[-1]
    x = rng.uniform(-4, 4, shape)
    scale, shift, mean = (rng.uniform(-2, 2, c).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.1, 2, c).astype(np.float32)
    return x, scale, shift, mean, var


def _reference(x: np.ndarray, params: tuple[np.ndarray, ...], dtype: str) -> np.ndarray:
    """The op library's compute (ComputeInterface), rounded to the result type."""
    xr = round_to(x, dtype)
    p = TensorType((xr.shape[-1],), "f32")
    op = build("BatchNorm_Inference", TensorType(xr.shape, dtype), p, p, p, p)
    (out,) = BN.compute(op, xr, *params)
    return round_to(out, dtype)


def _assert_matches(got: np.ndarray, want: np.ndarray, dtype: str) -> None:
    np.testing.assert_allclose(got, want, rtol=2.0 ** -MANTISSA[dtype], atol=1e-5)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "tf32"])
@pytest.mark.parametrize("shape", [(4, 112, 2, 129), (4, 112, 2, 30), (2, 5, 100), (3, 48)])
def test_flow_equals_the_reference_compute(shape: tuple[int, ...], dtype: str) -> None:
    x, *params = _data(shape)
    run = batchnorm_flow(x, *params, dtype=dtype)
    want = _reference(x, tuple(params), dtype)
    _assert_matches(run.output, want, dtype)
    if dtype in ("f16", "bf16"):
        # most elements agree exactly; the rest by one step of the output type
        assert np.mean(run.output == want) > 0.9
    # out holds the Cx/NCx image of the result, zero padded (rank 3: of its [N, 1, W, C] view)
    view = aligned_view(shape)
    assert run.out_image == pack(run.output.reshape(view), dtype, layout_for(view, aligned=True))


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 4),
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(1, 200),
    st.sampled_from(["f16", "bf16", "f32", "tf32"]),
    st.integers(0, 2**16),
)
def test_flow_on_random_shapes(rank: int, n: int, hw: int, c: int, dtype: str, seed: int) -> None:
    shape = (n, *([hw] * (rank - 2)), c)
    x, *params = _data(shape, seed)
    run = batchnorm_flow(x, *params, dtype=dtype)
    _assert_matches(run.output, _reference(x, tuple(params), dtype), dtype)
    assert [s.index for s in run.steps] == list(range(1, 11))


def test_the_seed_c_gt_32_example_uses_vuv_mul_loop_per_batch() -> None:
    """(4x112x2x129) x (1x1x1x129): per batch one VuV_mul_loop over Cx = 2, one VuV_mul (C0)."""
    x, *params = _data((4, 112, 2, 129))
    run = batchnorm_flow(x, *params, dtype="f16")
    step6 = run.steps[5]
    assert [i.name for i in step6.instructions] == ["VuV_mul_loop", "VuV_mul"] * 4
    loop, tail = (dict(i.args) for i in step6.instructions[:2])
    hw = 112 * 2
    assert loop["src_elem_num"] == hw * 64
    assert loop["unit_elem_num"] == 64
    assert loop["full_src_elem_num"] == 2 * hw * 64
    assert loop["full_unit_elem_num"] == 2 * 64
    assert tail["src_elem_num"] == hw * 4  # C0 = 1 padded to 4
    assert tail["unit_elem_num"] == 4
    # batch n starts at its 2048-bit aligned NCx address (of the fp32 image)
    second = dict(step6.instructions[2].args)
    stride = element_offset_bits((4, 112, 2, 129), "f32", "NCx", (1, 0, 0, 0)) // 8
    assert second["src"] - loop["src"] == stride
    counts = run.instruction_counts()
    assert counts["op_gatherScatter"] == 2
    assert counts["convert_fp16_fp32"] == counts["convert_fp32_fp16"] == 1


def test_the_seed_c_le_32_example_uses_vuv_mul_per_batch() -> None:
    x, *params = _data((4, 112, 2, 30))
    run = batchnorm_flow(x, *params, dtype="f16")
    step7 = run.steps[6]
    assert [i.name for i in step7.instructions] == ["VuV_mul"] * 4
    args = dict(step7.instructions[0].args)
    assert args["src_elem_num"] == 112 * 2 * 32  # NHWC, C padded to 32
    assert args["unit_elem_num"] == 32


def test_gather_scatter_puts_fp16_into_the_low_half_of_fp32_slots() -> None:
    shape = (2, 1, 2, 131)  # seed's NCx example
    x, *params = _data(shape)
    run = batchnorm_flow(x, *params, dtype="f16")
    step1, step2 = run.steps[:2]
    assert step1.engine == "TDMA"
    imm = next(r for r in run.regions if r.name == "imm")
    for index in [(0, 0, 0, 0), (1, 0, 1, 130), (0, 0, 1, 64)]:
        at = element_offset_bits(shape, "f32", "NCx", index) // 8
        half = to_bits_image(np.asarray([x[index]]), "f16")
        assert step1.image[at : at + 2] == half
        assert step1.image[at + 2 : at + 4] == b"\0\0"
    np.testing.assert_array_equal(step1.values, round_to(x, "f16").astype(np.float32))
    # after the conversion the same slots hold fp32
    np.testing.assert_array_equal(step2.values, round_to(x, "f16").astype(np.float32))
    assert imm.nbytes == 2 * len(pack(round_to(x, "f16"), "f16", "NCx"))


def test_variance_steps_and_buffers() -> None:
    x, scale, shift, mean, var = _data((2, 3, 40))
    run = batchnorm_flow(x, scale, shift, mean, var, dtype="f16", epsilon=1e-3)
    step4, step5 = run.steps[3:5]
    np.testing.assert_array_equal(step4.values, var + np.float32(1e-3))
    np.testing.assert_allclose(step5.values, 1 / np.sqrt(var + np.float32(1e-3)), rtol=1e-6)
    assert step4.region == step5.region == "var"
    names = [r.name for r in run.regions]
    assert names == ["in", "scale", "shift", "mean", "var", "imm", "out"]
    assert all(r.addr % 256 == 0 for r in run.regions)
    # the imm buffer is the op library's getImmSpSize for this slice
    p = TensorType((40,), "f32")
    op = build("BatchNorm_Inference", TensorType((2, 3, 40), "f16"), p, p, p, p)
    imm = next(r for r in run.regions if r.name == "imm")
    assert imm.nbytes == BN.imm_bytes(op, BN.temporal_slice_shape(op))


def test_fp32_skips_the_conversions() -> None:
    x, *params = _data((2, 4, 8))
    run = batchnorm_flow(x, *params, dtype="f32")
    skipped = [s.index for s in run.steps if s.skipped]
    assert skipped == [1, 2, 9, 10]
    assert run.steps[7].region == "out"
    tf = batchnorm_flow(x, *params, dtype="tf32")
    assert [s.index for s in tf.steps if s.skipped] == [1, 2, 10]
    assert np.array_equal(tf.output, round_to(tf.output, "tf32"))


def test_vuv_and_its_loop() -> None:
    spm = Spm()
    spm.alloc("src", 4 * 256, "f32", (256,))
    spm.alloc("unit", 4 * 128, "f32", (128,))
    src = np.arange(256, dtype=np.float32)
    unit = np.arange(128, dtype=np.float32) + 1
    spm.f32(0, 256)[:] = src
    spm.f32(1024, 128)[:] = unit
    vuv_loop(spm, "mul", 0, 0, 1024, 128, 64, 256, 128)
    # chunk j of 128 source elements against unit chunk j of 64, repeated twice
    want = src.reshape(2, 2, 64) * unit.reshape(2, 1, 64)
    np.testing.assert_array_equal(spm.f32(0, 256), want.reshape(-1))
    assert [i.name for i in spm.issued] == ["VuV_mul_loop"]


def test_vuv_loop_checks_the_seed_condition() -> None:
    spm = Spm()
    spm.alloc("a", 4 * 512, "f32", (512,))
    with pytest.raises(Tx8labError, match="VuV_mul_loop: unit_elem_num must be 64"):
        vuv_loop(spm, "mul", 0, 0, 0, 128, 32, 256, 64)
    with pytest.raises(Tx8labError, match=r"full_src_elem_num / full_unit_elem_num =="):
        vuv_loop(spm, "mul", 0, 0, 0, 128, 64, 256, 192)
    with pytest.raises(Tx8labError, match="VuV_add: src_elem_num 10 must be a multiple"):
        vuv(spm, "add", 0, 0, 0, 10, 4)


def test_bad_inputs_are_named() -> None:
    x, *params = _data((2, 8))
    with pytest.raises(Tx8labError, match="rank 2, 3 or 4"):
        batchnorm_flow(x.reshape(16), *params)
    with pytest.raises(Tx8labError, match="BatchNorm input dtype 'i8'"):
        batchnorm_flow(x, *params, dtype="i8")
    with pytest.raises(Tx8labError, match=r"BatchNorm mean: must be \[8\]"):
        batchnorm_flow(x, params[0], params[1], np.zeros(7), params[3])


# ----------------------------------------------------------------- main.c and its loop
GOLDEN = Path(__file__).parent / "golden_batchnorm"

#: The seed's structs (L_SHAPE, G_SHAPE, TSR) and the calls main.c makes, to compile it.
OPLIB_H = """
#include <stdint.h>
#define MAX_SHAPE_DIM 8
typedef enum { Fmt_FP16, Fmt_BF16, Fmt_FP32, Fmt_TF32 } Data_Format;
typedef struct L_SHAPE {
    int32_t shape_whole[MAX_SHAPE_DIM]; int32_t shape_start[MAX_SHAPE_DIM];
    int32_t shape_slice[MAX_SHAPE_DIM]; int32_t shape_real[MAX_SHAPE_DIM]; int32_t dim;
} L_SHAPE;
typedef struct G_SHAPE {
    int32_t spatial_start[MAX_SHAPE_DIM]; int32_t spatial_end[MAX_SHAPE_DIM];
    int32_t dynamic_offset[MAX_SHAPE_DIM]; int32_t shape[MAX_SHAPE_DIM]; int32_t dim;
    int32_t done; int32_t batch_offset[MAX_SHAPE_DIM];
} G_SHAPE;
typedef struct TSR { Data_Format format; uint64_t addr; L_SHAPE* shape; } TSR;
typedef struct { float epsilon; } BATCHNORM_INFER_PARAM;
uint64_t op_dma_load(TSR *t, G_SHAPE *g);
uint64_t op_store_var_ncx(TSR *t, G_SHAPE *g);
uint64_t op_batchnorm_inference(BATCHNORM_INFER_PARAM *param, TSR *in, TSR *scale,
    TSR *shift, TSR *mean, TSR *var, TSR *imm, TSR *out);
"""


def _seed_op(c: int = 129) -> Op:
    p = TensorType((1, 1, 1, c), "f32")
    return build("BatchNorm_Inference", TensorType((4, 112, 2, c), "f16"), p, p, p, p)


def test_main_c_golden() -> None:
    text = main_c(_seed_op(), OpStrategy((1, 1, 1, 2), (4, 2, 1, 1)), tile=1)
    assert text == (GOLDEN / "main_tile1.c").read_text()


def test_main_c_compiles(tmp_path: Path) -> None:
    gcc = shutil.which("gcc") or shutil.which("cc")
    assert gcc, "a C compiler is part of the dev environment (build-essential)"
    (tmp_path / "tx8be_oplib.h").write_text(OPLIB_H)
    src = tmp_path / "main.c"
    src.write_text(main_c(_seed_op(), OpStrategy((1, 1, 1, 4), (2, 1, 1, 1)), tile=3))
    done = subprocess.run(
        [gcc, "-std=c11", "-Wall", "-Werror", "-fsyntax-only", "-I", str(tmp_path), str(src)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_main_c_follows_the_slice_shape_and_the_plan() -> None:
    op = _seed_op()
    strategy = OpStrategy((1, 1, 1, 16), (2, 4, 1, 1))
    assert BN.temporal_slice_shape(op, strategy).operands[0] == (2, 28, 2, 9)
    text = main_c(op, strategy, tile=0)
    assert " * slice 2x28x2x9 (temporalSliceShape), 8 iterations, channels [0, 9)\n" in text
    # C = 129 over 16 tiles of 9: tile 14 holds the last 3 channels, tile 15 none
    last = main_c(op, strategy, tile=14)
    assert "slice 2x28x2x3 (temporalSliceShape), 8 iterations, channels [126, 129)" in last
    imm = next(r for r in buffer_plan((2, 28, 2, 3), "f16") if r.name == "imm")
    assert f"TSR imm = {{Fmt_FP32, 0x{imm.addr:05x}, &in_shape}};" in last
    with pytest.raises(Tx8labError, match="tile 15 gets no channel of C = 129"):
        main_c(op, strategy, tile=15)
    with pytest.raises(Tx8labError, match="tile 16 is outside the sharding"):
        main_c(op, strategy, tile=16)
    with pytest.raises(Tx8labError, match=r"d3 .* cannot be split in time"):
        main_c(op, OpStrategy((1, 1, 1, 1), (1, 1, 1, 2)))
    relu = build("Relu", TensorType((2, 4), "f32"))
    with pytest.raises(Tx8labError, match=r"is tx8be\.Relu, not tx8be\.BatchNorm_Inference"):
        main_c(relu)


def test_main_c_for_the_demo_group_uses_the_group_schedule() -> None:
    from tests.core.test_slicing import grouped

    group = grouped(zoo.batchnorm_demo())
    (bn,) = [o for o in group.regions[0].ops if o.kind == "tx8be.BatchNorm_Inference"]
    strategy = default_strategy(group, TX81).ops[bn.id]
    assert main_c_for_group(group, TX81) == main_c(bn, strategy)
    assert f"sharding {strategy.shard}, split {strategy.split}" in main_c_for_group(group, TX81)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_main_loop_equals_one_call_on_the_whole_input(dtype: str) -> None:
    x, *params = _data((4, 6, 2, 70))
    loop = main_loop(x, *params, slice_shape=(1, 4, 2, 70), dtype=dtype)
    assert len(loop.runs) == 4 * 2  # N in 4, H in 2 (the last H slice is 2 rows)
    assert loop.starts[:3] == ((0, 0, 0, 0), (0, 4, 0, 0), (1, 0, 0, 0))
    assert loop.runs[1].shape == (1, 2, 2, 70)
    whole = batchnorm_flow(x, *params, dtype=dtype)
    np.testing.assert_array_equal(loop.output, whole.output)
    with pytest.raises(Tx8labError, match="its whole C = 70"):
        main_loop(x, *params, slice_shape=(1, 4, 2, 35), dtype=dtype)


def test_reusing_var_without_reloading_it_goes_wrong() -> None:
    """Why main.c reloads variance each iteration: steps 4-5 overwrite it in place."""
    x, scale, shift, mean, var = _data((2, 3, 16))
    first = batchnorm_flow(x, scale, shift, mean, var, dtype="f32")
    overwritten = first.steps[4].values  # var after step 5: rsqrt(var + eps)
    again = batchnorm_flow(x, scale, shift, mean, overwritten, dtype="f32")
    assert not np.allclose(again.output, first.output)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "tf32"])
def test_the_op_library_says_what_steps_4_and_5_leave_in_var(dtype: str) -> None:
    """``clobbered_value`` is the var buffer after the walkthrough's step 5, bit for bit."""
    x, scale, shift, mean, var = _data((2, 5, 3, 70), seed=3)
    var[:2] = [float.fromhex("0x1.128cd0p+0"), 410.69427490234375]  # rounding-sensitive
    run = batchnorm_flow(x, scale, shift, mean, var, dtype=dtype, epsilon=1e-6)
    after = run.steps[4]
    assert after.region == "var"
    p = TensorType((1, 1, 1, 70), "f32")
    op = build("BatchNorm_Inference", TensorType(x.shape, dtype), p, p, p, p, epsilon=1e-6)
    params = [a.reshape(1, 1, 1, 70) for a in (scale, shift, mean, var)]
    got = BN.clobbered_value(op, 4, [round_to(x, dtype), *params])
    assert got.shape == (1, 1, 1, 70)
    np.testing.assert_array_equal(got.reshape(70), after.values)


def test_main_c_and_the_pipeline_c_both_load_the_variance_in_the_loop() -> None:
    """The walkthrough main.c (the seed's loop) and the pipeline's C for the same group."""
    from tests.core.test_codegen import big_batchnorm_c, line_of, loop_lines

    group, pipeline_c = big_batchnorm_c()
    # the walkthrough: every load inside while (!input_done), as the seed draws it
    lines = main_c_for_group(group, TX81).splitlines()
    start = line_of(lines, "while (!input_done) {")
    end = next(i for i in range(start, len(lines)) if lines[i] == "    }")
    call = line_of(lines, "op_batchnorm_inference(")
    for name in ("input", "scale", "shift", "mean", "varience"):
        assert start < line_of(lines, f"op_dma_load(&{name}, ") < call < end
    # the pipeline: the variance reloaded inside its for loop, before the op
    lines, start, end = loop_lines(pipeline_c)
    (bn,) = [op for op in group.regions[0].ops if op.kind == "tx8be.BatchNorm_Inference"]
    var = bn.operands[4].owner
    assert (
        start
        < line_of(lines, f", &t_{var}, DDR_{var}, ")
        < line_of(lines, "op_batchnorm_inference(")
        < end
    )
