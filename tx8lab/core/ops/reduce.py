"""Reductions over a set of axes: ReduceSum, ReduceMean, ReduceMax.

Spec: seed 000 ("ALIGN Only": Reduce) and docs/ops.md.

Readings chosen where the seed is vague:

- ``axes`` is required and non-empty, may hold negative axes, and must not repeat an axis.
- Float sums and means accumulate in float64 and round once to float32; integer sums are
  exact (int64), an integer mean truncates toward zero.
- Layout inference: with ``keepdims`` the dims keep their meaning (NHWC stays NHWC);
  without it a ``Tensor``-family layout is re-derived from the result's shape and a
  dimension-named one (NHWC) cannot be carried. Backward, only ``keepdims`` carries: the
  operand of a rank-dropping reduce may well be an NHWC map.
- Iteration dims: the result's dims, then one reduction dim per reduced axis (loop ``ic``,
  not shardable; splitting one in time accumulates a partial sum). Cost: one CGRA
  operation per input element; on 8/16-bit data an fp32 accumulator per output element
  as scratch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from tx8lab.core.dtypes import bits_of
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.layout_str import TENSOR_FAMILY, carry_layout
from tx8lab.core.ops.common import align_attr, int_tuple, norm_axis
from tx8lab.core.ops.registry import (
    Array,
    AttrSpec,
    DimMap,
    IterDim,
    OpAttr,
    OpDef,
    SliceShape,
    carry_backward,
    carry_forward,
    f32,
)
from tx8lab.core.ops.views import AlignedView, group_axes, needs_view, new_axis, view_shape


class _Reduce(OpDef):
    """Shared shape logic: reduce ``axes``, keep them as 1 when ``keepdims``."""

    family = "reduce"
    num_operands = 1
    c_param = "REDUCE_PARAM"
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "axes": AttrSpec(tuple, doc="axes to reduce (negative allowed)"),
        "keepdims": AttrSpec(bool, True, "keep reduced axes as size 1"),
    }

    def codegen_fields(self, op: Op, slice_shape: SliceShape) -> dict[str, Any]:
        """The reduced axes (made non-negative) and ``keepdims``."""
        rank = op.operands[0].type.rank
        axes = tuple(sorted(norm_axis(self, a, rank) for a in self.attr(op, "axes")))
        return {"axes": axes, "num_axes": len(axes), "keepdims": bool(self.attr(op, "keepdims"))}

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

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        x = op.operands[0].type
        reduced = tuple(
            IterDim(f"R{a}", x.shape[a], "ic", shardable=False) for a in self.axes(x.rank, op.attrs)
        )
        return (*super().iter_dims(op), *reduced)

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        x = op.operands[0].type
        axes = self.axes(x.rank, op.attrs)
        keep = bool(self.attr(op, "keepdims"))
        out_rank = op.results[0].type.rank
        kept = [a for a in range(x.rank) if a not in axes]
        return (
            tuple(
                out_rank + axes.index(a) if a in axes else (a if keep else kept.index(a))
                for a in range(x.rank)
            ),
        )

    def imm_bytes(self, op: Op, slice_shape: SliceShape) -> int:
        if bits_of(self.compute_dtype(op)) <= 16:
            return 4 * math.prod(slice_shape.results[0])
        return 0

    def infer_layout(self, op: Op, operand_layouts: Sequence[str | None]) -> str | None:
        if self.attr(op, "keepdims"):
            return carry_forward(op, operand_layouts)
        # dropped axes: a Tensor-family layout is re-derived, named dims lose their meaning
        layout = operand_layouts[0]
        if layout in TENSOR_FAMILY:
            return carry_layout(layout, op.results[0].type.shape)
        return None

    def infer_operand_layouts(
        self, op: Op, result_layouts: Sequence[str | None]
    ) -> list[str | None]:
        if self.attr(op, "keepdims"):
            return carry_backward(op, result_layouts)
        return [None]

    def reduce(self, x: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
        """The numpy reduction."""
        raise NotImplementedError

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x = f32(inputs[0])
        axes = self.axes(x.ndim, op.attrs)
        return (np.asarray(self.reduce(x, axes, bool(self.attr(op, "keepdims")))),)

    def aligned_view(self, op: Op) -> AlignedView | None:
        # keepdims (the result has the view's rank); reduced dims merge with reduced ones,
        # kept with kept
        x = op.operands[0].type.shape
        if not needs_view([len(x)], [op.results[0].type.rank]):
            return None
        reduced = set(self.axes(len(x), op.attrs))
        groups = group_axes(
            x,
            lambda left, right: len({a in reduced for a in left + right}) == 1,
            lambda a: a not in reduced,
        )
        if groups is None:
            return None
        axes = tuple(sorted({new_axis(groups, a) for a in reduced}))
        return AlignedView((view_shape(x, groups),), {"axes": axes, "keepdims": True})


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

    psum_combine = "max"

    kind: ClassVar[str] = "tx8be.ReduceMax"
    summary = "max over axes"

    def reduce(self, x: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
        return np.asarray(x.max(axis=axes, keepdims=keepdims))
