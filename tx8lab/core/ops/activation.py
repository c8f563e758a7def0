"""Activations: elementwise ops of one operand (CGRA VuV instructions) and Clip/Gelu.

Spec: seed 001 (CGRA vector unit; activations are CT ops) and docs/ops.md. All are BOTH
(layout follows the neighbours), may run in place, and keep the operand's type.

Readings chosen where the seed is vague:

- Transcendental activations (Sigmoid, Silu, Tanh, Erf, Exp, Log, Sqrt, Rsqrt,
  Reciprocal, HardSigmoid, HardSwish, Gelu) need a float element type; Relu, Neg, Abs and
  Clip also take integers and stay exact.
- ``Erf`` and exact ``Gelu`` use :func:`erf` / :func:`erfc` below (float64, relative error
  below 2e-7), because scipy is not a dependency and ``math.erf`` per element is slow.
- HardSwish is ONNX's ``x * HardSigmoid(x; 1/6, 0.5)``; Clip on integers rounds its
  bounds inward (``ceil(min)``, ``floor(max)``).
- Cost (``vector_ops``, CGRA operations per element, an assumption: no instruction timing
  is published): 1 for Relu/Neg/Abs, 2 for Clip (max, min), 3 for HardSigmoid and
  Reciprocal/Rsqrt (Newton steps), 4 for HardSwish and Sqrt, 8 for Exp and Log (range
  reduction plus polynomial), 10 for Erf, 12 for Sigmoid and Tanh (an exp, an add and a
  reciprocal), 13 for Silu, 14 for exact Gelu and 18 for its tanh form.
- The float-only ops evaluate in fp32: on 16-bit data they need an fp32 copy of the slice
  as scratch (``imm_bytes`` = 4 bytes per element; seed 001's fp16 -> fp32 conversion
  through TDMA gatherScatter and CGRA convert), none on f32 data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from tx8lab.core.dtypes import bits_of
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.ops.common import both_attr, require_float
from tx8lab.core.ops.registry import (
    Array,
    AttrSpec,
    OpAttr,
    OpDef,
    SliceShape,
    f32,
)

#: Largest finite float32 (codegen writes it for an unbounded Clip side).
_FLT_MAX = 3.4028234663852886e38

# Numerical Recipes ``erfcc`` coefficients (Chebyshev fit; fractional error < 1.2e-7)
_ERFC_COEFFS = (
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
)


def erfc(x: Array) -> Array:
    """Complementary error function in float64, relative error below 2e-7 everywhere.

    Examples:
        >>> round(float(erfc(np.array(1.0))), 6)
        0.157299
    """
    x = np.asarray(x, dtype=np.float64)
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.full_like(t, _ERFC_COEFFS[-1])
    for coeff in reversed(_ERFC_COEFFS[1:-1]):
        poly = poly * t + coeff
    poly = poly * t + _ERFC_COEFFS[0]
    with np.errstate(over="ignore", under="ignore"):
        ans = t * np.exp(-z * z + poly)
    return np.where(x >= 0, ans, 2.0 - ans)


def erf(x: Array) -> Array:
    """Error function in float64: Taylor series near 0, ``1 - erfc`` elsewhere.

    Examples:
        >>> round(float(erf(np.array(0.5))), 7)
        0.5204999
    """
    x = np.asarray(x, dtype=np.float64)
    x2 = x * x
    # 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)); 12 terms reach 1e-16 for |x| < 0.5
    term = x.copy()
    total = x.copy()
    for n in range(1, 12):
        term = term * (-x2) / n
        total = total + term / (2 * n + 1)
    series = total * (2.0 / math.sqrt(math.pi))
    far = np.sign(x) * (1.0 - erfc(np.abs(x)))
    return np.where(np.abs(x) < 0.5, series, far)


class UnaryOp(OpDef):
    """An elementwise op of one operand; subclasses set ``fn`` (and ``float_only``)."""

    window_compute = True

    family = "activation"
    num_operands = 1
    float_only: ClassVar[bool] = True
    c_param = "UNARY_PARAM"

    def codegen_fields(self, op: Op, slice_shape: SliceShape) -> dict[str, Any]:
        """``alpha``/``beta``: the op's two scalars (Clip's min/max, HardSigmoid's), if any."""
        for low, high in (("alpha", "beta"), ("min", "max")):
            if low in self.attrs:
                # C floats have no infinity literal: an unbounded Clip side is +-FLT_MAX
                return {
                    "alpha": max(-_FLT_MAX, min(_FLT_MAX, float(self.attr(op, low)))),
                    "beta": max(-_FLT_MAX, min(_FLT_MAX, float(self.attr(op, high)))),
                }
        return {}

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        if self.float_only:
            require_float(self, operands[0])
        return (operands[0],)

    def op_attr(self, op: Op) -> OpAttr:
        return both_attr(op, mem_inplace=True)

    def imm_bytes(self, op: Op, slice_shape: SliceShape) -> int:
        # float-only functions run in fp32: a 16-bit slice needs an fp32 copy as scratch
        if self.float_only and bits_of(self.compute_dtype(op)) == 16:
            return 4 * slice_shape.points
        return 0

    def fn(self, op: Op, x: Array) -> Array:
        """The numpy operation on float32 (or integer) data."""
        raise NotImplementedError

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x = f32(inputs[0])
        if x.dtype == np.bool_:
            x = x.astype(np.int8)
        with np.errstate(all="ignore"):
            return (np.asarray(self.fn(op, x)),)


