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
- Slicing (seed ``temporalSliceShape``): BatchNorm_Inference follows the seed's choice, the
  input sharded only on C and split in time only on N, H, W, its 1x1x1xC parameters
  following the C shard and never split. The normalised dims of Softmax (its axis),
  LayerNorm and RMSNorm (``axis`` .. last) cannot be cut at all: a slice holds whole rows.
- ``tileShardingSplit`` is the seed's code line for line: the input keeps the output's
  factors, its sharding is cleared (the candidate rejected) when any dim but C is sharded
  and its split cleared when C is split; scale/offset/mean/variance (in operand order)
  take the input's sharding (empty when it was cleared) and a split of all ones. A
  parameter of lower rank than the input (``[C]``) gets the trailing entries of those
  vectors (right-aligned, as it broadcasts). Factor vectors whose length is not the
  output's rank raise (the seed's ASSERT).
- Cost (CGRA operations per element, assumptions): Softmax 12 (max, subtract, exp 8, sum,
  scale), LayerNorm 7 (mean, subtract, square, sum, scale by the rsqrt, gamma, beta),
  RMSNorm 4. BatchNorm_Inference is costed instruction by instruction instead, as the
  seed's kernel issues them (below).
- **BatchNorm_Inference cost** (seed ``getOpClockCycle``): seed 001 "BatchNorm Design"
  lists the kernel's ten steps and its addVS example adds up each instruction's
  ``TsmExecute`` cycles (``cycle_total = ADD_VALID_CYCLE(cycle_total, cycle_single)``), so
  the op's time is the sum of its instructions' engine laws (``tx8lab.hw.laws``), step by
  step in the seed's order (:func:`batchnorm_steps`, :meth:`BatchNorm_Inference.steps`):
  1 ``op_gatherScatter`` (TDMA) of the compact 16-bit elements into 32-bit slots, 2
  ``convert_fp16_fp32``, 3 ``VuV_sub`` (x - mean), 4 ``addVS`` (var + epsilon), 5
  ``rsqrt``, 6-7 ``VuV_mul`` (by rsqrt(var), by scale), 8 ``VuV_add`` (shift), 9
  ``convert_fp32_fp16``, 10 ``op_gatherScatter`` (TDMA) back. The CGRA steps work on fp32
  slots ("类型转换成 fp32" before them, "fp32 转回" after), so they run at the CT law's
  fp32 rate and lanes (vendor: 32 GOPS, 32 lanes, against 64 for 16-bit types; board
  ``micro.csv`` "vector (CT) peak per tile"), a conversion too (its wider side). Counts
  are those of the kernel walkthrough (``tx8lab.kernels.batchnorm``), which issues the
  same instructions: a GatherScatter is one command of one 2-byte inner transfer per
  element (consecutive elements are adjacent in the compact image but 4 bytes apart in
  the slots), timed by the TDMA law (one command, as the seed issues it; a compiler that
  splits at the board's 16,384 inner transfers adds the law's fixed cost per extra
  command); a conversion is one command over every fp32 slot
  of the slice's Cx/NCx image (batch padding included); a VuV step is, per batch, one
  ``VuV_*_loop`` over the full 64-channel blocks (``blocks x HW x 64`` elements) and one
  ``VuV_*`` over the padded tail (``HW x C0pad``); addVS and rsqrt are one command over
  the C variances. Vector work per element is the op library's for the same operation
  (Sub, Mul, Add 1, Rsqrt 3, Convert 1). Each command is rounded to whole cycles as the
  simulator plays it. fp32 inputs skip steps 1, 2, 9 and 10 (step 8 writes ``out``);
  tf32 keeps step 9 (``convert_fp32_tf32``) and skips 1, 2 and 10, as the walkthrough.
  The op is one task on the CT slot of a schedule (its OpAttr engine) and its time
  includes the two TDMA steps: every step reads what the one before wrote (step 2
  converts what step 1 scattered, step 10 gathers what step 9 converted), so inside one
  call the TDMA and CT steps never overlap. The kernel core issues the op once (the
  simulator's and the plan's issue cost); the issue gaps between the op's own commands
  are the walkthrough's to show (its ``timing``), the seed's cycle sum leaves them out.
