"""GroupTuner: one group's knobs re-estimate only that group and redraw its views in place."""

from __future__ import annotations

import functools
import math

import pytest

from tests.helpers import INTERPRETABLE
from tests.widgets.traces import trace_of
from tx8lab.core import zoo
from tx8lab.core.frontends.zoo import MODELS
from tx8lab.core.passes import build_pipeline
from tx8lab.core.passes.base import Step
from tx8lab.core.runner import run_pipeline
from tx8lab.core.schedule.stages import StageSettings, run_group
from tx8lab.core.simulate import simulate_schedule
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81
from tx8lab.widgets import GroupTuner
from tx8lab.widgets.group_tuner import TUNER_HW_FIELDS, TUNER_KNOBS

KIB = 1024
SMALL_SPM = 128 * KIB


@functools.cache
def _cnn_trace() -> tuple[Step, ...]:
    """A CNN whose costliest group splits once the SPM is small (so loops appear)."""
    module = zoo.build("tiny_cnn", size=64, channels=32)
    return tuple(run_pipeline(module, build_pipeline(), TX81))


def _cost_step(trace: tuple[Step, ...] | list[Step]) -> Step:
    return next(s for s in trace if s.name == "group-cost")


def _pieces(tuner: GroupTuner) -> int:
    """Slices of every op of the shown strategy (1 per op when nothing is split)."""
    return sum(math.prod(o.split) for o in tuner.scheduled.strategy.ops.values())


@pytest.fixture
def tuner() -> GroupTuner:
    return GroupTuner.from_step(list(_cnn_trace()))


def test_from_step_starts_at_the_recorded_result() -> None:
    trace = trace_of("tiny_cnn")
    step = _cost_step(trace)
    entries = {int(e["id"]): e for e in step.result.artifacts["groups"]}
    t = GroupTuner.from_step(trace)
    costliest = max(entries, key=lambda g: int(entries[g]["cycles"]))
    assert t.group.id == costliest
    assert t.cycles == int(entries[costliest]["cycles"])
    assert t.spm_peak_bytes > 0
    assert t.path == "recorded"
    assert t.status == "ok"
    assert t.error == ""
    # every knob and hw field has a control, and values mirrors them as JSON
    keys = {f"group-cost.{k}" for k in TUNER_KNOBS} | {f"hw.{p}" for p in TUNER_HW_FIELDS}
    assert set(t.controls) == keys | {"strategy"}
    assert set(t.values) == keys | {"strategy"}
    assert t.values["group-cost.multi_buffer"] == step.knobs["multi_buffer"]
    assert t.values["hw.tile.spm_bytes"] == TX81.tile.spm_bytes
    assert t.values["strategy"] == "auto"
    # the picker offers auto plus the OK candidates of the stored search
    ok = [
        c.index for c in step.result.artifacts["searches"][costliest].candidates if c.status == "OK"
    ]
    assert [v for _, v in t.controls["strategy"].options] == ["auto", *ok]
    # the stage table is the recorded run's: every stage, the estimate's cycles
    recorded = step.result.artifacts["runs"][costliest]
    assert t.scheduled is recorded
    for stage in ("data-split", "sw-pipeline", "buffer-life", "buffer-merge", "spm-alloc"):
        assert f"<td>{stage}</td>" in t.stages.value
    assert f"{t.cycles} cycles simulated on tile" in t.stages.value


def test_from_step_picks_a_given_group_and_checks_it() -> None:
    trace = trace_of("tiny_cnn")
    entries = [int(e["id"]) for e in _cost_step(trace).result.artifacts["groups"]]
    t = GroupTuner.from_step(_cost_step(trace), group_id=entries[0])
    assert t.group.id == entries[0]
    with pytest.raises(Tx8labError, match="is not a group of the group-cost step"):
        GroupTuner.from_step(trace, group_id=10**6)
    with pytest.raises(Tx8labError, match="give the group-cost step"):
        GroupTuner.from_step(trace[:1])
    with pytest.raises(Tx8labError, match="pass the hw the run used"):
        GroupTuner.from_step(
            trace, hw=TX81.with_overrides({"clock_hz": 2e9, "ddr_bytes_per_s": 1e9})
        )


def test_constructor_refuses_what_is_not_a_group() -> None:
    trace = trace_of("tiny_cnn")
    op = next(o for o in trace[-1].after.walk() if o.kind != "tx8be.Group")
    with pytest.raises(Tx8labError, match=r"needs a tx8be\.Group"):
        GroupTuner(op, TX81)
    group = next(o for o in trace[-1].after.walk() if o.kind == "tx8be.Group")
    with pytest.raises(Tx8labError, match="unknown knobs dp"):
        GroupTuner(group, TX81, knobs={"dp": 2})


