"""Data movement and indexing ops.

Reshape, Transpose, Concatenate, Split, Slice, Pad, Broadcast, Gather, Embedding, Scatter,
Convert, Resize, Unpack, Tuple.

Spec: seed 000 ("ALIGN Only": Transpose, Concatenate, Scatter, Pad; the SliceOp rule),
seed 001 (``queryOpAttr`` needLoad for embedding; qweight unpack), seed 002 (tuples stop
CollectInputs) and docs/ops.md.

Readings chosen where the seed is vague:

- Slice's ALIGN/NALIGN rule reads the *clamped* start and end of the last dimension:
  NALIGN when start > 0 and end % 64 == 0, ALIGN otherwise. Steps may be negative
  (numpy semantics) but not 0.
- Pad takes non-negative pads only (cropping is a Slice).
- Gather/Embedding/Scatter accept negative indices (numpy wrap); an index out of range is
  an error at compute time. Scatter is ONNX ScatterElements (no reduction): with repeated
  indices the last update wins.
- Resize supports ``mode="nearest"`` with integer scales (``out[h] = in[h // scale_h]``),
  which is ONNX's asymmetric/floor nearest for integer scales.
- Unpack reads each int8 byte as two signed int4: the low nibble first, then the high.
- Convert rounds like the chip (``dtypes.round_to``): floats to integers truncate toward
  zero, integers wrap, anything to i1 is ``!= 0``.
- Layout inference (seed 001 ``inferLayout``): Reshape, Broadcast (the seed's examples),
  Gather and Embedding stop it, since their result dims do not mean what the operand's
  meant. Transpose permutes a dimension-named layout (NHWC -> NCHW) and keeps a
  ``Tensor``-family one only when dim 0 stays in place. Concatenate, Split, Slice, Pad,
  Scatter, Convert, Resize and Unpack carry it (each dim keeps its meaning; ``Tensor`` vs
  ``NTensor`` is re-derived from the new shape). Tuple result i takes operand i's.
- Slicing (seed ``temporalSliceShape``): iteration dims are the result's (Split: its
  input's). A dim whose extent the op changes or whose pieces are not independent cannot
  be cut: Concatenate's and Split's axis, Slice's sliced dims, Pad's padded dims,
  Scatter's axis, Tuple's dims. Reshape follows its input only on dims it keeps one to
  one (equal running products on both sides); merged or split dims are taken whole.
  Transpose's operand dims follow the permutation; Resize's input dims follow the output
  divided by the scale; Unpack's last input dim is half the output's.
- Gather and Embedding: the table is read by an RDMA gather (seed 001 LSU
  ``op_rdmaGather``), so a slice holds only the rows its indices select: the table's
  gathered dim has ``min(rows, indices in the slice)`` entries.
- Cost: one CGRA operation per element (a copy or a layout change); a Reshape that keeps
  the last dim is a view of the same SPM bytes and costs no vector work; Tuple none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from tx8lab.core.attrs import AlignMode
from tx8lab.core.dtypes import check_dtype, round_to
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.layout_str import (
    TENSOR_FAMILY,
    carry_layout,
    is_dim_named,
    is_known,
    join_layout,
    permute_layout,
)
from tx8lab.core.ops.common import (
    INDEX_DTYPES,
    align_attr,
    both_attr,
    int_tuple,
    norm_axis,
)
from tx8lab.core.ops.registry import (
    ALL_BITS,
    Array,
    AttrSpec,
    DimMap,
    IterDim,
    OpAttr,
    OpDef,
    SliceShape,
    StopsLayout,
    Window,
)
from tx8lab.core.ops.views import (
    AlignedView,
    group_axes,
    inner_size,
    needs_view,
    new_axis,
    view_shape,
)
from tx8lab.errors import Tx8labError


def _whole(dims: Sequence[IterDim], which: Sequence[int]) -> tuple[IterDim, ...]:
    """``dims`` with the dims at positions ``which`` made uncuttable."""
    return tuple(
        IterDim(d.name, d.size, d.loop, shardable=False, splittable=False) if i in which else d
        for i, d in enumerate(dims)
    )


def _same_rank_map(shape: Sequence[int], out: Sequence[int], skip: Sequence[int] = ()) -> DimMap:
    """Dim ``i`` follows iteration dim ``i`` where the sizes agree and ``i`` is not skipped."""
    return tuple(
        i if i < len(out) and d == out[i] and i not in skip else None for i, d in enumerate(shape)
    )


def reshape_segments(src: Sequence[int], dst: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Pair runs of ``src`` and ``dst`` dims with equal products (size-1 dims on their own).

    Examples:
        >>> reshape_segments((1, 128, 768), (1, 128, 12, 64))
        [([1], [1]), ([2], [2, 3])]
    """
    a = [i for i, d in enumerate(src) if d != 1]
    b = [i for i, d in enumerate(dst) if d != 1]
    out: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        left, right = [a[i]], [b[j]]
        pa, pb = src[a[i]], dst[b[j]]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb and i < len(a):
                left.append(a[i])
                pa *= src[a[i]]
                i += 1
            elif pb < pa and j < len(b):
                right.append(b[j])
                pb *= dst[b[j]]
                j += 1
            else:
                break
        out.append((left, right))
    return out


