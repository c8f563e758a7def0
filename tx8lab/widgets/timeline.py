"""TimelineView and ScheduleView: a group's software pipeline in cycles, one shared time cursor.

Spec: seed 001 "TS_SwPipelinePass" (getEnginsPipeline: each time step puts
at most one task instance in each engine slot ld, ne, ct, st, tdma, dte). :func:`timeline_figure`
draws every :class:`~tx8lab.core.schedule.tasks.Slot` of a timeline as a horizontal bar on its
engine's row, from its start to its end cycle, labelled with the task id and its Repeat
iteration (``ne:%42[3]``); hover gives task id, IR op, engine, step, iteration, cycles and the
cost formula. :class:`TimelineView` wraps it in a ``go.FigureWidget`` with a ``cursor`` trait;
:class:`ScheduleView` holds a timeline and an :class:`~tx8lab.widgets.spm_gantt.SpmGantt` whose
cursors are linked (``traitlets.link``) and, given a :class:`GraphView`, colours the ops whose
tasks run at the cursor step. Given the group's simulated run (``from_step`` takes group-cost's),
it shows it under the plan's timeline (:func:`simulated_figure`).

Readings chosen:

- **Colour by Repeat iteration** (``color_by="iteration"``, default): one trace (legend
  entry) per iteration index tuple, ``[i]`` or ``[i,j]`` for nested loops; tasks outside every
  loop are grey ("no loop"). ``color_by="op"`` colours by IR op, as the SPM Gantt does.
- **Cursor = a time step** (the unit the SPM Gantt and the allocator share); the timeline
  shades the cycles that step spans (``[start of step, start of next step)``).
  ``-1`` is none; values are clamped to ``[-1, steps - 1]``.
- **Program commands.** Given the module's ``Program``, each bar's hover shows the
  command main.c issues for that slot on one tile (C function, SPM and DDR ranges with
  addresses, lifetimes and boxes, psum flags, a gather's indices): the timeline and the
  executed program side by side.
- **Plan beside the simulated run.** The timeline is the compiler's plan (lock-step
  frames, seed TS_SwPipeline); the simulated panel is the tile simulator's play of the
  same group's commands (per engine, stalls shaded by reason) on its slowest tile. The
  two have different time axes (a plan step has no single cycle in the simulated run),
  so the cursor shades the plan and the Gantt only; the panel's title gives both totals.
- **Ops at the cursor** in a GraphView: a category overlay named ``schedule`` (each op's
  engines at that step, e.g. ``ne``; ops of the group idle at that step ``idle``), added with
  ``GraphView.add_overlay`` so the drawing is re-coloured without a new layout. Task ops that
  are not in the drawn module (none in the default pipeline) are skipped.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import ipywidgets
import numpy as np
import plotly.graph_objects as go
import traitlets

from tx8lab.core.passes.base import Step
from tx8lab.core.program import Command, Program
from tx8lab.core.schedule.estimate import SIM_ENGINES
from tx8lab.core.schedule.spm_alloc import Allocation
from tx8lab.core.schedule.sw_pipeline import step_bounds
from tx8lab.core.schedule.tasks import ENGINES, Buffer, Slot, Timeline
from tx8lab.core.schedule.trace import sim_events
from tx8lab.errors import Tx8labError
from tx8lab.hw.sim import SimResult
from tx8lab.widgets.graph_view import GraphView
from tx8lab.widgets.overlays import MISSING_COLOR, PALETTE, category_overlay
from tx8lab.widgets.spm_gantt import (
    SpmGantt,
    TimeAxis,
    compare_allocations,
    cursor_shape,
    group_schedule,
    step_edges,
)

ColorBy = Literal["iteration", "op"]
NO_LOOP = "no loop"
"""Legend entry of task instances outside every Repeat."""
_ITER_COLORS = tuple(c for c in PALETTE if c != "#cfcfcf")  # grey is for "no loop"


def iteration_text(iteration: tuple[int, ...]) -> str:
    """``[1,3]`` for a nested iteration, ``no loop`` outside loops.

    Examples:
        >>> iteration_text((2,)), iteration_text(()), iteration_text((1, 3))
        ('[2]', 'no loop', '[1,3]')
    """
    return "[" + ",".join(str(i) for i in iteration) + "]" if iteration else NO_LOOP


def _slot_key(timeline: Timeline, slot: Slot, color_by: ColorBy) -> str:
    if color_by == "iteration":
        return iteration_text(slot.iteration)
    task = timeline.tasks.get(slot.task)
    return "?" if task is None else f"%{task.op_id}"


def _object_rows(rows: list[tuple[Any, ...]]) -> Any:
    """``rows`` (equal-length tuples) as a 2-D numpy object array (plotly's customdata)."""
    return np.array(rows, dtype=object).reshape(len(rows), -1)


def program_commands(
    program: Program, group_id: int, tile: int
) -> dict[tuple[str, tuple[int, ...]], Command]:
    """(task id, iteration) -> the Program's command of that slot on ``tile``.

    Raises:
        Tx8labError: the Program has no commands of the group on that tile.
    """
    commands = [c for c in program.group_commands(group_id, tile) if c.what != "barrier"]
    if not commands:
        tiles = sorted(t for t, cs in program.tiles.items() if any(c.group == group_id for c in cs))
        raise Tx8labError(
            f"the program has no commands of group %{group_id} on tile {tile}; its tiles: "
            f"{tiles[:16]}"
        )
    return {(c.task, c.iteration): c for c in commands}


def command_text(c: Command) -> str:
    """One command as hover text: the C call, then each SPM/DDR range it reads and writes."""
    f = c.fields()
    lines = [f"{f['function']} (tile {f['tile']})"]
    lines += [f"reads {a}" for a in f["reads"]]
    lines += [f"writes {a}" for a in f["writes"]]
    if "gather" in f:
        lines.append(f"rows picked by {f['gather']}")
    if "psum" in f:
        lines.append(f"psum {f['psum']}")
    return "<br>".join(html.escape(line) for line in lines)


def timeline_figure(
    timeline: Timeline,
    *,
    color_by: ColorBy = "iteration",
    cursor: int = -1,
    title: str | None = None,
    height: int = 300,
    program: Program | None = None,
    tile: int = 0,
) -> go.Figure:
    """Every slot of ``timeline`` as a bar on its engine row, in cycles (see module doc).

    With ``program`` (the module's :class:`~tx8lab.core.program.Program`), each bar's hover
    also shows the command main.c issues for it on ``tile``: the C function and the SPM and
    DDR ranges it reads and writes (addresses, lifetimes, boxes).
    """
    if color_by not in ("iteration", "op"):
        raise Tx8labError(f"color_by={color_by!r}: use 'iteration' or 'op'")
    commands = program_commands(program, timeline.group_id, tile) if program else {}
    groups: dict[str, list[Slot]] = {}
    for slot in timeline.slots:
        groups.setdefault(_slot_key(timeline, slot, color_by), []).append(slot)
    keys = sorted(groups, key=lambda k: (k != NO_LOOP, len(k), k))
    fig = go.Figure()
    hover = (
        "<b>%{customdata[0]}</b> %{customdata[1]} on %{y}, step %{customdata[2]}"
        "<br>op %{customdata[3]} %{customdata[7]}"
        "<br>cycles [%{customdata[4]:,}, %{customdata[5]:,}): %{x:,}"
        "<br>%{customdata[6]}%{customdata[8]}<extra>%{fullData.name}</extra>"
    )
    color_index = 0
    for key in keys:
        slots = groups[key]
        if key == NO_LOOP:
            color = MISSING_COLOR
        else:
            color = _ITER_COLORS[color_index % len(_ITER_COLORS)]
            color_index += 1
        custom = []
        for s in slots:
            task = timeline.tasks.get(s.task)
            custom.append(
                (
                    s.task,
                    "" if not s.iteration else iteration_text(s.iteration),
                    s.step,
                    "?" if task is None else f"%{task.op_id}",
                    s.start,
                    s.end,
                    "" if task is None else task.explain,
                    "" if task is None or not task.stage else f"({task.stage})",
                    "<br>" + command_text(commands[(s.task, s.iteration)])
                    if (s.task, s.iteration) in commands
                    else "",
                )
            )
        # numpy arrays: plotly validates them in one call instead of element by element
        # (a LLaMA group has 20k slots)
        fig.add_trace(
            go.Bar(
                orientation="h",
                base=np.fromiter((s.start for s in slots), np.int64, len(slots)),
                x=np.fromiter((s.end - s.start for s in slots), np.int64, len(slots)),
                y=np.array([s.engine for s in slots], dtype=object),
                text=np.array([s.task + ("" if not s.iteration else iteration_text(s.iteration))
                               for s in slots], dtype=object),
                textposition="inside",
                insidetextanchor="middle",
                name=key,
                marker={"color": color, "line": {"color": "#555", "width": 0.5}},
                customdata=_object_rows(custom),
                hovertemplate=hover,
                meta={"role": "slot"},
            )
        )  # fmt: skip
    used = [e for e in ENGINES if any(s.engine == e for s in timeline.slots)] or list(ENGINES)
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(used)), title_text="engine")
    fig.update_xaxes(title_text="cycles", range=[0, max(timeline.makespan, 1)])
    fig.update_layout(
        barmode="overlay",
        bargap=0.25,
        height=height,
        title=title
        or (
            f"group %{timeline.group_id}: {timeline.steps} steps, "
            f"{timeline.makespan:,} cycles, {timeline.retracted} retracted"
        ),
        uniformtext={"minsize": 8, "mode": "hide"},
        legend={"title": {"text": "iteration" if color_by == "iteration" else "IR op"}},
        hovermode="closest",
        margin={"t": 50, "l": 60, "r": 20, "b": 40},
    )
    set_timeline_cursor(fig, timeline, cursor)
    return fig


