"""Mesh heatmap: busy vs idle tiles, per-tile cycles, SPM peak and DMA bytes of a group."""

from __future__ import annotations

from dataclasses import replace

import plotly.graph_objects as go

from tests.widgets.traces import trace_of
from tx8lab.core.schedule.tasks import Buffer, ScheduleInput, Slot, Task, Timeline
from tx8lab.hw import TX81
from tx8lab.widgets.mesh import dma_bytes, mesh_figure, mesh_frame
from tx8lab.widgets.spm_gantt import GroupSchedule, group_schedule


def _tiny_cnn_group(gid: int = 30) -> GroupSchedule:
    # the plan's choice (group-cost without the simulator): group %30 on 8 of 16 tiles
    steps = trace_of("tiny_cnn", "group-cost.simulate_top=0")
    return group_schedule(next(s for s in steps if s.name == "group-cost"), gid)


def _looping_schedule() -> GroupSchedule:
    """A hand-made timeline: a load repeated twice, a store, a matmul and a tile-to-tile copy."""
    real = _tiny_cnn_group()
    buffers = {
        "%1": Buffer("%1", 1, 512),
        "%2": Buffer("%2", 2, 256),
        "%3": Buffer("%3", 3, 4096),
    }
    tasks = {
        "ld:%1": Task("ld:%1", 1, "ld", 100, writes=("%1",)),
        "ne:%2": Task("ne:%2", 2, "ne", 50, reads=("%1",), writes=("%2",)),
        "st:%2": Task("st:%2", 2, "st", 30, reads=("%2",)),
        "noc:%3": Task("noc:%3", 3, "dte", 70, reads=("%3",), writes=("%3",)),
    }
    slots = (
        Slot("ld:%1", (0,), "ld", 0, 0, 100),
        Slot("ld:%1", (1,), "ld", 1, 100, 200),
        Slot("ne:%2", (), "ne", 2, 200, 250),
        Slot("noc:%3", (), "dte", 2, 200, 270),
        Slot("st:%2", (), "st", 3, 270, 300),
    )
    timeline = Timeline(7, slots, steps=4, makespan=300, tasks=tasks)
    inp = ScheduleInput(7, (), buffers, tiles=6)
    return GroupSchedule(7, inp, timeline, real.allocation)


def test_busy_tiles_are_the_first_tiles_in_row_major_order() -> None:
    sched = _tiny_cnn_group()
    assert sched.inp.tiles == 8
    df = mesh_frame(sched, TX81)
    rows, cols = TX81.mesh_shape
    assert len(df) == rows * cols
    assert list(df["tile"]) == list(range(rows * cols))
    assert list(df["busy"]) == [t < 8 for t in range(rows * cols)]
    assert list(df["row"]) == [t // cols for t in range(rows * cols)]
    busy, idle = df[df["busy"]], df[~df["busy"]]
    assert set(busy["cycles"]) == {sched.timeline.makespan}
    assert set(busy["spm_bytes"]) == {sched.allocation.peak}
    assert set(idle["cycles"]) == set(idle["spm_bytes"]) == set(idle["dma_bytes"]) == {0}


def test_dma_bytes_count_every_load_and_store_instance_but_not_noc() -> None:
    sched = _looping_schedule()
    moved, busy = dma_bytes(sched)
    assert moved == 2 * 512 + 256  # the load twice (two iterations), the store once
    assert busy == 100 + 100 + 30
    df = mesh_frame(sched, TX81)
    assert int(df["busy"].sum()) == 6
    assert set(df[df["busy"]]["dma_bytes"]) == {1280}
    assert set(df[df["busy"]]["dma_busy_cycles"]) == {230}


def test_dma_bytes_of_a_real_group_match_its_buffers() -> None:
    sched = _tiny_cnn_group()
    loads = [t for t in sched.timeline.tasks.values() if t.engine == "ld"]
    stores = [t for t in sched.timeline.tasks.values() if t.engine == "st"]
    expected = sum(sched.inp.buffers[b].bytes for t in loads for b in t.writes) + sum(
        sched.inp.buffers[b].bytes for t in stores for b in t.reads
    )
    assert dma_bytes(sched)[0] == expected == 2048


def test_more_tiles_than_the_mesh_are_clamped_to_the_mesh() -> None:
    sched = _tiny_cnn_group(33)
    assert sched.inp.tiles == 16
    small = TX81.with_overrides({"mesh_shape": "2x4"})
    df = mesh_frame(sched, small)
    assert len(df) == 8
    assert bool(df["busy"].all())
    sched = replace(sched, inp=replace(sched.inp, tiles=3))
    assert list(mesh_frame(sched, small)["busy"]) == [True] * 3 + [False] * 5


def test_figure_has_three_heatmaps_over_the_mesh() -> None:
    sched = _tiny_cnn_group()
    fig = mesh_figure(sched, TX81)
    heatmaps = [t for t in fig.data if isinstance(t, go.Heatmap)]
    assert len(heatmaps) == 3
    rows, cols = TX81.mesh_shape
    for trace in heatmaps:
        assert len(trace.z) == rows
        assert len(trace.z[0]) == cols
    cycles = heatmaps[0].z
    assert cycles[0][0] == sched.timeline.makespan
    assert cycles[rows - 1][cols - 1] == 0
    assert "(idle)" in heatmaps[0].text[rows - 1][cols - 1]
    assert "8 busy tiles" in fig.layout.title.text
