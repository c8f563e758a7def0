"""The headless report: one standalone HTML page for a pipeline run (``tx8lab run --report``).

Spec: DESIGN.md §7 ("``tx8lab run MODEL --report out.html`` writes a standalone HTML page
with the graph, the per-group table, factor space, Gantt and timeline (plotly + inline SVG,
no server, no internet)"). :func:`write_html_report` writes the page from the run's steps and
the JSON report of :func:`tx8lab.core.report.build_report`.

The page, top to bottom: the header (model, hardware preset, total cycles, latency, op
counts), the pass table (name, wall ms, changed, ops, decisions), the graph of the final
module as inline SVG coloured by group, the per-group table, then for the ``top`` costliest
groups their factor space (the sharding candidates of the search), then the pipeline
timeline, the SPM Gantt (seed vs best allocator) and the mesh heatmap.

Readings chosen:

- **Standalone.** plotly.js is inlined once, in a ``<script>`` in the page head
  (``plotly.offline.get_plotlyjs()``); every figure is a ``<div>`` written with
  ``include_plotlyjs=False``. No ``src=`` or ``href=`` points outside the page, so it
  opens offline from a file. The graph is the SVG Graphviz wrote, its XML prolog and
  DOCTYPE dropped so it can sit in the HTML body. Hover is the browser's own: each op
  node's SVG ``<title>`` holds the op's attributes (``op_info``, what the GraphView's hover
  shows); click-to-decisions needs the widget.
- **Graph overlay = group**, collapsed by group above ``COLLAPSE_ABOVE`` ops (the graph
  view's rule), so a big model stays one readable drawing.
- **Group table** rows are the report's groups (``report["groups"]``), in program order:
  id, rule, ops (body op count, loads/stores included), tiles, cycles, SPM peak, limiting
  engine and the loop counts above 1 (``OCSPLIT x4``). Without group-cost the cost
  columns are empty and the page says the groups were not costed.
- **Costliest groups** by ``cycles`` (ties: lower id first). The SPM Gantt compares the
  pipeline's allocation with the other strategy (:func:`compare_allocations`: ``seed``
  and ``best``, ``best`` limited to ``alloc_time_limit_s`` per group).
- **Factor space** of the same costliest groups, in its own section
  before them: :func:`~tx8lab.widgets.factor_space.factor_space_figure` of the search
  group-cost stored (``search=search`` or ``exhaustive``); when the run did not search
  (``search=default``, or the group's strategy came from the template cache) the group is
  searched here with ``mode="search"``, the run's ``multi_buffer``/``retract`` and a
  ``search_budget_s`` budget (0.5 s), and the page says which. A search that fails is a
  note naming the group and the error, not a missing section.
- **Timing.** The page ends with how long each part took to build (graph layout, figures),
  so a slow report says where the time went.
- **C** (the emitted main.c): each costliest group ends with its IR beside the C the ``codegen``
  step wrote for it (a ``<details>`` block, closed, with the byte count); without a
  codegen step the page says so once.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from tx8lab.core.ir import Module
from tx8lab.core.passes.base import Step
from tx8lab.core.schedule.search import SearchResult, search_group
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig
from tx8lab.widgets.factor_space import factor_space_figure, levels_frame
from tx8lab.widgets.graph_dot import module_to_dot, op_info
from tx8lab.widgets.mesh import mesh_figure
from tx8lab.widgets.overlays import group_overlay
from tx8lab.widgets.render import render_svg
from tx8lab.widgets.spm_gantt import compare_allocations, group_schedule, spm_gantt_figure
from tx8lab.widgets.timeline import simulated_figure, timeline_figure

#: Costliest groups that get a factor space, a timeline, an SPM Gantt and a mesh heatmap.
TOP_GROUPS = 3

#: Budget of the search run for the factor space when the run did not search a group.
SEARCH_BUDGET_S = 0.5

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table.data { border-collapse: collapse; font-size: 13px; }
table.data th, table.data td { border: 1px solid #ddd; padding: 2px 8px; text-align: right; }
table.data th { background: #f3f3f3; }
table.data td:nth-child(2) { text-align: left; }
.totals td { padding: 2px 12px 2px 0; }
.graph { overflow: auto; max-height: 900px; border: 1px solid #ddd; }
.note { color: #555; font-style: italic; }
"""

_PROLOG_RE = re.compile(r"<\?xml[^>]*\?>\s*|<!DOCTYPE[^>]*>\s*", re.IGNORECASE)


def _inline_svg(svg: str) -> str:
    """The SVG without its XML prolog and DOCTYPE, ready to sit in HTML."""
    return _PROLOG_RE.sub("", svg).strip()


_NODE_TITLE_RE = re.compile(r'(<g id="op(\d+)" class="node[^"]*">\s*<title>)[^<]*(</title>)')