#: Bar colour of a simulated command (stalls take their reason's colour).
SIM_COMMAND_COLOR = "#4c78a8"
#: Stall reason -> bar colour in :func:`simulated_figure`.
STALL_BAR_COLORS: dict[str, str] = {
    "issue": "#bdbdbd",
    "dependency": "#f58518",
    "queue full": "#e45756",
    "join": "#eeca3b",
    "barrier": "#9d755d",
    "receive": "#b279a2",
    "link": "#54a24b",
}


def simulated_figure(
    result: SimResult,
    *,
    tile: int | None = None,
    title: str | None = None,
    height: int = 300,
) -> go.Figure:
    """One tile of a simulated run: commands per engine, stalls shaded by reason, in cycles.

    The execution the simulator plays (``tx8lab.hw.sim``), beside the plan's
    :func:`timeline_figure`: one row per engine and one for the kernel core that issues
    the commands; each wait is a bar in its reason's colour (the trace's stall slices,
    :func:`~tx8lab.core.schedule.trace.sim_events`). ``tile``: default the slowest.
    """
    which = result.slowest_tile if tile is None else tile
    if which not in result.tiles:
        raise Tx8labError(
            f"simulated_figure: tile {which} is not in the run (tiles {sorted(result.tiles)})"
        )
    one = SimResult({which: result.tiles[which]}, result.clock_hz, result.launch_cycles)
    events = [e for e in sim_events(one, pid_base=0) if e["ph"] == "X"]
    scale = result.clock_hz / 1e6  # µs -> cycles
    fig = go.Figure()
    kinds = ["command", *STALL_BAR_COLORS]
    for kind in kinds:
        name = "command" if kind == "command" else f"stall: {kind}"
        mine = [
            e
            for e in events
            if (e["cat"] == "simulated" if kind == "command" else e["name"] == name)
        ]
        if not mine:
            continue
        fig.add_trace(
            go.Bar(
                orientation="h",
                base=np.array([round(e["ts"] * scale) for e in mine], dtype=np.int64),
                x=np.array([e["args"]["cycles"] for e in mine], dtype=np.int64),
                y=np.array([e["args"]["engine"] for e in mine], dtype=object),
                text=np.array([e["name"] for e in mine], dtype=object),
                textposition="inside",
                insidetextanchor="middle",
                name=name,
                marker={
                    "color": SIM_COMMAND_COLOR if kind == "command" else STALL_BAR_COLORS[kind],
                    "line": {"color": "#555", "width": 0.5},
                },
                hovertemplate="<b>%{text}</b> on %{y}<br>cycles from %{base:,}: %{x:,}"
                "<extra>%{fullData.name}</extra>",
                meta={"role": "simulated" if kind == "command" else "stall"},
            )
        )
    run = result.tiles[which]
    used = [e for e in SIM_ENGINES if run.busy.get(e, 0) or run.stalls.get(e)] or ["kcore"]
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(used)), title_text="engine")
    fig.update_xaxes(title_text="cycles", range=[0, max(run.body, 1)])
    fig.update_layout(
        barmode="overlay",
        bargap=0.25,
        height=height,
        title=title or f"simulated, tile {which}: {run.body:,} cycles, {len(run.timings)} commands",
        uniformtext={"minsize": 8, "mode": "hide"},
        hovermode="closest",
        margin={"t": 50, "l": 60, "r": 20, "b": 40},
    )
    return fig


