"""The tile simulator: one execution model that plays per-tile command streams out in time.

Spec: issue 19 (one simulator for every figure), the board notes of ``tx8lab/hw/board``
(per-engine queues of depth 6, 4 for TDMA, with hardware dependency checks; NCC joins;
Direct-DTE latencies; launch overhead), seed 001 (main.c: the kernel core issues one
``op_*`` call after another). It takes, for every tile, the ordered commands the kernel
core issues (``tx8lab.core.program.Program`` through ``tx8lab.core.simulate``, or built by
hand with :class:`StreamBuilder`) and times them; the engine time of each command comes
from a law of :mod:`tx8lab.hw.laws`. It imports nothing from ``tx8lab.core``.

The model:

- **The kernel core** issues the commands of its tile in program order, one at a time,
  ``laws.issue`` each. Before it issues to an engine whose queue already holds ``depth``
  commands that have not started (``tile.queue_depth``, ``tile.tdma_queue_depth``), it
  waits until the oldest of them starts (stall "queue full"): the board accepted ``D + 1``
  back-to-back commands without blocking, so the pending storage excludes the running one.
- **Engines** (``ne``, ``ct``, ``rdma``, ``wdma``, ``tdma``, ``dte``) run their commands in
  issue order. A command starts when it has been issued, its engine is free and every
  earlier command of the tile whose byte ranges overlap its own has finished (a read after
  a write, a write after a read or a write: the hardware's address-range checks), and any
  command of another tile it is ordered after (``after``) has finished.
- **A join** stops the kernel core until the tile's issued commands (of the engines it
  names, else all) have finished, then costs its law (``laws.join``). **A barrier** stops
  every tile that has one until all have reached it, then costs ``laws.barrier``.
- **Stalls.** A gap before a command on its engine is "issue" while the command was not
  yet issued and "dependency" after; the kernel core's waits are "queue full", "join" and
  "barrier". An engine's busy time is the sum of its commands' times.
- **NoC transfers.** A ``dte`` command with a ``dst_tile`` moves ``noc_bytes`` from its
  tile's SPM to that tile's over the mesh (:mod:`tx8lab.hw.noc`: XY route, one link
  direction per hop). Its time is the DTE law (``laws.dte``: the send's fixed cost, the
  hops' latency, the payload at one link's rate); the payload occupies every link of the
  route for its serialisation time, and each link carries one payload at a time, so two
  transfers that share a link take turns (stall "link" on the DTE engine, inside the
  command). **A receive** (``recv``, ``after`` the send) stops the receiving tile's kernel
  core until the payload has landed (stall "receive"), as the runtime's blocking receive
  call does, so the tile's later commands see the data.
- **Body and launch.** A tile's kernel body ends when its last command ends; the chip's is
  the slowest tile's. The launch / completion-event overhead (``launch_s``) is reported
  apart and never added to the body.

Readings chosen where the sources are vague:

- The simulator is exact for this model in one pass per tile: engines are first-in
  first-out and the kernel core is in order, so a command's times follow from earlier
  commands only; tiles interact only through ``after`` and barriers, which the loop
  resolves by advancing every tile as far as it can.
- DDR ranges order commands within a tile; across tiles only barriers and ``after`` do.
- The DTE queue takes the NE/CT/DMA depth (no source gives one).
- **Link arbitration.** Links are granted in the order the simulator meets the transfers
  (tile by tile, each as far as it can go), each transfer taking the earliest window in
  which every link of its route is free for its payload: a fixed priority, not the
  router's arbitration (not published). Cut-through: the payload holds all its links for
  the same window (a wormhole flit stream), after the send's fixed cost and the hops.
"""

from __future__ import annotations

import functools
from bisect import bisect_left, bisect_right, insort
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from tx8lab._bulk import constructor, gc_paused
from tx8lab.errors import Tx8labError
from tx8lab.hw import laws, noc
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.cost import to_cycles

#: Engines that run commands, in report order; ``kcore`` issues them.
ENGINES: tuple[str, ...] = ("ne", "ct", "rdma", "wdma", "tdma", "dte")
#: Kernel-core control commands.
CONTROL: tuple[str, ...] = ("join", "barrier", "recv")
#: Stall reasons.
REASONS: tuple[str, ...] = (
    "issue",
    "dependency",
    "queue full",
    "join",
    "barrier",
    "receive",
    "link",
)


