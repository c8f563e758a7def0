"""The tile mesh and NoC transfers in the simulator, checked against hand derivations."""

from __future__ import annotations

import itertools

import pytest

from tx8lab.core.schedule.trace import sim_events
from tx8lab.errors import Tx8labError
from tx8lab.hw import laws, noc
from tx8lab.hw.presets import TX81
from tx8lab.hw.sim import Range, SimCommand, StreamBuilder, simulate

#: The reference's snake ring of the 4x4 mesh (TLE NoC GEMM example, TILE_PHYSICAL_RELATION).
SOURCE_RING = (0, 1, 2, 3, 7, 11, 15, 14, 13, 12, 8, 9, 10, 6, 5, 4)
KIB = 1024


def spm(lo: int, hi: int) -> Range:
    return Range("spm", lo, hi)


# ------------------------------------------------------------------ the mesh


def test_the_snake_ring_is_the_sources_and_a_nearest_neighbour_cycle() -> None:
    assert noc.snake_ring(TX81) == SOURCE_RING
    for shape in ("2x2", "2x4", "4x2", "4x4", "6x3"):
        hw = TX81.with_overrides({"mesh_shape": shape})
        ring = noc.snake_ring(hw)
        assert sorted(ring) == list(range(hw.tiles_per_chip))
        for a, b in zip(ring, ring[1:] + ring[:1], strict=True):
            assert noc.hops(a, b, hw) == 1, (shape, a, b)
    for shape in ("3x4", "1x4", "4x1"):
        with pytest.raises(Tx8labError, match=f"the {shape} mesh has no snake ring"):
            noc.snake_ring(TX81.with_overrides({"mesh_shape": shape}))


def test_routes_go_along_the_row_first_over_neighbouring_links() -> None:
    hw = TX81.with_overrides({"mesh_shape": "3x5"})
    every = set(noc.links(hw))
    # 2 directions of each horizontal and vertical wire
    assert len(every) == 2 * (3 * 4 + 5 * 2)
    assert len(noc.links(TX81)) == 2 * (4 * 3 + 4 * 3)
    for src, dst in itertools.product(range(15), repeat=2):
        r = noc.route(src, dst, hw)
        (x0, y0), (x1, y1) = noc.coords(src, hw), noc.coords(dst, hw)
        assert len(r) == abs(x1 - x0) + abs(y1 - y0) == noc.hops(src, dst, hw)
        assert set(r) <= every
        path = [src] + [b for _, b in r]
        assert all(a == b for (_, a), (b, _) in itertools.pairwise(r))
        assert path[-1] == dst
        # X first: the row stays y0 until the column is x1
        ys = [noc.coords(t, hw)[1] for t in path]
        xs = [noc.coords(t, hw)[0] for t in path]
        turn = next((i for i, x in enumerate(xs) if x == x1), 0)
        assert set(ys[: turn + 1]) == {y0}
        assert set(xs[turn:]) == {x1}


def test_tiles_off_the_mesh_are_named() -> None:
    with pytest.raises(Tx8labError, match=r"destination tile 16 is not on the 4x4 mesh"):
        noc.route(0, 16, TX81)
    with pytest.raises(Tx8labError, match=r"\(4, 0\) is off the 4x4 mesh"):
        noc.tile_at(4, 0, TX81)
    # routes are kept per (src, dst, chip); a tile that only equals an int is still refused
    assert noc.route(1, 2, TX81) == ((1, 2),)
    with pytest.raises(Tx8labError, match=r"source tile True is not on the 4x4 mesh"):
        noc.route(True, 2, TX81)
    wide = TX81.with_overrides({"mesh_shape": "2x8"})
    assert noc.route(0, 9, wide) == ((0, 1), (1, 9)) != noc.route(0, 9, TX81)


# ------------------------------------------------------------------ transfers in the simulator

ISSUE = laws.issue(TX81).cycles(TX81)
#: By hand on the TX81 preset (1 GHz): the first send of a launch, a hop, 64 KiB on a link.
FIRST_SEND = 10_000  # dte_first_message_s = 10 us
HOP = 5  # noc_hop_s = 5 ns
PAYLOAD_64K = 512  # 65536 B / 128 GB/s = 512 ns


def test_preset_figures_of_the_hand_derivations() -> None:
    assert TX81.clock_hz == 1e9
    assert TX81.dte_first_message_s == 10e-6
    assert TX81.noc_hop_s == 5e-9
    assert TX81.noc_link_bytes_per_s == 128e9


def test_a_transfer_costs_its_send_its_hops_and_its_payload_and_the_receiver_waits() -> None:
    sender, receiver = StreamBuilder(TX81), StreamBuilder(TX81)
    send = sender.send(64 * KIB, spm(0, 64 * KIB), tile=0, to=6)  # 2 hops along, 1 down
    receiver.receive(0, send, spm(0, 64 * KIB))
    receiver.ct(1024, 1, "bf16", reads=(spm(0, 2048),), label="use")
    run = simulate({0: sender.commands, 6: receiver.commands}, TX81)
    t_send = run.tiles[0].timings[0]
    assert (t_send.start, t_send.end) == (ISSUE, ISSUE + FIRST_SEND + 3 * HOP + PAYLOAD_64K)
    assert t_send.link_wait == 0
    recv, use = run.tiles[6].timings
    assert recv.engine == "recv"
    assert recv.end == t_send.end
    assert run.tiles[6].stalls["kcore"]["receive"] == t_send.end
    assert use.start == t_send.end + ISSUE
    # the payload held each link of the route for its serialisation, after the hops
    assert list(run.links) == [(0, 1), (1, 2), (2, 6)]
    for uses in run.links.values():
        (u,) = uses
        assert (u.start, u.end) == (t_send.end - PAYLOAD_64K, t_send.end)
        assert (u.tile, u.index, u.num_bytes) == (0, send, 64 * KIB)
    assert run.link_bytes() == dict.fromkeys(run.links, 64 * KIB)


