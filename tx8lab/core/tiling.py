"""How an op is cut across tiles and time: its factors and the piece one tile handles.

Spec: seed 001 ("ShardingInterface": ``temporalSliceShape``; DataSplitNew's sharding and
split vectors). Plain frozen data that the op library (``tx8lab.core.ops.registry``) reads
and the schedule (``tx8lab.core.schedule``) produces, kept below both so neither imports
the other for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class OpStrategy:
    """How one op is distributed: tiles per dim (sharding) and temporal splits per dim.

    Both tuples index the op's iteration dims as its op-library entry defines them (for
    most ops the result dims; a matmul adds its reduction dim K last). The product of
    ``shard`` is at most the tile count; a split of 1 means no loop over that dim.
    """

    shard: tuple[int, ...]
    split: tuple[int, ...]
    chips: tuple[int, ...] = ()
    """Chips per dim (multi-chip data/tensor parallel, group-cost's ``dp``/``tp``); ``()``
    is one chip. A tile's slice of a dim is ``ceil(ceil(size / chips) / shard) / split``."""

    def per_tile(self) -> tuple[int, ...]:
        """Pieces each dim is cut into across chips and tiles (``chips * shard``)."""
        if not self.chips:
            return self.shard
        return tuple(c * s for c, s in zip(self.chips, self.shard, strict=True))


@dataclass(frozen=True, slots=True)
class SliceShape:
    """Seed ``temporalSliceShape``: what one tile handles in one temporal step."""

    iteration: tuple[int, ...]
    """Slice of each iteration dim."""
    operands: tuple[tuple[int, ...], ...]
    """Slice shape of each operand."""
    results: tuple[tuple[int, ...], ...]
    """Slice shape of each result."""

    @property
    def points(self) -> int:
        """Points of the iteration slice (output elements x reduction extent)."""
        return math.prod(self.iteration)


__all__ = ["OpStrategy", "SliceShape"]
