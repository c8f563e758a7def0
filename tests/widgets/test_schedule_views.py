"""SPM Gantt, pipeline timeline and their shared cursor, built from real pipeline traces."""

from __future__ import annotations

import json
from itertools import combinations
from typing import Any

import pytest

from tests.widgets.traces import trace_of
from tx8lab.core import zoo
from tx8lab.core.passes import build_pipeline
from tx8lab.core.passes.base import Step
from tx8lab.core.runner import run_pipeline
from tx8lab.core.schedule.lifetimes import spm_lifetimes
from tx8lab.core.schedule.sw_pipeline import step_bounds
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81
from tx8lab.widgets import (
    GraphView,
    ScheduleView,
    SpmGantt,
    TimelineView,
    compare_allocations,
    group_schedule,
    spm_gantt_figure,
    timeline_figure,
)

_RESNET: list[Step] = []


def _resnet() -> list[Step]:
    if not _RESNET:
        # the default strategy: one of its batch-8 groups is one first fit cannot pack
        # (BatchNorm folded: with the variance reloaded inside the loops, the BatchNorm
        # model's groups all fit first fit)
        settings = ["group-cost.search=default"]
        module = zoo.build("resnet50", batch=8, batchnorm=False)
        _RESNET.extend(run_pipeline(module, build_pipeline(None, settings), TX81))
    return _RESNET


def _looping_group(steps: list[Step]) -> int:
    """The group with a Repeat whose timeline has the most slots."""
    gc = next(s for s in steps if s.name == "group-cost")
    timelines = {g: run.timeline for g, run in gc.result.artifacts["runs"].items()}
    looping = [g for g, t in timelines.items() if any(s.iteration for s in t.slots)]
    assert looping, "resnet50 batch 8 should have groups with loops"
    group: int = max(looping, key=lambda g: len(timelines[g].slots))
    return group


def _rects(fig: Any, panel: str | None = None) -> list[tuple[float, float, float, float]]:
    """(t0, t1, y0, y1) of every buffer rectangle (of one panel)."""
    out = []
    for tr in fig.data:
        if tr.meta["role"] != "buffer" or (panel is not None and tr.meta["panel"] != panel):
            continue
        for base, length, centre, width in zip(tr.base, tr.x, tr.y, tr.width, strict=True):
            out.append((base, base + length, centre - width / 2, centre + width / 2))
    return out


def _lines(fig: Any, role: str) -> dict[str, float]:
    return {tr.meta["panel"]: tr.y[0] for tr in fig.data if tr.meta["role"] == role}


def _cursor_shapes(fig: Any) -> list[Any]:
    return [s for s in fig.layout.shapes if s.name == "cursor"]


@pytest.mark.parametrize("source", ["tiny_cnn", "resnet50"])
def test_gantt_draws_every_lifetime_without_overlap(source: str) -> None:
    steps = trace_of(source) if source == "tiny_cnn" else _resnet()
    group = None if source == "tiny_cnn" else _looping_group(steps)
    sched = group_schedule(steps, group)
    # the allocation's lifetimes are those of the timeline (the pipeline's own)
    assert sorted(sched.allocation.lifetimes, key=lambda lt: lt.id) == sorted(
        spm_lifetimes(sched.timeline, sched.inp), key=lambda lt: lt.id
    )
    allocs = compare_allocations(sched.allocation, time_limit_s=0.5)
    assert set(allocs) == {"seed", "best"}
    assert allocs["best"].peak_bytes <= allocs["seed"].peak_bytes
    fig = spm_gantt_figure(allocs, sched.inp.buffers, timeline=sched.timeline)
    for name, alloc in allocs.items():
        rects = _rects(fig, name)
        assert len(rects) == len(alloc.lifetimes)
        for a, b in combinations(rects, 2):
            in_time = a[0] < b[1] and b[0] < a[1]
            in_space = a[2] < b[3] and b[2] < a[3]
            assert not (in_time and in_space), (a, b)
        assert max(r[3] for r in rects) == alloc.peak_bytes
        assert _lines(fig, "capacity")[name] == alloc.capacity_bytes == TX81.tile.spm_usable_bytes
        assert _lines(fig, "peak")[name] == alloc.peak_bytes
    # one colour per IR op, the same in both panels; hover names the buffer
    colors: dict[str, str] = {}
    for tr in fig.data:
        if tr.meta["role"] == "buffer":
            assert colors.setdefault(tr.name, tr.marker.color) == tr.marker.color
            assert "customdata[4]" in tr.hovertemplate
    buffer_ops = {f"%{b.op_id}" for b in sched.inp.buffers.values()}
    assert set(colors) <= buffer_ops
    json.loads(fig.to_json())  # headless export works
    assert "plotly" in fig.to_html(include_plotlyjs=False)