class _DataOp(OpDef):
    """Base: family data, BOTH by default."""

    family = "data"
    c_param = "DATA_PARAM"

    def codegen_fields(self, op: Op, slice_shape: SliceShape) -> dict[str, Any]:
        """``axis`` (non-negative) for the ops that have one, else -1."""
        if "axis" not in self.attrs:
            return {"axis": -1}
        rank = op.operands[0].type.rank if op.operands else op.results[0].type.rank
        return {"axis": norm_axis(self, self.attr(op, "axis"), max(rank, 1))}

    def op_attr(self, op: Op) -> OpAttr:
        return both_attr(op)


class _AlignDataOp(_DataOp):
    """A data op the seed lists as ALIGN only."""

    def op_attr(self, op: Op) -> OpAttr:
        return align_attr(op)


class Reshape(StopsLayout, _DataOp):
    """Same data, another shape (one -1 entry inferred)."""

    kind: ClassVar[str] = "tx8be.Reshape"
    summary = "reshape"
    num_operands = 1
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "shape": AttrSpec(tuple, doc="new shape; one -1 allowed"),
    }

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        shape = list(int_tuple(self, attrs, "shape", minimum=-1))
        unknown = [i for i, d in enumerate(shape) if d == -1]
        if len(unknown) > 1:
            raise self.fail(f"shape {tuple(shape)} has more than one -1")
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        if unknown:
            if known == 0 or x.num_elements % known:
                raise self.fail(
                    f"cannot infer the -1 in shape {tuple(shape)} from {x.num_elements} elements"
                )
            shape[unknown[0]] = x.num_elements // known
        elif known != x.num_elements:
            raise self.fail(
                f"shape {tuple(shape)} has {known} elements but x {x} has {x.num_elements}"
            )
        return (x.with_shape(shape),)

    def _kept(self, op: Op) -> dict[int, int]:
        """Result dim -> operand dim for dims kept one to one."""
        src, dst = op.operands[0].type.shape, op.results[0].type.shape
        return {
            right[0]: left[0]
            for left, right in reshape_segments(src, dst)
            if len(left) == 1 and len(right) == 1
        }

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        dims = super().iter_dims(op)
        kept = self._kept(op)
        return _whole(dims, [i for i, d in enumerate(dims) if i not in kept and d.size != 1])

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        back = {o: r for r, o in self._kept(op).items()}
        return (tuple(back.get(i) for i in range(op.operands[0].type.rank)),)

    def vector_ops_per_element(self, op: Op) -> float:
        # same last dim: the same bytes in SPM, a view; otherwise a relayout copy
        src, dst = op.operands[0].type.shape, op.results[0].type.shape
        return 0.0 if src[-1:] == dst[-1:] else 1.0

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (inputs[0].reshape(op.results[0].type.shape),)


