"""FactorSpaceView and factor_space_figure over real group-cost searches of zoo models."""

from __future__ import annotations

import functools
import re
from typing import Any

import plotly.graph_objects as go
import pytest
from plotly.callbacks import Points

from tests.widgets.traces import trace_of
from tx8lab.core import zoo
from tx8lab.core.ir import Op
from tx8lab.core.passes import build_pipeline
from tx8lab.core.passes.base import Step
from tx8lab.core.runner import run_pipeline
from tx8lab.core.schedule.search import SearchResult, search_group
from tx8lab.core.schedule.sharding import op_sharding_levels, output_ops
from tx8lab.core.schedule.stages import run_group
from tx8lab.core.simulate import simulate_schedule
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81
from tx8lab.widgets import FactorSpaceView, factor_space_figure, levels_frame
from tx8lab.widgets.factor_space import STATUSES, propagation_frame, set_selected, split_frame

TIGHT_HW = TX81.with_overrides({"tile.spm_bytes": 65536 + 8192})
"""8 KiB of usable SPM: for the MLP group only the default strategy fits (45 spm-overflow)."""


@functools.cache
def group_id(model: str, *names: str) -> int:
    """The id of the group of ``model`` whose body holds the ops ``names``."""
    cost = next(s for s in trace_of(model) if s.name == "group-cost")
    return next(
        op.id
        for op in cost.after.walk()
        if op.kind == "tx8be.Group" and set(names) <= {o.name for o in op.regions[0].ops}
    )


def conv_id() -> int:
    """tiny_cnn's Conv2d+BatchNorm+Relu+MaxPool2d group: 121 candidates, all fit."""
    return group_id("tiny_cnn", "Conv2d", "BatchNorm_Inference", "MaxPool2d")


def mlp_id() -> int:
    """tiny_transformer_block's MatMul+Add+Gelu group."""
    return group_id("tiny_transformer_block", "MatMul", "Gelu")


@functools.cache
def searched(name: str, mode: str) -> list[Step]:
    """The default pipeline with ``group-cost.search=mode`` on zoo model ``name``."""
    passes = build_pipeline(overrides={"group-cost.search": mode})
    return list(run_pipeline(zoo.build(name), passes, TX81))


def cost_step(steps: list[Step]) -> Step:
    return next(s for s in steps if s.name == "group-cost")


def group_of(steps: list[Step], gid: int) -> Op:
    return next(op for op in cost_step(steps).after.walk() if op.id == gid)


def stored(name: str, mode: str, gid: int) -> SearchResult:
    result: SearchResult = cost_step(searched(name, mode)).result.artifacts["searches"][gid]
    return result


def by_role(fig: go.Figure, role: str) -> list[Any]:
    return [t for t in fig.data if (t.meta or {}).get("role") == role]


# ---------------------------------------------------------------- the figure


@pytest.mark.parametrize(
    ("name", "mode", "ops"),
    [
        ("tiny_cnn", "exhaustive", ("Conv2d", "MaxPool2d")),
        ("tiny_transformer_block", "search", ("MatMul", "Softmax")),
    ],
)
def test_figure_points_front_best_and_status_bars(
    name: str, mode: str, ops: tuple[str, ...]
) -> None:
    result = stored(name, mode, group_id(name, *ops))
    fig = factor_space_figure(result)
    ok = [c for c in result.candidates if c.status == "OK"]
    points = [
        (int(cd[0]), x, y)
        for t in by_role(fig, "candidate") + by_role(fig, "default")
        for cd, x, y in zip(t.customdata, t.x, t.y, strict=True)
    ]
    assert len(points) == len(ok)
    assert sorted(points) == sorted((c.index, c.spm_peak_bytes, c.cycles) for c in ok)
    # one trace per sharding level, the default strategy apart
    levels = {c.level for c in ok if c.sharding != "default"}
    assert {t.meta["level"] for t in by_role(fig, "candidate")} == levels
    (default,) = by_role(fig, "default")
    assert [int(cd[0]) for cd in default.customdata] == [0]
    assert result.candidates[0].sharding == "default"
    (front,) = by_role(fig, "pareto")
    pareto = result.pareto()
    assert sorted(front.meta["indices"]) == sorted(c.index for c in pareto)
    assert list(zip(front.x, front.y, strict=True)) == sorted(
        (c.spm_peak_bytes, c.cycles) for c in pareto
    )
    assert front.line.shape == "hv"
    (best,) = by_role(fig, "best")
    assert result.best is not None
    assert (best.x[0], best.y[0], best.meta["index"]) == (
        result.best.spm_peak_bytes,
        result.best.cycles,
        result.best.index,
    )
    (bars,) = by_role(fig, "status")
    counts = dict(zip(bars.x, bars.y, strict=True))
    assert tuple(counts) == STATUSES
    assert counts["OK"] == len(ok)
    assert counts["pruned"] == result.pruned
    for status, n in result.rejected().items():
        assert counts[status] == n
    assert sum(counts.values()) == len(result.candidates) + result.pruned
    title = fig.layout.title.text
    assert f"{result.evaluated} of {result.space_size} candidates evaluated" in title


