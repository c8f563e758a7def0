"""Outlining op sets into tx8be.Group ops (tx8lab.core.grouping)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import modules
from tx8lab.core import Builder, interpret, random_inputs, verify
from tx8lab.core.grouping import group_members, outline
from tx8lab.core.ir import TERMINATORS, IdCounter, Module
from tx8lab.errors import Tx8labError


def _chain() -> Module:
    b = Builder()
    x = b.input((1, 4, 4, 8), "f32")
    a = b.op("Relu", x)  # %0
    c = b.op("Neg", a)  # %1
    d = b.op("Abs", x)  # %2
    e = b.op("Add", c, d)  # %3
    b.output(e, a)
    return b.finish()


def _outline(module: Module, groups: list[list[int]]) -> Module:
    ids = IdCounter(module.next_id)
    func, _ = outline(module.main, groups, ids, created_by="test")
    return Module((func,), module.attrs, ids.next_id)


def _same(a: Module, b: Module) -> None:
    inputs = random_inputs(a, seed=2)
    for want, got in zip(interpret(a, inputs), interpret(b, inputs), strict=True):
        np.testing.assert_array_equal(got, want)


def test_group_operands_results_and_body() -> None:
    module = _chain()
    out = _outline(module, [[0, 1]])
    verify(out)
    _same(module, out)
    group = next(op for op in out.main.ops if op.kind == "tx8be.Group")
    assert group.created_by == "test"
    assert [v.is_arg for v in group.operands] == [True]
    # %0 is read by the return and %1 by the Add: both are results
    assert len(group.results) == 2
    assert group_members(out.main) == {group.id: [0, 1]}


def _kinds(ops: object) -> list[str]:
    return [op.kind.removeprefix("tx8be.") for op in ops]  # type: ignore[attr-defined]


def test_non_contiguous_members_are_sorted_after() -> None:
    module = _chain()
    out = _outline(module, [[0, 2], [1, 3]])
    verify(out)
    _same(module, out)
    # {Relu, Abs} first (its first member is first), then {Neg, Add}, which reads it
    first, second = (op for op in out.main.ops if op.kind == "tx8be.Group")
    assert [op.id for op in out.main.ops[:2]] == [first.id, second.id]
    assert _kinds(first.regions[0].ops[:-1]) == ["Relu", "Abs"]
    assert _kinds(second.regions[0].ops[:-1]) == ["Neg", "Add"]
    assert first.id in {v.owner for v in second.operands if not v.is_arg}


def test_a_group_moves_after_an_outside_op_it_reads() -> None:
    b = Builder()
    x = b.input((1, 4, 4, 8), "f32")
    a = b.op("Relu", x)  # %0
    d = b.op("Abs", x)  # %1
    c = b.op("Neg", a)  # %2
    b.output(b.op("Add", c, d))  # %3
    module = b.finish()
    # the group {%1, %3} starts at position 1 but reads %2 (position 2): by Kahn's order
    # (ties to the earliest position) the top level becomes Relu, Neg, then the group
    out = _outline(module, [[1, 3]])
    verify(out)
    _same(module, out)
    assert _kinds(out.main.ops[:-1]) == ["Relu", "Neg", "Group"]
    assert _kinds(out.main.ops[2].regions[0].ops[:-1]) == ["Abs", "Add"]


def test_non_convex_group_is_an_error_naming_it() -> None:
    # %0 -> %1 -> %3 leaves {0, 3} through %1 and comes back
    module = _chain()
    with pytest.raises(Tx8labError, match="not convex"):
        _outline(module, [[0, 3]])


@pytest.mark.parametrize(
    ("groups", "message"),
    [([[]], "empty"), ([[0], [0]], "group 0 and group 1"), ([[99]], "%99 is not")],
)
def test_bad_groups(groups: list[list[int]], message: str) -> None:
    with pytest.raises(Tx8labError, match=message):
        _outline(_chain(), groups)


@given(modules(max_ops=14, groups=False), st.data())
def test_single_op_groups_keep_values(module: Module, data: st.DataObject) -> None:
    ops = [op.id for op in module.main.ops if op.kind not in TERMINATORS]
    chosen = data.draw(st.lists(st.sampled_from(ops), unique=True, max_size=len(ops)))
    out = _outline(module, [[i] for i in chosen])
    verify(out)
    _same(module, out)
