"""Elementwise and activation ops: shapes, numerics (float64 / onnxruntime), errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.core.ops.ophelpers import close, infer, ort_node, randn, run
from tx8lab.core.ir import TensorType
from tx8lab.core.ops.activation import erf, erfc
from tx8lab.errors import Tx8labError

F = "f32"

BINARY_REF = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.divide,
    "Max": np.maximum,
    "Min": np.minimum,
    "Pow": np.power,
}


@pytest.mark.parametrize("kind", sorted(BINARY_REF))
def test_binary_float_against_float64(kind: str) -> None:
    a = randn(2, 3, 4)
    b = randn(3, 1)
    if kind == "Pow":
        a = np.abs(a) + 0.1
    got = run(kind, a, b)
    assert got.dtype == np.float32
    close(got, BINARY_REF[kind](a.astype(np.float64), b.astype(np.float64)))


def test_binary_shape_inference_broadcasts() -> None:
    (out,) = infer("Add", TensorType((4, 1, 3), F), TensorType((5, 1), F))
    assert out == TensorType((4, 5, 3), F)


def test_binary_errors_name_the_op() -> None:
    with pytest.raises(Tx8labError, match=r"tx8be.Mul: operand shapes .* do not broadcast"):
        infer("Mul", TensorType((2, 3), F), TensorType((4,), F))
    with pytest.raises(Tx8labError, match=r"tx8be.Sub: .*element types differ"):
        infer("Sub", TensorType((2,), F), TensorType((2,), "f16"))
    with pytest.raises(Tx8labError, match=r"tx8be.Add: takes 2 operands"):
        infer("Add", TensorType((2,), F))


def test_integer_ops_are_exact() -> None:
    a = np.array([7, -7, 7, -7, 5, 3], np.int32)
    b = np.array([2, 2, -2, -2, 0, 3], np.int32)
    np.testing.assert_array_equal(run("Div", a, b), [3, -3, -3, 3, 0, 1])
    big = np.array([2**40 + 1], np.int64)
    assert run("Add", big, np.array([1], np.int64))[0] == 2**40 + 2
    np.testing.assert_array_equal(
        run("Pow", np.array([3, 2], np.int32), np.array([3, 10], np.int32)), [27, 1024]
    )


@pytest.mark.parametrize("mode", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_compare(mode: str) -> None:
    a = np.array([[1, 2, 3]], np.float32)
    b = np.array([[2], [2]], np.float32)
    ref = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}
    (out,) = infer("Compare", TensorType((1, 3), F), TensorType((2, 1), F), mode=mode)
    assert out == TensorType((2, 3), "i1")
    np.testing.assert_array_equal(run("Compare", a, b, mode=mode), ref[mode])


def test_compare_bad_mode() -> None:
    with pytest.raises(Tx8labError, match=r"tx8be.Compare: attribute 'mode'"):
        infer("Compare", TensorType((1,), F), TensorType((1,), F), mode="approx")


def test_where() -> None:
    cond = np.array([[True], [False]])
    a, b = randn(2, 3), randn(3)
    (out,) = infer("Where", TensorType((2, 1), "i1"), TensorType((2, 3), F), TensorType((3,), F))
    assert out == TensorType((2, 3), F)
    np.testing.assert_array_equal(run("Where", cond, a, b), np.where(cond, a, b))
    with pytest.raises(Tx8labError, match=r"tx8be.Where: operand 0 \(cond\) must be i1"):
        infer("Where", TensorType((2,), F), TensorType((2,), F), TensorType((2,), F))


@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
    kind=st.sampled_from(["Add", "Sub", "Mul", "Max", "Min"]),
)
def test_broadcasting_matches_numpy(shapes: hnp.BroadcastableShapes, kind: str) -> None:
    sa, sb = shapes.input_shapes
    (out,) = infer(kind, TensorType(sa, F), TensorType(sb, F))
    assert out.shape == shapes.result_shape
    a, b = randn(*sa), randn(*sb)
    np.testing.assert_array_equal(run(kind, a, b), BINARY_REF[kind](a, b))


# --------------------------------------------------------------------- activations
def _sigmoid64(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


UNARY_REF = {
    "Relu": lambda x: np.maximum(x, 0),
    "Sigmoid": _sigmoid64,
    "Silu": lambda x: x * _sigmoid64(x),
    "Tanh": np.tanh,
    "Exp": np.exp,
    "Neg": np.negative,
    "Abs": np.abs,
}
POSITIVE_REF = {
    "Log": np.log,
    "Sqrt": np.sqrt,
    "Rsqrt": lambda x: 1 / np.sqrt(x),
    "Reciprocal": lambda x: 1 / x,
}


@pytest.mark.parametrize("kind", sorted(UNARY_REF))
def test_unary_against_float64(kind: str) -> None:
    x = randn(4, 50, scale=3.0)
    got = run(kind, x)
    assert got.dtype == np.float32
    close(got, UNARY_REF[kind](x.astype(np.float64)))


@pytest.mark.parametrize("kind", sorted(POSITIVE_REF))
def test_unary_positive_domain_against_float64(kind: str) -> None:
    x = np.abs(randn(4, 50, scale=3.0)) + 1e-3
    close(run(kind, x), POSITIVE_REF[kind](x.astype(np.float64)))


def test_sigmoid_is_stable_for_large_inputs() -> None:
    x = np.array([-1000.0, -30.0, 0.0, 100.0, 1000.0], np.float32)
    out = run("Sigmoid", x)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, [0, _sigmoid64(np.float64(-30)), 0.5, 1, 1], rtol=1e-6)


@pytest.mark.parametrize("kind", ["Relu", "Neg", "Abs", "Clip"])
def test_integer_unary_stays_integer(kind: str) -> None:
    x = np.array([-5, 0, 7], np.int32)
    attrs = {"min": -2.5, "max": 3.5} if kind == "Clip" else {}
    out = run(kind, x, **attrs)
    assert out.dtype == np.int32
    ref = {"Relu": [0, 0, 7], "Neg": [5, 0, -7], "Abs": [5, 0, 7], "Clip": [-2, 0, 3]}
    np.testing.assert_array_equal(out, ref[kind])


def test_transcendental_needs_float() -> None:
    with pytest.raises(Tx8labError, match=r"tx8be.Exp: operand 0 must have a float element"):
        infer("Exp", TensorType((2,), "i32"))


def test_erf_against_onnxruntime_and_math() -> None:
    x = np.concatenate(
        [randn(200, scale=2.0), np.array([0, 1e-4, -1e-6, 0.49, 0.51, 6, -6], np.float32)]
    )
    got = run("Erf", x)
    close(got, ort_node("Erf", [x])[0], rtol=2e-6)
    close(got, np.array([math.erf(float(v)) for v in x]), rtol=1e-6)


def test_erf_helpers_are_accurate_in_float64() -> None:
    xs = np.linspace(-5, 5, 2001)
    rel = np.abs(erf(xs) - np.array([math.erf(v) for v in xs])) / np.maximum(
        np.abs([math.erf(v) for v in xs]), 1e-300
    )
    assert rel[xs != 0].max() < 3e-7
    ys = np.linspace(-3, 9, 1001)
    ref = np.array([math.erfc(v) for v in ys])
    assert (np.abs(erfc(ys) - ref) / ref).max() < 3e-7


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_against_float64_and_onnxruntime(approximate: str) -> None:
    x = randn(300, scale=3.0)
    x64 = x.astype(np.float64)
    if approximate == "none":
        ref = 0.5 * x64 * np.array([math.erfc(-v / math.sqrt(2)) for v in x64])
    else:
        ref = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))
    got = run("Gelu", x, approximate=approximate)
    close(got, ref, rtol=1e-5)
    close(got, ort_node("Gelu", [x], opset=20, approximate=approximate)[0], rtol=1e-5)
    with pytest.raises(Tx8labError, match=r"tx8be.Gelu: attribute 'approximate'"):
        infer("Gelu", TensorType((2,), F), approximate="fast")


def test_hard_sigmoid_and_hard_swish_against_onnxruntime() -> None:
    x = randn(200, scale=5.0)
    close(
        run("HardSigmoid", x, alpha=0.3, beta=0.4),
        ort_node("HardSigmoid", [x], alpha=0.3, beta=0.4)[0],
    )
    close(run("HardSigmoid", x), ort_node("HardSigmoid", [x])[0])
    close(run("HardSwish", x), ort_node("HardSwish", [x], opset=14)[0])


def test_clip() -> None:
    x = randn(50, scale=3.0)
    close(run("Clip", x, min=-1.0, max=0.5), np.clip(x, -1.0, 0.5))
    close(run("Clip", x), x)
    with pytest.raises(Tx8labError, match=r"tx8be.Clip: attribute min"):
        infer("Clip", TensorType((2,), F), min=1.0, max=0.0)
    with pytest.raises(Tx8labError, match=r"tx8be.Clip: attribute 'min' must be float"):
        infer("Clip", TensorType((2,), F), min="low")


def test_unary_shape_inference_keeps_type() -> None:
    t = TensorType((2, 3, 4), "bf16")
    for kind in ("Relu", "Sigmoid", "Gelu", "HardSwish", "Rsqrt"):
        assert infer(kind, t) == (t,)
