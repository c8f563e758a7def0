"""KnobPanel without a browser: controls, downstream-only re-runs, linked views.

Controls come from real pass knobs and the hw preset; a change re-runs only the passes
after it (the Explorer's cache) and every linked view follows.

The browser's part is faked as it would arrive: a control's ``set_state`` (a Dropdown
sends its ``index``, a Checkbox its ``value``) or the panel's ``values`` trait.
"""

from __future__ import annotations

import doctest
from typing import Any

import ipywidgets
import pytest

from tx8lab.core import zoo
from tx8lab.core.passes import DEFAULT_PIPELINE, PASSES
from tx8lab.core.runner import Explorer
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81
from tx8lab.widgets import GraphView, KnobPanel, PassStepper, knob_panel
from tx8lab.widgets.knob_panel import HW_FIELDS, format_hw_value, hw_fields, hw_options

GROUP_AND_AFTER = DEFAULT_PIPELINE[DEFAULT_PIPELINE.index("group") :]


def _explorer(name: str = "tiny_cnn") -> Explorer:
    return Explorer(zoo.build(name), hw=TX81)


def _choose(control: ipywidgets.Widget, value: Any) -> None:
    """What the browser sends when the user picks ``value`` in a menu or slider."""
    labels = [v for _, v in control.options]
    control.set_state({"index": labels.index(value)})


# ------------------------------------------------------------------ controls


def test_controls_come_from_the_pass_knobs_and_hw_fields() -> None:
    panel = KnobPanel(_explorer())
    expected = {f"{name}.{k.name}" for name in DEFAULT_PIPELINE for k in PASSES[name].knobs()} | {
        f"hw.{path}" for path in HW_FIELDS
    }
    assert set(panel.controls) == expected
    for key, control in panel.controls.items():
        if key.startswith("hw."):
            continue
        name, knob_name = key.split(".")
        spec = PASSES[name].knob(knob_name)
        assert control.description == knob_name
        assert control.tooltip == spec.help
        if spec.type is bool:
            assert isinstance(control, ipywidgets.Checkbox)
        elif spec.choices:
            assert isinstance(control, ipywidgets.Dropdown)
            assert [v for _, v in control.options] == list(spec.choices)
        elif spec.type is int and spec.min is not None and spec.max is not None:
            assert isinstance(control, ipywidgets.IntSlider)
            assert (control.min, control.max) == (spec.min, spec.max)
        elif spec.type is int:
            assert isinstance(control, ipywidgets.BoundedIntText)
            if spec.min is not None:
                assert control.min == spec.min
        elif spec.type is float:
            assert isinstance(control, ipywidgets.BoundedFloatText)
            if spec.min is not None:
                assert control.min == spec.min
        else:
            assert spec.type is str
            assert type(control) is ipywidgets.Text
        assert panel.values[key] == spec.default
    # the accordion has one section per pass with knobs, then the hardware
    titles = panel.accordion.titles
    assert titles[-1] == "hardware (tx81)"
    assert list(titles[:-1]) == [n for n in DEFAULT_PIPELINE if PASSES[n].knobs()]


def test_hw_controls_offer_only_valid_values_around_the_preset() -> None:
    panel = KnobPanel(_explorer())
    for hw_field in hw_fields():
        control = panel.controls[f"hw.{hw_field.path}"]
        values = [v for _, v in control.options]
        assert control.value == knob_panel.hw_value(TX81, hw_field.path)
        for value in values:
            TX81.with_overrides({hw_field.path: value})  # every offer is accepted
        assert hw_field.help  # the field's docstring is the tooltip
        assert control.tooltip == hw_field.help
    spm = [v for _, v in panel.controls["hw.tile.spm_bytes"].options]
    assert spm[0] == 3 * 2**20 // 8
    assert spm[-1] == 3 * 2**20 * 8
    efficiency = [v for _, v in panel.controls["hw.ddr_efficiency"].options]
    assert max(efficiency) <= 1.0 < 0.75 * 2  # the fraction stays a fraction
    meshes = [v for _, v in panel.controls["hw.mesh_shape"].options]
    assert (4, 4) in meshes
    assert (2, 8) in meshes
    assert (1, 1) in meshes
    assert isinstance(panel.controls["hw.mesh_shape"], ipywidgets.Dropdown)
    assert isinstance(panel.controls["hw.tile.spm_bytes"], ipywidgets.SelectionSlider)


def test_hw_fields_all_and_unknown() -> None:
    every = {f.path for f in hw_fields("all")}
    assert set(HW_FIELDS) <= every
    assert "name" not in every
    assert "tile" not in every
    assert "tile.ne_granule_mkn" in every
    with pytest.raises(Tx8labError, match=r"did you mean 'tile\.spm_bytes'"):
        hw_fields(["tile.spm_byte"])
    with pytest.raises(Tx8labError, match="unknown hw field"):
        KnobPanel(_explorer(), hw_fields=["tile.nothing"])