class Transpose(_AlignDataOp):
    """Permute dimensions (numpy.transpose)."""

    window_compute = True

    kind: ClassVar[str] = "tx8be.Transpose"
    summary = "permute dimensions"
    num_operands = 1
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "perm": AttrSpec(tuple, doc="output dim i is input dim perm[i]"),
    }

    def perm(self, rank: int, attrs: Mapping[str, Any]) -> tuple[int, ...]:
        """Checked permutation."""
        perm = int_tuple(self, attrs, "perm")
        if sorted(perm) != list(range(rank)):
            raise self.fail(f"perm {perm} is not a permutation of 0..{rank - 1}")
        return perm

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        perm = self.perm(x.rank, attrs)
        return (x.with_shape([x.shape[p] for p in perm]),)

    def infer_layout(self, op: Op, operand_layouts: Sequence[str | None]) -> str | None:
        return self._permuted(op, operand_layouts[0], op.results[0].type.shape, inverse=False)

    def infer_operand_layouts(
        self, op: Op, result_layouts: Sequence[str | None]
    ) -> list[str | None]:
        shape = op.operands[0].type.shape
        return [self._permuted(op, result_layouts[0], shape, inverse=True)]

    def _permuted(
        self, op: Op, layout: str | None, shape: tuple[int, ...], inverse: bool
    ) -> str | None:
        """The layout ``layout`` becomes under the op's permutation, or None.

        NHWC with perm (0, 3, 1, 2) is NCHW; a Tensor-family layout survives a perm that
        keeps dim 0 (the batch) in place; anything else cannot be carried.
        """
        perm = self.perm(len(shape), op.attrs)
        if inverse:
            perm = tuple(perm.index(i) for i in range(len(perm)))
        if layout in TENSOR_FAMILY:
            return carry_layout(layout, shape) if perm[:1] in ((), (0,)) else None
        if layout is not None and is_dim_named(layout):
            return permute_layout(layout, perm)
        return None

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        perm = self.perm(op.operands[0].type.rank, op.attrs)
        return (tuple(perm.index(j) for j in range(len(perm))),)

    def aligned_view(self, op: Op) -> AlignedView | None:
        # dims merge when the perm keeps them together; an inserted 1 keeps its place
        x = op.operands[0].type.shape
        if not needs_view([len(x)], [len(x)]):
            return None
        perm = self.perm(len(x), op.attrs)
        place = {a: perm.index(a) for a in perm}
        groups = group_axes(x, lambda left, right: place[right[0]] == place[left[-1]] + 1)
        if groups is None:
            return None
        moved = iter(
            sorted((i for i, g in enumerate(groups) if g), key=lambda i: place[groups[i][0]])
        )
        new_perm = tuple(next(moved) if g else i for i, g in enumerate(groups))
        return AlignedView((view_shape(x, groups),), {"perm": new_perm})

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (np.transpose(inputs[0], self.perm(inputs[0].ndim, op.attrs)),)


class Concatenate(_AlignDataOp):
    """Join operands along ``axis``."""

    kind: ClassVar[str] = "tx8be.Concatenate"
    summary = "concatenate along axis"
    num_operands = (1, None)
    attrs: ClassVar[dict[str, AttrSpec]] = {"axis": AttrSpec(int, doc="join axis")}

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        first = operands[0]
        if first.rank == 0:
            raise self.fail("operands must have rank >= 1")
        axis = norm_axis(self, attrs["axis"], first.rank)
        total = 0
        for index, ttype in enumerate(operands):
            if ttype.dtype != first.dtype:
                raise self.fail(f"operand {index} is {ttype.dtype}, operand 0 is {first.dtype}")
            if ttype.rank != first.rank or any(
                a != b
                for i, (a, b) in enumerate(zip(ttype.shape, first.shape, strict=True))
                if i != axis
            ):
                raise self.fail(
                    f"operand {index} {ttype} does not match operand 0 {first} off axis {axis}"
                )
            total += ttype.shape[axis]
        shape = list(first.shape)
        shape[axis] = total
        return (first.with_shape(shape),)

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        axis = norm_axis(self, op.attrs["axis"], op.results[0].type.rank)
        return _whole(super().iter_dims(op), [axis])

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        out = op.results[0].type.shape
        axis = norm_axis(self, op.attrs["axis"], len(out))
        return tuple(_same_rank_map(v.type.shape, out, (axis,)) for v in op.operands)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        axis = norm_axis(self, op.attrs["axis"], inputs[0].ndim)
        return (np.concatenate(inputs, axis=axis),)

    def aligned_view(self, op: Op) -> AlignedView | None:
        # the join axis stays the outer dim of its group
        out = op.results[0].type.shape
        if not needs_view([v.type.rank for v in op.operands], [len(out)]):
            return None
        axis = norm_axis(self, op.attrs["axis"], len(out))
        groups = group_axes(out, lambda left, right: axis not in right, lambda a: a != axis)
        if groups is None:
            return None
        operands = tuple(view_shape(v.type.shape, groups) for v in op.operands)
        return AlignedView(operands, {"axis": new_axis(groups, axis)})


