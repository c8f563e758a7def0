"""The headless HTML report: one standalone page (graph SVG, tables, plotly figures)."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.widgets.traces import trace_of
from tx8lab import cli
from tx8lab.core import zoo
from tx8lab.core.ir import Module
from tx8lab.core.passes import build_pipeline
from tx8lab.core.passes.base import Step
from tx8lab.core.report import build_report
from tx8lab.core.runner import run_pipeline
from tx8lab.core.schedule.search import search_group
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81
from tx8lab.widgets.factor_space import levels_frame
from tx8lab.widgets.render import svg_node_ids
from tx8lab.widgets.report_html import (
    SEARCH_BUDGET_S,
    costliest_groups,
    group_table,
    pass_table,
    write_html_report,
)

FIGURE_DIV = 'class="plotly-graph-div"'


def _run(name: str) -> tuple[Module, list[Step], dict[str, Any]]:
    steps = trace_of(name)
    module = steps[0].before
    return module, steps, build_report(module, steps, TX81, model=name)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    module, steps, report = _run("tiny_cnn")
    path = tmp_path_factory.mktemp("report") / "tiny_cnn.html"
    timings = write_html_report(path, module, steps, TX81, report)
    assert timings["total"] > 0
    return path.read_text(encoding="utf-8")


def _section(page: str, heading: str) -> str:
    start = page.index(f"<h2>{heading}")
    end = page.find("<h2>", start + 4)
    return page[start : end if end >= 0 else len(page)]


def test_graph_svg_has_one_node_per_op_and_a_cluster_per_group(page: str) -> None:
    final = trace_of("tiny_cnn")[-1].after
    groups = {op.id for op in final.walk() if op.kind == "tx8be.Group"}
    ops = {op.id for op in final.walk() if op.kind not in ("tx8be.Group", "tx8be.Return")}
    ops -= {op.id for op in final.walk() if op.kind == "func.return"}
    graph = _section(page, "Graph")
    assert graph.count("<svg") == 1
    assert "<?xml" not in page
    assert "<!DOCTYPE svg" not in page
    nodes = [int(i[2:]) for i in svg_node_ids(graph) if i.startswith("op")]
    assert len(nodes) == len(set(nodes)) == len(ops) == final.num_ops - len(groups)
    assert set(nodes) == ops
    for gid in groups:
        assert f'id="grp{gid}"' in graph


def test_graph_nodes_hover_with_their_attributes(page: str) -> None:
    final = trace_of("tiny_cnn")[-1].after
    conv = next(op for op in final.walk() if op.name == "Conv2d")
    title = re.search(rf'<g id="op{conv.id}" class="node[^"]*">\s*<title>([^<]*)</title>', page)
    assert title is not None
    text = html.unescape(title.group(1))
    assert text.startswith(f"op: {conv.label}\n")
    assert f"created_by: {conv.created_by or 'the input model'}" in text
    assert "results: " in text


def test_group_table_has_one_row_per_group(page: str) -> None:
    _, _, report = _run("tiny_cnn")
    table = _section(page, "Groups")
    body = table[table.index("<tbody>") : table.index("</tbody>")]
    assert body.count("<tr") == len(report["groups"]) == 5
    for group in report["groups"]:
        assert f"<td>%{group['id']}</td>" in body
    df = group_table(report)
    assert list(df["cycles"]) == [g["cycles"] for g in report["groups"]]
    assert list(df["ops"]) == [len(g["ops"]) for g in report["groups"]]


def test_pass_table_and_totals(page: str) -> None:
    _, steps, report = _run("tiny_cnn")
    df = pass_table(report)
    assert list(df["pass"]) == [s.name for s in steps]
    assert list(df["spec"]) == [s.pass_.spec() for s in steps]
    assert list(df["decisions"]) == [len(s.decisions) for s in steps]
    for step in steps:
        assert f"<td>{step.name}</td>" in _section(page, "Passes")
    assert f"{report['total_cycles']:,}" in page
    assert "tx8lab report: tiny_cnn" in page


def test_costliest_groups_get_timeline_gantt_and_mesh(page: str) -> None:
    _, _, report = _run("tiny_cnn")
    top = costliest_groups(report, 3)
    cycles = {g["id"]: g["cycles"] for g in report["groups"]}
    assert len(top) == 3
    assert [cycles[g] for g in top] == sorted(cycles.values(), reverse=True)[:3]
    # factor space, the plan's timeline, the simulated run, SPM Gantt, mesh for each
    assert page.count(FIGURE_DIV) == 3 * 5
    assert page.count("simulated execution (stalls shaded)") == 3
    assert page.count(" cycles simulated (plan ") >= 3
    positions = [page.index(f"<h3>Group %{gid}:") for gid in top]
    assert positions == sorted(positions)


def test_page_is_standalone(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.IGNORECASE)
    assert not re.search(r"<link[^>]*\bhref\s*=\s*[\"']?https?:", page, re.IGNORECASE)
    assert not re.search(r"<(img|iframe)[^>]*\bsrc\s*=\s*[\"']?https?:", page, re.IGNORECASE)
    # plotly.js inlined exactly once, in the head
    head = page[: page.index("<body>")]
    assert head.count("<script") == 1
    assert len(head) > 1_000_000
    assert page.count("<script") == 1 + 15  # plus one newPlot call per figure


def test_factor_space_of_each_costliest_group_searched_for_the_page(tmp_path: Path) -> None:
    steps = trace_of("tiny_cnn", "group-cost.search=default")
    module = steps[0].before
    report = build_report(module, steps, TX81, model="tiny_cnn")
    write_html_report(tmp_path / "default.html", module, steps, TX81, report)
    section = _section((tmp_path / "default.html").read_text(encoding="utf-8"), "Factor space")
    top = costliest_groups(report, 3)
    assert section.count(FIGURE_DIV) == len(top) == 3
    # a run with search=default stores no search: the page searched each group itself
    assert section.count("searched for this page (the run used search=&#x27;default&#x27;") == 3
    heads = [section.index(f"<h3>Factor space of group %{gid}</h3>") for gid in top]
    assert heads == sorted(heads)
    cost = next(s for s in steps if s.name == "group-cost")
    group = next(op for op in cost.after.walk() if op.id == top[0])
    result = search_group(group, TX81, mode="search", budget_s=SEARCH_BUDGET_S)
    assert result.best is not None
    first = section[heads[0] : heads[1]]
    assert f"{result.evaluated} of {result.space_size} candidates evaluated" in first
    assert f"chosen #{result.best.index}" in first
    assert f"{len(levels_frame(group, TX81))} vectors)" in first


def test_factor_space_uses_the_runs_stored_search(tmp_path: Path) -> None:
    module = zoo.build("tiny_cnn")
    passes = build_pipeline(overrides={"group-cost.search": "exhaustive"})
    steps = list(run_pipeline(module, passes, TX81))
    report = build_report(module, steps, TX81, model="tiny_cnn")
    path = tmp_path / "searched.html"
    write_html_report(path, module, steps, TX81, report, top=2)
    section = _section(path.read_text(encoding="utf-8"), "Factor space")
    searches = next(s for s in steps if s.name == "group-cost").result.artifacts["searches"]
    assert section.count("From the run&#x27;s exhaustive search") == 2
    assert "searched for this page" not in section
    for gid in costliest_groups(report, 2):
        got = searches[gid]
        want = f"{got.evaluated} of {got.space_size} candidates evaluated, {got.pruned} pruned"
        assert want in section


def test_without_group_cost_the_page_says_so(tmp_path: Path) -> None:
    module = zoo.build("tiny_cnn")
    steps = list(run_pipeline(module, build_pipeline(), TX81, until="group"))
    report = build_report(module, steps, TX81, model="tiny_cnn", until="group")
    path = tmp_path / "early.html"
    write_html_report(path, module, steps, TX81, report)
    page = path.read_text(encoding="utf-8")
    assert "group-cost did not run" in page
    assert FIGURE_DIV not in page
    assert "<h2>Factor space" not in page
    assert svg_node_ids(page)


def test_a_report_of_another_run_is_refused(tmp_path: Path) -> None:
    module, steps, report = _run("tiny_cnn")
    with pytest.raises(Tx8labError, match="build the report from the same run"):
        write_html_report(tmp_path / "x.html", module, steps[:-1], TX81, report)


def test_cli_writes_the_page_next_to_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    js = tmp_path / "r.json"
    assert cli.main(["run", "tiny_cnn", "--report", str(out), "--json", str(js)]) == 0
    printed = capsys.readouterr().out
    assert f"HTML report written to {out}" in printed
    assert js.is_file()
    page = out.read_text(encoding="utf-8")
    assert "tx8lab report: tiny_cnn" in page
    assert page.count(FIGURE_DIV) == 15


def test_cli_report_without_the_widgets_extra_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "tx8lab.widgets.report_html", None)
    out = tmp_path / "r.html"
    assert cli.main(["run", "tiny_cnn", "--report", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--report needs the widgets extra" in err
    assert "pip install 'tx8lab[widgets]'" in err
    assert not out.exists()


def test_costliest_groups_show_their_ir_beside_their_c(page: str) -> None:
    _, steps, report = _run("tiny_cnn")
    codegen = steps[-1]
    assert codegen.name == "codegen"
    top = costliest_groups(report, 3)
    for gid in top:
        c = codegen.result.artifacts["c"][gid]
        start = page.index(f"<summary>%{gid}: IR and C ({len(c.encode()):,} bytes of C)</summary>")
        block = page[start : page.index("</details>", start)]
        ir, code = block.split('<pre class="c"', 1)
        assert f"%{gid} = &quot;tx8be.Group&quot;" in ir
        assert html.escape(c) in code
    assert page.count('<details class="c-code">') == len(top)


def test_without_codegen_the_page_says_there_is_no_c(tmp_path: Path) -> None:
    module = zoo.build("tiny_cnn")
    steps = list(run_pipeline(module, build_pipeline(None), TX81, until="opt-ddr"))
    report = build_report(module, steps, TX81)
    path = tmp_path / "no_c.html"
    write_html_report(path, module, steps, TX81, report, top=1)
    text = path.read_text(encoding="utf-8")
    assert "No C: the codegen pass did not run" in text
    assert '<details class="c-code">' not in text