def test_exhaustive_conv_group_has_a_real_front() -> None:
    result = stored("tiny_cnn", "exhaustive", conv_id())
    # nothing pruned but the shared-loads twins that need not run
    assert len(result.candidates) + result.pruned == result.space_size
    assert len(result.pareto()) == 4  # measured: the front is not a single point
    fig = factor_space_figure(result)
    assert len(by_role(fig, "pareto")[0].x) == 4


def test_rejected_candidates_are_counted_with_their_reasons() -> None:
    group = group_of(trace_of("tiny_transformer_block"), mlp_id())
    result = search_group(group, TIGHT_HW, mode="exhaustive")
    assert result.rejected() == {"spm-overflow": result.space_size - 1}
    fig = factor_space_figure(result)
    assert len(by_role(fig, "candidate")) == 0  # only the default strategy fits
    assert len(by_role(fig, "default")[0].x) == 1
    (bars,) = by_role(fig, "status")
    i = list(bars.x).index("spm-overflow")
    assert bars.y[i] == result.space_size - 1
    assert "does not fit" in bars.customdata[i]


def test_set_selected_rings_ok_candidates_only() -> None:
    result = search_group(
        group_of(trace_of("tiny_transformer_block"), mlp_id()), TIGHT_HW, mode="exhaustive"
    )
    fig = factor_space_figure(result, selected=0)
    (ring,) = by_role(fig, "selected")
    assert (list(ring.x), list(ring.y)) == (
        [result.candidates[0].spm_peak_bytes],
        [result.candidates[0].cycles],
    )
    set_selected(fig, result, 3)
    assert result.candidates[3].status == "spm-overflow"
    assert (list(ring.x), ring.meta["index"]) == ([], 3)
    with pytest.raises(
        Tx8labError, match=rf"candidate #999 is not in the search of group %{mlp_id()}"
    ):
        set_selected(fig, result, 999)


def test_figure_refuses_what_is_not_a_search_result() -> None:
    with pytest.raises(Tx8labError, match="needs a SearchResult"):
        factor_space_figure(cost_step(trace_of("tiny_cnn")))  # type: ignore[arg-type]


# ---------------------------------------------------------------- tables


def test_levels_frame_is_the_first_output_ops_levels() -> None:
    group = group_of(trace_of("tiny_cnn"), conv_id())
    df = levels_frame(group, TX81)
    (out, *_) = output_ops(group)
    assert out.name == "MaxPool2d"
    levels = op_sharding_levels(out, TX81.tiles_per_chip)
    assert len(df) == sum(len(lv.shardings) for lv in levels)
    assert set(df["op"]) == {f"%{out.id} (MaxPool2d)"}
    assert list(df["tiles"]) == sorted(df["tiles"], reverse=True)  # best level first
    assert df["sharding"].iloc[-1] == (1, 1, 1, 1)  # the no-shard vector last
    assert (df["effective"] <= df["tiles"] * 2).all()


