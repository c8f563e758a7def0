"""The ``group`` pass (strategy knob), the default pipeline through grouping, and the report."""

from __future__ import annotations

import numpy as np
import pytest

from tx8lab.core import interpret, random_inputs, verify, zoo
from tx8lab.core.grouping import is_compute
from tx8lab.core.ir import Module
from tx8lab.core.passes import DEFAULT_PIPELINE, GroupHDFG, GroupPattern, build_pipeline
from tx8lab.core.passes.group import Group
from tx8lab.core.report import build_report
from tx8lab.core.runner import run_pipeline
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81


def _ready(name: str, **params: int) -> Module:
    """The module as the grouping step receives it (layout and constant passes done)."""
    upto = DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index("group")]
    steps = list(run_pipeline(zoo.build(name, **params), build_pipeline(upto), TX81))
    return steps[-1].after


def _rules(module: Module) -> list[str]:
    return [str(op.attrs.get("group_rule")) for op in module.main.ops if op.kind == "tx8be.Group"]


@pytest.mark.parametrize(
    ("strategy", "prefix", "pass_name"),
    [("pattern", "pattern:cnn:", "group-pattern"), ("hdfg", "hdfg:opu", "group-hdfg")],
)
def test_strategy_picks_the_grouper(strategy: str, prefix: str, pass_name: str) -> None:
    module = _ready("tiny_cnn")
    (step,) = run_pipeline(module, build_pipeline(["group"], [f"group.strategy={strategy}"]), TX81)
    rules = _rules(step.after)
    assert rules
    assert all(rule.startswith(prefix) for rule in rules)
    assert step.stats["strategy"] == strategy
    assert {d.pass_name for d in step.decisions} == {pass_name}


def test_knobs_reach_the_grouper() -> None:
    pattern = Group(opt_group="transformer").grouper()
    assert isinstance(pattern, GroupPattern)
    assert pattern.opt_group == "transformer"
    hdfg = Group(strategy="hdfg", graph="opu").grouper()
    assert isinstance(hdfg, GroupHDFG)
    assert hdfg.graph == "opu"
    with pytest.raises(Tx8labError, match="must be one of pattern, hdfg"):
        build_pipeline(["group"], ["group.strategy=greedy"])
    with pytest.raises(Tx8labError, match="must be one of pattern, hdfg"):
        Group(strategy="greedy")


@pytest.mark.parametrize("strategy", ["pattern", "hdfg"])
def test_default_pipeline_puts_every_compute_op_in_one_group(strategy: str) -> None:
    module = zoo.build("bert_base", layers=1, seq=8, vocab=100)
    steps = list(run_pipeline(module, build_pipeline(None, [f"group.strategy={strategy}"]), TX81))
    final = steps[-1].after
    verify(final)
    assert not [op for op in final.main.ops if is_compute(op)]
    inputs = random_inputs(module, seed=3)
    for want, got in zip(interpret(module, inputs), interpret(final, inputs), strict=True):
        np.testing.assert_array_equal(got, want)
    report = build_report(module, steps, TX81)
    members = [op for g in report["groups"] for op in g["ops"]]
    assert len(members) == len(set(members))
    groups = [op for op in final.main.ops if op.kind == "tx8be.Group"]
    assert [g["id"] for g in report["groups"]] == [g.id for g in groups]
    barrier = next(s for s in steps if s.name == "opt-barrier")
    assert sum(1 for g in report["groups"] if g["need_barrier"]) == barrier.stats["barriers"]
    moved = next(s for s in steps if s.name == "move-constant")
    assert report["constants"]["count"] == moved.stats["constants"]


def test_report_has_no_groups_before_grouping() -> None:
    module = zoo.build("tiny_cnn")
    upto = DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index("group")]
    steps = list(run_pipeline(module, build_pipeline(upto), TX81))
    report = build_report(module, steps, TX81)
    assert "groups" not in report
    assert "constants" in report
