"""SpmGantt: one group's SPM buffers as rectangles in time x offset, two allocators side by side.

Spec: the SPM Gantt view. Each lifetime of the allocation (seed SPMAllocPass: a buffer's live
interval, half-open ``[start, end)`` in pipeline time steps) is a rectangle from ``start`` to
``end`` along x and from ``offset`` to ``offset + size`` bytes along y, coloured by the IR op
whose value (or scratch space) it holds. Each allocator gets a panel with the capacity line
(``Allocation.capacity_bytes``) and the peak line (``peak_bytes``); hover shows the buffer's id,
op, kind, size, offset and lifetime. :func:`spm_gantt_figure` builds a plain plotly
``Figure`` (headless: ``fig.to_html()`` / ``fig.to_json()``); :class:`SpmGantt` wraps it in a
``go.FigureWidget`` with a ``cursor`` trait (a time step) that the pipeline timeline shares.

Readings chosen:

- **Rectangles are horizontal bars** (``go.Bar`` with ``base`` = start, length = end -
  start, centre = offset + size/2 and ``width`` = size on a numeric y axis, bars overlaid):
  the whole rectangle takes the hover, and a figure of a thousand buffers stays one trace per
  op. One trace per IR op (legend entry ``%op``), the same colour in both panels.
- **Time axis.** ``time_axis="steps"`` (default) draws the allocator's own unit: step ``s``
  spans ``[s, s+1)``. ``time_axis="cycles"`` maps step ``s`` to the cycles the timeline gives
  it (``[start of step s, start of step s+1)``, the last step ending at the makespan), so the
  Gantt lines up with :func:`~tx8lab.widgets.timeline.timeline_figure`; it needs the timeline.
- **y range.** When the peak uses at least a quarter of the capacity the axis runs to the
  capacity; otherwise to 1.15 x the largest peak, and the capacity line is off the axis (its
  legend entry says so), so small groups stay readable.
- **Second allocator.** :func:`compare_allocations` keeps the pipeline's allocation for its
  strategy and computes the other one from the same lifetimes and capacity
  (``spm_alloc.allocate``; ``best`` with a short ``time_limit_s``). A strategy whose
  packing does not fit is packed again without a limit and drawn against the real
  capacity, so the panel shows how far it overflows (its title says "does not fit"; its
  ``capacity_bytes`` is the real one, so ``peak_bytes > capacity_bytes`` marks it).
- **Cursor** ``-1`` means none; a step is shaded in every panel (a ``vrect`` named
  ``cursor``). Out-of-range values are clamped to ``[-1, steps - 1]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import ipywidgets
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import traitlets
from plotly.subplots import make_subplots

from tx8lab.core.passes.base import Step
from tx8lab.core.schedule.spm_alloc import Allocation, allocate
from tx8lab.core.schedule.stages import GroupRun
from tx8lab.core.schedule.sw_pipeline import step_bounds
from tx8lab.core.schedule.tasks import Buffer, ScheduleInput, Timeline
from tx8lab.errors import Tx8labError
from tx8lab.hw.sim import SimResult
from tx8lab.widgets.overlays import PALETTE

TimeAxis = Literal["steps", "cycles"]
CURSOR_COLOR = "rgba(220, 40, 40, 0.18)"
"""Fill of the shaded cursor step (the timeline uses the same)."""


@dataclass(frozen=True)
class GroupSchedule:
    """What the group-cost step recorded for one group: input, timeline, allocation."""

    group_id: int
    inp: ScheduleInput
    timeline: Timeline
    allocation: Allocation
    simulated: SimResult | None = None
    """The tile simulator's run of this schedule (None when group-cost ran plan only)."""


def cost_step(step: Step | Sequence[Step], who: str) -> Step:
    """The ``group-cost`` step itself, or the first one of a trace; an error naming ``who``."""
    found: Step | None
    if isinstance(step, Step):
        found = step
    elif isinstance(step, Sequence):
        found = next((s for s in step if isinstance(s, Step) and s.name == "group-cost"), None)
    else:
        found = None
    if found is None or found.name != "group-cost":
        raise Tx8labError(f"{who}: give the group-cost step (or a trace that ran it)")
    return found