def test_propagation_frame_gives_the_searched_strategy() -> None:
    result = stored("tiny_cnn", "exhaustive", conv_id())
    group = group_of(searched("tiny_cnn", "exhaustive"), conv_id())
    checked = k_reduce = 0
    for cand in result.candidates:
        if cand.status != "OK" or cand.sharding == "default":
            continue
        assert cand.strategy is not None
        df = propagation_frame(group, result, cand.index)
        ids = [int(re.match(r"%(\d+)", op).group(1)) for op in df["op"]]  # type: ignore[union-attr]
        assert set(ids) == set(cand.strategy.ops)
        for op_id, shard, split in zip(
            ids, df["shard (iter dims)"], df["split (iter dims)"], strict=True
        ):
            assert (shard, split) == (
                cand.strategy.ops[op_id].shard,
                cand.strategy.ops[op_id].split,
            )
        assert "output" in set(df["source"])
        # a K-sharded candidate's conv says so (the search's noc_sharded, group-cost.noc)
        assert ("k-reduce" in set(df["source"])) == cand.sharding.endswith(
            tuple(f" K/{k}" for k in (2, 4, 8, 16))
        )
        k_reduce += "k-reduce" in set(df["source"])
        checked += 1
    assert checked == sum(c.status == "OK" and c.sharding != "default" for c in result.candidates)
    assert 0 < k_reduce < checked
    default = propagation_frame(group, result, 0)
    assert set(default["source"]) == {"default"}


def test_split_frame_marks_the_tries_within_the_depth() -> None:
    result = stored("tiny_cnn", "exhaustive", conv_id())
    group = group_of(searched("tiny_cnn", "exhaustive"), conv_id())
    deep = max(result.candidates, key=lambda c: c.depth)
    assert deep.depth >= 2
    df = split_frame(group, result, deep.index)
    assert int(df["applied"].sum()) == deep.depth
    assert str(list(df["split"].iloc[deep.depth - 1])) == deep.split
    assert df["applied"].iloc[deep.depth :].sum() == 0
    # the default strategy: the walk under its own shard, none of it applied
    default = split_frame(group, result, 0)
    assert len(default) > 0
    assert not default["applied"].any()


# ---------------------------------------------------------------- the view


def test_from_step_uses_the_stored_search_and_selects_the_best() -> None:
    steps = searched("tiny_cnn", "exhaustive")
    view = FactorSpaceView.from_step(steps, conv_id())
    result = stored("tiny_cnn", "exhaustive", conv_id())
    assert view.result is result
    assert result.best is not None
    assert view.selected == result.best.index
    # exhaustive: a row per candidate of the space, but the shared-loads twins it need not
    # run (counted as pruned)
    assert view.candidates == len(result.candidates) == result.space_size - result.pruned
    assert view.status == "OK"
    sched = view.scheduled()
    assert sched is not None
    entry = next(e for e in cost_step(steps).result.artifacts["groups"] if e["id"] == conv_id())
    assert sched.estimate.cycles == entry["cycles"]
    (timeline,) = view.timeline_box.children
    assert isinstance(timeline, go.FigureWidget)
    assert f"{entry['cycles']:,} cycles" in timeline.layout.title.text


def test_from_step_defaults_to_the_costliest_group() -> None:
    steps = searched("tiny_cnn", "exhaustive")
    entries = cost_step(steps).result.artifacts["groups"]
    costliest = max(entries, key=lambda e: e["cycles"])["id"]
    assert FactorSpaceView.from_step(steps).group.id == costliest


def test_set_state_changes_the_split_propagation_and_timeline() -> None:
    view = FactorSpaceView.from_step(searched("tiny_cnn", "exhaustive"), conv_id())
    before_split, before_detail = view.split, view.detail.value
    before_title = view.timeline_box.children[0].layout.title.text
    other = next(
        c
        for c in view.result.candidates
        if c.status == "OK" and c.depth >= 1 and c.cycles != view.result.candidates[0].cycles
    )
    view.set_state({"selected": other.index})
    assert view.selected == other.index
    assert view.dropdown.value == other.index
    assert view.split == other.split != before_split
    assert view.detail.value != before_detail
    assert "Split tries of" in view.detail.value
    assert "Propagation over the group" in view.detail.value
    title = view.timeline_box.children[0].layout.title.text
    assert title != before_title
    assert title.startswith(f"#{other.index}: {other.cycles:,} cycles")
    (ring,) = by_role(view.figure, "selected")
    assert (ring.x[0], ring.y[0]) == (other.spm_peak_bytes, other.cycles)
    # clamped to the candidates, as the other views clamp their cursors
    view.set_state({"selected": 10_000})
    assert view.selected == view.candidates - 1
    view.selected = -5
    assert view.selected == 0