def test_transfers_sharing_a_link_take_turns_and_disjoint_ones_overlap() -> None:
    a, b = StreamBuilder(TX81), StreamBuilder(TX81)
    sa = a.send(64 * KIB, spm(0, 64 * KIB), tile=0, to=3)  # links 0-1, 1-2, 2-3
    sb = b.send(64 * KIB, spm(0, 64 * KIB), tile=1, to=3)  # links 1-2, 2-3: shared
    run = simulate({0: a.commands, 1: b.commands}, TX81)
    ta, tb = run.tiles[0].timings[sa], run.tiles[1].timings[sb]
    head_a = ISSUE + FIRST_SEND + 3 * HOP  # tile 0's payload starts here
    head_b = ISSUE + FIRST_SEND + 2 * HOP  # tile 1's would, 5 cycles earlier
    assert ta.end == head_a + PAYLOAD_64K
    # tile 1's payload overlaps tile 0's on the shared links: it waits for it to pass
    assert tb.link_wait == head_a + PAYLOAD_64K - head_b
    assert tb.end == head_a + 2 * PAYLOAD_64K
    assert run.tiles[1].stalls["dte"]["link"] == tb.link_wait
    busy = run.link_busy()
    assert busy[(2, 3)] == busy[(1, 2)] == 2 * PAYLOAD_64K
    assert busy[(0, 1)] == PAYLOAD_64K
    # two transfers on disjoint links run at once
    c, d = StreamBuilder(TX81), StreamBuilder(TX81)
    c.send(64 * KIB, spm(0, 64 * KIB), tile=0, to=1)
    d.send(64 * KIB, spm(0, 64 * KIB), tile=2, to=3)
    apart = simulate({0: c.commands, 2: d.commands}, TX81)
    assert apart.tiles[0].timings[0].end == apart.tiles[2].timings[0].end
    assert apart.tiles[2].timings[0].link_wait == 0
    # the opposite direction of a link is a link of its own
    e, f = StreamBuilder(TX81), StreamBuilder(TX81)
    e.send(64 * KIB, spm(0, 64 * KIB), tile=0, to=1)
    f.send(64 * KIB, spm(0, 64 * KIB), tile=1, to=0)
    both = simulate({0: e.commands, 1: f.commands}, TX81)
    assert both.tiles[1].timings[0].link_wait == 0


def test_a_message_without_a_route_is_timed_by_its_law_alone() -> None:
    b = StreamBuilder(TX81)
    b.send(8 * KIB, spm(0, 8 * KIB))
    run = simulate({0: b.commands}, TX81)
    assert run.links == {}
    assert run.tiles[0].timings[0].end == ISSUE + laws.dte(8 * KIB, TX81, first=True).cycles(TX81)


def test_the_trace_has_a_track_per_link_and_the_wait_shaded() -> None:
    a, b = StreamBuilder(TX81), StreamBuilder(TX81)
    a.send(64 * KIB, spm(0, 64 * KIB), tile=0, to=3, label="a")
    b.send(64 * KIB, spm(0, 64 * KIB), tile=1, to=3, label="b")
    run = simulate({0: a.commands, 1: b.commands}, TX81)
    events = sim_events(run, pid_base=10)
    names = {e["args"]["name"] for e in events if e["name"] == "thread_name" and e["pid"] == 12}
    assert names == {"link 0->1", "link 1->2", "link 2->3"}
    on_links = [e for e in events if e.get("cat") == "noc"]
    assert len(on_links) == 5  # tile 0's payload on 3 links, tile 1's on 2
    wait = [e for e in events if e["name"] == "stall: link"]
    assert [(e["pid"], e["args"]["cycles"]) for e in wait] == [
        (11, run.tiles[1].timings[0].link_wait)
    ]


def test_bad_transfers_are_named() -> None:
    def one(c: SimCommand, tile: int = 0) -> None:
        simulate({tile: [c]}, TX81)

    with pytest.raises(Tx8labError, match=r"tile 5 command 0 \(x\) sends to its own tile 5"):
        one(SimCommand("dte", 100, label="x", dst_tile=5, noc_bytes=8), tile=5)
    with pytest.raises(Tx8labError, match="destination tile 40 is not on the 4x4 mesh"):
        one(SimCommand("dte", 100, dst_tile=40, noc_bytes=8))
    with pytest.raises(Tx8labError, match="only a dte command can send"):
        one(SimCommand("rdma", 100, dst_tile=1, noc_bytes=8))
    with pytest.raises(Tx8labError, match="less than its payload's 512"):
        one(SimCommand("dte", 10, dst_tile=1, noc_bytes=64 * KIB))
    with pytest.raises(Tx8labError, match="receives from no send"):
        one(SimCommand("recv", 0))
    with pytest.raises(Tx8labError, match="give both tile= and to="):
        StreamBuilder(TX81).send(8, spm(0, 8), to=3)
