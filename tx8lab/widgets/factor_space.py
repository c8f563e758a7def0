"""FactorSpaceView: a group's sharding candidates, cycles vs SPM peak, and the one chosen.

Spec: the sharding levels and candidates of a group — cost vs SPM peak scatter with the
Pareto front, rejected candidates by reason, the chosen strategy; selecting a candidate
shows its split and timeline — over group-cost's search
(:func:`~tx8lab.core.schedule.search.search_group`, seed 001 "GroupCostPass" and
"DataSplitNewPass"). :func:`factor_space_figure` draws a
:class:`~tx8lab.core.schedule.search.SearchResult` headless; :class:`FactorSpaceView` wraps
it in a ``go.FigureWidget`` with a ``selected`` trait (a candidate index) that shows the
candidate's split tries, its propagation over the group and its pipeline timeline
(:func:`~tx8lab.widgets.timeline.timeline_figure` of the candidate's recorded
:class:`~tx8lab.core.schedule.stages.GroupRun`: the search keeps every OK candidate's
stages, so selecting one schedules nothing again).

Readings chosen:

- **Axes**: x = SPM peak bytes (one tile, the search's allocator), y = cycles; lower left
  is better. One trace per sharding level (legend ``level 4 (16 tiles)``, the seed's
  factor), the default strategy its own trace (diamond). Only ``OK`` candidates have a
  point: the others never got a schedule.
- **Pareto front** = :meth:`SearchResult.pareto` drawn as a staircase (``line_shape="hv"``,
  ordered by SPM peak): the boundary of what the evaluated candidates dominate.
- **Rejected candidates** are a second panel: one bar per status (``OK``,
  ``spm-overflow``, ``invalid``, ``duplicate``, plus ``pruned`` = never evaluated, by the
  pruning rule or the budget), hover with the commonest reasons. Rejected candidates are
  still selectable in the dropdown (their reason is shown; no timeline).
- **Communication** (``Candidate.comm``, group-cost ``noc``): one trace per level and
  pattern; a candidate whose tiles all-reduce partial sums over the NoC is a triangle
  of its level's colour (:data:`COMM_SYMBOLS`), named "..., k-reduce over the NoC"; one
  whose loads are shared (a chunk per tile, all-gathered) a square, "..., share over
  the NoC"; one whose computed pieces are all-gathered for an op reading them whole a
  pentagon, "..., gather over the NoC"; one whose tiles pass their readers halo pieces
  a hexagon, "..., exchange over the NoC".
- **Chosen** = ``result.best`` (a star); the **default strategy** = the candidate with
  ``sharding == "default"`` (a diamond), so "how much did the search win" is one look.
- **Selection** = a candidate index (``Candidate.index``), clamped to the candidates, as
  the other views clamp their cursors. Set from Python, the dropdown, or a click on a point
  (``FigureWidget`` ``on_click``: the point's candidate index is in its customdata).
- **Propagation of a candidate** is recomputed from its strategy's output ops
  (:func:`~tx8lab.core.schedule.sharding.propagate` of ``param_for`` of each output op's
  strategy): that gives the same strategy as the search (tested) plus the record per op.
  A ``k-reduce`` candidate (``K/k`` in its sharding) then has its reduction dims sharded
  ``k`` ways as the search does (``search.noc_sharded``): the ops it changes say source
  ``k-reduce``; a ``gather`` one (``G/k``) has its dims read whole sharded ``k`` ways
  (``slicing.gather_sharded``), source ``gather``. The default strategy is not a
  propagation (slicing builds it per op), so it shows its strategy per op with source
  ``default``. Rejected candidates have no
  stored strategy and show only their first output op's split tries.
- **from_step** takes the hardware the run used (default: the default preset, as
  ``tx8lab run`` without ``--hw``) and checks it: the chosen strategy re-run on ``hw``
  must give the cycles the step recorded, else a :class:`~tx8lab.errors.Tx8labError`
  asks for the right hardware. A group without a stored search (``search=default``, or a
  template-cache hit) is searched again with the step's knobs and ``mode``.
"""

