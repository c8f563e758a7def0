"""Matrix products on the NE (neural engine): Gemm, MatMul, BatchMatMul.

Spec: seed 000 ("ALIGN Only": Gemm) and seed 001 (``NPU_ENGINE_NE``), docs/ops.md.

Readings chosen where the seed is vague:

- MatMul and BatchMatMul are ALIGN-only like Gemm (they use the same NE instructions).
- Gemm is ONNX's: ``alpha * op(A) @ op(B) + beta * C``, C broadcast to [M, N].
- MatMul takes rank >= 2 operands with numpy-broadcast batch dimensions; the importer
  reshapes rank-1 operands first. BatchMatMul needs equal batch dimensions.
- Integer products are exact (int64 accumulation); float products use float32 matmul.
- ``layout_str`` (seed 001 layoutInitPass) is ``Tensor``/``NTensor`` for every operand
  and the result, by each one's dim 0: "Tensor-Tensor-Tensor" for a Gemm of [1, K] rows.
- Iteration dims: the result's (batch dims, M, N), then the reduction dim K (loop ``ic``;
  splitting it in time accumulates partial sums; cut across tiles (``noc_reduce``) each
  tile holds a partial sum the tiles add over the NoC). N is the output channel (loop
  ``oc``).
- An ALIGN kernel has no rank-3 (or rank >= 5) operand in Cx (seed 000): such a product
  is computed as a MatMul on rank-4 views, the batch dims regrouped to two (``[B, M, K]``
  reads as ``[B, 1, M, K]``; :meth:`_NeOp.aligned_view`, see ``layout-align-npu``).
- Cost: ``(batch, M, K, N)`` of the slice on the NE, padded to its 8x16x8 granule; Gemm's
  alpha/beta/bias are NE post-processing (seed 001: "计算之后,还可以进行后处理") and cost
  nothing extra.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from tx8lab.core.ir import Op, TensorType
from tx8lab.core.layout_str import join_layout, tensor_layout
from tx8lab.core.ops.common import NE, align_attr, same_dtype
from tx8lab.core.ops.registry import (
    Array,
    AttrSpec,
    DimMap,
    IterDim,
    OpAttr,
    OpDef,
    SliceShape,
    broadcast_map,
    f32,
)
from tx8lab.core.ops.views import AlignedView, group_axes, needs_view, view_shape


def _matmul(a: Array, b: Array) -> Array:
    if a.dtype.kind in "iub":
        return np.asarray(np.matmul(a.astype(np.int64), b.astype(np.int64)))
    return np.asarray(np.matmul(a, b))


class _NeOp(OpDef):
    """Base for NE ops: ALIGN only, engine NE."""

    window_compute = True

    family = "matmul"
    c_param = "MATMUL_PARAM"

    def codegen_fields(self, op: Op, slice_shape: SliceShape) -> dict[str, Any]:
        """The NE product of the slice (``ne_shape``) and the transposes."""
        batch, m, k, n = self.ne_shape(op, slice_shape)
        fields: dict[str, Any] = {"batch": batch, "m": m, "k": k, "n": n}
        for name in ("trans_a", "trans_b"):
            fields[name] = bool(self.attr(op, name)) if name in self.attrs else False
        return fields

    def op_attr(self, op: Op) -> OpAttr:
        return align_attr(op, engine=NE)

    def init_layout(self, op: Op) -> str | None:
        # seed 001 layoutInitPass: Tensor/NTensor per tensor by its dim 0 (layout-init's
        # docstring: the seed's "Tensor-Tensor-Tensor" figure is all dims 0 of 1)
        return join_layout([tensor_layout(v.type.shape) for v in (*op.operands, *op.results)])

    def inner(self, op: Op) -> int:
        """The reduction length K."""
        a = op.operands[0].type
        return a.shape[-1]

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        return _product_dims(op.results[0].type.shape, self.inner(op))

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        # batch dims broadcast like numpy; a = [.., M, K], b = [.., K, N]
        out = op.results[0].type.shape
        nb = len(out) - 2
        m, n, k = nb, nb + 1, nb + 2
        maps: list[DimMap] = []
        for v, tail in zip(op.operands[:2], ((m, k), (k, n)), strict=True):
            shape = v.type.shape
            head = broadcast_map(shape[:-2], out[:-2]) if nb else ()
            maps.append((*head, *tail))
        return tuple(maps)

    def result_dims(self, op: Op) -> tuple[DimMap, ...]:
        return (tuple(range(op.results[0].type.rank)),)

    def ne_shape(self, op: Op, slice_shape: SliceShape) -> tuple[int, int, int, int]:
        *batch, m, n, k = slice_shape.iteration
        return math.prod(batch), m, k, n

    def aligned_view(self, op: Op) -> AlignedView | None:
        # the result's batch dims regroup to two (a 1 after the first for rank 3; merged
        # where every operand is either whole or broadcast on both); M, K, N stay
        out = op.results[0].type.shape
        shapes = [v.type.shape for v in op.operands[:2]]
        if not needs_view([len(s) for s in shapes], [len(out)]):
            return None
        nb = len(out) - 2

        def batch_of(shape: tuple[int, ...]) -> tuple[int, ...]:
            return (1,) * (nb - len(shape) + 2) + shape[:-2]

        def can_merge(left: tuple[int, ...], right: tuple[int, ...]) -> bool:
            axes = [a for a in left + right if out[a] != 1]
            if any(a >= nb for a in left + right):
                return False
            return all(
                len({batch_of(s)[a] == out[a] for a in axes}) <= 1 for s in shapes if len(s) > 2
            )

        groups = group_axes(out, can_merge, lambda a: a < nb)
        if groups is None:
            return None
        operands = tuple(
            s if len(s) == 2 else (*view_shape(batch_of(s), groups[:-2]), *s[-2:]) for s in shapes
        )
        return AlignedView(operands, {}, MatMul.kind)


class Gemm(_NeOp):
    """alpha * op(A) @ op(B) + beta * C on 2-D operands."""

    kind: ClassVar[str] = "tx8be.Gemm"
    summary = "alpha * A @ B + beta * C"
    num_operands = (2, 3)
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "trans_a": AttrSpec(bool, False, "use A transposed ([K, M])"),
        "trans_b": AttrSpec(bool, False, "use B transposed ([N, K])"),
        "alpha": AttrSpec(float, 1.0, "scale of A @ B"),
        "beta": AttrSpec(float, 1.0, "scale of C"),
    }

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        a, b = operands[0], operands[1]
        same_dtype(self, operands, ("A", "B", "C"))
        if a.rank != 2 or b.rank != 2:
            raise self.fail(f"A and B must have rank 2, got {a} and {b}")
        m, k = a.shape[::-1] if self.attr(attrs, "trans_a") else a.shape
        k2, n = b.shape[::-1] if self.attr(attrs, "trans_b") else b.shape
        if k != k2:
            raise self.fail(f"inner dimensions differ: A gives K={k}, B gives K={k2} ({a}, {b})")
        if len(operands) == 3:
            c = operands[2]
            try:
                full = np.broadcast_shapes(c.shape, (m, n))
            except ValueError:
                full = None
            if full != (m, n):
                raise self.fail(f"C {c} does not broadcast to [M, N] = [{m}, {n}]")
        return (TensorType((m, n), a.dtype),)

    def inner(self, op: Op) -> int:
        a = op.operands[0].type
        return a.shape[0] if self.attr(op, "trans_a") else a.shape[1]

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        # iteration (M, N, K): A is [M, K] ([K, M] transposed), B [K, N] ([N, K]), C broadcasts
        a: DimMap = (2, 0) if self.attr(op, "trans_a") else (0, 2)
        b: DimMap = (1, 2) if self.attr(op, "trans_b") else (2, 1)
        maps = [a, b]
        if len(op.operands) == 3:
            maps.append(broadcast_map(op.operands[2].type.shape, op.results[0].type.shape))
        return tuple(maps)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        a, b = f32(inputs[0]), f32(inputs[1])
        if self.attr(op, "trans_a"):
            a = a.T
        if self.attr(op, "trans_b"):
            b = b.T
        out = _matmul(a, b)
        alpha, beta = self.attr(op, "alpha"), self.attr(op, "beta")
        if alpha != 1.0:
            out = out * (np.float32(alpha) if out.dtype.kind == "f" else alpha)
        if len(inputs) == 3:
            c = f32(inputs[2])
            out = out + (
                c if beta == 1.0 else c * (np.float32(beta) if c.dtype.kind == "f" else beta)
            )
        return (out,)


class MatMul(_NeOp):
    """numpy matmul of rank >= 2 operands with broadcast batch dimensions."""

    kind: ClassVar[str] = "tx8be.MatMul"
    summary = "a @ b"
    num_operands = 2

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        a, b = operands
        same_dtype(self, operands, ("a", "b"))
        if a.rank < 2 or b.rank < 2:
            raise self.fail(
                f"operands must have rank >= 2 (reshape rank-1 operands), got {a} and {b}"
            )
        if a.shape[-1] != b.shape[-2]:
            raise self.fail(
                f"inner dimensions differ: a has K={a.shape[-1]}, b has K={b.shape[-2]} ({a}, {b})"
            )
        try:
            batch = tuple(int(d) for d in np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        except ValueError:
            raise self.fail(
                f"batch dimensions {a.shape[:-2]} and {b.shape[:-2]} do not broadcast"
            ) from None
        return (TensorType((*batch, a.shape[-2], b.shape[-1]), a.dtype),)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (_matmul(f32(inputs[0]), f32(inputs[1])),)


class BatchMatMul(_NeOp):
    """[B, M, K] @ [B, K, N] -> [B, M, N]."""

    kind: ClassVar[str] = "tx8be.BatchMatMul"
    summary = "batched a @ b"
    num_operands = 2

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        a, b = operands
        same_dtype(self, operands, ("a", "b"))
        if a.rank != 3 or b.rank != 3:
            raise self.fail(f"operands must have rank 3 ([B, M, K], [B, K, N]), got {a} and {b}")
        if a.shape[0] != b.shape[0]:
            raise self.fail(f"batch sizes differ: {a.shape[0]} vs {b.shape[0]}")
        if a.shape[2] != b.shape[1]:
            raise self.fail(f"inner dimensions differ: a has K={a.shape[2]}, b has K={b.shape[1]}")
        return (TensorType((a.shape[0], a.shape[1], b.shape[2]), a.dtype),)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (_matmul(f32(inputs[0]), f32(inputs[1])),)


@functools.lru_cache(maxsize=1024)
def _product_dims(out: tuple[int, ...], inner: int) -> tuple[IterDim, ...]:
    """A product's iteration dims: batch dims, M, N (the channel), then K (the reduction)."""
    batch = tuple(IterDim(f"B{i}", d) for i, d in enumerate(out[:-2]))
    return (
        *batch,
        IterDim("M", out[-2]),
        IterDim("N", out[-1], "oc"),
        IterDim("K", inner, "ic", shardable=False, noc_reduce=True),
    )
