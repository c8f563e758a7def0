"""Mesh view of a simulated run: NoC link directions and per-tile simulated figures."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import plotly.graph_objects as go
import pytest

from tests.widgets.traces import trace_of
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81, laws, noc
from tx8lab.hw.collectives import Reduction, reduce_over_noc
from tx8lab.hw.sim import LinkUse, SimResult
from tx8lab.widgets.mesh import (
    LINK_COLUMNS,
    LINK_PANEL_HEIGHT,
    TILE_SIM_COLUMNS,
    link_frame,
    mesh_figure,
    mesh_links_figure,
    noc_bytes_sent,
    tile_sim_frame,
)
from tx8lab.widgets.spm_gantt import GroupSchedule, group_schedule

PIECE_BYTES = 4096


def _direct(tiles: list[int], num_bytes: int = PIECE_BYTES) -> Reduction:
    (red,) = reduce_over_noc(tiles, num_bytes, "f32", TX81, patterns=("direct",))
    return red


def _payload_cycles(num_bytes: int) -> int:
    """Cycles one payload holds each link of its route (the NoC link law)."""
    return laws.noc_payload(num_bytes, TX81).cycles(TX81)


def _tiny_cnn_group() -> GroupSchedule:
    steps = trace_of("tiny_cnn", "group-cost.simulate_top=0")
    return group_schedule(next(s for s in steps if s.name == "group-cost"), 30)


def test_every_link_direction_of_the_4x4_mesh_has_a_row() -> None:
    df = link_frame(_direct([0, 1, 2, 3]).result, TX81)
    # 4 rows of 3 horizontal wires plus 4 columns of 3 vertical wires, two directions each
    assert len(df) == 2 * (4 * 3 + 3 * 4) == 48
    assert list(df.columns) == list(LINK_COLUMNS)
    pairs = list(zip(df["src"], df["dst"], strict=True))
    assert len(set(pairs)) == 48
    for row in df.to_dict("records"):
        # neighbours, and tile = 4 * y + x on both ends
        assert abs(row["src_x"] - row["dst_x"]) + abs(row["src_y"] - row["dst_y"]) == 1
        assert row["src"] == 4 * row["src_y"] + row["src_x"]
        assert row["dst"] == 4 * row["dst_y"] + row["dst_x"]
        assert (row["dst"], row["src"]) in pairs


def test_direct_reduction_along_row_0_loads_the_links_towards_the_root() -> None:
    red = _direct([0, 1, 2, 3])
    df = link_frame(red.result, TX81).set_index(["src", "dst"])
    # tile k sends to the root 0 over k -> k-1 -> ... -> 0: link (k, k-1) carries the
    # payloads of tiles k..3
    expected = {(1, 0): 3, (2, 1): 2, (3, 2): 1}
    one = _payload_cycles(PIECE_BYTES)
    for link, transfers in expected.items():
        row = df.loc[link]
        assert row["transfers"] == transfers
        assert row["bytes"] == transfers * PIECE_BYTES
        assert row["busy_cycles"] == transfers * one
        assert row["busy_ms"] == pytest.approx(transfers * one / TX81.clock_hz * 1e3)
    unused = df.drop(index=list(expected))
    assert len(unused) == 45
    assert set(unused["bytes"]) == set(unused["busy_cycles"]) == set(unused["transfers"]) == {0}
    assert set(unused["busy_ms"]) == {0.0}


def test_xy_routing_goes_along_the_row_before_the_column() -> None:
    # tile 5 is (x=1, y=1): to tile 0 it goes west to tile 4, then north to tile 0
    df = link_frame(_direct([0, 5]).result, TX81).set_index(["src", "dst"])
    used = df[df["transfers"] > 0]
    assert sorted(used.index) == [(4, 0), (5, 4)]
    assert set(used["bytes"]) == {PIECE_BYTES}
    assert df.loc[(5, 1), "bytes"] == df.loc[(1, 0), "bytes"] == 0


def test_tile_frame_sums_the_runs_engines_and_the_bytes_sent() -> None:
    red = _direct([0, 1, 2, 3])
    df = tile_sim_frame(red.result, TX81, spm_peak={0: 1234, 9: 5})
    assert list(df.columns) == list(TILE_SIM_COLUMNS)
    assert list(df["tile"]) == list(range(16))
    assert list(df["row"]) == [t // 4 for t in range(16)]
    assert list(df["col"]) == [t % 4 for t in range(16)]
    assert list(df["active"]) == [t < 4 for t in range(16)]
    # every payload once, however many links it crossed
    assert int(df["noc_bytes_sent"].sum()) == red.noc_bytes == 3 * PIECE_BYTES
    assert list(df["noc_bytes_sent"][:4]) == [0, PIECE_BYTES, PIECE_BYTES, PIECE_BYTES]
    for tile, run in red.result.tiles.items():
        row = df.iloc[tile]
        busy = run.busy
        assert row["body_cycles"] == run.body
        assert row["compute_cycles"] == busy.get("ne", 0) + busy.get("ct", 0)
        assert row["dma_cycles"] == busy.get("rdma", 0) + busy.get("wdma", 0)
        assert row["tdma_cycles"] == busy.get("tdma", 0)
        assert row["noc_cycles"] == busy.get("dte", 0)
    # the root adds (ct) and stores (wdma); the senders only send (dte)
    assert df.at[0, "compute_cycles"] > 0
    assert df.at[0, "dma_cycles"] > 0
    assert df.at[3, "noc_cycles"] > 0
    assert df.at[3, "compute_cycles"] == 0
    assert list(df["spm_bytes"][[0, 1, 9]]) == [1234, 0, 5]
    idle = df[~df["active"]]
    cycle_columns = ["body_cycles", "compute_cycles", "dma_cycles", "noc_cycles", "noc_bytes_sent"]
    assert set(idle[cycle_columns].to_numpy().ravel()) == {0}


def test_bytes_sent_of_a_ring_are_every_chunk_once() -> None:
    ring = noc.snake_ring(TX81)
    (red,) = reduce_over_noc(ring, 1 << 16, "f32", TX81, patterns=("ring",))
    sent = noc_bytes_sent(red.result)
    assert sum(sent.values()) == red.noc_bytes
    assert sorted(sent) == sorted(ring)
    # the snake ring's steps are one hop: link bytes equal bytes sent
    assert int(link_frame(red.result, TX81)["bytes"].sum()) == red.noc_bytes


def test_link_figure_has_one_trace_per_link_direction_then_the_tiles() -> None:
    red = _direct([0, 1, 2, 3])
    fig = mesh_links_figure(red.result, TX81)
    links = link_frame(red.result, TX81)
    assert len(fig.data) == len(links) + 1 == 49
    for trace, row in zip(fig.data[:-1], links.to_dict("records"), strict=True):
        assert isinstance(trace, go.Scatter)
        assert trace.name == f"{row['src']}->{row['dst']}"
        assert f"bytes: {row['bytes']:,}" in trace.text[0]
        assert f"transfers: {row['transfers']}" in trace.text[0]
    by_name = {t.name: t for t in fig.data[:-1]}
    assert "bytes: 12,288" in by_name["1->0"].text[0]
    assert f"busy: {3 * _payload_cycles(PIECE_BYTES):,} cycles" in by_name["1->0"].text[0]
    # width by bytes: the busier the link the wider; unused ones thin and grey
    widths = [by_name[n].line.width for n in ("1->0", "2->1", "3->2", "0->1")]
    assert widths == sorted(widths, reverse=True)
    assert len(set(widths)) == 4
    assert by_name["0->1"].line.width == 1.0
    assert by_name["0->1"].line.color != by_name["3->2"].line.color
    # the two directions of one wire are drawn apart
    assert by_name["0->1"].y[1] != by_name["1->0"].y[1]
    tiles = fig.data[-1]
    assert tiles.name == "tiles"
    assert list(tiles.x) == [t % 4 for t in range(16)]
    assert list(tiles.y) == [t // 4 for t in range(16)]
    for column in TILE_SIM_COLUMNS:
        assert f"{column}: " in tiles.hovertext[0]
    assert "noc_bytes_sent: 4,096" in tiles.hovertext[3]
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]  # row 0 at the top
    assert fig.layout.title.text == (
        "NoC traffic: 12,288 bytes sent over 3 link directions, busiest link 1->0 "
        f"{3 * _payload_cycles(PIECE_BYTES) / TX81.clock_hz * 1e6:,.3f} µs"
    )
    assert "bytes: 12,288" in fig.to_html()


def test_link_figure_by_busy_time_and_with_a_title() -> None:
    red = _direct([0, 1, 2, 3])
    fig = mesh_links_figure(red.result, TX81, metric="busy", title="mine", spm_peak={0: 64})
    assert fig.layout.title.text == "mine"
    by_name = {t.name: t for t in fig.data[:-1]}
    assert by_name["1->0"].line.width > by_name["3->2"].line.width > by_name["0->1"].line.width
    assert "spm_bytes: 64" in fig.data[-1].hovertext[0]


def test_a_run_without_noc_traffic_draws_every_link_unused() -> None:
    quiet = SimResult(tiles={}, clock_hz=TX81.clock_hz, launch_cycles=0)
    fig = mesh_links_figure(quiet, TX81)
    assert len(fig.data) == 49
    assert {t.line.width for t in fig.data[:-1]} == {1.0}
    assert "none" in fig.layout.title.text
    assert not tile_sim_frame(quiet, TX81)["active"].any()


def test_an_unknown_metric_names_the_field_and_the_allowed_values() -> None:
    bad: Any = "cycles"
    expected = r"metric='cycles'.*'bytes', 'busy'"
    result = _direct([0, 1]).result
    with pytest.raises(Tx8labError, match=expected):
        mesh_links_figure(result, TX81, metric=bad)
    sched = _tiny_cnn_group()
    with pytest.raises(Tx8labError, match=expected):
        mesh_figure(sched, TX81, metric=bad)


def test_a_link_off_the_mesh_is_an_error() -> None:
    stray = SimResult(
        tiles={},
        clock_hz=TX81.clock_hz,
        launch_cycles=0,
        links={(3, 4): (LinkUse(0, 10, 3, 0, 64),)},
    )
    with pytest.raises(Tx8labError, match=r"\(3, 4\)"):
        link_frame(stray, TX81)


def test_spm_peak_off_the_mesh_is_an_error() -> None:
    with pytest.raises(Tx8labError, match=r"spm_peak.*16"):
        tile_sim_frame(_direct([0, 1]).result, TX81, spm_peak={16: 1})


def test_mesh_figure_adds_the_link_panel_when_the_run_used_links() -> None:
    sched = _tiny_cnn_group()
    red = _direct([0, 1, 2, 3])
    fig = mesh_figure(replace(sched, simulated=red.result), TX81)
    heatmaps = [t for t in fig.data if isinstance(t, go.Heatmap)]
    scatters = [t for t in fig.data if isinstance(t, go.Scatter)]
    assert len(heatmaps) == 3
    assert len(scatters) == 49
    assert fig.data[3].name == "0->1"
    assert fig.layout.height == 320 + LINK_PANEL_HEIGHT
    assert "8 busy tiles" in fig.layout.title.text
    assert "12,288 bytes sent" in fig.layout.annotations[-1].text
    # the tiles of the run take the allocation's peak
    assert f"spm_bytes: {int(sched.allocation.peak):,}" in scatters[-1].hovertext[0]
    assert "spm_bytes: 0" in scatters[-1].hovertext[15]
    assert fig.to_html()


def test_mesh_figure_without_links_keeps_the_three_heatmaps() -> None:
    sched = _tiny_cnn_group()
    quiet = SimResult(tiles={}, clock_hz=TX81.clock_hz, launch_cycles=0)
    for simulated in (None, quiet):
        fig = mesh_figure(replace(sched, simulated=simulated), TX81)
        assert len(fig.data) == 3
        assert all(isinstance(t, go.Heatmap) for t in fig.data)
        assert fig.layout.height == 320
