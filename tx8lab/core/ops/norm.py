"""Normalisations: Softmax, LayerNorm, RMSNorm and BatchNorm_Inference.

Spec: seed 001 ("Operations": the BatchNorm_InferenceOp definition, its formula and its
``queryOpAttr``: NPU_ALIGN, needPresetToNPU, defaultLayout Tensor/NTensor by batch) and
docs/ops.md.

Readings chosen where the seed is vague:

- BatchNorm_Inference normalises the last (C) dimension of an NHWC input of rank 2-4
  (seed: "维度为 2/3/4"); its four parameters are f32, shaped [C] or 1x..x1xC (seed:
  "其他输入的格式为 fp32"). ``y = scale * (x - mean) / sqrt(variance + epsilon) + offset``.
- LayerNorm and RMSNorm normalise over ``axis`` .. last dimension (ONNX
  LayerNormalization); gamma/beta broadcast to those trailing dimensions and have x's type.
- Softmax, LayerNorm and RMSNorm are BOTH (docs/ops.md); all compute in float64 and round
  once to float32, max-subtracted softmax and two-pass variance for stability.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from tx8lab.core.attrs import AlignMode
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.ops.common import both_attr, norm_axis, require_float, same_dtype
from tx8lab.core.ops.registry import Array, AttrSpec, OpAttr, OpDef, _default_layout


class Softmax(OpDef):
    """exp(x - max) / sum(exp(x - max)) along ``axis``."""

    kind: ClassVar[str] = "tx8be.Softmax"
    summary = "softmax along axis"
    family = "norm"
    num_operands = 1
    attrs: ClassVar[dict[str, AttrSpec]] = {"axis": AttrSpec(int, -1, "softmax axis")}

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        require_float(self, x, "x")
        if x.rank == 0:
            raise self.fail("x must have rank >= 1")
        norm_axis(self, self.attr(attrs, "axis"), x.rank)
        return (x,)

    def op_attr(self, op: Op) -> OpAttr:
        return both_attr(op)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x = inputs[0].astype(np.float64)
        axis = norm_axis(self, self.attr(op, "axis"), x.ndim)
        shifted = x - x.max(axis=axis, keepdims=True)
        e = np.exp(shifted)
        return ((e / e.sum(axis=axis, keepdims=True)).astype(np.float32),)


def _check_affine(
    opdef: OpDef, x: TensorType, params: Sequence[TensorType], names: Sequence[str], axis: int
) -> None:
    norm_shape = x.shape[axis:]
    for ttype, name in zip(params, names, strict=True):
        try:
            ok = tuple(np.broadcast_shapes(ttype.shape, norm_shape)) == norm_shape
        except ValueError:
            ok = False
        if not ok or ttype.rank > len(norm_shape):
            raise opdef.fail(
                f"{name} {ttype} does not broadcast to the normalised shape {norm_shape}"
            )


class LayerNorm(OpDef):
    """(x - mean) / sqrt(var + eps) * gamma + beta over axis..last."""

    kind: ClassVar[str] = "tx8be.LayerNorm"
    summary = "layer normalisation"
    family = "norm"
    num_operands = 3
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "axis": AttrSpec(int, -1, "first normalised axis (normalise axis..end)"),
        "epsilon": AttrSpec(float, 1e-5, "added to the variance"),
    }

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        require_float(self, x, "x")
        same_dtype(self, operands, ("x", "gamma", "beta"))
        if x.rank == 0:
            raise self.fail("x must have rank >= 1")
        axis = norm_axis(self, self.attr(attrs, "axis"), x.rank)
        _check_affine(self, x, operands[1:], ("gamma", "beta"), axis)
        return (x,)

    def op_attr(self, op: Op) -> OpAttr:
        return both_attr(op)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x, gamma, beta = (a.astype(np.float64) for a in inputs)
        axis = norm_axis(self, self.attr(op, "axis"), x.ndim)
        axes = tuple(range(axis, x.ndim))
        mean = x.mean(axis=axes, keepdims=True)
        centred = x - mean
        var = (centred * centred).mean(axis=axes, keepdims=True)
        out = centred / np.sqrt(var + float(self.attr(op, "epsilon"))) * gamma + beta
        return (out.astype(np.float32),)


class RMSNorm(OpDef):
    """x / sqrt(mean(x^2) + eps) * gamma over axis..last."""

    kind: ClassVar[str] = "tx8be.RMSNorm"
    summary = "RMS normalisation"
    family = "norm"
    num_operands = 2
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "axis": AttrSpec(int, -1, "first normalised axis (normalise axis..end)"),
        "epsilon": AttrSpec(float, 1e-6, "added to the mean square"),
    }

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        require_float(self, x, "x")
        same_dtype(self, operands, ("x", "gamma"))
        if x.rank == 0:
            raise self.fail("x must have rank >= 1")
        axis = norm_axis(self, self.attr(attrs, "axis"), x.rank)
        _check_affine(self, x, operands[1:], ("gamma",), axis)
        return (x,)

    def op_attr(self, op: Op) -> OpAttr:
        return both_attr(op)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x, gamma = (a.astype(np.float64) for a in inputs)
        axis = norm_axis(self, self.attr(op, "axis"), x.ndim)
        axes = tuple(range(axis, x.ndim))
        ms = (x * x).mean(axis=axes, keepdims=True)
        out = x / np.sqrt(ms + float(self.attr(op, "epsilon"))) * gamma
        return (out.astype(np.float32),)


class BatchNorm_Inference(OpDef):
    """Inference batch norm over the channel (last) dimension (seed 001)."""

    kind: ClassVar[str] = "tx8be.BatchNorm_Inference"
    summary = "scale * (x - mean) / sqrt(var + eps) + offset"
    family = "norm"
    num_operands = 5
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "epsilon": AttrSpec(float, 1e-6, "added to the variance (seed 001 step 4)"),
    }
    _PARAMS = ("scale", "offset", "mean", "variance")

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        require_float(self, x, "input")
        if x.rank not in (2, 3, 4):
            raise self.fail(f"input must have rank 2, 3 or 4 (seed 001), got {x}")
        c = x.shape[-1]
        for ttype, name in zip(operands[1:], self._PARAMS, strict=True):
            if ttype.dtype != "f32":
                raise self.fail(f"{name} must be f32 (seed 001), got {ttype}")
            shape = ttype.shape
            if (
                not shape
                or shape[-1] != c
                or any(d != 1 for d in shape[:-1])
                or (len(shape) > x.rank)
            ):
                raise self.fail(f"{name} must be [{c}] or 1x..x1x{c}, got {ttype}")
        return (x,)

    def op_attr(self, op: Op) -> OpAttr:
        # seed 001 queryOpAttr, verbatim
        return OpAttr(
            align_mode=AlignMode.ALIGN,
            need_preset_to_npu=True,
            default_layout=_default_layout(op),
        )

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x = inputs[0].astype(np.float64)
        c = x.shape[-1]
        scale, offset, mean, var = (a.astype(np.float64).reshape(c) for a in inputs[1:])
        eps = float(self.attr(op, "epsilon"))
        factor = scale / np.sqrt(var + eps)
        return (((x - mean) * factor + offset).astype(np.float32),)
