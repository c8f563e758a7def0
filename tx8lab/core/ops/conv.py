"""Conv2d: 2-D convolution of NHWC feature maps with OHWI weights, on the NE.

Spec: seed 000 ("ALIGN Only": Conv类), seed 001 (Cx layouts pack C innermost; NE engine)
and docs/ops.md. Reference compute is im2col (``sliding_window_view``) plus one matmul,
batched over groups; depthwise convolutions accumulate one kernel tap at a time.

Readings chosen where the seed is vague:

- ``pads = (top, left, bottom, right)``, output size ``(H + pt + pb - eff) // s + 1``
  with ``eff = (k - 1) * d + 1`` (ONNX, floor).
- x, w and bias have the same element type; integers accumulate exactly in int64.
- ``needPresetToNPU`` stays false: the seeds set it only for BatchNorm_Inference.
- ``layout_str`` (seed 001 layoutInitPass) is ``NHWC-OHWI-NHWC``, with the bias's
  ``Tensor`` before the output when there is one: the seed's example weight layouts are
  OIHW/HWOI, and this library's weight is ``[Cout, KH, KW, Cin/group]``, i.e. OHWI.
- Iteration dims: ``(N, OH, OW, OC, IC)`` with IC = Cin/group the reduction (loop ``ic``,
  not shardable; an ordinary conv's may be cut across tiles with a NoC reduction,
  ``noc_reduce``). A slice of OH/OW reads the input rows/columns its windows cover
  (``(oh - 1) * stride + dilated kernel``, the halo, clipped to the input); the input's C
  follows IC for an ordinary conv, OC (divided by the channel multiplier) for a depthwise
  one, and is taken whole for other grouped convs.
- Cost: an implicit GEMM on the NE, ``M = N*OH*OW``, ``K = KH*KW*IC``, ``N = OC`` per group,
  one product per group in the slice (a depthwise conv is ``OC`` products with N = 1, so
  the 8x16x8 granule wastes most of the array, as it does on the chip).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tx8lab.core.ir import Op, TensorType
from tx8lab.core.layout_str import NHWC, OHWI, join_layout, tensor_layout
from tx8lab.core.ops.common import NE, align_attr, int_tuple, same_dtype
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


def halo(
    out: tuple[int, int], stride: int, kernel: int, dilation: int, pad_lo: int, size: int
) -> tuple[int, int]:
    """Input rows ``[start, stop)`` that output rows ``out`` read, clipped to ``[0, size)``.

    Examples:
        >>> halo((0, 4), 1, 3, 1, 1, 8), halo((4, 8), 1, 3, 1, 1, 8), halo((2, 3), 2, 3, 1, 0, 7)
        ((0, 5), (3, 8), (4, 7))
    """
    if out[1] <= out[0]:
        start = min(size, max(0, out[0] * stride - pad_lo))
        return (start, start)
    start = out[0] * stride - pad_lo
    stop = (out[1] - 1) * stride + (kernel - 1) * dilation + 1 - pad_lo
    return (min(size, max(0, start)), min(size, max(0, stop)))


def window_out_size(
    opdef: OpDef,
    size: int,
    kernel: int,
    stride: int,
    pad_lo: int,
    pad_hi: int,
    dilation: int = 1,
    ceil_mode: bool = False,
    dim: str = "H",
) -> int:
    """Output length of a sliding window along one axis, or an error naming the op."""
    eff = (kernel - 1) * dilation + 1
    padded = size + pad_lo + pad_hi
    if eff > padded:
        raise opdef.fail(
            f"kernel {kernel} (dilated extent {eff}) is larger than the padded input "
            f"{dim} = {size} + {pad_lo} + {pad_hi} = {padded}"
        )
    if ceil_mode:
        out = -(-(padded - eff) // stride) + 1
        # ONNX/PyTorch: the last window must start inside the input or the left padding
        if (out - 1) * stride >= size + pad_lo:
            out -= 1
    else:
        out = (padded - eff) // stride + 1
    return out


def windows(
    x: Array,
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    out_hw: tuple[int, int],
) -> Array:
    """View [N, OH, OW, C, KH, KW] of the (already padded) NHWC ``x``; no copy."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, strides, dilations, out_hw
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    view = sliding_window_view(x, (eh, ew), axis=(1, 2))
    return view[:, : (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, :, ::dh, ::dw]


def conv2d_nhwc(
    x: Array,
    w: Array,
    bias: Array | None,
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
    dilations: tuple[int, int],
    group: int,
) -> Array:
    """Reference grouped 2-D convolution: x NHWC, w OHWI ``[Cout, KH, KW, Cin/group]``."""
    n, h, wd, c = x.shape
    cout, kh, kw, cg = w.shape
    pt, pl, pb, pr = pads
    sh, sw = strides
    dh, dw = dilations
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (wd + pl + pr - (kw - 1) * dw - 1) // sw + 1
    if x.dtype.kind in "iub":
        x, w = x.astype(np.int64), w.astype(np.int64)
    if any(pads):
        x = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    og = cout // group
    rows = n * oh * ow
    out: Array
    if kh == kw == 1:
        cols = x[:, : (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, :]
        win = cols.reshape(n, oh, ow, c, 1, 1)
    else:
        win = windows(x, (kh, kw), strides, dilations, (oh, ow))
    if group == 1:
        if kh == kw == 1:
            patches = np.ascontiguousarray(win).reshape(rows, c)
        else:
            patches = win.transpose(0, 1, 2, 4, 5, 3).reshape(rows, kh * kw * c)
        out = patches @ w.reshape(cout, kh * kw * cg).T
    elif cg == 1:
        # depthwise (channel multiplier og): one tap at a time, no Python loop over pixels
        w4 = w.reshape(group, og, kh, kw)
        acc = np.zeros((n, oh, ow, group, og), dtype=x.dtype)
        for i in range(kh):
            for j in range(kw):
                acc += win[..., i, j][..., None] * w4[:, :, i, j]
        out = acc.reshape(rows, cout)
    else:
        win_g = win.reshape(n, oh, ow, group, cg, kh, kw)
        gpatches = win_g.transpose(3, 0, 1, 2, 5, 6, 4).reshape(group, rows, kh * kw * cg)
        wg = w.reshape(group, og, kh * kw * cg).transpose(0, 2, 1)
        out = np.matmul(gpatches, wg).transpose(1, 0, 2).reshape(rows, cout)
    out = out.reshape(n, oh, ow, cout)
    if bias is not None:
        out = out + bias.reshape(cout)
    return out


class Conv2d(OpDef):
    """2-D convolution, NHWC input, OHWI weight, optional bias; grouped and dilated."""

    kind: ClassVar[str] = "tx8be.Conv2d"
    summary = "conv2d(x, w) + bias"
    family = "conv"
    num_operands = (2, 3)
    c_param = "CONV2D_PARAM"

    def codegen_fields(self, op: Op, slice_shape: SliceShape) -> dict[str, Any]:
        """Window, strides, pads, dilations and groups (the OHWI weight gives the window)."""
        return {
            "kernel": tuple(op.operands[1].type.shape[1:3]),
            "strides": tuple(self.attr(op, "strides")),
            "pads": tuple(self.attr(op, "pads")),
            "dilations": tuple(self.attr(op, "dilations")),
            "group": int(self.attr(op, "group")),
        }

    attrs: ClassVar[dict[str, AttrSpec]] = {
        "strides": AttrSpec(tuple, (1, 1), "(stride_h, stride_w)"),
        "pads": AttrSpec(tuple, (0, 0, 0, 0), "(top, left, bottom, right)"),
        "dilations": AttrSpec(tuple, (1, 1), "(dilation_h, dilation_w)"),
        "group": AttrSpec(int, 1, "number of channel groups"),
    }

    def params(
        self, attrs: Mapping[str, Any]
    ) -> tuple[tuple[int, int], tuple[int, int, int, int], tuple[int, int], int]:
        """Checked (strides, pads, dilations, group)."""
        sh, sw = int_tuple(self, attrs, "strides", 2, 1)
        pt, pl, pb, pr = int_tuple(self, attrs, "pads", 4, 0)
        dh, dw = int_tuple(self, attrs, "dilations", 2, 1)
        group = int(self.attr(attrs, "group"))
        if group < 1:
            raise self.fail(f"attribute 'group' must be >= 1, got {group}")
        return (sh, sw), (pt, pl, pb, pr), (dh, dw), group

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x, w = operands[0], operands[1]
        same_dtype(self, operands, ("x", "w", "bias"))
        if x.rank != 4:
            raise self.fail(f"x must be NHWC (rank 4), got {x}")
        if w.rank != 4:
            raise self.fail(f"w must be OHWI (rank 4), got {w}")
        strides, pads, dilations, group = self.params(attrs)
        n, h, wd, c = x.shape
        cout, kh, kw, cg = w.shape
        if c % group:
            raise self.fail(f"group {group} does not divide the input channels {c}")
        if cout % group:
            raise self.fail(f"group {group} does not divide the output channels {cout}")
        if cg != c // group:
            raise self.fail(
                f"w has {cg} input channels per group, x gives {c} / {group} = {c // group}"
            )
        if len(operands) == 3 and operands[2].shape != (cout,):
            raise self.fail(f"bias must be [{cout}], got {operands[2]}")
        oh = window_out_size(self, h, kh, strides[0], pads[0], pads[2], dilations[0], dim="H")
        ow = window_out_size(self, wd, kw, strides[1], pads[1], pads[3], dilations[1], dim="W")
        return (TensorType((n, oh, ow, cout), x.dtype),)

    def op_attr(self, op: Op) -> OpAttr:
        return align_attr(op, engine=NE)

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        n, oh, ow, oc = op.results[0].type.shape
        cg = op.operands[1].type.shape[3]
        return (
            IterDim("N", n),
            IterDim("OH", oh),
            IterDim("OW", ow),
            IterDim("OC", oc, "oc"),
            IterDim("IC", cg, "ic", shardable=False, noc_reduce=int(self.attr(op, "group")) == 1),
        )

    def _channel_map(self, op: Op) -> int | None:
        group = int(self.attr(op, "group"))
        if group == 1:
            return 4
        return 3 if op.operands[1].type.shape[3] == 1 else None

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        maps: list[DimMap] = [(0, 1, 2, self._channel_map(op)), (3, None, None, 4)]
        if len(op.operands) == 3:
            maps.append((3,))
        return tuple(maps)

    def result_dims(self, op: Op) -> tuple[DimMap, ...]:
        return ((0, 1, 2, 3),)

    def operand_slice(self, op: Op, index: int, iteration: tuple[int, ...]) -> tuple[int, ...]:
        if index != 0:
            return super().operand_slice(op, index, iteration)
        (sh, sw), _, (dh, dw), group = self.params(op.attrs)
        n, h, w, c = op.operands[0].type.shape
        _, kh, kw, cg = op.operands[1].type.shape
        sn, soh, sow, soc, sic = iteration
        rows = min(h, (soh - 1) * sh + (kh - 1) * dh + 1) if soh else 0
        cols = min(w, (sow - 1) * sw + (kw - 1) * dw + 1) if sow else 0
        if group == 1:
            channels = sic
        elif cg == 1:
            multiplier = op.results[0].type.shape[3] // group
            channels = min(c, -(-soc // multiplier))
        else:
            channels = c
        return (min(n, sn), rows, cols, channels)

    def operand_window(self, op: Op, index: int, iteration: Window) -> Window:
        """The input rows and columns the output box's windows cover.

        The halo is clipped to the input (padding is not data); channels as
        :meth:`operand_slice` counts them.
        """
        if index != 0:
            return super().operand_window(op, index, iteration)
        (sh, sw), (pt, pl, _, _), (dh, dw), group = self.params(op.attrs)
        _, h, w, c = op.operands[0].type.shape
        _, kh, kw, cg = op.operands[1].type.shape
        bn, boh, bow, boc, bic = iteration
        rows = halo(boh, sh, kh, dh, pt, h)
        cols = halo(bow, sw, kw, dw, pl, w)
        if group == 1:
            channels = bic
        elif cg == 1:
            multiplier = op.results[0].type.shape[3] // group
            channels = (boc[0] // multiplier, min(c, -(-boc[1] // multiplier)))
        else:
            channels = (0, c)
        return (bn, rows, cols, channels)

    def ne_shape(self, op: Op, slice_shape: SliceShape) -> tuple[int, int, int, int]:
        n, oh, ow, oc, ic = slice_shape.iteration
        _, kh, kw, _ = op.operands[1].type.shape
        group = int(self.attr(op, "group"))
        per_group = op.results[0].type.shape[3] // group
        groups = -(-oc // per_group) if group > 1 else 1
        return groups, n * oh * ow, kh * kw * ic, min(oc, per_group) if group > 1 else oc

    def init_layout(self, op: Op) -> str | None:
        # seed 001 layoutInitPass: feature layout, weight layout (here OHWI), [bias], output
        bias = [tensor_layout(v.type.shape) for v in op.operands[2:]]
        return join_layout([NHWC, OHWI, *bias, NHWC])

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        strides, pads, dilations, group = self.params(op.attrs)
        x, w = f32(inputs[0]), f32(inputs[1])
        bias = f32(inputs[2]) if len(inputs) == 3 else None
        return (conv2d_nhwc(x, w, bias, strides, pads, dilations, group),)