- Scratch (seed ``getImmSpSize``): BatchNorm_Inference takes ``2 x sizeof(input slice)``, the
  seed's op_batchnorm_inference ``imm``, sizeof being the slice's Cx/NCx image (the op is
  NPU_ALIGN; the compact size would not hold the fp32 NCx copy the kernel makes);
  Softmax, LayerNorm and RMSNorm an fp32 copy of the slice (4 bytes per element) plus two
  fp32 statistics per row.
- **BatchNorm_Inference overwrites its variance** (operand 4): seed 001 "BatchNorm Design"
  step 4 is ``addVS`` with ``varAddr`` as vector and result address (``var += epsilon``,
  fp32, ``RND_NEAREST_EVEN``) and step 5 ``rsqrt`` of it in place, so after the op the
  variance buffer holds ``rsqrt(var + epsilon)`` (:meth:`BatchNorm_Inference.clobbered_value`:
  the fp32 addition, then :func:`rsqrt_f32`, as ``tx8lab.kernels.batchnorm`` runs the two
  steps, rounded to the variance's type, f32). Steps 3, 7 and 8 only read mean, scale and
  shift (their results go to ``imm_a``), so those are not overwritten; the seed's main.c
  reloads all four anyway, the scheduler reloads only the variance. LayerNorm, RMSNorm and
  Softmax keep their statistics in their own ``imm`` and overwrite no operand (no seed
  shows their kernels).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tx8lab.core.attrs import AlignMode
from tx8lab.core.dtypes import FLOAT_DTYPES, bits_of, round_to
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.layouts import aligned_view, geometry, layout_for
from tx8lab.core.ops.activation import Rsqrt
from tx8lab.core.ops.common import both_attr, norm_axis, require_float, same_dtype
from tx8lab.core.ops.data import Convert
from tx8lab.core.ops.elementwise import Add, Mul, Sub
from tx8lab.core.ops.registry import (
    Array,
    AttrSpec,
    IterDim,
    OpAttr,
    OpDef,
    ShardingSplitParam,
    SliceShape,
    _default_layout,
    value_bytes,
)
from tx8lab.core.ops.views import AlignedView, needs_view
from tx8lab.errors import Tx8labError
from tx8lab.hw import cost as hwcost
from tx8lab.hw import laws as hwlaws
from tx8lab.hw.config import ChipConfig


def rsqrt_f32(values: Array) -> Array:
    """``1 / sqrt(x)`` of fp32 ``values``, correctly rounded to fp32 (the CGRA's ``rsqrt``).

    Computed in float64 and rounded once. That is the correctly rounded fp32 result for
    every fp32 input: checked over all of [1, 4) against 64-bit-mantissa arithmetic (no
    exact result comes within 2**-51.7 of a halfway point, more than float64's error) and
    ``rsqrt(4x) = rsqrt(x) / 2`` carries it to every other binade. fp32 ``1 / sqrt`` with
    two fp32 roundings is one ulp off for about a quarter of the inputs. The CGRA's own
    approximation error is not published.

    Examples:
        >>> rsqrt_f32(np.array([0.25, 4.0, 410.69427490234375], np.float32)).tolist()
        [2.0, 0.5, 0.04934471845626831]
    """
    wide = np.asarray(values, dtype=np.float32).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (1.0 / np.sqrt(wide)).astype(np.float32)


class _RowNorm(OpDef):
    """Shared slicing of ops that normalise whole rows: dims from ``first_axis`` are whole."""

    window_compute = True

    c_param = "NORM_PARAM"

    def codegen_fields(self, op: Op, slice_shape: SliceShape) -> dict[str, Any]:
        """The (first) normalised axis, non-negative, and epsilon (0 for Softmax)."""
        rank = op.operands[0].type.rank
        eps = float(self.attr(op, "epsilon")) if "epsilon" in self.attrs else 0.0
        return {"axis": norm_axis(self, self.attr(op, "axis"), rank), "epsilon": eps}

    def first_axis(self, op: Op) -> int:
        """The first normalised dim."""
        return norm_axis(self, self.attr(op, "axis"), op.operands[0].type.rank)

    def last_axis(self, op: Op) -> int:
        """The last normalised dim."""
        return op.operands[0].type.rank - 1

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        lo, hi = self.first_axis(op), self.last_axis(op)
        return tuple(
            IterDim(d.name, d.size, d.loop, shardable=False, splittable=False)
            if lo <= i <= hi
            else d
            for i, d in enumerate(super().iter_dims(op))
        )

    def imm_bytes(self, op: Op, slice_shape: SliceShape) -> int:
        # an fp32 copy of the slice plus two fp32 statistics (max/sum, mean/var) per row
        lo, hi = self.first_axis(op), self.last_axis(op)
        row = 1
        for i in range(lo, hi + 1):
            row *= slice_shape.iteration[i]
        rows = slice_shape.points // max(row, 1)
        return 4 * slice_shape.points + 8 * rows


class Softmax(_RowNorm):
    """exp(x - max) / sum(exp(x - max)) along ``axis``."""

    kind: ClassVar[str] = "tx8be.Softmax"
    summary = "softmax along axis"
    family = "norm"
    num_operands = 1
    vector_ops = 12.0
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

    def last_axis(self, op: Op) -> int:
        return self.first_axis(op)

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


class LayerNorm(_RowNorm):
    """(x - mean) / sqrt(var + eps) * gamma + beta over axis..last."""

    kind: ClassVar[str] = "tx8be.LayerNorm"
    summary = "layer normalisation"
    family = "norm"
    num_operands = 3
    vector_ops = 7.0
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


class RMSNorm(_RowNorm):
    """x / sqrt(mean(x^2) + eps) * gamma over axis..last."""

    kind: ClassVar[str] = "tx8be.RMSNorm"
    summary = "RMS normalisation"
    family = "norm"
    num_operands = 2
    vector_ops = 4.0
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

    window_compute = True

    kind: ClassVar[str] = "tx8be.BatchNorm_Inference"
    summary = "scale * (x - mean) / sqrt(var + eps) + offset"
    family = "norm"
    num_operands = 5
    c_param = "BATCHNORM_INFER_PARAM"

    def codegen_fields(self, op: Op, slice_shape: SliceShape) -> dict[str, Any]:
        """The seed's ``BATCHNORM_INFER_PARAM``: epsilon."""
        return {"epsilon": float(self.attr(op, "epsilon"))}

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

    def aligned_view(self, op: Op) -> AlignedView | None:
        # seed 001's ALIGN kernel takes rank 3: it reads [N, W, C] as [N, 1, W, C]
        shapes = [v.type.shape for v in op.operands]
        if not needs_view([len(s) for s in shapes], [len(shapes[0])]):
            return None
        return AlignedView(tuple(aligned_view(s) for s in shapes))

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        # seed 001: "input 只能在通道维度上 sharding", split only N, H, W ("只对 input 的 NHW
        # 进行 split")
        return _channel_sharded(super().iter_dims(op))

    def tile_sharding_split(self, op: Op, param: ShardingSplitParam) -> list[ShardingSplitParam]:
        """Seed ``BatchNorm_InferenceOp::tileShardingSplit``: input, scale, offset, mean, var.

        Examples:
            >>> from tx8lab.core.ir import TensorType, Value
            >>> from tx8lab.core.builder import make_op
            >>> x, p = TensorType((4, 112, 2, 129), "f16"), TensorType((1, 1, 1, 129), "f32")
            >>> args = [Value(-1, i, t, is_arg=True) for i, t in enumerate([x] + [p] * 4)]
            >>> op = make_op("BatchNorm_Inference", args, {}, op_id=0)
            >>> bn = BatchNorm_Inference()
            >>> got = bn.tile_sharding_split(op, ShardingSplitParam((1, 1, 1, 16), (2, 2, 1, 1)))
            >>> got[0]
            ShardingSplitParam(out_sharding=(1, 1, 1, 16), out_split=(2, 2, 1, 1))
            >>> got[1]
            ShardingSplitParam(out_sharding=(1, 1, 1, 16), out_split=(1, 1, 1, 1))
            >>> bn.tile_sharding_split(op, ShardingSplitParam((2, 1, 1, 1), (1, 1, 1, 1)))[0]
            ShardingSplitParam(out_sharding=(), out_split=(1, 1, 1, 1))
        """
        shape = op.results[0].type.shape
        rank = len(shape)
        if len(param.out_sharding) != rank or len(param.out_split) != rank:
            raise self.fail(
                f"{op.label}: tileShardingSplit needs outSharding and outSplit of the output's "
                f"rank {rank} (shape {shape}), got {param.out_sharding} and {param.out_split}"
            )
        sharding, split = tuple(param.out_sharding), tuple(param.out_split)
        for i in range(rank - 1):
            if sharding and sharding[i] != 1:  # can only shard in dim C
                sharding = ()
            if split and split[rank - 1] != 1:  # can only split except dim C
                split = ()
        result = [ShardingSplitParam(sharding, split)]
        # scale/shift/mean/variance are 1x..x1xC: the input's sharding, split all ones
        for value in op.operands[1:]:
            r = value.type.rank
            result.append(ShardingSplitParam(sharding[rank - r :] if sharding else (), (1,) * r))
        return result

    def steps(self, op: Op, slice_shape: SliceShape, hw: ChipConfig) -> tuple[BatchNormStep, ...]:
        """Seed 001's BatchNorm flow on one input slice, each step timed by its engine law.

        The breakdown behind :meth:`cost` and :meth:`law` (module doc, "BatchNorm_Inference
        cost"); :func:`batchnorm_steps` of the input's slice and type.
        """
        return batchnorm_steps(tuple(slice_shape.operands[0]), self.compute_dtype(op), hw)

    def law(
        self, op: Op, slice_shape: SliceShape, hw: ChipConfig, *, tiles: int = 1
    ) -> hwlaws.Timed:
        """The sum of the flow's steps (:meth:`steps`); no DDR traffic, so ``tiles`` is unused."""
        steps = self.steps(op, slice_shape, hw)
        total = sum(s.cycles for s in steps)
        return StepsTimed(total / hw.clock_hz, _steps_formula(steps, total), total)

    def cost(
        self, op: Op, slice_shape: SliceShape, hw: ChipConfig, *, tiles: int | None = None
    ) -> hwcost.Cost:
        """The plan's cost: the steps' sum (:meth:`law`) on the CT slot plus one issue."""
        steps = self.steps(op, slice_shape, hw)
        work = sum(s.cycles for s in steps)
        issue = hwcost.issue_cycles(hw, 1)
        formula = (
            f"{_steps_formula(steps, work)} + issue 1 x {issue:,}; total {work + issue:,} cycles"
        )
        return hwcost.Cost("ct", work, issue, formula)

    def imm_bytes(self, op: Op, slice_shape: SliceShape) -> int:
        # seed 001: "imm 是辅助空间,此处申请了 2xsizeof(input) Bytes"; the input is Cx/NCx
        # (NPU_ALIGN), so sizeof is its aligned image, which 2x always holds in fp32
        x = op.operands[0].type
        shape = aligned_view(slice_shape.operands[0])
        return 2 * value_bytes(shape, x.dtype, layout_for(shape, aligned=True))

    def op_attr(self, op: Op) -> OpAttr:
        # seed 001 queryOpAttr, verbatim
        return OpAttr(
            align_mode=AlignMode.ALIGN,
            need_preset_to_npu=True,
            default_layout=_default_layout(op),
        )

    #: The operand steps 4-5 of the seed's kernel overwrite in place: the variance.
    VARIANCE = 4

    def clobbered_operands(self, op: Op) -> tuple[int, ...]:
        """The variance: seed 001 steps 4-5 (``addVS`` and ``rsqrt`` on ``varAddr``)."""
        return (self.VARIANCE,)

    def clobbered_value(self, op: Op, index: int, inputs: Sequence[Array]) -> Array:
        """The variance buffer after the op: ``rsqrt(var + epsilon)``, steps 4-5 in fp32.

        Examples:
            >>> from tx8lab.core.ir import TensorType, Value
            >>> from tx8lab.core.builder import make_op
            >>> x, p = TensorType((2, 4), "f16"), TensorType((4,), "f32")
            >>> args = [Value(-1, i, t, is_arg=True) for i, t in enumerate([x] + [p] * 4)]
            >>> op = make_op("BatchNorm_Inference", args, {"epsilon": 0.0}, op_id=0)
            >>> var = np.array([0.25, 1.0, 4.0, 16.0], np.float32)
            >>> BatchNorm_Inference().clobbered_value(op, 4, [None] * 4 + [var]).tolist()
            [2.0, 1.0, 0.5, 0.25]
        """
        if index != self.VARIANCE:
            return super().clobbered_value(op, index, inputs)
        if len(inputs) <= index or inputs[index] is None:
            raise self.fail(
                f"{op.label}: clobbered_value needs the variance as inputs[{index}] "
                f"(got {len(inputs)} inputs)"
            )
        var = np.asarray(inputs[index]).astype(np.float32)
        var = (var + np.float32(self.attr(op, "epsilon"))).astype(np.float32)  # step 4: addVS
        return round_to(rsqrt_f32(var), op.operands[index].type.dtype)  # step 5: rsqrt

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x = inputs[0].astype(np.float64)
        c = x.shape[-1]
        scale, offset, mean, var = (a.astype(np.float64).reshape(c) for a in inputs[1:])
        eps = float(self.attr(op, "epsilon"))
        factor = scale / np.sqrt(var + eps)
        return (((x - mean) * factor + offset).astype(np.float32),)


#: Seed 001 "BatchNorm Design", the ten steps of the fp16 flow.
BATCHNORM_STEP_TITLES = (
    "gatherScatter in -> imm (16-bit elements into 32-bit slots)",
    "convert fp16 -> fp32 in imm",
    "x - mean -> imm_a (VuV loop over the batches)",
    "variance += epsilon (addVS)",
    "variance = rsqrt(variance)",
    "imm_a *= rsqrt(variance) (VuV loop)",
    "imm_a *= scale (VuV loop)",
    "imm_a += shift (VuV loop)",
    "convert fp32 -> fp16 in imm_a",
    "gatherScatter imm_a -> out",
)

#: CGRA instruction of the flow -> the op that does the same vector work per element (its
#: ``vector_ops``); ``convert_*`` is ``Convert`` whatever the two types.
_CT_WORK: dict[str, type[OpDef]] = {
    "VuV_sub": Sub,
    "VuV_mul": Mul,
    "VuV_add": Add,
    "addVS": Add,
    "rsqrt": Rsqrt,
    "convert": Convert,
}

#: :data:`_CT_WORK` by op kind name.
BATCHNORM_CT_OP_KIND = {name: op.kind for name, op in _CT_WORK.items()}

_FMT_NAME = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "tf32": "tf32"}