def set_timeline_cursor(fig: go.Figure, timeline: Timeline, cursor: int) -> None:
    """Shade the cycles of time step ``cursor`` (-1: remove the shading)."""
    shapes: list[Any] = [s for s in fig.layout.shapes if s.name != "cursor"]
    if cursor >= 0:
        edges = step_edges(timeline)
        shapes.append(cursor_shape(edges[cursor], edges[cursor + 1]))
    fig.layout.shapes = shapes


def running_at(timeline: Timeline, step: int) -> list[dict[str, Any]]:
    """The task instances of time step ``step``: task, op id, engine, iteration, cycles."""
    out = []
    for s in timeline.slots:
        if s.step == step:
            task = timeline.tasks.get(s.task)
            out.append(
                {
                    "task": s.task,
                    "op": None if task is None else task.op_id,
                    "engine": s.engine,
                    "iteration": list(s.iteration),
                    "start": s.start,
                    "end": s.end,
                }
            )
    return out


class TimelineView(ipywidgets.VBox):  # type: ignore[misc]
    """A group's pipeline timeline as a live plotly figure with a time ``cursor``."""

    cursor = traitlets.Int(-1).tag(sync=True)
    """Time step shaded (-1: none). Set from Python or a linked view (clamped)."""
    steps = traitlets.Int(0).tag(sync=True)
    """Time steps of the timeline (set by Python)."""
    running = traitlets.List(traitlets.Dict()).tag(sync=True)
    """:func:`running_at` the cursor step (set by Python)."""

    def __init__(
        self, timeline: Timeline, *, color_by: ColorBy = "iteration", cursor: int = -1,
        program: Program | None = None, tile: int = 0, **kwargs: Any,
    ) -> None:  # fmt: skip
        self.timeline = timeline
        """The timeline drawn (Python only)."""
        self.figure = go.FigureWidget(
            timeline_figure(timeline, color_by=color_by, program=program, tile=tile)
        )
        """The live figure (a ``go.FigureWidget``)."""
        super().__init__(children=[self.figure], **kwargs)
        self.steps = timeline.steps
        self.cursor = cursor

    @classmethod
    def from_step(
        cls, step: Step | Sequence[Step], group_id: int | None = None, **kwargs: Any
    ) -> TimelineView:
        """The timeline of a group (default: the biggest) from a group-cost step or trace."""
        return cls(group_schedule(step, group_id).timeline, **kwargs)

    @traitlets.validate("cursor")
    def _valid_cursor(self, proposal: Any) -> int:
        return max(-1, min(int(proposal["value"]), self.steps - 1))

    @traitlets.observe("cursor")
    def _cursor_changed(self, change: Any) -> None:
        with self.figure.batch_update():
            set_timeline_cursor(self.figure, self.timeline, change["new"])
        self.running = running_at(self.timeline, change["new"])


