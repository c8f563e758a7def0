"""The op library's entry type: everything the seeds attach to an op through interfaces.

Spec: DESIGN.md §3 and seed 001 ("Interface": ShapeInferenceOpInterface, ShardingInterface,
OpLibInterface, ComputeInterface). One :class:`OpDef` subclass per op kind; the registry
in ``tx8lab.core.ops`` maps ``"tx8be.<Name>"`` to an instance.

| seed interface | member |
|---|---|
| ``inferShapes`` | :meth:`OpDef.infer_type` (from operand types and attributes, so a builder can
  create the op) |
| ``inferLayout`` | :meth:`OpDef.infer_layout` (forward), :meth:`OpDef.infer_operand_layouts`
  (backward) |
| ``layoutInitPass`` start | :meth:`OpDef.init_layout` (Gemm/MatMul/BatchMatMul, Conv) |
| ``queryOpAttr`` | :meth:`OpDef.op_attr` -> :class:`OpAttr` |
| seed 000 AlignMode rules | :meth:`OpDef.align_mode` |
| (TX8 frontend) an ALIGN kernel on rank-2/4 views | :meth:`OpDef.aligned_view` |
| ``compute`` | :meth:`OpDef.compute` (numpy) |
| ``temporalSliceShape`` | :meth:`OpDef.temporal_slice_shape` -> :class:`SliceShape`, over the
  op's iteration dims (:meth:`OpDef.iter_dims`, :meth:`OpDef.operand_dims`,
  :meth:`OpDef.result_dims`) |
| ``getImmSpSize`` | :meth:`OpDef.imm_bytes` |
| ``getOpClockCycle`` | :meth:`OpDef.cost` / :meth:`OpDef.cycles` / :meth:`OpDef.explain`, through
  ``tx8lab.hw.cost`` (NE MACs from :meth:`OpDef.ne_shape`, CT work from
  :meth:`OpDef.vector_ops_per_element`); BatchNorm_Inference adds up its kernel's steps
  through the engine laws (``tx8lab.core.ops.norm.batchnorm_steps``) |
| ``tileShardingSplit`` | :meth:`OpDef.tile_sharding_split` over :class:`ShardingSplitParam`
  (BatchNorm_Inference has the seed's code; the default maps operand dims through
  :meth:`OpDef.operand_dims`) |
| ``genOpCode`` | :meth:`OpDef.codegen` (one C call per slice; each family sets ``c_param``
  and :meth:`OpDef.codegen_fields`, see ``tx8lab.core.codegen_c``) |
| ``backWindow`` | :meth:`OpDef.back_window`: the operand windows a result window reads (by
  :meth:`OpDef.operand_window`, reduction dims whole) |
| slice positions (what ``L_SHAPE.shape_start`` says on the chip) | :meth:`OpDef.operand_window`,
  :meth:`OpDef.result_window`; the host model of the tile computes a slice with
  ``window_compute`` / ``psum_combine`` (``tx8lab.core.hostmodel``) |
| (no seed interface) the kernel overwrites an input | :meth:`OpDef.clobbered_operands`,
  :meth:`OpDef.clobbered_value` (see below) |

Readings chosen where the seed is vague:

- Attributes not given on an op take the defaults declared in ``OpDef.attrs`` and are not
  printed (as MLIR leaves default-valued attributes out). Undeclared attributes are
  allowed: they are discardable attributes that passes attach (``layout_str``,
  ``dev_info``, ``group_tag`` ...).
- Seed ``inferLayout`` is two methods, forward (:meth:`OpDef.infer_layout`) and backward
  (:meth:`OpDef.infer_operand_layouts`), because ``layoutTransmitPass`` propagates both
  ways; either answers None where the op cannot carry a layout, which stops the pass
  there. Strings go through :mod:`tx8lab.core.layout_str`.
- **Iteration dims** (what an ``OpStrategy`` indexes): the dims of result 0, then the
  op's reduction dims (a matmul's K, a conv's input channels, a reduce op's reduced axes).
  Each has a loop level: reduction dims ``ic``, the last result dim ``oc`` (the channel of
  NHWC and ``[.., hidden]`` tensors), the others ``nh`` (seed DS_UpdateSliceIR's IC, OC,
  NH stages). A dim that cannot be cut (a softmax axis, BatchNorm's C in time) says so
  with ``shardable`` / ``splittable``. A reduction dim is not ``shardable``: a tile
  holding part of it has a partial sum. Those whose partial sums add (a matmul's K, a
  conv's input channels) say ``noc_reduce``: they may be cut across tiles when the tiles
  then sum their partials over the NoC (seed SecsInfo sharding modes 1-3; the schedule's
  all-reduce, ``tx8lab.core.schedule.slicing``). Nothing cuts them unless asked (the
  factor spaces and the default strategy read ``shardable``).
- **Slice sizes** are ``ceil(ceil(size / shard) / split)`` per iteration dim (the seed's
  BatchNorm rule: the input is sharded on C and split on N, H, W; its 1x1x1xC parameters
  follow the input's C shard and are never split). An operand dim maps to an iteration
  dim (its slice is that dim's slice) or to none (it is taken whole).
- **Vector work** (:meth:`OpDef.vector_ops_per_element`): 1 for a CGRA instruction that
  passes over the data once (add, max, compare, copy, layout change), more for functions
  evaluated as a short sequence of them (exp ~8: range reduction plus polynomial). No
  per-instruction timing is published; the values are documented assumptions per op.
- **Operands the kernel overwrites** (:meth:`OpDef.clobbered_operands`): a kernel that
  uses an input's SPM buffer as scratch leaves other bytes there, so a loop that runs the
  op again must reload that input (the scheduler does, ``tx8lab.core.schedule.slicing``),
  and :meth:`OpDef.clobbered_value` says what the buffer holds afterwards (a host model
  of the chip writes it back). The seed has no OpAttr bit for this (its ``struct OpAttr``
  stays verbatim in :class:`OpAttr`); it shows up in the kernels. Declared only where a
  seed shows the instructions: seed 001 "BatchNorm Design" steps 4-5 (``addVS`` with
  ``varAddr`` as source and result, then ``rsqrt`` of it), which is why its main.c loads
  the variance inside the ``while`` loop; BatchNorm_Inference declares its variance
  (operand 4). Checked and left undeclared: seed 001's other instruction-level text (the
  fp16 -> fp32 ``op_gatherScatter`` + ``convert_fp16_fp32`` path writes the op's ``imm``,
  the NE's psum is the op's own accumulator, ``memInplace`` is the *result* reusing
  operand 0's buffer, which the scheduler grants only when nothing else reads it); seeds
  000, 002 and 003 describe passes, not kernels; seed 004's FlashAttention (not an op of
  this library) double-buffers its own tiles. Every other kernel's instructions are
  unpublished, so nothing else is declared.
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from tx8lab.core.attrs import AlignMode, DevInfo, Engine, LayoutMode, ParallelAttr
from tx8lab.core.codegen_c import CCall, compute_call
from tx8lab.core.dtypes import bits_of
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.layout_str import (
    carry_layout,
    is_known,
    join_layout,
    split_layout,
    tensor_layout,
)
from tx8lab.core.layouts import footprint_bits
from tx8lab.core.ops.views import AlignedView
from tx8lab.core.tiling import OpStrategy as OpStrategy
from tx8lab.core.tiling import SliceShape as SliceShape
from tx8lab.errors import Tx8labError
from tx8lab.hw import cost as hwcost
from tx8lab.hw import laws as hwlaws
from tx8lab.hw.config import ChipConfig

ALL_BITS = 0xFFFFFFFFFFFFFFFF

#: Loop level of an iteration dim (seed DS_UpdateSliceIR stages, outermost first).
Loop = Literal["nh", "oc", "ic"]

#: An operand's (or result's) dims -> the iteration dim each one follows (None: whole).
DimMap = tuple[int | None, ...]

#: A box of a tensor: ``(start, stop)`` per dim, half-open.
Window = tuple[tuple[int, int], ...]

#: Where each dim of a window comes from, for any iteration box: the index of the
#: iteration dim whose ``(start, stop)`` it takes, or a fixed ``(start, stop)``
#: (:meth:`OpDef.window_plan`).
WindowPlan = tuple[int | tuple[int, int], ...]

Array = npt.NDArray[Any]


@dataclass(frozen=True, slots=True)
class OpAttr:
    """What ``queryOpAttr`` returns (seed 001 ``struct OpAttr``, with the seed's defaults)."""

    align_mode: AlignMode = AlignMode.UNKNOWN
    """Alignment requirement: ALIGN (Cx/NCx), NALIGN (compact) or BOTH."""
    default_layout: str = "Tensor"
    """The op's default layout string."""
    need_preset_to_npu: bool = False
    """True when the op's instructions need the NHWC preset layout."""
    engine: Engine = Engine.CT
    """Engine that runs the op (``NPU_ENGINE_CT`` by default)."""
    mem_inplace: bool = False
    """Output may reuse the first input's memory."""
    need_load: int = ALL_BITS
    """Bit i set: operand i needs a LoadVar/LoadConst (e.g. embedding tables do not)."""
    need_store: int = ALL_BITS
    """Bit i set: result i needs a StoreVar."""
    parallel: bool = True
    """The op may run in parallel mode."""
    align_cx: bool = True
    """The innermost split is a multiple of 64 (128 for i8)."""

    def needs_load(self, operand_index: int) -> bool:
        """Whether operand ``operand_index`` needs a load."""
        return bool((self.need_load >> operand_index) & 1)

    def needs_store(self, result_index: int) -> bool:
        """Whether result ``result_index`` needs a store."""
        return bool((self.need_store >> result_index) & 1)


@dataclass(frozen=True, slots=True)
class IterDim:
    """One iteration dim of an op: what a sharding or temporal split cuts."""

    name: str
    """Short name (``M``, ``N``, ``K``, ``OH``, ``IC``, ``d0`` ...)."""
    size: int
    """Extent of the whole (unsharded) dim."""
    loop: Loop = "nh"
    """Loop level: ``ic`` for a reduction dim, ``oc`` for the channel, ``nh`` otherwise."""
    shardable: bool = True
    """May be cut across tiles."""
    splittable: bool = True
    """May be cut in time (a loop on the tile)."""
    noc_reduce: bool = False
    """A reduction dim that may be cut across tiles, the tiles' partial sums then added
    over the NoC (module docstring, **Iteration dims**)."""

    @property
    def reduce(self) -> bool:
        """True for a reduction dim (partial results accumulate over it)."""
        return self.loop == "ic"


@dataclass(frozen=True, slots=True)
class ShardingSplitParam:
    """Seed ``ShardingSplitParam``: one operand's (or the output's) sharding and split factors.

    ``tileShardingSplit`` takes the output's and returns one per operand. An empty tuple is
    the seed's cleared vector: no valid factors for that operand (the candidate is
    rejected by the sharding search).
    """

    out_sharding: tuple[int, ...] = ()
    """Tiles per dim (seed ``outSharding``)."""
    out_split: tuple[int, ...] = ()
    """Temporal splits per dim (seed ``outSplit``)."""

    @property
    def is_valid(self) -> bool:
        """Both vectors are set (the seed clears one to reject the candidate)."""
        return bool(self.out_sharding) and bool(self.out_split)


def slice_extent(size: int, shard: int, split: int) -> int:
    """``ceil(ceil(size / shard) / split)``: one tile's piece of one temporal step.

    Examples:
        >>> slice_extent(56, 16, 1), slice_extent(56, 16, 2), slice_extent(3, 4, 1)
        (4, 2, 1)
    """
    per_tile = -(-size // shard)
    return -(-per_tile // split)


def effective_split(size: int, shard: int, split: int) -> int:
    """The chunks of a split that hold data: ``split`` leaves the rest empty.

    A tile's piece of ``ceil(size / shard)`` cut into chunks of :func:`slice_extent` needs
    only ``ceil(piece / chunk)`` of them; a larger split runs iterations over nothing (and a
    split reduction's last partial sum would land on an empty chunk).

    Examples:
        >>> effective_split(96, 1, 64), effective_split(96, 1, 128), effective_split(512, 1, 8)
        (48, 96, 8)
    """
    per_tile = -(-size // shard)
    return -(-per_tile // slice_extent(size, shard, split)) if per_tile else 1


def value_bytes(shape: Sequence[int], dtype: str, layout: LayoutMode = LayoutMode.Tensor) -> int:
    """Bytes a tensor of ``shape``/``dtype`` takes in SPM under ``layout``.

    Cx/NCx pad the channels and align each batch (``tx8lab.core.layouts``); a type without
    that layout (``i64``, ``i1``) is stored compact, one byte at least per element.

    Examples:
        >>> value_bytes((2, 1, 2, 131), "f16", LayoutMode.NCx)  # seed 001's NCx example
        1296
        >>> value_bytes((3,), "i1")
        3
    """
    return _value_bytes(tuple(shape), dtype, layout)


@functools.lru_cache(maxsize=65536)
def _value_bytes(shape: tuple[int, ...], dtype: str, layout: LayoutMode) -> int:
    # a pure function of small keys, asked for every slice of every candidate
    shape = tuple(int(d) for d in shape)
    try:
        bits = footprint_bits(shape, dtype, layout)
    except Tx8labError:
        bits = math.prod(shape) * max(8, bits_of(dtype))
    return -(-bits // 8)


def op_layout(op: Op) -> LayoutMode:
    """The memory layout of ``op``'s results (``dev_info.mem_layout``; Tensor if unset)."""
    info = op.attrs.get("dev_info")
    return info.mem_layout if isinstance(info, DevInfo) else LayoutMode.Tensor


def broadcast_map(shape: Sequence[int], out: Sequence[int]) -> DimMap:
    """Right-aligned numpy broadcast of ``shape`` against ``out``: equal dims follow ``out``.

    Examples:
        >>> broadcast_map((1, 1, 1, 8), (2, 4, 4, 8)), broadcast_map((8,), (2, 4, 4, 8))
        ((None, None, None, 3), (3,))
    """
    return _broadcast_map(tuple(shape), tuple(out))


@functools.lru_cache(maxsize=16384)
def _broadcast_map(shape: tuple[int, ...], out: tuple[int, ...]) -> DimMap:
    offset = len(out) - len(shape)
    return tuple(
        i + offset if i + offset >= 0 and d == out[i + offset] and d != 1 else None
        for i, d in enumerate(shape)
    )


@functools.lru_cache(maxsize=4096)
def _default_iter_dims(shape: tuple[int, ...]) -> tuple[IterDim, ...]:
    """:meth:`OpDef.iter_dims` by default: result 0's dims, the last the channel."""
    return tuple(
        IterDim(f"d{i}", d, "oc" if i == len(shape) - 1 else "nh") for i, d in enumerate(shape)
    )


@functools.lru_cache(maxsize=16384)
def _result_dims(sizes: tuple[int, ...], shapes: tuple[tuple[int, ...], ...]) -> tuple[DimMap, ...]:
    """:meth:`OpDef.result_dims` by default: result dim ``i`` follows iteration dim ``i``."""
    return tuple(
        tuple(i if i < len(sizes) and d == sizes[i] else None for i, d in enumerate(shape))
        for shape in shapes
    )


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


@dataclass(frozen=True, slots=True)
class AttrSpec:
    """A declared attribute: its Python type, default (or ``REQUIRED``) and meaning."""

    type: Any
    default: Any = REQUIRED
    doc: str = ""


#: Attributes any op may carry (seed 001: every tx8be op has these as optional).
COMMON_ATTRS: dict[str, AttrSpec] = {
    "layout_str": AttrSpec(str, "Unknown", "middle-end layout, e.g. Tensor-Tensor-Tensor"),
    "dev_info": AttrSpec(DevInfo, None, "device placement (dev_attr)"),
    "chip_parallel": AttrSpec(ParallelAttr, None, "split across chips (group-cost, per group)"),
    "tile_parallel": AttrSpec(ParallelAttr, None, "split across tiles"),
}

_TYPE_NAMES = {bool: "bool", int: "int", float: "float", str: "str", tuple: "tuple"}


def _type_ok(expected: Any, value: Any) -> bool:
    if expected is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is Any:
        return True
    if isinstance(expected, tuple):
        return any(_type_ok(e, value) for e in expected)
    return isinstance(value, expected)


class OpDef:
    """One op kind of the op library. Subclass, set the class variables, override methods."""

    kind: ClassVar[str] = ""
    """Full name, ``tx8be.Gemm``."""
    summary: ClassVar[str] = ""
    """One line for tables and hover text."""
    family: ClassVar[str] = "other"
    """Op family: elementwise, activation, matmul, conv, pool, reduce, norm, data, memory, ..."""
    num_operands: ClassVar[int | tuple[int, int | None]] = 1
    """Exact count, or (min, max) with max None for variadic."""
    attrs: ClassVar[dict[str, AttrSpec]] = {}
    """Declared attributes (COMMON_ATTRS are always allowed)."""
    vector_ops: ClassVar[float] = 1.0
    """CGRA operations per iteration point when the op runs on the CT (see the module doc)."""
    window_compute: ClassVar[bool] = False
    """``compute`` on the operand windows of a slice gives the result windows (pointwise
    ops with broadcasting, products, row norms): the host model calls it on the slices
    directly. Otherwise it places the slices in full-size operands (the op's position
    dependence, a conv's padding or a Slice's offsets, is then the reference's own)."""
    psum_combine: ClassVar[Literal["add", "max"]] = "add"
    """How partial results over a reduction split in time combine in the psum buffer."""

    # ------------------------------------------------------------- checking helpers
    def fail(self, message: str) -> Tx8labError:
        """A clear error naming this op kind."""
        return Tx8labError(f"{self.kind}: {message}")

    def check(self, operands: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        """Check operand count, required attributes and attribute types."""
        count = len(operands)
        spec = self.num_operands
        if isinstance(spec, int):
            if count != spec:
                raise self.fail(f"takes {spec} operands, got {count}")
        else:
            low, high = spec
            if count < low or (high is not None and count > high):
                bound = f"{low}..{high}" if high is not None else f"at least {low}"
                raise self.fail(f"takes {bound} operands, got {count}")
        for name, attr in self.attrs.items():
            if name not in attrs:
                if attr.default is REQUIRED:
                    raise self.fail(f"missing required attribute {name!r} ({attr.doc})")
                continue
            value = attrs[name]
            if attr.type is not Any and not _type_ok(attr.type, value):
                want = getattr(attr.type, "__name__", str(attr.type))
                raise self.fail(
                    f"attribute {name!r} must be {want}, got {value!r} ({type(value).__name__})"
                )
        for name, attr in COMMON_ATTRS.items():
            if name in attrs and not _type_ok(attr.type, attrs[name]):
                raise self.fail(f"attribute {name!r} must be {attr.type.__name__}")

    def attr(self, op_or_attrs: Op | Mapping[str, Any], name: str) -> Any:
        """The attribute's value, or its declared default."""
        attrs = op_or_attrs.attrs if isinstance(op_or_attrs, Op) else op_or_attrs
        if name in attrs:
            return attrs[name]
        spec = self.attrs.get(name) or COMMON_ATTRS.get(name)
        if spec is None or spec.default is REQUIRED:
            raise self.fail(f"attribute {name!r} is not set and has no default")
        return spec.default

    # ------------------------------------------------------------- interfaces
    def infer_type(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        """Result types from operand types and attributes (seed ``inferShapes``).

        Raises ``Tx8labError`` naming the op when the operands do not fit.
        """
        self.check(operands, attrs)
        return self._infer(operands, attrs)

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        return (operands[0],)

    def init_layout(self, op: Op) -> str | None:
        """Seed ``layoutInitPass``: the ``layout_str`` the op starts with; None = ``Unknown``.

        Only ops whose layout the hardware fixes have one (the NE's Gemm/MatMul/BatchMatMul
        and Conv); ``layout-transmit`` spreads them to the rest of the graph.
        """
        return None

    def infer_layout(self, op: Op, operand_layouts: Sequence[str | None]) -> str | None:
        """Seed ``inferLayout``: the results' part of ``layout_str`` from the operands' layouts.

        ``operand_layouts`` has one entry per operand (None or ``Unknown``: not known yet).
        Returns one layout per result joined by ``-`` (one name for a one-result op), or
        None when the op cannot say, which stops ``layout-transmit`` there. An op with an
        :meth:`init_layout` always gives its own; the default carries the first known
        layout of an operand with the result's rank (elementwise ops, activations, norms).
        """
        fixed = self._fixed_layouts(op)
        if fixed is not None:
            return join_layout(fixed[len(op.operands) :]) if op.results else None
        return carry_forward(op, operand_layouts)

    def infer_operand_layouts(
        self, op: Op, result_layouts: Sequence[str | None]
    ) -> list[str | None]:
        """Backward ``inferLayout``: each operand's layout from the results' (None: cannot).

        The default gives every operand of the first known result's rank that result's
        layout, carried to the operand's shape; other operands (a broadcast bias) get None.
        """
        fixed = self._fixed_layouts(op)
        if fixed is not None:
            return fixed[: len(op.operands)]
        return carry_backward(op, result_layouts)

    def _fixed_layouts(self, op: Op) -> list[str | None] | None:
        fixed = self.init_layout(op)
        if fixed is None:
            return None
        return split_layout(fixed, len(op.operands) + len(op.results), op.label)

    def op_attr(self, op: Op) -> OpAttr:
        """Seed ``queryOpAttr``; the default is the seed's default ``OpAttr``."""
        return OpAttr(default_layout=_default_layout(op))

    def align_mode(self, op: Op) -> AlignMode:
        """Seed 000 alignment requirement; by default what ``op_attr`` says."""
        return self.op_attr(op).align_mode

    def aligned_view(self, op: Op) -> AlignedView | None:
        """The op on rank-2/4 views of its tensors, for its ALIGN kernel; None: no view.

        Asked by ``layout-align-npu`` for an ALIGN-only op with a tensor of rank 3 or >= 5
        (Cx needs rank 2 or 4, seed 000); see :mod:`tx8lab.core.ops.views`.
        """
        return None

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        """Reference result on the CPU (seed ``ComputeInterface``)."""
        raise NotImplementedError(f"{self.kind}: no reference compute")

    # ------------------------------------------------------------- inputs the kernel overwrites
    def clobbered_operands(self, op: Op) -> tuple[int, ...]:
        """Operand indices whose SPM buffer the op's kernel overwrites (default none).

        After the op runs, such a buffer no longer holds the operand's value (see
        :meth:`clobbered_value`), so the scheduler reloads the operand every time the op
        runs and lets no other op read it afterwards. Declared only where a seed shows the
        kernel's instructions (the module doc lists what was checked).
        """
        return ()

    def clobbered_value(self, op: Op, index: int, inputs: Sequence[Array]) -> Array:
        """What the kernel leaves in operand ``index``'s buffer after it runs.

        ``inputs`` are the op's operands as the kernel got them (whole or one slice),
        ``inputs[index]`` included; the answer has ``inputs[index]``'s shape and the
        operand's element type (the numpy dtype :func:`~tx8lab.core.dtypes.round_to` gives
        it). A host model of the chip writes it into the operand's SPM bytes after the op.

        Raises:
            Tx8labError: the op does not overwrite operand ``index`` (the default: no
                operand), naming the op and what it does overwrite.
        """
        declared = self.clobbered_operands(op)
        what = f"operands {list(declared)}" if declared else "no operand"
        raise self.fail(
            f"{op.label}: its kernel does not overwrite operand {index} (it overwrites "
            f"{what}), so there is no clobbered value to give; see clobbered_operands"
        )

    # ------------------------------------------------------------- slicing
    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        """The dims an :class:`OpStrategy` indexes: result 0's dims, then reduction dims.

        Default: result 0's dims, the last one the channel (loop ``oc``), no reduction.
        """
        return _default_iter_dims(op.results[0].type.shape if op.results else ())

    def operand_dims(self, op: Op) -> tuple[DimMap, ...]:
        """For each operand dim, the iteration dim it follows (None: taken whole).

        Default: numpy broadcasting against result 0 (a ``[C]`` bias follows the channel).
        """
        out = op.results[0].type.shape if op.results else ()
        return tuple(broadcast_map(v.type.shape, out) for v in op.operands)

    def result_dims(self, op: Op) -> tuple[DimMap, ...]:
        """For each result dim, the iteration dim it follows (None: taken whole).

        Default: dim ``i`` follows iteration dim ``i`` where their sizes agree.
        """
        sizes = tuple(d.size for d in self.iter_dims(op))
        return _result_dims(sizes, tuple(r.type.shape for r in op.results))

    def check_strategy(self, op: Op, strategy: OpStrategy) -> tuple[IterDim, ...]:
        """The op's iteration dims, after checking ``strategy`` against them.

        Raises:
            Tx8labError: wrong length, a factor below 1, or a cut of a dim that forbids it;
                the message names the op and the dim.
        """
        dims = self.iter_dims(op)
        fields = [("shard", strategy.shard), ("split", strategy.split)]
        if strategy.chips:
            fields.append(("chips", strategy.chips))
        for field, values in fields:
            if len(values) != len(dims):
                names = ", ".join(f"{d.name}={d.size}" for d in dims)
                raise self.fail(
                    f"{op.label}: {field} {tuple(values)} has {len(values)} entries but the "
                    f"op has {len(dims)} iteration dims ({names})"
                )
            for dim, factor in zip(dims, values, strict=True):
                if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
                    raise self.fail(
                        f"{op.label}: {field} of dim {dim.name} must be an int >= 1, got {factor!r}"
                    )
                if factor == 1:
                    continue
                if field == "shard":
                    allowed = dim.shardable or dim.noc_reduce
                elif field == "split":
                    allowed = dim.splittable
                else:
                    # across chips: what tiles may cut, the batch (dim 0) of any op, and
                    # a reduction (the chips' partial sums are all-reduced after the group)
                    allowed = dim.shardable or dim.reduce or dim is dims[0]
                if not allowed:
                    how = {
                        "shard": "sharded across tiles",
                        "split": "split in time",
                        "chips": "cut across chips",
                    }[field]
                    raise self.fail(
                        f"{op.label}: dim {dim.name} (size {dim.size}) cannot be {how}; "
                        f"set its {field} to 1"
                    )
        for dim, cut, split in zip(dims, strategy.per_tile(), strategy.split, strict=True):
            full = effective_split(dim.size, cut, split)
            if split > full:
                raise self.fail(
                    f"{op.label}: split {split} of dim {dim.name} (size {dim.size}, "
                    f"{-(-dim.size // cut)} per tile) leaves {split - full} of its chunks "
                    f"empty; split it by {full}"
                )
        return dims

    def temporal_slice_shape(self, op: Op, strategy: OpStrategy | None = None) -> SliceShape:
        """Seed ``temporalSliceShape``: the shapes on one tile for one temporal step.

        ``strategy`` None means no sharding and no split (the whole op in one step).

        Raises:
            Tx8labError: the strategy does not fit the op's iteration dims.
        """
        if strategy is None:
            n = len(self.iter_dims(op))
            strategy = OpStrategy((1,) * n, (1,) * n)
        dims = self.check_strategy(op, strategy)
        it = tuple(
            slice_extent(d.size, shard, split)
            for d, shard, split in zip(dims, strategy.per_tile(), strategy.split, strict=True)
        )
        return self.slice_at(op, it)

    def slice_at(self, op: Op, iteration: tuple[int, ...]) -> SliceShape:
        """The slice shapes of an iteration slice of these extents (one per iteration dim)."""
        operands = tuple(self.operand_slice(op, i, iteration) for i in range(len(op.operands)))
        results = tuple(
            _mapped(r.type.shape, m, iteration)
            for r, m in zip(op.results, self.result_dims(op), strict=True)
        )
        return SliceShape(iteration, operands, results)

    def operand_slice(self, op: Op, index: int, iteration: tuple[int, ...]) -> tuple[int, ...]:
        """Slice shape of operand ``index`` for an iteration slice (default: by the map)."""
        return _mapped(op.operands[index].type.shape, self.operand_dims(op)[index], iteration)

    def operand_window(self, op: Op, index: int, iteration: Window) -> Window:
        """Where operand ``index``'s slice sits in the whole operand, for the iteration box.

        ``iteration`` is one ``(start, stop)`` per iteration dim. Default, by
        :meth:`operand_dims`: a dim following an iteration dim of its size takes that box,
        a broadcast dim of size 1 is ``(0, 1)``, a dim taken whole is ``(0, size)``. Ops
        whose operand dims follow an iteration dim with another extent (a conv's halo)
        override this.

        Raises:
            Tx8labError: a dim follows an iteration dim of another size and the op does
                not say where its slice sits.
        """
        value = op.operands[index].type
        return self._mapped_window(op, value.shape, self.operand_dims(op)[index], iteration)

    def result_window(self, op: Op, index: int, iteration: Window) -> Window:
        """Where result ``index``'s slice sits in the whole result (by :meth:`result_dims`)."""
        value = op.results[index].type
        return self._mapped_window(op, value.shape, self.result_dims(op)[index], iteration)

    def window_plan(self, op: Op, index: int, *, result: bool = False) -> WindowPlan | None:
        """:meth:`operand_window` (``result``: :meth:`result_window`) as a :data:`WindowPlan`.

        None when the op gives its own window (a conv's halo): then only calling the method
        with a box says where the slice sits. A caller that needs the windows of many boxes
        (the program, one per command) reads the plan once.

        Raises:
            Tx8labError: as :meth:`operand_window`.
        """
        cls = type(self)
        if cls._mapped_window is not OpDef._mapped_window:
            return None
        if result:
            if cls.result_window is not OpDef.result_window:
                return None
            return self._window_plan(op, op.results[index].type.shape, self.result_dims(op)[index])
        if cls.operand_window is not OpDef.operand_window:
            return None
        shape = op.operands[index].type.shape
        return self._window_plan(op, shape, self.operand_dims(op)[index])

    def _mapped_window(
        self, op: Op, shape: Sequence[int], dim_map: DimMap, iteration: Window
    ) -> Window:
        return tuple(
            iteration[p] if type(p) is int else p  # type: ignore[misc]
            for p in self._window_plan(op, shape, dim_map)
        )

    def _window_plan(self, op: Op, shape: Sequence[int], dim_map: DimMap) -> WindowPlan:
        sizes = [d.size for d in self.iter_dims(op)]
        out: list[int | tuple[int, int]] = []
        for e, (size, m) in enumerate(zip(shape, dim_map, strict=True)):
            if m is None:
                out.append((0, size))
            elif size == sizes[m]:
                out.append(m)
            elif size == 1:
                out.append((0, 1))
            else:
                raise self.fail(
                    f"{op.label}: dim {e} (size {size}) follows iteration dim {m} (size "
                    f"{sizes[m]}) and the op library does not say where its slice sits; "
                    "give the op an operand_window"
                )
        return tuple(out)

    def imm_bytes(self, op: Op, slice_shape: SliceShape) -> int:
        """Seed ``getImmSpSize``: scratch SPM bytes one slice needs (default none)."""
        return 0

    # ------------------------------------------------------------- cost
    def vector_ops_per_element(self, op: Op) -> float:
        """CGRA operations per iteration point of a CT op (the class's ``vector_ops``)."""
        return self.vector_ops

    def compute_dtype(self, op: Op) -> str:
        """Element type the engine works in: operand 0's (result 0's without operands)."""
        if op.operands:
            return op.operands[0].type.dtype
        return op.results[0].type.dtype if op.results else "f32"

    def ne_shape(self, op: Op, slice_shape: SliceShape) -> tuple[int, int, int, int]:
        """``(batch, M, K, N)`` of the NE products one slice runs (NE ops only)."""
        raise self.fail("is not an NE op: it has no matrix-product shape")

    def cost(
        self, op: Op, slice_shape: SliceShape, hw: ChipConfig, *, tiles: int | None = None
    ) -> hwcost.Cost:
        """Seed ``getOpClockCycle``: one slice on the op's engine (``op_attr(op).engine``).

        ``tiles`` is the number of tiles running at once (their DMA share of DDR).
        """
        engine = self.op_attr(op).engine
        if engine is Engine.NE:
            batch, m, k, n = self.ne_shape(op, slice_shape)
            return hwcost.ne_cost(m, k, n, self.compute_dtype(op), hw, batch=batch)
        if engine is Engine.CT:
            return hwcost.ct_cost(
                slice_shape.points, self.vector_ops_per_element(op), self.compute_dtype(op), hw
            )
        if engine is Engine.RDMA:
            return hwcost.dma_cost("ld", self._moved(op, slice_shape)[0], hw, active_tiles=tiles)
        if engine is Engine.WDMA:
            return hwcost.dma_cost("st", self._moved(op, slice_shape)[0], hw, active_tiles=tiles)
        if engine is Engine.TDMA:
            return hwcost.tdma_cost(self._moved(op, slice_shape)[0], hw)
        raise self.fail(f"{op.label}: no cost model for engine {engine.value}")

    def _moved(self, op: Op, slice_shape: SliceShape) -> tuple[int, int]:
        """(bytes, innermost rows) a DMA / TDMA op's slice moves.

        Its results' slices (a load, a TDMA move), or its operands' (a store, WDMA).
        """
        wdma = self.op_attr(op).engine is Engine.WDMA
        values = op.operands if wdma else op.results
        shapes = slice_shape.operands if wdma else slice_shape.results
        moved = sum(
            value_bytes(s, v.type.dtype, op_layout(op)) for s, v in zip(shapes, values, strict=True)
        )
        return moved, sum(math.prod(s[:-1]) if s else 1 for s in shapes)

    def law(
        self, op: Op, slice_shape: SliceShape, hw: ChipConfig, *, tiles: int = 1
    ) -> hwlaws.Timed:
        """The simulator's time of one slice on the op's engine (``tx8lab.hw.laws``).

        The same countable work as :meth:`cost` (NE M/K/N, CT elements x vector ops, DMA
        bytes), timed by the fitted laws. A TDMA move counts one inner iteration per
        contiguous innermost row of its result slice (the reading of a GatherScatter
        over the slice).
        """
        engine = self.op_attr(op).engine
        if engine is Engine.NE:
            batch, m, k, n = self.ne_shape(op, slice_shape)
            return hwlaws.ne(m, k, n, self.compute_dtype(op), hw, batch=batch)
        if engine is Engine.CT:
            return hwlaws.ct(
                slice_shape.points, self.vector_ops_per_element(op), self.compute_dtype(op), hw
            )
        if engine in (Engine.RDMA, Engine.WDMA, Engine.TDMA):
            moved, rows = self._moved(op, slice_shape)
            if engine is Engine.TDMA:
                return hwlaws.tdma(max(1, rows), -(-moved // max(1, rows)), hw)
            name = "rdma" if engine is Engine.RDMA else "wdma"
            return hwlaws.dma(name, moved, hw, active_tiles=tiles)
        raise self.fail(f"{op.label}: no engine law for engine {engine.value}")

    def cycles(
        self, op: Op, slice_shape: SliceShape, hw: ChipConfig, *, tiles: int | None = None
    ) -> int:
        """Cycles of one slice (``cost(...).cycles``)."""
        return self.cost(op, slice_shape, hw, tiles=tiles).cycles

    def explain(
        self, op: Op, slice_shape: SliceShape, hw: ChipConfig, *, tiles: int | None = None
    ) -> str:
        """The cost formula of one slice with its numbers."""
        return f"{op.label} {tuple(slice_shape.iteration)}: " + hwcost.explain(
            self.cost(op, slice_shape, hw, tiles=tiles)
        )

    # ------------------------------------------------------------- filled by later issues
    def tile_sharding_split(self, op: Op, param: ShardingSplitParam) -> list[ShardingSplitParam]:
        """Seed ``tileShardingSplit`` by the op's dim maps: one factor pair per operand.

        An operand dim follows the iteration dim ``operand_dims`` names (its factors), a dim
        taken whole gets 1; the operand's sharding (split) is cleared when the request shards
        (splits) an iteration dim the op forbids, or cuts a result dim it takes whole. Every
        family but BatchNorm (the seed's own code) uses this.
        """
        dims = self.iter_dims(op)
        shard = iteration_vector(self, op, dims, param.out_sharding, "outSharding")
        split = iteration_vector(self, op, dims, param.out_split, "outSplit")
        if shard and any(
            f > 1 and not (d.shardable or d.noc_reduce) for f, d in zip(shard, dims, strict=True)
        ):
            shard = []
        if split and any(f > 1 and not d.splittable for f, d in zip(split, dims, strict=True)):
            split = []
        return [
            ShardingSplitParam(
                tuple(1 if d is None else shard[d] for d in omap) if shard else (),
                tuple(1 if d is None else split[d] for d in omap) if split else (),
            )
            for omap in self.operand_dims(op)
        ]

    def back_window(self, op: Op, window: Window) -> list[Window]:
        """Seed ``backWindow``: the window of each operand that a window of result 0 reads.

        The seed gives only the signature (``std::vector<WindowParam>
        backWindow(const WindowParam)`` in ShardingInterface, beside ``tileShardingSplit``
        which maps the split factors the same way, output to operands); its ``WindowParam``
        is not shown. Reading chosen: a window is one ``(start, stop)`` per dim, in
        elements. The result window fixes the iteration dims result 0 follows; every
        other iteration dim (a reduction: a matmul's K, a conv's input channels) is taken
        whole; each operand's window is then :meth:`operand_window` of that box, so a
        conv's or pool's halo (clipped to the input: padding is not data), a broadcast
        dim's ``(0, 1)`` and a dim read whole come out as the scheduler's slices use them.

        Raises:
            Tx8labError: the window's rank is not result 0's, or a dim's ``(start, stop)``
                is not ``0 <= start < stop <= size``; the message names the op.
        """
        if not op.results:
            raise self.fail(f"{op.label}: back_window needs a result window; the op has none")
        shape = op.results[0].type.shape
        if len(window) != len(shape):
            raise self.fail(
                f"{op.label}: back_window got a window of {len(window)} dims for a result of "
                f"rank {len(shape)} {list(shape)}; give one (start, stop) per result dim"
            )
        for e, (span, size) in enumerate(zip(window, shape, strict=True)):
            if len(span) != 2 or not 0 <= span[0] < span[1] <= size:
                raise self.fail(
                    f"{op.label}: back_window dim {e}: {tuple(span)} is not a (start, stop) "
                    f"with 0 <= start < stop <= {size}"
                )
        box = [(0, d.size) for d in self.iter_dims(op)]
        for e, m in enumerate(self.result_dims(op)[0]):
            if m is not None:
                box[m] = (int(window[e][0]), int(window[e][1]))
        return [self.operand_window(op, i, tuple(box)) for i in range(len(op.operands))]

    # ------------------------------------------------------------- codegen (genOpCode)
    c_param: ClassVar[str] = ""
    """The family's C parameter struct (``tx8lab.core.codegen_c.PARAM_STRUCTS``); "" = the
    kind has no codegen yet."""
    c_multi_results: ClassVar[bool] = False
    """The C function takes ``TSR *const *outs, int32_t num_outs`` (ops with several results)."""

    def codegen(self, op: Op, call: CCall) -> str:
        """Seed ``genOpCode``: the C call of one slice of ``op`` in main.c (no ``;``).

        The default serves every compute family: ``op_<name>(&(PARAM){...}, ins, imm, psum,
        outs)`` with the family's :meth:`codegen_fields` (see ``tx8lab.core.codegen_c``).

        Raises:
            Tx8labError: the kind has no ``c_param`` (no codegen); the message names the op.
        """
        if not self.c_param:
            raise Tx8labError(
                f"{op.label}: {self.kind} has no codegen in the op library; give its OpDef "
                "family a c_param (a struct of tx8lab/core/codegen_c.py PARAM_STRUCTS) and, "
                "if the slice alone does not describe it, codegen_fields"
            )
        fields = self.codegen_fields(op, call.slice)
        return compute_call(self, call, fields, self.compute_dtype(op))

    def codegen_fields(self, op: Op, slice_shape: SliceShape) -> dict[str, Any]:
        """The family's own parameter fields for one slice (default: none)."""
        return {}


def iteration_vector(
    defn: OpDef, op: Op, dims: Sequence[IterDim], values: Sequence[int], what: str
) -> list[int]:
    """Output-indexed factors (plus one per extra iteration dim) -> iteration-dim factors.

    ``[]`` when the vector cuts a result dim the op takes whole (the seed's cleared vector).
    """
    rmap = defn.result_dims(op)[0] if op.results else ()
    extra = [i for i in range(len(dims)) if i not in rmap]
    rank = len(rmap)
    if len(values) not in (rank, rank + len(extra)):
        shape = op.results[0].type.shape if op.results else ()
        names = ", ".join(dims[i].name for i in extra)
        raise defn.fail(
            f"{op.label}: tileShardingSplit needs {what} of the output's rank {rank} "
            f"(shape {shape})"
            + (f", optionally plus one for each of {names}" if extra else "")
            + f", got {tuple(values)}"
        )
    out = [1] * len(dims)
    for e, d in enumerate(rmap):
        if d is not None:
            out[d] = values[e]
        elif values[e] != 1:
            out = []  # a result dim the op takes whole cannot be cut
            return out
    for k, i in enumerate(extra):
        if rank + k < len(values):
            out[i] = values[rank + k]
    return out


class StopsLayout(OpDef):
    """Layout inference for ops whose result dims lose what the operands' dims meant.

    Seed 001: "遇到无法推导的节点 (如 Reshape, BroadCast) 则终止推导": both directions
    answer None, so ``layout-transmit`` stops there. Mixed in before the op's base class.
    """

    def infer_layout(self, op: Op, operand_layouts: Sequence[str | None]) -> str | None:
        return None

    def infer_operand_layouts(
        self, op: Op, result_layouts: Sequence[str | None]
    ) -> list[str | None]:
        return [None] * len(op.operands)


def _default_layout(op: Op) -> str:
    """Seed: ``Tensor`` when dim 0 is 1 (no batch), ``NTensor`` otherwise (first operand)."""
    if op.operands:
        shape = op.operands[0].type.shape
    elif op.results:
        shape = op.results[0].type.shape
    else:
        shape = ()
    return tensor_layout(shape)


def carry_forward(op: Op, operand_layouts: Sequence[str | None]) -> str | None:
    """The first known layout of an operand with result 0's rank, carried to every result.

    The default :meth:`OpDef.infer_layout`: right for ops whose result dims mean what
    their full-rank operands' dims mean (elementwise, activations, norms, Concatenate,
    Slice, Pad, pools on NHWC ...). None when no such operand is known yet.
    """
    if not op.results or len(operand_layouts) != len(op.operands):
        return None
    rank = op.results[0].type.rank
    for layout, value in zip(operand_layouts, op.operands, strict=True):
        if is_known(layout) and value.type.rank == rank:
            parts = [carry_layout(layout, r.type.shape) for r in op.results]
            return None if None in parts else join_layout(parts)
    return None


def carry_backward(op: Op, result_layouts: Sequence[str | None]) -> list[str | None]:
    """The default :meth:`OpDef.infer_operand_layouts`.

    The first known result's layout, carried to each operand of its rank; None for the
    other operands.
    """
    for layout, result in zip(result_layouts, op.results, strict=False):
        if is_known(layout):
            return [
                carry_layout(layout, v.type.shape) if v.type.rank == result.type.rank else None
                for v in op.operands
            ]
    return [None] * len(op.operands)


def _mapped(shape: Sequence[int], dim_map: DimMap, iteration: Sequence[int]) -> tuple[int, ...]:
    """Slice of a ``shape`` whose dims follow ``dim_map`` (unmapped dims stay whole)."""
    return tuple(
        d if m is None else min(d, iteration[m]) for d, m in zip(shape, dim_map, strict=True)
    )


def as_tuple(value: Any) -> tuple[Any, ...]:
    """Attribute value as a tuple (a scalar becomes a 1-tuple)."""
    return tuple(value) if isinstance(value, tuple | list) else (value,)


def enum_value(value: Any) -> Any:
    """The ``.value`` of an enum, the value itself otherwise."""
    return value.value if isinstance(value, enum.Enum) else value


def f32(array: Array) -> Array:
    """Float input promoted for computing (float32; integers kept)."""
    return array.astype(np.float32) if array.dtype.kind == "f" else array
