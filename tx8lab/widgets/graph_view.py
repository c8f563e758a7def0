"""GraphView: a module's ops as a Graphviz drawing in JupyterLab, coloured by an overlay.

Spec: the graph view of a module. The layout is computed in the kernel (``dot``, or Graphviz
as wasm: :mod:`tx8lab.widgets.render`) and the SVG is sent to a small anywidget front end
(``static/graph_view.js``) that adds hover, click and re-colouring. Every trait below is plain
JSON, so a test drives the widget with ``set_state`` exactly as the browser would.

Readings chosen:

- **Layout in the kernel, not in the browser.** rendering.md measured both; the kernel
  path needs no 0.8 MB vendored wasm bundle, gives the browser the very SVG a headless
  report writes, and ``expand`` just re-runs the same function. The browser only restyles.
- **Re-colouring sends a colour map** (SVG node id -> fill), never a new SVG: changing
  ``overlay`` (the menu, or Python) costs one dict; ``recolor_ms`` (Python: overlay + map)
  and ``browser_recolor_ms`` (set by the browser: DOM restyle) are the measured times.
- **Click** sets ``selected`` (an op id, -1 for none); Python answers with
  ``selected_info`` (its attributes) and ``selected_decisions`` (every Decision whose
  ``op_id`` or ``related_ids`` names it, in pipeline order). A click on a collapsed group
  sends ``{"type": "expand", "id": N}`` and the group is laid out open; an open group can
  be closed with ``{"type": "collapse", "id": N}``.
- Above ``collapse_above`` ops (800) every group starts collapsed; without groups the
  graph is drawn in full, with the faster layout settings of ``graph_dot.FAST_LAYOUT``.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anywidget
import traitlets

from tx8lab.core.ir import Module, Op
from tx8lab.core.passes.base import Decision, Step
from tx8lab.core.report import to_jsonable
from tx8lab.errors import Tx8labError
from tx8lab.widgets.graph_dot import (
    COLLAPSE_ABOVE,
    ViewGraph,
    add_ghost,
    build_view,
    group_ids,
    groups_to_collapse,
    op_info,
    view_to_dot,
)
from tx8lab.widgets.overlays import BUILTIN_OVERLAYS, Overlay
from tx8lab.widgets.render import Engine, render_svg, restyle_svg

_STATIC = pathlib.Path(__file__).parent / "static"

OverlaySource = Overlay | Callable[[Module], Overlay]


class GraphView(anywidget.AnyWidget):
    """The ops of a module as nodes, coloured by an overlay; hover, click, expand groups."""

    _esm = _STATIC / "graph_view.js"
    _css = _STATIC / "graph_view.css"

    svg = traitlets.Unicode("").tag(sync=True)
    """The laid-out drawing (set by Python; the browser shows it as is)."""
    colors = traitlets.Dict().tag(sync=True)
    """SVG node id (``op12``) -> fill colour of the current overlay (set by Python)."""
    labels = traitlets.Dict().tag(sync=True)
    """SVG node id -> what the overlay says about the op (shown on hover)."""
    legend: traitlets.List[list[str]] = traitlets.List().tag(sync=True)
    """``[label, colour]`` pairs of the current overlay."""
    overlay = traitlets.Unicode("alignment").tag(sync=True)
    """Name of the overlay shown; set from Python or the browser's menu."""
    overlay_names = traitlets.List(traitlets.Unicode()).tag(sync=True)
    """Overlays the menu offers (built-in ones plus those added with ``add_overlay``)."""
    node_info = traitlets.Dict().tag(sync=True)
    """SVG node id -> attribute name -> text, shown on hover."""
    selected = traitlets.Int(-1).tag(sync=True)
    """Id of the op the user clicked (-1: none). Set by the browser or Python."""
    selected_info = traitlets.Dict().tag(sync=True)
    """Attributes of the selected op (set by Python when ``selected`` changes)."""
    selected_decisions = traitlets.List(traitlets.Dict()).tag(sync=True)
    """``Decision.to_json()`` of every decision about the selected op (set by Python)."""
    collapsed = traitlets.List(traitlets.Int()).tag(sync=True)
    """Group ids drawn as one node; changing it lays the graph out again."""
    render_seconds = traitlets.Float(0.0).tag(sync=True)
    """Measured layout time of the current SVG, seconds (set by Python)."""
    render_engine = traitlets.Unicode("").tag(sync=True)
    """``dot`` or ``wasm``: the engine that laid the SVG out."""
    recolor_ms = traitlets.Float(0.0).tag(sync=True)
    """Python time of the last overlay change (compute overlay + colour map), ms."""
    browser_recolor_ms = traitlets.Float(0.0).tag(sync=True)
    """Time the browser took to restyle the fills, ms (set by the browser)."""
    height = traitlets.Unicode("560px").tag(sync=True)
    """CSS height of the drawing area."""

    def __init__(
        self,
        module: Module,
        *,
        overlay: str | Overlay = "alignment",
        decisions: Iterable[Decision] = (),
        overlays: Mapping[str, OverlaySource] | None = None,
        marks: Mapping[int, str] | None = None,
        ghost: Module | None = None,
        collapse_above: int = COLLAPSE_ABOVE,
        edge_labels: bool = False,
        engine: Engine = "auto",
        title: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._module = module
        self._decisions: tuple[Decision, ...] = tuple(decisions)
        self._sources: dict[str, OverlaySource] = dict(BUILTIN_OVERLAYS)
        self._sources.update(overlays or {})
        self._computed: dict[str, Overlay] = {}
        self._marks = dict(marks or {})
        self._ghost = ghost
        self._collapse_above = collapse_above
        self._edge_labels = edge_labels
        self._engine: Engine = engine
        self._title = title
        self._view: ViewGraph | None = None
        self._by_id: dict[int, Op] | None = None
        self.dot = ""
        if isinstance(overlay, Overlay):
            self._sources[overlay.name] = overlay
            overlay = overlay.name
        self._check_overlay(overlay)
        self.on_msg(lambda _w, content, _buffers: self.handle_message(content))
        with self.hold_trait_notifications():
            self.overlay_names = list(self._sources)
            self.overlay = overlay
        self.collapsed = sorted(groups_to_collapse(module, collapse_above))
        self._layout()

    # -- construction
    @classmethod
    def from_module(cls, module: Module, **kwargs: Any) -> GraphView:
        """A view of ``module`` (keyword arguments as for the constructor)."""
        return cls(module, **kwargs)

    @classmethod
    def from_steps(cls, steps: Iterable[Step], **kwargs: Any) -> GraphView:
        """The last step's output with every step's decisions (a pipeline trace)."""
        steps = list(steps)
        if not steps:
            raise Tx8labError("GraphView.from_steps: no steps (run at least one pass)")
        decisions = [d for s in steps for d in s.decisions]
        return cls(steps[-1].after, decisions=decisions, **kwargs)

    # -- public API
    @property
    def module(self) -> Module:
        """The module drawn."""
        return self._module

    @property
    def decisions(self) -> tuple[Decision, ...]:
        """Decisions the view explains on click."""
        return self._decisions

    def set_module(
        self,
        module: Module,
        *,
        decisions: Iterable[Decision] | None = None,
        marks: Mapping[int, str] | None = None,
        ghost: Module | None = None,
        title: str | None = None,
        overlays: Mapping[str, OverlaySource] | None = None,
    ) -> None:
        """Draw another module (a new layout); the overlay name and height stay.

        ``overlays`` adds or replaces overlays (by name) before the layout.
        """
        self._module = module
        if overlays:
            self._sources.update(overlays)
            self.overlay_names = list(self._sources)
        if decisions is not None:
            self._decisions = tuple(decisions)
        self._marks = dict(marks or {})
        self._ghost = ghost
        self._title = title
        self._computed = {}
        self._by_id = None
        with self.hold_trait_notifications():
            if self.selected != -1 and self._lookup(self.selected) is None:
                self.selected = -1
            self.collapsed = sorted(groups_to_collapse(module, self._collapse_above))
        self._layout()

    def add_overlay(
        self, overlay: OverlaySource, name: str | None = None, show: bool = True
    ) -> None:
        """Offer another overlay (an :class:`Overlay`, or a function of the module)."""
        key = name or (overlay.name if isinstance(overlay, Overlay) else "")
        if not key:
            raise Tx8labError("add_overlay: give a name for an overlay function")
        self._sources[key] = overlay
        self._computed.pop(key, None)
        self.overlay_names = list(self._sources)
        if show:
            if self.overlay == key:
                self._apply_overlay()
            else:
                self.overlay = key

    def current_overlay(self) -> Overlay:
        """The overlay shown, computed for the current module (cached)."""
        name = self.overlay
        if name not in self._computed:
            source = self._sources[name]
            self._computed[name] = source if isinstance(source, Overlay) else source(self._module)
        return self._computed[name]

    def expand(self, group_id: int) -> None:
        """Draw a collapsed group open (a new layout)."""
        if group_id not in self.collapsed:
            raise Tx8labError(f"expand: %{group_id} is not a collapsed group of this view")
        self.collapsed = [g for g in self.collapsed if g != group_id]

    def collapse(self, group_id: int) -> None:
        """Draw a group as one node (a new layout)."""
        if group_id not in group_ids(self._module):
            raise Tx8labError(f"collapse: %{group_id} is not a tx8be.Group of this module")
        if group_id not in self.collapsed:
            self.collapsed = sorted([*self.collapsed, group_id])

    def handle_message(self, content: Mapping[str, Any]) -> None:
        """A message from the browser: ``{"type": "expand" | "collapse", "id": N}``."""
        kind = content.get("type")
        if kind == "expand":
            self.expand(int(content["id"]))
        elif kind == "collapse":
            self.collapse(int(content["id"]))
        else:
            raise Tx8labError(f"GraphView: unknown message {dict(content)!r}")

    def to_svg(self) -> str:
        """The SVG with the current overlay's colours (for a static file or report)."""
        return restyle_svg(self.svg, self.colors)

    def save_svg(self, path: str | pathlib.Path) -> pathlib.Path:
        """Write :meth:`to_svg` to ``path``."""
        out = pathlib.Path(path)
        out.write_text(self.to_svg(), encoding="utf-8")
        return out

    @property
    def view(self) -> ViewGraph:
        """What is drawn: nodes, edges, clusters."""
        assert self._view is not None
        return self._view

    # -- internals
    def _check_overlay(self, name: str) -> None:
        if name not in self._sources:
            known = ", ".join(self._sources)
            raise Tx8labError(f"unknown overlay {name!r}; this view has: {known}")

    def _layout(self) -> None:
        view = build_view(self._module, self.collapsed)
        if self._ghost is not None:
            add_ghost(view, self._ghost, self.collapsed)
        self._view = view
        dot = view_to_dot(
            view,
            self.current_overlay(),
            marks=self._marks,
            edge_labels=self._edge_labels,
            title=self._title,
        )
        self.dot = dot
        """The DOT text of the current layout (Python only)."""
        rendered = render_svg(dot, self._engine)
        info: dict[str, dict[str, str]] = {}
        for node in view.nodes.values():
            if node.op is not None:
                info[node.name] = op_info(node.op)
                if node.role == "removed":
                    info[node.name]["diff"] = "removed by this pass"
                elif node.op.id in self._marks:
                    info[node.name]["diff"] = self._marks[node.op.id]
            elif node.detail:
                info[node.name] = {"value": node.name, "type": node.detail}
        with self.hold_trait_notifications():
            self.svg = rendered.svg
            self.render_seconds = rendered.seconds
            self.render_engine = rendered.engine
            self.node_info = info
            self._apply_overlay()

    def _apply_overlay(self) -> None:
        start = time.perf_counter()
        data = self.current_overlay().to_json()
        with self.hold_trait_notifications():
            self.colors = data["colors"]
            self.labels = data["labels"]
            self.legend = data["legend"]
            self.recolor_ms = (time.perf_counter() - start) * 1e3

    @traitlets.validate("overlay")
    def _valid_overlay(self, proposal: Any) -> str:
        name = str(proposal["value"])
        self._check_overlay(name)
        return name

    @traitlets.validate("selected")
    def _valid_selected(self, proposal: Any) -> int:
        value = int(proposal["value"])
        if value != -1 and self._lookup(value) is None:
            raise traitlets.TraitError(
                f"selected: %{value} is not an op of this module (use -1 for no selection)"
            )
        return value

    @traitlets.observe("overlay")
    def _overlay_changed(self, change: Any) -> None:
        if self._view is not None:
            self._apply_overlay()

    @traitlets.observe("collapsed")
    def _collapsed_changed(self, change: Any) -> None:
        if self._view is not None and sorted(change["old"]) != sorted(change["new"]):
            self._layout()

    @traitlets.observe("selected")
    def _selected_changed(self, change: Any) -> None:
        op_id = change["new"]
        if op_id < 0:
            self.selected_info = {}
            self.selected_decisions = []
            return
        op = self._lookup(op_id)
        assert op is not None
        info = op_info(op)
        info[self.overlay] = self.current_overlay().label(op_id)
        if op_id in self._marks:
            info["diff"] = self._marks[op_id]
        with self.hold_trait_notifications():
            self.selected_info = info
            self.selected_decisions = [
                to_jsonable(d.to_json()) for d in self._decisions if op_id in d.op_ids
            ]

    def _lookup(self, op_id: int) -> Op | None:
        """The op with this id in the module, else in the ghost (a removed op)."""
        if self._by_id is None:
            self._by_id = {}
            if self._ghost is not None:
                self._by_id.update(self._ghost.op_by_id())
            self._by_id.update(self._module.op_by_id())
        return self._by_id.get(op_id)


__all__ = ["GraphView"]
