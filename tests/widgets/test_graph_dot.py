"""The graph view's pure part: DOT from a module, overlays, headless SVG, restyling."""

from __future__ import annotations

import re

import pytest

from tests.widgets.traces import step_of, trace_of
from tx8lab.core import Builder, zoo
from tx8lab.core.grouping import outline
from tx8lab.core.ir import TERMINATORS, IdCounter, Module
from tx8lab.errors import Tx8labError
from tx8lab.widgets.graph_dot import (
    COLLAPSE_ABOVE,
    add_ghost,
    build_view,
    group_ids,
    module_to_dot,
    op_info,
)
from tx8lab.widgets.overlays import (
    ALIGN_COLORS,
    alignment_of,
    alignment_overlay,
    category_overlay,
    created_by_overlay,
    engine_overlay,
    group_overlay,
    numeric_overlay,
)
from tx8lab.widgets.render import (
    available_engines,
    render_svg,
    restyle_svg,
    svg_node_ids,
)


def _node_lines(dot: str) -> dict[str, str]:
    """DOT node statements by node name."""
    out = {}
    for line in dot.splitlines():
        m = re.match(r'\s*"?([\w-]+)"? \[(.*)\]$', line)
        if m and "->" not in line and m.group(1) not in ("graph", "node", "edge"):
            out[m.group(1)] = m.group(2)
    return out


def _drawn_op_ids(module: Module) -> set[int]:
    """Ops an expanded view draws: every op but the (expanded) groups themselves."""
    return {
        op.id for op in module.walk() if op.kind not in TERMINATORS and op.kind != "tx8be.Group"
    }


def _grouped() -> Module:
    b = Builder()
    x = b.input((1, 4, 4, 8), "f32")
    a = b.op("Relu", x)  # %0
    c = b.op("Neg", a)  # %1
    d = b.op("Abs", x)  # %2
    e = b.op("Add", c, d)  # %3
    b.output(e)
    module = b.finish()
    ids = IdCounter(module.next_id)
    func, _ = outline(module.main, [[0, 1]], ids, created_by="test")
    return Module((func,), module.attrs, ids.next_id)


# ------------------------------------------------------------------ structure


def test_one_node_per_op_and_a_cluster_per_group(final: Module) -> None:
    dot = module_to_dot(final)
    nodes = _node_lines(dot)
    op_nodes = {int(n[2:]) for n in nodes if re.fullmatch(r"op\d+", n)}
    assert op_nodes == _drawn_op_ids(final)
    groups = group_ids(final)
    assert dot.count("subgraph cluster_") == len(groups)
    for g in groups:
        assert f"id=grp{g}" in dot
    # the function's inputs and its return are drawn too
    assert "in0" in nodes
    assert "out" in nodes


def test_svg_has_as_many_op_nodes_as_the_dot(final: Module) -> None:
    rendered = render_svg(module_to_dot(final))
    ids = [i for i in svg_node_ids(rendered.svg) if i.startswith("op")]
    assert len(ids) == len(set(ids)) == len(_drawn_op_ids(final))
    assert rendered.seconds > 0
    for g in group_ids(final):
        assert f'id="grp{g}"' in rendered.svg


def test_channel_norms_are_hexagons_labelled_with_their_direction(model_name: str) -> None:
    after = step_of(model_name, "layout-align-npu").after
    nodes = _node_lines(module_to_dot(after))
    norms = [op for op in after.walk() if op.kind == "tx8be.ChannelNorm"]
    assert norms, f"{model_name}: layout-align-npu inserted no ChannelNorm"
    for op in norms:
        line = nodes[f"op{op.id}"]
        assert "shape=hexagon" in line
        assert "cn" in re.search(r'class="([^"]*)"', line).group(1).split()  # type: ignore[union-attr]
        want = "to ALIGN" if op.attrs["direction"] else "to NALIGN"
        assert want in line
        assert alignment_of(op) == want.split()[1]


def test_constants_are_dimmed_and_keep_the_overlay_colour() -> None:
    module = zoo.layout_align_demo()
    overlay = alignment_overlay(module)
    nodes = _node_lines(module_to_dot(module, overlay))
    constants = [op for op in module.main.ops if op.kind == "tx8be.Constant"]
    assert constants
    for op in constants:
        line = nodes[f"op{op.id}"]
        assert f'fillcolor="{overlay.color(op.id)}66"' in line
        assert "dashed" in line
        assert "const" in line
    relu = next(op for op in module.main.ops if op.kind == "tx8be.Relu")
    assert "dashed" not in nodes[f"op{relu.id}"]