from __future__ import annotations

import ast
import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets
import pandas as pd
import plotly.graph_objects as go
import traitlets
from plotly.subplots import make_subplots

from tx8lab.core.ir import Op
from tx8lab.core.ops import get_op_def
from tx8lab.core.passes.base import Step
from tx8lab.core.schedule.search import (
    MODES,
    SEARCH_BUDGET,
    SIMULATE_TOP,
    Candidate,
    SearchResult,
    noc_sharded,
    search_group,
)
from tx8lab.core.schedule.sharding import (
    level_rows,
    op_sharding_levels,
    output_ops,
    param_for,
    propagate,
    propagation_rows,
    split_tries,
    split_try_rows,
)
from tx8lab.core.schedule.slicing import gather_sharded, group_tile_budget
from tx8lab.core.schedule.stages import GroupRun
from tx8lab.core.schedule.tasks import OpStrategy
from tx8lab.core.simulate import simulate_schedule
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig
from tx8lab.widgets.overlays import PALETTE
from tx8lab.widgets.spm_gantt import cost_step
from tx8lab.widgets.timeline import timeline_figure

#: Bars of the status panel, in this order (``pruned`` = never evaluated).
STATUSES = ("OK", "spm-overflow", "invalid", "duplicate", "pruned")
_STATUS_COLORS = {
    "OK": "#2e8b57",
    "spm-overflow": "#c0392b",
    "invalid": "#8e44ad",
    "duplicate": "#95a5a6",
    "pruned": "#cfcfcf",
}
_BEST_COLOR = "#f1c40f"
_DEFAULT_COLOR = "#333333"
#: Marker of a candidate by its communication pattern (``Candidate.comm``): the colour is
#: its level, a triangle a candidate whose tiles sum partials over the NoC.
COMM_SYMBOLS: dict[str, str] = {
    "none": "circle",
    "k-reduce": "triangle-up",
    "share": "square",
    "gather": "pentagon",
    "exchange": "hexagon",
}


def check_group(group: Any, what: str) -> Op:
    """``group`` if it is a ``tx8be.Group`` with a body, else an error naming ``what``."""
    if not isinstance(group, Op) or group.kind != "tx8be.Group" or not group.regions:
        label = group.label if isinstance(group, Op) else type(group).__name__
        raise Tx8labError(
            f"{what} needs a tx8be.Group op with a body, got {label} "
            "(run the pipeline through the group pass and take a group of step.after)"
        )
    return group


def _first_output(group: Op) -> Op:
    outs = output_ops(group)
    if not outs:
        raise Tx8labError(f"group %{group.id} has no output compute op: it has no factor space")
    return outs[0]


def levels_frame(group: Op, hw: ChipConfig) -> pd.DataFrame:
    """The sharding levels of the group's first output op, best first (one row per vector).

    Columns: op, level (index), tiles (the level's label), factor, sharding (over the
    result dims), effective (tiles that get useful work).
    """
    group = check_group(group, "levels_frame")
    op = _first_output(group)
    rows = level_rows(op_sharding_levels(op, group_tile_budget(group, hw)))
    df = pd.DataFrame(rows, columns=["level", "tiles", "factor", "sharding", "effective"])
    df.insert(0, "op", f"%{op.id} ({op.name})")
    return df


def _candidate(result: SearchResult, index: int) -> Candidate:
    if not 0 <= index < len(result.candidates):
        raise Tx8labError(
            f"candidate #{index} is not in the search of group %{result.group_id} "
            f"(candidates 0..{len(result.candidates) - 1})"
        )
    return result.candidates[index]


