"""The strategy search of group-cost: exhaustive agreement, statuses, frame, Pareto, cache."""

from __future__ import annotations

import pytest

from tx8lab.core import zoo
from tx8lab.core.ir import Module, Op
from tx8lab.core.passes import DEFAULT_PIPELINE, build_pipeline
from tx8lab.core.runner import run_pipeline
from tx8lab.core.schedule.search import (
    iter_search,
    pareto_front,
    search_group,
    space_size,
)
from tx8lab.core.schedule.slicing import default_strategy
from tx8lab.core.schedule.template_cache import TemplateCache, template_key
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81
from tx8lab.hw.config import ChipConfig

BEFORE = DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index("group-cost")]


def _grouped(name: str, **params: object) -> Module:
    steps = list(run_pipeline(zoo.build(name, **params), build_pipeline(BEFORE), TX81))
    return steps[-1].after


def _groups(module: Module) -> list[Op]:
    return [op for op in module.main.ops if op.kind == "tx8be.Group"]


def _agreement(name: str, hw: ChipConfig = TX81) -> tuple[int, int, int, int]:
    """(groups, optimum found, candidates evaluated by search, space size) on a model."""
    n = found = evaluated = space = 0
    for group in _groups(_grouped(name)):
        ex = search_group(group, hw, mode="exhaustive")
        got = search_group(group, hw)
        assert ex.best is not None
        assert got.best is not None
        assert ex.done
        assert got.done
        # exhaustive sees every candidate: nothing pruned, every row is evaluated or a duplicate
        assert ex.pruned == 0
        assert len(ex.candidates) == ex.space_size == space_size(group, hw)
        assert got.evaluated + got.pruned <= got.space_size
        # the search is never below the exhaustive optimum nor above the default strategy
        default = got.candidates[0]
        assert default.sharding == "default"
        assert ex.best.cycles is not None
        assert got.best.cycles is not None
        assert default.cycles is not None
        assert ex.best.cycles <= got.best.cycles <= default.cycles
        n += 1
        found += got.best.cycles == ex.best.cycles
        evaluated += got.evaluated
        space += got.space_size
    return n, found, evaluated, space


@pytest.mark.parametrize(
    ("name", "groups", "found"),
    # measured: tiny_cnn 5/5 (7% of the space evaluated), tiny_transformer_block 10/10
    # (2%; its rank-3 MatMuls run on rank-4 views since Cx needs rank 2 or 4, and the
    # views' Reshapes group with them), layout_align_demo 17/18 (15%; group %31 ends at
    # 10503 cycles where the exhaustive optimum is 10106 on a lower level the pruning
    # rule drops)
    [("tiny_cnn", 5, 5), ("tiny_transformer_block", 10, 10), ("layout_align_demo", 18, 17)],
)
def test_search_finds_the_exhaustive_optimum(name: str, groups: int, found: int) -> None:
    n, got, evaluated, space = _agreement(name)
    assert n == groups
    assert got >= found
    assert evaluated < 0.2 * space


def test_default_mode_is_the_default_strategy_only() -> None:
    group = _groups(_grouped("tiny_cnn"))[0]
    got = search_group(group, TX81, mode="default")
    assert got.space_size == got.evaluated == len(got.candidates) == 1
    assert got.best is not None
    assert got.best.strategy == default_strategy(group, TX81)


