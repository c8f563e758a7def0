"""Pooling of NHWC feature maps: MaxPool2d, AvgPool2d, GlobalAvgPool.

Spec: seed 000 ("ALIGN Only": Pool类) and docs/ops.md. Reference compute is a
``sliding_window_view`` reduction (no Python loop over pixels).

Readings chosen where the seed is vague:

- ``ceil_mode`` follows ONNX/PyTorch: the output grows by one when the last window would
  start inside the input or the left/top padding; the extra cells past the bottom/right
  padding are never counted.
- AvgPool2d divides by the cells of the window inside the input (``count_include_pad``
  false) or inside input plus explicit pads (true), as onnxruntime does.
- MaxPool2d pads with -inf (the smallest integer for integer types), so padding never wins.
- Slicing: MaxPool2d/AvgPool2d iterate over the output ``(N, OH, OW, C)``; a slice of OH/OW
  reads the input rows/columns its windows cover (the halo). GlobalAvgPool iterates over
  ``(N, 1, 1, C, H, W)``: H and W are its reduction dims (loop ``ic``, split in time with a
  partial sum), as for a Reduce op.
- Cost (CGRA operations per output point): KH*KW (a max or an add per window tap), plus 1
  for AvgPool2d's division; GlobalAvgPool one add per input element. On 16-bit data the
  average pools accumulate in fp32: 4 scratch bytes per output element.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from tx8lab.core.dtypes import bits_of
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.ops.common import align_attr, int_tuple, require_rank
from tx8lab.core.ops.conv import halo, window_out_size, windows
from tx8lab.core.ops.registry import (
    Array,
    AttrSpec,
    DimMap,
    IterDim,
    OpAttr,
    OpDef,
    SliceShape,
    Window,
    f32,
)


class _Pool2d(OpDef):
    """Shared shape logic of the windowed pools."""

    family = "pool"
    num_operands = 1
    c_param = "POOL_PARAM"
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "kernel": AttrSpec(tuple, doc="(kernel_h, kernel_w)"),
        "strides": AttrSpec(tuple, (1, 1), "(stride_h, stride_w)"),
        "pads": AttrSpec(tuple, (0, 0, 0, 0), "(top, left, bottom, right)"),
        "ceil_mode": AttrSpec(bool, False, "round the output size up"),
    }

    def codegen_fields(self, op: Op, slice_shape: SliceShape) -> dict[str, Any]:
        """Window, strides and pads."""
        return {
            "kernel": tuple(self.attr(op, "kernel")),
            "strides": tuple(self.attr(op, "strides")),
            "pads": tuple(self.attr(op, "pads")),
        }

    def geometry(
        self, x: TensorType, attrs: Mapping[str, Any]
    ) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int], tuple[int, int]]:
        """Checked (kernel, strides, pads, (OH, OW))."""
        require_rank(self, x, (4,), "x (NHWC)")
        kh, kw = int_tuple(self, attrs, "kernel", 2, 1)
        sh, sw = int_tuple(self, attrs, "strides", 2, 1)
        pads = int_tuple(self, attrs, "pads", 4, 0)
        pt, pl, pb, pr = pads
        if pt >= kh or pb >= kh or pl >= kw or pr >= kw:
            raise self.fail(f"pads {pads} must be smaller than the kernel {(kh, kw)}")
        ceil = bool(self.attr(attrs, "ceil_mode"))
        _, h, w, _ = x.shape
        oh = window_out_size(self, h, kh, sh, pt, pb, ceil_mode=ceil, dim="H")
        ow = window_out_size(self, w, kw, sw, pl, pr, ceil_mode=ceil, dim="W")
        return (kh, kw), (sh, sw), (pt, pl, pb, pr), (oh, ow)

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        *_, (oh, ow) = self.geometry(x, attrs)
        return (x.with_shape((x.shape[0], oh, ow, x.shape[3])),)

    def op_attr(self, op: Op) -> OpAttr:
        return align_attr(op)

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        return ((0, 1, 2, 3),)

    def operand_slice(self, op: Op, index: int, iteration: tuple[int, ...]) -> tuple[int, ...]:
        (kh, kw), (sh, sw), _, _ = self.geometry(op.operands[0].type, op.attrs)
        n, h, w, c = op.operands[0].type.shape
        sn, soh, sow, sc = iteration
        rows = min(h, (soh - 1) * sh + kh) if soh else 0
        cols = min(w, (sow - 1) * sw + kw) if sow else 0
        return (min(n, sn), rows, cols, min(c, sc))

    def operand_window(self, op: Op, index: int, iteration: Window) -> Window:
        """The input rows and columns the output box's windows cover (clipped to the input)."""
        (kh, kw), (sh, sw), (pt, pl, _, _), _ = self.geometry(op.operands[0].type, op.attrs)
        _, h, w, _ = op.operands[0].type.shape
        bn, boh, bow, bc = iteration
        return (bn, halo(boh, sh, kh, 1, pt, h), halo(bow, sw, kw, 1, pl, w), bc)

    def vector_ops_per_element(self, op: Op) -> float:
        (kh, kw), *_ = self.geometry(op.operands[0].type, op.attrs)
        return float(kh * kw + (1 if self.kind == "tx8be.AvgPool2d" else 0))

    def imm_bytes(self, op: Op, slice_shape: SliceShape) -> int:
        if self.kind == "tx8be.AvgPool2d" and bits_of(self.compute_dtype(op)) <= 16:
            return 4 * slice_shape.points
        return 0

    def padded(self, op: Op, x: Array, fill: Any) -> tuple[Array, Array]:
        """(x padded to cover every window incl. the ceil overhang, window view)."""
        kernel, strides, (pt, pl, pb, pr), (oh, ow) = self.geometry(op.operands[0].type, op.attrs)
        _, h, w, _ = x.shape
        extra_h = max(0, (oh - 1) * strides[0] + kernel[0] - (h + pt + pb))
        extra_w = max(0, (ow - 1) * strides[1] + kernel[1] - (w + pl + pr))
        xp = np.pad(
            x, ((0, 0), (pt, pb + extra_h), (pl, pr + extra_w), (0, 0)), constant_values=fill
        )
        return xp, windows(xp, kernel, strides, (1, 1), (oh, ow))


