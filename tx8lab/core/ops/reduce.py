"""Reductions over a set of axes: ReduceSum, ReduceMean, ReduceMax.

Spec: seed 000 ("ALIGN Only": Reduce) and docs/ops.md.

Readings chosen where the seed is vague:

- ``axes`` is required and non-empty, may hold negative axes, and must not repeat an axis.
- Float sums and means accumulate in float64 and round once to float32; integer sums are
  exact (int64), an integer mean truncates toward zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from tx8lab.core.ir import Op, TensorType
from tx8lab.core.ops.common import align_attr, int_tuple, norm_axis
from tx8lab.core.ops.registry import Array, AttrSpec, OpAttr, OpDef, f32


class _Reduce(OpDef):
    """Shared shape logic: reduce ``axes``, keep them as 1 when ``keepdims``."""

    family = "reduce"
    num_operands = 1
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "axes": AttrSpec(tuple, doc="axes to reduce (negative allowed)"),
        "keepdims": AttrSpec(bool, True, "keep reduced axes as size 1"),
    }

    def axes(self, rank: int, attrs: Mapping[str, Any]) -> tuple[int, ...]:
        """Checked non-negative, sorted axes."""
        raw = int_tuple(self, attrs, "axes")
        if not raw:
            raise self.fail("attribute 'axes' must not be empty")
        axes = tuple(norm_axis(self, a, rank, "axes entry") for a in raw)
        if len(set(axes)) != len(axes):
            raise self.fail(f"attribute 'axes' repeats an axis: {raw}")
        return tuple(sorted(axes))

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        axes = self.axes(x.rank, attrs)
        keep = bool(self.attr(attrs, "keepdims"))
        shape = (
            [1 if i in axes else d for i, d in enumerate(x.shape)]
            if keep
            else [d for i, d in enumerate(x.shape) if i not in axes]
        )
        return (x.with_shape(shape),)

    def op_attr(self, op: Op) -> OpAttr:
        return align_attr(op)

    def reduce(self, x: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
        """The numpy reduction."""
        raise NotImplementedError

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x = f32(inputs[0])
        axes = self.axes(x.ndim, op.attrs)
        return (np.asarray(self.reduce(x, axes, bool(self.attr(op, "keepdims")))),)


class ReduceSum(_Reduce):
    """Sum over ``axes``."""

    kind: ClassVar[str] = "tx8be.ReduceSum"
    summary = "sum over axes"

    def reduce(self, x: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
        if x.dtype.kind in "iub":
            return np.asarray(x.sum(axis=axes, keepdims=keepdims, dtype=np.int64))
        return np.asarray(x.sum(axis=axes, keepdims=keepdims, dtype=np.float64), np.float32)


class ReduceMean(_Reduce):
    """Mean over ``axes``."""

    kind: ClassVar[str] = "tx8be.ReduceMean"
    summary = "mean over axes"

    def reduce(self, x: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
        mean = x.mean(axis=axes, keepdims=keepdims, dtype=np.float64)
        if x.dtype.kind in "iub":
            return np.asarray(np.trunc(mean))
        return np.asarray(mean, np.float32)


class ReduceMax(_Reduce):
    """Maximum over ``axes``."""

    kind: ClassVar[str] = "tx8be.ReduceMax"
    summary = "max over axes"

    def reduce(self, x: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
        return np.asarray(x.max(axis=axes, keepdims=keepdims))