class Split(_DataOp):
    """Cut x along ``axis`` into pieces of ``sizes``; one result each."""

    kind: ClassVar[str] = "tx8be.Split"
    summary = "split along axis"
    num_operands = 1
    c_multi_results = True
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "axis": AttrSpec(int, doc="split axis"),
        "sizes": AttrSpec(tuple, doc="size of each piece (sum = dim)"),
    }

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        if x.rank == 0:
            raise self.fail("x must have rank >= 1")
        axis = norm_axis(self, attrs["axis"], x.rank)
        sizes = int_tuple(self, attrs, "sizes", minimum=0)
        if not sizes:
            raise self.fail("attribute 'sizes' must not be empty")
        if sum(sizes) != x.shape[axis]:
            raise self.fail(
                f"sizes {sizes} sum to {sum(sizes)}, but dim {axis} of {x} is {x.shape[axis]}"
            )
        out = []
        for size in sizes:
            shape = list(x.shape)
            shape[axis] = size
            out.append(x.with_shape(shape))
        return tuple(out)

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        shape = op.operands[0].type.shape
        axis = norm_axis(self, op.attrs["axis"], len(shape))
        dims = tuple(
            IterDim(f"d{i}", d, "oc" if i == len(shape) - 1 else "nh") for i, d in enumerate(shape)
        )
        return _whole(dims, [axis])

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        return (tuple(range(op.operands[0].type.rank)),)

    def result_dims(self, op: Op) -> tuple[DimMap, ...]:
        shape = op.operands[0].type.shape
        axis = norm_axis(self, op.attrs["axis"], len(shape))
        return tuple(_same_rank_map(r.type.shape, shape, (axis,)) for r in op.results)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x = inputs[0]
        axis = norm_axis(self, op.attrs["axis"], x.ndim)
        bounds = np.cumsum(int_tuple(self, op.attrs, "sizes"))[:-1]
        return tuple(np.split(x, bounds, axis=axis))


class Slice(_DataOp):
    """Strided slice, one (start, end, step) per dimension, numpy clamping."""

    kind: ClassVar[str] = "tx8be.Slice"
    summary = "x[starts:ends:steps]"
    num_operands = 1
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "starts": AttrSpec(tuple, doc="start per dim"),
        "ends": AttrSpec(tuple, doc="end per dim (exclusive)"),
        "steps": AttrSpec(tuple, None, "step per dim (default all 1)"),
    }

    def slices(self, shape: tuple[int, ...], attrs: Mapping[str, Any]) -> tuple[slice, ...]:
        """The checked Python slices, one per dimension."""
        rank = len(shape)
        starts = int_tuple(self, attrs, "starts", rank)
        ends = int_tuple(self, attrs, "ends", rank)
        steps = (1,) * rank if attrs.get("steps") is None else int_tuple(self, attrs, "steps", rank)
        if 0 in steps:
            raise self.fail(f"steps {steps} must not contain 0")
        return tuple(slice(s, e, st) for s, e, st in zip(starts, ends, steps, strict=True))

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        sl = self.slices(x.shape, attrs)
        return (
            x.with_shape([len(range(*s.indices(d))) for s, d in zip(sl, x.shape, strict=True)]),
        )

    def op_attr(self, op: Op) -> OpAttr:
        shape = op.operands[0].type.shape
        if not shape:
            return both_attr(op, align_mode=AlignMode.ALIGN)
        last = self.slices(shape, op.attrs)[-1]
        start, end, _ = last.indices(shape[-1])
        if start > 0 and end % 64 == 0:
            return both_attr(op, align_mode=AlignMode.NALIGN)
        return both_attr(op, align_mode=AlignMode.ALIGN)

    def _cut(self, op: Op) -> list[int]:
        """Dims the slice does not take whole (start 0, to the end, step 1)."""
        shape = op.operands[0].type.shape
        return [
            i
            for i, (sl, d) in enumerate(zip(self.slices(shape, op.attrs), shape, strict=True))
            if sl.indices(d) != (0, d, 1)
        ]

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        return _whole(super().iter_dims(op), self._cut(op))

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        cut = self._cut(op)
        return (tuple(None if i in cut else i for i in range(op.operands[0].type.rank)),)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (inputs[0][self.slices(inputs[0].shape, op.attrs)],)

    def aligned_view(self, op: Op) -> AlignedView | None:
        # a dim merges into its outer neighbour when it is taken whole and the outer one
        # has step 1; the last dim (C, which the ALIGN rule reads) is kept as given
        x = op.operands[0].type.shape
        out = op.results[0].type.shape
        if not needs_view([len(x)], [len(out)]):
            return None
        given = self.slices(x, op.attrs)
        spans = [s.indices(d) for s, d in zip(given, x, strict=True)]
        groups = group_axes(
            x,
            lambda left, right: (
                spans[left[0]][2] == 1 and all(spans[a] == (0, x[a], 1) for a in right)
            ),
            lambda a: out[a] == 1,
        )
        if groups is None:
            return None
        triples = []
        for g in groups:
            if not g:
                triples.append((0, 1, 1))
            elif len(g) == 1:
                sl = given[g[0]]
                triples.append((sl.start, sl.stop, sl.step))
            else:
                start, end, _ = spans[g[0]]
                inner = inner_size(x, g)
                triples.append((start * inner, end * inner, 1))
        starts, ends, steps = (tuple(t[i] for t in triples) for i in range(3))
        attrs: dict[str, Any] = {"starts": starts, "ends": ends}
        if op.attrs.get("steps") is not None:
            attrs["steps"] = steps
        return AlignedView((view_shape(x, groups),), attrs)