def test_smaller_spm_raises_splits(tuner: GroupTuner) -> None:
    tuner.set("group-cost.search", "default")
    big_cycles, big_pieces, big_peak = tuner.cycles, _pieces(tuner), tuner.spm_peak_bytes
    record = tuner.set("hw.tile.spm_bytes", SMALL_SPM)
    assert record["path"] == "default"
    assert _pieces(tuner) > big_pieces
    assert tuner.spm_peak_bytes < big_peak <= TX81.tile.spm_usable_bytes
    assert tuner.spm_peak_bytes <= tuner.hw.tile.spm_usable_bytes
    assert tuner.cycles > big_cycles
    assert tuner.values["hw.tile.spm_bytes"] == SMALL_SPM


def test_multi_buffer_and_retract_change_a_looping_group(tuner: GroupTuner) -> None:
    tuner.update({"group-cost.search": "default", "hw.tile.spm_bytes": SMALL_SPM})
    double, double_pieces = tuner.cycles, _pieces(tuner)
    tuner.set("group-cost.multi_buffer", 1)
    # one copy of each buffer: the default strategy fits larger slices in the small SPM.
    # Faster or slower depends on the group: here its CT time (BatchNorm's steps, seed 001)
    # outweighs the loads that double buffering would hide, so fewer slices win
    assert _pieces(tuner) < double_pieces
    assert tuner.cycles != double
    # the same numbers as the core stages with the same arguments
    again = run_group(
        tuner.group,
        tuner.scheduled.strategy,
        tuner.hw,
        StageSettings(multi_buffer=1, alloc="best"),
        timer=simulate_schedule,
    )
    assert again.estimate.cycles == tuner.cycles
    tuner.set("group-cost.multi_buffer", 2)
    assert tuner.cycles == double
    assert tuner.last_update["cached"] is True
    tuner.set("group-cost.retract", False)
    assert tuner.cycles > double


def test_forcing_a_candidate_gives_its_cycles() -> None:
    t = GroupTuner.from_step(trace_of("tiny_cnn", "group-cost.search=exhaustive"))
    assert t.search_result is not None
    assert t.search_result.mode == "exhaustive"
    best = t.search_result.best
    assert best is not None
    others = [c for c in t.candidates() if c.index != best.index and c.cycles != best.cycles]
    assert others
    for cand in others[:3]:
        record = t.set("strategy", cand.index)
        assert record["path"] == f"forced #{cand.index}"
        # the search simulated the candidate on its own packing (alloc 'seed'); the forced
        # run packs with the tuner's allocator, which can add or remove false dependencies
        # (search module doc), so the figures agree to within a few percent
        assert t.cycles == pytest.approx(cand.cycles, rel=0.03)
        assert t.scheduled.strategy.ops == cand.strategy.ops
        assert t.cycles != best.cycles
        assert t.values["strategy"] == cand.index
    t.set("strategy", "auto")
    assert t.path == "recorded"  # the start state again, from the tuner's cache
    assert t.last_update["cached"] is True
    assert t.cycles == best.cycles
    # a knob change searches again (a new list); coming back brings the step's search back
    stored = t.search_result
    t.set("group-cost.retract", False)
    assert t.search_result is not stored
    assert t.values["strategy"] == "auto"
    t.set("group-cost.retract", True)
    assert t.search_result is stored
    t.set("strategy", others[0].index)
    assert t.cycles == others[0].cycles


def test_search_vs_exhaustive_vs_default() -> None:
    t = GroupTuner.from_step(trace_of("tiny_cnn"))
    t.set("group-cost.search", "default")
    default_cycles = t.cycles
    t.set("group-cost.search", "exhaustive")
    assert t.path == "exhaustive"
    exhaustive = t.search_result
    assert exhaustive is not None
    assert exhaustive.mode == "exhaustive"
    # exhaustive evaluates the whole space and never loses to the default strategy
    assert exhaustive.evaluated + exhaustive.pruned >= exhaustive.space_size - 1
    assert t.cycles <= default_cycles
    t.set("group-cost.search_budget_s", 0.5)
    t.set("group-cost.search", "search")
    assert t.path == "search"
    searched = t.search_result
    assert searched is not None
    assert searched.mode == "search"
    assert searched.evaluated < exhaustive.evaluated
    assert t.cycles >= exhaustive.best.cycles  # type: ignore[union-attr]
    assert t.cycles <= default_cycles
    # the picker follows the newest search
    ok = [c.index for c in searched.candidates if c.status == "OK"]
    assert [v for _, v in t.controls["strategy"].options] == ["auto", *ok]