def test_statuses_under_a_small_spm() -> None:
    small = TX81.with_overrides({"tile.spm_bytes": "68Ki"})  # 4 KiB usable
    groups = {g.id: g for g in _groups(_grouped("tiny_cnn"))}
    counts: dict[str, int] = {}
    for group in groups.values():
        got = search_group(group, small, mode="exhaustive")
        for status, n in got.rejected().items():
            counts[status] = counts.get(status, 0) + n
        frame = got.frame()
        over = frame[frame["status"] == "spm-overflow"]
        assert over["cycles"].isna().all()
        assert over["reason"].str.contains("does not fit").all()
        ok = frame[frame["status"] == "OK"]
        assert (ok["spm_peak_bytes"] <= small.tile.spm_usable_bytes).all()
        by_reason = got.rejected_by_reason()
        assert sum(by_reason.values()) == sum(got.rejected().values())
        overflow = {k: n for k, n in by_reason.items() if k.startswith("spm-overflow")}
        assert sum(overflow.values()) == got.rejected().get("spm-overflow", 0)
        # the allocator's reasons fold into one kind whatever their byte counts
        assert len([k for k in overflow if "SPM allocation does not fit" in k]) <= 1
    assert counts.get("spm-overflow", 0) > 0
    # the default strategy's own overflow (nothing left to split) is a rejected candidate
    # of group %32, not a crash; the split candidates fit
    got = search_group(groups[32], small, mode="exhaustive")
    assert got.candidates[0].status == "spm-overflow"
    assert "no dim is left to split" in got.candidates[0].reason
    assert got.best is not None
    assert got.best.sharding != "default"
    # everything overflows under a 1 KiB SPM: the error names the group and the reason
    tiny = TX81.with_overrides({"tile.spm_bytes": "65Ki"})
    with pytest.raises(Tx8labError, match=r"group %\d+: no candidate of \d+ fits.*does not fit"):
        search_group(groups[30], tiny, mode="exhaustive")


def test_frame_and_pareto_front() -> None:
    group = max(_groups(_grouped("tiny_transformer_block")), key=lambda g: space_size(g, TX81))
    got = search_group(group, TX81, mode="exhaustive")
    frame = got.frame()
    assert len(frame) == len(got.candidates)
    assert {"sharding", "split", "cycles", "spm_peak_bytes", "status", "reason"} <= set(frame)
    assert frame["best"].sum() == 1
    ok = frame[frame["status"] == "OK"]
    assert got.best is not None
    assert frame.loc[frame["best"], "cycles"].item() == ok["cycles"].min() == got.best.cycles
    front = got.pareto()
    assert front[0].cycles == got.best.cycles
    cycles = [c.cycles or 0 for c in front]
    peaks = [c.spm_peak_bytes or 0 for c in front]
    assert cycles == sorted(cycles)
    assert peaks == sorted(peaks, reverse=True)
    assert len(set(peaks)) == len(peaks)
    # nothing OK dominates a front member
    for c in front:
        assert c.cycles is not None
        assert c.spm_peak_bytes is not None
        assert not ((ok["cycles"] <= c.cycles) & (ok["spm_peak_bytes"] < c.spm_peak_bytes)).any()
        assert not ((ok["cycles"] < c.cycles) & (ok["spm_peak_bytes"] <= c.spm_peak_bytes)).any()
    points = {c.index: (c.cycles or 0, c.spm_peak_bytes or 0) for c in got.candidates if c.cycles}
    assert pareto_front(points) == [c.index for c in front]


def test_iter_search_is_anytime() -> None:
    group = _groups(_grouped("tiny_transformer_block"))[1]
    steps = list(iter_search(group, TX81, mode="exhaustive"))
    bests = [s.best.cycles or 0 for s in steps if s.best is not None]
    assert bests == sorted(bests, reverse=True)
    assert [s.done for s in steps] == [False] * (len(steps) - 1) + [True]
    assert len(steps[-1].candidates) == steps[-1].space_size
    # a zero budget still gives a schedule: the search stops once one candidate fits
    quick = search_group(group, TX81, budget_s=0.0)
    assert quick.best is not None
    assert quick.evaluated < steps[-1].evaluated
    assert quick.pruned > 0


