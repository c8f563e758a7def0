"""The recorded group pipeline: stage order, records, reused stages, SpmOverflow."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest

from tx8lab.core import zoo
from tx8lab.core.ir import Module, Op
from tx8lab.core.passes import DEFAULT_PIPELINE, build_pipeline
from tx8lab.core.runner import run_pipeline
from tx8lab.core.schedule.estimate import estimate_group
from tx8lab.core.schedule.lifetimes import buffer_life, buffer_merge
from tx8lab.core.schedule.search import schedule_group, search_group
from tx8lab.core.schedule.slicing import default_strategy, schedule_input
from tx8lab.core.schedule.spm_alloc import allocate, find_conflicts
from tx8lab.core.schedule.stages import STAGE_NAMES, StageRecord, StageSettings, run_group
from tx8lab.core.schedule.sw_pipeline import sw_pipeline
from tx8lab.core.simulate import simulate_schedule
from tx8lab.errors import SpmOverflow, Tx8labError
from tx8lab.hw import TX81

BEFORE = DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index("group-cost")]


@functools.cache
def _grouped(name: str) -> Module:
    return list(run_pipeline(zoo.build(name), build_pipeline(BEFORE), TX81))[-1].after


def _costliest_matmul_group() -> Op:
    """The transformer block's FFN-like group (a MatMul): it splits and loops on a small SPM."""
    groups = [op for op in _grouped("tiny_transformer_block").main.ops if op.kind == "tx8be.Group"]
    return max(
        (g for g in groups if any(o.kind == "tx8be.MatMul" for o in g.walk())),
        key=lambda g: len(list(g.walk())),
    )


def test_the_stages_are_the_seed_flow_in_order() -> None:
    assert STAGE_NAMES == (
        "data-split",
        "sw-pipeline",
        "buffer-life",
        "buffer-merge",
        "spm-alloc",
        "estimate",
        "simulate",
    )


def test_each_record_is_what_the_stage_function_gives_on_its_own() -> None:
    group = _costliest_matmul_group()
    strategy = default_strategy(group, TX81)
    settings = StageSettings(multi_buffer=2, retract=True, alloc="best", alloc_time_limit_s=0.5)
    run = run_group(group, strategy, TX81, settings)
    assert [r.name for r in run.records] == list(STAGE_NAMES)
    assert all(r.wall_s >= 0 for r in run.records)
    assert all(r.decisions for r in run.records)
    # the same functions called by hand, one after the other
    si = schedule_input(group, strategy, TX81, multi_buffer=2)
    timeline = sw_pipeline(si, retract=True, multi_buffer=2)
    raw = buffer_life(timeline, si)
    merged = buffer_merge(raw)
    allocation = allocate(merged, TX81.tile.spm_usable_bytes, "best", time_limit_s=0.5)
    assert run.input == si
    assert run.timeline == timeline
    assert run.output("buffer-life") == raw
    assert list(run.lifetimes) == merged
    assert run.allocation.peak == allocation.peak
    assert find_conflicts(run.allocation.lifetimes, run.allocation.offsets) == []
    assert run.estimate.cycles == estimate_group(timeline).cycles == timeline.makespan
    assert run.record("estimate").decisions[0].startswith(f"{timeline.makespan} cycles")


def test_until_and_reuse() -> None:
    group = _costliest_matmul_group()
    strategy = default_strategy(group, TX81)
    head = run_group(group, strategy, TX81, until="sw-pipeline")
    assert [r.name for r in head.records] == ["data-split", "sw-pipeline"]
    with pytest.raises(Tx8labError, match="stage 'spm-alloc' did not run"):
        head.output("spm-alloc")
    with pytest.raises(Tx8labError, match="unknown stage 'alloc'"):
        run_group(group, strategy, TX81, until="alloc")
    # reused records are kept as they are; only the later stages run
    seed = run_group(group, strategy, TX81, StageSettings(alloc="seed"))
    best = run_group(
        group, strategy, TX81, StageSettings(alloc="best"), reuse=seed.before("spm-alloc")
    )
    assert best.records[:4] == seed.records[:4]
    assert best.record("spm-alloc") is not seed.record("spm-alloc")
    assert best.estimate.cycles == seed.estimate.cycles  # the estimate reads the timeline
    assert best.allocation.peak <= seed.allocation.peak
    # a reused record is not recomputed: its output and decisions are the caller's
    held = StageRecord("data-split", seed.input, 0.0, ("the caller's",))
    again = run_group(group, strategy, TX81, reuse=(held,), until="data-split")
    assert again.input is seed.input
    assert again.record("data-split").decisions == ("the caller's",)
    with pytest.raises(Tx8labError, match="reused record of unknown stage 'alloc'"):
        run_group(group, strategy, TX81, reuse=(StageRecord("alloc", None, 0.0),))


