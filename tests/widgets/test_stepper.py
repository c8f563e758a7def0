"""PassStepper and the diffs it shows, without a browser (set_state fakes the front end)."""

from __future__ import annotations

import html
from dataclasses import replace
from typing import Any

import pytest

from tests.widgets.traces import step_of, trace_of
from tx8lab.core import Builder, zoo
from tx8lab.core.grouping import outline
from tx8lab.core.ir import TERMINATORS, IdCounter, Module
from tx8lab.core.runner import Explorer
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81
from tx8lab.widgets import PassStepper, decisions_frame, graph_diff, ir_diff_html
from tx8lab.widgets.render import svg_node_ids


def _ids(module: Module) -> set[int]:
    return {op.id for op in module.walk() if op.kind not in TERMINATORS}


# ------------------------------------------------------------------ diffs


def test_graph_diff_counts_match_the_op_sets(model_name: str) -> None:
    for step in trace_of(model_name):
        diff = graph_diff(step.before, step.after)
        before, after = _ids(step.before), _ids(step.after)
        assert set(diff.added) == after - before
        assert set(diff.removed) == before - after
        assert set(diff.changed) <= before & after
        if not step.changed:
            assert diff.summary() == {"added": 0, "removed": 0, "changed": 0}


def test_graph_diff_names_what_changed() -> None:
    init = step_of("tiny_cnn", "layout-init")
    diff = graph_diff(init.before, init.after)
    assert diff.changed
    assert all(c == ("attr:layout_str",) for c in diff.changed.values())
    npu = step_of("layout_align_demo", "layout-align-npu")
    diff = graph_diff(npu.before, npu.after)
    inserted = {d.op_id for d in npu.decisions if d.choice == "inserted"}
    assert set(diff.added) == inserted
    fed = {i for d in npu.decisions if d.choice == "inserted" for i in d.related_ids[1:]}
    assert all("operands" in diff.changed[i] for i in fed)


def test_outlining_changes_the_group_not_the_operands() -> None:
    b = Builder()
    x = b.input((1, 8), "f32")
    y = b.op("Neg", b.op("Relu", x))
    b.output(b.op("Abs", y))
    module = b.finish()
    ids = IdCounter(module.next_id)
    func, (group,) = outline(module.main, [[0, 1]], ids)
    grouped = Module((func,), module.attrs, ids.next_id)
    diff = graph_diff(module, grouped)
    assert diff.added == (group.id,)
    assert diff.changed == {0: ("group",), 1: ("group",)}


def test_ir_diff_html_marks_added_lines() -> None:
    npu = step_of("layout_align_demo", "layout-align-npu")
    text = ir_diff_html(npu.before, npu.after)
    assert '<tr class="add">' in text
    assert "tx8be.ChannelNorm" in text
    assert "<mark>" in text  # the dev_info added to existing ops is marked inside the line
    same = trace_of("layout_align_demo")[0]
    assert "identical" in ir_diff_html(same.before, same.after)
    short = ir_diff_html(npu.before, npu.after, max_lines=5)
    assert "more diff lines not shown" in short


def test_decisions_frame_has_one_row_per_decision_and_data_columns() -> None:
    npu = step_of("layout_align_demo", "layout-align-npu")
    frame = decisions_frame(npu.decisions)
    assert len(frame) == len(npu.decisions)
    assert {"pass", "op", "choice", "reason", "related", "rule", "direction"} <= set(frame.columns)
    inserted = frame[frame.choice == "inserted"]
    assert len(inserted) == npu.stats["channel_norms"]
    assert set(inserted.rule) == {"conflict"}


# ------------------------------------------------------------------ the widget


def test_stepper_hides_passes_that_changed_nothing(model_name: str) -> None:
    steps = trace_of(model_name)
    w = PassStepper.from_steps(steps)
    changed = [i for i, s in enumerate(steps) if s.changed]
    assert w.visible == changed
    assert w.index == changed[0]
    assert w.selected_pass == steps[changed[0]].name
    assert w.selected_spec == steps[changed[0]].pass_.spec()
    w.set_state({"hide_unchanged": False})  # the toggle
    assert w.visible == list(range(len(steps)))
    w.set_state({"index": 0})
    assert w.selected_pass == steps[0].name
    assert w.selected_spec == steps[0].pass_.spec()
    assert "spec: <code title=" in w.header.value
    w.toggle.set_state({"value": True})  # the checkbox in the browser
    assert w.hide_unchanged
    assert w.index == changed[0]


