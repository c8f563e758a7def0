"""Elementwise ops: the V_VV (vector-vector) and V_VS (vector-scalar/broadcast) families.

Spec: seed 000 ("Need BroadCast Ops": V_VS_add, V_VS_mul, ...), seed 001 (CGRA VuV
instructions) and docs/ops.md. One kind per arithmetic operation; whether an instance is
V_VV or V_VS is decided by its operand shapes (:func:`is_broadcast`), as the seed's rule
needs.

Readings chosen where the seed is vague:

- Binary ops broadcast numpy-style (trailing dimensions aligned); both operands have the
  same element type (the importer inserts a ``Convert``).
- Alignment: BOTH for V_VV; a V_VS op (a binary op with one operand broadcast) follows
  its complete input, which the layout pass resolves; ``align_mode`` still answers BOTH.
  ``Where`` is a select, not a V_VS op: it follows its parents like any BOTH op.
- Integer ``Div`` truncates toward zero (C, ONNX); integer division by zero gives 0.
  Integer ``Pow`` is computed in float64 and truncated (exact for the usual small powers).
- ``Compare`` and ``Where`` are CT ops like the arithmetic ones; ``Where`` takes its
  result type from ``a``.
- Slicing and cost: the iteration dims are the result's; a broadcast operand's dims follow
  the result's where their sizes agree (a V_VS operand's size-1 dims are loaded whole).
  One CGRA instruction per element (``vector_ops`` 1), except Div (4: reciprocal by
  Newton steps, then a multiply) and Pow (16: ``exp(b * log(a))``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from tx8lab.core.ir import Op, TensorType
from tx8lab.core.ops.common import both_attr
from tx8lab.core.ops.registry import Array, AttrSpec, OpAttr, OpDef, f32
from tx8lab.errors import Tx8labError


def broadcast_shape(kind: str, shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """Numpy broadcast of ``shapes`` or a clear error naming ``kind``."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise Tx8labError(
            f"{kind}: operand shapes {' and '.join(str(s) for s in shapes)} do not broadcast"
        ) from None


def is_broadcast(op: Op) -> bool:
    """True when ``op`` is a V_VS op in the seed's terms (one operand broadcast).

    A V_VS op is a broadcasting binary op (Add, Sub, Mul, Div, Max, Min, Pow, the
    comparisons) one of whose operands is broadcast. Only these: seed 000's "Need
    BroadCast Ops" names the V_VS vector ops. Other ops whose operands differ in shape
    (LayerNorm's scale, Where, Gather's indices, MatMul) are no broadcasts and take the
    layout pass's other rules.

    Examples:
        >>> from tx8lab.core.builder import Builder
        >>> b = Builder()
        >>> x, s = b.input((1, 4, 4, 8)), b.input((8,))
        >>> where = b.op("Where", b.op("Compare", x, s, mode="gt"), x, s)
        >>> b.output(b.op("Add", where, s))
        >>> ops = {op.kind: op for op in b.finish().main.ops}
        >>> is_broadcast(ops["tx8be.Add"]), is_broadcast(ops["tx8be.Where"])
        (True, False)
    """
    if op.kind not in _V_VS_KINDS or len(op.operands) < 2 or not op.results:
        return False
    out = op.results[0].type.shape
    return any(v.type.shape != out for v in op.operands)


class BinaryOp(OpDef):
    """A broadcasting binary op; subclasses set ``kind`` and ``fn``."""

    window_compute = True

    family = "elementwise"
    num_operands = 2
    c_param = "ELTWISE_PARAM"

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        a, b = operands
        if a.dtype != b.dtype:
            raise self.fail(
                f"operand element types differ ({a.dtype} vs {b.dtype}); insert a Convert"
            )
        return (TensorType(broadcast_shape(self.kind, [a.shape, b.shape]), a.dtype),)

    def op_attr(self, op: Op) -> OpAttr:
        return both_attr(op, mem_inplace=True)

    def fn(self, a: Array, b: Array) -> Array:
        """The numpy operation."""
        raise NotImplementedError

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        a, b = (f32(x) for x in inputs)
        with np.errstate(all="ignore"):
            return (np.asarray(self.fn(a, b)),)


class Add(BinaryOp):
    """Elementwise sum (V_VV_add / V_VS_add)."""

    kind: ClassVar[str] = "tx8be.Add"
    summary = "a + b"

    def fn(self, a: Array, b: Array) -> Array:
        return np.add(a, b)