class Pad(_AlignDataOp):
    """Constant padding: ``pads`` = all lows then all highs."""

    kind: ClassVar[str] = "tx8be.Pad"
    summary = "constant pad"
    num_operands = 1
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "pads": AttrSpec(tuple, doc="2*rank entries: all lows then all highs"),
        "value": AttrSpec(float, 0.0, "fill value"),
    }

    def pads(self, rank: int, attrs: Mapping[str, Any]) -> list[tuple[int, int]]:
        """(low, high) per dimension."""
        pads = int_tuple(self, attrs, "pads", 2 * rank)
        if any(p < 0 for p in pads):
            raise self.fail(f"pads {pads} must be >= 0 (use Slice to crop)")
        return [(pads[i], pads[i + rank]) for i in range(rank)]

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        pairs = self.pads(x.rank, attrs)
        return (x.with_shape([d + lo + hi for d, (lo, hi) in zip(x.shape, pairs, strict=True)]),)

    def _padded(self, op: Op) -> list[int]:
        pairs = self.pads(op.operands[0].type.rank, op.attrs)
        return [i for i, (lo, hi) in enumerate(pairs) if lo or hi]

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        return _whole(super().iter_dims(op), self._padded(op))

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        padded = self._padded(op)
        return (tuple(None if i in padded else i for i in range(op.operands[0].type.rank)),)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x = inputs[0]
        value = float(self.attr(op, "value"))
        fill: Any = (
            value if x.dtype.kind == "f" else (bool(value) if x.dtype == np.bool_ else int(value))
        )
        return (np.pad(x, self.pads(x.ndim, op.attrs), constant_values=fill),)

    def aligned_view(self, op: Op) -> AlignedView | None:
        # a dim merges into its outer neighbour when it is not padded (the outer dim's pads
        # then span whole rows)
        x = op.operands[0].type.shape
        if not needs_view([len(x)], [len(x)]):
            return None
        pairs = self.pads(len(x), op.attrs)
        groups = group_axes(
            x,
            lambda left, right: all(pairs[a] == (0, 0) for a in right),
            lambda a: pairs[a] == (0, 0),
        )
        if groups is None:
            return None
        new = [
            (pairs[g[0]][0] * inner_size(x, g), pairs[g[0]][1] * inner_size(x, g)) if g else (0, 0)
            for g in groups
        ]
        pads = tuple(lo for lo, _ in new) + tuple(hi for _, hi in new)
        return AlignedView((view_shape(x, groups),), {"pads": pads})