def test_index_is_clamped_to_a_shown_step() -> None:
    steps = trace_of("layout_align_demo")
    w = PassStepper.from_steps(steps)
    w.set_state({"index": 999})
    assert w.index == w.visible[-1]
    # the last shown step (codegen, last of the pipeline, changes no IR and is hidden)
    assert w.selected_pass == steps[w.visible[-1]].name
    w.set_state({"index": -5})
    assert w.index == w.visible[0]


def test_moving_the_slider_changes_the_shown_pass() -> None:
    steps = trace_of("layout_align_demo")
    w = PassStepper.from_steps(steps)
    position = w.visible.index(next(i for i, s in enumerate(steps) if s.name == "layout-align-npu"))
    w.slider.set_state({"index": position})  # SelectionSlider syncs the option index
    assert w.selected_pass == "layout-align-npu"
    npu = step_of("layout_align_demo", "layout-align-npu")
    assert w.diff_summary["added"] == npu.stats["channel_norms"]
    assert "layout-align-npu" in w.header.value
    assert "wall time" in w.header.value
    assert "channel_norms_optimal" in w.header.value
    assert "tx8be.ChannelNorm" in w.ir_diff.value
    assert f"{len(npu.decisions)} decisions" in w.decisions.value
    # the graph diff: the output, ChannelNorms marked as added
    marks = w.graph.view
    norms = [
        n for n in marks.nodes.values() if n.op is not None and n.op.kind == "tx8be.ChannelNorm"
    ]
    assert norms
    assert all(f'id="op{n.op.id}"' in w.graph.svg for n in norms if n.op)
    assert w.graph.overlay == "diff"
    assert {label for label, _ in w.graph.legend} >= {"added", "changed"}
    for d in npu.decisions:
        if d.choice == "inserted":
            assert w.graph.labels[f"op{d.op_id}"] == "added"


def test_removed_ops_appear_in_the_graph_diff() -> None:
    w = PassStepper.from_steps(trace_of("layout_align_demo"))
    w.select("layout-align-opt")
    erased = {d.op_id for d in w.step.decisions if d.choice == "erased"}
    assert erased
    assert set(w.diff.removed) == erased
    assert w.diff_summary["removed"] == len(erased)
    ids = svg_node_ids(w.graph.svg)
    for op_id in erased:
        assert f"op{op_id}" in ids
        assert w.graph.labels[f"op{op_id}"] == "removed"
    # click a removed ChannelNorm: its decision is shown
    some = next(iter(erased))
    assert some is not None
    w.graph.set_state({"selected": some})
    assert [d["choice"] for d in w.graph.selected_decisions] == ["erased"]


def test_select_shows_a_hidden_pass_and_rejects_unknown_names() -> None:
    w = PassStepper.from_steps(trace_of("tiny_cnn"))
    w.select("dce")
    assert w.selected_pass == "dce"
    assert not w.hide_unchanged
    assert "changed nothing" in w.header.value
    with pytest.raises(Tx8labError, match="no step named 'nope'"):
        w.select("nope")


def test_from_explorer_and_from_module() -> None:
    explorer = Explorer(zoo.tiny_cnn(), ["fold-constants", "dce", "layout-init"], TX81)
    w = PassStepper.from_explorer(explorer)
    assert [s.name for s in w.steps] == ["fold-constants", "dce", "layout-init"]
    assert w.selected_pass == "layout-init"
    m = PassStepper.from_module(zoo.tiny_cnn(), TX81, ["layout-init", "layout-transmit"])
    assert m.visible == [0, 1]
    with pytest.raises(Tx8labError, match="no steps"):
        PassStepper.from_steps([])


def test_decisions_table_of_the_shown_step() -> None:
    w = PassStepper.from_steps(trace_of("tiny_transformer_block"))
    w.select("layout-align-npu")
    table = w.decisions_table()
    assert len(table) == len(w.step.decisions)
    assert (table["pass"] == "layout-align-npu").all()