class Relu(UnaryOp):
    """max(x, 0)."""

    kind: ClassVar[str] = "tx8be.Relu"
    summary = "max(x, 0)"
    float_only = False

    def fn(self, op: Op, x: Array) -> Array:
        return np.maximum(x, np.zeros((), x.dtype))


class Neg(UnaryOp):
    """-x."""

    kind: ClassVar[str] = "tx8be.Neg"
    summary = "-x"
    float_only = False

    def fn(self, op: Op, x: Array) -> Array:
        return np.negative(x)


class Abs(UnaryOp):
    """|x|."""

    kind: ClassVar[str] = "tx8be.Abs"
    summary = "|x|"
    float_only = False

    def fn(self, op: Op, x: Array) -> Array:
        return np.abs(x)


def _sigmoid(x: Array) -> Array:
    # exp of a non-positive number only: no overflow for large |x|
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype)


class Sigmoid(UnaryOp):
    """1 / (1 + exp(-x))."""

    kind: ClassVar[str] = "tx8be.Sigmoid"
    summary = "1 / (1 + exp(-x))"
    vector_ops = 12.0

    def fn(self, op: Op, x: Array) -> Array:
        return _sigmoid(x)


class Silu(UnaryOp):
    """x * sigmoid(x) (Swish)."""

    kind: ClassVar[str] = "tx8be.Silu"
    summary = "x * sigmoid(x)"
    vector_ops = 13.0

    def fn(self, op: Op, x: Array) -> Array:
        return x * _sigmoid(x)


class HardSwish(UnaryOp):
    """x * clip(x / 6 + 1/2, 0, 1)."""

    kind: ClassVar[str] = "tx8be.HardSwish"
    summary = "x * relu6(x + 3) / 6"
    vector_ops = 4.0

    def fn(self, op: Op, x: Array) -> Array:
        return np.asarray(x * np.clip(x * np.float32(1.0 / 6.0) + np.float32(0.5), 0, 1))


class Tanh(UnaryOp):
    """tanh(x)."""

    kind: ClassVar[str] = "tx8be.Tanh"
    summary = "tanh(x)"
    vector_ops = 12.0

    def fn(self, op: Op, x: Array) -> Array:
        return np.tanh(x)


class Erf(UnaryOp):
    """The error function erf(x)."""

    kind: ClassVar[str] = "tx8be.Erf"
    summary = "erf(x)"
    vector_ops = 10.0

    def fn(self, op: Op, x: Array) -> Array:
        return erf(x).astype(np.float32)


class Exp(UnaryOp):
    """exp(x)."""

    kind: ClassVar[str] = "tx8be.Exp"
    summary = "exp(x)"
    vector_ops = 8.0

    def fn(self, op: Op, x: Array) -> Array:
        return np.exp(x)