def test_dropdown_and_click_select_a_candidate() -> None:
    view = FactorSpaceView.from_step(searched("tiny_cnn", "exhaustive"), conv_id())
    view.dropdown.value = 7
    assert view.selected == 7
    trace = by_role(view.figure, "candidate")[1]
    target = int(trace.customdata[2][0])
    trace._dispatch_on_click(Points(point_inds=[2], trace_index=1), None)
    assert view.selected == target
    assert view.dropdown.value == target


def test_a_rejected_candidate_shows_its_reason_and_no_timeline() -> None:
    group = group_of(trace_of("tiny_transformer_block"), mlp_id())
    view = FactorSpaceView.from_group(group, TIGHT_HW, mode="exhaustive")
    assert view.selected == 0  # only the default fits
    rejected = next(c for c in view.result.candidates if c.depth >= 1)
    view.selected = rejected.index
    assert view.status == "spm-overflow"
    assert view.scheduled() is None
    assert "does not fit" in view.detail.value
    (note,) = view.timeline_box.children
    assert "has no schedule (spm-overflow)" in note.value
    assert int(view.split_frame()["applied"].sum()) == rejected.depth


def test_from_step_searches_a_group_the_run_did_not_search() -> None:
    steps = trace_of("tiny_transformer_block", "group-cost.search=default")  # nothing stored
    assert cost_step(steps).result.artifacts["searches"] == {}
    view = FactorSpaceView.from_step(steps, mlp_id(), mode="exhaustive")
    assert view.result.mode == "exhaustive"
    assert len(view.result.candidates) + view.result.pruned == view.result.space_size
    entry = next(e for e in cost_step(steps).result.artifacts["groups"] if e["id"] == mlp_id())
    assert view.result.best is not None
    assert view.result.best.cycles is not None
    assert view.result.best.cycles <= entry["cycles"]


def test_template_cache_hit_is_searched_again() -> None:
    steps = searched("tiny_transformer_block", "search")
    arts = cost_step(steps).result.artifacts
    hits = [e["id"] for e in arts["groups"] if e["template_hit"]]
    assert hits
    view = FactorSpaceView.from_step(steps, hits[0])
    assert view.result.mode == "search"
    assert view.result.best is not None
    strategy = arts["strategies"][hits[0]]
    # the search's ranking is simulated on its own (first-fit) packing: the same here
    cycles = run_group(view.group, strategy, TX81, timer=simulate_schedule).estimate.cycles
    assert view.result.best.simulated
    assert view.result.best.cycles == cycles


def test_to_html_is_a_page_with_the_figure_detail_and_timeline() -> None:
    view = FactorSpaceView.from_step(searched("tiny_cnn", "exhaustive"), conv_id())
    page = view.to_html()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count('class="plotly-graph-div"') == 2
    assert "Split tries of" in page
    assert f"group %{conv_id()}" in page


# ---------------------------------------------------------------- errors


def test_bad_inputs_are_clear_errors() -> None:
    steps = searched("tiny_cnn", "exhaustive")
    group = group_of(steps, conv_id())
    conv = next(op for op in group.regions[0].ops if op.name == "Conv2d")
    with pytest.raises(Tx8labError, match=r"needs a tx8be.Group op with a body, got %\d+"):
        FactorSpaceView.from_group(conv, TX81)
    with pytest.raises(Tx8labError, match="unknown mode 'fast'"):
        FactorSpaceView.from_group(group, TX81, mode="fast")
    with pytest.raises(Tx8labError, match="give the group-cost step"):
        FactorSpaceView.from_step(steps[0])
    with pytest.raises(Tx8labError, match=r"%12345 is not a group of the group-cost step"):
        FactorSpaceView.from_step(steps, 12345)
    with pytest.raises(Tx8labError, match=r"has no stored search .*mode='default'"):
        FactorSpaceView.from_step(
            trace_of("tiny_cnn", "group-cost.search=default"), conv_id(), mode="default"
        )
    with pytest.raises(Tx8labError, match="pass the hw the run used"):
        FactorSpaceView.from_step(
            trace_of("tiny_transformer_block"), mlp_id(), TIGHT_HW, mode="search"
        )
    head = group_id("tiny_cnn", "Gemm", "Softmax")
    other = stored("tiny_cnn", "exhaustive", head)
    with pytest.raises(Tx8labError, match=rf"search result is of group %{head}, not %{conv_id()}"):
        FactorSpaceView(group, TX81, other)
    with pytest.raises(Tx8labError, match=r"levels_frame needs a tx8be\.Group"):
        levels_frame(conv, TX81)