def test_groups_from_the_ir_structure_without_a_grouping_pass() -> None:
    module = _grouped()
    (group,) = [op for op in module.main.ops if op.kind == "tx8be.Group"]
    view = build_view(module)
    assert view.clusters.keys() == {group.id}
    assert {n.cluster for n in view.nodes.values() if n.op is not None} == {group.id, None}
    # the input feeds the member reading the group's block argument; the member that
    # produces the group's result feeds the Add outside
    assert ("in0", "op0") in view.edges
    assert ("op1", "op3") in view.edges
    assert ("in0", "op2") in view.edges
    assert not any(f"op{group.id}" in edge for edge in view.edges)


def test_collapsed_group_is_one_node_that_takes_its_members_edges() -> None:
    module = _grouped()
    (group,) = [op for op in module.main.ops if op.kind == "tx8be.Group"]
    view = build_view(module, collapsed={group.id})
    assert not view.clusters
    name = f"op{group.id}"
    assert view.nodes[name].role == "group"
    assert view.drawn[0] == view.drawn[1] == name
    assert ("in0", name) in view.edges
    assert (name, "op3") in view.edges
    dot = module_to_dot(module, collapsed={group.id})
    line = _node_lines(dot)[name]
    assert "collapsed" in line
    assert "2 ops" in line


def test_big_modules_open_with_groups_collapsed(final: Module) -> None:
    groups = group_ids(final)
    dot = module_to_dot(final, collapse_above=5)
    nodes = _node_lines(dot)
    top = [op for op in final.main.ops if op.kind not in TERMINATORS]
    assert {n for n in nodes if n.startswith("op")} == {f"op{op.id}" for op in top}
    assert sum("collapsed" in nodes[f"op{g}"] for g in groups if f"op{g}" in nodes) == len(
        [op for op in top if op.kind == "tx8be.Group"]
    )
    # one group kept open
    if groups:
        open_dot = module_to_dot(final, collapse_above=5, expanded={groups[0]})
        assert f"cluster_{groups[0]}" in open_dot


def test_long_edges_in_big_graphs_start_from_a_stub() -> None:
    b = Builder()
    x = b.input((1, 8), "f32")
    shared = b.constant([[1.0] * 8])
    y = b.op("Add", x, shared)
    for _ in range(COLLAPSE_ABOVE + 50):
        y = b.op("Relu", y)
    b.output(b.op("Add", y, shared))
    module = b.finish()
    dot = module_to_dot(module)
    nodes = _node_lines(dot)
    stubs = [n for n in nodes if n.startswith("px-")]
    assert stubs == [f"px-op{shared.owner}-op{module.main.ops[-2].id}"]
    assert f'"{stubs[0]}" -> op{module.main.ops[-2].id}' in dot
    # still one node per op
    assert len([n for n in nodes if n.startswith("op")]) == module.num_ops


def test_removed_ops_are_drawn_dashed_with_their_old_edges() -> None:
    step = step_of("layout_align_demo", "layout-align-opt")
    erased = [d.op_id for d in step.decisions if d.choice == "erased"]
    assert erased
    view = build_view(step.after)
    removed = add_ghost(view, step.before)
    assert sorted(removed) == sorted(erased)
    for op_id in removed:
        assert view.nodes[f"op{op_id}"].role == "removed"
        assert any(f"op{op_id}" in edge for edge in view.edges)
    dot = module_to_dot(step.after, ghost=step.before)
    for op_id in removed:
        assert "removed" in _node_lines(dot)[f"op{op_id}"]


def test_edge_labels_name_the_tensor_type() -> None:
    module = zoo.tiny_cnn()
    assert "label=" not in "".join(
        line for line in module_to_dot(module).splitlines() if "->" in line
    )
    labelled = module_to_dot(module, edge_labels=True)
    assert re.search(r'-> op\d+ \[label="1x8x8x8 f16"\]', labelled)


def test_op_info_shows_attributes_without_bytes() -> None:
    step = step_of("layout_align_demo", "layout-align-npu")
    norm = next(op for op in step.after.walk() if op.kind == "tx8be.ChannelNorm")
    info = op_info(norm)
    assert info["op"] == norm.label
    assert info["created_by"] == "layout-align-npu"
    assert "mem_layout=" in info["dev_info"]
    assert info["converts to"].startswith("ALIGN" if norm.attrs["direction"] else "NALIGN")
    const = next(op for op in zoo.tiny_cnn().walk() if op.kind == "tx8be.Constant")
    assert all(len(v) <= 120 for v in op_info(const).values())