class MaxPool2d(_Pool2d):
    """Max over KHxKW windows of an NHWC map."""

    kind: ClassVar[str] = "tx8be.MaxPool2d"
    summary = "windowed max"

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x = f32(inputs[0])
        if x.dtype.kind == "f":
            fill: Any = -np.inf
        elif x.dtype == np.bool_:
            fill = False
        else:
            fill = np.iinfo(x.dtype).min
        _, win = self.padded(op, x, fill)
        return (win.max(axis=(-2, -1)),)


class AvgPool2d(_Pool2d):
    """Mean over KHxKW windows of an NHWC map."""

    kind: ClassVar[str] = "tx8be.AvgPool2d"
    summary = "windowed mean"
    attrs: ClassVar[dict[str, AttrSpec]] = {
        **_Pool2d.attrs,
        "count_include_pad": AttrSpec(bool, False, "divide by the window size incl. pads"),
    }

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x = f32(inputs[0])
        integer = x.dtype.kind in "iub"
        work = x.astype(np.float64) if integer else x
        xp, win = self.padded(op, work, 0)
        total = win.sum(axis=(-2, -1))
        # cells counted per window: a mask padded like x, reduced by the same windows
        kernel, strides, (pt, pl, pb, pr), (oh, ow) = self.geometry(op.operands[0].type, op.attrs)
        _, h, w, _ = x.shape
        if self.attr(op, "count_include_pad"):
            mask = np.zeros((1, xp.shape[1], xp.shape[2], 1), dtype=np.float64)
            mask[:, : h + pt + pb, : w + pl + pr] = 1.0
        else:
            mask = np.zeros((1, xp.shape[1], xp.shape[2], 1), dtype=np.float64)
            mask[:, pt : pt + h, pl : pl + w] = 1.0
        counts = windows(mask, kernel, strides, (1, 1), (oh, ow)).sum(axis=(-2, -1))
        out = total / counts.astype(total.dtype)
        return (np.trunc(out) if integer else out,)


class GlobalAvgPool(OpDef):
    """Mean over H and W of an NHWC map -> [N, 1, 1, C]."""

    kind: ClassVar[str] = "tx8be.GlobalAvgPool"
    summary = "mean over H, W"
    family = "pool"
    num_operands = 1
    c_param = "POOL_PARAM"

    def codegen_fields(self, op: Op, slice_shape: SliceShape) -> dict[str, Any]:
        """The window is the whole H x W of the NHWC input."""
        h, w = op.operands[0].type.shape[1:3]
        return {"kernel": (h, w), "strides": (1, 1), "pads": (0, 0, 0, 0)}

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        require_rank(self, x, (4,), "x (NHWC)")
        return (x.with_shape((x.shape[0], 1, 1, x.shape[3])),)

    def op_attr(self, op: Op) -> OpAttr:
        return align_attr(op)

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        n, h, w, c = op.operands[0].type.shape
        return (
            IterDim("N", n),
            IterDim("d1", 1),
            IterDim("d2", 1),
            IterDim("C", c, "oc"),
            IterDim("H", h, "ic", shardable=False),
            IterDim("W", w, "ic", shardable=False),
        )

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        return ((0, 4, 5, 3),)

    def imm_bytes(self, op: Op, slice_shape: SliceShape) -> int:
        # an fp32 accumulator per output element for 8/16-bit data
        if bits_of(self.compute_dtype(op)) <= 16:
            return 4 * slice_shape.results[0][0] * slice_shape.results[0][3]
        return 0

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x = f32(inputs[0])
        if x.dtype.kind in "iub":
            return (np.trunc(x.astype(np.float64).mean(axis=(1, 2), keepdims=True)),)
        return (x.mean(axis=(1, 2), keepdims=True, dtype=np.float64).astype(np.float32),)