class ScheduleView(ipywidgets.VBox):  # type: ignore[misc]
    """A slider over time steps driving a linked timeline, SPM Gantt and (optional) GraphView."""

    cursor = traitlets.Int(-1).tag(sync=True)
    """The shared time step (-1: none); set by the slider, Python or either figure's owner."""
    running_ops = traitlets.List(traitlets.Int()).tag(sync=True)
    """IR op ids with a task at the cursor step (set by Python)."""

    def __init__(
        self,
        timeline: Timeline,
        allocations: Allocation | Mapping[str, Allocation],
        buffers: Mapping[str, Buffer] | None = None,
        *,
        graph_view: GraphView | None = None,
        time_axis: TimeAxis = "steps",
        color_by: ColorBy = "iteration",
        cursor: int = 0,
        simulated: SimResult | None = None,
        **kwargs: Any,
    ) -> None:
        self.timeline_view = TimelineView(timeline, color_by=color_by)
        """The timeline (its ``cursor`` is linked to this view's)."""
        self.sim_figure: go.FigureWidget | None = None
        """The simulated run under the timeline (None when none was given)."""
        if simulated is not None:
            plan = timeline.makespan
            self.sim_figure = go.FigureWidget(
                simulated_figure(
                    simulated,
                    title=f"simulated execution, tile {simulated.slowest_tile}: "
                    f"{simulated.body_cycles:,} cycles (plan {plan:,})",
                )
            )
        self.gantt = SpmGantt(allocations, buffers, timeline=timeline, time_axis=time_axis)
        """The SPM Gantt (its ``cursor`` is linked to this view's)."""
        self.graph_view = graph_view
        """The GraphView re-coloured with the ops running at the cursor, if given."""
        self.slider = ipywidgets.IntSlider(
            value=max(cursor, 0), min=-1, max=timeline.steps - 1, description="time step",
            continuous_update=True, layout=ipywidgets.Layout(width="100%"),
        )  # fmt: skip
        self.info = ipywidgets.HTML()
        self._group_ops = sorted({t.op_id for t in timeline.tasks.values()})
        children: list[Any] = [self.slider, self.info, self.timeline_view]
        if self.sim_figure is not None:
            children.append(self.sim_figure)
        children.append(self.gantt)
        super().__init__(children=children, **kwargs)
        self._links = [
            traitlets.link((self, "cursor"), (self.slider, "value")),
            traitlets.link((self, "cursor"), (self.timeline_view, "cursor")),
            traitlets.link((self, "cursor"), (self.gantt, "cursor")),
        ]
        self.cursor = cursor
        self._cursor_changed({"new": self.cursor})

    @classmethod
    def from_step(
        cls,
        step: Step | Sequence[Step],
        group_id: int | None = None,
        *,
        strategies: Sequence[str] = ("seed", "best"),
        time_limit_s: float = 1.0,
        **kwargs: Any,
    ) -> ScheduleView:
        """A group's timeline, simulated run and SPM Gantt (allocators side by side).

        From a group-cost step; the simulated panel when group-cost simulated the group.
        """
        sched = group_schedule(step, group_id)
        allocs = compare_allocations(sched.allocation, strategies, time_limit_s)
        kwargs.setdefault("simulated", sched.simulated)
        return cls(sched.timeline, allocs, sched.inp.buffers, **kwargs)

    @property
    def timeline(self) -> Timeline:
        """The timeline shown."""
        return self.timeline_view.timeline

    @traitlets.validate("cursor")
    def _valid_cursor(self, proposal: Any) -> int:
        return max(-1, min(int(proposal["value"]), self.timeline.steps - 1))

    @traitlets.observe("cursor")
    def _cursor_changed(self, change: Any) -> None:
        step = int(change["new"])
        running = running_at(self.timeline, step)
        self.running_ops = sorted({r["op"] for r in running if r["op"] is not None})
        if step < 0:
            self.info.value = "no time step selected"
        else:
            lo, hi = step_bounds(self.timeline)[step]
            tasks = ", ".join(
                f"{r['engine']}: {r['task']}"
                + (iteration_text(tuple(r["iteration"])) if r["iteration"] else "")
                for r in running
            )
            self.info.value = f"step {step}: cycles [{lo:,}, {hi:,}) &mdash; {tasks}"
        if self.graph_view is not None:
            known = self.graph_view.module.op_by_id()
            values: dict[int, str] = {op: "idle" for op in self._group_ops if op in known}
            for r in running:
                if r["op"] in known:
                    prev = values.get(r["op"], "idle")
                    values[r["op"]] = r["engine"] if prev == "idle" else f"{prev}+{r['engine']}"
            overlay = category_overlay(
                "schedule", values, colors={"idle": "#eeeeee"}, order=["idle", *ENGINES]
            )
            self.graph_view.add_overlay(overlay, show=True)


__all__ = [
    "NO_LOOP",
    "ScheduleView",
    "TimelineView",
    "command_text",
    "iteration_text",
    "program_commands",
    "running_at",
    "set_timeline_cursor",
    "timeline_figure",
]
