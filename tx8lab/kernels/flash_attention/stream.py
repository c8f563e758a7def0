"""FlashAttention command streams: SPM layout, law-timed commands, tiles run by the simulator.

Spec: issue 19 (one tile simulator, :mod:`tx8lab.hw.sim`, and the engine laws of
:mod:`tx8lab.hw.laws` time every figure). The forward (:mod:`.timeline`) and backward
(:mod:`.backward`) models describe a tile's work as an ordered list of
:class:`~tx8lab.hw.sim.SimCommand` with the SPM and DDR byte ranges each command reads and
writes; this module holds what both need:

- :class:`SpmLayout` places named buffers (``slots`` copies each) in the tile's SPM, so
  a buffer's slot is a real byte range and ping-pong reuse, read-after-write and
  write-after-read orders come from overlapping ranges, as the hardware's address-range
  checks order them (no hand-made dependency lists);
- :class:`TileStream` appends commands timed by their law: NE (``laws.ne``), DMA
  (``laws.dma`` with the DDR share of the tiles at work), TDMA GatherScatter
  (``laws.tdma``, split at the board compiler's 16,384 inner transfers per command), and
  vector commands timed by the **op library's** CT law (:meth:`OpDef.law` of the
  equivalent graph op: ``tx8be.Exp`` costs what a graph's Exp costs, per element and at
  its operand's element type);
- :func:`run_tiles` simulates every distinct tile stream once and gathers the tiles into
  one :class:`~tx8lab.hw.sim.SimResult`.

Readings chosen where the sources are vague:

- A vector op is one CT command over its whole buffer; with ``piece_rows`` (seed 004's
  Vector block, e.g. 8 rows of a 1024-wide C block) it is one command per row piece,
  each given the whole buffer's range (a row piece of a Cx/NCx buffer is not
  contiguous; the superset orders nothing the piece would not).
- Layout moves (seed 001: TDMA ``op_gatherScatter``; board notes: "SPM-side stride needs
  GatherScatter") count one inner transfer per contiguous run: a Tensor (ND) <-> Cx/NCx
  conversion of ``rows x C`` moves ``rows x ceil(C / 64)`` runs of 64 elements (the whole
  row when ``C <= 32``, seed 001's Cx table); a transpose into Cx moves single elements.
- A GatherScatter carries at most 16,384 inner transfers and 1 MiB (the board compiler's
  policy after the LSU timeout study, ``micro.csv``); a longer move is several commands
  over proportional pieces of its ranges.
- ``sync_issue`` (a what-if: no source states it) puts an NCC join (``laws.join`` of one
  participant) before a command whose ranges conflict with a command of another engine
  not yet joined, so the kernel core waits for it instead of the hardware's checks.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tx8lab.core.builder import make_op
from tx8lab.core.ir import TensorType, Value
from tx8lab.core.ops import get_op_def
from tx8lab.errors import Tx8labError
from tx8lab.hw import laws
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.cost import to_cycles
from tx8lab.hw.sim import (
    Range,
    SimCommand,
    SimResult,
    TileRun,
    costliest_stall,
    limiting_engine,
    simulate,
)

#: Per-engine keys of the reports (busy time, stalls), in report order.
REPORT_ENGINES: tuple[str, ...] = ("ne", "ct", "rdma", "wdma", "tdma", "kcore")
#: Element bytes of the element types the FA models take.
ELEM_BYTES: Mapping[str, int] = {"bf16": 2, "f16": 2, "f32": 4}
#: Inner transfers one GatherScatter may carry (board compiler policy, ``micro.csv``).
GS_MAX_ITERATIONS = 16_384
#: Payload one GatherScatter may carry (same policy).
GS_MAX_BYTES = 1 << 20
#: Cx/NCx channel block for 16/32-bit types (seed 001 layout table).
CX_BLOCK = 64
#: SPM alignment of a buffer (board notes: 256 B preferred; Cx/NCx batch start 2048 bit).
SPM_ALIGN = 256


def elem_bytes(dtype: str, field_name: str = "dtype") -> int:
    """Bytes per element of ``dtype`` or a clear error naming the field."""
    if dtype not in ELEM_BYTES:
        raise Tx8labError(
            f"FA {field_name} must be one of {', '.join(sorted(ELEM_BYTES))}, got {dtype!r}"
        )
    return ELEM_BYTES[dtype]


# ---------------------------------------------------------------------- SPM layout


@dataclass
class SpmLayout:
    """Named buffers of a tile's SPM, ``slots`` copies each, 256-byte aligned.

    Examples:
        >>> spm = SpmLayout()
        >>> spm.add("S", 65536 * 4, 2)
        >>> spm.add("P", 65536 * 2, 2)
        >>> spm.at("S", 1), spm.at("P", 0).lo, spm.total_bytes
        (Range(space='spm', lo=262144, hi=524288), 524288, 786432)
    """

    regions: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    """Name -> (first byte, bytes per slot, slots)."""
    total_bytes: int = 0

    def add(self, name: str, slot_bytes: int, slots: int = 1) -> None:
        """Place ``slots`` copies of a ``slot_bytes`` buffer after the last one."""
        if name in self.regions:
            raise Tx8labError(f"SPM layout: buffer {name!r} placed twice")
        step = -(-slot_bytes // SPM_ALIGN) * SPM_ALIGN
        self.regions[name] = (self.total_bytes, step, slots)
        self.total_bytes += step * slots

    def has(self, name: str) -> bool:
        """Whether the layout holds buffer ``name``."""
        return name in self.regions

    def at(self, name: str, slot: int = 0, lo: int = 0, hi: int | None = None) -> Range:
        """Bytes ``[lo, hi)`` of slot ``slot % slots`` of buffer ``name``."""
        base, step, slots = self.regions[name]
        start = base + (slot % slots) * step
        return Range("spm", start + lo, start + (step if hi is None else hi))

    def slot_bytes(self, name: str) -> int:
        """Bytes of one (aligned) slot."""
        return self.regions[name][1]

    def rows(self) -> list[dict[str, int | str]]:
        """One row per buffer: name, offset, bytes per slot, slots (for views)."""
        return [
            {"buffer": n, "offset": b, "slot_bytes": s, "slots": k}
            for n, (b, s, k) in self.regions.items()
        ]


@dataclass
class DdrLayout:
    """Named tensors in DDR, one after another (their addresses only order commands)."""

    regions: dict[str, tuple[int, int]] = field(default_factory=dict)
    top: int = 0

    def add(self, name: str, num_bytes: int) -> None:
        """Place tensor ``name`` of ``num_bytes``."""
        self.regions[name] = (self.top, num_bytes)
        self.top += -(-num_bytes // 4096) * 4096

    def at(self, name: str, lo: int, hi: int) -> Range:
        """Bytes ``[lo, hi)`` of tensor ``name``."""
        base, _ = self.regions[name]
        return Range("ddr", base + lo, base + hi)


# ---------------------------------------------------------------------- vector law


@functools.lru_cache(maxsize=4096)
def vector_cycles(
    kind: str,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attrs: tuple[tuple[str, Hashable], ...],
    hw: ChipConfig,
) -> int:
    """Cycles of the op library's CT law for one ``kind`` op over operands of ``shapes``.

    The op is built as a graph op would be (``make_op``) and timed by
    :meth:`~tx8lab.core.ops.registry.OpDef.law` over its whole iteration space.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> vector_cycles("Exp", ((256, 256),), ("f32",), (), TX81)  # 47 ns + 65536 x 8 / 32e9
        16431
    """
    operands = [
        Value(-1, i, TensorType(s, d), is_arg=True)
        for i, (s, d) in enumerate(zip(shapes, dtypes, strict=True))
    ]
    op = make_op(kind, operands, dict(attrs), op_id=0)
    entry = get_op_def(op.kind)
    extents = tuple(d.size for d in entry.iter_dims(op))
    return entry.law(op, entry.slice_at(op, extents), hw).cycles(hw)


def vector_ops(kind: str) -> float:
    """The op library's vector ops per element of ``kind`` (``OpDef.vector_ops``)."""
    return float(get_op_def(kind if "." in kind else f"tx8be.{kind}").vector_ops)