@dataclass(frozen=True, slots=True)
class Range:
    """A byte range a command reads or writes: ``[lo, hi)`` of ``space`` (``spm``/``ddr``)."""

    space: str
    lo: int
    hi: int


@dataclass(frozen=True, slots=True)
class SimCommand:
    """One command the kernel core issues."""

    engine: str
    """One of :data:`ENGINES`, or ``join`` / ``barrier``."""
    cycles: int
    """Engine time (a law's answer); a join's or barrier's own cost."""
    reads: tuple[Range, ...] = ()
    writes: tuple[Range, ...] = ()
    label: str = ""
    """What the command is (``op_conv2d %12 [0, 1]``), for views and messages."""
    after: tuple[tuple[int, int], ...] = ()
    """Commands ``(tile, index)`` of other tiles that must finish before it starts."""
    waits: tuple[str, ...] = ()
    """A join: the engines it waits for (empty: all)."""
    participants: int = 1
    """A join: the workers / engines it joins (its law's count)."""
    dst_tile: int = -1
    """A ``dte`` NoC transfer: the tile it sends to (-1: a message with no payload route)."""
    noc_bytes: int = 0
    """A NoC transfer: the payload bytes that cross the route's links."""


@dataclass(frozen=True, slots=True)
class Timing:
    """When one command was issued and ran."""

    index: int
    engine: str
    issue_start: int
    issue_end: int
    start: int
    end: int
    label: str = ""
    link_wait: int = 0
    """A NoC transfer: cycles it waited, between ``start`` and ``end``, for its links."""


@dataclass(frozen=True, slots=True)
class LinkUse:
    """One payload on one link direction."""

    start: int
    end: int
    tile: int
    """The sending tile."""
    index: int
    """The send command's index in its tile's stream."""
    num_bytes: int


@dataclass
class TileRun:
    """One tile's simulated run."""

    tile: int
    timings: list[Timing] = field(default_factory=list)
    busy: dict[str, int] = field(default_factory=dict)
    """Engine (and ``kcore``) -> busy cycles."""
    stalls: dict[str, dict[str, int]] = field(default_factory=dict)
    """Engine (and ``kcore``) -> reason -> cycles."""
    body: int = 0
    """Cycles until its last command ended."""


@dataclass(frozen=True)
class SimResult:
    """Every tile's run."""

    tiles: Mapping[int, TileRun]
    clock_hz: float
    launch_cycles: int
    links: Mapping[noc.Link, tuple[LinkUse, ...]] = field(default_factory=dict)
    """Every used link direction's payloads, by start (NoC transfers only)."""

    def link_busy(self) -> dict[noc.Link, int]:
        """Link direction -> cycles it carried payload."""
        return {k: sum(u.end - u.start for u in v) for k, v in self.links.items()}

    def link_bytes(self) -> dict[noc.Link, int]:
        """Link direction -> payload bytes it carried."""
        return {k: sum(u.num_bytes for u in v) for k, v in self.links.items()}

    @property
    def body_cycles(self) -> int:
        """The kernel body: the slowest tile's."""
        return max((t.body for t in self.tiles.values()), default=0)

    def ms(self, cycles: int) -> float:
        """Cycles as milliseconds at the clock."""
        return cycles / self.clock_hz * 1e3

    def busy_ms(self) -> dict[str, float]:
        """Engine -> the largest busy time over the tiles, ms (the board's engine columns)."""
        out = {}
        for engine in (*ENGINES, "kcore"):
            most = max((t.busy.get(engine, 0) for t in self.tiles.values()), default=0)
            out[engine] = self.ms(most)
        return out

    def stall_ms(self, tile: int | None = None) -> dict[str, dict[str, float]]:
        """Engine -> reason -> ms, of one tile (default: the slowest)."""
        run = self.tiles[tile if tile is not None else self.slowest_tile]
        return {e: {r: self.ms(c) for r, c in rs.items() if c} for e, rs in run.stalls.items()}

    @property
    def slowest_tile(self) -> int:
        """The tile whose body is the kernel body."""
        return max(self.tiles, key=lambda t: (self.tiles[t].body, -t))

    def summary(self) -> dict[str, Any]:
        """The JSON report: ``latency_ms``, ``tile_ms``, ``busy_ms``, ``launch_ms``."""
        return {
            "latency_ms": self.ms(self.body_cycles),
            "tile_ms": {str(t): self.ms(r.body) for t, r in sorted(self.tiles.items())},
            "busy_ms": self.busy_ms(),
            "launch_ms": self.ms(self.launch_cycles),
        }