def test_format_and_options() -> None:
    assert format_hw_value("tile.spm_bytes", 384 * 1024) == "384 KiB"
    assert format_hw_value("tile.rdma_bytes_per_s", 12.5e9) == "12.5 GB/s"
    assert format_hw_value("dte_message_s", 2e-7) == "200 ns"
    assert format_hw_value("num_chips", 2) == "2"
    field = hw_fields(["tile.spm_bytes"])[0]
    odd = 5 * 2**20
    labels = dict(hw_options(TX81, field, odd))
    assert labels["5 MiB"] == odd


def test_doctests() -> None:
    result = doctest.testmod(knob_panel)
    assert result.attempted >= 6
    assert result.failed == 0


def test_only_chosen_passes_and_no_hw() -> None:
    panel = KnobPanel(_explorer(), passes=["group"], hw_fields=())
    assert set(panel.controls) == {f"group.{k.name}" for k in PASSES["group"].knobs()}
    with pytest.raises(Tx8labError, match="not in the pipeline"):
        KnobPanel(_explorer(), passes=["no-such-pass"])


# ------------------------------------------------------------------ re-running


def test_menu_change_reruns_only_downstream_and_updates_the_views() -> None:
    explorer = _explorer()
    graph = GraphView.from_steps(explorer.steps)
    stepper = PassStepper.from_explorer(explorer)
    stepper.select("opt-ddr")
    calls: list[int] = []
    panel = KnobPanel(explorer, views=[graph, stepper, lambda ex: calls.append(ex.final.num_ops)])
    assert calls == [explorer.final.num_ops]  # a function is called once when linked
    before_final, before_runs = explorer.final, dict(explorer.run_count)
    assert set(before_runs.values()) == {1}

    _choose(panel.controls["group.strategy"], "hdfg")

    record = panel.last_update
    assert record["key"] == "group.strategy"
    assert record["value"] == "hdfg"
    assert record["reran"] == GROUP_AND_AFTER
    assert record["cached"] == DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index("group")]
    assert {n: explorer.run_count[n] - before_runs[n] for n in DEFAULT_PIPELINE} == {
        n: int(n in GROUP_AND_AFTER) for n in DEFAULT_PIPELINE
    }
    assert explorer.step("group").knobs["strategy"] == "hdfg"
    assert (
        explorer.step("group").stats
        != next(s for s in PassStepper.from_explorer(_explorer()).steps if s.name == "group").stats
    )
    # every linked view shows the new result
    assert explorer.final is not before_final
    assert graph.module is explorer.final
    assert len(graph.decisions) == sum(len(s.decisions) for s in explorer.steps)
    assert [s.result for s in stepper.steps] == [s.result for s in explorer.steps]
    assert stepper.selected_pass == "opt-ddr"
    assert stepper.graph.module is explorer.final  # the shown step was redrawn
    # the C tab follows the new codegen step (its groups; "Run main.c" runs its input)
    codegen = explorer.step("codegen")
    assert [g for _, g in stepper.c_select.options] == list(codegen.result.artifacts["c"])
    assert stepper.group_c() == codegen.result.artifacts["c"][stepper.c_group]
    assert calls[-1] == explorer.final.num_ops
    assert len(calls) == 2
    assert panel.values["group.strategy"] == "hdfg"
    assert [v["view"] for v in record["views"]] == ["GraphView", "PassStepper", "<lambda>"]
    assert all(v["redrawn"] for v in record["views"])
    assert record["total_ms"] >= record["pipeline_ms"]
    downstream = len(DEFAULT_PIPELINE) - DEFAULT_PIPELINE.index("group")
    assert f"re-ran {downstream} passes" in panel.status.value

    # back to the old value: everything from the cache, the views show the old objects
    _choose(panel.controls["group.strategy"], "pattern")
    assert panel.last_update["reran"] == []
    assert explorer.final is before_final
    assert graph.module is before_final
    assert len(panel.history) == 2
    frame = panel.timings()
    assert list(frame["passes re-run"]) == [downstream, 0]


def test_unchanged_step_in_the_stepper_is_not_redrawn() -> None:
    explorer = _explorer()
    stepper = PassStepper.from_explorer(explorer)
    stepper.select("layout-init")
    panel = KnobPanel(explorer, views=[stepper])
    shown = stepper.graph.svg
    drawn_module = stepper.graph.module
    panel.set("opt-barrier.sort_layers", False)
    assert panel.last_update["reran"] == DEFAULT_PIPELINE[DEFAULT_PIPELINE.index("opt-barrier") :]
    assert stepper.graph.module is drawn_module
    assert stepper.graph.svg == shown
    assert stepper.steps[-1].result is explorer.steps[-1].result  # the trace is swapped
    assert stepper.selected_pass == "layout-init"


def test_checkbox_change_from_the_browser() -> None:
    explorer = _explorer()
    panel = KnobPanel(explorer)
    panel.controls["layout-align-opt.const_erase"].set_state({"value": False})
    assert panel.last_update["reran"][0] == "layout-align-opt"
    assert explorer.passes[DEFAULT_PIPELINE.index("layout-align-opt")].const_erase is False
    assert panel.values["layout-align-opt.const_erase"] is False