# ---------------------------------------------------------------------- the stream


def _piece(r: Range, k: int, n: int) -> Range:
    """Piece ``k`` of ``n`` proportional pieces of ``r``."""
    size = r.hi - r.lo
    return Range(r.space, r.lo + size * k // n, r.lo + size * (k + 1) // n)


@dataclass
class TileStream:
    """One tile's command stream, each command timed by its law (module docstring)."""

    hw: ChipConfig
    active_tiles: int = 1
    """Tiles on DDR at once (their DMA share)."""
    sync_issue: bool = False
    commands: list[SimCommand] = field(default_factory=list)
    pairs: list[int] = field(default_factory=list)
    """The block pair each command belongs to (``-1``: none)."""
    _seen: list[tuple[Range, str, int, bool]] = field(default_factory=list)
    _joined: dict[str, int] = field(default_factory=dict)
    _vector_cache: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def add(
        self,
        engine: str,
        cycles: int,
        reads: Iterable[Range],
        writes: Iterable[Range],
        label: str,
        pair: int = -1,
    ) -> int:
        """Append one command (after a join when ``sync_issue`` asks); its index."""
        reads, writes = tuple(reads), tuple(writes)
        if self.sync_issue:
            self._join_before(engine, reads, writes, pair)
        index = len(self.commands)
        self.commands.append(SimCommand(engine, cycles, reads, writes, label))
        self.pairs.append(pair)
        if self.sync_issue:
            self._seen.extend((r, engine, index, False) for r in reads)
            self._seen.extend((w, engine, index, True) for w in writes)
        return index

    def _join_before(
        self, engine: str, reads: tuple[Range, ...], writes: tuple[Range, ...], pair: int
    ) -> None:
        waits: set[str] = set()
        for r, eng, index, is_write in self._seen:
            if eng == engine or eng in waits or index < self._joined.get(eng, 0):
                continue
            hit = any(_overlaps(r, w) for w in writes) or (
                is_write and any(_overlaps(r, x) for x in reads)
            )
            if hit:
                waits.add(eng)
        if not waits:
            return
        order = tuple(sorted(waits))
        cycles = laws.join(1, self.hw).cycles(self.hw)
        self.commands.append(
            SimCommand("join", cycles, label=f"join {'+'.join(order)}", waits=order)
        )
        self.pairs.append(pair)
        here = len(self.commands)
        for eng in order:
            self._joined[eng] = here
        low = min(self._joined.get(e, 0) for e in REPORT_ENGINES if e != "kcore")
        self._seen = [s for s in self._seen if s[2] >= low]

    def load(self, num_bytes: int, src: Range, dst: Range, label: str, pair: int = -1) -> int:
        """An RDMA of ``num_bytes`` from DDR ``src`` into SPM ``dst``."""
        t = laws.dma("rdma", num_bytes, self.hw, active_tiles=self.active_tiles)
        return self.add("rdma", t.cycles(self.hw), (src,), (dst,), label, pair)

    def store(self, num_bytes: int, src: Range, dst: Range, label: str, pair: int = -1) -> int:
        """A WDMA of ``num_bytes`` from SPM ``src`` to DDR ``dst``."""
        t = laws.dma("wdma", num_bytes, self.hw, active_tiles=self.active_tiles)
        return self.add("wdma", t.cycles(self.hw), (src,), (dst,), label, pair)

    def ne(
        self,
        mkn: tuple[int, int, int],
        dtype: str,
        reads: Sequence[Range],
        writes: Sequence[Range],
        label: str,
        pair: int = -1,
        *,
        batch: int = 1,
    ) -> int:
        """An NE command: ``batch`` products of (M x K) @ (K x N)."""
        t = laws.ne(*mkn, dtype, self.hw, batch=batch)
        return self.add("ne", t.cycles(self.hw), reads, writes, label, pair)

    def vector(
        self,
        kind: str,
        shapes: Sequence[tuple[int, ...]],
        dtypes: Sequence[str],
        reads: Sequence[Range],
        writes: Sequence[Range],
        label: str,
        pair: int = -1,
        *,
        piece_rows: int | None = None,
        attrs: Mapping[str, Hashable] | None = None,
    ) -> None:
        """The op library's ``kind`` over ``shapes`` on the CT, in pieces of ``piece_rows``.

        The rows (first dim of the first operand) go in ``ceil(rows / piece_rows)``
        commands (the last one the rest), each over that many rows of every operand whose
        first dim is the rows; None: one command.
        """
        attr_items = tuple(sorted((attrs or {}).items()))
        types = tuple(dtypes)
        rows = shapes[0][0] if shapes and shapes[0] else 1
        if piece_rows is None or piece_rows >= rows or rows <= 1:
            self.add(
                "ct", self._ct(kind, tuple(shapes), types, attr_items), reads, writes, label, pair
            )
            return
        pieces = -(-rows // piece_rows)
        for k in range(pieces):
            part = min(piece_rows, rows - k * piece_rows)
            sub = tuple((part, *s[1:]) if s and s[0] == rows else tuple(s) for s in shapes)
            cycles = self._ct(kind, sub, types, attr_items)
            self.add("ct", cycles, reads, writes, f"{label} [{k + 1}/{pieces}]", pair)

    def fa_vector(
        self,
        kind: str,
        shapes: Sequence[tuple[int, ...]],
        vector_dtype: str,
        io_dtype: str,
        reads: Sequence[Range],
        writes: Sequence[Range],
        label: str,
        pair: int,
        piece_rows: int | None,
        attrs: Mapping[str, Hashable],
    ) -> None:
        """An FA kernel's vector op: :meth:`vector` with the kernel's operand types.

        Every operand is in ``vector_dtype`` but a ``Where``'s condition (``i1``); a
        ``Transpose`` moves the ``io_dtype`` data as loaded.
        """
        if kind == "Transpose":
            dtypes = [io_dtype]
        else:
            dtypes = [
                "i1" if kind == "Where" and k == 0 else vector_dtype for k in range(len(shapes))
            ]
        self.vector(
            kind, shapes, dtypes, reads, writes, label, pair, piece_rows=piece_rows, attrs=attrs
        )

    def _ct(
        self,
        kind: str,
        shapes: tuple[tuple[int, ...], ...],
        dtypes: tuple[str, ...],
        attrs: tuple[tuple[str, Hashable], ...],
    ) -> int:
        key = (kind, shapes, dtypes, attrs)
        got = self._vector_cache.get(key)
        if got is None:
            got = self._vector_cache[key] = vector_cycles(kind, shapes, dtypes, attrs, self.hw)
        return got

    def gather(
        self,
        iterations: int,
        inner_bytes: int,
        src: Range,
        dst: Range,
        label: str,
        pair: int = -1,
    ) -> None:
        """A TDMA GatherScatter of ``iterations`` x ``inner_bytes``, split at the GS limits."""
        per = max(1, min(GS_MAX_ITERATIONS, GS_MAX_BYTES // max(1, inner_bytes)))
        n = max(1, -(-iterations // per))
        for k in range(n):
            its = min(per, iterations - k * per)
            t = laws.tdma(its, inner_bytes, self.hw)
            name = label if n == 1 else f"{label} [{k + 1}/{n}]"
            self.add(
                "tdma", t.cycles(self.hw), (_piece(src, k, n),), (_piece(dst, k, n),), name, pair
            )

    def to_layout(
        self,
        rows: int,
        channels: int,
        dtype: str,
        src: Range,
        dst: Range,
        label: str,
        pair: int = -1,
    ) -> None:
        """A Tensor (ND) <-> Cx/NCx move of ``rows x channels`` on the TDMA."""
        runs, run_elems = ncx_runs(rows, channels)
        self.gather(runs, run_elems * elem_bytes(dtype), src, dst, label, pair)

    def load_ncx(
        self,
        rows: int,
        channels: int,
        dtype: str,
        src: Range,
        dst: Range,
        staging: Range | None,
        name: str,
        where: str,
        pair: int = -1,
    ) -> None:
        """Load a ``rows x channels`` piece of tensor ``name`` into ``dst`` in NCx.

        Straight from DDR in NCx (``staging`` None), else (DDR in ND) into the
        ``staging`` copy and moved to NCx by the TDMA (:meth:`to_layout`).
        """
        num_bytes = rows * channels * elem_bytes(dtype)
        if staging is None:
            self.load(num_bytes, src, dst, f"RDMA {name} {where}", pair)
            return
        self.load(num_bytes, src, staging, f"RDMA {name} {where}", pair)
        self.to_layout(rows, channels, dtype, staging, dst, f"TDMA {name} ND->NCx {where}", pair)

    def transpose(
        self, rows: int, cols: int, dtype: str, src: Range, dst: Range, label: str, pair: int = -1
    ) -> None:
        """A transpose of ``rows x cols`` into Cx on the TDMA: one element per transfer."""
        self.gather(rows * cols, elem_bytes(dtype), src, dst, label, pair)


def _overlaps(a: Range, b: Range) -> bool:
    return a.space == b.space and a.lo < b.hi and b.lo < a.hi


def _conflicts(first: SimCommand, then: SimCommand) -> bool:
    """Whether ``then`` must wait for ``first`` (read after write, write after either)."""
    return any(_overlaps(w, r) for w in first.writes for r in then.reads) or any(
        _overlaps(x, w) for x in (*first.reads, *first.writes) for w in then.writes
    )


def ncx_runs(rows: int, channels: int) -> tuple[int, int]:
    """(contiguous runs, elements per run) of a Tensor <-> Cx/NCx move of ``rows x C``.

    Examples:
        >>> ncx_runs(256, 128)  # two 64-channel blocks per row
        (512, 64)
        >>> ncx_runs(256, 30)  # C <= 32: the Cx image is NHWC, one run per row
        (256, 30)
    """
    if channels <= 32:
        return rows, channels
    return rows * math.ceil(channels / CX_BLOCK), min(channels, CX_BLOCK)


# ---------------------------------------------------------------------- running tiles


@dataclass(frozen=True)
class TileSet:
    """Every tile's simulated run and the slowest tile's command stream."""

    result: SimResult
    slowest: int
    stream: TileStream

    def busy_ms(self) -> dict[str, float]:
        """Engine -> the largest busy time over the tiles (the board's per-tile maxima)."""
        got = self.result.busy_ms()
        return {e: got.get(e, 0.0) for e in REPORT_ENGINES}

    def tile_busy_ms(self, tile: int) -> dict[str, float]:
        """Engine -> busy ms of one tile."""
        run = self.result.tiles[tile]
        return {e: self.result.ms(run.busy.get(e, 0)) for e in REPORT_ENGINES}

    def stall_ms(self) -> dict[str, dict[str, float]]:
        """Engine -> reason -> ms of the slowest tile (report engines only)."""
        got = self.result.stall_ms(self.slowest)
        return {e: got.get(e, {}) for e in REPORT_ENGINES}

    def tile_ms(self) -> dict[int, float]:
        """Tile -> kernel body, ms (0 for a tile without work)."""
        return {t: self.result.ms(r.body) for t, r in sorted(self.result.tiles.items())}

    def limiting_engine(self) -> str:
        """The engine busiest on the slowest tile (``kcore`` counts as one)."""
        return limiting_engine(self.result.tiles[self.slowest].busy, REPORT_ENGINES)

    def top_stall(self) -> tuple[str, str, float]:
        """(engine, reason, ms) of the slowest tile's costliest stall (``sim.costliest_stall``).

        ``(limiting engine, "none", 0.0)`` when no engine stalled.
        """
        run = self.result.tiles[self.slowest]
        got = costliest_stall(run.busy, run.stalls, REPORT_ENGINES)
        if got is None:
            return self.limiting_engine(), "none", 0.0
        engine, reason, cycles = got
        return engine, reason, self.result.ms(cycles)

    def timing(self) -> dict[str, Any]:
        """The timing fields of an FA model (forward or backward), from this run.

        ``latency_ms`` (the slowest tile's body), ``tile_ms``, ``busy_ms``, ``stall_ms``,
        ``busiest_tile``, ``limiting_engine`` and ``top_stall``.
        """
        return {
            "latency_ms": self.result.ms(self.result.body_cycles),
            "tile_ms": self.tile_ms(),
            "busy_ms": self.busy_ms(),
            "stall_ms": self.stall_ms(),
            "busiest_tile": self.slowest,
            "limiting_engine": self.limiting_engine(),
            "top_stall": self.top_stall(),
        }

    def timing_json(self) -> dict[str, object]:
        """:meth:`timing` as the JSON reports give it (``tx8lab fa --json``)."""
        out = self.timing()
        engine, reason, ms = out["top_stall"]
        out["tile_ms"] = {str(t): v for t, v in out["tile_ms"].items()}
        out["top_stall"] = {"engine": engine, "reason": reason, "ms": ms}
        return out

    def waiting_on(self, engine: str, window: int = 512) -> dict[str, float]:
        """Engine -> ms: what ``engine``'s dependency stalls on the slowest tile waited for.

        Each stall (the command was issued and its engine free, yet it could not start)
        is walked back along the chain of commands that set its start: the earlier
        command with a conflicting range, or on the same engine, that ended right then;
        each stretch of the stall is charged to the engine running that command, and to
        ``kcore`` where a command waited for its issue. ``window`` bounds how far back a
        producer is looked for.
        """
        cmds, timings = self.stream.commands, self.result.tiles[self.slowest].timings
        out: dict[str, int] = {}

        def setter(k: int) -> int | None:
            start = timings[k].start
            for a in range(k - 1, max(-1, k - window), -1):
                if timings[a].end == start and (
                    cmds[a].engine == cmds[k].engine or _conflicts(cmds[a], cmds[k])
                ):
                    return a
            return None

        free = 0
        for k, (c, t) in enumerate(zip(cmds, timings, strict=True)):
            if c.engine != engine:
                continue
            lo = max(free, t.issue_end)
            free = t.end
            cur, hi = k, t.start
            while hi > lo:
                a = setter(cur)
                if a is None:
                    out["kcore"] = out.get("kcore", 0) + hi - lo
                    break
                seg = max(lo, timings[a].start)
                out[cmds[a].engine] = out.get(cmds[a].engine, 0) + hi - seg
                cur, hi = a, seg
        ms = self.result.ms
        return {e: ms(v) for e, v in sorted(out.items(), key=lambda kv: -kv[1]) if v}


def run_tiles(
    tiles: int,
    build: Callable[[int], TileStream | None],
    signature: Callable[[int], Hashable],
    hw: ChipConfig,
) -> TileSet:
    """Simulate every tile's stream; tiles with equal ``signature`` share one simulation.

    ``build(t)`` gives tile ``t``'s stream (None: no work). Tiles interact through
    nothing but the DDR share the laws already count, so each distinct stream is
    simulated alone; the slowest tile's own stream is rebuilt when it borrowed another
    tile's run, so its labels are its own.
    """
    runs: dict[int, TileRun] = {}
    cache: dict[Hashable, tuple[TileRun, TileStream, int]] = {}
    owner: dict[int, int] = {}
    streams: dict[int, TileStream] = {}
    for t in range(tiles):
        key = signature(t)
        if key is None:
            runs[t] = TileRun(t)
            continue
        if key not in cache:
            stream = build(t)
            if stream is None:
                runs[t] = TileRun(t)
                continue
            run = simulate({t: stream.commands}, hw).tiles[t]
            cache[key] = (run, stream, t)
            streams[t] = stream
        run, _, first = cache[key]
        runs[t] = run if first == t else replace(run, tile=t)
        owner[t] = first
    result = SimResult(runs, hw.clock_hz, to_cycles(hw.launch_s, hw))
    if not any(r.body for r in runs.values()):
        raise Tx8labError("FA model: no tile has work (every shape dimension must be >= 1)")
    slowest = result.slowest_tile
    stream = streams.get(slowest)
    if stream is None:
        # the same commands as the tile whose run it borrowed, with its own labels
        built = build(slowest)
        assert built is not None
        stream = built
        run = runs[slowest]
        timings = [
            replace(tm, label=c.label) for tm, c in zip(run.timings, stream.commands, strict=True)
        ]
        runs[slowest] = replace(run, timings=timings)
    return TileSet(result, slowest, stream)


__all__ = [
    "CX_BLOCK",
    "ELEM_BYTES",
    "GS_MAX_BYTES",
    "GS_MAX_ITERATIONS",
    "REPORT_ENGINES",
    "DdrLayout",
    "SpmLayout",
    "TileSet",
    "TileStream",
    "elem_bytes",
    "ncx_runs",
    "run_tiles",
    "vector_cycles",
    "vector_ops",
]
