"""Overlays: one colour and one label per op id, for the graph view to paint.

An :class:`Overlay` is plain data (op id -> colour, op id -> label, a legend), so the graph
view can re-colour an already laid-out SVG by sending only the colour map: the layout
never depends on the overlay. Each ``*_overlay`` function is pure and reads the module
only; later views plug their own per-op values in with :func:`category_overlay` or
:func:`numeric_overlay` (cycles, SPM bytes, ...).

Readings chosen:

- **Alignment of an op** (:func:`alignment_of`): once ``layout-align-npu`` has run, the
  op's ``dev_info.mem_layout`` says what was decided (Cx/NCx = ALIGN, Tensor/NTensor =
  NALIGN); a ChannelNorm is the layout it produces (``direction``); before that, the op
  library's ``align_mode`` (ALIGN, NALIGN, BOTH). A group is the common mode of its members,
  else MIXED.
- Colours: ALIGN amber, NALIGN blue, BOTH green (seed 000's three modes), so "why is this
  node yellow?" has one answer: it sits in Cx/NCx.
- Ops without a value in a generic overlay are grey (``MISSING_COLOR``) and labelled
  ``n/a``; they are never left out, so node counts stay equal to op counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tx8lab.core.ir import TERMINATORS, Module, Op
from tx8lab.errors import Tx8labError

#: Colour of an op that an overlay has no value for.
MISSING_COLOR = "#d9d9d9"

#: seed 000's alignment modes (plus MIXED for a group whose members differ).
ALIGN_COLORS: dict[str, str] = {
    "ALIGN": "#f4b942",
    "NALIGN": "#7fb3e6",
    "BOTH": "#9ccc65",
    "MIXED": "#c9a0dc",
    "UNKNOWN": MISSING_COLOR,
}

#: Graph-diff states (the pass stepper).
DIFF_COLORS: dict[str, str] = {
    "added": "#7bd389",
    "changed": "#ffb74d",
    "removed": "#ef7b7b",
    "same": "#eeeeee",
}

#: Categorical palette (Tableau 10, lightened so black text stays readable).
PALETTE: tuple[str, ...] = (
    "#8fb8de",
    "#ffbe7d",
    "#f4a6a6",
    "#a8d5ce",
    "#a3d39c",
    "#f7e08a",
    "#d4a6c8",
    "#ffc2cb",
    "#c9b2a6",
    "#cfcfcf",
)


@dataclass(frozen=True)
class Overlay:
    """A colour and a label for every op id it knows; the legend lists label -> colour."""

    name: str
    """Shown in the view's overlay menu (``alignment``, ``group``, ``cycles`` ...)."""
    colors: Mapping[int, str] = field(default_factory=dict)
    """Op id -> fill colour (``#rrggbb``)."""
    labels: Mapping[int, str] = field(default_factory=dict)
    """Op id -> what the colour means for that op (``ALIGN``, ``1.2e+04 cycles``)."""
    legend: tuple[tuple[str, str], ...] = ()
    """(label, colour) pairs, in display order."""

    def color(self, op_id: int) -> str:
        """The op's colour (grey when the overlay has none)."""
        return self.colors.get(op_id, MISSING_COLOR)

    def label(self, op_id: int) -> str:
        """The op's label (``n/a`` when the overlay has none)."""
        return self.labels.get(op_id, "n/a")

    def to_json(self) -> dict[str, Any]:
        """Plain JSON for the browser: keys are the SVG node ids (``op12``)."""
        return {
            "name": self.name,
            "colors": {f"op{k}": v for k, v in self.colors.items()},
            "labels": {f"op{k}": v for k, v in self.labels.items()},
            "legend": [list(item) for item in self.legend],
        }


def _ops(module: Module) -> Iterable[Op]:
    return (op for op in module.walk() if op.kind not in TERMINATORS)


def category_overlay(
    name: str,
    values: Mapping[int, str],
    colors: Mapping[str, str] | None = None,
    order: Sequence[str] | None = None,
) -> Overlay:
    """Colour ops by a category per op id; unknown categories take palette colours in turn.

    Examples:
        >>> o = category_overlay("engine", {1: "NE", 2: "CT", 3: "NE"})
        >>> o.color(1) == o.color(3) != o.color(2), o.legend[0][0]
        (True, 'NE')
    """
    chosen: dict[str, str] = dict(colors or {})
    seen = list(order or ())
    for value in values.values():
        if value not in seen:
            seen.append(value)
    free = [c for c in PALETTE if c not in chosen.values()] or list(PALETTE)
    for i, value in enumerate(v for v in seen if v not in chosen):
        chosen[value] = free[i % len(free)]
    present = set(values.values())
    legend = tuple((v, chosen[v]) for v in seen if v in present)
    return Overlay(
        name,
        {op_id: chosen[v] for op_id, v in values.items()},
        dict(values),
        legend,
    )


def _lerp_color(low: str, high: str, t: float) -> str:
    a = [int(low[i : i + 2], 16) for i in (1, 3, 5)]
    b = [int(high[i : i + 2], 16) for i in (1, 3, 5)]
    mixed = [round(x + (y - x) * t) for x, y in zip(a, b, strict=True)]
    return "#" + "".join(f"{c:02x}" for c in mixed)


