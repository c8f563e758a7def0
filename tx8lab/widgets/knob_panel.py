"""KnobPanel: controls for a pipeline's pass knobs and the hardware preset, linked to views.

Spec: knobs as sliders, and shared/reference/anchors-mission.md (9: "sliders re-run only
downstream passes (cached), with a visible latency budget"). Every control is generated:
one per :class:`~tx8lab.core.passes.base.Knob` of each pass in the pipeline (its type,
choices and bounds) and one per chosen field of the
:class:`~tx8lab.hw.config.ChipConfig` / :class:`~tx8lab.hw.config.TileConfig` (by the
field's type). A change goes through the :class:`~tx8lab.core.runner.Explorer`, which
re-runs only the passes whose input or knobs changed, then every linked view is updated
(a :class:`GraphView`, a :class:`PassStepper`, or any function of the Explorer). The
panel shows which passes ran again, which came from the cache, and the measured times.

Readings chosen:

- **Keys.** A pass knob is ``"<pass>.<knob>"`` as ``tx8lab run --set`` writes it
  (``group.strategy``); a hardware field is ``"hw.<dotted path>"`` as ``--hw`` writes it
  behind ``hw.`` (``hw.tile.spm_bytes``, ``hw.mesh_shape``). ``values`` holds every
  control's value under its key, as JSON.
- **Control per knob type.** ``bool``: a checkbox; choices (a ``Literal`` or ``choices=``)
  or an ``Enum``: a menu; ``int`` with both bounds: a slider; other numbers: a number box
  bounded by the knob's ``min``/``max``; ``str``: a text box applied on Enter.
- **Hardware numbers** get a slider over the preset's value times 1/8 ... 8, keeping only
  the values the config accepts (whole numbers for int fields, at most 1 for
  ``ddr_efficiency``), labelled with their unit; a tuple field (``mesh_shape``) gets a menu
  of shapes (each dimension times 1/4 ... 2). Any other value goes through
  ``set("hw.tile.spm_bytes", "2MiB")``, parsed as ``--hw`` parses it, and joins the slider.
  The fields shown are :data:`HW_FIELDS` (tile count/mesh, SPM, DDR, NoC and DMA
  bandwidths, clocks); ``hw_fields="all"`` shows every numeric field.
- **A hardware change re-runs every pass**: each pass receives the ChipConfig, and the
  Explorer's cache key holds the whole config (no pass declares which fields it reads).
- **A change that fails** (a value the knob or the config rejects, or a pass that rejects
  the new setting) is undone: the Explorer, the control and ``values`` go back to the old
  value, ``error`` says what failed, and the views keep the last good result. ``set``
  raises the error; a control or ``set_state`` only shows it.
- **Timing.** Each update records ``pipeline_ms`` (getting ``Explorer.steps``),
  ``views_ms`` (every linked view), ``total_ms``, the passes that ran (``reran``) and those
  taken from the cache (``cached``) in ``last_update``; ``history`` keeps them all and
  :meth:`KnobPanel.timings` gives them as a DataFrame.
- A view whose input is unchanged (the same step results, by identity: cache hits are the
  same objects) is not redrawn.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import enum
import functools
import html
import inspect
import itertools
import textwrap
import time
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import ipywidgets
import traitlets

from tx8lab.core.ir import Module
from tx8lab.core.passes import resolve_passes
from tx8lab.core.passes.base import Knob, Pass, PassResult, Step
from tx8lab.core.report import to_jsonable
from tx8lab.core.runner import Explorer
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig, TileConfig
from tx8lab.widgets.graph_view import GraphView
from tx8lab.widgets.stepper import PassStepper

#: Hardware fields the panel shows by default (dotted paths, as ``--hw`` names them).
HW_FIELDS: tuple[str, ...] = (
    "mesh_shape",
    "num_chips",
    "tile.spm_bytes",
    "ddr_bytes_per_s",
    "ddr_efficiency",
    "noc_link_bytes_per_s",
    "tile.rdma_bytes_per_s",
    "tile.wdma_bytes_per_s",
    "clock_hz",
    "noc_clock_hz",
)

#: Multiples of the preset value a hardware slider offers.
HW_SCALES: tuple[float, ...] = (1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8)

#: Multiples of each dimension a tuple field's menu offers.
SHAPE_SCALES: tuple[float, ...] = (1 / 4, 1 / 2, 1, 2)

HW_PREFIX = "hw."

# Step.changed values a stepper link remembers (about two pipelines' worth per setting).
_CHANGED_MEMO = 512

# JavaScript numbers are exact up to 2**53: the bound of an unbounded int box.
_JS_INT_MAX = 2**53 - 1

_DESCRIPTION = {"description_width": "190px"}
_ROW = ipywidgets.Layout(width="460px")

View = GraphView | PassStepper | Callable[[Explorer], Any]


@dataclass(frozen=True)
class HwField:
    """A numeric or tuple field of the chip description, as the panel shows it."""

    path: str
    """Dotted path: ``tile.spm_bytes``, ``mesh_shape``."""
    type: Any
    """The field's annotation: ``int``, ``float`` or ``tuple[int, ...]``."""
    help: str
    """The field's attribute docstring (its unit and meaning)."""