# ---------------------------------------------------------------------- the run


@dataclass
class _Tile:
    tile: int
    commands: Sequence[SimCommand]
    pos: int = 0
    t: int = 0
    """Kernel-core time."""
    free: dict[str, int] = field(default_factory=dict)
    starts: dict[str, list[int]] = field(default_factory=dict)
    ends: list[int] = field(default_factory=list)
    last_end: dict[str, int] = field(default_factory=dict)
    """Engine -> the latest end among its issued commands."""
    live: list[tuple[int, str, int, int, bool]] = field(default_factory=list)
    """(end, space, lo, hi, is_write) of accesses that may still order a later command,
    sorted by end."""
    barriers: int = 0
    run: TileRun = field(default_factory=lambda: TileRun(-1))
    transfers: dict[int, tuple[tuple[noc.Link, ...], int]] = field(default_factory=dict)
    """Index of a NoC transfer -> (its route, its payload's serialisation cycles)."""


class _Links:
    """Each link direction's granted payload windows (module docstring, arbitration)."""

    def __init__(self) -> None:
        self.busy: dict[noc.Link, list[tuple[int, int]]] = {}
        self.uses: dict[noc.Link, list[LinkUse]] = {}

    def grant(
        self, route: tuple[noc.Link, ...], earliest: int, cycles: int, use: tuple[int, int, int]
    ) -> int:
        """The first start >= ``earliest`` with every link of ``route`` free for ``cycles``.

        The window is then taken on each link. ``use``: (tile, index, bytes).
        """
        start = earliest
        if cycles <= 0:
            return start
        busy = self.busy
        moved = True
        while moved:
            moved = False
            for link in route:
                # a link's windows never overlap, so sorted by start they are sorted by
                # end: the last one starting before this window ends reaches furthest
                windows = busy.get(link)
                if not windows:
                    continue
                i = bisect_left(windows, (start + cycles,))
                if i:
                    reach = windows[i - 1][1]
                    if reach > start:
                        start, moved = reach, True
        tile, index, num_bytes = use
        window = (start, start + cycles)
        link_use = _new_link_use(start, start + cycles, tile, index, num_bytes)
        uses = self.uses
        for link in route:
            windows = busy.get(link)
            if windows is None:
                busy[link] = [window]
                uses[link] = [link_use]
            else:
                insort(windows, window)
                uses[link].append(link_use)
        return start

    def result(self) -> dict[noc.Link, tuple[LinkUse, ...]]:
        return {k: tuple(sorted(v, key=lambda u: u.start)) for k, v in sorted(self.uses.items())}


_end = itemgetter(0)
#: ``Timing`` from every field, positionally (one per command of a program).
_new_timing = constructor(Timing)
#: ``LinkUse`` from every field, positionally (one per NoC transfer).
_new_link_use = constructor(LinkUse)
#: Payload sizes whose link cycles a chip keeps (the table starts again when full).
_PAYLOADS_KEPT = 1 << 14
#: Every engine a command may name (a set, for the check of each command).
_KNOWN = frozenset((*ENGINES, *CONTROL))


def limiting_engine(busy: Mapping[str, int], engines: Sequence[str]) -> str:
    """The busiest of ``engines`` in ``busy`` (cycles); the first of them on a tie."""
    return max(engines, key=lambda e: (busy.get(e, 0), -engines.index(e)))


def costliest_stall(
    busy: Mapping[str, int], stalls: Mapping[str, Mapping[str, int]], engines: Sequence[str]
) -> tuple[str, str, int] | None:
    """``(engine, reason, cycles)``: the stall of one tile that cost most, None without any.

    The limiting engine's (:func:`limiting_engine`) largest stall: its idle time is what
    the body pays beyond its busy time, while an engine that is not limiting waits
    without cost. Without a stall there, the largest stall of any of ``engines``. Ties go
    to the earlier engine, then to the later reason name.
    """

    def top(among: Sequence[str]) -> tuple[str, str, int] | None:
        found = [
            (cycles, -engines.index(e), e, reason)
            for e in among
            for reason, cycles in stalls.get(e, {}).items()
            if cycles > 0
        ]
        if not found:
            return None
        cycles, _, e, reason = max(found)
        return e, reason, cycles

    return top([limiting_engine(busy, engines)]) or top(engines)


