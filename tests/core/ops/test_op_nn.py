"""Matmul, conv, pool, reduce and norm ops against onnxruntime and float64 formulas."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from tests.core.ops.ophelpers import (
    close,
    infer,
    nchw_to_nhwc,
    nhwc_to_nchw,
    ort_node,
    randn,
    run,
)
from tx8lab.core.ir import TensorType
from tx8lab.errors import Tx8labError

F = "f32"


# --------------------------------------------------------------------- matmul
@pytest.mark.parametrize(
    ("trans_a", "trans_b", "with_c"),
    [(False, False, True), (True, False, False), (False, True, True), (True, True, True)],
)
def test_gemm_against_onnxruntime(trans_a: bool, trans_b: bool, with_c: bool) -> None:
    a = randn(5, 7) if not trans_a else randn(7, 5)
    b = randn(7, 3) if not trans_b else randn(3, 7)
    c = randn(3) if with_c else None
    ops = [a, b] + ([c] if c is not None else [])
    got = run("Gemm", *ops, trans_a=trans_a, trans_b=trans_b, alpha=0.5, beta=2.0)
    want = ort_node(
        "Gemm", [a, b, c], transA=int(trans_a), transB=int(trans_b), alpha=0.5, beta=2.0
    )[0]
    close(got, want)


def test_gemm_shapes_and_errors() -> None:
    assert infer(
        "Gemm", TensorType((4, 2), F), TensorType((3, 4), F), trans_a=True, trans_b=True
    ) == (TensorType((2, 3), F),)
    with pytest.raises(Tx8labError, match=r"tx8be.Gemm: inner dimensions differ.*K=3.*K=4"):
        infer("Gemm", TensorType((2, 3), F), TensorType((4, 5), F))
    with pytest.raises(Tx8labError, match=r"tx8be.Gemm: A and B must have rank 2"):
        infer("Gemm", TensorType((2, 3, 1), F), TensorType((3, 5), F))
    with pytest.raises(Tx8labError, match=r"tx8be.Gemm: C .* does not broadcast"):
        infer("Gemm", TensorType((2, 3), F), TensorType((3, 5), F), TensorType((4,), F))


def test_matmul_against_onnxruntime() -> None:
    a, b = randn(2, 1, 4, 6), randn(3, 6, 5)
    (out,) = infer("MatMul", TensorType(a.shape, F), TensorType(b.shape, F))
    assert out.shape == (2, 3, 4, 5)
    close(run("MatMul", a, b), ort_node("MatMul", [a, b])[0])


def test_matmul_errors() -> None:
    with pytest.raises(Tx8labError, match=r"tx8be.MatMul: operands must have rank >= 2"):
        infer("MatMul", TensorType((3,), F), TensorType((3, 2), F))
    with pytest.raises(Tx8labError, match=r"tx8be.MatMul: inner dimensions differ"):
        infer("MatMul", TensorType((2, 3), F), TensorType((4, 2), F))
    with pytest.raises(Tx8labError, match=r"tx8be.MatMul: batch dimensions"):
        infer("MatMul", TensorType((2, 2, 3), F), TensorType((3, 3, 2), F))


def test_batch_matmul() -> None:
    a, b = randn(3, 4, 6), randn(3, 6, 2)
    close(run("BatchMatMul", a, b), a.astype(np.float64) @ b.astype(np.float64))
    with pytest.raises(Tx8labError, match=r"tx8be.BatchMatMul: batch sizes differ"):
        infer("BatchMatMul", TensorType((3, 4, 6), F), TensorType((2, 6, 2), F))
    with pytest.raises(Tx8labError, match=r"tx8be.BatchMatMul: operands must have rank 3"):
        infer("BatchMatMul", TensorType((4, 6), F), TensorType((6, 2), F))


def test_integer_matmul_is_exact() -> None:
    a = np.array([[2**20, 3]], np.int32)
    b = np.array([[2**10], [1]], np.int32)
    assert run("MatMul", a, b)[0, 0] == 2**30 + 3


# --------------------------------------------------------------------- conv
CONV_CASES = [
    # (N, H, W, Cin, Cout, K, strides, pads, dilations, group)
    (1, 9, 9, 4, 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (2, 10, 7, 3, 5, (3, 2), (2, 1), (0, 1, 2, 0), (1, 1), 1),
    (1, 8, 8, 4, 8, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    (1, 11, 11, 4, 6, (3, 3), (1, 2), (2, 2, 2, 2), (2, 2), 2),
    (1, 9, 9, 6, 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 6),  # depthwise
    (1, 9, 9, 3, 6, (3, 3), (1, 1), (1, 0, 1, 0), (1, 2), 3),  # depthwise x2 multiplier
    (1, 7, 7, 8, 4, (2, 2), (1, 1), (0, 0, 1, 1), (1, 1), 4),  # grouped, 2 in / 1 out
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_against_onnxruntime(case: tuple[Any, ...]) -> None:
    n, h, w, cin, cout, k, strides, pads, dil, group = case
    x = randn(n, h, w, cin)
    wt = randn(cout, k[0], k[1], cin // group)
    bias = randn(cout)
    got = run("Conv2d", x, wt, bias, strides=strides, pads=pads, dilations=dil, group=group)
    onnx_pads = [pads[0], pads[1], pads[2], pads[3]]
    want = ort_node(
        "Conv",
        [nhwc_to_nchw(x), np.ascontiguousarray(wt.transpose(0, 3, 1, 2)), bias],
        strides=list(strides),
        pads=onnx_pads,
        dilations=list(dil),
        group=group,
    )[0]
    close(got, nchw_to_nhwc(want), rtol=1e-5)


def test_conv2d_without_bias_and_integers() -> None:
    x = np.arange(2 * 4 * 4 * 2, dtype=np.int32).reshape(2, 4, 4, 2) % 7 - 3
    w = np.arange(3 * 2 * 2 * 2, dtype=np.int32).reshape(3, 2, 2, 2) % 5 - 2
    got = run("Conv2d", x, w)
    want = run("Conv2d", x.astype(np.float32), w.astype(np.float32))
    np.testing.assert_array_equal(got, want.astype(np.int64))


def test_conv2d_shape_inference_and_errors() -> None:
    x = TensorType((1, 224, 224, 3), F)
    w = TensorType((64, 7, 7, 3), F)
    (out,) = infer("Conv2d", x, w, strides=(2, 2), pads=(3, 3, 3, 3))
    assert out == TensorType((1, 112, 112, 64), F)
    with pytest.raises(Tx8labError, match=r"tx8be.Conv2d: group 3 does not divide the input"):
        infer("Conv2d", TensorType((1, 8, 8, 4), F), TensorType((6, 3, 3, 1), F), group=3)
    with pytest.raises(Tx8labError, match=r"tx8be.Conv2d: kernel 5 .* larger than the padded"):
        infer("Conv2d", TensorType((1, 4, 4, 2), F), TensorType((2, 5, 5, 2), F))
    with pytest.raises(Tx8labError, match=r"tx8be.Conv2d: w has 3 input channels per group"):
        infer("Conv2d", TensorType((1, 4, 4, 2), F), TensorType((2, 1, 1, 3), F))
    with pytest.raises(Tx8labError, match=r"tx8be.Conv2d: x must be NHWC"):
        infer("Conv2d", TensorType((4, 4, 2), F), TensorType((2, 1, 1, 2), F))
    with pytest.raises(Tx8labError, match=r"tx8be.Conv2d: bias must be \[2\]"):
        infer(
            "Conv2d", TensorType((1, 4, 4, 2), F), TensorType((2, 1, 1, 2), F), TensorType((3,), F)
        )
    with pytest.raises(Tx8labError, match=r"tx8be.Conv2d: attribute 'strides' entries"):
        infer("Conv2d", TensorType((1, 4, 4, 2), F), TensorType((2, 1, 1, 2), F), strides=(0, 1))


def test_conv2d_is_fast_enough_for_resnet_stem() -> None:
    x = randn(1, 224, 224, 3)
    w = randn(64, 7, 7, 3)
    start = time.perf_counter()
    run("Conv2d", x, w, strides=(2, 2), pads=(3, 3, 3, 3))
    x2 = randn(1, 56, 56, 64)
    run("Conv2d", x2, randn(64, 3, 3, 64), pads=(1, 1, 1, 1))
    assert time.perf_counter() - start < 2.0


# --------------------------------------------------------------------- pools
POOL_CASES = [
    ((3, 3), (2, 2), (1, 1, 1, 1), False, False),
    ((2, 2), (2, 2), (0, 0, 0, 0), False, False),
    ((3, 3), (2, 2), (0, 0, 0, 0), True, False),
    ((3, 2), (2, 3), (1, 0, 1, 1), True, True),
    ((3, 3), (1, 1), (1, 1, 1, 1), False, True),
]


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("kind", ["MaxPool2d", "AvgPool2d"])
def test_pools_against_onnxruntime(kind: str, case: tuple[Any, ...]) -> None:
    kernel, strides, pads, ceil, include = case
    x = randn(2, 10, 9, 3)
    attrs: dict[str, Any] = {"kernel": kernel, "strides": strides, "pads": pads, "ceil_mode": ceil}
    onnx_attrs: dict[str, Any] = {
        "kernel_shape": list(kernel),
        "strides": list(strides),
        "pads": list(pads),
        "ceil_mode": int(ceil),
    }
    if kind == "AvgPool2d":
        attrs["count_include_pad"] = include
        onnx_attrs["count_include_pad"] = int(include)
    got = run(kind, x, **attrs)
    want = ort_node(
        "MaxPool" if kind == "MaxPool2d" else "AveragePool",
        [nhwc_to_nchw(x)],
        opset=19,
        **onnx_attrs,
    )[0]
    close(got, nchw_to_nhwc(want))


def test_pool_shapes_and_errors() -> None:
    x = TensorType((1, 112, 112, 64), F)
    (out,) = infer("MaxPool2d", x, kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    assert out.shape == (1, 56, 56, 64)
    with pytest.raises(Tx8labError, match=r"tx8be.MaxPool2d: missing required attribute 'kernel'"):
        infer("MaxPool2d", x)
    with pytest.raises(Tx8labError, match=r"tx8be.AvgPool2d: kernel 9 .* larger than the padded"):
        infer("AvgPool2d", TensorType((1, 4, 4, 1), F), kernel=(9, 1))
    with pytest.raises(Tx8labError, match=r"tx8be.MaxPool2d: x \(NHWC\) must have rank 4"):
        infer("MaxPool2d", TensorType((4, 4, 1), F), kernel=(2, 2))


def test_global_avg_pool() -> None:
    x = randn(2, 5, 6, 7)
    (out,) = infer("GlobalAvgPool", TensorType(x.shape, F))
    assert out.shape == (2, 1, 1, 7)
    close(
        run("GlobalAvgPool", x), nchw_to_nhwc(ort_node("GlobalAveragePool", [nhwc_to_nchw(x)])[0])
    )
    with pytest.raises(Tx8labError, match=r"tx8be.GlobalAvgPool: x \(NHWC\) must have rank 4"):
        infer("GlobalAvgPool", TensorType((5, 6, 7), F))


# --------------------------------------------------------------------- reduce
@pytest.mark.parametrize("kind", ["ReduceSum", "ReduceMean", "ReduceMax"])
@pytest.mark.parametrize(("axes", "keepdims"), [((1,), True), ((0, -1), False), ((2,), False)])
def test_reduce_against_onnxruntime(kind: str, axes: tuple[int, ...], keepdims: bool) -> None:
    x = randn(3, 4, 5)
    got = run(kind, x, axes=axes, keepdims=keepdims)
    if kind == "ReduceSum":
        want = ort_node(kind, [x, np.array(axes, np.int64)], opset=13, keepdims=int(keepdims))
    else:
        want = ort_node(kind, [x], opset=13, axes=list(axes), keepdims=int(keepdims))
    close(got, want[0])


def test_reduce_errors() -> None:
    t = TensorType((3, 4), F)
    with pytest.raises(Tx8labError, match=r"tx8be.ReduceSum: axes entry 2 is out of range"):
        infer("ReduceSum", t, axes=(2,))
    with pytest.raises(Tx8labError, match=r"tx8be.ReduceMax: attribute 'axes' repeats"):
        infer("ReduceMax", t, axes=(1, -1))
    with pytest.raises(Tx8labError, match=r"tx8be.ReduceMean: missing required attribute"):
        infer("ReduceMean", t)


def test_integer_reduce_sum_is_exact() -> None:
    x = np.full((4, 3), 2**30, np.int64)
    assert run("ReduceSum", x, axes=(0,), keepdims=False)[0] == 2**32


# --------------------------------------------------------------------- norms
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_against_onnxruntime(axis: int) -> None:
    x = randn(3, 4, 5, scale=4.0)
    close(run("Softmax", x, axis=axis), ort_node("Softmax", [x], opset=13, axis=axis)[0])


def test_softmax_is_stable_and_checks_axis() -> None:
    x = np.array([[1000.0, 1001.0, -1000.0]], np.float32)
    out = run("Softmax", x)
    assert np.all(np.isfinite(out))
    close(out.sum(axis=-1), np.ones(1))
    with pytest.raises(Tx8labError, match=r"tx8be.Softmax: axis 2 is out of range"):
        infer("Softmax", TensorType((2, 3), F), axis=2)


@pytest.mark.parametrize("axis", [-1, 1])
def test_layernorm_against_onnxruntime(axis: int) -> None:
    x = randn(2, 3, 8, scale=3.0) + 5.0
    norm_shape = x.shape[axis:]
    gamma, beta = randn(*norm_shape), randn(*norm_shape)
    got = run("LayerNorm", x, gamma, beta, axis=axis, epsilon=1e-5)
    want = ort_node("LayerNormalization", [x, gamma, beta], axis=axis, epsilon=1e-5)[0]
    close(got, want, rtol=2e-5)
    x64 = x.astype(np.float64)
    axes = tuple(range(axis % 3, 3))
    ref = (x64 - x64.mean(axes, keepdims=True)) / np.sqrt(x64.var(axes, keepdims=True) + 1e-5)
    close(got, ref * gamma + beta)


def test_layernorm_errors() -> None:
    x = TensorType((2, 8), F)
    with pytest.raises(Tx8labError, match=r"tx8be.LayerNorm: gamma .* does not broadcast"):
        infer("LayerNorm", x, TensorType((4,), F), TensorType((8,), F))
    with pytest.raises(Tx8labError, match=r"tx8be.LayerNorm: beta has element type f16"):
        infer("LayerNorm", x, TensorType((8,), F), TensorType((8,), "f16"))


def test_rmsnorm_against_float64() -> None:
    x, gamma = randn(3, 16, scale=2.0), randn(16)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64**2).mean(-1, keepdims=True) + 1e-6) * gamma
    close(run("RMSNorm", x, gamma), ref)
    with pytest.raises(Tx8labError, match=r"tx8be.RMSNorm: gamma .* does not broadcast"):
        infer("RMSNorm", TensorType((3, 16), F), TensorType((8,), F))


def test_batchnorm_against_onnxruntime() -> None:
    x = randn(2, 5, 6, 4, scale=2.0)
    scale, offset, mean = randn(4), randn(4), randn(4)
    var = np.abs(randn(4)) + 0.5
    got = run("BatchNorm_Inference", x, scale, offset.reshape(1, 1, 1, 4), mean, var, epsilon=1e-5)
    want = ort_node(
        "BatchNormalization", [nhwc_to_nchw(x), scale, offset, mean, var], epsilon=1e-5
    )[0]
    close(got, nchw_to_nhwc(want), rtol=2e-5)


def test_batchnorm_errors() -> None:
    c = TensorType((4,), F)
    with pytest.raises(Tx8labError, match=r"tx8be.BatchNorm_Inference: input must have rank"):
        infer("BatchNorm_Inference", TensorType((4,), F), c, c, c, c)
    with pytest.raises(Tx8labError, match=r"tx8be.BatchNorm_Inference: mean must be \[4\]"):
        infer("BatchNorm_Inference", TensorType((1, 2, 2, 4), F), c, c, TensorType((3,), F), c)
    with pytest.raises(Tx8labError, match=r"tx8be.BatchNorm_Inference: scale must be f32"):
        infer(
            "BatchNorm_Inference", TensorType((1, 2, 2, 4), "f16"), TensorType((4,), "f16"), c, c, c
        )