def test_the_search_budget_counts_candidates_so_a_search_is_reproducible() -> None:
    from tx8lab.core.simulate import simulate_schedule

    # with the simulator as the timer (group-cost's) the plan cut keeps the 3 best: this
    # group's search evaluates 10 candidates unbudgeted
    group = _groups(_grouped("tiny_transformer_block"))[4]
    full = search_group(group, TX81, mode="exhaustive")
    assert search_group(group, TX81, timer=simulate_schedule).evaluated > 4
    runs = [
        search_group(group, TX81, budget=4, budget_s=1000.0, timer=simulate_schedule)
        for _ in range(2)
    ]
    # stops between candidates once 4 were evaluated (one fits: the default, first)
    assert runs[0].evaluated == 4
    assert runs[0].pruned > 0
    rows = [[(c.index, c.status, c.cycles) for c in r.candidates] for r in runs]
    assert rows[0] == rows[1]
    assert runs[0].best is not None
    assert runs[1].best is not None
    assert runs[0].best.index == runs[1].best.index
    # the wall-clock cap still ends a search when it is spent first
    capped = search_group(group, TX81, budget=10_000, budget_s=0.0)
    assert capped.evaluated < full.evaluated


def test_a_search_leaves_the_garbage_collector_as_it_found_it() -> None:
    """The collector is paused while candidates pile up, and back on after, error or not."""
    import gc

    group = _groups(_grouped("tiny_cnn"))[0]
    assert gc.isenabled()
    assert search_group(group, TX81).best is not None
    assert gc.isenabled()
    with pytest.raises(Tx8labError, match="exceeds max_space=2"):
        search_group(group, TX81, mode="exhaustive", max_space=2)
    assert gc.isenabled()
    gc.disable()
    try:
        search_group(group, TX81)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_search_errors_name_the_problem() -> None:
    group = _groups(_grouped("tiny_cnn"))[0]
    with pytest.raises(Tx8labError, match="unknown search mode 'fast'"):
        search_group(group, TX81, mode="fast")
    with pytest.raises(Tx8labError, match="exceeds max_space=2"):
        search_group(group, TX81, mode="exhaustive", max_space=2)
    body_op = group.regions[0].ops[0]
    with pytest.raises(Tx8labError, match=r"needs a tx8be\.Group"):
        search_group(body_op, TX81)


def test_template_key_ignores_ids_and_constant_payloads() -> None:
    groups = _groups(_grouped("bert_base"))
    keys = [template_key(g) for g in groups]
    # 12 identical encoder layers: far fewer templates than groups
    assert len(set(keys)) <= 24 < len(groups)
    # groups with one key have the same body structure with different ids
    common = max(set(keys), key=keys.count)
    assert keys.count(common) >= 12
    first, second = [g for g, k in zip(groups, keys, strict=True) if k == common][:2]
    assert first.id != second.id
    assert [op.kind for op in first.regions[0].ops] == [op.kind for op in second.regions[0].ops]


def test_cache_reuses_the_winner_by_position() -> None:
    groups = _groups(_grouped("bert_base"))
    cache = TemplateCache()
    settings = ("search",)
    keys = [template_key(g) for g in groups]
    common = max(set(keys), key=keys.count)
    repeated = [g for g, k in zip(groups, keys, strict=True) if k == common]
    assert len(repeated) >= 2
    a, b = repeated[:2]
    assert cache.lookup(a, settings) is None
    best = search_group(a, TX81).best
    assert best is not None
    assert best.strategy is not None
    cache.store(a, settings, best.strategy)
    mapped = cache.lookup(b, settings)
    assert mapped is not None
    assert cache.hit_rate == 0.5
    # the mapped strategy is b's own search result
    direct = search_group(b, TX81).best
    assert direct is not None
    assert direct.strategy == mapped
    assert cache.lookup(b, ("exhaustive",)) is None  # other settings: a miss