@dataclass(frozen=True)
class BatchNormStep:
    """One step of seed 001's BatchNorm flow as the op's cost charges it."""

    index: int
    """The seed's step number, 1-10."""
    title: str
    instruction: str
    """The seed's instruction (``VuV_mul`` stands for its ``_loop`` form too)."""
    engine: str
    """``tdma`` (GatherScatter) or ``ct`` (CGRA)."""
    dtype: str
    """The element type it runs at: the input's for a GatherScatter, fp32 on the CGRA."""
    commands: tuple[int, ...]
    """Elements (inner transfers for a GatherScatter) of each command, in issue order."""
    cycles: int
    """The sum of its commands' law cycles."""
    formulas: tuple[str, ...]
    """``count x law`` for each distinct command."""

    @property
    def elements(self) -> int:
        """Elements over all its commands."""
        return sum(self.commands)

    def row(self) -> dict[str, Any]:
        """One table row (for a DataFrame or a report)."""
        return {
            "step": self.index,
            "what": self.title,
            "instruction": self.instruction,
            "engine": self.engine,
            "dtype": self.dtype,
            "elements": self.elements,
            "commands": len(self.commands),
            "cycles": self.cycles,
        }


@dataclass(frozen=True)
class StepsTimed(hwlaws.Timed):
    """A law answer that is a sum of commands each already rounded to whole cycles."""

    whole_cycles: int = 0

    def cycles(self, hw: ChipConfig) -> int:
        """The commands' summed cycles (exact, not the seconds rounded again)."""
        return self.whole_cycles


