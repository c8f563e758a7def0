"""Helpers shared by the op-library modules: attribute checks, axes, alignment presets.

Spec: docs/ops.md (conventions: negative axes numpy style, NHWC, pads order) and seed 001
``queryOpAttr`` (the :class:`~tx8lab.core.ops.registry.OpAttr` presets below).

Readings chosen where the seed is vague:

- Tuple attributes are checked element by element here (the registry only checks that the
  value is a tuple), so a message names the attribute and the bad entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tx8lab.core.attrs import AlignMode, Engine
from tx8lab.core.dtypes import FLOAT_DTYPES
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.ops.registry import OpAttr, OpDef, _default_layout

INDEX_DTYPES = frozenset({"i32", "i64"})


def int_tuple(
    opdef: OpDef,
    attrs: Mapping[str, Any],
    name: str,
    length: int | None = None,
    minimum: int | None = None,
) -> tuple[int, ...]:
    """Attribute ``name`` as a tuple of ints, checked (length, lower bound)."""
    value = opdef.attr(attrs, name)
    if not isinstance(value, tuple | list):
        value = (value,)
    out: list[int] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | np.integer):
            raise opdef.fail(f"attribute {name!r} must hold ints, got {tuple(value)!r}")
        out.append(int(item))
    if length is not None and len(out) != length:
        raise opdef.fail(f"attribute {name!r} needs {length} entries, got {tuple(out)!r}")
    if minimum is not None and any(v < minimum for v in out):
        raise opdef.fail(f"attribute {name!r} entries must be >= {minimum}, got {tuple(out)!r}")
    return tuple(out)


def norm_axis(opdef: OpDef, axis: Any, rank: int, name: str = "axis") -> int:
    """``axis`` in ``[-rank, rank)`` made non-negative, or an error naming the attribute."""
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise opdef.fail(f"attribute {name!r} must be an int, got {axis!r}")
    value = int(axis)
    if not -rank <= value < rank:
        raise opdef.fail(f"{name} {value} is out of range for rank {rank}")
    return value + rank if value < 0 else value


def require_float(opdef: OpDef, ttype: TensorType, what: str = "operand 0") -> None:
    """Error unless ``ttype`` has a floating-point element type."""
    if ttype.dtype not in FLOAT_DTYPES:
        raise opdef.fail(f"{what} must have a float element type, got {ttype.dtype}")


def require_rank(opdef: OpDef, ttype: TensorType, ranks: Sequence[int], what: str) -> None:
    """Error unless ``ttype``'s rank is one of ``ranks``."""
    if ttype.rank not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise opdef.fail(f"{what} must have rank {want}, got {ttype}")


def same_dtype(opdef: OpDef, operands: Sequence[TensorType], names: Sequence[str]) -> None:
    """Error unless every operand has the element type of the first."""
    for ttype, name in zip(operands[1:], names[1:], strict=False):
        if ttype.dtype != operands[0].dtype:
            raise opdef.fail(
                f"{name} has element type {ttype.dtype} but {names[0]} has "
                f"{operands[0].dtype}; insert a Convert"
            )


def align_attr(op: Op, **changes: Any) -> OpAttr:
    """An ALIGN-only op's attributes (seed 000 "ALIGN Only" list), CT engine by default."""
    values: dict[str, Any] = {"align_mode": AlignMode.ALIGN, "default_layout": _default_layout(op)}
    values.update(changes)
    return OpAttr(**values)


def both_attr(op: Op, **changes: Any) -> OpAttr:
    """A BOTH op's attributes (layout follows its neighbours)."""
    values: dict[str, Any] = {"align_mode": AlignMode.BOTH, "default_layout": _default_layout(op)}
    values.update(changes)
    return OpAttr(**values)


NE = Engine.NE