def _iter_shard(op: Op, sharding: Sequence[int]) -> tuple[int, ...]:
    """A result-dims sharding vector over the op's iteration dims (1 elsewhere)."""
    defn = get_op_def(op.kind)
    shard = [1] * len(defn.iter_dims(op))
    for e, d in enumerate(defn.result_dims(op)[0]):
        if d is not None:
            shard[d] = int(sharding[e])
    return tuple(shard)


def split_frame(group: Op, result: SearchResult, index: int) -> pd.DataFrame:
    """DS_TileSplit's tries for the candidate's first output op; ``applied`` = within depth.

    The default strategy's tries are those of its own shard of that op, none applied.
    """
    group = check_group(group, "split_frame")
    cand = _candidate(result, index)
    op = _first_output(group)
    if cand.strategy is not None and op.id in cand.strategy.ops:
        shard = cand.strategy.ops[op.id].shard
    elif cand.sharding != "default":
        shard = _iter_shard(op, ast.literal_eval(cand.sharding))
    else:
        return pd.DataFrame(columns=["op", "step", "dim", "reduce", "split", "slice", "applied"])
    df = pd.DataFrame(
        split_try_rows(split_tries(op, shard)),
        columns=["op", "step", "dim", "reduce", "split", "slice"],
    )
    df["applied"] = [0 < s <= cand.depth for s in df["step"]]
    return df


def propagation_frame(group: Op, result: SearchResult, index: int) -> pd.DataFrame:
    """How the candidate's strategy reaches every op of the group (module docstring).

    Empty for a candidate without a strategy (rejected ones).
    """
    group = check_group(group, "propagation_frame")
    cand = _candidate(result, index)
    columns = [
        "op",
        "source",
        "sharding",
        "split",
        "shard (iter dims)",
        "split (iter dims)",
        "detail",
    ]
    if cand.strategy is None:
        return pd.DataFrame(columns=columns)
    strategy = cand.strategy
    body = {op.id: op for op in group.regions[0].ops}
    if cand.sharding == "default":
        rows = []
        for op_id, st in strategy.ops.items():
            op = body[op_id]
            param = param_for(op, st)
            rows.append(
                {
                    "op": f"%{op.id} ({op.name})",
                    "source": "default",
                    "sharding": param.out_sharding,
                    "split": param.out_split,
                    "shard (iter dims)": st.shard,
                    "split (iter dims)": st.split,
                    "detail": "slicing.default_strategy",
                }
            )
        return pd.DataFrame(rows, columns=columns)
    outputs = {
        op.id: param_for(op, strategy.ops.get(op.id, _no_shard(op))) for op in output_ops(group)
    }
    prop = propagate(group, outputs, multi_buffer=strategy.multi_buffer)
    prop_rows = propagation_rows(prop)
    ways = re.search(r" ([KG])/(\d+)$", cand.sharding)
    if ways is not None:
        k = int(ways.group(2))
        if ways.group(1) == "K":
            sharded = noc_sharded(group, prop.strategy, k)
            source, detail = (
                "k-reduce",
                (
                    f"reduction dims sharded {k} ways: each tile sums a share, the partial sums "
                    "are all-reduced over the NoC"
                ),
            )
        else:
            # the group's tiles bound no accepted dim tighter than the widest op does
            tiles = max(math.prod(st.shard) for st in strategy.ops.values())
            sharded = gather_sharded(group, prop.strategy, k, tiles)
            source, detail = (
                "gather",
                (
                    f"dims another op reads whole sharded {k} ways: the tiles all-gather the "
                    "pieces over the NoC"
                ),
            )
        for row, record in zip(prop_rows, prop.records, strict=True):
            cut = sharded.ops.get(record.op_id)
            if cut is not None and cut != record.strategy:
                row["source"] = source
                row["shard (iter dims)"], row["split (iter dims)"] = cut.shard, cut.split
                row["detail"] = detail
    return pd.DataFrame(prop_rows, columns=columns)


def _no_shard(op: Op) -> OpStrategy:
    n = len(get_op_def(op.kind).iter_dims(op))
    return OpStrategy((1,) * n, (1,) * n)