# ------------------------------------------------------------------ the C tab (codegen)


def test_c_tab_shows_the_selected_groups_ir_beside_its_c() -> None:
    trace = trace_of("tiny_cnn")
    codegen = trace[-1]
    assert codegen.name == "codegen"
    texts = codegen.result.artifacts["c"]
    w = PassStepper.from_steps(trace)
    assert w.tabs.get_title(3) == "C"
    assert w.c_group == next(iter(texts))
    assert [v for _, v in w.c_select.options] == list(texts)
    last = list(texts)[-1]
    w.set_state({"c_group": last})
    assert w.c_select.value == last
    assert w.group_c() == texts[last]
    view = w.c_view.value
    ir, c = view.split('<pre class="c"', 1)
    assert f"%{last} = &quot;tx8be.Group&quot;" in ir
    assert f"static uint64_t group_{last}(int32_t tile_id) {{" in c
    w.c_select.value = next(iter(texts))
    assert w.c_group == next(iter(texts))


def test_c_tab_rejects_a_group_without_c_and_explains_a_trace_without_codegen() -> None:
    w = PassStepper.from_steps(trace_of("tiny_cnn"))
    with pytest.raises(Exception, match=r"c_group %12345 has no C"):
        w.c_group = 12345
    short = PassStepper.from_module(zoo.tiny_cnn(), TX81, ["layout-init"])
    assert short.c_group == -1
    assert "no codegen step" in short.c_view.value
    assert short.group_c() == ""


def test_stepper_shows_the_pass_spec_with_its_knobs() -> None:
    from tx8lab.core.passes import DCE, FoldConstants
    from tx8lab.core.runner import run_pipeline

    b = Builder()
    x = b.input((2,))
    b.op("Neg", x)
    b.output(b.op("Relu", x))
    passes = [FoldConstants(max_bytes=4096), DCE(recurse_groups=False)]
    w = PassStepper.from_steps(run_pipeline(b.finish(), passes, TX81), hide_unchanged=False)
    w.index = 1
    assert w.selected_spec == "dce{recurse_groups=false}"
    assert "<code title='tx8lab opt FILE -p &#x27;dce{recurse_groups=false}&#x27;'>" in (
        w.header.value
    )
    w.index = 0
    assert w.selected_spec == "fold-constants{max_bytes=4096}"


# ------------------------------------------------------------------ running main.c (C tab)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Module]:
    """Count the stepper's calls of execute_module (the modules it ran)."""
    import tx8lab.widgets.stepper as stepper_module

    calls: list[Module] = []
    real = stepper_module.execute_module

    def counted(module: Module, *args: Any, **kwargs: Any) -> Any:
        calls.append(module)
        return real(module, *args, **kwargs)

    monkeypatch.setattr(stepper_module, "execute_module", counted)
    return calls


def _table_rows(view: str) -> int:
    """Body rows of the (one) command table in the C tab's run view."""
    assert view.count("<tbody>") == 1
    return view.split("<tbody>", 1)[1].split("</tbody>", 1)[0].count("<tr>")