def _add(d: dict[str, int], key: str, value: int) -> None:
    if value:
        d[key] = d.get(key, 0) + value


def simulate(
    streams: Mapping[int, Sequence[SimCommand]], hw: ChipConfig, *, launches: int = 1
) -> SimResult:
    """Play every tile's command stream out in time (module docstring).

    Raises:
        Tx8labError: an unknown engine, an ``after`` naming a command that does not exist,
            or commands that wait on each other (the message names the tile and command).
    """
    with gc_paused():  # every timing survives: see tx8lab._bulk
        return _simulate(streams, hw, launches)


def _simulate(
    streams: Mapping[int, Sequence[SimCommand]], hw: ChipConfig, launches: int
) -> SimResult:
    depth = {e: hw.tile.queue_depth for e in ENGINES}
    depth["tdma"] = hw.tile.tdma_queue_depth
    issue = laws.issue(hw).cycles(hw)
    states = {t: _Tile(t, cmds, run=TileRun(t)) for t, cmds in streams.items()}
    routes, payloads = _noc_tables(hw)
    for st in states.values():
        me = st.tile
        for i, c in enumerate(st.commands):
            if c.engine not in _KNOWN:
                raise Tx8labError(
                    f"simulate: tile {st.tile} command {i} ({c.label or 'unlabelled'}) has "
                    f"engine {c.engine!r}; use one of {', '.join((*ENGINES, *CONTROL))}"
                )
            if c.dst_tile >= 0:
                # a route and a payload _transfer has checked before need no new check
                dst, num_bytes = c.dst_tile, c.noc_bytes
                route = cycles = None
                if type(dst) is int and type(me) is int and type(num_bytes) is int:
                    route = routes.get((me, dst))
                    cycles = payloads.get(num_bytes)
                if (
                    route is not None
                    and cycles is not None
                    and cycles <= c.cycles
                    and c.engine == "dte"
                ):
                    st.transfers[i] = (route, cycles)
                else:
                    st.transfers[i] = _transfer(me, i, c, hw, payloads, routes)
            if c.engine == "recv" and not c.after:
                raise Tx8labError(
                    f"simulate: tile {st.tile} command {i} ({c.label or 'recv'}) receives "
                    "from no send; give it after=((sending tile, send index),)"
                )
            for tile, index in c.after:
                if tile not in states or not 0 <= index < len(states[tile].commands):
                    raise Tx8labError(
                        f"simulate: tile {st.tile} command {i} ({c.label}) is ordered after "
                        f"command {index} of tile {tile}, which does not exist"
                    )
    barrier_tiles: list[list[int]] = []
    for st in states.values():
        k = 0
        for c in st.commands:
            if c.engine == "barrier":
                if k == len(barrier_tiles):
                    barrier_tiles.append([])
                barrier_tiles[k].append(st.tile)
                k += 1
    arrived: dict[int, dict[int, int]] = {}
    links = _Links()
    while True:
        progressed = False
        for st in states.values():
            progressed |= _advance(st, states, depth, issue, arrived, links)
        waiting = [st for st in states.values() if st.pos < len(st.commands)]
        if not waiting:
            break
        # release every barrier all of whose tiles have arrived
        for k, tiles in enumerate(barrier_tiles):
            got = arrived.get(k, {})
            if len(got) == len(tiles) and all(states[t].barriers == k for t in tiles):
                cost = laws.barrier(len(tiles), hw).cycles(hw)
                release = max(got.values()) + cost
                for t in tiles:
                    st = states[t]
                    _add(st.run.stalls.setdefault("kcore", {}), "barrier", release - cost - st.t)
                    _add(st.run.busy, "kcore", cost)
                    st.run.timings.append(
                        Timing(st.pos, "barrier", got[t], release, release - cost, release)
                    )
                    st.ends.append(release)
                    st.t = release
                    st.pos += 1
                    st.barriers += 1
                progressed = True
        if not progressed:
            st = waiting[0]
            c = st.commands[st.pos]
            raise Tx8labError(
                f"simulate: tile {st.tile} cannot go on at command {st.pos} ({c.engine} "
                f"{c.label}): it waits on commands of other tiles that wait on it (or a "
                "barrier that other tiles never reach)"
            )
    runs: dict[int, TileRun] = {}
    for st in states.values():
        run = st.run
        run.body = max([st.t, *st.free.values()], default=0)
        for e in ("kcore", *ENGINES):
            run.stalls.setdefault(e, {})
        runs[st.tile] = run
    return SimResult(runs, hw.clock_hz, launches * to_cycles(hw.launch_s, hw), links.result())


