"""The emitted program timed by the tile simulator: Program commands -> simulator streams.

Spec: issue 19 (one execution model: the per-tile command stream of ``tx8lab.core.program``
played by ``tx8lab.hw.sim``). Each :class:`~tx8lab.core.program.Command` becomes one
:class:`~tx8lab.hw.sim.SimCommand` on its engine (loads on RDMA, stores on WDMA, compute
on the op's engine), timed by the op library's :meth:`~tx8lab.core.ops.registry.OpDef.law`
(the same countable work the plan's cost uses, under the fitted laws of
``tx8lab.hw.laws``), with the SPM and DDR byte ranges it reads and writes so the
simulator orders dependent commands as the hardware's range checks do; a barrier is a
barrier.

Readings chosen where the sources are vague:

- **Byte ranges.** A command touching a window of a region in the plain ``Tensor`` layout
  covers the bytes from the window's first element to its last, row-major in the
  region's box (a superset of the bytes it touches, so no true dependency is missed);
  in any other layout (Cx/NCx blocks, a gather's rows) it covers the whole region.
- A partial-sum access reads and writes its accumulator, except at ``psum_init`` (write);
  a scratch (``imm``) access writes its region.
- **NoC transfers** (a reduction dim sharded across tiles): a ``send`` is a DTE message
  to its peer (``laws.dte`` with the route's hops; the tile's first send of the program
  costs the first-message law), carrying its window's bytes over the links; a ``recv``
  is the simulator's blocking receive, waiting for the send with its tag; a ``reduce`` is
  a CT add over its elements. A group that sends is played on every tile.
- The DDR share of a DMA counts the tiles the group runs on (the tiles with commands of it).
- **One group, one strategy** (:func:`simulate_schedule`, the group pipeline's timer): the
  group's commands as the program would emit them for that strategy and SPM packing
  (:func:`~tx8lab.core.program.group_program` on a :class:`~tx8lab.core.program.GroupCode`
  built from the stages' outputs instead of the IR), played alone from time 0 without the
  barrier that may follow it. The whole program (:func:`simulate_program`) may overlap a
  group's head with the previous group's tail where no barrier separates them, so its
  body can be below the sum of its groups. Before opt-ddr has placed the tensors (the
  search runs before it), each body op without a ``ddr_addr`` gets a DDR region of its
  own (:data:`PLACEHOLDER_DDR_STRIDE` apart): only a group that stores a tensor and loads
  it back could see an ordering the placed program has and this one misses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tx8lab._bulk import constructor, gc_paused
from tx8lab.core.attrs import LayoutMode
from tx8lab.core.dtypes import bits_of
from tx8lab.core.ir import Block, Module, Op
from tx8lab.core.ops import get_op_def
from tx8lab.core.ops.registry import Window, value_bytes
from tx8lab.core.program import (
    Access,
    Command,
    GroupCode,
    Program,
    group_program,
    region_tiles,
    value_names,
)
from tx8lab.core.schedule.estimate import SIM_ENGINES, SimEstimate
from tx8lab.core.schedule.spm_alloc import Allocation
from tx8lab.core.schedule.sw_pipeline import expand
from tx8lab.core.schedule.tasks import ScheduleInput, Strategy, Timeline
from tx8lab.errors import Tx8labError
from tx8lab.hw import laws, noc
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.laws import dma
from tx8lab.hw.sim import ENGINES, Range, SimCommand, SimResult, simulate

#: Distance between the placeholder DDR regions of ops opt-ddr has not placed yet.
PLACEHOLDER_DDR_STRIDE = 1 << 40

#: Schedule engine of a command -> simulator engine.
ENGINE_OF = {"ld": "rdma", "st": "wdma", "ne": "ne", "ct": "ct", "tdma": "tdma", "dte": "dte"}
_TENSOR = LayoutMode.Tensor.value


def byte_range(a: Access) -> Range | None:
    """The bytes an access may touch (module docstring); None for an empty window."""
    return _Ranges().range(a)


def sim_command(c: Command, op: Op | None, hw: ChipConfig, tiles: int) -> SimCommand:
    """One Program command as a simulator command, timed by its law."""
    return _Streams(hw).command(c, op, tiles)


#: ``Range`` / ``SimCommand`` from every field, positionally (~10^6 of each in a program).
_new_range = constructor(Range)
_new_sim = constructor(SimCommand)


class _Ranges:
    """Byte ranges of accesses, with each holder's strides and each element size kept once."""

    def __init__(self) -> None:
        self.strides: dict[int, tuple[Window, tuple[int, ...]]] = {}
        """id of a holder -> (the holder, its row-major strides): a tile's accesses to one
        lifetime share their holder object."""
        self.sizes: dict[str, int] = {}
        self.seen: dict[tuple[str, int, int], Range] = {}

    def range(self, a: Access) -> Range | None:
        """:func:`byte_range` of ``a``."""
        window = a.window
        for lo, hi in window:
            if hi <= lo:
                return None
        if a.layout != _TENSOR or a.gather_axis >= 0 or not window:
            return self.interned(a.space, a.addr, a.addr + a.nbytes)
        size = self.sizes.get(a.dtype)
        if size is None:
            size = self.sizes[a.dtype] = max(1, bits_of(a.dtype) // 8)
        holder = a.holder
        got = self.strides.get(id(holder))
        if got is None or got[0] is not holder:
            shape = [hi - lo for lo, hi in holder]
            strides = tuple(math.prod(shape[i + 1 :]) for i in range(len(shape)))
            got = self.strides[id(holder)] = (holder, strides)
        first = last = 0
        for (w0, w1), (h0, _), stride in zip(window, holder, got[1], strict=True):
            first += (w0 - h0) * stride
            last += (w1 - 1 - h0) * stride
        return self.interned(a.space, a.addr + first * size, a.addr + (last + 1) * size)

    def interned(self, space: str, lo: int, hi: int) -> Range:
        """One ``Range`` object per distinct range (tiles touch the same SPM bytes)."""
        key = (space, lo, hi)
        got = self.seen.get(key)
        if got is None:
            got = self.seen[key] = _new_range(space, lo, hi)
        return got


class _Streams(_Ranges):
    """Program commands -> simulator commands, with what many commands share worked out once.

    The laws are pure: a compute command's time is its op's law at its box's extents and the
    group's tile count, a DMA's the law at its bytes; byte ranges need their holder's strides
    and the element size. Each is kept here the first time it is asked for.
    """

    def __init__(self, hw: ChipConfig) -> None:
        super().__init__()
        self.hw = hw
        self.cycles: dict[tuple[Any, ...], int] = {}
        self.moved: dict[tuple[tuple[int, ...], str, str], int] = {}
        self.labels: dict[tuple[str, int, tuple[int, ...]], str] = {}
        self.sent: set[int] = set()
        """Tiles that sent a NoC message (the first send of a launch costs more)."""
        self.hops: dict[tuple[int, int], int] = {}

    def command(self, c: Command, op: Op | None, tiles: int) -> SimCommand:
        """:func:`sim_command`."""
        key = (c.function, c.op_id, c.iteration)
        label = self.labels.get(key)
        if label is None:
            label = f"{c.function} %{c.op_id}" + (f" {list(c.iteration)}" if c.iteration else "")
            self.labels[key] = label
        if c.what == "barrier":
            return SimCommand("barrier", 0, label=label)
        if op is None:
            raise Tx8labError(f"simulate: {c.label}: op %{c.op_id} is not in the module")
        hw = self.hw
        range_of = self.range
        reads = []
        for a in c.reads:
            r = range_of(a)
            if r is not None:
                reads.append(r)
        if c.gather is not None:
            r = range_of(c.gather)
            if r is not None:
                reads.append(r)
        writes = []
        for a in c.writes:
            r = range_of(a)
            if r is not None:
                writes.append(r)
        what = c.what
        if what == "send" or what == "recv" or what == "reduce":
            return self.transfer(c, tuple(reads), tuple(writes), label)
        if what == "load" or what == "load_const" or what == "store":
            spm = c.writes[0] if what != "store" else c.reads[0]
            shape_key = (spm.shape, spm.dtype, spm.layout)
            moved = self.moved.get(shape_key)
            if moved is None:
                moved = value_bytes(shape_key[0], spm.dtype, LayoutMode(spm.layout))
                self.moved[shape_key] = moved
            name = "wdma" if what == "store" else "rdma"
            dma_key = (name, moved, tiles)
            cycles = self.cycles.get(dma_key)
            if cycles is None:
                cycles = dma(name, moved, hw, active_tiles=tiles).cycles(hw)
                self.cycles[dma_key] = cycles
            return _new_sim(name, cycles, tuple(reads), tuple(writes), label, (), (), 1, -1, 0)
        extents = tuple([hi - lo for lo, hi in c.box])
        law_key = (c.op_id, extents, tiles)
        cycles = self.cycles.get(law_key)
        if cycles is None:
            entry = get_op_def(op.kind)
            t = entry.law(op, entry.slice_at(op, extents), hw, tiles=tiles)
            cycles = self.cycles[law_key] = t.cycles(hw)
        engine = ENGINE_OF.get(c.engine)
        if engine is None:
            raise Tx8labError(f"simulate: {c.label} runs on engine {c.engine!r}, which has no law")
        if c.psum is not None:
            r = range_of(c.psum)
            if r is not None:
                writes.append(r)
                if not c.psum_init:
                    reads.append(r)
        if c.imm is not None:
            r = range_of(c.imm)
            if r is not None:
                writes.append(r)
        return _new_sim(engine, cycles, tuple(reads), tuple(writes), label, (), (), 1, -1, 0)

    def transfer(
        self, c: Command, reads: tuple[Range, ...], writes: tuple[Range, ...], label: str
    ) -> SimCommand:
        """A NoC send (DTE), a receive or the CT add of a landed partial sum.

        A receive waits for its send once :func:`linked` sets its ``after``.
        """
        hw = self.hw
        a = c.writes[0]
        if c.what == "recv":
            return _new_sim("recv", 0, (), writes, label, (), (), 1, -1, 0)
        if c.what == "reduce":
            shape = a.shape
            add_key = ("reduce", shape, a.dtype)
            cycles = self.cycles.get(add_key)
            if cycles is None:
                law = laws.ct(math.prod(shape), 1, a.dtype, hw)
                cycles = self.cycles[add_key] = law.cycles(hw)
            return _new_sim("ct", cycles, reads, writes, label, (), (), 1, -1, 0)
        shape_key = (a.shape, a.dtype, a.layout)
        moved = self.moved.get(shape_key)
        if moved is None:
            moved = value_bytes(shape_key[0], a.dtype, LayoutMode(a.layout))
            self.moved[shape_key] = moved
        first = c.tile not in self.sent
        self.sent.add(c.tile)
        route_key = (c.tile, c.peer)
        hops = self.hops.get(route_key)
        if hops is None:
            hops = self.hops[route_key] = noc.hops(c.tile, c.peer, hw)
        send_key = ("dte", moved, first, hops)
        cycles = self.cycles.get(send_key)
        if cycles is None:
            law = laws.dte(moved, hw, first=first, hops=hops)
            cycles = self.cycles[send_key] = law.cycles(hw)
        return _new_sim("dte", cycles, reads, (), label, (), (), 1, c.peer, moved)


def _with_after(c: SimCommand, after: tuple[tuple[int, int], ...]) -> SimCommand:
    """``dataclasses.replace(c, after=after)``, positionally (a receive per transfer)."""
    return _new_sim(
        c.engine,
        c.cycles,
        c.reads,
        c.writes,
        c.label,
        after,
        c.waits,
        c.participants,
        c.dst_tile,
        c.noc_bytes,
    )


def linked(
    commands: Mapping[int, Sequence[Command]], streams: dict[int, list[SimCommand]]
) -> dict[int, list[SimCommand]]:
    """``streams`` with each receive waiting for its send (``after``, by the shared tag).

    Raises:
        Tx8labError: a receive whose send is in none of the streams.
    """
    sends = {
        c.tag: (tile, i)
        for tile, cmds in commands.items()
        for i, c in enumerate(cmds)
        if c.what == "send"
    }
    if not sends:
        return streams
    for tile, cmds in commands.items():
        for i, c in enumerate(cmds):
            if c.what != "recv":
                continue
            if c.tag not in sends:
                raise Tx8labError(
                    f"simulate: {c.label} receives {c.tag} from tile {c.peer}, which no "
                    "command sends"
                )
            streams[tile][i] = _with_after(streams[tile][i], (sends[c.tag],))
    return streams


def program_streams(
    program: Program, module: Module, hw: ChipConfig
) -> dict[int, list[SimCommand]]:
    """Every tile's commands as simulator commands."""
    ops = module.op_by_id()
    tiles_of: dict[int, set[int]] = {}
    for tile, commands in program.tiles.items():
        for c in commands:
            tiles_of.setdefault(c.group, set()).add(tile)
    streams = _Streams(hw)
    with gc_paused():  # every command survives: see tx8lab._bulk
        played = {
            tile: [streams.command(c, ops.get(c.op_id), len(tiles_of[c.group])) for c in commands]
            for tile, commands in program.tiles.items()
        }
    return linked(program.tiles, played)


def simulate_program(program: Program, module: Module, hw: ChipConfig) -> SimResult:
    """The program played out by the tile simulator."""
    return simulate(program_streams(program, module, hw), hw)


def simulated_report(program: Program, result: SimResult) -> dict[str, Any]:
    """The JSON of a simulated run: chip figures and, per group, its span and busy engines.

    ``latency_ms`` is the kernel body (the slowest tile), ``tile_ms`` every tile's body,
    ``busy_ms`` per engine the busiest tile's (keys ``ne ct rdma wdma tdma dte kcore``),
    ``stall_ms`` the slowest tile's stalls by engine and reason, ``launch_ms`` apart. Per
    group: ``latency_ms`` (its span on its slowest tile: first issue to last end),
    ``tile_ms`` (its span on every tile) and ``busy_ms`` (the busiest tile's, per engine).
    """
    out = result.summary()
    out["stall_ms"] = result.stall_ms()
    spans = group_tile_spans(program, result)
    busy: dict[int, dict[str, dict[int, int]]] = {}
    for tile, commands in program.tiles.items():
        for c, t in zip(commands, result.tiles[tile].timings, strict=True):
            per = busy.setdefault(c.group, {})
            if t.engine in ENGINES:
                engine = per.setdefault(t.engine, {})
                engine[tile] = engine.get(tile, 0) + t.end - t.start
            kcore = per.setdefault("kcore", {})
            kcore[tile] = kcore.get(tile, 0) + t.issue_end - t.issue_start
    out["groups"] = [
        {
            "id": g,
            "latency_ms": result.ms(max(hi - lo for lo, hi in spans[g].values())),
            "tile_ms": {str(t): result.ms(hi - lo) for t, (lo, hi) in sorted(spans[g].items())},
            "busy_ms": {
                e: result.ms(max(busy[g].get(e, {0: 0}).values())) for e in (*ENGINES, "kcore")
            },
        }
        for g in program.groups
        if g in spans
    ]
    return out


def group_tile_spans(program: Program, result: SimResult) -> dict[int, dict[int, tuple[int, int]]]:
    """Group id -> tile -> (first issue, last end) of its commands there, cycles."""
    spans: dict[int, dict[int, tuple[int, int]]] = {}
    for tile, commands in program.tiles.items():
        for c, t in zip(commands, result.tiles[tile].timings, strict=True):
            per = spans.setdefault(c.group, {})
            lo, hi = per.get(tile, (t.issue_start, t.end))
            per[tile] = (min(lo, t.issue_start), max(hi, t.end))
    return spans


def group_ms(program: Program, result: SimResult) -> Mapping[int, float]:
    """Group id -> its span on the slowest tile (first issue to last end), ms."""
    return {
        g: result.ms(max(hi - lo for lo, hi in per.values()))
        for g, per in group_tile_spans(program, result).items()
    }


def sim_estimate(result: SimResult) -> SimEstimate:
    """A simulated run summed up for the schedule layer: the slowest tile's figures."""
    slowest = result.slowest_tile
    run = result.tiles[slowest]
    return SimEstimate(
        cycles=run.body,
        slowest_tile=slowest,
        tile_cycles={t: r.body for t, r in sorted(result.tiles.items())},
        busy={e: run.busy.get(e, 0) for e in SIM_ENGINES},
        stalls={e: dict(rs) for e, rs in run.stalls.items()},
        commands=len(run.timings),
        result=result,
    )


def _placeholder_ddr(group: Op) -> Op:
    """The group with a DDR region of its own for each body op opt-ddr did not place."""
    body = group.regions[0]
    if all("ddr_addr" in op.attrs for op in body.ops):
        return group
    ops = tuple(
        op
        if "ddr_addr" in op.attrs
        else op.with_attrs(ddr_addr=(op.id + 1) * PLACEHOLDER_DDR_STRIDE)
        for op in body.ops
    )
    return group.replace(regions=(Block(body.args, ops),))


def simulate_schedule(
    group: Op,
    strategy: Strategy,
    schedule: ScheduleInput,
    timeline: Timeline,
    allocation: Allocation,
    hw: ChipConfig,
    *,
    every_tile: bool = False,
) -> SimEstimate:
    """One group's commands for ``strategy`` and ``allocation``, played by the simulator.

    The group pipeline's timer (``stages.GroupTimer``; module docstring): what the
    search, group-cost and the group tuner rank and report. By default only the region's
    first tile is played (``every_tile`` plays them all): its piece is the largest in
    every dim and every tile issues the same commands in the same order on its piece, so
    no command of another tile is longer; the simulator is monotone (each time is a
    maximum of sums of earlier times), so no other tile ends later. The DMA share still
    counts every tile of the region on DDR.
    """
    group = _placeholder_ddr(group)
    offsets = {lt.id: (int(allocation.offsets[lt.id]), int(lt.size)) for lt in allocation.lifetimes}
    code = GroupCode(
        group,
        strategy,
        schedule,
        timeline,
        tuple(expand(schedule, strategy.multi_buffer)),
        offsets,
        value_names(group, schedule),
    )
    # a group whose tiles exchange partial sums is played on every tile (they wait for
    # each other)
    first = not every_tile and not schedule.reductions
    commands = group_program(group, hw, code, chip0=True, first_tile=first)
    busy = {tile: cmds for tile, cmds in commands.items() if cmds}
    if not busy:
        raise Tx8labError(f"simulate: group %{group.id} has no commands on any tile")
    ops = {op.id: op for op in group.regions[0].ops}
    on_ddr = len(region_tiles(group, hw))
    played = _Streams(hw)
    streams = {
        tile: [played.command(c, ops.get(c.op_id), on_ddr) for c in cmds]
        for tile, cmds in busy.items()
    }
    return sim_estimate(simulate(linked(busy, streams), hw))


__all__ = [
    "ENGINE_OF",
    "PLACEHOLDER_DDR_STRIDE",
    "byte_range",
    "group_ms",
    "group_tile_spans",
    "program_streams",
    "sim_command",
    "sim_estimate",
    "simulate_program",
    "simulate_schedule",
    "simulated_report",
]
