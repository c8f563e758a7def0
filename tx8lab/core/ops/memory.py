"""Ops that hold or move data: Constant, LoadConst, LoadVar, StoreVar (seed 001).

Readings chosen where the seed is vague:

- ``Constant`` keeps its data in the attribute ``value``: a numpy array, or a
  ``RandomInit`` generator (with the attributes ``shape`` and ``dtype``) for zoo weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from tx8lab.core.attrs import AlignMode, RandomInit
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.dtypes import from_numpy
from tx8lab.core.ops.registry import Array, AttrSpec, OpAttr, OpDef, _default_layout


class Constant(OpDef):
    """A constant tensor (seed ``tx8be::ConstantOp``)."""

    kind: ClassVar[str] = "tx8be.Constant"
    summary = "constant data"
    family = "memory"
    num_operands = 0
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "value": AttrSpec((np.ndarray, RandomInit), doc="numpy data or a RandomInit"),
        "shape": AttrSpec(tuple, None, "shape, for a RandomInit value"),
        "dtype": AttrSpec(str, None, "element type (f32, f16, bf16, tf32, i8, i32, i64, i1)"),
    }

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        value = attrs["value"]
        if isinstance(value, RandomInit):
            if attrs.get("shape") is None or attrs.get("dtype") is None:
                raise self.fail("a RandomInit value needs the attributes 'shape' and 'dtype'")
            return (TensorType(tuple(attrs["shape"]), attrs["dtype"]),)
        dtype = attrs.get("dtype") or from_numpy(value.dtype)
        return (TensorType(tuple(int(d) for d in value.shape), dtype),)

    def op_attr(self, op: Op) -> OpAttr:
        return OpAttr(align_mode=AlignMode.BOTH, default_layout=_default_layout(op))

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (constant_data(op),)


def constant_data(op: Op) -> Array:
    """The data of a Constant (or LoadConst-like op with a ``value``), materialised."""
    value = op.attrs["value"]
    ttype = op.results[0].type
    if isinstance(value, RandomInit):
        return value.materialize(ttype.shape, ttype.dtype)
    return np.asarray(value)