class Sub(BinaryOp):
    """Elementwise difference (V_VV_sub / V_VS_sub)."""

    kind: ClassVar[str] = "tx8be.Sub"
    summary = "a - b"

    def fn(self, a: Array, b: Array) -> Array:
        if a.dtype == np.bool_:
            return np.logical_xor(a, b)
        return np.subtract(a, b)


class Mul(BinaryOp):
    """Elementwise product (V_VV_mul / V_VS_mul)."""

    kind: ClassVar[str] = "tx8be.Mul"
    summary = "a * b"

    def fn(self, a: Array, b: Array) -> Array:
        return np.multiply(a, b)


class Div(BinaryOp):
    """Elementwise quotient (V_VV_div / V_VS_div); integers truncate toward zero."""

    kind: ClassVar[str] = "tx8be.Div"
    summary = "a / b"
    vector_ops = 4.0

    def fn(self, a: Array, b: Array) -> Array:
        if a.dtype.kind in "iub":
            a64, b64 = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
            safe = np.where(b64 == 0, 1, b64)
            quotient = np.abs(a64) // np.abs(safe) * np.sign(a64) * np.sign(safe)
            return np.where(b64 == 0, 0, quotient)
        return np.divide(a, b)


class Max(BinaryOp):
    """Elementwise maximum (V_VV_max / V_VS_max), NaN propagating."""

    kind: ClassVar[str] = "tx8be.Max"
    summary = "max(a, b)"

    def fn(self, a: Array, b: Array) -> Array:
        return np.maximum(a, b)


class Min(BinaryOp):
    """Elementwise minimum (V_VV_min / V_VS_min), NaN propagating."""

    kind: ClassVar[str] = "tx8be.Min"
    summary = "min(a, b)"

    def fn(self, a: Array, b: Array) -> Array:
        return np.minimum(a, b)


class Pow(BinaryOp):
    """Elementwise power a ** b."""

    kind: ClassVar[str] = "tx8be.Pow"
    summary = "a ** b"
    vector_ops = 16.0

    def fn(self, a: Array, b: Array) -> Array:
        if a.dtype.kind in "iub":
            return np.trunc(np.power(a.astype(np.float64), b.astype(np.float64)))
        return np.power(a, b)


_COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


class Compare(BinaryOp):
    """Elementwise comparison giving i1 (mode eq/ne/lt/le/gt/ge)."""

    kind: ClassVar[str] = "tx8be.Compare"
    summary = "a <mode> b -> i1"
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "mode": AttrSpec(str, doc="one of eq, ne, lt, le, gt, ge"),
    }

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        mode = attrs["mode"]
        if mode not in _COMPARE:
            raise self.fail(f"attribute 'mode' is {mode!r}; use one of {', '.join(_COMPARE)}")
        (out,) = super()._infer(operands, attrs)
        return (out.with_dtype("i1"),)

    def op_attr(self, op: Op) -> OpAttr:
        return both_attr(op)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        a, b = (f32(x) for x in inputs)
        with np.errstate(all="ignore"):
            return (np.asarray(_COMPARE[op.attrs["mode"]](a, b)),)


#: The broadcasting binary ops: V_VS ops when an operand is broadcast (:func:`is_broadcast`).
_V_VS_KINDS = frozenset(c.kind for c in (Add, Sub, Mul, Div, Max, Min, Pow, Compare))


class Where(OpDef):
    """Select a where cond else b (cond i1), broadcasting the three."""

    window_compute = True

    kind: ClassVar[str] = "tx8be.Where"
    summary = "cond ? a : b"
    family = "elementwise"
    num_operands = 3
    c_param = "ELTWISE_PARAM"

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        cond, a, b = operands
        if cond.dtype != "i1":
            raise self.fail(f"operand 0 (cond) must be i1, got {cond.dtype}; insert a Convert")
        if a.dtype != b.dtype:
            raise self.fail(
                f"operands a and b have different element types ({a.dtype} vs {b.dtype})"
            )
        shape = broadcast_shape(self.kind, [cond.shape, a.shape, b.shape])
        return (TensorType(shape, a.dtype),)

    def op_attr(self, op: Op) -> OpAttr:
        return both_attr(op)

    def compute_dtype(self, op: Op) -> str:
        # the select runs on the data's element type, not on the i1 condition's
        return op.operands[1].type.dtype

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        cond, a, b = inputs
        return (np.where(cond.astype(bool), f32(a), f32(b)),)
