"""Elementwise ops: the V_VV (vector-vector) and V_VS (vector-scalar/broadcast) families.

Spec: seed 000 ("Need BroadCast Ops": V_VS_add, V_VS_mul, ...) and seed 001 (CGRA VuV
instructions). One kind per arithmetic operation; whether an instance is V_VV or V_VS is
decided by its operand shapes (:func:`is_broadcast`), as the seed's rule needs.

Readings chosen where the seed is vague:

- Binary ops broadcast numpy-style (trailing dimensions aligned).
- Alignment: BOTH for V_VV; a V_VS op (one operand broadcast) follows its complete
  input, which the layout pass resolves; ``align_mode`` still answers BOTH.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from tx8lab.core.attrs import AlignMode
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.ops.registry import Array, OpAttr, OpDef, _default_layout, f32


def broadcast_shape(kind: str, shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """numpy broadcast of ``shapes`` or a clear error naming ``kind``."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        from tx8lab.errors import Tx8labError

        raise Tx8labError(
            f"{kind}: operand shapes {' and '.join(str(s) for s in shapes)} do not broadcast"
        ) from None


def is_broadcast(op: Op) -> bool:
    """True when some operand is broadcast (a V_VS op in the seed's terms)."""
    if len(op.operands) < 2 or not op.results:
        return False
    out = op.results[0].type.shape
    return any(v.type.shape != out for v in op.operands)


class BinaryOp(OpDef):
    """A broadcasting binary op; subclasses set ``kind`` and ``fn``."""

    family = "elementwise"
    num_operands = 2

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        a, b = operands
        if a.dtype != b.dtype:
            raise self.fail(f"operand element types differ ({a.dtype} vs {b.dtype}); insert a Convert")
        return (TensorType(broadcast_shape(self.kind, [a.shape, b.shape]), a.dtype),)

    def op_attr(self, op: Op) -> OpAttr:
        return OpAttr(align_mode=AlignMode.BOTH, default_layout=_default_layout(op), mem_inplace=True)

    def fn(self, a: Array, b: Array) -> Array:
        raise NotImplementedError

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        a, b = (f32(x) for x in inputs)
        return (self.fn(a, b),)


class Add(BinaryOp):
    """Elementwise sum (V_VV_add / V_VS_add)."""

    kind: ClassVar[str] = "tx8be.Add"
    summary = "a + b"

    def fn(self, a: Array, b: Array) -> Array:
        return np.add(a, b)


class UnaryOp(OpDef):
    """An elementwise op of one operand; subclasses set ``fn``."""

    family = "activation"
    num_operands = 1

    def op_attr(self, op: Op) -> OpAttr:
        return OpAttr(align_mode=AlignMode.BOTH, default_layout=_default_layout(op), mem_inplace=True)

    def fn(self, op: Op, x: Array) -> Array:
        raise NotImplementedError

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (self.fn(op, f32(inputs[0])),)


class Relu(UnaryOp):
    """max(x, 0)."""

    kind: ClassVar[str] = "tx8be.Relu"
    summary = "max(x, 0)"

    def fn(self, op: Op, x: Array) -> Array:
        return np.maximum(x, 0)
