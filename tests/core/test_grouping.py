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


def test_non_contiguous_members_are_sorted_after() -> None:
    module = _chain()
    out = _outline(module, [[0, 2], [1, 3]])
    verify(out)
    _same(module, out)


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
