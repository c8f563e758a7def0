"""Partial-sum reductions over the NoC: direct, tree and ring, as command streams.

Spec: issue 20 (sharding with communication: a reduction dim sharded across tiles, its
partial sums reduced over the NoC by a ring, a tree or direct sends, chosen by cost), seed
001 (SecsInfo sharding modes 1-3: tiles holding partial sums of one output communicate;
STAGEIC2OC, the tensor-parallel reduction segment). Each pattern is built as per-tile
:class:`~tx8lab.hw.sim.SimCommand` streams (DTE sends over the mesh, blocking receives,
CT adds, the WDMA store of the result) and timed by the tile simulator, so the choice
sees the link contention, the adds and the stores. Imports nothing from ``tx8lab.core``.

The contract: each of ``tiles`` holds a partial sum of the same ``num_bytes`` piece (in
SPM at ``[0, num_bytes)``, ``dtype`` elements); after the reduction the sum is in DDR.

- **direct**: every other tile sends its partial to the root (the first of ``tiles``),
  which adds each as it lands and stores the sum.
- **tree**: a binomial tree over ``tiles`` in order: in round ``r`` the tile at position
  ``i`` with bit ``r`` set (and no lower one) sends its running sum to position
  ``i - 2**r``, which adds it; the root stores.
- **ring**: a reduce-scatter around ``tiles`` in order (pass the mesh's snake ring, or a
  part of it, so each step is one hop): the piece is cut in ``n`` chunks; in step ``s``
  tile ``i`` sends its running sum of chunk ``(i - s) mod n`` to tile ``i + 1``, which adds
  it; after ``n - 1`` steps tile ``i`` holds the whole sum of chunk ``(i + 1) mod n`` and
  stores it, so the ``n`` stores run at once.

Readings chosen where the sources are vague:

- **Landing space.** A payload lands in a staging area of the receiver's SPM after its
  piece: the root of ``direct`` has one per sender (so all send at once, ``n - 1`` pieces
  of SPM), ``tree`` and ``ring`` two that alternate. A send into a staging area waits
  (``after``) for the receiver's add that last read that area, the receiver readiness the
  board's Direct-DTE notes describe; nothing else orders tiles.
- **Program order** per step: sends first, then the receive, then the add, so no tile's
  kernel core blocks in a receive with its own send not issued.
- **Chunks** of the ring split the elements as evenly as the CT lanes allow; a piece
  smaller than ``n`` lanes gives some tiles empty chunks (their sends carry 0 bytes).
- **Ties** between patterns go to the simpler one: direct, then tree, then ring.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tx8lab.errors import Tx8labError
from tx8lab.hw import laws, noc
from tx8lab.hw.config import ChipConfig, element_bytes
from tx8lab.hw.sim import Range, SimCommand, SimResult, simulate

Pattern = Literal["direct", "tree", "ring"]
#: The patterns, simplest first (the order ties go in).
PATTERNS: tuple[Pattern, ...] = ("direct", "tree", "ring")


@dataclass(frozen=True)
class Reduction:
    """One pattern's streams and their simulated run."""

    pattern: Pattern
    streams: dict[int, list[SimCommand]]
    result: SimResult

    @property
    def cycles(self) -> int:
        """The slowest tile's body: the reduction's time."""
        return self.result.body_cycles

    @property
    def noc_bytes(self) -> int:
        """Payload bytes sent between tiles."""
        return sum(c.noc_bytes for s in self.streams.values() for c in s if c.dst_tile >= 0)


class _Streams:
    """Per-tile streams with each tile's send count (the first send of a launch costs more)."""

    def __init__(self, tiles: Sequence[int], hw: ChipConfig, dtype: str, num_bytes: int):
        self.hw, self.dtype, self.num_bytes = hw, dtype, num_bytes
        self.elem = element_bytes(dtype)
        self.streams: dict[int, list[SimCommand]] = {t: [] for t in tiles}
        self.sent: set[int] = set()
        self.last_add: dict[tuple[int, int], int] = {}
        """(tile, staging area) -> index of the add that last read it."""
        self.rounds: dict[int, int] = dict.fromkeys(tiles, 0)
        self.areas = 2
        """Staging areas per tile, used in turn (module docstring)."""

    def staging(self, tile: int, length: int) -> tuple[int, Range]:
        k = self.rounds[tile] % self.areas
        lo = self.num_bytes * (1 + k)
        return k, Range("spm", lo, lo + length)

    def send(self, src: int, dst: int, lo: int, hi: int, label: str) -> tuple[int, int, Range]:
        """A transfer of ``[lo, hi)`` of ``src``'s sum into ``dst``'s next staging area."""
        area, land = self.staging(dst, hi - lo)
        self.rounds[dst] += 1
        t = laws.dte(hi - lo, self.hw, first=src not in self.sent, hops=noc.hops(src, dst, self.hw))
        self.sent.add(src)
        after: tuple[tuple[int, int], ...] = ()
        if (dst, area) in self.last_add:
            after = ((dst, self.last_add[(dst, area)]),)
        stream = self.streams[src]
        stream.append(
            SimCommand(
                "dte",
                t.cycles(self.hw),
                (Range("spm", lo, hi),),
                (),
                label,
                after,
                dst_tile=dst,
                noc_bytes=hi - lo,
            )
        )
        return len(stream) - 1, area, land

    def receive_add(
        self, dst: int, src: int, send: int, area: int, land: Range, lo: int, hi: int
    ) -> None:
        """``dst`` waits for the payload, then adds it into ``[lo, hi)`` of its sum."""
        stream = self.streams[dst]
        stream.append(SimCommand("recv", 0, (), (land,), f"recv from tile {src}", ((src, send),)))
        elements = (hi - lo) // self.elem
        t = laws.ct(elements, 1, self.dtype, self.hw)
        acc = Range("spm", lo, hi)
        stream.append(SimCommand("ct", t.cycles(self.hw), (land, acc), (acc,), f"add {src}"))
        self.last_add[(dst, area)] = len(stream) - 1

    def store(self, tile: int, lo: int, hi: int, active: int) -> None:
        if hi <= lo:
            return
        t = laws.dma("wdma", hi - lo, self.hw, active_tiles=active)
        self.streams[tile].append(
            SimCommand("wdma", t.cycles(self.hw), (Range("spm", lo, hi),), (), "store sum")
        )


