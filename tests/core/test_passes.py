"""dce and fold-constants: properties on random modules, plus unit cases on zoo models."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import modules
from tx8lab.core.attrs import RandomInit
from tx8lab.core.builder import Builder
from tx8lab.core.interpret import interpret, random_inputs
from tx8lab.core.ir import Block, Function, Module, Op
from tx8lab.core.passes import DCE, FoldConstants
from tx8lab.core.passes.base import Pass
from tx8lab.core.passes.dce import dead_ops
from tx8lab.core.runner import execute, run_pipeline
from tx8lab.core.text import print_module
from tx8lab.core.zoo import build
from tx8lab.hw import get_preset

HW = get_preset("tx81")


@st.composite
def modules_with_dead_code(draw: Any) -> Module:
    """A random module that returns only some of its values, so parts of it are dead."""
    module: Module = draw(modules())
    func = module.main
    outputs = list(func.outputs)
    keep = draw(
        st.lists(
            st.sampled_from(outputs), min_size=1, max_size=len(outputs), unique_by=lambda v: v.key
        )
    )
    ret = Op(-1, "func.return", tuple(keep), ())
    return Module(
        (Function(func.name, Block(func.args, (*func.ops[:-1], ret))),),
        module.attrs,
        module.next_id,
    )


def _same_values(before: Module, after: Module, seed: int = 0) -> None:
    inputs = random_inputs(before, seed=seed)
    want = interpret(before, inputs)
    got = interpret(after, inputs)
    assert len(want) == len(got)
    for w, g in zip(want, got, strict=True):
        assert w.dtype == g.dtype
        np.testing.assert_array_equal(g, w)


def _check_pass(p: Pass, module: Module) -> Module:
    text = print_module(module)
    result, _ = execute(p, module, HW)  # verifies, with the pass's post-conditions
    assert print_module(module) == text, f"{p.name} mutated its input"
    assert result.module.num_ops <= module.num_ops
    _same_values(module, result.module)
    if result.module is module:
        assert not [d for d in result.decisions if d.choice in ("removed", "folded")]
    return result.module


@given(modules_with_dead_code())
def test_dce_keeps_values_and_never_adds_ops(module: Module) -> None:
    out = _check_pass(DCE(), module)
    assert not dead_ops(out.main.body)
    # idempotent: a second run finds nothing
    assert DCE().run(out, HW).module is out


@given(modules_with_dead_code())
def test_dce_without_group_recursion(module: Module) -> None:
    _check_pass(DCE(recurse_groups=False), module)


@given(modules(), st.sampled_from([0, 16, 1 << 20]))
def test_fold_keeps_values_and_never_adds_ops(module: Module, max_bytes: int) -> None:
    p = FoldConstants(max_bytes=max_bytes)
    out = _check_pass(p, module)
    again = p.run(out, HW)
    assert again.module is out, "a second fold found more to fold"
    created = [op for op in out.walk() if op.created_by == "fold-constants"]
    assert all(
        op.kind == "tx8be.Constant" and isinstance(op.attrs["value"], np.ndarray) for op in created
    )
    assert len(created) == len([d for d in p.run(module, HW).decisions if d.choice == "folded"])


@given(modules_with_dead_code())
def test_fold_then_dce_keeps_values(module: Module) -> None:
    steps = list(run_pipeline(module, ["fold-constants", "dce"], HW))
    assert steps[-1].num_ops_after <= module.num_ops
    _same_values(module, steps[-1].after, seed=3)


# --------------------------------------------------------------------------- dce


def test_dce_decisions_say_why() -> None:
    b = Builder()
    x = b.input((4,), "f32")
    neg = b.op("Neg", x)
    b.op("Relu", neg)
    b.op("StoreVar", b.op("Abs", x))
    b.output(b.op("Sigmoid", x))
    module = b.finish()
    result = DCE().run(module, HW)
    reasons = {(d.op_id, d.choice): d.reason for d in result.decisions}
    assert reasons == {
        (0, "removed"): "its only users (%1) are dead and removed too",
        (1, "removed"): "its result has no user and tx8be.Relu has no side effect",
        (3, "kept"): "unused, but kept: tx8be.StoreVar has a side effect (it writes DDR)",
    }
    assert [d.op_id for d in result.decisions] == [0, 1, 3]
    assert result.stats == {"removed": 2, "kept_for_side_effects": 1}
    assert [op.kind for op in result.module.main.ops] == [
        "tx8be.Abs",
        "tx8be.StoreVar",
        "tx8be.Sigmoid",
        "func.return",
    ]


def test_dce_post_condition_reports_a_dead_op() -> None:
    b = Builder()
    x = b.input((4,), "f32")
    b.op("Neg", x)
    b.output(x)
    module = b.finish()
    assert DCE().check(module) == ["%0 tx8be.Neg: dead op left after dce"]
    assert DCE().check(DCE().run(module, HW).module) == []


def test_dce_on_a_zoo_model_changes_nothing() -> None:
    module = build("tiny_cnn")
    assert DCE().run(module, HW).module is module


# --------------------------------------------------------------------------- fold


def _llama() -> Module:
    return build("llama_decoder", layers=1, hidden=64, heads=4, ffn=128, vocab=100, seq=8)


def test_fold_folds_llama_tables_but_never_random_weights() -> None:
    module = _llama()
    result = FoldConstants().run(module, HW)
    folded = [d for d in result.decisions if d.choice == "folded"]
    # rotary cos/sin (Concatenate of dense halves) and the causal mask (Compare, Where)
    assert len(folded) == 4
    by_id = module.op_by_id()
    assert {by_id[d.op_ids[0]].kind for d in folded} == {
        "tx8be.Concatenate",
        "tx8be.Compare",
        "tx8be.Where",
    }
    for op in result.module.walk():
        if op.kind == "tx8be.Constant" and op.created_by is None:
            assert op is by_id[op.id]  # untouched
    weights = {op.id for op in module.walk() if isinstance(op.attrs.get("value"), RandomInit)}
    after = result.module.op_by_id()
    assert all(isinstance(after[i].attrs["value"], RandomInit) for i in weights)
    _same_values(module, result.module)


def test_fold_max_bytes_zero_folds_nothing_and_says_why() -> None:
    module = _llama()
    result = FoldConstants(max_bytes=0).run(module, HW)
    assert result.module is module
    kept = [d for d in result.decisions if d.choice == "kept"]
    assert kept
    assert all("> max_bytes 0" in d.reason for d in kept)
    assert result.stats["folded"] == 0
    assert result.stats["kept_too_large"] == len(kept)


def test_fold_of_random_init_operand_is_kept_with_a_reason() -> None:
    b = Builder()
    w = b.weight((2, 3), "f16")
    b.output(b.op("Transpose", w, perm=(1, 0)))
    module = b.finish()
    result = FoldConstants().run(module, HW)
    assert result.module is module
    (decision,) = result.decisions
    assert decision.choice == "kept"
    assert "RandomInit" in decision.reason
    assert decision.related_ids == (0,)


def test_fold_gives_new_ids_and_records_the_replacement() -> None:
    b = Builder()
    x = b.input((3,), "f32")
    c = b.constant([1.0, 4.0, 9.0])
    b.output(b.op("Mul", x, b.op("Sqrt", c)))
    module = b.finish()
    result = FoldConstants().run(module, HW)
    (decision,) = result.decisions
    assert decision.op_id == 1
    assert decision.related_ids == (module.next_id,)
    assert result.module.next_id == module.next_id + 1
    new = result.module.op_by_id()[module.next_id]
    assert new.created_by == "fold-constants"
    np.testing.assert_array_equal(new.attrs["value"], np.array([1.0, 2.0, 3.0], np.float32))
    assert result.stats == {
        "folded": 1,
        "folded_bytes": 12,
        "kept_random_init": 0,
        "kept_too_large": 0,
    }


@pytest.mark.parametrize(
    "name", ["tiny_cnn", "tiny_transformer_block", "layout_align_demo", "batchnorm_demo"]
)
def test_default_pipeline_on_zoo_models(name: str) -> None:
    module = build(name)
    steps = list(run_pipeline(module, ["fold-constants", "dce"], HW))
    assert steps[-1].num_ops_after <= module.num_ops