def test_views_are_updated_in_place(tuner: GroupTuner) -> None:
    tuner.set("group-cost.search", "default")
    view = tuner.schedule_view
    timeline_fig, gantt_fig, factor_fig, sim_fig = (
        view.timeline_view.figure,
        view.gantt.figure,
        tuner.factor_figure,
        tuner.sim_figure,
    )
    steps_before = view.timeline_view.steps
    sim_title = sim_fig.layout.title.text
    tuner.set("hw.tile.spm_bytes", SMALL_SPM)
    # the same widgets, with the new schedule
    assert view.timeline_view.figure is timeline_fig
    assert view.gantt.figure is gantt_fig
    assert tuner.factor_figure is factor_fig
    assert tuner.sim_figure is sim_fig
    # the simulated run of the new schedule, beside the plan
    est = tuner.scheduled.estimate
    assert sim_fig.layout.title.text != sim_title
    assert f"{tuner.cycles:,} cycles (plan {est.plan_cycles:,})" in sim_fig.layout.title.text
    played = tuner.scheduled.simulated
    assert played is not None
    bars = [t for t in sim_fig.data if (t.meta or {}).get("role") == "simulated"]
    assert {e for t in bars for e in t.y} == {
        e for e in played.busy if played.busy[e] and e != "kcore"
    } | {"kcore"}
    # plan only: the panel empties and says why; back: the run again, axes shown
    tuner.set("group-cost.simulate_top", 0)
    assert sim_fig.layout.title.text.startswith("not simulated")
    assert not sim_fig.data
    assert tuner.cycles == tuner.scheduled.estimate.plan_cycles
    tuner.set("group-cost.simulate_top", 3)
    assert sim_fig.data
    assert sim_fig.layout.xaxis.visible is True
    assert view.timeline_view.timeline is tuner.scheduled.timeline
    assert view.timeline_view.steps == tuner.scheduled.timeline.steps != steps_before
    assert view.slider.max == tuner.scheduled.timeline.steps - 1
    # the timeline is the plan; the tuner's cycles are the simulated run's
    assert f"{tuner.scheduled.estimate.plan_cycles:,} cycles" in timeline_fig.layout.title.text
    assert tuner.cycles == tuner.scheduled.estimate.cycles
    shown = sum(len(t.base) for t in timeline_fig.data if (t.meta or {}).get("role") == "slot")
    assert shown == len(tuner.scheduled.timeline.slots)
    peak = next(t for t in gantt_fig.data if (t.meta or {}).get("role") == "peak")
    assert peak.meta["bytes"] == tuner.spm_peak_bytes
    # the shared cursor still drives both figures
    view.cursor = 2
    assert [s.name for s in timeline_fig.layout.shapes] == ["cursor"]
    assert any(s.name == "cursor" for s in gantt_fig.layout.shapes)
    # forcing a candidate rings it in the factor space
    tuner.set("hw.tile.spm_bytes", TX81.tile.spm_bytes)
    cand = tuner.candidates()[-1]
    tuner.set("strategy", cand.index)
    ring = next(t for t in factor_fig.data if (t.meta or {}).get("role") == "selected")
    assert ring.meta["index"] == cand.index


def test_front_end_changes_apply(tuner: GroupTuner) -> None:
    tuner.controls["group-cost.search"].value = "default"
    assert tuner.path == "default"
    assert tuner.values["group-cost.search"] == "default"
    before = tuner.cycles
    tuner.set_state({"values": {**tuner.values, "hw.tile.spm_bytes": SMALL_SPM}})
    assert tuner.values["hw.tile.spm_bytes"] == SMALL_SPM
    assert tuner.controls["hw.tile.spm_bytes"].value == SMALL_SPM
    assert tuner.cycles != before
    tuner.controls["group-cost.multi_buffer"].value = 1
    assert tuner.last_update["key"] == "group-cost.multi_buffer"
    assert tuner.values["group-cost.multi_buffer"] == 1
    # a candidate searched at 3 MiB does not fit 128 KiB: shown, undone
    cand = tuner.candidates()[-1]
    tuner.controls["strategy"].value = cand.index
    assert tuner.status == "error"
    assert "strategy" in tuner.error
    assert tuner.controls["strategy"].value == "auto"
    tuner.controls["hw.tile.spm_bytes"].value = TX81.tile.spm_bytes
    tuner.controls["strategy"].value = cand.index
    assert tuner.status == "ok"
    assert tuner.path == f"forced #{cand.index}"
    assert tuner.values["strategy"] == cand.index


