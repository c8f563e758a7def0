"""GroupTuner: tune ONE group's group-cost knobs and hardware, re-estimate it alone, redraw.

Spec: DESIGN.md §5 (a knob change re-runs only what it invalidates; a one-group
re-estimate should take at most 100 ms, measured in ``make bench``).
:class:`KnobPanel` re-runs whole passes through the
:class:`~tx8lab.core.runner.Explorer`: a group-cost knob re-schedules every group of the
model. The tuner is the scoped view: controls for the knobs that change one
group's cost (group-cost's ``multi_buffer``, ``retract``, ``alloc``,
``alloc_nodes``, ``alloc_time_limit_s``, ``search``, ``search_budget``, ``search_budget_s``;
the hardware fields :data:`TUNER_HW_FIELDS`; a strategy picker over the group's search
candidates), and a change re-runs only this group through
:meth:`~tx8lab.core.passes.group_cost.GroupCost.schedule_one` (group-cost's own call: the
strategy of its ``search`` mode through the recorded group pipeline), or
:func:`~tx8lab.core.schedule.stages.run_group` of a forced candidate. The linked views
(a :class:`~tx8lab.widgets.timeline.ScheduleView`: timeline + SPM Gantt with a shared
cursor, and the :func:`~tx8lab.widgets.factor_space.factor_space_figure`) are redrawn in
place: the same ``FigureWidget`` objects get the new traces and layout.

Readings chosen:

- **Keys** are KnobPanel's: ``group-cost.<knob>`` (``--set`` names), ``hw.<dotted path>``
  (``--hw`` names) and ``strategy`` (``"auto"`` or a candidate index). ``values`` holds
  them all as JSON.
- **The group** of :meth:`GroupTuner.from_step` defaults to the costliest (most cycles),
  the one worth tuning (FactorSpaceView's default), not the one with most task instances.
  The start state is the step's: its knobs and the run group-cost recorded (``hw``, when
  given, must be the run's).
- **Same computation as group-cost**: both call ``GroupCost.schedule_one`` with the
  same knobs, so the untouched tuner gives the step's cycles by construction (a test
  checks it on every zoo model's costliest group).
- **Strategy picker** = the OK candidates of the latest search (the step's stored one; a
  new one each time ``search``/``exhaustive`` runs; when the step searched nothing, one
  ``search`` is run when the tuner opens). ``auto`` follows the ``search`` control; a
  forced candidate runs its strategy with the current knobs and hardware (its
  ``multi_buffer`` replaced by the control's) and ignores ``search`` and its budgets. A
  new search replaces the list, and going back to a state (from the cache) brings its
  search back; a forced pick goes back to ``auto`` when the list changes
  (its index would name another candidate). The labels give each candidate's cycles as
  its search measured them (with that search's knobs and hardware).
- **SPM Gantt**: one panel, the allocation of the ``alloc`` control (a second allocator,
  as ScheduleView.from_step draws, would run ``best`` again on every change). The
  timeline colours by IR op (``color_by="op"``: one trace per op, far fewer than one per
  Repeat iteration on a long pipeline, and the Gantt's colours).
- **Simulated execution**: below the plan's timeline, the tile simulator's run of the
  shown result (:func:`~tx8lab.widgets.timeline.simulated_figure`: per engine, stalls
  shaded by reason), redrawn in place on every change; with ``simulate_top=0`` (plan only)
  or a group the simulator cannot play, the panel is empty and its title says why.
- **Chips**: a step run with ``dp * tp > 1`` is refused (the tuner schedules one chip's
  group; the chip cut and its keep-or-replicate choice stay group-cost's).
- **A change that fails** (a value the knob or ChipConfig rejects, a forced candidate that
  no longer fits, an SPM too small for any candidate) is undone as in KnobPanel: the
  controls and ``values`` return to the last good state, ``status`` is ``error``,
  ``error`` says what failed, the views keep the last good result; :meth:`set` raises a
  :class:`~tx8lab.errors.Tx8labError` naming the key, a control or ``set_state`` only
  shows it.
- **Cache**: each state's result is kept (key: every value, plus the search a forced
  index refers to), so going back to a setting costs only the redraw; ``last_update``
  says ``cached``. ``compute_ms`` is the re-estimate, ``views_ms`` the redraw of every
  view, ``total_ms`` both (and the bookkeeping between).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import html
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets
import plotly.graph_objects as go
import traitlets

from tx8lab.core.ir import Op
from tx8lab.core.passes.base import Knob, Step
from tx8lab.core.passes.group_cost import GroupCost
from tx8lab.core.report import to_jsonable
from tx8lab.core.schedule.estimate import GroupEstimate
from tx8lab.core.schedule.search import Candidate, SearchResult, search_group
from tx8lab.core.schedule.sharding import output_ops
from tx8lab.core.schedule.stages import GroupRun, run_group
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81
from tx8lab.hw.config import ChipConfig
from tx8lab.widgets.factor_space import (
    check_group,
    factor_space_figure,
    recorded_group,
    set_selected,
)
from tx8lab.widgets.knob_panel import (
    HW_PREFIX,
    HwField,
    format_hw_value,
    hw_control,
    hw_fields,
    hw_options,
    hw_value,
    knob_control,
)
from tx8lab.widgets.spm_gantt import cost_step, set_cursor, spm_gantt_figure
from tx8lab.widgets.timeline import (
    ColorBy,
    ScheduleView,
    set_timeline_cursor,
    simulated_figure,
    timeline_figure,
)

#: group-cost knobs that change one group's cost (the others cut across chips).
TUNER_KNOBS: tuple[str, ...] = (
    "multi_buffer",
    "retract",
    "alloc",
    "alloc_nodes",
    "alloc_time_limit_s",
    "search",
    "search_budget",
    "search_budget_s",
    "simulate_top",
    "noc",
)

#: Hardware fields that change one group's cost (dotted paths, as ``--hw`` names them).
TUNER_HW_FIELDS: tuple[str, ...] = (
    "tile.spm_bytes",
    "ddr_bytes_per_s",
    "tile.rdma_bytes_per_s",
    "tile.wdma_bytes_per_s",
    "clock_hz",
)

PASS_PREFIX = "group-cost."
STRATEGY = "strategy"
AUTO = "auto"

_DESCRIPTION = {"description_width": "190px"}
_ROW = ipywidgets.Layout(width="460px")


@dataclass(frozen=True)
class _Outcome:
    """One state's re-estimate."""

    scheduled: GroupRun
    search: SearchResult | None
    """The search this state ran (None for the default strategy or a forced candidate)."""
    path: str
    """``default``, ``search``, ``exhaustive``, ``forced #i`` or ``recorded``."""
    compute_ms: float


