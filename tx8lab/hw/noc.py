"""The tile mesh of one chip: tile coordinates, routes, links and the snake ring.

Spec: seed 001 (TX8 is a spatial machine: tiles exchange data over the NoC), the preset's
``mesh_shape`` (4x4 on the TX81: [doc] S1, S2), the reference's hardware table (tile id
from 2-D ``4*phyTileY + phyTileX``; each tile has 4 NoC directions of 128 GB/s send and
128 GB/s receive; the snake ring ``[0,1,2,3,7,11,15,14,13,12,8,9,10,6,5,4]`` of the TLE NoC
GEMM example, S10 ``TILE_PHYSICAL_RELATION``). Imports nothing from ``tx8lab.core``.

A *link* is one direction of the wire between two neighbouring tiles, ``(from, to)``; the
simulator treats each as a resource that carries one transfer's payload at a time.

Readings chosen where the sources are vague:

- **Tile ids** are row-major over the mesh, ``tile = cols * y + x`` (the reference's
  current implementation, ``4*phyTileY + phyTileX``); ``x`` is the column.
- **Routing** is dimension order, X (along the row) first, then Y. No source gives the
  TX8 router's algorithm; XY is the usual deadlock-free choice on a 2-D mesh and gives
  every pair one minimal route (``|dx| + |dy|`` hops), so a transfer's links are known
  without modelling the router.
- **The snake ring** is the source's order on the 4x4 mesh. On other meshes with an even
  number of rows it is built the same way (along row 0, down the last column, then back
  and forth over the remaining columns from the bottom row up); a mesh with no
  nearest-neighbour cycle (one row or column, or an odd number of rows here) has none.
"""

from __future__ import annotations

import functools

from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

#: One direction of a mesh link: (from tile, to tile), neighbours on the mesh.
Link = tuple[int, int]


def _check_tile(tile: int, hw: ChipConfig, what: str) -> None:
    if not isinstance(tile, int) or isinstance(tile, bool) or not 0 <= tile < hw.tiles_per_chip:
        raise Tx8labError(
            f"noc: {what} tile {tile!r} is not on the {hw.mesh_rows}x{hw.mesh_cols} mesh "
            f"(tiles 0..{hw.tiles_per_chip - 1}; hw mesh_shape)"
        )


def coords(tile: int, hw: ChipConfig) -> tuple[int, int]:
    """``(x, y)`` of ``tile``: its column and row (module docstring).

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> coords(6, TX81)
        (2, 1)
    """
    _check_tile(tile, hw, "a")
    return tile % hw.mesh_cols, tile // hw.mesh_cols


def tile_at(x: int, y: int, hw: ChipConfig) -> int:
    """The tile in column ``x`` and row ``y``."""
    if not (0 <= x < hw.mesh_cols and 0 <= y < hw.mesh_rows):
        raise Tx8labError(
            f"noc: ({x}, {y}) is off the {hw.mesh_rows}x{hw.mesh_cols} mesh (hw mesh_shape)"
        )
    return y * hw.mesh_cols + x


@functools.lru_cache(maxsize=4096, typed=True)
def route(src: int, dst: int, hw: ChipConfig) -> tuple[Link, ...]:
    """The links a transfer from ``src`` to ``dst`` crosses: X first, then Y.

    Kept per (src, dst, chip): the simulator asks it for every NoC transfer.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> route(0, 6, TX81)
        ((0, 1), (1, 2), (2, 6))
        >>> route(5, 5, TX81)
        ()
    """
    _check_tile(src, hw, "source")
    _check_tile(dst, hw, "destination")
    (x, y), (x1, y1) = coords(src, hw), coords(dst, hw)
    out: list[Link] = []
    here = src
    while x != x1:
        x += 1 if x1 > x else -1
        nxt = tile_at(x, y, hw)
        out.append((here, nxt))
        here = nxt
    while y != y1:
        y += 1 if y1 > y else -1
        nxt = tile_at(x, y, hw)
        out.append((here, nxt))
        here = nxt
    return tuple(out)


def hops(src: int, dst: int, hw: ChipConfig) -> int:
    """Router hops from ``src`` to ``dst`` (the Manhattan distance on the mesh)."""
    return len(route(src, dst, hw))


def links(hw: ChipConfig) -> tuple[Link, ...]:
    """Every link direction of the mesh, by source tile then destination."""
    out: list[Link] = []
    for t in range(hw.tiles_per_chip):
        x, y = coords(t, hw)
        for dx, dy in ((0, -1), (-1, 0), (1, 0), (0, 1)):
            if 0 <= x + dx < hw.mesh_cols and 0 <= y + dy < hw.mesh_rows:
                out.append((t, tile_at(x + dx, y + dy, hw)))
    return tuple(sorted(out))


def snake_ring(hw: ChipConfig) -> tuple[int, ...]:
    """The tiles in a nearest-neighbour cycle (module docstring): ring collectives' order.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> snake_ring(TX81)
        (0, 1, 2, 3, 7, 11, 15, 14, 13, 12, 8, 9, 10, 6, 5, 4)

    Raises:
        Tx8labError: the mesh has no such cycle built this way (one row or column, or an
            odd number of rows).
    """
    rows, cols = hw.mesh_rows, hw.mesh_cols
    if rows == 1 and cols == 1:
        return (0,)
    if rows < 2 or cols < 2 or rows % 2:
        raise Tx8labError(
            f"noc: the {rows}x{cols} mesh has no snake ring (it needs at least 2 rows and "
            "2 columns and an even number of rows); use a mesh_shape such as 4x4"
        )
    ring = [tile_at(x, 0, hw) for x in range(cols)]
    ring += [tile_at(cols - 1, y, hw) for y in range(1, rows)]
    for k, y in enumerate(range(rows - 1, 0, -1)):
        xs = range(cols - 2, -1, -1) if k % 2 == 0 else range(cols - 1)
        ring += [tile_at(x, y, hw) for x in xs]
    return tuple(ring)


__all__ = ["Link", "coords", "hops", "links", "route", "snake_ring", "tile_at"]