def with_tooltips(svg: str, module: Module) -> str:
    """Each op node's SVG ``<title>`` (the browser's hover text) set to its attributes."""
    ops = {op.id: op for op in module.walk()}

    def one(match: re.Match[str]) -> str:
        op = ops.get(int(match.group(2)))
        if op is None:
            return match.group(0)
        text = "\n".join(f"{k}: {v}" for k, v in op_info(op).items())
        return match.group(1) + html.escape(text, quote=False) + match.group(3)

    return _NODE_TITLE_RE.sub(one, svg)


def pass_table(report: Mapping[str, Any]) -> pd.DataFrame:
    """One row per pass: index, name, spec, wall ms, changed, ops after, decisions."""
    return pd.DataFrame.from_records(
        [
            {
                "#": p["index"],
                "pass": p["name"],
                "spec": p.get("spec", p["name"]),
                "wall ms": round(1e3 * float(p["wall_s"]), 2),
                "changed": "yes" if p["changed"] else "no",
                "ops": p["num_ops_after"],
                "decisions": p["num_decisions"],
            }
            for p in report.get("passes", [])
        ],
        columns=["#", "pass", "spec", "wall ms", "changed", "ops", "decisions"],
    )


def _loops_text(loops: Mapping[str, int] | None) -> str:
    if not loops:
        return ""
    looping = [f"{stage} x{n}" for stage, n in loops.items() if n > 1]
    return ", ".join(looping) or "none"


def _noc_text(group: Mapping[str, Any]) -> str:
    """``share, 5,465 saved`` for a group that talks over the NoC (group-cost ``noc``).

    ``k-reduce, none without NoC fits`` when no non-communicating candidate the search ran
    fits SPM (``noc_saved_cycles`` present but None).
    """
    comm = group.get("comm", "none")
    if comm == "none":
        return ""
    saved = group.get("noc_saved_cycles")
    if isinstance(saved, int):
        return f"{comm}, {saved:,} saved"
    if "noc_saved_cycles" in group:
        return f"{comm}, none without NoC fits"
    return str(comm)


def group_table(report: Mapping[str, Any]) -> pd.DataFrame:
    """One row per group of ``report["groups"]``: id, rule, ops, tiles, cycles, SPM, engine.

    ``NoC``: the group's communication (``k-reduce`` / ``share``) and the cycles it saved
    against the best non-communicating candidate the search ranked.
    """
    columns = ["id", "rule", "ops", "tiles", "cycles", "SPM peak B", "limited by", "loops", "NoC"]
    return pd.DataFrame.from_records(
        [
            {
                "id": f"%{g['id']}",
                "rule": g.get("rule") or "",
                "ops": len(g.get("ops", [])),
                "tiles": g.get("tiles", ""),
                "cycles": g.get("cycles", ""),
                "SPM peak B": g.get("spm_peak_bytes", ""),
                "limited by": g.get("limiting_engine", ""),
                "loops": _loops_text(g.get("loops")),
                "NoC": _noc_text(g),
            }
            for g in report.get("groups", [])
        ],
        columns=columns,
    )


def costliest_groups(report: Mapping[str, Any], top: int = TOP_GROUPS) -> list[int]:
    """Ids of the ``top`` groups with the most cycles (ties: lower id first)."""
    costed = [g for g in report.get("groups", []) if isinstance(g.get("cycles"), int)]
    costed.sort(key=lambda g: (-g["cycles"], g["id"]))
    return [int(g["id"]) for g in costed[:top]]


def _figure_div(fig: go.Figure) -> str:
    text: str = fig.to_html(full_html=False, include_plotlyjs=False)
    return text


def _table_html(df: pd.DataFrame) -> str:
    text: str = df.to_html(index=False, classes="data", border=0, escape=True)
    return text