def _cycles_text(estimate: GroupEstimate) -> str:
    """``12,345 cycles simulated (plan 14,000)``, or the plan's alone when not simulated."""
    if estimate.sim is None:
        return f"{estimate.cycles:,} cycles (plan only)"
    return f"{estimate.cycles:,} cycles simulated (plan {estimate.plan_cycles:,})"


def _sim_figure(run: GroupRun) -> go.Figure:
    """The simulated execution of ``run``, or an empty panel titled with why there is none."""
    played = run.simulated
    if played is not None and played.result is not None:
        est = run.estimate
        fig = simulated_figure(
            played.result,
            title=f"simulated execution: {est.cycles:,} cycles (plan {est.plan_cycles:,}), "
            f"limited by {played.limiting_engine or 'nothing'}",
        )
        # the panel is redrawn in place (layouts merge): undo the empty panel's settings
        fig.update_xaxes(visible=True)
        fig.update_yaxes(visible=True)
        return fig
    why = next((r.decisions for r in run.records if r.name == "simulate"), ())
    fig = go.Figure()
    fig.update_layout(
        title="not simulated" + (f": {why[0]}" if why else " (plan only)"),
        height=120,
        xaxis={"visible": False},
        yaxis={"visible": False},
    )
    return fig


def _check_group(group: Any) -> Op:
    return check_group(group, "GroupTuner (or use GroupTuner.from_step)")


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _replace_figure(widget: go.FigureWidget, fig: go.Figure) -> None:
    """Show ``fig`` in the existing ``widget``: its traces and layout replace the old ones.

    The layout is merged key by key without its template (the figures come from the same
    builder, so they have the same keys): assigning a whole layout copies and validates
    the template again, about half the redraw of a small figure.
    """
    spec = fig.to_plotly_json()
    layout = spec["layout"]
    layout.pop("template", None)
    with widget.batch_update():
        widget.data = ()
        widget.add_traces(spec["data"])
        widget.update_layout(layout, overwrite=True)