class Broadcast(StopsLayout, _DataOp):
    """numpy.broadcast_to(x, shape)."""

    kind: ClassVar[str] = "tx8be.Broadcast"
    summary = "broadcast to shape"
    num_operands = 1
    attrs: ClassVar[dict[str, AttrSpec]] = {"shape": AttrSpec(tuple, doc="target shape")}

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        shape = int_tuple(self, attrs, "shape", minimum=0)
        try:
            full = tuple(np.broadcast_shapes(x.shape, shape))
        except ValueError:
            full = None
        if full != shape:
            raise self.fail(f"x {x} does not broadcast to shape {shape}")
        return (x.with_shape(shape),)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (np.array(np.broadcast_to(inputs[0], op.results[0].type.shape)),)


def _check_indices(opdef: OpDef, ttype: TensorType, what: str = "indices") -> None:
    if ttype.dtype not in INDEX_DTYPES:
        raise opdef.fail(f"{what} must be i32 or i64, got {ttype}")


def _in_range(opdef: OpDef, indices: Array, size: int) -> Array:
    idx = indices.astype(np.int64)
    if idx.size and (idx.min() < -size or idx.max() >= size):
        raise Tx8labError(
            f"{opdef.kind}: index out of range [{-size}, {size}): min {idx.min()}, max {idx.max()}"
        )
    return np.where(idx < 0, idx + size, idx)


class Gather(StopsLayout, _DataOp):
    """numpy.take(data, indices, axis)."""

    kind: ClassVar[str] = "tx8be.Gather"
    summary = "take along axis"
    num_operands = 2
    attrs: ClassVar[dict[str, AttrSpec]] = {"axis": AttrSpec(int, 0, "gathered axis")}

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        data, indices = operands
        _check_indices(self, indices)
        if data.rank == 0:
            raise self.fail("data must have rank >= 1")
        axis = norm_axis(self, self.attr(attrs, "axis"), data.rank)
        shape = (*data.shape[:axis], *indices.shape, *data.shape[axis + 1 :])
        return (data.with_shape(shape),)

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        data, indices = (v.type for v in op.operands)
        axis = norm_axis(self, self.attr(op, "axis"), data.rank)
        shift = indices.rank - 1
        data_map = tuple(
            i if i < axis else (None if i == axis else i + shift) for i in range(data.rank)
        )
        return (data_map, tuple(range(axis, axis + indices.rank)))

    def operand_slice(self, op: Op, index: int, iteration: tuple[int, ...]) -> tuple[int, ...]:
        sliced = super().operand_slice(op, index, iteration)
        if index != 0:
            return sliced
        # rdmaGather: only the rows the slice's indices select come into SPM
        data, indices = (v.type for v in op.operands)
        axis = norm_axis(self, self.attr(op, "axis"), data.rank)
        rows = math.prod(iteration[axis : axis + indices.rank])
        return tuple(min(d, rows) if i == axis else d for i, d in enumerate(sliced))

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        data, indices = inputs
        axis = norm_axis(self, self.attr(op, "axis"), data.ndim)
        return (np.take(data, _in_range(self, indices, data.shape[axis]), axis=axis),)


class Embedding(StopsLayout, _DataOp):
    """Rows of a [V, D] table picked by indices; the table is not loaded (seed 001)."""

    kind: ClassVar[str] = "tx8be.Embedding"
    summary = "table[indices]"
    num_operands = 2

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        table, indices = operands
        if table.rank != 2:
            raise self.fail(f"table must be [V, D] (rank 2), got {table}")
        _check_indices(self, indices)
        return (table.with_shape((*indices.shape, table.shape[1])),)

    def op_attr(self, op: Op) -> OpAttr:
        # seed 001: "比如 mask, embedding 就不需要" load: bit 0 (the table) cleared
        return both_attr(op, need_load=ALL_BITS & ~1)

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        rank = op.operands[1].type.rank
        return ((None, rank), tuple(range(rank)))

    def operand_slice(self, op: Op, index: int, iteration: tuple[int, ...]) -> tuple[int, ...]:
        sliced = super().operand_slice(op, index, iteration)
        if index != 0:
            return sliced
        # the table stays in DDR; an RDMA gather brings the slice's rows
        rows = math.prod(iteration[:-1])
        return (min(sliced[0], rows), sliced[1])

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        table, indices = inputs
        return (table[_in_range(self, indices, table.shape[0])],)