def numeric_overlay(
    name: str,
    values: Mapping[int, float],
    unit: str = "",
    *,
    low: str = "#fff5eb",
    high: str = "#d94801",
    log: bool = False,
) -> Overlay:
    """Colour ops on a light-to-dark scale by a number per op id (cycles, SPM bytes ...).

    ``log`` spaces the scale logarithmically (for values spanning decades; all must be
    > 0). The legend gives the minimum and the maximum.

    Examples:
        >>> o = numeric_overlay("cycles", {1: 10.0, 2: 1000.0}, "cycles")
        >>> o.color(1), o.color(2), o.label(2)
        ('#fff5eb', '#d94801', '1000 cycles')
    """
    finite = {k: float(v) for k, v in values.items() if math.isfinite(float(v))}
    if log and any(v <= 0 for v in finite.values()):
        raise Tx8labError(f"overlay {name!r}: log scale needs values > 0")
    scale: Callable[[float], float] = math.log10 if log else float
    suffix = f" {unit}" if unit else ""
    if not finite:
        return Overlay(name, {}, {}, ())
    lo = min(scale(v) for v in finite.values())
    hi = max(scale(v) for v in finite.values())
    span = hi - lo
    colors = {
        k: _lerp_color(low, high, (scale(v) - lo) / span if span else 1.0)
        for k, v in finite.items()
    }
    labels = {k: f"{v:.4g}{suffix}" for k, v in finite.items()}
    vmin, vmax = min(finite.values()), max(finite.values())
    legend: tuple[tuple[str, str], ...] = (
        (f"{vmin:.4g}{suffix}", colors[min(finite, key=finite.__getitem__)]),
    )
    if vmax != vmin:
        legend += ((f"{vmax:.4g}{suffix}", colors[max(finite, key=finite.__getitem__)]),)
    return Overlay(name, colors, labels, legend)


# --------------------------------------------------------------------------- built-in


def alignment_of(op: Op) -> str:
    """``ALIGN``, ``NALIGN``, ``BOTH``, ``MIXED`` or ``UNKNOWN`` (see the module docstring)."""
    from tx8lab.core.attrs import DevInfo, LayoutMode

    if op.kind == "tx8be.Group":
        modes = {
            alignment_of(inner) for inner in op.regions[0].ops if inner.kind not in TERMINATORS
        }
        return modes.pop() if len(modes) == 1 else ("MIXED" if modes else "UNKNOWN")
    dev = op.attrs.get("dev_info")
    if isinstance(dev, DevInfo):
        return "ALIGN" if dev.mem_layout in (LayoutMode.Cx, LayoutMode.NCx) else "NALIGN"
    if op.kind == "tx8be.ChannelNorm":
        return "ALIGN" if bool(op.attrs.get("direction")) else "NALIGN"
    from tx8lab.core.ops import OPS

    entry = OPS.get(op.kind)
    if entry is None:
        return "UNKNOWN"
    return str(entry.align_mode(op).value)


def alignment_overlay(module: Module) -> Overlay:
    """ALIGN / NALIGN / BOTH per op (the graph view's default overlay)."""
    values = {op.id: alignment_of(op) for op in _ops(module)}
    return category_overlay("alignment", values, ALIGN_COLORS, order=list(ALIGN_COLORS))


def group_of(module: Module) -> dict[int, int]:
    """Op id -> id of the innermost ``tx8be.Group`` holding it (groups map to themselves)."""
    owner: dict[int, int] = {}

    def visit(op: Op, group: int | None) -> None:
        if op.kind == "tx8be.Group":
            owner[op.id] = op.id
            for inner in op.regions[0].ops:
                visit(inner, op.id)
        elif group is not None and op.kind not in TERMINATORS:
            owner[op.id] = group

    for func in module.functions:
        for op in func.ops:
            visit(op, None)
    return owner


def group_overlay(module: Module) -> Overlay:
    """One colour per group; ops outside every group are ``ungrouped`` (grey)."""
    owner = group_of(module)
    values = {
        op.id: (f"group %{owner[op.id]}" if op.id in owner else "ungrouped") for op in _ops(module)
    }
    return category_overlay("group", values, {"ungrouped": MISSING_COLOR})


def created_by_overlay(module: Module) -> Overlay:
    """The pass that created each op; ops of the input model are ``model``."""
    values = {op.id: op.created_by or "model" for op in _ops(module)}
    return category_overlay("created_by", values, {"model": "#eeeeee"}, order=["model"])


def engine_overlay(module: Module) -> Overlay:
    """The engine the op library puts each op on (NE, CT, ...); groups are MIXED or one."""
    from tx8lab.core.ops import OPS

    def engine(op: Op) -> str:
        if op.kind == "tx8be.Group":
            inner = {engine(o) for o in op.regions[0].ops if o.kind not in TERMINATORS}
            return inner.pop() if len(inner) == 1 else "MIXED"
        entry = OPS.get(op.kind)
        return "UNKNOWN" if entry is None else str(entry.op_attr(op).engine.value)

    return category_overlay("engine", {op.id: engine(op) for op in _ops(module)})


#: The overlays every graph view offers, by name.
BUILTIN_OVERLAYS: dict[str, Callable[[Module], Overlay]] = {
    "alignment": alignment_overlay,
    "group": group_overlay,
    "created_by": created_by_overlay,
    "engine": engine_overlay,
}


__all__ = [
    "ALIGN_COLORS",
    "BUILTIN_OVERLAYS",
    "DIFF_COLORS",
    "MISSING_COLOR",
    "PALETTE",
    "Overlay",
    "alignment_of",
    "alignment_overlay",
    "category_overlay",
    "created_by_overlay",
    "engine_overlay",
    "group_of",
    "group_overlay",
    "numeric_overlay",
]