class GroupTuner(ipywidgets.VBox):  # type: ignore[misc]
    """Controls for one group's knobs and hardware; a change re-estimates only this group."""

    values = traitlets.Dict().tag(sync=True)
    """Every control's value by key (``group-cost.multi_buffer``, ``hw.tile.spm_bytes``,
    ``strategy``) as JSON. Set by the tuner, by Python or by the browser (``set_state``):
    a change is applied."""
    cycles = traitlets.Int(0).tag(sync=True)
    """The group's estimated cycles in the shown state (set by Python)."""
    spm_peak_bytes = traitlets.Int(0).tag(sync=True)
    """SPM peak of the shown allocation, bytes on one tile (set by Python)."""
    split = traitlets.Unicode("").tag(sync=True)
    """Split (iteration dims) of the group's first output op in the shown strategy."""
    path = traitlets.Unicode("").tag(sync=True)
    """How the shown result was computed: ``default``, ``search``, ``exhaustive``,
    ``forced #i`` or ``recorded`` (the step's strategy); set by Python."""
    status = traitlets.Unicode("ok").tag(sync=True)
    """``ok``, or ``error`` when the last change was undone (set by Python)."""
    error = traitlets.Unicode("").tag(sync=True)
    """Why the last change was undone ("" when it worked); set by Python."""
    last_update = traitlets.Dict().tag(sync=True)
    """The last applied change (set by Python): key, value, path, cached, cycles,
    spm_peak_bytes, compute_ms, views_ms, total_ms."""

    def __init__(
        self,
        group_op: Op,
        hw: ChipConfig | None = None,
        *,
        knobs: Mapping[str, Any] | None = None,
        search: SearchResult | None = None,
        scheduled: GroupRun | None = None,
        color_by: ColorBy = "op",
        **kwargs: Any,
    ) -> None:
        self.group = _check_group(group_op)
        """The group tuned (Python only)."""
        self.base_hw = hw if hw is not None else TX81
        """The hardware the sliders are built around (Python only)."""
        self.history: list[dict[str, Any]] = []
        """Every applied change, as ``last_update`` records it (Python only)."""
        self.controls: dict[str, ipywidgets.Widget] = {}
        """Key -> its control (tests set their ``value`` as the browser does)."""
        self._specs: dict[str, Knob] = {k.name: k for k in GroupCost.knobs()}
        self._hw_fields: dict[str, HwField] = {f.path: f for f in hw_fields(TUNER_HW_FIELDS)}
        self._memo: dict[tuple[Any, ...], _Outcome] = {}
        self._syncing = False
        self._color_by: ColorBy = color_by
        state: dict[str, Any] = {}
        given = dict(knobs or {})
        for name in TUNER_KNOBS:
            spec = self._specs[name]
            raw = given.pop(name, given.pop(PASS_PREFIX + name, spec.default))
            state[PASS_PREFIX + name] = spec.check(raw, PASS_PREFIX + name)
        if given:
            raise Tx8labError(
                f"GroupTuner: unknown knobs {', '.join(sorted(given))}; "
                f"use {', '.join(TUNER_KNOBS)}"
            )
        for path in self._hw_fields:
            state[HW_PREFIX + path] = hw_value(self.base_hw, path)
        state[STRATEGY] = AUTO
        self._state = state
        self._search: SearchResult | None = search
        if search is not None and search.group_id != self.group.id:
            raise Tx8labError(
                f"GroupTuner: the search result is of group %{search.group_id}, "
                f"not %{self.group.id}"
            )
        if scheduled is not None:
            # the step's search belongs to this state: coming back here shows it again
            outcome = _Outcome(scheduled, search, "recorded", 0.0)
        else:
            outcome = self._compute(state)
        if outcome.search is not None:
            self._search = outcome.search
        if self._search is None:
            # the picker needs candidates: one search with the current knobs
            self._search = self._run_search(state, "search")
        self._memo[self._key(state)] = outcome
        self._outcome = outcome

        # controls
        knob_rows = [
            self._make_control(
                PASS_PREFIX + name, knob_control(self._specs[name], state[PASS_PREFIX + name])
            )
            for name in TUNER_KNOBS
        ]
        hw_rows = []
        for path, field in self._hw_fields.items():
            current = state[HW_PREFIX + path]
            control = hw_control(field, hw_options(self.base_hw, field, current))
            control.value = current
            hw_rows.append(self._make_control(HW_PREFIX + path, control))
        picker = ipywidgets.Dropdown(
            options=self._picker_options(),
            value=AUTO,
            description="strategy",
            tooltip="force one candidate of the latest search (auto: the search control)",
            style=_DESCRIPTION,
            layout=ipywidgets.Layout(width="640px"),
        )
        self._make_control(STRATEGY, picker)
        self.accordion = ipywidgets.Accordion(
            children=[ipywidgets.VBox(knob_rows), ipywidgets.VBox(hw_rows)],
            titles=("group-cost", f"hardware ({self.base_hw.name})"),
        )
        self.banner = ipywidgets.HTML()
        """Status line: the result, the path, the times or the error (Python only)."""
        self.stages = ipywidgets.HTML()
        """The shown run's stages: wall time and decisions of each (Python only)."""

        # views
        sched = outcome.scheduled
        self.schedule_view = ScheduleView(
            sched.timeline,
            {sched.allocation.strategy: sched.allocation},
            sched.input.buffers,
            color_by=color_by,
            cursor=0,
        )
        """Timeline and SPM Gantt of the shown result, one time cursor (redrawn in place)."""
        self.sim_figure = go.FigureWidget(_sim_figure(sched))
        """The simulator's run of the shown result (module docstring, redrawn in place)."""
        self.factor_figure = go.FigureWidget(factor_space_figure(self._search))
        """The factor space of the latest search, the shown candidate ringed (in place)."""
        self._bind_clicks()
        self._shown_search: SearchResult | None = self._search
        self._ring(outcome)
        super().__init__(
            children=[
                self.banner,
                self.accordion,
                picker,
                self.stages,
                self.schedule_view,
                self.sim_figure,
                self.factor_figure,
            ],
            **kwargs,
        )
        self.add_class("tx8-group-tuner")
        self._publish(outcome)
        self._sync_controls()
        self.banner.value = (
            f"<b>group %{self.group.id}</b>: {_cycles_text(outcome.scheduled.estimate)}, "
            f"SPM peak {outcome.scheduled.allocation.peak:,} B ({outcome.path}) &middot; "
            "<i>change a knob: only this group is re-estimated</i>"
        )

    # ------------------------------------------------------------ constructors

    @classmethod
    def from_step(
        cls,
        step: Step | Sequence[Step],
        group_id: int | None = None,
        hw: ChipConfig | None = None,
        **kwargs: Any,
    ) -> GroupTuner:
        """A tuner for one group of a group-cost step (default: the costliest).

        Args:
            step: the group-cost step, or a trace that ran it.
            group_id: the group (a top-level ``tx8be.Group`` of the step's output).
            hw: the hardware the run used (default: the run's own); another one is an
                error.
            **kwargs: passed to the constructor (``color_by``, layout).
        """
        who = "GroupTuner.from_step"
        knobs = cost_step(step, who).knobs
        if int(knobs.get("dp", 1)) * int(knobs.get("tp", 1)) > 1:
            raise Tx8labError(
                f"{who}: group-cost ran with dp={knobs['dp']} tp={knobs['tp']}; "
                "the tuner schedules one chip's group: run the pipeline with dp=tp=1"
            )
        rec = recorded_group(step, group_id, hw, who)
        group, hw, sched = rec.group, rec.hw, rec.scheduled
        arts = rec.step.result.artifacts
        return cls(
            group,
            hw,
            knobs={k: knobs[k] for k in TUNER_KNOBS if k in knobs},
            search=arts.get("searches", {}).get(group.id),
            scheduled=sched,
            **kwargs,
        )

    # ------------------------------------------------------------ public API

    @property
    def scheduled(self) -> GroupRun:
        """Every stage's output of the shown result (strategy, input, timeline, ...)."""
        return self._outcome.scheduled

    @property
    def search_result(self) -> SearchResult | None:
        """The latest search (its OK candidates are the picker's choices)."""
        return self._search

    @property
    def hw(self) -> ChipConfig:
        """The hardware of the current state (the base with the hw controls applied)."""
        return self._hw_of(self._state)

    def candidates(self) -> list[Candidate]:
        """The OK candidates of the latest search (what ``strategy`` may force)."""
        if self._search is None:
            return []
        return [c for c in self._search.candidates if c.status == "OK"]

    def get(self, key: str) -> Any:
        """The current value of ``key``."""
        return self._state[self._check_key(key)]

    def set(self, key: str, value: Any) -> dict[str, Any]:
        """Apply one change, re-estimate this group, redraw the views; the record.

        Raises:
            Tx8labError: the key is unknown, the value is rejected, or the group cannot be
                scheduled with it; the change is undone and the last good result stays.
        """
        key = self._check_key(key)
        try:
            new_state = dict(self._state)
            new_state[key] = self._checked(key, value)
            record = self._apply(key, new_state)
        except Tx8labError as err:
            text = str(err)
            self.error = (
                text
                if text.startswith(f"GroupTuner: {key}")
                else f"GroupTuner: {key} = {_show(value)} undone: {text}"
            )
            self.status = "error"
            self.banner.value = f'<span style="color:#b00020">{html.escape(self.error)}</span>'
            self._sync_controls()
            raise Tx8labError(self.error) from err
        self.error = ""
        self.status = "ok"
        self._sync_controls()
        return record

    def update(self, changes: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Apply several changes in order (each re-estimates the group)."""
        return [self.set(key, value) for key, value in changes.items()]

    def timings(self) -> Any:
        """Every applied change with its times, as a pandas DataFrame."""
        import pandas as pd

        rows = [
            {
                "change": f"{r['key']} = {_show(r['value'])}",
                "path": r["path"],
                "cached": r["cached"],
                "cycles": r["cycles"],
                "compute ms": r["compute_ms"],
                "views ms": r["views_ms"],
                "total ms": r["total_ms"],
            }
            for r in self.history
        ]
        return pd.DataFrame(
            rows,
            columns=["change", "path", "cached", "cycles", "compute ms", "views ms", "total ms"],
        )

    def to_html(self, **kwargs: Any) -> str:
        """The settings, the result, the timeline, the Gantt and the factor space as a page."""
        kwargs.setdefault("include_plotlyjs", True)
        rows = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{html.escape(self._label(k, v))}</td></tr>"
            for k, v in self._state.items()
        )
        s = self.scheduled
        parts = [
            f"<h3>group %{self.group.id}: {_cycles_text(s.estimate)}, SPM peak "
            f"{s.allocation.peak:,} B ({html.escape(self.path)})</h3>",
            f"<table border='0'><tr><th>knob</th><th>value</th></tr>{rows}</table>",
            self.stages.value,
        ]
        if self.error:
            parts.append(f"<p style='color:#b00020'>{html.escape(self.error)}</p>")
        figures: list[Any] = [self.schedule_view.timeline_view.figure]
        if self.scheduled.simulated is not None:
            figures.append(self.sim_figure)
        figures += [self.schedule_view.gantt.figure, self.factor_figure]
        for fig in figures:
            parts.append(go.Figure(fig).to_html(full_html=False, **kwargs))
            kwargs["include_plotlyjs"] = False
        title = f"tuning group %{self.group.id}"
        return (
            f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{title}</title>"
            "</head><body>\n" + "\n".join(parts) + "\n</body></html>\n"
        )

    # ------------------------------------------------------------ computing

    def _check_key(self, key: str) -> str:
        if key in self._state:
            return key
        if key in TUNER_KNOBS:
            return PASS_PREFIX + key
        valid = ", ".join(self._state)
        raise Tx8labError(f"GroupTuner: no knob {key!r}; this tuner has: {valid}")

    def _checked(self, key: str, value: Any) -> Any:
        """``value`` for ``key`` as the state holds it, or an error naming the key."""
        if key == STRATEGY:
            if value == AUTO:
                return AUTO
            ok = {c.index for c in self.candidates()}
            if isinstance(value, bool) or not isinstance(value, int) or value not in ok:
                choices = ", ".join(str(i) for i in sorted(ok)) or "none"
                raise Tx8labError(
                    f"GroupTuner: {STRATEGY} = {value!r} is not 'auto' nor an OK candidate of "
                    f"the latest search (indices: {choices})"
                )
            return value
        if key.startswith(HW_PREFIX):
            path = key[len(HW_PREFIX) :]
            if isinstance(value, list):
                value = tuple(value)
            try:
                hw = self.base_hw.with_overrides({path: value})
            except Tx8labError as err:
                raise Tx8labError(f"GroupTuner: {key} = {_show(value)} rejected: {err}") from err
            return hw_value(hw, path)
        return self._specs[key[len(PASS_PREFIX) :]].check(value, key)

    def _hw_of(self, state: Mapping[str, Any]) -> ChipConfig:
        return self.base_hw.with_overrides(
            {k[len(HW_PREFIX) :]: v for k, v in state.items() if k.startswith(HW_PREFIX)}
        )

    def _key(self, state: Mapping[str, Any]) -> tuple[Any, ...]:
        forced = state[STRATEGY] != AUTO
        return (*sorted(state.items()), id(self._search) if forced else None)

    def _knob(self, state: Mapping[str, Any], name: str) -> Any:
        return state[PASS_PREFIX + name]

    def _run_search(self, state: Mapping[str, Any], mode: str) -> SearchResult:
        # group-cost's call: the search allocates with its own seed allocator
        gc = self._pass(state)
        return search_group(
            self.group,
            self._hw_of(state),
            mode=mode,
            budget_s=float(self._knob(state, "search_budget_s")),
            budget=int(self._knob(state, "search_budget")),
            multi_buffer=int(self._knob(state, "multi_buffer")),
            retract=bool(self._knob(state, "retract")),
            timer=gc.timer(),
            simulate_top=max(gc.simulate_top, 1),
            noc=gc.noc,
        )

    def _pass(self, state: Mapping[str, Any]) -> GroupCost:
        """group-cost with this state's knobs (the others at their defaults: one chip)."""
        return GroupCost(**{k: self._knob(state, k) for k in TUNER_KNOBS})

    def _compute(self, state: Mapping[str, Any]) -> _Outcome:
        start = time.perf_counter()
        hw = self._hw_of(state)
        gc = self._pass(state)
        found: SearchResult | None = None
        forced = state[STRATEGY]
        if forced != AUTO:
            cand = next(c for c in self.candidates() if c.index == forced)
            assert cand.strategy is not None
            strategy = dataclasses.replace(cand.strategy, multi_buffer=gc.multi_buffer)
            run = run_group(self.group, strategy, hw, gc.settings(), timer=gc.timer())
            path = f"forced #{forced}"
        else:
            # group-cost's own call: the same strategy choice and stages by construction
            got = gc.schedule_one(self.group, hw)
            run, found, path = got.run, got.search, got.how
        return _Outcome(run, found, path, (time.perf_counter() - start) * 1e3)

    def _apply(self, key: str, new_state: dict[str, Any]) -> dict[str, Any]:
        start = time.perf_counter()
        memo_key = self._key(new_state)
        cached = memo_key in self._memo
        outcome = self._memo[memo_key] if cached else self._compute(new_state)
        computed = time.perf_counter()
        self._memo[memo_key] = outcome
        self._state = new_state
        self._outcome = outcome
        if outcome.search is not None and outcome.search is not self._search:
            self._search = outcome.search
        self._redraw(outcome)
        self._publish(outcome)
        done = time.perf_counter()
        record = {
            "key": key,
            "value": to_jsonable(new_state[key]),
            "path": outcome.path,
            "cached": cached,
            "cycles": int(outcome.scheduled.estimate.cycles),
            "spm_peak_bytes": int(outcome.scheduled.allocation.peak),
            "compute_ms": round((computed - start) * 1e3, 2),
            "views_ms": round((done - computed) * 1e3, 2),
            "total_ms": round((done - start) * 1e3, 2),
        }
        self.history.append(record)
        self.last_update = record
        self.banner.value = (
            f"<b>{html.escape(key)} = {html.escape(self._label(key, new_state[key]))}</b>: "
            f"group %{self.group.id} {record['cycles']:,} cycles, SPM peak "
            f"{record['spm_peak_bytes']:,} B ({html.escape(outcome.path)}"
            f"{', cached' if cached else ''}) &middot; compute {record['compute_ms']:.1f} ms "
            f"&middot; views {record['views_ms']:.1f} ms &middot; total "
            f"{record['total_ms']:.1f} ms"
        )
        return record

    # ------------------------------------------------------------ views

    def _publish(self, outcome: _Outcome) -> None:
        s = outcome.scheduled
        self.stages.value = _stage_table(s)
        firsts = output_ops(self.group)
        first = firsts[0].id if firsts else None
        with self.hold_trait_notifications():
            self.cycles = int(s.estimate.cycles)
            self.spm_peak_bytes = int(s.allocation.peak)
            self.path = outcome.path
            self.split = (
                str(list(s.strategy.ops[first].split))
                if first is not None and first in s.strategy.ops
                else ""
            )

    def _redraw(self, outcome: _Outcome) -> None:
        s = outcome.scheduled
        view = self.schedule_view
        timeline = s.timeline
        cursor = max(-1, min(view.cursor, timeline.steps - 1))
        # the timeline: new data in the same FigureWidget
        tv = view.timeline_view
        tv.timeline = timeline
        _replace_figure(tv.figure, timeline_figure(timeline, color_by=self._color_by))
        tv.steps = timeline.steps
        # the Gantt: the shown allocation, same FigureWidget
        gantt = view.gantt
        gantt._timeline = timeline
        gantt.allocations = {s.allocation.strategy: s.allocation}
        _replace_figure(
            gantt.figure,
            spm_gantt_figure(
                gantt.allocations,
                s.input.buffers,
                timeline=timeline,
                time_axis="cycles" if gantt.time_axis == "cycles" else "steps",
            ),
        )
        gantt.steps = timeline.steps
        view._group_ops = sorted({t.op_id for t in timeline.tasks.values()})
        view.slider.max = timeline.steps - 1
        with view.hold_trait_notifications():
            view.cursor = cursor
        # re-shade the cursor on the new figures and refresh the running tasks
        set_timeline_cursor(tv.figure, timeline, view.cursor)
        set_cursor(
            gantt.figure,
            view.cursor,
            time_axis="cycles" if gantt.time_axis == "cycles" else "steps",
            timeline=timeline,
        )
        view._cursor_changed({"new": view.cursor})
        _replace_figure(self.sim_figure, _sim_figure(s))
        # the factor space: a new search is a new figure; otherwise move the ring
        if self._search is not None and self._search is not self._shown_search:
            _replace_figure(self.factor_figure, factor_space_figure(self._search))
            self._bind_clicks()
            self._shown_search = self._search
            self._refresh_picker()
        self._ring(outcome)

    def _ring(self, outcome: _Outcome) -> None:
        """Ring the shown candidate in the factor space (the best, the default, the forced)."""
        result = self._search
        if result is None:
            return
        forced = self._state[STRATEGY]
        if forced != AUTO:
            index = int(forced)
        elif outcome.search is not None and outcome.search.best is not None:
            index = outcome.search.best.index
        else:
            index = next((c.index for c in result.candidates if c.sharding == "default"), 0)
        with self.factor_figure.batch_update():
            set_selected(self.factor_figure, result, index)

    def _bind_clicks(self) -> None:
        for trace in self.factor_figure.data:
            if (trace.meta or {}).get("role") in ("candidate", "default", "best", "pareto"):
                trace.on_click(self._clicked)

    def _clicked(self, trace: Any, points: Any, _state: Any) -> None:
        for i in points.point_inds:
            with contextlib.suppress(Tx8labError):
                self.set(STRATEGY, int(trace.customdata[i][0]))
            return

    # ------------------------------------------------------------ controls

    def _label(self, key: str, value: Any) -> str:
        if key.startswith(HW_PREFIX):
            return format_hw_value(key[len(HW_PREFIX) :], value)
        if key == STRATEGY and value != AUTO and self._search is not None:
            cand = next((c for c in self._search.candidates if c.index == value), None)
            return _candidate_label(cand) if cand is not None else f"#{value}"
        return _show(value)

    def _picker_options(self) -> list[tuple[str, Any]]:
        mode = str(self._state[PASS_PREFIX + "search"])
        options: list[tuple[str, Any]] = [(f"auto (search={mode})", AUTO)]
        best = self._search.best if self._search is not None else None
        for c in self.candidates():
            star = " (chosen)" if best is not None and c.index == best.index else ""
            options.append((_candidate_label(c) + star, c.index))
        return options

    def _refresh_picker(self) -> None:
        """New candidates: the picker lists them; a forced pick goes back to auto."""
        if self._state[STRATEGY] != AUTO:
            self._state = {**self._state, STRATEGY: AUTO}
        picker = self.controls[STRATEGY]
        self._syncing = True
        try:
            picker.options = self._picker_options()
            picker.value = AUTO
        finally:
            self._syncing = False

    def _make_control(self, key: str, control: ipywidgets.Widget) -> ipywidgets.Widget:
        self.controls[key] = control
        control.observe(functools.partial(self._control_changed, key), names="value")
        return control

    def _sync_controls(self) -> None:
        """Show the state in every control and in ``values``."""
        self._syncing = True
        try:
            for key, control in self.controls.items():
                value = self._state[key]
                if key.startswith(HW_PREFIX):
                    if value not in [v for _, v in control.options]:
                        field = self._hw_fields[key[len(HW_PREFIX) :]]
                        control.options = hw_options(self.base_hw, field, value)
                elif key == STRATEGY:
                    control.options = self._picker_options()
                if control.value != value:
                    control.value = value
            self.values = {k: to_jsonable(v) for k, v in self._state.items()}
        finally:
            self._syncing = False

    def _control_changed(self, key: str, change: Mapping[str, Any]) -> None:
        if self._syncing:
            return
        with contextlib.suppress(Tx8labError):
            self.set(key, change["new"])

    @traitlets.observe("values")
    def _values_changed(self, change: Mapping[str, Any]) -> None:
        if self._syncing:
            return
        current = {k: to_jsonable(v) for k, v in self._state.items()}
        for key, value in dict(change["new"]).items():
            if key not in current:
                self.error = f"GroupTuner: values: no knob {key!r} in this tuner"
                self.status = "error"
                break
            if value != current[key]:
                with contextlib.suppress(Tx8labError):
                    self.set(key, value)
        self._sync_controls()


def _stage_table(run: GroupRun) -> str:
    """The run's stages as an HTML table: what each took and decided (its records)."""
    rows = "".join(
        f"<tr><td>{html.escape(r['stage'])}</td><td style='text-align:right'>"
        f"{r['wall_ms']:.2f}</td><td>{html.escape(r['decisions'])}</td></tr>"
        for r in run.rows()
    )
    return (
        "<table class='tx8-stages'><tr><th>stage</th><th>ms</th><th>decisions</th></tr>"
        f"{rows}</table>"
    )


def _candidate_label(c: Candidate) -> str:
    cost = f"{c.cycles:,} cycles, {c.spm_peak_bytes:,} B" if c.status == "OK" else c.status
    if c.sharding == "default":
        return f"#{c.index} default strategy: {cost}"
    return f"#{c.index} {c.sharding} depth {c.depth}: {cost}"


__all__ = ["TUNER_HW_FIELDS", "TUNER_KNOBS", "GroupTuner"]