def group_schedule(step: Step | Sequence[Step], group_id: int | None = None) -> GroupSchedule:
    """One group's schedule from a ``group-cost`` step (or a trace holding one).

    ``group_id=None`` picks the group whose timeline has the most task instances.
    """
    found = cost_step(step, "group_schedule")
    arts = found.result.artifacts
    runs: Mapping[int, GroupRun] = arts.get("runs", {})
    if not runs:
        raise Tx8labError("group_schedule: the group-cost step scheduled no group")
    if group_id is None:
        group_id = max(runs, key=lambda g: (len(runs[g].timeline.slots), -g))
    if group_id not in runs:
        known = ", ".join(f"%{g}" for g in sorted(runs))
        raise Tx8labError(f"group_schedule: %{group_id} was not scheduled; groups: {known}")
    run = runs[group_id]
    played = run.simulated
    return GroupSchedule(
        group_id,
        run.input,
        run.timeline,
        run.allocation,
        played.result if played is not None else None,
    )


def compare_allocations(
    allocation: Allocation,
    strategies: Sequence[str] = ("seed", "best"),
    time_limit_s: float = 1.0,
) -> dict[str, Allocation]:
    """The same lifetimes and capacity packed by each strategy (reusing ``allocation``)."""
    out: dict[str, Allocation] = {}
    for name in strategies:
        if name == allocation.strategy:
            out[name] = allocation
            continue
        try:
            out[name] = allocate(
                allocation.lifetimes,
                allocation.capacity_bytes,
                name,
                time_limit_s=time_limit_s,
                alignments=allocation.alignments,
            )
        except Tx8labError:
            # does not fit: pack without a limit to show how far it overflows
            roomy = allocate(
                allocation.lifetimes,
                sum(lt.size for lt in allocation.lifetimes) * 2 + 1,
                name,
                time_limit_s=time_limit_s,
                alignments=allocation.alignments,
            )
            out[name] = replace(roomy, capacity_bytes=allocation.capacity_bytes)
    return out


def step_edges(timeline: Timeline) -> list[int]:
    """Cycle at which each step starts, plus the makespan: ``steps + 1`` numbers."""
    return [lo for lo, _ in step_bounds(timeline)] + [timeline.makespan]


def gantt_frame(
    allocation: Allocation,
    buffers: Mapping[str, Buffer] | None = None,
    *,
    timeline: Timeline | None = None,
    time_axis: TimeAxis = "steps",
) -> pd.DataFrame:
    """``Allocation.to_dataframe`` plus ``x0``/``x1``: the rectangle's time span on the axis."""
    df = allocation.to_dataframe(buffers)
    if time_axis == "steps":
        df["x0"], df["x1"] = df["start"], df["end"]
    elif time_axis == "cycles":
        if timeline is None:
            raise Tx8labError("gantt_frame: time_axis='cycles' needs the group's timeline")
        edges = step_edges(timeline)
        last = len(edges) - 1
        df["x0"] = [edges[min(int(s), last)] for s in df["start"]]
        df["x1"] = [edges[min(int(e), last)] for e in df["end"]]
    else:
        raise Tx8labError(f"time_axis={time_axis!r}: use 'steps' or 'cycles'")
    return df


def _op_key(op: Any) -> str:
    return "?" if op is None or pd.isna(op) else f"%{int(op)}"


def _cursor_span(
    cursor: int, time_axis: TimeAxis, timeline: Timeline | None
) -> tuple[float, float]:
    if time_axis == "cycles" and timeline is not None:
        edges = step_edges(timeline)
        return float(edges[cursor]), float(edges[cursor + 1])
    return float(cursor), float(cursor + 1)