def test_gantt_in_cycles_follows_the_timeline_steps() -> None:
    sched = group_schedule(_resnet(), _looping_group(_resnet()))
    bounds = step_bounds(sched.timeline)
    fig = spm_gantt_figure(sched.allocation, sched.inp.buffers, timeline=sched.timeline,
                           time_axis="cycles")  # fmt: skip
    rects = sorted(_rects(fig))
    starts = sorted(bounds[lt.lower][0] for lt in sched.allocation.lifetimes)
    assert [r[0] for r in rects] == starts
    assert max(r[1] for r in rects) == sched.timeline.makespan
    with pytest.raises(Tx8labError, match="needs the group's timeline"):
        spm_gantt_figure(sched.allocation, time_axis="cycles")


def test_timeline_has_one_bar_per_slot_and_shows_iterations() -> None:
    sched = group_schedule(_resnet(), _looping_group(_resnet()))
    tl = sched.timeline
    fig = timeline_figure(tl)
    bars = [(b, x, y, t) for tr in fig.data for b, x, y, t in zip(tr.base, tr.x, tr.y, tr.text,
            strict=True)]  # fmt: skip
    assert len(bars) == len(tl.slots)
    assert sorted((b, b + x, y) for b, x, y, _ in bars) == sorted(
        (s.start, s.end, s.engine) for s in tl.slots
    )
    names = {tr.name for tr in fig.data}
    iterations = {s.iteration for s in tl.slots if s.iteration}
    assert len(iterations) > 1
    assert {"[" + ",".join(map(str, i)) + "]" for i in iterations} <= names
    looped = next(s for s in tl.slots if s.iteration)
    assert any(t == f"{looped.task}[{','.join(map(str, looped.iteration))}]" for *_, t in bars)
    by_op = timeline_figure(tl, color_by="op")
    assert {tr.name for tr in by_op.data} == {f"%{t.op_id}" for t in tl.tasks.values()}


def test_cursor_is_shared_between_timeline_gantt_and_graph() -> None:
    steps = _resnet()
    group = _looping_group(steps)
    sched = group_schedule(steps, group)
    tl = sched.timeline
    view = ScheduleView.from_step(steps, group, time_limit_s=0.5)
    step = next(s.step for s in tl.slots if s.iteration and s.iteration[0] == 1)
    view.cursor = step
    assert view.timeline_view.cursor == view.gantt.cursor == view.slider.value == step
    lo, hi = step_bounds(tl)[step]
    (tl_shape,) = _cursor_shapes(view.timeline_view.figure)
    assert (tl_shape.x0, tl_shape.x1) == (lo, hi)
    assert [(s.x0, s.x1) for s in _cursor_shapes(view.gantt.figure)] == [(step, step + 1)] * 2
    tasks = [s for s in tl.slots if s.step == step]
    assert view.running_ops == sorted({tl.tasks[s.task].op_id for s in tasks})
    assert {r["task"] for r in view.timeline_view.running} == {s.task for s in tasks}
    # moving either linked view (or the slider, as the browser does) moves all of them
    view.gantt.cursor = 2
    assert view.cursor == view.timeline_view.cursor == 2
    view.slider.set_state({"value": 4})
    assert view.cursor == view.gantt.cursor == 4
    view.cursor = 10**6  # clamped to the last step
    assert view.cursor == tl.steps - 1 == view.timeline_view.cursor
    view.cursor = -1
    assert _cursor_shapes(view.gantt.figure) == []
    assert view.running_ops == []


def test_schedule_view_shows_the_plan_beside_the_simulated_run() -> None:
    steps = trace_of("tiny_cnn")
    gc = next(s for s in steps if s.name == "group-cost")
    sched = group_schedule(steps)
    run = gc.result.artifacts["runs"][sched.group_id]
    assert sched.simulated is not None
    assert sched.simulated is run.simulated.result
    view = ScheduleView.from_step(steps)
    assert view.sim_figure is not None
    assert view.children.index(view.timeline_view) < view.children.index(view.sim_figure)
    title = view.sim_figure.layout.title.text
    # the group's simulated cycles (group-cost's) beside the plan's makespan
    assert f"{run.estimate.cycles:,} cycles (plan {sched.timeline.makespan:,})" in title
    assert any((t.meta or {}).get("role") == "simulated" for t in view.sim_figure.data)
    # group-cost without the simulator: the plan only, no panel
    plan_only = trace_of("tiny_cnn", "group-cost.simulate_top=0")
    assert group_schedule(plan_only).simulated is None
    assert ScheduleView.from_step(plan_only).sim_figure is None


def test_graph_view_colours_the_ops_running_at_the_cursor() -> None:
    steps = trace_of("tiny_cnn")
    sched = group_schedule(steps)
    graph = GraphView.from_steps(steps)
    view = ScheduleView(sched.timeline, sched.allocation, sched.inp.buffers, graph_view=graph)
    for step in range(sched.timeline.steps):
        view.cursor = step
        assert graph.overlay == "schedule"
        running = {sched.timeline.tasks[s.task].op_id: s.engine
                   for s in sched.timeline.slots if s.step == step}  # fmt: skip
        for op_id in {t.op_id for t in sched.timeline.tasks.values()}:
            label = graph.labels[f"op{op_id}"]
            if op_id in running:
                assert running[op_id] in label.split("+")
            else:
                assert label == "idle"