def test_overflow_is_a_typed_error_with_the_bytes() -> None:
    group = _costliest_matmul_group()
    strategy = default_strategy(group, TX81)
    run = run_group(group, strategy, TX81)
    tiny = TX81.with_overrides({"tile.spm_bytes": 64 * 1024 + run.allocation.peak // 4})
    with pytest.raises(SpmOverflow) as info:
        run_group(group, strategy, tiny, StageSettings(alloc="best", alloc_time_limit_s=0.1))
    err = info.value
    assert err.available_bytes == tiny.tile.spm_usable_bytes
    # the unsplit strategy's live bytes at once are more than the room left
    assert err.needed_bytes > err.available_bytes
    assert isinstance(err, Tx8labError)  # callers that catch the base type still do


def test_search_counts_overflow_by_type_not_by_text() -> None:
    small = TX81.with_overrides({"tile.spm_bytes": "68Ki"})  # 4 KiB usable
    groups = [op for op in _grouped("tiny_cnn").main.ops if op.kind == "tx8be.Group"]
    candidates = [c for g in groups for c in search_group(g, small, mode="exhaustive").candidates]
    over = [c for c in candidates if c.status == "spm-overflow"]
    assert over, "a 4 KiB SPM overflows some candidates"
    assert all(c.run is None and c.cycles is None for c in over)
    ok = [c for c in candidates if c.status == "OK"]
    # every OK candidate keeps its recorded stages: views read them, nothing re-runs
    assert ok
    assert all(c.run is not None and c.run.estimate.cycles == c.cycles for c in ok)
    assert all(c.run is not None and c.run.strategy == c.strategy for c in ok)


@pytest.mark.parametrize("mode", ["default", "search"])
def test_schedule_group_is_group_costs_choice(mode: str) -> None:
    module = _grouped("tiny_transformer_block")
    steps = list(
        run_pipeline(module, build_pipeline(["group-cost"], [f"group-cost.search={mode}"]), TX81)
    )
    arts = steps[0].result.artifacts
    settings = StageSettings(2, True, "best", 1.0)
    for entry in arts["groups"]:
        if entry["template_hit"]:
            continue
        group = next(op for op in module.main.ops if op.id == entry["id"])
        got = schedule_group(group, TX81, settings, mode=mode, timer=simulate_schedule)
        assert got.how == mode
        assert got.run.estimate.cycles == entry["cycles"]
        # group-cost's cycles are the simulated body of the chosen packing
        assert got.run.simulated is not None
        assert entry["cycles"] == got.run.simulated.cycles != entry["plan_cycles"]
        assert got.run.allocation.peak == entry["spm_peak_bytes"]
        assert got.strategy == arts["runs"][entry["id"]].strategy
        # the result's allocator is the caller's; the stages before it are the search's
        assert got.run.settings.alloc == "best"
        if got.search is not None:
            assert got.search.best is not None
            assert got.search.best.run is not None
            assert got.run.records[:4] == got.search.best.run.records[:4]


@pytest.mark.parametrize("alloc", ["seed", "best"])
def test_the_result_is_simulated_again_unless_its_packing_is_the_searchs(alloc: str) -> None:
    group = _costliest_matmul_group()
    calls: list[Any] = []

    def timer(*args: Any) -> Any:
        calls.append(args[4])  # the allocation
        return simulate_schedule(*args)

    got = schedule_group(group, TX81, StageSettings(alloc=alloc), timer=timer)
    assert got.search is not None
    assert got.search.best is not None
    assert got.search.best.run is not None
    searched = got.search.best.run.allocation
    same = (got.run.allocation.offsets, got.run.allocation.lifetimes) == (
        searched.offsets,
        searched.lifetimes,
    )
    if alloc == "seed":  # the search's own allocator packs it the same way
        assert same
    # one simulation per candidate the search played, one more for a new packing
    assert len(calls) == got.search.simulated + (not same)
    assert (calls[-1] is got.run.allocation) != same
    # what simulating the result's records again gives
    again = run_group(
        group, got.strategy, TX81, got.run.settings, reuse=got.run.before("simulate"), timer=timer
    )
    assert got.run.simulated == again.simulated
    assert got.run.estimate == again.estimate


def test_the_default_strategy_allocates_without_the_fallback() -> None:
    group = _costliest_matmul_group()
    got = schedule_group(group, TX81, StageSettings(alloc="seed"), mode="default")
    assert got.run.settings == dataclasses.replace(StageSettings(alloc="seed"), best_fallback=False)