def spm_gantt_figure(
    allocations: Allocation | Mapping[str, Allocation],
    buffers: Mapping[str, Buffer] | None = None,
    *,
    timeline: Timeline | None = None,
    time_axis: TimeAxis = "steps",
    cursor: int = -1,
    title: str | None = None,
    height: int = 460,
) -> go.Figure:
    """Buffers as rectangles (time x SPM offset), one panel per allocation, side by side.

    Args:
        allocations: one allocation, or panel title -> allocation (e.g. seed and best).
        buffers: ``ScheduleInput.buffers``, for each buffer's IR op and kind.
        timeline: the group's timeline (needed for ``time_axis="cycles"``).
        time_axis: ``steps`` (pipeline time steps) or ``cycles``.
        cursor: a time step to shade, -1 for none.
        title: figure title.
        height: pixels.
    """
    panels: dict[str, Allocation] = (
        {allocations.strategy: allocations}
        if isinstance(allocations, Allocation)
        else dict(allocations)
    )
    if not panels:
        raise Tx8labError("spm_gantt_figure: no allocation to draw")
    frames = {
        name: gantt_frame(a, buffers, timeline=timeline, time_axis=time_axis)
        for name, a in panels.items()
    }
    capacity = max(a.capacity_bytes for a in panels.values())
    top_peak = max(a.peak_bytes for a in panels.values())
    full = top_peak >= capacity / 4
    y_max = max(capacity, top_peak) * 1.03 if full else max(top_peak * 1.15, 1)
    ops: list[str] = []
    for df in frames.values():
        for op in df["op"].tolist():
            if _op_key(op) not in ops:
                ops.append(_op_key(op))
    colors = {op: PALETTE[i % len(PALETTE)] for i, op in enumerate(ops)}
    subtitles = [
        f"{name}: peak {a.peak_bytes:,} B > capacity: does not fit"
        if a.peak_bytes > a.capacity_bytes
        else f"{name}: peak {a.peak_bytes:,} B (bound {a.lower_bound_bytes:,} B, {a.status})"
        for name, a in panels.items()
    ]
    fig = make_subplots(
        rows=1, cols=len(panels), shared_yaxes=True, subplot_titles=subtitles,
        horizontal_spacing=0.04,
    )  # fmt: skip
    unit = "step" if time_axis == "steps" else "cycle"
    hover = (
        "<b>%{customdata[0]}</b> (buffer %{customdata[1]}, op %{customdata[2]}, "
        "%{customdata[3]})<br>size %{customdata[4]:,} B at offset %{customdata[5]:,}"
        "<br>live steps [%{customdata[6]}, %{customdata[7]})"
        f"<br>{unit}s [%{{customdata[8]:,}}, %{{customdata[9]:,}})<extra>%{{fullData.name}}</extra>"
    )
    for col, (name, df) in enumerate(frames.items(), start=1):
        alloc = panels[name]
        x_lo = float(df["x0"].min()) if len(df) else 0.0
        x_hi = float(df["x1"].max()) if len(df) else 1.0
        keys = [_op_key(op) for op in df["op"].tolist()]
        for op in ops:
            rows = df[[k == op for k in keys]]
            if rows.empty:
                continue
            custom = np.empty((len(rows), 10), dtype=object)
            for j, field in enumerate(
                ("id", "buffer", "", "", "size", "offset", "start", "end", "x0", "x1")
            ):
                if field:
                    custom[:, j] = rows[field].to_numpy()
            custom[:, 2] = op
            custom[:, 3] = [k if isinstance(k, str) else "?" for k in rows["kind"]]  # fmt: skip
            # numpy arrays: plotly validates them at once, not element by element
            fig.add_trace(
                go.Bar(
                    orientation="h",
                    base=rows["x0"].to_numpy(),
                    x=(rows["x1"] - rows["x0"]).to_numpy(),
                    y=(rows["offset"] + rows["size"] / 2).to_numpy(),
                    width=rows["size"].to_numpy(),
                    name=op,
                    legendgroup=op,
                    showlegend=col == 1,
                    marker={"color": colors[op], "line": {"color": "#555", "width": 0.5}},
                    customdata=custom,
                    hovertemplate=hover,
                    meta={"role": "buffer", "panel": name},
                ),
                row=1,
                col=col,
            )
        off_scale = "" if alloc.capacity_bytes <= y_max else " (above the axis)"
        for role, value, dash, color in (
            ("capacity", alloc.capacity_bytes, "dash", "#c0392b"),
            ("peak", alloc.peak_bytes, "dot", "#333333"),
        ):
            fig.add_trace(
                go.Scatter(
                    x=[x_lo, x_hi],
                    y=[value, value],
                    mode="lines",
                    name=f"{name} {role} {value:,} B" + (off_scale if role == "capacity" else ""),
                    line={"color": color, "dash": dash, "width": 1.5},
                    legendgroup=f"{name}:{role}",
                    showlegend=True,
                    hovertemplate=f"{name} {role}: {value:,} B<extra></extra>",
                    meta={"role": role, "panel": name, "bytes": value},
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text=f"time ({unit}s)", row=1, col=col)
    fig.update_yaxes(title_text="SPM offset (bytes)", range=[0, y_max], row=1, col=1)
    fig.update_layout(
        barmode="overlay",
        bargap=0,
        height=height,
        title=title,
        hovermode="closest",
        legend={"title": {"text": "IR op"}},
        margin={"t": 70 if title else 50, "l": 70, "r": 20, "b": 50},
    )
    set_cursor(fig, cursor, time_axis=time_axis, timeline=timeline)
    return fig


def set_cursor(
    fig: go.Figure,
    cursor: int,
    *,
    time_axis: TimeAxis = "steps",
    timeline: Timeline | None = None,
) -> None:
    """Shade time step ``cursor`` (-1: remove the shading) in every panel of ``fig``."""
    others = [s for s in fig.layout.shapes if s.name != "cursor"]
    shapes: list[Any] = list(others)
    if cursor >= 0:
        x0, x1 = _cursor_span(cursor, time_axis, timeline)
        axes = sorted(
            {(t.xaxis or "x") for t in fig.data}, key=lambda a: int(a[1:] or "1")
        )  # fmt: skip
        shapes.extend(cursor_shape(x0, x1, axis[1:]) for axis in axes)
    fig.layout.shapes = shapes


def cursor_shape(x0: float, x1: float, suffix: str = "") -> go.layout.Shape:
    """The shaded time-cursor band ``[x0, x1)`` over the full height of axes ``x{suffix}``."""
    return go.layout.Shape(
        type="rect",
        name="cursor",
        xref=f"x{suffix}",
        yref=f"y{suffix} domain",
        x0=x0,
        x1=x1,
        y0=0,
        y1=1,
        fillcolor=CURSOR_COLOR,
        line={"width": 0},
        layer="above",
    )


class SpmGantt(ipywidgets.VBox):  # type: ignore[misc]
    """The SPM Gantt of one group as a live plotly figure with a shared time ``cursor``."""

    cursor = traitlets.Int(-1).tag(sync=True)
    """Time step shaded in every panel (-1: none). Set from Python or a linked view."""
    steps = traitlets.Int(0).tag(sync=True)
    """Time steps of the group's pipeline (set by Python)."""
    time_axis = traitlets.Unicode("steps").tag(sync=True)
    """``steps`` or ``cycles`` (set at construction)."""

    def __init__(
        self,
        allocations: Allocation | Mapping[str, Allocation],
        buffers: Mapping[str, Buffer] | None = None,
        *,
        timeline: Timeline | None = None,
        time_axis: TimeAxis = "steps",
        cursor: int = -1,
        title: str | None = None,
        **kwargs: Any,
    ) -> None:
        self._timeline = timeline
        fig = spm_gantt_figure(
            allocations, buffers, timeline=timeline, time_axis=time_axis, title=title
        )
        self.allocations: dict[str, Allocation] = (
            {allocations.strategy: allocations}
            if isinstance(allocations, Allocation)
            else dict(allocations)
        )
        """Panel title -> allocation drawn (Python only)."""
        self.figure = go.FigureWidget(fig)
        """The live figure (a ``go.FigureWidget``)."""
        horizon = max(lt.upper for a in self.allocations.values() for lt in a.lifetimes)
        super().__init__(children=[self.figure], **kwargs)
        with self.hold_trait_notifications():
            self.steps = timeline.steps if timeline is not None else horizon
            self.time_axis = time_axis
        self.cursor = cursor

    @classmethod
    def from_step(
        cls,
        step: Step | Sequence[Step],
        group_id: int | None = None,
        *,
        strategies: Sequence[str] = ("seed", "best"),
        time_limit_s: float = 1.0,
        time_axis: TimeAxis = "steps",
        **kwargs: Any,
    ) -> SpmGantt:
        """The group's allocation from a group-cost step, next to the other strategies'."""
        sched = group_schedule(step, group_id)
        allocs = compare_allocations(sched.allocation, strategies, time_limit_s)
        kwargs.setdefault("title", f"SPM of group %{sched.group_id} (one tile)")
        return cls(
            allocs, sched.inp.buffers, timeline=sched.timeline, time_axis=time_axis, **kwargs
        )

    def to_html(self, **kwargs: Any) -> str:
        """The figure as a standalone HTML page (plotly.js inlined unless told otherwise)."""
        html: str = go.Figure(self.figure).to_html(**kwargs)
        return html

    @traitlets.validate("cursor")
    def _valid_cursor(self, proposal: Any) -> int:
        return max(-1, min(int(proposal["value"]), self.steps - 1))

    @traitlets.observe("cursor")
    def _cursor_changed(self, change: Any) -> None:
        with self.figure.batch_update():
            set_cursor(
                self.figure,
                change["new"],
                time_axis="cycles" if self.time_axis == "cycles" else "steps",
                timeline=self._timeline,
            )


__all__ = [
    "GroupSchedule",
    "SpmGantt",
    "compare_allocations",
    "cost_step",
    "cursor_shape",
    "gantt_frame",
    "group_schedule",
    "set_cursor",
    "spm_gantt_figure",
    "step_edges",
]