# ------------------------------------------------------------------ overlays


def test_alignment_overlay_before_and_after_layout_align() -> None:
    before = zoo.layout_align_demo()
    kinds = {op.id: op.kind for op in before.walk()}
    modes = alignment_overlay(before).labels
    conv = next(i for i, k in kinds.items() if k == "tx8be.Conv2d")
    relu = next(i for i, k in kinds.items() if k == "tx8be.Relu")
    assert modes[conv] == "ALIGN"
    assert modes[relu] == "BOTH"
    after = step_of("layout_align_demo", "layout-align-npu").after
    decided = {
        d.op_id: d.choice
        for d in step_of("layout_align_demo", "layout-align-npu").decisions
        if d.choice in ("ALIGN", "NALIGN")
    }
    overlay = alignment_overlay(after)
    for op_id, choice in decided.items():
        assert overlay.label(op_id) == choice
        assert overlay.color(op_id) == ALIGN_COLORS[choice]


def test_group_and_created_by_overlays(final: Module) -> None:
    groups = group_ids(final)
    overlay = group_overlay(final)
    for g in groups:
        members = [o.id for o in next(op for op in final.walk() if op.id == g).regions[0].ops]
        labels = {overlay.label(i) for i in members if i >= 0}
        assert len(labels) == 1
    made = created_by_overlay(final)
    for op in final.walk():
        if op.kind not in TERMINATORS:
            assert made.label(op.id) == (op.created_by or "model")
    engines = set(engine_overlay(final).labels.values())
    assert engines <= {"NE", "CT", "RDMA", "WDMA", "TDMA", "SCALAR", "MIXED", "UNKNOWN"}


def test_generic_overlays() -> None:
    cat = category_overlay("x", {1: "a", 2: "b", 3: "a"}, {"b": "#000000"})
    assert cat.color(2) == "#000000"
    assert cat.color(1) == cat.color(3) != "#000000"
    assert cat.label(9) == "n/a"
    num = numeric_overlay("cycles", {1: 1.0, 2: 100.0, 3: 10.0}, "cycles", log=True)
    assert num.color(3) not in (num.color(1), num.color(2))
    assert [label for label, _ in num.legend] == ["1 cycles", "100 cycles"]
    with pytest.raises(Tx8labError, match="log scale"):
        numeric_overlay("bad", {1: 0.0}, log=True)
    assert cat.to_json()["colors"] == {"op1": cat.color(1), "op2": "#000000", "op3": cat.color(3)}


# ------------------------------------------------------------------ rendering


def test_the_wasm_engine_is_installed_with_the_widgets_extra() -> None:
    assert "wasm" in available_engines()


@pytest.mark.parametrize("engine", available_engines())
def test_every_engine_draws_the_same_nodes(engine: str) -> None:
    module = trace_of("layout_align_demo")[-1].after
    dot = module_to_dot(module)
    rendered = render_svg(dot, engine)  # type: ignore[arg-type]
    assert rendered.engine == engine
    assert set(svg_node_ids(rendered.svg)) == set(_node_lines(dot))


def test_render_errors_name_the_engine() -> None:
    with pytest.raises(Tx8labError, match="wasm Graphviz failed"):
        render_svg("digraph { a -> }", "wasm")
    with pytest.raises(Tx8labError, match="unknown render engine"):
        render_svg("digraph {}", "neato")  # type: ignore[arg-type]
    # the wasm instance is rebuilt after a failure
    assert "<svg" in render_svg("digraph { a -> b }", "wasm").svg


def test_restyle_changes_only_the_named_fills() -> None:
    module = zoo.layout_align_demo()
    svg = render_svg(module_to_dot(module)).svg
    const = next(op.id for op in module.main.ops if op.kind == "tx8be.Constant")
    relu = next(op.id for op in module.main.ops if op.kind == "tx8be.Relu")
    out = restyle_svg(svg, {f"op{const}": "#010203", f"op{relu}": "#040506"})
    assert out.count("#010203") == 1
    assert out.count("#040506") == 1
    block = re.search(rf'<g id="op{const}" class="node[^"]*">(.*?)</g>', out, re.S)
    assert block is not None
    assert 'fill="#010203" fill-opacity=' in block.group(1)
    assert len(out) == len(svg)