def test_widgets_from_step_and_errors() -> None:
    steps = trace_of("tiny_cnn")
    gc = next(s for s in steps if s.name == "group-cost")
    gantt = SpmGantt.from_step(gc, time_limit_s=0.2)
    assert set(gantt.allocations) == {"seed", "best"}
    gantt.set_state({"cursor": 99})
    assert gantt.cursor == gantt.steps - 1
    timeline = TimelineView.from_step(steps)
    assert timeline.steps == group_schedule(steps).timeline.steps
    assert "<html>" in gantt.to_html(include_plotlyjs=False)
    with pytest.raises(Tx8labError, match="group-cost step"):
        group_schedule(steps[:1])
    with pytest.raises(Tx8labError, match="was not scheduled"):
        group_schedule(steps, 10**9)
    with pytest.raises(Tx8labError, match="time_axis"):
        spm_gantt_figure(gantt.allocations["seed"], time_axis="ms")  # type: ignore[arg-type]


def test_an_allocator_that_does_not_fit_is_drawn_over_the_capacity() -> None:
    steps = _resnet()
    gc = next(s for s in steps if s.name == "group-cost")
    capacity = TX81.tile.spm_usable_bytes
    overflowing = []
    for group in gc.result.artifacts["runs"]:
        allocs = compare_allocations(group_schedule(gc, group).allocation, time_limit_s=0.2)
        if allocs["seed"].peak_bytes > capacity:
            overflowing.append((group, allocs))
    assert overflowing, "resnet50 batch 8 has a group that first fit cannot pack"
    group, allocs = overflowing[0]
    assert allocs["best"].peak_bytes <= capacity == allocs["seed"].capacity_bytes
    fig = spm_gantt_figure(allocs)
    assert _lines(fig, "capacity")["seed"] == capacity
    assert max(r[3] for r in _rects(fig, "seed")) == allocs["seed"].peak_bytes > capacity
    assert "does not fit" in fig.layout.annotations[0].text
    assert fig.layout.yaxis.range[1] >= allocs["seed"].peak_bytes


def test_timeline_hover_shows_each_slots_program_command() -> None:
    from tx8lab.core.program import build_program
    from tx8lab.core.program import group_schedule as rebuilt_schedule
    from tx8lab.hw.presets import resolve_hw
    from tx8lab.widgets.timeline import iteration_text, program_commands

    hw = resolve_hw(["tile.spm_bytes=72Ki"])
    module = list(run_pipeline(zoo.tiny_cnn(size=32, channels=32), build_pipeline(None, {}), hw))[
        -1
    ].result.module
    program = build_program(module, hw)
    looping = next(c.group for cs in program.tiles.values() for c in cs if c.iteration and c.psum)
    group = next(op for op in module.main.ops if op.id == looping)
    _, _, tl = rebuilt_schedule(group, hw)
    fig = timeline_figure(tl, program=program, tile=0)
    commands = program_commands(program, looping, 0)
    rows = [row for tr in fig.data for row in tr.customdata]
    assert len(rows) == len(tl.slots) == len(commands)
    by_slot = {(c.task, "" if not c.iteration else iteration_text(c.iteration)): c
               for c in commands.values()}  # fmt: skip
    for row in rows:
        c = by_slot[(row[0], row[1])]
        assert c.function in row[8]
        for a in (*c.reads, *c.writes):
            assert f"{a.buffer}@0x{a.addr:x}" in row[8]
    assert any("psum" in row[8] for row in rows)
    with pytest.raises(Tx8labError, match=f"no commands of group %{looping} on tile 99"):
        program_commands(program, looping, 99)


def test_simulated_figure_shades_every_stall_by_reason_beside_the_plan() -> None:
    from tx8lab.widgets import simulated_figure

    steps = list(run_pipeline(zoo.build("tiny_transformer_block"), build_pipeline(), TX81))
    gc = next(s for s in steps if s.name == "group-cost")
    entry = max(gc.result.artifacts["groups"], key=lambda e: e["cycles"])
    played = gc.result.artifacts["runs"][entry["id"]].simulated
    assert played is not None
    assert played.result is not None
    fig = simulated_figure(played.result)
    run = played.result.tiles[played.slowest_tile]
    # oracle: the simulator's own busy and stall figures, per engine and reason
    for engine, busy in run.busy.items():
        bars = [tr for tr in fig.data if tr.meta["role"] == "simulated"]
        got = sum(int(x) for tr in bars for x, y in zip(tr.x, tr.y, strict=True) if y == engine)
        assert got == busy, engine
    for engine, reasons in run.stalls.items():
        for reason, cycles in reasons.items():
            shaded = [tr for tr in fig.data if tr.name == f"stall: {reason}"]
            got = sum(
                int(x) for tr in shaded for x, y in zip(tr.x, tr.y, strict=True) if y == engine
            )
            assert got == cycles, (engine, reason)
    assert fig.layout.xaxis.range[1] == entry["cycles"] == played.cycles
    with pytest.raises(Tx8labError, match="tile 99 is not in the run"):
        simulated_figure(played.result, tile=99)