def _steps_formula(steps: Sequence[BatchNormStep], total: int) -> str:
    parts = [f"{s.index} {s.instruction} {s.engine} {s.dtype} {s.cycles:,}" for s in steps]
    return f"BatchNorm flow: {' + '.join(parts) or 'empty slice'} = {total:,} cycles"


@functools.lru_cache(maxsize=4096)
def batchnorm_steps(
    shape: tuple[int, ...], dtype: str, hw: ChipConfig
) -> tuple[BatchNormStep, ...]:
    """The steps of ``op_batchnorm_inference`` on one input slice, timed by the engine laws.

    ``shape`` is the NHWC input slice, ``dtype`` its element type; the module doc says what
    each step counts. A slice with no elements has no steps.

    Examples:
        >>> from tx8lab.hw import TX81
        >>> steps = batchnorm_steps((1, 2, 70), "bf16", TX81)
        >>> [(s.index, s.engine, s.dtype, s.elements) for s in steps]
        ... # doctest: +NORMALIZE_WHITESPACE
        [(1, 'tdma', 'bf16', 140), (2, 'ct', 'f32', 144), (3, 'ct', 'f32', 144),
         (4, 'ct', 'f32', 70), (5, 'ct', 'f32', 70), (6, 'ct', 'f32', 144),
         (7, 'ct', 'f32', 144), (8, 'ct', 'f32', 144), (9, 'ct', 'f32', 144),
         (10, 'tdma', 'bf16', 140)]

    Raises:
        Tx8labError: a type the op does not take, or a rank other than 2, 3 or 4.
    """
    if dtype not in FLOAT_DTYPES:
        raise Tx8labError(
            f"BatchNorm_Inference cost: input type {dtype!r}; the op takes "
            f"{', '.join(sorted(FLOAT_DTYPES))} (seed 001)"
        )
    if len(shape) not in (2, 3, 4):
        raise Tx8labError(f"BatchNorm_Inference cost: slice {shape} must have rank 2, 3 or 4")
    if 0 in shape:
        return ()
    view = aligned_view(tuple(shape))  # rank 3 as [N, 1, W, C] (Cx needs rank 2 or 4)
    geo = geometry(view, "f32", layout_for(view, aligned=True))  # imm_a: the fp32 image
    slots = geo.footprint_bits // 32
    vuv = (
        ((geo.blocks * geo.hw * geo.block,) if geo.blocks else ())
        + ((geo.hw * geo.tail_pad,) if geo.tail_pad else ())
    ) * geo.n
    points, c, fmt = math.prod(shape), shape[-1], _FMT_NAME[dtype]
    plan: list[tuple[int, str, tuple[int, ...]]] = []
    wide = bits_of(dtype) == 16
    if wide:
        plan += [(1, "op_gatherScatter", (points,)), (2, f"convert_{fmt}_fp32", (slots,))]
    plan += [(3, "VuV_sub", vuv), (4, "addVS", (c,)), (5, "rsqrt", (c,))]
    plan += [(6, "VuV_mul", vuv), (7, "VuV_mul", vuv), (8, "VuV_add", vuv)]
    if dtype != "f32":
        plan.append((9, f"convert_fp32_{fmt}", (slots,)))
    if wide:
        plan.append((10, "op_gatherScatter", (points,)))
    out = []
    for index, name, commands in plan:
        distinct = dict.fromkeys(commands)
        if name == "op_gatherScatter":  # one inner transfer of the 16-bit element each
            engine, at = "tdma", dtype
            timed = {n: hwlaws.tdma(n, bits_of(dtype) // 8, hw) for n in distinct}
        else:
            engine, at = "ct", "f32"
            ops = _CT_WORK["convert" if name.startswith("convert_") else name].vector_ops
            timed = {n: hwlaws.ct(n, ops, "f32", hw) for n in distinct}
        cycles = sum(timed[n].cycles(hw) for n in commands)
        formulas = tuple(f"{commands.count(n)} x {t.formula}" for n, t in timed.items())
        title = BATCHNORM_STEP_TITLES[index - 1]
        out.append(BatchNormStep(index, title, name, engine, at, commands, cycles, formulas))
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def _channel_sharded(dims: tuple[IterDim, ...]) -> tuple[IterDim, ...]:
    """``dims`` with only the last (the channel) shardable and only the others splittable."""
    last = len(dims) - 1
    return tuple(
        IterDim(d.name, d.size, d.loop, shardable=i == last, splittable=i != last)
        for i, d in enumerate(dims)
    )