@functools.lru_cache(maxsize=8)
def _noc_tables(
    hw: ChipConfig,
) -> tuple[dict[tuple[int, int], tuple[noc.Link, ...]], dict[int, int]]:
    """The chip's routes by (tile, destination) and payload cycles by bytes, as met.

    Kept across runs (transfers take few routes and carry few sizes); a route is only
    added for plain int tiles, a payload for bytes >= 0 (what :func:`_transfer` checks).
    """
    return {}, {}


def _transfer(
    tile: int,
    index: int,
    c: SimCommand,
    hw: ChipConfig,
    payloads: dict[int, int],
    routes: dict[tuple[int, int], tuple[noc.Link, ...]],
) -> tuple[tuple[noc.Link, ...], int]:
    """A NoC transfer's route and payload cycles; an error naming the command if bad."""

    def where() -> str:
        return f"simulate: tile {tile} command {index} ({c.label or 'unlabelled'})"

    if c.engine != "dte":
        raise Tx8labError(f"{where()}: only a dte command can send to a tile (dst_tile)")
    if c.dst_tile == tile:
        raise Tx8labError(f"{where()} sends to its own tile {tile}; drop dst_tile for a local copy")
    if c.noc_bytes < 0:
        raise Tx8labError(f"{where()}: noc_bytes={c.noc_bytes}; a payload has >= 0 bytes")
    # kept by (tile, destination) when both are plain ints (noc.route refuses others)
    key = (tile, c.dst_tile) if type(tile) is int and type(c.dst_tile) is int else None
    route = routes.get(key) if key is not None else None
    if route is None:
        try:
            route = noc.route(tile, c.dst_tile, hw)
        except Tx8labError as exc:
            raise Tx8labError(f"{where()}: {exc}") from None
        if key is not None:
            routes[key] = route
    cycles = payloads.get(c.noc_bytes)
    if cycles is None:
        cycles = laws.noc_payload(c.noc_bytes, hw).cycles(hw)
        if type(c.noc_bytes) is int:
            if len(payloads) >= _PAYLOADS_KEPT:
                payloads.clear()
            payloads[c.noc_bytes] = cycles
    if cycles > c.cycles:
        raise Tx8labError(
            f"{where()}: its {c.cycles} cycles are less than its payload's {cycles} on a link; "
            "time it with laws.dte"
        )
    return route, cycles