def _level_name(level: int) -> str:
    return "default strategy" if level < 0 else f"level {level} ({1 << level} tiles)"


def _custom(c: Candidate) -> tuple[Any, ...]:
    return (c.index, c.sharding, c.split, c.depth, _level_name(c.level), c.status)


_HOVER = (
    "<b>#%{customdata[0]}</b> %{customdata[4]}<br>sharding %{customdata[1]}, "
    "split %{customdata[2]} (depth %{customdata[3]})"
    "<br>cycles %{y:,}<br>SPM peak %{x:,} B<extra>%{fullData.name}</extra>"
)


def _status_counts(result: SearchResult) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for c in result.candidates:
        counts[c.status] += 1
    counts["pruned"] = result.pruned
    return counts


def _top_reasons(result: SearchResult, status: str, n: int = 3) -> str:
    if status == "pruned":
        return "not evaluated: pruned by the lower bound, the level rule or the budget"
    seen: dict[str, int] = {}
    for c in result.candidates:
        if c.status == status and c.reason:
            key = c.reason.split(";")[0][:90]
            seen[key] = seen.get(key, 0) + 1
    top = sorted(seen.items(), key=lambda kv: -kv[1])[:n]
    return "<br>".join(f"{k} (x{v})" for k, v in top) or "-"


