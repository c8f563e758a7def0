"""GraphView without a browser: traits, and front-end messages faked with set_state."""

from __future__ import annotations

import pytest
import traitlets

from tests.widgets.traces import step_of, trace_of
from tx8lab.core.ir import TERMINATORS, Module
from tx8lab.errors import Tx8labError
from tx8lab.widgets import GraphView, numeric_overlay
from tx8lab.widgets.graph_dot import group_ids
from tx8lab.widgets.render import svg_node_ids


def _op_nodes(view: GraphView) -> list[str]:
    return [i for i in svg_node_ids(view.svg) if i.startswith("op")]


def test_built_from_a_trace(model_name: str) -> None:
    steps = trace_of(model_name)
    view = GraphView.from_steps(steps)
    final = steps[-1].after
    drawn = [op for op in final.walk() if op.kind not in TERMINATORS and op.kind != "tx8be.Group"]
    assert len(_op_nodes(view)) == len(drawn)
    assert set(view.colors) == {f"op{op.id}" for op in final.walk() if op.kind not in TERMINATORS}
    assert view.overlay == "alignment"
    assert {"alignment", "group", "created_by", "engine"} <= set(view.overlay_names)
    assert view.render_engine in ("dot", "wasm")
    assert view.render_seconds > 0
    assert view.selected == -1
    assert view.selected_decisions == []
    assert len(view.decisions) == sum(len(s.decisions) for s in steps)
    # hover texts for every drawn op
    assert {f"op{op.id}" for op in drawn} <= set(view.node_info)
    for g in group_ids(final):
        assert f'id="grp{g}"' in view.svg


def test_click_on_a_channel_norm_shows_why_it_was_inserted(model_name: str) -> None:
    step = step_of(model_name, "layout-align-npu")
    view = GraphView.from_steps(trace_of(model_name))
    # one that is still drawn: const-norm erases those of constants
    kept = {op.id for op in trace_of(model_name)[-1].after.walk()}
    inserted = next(d for d in step.decisions if d.choice == "inserted" and d.op_id in kept)
    assert inserted.op_id is not None
    view.set_state({"selected": inserted.op_id})  # what the browser sends on click
    assert view.selected_info["op"] == f"%{inserted.op_id} tx8be.ChannelNorm"
    assert view.selected_info["alignment"] in ("ALIGN", "NALIGN")
    mine = [d for d in view.selected_decisions if d["pass"] == "layout-align-npu"]
    assert mine[0]["choice"] == "inserted"
    assert mine[0]["reason"] == inserted.reason
    assert mine[0]["data"]["direction"] == inserted.data["direction"]
    # the decision names the ops the ChannelNorm feeds: clicking one shows it too
    user = inserted.related_ids[-1]
    view.set_state({"selected": user})
    assert any(d["op_id"] == inserted.op_id for d in view.selected_decisions)
    view.set_state({"selected": -1})
    assert view.selected_info == {}
    assert view.selected_decisions == []


def test_selecting_an_unknown_op_is_an_error() -> None:
    view = GraphView(step_of("tiny_cnn", "layout-init").after)
    with pytest.raises(traitlets.TraitError, match="%9999 is not an op"):
        view.selected = 9999


def test_a_new_overlay_recolours_without_a_new_layout() -> None:
    view = GraphView.from_steps(trace_of("layout_align_demo"))
    svg, colors = view.svg, dict(view.colors)
    view.set_state({"overlay": "created_by"})  # the browser's menu
    assert view.svg is svg
    assert view.colors != colors
    assert any(label == "layout-align-npu" for label, _ in view.legend)
    assert view.recolor_ms >= 0
    with pytest.raises(Tx8labError, match="unknown overlay 'cycles'"):
        view.overlay = "cycles"
    cycles = {int(k[2:]): float(i + 1) for i, k in enumerate(sorted(view.colors))}
    view.add_overlay(numeric_overlay("cycles", cycles, "cycles"))
    assert view.overlay == "cycles"
    assert "cycles" in view.overlay_names
    assert view.svg is svg
    some = next(iter(cycles))
    assert view.labels[f"op{some}"] == f"{cycles[some]:.4g} cycles"
    # the static SVG carries the current colours
    assert view.colors[f"op{some}"] in view.to_svg()


def test_a_function_overlay_is_computed_per_module() -> None:
    view = GraphView(step_of("tiny_cnn", "layout-init").after)
    view.add_overlay(lambda m: numeric_overlay("ops", {op.id: 1.0 for op in m.walk()}), "ops")
    assert view.overlay == "ops"
    assert view.legend == [["1", "#d94801"]]
    with pytest.raises(Tx8labError, match="give a name"):
        view.add_overlay(lambda m: numeric_overlay("x", {}))


def _grouped_final() -> Module:
    final = trace_of("tiny_cnn")[-1].after
    assert group_ids(final), "the default pipeline made no group"
    return final


def test_expand_and_collapse_by_front_end_message() -> None:
    final = _grouped_final()
    view = GraphView(final, collapse_above=5)
    top_groups = [op.id for op in final.main.ops if op.kind == "tx8be.Group"]
    assert set(top_groups) <= set(view.collapsed)
    before = len(_op_nodes(view))
    target = max(
        top_groups, key=lambda g: len(next(o for o in final.main.ops if o.id == g).regions[0].ops)
    )
    # a click on a collapsed group: the front end sends a custom message
    view._handle_custom_msg({"type": "expand", "id": target}, [])
    assert target not in view.collapsed
    assert f'id="grp{target}"' in view.svg
    assert f'id="op{target}"' not in view.svg
    assert len(_op_nodes(view)) > before
    view.handle_message({"type": "collapse", "id": target})
    assert target in view.collapsed
    assert len(_op_nodes(view)) == before
    with pytest.raises(Tx8labError, match="not a collapsed group"):
        view.expand(target + 10_000)
    with pytest.raises(Tx8labError, match="unknown message"):
        view.handle_message({"type": "zoom"})


def test_small_graphs_open_expanded() -> None:
    view = GraphView(_grouped_final())
    assert view.collapsed == []
    assert "collapsed" not in view.svg


def test_set_module_keeps_the_overlay_and_resets_a_vanished_selection() -> None:
    steps = trace_of("layout_align_demo")
    npu = step_of("layout_align_demo", "layout-align-npu")
    view = GraphView(npu.after, decisions=npu.decisions)
    norm = next(d.op_id for d in npu.decisions if d.choice == "inserted")
    view.selected = norm
    view.overlay = "created_by"
    view.set_module(npu.before)
    assert view.overlay == "created_by"
    assert view.selected == -1
    view.set_module(steps[-1].after, decisions=[d for s in steps for d in s.decisions])
    assert len(_op_nodes(view)) > 0