def test_bench_figures_on_a_small_model(capsys: pytest.CaptureFixture[str]) -> None:
    from tx8lab.bench.search import agreement, print_tables, search_figures

    row = search_figures(zoo.build("tiny_transformer_block"))
    assert row["groups"] == 10
    assert row["searched"] + round(row["hit_rate"] * row["groups"]) == row["groups"]
    assert 0 < row["evaluated"] <= row["space"]
    assert row["total_cycles"] <= row["default_cycles"]
    got = agreement(zoo.build("tiny_cnn"))
    assert got["groups"] == 5
    assert got["found"] == 5
    assert got["evaluated"] < got["space"]
    print_tables(("tiny_cnn",), quick=True)
    out = capsys.readouterr().out
    assert "tiny_cnn" in out
    assert "llama_decoder(layers=32)" in out


def test_a_small_spm_splits_the_reduction_dims_of_the_groups_matmuls() -> None:
    """DS_TileSplit's reduceSplit per op: the FFN MatMul's K is split when nothing else fits."""
    small = TX81.with_overrides({"tile.spm_bytes": "128Ki"})  # 64 KiB usable
    steps = list(
        run_pipeline(
            zoo.build("tiny_transformer_block", seq=64, hidden=256, ffn=512),
            build_pipeline(BEFORE),
            small,
        )
    )
    groups = _groups(steps[-1].after)
    ffn = next(g for g in groups if {"MatMul", "Gelu"} <= {o.name for o in g.regions[0].ops})
    got = search_group(ffn, small, mode="exhaustive")
    assert got.best is not None
    assert got.best.cycles is not None
    default = got.candidates[0]
    assert default.cycles is not None
    assert got.best.cycles < default.cycles
    fixed = [c for c in got.candidates if c.status == "OK" and c.reason.startswith("reduce split")]
    assert fixed, "overflowing candidates were made to fit by reduce splits"
    for c in fixed:
        assert c.strategy is not None
        assert c.spm_peak_bytes is not None
        assert c.spm_peak_bytes <= small.tile.spm_usable_bytes
        matmul = next(o for o in ffn.regions[0].ops if o.name == "MatMul")
        assert c.strategy.ops[matmul.id].split[-1] > 1  # K, the last iteration dim


def test_search_gives_up_with_a_clear_error_when_nothing_fits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tx8lab.core.schedule import search

    tiny = TX81.with_overrides({"tile.spm_bytes": str(64 * 1024 + 64)})  # 64 B usable
    group = _groups(_grouped("tiny_cnn"))[1]
    monkeypatch.setattr(search, "NO_FIT_FACTOR", 0)
    with pytest.raises(Tx8labError, match=r"no candidate fits in 64 B of usable SPM .*spm_bytes"):
        search_group(group, tiny, budget_s=0.5)


@pytest.mark.parametrize(
    ("name", "noc"), [("layout_align_demo", False), ("tiny_transformer_block", True)]
)
def test_the_plan_cut_saves_work_and_changes_no_choice(
    name: str, noc: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Oracle: the same searches with the cut turned off (module docstring, "Plan cut")."""
    from tx8lab.core.schedule import search as search_module
    from tx8lab.core.simulate import simulate_schedule

    groups = _groups(_grouped(name))

    def searched() -> list[search_module.SearchResult]:
        return [search_group(g, TX81, timer=simulate_schedule, noc=noc) for g in groups]

    def played(result: search_module.SearchResult) -> list[tuple[int, str]]:
        return sorted((c.cycles or 0, repr(c.strategy)) for c in result.candidates if c.simulated)

    cut = searched()
    monkeypatch.setattr(
        search_module._Search, "plan_cut", lambda self, strategy, first: (None, (first,))
    )
    whole = searched()
    for a, b in zip(cut, whole, strict=True):
        assert a.best is not None
        assert b.best is not None
        assert (a.best.strategy, a.best.cycles) == (b.best.strategy, b.best.cycles)
        assert played(a) == played(b)
    skipped = sum(b.evaluated for b in whole) - sum(a.evaluated for a in cut)
    assert skipped > 0
    assert sum(a.pruned for a in cut) - sum(b.pruned for b in whole) == skipped
