"""The tile simulator: hand-derived timings, a cycle-stepped second implementation, errors.

Oracles: timings derived by hand in each test from the model's rules (issue in order,
queue depth, FIFO engines, byte-range dependencies, joins, barriers), and a brute-force
simulator written here that steps one cycle at a time (no shared code with ``sim``).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tx8lab.errors import Tx8labError
from tx8lab.hw import laws
from tx8lab.hw.cost import to_cycles
from tx8lab.hw.presets import TX81
from tx8lab.hw.sim import ENGINES, Range, SimCommand, StreamBuilder, simulate

#: 3-cycle issue, queues of 2 (1 for TDMA): small numbers a hand derivation can follow.
HW = TX81.with_overrides(
    {"tile.kcore_issue_s": 3e-9, "tile.queue_depth": 2, "tile.tdma_queue_depth": 1}
)


def spm(lo: int, hi: int) -> Range:
    return Range("spm", lo, hi)


def test_a_chain_waits_on_its_producer_and_issue_is_serial() -> None:
    cmds = [
        SimCommand("rdma", 10, writes=(spm(0, 64),)),
        SimCommand("ct", 5, reads=(spm(0, 64),), writes=(spm(64, 128),)),
        SimCommand("wdma", 7, reads=(spm(64, 128),)),
    ]
    run = simulate({0: cmds}, HW).tiles[0]
    # issue 0..3, 3..6, 6..9; rdma 3..13; ct waits for it: 13..18; wdma 18..25
    assert [(t.issue_end, t.start, t.end) for t in run.timings] == [
        (3, 3, 13),
        (6, 13, 18),
        (9, 18, 25),
    ]
    assert run.body == 25
    assert run.busy == {"kcore": 9, "rdma": 10, "ct": 5, "wdma": 7}
    assert run.stalls["ct"] == {"issue": 6, "dependency": 7}
    assert run.stalls["wdma"] == {"issue": 9, "dependency": 9}


def test_disjoint_ranges_overlap_across_engines() -> None:
    cmds = [
        SimCommand("rdma", 20, writes=(spm(0, 64),)),
        SimCommand("ct", 20, writes=(spm(64, 96),)),
    ]
    run = simulate({0: cmds}, HW).tiles[0]
    assert [(t.start, t.end) for t in run.timings] == [(3, 23), (6, 26)]


def test_a_write_after_a_read_waits_for_the_reader() -> None:
    cmds = [
        SimCommand("wdma", 50, reads=(spm(0, 64),)),
        SimCommand("rdma", 5, writes=(spm(32, 96),)),  # overlaps the store's source
    ]
    run = simulate({0: cmds}, HW).tiles[0]
    assert run.timings[1].start == run.timings[0].end == 53


def test_the_kernel_core_waits_while_a_queue_is_full() -> None:
    # depth 2: the 4th CT command may be issued only when the 2nd has started
    cmds = [SimCommand("ct", 100, writes=(spm(64 * i, 64 * i + 64),)) for i in range(4)]
    run = simulate({0: cmds}, HW).tiles[0]
    starts = [t.start for t in run.timings]
    assert starts == [3, 103, 203, 303]
    # issues: 0, 3, 6 (3rd waits for nothing: 1 pending), 4th waits until the 2nd starts (103)
    assert [t.issue_start for t in run.timings] == [0, 3, 6, 103]
    assert run.stalls["kcore"] == {"queue full": 103 - 9}


def test_a_join_waits_for_the_engines_it_names() -> None:
    cmds = [
        SimCommand("rdma", 40, writes=(spm(0, 64),)),
        SimCommand("ct", 10, writes=(spm(64, 128),)),
        SimCommand("join", 2, waits=("ct",)),
        SimCommand("join", 2),
    ]
    run = simulate({0: cmds}, HW).tiles[0]
    # issue ends at 6; ct 6..16; join(ct) waits 6..16, runs 16..18; join(all) waits for
    # the rdma (3..43), runs 43..45
    assert [(t.start, t.end) for t in run.timings[2:]] == [(16, 18), (43, 45)]
    assert run.stalls["kcore"] == {"join": (16 - 6) + (43 - 18)}
    assert run.body == 45


def test_a_barrier_holds_every_tile_until_the_slowest_arrives() -> None:
    cost = laws.barrier(2, HW).cycles(HW)
    fast = [SimCommand("ct", 10), SimCommand("barrier", 0), SimCommand("ct", 10)]
    slow = [SimCommand("ct", 90), SimCommand("barrier", 0), SimCommand("ct", 10)]
    result = simulate({0: fast, 1: slow}, HW)
    # tile 1 arrives when its ct ends (3 + 90); both leave at 93 + cost
    for tile in (0, 1):
        after = result.tiles[tile].timings[2]
        assert after.issue_start == 93 + cost
        assert after.end == 93 + cost + 3 + 10
    assert result.tiles[0].stalls["kcore"]["barrier"] == 93 - 3
    assert result.body_cycles == 93 + cost + 13


def test_after_orders_a_command_behind_another_tiles() -> None:
    send = [SimCommand("dte", 30, reads=(spm(0, 64),))]
    recv = [SimCommand("ct", 5, reads=(spm(0, 64),), after=((0, 0),))]
    result = simulate({0: send, 1: recv}, HW)
    assert result.tiles[1].timings[0].start == 33


def test_launch_is_reported_apart_from_the_body() -> None:
    result = simulate({0: [SimCommand("ct", 10)]}, HW)
    assert result.body_cycles == 13
    assert result.launch_cycles == to_cycles(HW.launch_s, HW) > 100_000
    summary = result.summary()
    assert summary["latency_ms"] == pytest.approx(13e-6)
    assert set(summary["busy_ms"]) == {*ENGINES, "kcore"}


def test_errors_name_the_tile_and_command() -> None:
    with pytest.raises(Tx8labError, match=r"tile 0 command 0 .*engine 'gpu'"):
        simulate({0: [SimCommand("gpu", 1, label="x")]}, HW)
    with pytest.raises(Tx8labError, match="command 5 of tile 1, which does not exist"):
        simulate({0: [SimCommand("ct", 1, after=((1, 5),))], 1: []}, HW)
    a = [SimCommand("ct", 1, after=((1, 0),))]
    b = [SimCommand("ct", 1, after=((0, 0),))]
    with pytest.raises(Tx8labError, match="tile 0 cannot go on at command 0"):
        simulate({0: a, 1: b}, HW)


def test_stream_builder_times_commands_by_their_laws() -> None:
    b = StreamBuilder(TX81)
    b.load(8192, spm(0, 8192))
    b.join(1)
    run = simulate({0: b.commands}, TX81)
    want = sum(
        t.cycles(TX81) for t in (laws.issue(TX81), laws.dma("rdma", 8192, TX81), laws.join(1, TX81))
    )
    assert run.body_cycles == want


# ------------------------------------------------------------------ a second implementation


def brute_force(cmds: list[SimCommand], issue: int, depth: dict[str, int]) -> list[tuple[int, int]]:
    """Step one cycle at a time; (start, end) of every command."""
    n = len(cmds)
    issued_at: list[int | None] = [None] * n
    start: list[int | None] = [None] * n
    end: list[int | None] = [None] * n
    k_next, k_free = 0, 0
    t = 0

    def conflicts(i: int, j: int) -> bool:
        a, b = cmds[i], cmds[j]
        for x in a.reads:
            for y in b.writes:
                if x.space == y.space and x.lo < y.hi and y.lo < x.hi:
                    return True
        for x in a.writes:
            for y in (*b.reads, *b.writes):
                if x.space == y.space and x.lo < y.hi and y.lo < x.hi:
                    return True
        return False

    while any(e is None or e > t for e in end) or k_next < n:
        # engines start their oldest issued command when free and unblocked
        for e in ENGINES:
            queue = [i for i in range(n) if cmds[i].engine == e and start[i] is None]
            busy = any(
                cmds[i].engine == e and start[i] is not None and end[i] > t for i in range(n)
            )  # type: ignore[operator]
            if queue and not busy:
                i = queue[0]
                ok = issued_at[i] is not None and issued_at[i] <= t  # type: ignore[operator]
                ok = ok and all(
                    end[j] is not None and end[j] <= t
                    for j in range(i)
                    if conflicts(i, j)  # type: ignore[operator]
                )
                if ok:
                    start[i], end[i] = t, t + cmds[i].cycles
        # the kernel core issues the next command
        if k_next < n and t >= k_free:
            c = cmds[k_next]
            if c.engine == "join":
                if all(end[j] is not None and end[j] <= t for j in range(k_next)):  # type: ignore[operator]
                    start[k_next], end[k_next] = t, t + c.cycles
                    issued_at[k_next] = t + c.cycles
                    k_free = t + c.cycles
                    k_next += 1
            else:
                pending = sum(
                    1
                    for j in range(k_next)
                    if cmds[j].engine == c.engine
                    and issued_at[j] is not None
                    and (start[j] is None or start[j] > t)  # type: ignore[operator]
                )
                if pending < depth[c.engine]:
                    issued_at[k_next] = t + issue
                    k_free = t + issue
                    k_next += 1
                    continue  # an engine may start it this cycle only once issued
        t += 1
        if t > 100_000:
            raise AssertionError("brute force did not finish")
    return [(s, e) for s, e in zip(start, end, strict=True)]  # type: ignore[misc]


@st.composite
def streams(draw: Any) -> list[SimCommand]:
    out = []
    for _ in range(draw(st.integers(1, 10))):
        engine = draw(st.sampled_from(["ne", "ct", "rdma", "wdma", "tdma", "join"]))
        cycles = draw(st.integers(1, 12))
        if engine == "join":
            out.append(SimCommand("join", cycles))
            continue

        def rng() -> Range:
            lo = draw(st.integers(0, 6)) * 8
            return spm(lo, lo + draw(st.integers(1, 3)) * 8)

        reads = tuple(rng() for _ in range(draw(st.integers(0, 2))))
        writes = tuple(rng() for _ in range(draw(st.integers(0, 1))))
        out.append(SimCommand(engine, cycles, reads, writes))
    return out


@settings(max_examples=150, deadline=None)
@given(streams())
def test_simulator_equals_a_cycle_stepped_simulation(cmds: list[SimCommand]) -> None:
    depth = {e: HW.tile.queue_depth for e in ENGINES}
    depth["tdma"] = HW.tile.tdma_queue_depth
    want = brute_force(cmds, 3, depth)
    got = [(t.start, t.end) for t in simulate({0: cmds}, HW).tiles[0].timings]
    assert got == want


@st.composite
def busy_streams(draw: Any) -> list[SimCommand]:
    """Long streams of commands with several ranges each, outrunning their engines.

    Enough accesses are in flight at once (more than the simulator keeps before dropping
    finished ones) that its pruning of the live accesses is exercised.
    """
    out = []
    for _ in range(draw(st.integers(20, 50))):
        engine = draw(st.sampled_from(["ne", "ct", "rdma", "wdma", "tdma"]))

        def rng() -> Range:
            lo = draw(st.integers(0, 40)) * 8
            return spm(lo, lo + draw(st.integers(1, 4)) * 8)

        reads = tuple(rng() for _ in range(draw(st.integers(1, 3))))
        writes = tuple(rng() for _ in range(draw(st.integers(1, 2))))
        out.append(SimCommand(engine, draw(st.integers(5, 40)), reads, writes))
    return out


@settings(max_examples=25, deadline=None)
@given(busy_streams())
def test_simulator_equals_a_cycle_stepped_simulation_of_busy_streams(
    cmds: list[SimCommand],
) -> None:
    depth = {e: HW.tile.queue_depth for e in ENGINES}
    depth["tdma"] = HW.tile.tdma_queue_depth
    want = brute_force(cmds, 3, depth)
    got = [(t.start, t.end) for t in simulate({0: cmds}, HW).tiles[0].timings]
    assert got == want