def _advance(
    st: _Tile,
    states: Mapping[int, _Tile],
    depth: Mapping[str, int],
    issue: int,
    arrived: dict[int, dict[int, int]],
    links: _Links,
) -> bool:
    """Run ``st`` until it ends or waits on another tile; whether it moved.

    The tile's state is read into locals once and written back when it stops (its
    position after every command: an ``after`` may name the tile itself).
    """
    commands = st.commands
    n = len(commands)
    pos = st.pos
    if pos >= n:
        return False
    run = st.run
    kstall = run.stalls.setdefault("kcore", {})
    stalls_of = run.stalls
    busy = run.busy
    add_timing = run.timings.append
    ends = st.ends
    add_end = ends.append
    starts_of = st.starts
    free_of = st.free
    last_end = st.last_end
    live = st.live
    transfers = st.transfers
    now = st.t
    moved = False
    while pos < n:
        c = commands[pos]
        after = c.after
        if after:
            blocked = False
            for t, i in after:
                if states[t].pos <= i:
                    blocked = True
                    break
            if blocked:
                break
        e = c.engine
        if e == "barrier":
            # the tile's own commands end first: what it wrote is what others read next
            arrived.setdefault(st.barriers, {})[st.tile] = max(now, *last_end.values(), 0)
            break
        if e == "recv" or e == "join":
            if e == "recv":
                ready = 0
                for t, i in after:
                    got = states[t].ends[i]
                    if got > ready:
                        ready = got
                reason = "receive"
            else:
                ready = 0
                for engine in c.waits or ENGINES:
                    got = last_end.get(engine, 0)
                    if got > ready:
                        ready = got
                reason = "join"
            if ready > now:
                kstall[reason] = kstall.get(reason, 0) + ready - now
                begin = ready
            else:
                begin = now
            cycles = c.cycles
            end = begin + cycles
            if cycles:
                busy["kcore"] = busy.get("kcore", 0) + cycles
            add_timing(_new_timing(pos, e, begin, end, begin, end, c.label, 0))
            add_end(end)
            now = end
            pos += 1
            st.pos = pos
            moved = True
            continue
        starts = starts_of.get(e)
        if starts is None:
            starts = starts_of[e] = []
        begin = now
        d = depth[e]
        if len(starts) >= d:
            oldest = starts[len(starts) - d]
            if oldest > begin:
                kstall["queue full"] = kstall.get("queue full", 0) + oldest - begin
                begin = oldest
        issued = begin + issue
        if issue:
            busy["kcore"] = busy.get("kcore", 0) + issue
        free = free_of.get(e, 0)
        floor = issued if issued > free else free
        reads = c.reads
        writes = c.writes
        # the latest end among live accesses that order this command (module docstring):
        # a read waits for an overlapping write, a write for an overlapping read or write;
        # ``live`` is sorted by end, so the scan runs from the latest end down and stops at
        # the first conflict, or at ``floor`` (the command starts after it anyway)
        ready = 0
        k = len(live)
        while k:
            k -= 1
            got, space, lo, hi, is_write = live[k]
            if got <= floor:
                break
            if is_write:
                for r in reads:
                    if r.lo < hi and lo < r.hi and r.space == space:
                        ready = got
                        break
                if ready:
                    break
            for w in writes:
                if w.lo < hi and lo < w.hi and w.space == space:
                    ready = got
                    break
            if ready:
                break
        for t, i in after:
            got = states[t].ends[i]
            if got > ready:
                ready = got
        start = ready if ready > floor else floor
        cycles = c.cycles
        end = start + cycles
        stalls = stalls_of.get(e)
        if stalls is None:
            stalls = stalls_of[e] = {}
        wait = 0
        if transfers:
            sent = transfers.get(pos)
            if sent is not None:
                route, payload = sent
                head = end - payload  # the send's fixed cost and the hops come first
                wait = links.grant(route, head, payload, (st.tile, pos, c.noc_bytes)) - head
                if wait:
                    end += wait
                    stalls["link"] = stalls.get("link", 0) + wait
        waited = (issued if issued < start else start) - free  # idle before it was issued
        if waited > 0:
            stalls["issue"] = stalls.get("issue", 0) + waited
        if start != floor:
            stalls["dependency"] = stalls.get("dependency", 0) + start - floor
        if cycles:
            busy[e] = busy.get(e, 0) + cycles
        starts.append(start)
        free_of[e] = end
        if end > last_end.get(e, 0):
            last_end[e] = end
        elif e not in last_end:
            last_end[e] = 0
        add_end(end)
        add_timing(_new_timing(pos, e, begin, issued, start, end, c.label, wait))
        now = issued
        if len(live) > 64:
            # accesses that ended by now order nothing later: every command issues after it
            del live[: bisect_right(live, now, key=_end)]
        for r in reads:
            insort(live, (end, r.space, r.lo, r.hi, False))
        for w in writes:
            insort(live, (end, w.space, w.lo, w.hi, True))
        pos += 1
        st.pos = pos
        moved = True
    st.t = now
    return moved


# ---------------------------------------------------------------------- building by hand