def test_bad_values_are_shown_and_undone(tuner: GroupTuner) -> None:
    tuner.set("group-cost.search", "default")
    good_cycles, good_values = tuner.cycles, dict(tuner.values)
    good_schedule = tuner.scheduled
    # an SPM too small for the group: the error names the knob, the last result stays
    with pytest.raises(Tx8labError, match=r"hw\.tile\.spm_bytes = 67584 undone: .*does not fit"):
        tuner.set("hw.tile.spm_bytes", 66 * KIB)
    assert tuner.status == "error"
    assert "does not fit" in tuner.error
    assert tuner.cycles == good_cycles
    assert tuner.scheduled is good_schedule
    assert tuner.values == good_values
    assert tuner.controls["hw.tile.spm_bytes"].value == good_values["hw.tile.spm_bytes"]
    assert "does not fit" in tuner.banner.value
    # values a knob or the config rejects
    with pytest.raises(Tx8labError, match=r"group-cost\.multi_buffer must be <= 4"):
        tuner.set("group-cost.multi_buffer", 5)
    with pytest.raises(Tx8labError, match=r"hw\.tile\.spm_bytes = 1024 rejected"):
        tuner.set("hw.tile.spm_bytes", 1024)
    with pytest.raises(Tx8labError, match="strategy = 10000 is not 'auto' nor an OK candidate"):
        tuner.set("strategy", 10_000)
    with pytest.raises(Tx8labError, match=r"no knob 'group-cost\.dp'"):
        tuner.set("group-cost.dp", 2)
    # a front-end change only shows the error
    tuner.set_state({"values": {**tuner.values, "group-cost.alloc": "nope"}})
    assert tuner.status == "error"
    assert "group-cost.alloc" in tuner.error
    assert tuner.values == good_values
    # the next good change clears it
    tuner.set("group-cost.retract", False)
    assert tuner.status == "ok"
    assert tuner.error == ""


def test_history_timings_and_html(tuner: GroupTuner) -> None:
    tuner.set("group-cost.search", "default")
    tuner.set("group-cost.multi_buffer", 3)
    tuner.set("group-cost.multi_buffer", 2)
    df = tuner.timings()
    assert list(df["change"]) == [
        "group-cost.search = default",
        "group-cost.multi_buffer = 3",
        "group-cost.multi_buffer = 2",
    ]
    assert list(df["cached"]) == [False, False, True]  # mb=2 was the first change's state
    assert list(df["path"]) == ["default"] * 3
    for r in tuner.history:
        assert r["total_ms"] >= r["compute_ms"] + r["views_ms"] - 0.05
        assert r["compute_ms"] >= 0
        assert r["views_ms"] > 0
    assert tuner.last_update == tuner.history[-1]
    page = tuner.to_html()
    assert page.startswith("<!DOCTYPE html>")
    assert f"group %{tuner.group.id}: {tuner.cycles:,} cycles simulated" in page
    # the plan's timeline, the simulated run, the SPM Gantt, the factor space
    assert page.count("Plotly.newPlot") == 4
    assert "group-cost.multi_buffer" in page


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_tuner_computes_what_group_cost_recorded(name: str) -> None:
    """The tuner and group-cost call one function (GroupCost.schedule_one).

    Checked on every zoo model's costliest group, the tuner scheduling it afresh.
    """
    knobs = ["group-cost.search_budget_s=1000"]  # no time limit: the same search twice
    module = zoo.build(name, **INTERPRETABLE.get(name, {}))
    step = _cost_step(list(run_pipeline(module, build_pipeline(None, knobs), TX81)))
    entries = {int(e["id"]): e for e in step.result.artifacts["groups"]}
    costliest = max(entries, key=lambda g: (int(entries[g]["cycles"]), -g))
    group = next(op for op in step.before.main.ops if op.id == costliest)
    recorded = step.result.artifacts["runs"][costliest]
    t = GroupTuner(group, TX81, knobs={k: step.knobs[k] for k in TUNER_KNOBS})
    assert t.path == step.knobs["search"]
    assert t.scheduled is not recorded
    assert t.cycles == entries[costliest]["cycles"] == recorded.estimate.cycles
    assert t.spm_peak_bytes == entries[costliest]["spm_peak_bytes"]
    assert t.scheduled.strategy == recorded.strategy