class Scatter(_AlignDataOp):
    """ONNX ScatterElements: data with updates written at indices along axis."""

    kind: ClassVar[str] = "tx8be.Scatter"
    summary = "scatter elements"
    num_operands = 3
    attrs: ClassVar[dict[str, AttrSpec]] = {"axis": AttrSpec(int, 0, "scatter axis")}

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        data, indices, updates = operands
        _check_indices(self, indices)
        if data.rank == 0:
            raise self.fail("data must have rank >= 1")
        axis = norm_axis(self, self.attr(attrs, "axis"), data.rank)
        if indices.rank != data.rank:
            raise self.fail(f"indices {indices} must have the rank of data {data}")
        if updates.shape != indices.shape:
            raise self.fail(f"updates {updates} must have the shape of indices {indices}")
        if updates.dtype != data.dtype:
            raise self.fail(f"updates is {updates.dtype}, data is {data.dtype}")
        for i, (n, d) in enumerate(zip(indices.shape, data.shape, strict=True)):
            if i != axis and n > d:
                raise self.fail(f"indices {indices} is larger than data {data} in dim {i}")
        return (data,)

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        axis = norm_axis(self, self.attr(op, "axis"), op.results[0].type.rank)
        return _whole(super().iter_dims(op), [axis])

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        out = op.results[0].type.shape
        axis = norm_axis(self, self.attr(op, "axis"), len(out))
        return tuple(_same_rank_map(v.type.shape, out, (axis,)) for v in op.operands)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        data, indices, updates = inputs
        axis = norm_axis(self, self.attr(op, "axis"), data.ndim)
        idx = _in_range(self, indices, data.shape[axis])
        out = data.copy()
        grids: list[Any] = list(np.indices(idx.shape, sparse=True))
        grids[axis] = idx
        out[tuple(grids)] = updates
        return (out,)

    def aligned_view(self, op: Op) -> AlignedView | None:
        # indices may be smaller than data off the axis: 1s inserted only, nothing merged
        shapes = [v.type.shape for v in op.operands]
        if not needs_view([len(s) for s in shapes], [len(shapes[0])]) or len(shapes[0]) > 4:
            return None
        groups = group_axes(shapes[0])
        assert groups is not None  # rank <= 3 always has a view
        axis = norm_axis(self, self.attr(op, "axis"), len(shapes[0]))
        return AlignedView(
            tuple(view_shape(s, groups) for s in shapes), {"axis": new_axis(groups, axis)}
        )


class Convert(_DataOp):
    """Element type conversion, rounded as the chip does."""

    window_compute = True

    kind: ClassVar[str] = "tx8be.Convert"
    summary = "cast"
    num_operands = 1
    attrs: ClassVar[dict[str, AttrSpec]] = {"dtype": AttrSpec(str, doc="target element type")}

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        try:
            dtype = check_dtype(attrs["dtype"])
        except Tx8labError as err:
            raise self.fail(str(err)) from None
        return (operands[0].with_dtype(dtype),)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (round_to(inputs[0], op.attrs["dtype"]),)