def _fmt(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else html.escape(str(value))


def factor_space_sections(
    cost: Step, group_ids: Sequence[int], hw: ChipConfig, budget_s: float = SEARCH_BUDGET_S
) -> list[str]:
    """HTML of each group's factor space: a heading, a note, the figure, the levels table.

    Uses the search the group-cost step stored, else runs ``search_group(mode="search")``
    with the step's knobs and ``budget_s`` (module docstring).
    """
    groups = {op.id: op for op in cost.after.walk() if op.kind == "tx8be.Group"}
    stored: Mapping[int, SearchResult] = cost.result.artifacts.get("searches", {})
    knobs = cost.knobs
    out: list[str] = []
    for gid in group_ids:
        group = groups.get(gid)
        if group is None:
            raise Tx8labError(f"factor space: %{gid} is not a group of the group-cost output")
        out.append(f"<h3>Factor space of group %{gid}</h3>")
        result = stored.get(gid)
        try:
            if result is not None:
                where = f"the run's {result.mode} search"
            else:
                result = search_group(
                    group,
                    hw,
                    mode="search",
                    budget_s=budget_s,
                    multi_buffer=int(knobs.get("multi_buffer", 2)),
                    retract=bool(knobs.get("retract", True)),
                )
                where = (
                    f"searched for this page (the run used search={knobs.get('search')!r}"
                    + (", template cache" if knobs.get("search") != "default" else "")
                    + f"; budget {budget_s:g} s)"
                )
            fig = factor_space_figure(result, title=f"%{gid} factor space ({result.mode})")
            levels = levels_frame(group, hw)
        except Tx8labError as exc:
            out.append(f'<p class="note">No factor space for %{gid}: {html.escape(str(exc))}</p>')
            continue
        best = result.best
        chosen = (
            f"chosen #{best.index} ({html.escape(best.sharding)}, split "
            f"{html.escape(best.split)}): {best.cycles:,} cycles"
            if best is not None
            else "no candidate fits"
        )
        rejected = ", ".join(f"{k} {v}" for k, v in sorted(result.rejected().items()))
        out.append(
            f'<p class="note">From {html.escape(where)}: {result.evaluated} of '
            f"{result.space_size} candidates evaluated, {result.pruned} pruned, rejected: "
            f"{rejected or 'none'}; {chosen}.</p>"
        )
        out.append(_figure_div(fig))
        out.append(
            f"<details><summary>sharding levels of {html.escape(str(levels['op'].iloc[0]))} "
            f"({len(levels)} vectors)</summary>"
            + _table_html(levels.drop(columns=["op"]))
            + "</details>"
        )
    return out


def ir_beside_c_html(ir: str, c: str) -> str:
    """Two ``<pre>`` columns: a group's IR on the left, its C on the right."""
    pre = 'style="flex: 1; margin: 0 4px; overflow: auto; font-size: 11px"'
    return (
        '<div class="tx8-ir-c" style="display: flex">'
        f'<pre class="ir" {pre}>{html.escape(ir)}</pre>'
        f'<pre class="c" {pre}>{html.escape(c)}</pre></div>'
    )


def group_c_details(codegen: Step, group_id: int) -> str:
    """A closed ``<details>`` with the group's IR beside its C (from the codegen step)."""
    from tx8lab.core.codegen import group_ir_text

    c = codegen.result.artifacts["c"][group_id]
    ir = group_ir_text(codegen.after, group_id)
    return (
        f'<details class="c-code"><summary>%{group_id}: IR and C ({len(c.encode()):,} '
        f"bytes of C)</summary>{ir_beside_c_html(ir, c)}</details>"
    )


def write_html_report(
    path: str | Path,
    module: Module,
    steps: Sequence[Step],
    hw: ChipConfig,
    report: Mapping[str, Any],
    *,
    top: int = TOP_GROUPS,
    alloc_time_limit_s: float = 0.5,
    search_budget_s: float = SEARCH_BUDGET_S,
) -> dict[str, float]:
    """Write the standalone HTML page of a run; returns seconds spent per part.

    Args:
        path: Output ``.html`` file.
        module: The pipeline's input module.
        steps: The run's steps (the graph is the last step's module).
        hw: The hardware the run used.
        report: :func:`tx8lab.core.report.build_report` of the same run.
        top: How many of the costliest groups get a timeline, a Gantt and a mesh heatmap.
        alloc_time_limit_s: Time limit of the ``best`` allocator in the Gantt comparison.
        search_budget_s: Budget of the factor-space search of a group the run did not
            search.

    Raises:
        Tx8labError: the report does not belong to the steps (its pass list differs).
    """
    started = time.perf_counter()
    steps = list(steps)
    names = [s.name for s in steps]
    if list(report.get("pipeline", names)) != names:
        raise Tx8labError(
            f"write_html_report: the report lists passes {report.get('pipeline')} but the "
            f"steps are {names}; build the report from the same run (build_report)"
        )
    final = steps[-1].after if steps else module
    timings: dict[str, float] = {}
    body: list[str] = []

    # header
    model = html.escape(str(report.get("model", "module")))
    totals = [
        ("hardware", html.escape(hw.name)),
        ("ops (input / final)", f"{module.num_ops:,} / {final.num_ops:,}"),
        ("passes", str(len(steps))),
        ("pipeline wall time", f"{1e3 * sum(s.elapsed_s for s in steps):.1f} ms"),
    ]
    if "total_cycles" in report:
        totals.append(("total cycles", _fmt(int(report["total_cycles"]))))
        totals.append(("latency", f"{1e6 * float(report['latency_s']):.2f} µs"))
        totals.append(("barriers", _fmt(report.get("barriers", ""))))
    else:
        totals.append(("total cycles", "not estimated (group-cost did not run)"))
    body.append(f"<h1>tx8lab report: {model}</h1>")
    body.append(
        '<table class="totals">'
        + "".join(f"<tr><td>{k}</td><td><b>{v}</b></td></tr>" for k, v in totals)
        + "</table>"
    )

    # pass table
    body.append("<h2>Passes</h2>")
    body.append(_table_html(pass_table(report)))

    # graph
    t0 = time.perf_counter()
    dot = module_to_dot(
        final, group_overlay(final), title=f"{report.get('model', 'module')} after the pipeline"
    )
    rendered = render_svg(dot)
    timings["graph"] = time.perf_counter() - t0
    body.append("<h2>Graph (final module, coloured by group)</h2>")
    body.append(
        f'<p class="note">{final.num_ops:,} ops; laid out by {rendered.engine} in '
        f"{rendered.seconds:.2f} s. Hover a node for its attributes (clicking an op for "
        "its decisions needs the GraphView widget).</p>"
    )
    svg = with_tooltips(_inline_svg(rendered.svg), final)
    body.append(f'<div class="graph">{svg}</div>')

    # groups
    groups = group_table(report)
    body.append(f"<h2>Groups ({len(groups)})</h2>")
    if "total_cycles" not in report:
        body.append('<p class="note">The groups were not costed: group-cost did not run.</p>')
    body.append(_table_html(groups))

    # factor space of the costliest groups
    t0 = time.perf_counter()
    cost = next((s for s in steps if s.name == "group-cost"), None)
    chosen = costliest_groups(report, top) if cost is not None else []
    if cost is not None:
        body.append("<h2>Factor space</h2>")
        body.extend(factor_space_sections(cost, chosen, hw, search_budget_s))
    timings["factor space"] = time.perf_counter() - t0

    # costliest groups
    t0 = time.perf_counter()
    codegen = next((s for s in steps if s.name == "codegen"), None)
    if chosen:
        body.append(f"<h2>The {len(chosen)} costliest groups</h2>")
    for gid in chosen:
        sched = group_schedule(cost if cost is not None else steps, gid)
        entry = next(g for g in report["groups"] if g["id"] == gid)
        stall = entry.get("costliest_stall")
        body.append(
            f"<h3>Group %{gid}: {_fmt(entry['cycles'])} cycles"
            + (
                f" simulated (plan {_fmt(entry['plan_cycles'])})"
                if "plan_cycles" in entry and "latency_ms" in entry
                else ""
            )
            + f", limited by {html.escape(str(entry.get('limiting_engine')))}"
            + (
                f"; costliest stall {html.escape(stall['engine'])} {html.escape(stall['reason'])}"
                f" {stall['ms'] * 1e3:.2f} µs"
                if isinstance(stall, dict)
                else ""
            )
            + "</h3>"
        )
        body.append(
            _figure_div(timeline_figure(sched.timeline, title=f"%{gid} pipeline (the plan)"))
        )
        played = cost.result.artifacts["runs"][gid].simulated if cost is not None else None
        if played is not None and played.result is not None:
            body.append(
                _figure_div(
                    simulated_figure(
                        played.result, title=f"%{gid} simulated execution (stalls shaded)"
                    )
                )
            )
        panels = compare_allocations(sched.allocation, time_limit_s=alloc_time_limit_s)
        body.append(
            _figure_div(
                spm_gantt_figure(
                    panels,
                    sched.inp.buffers,
                    timeline=sched.timeline,
                    title=f"%{gid} SPM: seed vs best allocator",
                )
            )
        )
        body.append(_figure_div(mesh_figure(sched, hw)))
        if codegen is not None:
            body.append(group_c_details(codegen, gid))
    if chosen and codegen is None:
        body.append(
            '<p class="note">No C: the codegen pass did not run (check --passes / --until).</p>'
        )
    timings["groups"] = time.perf_counter() - t0
    if cost is None:
        body.append(
            '<p class="note">No timelines or SPM Gantts: group-cost did not run '
            "(check --passes / --until).</p>"
        )

    timings["total"] = time.perf_counter() - started
    body.append(
        '<p class="note">Report built in '
        + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items())
        + ".</p>"
    )
    page = (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>tx8lab report: {model}</title><style>{_CSS}</style>"
        f'<script type="text/javascript">{get_plotlyjs()}</script></head>\n<body>\n'
        + "\n".join(body)
        + "\n</body></html>\n"
    )
    Path(path).write_text(page, encoding="utf-8")
    return timings


__all__ = [
    "SEARCH_BUDGET_S",
    "TOP_GROUPS",
    "costliest_groups",
    "factor_space_sections",
    "group_c_details",
    "group_table",
    "ir_beside_c_html",
    "pass_table",
    "with_tooltips",
    "write_html_report",
]
