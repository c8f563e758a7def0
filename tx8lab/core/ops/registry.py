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
| ``compute`` | :meth:`OpDef.compute` (numpy) |
| ``getImmSpSize`` / ``tileShardingSplit`` / ``temporalSliceShape`` / ``backWindow`` /
  ``genOpCode`` | stubs that raise ``NotImplementedError`` naming the op and the issue that
  fills them; the default pipeline never calls them until then |

Readings chosen where the seed is vague:

- Attributes not given on an op take the defaults declared in ``OpDef.attrs`` and are not
  printed (as MLIR leaves default-valued attributes out). Undeclared attributes are
  allowed: they are discardable attributes that passes attach (``layout_str``,
  ``dev_info``, ``group_tag`` ...).
- Seed ``inferLayout`` is two methods, forward (:meth:`OpDef.infer_layout`) and backward
  (:meth:`OpDef.infer_operand_layouts`), because ``layoutTransmitPass`` propagates both
  ways; either answers None where the op cannot carry a layout, which stops the pass
  there. Strings go through :mod:`tx8lab.core.layout_str`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from tx8lab.core.attrs import AlignMode, DevInfo, Engine, ParallelAttr
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.layout_str import (
    carry_layout,
    is_known,
    join_layout,
    split_layout,
    tensor_layout,
)
from tx8lab.errors import Tx8labError

ALL_BITS = 0xFFFFFFFFFFFFFFFF

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
    "chip_parallel": AttrSpec(ParallelAttr, None, "split across chips"),
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

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        """Reference result on the CPU (seed ``ComputeInterface``)."""
        raise NotImplementedError(f"{self.kind}: no reference compute")

    # ------------------------------------------------------------- filled by later issues
    def imm_bytes(self, op: Op, slice_shape: Sequence[int]) -> int:
        """Seed ``getImmSpSize``: scratch SPM bytes for one slice."""
        raise NotImplementedError(f"{self.kind}: imm_bytes comes with the group-schedule issue")

    def tile_sharding_split(self, op: Op, param: Any) -> list[Any]:
        """Seed ``tileShardingSplit``: operand split from the output split."""
        raise NotImplementedError(
            f"{self.kind}: tile_sharding_split comes with the sharding-search issue"
        )

    def temporal_slice_shape(self, op: Op, param: Any) -> list[Any]:
        """Seed ``temporalSliceShape``."""
        raise NotImplementedError(
            f"{self.kind}: temporal_slice_shape comes with the sharding-search issue"
        )

    def back_window(self, op: Op, param: Any) -> list[Any]:
        """Seed ``backWindow``."""
        raise NotImplementedError(f"{self.kind}: back_window comes with the sharding-search issue")

    def codegen(self, op: Op) -> str:
        """Seed ``genOpCode``: the C call for this op in main.c."""
        raise NotImplementedError(f"{self.kind}: codegen comes with the codegen issue")


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


def as_tuple(value: Any) -> tuple[Any, ...]:
    """Attribute value as a tuple (a scalar becomes a 1-tuple)."""
    return tuple(value) if isinstance(value, tuple | list) else (value,)


def enum_value(value: Any) -> Any:
    """The ``.value`` of an enum, the value itself otherwise."""
    return value.value if isinstance(value, enum.Enum) else value


def f32(array: Array) -> Array:
    """Float input promoted for computing (float32; integers kept)."""
    return array.astype(np.float32) if array.dtype.kind == "f" else array
