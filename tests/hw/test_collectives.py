"""NoC reductions: each pattern's streams compute the sum, timed as derived by hand."""

from __future__ import annotations

import numpy as np
import pytest

from tx8lab.errors import Tx8labError
from tx8lab.hw import laws, noc
from tx8lab.hw.collectives import PATTERNS, reduce_over_noc, reduction_streams
from tx8lab.hw.presets import TX81
from tx8lab.hw.sim import SimCommand, SimResult, simulate

KIB = 1024
ISSUE = laws.issue(TX81).cycles(TX81)


def play_data(
    streams: dict[int, list[SimCommand]], run: SimResult, partials: dict[int, np.ndarray]
) -> dict[int, float]:
    """Execute the streams on data in the simulated times; the DDR result by element.

    Each command reads at its start and writes at its end (writes first at equal times).
    """
    size = 4  # f32
    spm = {t: np.zeros((len(partials) + 1) * len(p), np.float64) for t, p in partials.items()}
    for t, p in partials.items():
        spm[t][: len(p)] = p
    events = []
    for tile, stream in streams.items():
        for timing in run.tiles[tile].timings:
            c = stream[timing.index]
            events.append((timing.start, 1, tile, c))
            events.append((timing.end, 0, tile, c))
    events.sort(key=lambda e: (e[0], e[1]))
    held: dict[int, np.ndarray] = {}
    ddr: dict[int, float] = {}
    for _, phase, tile, c in events:
        key = id(c)
        if c.engine == "dte":
            (src,) = c.reads
            if phase == 1:
                held[key] = spm[tile][src.lo // size : src.hi // size].copy()
            else:
                land = _landing(streams, c, tile)
                spm[c.dst_tile][land.lo // size : land.hi // size] = held.pop(key)
        elif c.engine == "ct":
            land, acc = c.reads
            if phase == 1:
                held[key] = (
                    spm[tile][land.lo // size : land.hi // size]
                    + spm[tile][acc.lo // size : acc.hi // size]
                )
            else:
                spm[tile][acc.lo // size : acc.hi // size] = held.pop(key)
        elif c.engine == "wdma" and phase == 1:
            (src,) = c.reads
            for k in range(src.lo // size, src.hi // size):
                assert k not in ddr, "an element stored twice"
                ddr[k] = float(spm[tile][k])
    return ddr


def _landing(streams: dict[int, list[SimCommand]], send: SimCommand, tile: int) -> object:
    """The staging range of the receive that waits for ``send``."""
    index = streams[tile].index(send)
    for c in streams[send.dst_tile]:
        if c.engine == "recv" and c.after == ((tile, index),):
            return c.writes[0]
    raise AssertionError(f"no receive for {send.label}")


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize(
    "tiles", [(0, 1), (5, 6, 10), (0, 1, 2, 3, 7), noc.snake_ring(TX81)], ids=len
)
def test_every_pattern_stores_the_sum_of_the_partials(pattern: str, tiles: tuple[int, ...]) -> None:
    elements = 3 * 64 + 8  # chunks of a ring are whole lane groups, one shorter
    rng = np.random.default_rng(len(tiles))
    partials = {t: rng.integers(-50, 50, elements).astype(np.float64) for t in tiles}
    streams = reduction_streams(tiles, elements * 4, "f32", TX81, pattern)  # type: ignore[arg-type]
    run = simulate(streams, TX81)
    ddr = play_data(streams, run, partials)
    assert sorted(ddr) == list(range(elements))
    want = sum(partials.values())
    assert np.array_equal(np.array([ddr[k] for k in range(elements)]), want)


def test_two_tiles_direct_by_hand() -> None:
    b = 64 * KIB
    (best, *_) = reduce_over_noc((0, 1), b, "f32", TX81, patterns=("direct",))
    sent = ISSUE + 10_000 + 5 + 512  # first send, 1 hop, 64 KiB at 128 GB/s (1 GHz)
    add = laws.ct(b // 4, 1, "f32", TX81).cycles(TX81)
    store = laws.dma("wdma", b, TX81).cycles(TX81)
    assert add > ISSUE
    # the root: receive until the payload lands, the add, the store after the add
    assert best.cycles == sent + ISSUE + add + store
    assert best.noc_bytes == b
    assert best.result.link_bytes() == {(1, 0): b}


def test_ring_steps_are_one_hop_on_the_snake_and_the_fastest_is_first() -> None:
    ring = noc.snake_ring(TX81)
    got = reduce_over_noc(ring, 1 << 20, "f32", TX81)
    assert [r.cycles for r in got] == sorted(r.cycles for r in got)
    by = {r.pattern: r for r in got}
    # every byte of the ring crosses exactly one link; direct's cross several
    assert sum(by["ring"].result.link_bytes().values()) == by["ring"].noc_bytes
    assert sum(by["direct"].result.link_bytes().values()) > by["direct"].noc_bytes
    # each ring step moves 1/16 of the piece per tile, 15 steps: 15/16 of it per tile
    assert by["ring"].noc_bytes == 16 * 15 * (1 << 20) // 16
    # a large piece: the ring's parallel links and stores beat funnelling into one tile
    assert got[0].pattern == "ring"
    # a tiny piece: the ring's 15 serial steps cost more than one round of sends
    small = reduce_over_noc(ring, 4 * KIB, "f32", TX81)
    assert small[0].pattern == "direct"


def test_bad_reductions_are_named() -> None:
    with pytest.raises(Tx8labError, match="needs at least 2 tiles"):
        reduction_streams((3,), 64, "f32", TX81, "ring")
    with pytest.raises(Tx8labError, match="tile listed twice"):
        reduction_streams((3, 3), 64, "f32", TX81, "ring")
    with pytest.raises(Tx8labError, match="tile 17 is not on the 4x4 mesh"):
        reduction_streams((0, 17), 64, "f32", TX81, "ring")
    with pytest.raises(Tx8labError, match="num_bytes=6 is not a positive whole number of f32"):
        reduction_streams((0, 1), 6, "f32", TX81, "ring")
    with pytest.raises(Tx8labError, match="unknown pattern 'star'"):
        reduction_streams((0, 1), 64, "f32", TX81, "star")  # type: ignore[arg-type]
    with pytest.raises(Tx8labError, match="reduction: unknown element type 'f8'"):
        reduction_streams((0, 1), 64, "f8", TX81, "ring")


@pytest.mark.parametrize("pattern", PATTERNS)
def test_an_all_reduce_plans_steps_are_each_rounds_sends_then_receives(pattern: str) -> None:
    from tx8lab.hw.collectives import allreduce_plan

    for n in (2, 3, 5, 8, 16):
        plan = allreduce_plan(n, pattern)  # type: ignore[arg-type]
        assert allreduce_plan(n, pattern) == plan  # type: ignore[arg-type]
        rounds = sorted({t.round for t in plan.transfers})
        for pos in range(n):
            want = []
            for r in rounds:
                now = [(k, t) for k, t in enumerate(plan.transfers) if t.round == r]
                want += [(k, t) for k, t in now if t.src == pos]
                want += [(k, t) for k, t in now if t.dst == pos]
            assert plan.steps(pos) == want
    for bad in (True, 1, 2.0, [4]):
        with pytest.raises(Tx8labError, match="needs at least 2 tiles"):
            allreduce_plan(bad, pattern)  # type: ignore[arg-type]
    with pytest.raises(Tx8labError, match="unknown pattern"):
        allreduce_plan(4, ["ring"])  # type: ignore[arg-type]
