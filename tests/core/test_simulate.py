"""The emitted program played by the tile simulator (``tx8lab.core.simulate``).

Oracles: a hand derivation from the laws for a one-op program, the Program's own
dependencies (a compute command never starts before the load of its operand ends), and
the laws summed by hand against the simulator's busy time.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from tx8lab.core import zoo
from tx8lab.core.builder import Builder
from tx8lab.core.ir import Module
from tx8lab.core.passes import build_pipeline
from tx8lab.core.program import Access, build_program
from tx8lab.core.runner import run_pipeline
from tx8lab.core.simulate import byte_range, program_streams, simulate_program
from tx8lab.hw import laws
from tx8lab.hw.presets import resolve_hw
from tx8lab.hw.sim import Range

HW = resolve_hw([])


def scheduled(module: Module, hw: Any = HW) -> Module:
    return list(run_pipeline(module, build_pipeline(None, {}), hw))[-1].result.module


def test_one_relu_is_load_then_compute_then_store_by_the_laws() -> None:
    b = Builder()
    b.output(b.op("Relu", b.input((1, 64), "f16")))
    module = scheduled(b.finish())
    program = build_program(module, HW)
    tile0 = [c for c in program.tiles[0] if c.what != "barrier"]
    assert [c.what for c in tile0] == ["load", "compute", "store"]
    tiles = sum(1 for cs in program.tiles.values() if any(c.what == "load" for c in cs))
    moved = math.prod(tile0[0].writes[0].shape) * 2  # f16, plain layout
    load = laws.dma("rdma", moved, HW, active_tiles=tiles)
    result = simulate_program(program, module, HW)
    timings = result.tiles[0].timings
    issue = laws.issue(HW).cycles(HW)
    ld, relu, st = timings[:3]
    assert ld.start == issue
    assert ld.end - ld.start == load.cycles(HW)
    # each waits for the one before it (its input's bytes), after its own issue
    assert relu.start == max(ld.end, 2 * issue)
    assert st.start == max(relu.end, 3 * issue)
    assert result.tiles[0].body >= st.end


SMALL = {
    "tiny_cnn": {},
    "tiny_transformer_block": {},
    "resnet50": {"size": 32},
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_zoo_programs_play_out_consistently(name: str) -> None:
    module = scheduled(zoo.build(name, **SMALL[name]))
    program = build_program(module, HW)
    streams = program_streams(program, module, HW)
    result = simulate_program(program, module, HW)
    for tile, commands in program.tiles.items():
        run = result.tiles[tile]
        assert len(run.timings) == len(commands)
        # busy per engine is the sum of the laws' times of its commands
        for engine in ("ne", "ct", "rdma", "wdma"):
            want = sum(c.cycles for c in streams[tile] if c.engine == engine)
            assert run.busy.get(engine, 0) == want
        # a compute command starts after the command that last wrote what it reads
        last_write: dict[tuple[str, int, int], int] = {}
        for c, t in zip(streams[tile], run.timings, strict=True):
            for r in c.reads:
                for (space, lo, hi), end in last_write.items():
                    if space == r.space and lo < r.hi and r.lo < hi:
                        assert t.start >= end, (tile, c.label)
            for w in c.writes:
                last_write[(w.space, w.lo, w.hi)] = t.end
        assert run.body >= max(run.busy.get(e, 0) for e in ("ne", "ct", "rdma", "wdma"))
    assert result.body_cycles == max(r.body for r in result.tiles.values())


def test_byte_range_of_a_window_is_its_row_major_span() -> None:
    # rows 2..4 of an 8 x 16 f16 region at 0x100: bytes 0x100 + 2*16*2 .. 0x100 + 4*16*2
    a = Access(
        "spm", "%1", "%1", "%1", 0x100, 256, "f16", "Tensor", ((0, 8), (0, 16)), ((2, 4), (0, 16))
    )
    assert byte_range(a) == Range("spm", 0x100 + 64, 0x100 + 128)
    # a column block spans from its first to its last row
    b = Access(
        "spm", "%1", "%1", "%1", 0, 256, "f16", "Tensor", ((0, 8), (0, 16)), ((1, 3), (4, 8))
    )
    assert byte_range(b) == Range("spm", (16 + 4) * 2, (2 * 16 + 8) * 2)
    # another layout covers the whole region; an empty window nothing
    c = Access("spm", "%1", "%1", "%1", 0, 256, "f16", "Cx", ((0, 8), (0, 16)), ((1, 3), (4, 8)))
    assert byte_range(c) == Range("spm", 0, 256)
    empty = Access("spm", "%1", "%1", "%1", 0, 256, "f16", "Tensor", ((0, 8),), ((3, 3),))
    assert byte_range(empty) is None


def test_run_json_reports_the_simulated_program(tmp_path: Any) -> None:
    import json

    from tx8lab.cli import main

    out = tmp_path / "r.json"
    assert main(["run", "tiny_cnn", "--json", str(out)]) == 0
    sim = json.loads(out.read_text())["simulated"]
    assert sim["latency_ms"] == max(sim["tile_ms"].values())
    assert {"ne", "ct", "rdma", "wdma", "tdma", "kcore"} <= set(sim["busy_ms"])
    assert sim["launch_ms"] == pytest.approx(HW.launch_s * 1e3)
    assert sim["groups"]
    for g in sim["groups"]:
        assert 0 < g["latency_ms"] <= sim["latency_ms"]
        assert max(g["busy_ms"].values()) <= g["latency_ms"] + 1e-12
    # stopped before opt-ddr: no simulated section
    assert main(["run", "tiny_cnn", "--until", "group-cost", "--json", str(out)]) == 0
    assert "simulated" not in json.loads(out.read_text())


def test_a_group_is_timed_by_its_commands_and_its_first_tile_is_its_slowest() -> None:
    from tx8lab.core.simulate import simulate_schedule

    module = zoo.build("tiny_transformer_block")
    step = list(run_pipeline(module, build_pipeline(None, {}), HW, until="group-cost"))[-1]
    groups = {op.id: op for op in step.before.main.ops if op.kind == "tx8be.Group"}
    entries = {e["id"]: e for e in step.result.artifacts["groups"]}
    for gid, run in step.result.artifacts["runs"].items():
        args = (groups[gid], run.strategy, run.input, run.timeline, run.allocation, HW)
        first, every = simulate_schedule(*args), simulate_schedule(*args, every_tile=True)
        # oracle: every tile played; none ends after the first one
        assert first.cycles == every.cycles == max(every.tile_cycles.values())
        assert len(every.tile_cycles) == HW.tiles_per_chip  # the group's region: the chip
        # group-cost reports the simulated body of this very strategy and packing
        assert entries[gid]["cycles"] == first.cycles
        # every engine's busy time lies inside the body
        assert max(first.busy.values()) <= first.cycles
        engine, _, cycles = first.costliest_stall or ("", "", 0)
        assert cycles == max(
            (c for e, rs in first.stalls.items() for c in rs.values() if e == engine),
            default=0,
        )


def test_trace_stall_slices_add_up_to_the_simulator_stalls() -> None:
    from tx8lab.core.schedule.trace import STALL_COLOURS, sim_events

    module = scheduled(zoo.build("tiny_cnn"))
    result = simulate_program(build_program(module, HW), module, HW)
    events = [e for e in sim_events(result, pid_base=100) if e["ph"] == "X"]
    tiles = sorted(result.tiles)
    for k, tile in enumerate(tiles):
        run = result.tiles[tile]
        mine = [e for e in events if e["pid"] == 100 + k]
        for engine, reasons in run.stalls.items():
            for reason in STALL_COLOURS:
                got = sum(
                    e["args"]["cycles"]
                    for e in mine
                    if e["args"]["engine"] == engine and e["name"] == f"stall: {reason}"
                )
                assert got == reasons.get(reason, 0), (tile, engine, reason)
        # command slices sum to the busy time of each engine (issue slices: kcore's)
        for engine, cycles in run.busy.items():
            got = sum(
                e["args"]["cycles"]
                for e in mine
                if e["args"]["engine"] == engine and e["cat"] == "simulated"
            )
            assert got == cycles, (tile, engine)
        # slices on one track never overlap
        for tid in {e["tid"] for e in mine}:
            spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in mine if e["tid"] == tid)
            assert all(a[1] <= b[0] + 1e-9 for a, b in itertools.pairwise(spans))