def factor_space_figure(
    result: SearchResult,
    *,
    selected: int | None = None,
    title: str | None = None,
    height: int = 420,
) -> go.Figure:
    """Cycles vs SPM peak of the OK candidates, the Pareto front, best and default marked.

    Args:
        result: a :func:`~tx8lab.core.schedule.search.search_group` result.
        selected: a candidate index to ring (None: none).
        title: figure title (default: group, mode, share evaluated, best).
        height: pixels.

    Every trace carries ``meta={"role": ...}``: ``candidate`` (one per level), ``default``,
    ``pareto``, ``best``, ``selected`` and ``status`` (the bar panel).
    """
    if not isinstance(result, SearchResult):
        raise Tx8labError(
            f"factor_space_figure needs a SearchResult (search_group(...)), got "
            f"{type(result).__name__}"
        )
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.74, 0.26],
        horizontal_spacing=0.1,
        subplot_titles=("cycles vs SPM peak (OK candidates)", "candidates by status"),
    )
    ok = [c for c in result.candidates if c.status == "OK"]
    levels = sorted({c.level for c in ok if c.sharding != "default"}, reverse=True)
    for i, level in enumerate(levels):
        for comm, symbol in COMM_SYMBOLS.items():
            pts = [c for c in ok if c.level == level and c.sharding != "default" and c.comm == comm]
            if not pts:
                continue
            fig.add_trace(
                go.Scatter(
                    x=[c.spm_peak_bytes for c in pts],
                    y=[c.cycles for c in pts],
                    mode="markers",
                    name=_level_name(level) + ("" if comm == "none" else f", {comm} over the NoC"),
                    marker={
                        "color": PALETTE[i % len(PALETTE)],
                        "size": 9,
                        "opacity": 0.85,
                        "symbol": symbol,
                    },
                    customdata=[_custom(c) for c in pts],
                    hovertemplate=_HOVER,
                    meta={"role": "candidate", "level": level, "comm": comm},
                ),
                row=1,
                col=1,
            )
    default = [c for c in ok if c.sharding == "default"]
    if default:
        fig.add_trace(
            go.Scatter(
                x=[c.spm_peak_bytes for c in default],
                y=[c.cycles for c in default],
                mode="markers",
                name="default strategy",
                marker={"symbol": "diamond", "size": 12, "color": _DEFAULT_COLOR},
                customdata=[_custom(c) for c in default],
                hovertemplate=_HOVER,
                meta={"role": "default"},
            ),
            row=1,
            col=1,
        )
    front = sorted(result.pareto(), key=lambda c: (c.spm_peak_bytes or 0, c.cycles or 0))
    fig.add_trace(
        go.Scatter(
            x=[c.spm_peak_bytes for c in front],
            y=[c.cycles for c in front],
            mode="lines",
            line={"shape": "hv", "color": "#555", "dash": "dash", "width": 1.5},
            name=f"Pareto front ({len(front)})",
            customdata=[_custom(c) for c in front],
            hovertemplate=_HOVER,
            meta={"role": "pareto", "indices": [c.index for c in front]},
        ),
        row=1,
        col=1,
    )
    best = result.best
    if best is not None:
        fig.add_trace(
            go.Scatter(
                x=[best.spm_peak_bytes],
                y=[best.cycles],
                mode="markers",
                name=f"chosen #{best.index}: {best.cycles:,} cycles",
                marker={
                    "symbol": "star",
                    "size": 18,
                    "color": _BEST_COLOR,
                    "line": {"color": "#333", "width": 1},
                },
                customdata=[_custom(best)],
                hovertemplate=_HOVER,
                meta={"role": "best", "index": best.index},
            ),
            row=1,
            col=1,
        )
    fig.add_trace(
        go.Scatter(
            x=[],
            y=[],
            mode="markers",
            name="selected",
            marker={
                "symbol": "circle-open",
                "size": 22,
                "color": "#c0392b",
                "line": {"width": 2.5},
            },
            hoverinfo="skip",
            meta={"role": "selected", "index": -1},
        ),
        row=1,
        col=1,
    )
    counts = _status_counts(result)
    fig.add_trace(
        go.Bar(
            x=list(counts),
            y=list(counts.values()),
            marker={"color": [_STATUS_COLORS[s] for s in counts]},
            text=list(counts.values()),
            textposition="outside",
            customdata=[_top_reasons(result, s) for s in counts],
            hovertemplate="<b>%{x}</b>: %{y}<br>%{customdata}<extra></extra>",
            showlegend=False,
            name="status",
            meta={"role": "status"},
        ),
        row=1,
        col=2,
    )
    fig.update_xaxes(title_text="SPM peak per tile (bytes)", row=1, col=1)
    fig.update_yaxes(title_text="cycles", row=1, col=1)
    fig.update_yaxes(title_text="candidates", row=1, col=2)
    share = result.evaluated / result.space_size if result.space_size else 0.0
    if title is None:
        title = (
            f"group %{result.group_id}, {result.mode}: {result.evaluated} of "
            f"{result.space_size} candidates evaluated ({share:.0%})"
            + (f"; chosen #{best.index}, {best.cycles:,} cycles" if best is not None else "")
        )
    fig.update_layout(
        height=height,
        title=title,
        hovermode="closest",
        legend={"title": {"text": "sharding level"}},
        margin={"t": 80, "l": 70, "r": 20, "b": 50},
    )
    if selected is not None:
        set_selected(fig, result, selected)
    return fig


def set_selected(fig: go.Figure, result: SearchResult, index: int) -> None:
    """Ring candidate ``index`` in ``fig`` (no point when it has no cycles: not OK)."""
    cand = _candidate(result, index)
    trace = next(t for t in fig.data if (t.meta or {}).get("role") == "selected")
    has_point = cand.status == "OK"
    trace.x = [cand.spm_peak_bytes] if has_point else []
    trace.y = [cand.cycles] if has_point else []
    trace.meta = {"role": "selected", "index": index}


def _table(df: pd.DataFrame) -> str:
    text: str = df.to_html(index=False, border=0, escape=True)
    return text