def test_run_button_shows_the_verdict_and_the_groups_executed_commands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting(monkeypatch)
    trace = trace_of("tiny_cnn")
    codegen = trace[-1]
    w = PassStepper.from_steps(trace)
    assert w.hw is TX81  # the default, resolve_hw([])
    assert w.c_tile == 0
    assert [t for _, t in w.c_tile_select.options] == w.group_tiles()
    assert "Run main.c" in w.c_run_view.value
    assert "<table" not in w.c_run_view.value
    w.run_button.click()
    assert calls == [codegen.before]  # the module codegen received
    run = w.run_c()  # kept: no second run
    assert len(calls) == 1
    assert run.ok
    view = w.c_run_view.value
    assert "outputs match the interpreter" in view
    assert "output 0 f16[1, 10]: bit-exact" in view
    group, tile = w.c_group, w.c_tile
    commands = run.program.group_commands(group, tile)
    assert _table_rows(view) == len(commands) > 0
    assert f"group %{group} on tile {tile}: {len(commands)} commands executed" in view
    assert f"({len(commands)} calls in main.c's trace)" in view
    frame = w.c_trace_frame()
    assert list(frame["function"]) == [c.function for c in commands]
    assert set(frame["group"]) == {group}
    # another group and another tile: redrawn from the kept run
    other = list(codegen.result.artifacts["c"])[-1]
    w.c_select.value = other
    assert w.c_group == other
    w.c_tile_select.value = w.group_tiles()[-1]
    tile = w.c_tile
    assert tile == w.group_tiles()[-1] != 0
    commands = run.program.group_commands(other, tile)
    assert _table_rows(w.c_run_view.value) == len(commands) > 0
    assert f"group %{other} on tile {tile}:" in w.c_run_view.value
    assert len(w.c_trace_frame(other, tile)) == len(commands)
    assert len(calls) == 1
    with pytest.raises(Exception, match="is not a tile of group"):
        w.c_tile = 10_000
    # a new trace (a KnobPanel swaps it) with a new module for codegen: run again
    swapped = replace(codegen, before=Module(*_fields(codegen.before)))
    w._steps = [*trace[:-1], swapped]
    w._refresh_visible()
    assert "<table" not in w.c_run_view.value  # the kept run was of the old module
    w.run_button.click()
    assert calls == [codegen.before, swapped.before]
    assert _table_rows(w.c_run_view.value) == len(commands)
    run = w.run_c(rerun=True)
    assert len(calls) == 3
    # a long table is cut, and says how much
    import tx8lab.widgets.stepper as stepper_module

    monkeypatch.setattr(stepper_module, "MAX_TRACE_ROWS", 2)
    assert (w.c_group, w.c_tile) == (other, tile)  # the swap kept both
    w.c_tile = 0
    assert _table_rows(w.c_run_view.value) == 2
    assert f"{len(w.c_trace_frame()) - 2} more commands not shown" in w.c_run_view.value
    # outputs that differ: the verdict says so and names the output
    off = replace(run.diffs[0], exact=False, max_abs=0.5, tolerance=0.0)
    monkeypatch.setattr(stepper_module, "execute_module", lambda *a, **k: replace(run, diffs=[off]))
    w.run_c(rerun=True)
    assert "outputs DIFFER from the interpreter" in w.c_run_view.value
    assert "output 0 f16[1, 10]: max |diff| 0.5" in w.c_run_view.value
    assert "OUTSIDE the tolerance" in w.c_run_view.value


def _fields(module: Module) -> tuple[Any, ...]:
    return (module.functions, module.attrs, module.next_id)


def test_run_failures_are_shown_in_the_tab_and_never_raised_by_the_button(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tx8lab.core.execute as ex
    import tx8lab.widgets.stepper as stepper_module
    from tx8lab.errors import ProgramError

    w = PassStepper.from_steps(trace_of("tiny_cnn"))
    with monkeypatch.context() as m:  # no C compiler on the machine
        m.setenv("CC", "no-such-cc")
        m.setattr(ex.shutil, "which", lambda name: None)
        w.run_button.click()  # raises nothing
        assert "main.c could not be run" in w.c_run_view.value
        assert "needs a C compiler and none was found" in w.c_run_view.value
        assert not w.run_button.disabled
        w.c_select.value = list(w.c_select.options)[-1][1]  # still shown for another group
        assert "needs a C compiler" in w.c_run_view.value
        with pytest.raises(Tx8labError, match="needs a C compiler"):
            w.run_c()
    message = "tile 3: op %12 reads buffer %9@1 <outside> its lifetime (group %30, step 4)"

    def wrong(*args: Any, **kwargs: Any) -> Any:
        raise ProgramError(message, group=30, op=12, buffer="%9@1", step=4, tile=3)

    monkeypatch.setattr(stepper_module, "execute_module", wrong)
    w.run_button.click()
    assert "the executed program went wrong" in w.c_run_view.value
    assert html.escape(message) in w.c_run_view.value  # the message as it is
    # a trace without codegen: nothing to run, said in the tab
    short = PassStepper.from_module(zoo.tiny_cnn(), TX81, ["layout-init"])
    assert short.run_button.disabled
    assert "no codegen step" in short.c_run_view.value
    short.run_button.click()
    with pytest.raises(Tx8labError, match="no codegen step"):
        short.run_c()
    assert short.c_tile == -1
