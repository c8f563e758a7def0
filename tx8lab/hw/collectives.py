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

**All-reduce** (:func:`allreduce_plan`, :func:`allreduce_over_noc`): what a group whose
reduction dim is sharded across tiles runs, so that every tile of a reduction group holds
the whole sum afterwards (the ops after it read it on every tile, and every tile stores
the same bytes). Each pattern is its reduction above followed by the way back:

- **direct**: every other tile sends its partial to the root, which adds them in tile
  order; the root sends the sum to every other tile.
- **tree**: the binomial reduce above; then the same tree backwards, each tile sending
  the sum to the tile it got a partial from.
- **ring**: the reduce-scatter above (chunk ``(i + 1) mod n`` whole on tile ``i``), then
  an all-gather around the same ring (``n - 1`` steps passing whole chunks on).

One sum is computed per element and copied, so every tile holds the same bytes. Every
receive that adds lands in a staging *slot* of its own (no slot is reused within one
all-reduce, so a send never waits for its receiver to free one); a receive that copies
lands on the receiver's sum itself. Per tile and round the sends come first, then the
receives in the order of :func:`allreduce_plan`.

**All-gather** (:func:`allgather_plan`, :func:`allgather_over_noc`): what a load shared
by the tiles that read the same window runs (issue 20, sharing instead of re-reading):
each tile of a share group loads one chunk from DDR, and the chunks are passed round so
every tile holds the whole window: ``direct`` (every tile sends its chunk to every
other at once) or ``ring`` (``n - 1`` steps around the group, as the ring's second half).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from tx8lab._bulk import constructor
from tx8lab.errors import Tx8labError
from tx8lab.hw import laws, noc
from tx8lab.hw.config import ChipConfig, element_bytes
from tx8lab.hw.sim import Range, SimCommand, SimResult, TileRun, simulate

#: ``SimCommand`` from every field, positionally (an all-reduce builds hundreds).
_command = constructor(SimCommand)
#: ``Range`` from every field, positionally.
_range = constructor(Range)

Pattern = Literal["direct", "tree", "ring"]
#: The patterns, simplest first (the order ties go in).
PATTERNS: tuple[Pattern, ...] = ("direct", "tree", "ring")
#: The all-gather patterns (a load shared by the tiles that read the same window).
GATHER_PATTERNS: tuple[Pattern, ...] = ("direct", "ring")


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
        lanes = hw.tile.ct_lanes(dtype)
        bounds = [
            (lo * b.elem, hi * b.elem) for lo, hi in chunk_bounds(num_bytes // b.elem, n, lanes)
        ]
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


def _ranked(
    streams_of: Callable[[Pattern], dict[int, list[SimCommand]]],
    hw: ChipConfig,
    patterns: Sequence[Pattern],
) -> tuple[Reduction, ...]:
    """Each pattern's streams simulated, fastest first (ties: the simpler pattern)."""
    out = []
    for p in patterns:
        streams = streams_of(p)
        out.append(Reduction(p, streams, simulate(streams, hw)))
    return tuple(sorted(out, key=lambda r: (r.cycles, PATTERNS.index(r.pattern))))


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
    return _ranked(lambda p: reduction_streams(tiles, num_bytes, dtype, hw, p), hw, patterns)


# ------------------------------------------------------------------ all-reduce


@dataclass(frozen=True)
class Transfer:
    """One payload of an all-reduce, between positions of its reduction group."""

    round: int
    src: int
    """Position (index into the group's tiles) of the sender."""
    dst: int
    chunk: int
    """Which of the plan's chunks of the piece it carries."""
    slot: int
    """The receiver adds it from its staging slot ``slot``; -1: it lands on the sum (copy)."""

    @property
    def add(self) -> bool:
        """True when the receiver adds the payload into its sum."""
        return self.slot >= 0


@dataclass(frozen=True)
class AllReducePlan:
    """The transfers of one pattern over ``n`` positions.

    An all-reduce's (module docstring) or an all-gather's (:func:`allgather_plan`: copies).
    """

    pattern: Pattern
    n: int
    chunks: int
    """The piece is cut in this many chunks (1 but for the ring)."""
    transfers: tuple[Transfer, ...]

    @property
    def slots(self) -> int:
        """Staging slots the busiest receiver needs (each one chunk)."""
        per: dict[int, int] = {}
        for t in self.transfers:
            if t.add:
                per[t.dst] = max(per.get(t.dst, 0), t.slot + 1)
        return max(per.values(), default=0)

    def steps(self, position: int) -> list[tuple[int, Transfer]]:
        """What ``position`` does, in order: per round its sends, then its receives.

        Each with its index in :attr:`transfers` (what names it on both sides).
        """
        out: list[tuple[int, Transfer]] = []
        for now in self._rounds:
            out += [(k, t) for k, t in now if t.src == position]
            out += [(k, t) for k, t in now if t.dst == position]
        return out

    @functools.cached_property
    def _rounds(self) -> tuple[tuple[tuple[int, Transfer], ...], ...]:
        """Each round's transfers with their indices, rounds in order.

        Every position of the plan reads them (:meth:`steps`).
        """
        by_round: dict[int, list[tuple[int, Transfer]]] = {}
        for k, t in enumerate(self.transfers):
            by_round.setdefault(t.round, []).append((k, t))
        return tuple(tuple(by_round[r]) for r in sorted(by_round))


def allreduce_plan(n: int, pattern: Pattern) -> AllReducePlan:
    """The transfers of an all-reduce over ``n`` positions (module docstring).

    Examples:
        >>> [(t.src, t.dst, t.slot) for t in allreduce_plan(3, "direct").transfers]
        [(1, 0, 0), (2, 0, 1), (0, 1, -1), (0, 2, -1)]
        >>> allreduce_plan(4, "ring").slots, allreduce_plan(4, "tree").slots
        (3, 2)
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise Tx8labError(f"all-reduce: needs at least 2 tiles, got {n!r}")
    if pattern not in PATTERNS:
        raise Tx8labError(f"all-reduce: unknown pattern {pattern!r}; use one of {PATTERNS}")
    return _allreduce_plan(n, pattern)


@functools.lru_cache(maxsize=256)
def _allreduce_plan(n: int, pattern: Pattern) -> AllReducePlan:
    """:func:`allreduce_plan` of checked arguments, kept (a plan is frozen)."""
    out: list[Transfer] = []
    if pattern == "direct":
        out += [Transfer(0, p, 0, 0, p - 1) for p in range(1, n)]
        out += [Transfer(1, 0, p, 0, -1) for p in range(1, n)]
        return AllReducePlan(pattern, n, 1, tuple(out))
    if pattern == "tree":
        rounds = math.ceil(math.log2(n))
        for r in range(rounds):
            step = 1 << r
            out += [Transfer(r, i, i - step, 0, r) for i in range(step, n, 2 * step)]
        for k, r in enumerate(reversed(range(rounds))):
            step = 1 << r
            out += [Transfer(rounds + k, i - step, i, 0, -1) for i in range(step, n, 2 * step)]
        return AllReducePlan(pattern, n, 1, tuple(out))
    if pattern == "ring":
        for s in range(n - 1):
            out += [Transfer(s, i, (i + 1) % n, (i - s) % n, s) for i in range(n)]
        for s in range(n - 1):
            r = n - 1 + s
            out += [Transfer(r, i, (i + 1) % n, (i + 1 - s) % n, -1) for i in range(n)]
        return AllReducePlan(pattern, n, n, tuple(out))
    raise Tx8labError(f"all-reduce: unknown pattern {pattern!r}; use one of {PATTERNS}")


def allgather_plan(n: int, pattern: Pattern) -> AllReducePlan:
    """The copies of an all-gather over ``n`` positions: position ``p`` starts with chunk ``p``.

    ``direct``: in one round every position sends its chunk to every other (to ``p + 1``
    first, round the group). ``ring``: ``n - 1`` rounds; in round ``s`` position ``i``
    passes chunk ``(i - s) mod n`` on to ``i + 1``. Every transfer lands on the chunk's
    own place (slot -1): nothing is added, nothing staged.

    Examples:
        >>> [(t.src, t.dst, t.chunk) for t in allgather_plan(3, "ring").transfers]
        [(0, 1, 0), (1, 2, 1), (2, 0, 2), (0, 1, 2), (1, 2, 0), (2, 0, 1)]
        >>> allgather_plan(4, "direct").slots, len(allgather_plan(4, "direct").transfers)
        (0, 12)
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise Tx8labError(f"all-gather: needs at least 2 tiles, got {n!r}")
    if pattern == "direct":
        out = [Transfer(0, p, (p + d) % n, p, -1) for p in range(n) for d in range(1, n)]
    elif pattern == "ring":
        out = [Transfer(s, i, (i + 1) % n, (i - s) % n, -1) for s in range(n - 1) for i in range(n)]
    else:
        raise Tx8labError(f"all-gather: unknown pattern {pattern!r}; use one of {GATHER_PATTERNS}")
    return AllReducePlan(pattern, n, n, tuple(out))


def chunk_bounds(elements: int, chunks: int, lanes: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` element bounds of each chunk: even shares rounded up to ``lanes``.

    Examples:
        >>> chunk_bounds(100, 4, 16)
        [(0, 32), (32, 64), (64, 96), (96, 100)]
    """
    per = math.ceil(math.ceil(elements / chunks) / lanes) * lanes
    return [(min(c * per, elements), min((c + 1) * per, elements)) for c in range(chunks)]


def allreduce_streams(
    groups: Sequence[Sequence[int]], num_bytes: int, dtype: str, hw: ChipConfig, pattern: Pattern
) -> dict[int, list[SimCommand]]:
    """Per-tile streams of one all-reduce in each of ``groups`` at once (they share links).

    Each group's tiles hold partials of one ``num_bytes`` piece at SPM ``[0, num_bytes)``;
    staging slot ``k`` is the chunk-sized area after it.

    Raises:
        Tx8labError: as :func:`reduction_streams`, or a tile in two groups.
    """
    return _plan_streams(groups, num_bytes, dtype, hw, lambda n: allreduce_plan(n, pattern))


def allgather_streams(
    groups: Sequence[Sequence[int]], num_bytes: int, dtype: str, hw: ChipConfig, pattern: Pattern
) -> dict[int, list[SimCommand]]:
    """Per-tile streams of one all-gather in each of ``groups`` at once (they share links).

    Position ``p`` of a group holds chunk ``p`` of one ``num_bytes`` piece at SPM
    ``[0, num_bytes)``; afterwards every tile holds every chunk there.
    """
    return _plan_streams(groups, num_bytes, dtype, hw, lambda n: allgather_plan(n, pattern))


def _plan_streams(
    groups: Sequence[Sequence[int]],
    num_bytes: int,
    dtype: str,
    hw: ChipConfig,
    plan_of: Callable[[int], AllReducePlan],
) -> dict[int, list[SimCommand]]:
    """The streams of ``plan_of(len(group))`` run in every group at once."""
    streams: dict[int, list[SimCommand]] = {}
    xy: dict[int, tuple[int, int]] = {}
    for tiles in groups:
        order = _check(tiles, num_bytes, dtype, hw)
        if set(order) & set(streams):
            raise Tx8labError(
                f"all-reduce: tiles {sorted(set(order) & set(streams))} in two groups"
            )
        streams.update({t: [] for t in order})
        xy.update({t: noc.coords(t, hw) for t in order})
    elem = element_bytes(dtype)
    lanes = hw.tile.ct_lanes(dtype)
    sent: set[int] = set()
    # what many commands share, worked out once: the laws' cycles by their inputs (a ring
    # sends the same chunk sizes over and over), the byte ranges, the labels
    send_cycles: dict[tuple[int, bool, int], int] = {}
    add_cycles: dict[int, int] = {}
    ranges: dict[tuple[int, int], Range] = {}
    labels: dict[tuple[str, bool, int], str] = {}
    recv_labels: dict[int, str] = {}
    add_labels: dict[int, str] = {}

    def spm(lo: int, hi: int) -> Range:
        got = ranges.get((lo, hi))
        if got is None:
            got = ranges[(lo, hi)] = _range("spm", lo, hi)
        return got

    for tiles in groups:
        order = list(tiles)
        plan = plan_of(len(order))
        bounds = [
            (lo * elem, hi * elem) for lo, hi in chunk_bounds(num_bytes // elem, plan.chunks, lanes)
        ]
        slot_bytes = max(hi - lo for lo, hi in bounds)
        where: dict[int, int] = {}
        """Index of a transfer in the plan -> index of its send in the sender's stream."""
        pattern = plan.pattern
        for now in plan._rounds:
            for k, t in now:
                src, dst = order[t.src], order[t.dst]
                lo, hi = bounds[t.chunk]
                (x0, y0), (x1, y1) = xy[src], xy[dst]
                # the XY route's hops: noc.hops
                key = (hi - lo, src not in sent, abs(x1 - x0) + abs(y1 - y0))
                cycles = send_cycles.get(key)
                if cycles is None:
                    law = laws.dte(key[0], hw, first=key[1], hops=key[2])
                    cycles = send_cycles[key] = law.cycles(hw)
                sent.add(src)
                add = t.slot >= 0  # Transfer.add
                label_key = (pattern, add, dst)
                label = labels.get(label_key)
                if label is None:
                    label = labels[label_key] = f"{pattern} {'partial' if add else 'sum'} to {dst}"
                stream = streams[src]
                stream.append(
                    _command("dte", cycles, (spm(lo, hi),), (), label, (), (), 1, dst, hi - lo)
                )
                where[k] = len(stream) - 1
            for k, t in now:
                src, dst = order[t.src], order[t.dst]
                lo, hi = bounds[t.chunk]
                acc = spm(lo, hi)
                add = t.slot >= 0
                if add:
                    land = spm(
                        num_bytes + t.slot * slot_bytes, num_bytes + t.slot * slot_bytes + hi - lo
                    )
                else:
                    land = acc
                label = recv_labels.get(src)
                if label is None:
                    label = recv_labels[src] = f"recv from {src}"
                stream = streams[dst]
                stream.append(
                    _command("recv", 0, (), (land,), label, ((src, where[k]),), (), 1, -1, 0)
                )
                if add:
                    elements = (hi - lo) // elem
                    cycles = add_cycles.get(elements)
                    if cycles is None:
                        law = laws.ct(elements, 1, dtype, hw)
                        cycles = add_cycles[elements] = law.cycles(hw)
                    label = add_labels.get(src)
                    if label is None:
                        label = add_labels[src] = f"add {src}"
                    stream.append(
                        _command("ct", cycles, (land, acc), (acc,), label, (), (), 1, -1, 0)
                    )
    return streams


def exchange_plan(n: int, moves: Sequence[tuple[int, int]]) -> AllReducePlan:
    """The copies of an exchange over ``n`` positions: ``moves`` (src, dst), in one round.

    Move ``k`` carries chunk ``k`` (the caller's ``k``-th box) and lands in place.

    Examples:
        >>> [(t.src, t.dst, t.chunk) for t in exchange_plan(3, [(0, 1), (2, 1)]).transfers]
        [(0, 1, 0), (2, 1, 1)]
    """
    for src, dst in moves:
        if not (0 <= src < n and 0 <= dst < n) or src == dst:
            raise Tx8labError(f"exchange: move {src} -> {dst} is not between two of {n} tiles")
    out = tuple(Transfer(0, src, dst, k, -1) for k, (src, dst) in enumerate(moves))
    return AllReducePlan("direct", n, len(out), out)


def exchange_over_noc(
    moves: Sequence[tuple[int, int, int]], dtype: str, hw: ChipConfig
) -> Reduction:
    """Point-to-point copies ``(src tile, dst tile, bytes)`` all at once, simulated.

    What tiles whose readers need pieces their neighbours computed run (a halo; issue 20,
    transfers instead of recomputing). Each tile sends its moves in order (from SPM
    ``[0, bytes)``), then receives each of its own into a range of its own, so only the
    links and the DTE queues order them.
    """
    streams: dict[int, list[SimCommand]] = {}
    sends: list[tuple[int, int, int, int]] = []
    for src, dst, num_bytes in moves:
        noc.coords(src, hw)
        noc.coords(dst, hw)
        stream = streams.setdefault(src, [])
        streams.setdefault(dst, [])
        law = laws.dte(num_bytes, hw, first=not stream, hops=noc.hops(src, dst, hw))
        stream.append(
            _command(
                "dte",
                law.cycles(hw),
                (_range("spm", 0, num_bytes),),
                (),
                f"halo to {dst}",
                (),
                (),
                1,
                dst,
                num_bytes,
            )
        )
        sends.append((src, dst, len(stream) - 1, num_bytes))
    landed: dict[int, int] = {}
    for src, dst, index, num_bytes in sends:
        lo = (1 << 24) + landed.get(dst, 0)  # past any send's range
        landed[dst] = landed.get(dst, 0) + num_bytes
        streams[dst].append(
            _command(
                "recv",
                0,
                (),
                (_range("spm", lo, lo + num_bytes),),
                f"recv from {src}",
                ((src, index),),
                (),
                1,
                -1,
                0,
            )
        )
    return Reduction("direct", streams, simulate(streams, hw))


def allreduce_over_noc(
    groups: Sequence[Sequence[int]],
    num_bytes: int,
    dtype: str,
    hw: ChipConfig,
    patterns: Sequence[Pattern] = PATTERNS,
) -> tuple[Reduction, ...]:
    """Every pattern's all-reduce in all ``groups`` at once, simulated, fastest first.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> cols = [[x, x + 4, x + 8, x + 12] for x in range(4)]
        >>> got = allreduce_over_noc(cols, 64 << 10, "f16", TX81)
        >>> sorted(r.pattern for r in got)
        ['direct', 'ring', 'tree']
    """
    return _ranked(lambda p: allreduce_streams(groups, num_bytes, dtype, hw, p), hw, patterns)


def allgather_over_noc(
    groups: Sequence[Sequence[int]],
    num_bytes: int,
    dtype: str,
    hw: ChipConfig,
    patterns: Sequence[Pattern] = GATHER_PATTERNS,
) -> tuple[Reduction, ...]:
    """Every pattern's all-gather in all ``groups`` at once, simulated, fastest first.

    The answer to plain int tiles and bytes is kept (loads of different shapes with the
    same bytes on the same tiles are one all-gather); each call gets its own copy.
    """
    key = (
        tuple(tuple(g) for g in groups),
        num_bytes,
        dtype,
        hw,
        tuple(patterns),
    )
    if type(num_bytes) is not int or not all(type(t) is int for g in key[0] for t in g):
        return _ranked(lambda p: allgather_streams(groups, num_bytes, dtype, hw, p), hw, patterns)
    return tuple(_copy(r) for r in _kept_allgather(*key))


@functools.lru_cache(maxsize=32)  # a few hundred kB each (streams and timings)
def _kept_allgather(
    groups: tuple[tuple[int, ...], ...],
    num_bytes: int,
    dtype: str,
    hw: ChipConfig,
    patterns: tuple[Pattern, ...],
) -> tuple[Reduction, ...]:
    """:func:`allgather_over_noc` of plain ints, kept (callers get copies: :func:`_copy`)."""
    return _ranked(lambda p: allgather_streams(groups, num_bytes, dtype, hw, p), hw, patterns)


def _copy(r: Reduction) -> Reduction:
    """``r`` with containers of its own (their items, commands and timings, are frozen)."""
    res = r.result
    tiles = {
        t: TileRun(
            run.tile,
            list(run.timings),
            dict(run.busy),
            {e: dict(rs) for e, rs in run.stalls.items()},
            run.body,
        )
        for t, run in res.tiles.items()
    }
    result = SimResult(tiles, res.clock_hz, res.launch_cycles, dict(res.links))
    return Reduction(r.pattern, {t: list(s) for t, s in r.streams.items()}, result)


__all__ = [
    "GATHER_PATTERNS",
    "PATTERNS",
    "AllReducePlan",
    "Pattern",
    "Reduction",
    "Transfer",
    "allgather_over_noc",
    "allgather_plan",
    "allgather_streams",
    "allreduce_over_noc",
    "allreduce_plan",
    "allreduce_streams",
    "chunk_bounds",
    "exchange_over_noc",
    "exchange_plan",
    "reduce_over_noc",
    "reduction_streams",
]