def _check(tiles: Sequence[int], num_bytes: int, dtype: str, hw: ChipConfig) -> list[int]:
    order = list(tiles)
    if len(order) < 2:
        raise Tx8labError(f"reduction: needs at least 2 tiles, got {order}")
    if len(set(order)) != len(order):
        raise Tx8labError(f"reduction: tile listed twice in {order}")
    for t in order:
        noc.coords(t, hw)  # an error naming a tile off the mesh
    try:
        elem = element_bytes(dtype)
    except Tx8labError as exc:
        raise Tx8labError(f"reduction: {exc}") from None
    if num_bytes <= 0 or num_bytes % elem:
        raise Tx8labError(
            f"reduction: num_bytes={num_bytes} is not a positive whole number of {dtype} "
            f"elements ({elem} B each)"
        )
    return order


def reduction_streams(
    tiles: Sequence[int], num_bytes: int, dtype: str, hw: ChipConfig, pattern: Pattern
) -> dict[int, list[SimCommand]]:
    """Per-tile command streams of one reduction (module docstring).

    Raises:
        Tx8labError: fewer than 2 tiles, a tile twice or off the mesh, a size that is not
            whole elements, an unknown pattern.
    """
    order = _check(tiles, num_bytes, dtype, hw)
    b = _Streams(order, hw, dtype, num_bytes)
    n = len(order)
    if pattern == "direct":
        root = order[0]
        b.areas = n - 1
        for t in order[1:]:
            # built in turn so each send knows the add that last read its staging area
            idx, area, land = b.send(t, root, 0, num_bytes, f"partial to {root}")
            b.receive_add(root, t, idx, area, land, 0, num_bytes)
        b.store(root, 0, num_bytes, 1)
    elif pattern == "tree":
        for r in range(math.ceil(math.log2(n))):
            step = 1 << r
            for i in range(step, n, 2 * step):
                src, dst = order[i], order[i - step]
                idx, area, land = b.send(src, dst, 0, num_bytes, f"sum to {dst}")
                b.receive_add(dst, src, idx, area, land, 0, num_bytes)
        b.store(order[0], 0, num_bytes, 1)
    elif pattern == "ring":
        elements = num_bytes // b.elem
        lanes = hw.tile.ct_lanes(dtype)
        per = math.ceil(math.ceil(elements / n) / lanes) * lanes
        bounds = [(min(c * per, elements) * b.elem, min((c + 1) * per, elements) * b.elem)
                  for c in range(n)]  # fmt: skip
        for s in range(n - 1):
            chunks: list[tuple[int, int, int, int, int, int, Range]] = []
            for i, src in enumerate(order):
                lo, hi = bounds[(i - s) % n]
                dst = order[(i + 1) % n]
                chunks.append((src, dst, lo, hi, *b.send(src, dst, lo, hi, f"chunk to {dst}")))
            for src, dst, lo, hi, idx, area, land in chunks:
                b.receive_add(dst, src, idx, area, land, lo, hi)
        for i, t in enumerate(order):
            lo, hi = bounds[(i + 1) % n]
            b.store(t, lo, hi, n)
    else:
        raise Tx8labError(f"reduction: unknown pattern {pattern!r}; use one of {PATTERNS}")
    return b.streams


def reduce_over_noc(
    tiles: Sequence[int],
    num_bytes: int,
    dtype: str,
    hw: ChipConfig,
    patterns: Sequence[Pattern] = PATTERNS,
) -> tuple[Reduction, ...]:
    """Every pattern of ``patterns`` built and simulated, fastest first (ties: simplest).

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> ring = noc.snake_ring(TX81)
        >>> [r.pattern for r in reduce_over_noc(ring, 1 << 20, "f32", TX81)][0]
        'ring'
    """
    out = []
    for p in patterns:
        streams = reduction_streams(tiles, num_bytes, dtype, hw, p)
        out.append(Reduction(p, streams, simulate(streams, hw)))
    return tuple(sorted(out, key=lambda r: (r.cycles, PATTERNS.index(r.pattern))))


__all__ = ["PATTERNS", "Pattern", "Reduction", "reduce_over_noc", "reduction_streams"]