class Resize(_DataOp):
    """Nearest-neighbour upsampling of an NHWC map by integer scales."""

    kind: ClassVar[str] = "tx8be.Resize"
    summary = "nearest upsample"
    num_operands = 1
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "scale_h": AttrSpec(int, doc="integer scale of H"),
        "scale_w": AttrSpec(int, doc="integer scale of W"),
        "mode": AttrSpec(str, "nearest", "only 'nearest'"),
    }

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        if x.rank != 4:
            raise self.fail(f"x must be NHWC (rank 4), got {x}")
        sh, sw = attrs["scale_h"], attrs["scale_w"]
        if sh < 1 or sw < 1:
            raise self.fail(f"scales must be >= 1, got scale_h={sh}, scale_w={sw}")
        mode = self.attr(attrs, "mode")
        if mode != "nearest":
            raise self.fail(f"mode {mode!r} is not supported (only 'nearest')")
        n, h, w, c = x.shape
        return (x.with_shape((n, h * sh, w * sw, c)),)

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        return ((0, 1, 2, 3),)

    def operand_slice(self, op: Op, index: int, iteration: tuple[int, ...]) -> tuple[int, ...]:
        n, h, w, c = op.operands[0].type.shape
        sn, sh, sw, sc = iteration
        scale_h, scale_w = op.attrs["scale_h"], op.attrs["scale_w"]
        return (min(n, sn), min(h, _span(sh, scale_h)), min(w, _span(sw, scale_w)), min(c, sc))

    def operand_window(self, op: Op, index: int, iteration: Window) -> Window:
        """Output rows ``[a, b)`` read input rows ``[a // scale, ceil(b / scale))``."""
        bn, bh, bw, bc = iteration
        sh, sw = op.attrs["scale_h"], op.attrs["scale_w"]
        return (bn, (bh[0] // sh, -(-bh[1] // sh)), (bw[0] // sw, -(-bw[1] // sw)), bc)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        x = inputs[0]
        return (np.repeat(np.repeat(x, op.attrs["scale_h"], axis=1), op.attrs["scale_w"], axis=2),)


def _span(outputs: int, scale: int) -> int:
    """Input elements ``outputs`` consecutive outputs read when each input makes ``scale``.

    A run that starts inside a block of ``scale`` outputs reads one more input than
    ``ceil(outputs / scale)``: at most ``ceil((outputs - 1) / scale) + 1`` whatever its start.

    Examples:
        >>> _span(4, 2), _span(3, 2), _span(1, 3), _span(0, 2)
        (3, 2, 1, 0)
    """
    return -(-(outputs - 1) // scale) + 1 if outputs > 0 else 0


class Unpack(_DataOp):
    """int8 bytes -> two signed int4 values each (low nibble, then high nibble)."""

    kind: ClassVar[str] = "tx8be.Unpack"
    summary = "unpack int4 pairs"
    num_operands = 1

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        if x.dtype != "i8":
            raise self.fail(f"packed operand must be i8, got {x}")
        if x.rank == 0:
            raise self.fail("packed operand must have rank >= 1")
        return (x.with_shape((*x.shape[:-1], 2 * x.shape[-1])),)

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        return (tuple(range(op.operands[0].type.rank)),)

    def operand_slice(self, op: Op, index: int, iteration: tuple[int, ...]) -> tuple[int, ...]:
        shape = op.operands[0].type.shape
        *head, last = iteration
        return (
            *(min(d, s) for d, s in zip(shape, head, strict=False)),
            min(shape[-1], _span(last, 2)),
        )

    def operand_window(self, op: Op, index: int, iteration: Window) -> Window:
        """Output columns ``[a, b)`` unpack from bytes ``[a // 2, ceil(b / 2))``."""
        *head, (a, b) = iteration
        return (*head, (a // 2, -(-b // 2)))

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        raw = inputs[0].astype(np.int8).view(np.uint8)
        low = (raw & 0x0F).astype(np.int8)
        high = (raw >> 4).astype(np.int8)
        # sign-extend 4-bit two's complement
        low = np.where(low >= 8, low - 16, low).astype(np.int8)
        high = np.where(high >= 8, high - 16, high).astype(np.int8)
        out = np.stack([low, high], axis=-1)
        return (out.reshape(*raw.shape[:-1], 2 * raw.shape[-1]),)


class Tuple(_DataOp):
    """Group values into one op; one result per operand, same values (seed 002)."""

    kind: ClassVar[str] = "tx8be.Tuple"
    summary = "tuple of values"
    num_operands = (1, None)
    c_multi_results = True

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        return tuple(operands)

    def infer_layout(self, op: Op, operand_layouts: Sequence[str | None]) -> str | None:
        # result i is operand i: all known, or nothing yet
        if not all(is_known(layout) for layout in operand_layouts):
            return None
        return join_layout(list(operand_layouts))

    def infer_operand_layouts(
        self, op: Op, result_layouts: Sequence[str | None]
    ) -> list[str | None]:
        return [layout if is_known(layout) else None for layout in result_layouts]

    vector_ops = 0.0

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        dims = super().iter_dims(op)
        return _whole(dims, range(len(dims)))

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        return tuple((None,) * v.type.rank for v in op.operands)

    def result_dims(self, op: Op) -> tuple[DimMap, ...]:
        return tuple((None,) * r.type.rank for r in op.results)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return tuple(inputs)