class FactorSpaceView(ipywidgets.VBox):  # type: ignore[misc]
    """A group's factor space with a candidate ``selected`` (split, propagation, timeline)."""

    selected = traitlets.Int(0).tag(sync=True)
    """Candidate index on screen (clamped). Set from Python, the dropdown or a click."""
    candidates = traitlets.Int(0).tag(sync=True)
    """Candidates in the search result (set by Python)."""
    status = traitlets.Unicode("").tag(sync=True)
    """Status of the selected candidate (set by Python)."""
    split = traitlets.Unicode("").tag(sync=True)
    """Split (iteration dims) of the selected candidate's first output op (set by Python)."""

    def __init__(
        self,
        group: Op,
        hw: ChipConfig,
        result: SearchResult,
        *,
        selected: int | None = None,
        **kwargs: Any,
    ) -> None:
        self.group = check_group(group, "FactorSpaceView")
        """The group viewed (Python only)."""
        if not isinstance(result, SearchResult) or result.group_id != group.id:
            got = getattr(result, "group_id", type(result).__name__)
            raise Tx8labError(
                f"FactorSpaceView: the search result is of group %{got}, not %{group.id}"
            )
        if not result.candidates:
            raise Tx8labError(f"FactorSpaceView: the search of %{group.id} has no candidate")
        self.hw = hw
        """The hardware the candidates are scheduled on (Python only)."""
        self.result = result
        """The search shown (Python only)."""
        self.figure = go.FigureWidget(factor_space_figure(result))
        """The live figure (a ``go.FigureWidget``)."""
        for trace in self.figure.data:
            if (trace.meta or {}).get("role") in ("candidate", "default", "best", "pareto"):
                trace.on_click(self._clicked)
        self.dropdown = ipywidgets.Dropdown(
            options=[(self._option(c), c.index) for c in result.candidates],
            description="candidate",
            layout=ipywidgets.Layout(width="60%"),
        )
        self.header = ipywidgets.HTML(self._header())
        self.detail = ipywidgets.HTML()
        self.timeline_box = ipywidgets.VBox()
        super().__init__(
            children=[self.header, self.figure, self.dropdown, self.detail, self.timeline_box],
            **kwargs,
        )
        self.candidates = len(result.candidates)
        self._link = traitlets.link((self, "selected"), (self.dropdown, "value"))
        start = selected if selected is not None else (result.best or result.candidates[0]).index
        self.selected = start
        self._selected_changed({"new": self.selected})

    # ------------------------------------------------------------ constructors

    @classmethod
    def from_group(
        cls,
        group: Op,
        hw: ChipConfig,
        *,
        mode: str = "search",
        budget_s: float = 2.0,
        multi_buffer: int = 2,
        retract: bool = True,
        **kwargs: Any,
    ) -> FactorSpaceView:
        """Search ``group`` on ``hw`` (:func:`search_group`) and view the result."""
        group = check_group(group, "FactorSpaceView.from_group")
        if mode not in MODES:
            raise Tx8labError(f"FactorSpaceView.from_group: unknown mode {mode!r}; use {MODES}")
        result = search_group(
            group,
            hw,
            mode=mode,
            budget_s=budget_s,
            multi_buffer=multi_buffer,
            retract=retract,
            timer=simulate_schedule,
        )
        return cls(group, hw, result, **kwargs)

    @classmethod
    def from_step(
        cls,
        step: Step | Sequence[Step],
        group_id: int | None = None,
        hw: ChipConfig | None = None,
        *,
        mode: str = "search",
        **kwargs: Any,
    ) -> FactorSpaceView:
        """A group of a group-cost step (default: the costliest), its stored search if any.

        Args:
            step: the group-cost step, or a trace that ran it.
            group_id: the group (a top-level ``tx8be.Group`` of the step's output).
            hw: the hardware the run used (default: the default preset); checked against
                the cycles the step recorded.
            mode: search mode when the step stored no search for the group.
            **kwargs: passed to the view (``selected``, layout).
        """
        rec = recorded_group(step, group_id, hw, "FactorSpaceView.from_step")
        group, hw, knobs = rec.group, rec.hw, rec.step.knobs
        group_id = group.id
        arts = rec.step.result.artifacts
        multi_buffer, retract = int(knobs["multi_buffer"]), bool(knobs["retract"])
        result: SearchResult | None = arts.get("searches", {}).get(group_id)
        if result is None:
            if mode == "default":
                raise Tx8labError(
                    f"FactorSpaceView.from_step: group %{group_id} has no stored search "
                    f"(group-cost ran with search={knobs.get('search')!r} or took it from the "
                    "template cache) and mode='default' has one candidate; use "
                    "mode='search' or 'exhaustive', or run group-cost with search=search"
                )
            if mode not in MODES:
                raise Tx8labError(f"FactorSpaceView.from_step: unknown mode {mode!r}; use {MODES}")
            top = int(knobs.get("simulate_top", SIMULATE_TOP))
            result = search_group(
                group,
                hw,
                mode=mode,
                budget_s=float(knobs.get("search_budget_s", 10.0)),
                budget=int(knobs.get("search_budget", SEARCH_BUDGET)),
                multi_buffer=multi_buffer,
                retract=retract,
                timer=simulate_schedule if top else None,
                simulate_top=max(top, 1),
                noc=bool(knobs.get("noc", False)),
            )
        return cls(group, hw, result, **kwargs)

    # ------------------------------------------------------------ views

    def scheduled(self, index: int | None = None) -> GroupRun | None:
        """The recorded stages of candidate ``index`` (default: selected); None if not OK.

        The search kept every OK candidate's run, so nothing is scheduled again here.
        """
        cand = _candidate(self.result, self.selected if index is None else index)
        if cand.status != "OK":
            return None
        return cand.run

    def split_frame(self) -> pd.DataFrame:
        """:func:`split_frame` of the selected candidate."""
        return split_frame(self.group, self.result, self.selected)

    def propagation_frame(self) -> pd.DataFrame:
        """:func:`propagation_frame` of the selected candidate."""
        return propagation_frame(self.group, self.result, self.selected)

    def to_html(self, **kwargs: Any) -> str:
        """The factor space, the selected candidate and its timeline as one HTML page."""
        kwargs.setdefault("include_plotlyjs", True)
        parts = [self.header.value, go.Figure(self.figure).to_html(full_html=False, **kwargs)]
        parts.append(self.detail.value)
        kwargs["include_plotlyjs"] = False
        for child in self.timeline_box.children:
            if isinstance(child, go.FigureWidget):
                parts.append(go.Figure(child).to_html(full_html=False, **kwargs))
            elif isinstance(child, ipywidgets.HTML):
                parts.append(child.value)
        title = f"factor space of group %{self.group.id}"
        return (
            f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{title}</title>"
            "</head><body>\n" + "\n".join(parts) + "\n</body></html>\n"
        )

    # ------------------------------------------------------------ internals

    def _option(self, c: Candidate) -> str:
        cost = f"{c.cycles:,} cycles, {c.spm_peak_bytes:,} B" if c.status == "OK" else c.status
        star = " (chosen)" if self.result.best is not None and c is self.result.best else ""
        if c.sharding == "default":
            return f"#{c.index} default strategy: {cost}{star}"
        return f"#{c.index} {c.sharding} depth {c.depth}: {cost}{star}"

    def _header(self) -> str:
        r = self.result
        rejected = ", ".join(f"{k} {v}" for k, v in sorted(r.rejected().items())) or "none"
        return (
            f"<b>group %{self.group.id}</b>: {r.mode}, {r.evaluated} of {r.space_size} "
            f"candidates evaluated, {r.pruned} pruned, rejected: {rejected}; "
            f"search {r.time_s * 1e3:.0f} ms"
        )

    def _clicked(self, trace: Any, points: Any, _state: Any) -> None:
        for i in points.point_inds:
            self.selected = int(trace.customdata[i][0])
            return

    @traitlets.validate("selected")
    def _valid_selected(self, proposal: Any) -> int:
        return max(0, min(int(proposal["value"]), len(self.result.candidates) - 1))

    @traitlets.observe("selected")
    def _selected_changed(self, change: Any) -> None:
        index = int(change["new"])
        cand = self.result.candidates[index]
        with self.figure.batch_update():
            set_selected(self.figure, self.result, index)
        self.status = cand.status
        sched = self.scheduled(index)
        first = _first_output(self.group)
        self.split = (
            str(list(cand.strategy.ops[first.id].split))
            if cand.strategy is not None and first.id in cand.strategy.ops
            else cand.split
        )
        rows = [
            f"<b>{html.escape(self._option(cand))}</b>",
            f"status <b>{cand.status}</b>"
            + (f": {html.escape(cand.reason)}" if cand.reason else ""),
            f"<h4>Split tries of %{first.id} ({first.name})</h4>"
            + _table(split_frame(self.group, self.result, index)),
        ]
        prop = propagation_frame(self.group, self.result, index)
        if len(prop):
            rows.append("<h4>Propagation over the group</h4>" + _table(prop))
        self.detail.value = "<br>".join(rows)
        if sched is None:
            self.timeline_box.children = [
                ipywidgets.HTML(f"<i>#{index} has no schedule ({cand.status}).</i>")
            ]
        else:
            fig = timeline_figure(
                sched.timeline,
                title=f"#{index}: {sched.estimate.cycles:,} cycles, "
                f"SPM peak {sched.allocation.peak:,} B",
            )
            self.timeline_box.children = [go.FigureWidget(fig)]