def test_values_trait_from_the_browser_applies_the_difference() -> None:
    explorer = _explorer("tiny_transformer_block")
    panel = KnobPanel(explorer)
    values = dict(panel.values)
    values["layout-align-npu.strategy"] = "optimal"
    panel.set_state({"values": values})
    assert panel.last_update["key"] == "layout-align-npu.strategy"
    assert panel.last_update["reran"][0] == "layout-align-npu"
    assert len(panel.last_update["reran"]) == len(DEFAULT_PIPELINE) - 4
    assert panel.controls["layout-align-npu.strategy"].value == "optimal"
    assert explorer.knobs()["layout-align-npu.strategy"] == "optimal"


def test_hw_change_reruns_every_pass_with_the_new_chip() -> None:
    explorer = _explorer()
    graph = GraphView.from_steps(explorer.steps)
    stepper = PassStepper.from_explorer(explorer)
    assert stepper.hw is explorer.hw
    panel = KnobPanel(explorer, views=[graph, stepper])
    old_final = explorer.final
    _choose(panel.controls["hw.mesh_shape"], (2, 4))
    assert explorer.hw.mesh_shape == (2, 4)
    assert stepper.hw is explorer.hw  # "Run main.c" runs on the new chip
    assert stepper.group_tiles() == list(range(8))
    assert explorer.hw.tile_count == 8
    assert panel.last_update["reran"] == DEFAULT_PIPELINE
    assert panel.values["hw.mesh_shape"] == [2, 4]
    assert graph.module is explorer.final is not old_final
    # move-constant's threshold follows the tiles of one chip: 4 KiB x 8
    assert explorer.step("move-constant").after.attrs["tx8.const_threshold_bytes"] == 8 * 4096
    # a value off the slider, as --hw parses it, joins the slider's options
    panel.set("hw.tile.spm_bytes", "5MiB")
    assert explorer.hw.tile.spm_bytes == 5 * 2**20
    assert panel.controls["hw.tile.spm_bytes"].value == 5 * 2**20
    assert panel.values["hw.tile.spm_bytes"] == 5 * 2**20


# ------------------------------------------------------------------ failures


def test_rejected_value_is_undone_and_explained() -> None:
    explorer = _explorer()
    graph = GraphView.from_steps(explorer.steps)
    panel = KnobPanel(explorer, views=[graph])
    final = explorer.final
    with pytest.raises(Tx8labError, match="must be >= 0"):
        panel.set("move-constant.threshold_bytes", -1)
    assert "move-constant.threshold_bytes = -1 undone" in panel.error
    assert explorer.knobs()["move-constant.threshold_bytes"] == 0
    assert panel.values["move-constant.threshold_bytes"] == 0
    assert graph.module is final
    # the next good change clears the error
    panel.set("move-constant.threshold_bytes", 1024)
    assert panel.error == ""


def test_failing_pass_from_a_text_box_is_undone() -> None:
    explorer = _explorer()
    graph = GraphView.from_steps(explorer.steps)
    panel = KnobPanel(explorer, views=[graph])
    final = explorer.final
    panel.controls["group.opt_group"].set_state({"value": "no_such_config"})  # no raise
    assert "group.opt_group = no_such_config undone" in panel.error
    assert "color:#b00020" in panel.status.value
    assert panel.controls["group.opt_group"].value == "auto"
    assert explorer.knobs()["group.opt_group"] == "auto"
    assert explorer.final is final
    assert graph.module is final


def test_hw_value_the_config_rejects_is_undone() -> None:
    explorer = _explorer()
    panel = KnobPanel(explorer)
    with pytest.raises(Tx8labError, match="fraction"):
        panel.set("hw.ddr_efficiency", 1.5)
    assert explorer.hw == TX81
    assert panel.values["hw.ddr_efficiency"] == TX81.ddr_efficiency


def test_unknown_keys_and_views() -> None:
    panel = KnobPanel(_explorer())
    with pytest.raises(Tx8labError, match=r"no knob 'dce\.depth'"):
        panel.set("dce.depth", 1)
    with pytest.raises(Tx8labError, match=r"unknown hw field 'tile\.spm'"):
        panel.set("hw.tile.spm", 1)
    panel.set_state({"values": {**panel.values, "nope.x": 1}})
    assert "no knob 'nope.x'" in panel.error
    assert "nope.x" not in panel.values
    with pytest.raises(Tx8labError, match="cannot update a int"):
        panel.link(3)  # type: ignore[arg-type]


def test_from_module_and_unlink() -> None:
    panel = KnobPanel.from_module(
        zoo.build("tiny_cnn"), TX81, ["layout-init", "layout-align-npu"], hw_fields=()
    )
    assert set(panel.controls) == {
        "layout-align-npu.strategy",
        "layout-align-npu.compare",
        "layout-align-npu.odd_rank",
    }
    calls: list[str] = []
    view = panel.link(lambda ex: calls.append("drawn"))
    assert panel.views == [view]
    panel.unlink(view)
    panel.set("layout-align-npu.strategy", "optimal")
    assert calls == ["drawn"]
    assert panel.last_update["views"] == []