# --------------------------------------------------------------------------- hardware fields


@functools.cache
def _field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings of a dataclass (the string right after each annotated field)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):  # pragma: no cover - source always ships
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for first, second in itertools.pairwise(body):
        if (
            isinstance(first, ast.AnnAssign)
            and isinstance(first.target, ast.Name)
            and isinstance(second, ast.Expr)
            and isinstance(second.value, ast.Constant)
            and isinstance(second.value.value, str)
        ):
            docs[first.target.id] = " ".join(second.value.value.split())
    return docs


def hw_fields(which: Sequence[str] | Literal["all"] = HW_FIELDS) -> tuple[HwField, ...]:
    """The chip fields a panel shows: numeric and tuple fields of ChipConfig and TileConfig.

    Examples:
        >>> [f.path for f in hw_fields(["tile.spm_bytes", "mesh_shape"])]
        ['tile.spm_bytes', 'mesh_shape']
        >>> hw_fields(["tile.spm"])
        Traceback (most recent call last):
        ...
        tx8lab.errors.Tx8labError: unknown hw field 'tile.spm' (did you mean 'tile.spm_bytes'?)
    """
    every: dict[str, HwField] = {}
    for cls, prefix in ((ChipConfig, ""), (TileConfig, "tile.")):
        hints = typing.get_type_hints(cls)
        docs = _field_docs(cls)
        for f in dataclasses.fields(cls):
            kind = hints[f.name]
            if kind in (int, float) or typing.get_origin(kind) is tuple:
                every[prefix + f.name] = HwField(prefix + f.name, kind, docs.get(f.name, ""))
    if which == "all":
        return tuple(every.values())
    out = []
    for path in which:
        if path not in every:
            import difflib

            close = difflib.get_close_matches(path, list(every), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise Tx8labError(f"unknown hw field {path!r}{hint}")
        out.append(every[path])
    return tuple(out)


def hw_value(hw: ChipConfig, path: str) -> Any:
    """The value of the field at dotted ``path`` (``tile.spm_bytes``)."""
    value: Any = hw
    for part in path.split("."):
        value = getattr(value, part)
    return value


def format_hw_value(path: str, value: Any) -> str:
    """``value`` with the unit its field name gives (``_bytes``, ``_bytes_per_s``, ``_hz``).

    Examples:
        >>> format_hw_value("tile.spm_bytes", 3 * 2**20)
        '3 MiB'
        >>> format_hw_value("ddr_bytes_per_s", 150e9), format_hw_value("clock_hz", 1.2e9)
        ('150 GB/s', '1.2 GHz')
        >>> format_hw_value("mesh_shape", (4, 4)), format_hw_value("ddr_efficiency", 0.75)
        ('4x4', '0.75')
    """
    name = path.rsplit(".", 1)[-1]
    if isinstance(value, tuple | list):
        return "x".join(str(v) for v in value)
    if name.endswith("_bytes_per_s"):
        return _scaled(value, 1000, ("B/s", "kB/s", "MB/s", "GB/s", "TB/s"))
    if name.endswith("_bytes"):
        return _scaled(value, 1024, ("B", "KiB", "MiB", "GiB", "TiB"))
    if name.endswith("_hz"):
        return _scaled(value, 1000, ("Hz", "kHz", "MHz", "GHz"))
    if name.endswith("_per_s"):
        return _scaled(value, 1000, ("/s", "k/s", "M/s", "G/s", "T/s", "P/s"))
    if name.endswith("_s") and isinstance(value, float):
        for unit, factor in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
            if abs(value) >= factor:
                return f"{value / factor:.4g} {unit}"
        return f"{value / 1e-12:.4g} ps"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _scaled(value: float, base: int, units: Sequence[str]) -> str:
    index = 0
    while index + 1 < len(units) and abs(value) >= base ** (index + 1):
        index += 1
    return f"{value / base**index:.4g} {units[index]}"


def hw_options(base: ChipConfig, field: HwField, current: Any = None) -> list[tuple[str, Any]]:
    """``(label, value)`` choices for a hardware control: multiples of ``base``'s value.

    Only values the config accepts are kept (tried with ``with_overrides``); ``current``
    joins them when it is not one of the multiples.

    Examples:
        >>> from tx8lab.hw import TX81
        >>> [label for label, _ in hw_options(TX81, hw_fields(["num_chips"])[0])]
        ['1', '2', '4', '8']
    """
    start = hw_value(base, field.path)
    candidates: list[Any]
    if isinstance(start, tuple):
        grids: list[list[int]] = [
            sorted({round(d * s) for s in SHAPE_SCALES if float(d * s).is_integer() and d * s >= 1})
            for d in start
        ]
        candidates = [tuple(c) for c in _product(grids)]
    elif isinstance(start, int):
        candidates = sorted({int(start * s) for s in HW_SCALES if float(start * s).is_integer()})
    else:
        candidates = sorted({start * s for s in HW_SCALES})
    if current is not None and current not in candidates:
        candidates = sorted([*candidates, current])
    out = []
    for value in candidates:
        try:
            base.with_overrides({field.path: value})
        except Tx8labError:
            continue
        out.append((format_hw_value(field.path, value), value))
    return out


def _product(grids: Sequence[Sequence[int]]) -> list[list[int]]:
    rows: list[list[int]] = [[]]
    for grid in grids:
        rows = [[*row, value] for row in rows for value in grid]
    return rows


# --------------------------------------------------------------------------- links


class _Link:
    """Keeps one view showing an Explorer's current result."""

    def __init__(self, view: Any) -> None:
        self.view = view
        self._shown: tuple[int, ...] = ()

    def update(self, explorer: Explorer) -> bool:
        """Redraw when the step results changed; returns whether it redrew."""
        steps = explorer.steps
        key = tuple(id(s.result) for s in steps) + tuple(id(s.before) for s in steps[:1])
        if key == self._shown:
            return False
        self._draw(explorer, steps)
        self._shown = key
        return True

    def mark_shown(self, explorer: Explorer) -> None:
        """Record that the view already shows the Explorer's current steps."""
        steps = explorer.steps
        self._shown = tuple(id(s.result) for s in steps) + tuple(id(s.before) for s in steps[:1])

    def _draw(self, explorer: Explorer, steps: list[Step]) -> None:
        raise NotImplementedError


class _GraphLink(_Link):
    def _draw(self, explorer: Explorer, steps: list[Step]) -> None:
        view: GraphView = self.view
        view.set_module(explorer.final, decisions=[d for s in steps for d in s.decisions])


class _StepperLink(_Link):
    def __init__(self, view: Any) -> None:
        super().__init__(view)
        # (input, result) -> Step.changed, for results the Explorer took from its cache:
        # it makes new Step objects each time, and ``changed`` may print both modules.
        self._changed: dict[tuple[int, int], tuple[Module, PassResult, bool]] = {}

    def _remember_changed(self, steps: Sequence[Step]) -> None:
        for step in steps:
            key = (id(step.before), id(step.result))
            known = self._changed.get(key)
            if known is not None and known[0] is step.before and known[1] is step.result:
                # ``changed`` is a functools.cached_property: its value lives in __dict__
                step.__dict__.setdefault("changed", known[2])
            else:
                self._changed[key] = (step.before, step.result, step.changed)
        while len(self._changed) > _CHANGED_MEMO:
            self._changed.pop(next(iter(self._changed)))

    def _draw(self, explorer: Explorer, steps: list[Step]) -> None:
        self._remember_changed(self.view.steps)
        self._remember_changed(steps)
        # PassStepper keeps its trace in ``_steps``; swap it and redraw the shown step
        # (``_refresh_visible`` redraws by itself when the shown index moves). The shown
        # step is redrawn only when its input or result changed: a knob of a later pass
        # leaves it as it was.
        stepper: PassStepper = self.view
        index = stepper.index
        old = stepper._steps[index] if index < len(stepper._steps) else None
        stepper._steps = list(steps)
        stepper._hw = explorer.hw  # the chip "Run main.c" runs on
        stepper._refresh_visible()
        if stepper.index != index:
            return
        new = steps[index] if index < len(steps) else None
        if (
            old is None
            or new is None
            or old.result is not new.result
            or old.before is not new.before
        ):
            stepper._show()


class _CallLink(_Link):
    def _draw(self, explorer: Explorer, steps: list[Step]) -> None:
        self.view(explorer)


def _link_for(view: View) -> _Link:
    if isinstance(view, GraphView):
        return _GraphLink(view)
    if isinstance(view, PassStepper):
        return _StepperLink(view)
    if callable(view):
        return _CallLink(view)
    raise Tx8labError(
        f"KnobPanel.link: cannot update a {type(view).__name__}; link a GraphView, a "
        "PassStepper or a function taking the Explorer"
    )


# --------------------------------------------------------------------------- the panel


class KnobPanel(ipywidgets.VBox):  # type: ignore[misc]
    """Generated controls for pass knobs and hardware fields; a change re-runs and redraws."""

    values = traitlets.Dict().tag(sync=True)
    """Every control's value by key (``group.strategy``, ``hw.tile.spm_bytes``) as JSON.
    Set by the panel, by Python or by the browser (``set_state``): a change is applied."""
    last_update = traitlets.Dict().tag(sync=True)
    """The last change (set by Python): key, value, reran and cached (pass names),
    pipeline_ms, views_ms, total_ms, and views (per view: name, redrawn, ms)."""
    error = traitlets.Unicode("").tag(sync=True)
    """Why the last change was undone ("" when it worked); set by Python."""

    def __init__(
        self,
        explorer: Explorer,
        views: Iterable[View] = (),
        *,
        passes: Iterable[str] | None = None,
        hw_fields: Sequence[str] | Literal["all"] = HW_FIELDS,
        **kwargs: Any,
    ) -> None:
        self.explorer = explorer
        """The pipeline the controls drive (its knobs and hw are the panel's state)."""
        self.history: list[dict[str, Any]] = []
        """Every applied change, as ``last_update`` records it (Python only)."""
        self._links: list[_Link] = []
        self._base_hw = explorer.hw
        self._hw_fields = {f.path: f for f in _resolve_hw_fields(hw_fields)}
        self._knobs: dict[str, Knob] = {}
        self._syncing = False
        self.controls: dict[str, ipywidgets.Widget] = {}
        """Key -> the control widget (tests set their state as the browser does)."""
        wanted = None if passes is None else set(passes)
        known = {p.name for p in explorer.passes}
        if wanted is not None and wanted - known:
            missing = ", ".join(sorted(wanted - known))
            raise Tx8labError(
                f"KnobPanel: passes {missing} are not in the pipeline ({', '.join(known)})"
            )
        titles: list[str] = []
        sections: list[ipywidgets.Widget] = []
        seen: set[str] = set()
        for p in explorer.passes:
            if p.name in seen or not p.knobs() or (wanted is not None and p.name not in wanted):
                continue
            seen.add(p.name)
            rows = []
            for spec in p.knobs():
                key = f"{p.name}.{spec.name}"
                self._knobs[key] = spec
                rows.append(self._make_control(key, knob_control(spec, getattr(p, spec.name))))
            titles.append(p.name)
            sections.append(ipywidgets.VBox(rows))
        if self._hw_fields:
            rows = []
            for path, hw_field in self._hw_fields.items():
                current = hw_value(explorer.hw, path)
                control = hw_control(hw_field, hw_options(self._base_hw, hw_field, current))
                control.value = current
                rows.append(self._make_control(HW_PREFIX + path, control))
            titles.append(f"hardware ({explorer.hw.name})")
            sections.append(ipywidgets.VBox(rows))
        self.accordion = ipywidgets.Accordion(children=sections, titles=tuple(titles))
        self.status = ipywidgets.HTML()
        super().__init__(children=[self.status, self.accordion], **kwargs)
        self.add_class("tx8-knobs")
        self._syncing = True
        try:
            self.values = self._current_values()
        finally:
            self._syncing = False
        self.status.value = "<i>change a knob: only the passes after it run again</i>"
        # run the pipeline once now, so that a change measures only what it re-runs
        _ = explorer.steps
        for view in views:
            self.link(view)

    # -- construction
    @classmethod
    def from_explorer(cls, explorer: Explorer, **kwargs: Any) -> KnobPanel:
        """A panel over an existing Explorer (keyword arguments as for the constructor)."""
        return cls(explorer, **kwargs)

    @classmethod
    def from_module(
        cls,
        module: Module,
        hw: ChipConfig,
        pipeline: Iterable[Pass | str] | None = None,
        knobs: Mapping[str, Any] | Iterable[str] | None = None,
        **kwargs: Any,
    ) -> KnobPanel:
        """A panel over a new Explorer of ``pipeline`` (default: the default pipeline)."""
        if pipeline is None:
            from tx8lab.core.passes import build_pipeline

            pipeline = build_pipeline()
        return cls(Explorer(module, resolve_passes(pipeline, knobs), hw), **kwargs)

    # -- public API
    @property
    def views(self) -> list[Any]:
        """The linked views."""
        return [link.view for link in self._links]

    def link(self, view: View) -> View:
        """Keep ``view`` up to date with the pipeline; returns it (for a notebook cell).

        A GraphView shows the final module with every step's decisions; a PassStepper the
        trace; a function is called with the Explorer after every change.
        """
        link = _link_for(view)
        shown = self.explorer.steps
        if (isinstance(view, GraphView) and view.module is self.explorer.final) or (
            isinstance(view, PassStepper) and _same_results(view.steps, shown)
        ):
            link.mark_shown(self.explorer)
        else:
            link.update(self.explorer)
        self._links.append(link)
        return view

    def unlink(self, view: Any) -> None:
        """Stop updating ``view``."""
        self._links = [link for link in self._links if link.view is not view]

    def get(self, key: str) -> Any:
        """The current value of ``key`` (a knob value, or a hw field's value)."""
        if key.startswith(HW_PREFIX):
            return hw_value(self.explorer.hw, _hw_path(key))
        return self.explorer.knobs()[self._check_key(key)]

    def set(self, key: str, value: Any) -> dict[str, Any]:
        """Apply one change, re-run what it invalidates, update the views; the record.

        Raises:
            Tx8labError: the key is unknown, the value is rejected, or a pass fails with
                it; the change is undone first.
        """
        old = self.get(key)
        try:
            self._apply(key, value)
            record = self._refresh(key)
        except Tx8labError as err:
            self._apply(key, old)
            with contextlib.suppress(Tx8labError):
                self._refresh_views_only()
            self.error = f"{key} = {_show(value)} undone: {err}"
            self.status.value = f'<span style="color:#b00020">{html.escape(self.error)}</span>'
            self._sync_controls()
            raise
        self.error = ""
        self._sync_controls()
        return record

    def update(self, changes: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Apply several changes in order (each re-runs what it invalidates)."""
        return [self.set(key, value) for key, value in changes.items()]

    def timings(self) -> Any:
        """Every applied change with its times, as a pandas DataFrame."""
        import pandas as pd

        rows = [
            {
                "change": f"{r['key']} = {_show(r['value'])}",
                "passes re-run": len(r["reran"]),
                "from cache": len(r["cached"]),
                "pipeline ms": r["pipeline_ms"],
                "views ms": r["views_ms"],
                "total ms": r["total_ms"],
            }
            for r in self.history
        ]
        return pd.DataFrame(rows)

    # -- internals
    def _check_key(self, key: str) -> str:
        if key in self._knobs or key in self.explorer.knobs():
            return key
        if key.startswith(HW_PREFIX):
            return key
        valid = ", ".join(self.controls) or "none"
        raise Tx8labError(f"KnobPanel: no knob {key!r}; this panel has: {valid}")

    def _make_control(self, key: str, control: ipywidgets.Widget) -> ipywidgets.Widget:
        self.controls[key] = control
        control.observe(functools.partial(self._control_changed, key), names="value")
        return control

    def _apply(self, key: str, value: Any) -> None:
        if key.startswith(HW_PREFIX):
            path = _hw_path(key)
            if isinstance(value, list):
                value = tuple(value)
            self.explorer.hw = self.explorer.hw.with_overrides({path: value})
        else:
            self.explorer.set_knob(self._check_key(key), value)

    def _refresh(self, key: str) -> dict[str, Any]:
        start = time.perf_counter()
        steps = self.explorer.steps
        ran = time.perf_counter()
        per_view = []
        for link in self._links:
            began = time.perf_counter()
            redrawn = link.update(self.explorer)
            per_view.append(
                {
                    "view": _view_name(link.view),
                    "redrawn": redrawn,
                    "ms": round((time.perf_counter() - began) * 1e3, 2),
                }
            )
        done = time.perf_counter()
        record = {
            "key": key,
            "value": to_jsonable(self.get(key)),
            "reran": [s.name for s in steps if not s.cached],
            "cached": [s.name for s in steps if s.cached],
            "pipeline_ms": round((ran - start) * 1e3, 2),
            "views_ms": round((done - ran) * 1e3, 2),
            "total_ms": round((done - start) * 1e3, 2),
            "views": per_view,
        }
        self.history.append(record)
        self.last_update = record
        self.status.value = _status_html(record)
        return record

    def _refresh_views_only(self) -> None:
        for link in self._links:
            link.update(self.explorer)

    def _current_values(self) -> dict[str, Any]:
        return {key: to_jsonable(self.get(key)) for key in self.controls}

    def _sync_controls(self) -> None:
        """Show the Explorer's values in every control and in ``values``."""
        self._syncing = True
        try:
            for key, control in self.controls.items():
                value = self.get(key)
                if key.startswith(HW_PREFIX):
                    hw_field = self._hw_fields[key[len(HW_PREFIX) :]]
                    labels = [v for _, v in control.options]
                    if value not in labels:
                        control.options = hw_options(self._base_hw, hw_field, value)
                if control.value != value:
                    control.value = value
            self.values = self._current_values()
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
        new = dict(change["new"])
        current = self._current_values()
        for key, value in new.items():
            if key not in current:
                self.error = f"values: no knob {key!r} in this panel"
                self._sync_controls()
                return
            if value != current[key]:
                with contextlib.suppress(Tx8labError):
                    self.set(key, value)
        self._sync_controls()


# --------------------------------------------------------------------------- controls


def knob_control(spec: Knob, value: Any) -> ipywidgets.Widget:
    """The control for one pass knob (see the module docstring), showing ``value``."""
    common: dict[str, Any] = {
        "description": spec.name,
        "tooltip": spec.help,
        "style": _DESCRIPTION,
        "layout": _ROW,
    }
    kind = spec.type
    if kind is bool:
        return ipywidgets.Checkbox(value=value, indent=False, **common)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return ipywidgets.Dropdown(options=[(m.name, m) for m in kind], value=value, **common)
    if spec.choices:
        options = [(_show(c), c) for c in spec.choices]
        return ipywidgets.Dropdown(options=options, value=value, **common)
    if kind is int:
        low = int(spec.min) if spec.min is not None else -_JS_INT_MAX
        high = int(spec.max) if spec.max is not None else _JS_INT_MAX
        if spec.min is not None and spec.max is not None:
            return ipywidgets.IntSlider(
                value=value, min=low, max=high, continuous_update=False, **common
            )
        return ipywidgets.BoundedIntText(value=value, min=low, max=high, **common)
    if kind is float:
        low_f = spec.min if spec.min is not None else -float(_JS_INT_MAX)
        high_f = spec.max if spec.max is not None else float(_JS_INT_MAX)
        return ipywidgets.BoundedFloatText(value=value, min=low_f, max=high_f, **common)
    return ipywidgets.Text(value=str(value), continuous_update=False, **common)


def hw_control(field: HwField, options: list[tuple[str, Any]]) -> ipywidgets.Widget:
    """The control for one hardware field: a slider over ``options`` (a menu for tuples)."""
    common: dict[str, Any] = {
        "description": field.path,
        "tooltip": field.help,
        "style": _DESCRIPTION,
        "layout": _ROW,
    }
    if typing.get_origin(field.type) is tuple:
        return ipywidgets.Dropdown(options=options, **common)
    return ipywidgets.SelectionSlider(options=options, continuous_update=False, **common)


def _hw_path(key: str) -> str:
    """``hw.tile.spm_bytes`` -> ``tile.spm_bytes``, checked against the chip's fields."""
    path = key[len(HW_PREFIX) :]
    hw_fields([path])
    return path


def _resolve_hw_fields(which: Sequence[str] | Literal["all"]) -> tuple[HwField, ...]:
    return hw_fields(which) if which == "all" or which else ()


def _status_html(record: Mapping[str, Any]) -> str:
    reran = record["reran"]
    names = ", ".join(reran) if len(reran) <= 4 else f"{reran[0]} … {reran[-1]}"
    return (
        f"<b>{html.escape(record['key'])} = {html.escape(_show(record['value']))}</b>: "
        f"re-ran {len(reran)} pass{'es' if len(reran) != 1 else ''}"
        f"{f' ({html.escape(names)})' if reran else ''}, {len(record['cached'])} from the "
        f"cache · pipeline {record['pipeline_ms']:.1f} ms · views {record['views_ms']:.1f} ms"
        f" · total {record['total_ms']:.1f} ms"
    )


def _view_name(view: Any) -> str:
    return getattr(view, "__name__", type(view).__name__)


def _same_results(a: Sequence[Step], b: Sequence[Step]) -> bool:
    return len(a) == len(b) and all(x.result is y.result for x, y in zip(a, b, strict=True))


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, list | tuple):
        return "x".join(str(v) for v in value)
    return str(value)


__all__ = [
    "HW_FIELDS",
    "HwField",
    "KnobPanel",
    "format_hw_value",
    "hw_control",
    "hw_fields",
    "hw_options",
    "knob_control",
]
