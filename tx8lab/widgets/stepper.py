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
- **Running main.c** (the C tab's "Run main.c" button, :meth:`PassStepper.run_c`): the
  codegen step's input module (scheduled by group-cost, opt-barrier and opt-ddr) goes to
  :func:`~tx8lab.core.execute.execute_module` with ``via="c"`` and the main.c codegen wrote
  (``artifacts["main_c"]``), on the stepper's ``hw``. It runs once: the
  :class:`~tx8lab.core.execute.Execution` is kept and reused until that module or the hw
  changes (a :class:`KnobPanel` swapping the trace or the chip), or ``run_c(rerun=True)``.
  The tab shows the verdict (the first line of ``summary()``, then one line per output)
  and, for the selected group and tile (``c_tile``, a dropdown of the group's
  ``dev_region`` tiles), the executed commands: the rows of ``program.frame(tile)`` of
  that group, the Program the run checked main.c's call trace against command for
  command (a run whose trace differs stops with a ProgramError instead), at most
  :data:`MAX_TRACE_ROWS` of them. Changing the group or the tile redraws the table from
  the kept run. A failed run (no C compiler, a ProgramError naming group, op, buffer and
  step, a crash) is shown in the tab as its message; the button never raises into the
  notebook.
"""

from __future__ import annotations

import contextlib
import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import ipywidgets
import traitlets

from tx8lab.core.execute import Execution, execute_module
from tx8lab.core.ir import Module
from tx8lab.core.passes.base import Pass, Step
from tx8lab.core.program import region_tiles
from tx8lab.core.runner import Explorer, run_pipeline
from tx8lab.errors import ProgramError, Tx8labError
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.presets import resolve_hw
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

#: Rows of executed commands the C tab shows for one group and tile (the rest are counted).
MAX_TRACE_ROWS = 400


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
    c_tile = traitlets.Int(-1).tag(sync=True)
    """Tile whose executed commands of ``c_group`` the C tab shows (-1: none); one of the
    group's region tiles, set by the tile dropdown or Python."""

    def __init__(
        self,
        steps: Sequence[Step],
        *,
        hide_unchanged: bool = True,
        hw: ChipConfig | None = None,
        **kwargs: Any,
    ) -> None:
        """A stepper over ``steps``.

        ``hw``: the chip main.c runs on (the C tab's "Run main.c"); it should be the one
        the trace was run with. None: ``tx8lab.hw.presets.resolve_hw([])`` (the default
        preset, TX81). :meth:`from_module` and :meth:`from_explorer` pass theirs.
        """
        if not steps:
            raise Tx8labError("PassStepper: no steps (run at least one pass)")
        self._steps = list(steps)
        self._hw = hw if hw is not None else resolve_hw([])
        self._diff: GraphDiff | None = None
        # the last run of main.c (or its failure, as HTML), for the module and hw it ran
        self._c_run: tuple[Module, ChipConfig, Execution] | None = None
        self._c_error: tuple[Module, ChipConfig, str] | None = None
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
        self._codegen = self._find_codegen()
        c_texts = self._c_texts()
        self.c_select = ipywidgets.Dropdown(
            options=[(f"%{gid}", gid) for gid in c_texts] or [("no codegen step", -1)],
            description="group",
            style={"description_width": "40px"},
        )
        self.c_tile_select = ipywidgets.Dropdown(
            options=[("no tiles", -1)],
            description="tile",
            style={"description_width": "30px"},
            layout=ipywidgets.Layout(width="140px"),
        )
        self.run_button = ipywidgets.Button(
            description="Run main.c",
            icon="play",
            tooltip="compile main.c with the system C compiler and run it on the host model "
            "of the chip; compare the outputs with the interpreter",
            disabled=self._codegen is None,
        )
        self.c_run_view = ipywidgets.HTML(
            layout=ipywidgets.Layout(max_height="420px", overflow="auto")
        )
        self.c_view = ipywidgets.HTML(layout=ipywidgets.Layout(max_height="520px", overflow="auto"))
        self.c_tab = ipywidgets.VBox(
            [
                ipywidgets.HBox([self.c_select, self.c_tile_select, self.run_button]),
                self.c_run_view,
                self.c_view,
            ]
        )
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
        self.c_tile_select.observe(lambda c: setattr(self, "c_tile", c["new"]), names="value")
        self.run_button.on_click(self._run_clicked)
        self.c_group = next(iter(c_texts), -1)
        if self.c_group == -1:
            self._show_c()
            self._show_c_run()

    # -- construction
    @classmethod
    def from_steps(cls, steps: Iterable[Step], **kwargs: Any) -> PassStepper:
        """A stepper over an executed trace (``list(run_pipeline(...))``)."""
        return cls(list(steps), **kwargs)

    @classmethod
    def from_explorer(cls, explorer: Explorer, **kwargs: Any) -> PassStepper:
        """A stepper over an :class:`~tx8lab.core.runner.Explorer`'s current steps (and its hw)."""
        kwargs.setdefault("hw", explorer.hw)
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
        kwargs.setdefault("hw", hw)
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

    @property
    def hw(self) -> ChipConfig:
        """The chip :meth:`run_c` runs main.c on."""
        return self._hw

    def group_tiles(self, group: int | None = None) -> list[int]:
        """Tile ids of a group's ``dev_region`` (default ``c_group``); [] without one."""
        gid = self.c_group if group is None else group
        if self._codegen is None:
            return []
        op = next((o for o in self._codegen.before.main.ops if o.id == gid), None)
        if op is None or op.kind != "tx8be.Group":
            return []
        return region_tiles(op, self._hw)

    def run_c(self, *, rerun: bool = False) -> Execution:
        """Run main.c once (the C tab's button) and show the result in the C tab.

        The module codegen received runs through ``execute_module(module, hw, via="c")``
        with codegen's main.c; the :class:`~tx8lab.core.execute.Execution` is kept and
        returned again until that module changes (or ``rerun``). A failure is shown in the
        tab and raised.

        Raises:
            Tx8labError: no codegen step, no C compiler, main.c does not compile, the run
                crashed or timed out; a :class:`~tx8lab.errors.ProgramError` when the
                executed program went wrong (its message names group, op, buffer, step).
        """
        self._sync_c()
        codegen = self._codegen
        if codegen is None:
            raise Tx8labError(
                "PassStepper.run_c: this trace has no codegen step, so there is no main.c "
                "to run (run the default pipeline, whose last pass is codegen)"
            )
        module = codegen.before
        if not rerun and self._c_run is not None and self._current(self._c_run):
            return self._c_run[2]
        self._c_error = None
        self.run_button.disabled = True
        self.c_run_view.value = "<p><i>running main.c: compiling and executing ...</i></p>"
        try:
            main_c = codegen.result.artifacts.get("main_c")
            run = execute_module(
                module, self._hw, via="c", main_c=main_c if isinstance(main_c, str) else None
            )
        except Exception as err:
            self._c_error = (module, self._hw, _error_html(err))
            raise
        else:
            self._c_run = (module, self._hw, run)
            return run
        finally:
            self.run_button.disabled = False
            self._show_c_run()

    def c_trace_frame(self, group: int | None = None, tile: int | None = None) -> Any:
        """The executed commands of a group on a tile (defaults: ``c_group``, ``c_tile``).

        A pandas DataFrame (``Program.frame`` columns: tile, index, group, step, engine,
        function, op, iteration, reads, writes, psum), one row per command of
        ``program.group_commands(group, tile)``; the C tab shows it (cut to
        :data:`MAX_TRACE_ROWS`). Runs main.c first if it has not run (:meth:`run_c`).
        """
        run = self.run_c()
        gid = self.c_group if group is None else group
        return _group_frame(run, gid, self.c_tile if tile is None else tile)

    # -- internals
    def _find_codegen(self) -> Step | None:
        return next((s for s in reversed(self._steps) if s.name == "codegen"), None)

    def _sync_c(self) -> None:
        """Follow a swapped trace (a KnobPanel's): new codegen step, new groups in the C tab."""
        codegen, old = self._find_codegen(), self._codegen
        if codegen is old:
            return
        self._codegen = codegen
        if (
            codegen is not None
            and old is not None
            and codegen.before is old.before
            and codegen.result is old.result
        ):
            return  # the same pass run again (an Explorer's cache): the tab stays as it is
        texts = self._c_texts()
        self.run_button.disabled = codegen is None
        keep = self.c_group if self.c_group in texts else next(iter(texts), -1)
        tile = self.c_tile
        self.c_group = -1  # valid whatever the groups; setting ``keep`` then redraws
        self.c_select.options = [(f"%{gid}", gid) for gid in texts] or [("no codegen step", -1)]
        self.c_group = keep
        if tile in self.group_tiles():
            self.c_tile = tile
        if keep == -1:
            self._refresh_c_tiles()
            self._show_c()
            self._show_c_run()

    def _current(self, kept: tuple[Module, ChipConfig, Any]) -> bool:
        """Whether a kept run (or failure) is of the codegen input and hw the tab has now."""
        codegen = self._codegen
        return codegen is not None and kept[0] is codegen.before and kept[1] == self._hw

    def _run_clicked(self, _button: Any) -> None:
        with contextlib.suppress(Exception):  # run_c shows it in the tab; nothing escapes
            self.run_c()

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
        self._refresh_c_tiles()
        self._show_c()
        self._show_c_run()

    def _refresh_c_tiles(self) -> None:
        tiles = self.group_tiles()
        keep = self.c_tile if self.c_tile in tiles else (tiles[0] if tiles else -1)
        self.c_tile = -1  # valid for any group while the options change
        self.c_tile_select.options = [(f"tile {t}", t) for t in tiles] or [("no tiles", -1)]
        self.c_tile = keep
        if self.c_tile_select.value != keep:
            self.c_tile_select.value = keep

    @traitlets.validate("c_tile")
    def _valid_c_tile(self, proposal: Any) -> int:
        value = int(proposal["value"])
        tiles = self.group_tiles()
        if value != -1 and value not in tiles:
            raise traitlets.TraitError(
                f"c_tile {value} is not a tile of group %{self.c_group} (its tiles: {tiles})"
            )
        return value

    @traitlets.observe("c_tile")
    def _c_tile_changed(self, change: Any) -> None:
        if change["new"] != -1 and self.c_tile_select.value != change["new"]:
            self.c_tile_select.value = change["new"]
        self._show_c_run()

    def _show_c_run(self) -> None:
        """The run part of the C tab, from the kept run (never runs main.c)."""
        if self._codegen is None:
            self.c_run_view.value = "<p>Nothing to run: this trace has no codegen step.</p>"
            return
        if self._c_error is not None and self._current(self._c_error):
            self.c_run_view.value = self._c_error[2]
            return
        if self._c_run is None or not self._current(self._c_run):
            self.c_run_view.value = (
                "<p><b>Run main.c</b> compiles the C below with the system C compiler, runs "
                f"every group on the host model of {html.escape(self._hw.name)} and compares "
                "the outputs with the interpreter; then the executed commands of the selected "
                "group and tile show here.</p>"
            )
            return
        run = self._c_run[2]
        lines = run.summary().splitlines()
        verdict = (
            f"<p class='verdict {'ok' if run.ok else 'differ'}'><b>{html.escape(lines[0])}</b></p>"
        )
        if len(lines) > 1:
            verdict += f"<pre>{html.escape(chr(10).join(lines[1:]))}</pre>"
        gid, tile = self.c_group, self.c_tile
        if gid == -1 or tile == -1:
            self.c_run_view.value = _TABLE_CSS + verdict
            return
        frame = _group_frame(run, gid, tile)
        calls = sum(1 for e in run.trace if e.tile == tile and e.group == gid)
        shown = frame.head(MAX_TRACE_ROWS)
        cut = len(frame) - len(shown)
        table = (
            f"<div>group %{gid} on tile {tile}: {len(frame)} commands executed "
            f"({calls} calls in main.c's trace)</div>"
            + shown.to_html(index=False, escape=True, border=0)
            + (f"<div>{cut} more commands not shown</div>" if cut else "")
        )
        self.c_run_view.value = _TABLE_CSS + verdict + table

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
        self._sync_c()  # a swapped trace (a KnobPanel's) may bring a new codegen step
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


def _group_frame(run: Execution, group: int, tile: int) -> Any:
    """``run.program.frame(tile)``'s rows of one group, numbered from 0."""
    frame = run.program.frame(tile=tile)
    if frame.empty:
        return frame
    return frame[frame["group"] == group].reset_index(drop=True)


def _error_html(err: BaseException) -> str:
    """A failed run as the C tab shows it: a heading and the message as it is."""
    if isinstance(err, ProgramError):
        head = "main.c ran, and the executed program went wrong:"
    elif isinstance(err, Tx8labError):
        head = "main.c could not be run:"
    else:
        head = f"running main.c failed unexpectedly ({type(err).__name__}):"
    return (
        f"<div class='run-error'><b>{html.escape(head)}</b><pre>{html.escape(str(err))}</pre></div>"
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


__all__ = ["MAX_TRACE_ROWS", "PassStepper"]
