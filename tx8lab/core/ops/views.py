"""Rank-2/4 views of ALIGN-only ops whose tensors have another rank (layout-align-npu).

Spec: seed 000 ("ALIGN Only" ops have only an ALIGN kernel; "Odd-Dimension Output": Cx
needs rank 2 or 4) and seed 001 (BatchNorm's ALIGN kernel takes rank 2/3/4 input; TDMA
``op_reshape``). An ALIGN kernel cannot read or write a rank-3 or rank-5 tensor in Cx,
because there is none; a TX8 frontend hands it rank-4 (or rank-2) views instead. On
compact (Tensor/NTensor) data a view is free: row-major bytes do not move when the
shape changes.

:class:`AlignedView` says how an op reads its operands and what its attributes become;
``OpDef.aligned_view`` gives it (None: the op has no such view). The views here regroup
axes, and each one keeps the row-major order, so reshaping the viewed result back gives
the op's own result:

- **rank 3** ``[N, W, C]`` -> ``[N, 1, W, C]`` (a 1 after the batch dim, the view
  :func:`tx8lab.core.layouts.aligned_view` names; dim 0 and the channel C keep their
  places, so the layout name and the Cx channel blocks are the rank-3 tensor's own);
- **rank >= 5** -> rank 4: dims of size 1 dropped, then neighbouring dims merged, outer
  ones first, where the op allows (``can_merge``); never the last dim (C). No such
  regrouping: no view.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: New axis i of a view holds the old axes ``groups[i]`` (``()``: an inserted 1).
Groups = tuple[tuple[int, ...], ...]

#: Ranks an ALIGN kernel's tensors may have: 2 and 4 (seed 000), and 0/1 (one pixel).
KERNEL_RANKS = frozenset({0, 1, 2, 4})


@dataclass(frozen=True)
class AlignedView:
    """An op computed on rank-2/4 views of its operands."""

    operands: tuple[tuple[int, ...], ...]
    """The shape each operand is read as (a free reshape of compact data)."""
    attrs: Mapping[str, Any] = field(default_factory=dict)
    """Attributes that change (axes renumbered); the others are kept."""
    kind: str | None = None
    """Another op kind that computes the view (BatchMatMul -> MatMul), else the op's own."""


def needs_view(operand_ranks: Sequence[int], result_ranks: Sequence[int]) -> bool:
    """Whether an ALIGN kernel cannot take these tensors as they are.

    A result must be rank 2 or 4 (the op's output is Cx); an operand rank 0, 1, 2 or 4
    (a rank-0/1 operand is a broadcast vector, which meets both layouts). An op whose
    tensors all have rank <= 1 needs none: one pixel's Cx is its compact image.
    """
    if all(r <= 1 for r in (*operand_ranks, *result_ranks)):
        return False
    return any(r not in (2, 4) for r in result_ranks) or any(
        r not in KERNEL_RANKS for r in operand_ranks
    )


def group_axes(
    shape: Sequence[int],
    can_merge: Callable[[tuple[int, ...], tuple[int, ...]], bool] = lambda left, right: False,
    can_drop: Callable[[int], bool] = lambda axis: True,
) -> Groups | None:
    """How a rank-``len(shape)`` tensor regroups to rank 2 or 4 (see the module docstring).

    ``can_merge(left, right)`` says whether two neighbouring groups may become one,
    ``can_drop(axis)`` whether a dim of size 1 may go. None when rank 4 is out of reach
    (and for rank 0/1, which needs no view: one pixel's Cx is its compact image).
    """
    rank = len(shape)
    if rank in (2, 4):
        return tuple((a,) for a in range(rank))
    if rank == 3:
        return ((0,), (), (1,), (2,))
    if rank < 2:
        return None
    groups: list[tuple[int, ...]] = [(a,) for a in range(rank)]
    for a in range(rank - 1):
        if len(groups) > 4 and shape[a] == 1 and can_drop(a):
            groups.remove((a,))
    i = 0
    while len(groups) > 4 and i < len(groups) - 2:
        if can_merge(groups[i], groups[i + 1]):
            groups[i : i + 2] = [groups[i] + groups[i + 1]]
        else:
            i += 1
    return tuple(groups) if len(groups) == 4 else None


def view_shape(shape: Sequence[int], groups: Groups) -> tuple[int, ...]:
    """``shape`` regrouped: each new dim is the product of its group's dims."""
    return tuple(math.prod(shape[a] for a in g) for g in groups)


def new_axis(groups: Groups, axis: int) -> int:
    """The new axis that holds old ``axis``."""
    return next(i for i, g in enumerate(groups) if axis in g)


def inner_size(shape: Sequence[int], group: tuple[int, ...]) -> int:
    """The product of a group's dims after its first (what one step of the first spans)."""
    return math.prod(shape[a] for a in group[1:])


__all__ = [
    "KERNEL_RANKS",
    "AlignedView",
    "Groups",
    "group_axes",
    "inner_size",
    "needs_view",
    "new_axis",
    "view_shape",
]
