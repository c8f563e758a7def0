"""PassStepper: walk a pipeline trace pass by pass and see what each pass changed and why.

Spec: STYLE.md (Compiler Explorer's opt-pipeline view: a pass list that
can hide passes which changed nothing, a before/after diff per pass). A plain ipywidgets
box: a slider over the passes, a toggle, a header with the pass's wall time, knobs, pass
spec and stats, and three tabs: the IR text diff, the graph diff (a :class:`GraphView` of the
output, ops marked added / changed and removed ones drawn dashed) and the Decisions table.

Readings chosen:

- ``index`` is the position of the shown step in the trace (``Step.index`` for a full
  pipeline run). Set to a hidden or out-of-range step (from Python, or ``set_state`` as a
  browser would), it is clamped to the nearest shown step, later ones first.
- With ``hide_unchanged`` on and no pass changing anything, every step stays shown
  (an empty slider explains nothing).
- The graph diff opens with the ``diff`` overlay (added green, changed orange, removed red,
  same grey); its menu switches to alignment, group ... without a new layout.
- Everything shown is computed only for the selected step, when it is selected.
- **C tab** (the emitted main.c): when the trace has a ``codegen`` step, a dropdown picks a group
  (``c_group``) and the tab shows that group's IR (as the codegen step saw it) beside its
  C (``artifacts["c"]``); whichever pass is selected, the C is the one codegen wrote.
  Without a codegen step the tab says so.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import ipywidgets
import traitlets

from tx8lab.core.ir import Module
from tx8lab.core.passes.base import Pass, Step
from tx8lab.core.runner import Explorer, run_pipeline
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig
from tx8lab.widgets.diff import (
    GraphDiff,
    decisions_frame,
    diff_overlay,
    graph_diff,
    ir_diff_html,
)
from tx8lab.widgets.graph_view import GraphView
from tx8lab.widgets.report_html import ir_beside_c_html

_TABLE_CSS = """<style>
.tx8-steps table {border-collapse: collapse; font-size: 12px}
.tx8-steps th, .tx8-steps td {text-align: left; padding: 1px 6px; border-bottom: 1px solid #eee}
</style>"""


class PassStepper(ipywidgets.VBox):  # type: ignore[misc]
    """A slider over a pipeline's steps; IR diff, graph diff and decisions of the selected one."""

    index = traitlets.Int(0).tag(sync=True)
    """Position of the shown step in the trace; set by the slider or Python (clamped)."""
    selected_pass = traitlets.Unicode("").tag(sync=True)
    """Name of the shown pass (set by Python from ``index``; tests read it)."""
    selected_spec = traitlets.Unicode("").tag(sync=True)
    """Pass-pipeline text of the shown pass with its knobs, ``dce{recurse_groups=false}``
    (set by Python from ``index``; ``tx8lab opt -p`` re-runs it)."""
    hide_unchanged = traitlets.Bool(True).tag(sync=True)
    """Hide passes whose output equals their input (the toggle)."""
    visible = traitlets.List(traitlets.Int()).tag(sync=True)
    """Positions the slider offers (set by Python from ``hide_unchanged``)."""
    diff_summary = traitlets.Dict().tag(sync=True)
    """Counts of ops added / removed / changed by the shown pass (set by Python)."""
    c_group = traitlets.Int(-1).tag(sync=True)
    """Group whose IR and C the C tab shows (-1: none); set by the dropdown or Python."""

    def __init__(
        self, steps: Sequence[Step], *, hide_unchanged: bool = True, **kwargs: Any
    ) -> None:
        if not steps:
            raise Tx8labError("PassStepper: no steps (run at least one pass)")
        self._steps = list(steps)
        self._diff: GraphDiff | None = None
        self.slider = ipywidgets.SelectionSlider(
            options=[("", 0)],
            description="pass",
            continuous_update=False,
            layout=ipywidgets.Layout(width="100%"),
            style={"description_width": "40px"},
        )
        self.toggle = ipywidgets.Checkbox(
            value=hide_unchanged, description="hide passes that changed nothing", indent=False
        )
        self.header = ipywidgets.HTML()
        self.ir_diff = ipywidgets.HTML(
            layout=ipywidgets.Layout(max_height="520px", overflow="auto")
        )
        self.decisions = ipywidgets.HTML(
            layout=ipywidgets.Layout(max_height="520px", overflow="auto")
        )
        first = self._steps[0]
        start = diff_overlay(graph_diff(first.before, first.after), first.after)
        self.graph = GraphView(first.after, overlay=start, height="480px")
        self._codegen = next((s for s in reversed(self._steps) if s.name == "codegen"), None)
        c_texts = self._c_texts()
        self.c_select = ipywidgets.Dropdown(
            options=[(f"%{gid}", gid) for gid in c_texts] or [("no codegen step", -1)],
            description="group",
            style={"description_width": "40px"},
        )
        self.c_view = ipywidgets.HTML(layout=ipywidgets.Layout(max_height="520px", overflow="auto"))
        self.c_tab = ipywidgets.VBox([self.c_select, self.c_view])
        self.tabs = ipywidgets.Tab(children=[self.ir_diff, self.graph, self.decisions, self.c_tab])
        for i, title in enumerate(("IR diff", "graph diff", "decisions", "C")):
            self.tabs.set_title(i, title)
        super().__init__(
            children=[ipywidgets.HBox([self.slider, self.toggle]), self.header, self.tabs],
            **kwargs,
        )
        self.add_class("tx8-steps")
        self.slider.observe(self._slider_moved, names="value")
        self.toggle.observe(lambda c: setattr(self, "hide_unchanged", c["new"]), names="value")
        with self.hold_trait_notifications():
            self.hide_unchanged = hide_unchanged
        self._refresh_visible()
        self._show()
        self.c_select.observe(lambda c: setattr(self, "c_group", c["new"]), names="value")
        self.c_group = next(iter(c_texts), -1)
        if self.c_group == -1:
            self._show_c()

    # -- construction
    @classmethod
    def from_steps(cls, steps: Iterable[Step], **kwargs: Any) -> PassStepper:
        """A stepper over an executed trace (``list(run_pipeline(...))``)."""
        return cls(list(steps), **kwargs)

    @classmethod
    def from_explorer(cls, explorer: Explorer, **kwargs: Any) -> PassStepper:
        """A stepper over an :class:`~tx8lab.core.runner.Explorer`'s current steps."""
        return cls(explorer.steps, **kwargs)

    @classmethod
    def from_module(
        cls,
        module: Module,
        hw: ChipConfig,
        pipeline: Iterable[Pass | str] | None = None,
        knobs: Mapping[str, Any] | Iterable[str] | None = None,
        **kwargs: Any,
    ) -> PassStepper:
        """Run ``pipeline`` (default: the default pipeline) on ``module`` and step through it."""
        if pipeline is None:
            from tx8lab.core.passes import build_pipeline

            pipeline = build_pipeline()
        return cls(list(run_pipeline(module, pipeline, hw, knobs)), **kwargs)

    # -- public API
    @property
    def steps(self) -> list[Step]:
        """The trace."""
        return list(self._steps)

    @property
    def step(self) -> Step:
        """The step shown."""
        return self._steps[self.index]

    @property
    def diff(self) -> GraphDiff:
        """Graph diff of the step shown."""
        if self._diff is None:
            self._diff = graph_diff(self.step.before, self.step.after)
        return self._diff

    def decisions_table(self) -> Any:
        """The shown step's decisions as a pandas DataFrame."""
        return decisions_frame(self.step.decisions)

    def select(self, name: str) -> None:
        """Show the first step of the pass called ``name`` (shown even if unchanged)."""
        for i, s in enumerate(self._steps):
            if s.name == name:
                if i not in self.visible:
                    self.hide_unchanged = False
                self.index = i
                return
        names = ", ".join(s.name for s in self._steps)
        raise Tx8labError(f"PassStepper.select: no step named {name!r} (steps: {names})")

    def group_c(self) -> str:
        """The C text of ``c_group`` ("" without a codegen step or group)."""
        return self._c_texts().get(self.c_group, "")

    # -- internals
    def _c_texts(self) -> Mapping[int, str]:
        if self._codegen is None:
            return {}
        texts: Mapping[int, str] = self._codegen.result.artifacts.get("c", {})
        return texts

    @traitlets.validate("c_group")
    def _valid_c_group(self, proposal: Any) -> int:
        value = int(proposal["value"])
        texts = self._c_texts()
        if value != -1 and value not in texts:
            known = ", ".join(f"%{g}" for g in texts) or "none (no codegen step)"
            raise traitlets.TraitError(f"c_group %{value} has no C; groups with C: {known}")
        return value

    @traitlets.observe("c_group")
    def _c_group_changed(self, change: Any) -> None:
        if change["new"] != -1 and self.c_select.value != change["new"]:
            self.c_select.value = change["new"]
        self._show_c()

    def _show_c(self) -> None:
        if self._codegen is None or self.c_group == -1:
            self.c_view.value = (
                "<p>No C: this trace has no codegen step (run the default pipeline, whose "
                "last pass is codegen).</p>"
            )
            return
        from tx8lab.core.codegen import group_ir_text

        ir = group_ir_text(self._codegen.after, self.c_group)
        self.c_view.value = ir_beside_c_html(ir, self.group_c())

    def _refresh_visible(self) -> None:
        shown = [i for i, s in enumerate(self._steps) if s.changed or not self.hide_unchanged]
        self.visible = shown or list(range(len(self._steps)))
        options = [(f"{i}: {self._steps[i].name}", i) for i in self.visible]
        self.slider.unobserve(self._slider_moved, names="value")
        try:
            self.slider.options = options
            clamped = self._clamp(self.index)
            self.slider.value = clamped
        finally:
            self.slider.observe(self._slider_moved, names="value")
        if clamped != self.index:
            self.index = clamped

    def _clamp(self, value: int) -> int:
        shown = self.visible
        later = [i for i in shown if i >= value]
        if later:
            return later[0]
        return shown[-1]

    def _slider_moved(self, change: Any) -> None:
        self.index = int(change["new"])

    @traitlets.validate("index")
    def _valid_index(self, proposal: Any) -> int:
        value = int(proposal["value"])
        return self._clamp(value) if self.visible else max(0, min(value, len(self._steps) - 1))

    @traitlets.observe("index")
    def _index_changed(self, change: Any) -> None:
        if self.slider.value != change["new"]:
            self.slider.value = change["new"]
        self._show()

    @traitlets.observe("hide_unchanged")
    def _toggle_changed(self, change: Any) -> None:
        if self.toggle.value != change["new"]:
            self.toggle.value = change["new"]
        if self.visible:
            self._refresh_visible()

    def _show(self) -> None:
        step = self.step
        self._diff = None
        diff = self.diff
        self.selected_pass = step.name
        self.selected_spec = step.pass_.spec()
        self.diff_summary = diff.summary()
        self.header.value = _TABLE_CSS + _header_html(step, len(self._steps), diff)
        self.ir_diff.value = ir_diff_html(step.before, step.after)
        frame = self.decisions_table()
        self.decisions.value = (
            _TABLE_CSS
            + f"<div>{len(frame)} decisions</div>"
            + frame.to_html(index=False, max_rows=400, escape=True, border=0)
        )
        self.tabs.set_title(2, f"decisions ({len(frame)})")
        self.graph.set_module(
            step.after,
            decisions=step.decisions,
            marks=diff.marks,
            ghost=step.before if diff.removed else None,
            title=f"after {step.name}",
            overlays={"diff": diff_overlay(diff, step.after)},
        )


def _header_html(step: Step, total: int, diff: GraphDiff) -> str:
    counts = diff.summary()
    ms = step.elapsed_s * 1e3
    head = (
        f"<b>step {step.index + 1}/{total}: {html.escape(step.name)}</b> "
        f"— {html.escape(step.pass_.summary)}<br>"
        f"wall time {ms:.2f} ms{' (cached)' if step.cached else ''} · ops "
        f"{step.num_ops_before} → {step.num_ops_after} · "
        f"{'changed' if step.changed else 'changed nothing'} · "
        f"{counts['added']} added, {counts['removed']} removed, {counts['changed']} changed"
    )
    knobs = ", ".join(f"{k}={v}" for k, v in step.knobs.items())
    spec = step.pass_.spec()
    head += f"<br>spec: <code title='tx8lab opt FILE -p {html.escape(repr(spec))}'>"
    head += f"{html.escape(spec)}</code>"
    rows = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in step.stats.items()
    )
    stats = f"<table><tr><th>stat</th><th>value</th></tr>{rows}</table>" if rows else ""
    return head + (f"<br>knobs: {html.escape(knobs)}" if knobs else "") + stats


__all__ = ["PassStepper"]