class StreamBuilder:
    """Build one tile's command stream by hand, each command timed by its law.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> b = StreamBuilder(TX81)
        >>> a = b.load(4096, Range("spm", 0, 4096))
        >>> x, y = Range("spm", 0, 4096), Range("spm", 4096, 8192)
        >>> s = b.ct(2048, 1, "f16", reads=(x,), writes=(y,))
        >>> run = simulate({0: b.commands}, TX81)
        >>> run.tiles[0].timings[1].start == run.tiles[0].timings[0].end  # the CT waits
        True
    """

    def __init__(self, hw: ChipConfig, *, active_tiles: int = 1) -> None:
        self.hw = hw
        self.active_tiles = active_tiles
        self.commands: list[SimCommand] = []
        self._sent = False

    def _add(self, c: SimCommand) -> int:
        self.commands.append(c)
        return len(self.commands) - 1

    def _cyc(self, t: laws.Timed) -> int:
        return t.cycles(self.hw)

    def load(self, num_bytes: int, dst: Range, src: Range | None = None, label: str = "") -> int:
        """An RDMA of ``num_bytes`` into ``dst``; returns its index."""
        t = laws.dma("rdma", num_bytes, self.hw, active_tiles=self.active_tiles)
        reads = (src,) if src else ()
        return self._add(SimCommand("rdma", self._cyc(t), reads, (dst,), label or "load"))

    def store(self, num_bytes: int, src: Range, dst: Range | None = None, label: str = "") -> int:
        """A WDMA of ``num_bytes`` from ``src``."""
        t = laws.dma("wdma", num_bytes, self.hw, active_tiles=self.active_tiles)
        writes = (dst,) if dst else ()
        return self._add(SimCommand("wdma", self._cyc(t), (src,), writes, label or "store"))

    def ne(
        self,
        m: int,
        k: int,
        n: int,
        dtype: str,
        *,
        reads: tuple[Range, ...] = (),
        writes: tuple[Range, ...] = (),
        label: str = "",
    ) -> int:
        """An NE command."""
        t = laws.ne(m, k, n, dtype, self.hw)
        return self._add(SimCommand("ne", self._cyc(t), reads, writes, label or "ne"))

    def ct(
        self,
        elements: int,
        ops: float,
        dtype: str,
        *,
        reads: tuple[Range, ...] = (),
        writes: tuple[Range, ...] = (),
        label: str = "",
    ) -> int:
        """A CT command."""
        t = laws.ct(elements, ops, dtype, self.hw)
        return self._add(SimCommand("ct", self._cyc(t), reads, writes, label or "ct"))

    def tdma(
        self,
        iterations: int,
        inner_bytes: int,
        *,
        reads: tuple[Range, ...] = (),
        writes: tuple[Range, ...] = (),
        label: str = "",
    ) -> int:
        """A TDMA GatherScatter."""
        t = laws.tdma(iterations, inner_bytes, self.hw)
        return self._add(SimCommand("tdma", self._cyc(t), reads, writes, label or "tdma"))

    def send(
        self,
        num_bytes: int,
        src: Range,
        label: str = "",
        *,
        tile: int | None = None,
        to: int | None = None,
    ) -> int:
        """A DTE message (the first one of the launch costs more).

        With ``tile`` (this stream's tile) and ``to`` (another tile), a NoC transfer of the
        ``num_bytes`` payload over the route between them (module docstring); without, a
        message timed by its law alone.
        """
        if (tile is None) != (to is None):
            raise Tx8labError("StreamBuilder.send: give both tile= and to=, or neither")
        hops = 0 if tile is None or to is None else noc.hops(tile, to, self.hw)
        t = laws.dte(num_bytes, self.hw, first=not self._sent, hops=hops)
        self._sent = True
        return self._add(
            SimCommand(
                "dte",
                self._cyc(t),
                (src,),
                (),
                label or "send",
                dst_tile=-1 if to is None else to,
                noc_bytes=num_bytes if to is not None else 0,
            )
        )

    def receive(self, tile: int, send: int, dst: Range | None = None, label: str = "") -> int:
        """Wait for command ``send`` of ``tile`` (a NoC transfer to this tile) to land."""
        writes = (dst,) if dst is not None else ()
        return self._add(
            SimCommand("recv", 0, (), writes, label or f"recv from tile {tile}", ((tile, send),))
        )

    def join(self, participants: int = 1, waits: tuple[str, ...] = (), label: str = "") -> int:
        """An NCC join."""
        t = laws.join(participants, self.hw)
        return self._add(
            SimCommand(
                "join", self._cyc(t), label=label or "join", waits=waits, participants=participants
            )
        )

    def barrier(self, label: str = "") -> int:
        """A chip-wide barrier (its cost is the barrier law at release)."""
        return self._add(SimCommand("barrier", 0, label=label or "barrier"))


__all__ = [
    "CONTROL",
    "ENGINES",
    "REASONS",
    "LinkUse",
    "Range",
    "SimCommand",
    "SimResult",
    "StreamBuilder",
    "TileRun",
    "Timing",
    "costliest_stall",
    "limiting_engine",
    "simulate",
]