class Log(UnaryOp):
    """Natural logarithm (NaN below 0, -inf at 0)."""

    kind: ClassVar[str] = "tx8be.Log"
    summary = "ln(x)"
    vector_ops = 8.0

    def fn(self, op: Op, x: Array) -> Array:
        return np.log(x)


class Sqrt(UnaryOp):
    """Square root (NaN below 0)."""

    kind: ClassVar[str] = "tx8be.Sqrt"
    summary = "sqrt(x)"
    vector_ops = 4.0

    def fn(self, op: Op, x: Array) -> Array:
        return np.sqrt(x)


class Rsqrt(UnaryOp):
    """1 / sqrt(x)."""

    kind: ClassVar[str] = "tx8be.Rsqrt"
    summary = "1 / sqrt(x)"
    vector_ops = 3.0

    def fn(self, op: Op, x: Array) -> Array:
        return np.float32(1.0) / np.sqrt(x)


class Reciprocal(UnaryOp):
    """1 / x."""

    kind: ClassVar[str] = "tx8be.Reciprocal"
    summary = "1 / x"
    vector_ops = 3.0

    def fn(self, op: Op, x: Array) -> Array:
        return np.float32(1.0) / x


class Clip(UnaryOp):
    """Clamp x to [min, max]."""

    kind: ClassVar[str] = "tx8be.Clip"
    summary = "min(max(x, min), max)"
    vector_ops = 2.0
    float_only = False
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "min": AttrSpec(float, -math.inf, "lower bound"),
        "max": AttrSpec(float, math.inf, "upper bound"),
    }

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        low, high = self.attr(attrs, "min"), self.attr(attrs, "max")
        if low > high:
            raise self.fail(f"attribute min {low} is greater than max {high}")
        return super()._infer(operands, attrs)

    def fn(self, op: Op, x: Array) -> Array:
        low, high = float(self.attr(op, "min")), float(self.attr(op, "max"))
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            lo = int(max(math.ceil(low), info.min)) if math.isfinite(low) else int(info.min)
            hi = int(min(math.floor(high), info.max)) if math.isfinite(high) else int(info.max)
            if low > info.max:
                lo = int(info.max)
            if high < info.min:
                hi = int(info.min)
            return np.clip(x, x.dtype.type(lo), x.dtype.type(hi))
        return np.clip(x, np.float32(low), np.float32(high))


class HardSigmoid(UnaryOp):
    """clip(alpha * x + beta, 0, 1)."""

    kind: ClassVar[str] = "tx8be.HardSigmoid"
    summary = "max(0, min(1, alpha * x + beta))"
    vector_ops = 3.0
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "alpha": AttrSpec(float, 0.2, "slope"),
        "beta": AttrSpec(float, 0.5, "offset"),
    }

    def fn(self, op: Op, x: Array) -> Array:
        alpha = np.float32(self.attr(op, "alpha"))
        beta = np.float32(self.attr(op, "beta"))
        return np.asarray(np.clip(alpha * x + beta, 0, 1))


class Gelu(UnaryOp):
    """Gaussian error linear unit, exact (erf) or tanh approximation."""

    kind: ClassVar[str] = "tx8be.Gelu"
    summary = "x * Phi(x)"
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "approximate": AttrSpec(str, "none", "'none' (erf) or 'tanh'"),
    }

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        mode = self.attr(attrs, "approximate")
        if mode not in ("none", "tanh"):
            raise self.fail(f"attribute 'approximate' is {mode!r}; use 'none' or 'tanh'")
        return super()._infer(operands, attrs)

    def vector_ops_per_element(self, op: Op) -> float:
        # erf form: scale, erf, add, two multiplies; tanh form: x^3, two multiply-adds, tanh
        return 18.0 if self.attr(op, "approximate") == "tanh" else 14.0

    def fn(self, op: Op, x: Array) -> Array:
        x64 = x.astype(np.float64)
        if self.attr(op, "approximate") == "tanh":
            inner = math.sqrt(2.0 / math.pi) * (x64 + 0.044715 * x64**3)
            out = 0.5 * x64 * (1.0 + np.tanh(inner))
        else:
            # erfc form keeps relative accuracy for large negative x
            out = 0.5 * x64 * erfc(-x64 / math.sqrt(2.0))
        return out.astype(np.float32)