@dataclass(frozen=True)
class RecordedGroup:
    """A group of a group-cost step with the run the step recorded (:func:`recorded_group`)."""

    step: Step
    group: Op
    hw: ChipConfig
    scheduled: GroupRun
    """The stages of the run's strategy as group-cost recorded them."""


def _hw_diff(a: Mapping[str, Any], b: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted names of the fields where two ``ChipConfig.to_dict()`` differ."""
    out: list[str] = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            out += _hw_diff(x, y, f"{prefix}{key}.")
        elif x != y:
            out.append(f"{prefix}{key}")
    return out


def recorded_group(
    step: Step | Sequence[Step], group_id: int | None, hw: ChipConfig | None, who: str
) -> RecordedGroup:
    """A group of a group-cost step (default: the costliest) and its recorded run.

    ``hw`` (default: the run's) must be the hardware the run used, else an error asks for
    it. Errors name ``who`` (the view being built).

    Raises:
        Tx8labError: not a group-cost step or trace, no group, an unknown ``group_id``,
            or hardware other than the run's.
    """
    found = cost_step(step, who)
    arts = found.result.artifacts
    entries = {int(e["id"]): e for e in arts.get("groups", [])}
    if not entries:
        raise Tx8labError(f"{who}: the group-cost step scheduled no group")
    if group_id is None:
        group_id = max(entries, key=lambda g: (int(entries[g]["cycles"]), -g))
    groups = {op.id: op for op in found.after.walk() if op.kind == "tx8be.Group"}
    if group_id not in entries or group_id not in groups:
        known = ", ".join(f"%{g}" for g in sorted(entries))
        raise Tx8labError(
            f"{who}: %{group_id} is not a group of the group-cost step; groups: {known}"
        )
    ran_on: ChipConfig = arts["hw"]
    if hw is not None and hw != ran_on:
        raise Tx8labError(
            f"{who}: group-cost ran on hw {ran_on.name!r}, not on the hw given "
            f"({hw.name!r}; differs in {', '.join(_hw_diff(ran_on.to_dict(), hw.to_dict()))});"
            " pass the hw the run used, or none"
        )
    return RecordedGroup(found, groups[group_id], ran_on, arts["runs"][group_id])


__all__ = [
    "STATUSES",
    "FactorSpaceView",
    "RecordedGroup",
    "factor_space_figure",
    "levels_frame",
    "propagation_frame",
    "recorded_group",
    "set_selected",
    "split_frame",
]
