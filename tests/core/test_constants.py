"""Const management: ConstContainer, move-constant and const-norm.

The golden files in ``tests/golden/move_constant/`` and ``tests/golden/const_norm/`` show
one rule each; these tests cover the container on its own, every zoo model (values kept,
post-conditions), the realistic pipeline (after the layout passes), random modules
(hypothesis), the post-conditions catching broken modules, and the report summary.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import INTERPRETABLE, same_outputs
from tests.strategies import modules
from tx8lab.core import Builder, verify, zoo
from tx8lab.core.attrs import DevInfo, LayoutMode, RandomInit
from tx8lab.core.constants import (
    THRESHOLD_ATTR,
    ConstContainer,
    ParamInfo,
    constants_summary,
    default_threshold_bytes,
    tensor_bytes,
)
from tx8lab.core.ir import Module, Op, TensorType, Value
from tx8lab.core.passes import build_pipeline
from tx8lab.core.passes.const_norm import ConstNorm
from tx8lab.core.passes.move_constant import MoveConstant, use_needs_load
from tx8lab.core.report import to_jsonable
from tx8lab.core.runner import execute, run_pipeline
from tx8lab.core.text import print_module
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81

LAYOUT = ["layout-init", "layout-transmit", "layout-align-npu", "layout-align-opt"]
CONST = ["move-constant", "const-norm"]


def _after(module: Module, names: list[str]) -> Module:
    return list(run_pipeline(module, build_pipeline(names), TX81))[-1].after


def _kinds(module: Module, kind: str) -> list[Op]:
    return [op for op in module.walk() if op.kind == kind]


def _const_norm_pairs(module: Module) -> int:
    """LoadConsts whose only user is a ChannelNorm (top level)."""
    users: dict[tuple[int, int, bool], set[int]] = {}
    by_id = module.op_by_id()
    for op in module.main.ops:
        for v in op.operands:
            users.setdefault(v.key, set()).add(op.id)
    count = 0
    for op in module.main.ops:
        if op.kind == "tx8be.LoadConst":
            u = users.get(op.result.key, set())
            if len(u) == 1 and by_id.get(next(iter(u)), op).kind == "tx8be.ChannelNorm":
                count += 1
    return count


# ------------------------------------------------------------------ the container


def test_renumbered_puts_large_constants_first_and_keeps_order() -> None:
    container = ConstContainer()
    for n in (10, 100, 5, 200, 100):  # f32: 40, 400, 20, 800, 400 bytes
        container.add(ParamInfo(RandomInit(n), (n,), "f32"))
    out = container.renumbered(100)
    assert out.oid_to_nid == {1: 0, 3: 1, 4: 2, 0: 3, 2: 4}
    assert [e.num_bytes for e in out] == [400, 800, 400, 40, 20]
    assert [e.const_id for e in out] == [0, 1, 2, 3, 4]
    assert out.threshold_bytes == 100
    # strictly larger: a constant of exactly the threshold stays behind
    assert container.renumbered(400).oid_to_nid == {3: 0, 0: 1, 1: 2, 2: 3, 4: 4}
    assert container.renumbered(10_000).oid_to_nid == {i: i for i in range(5)}


def test_entry_sizes_per_chip_and_label() -> None:
    container = ConstContainer()
    shared = ParamInfo(np.zeros((4, 4), np.float16), (4, 4), "f16")
    assert (shared.label, shared.chip_ids, shared.num_bytes) == (0, frozenset({-1}), 32)
    per_chip = [
        ParamInfo(np.zeros((2, 4), np.float16), (2, 4), "f16", frozenset({0, 1}), 1),
        ParamInfo(np.zeros((4, 4), np.float16), (4, 4), "f16", frozenset({2}), 1),
    ]
    const_id = container.add(per_chip)
    entry = container[const_id]
    assert entry.sizes == {0: 16, 1: 16, 2: 32}
    assert entry.num_bytes == 32
    assert entry.chip_ids == (0, 1, 2)
    assert container.to_dataframe().loc[0, "label"] == 1
    with pytest.raises(Tx8labError, match="at least one ParamInfo"):
        container.add([])
    with pytest.raises(Tx8labError, match="const id 5"):
        container[5]


def test_tensor_bytes_i1_takes_a_byte_each() -> None:
    assert tensor_bytes((3, 5), "i1") == 15
    assert tensor_bytes((2, 3), "bf16") == 12
    assert tensor_bytes((), "f32") == 4


def test_big_weights_are_never_materialised(monkeypatch: pytest.MonkeyPatch) -> None:
    """LLaMA-7B sizes: the 131 M-value embedding is counted from its shape alone."""

    def boom(self: RandomInit, shape: tuple[int, ...], dtype: str) -> None:
        raise AssertionError(f"materialised {shape} {dtype}")

    monkeypatch.setattr(RandomInit, "materialize", boom)
    module = zoo.build("llama_decoder", layers=1)
    moved = MoveConstant().run(module, TX81)
    container = moved.artifacts["constants"]
    frame = container.to_dataframe()
    table = frame.loc[frame["bytes"].idxmax()]
    assert table["bytes"] == 32000 * 4096 * 2
    assert table["data"] == "random"
    summary = constants_summary(ConstNorm().run(moved.module, TX81).module)
    assert summary["bypassed"] == 1
    # the embedding table is read in DDR (bypassed); the LM head is as large
    assert summary["bypassed_bytes"] == 32000 * 4096 * 2


def test_dataframe_has_one_row_per_constant() -> None:
    module = _after(zoo.build("tiny_cnn"), LAYOUT + CONST)
    frame = ConstContainer.from_module(module).to_dataframe()
    assert list(frame.columns) == [
        "const_id",
        "label",
        "shape",
        "dtype",
        "elements",
        "bytes",
        "above_threshold",
        "layout",
        "layout_bytes",
        "chips",
        "needs_load",
        "load_ops",
        "op_ids",
        "data",
    ]
    loads = _kinds(module, "tx8be.LoadConst")
    assert list(frame["const_id"]) == list(range(len(loads)))
    assert frame["needs_load"].all()
    assert not frame["above_threshold"].any()
    # const-norm folded every ChannelNorm of a constant: all are stored aligned now
    assert set(frame["layout"]) <= {"Cx", "NCx"}
    assert (frame["layout_bytes"] >= frame["bytes"]).all()


def _three_constants() -> Module:
    """x[16,300] @ W[300,300] f16, + bias[300] f16, then * s[1] f16 twice (one Constant)."""
    b = Builder()
    x = b.input((16, 300), "f16")
    w = b.constant(np.full((300, 300), 0.01, np.float16))
    bias = b.constant(np.ones(300, np.float16))
    scale = b.constant(np.array([0.5], np.float16))
    y = b.op("Add", b.op("MatMul", x, w), bias)
    b.output(b.op("Mul", b.op("Mul", y, scale), scale))
    return b.finish()


def test_summary_and_table_of_three_hand_counted_constants() -> None:
    after = _after(_three_constants(), LAYOUT + CONST)
    summary = constants_summary(after)
    # by hand: W 300 x 300 x 2 B = 180,000 B (above the 65,536 B threshold), the bias
    # 300 x 2 = 600 B, the scale 2 B; the scale's two uses get a LoadConst each
    assert summary["count"] == 3
    assert summary["total_bytes"] == 180_000 + 600 + 2
    assert summary["threshold_bytes"] == 65536
    assert summary["above_threshold"] == 1
    assert summary["bytes_above_threshold"] == 180_000
    assert summary["load_ops"] == 4
    assert summary["shared"] == 1
    assert summary["constants_left"] == 0
    assert [e["bytes"] for e in summary["largest"]] == [180_000, 600, 2]
    frame = ConstContainer.from_module(after).to_dataframe()
    rows = {tuple(r.shape): (r.bytes, r.elements, r.load_ops) for r in frame.itertuples()}
    assert rows == {(300, 300): (180_000, 90_000, 1), (300,): (600, 300, 1), (1,): (2, 1, 2)}


def test_from_module_rejects_two_data_under_one_id() -> None:
    b = Builder()
    x = b.input((4,), "f32")
    one = b.op("LoadConst", value=np.ones(4, np.float32), dtype="f32", const_id=0)
    two = b.op("LoadConst", value=np.zeros(4, np.float32), dtype="f32", const_id=0)
    b.output(b.op("Add", b.op("Add", x, one), two))
    module = b.finish()
    with pytest.raises(Tx8labError, match=r"const id 0 is carried by %0 .* and %1 .*"):
        ConstContainer.from_module(module)
    assert MoveConstant().check(
        Module(module.functions, {THRESHOLD_ATTR: 65536}, module.next_id)
    ) == [
        "const id 0 is carried by %0 tx8be.LoadConst and %1 tx8be.LoadConst with different "
        "data; run move-constant to renumber the constants"
    ]


def test_constants_summary_before_and_after() -> None:
    module = zoo.build("bert_base", layers=2)
    before = constants_summary(module)
    assert before["count"] == 0
    assert before["constants_left"] == len(_kinds(module, "tx8be.Constant"))
    assert before["threshold_bytes"] is None
    assert before["above_threshold"] is None
    after = _after(module, LAYOUT + CONST)
    summary = constants_summary(after)
    assert summary["constants_left"] == 0
    assert summary["load_ops"] == len(_kinds(after, "tx8be.LoadConst"))
    # the attention scale is one constant read by every layer: one LoadConst per use
    assert summary["shared"] >= 1
    # bert_base's largest constant is its word embedding, 30522 x 768 f16, by hand
    assert summary["largest"][0]["bytes"] == 30522 * 768 * 2
    assert sum(summary["layouts"].values()) == summary["count"]
    json.dumps(to_jsonable(summary))
    # a threshold given explicitly wins over the module's
    assert constants_summary(after, threshold_bytes=0)["above_threshold"] == summary["count"]


# ------------------------------------------------------------------ move-constant


@pytest.mark.parametrize("name", sorted(zoo.MODELS))
def test_zoo_values_kept_through_the_whole_pipeline(name: str) -> None:
    """fold/dce, the layout passes, move-constant, const-norm: verifier and checks on."""
    module = zoo.build(name, **INTERPRETABLE.get(name, {}))
    steps = list(
        run_pipeline(module, build_pipeline(["fold-constants", "dce", *LAYOUT, *CONST]), TX81)
    )
    final = steps[-1].after
    assert not _kinds(final, "tx8be.Constant")
    assert _const_norm_pairs(final) == 0
    moved = steps[-2]
    assert moved.stats["constants"] == len(ConstContainer.from_module(final))
    # every ChannelNorm a constant still had after layout-align-opt is folded now
    assert steps[-1].stats["erased_channel_norms"] == _const_norm_pairs(moved.after)
    same_outputs(module, final)


@pytest.mark.parametrize("name", ["tiny_cnn", "tiny_transformer_block", "llama_decoder"])
def test_zoo_values_kept_without_layout_passes(name: str) -> None:
    module = zoo.build(name, **INTERPRETABLE.get(name, {}))
    for per_use in (True, False):
        moved, _ = execute(MoveConstant(per_use=per_use), module, TX81)
        normed, _ = execute(ConstNorm(), moved.module, TX81)
        same_outputs(module, normed.module)


def test_threshold_comes_from_the_tile_count() -> None:
    small = TX81.with_overrides({"mesh_shape": "2x2"})
    assert default_threshold_bytes(TX81) == 4096 * 16
    assert default_threshold_bytes(small) == 4096 * 4
    module = zoo.build("mobilenet_v2")
    big_chip = MoveConstant().run(module, TX81)
    small_chip = MoveConstant().run(module, small)
    assert big_chip.module.attrs[THRESHOLD_ATTR] == 65536
    assert small_chip.module.attrs[THRESHOLD_ATTR] == 16384
    assert MoveConstant(threshold_bytes=100).run(module, TX81).stats["threshold_bytes"] == 100
    sizes = [e.num_bytes for e in small_chip.artifacts["constants"]]
    assert any(16384 < s <= 65536 for s in sizes)
    assert small_chip.stats["above_threshold"] > big_chip.stats["above_threshold"]


def test_decisions_name_the_users_and_the_threshold() -> None:
    module = _after(zoo.build("resnet50"), LAYOUT)
    result = MoveConstant().run(module, TX81)
    constants = [op.id for op in _kinds(module, "tx8be.Constant")]
    loads = {d.op_id: d for d in result.decisions if d.data.get("rule") == "ConstantToLoadConst"}
    ids = {d.op_id: d for d in result.decisions if d.data.get("rule") == "updateConstContainer"}
    assert set(loads) == set(ids) == set(constants)
    for op_id in constants:
        assert "needs a load" in loads[op_id].reason
        assert "threshold 65536 B" in ids[op_id].reason
        assert ids[op_id].choice == f"const_id {ids[op_id].data['const_id']}"
    large = [d for d in ids.values() if d.data["bytes"] > 65536]
    assert sorted(d.data["const_id"] for d in large) == list(range(len(large)))
    assert result.stats["above_threshold"] == len(large)


def test_input_untouched_and_second_run_changes_nothing() -> None:
    module = _after(zoo.build("bert_base", layers=2), LAYOUT)
    text = print_module(module)
    first = MoveConstant().run(module, TX81)
    assert print_module(module) == text
    again = MoveConstant().run(first.module, TX81)
    assert again.module is first.module
    normed = ConstNorm().run(first.module, TX81)
    assert ConstNorm().run(normed.module, TX81).module is normed.module


def test_one_load_const_per_use_or_shared() -> None:
    module = zoo.build("bert_base", layers=2)
    per_use = MoveConstant().run(module, TX81)
    shared = MoveConstant(per_use=False).run(module, TX81)
    constants = {c.id for c in _kinds(module, "tx8be.Constant")}
    uses = sum(1 for op in module.main.ops for v in op.operands if v.owner in constants)
    assert per_use.stats["load_consts"] == uses
    assert shared.stats["load_consts"] == len(_kinds(module, "tx8be.Constant"))
    assert per_use.stats["constants"] == shared.stats["constants"]
    multi = [e for e in per_use.artifacts["constants"] if len(e.op_ids) > 1]
    assert multi, "the attention scale is used once per layer"
    created = {op.id: op.created_by for op in _kinds(per_use.module, "tx8be.LoadConst")}
    for entry in multi:
        first, *rest = entry.op_ids
        assert created[first] is None  # the Constant's own id survives
        assert all(created[i] == "move-constant" for i in rest)


def test_group_user_answers_for_its_block_argument() -> None:
    from tx8lab.core.grouping import outline
    from tx8lab.core.ir import IdCounter

    b = Builder()
    ids = b.input((1, 4), "i32")
    table = b.weight((16, 8), "f16")  # %0: only the Embedding reads it
    scale = b.weight((8,), "f16")  # %1: read by a Mul
    passed = b.weight((8,), "f16")  # %2: only returned by the group
    emb = b.op("Embedding", table, ids)  # %3
    y = b.op("Mul", emb, scale)  # %4
    z = b.op("Relu", passed)  # %5, keeps %2 as a group result
    b.output(y, z)
    module = b.finish()
    counter = IdCounter(module.next_id)
    func, _ = outline(module.main, [[3, 4]], counter)
    grouped = Module((func,), module.attrs, counter.next_id)
    group = next(op for op in grouped.main.ops if op.kind == "tx8be.Group")
    operand = {v.owner: i for i, v in enumerate(group.operands)}
    assert use_needs_load(group, operand[0]) is False
    assert use_needs_load(group, operand[1]) is True
    # a Tuple or a terminator has no say
    tup = Builder()
    v = tup.input((4,), "f32")
    t = tup.op("Tuple", v, v)
    tup.output(t[0])
    tuple_module = tup.finish()
    assert use_needs_load(tuple_module.main.ops[0], 0) is None
    assert use_needs_load(tuple_module.main.ops[-1], 0) is None
    out = MoveConstant().run(grouped, TX81).module
    by_id = out.op_by_id()
    assert by_id[0].attrs.get("bypasscodegen") is True
    assert "bypasscodegen" not in by_id[1].attrs
    same_outputs(grouped, out)


def test_unknown_user_is_a_clear_error() -> None:
    arg = Value(-1, 0, TensorType((4,), "f32"), is_arg=True)
    user = Op(3, "tx8be.NoSuchOp", (arg,), (Value(3, 0, TensorType((4,), "f32")),))
    with pytest.raises(Tx8labError, match=r"%3 tx8be.NoSuchOp: not in the op library"):
        use_needs_load(user, 0)


def test_move_constant_check_catches_broken_modules() -> None:
    module = zoo.build("tiny_transformer_block")
    assert MoveConstant().check(module)[0].endswith("Constant left after move-constant")
    moved = MoveConstant(threshold_bytes=1000).run(module, TX81).module
    assert MoveConstant().check(moved) == []
    ops = list(moved.main.ops)
    loads = [i for i, op in enumerate(ops) if op.kind == "tx8be.LoadConst"]
    sizes = {i: tensor_bytes(ops[i].result.type.shape, ops[i].result.type.dtype) for i in loads}
    big = next(i for i in loads if sizes[i] > 1000)
    small = next(i for i in loads if sizes[i] <= 1000)
    swapped = list(ops)
    swapped[big] = ops[big].with_attrs(const_id=ops[small].attrs["const_id"])
    swapped[small] = ops[small].with_attrs(const_id=ops[big].attrs["const_id"])
    bad = Module((moved.main.with_ops(swapped),), moved.attrs, moved.next_id)
    assert any("comes after the smaller" in p for p in MoveConstant().check(bad))
    gap = list(ops)
    gap[small] = ops[small].with_attrs(const_id=99)
    bad = Module((moved.main.with_ops(gap),), moved.attrs, moved.next_id)
    assert any("not dense" in p for p in MoveConstant().check(bad))
    skipped = list(ops)
    skipped[small] = ops[small].with_attrs(bypasscodegen=True)
    bad = Module((moved.main.with_ops(skipped),), moved.attrs, moved.next_id)
    assert any("bypasscodegen, but" in p for p in MoveConstant().check(bad))
    no_attr = Module(moved.functions, {}, moved.next_id)
    assert MoveConstant().check(no_attr) == [
        f"module: attribute {THRESHOLD_ATTR} missing after move-constant"
    ]


# ------------------------------------------------------------------ const-norm


def test_cx_wins_even_when_not_first() -> None:
    """processMultiUse: the front's layout unless another LoadConst is Cx (seed code)."""
    b = Builder()
    x = b.input((16, 16), "f16")
    w = {"value": RandomInit(3), "shape": (16, 16), "dtype": "f16", "const_id": 0}
    compact = b.op("LoadConst", **w, dev_info=DevInfo(mem_layout=LayoutMode.NTensor))
    add = b.op("Add", x, compact, dev_info=DevInfo(mem_layout=LayoutMode.NTensor))
    aligned = b.op("LoadConst", **w, dev_info=DevInfo(mem_layout=LayoutMode.NTensor))
    norm = b.op("ChannelNorm", aligned, direction=True, dev_info=DevInfo(mem_layout=LayoutMode.NCx))
    lhs = b.op("ChannelNorm", add, direction=True, dev_info=DevInfo(mem_layout=LayoutMode.NCx))
    gemm = b.op("Gemm", lhs, norm, dev_info=DevInfo(mem_layout=LayoutMode.NCx))
    b.output(b.op("ChannelNorm", gemm, direction=False, dev_info=DevInfo(LayoutMode.NTensor)))
    module = b.finish()
    result, _ = execute(ConstNorm(), module, TX81)
    loads = _kinds(result.module, "tx8be.LoadConst")
    assert {op.attrs["dev_info"].mem_layout for op in loads} == {LayoutMode.NCx}
    unified = next(d for d in result.decisions if d.choice == "NCx")
    assert unified.op_id == compact.owner
    assert unified.related_ids == (aligned.owner,)
    assert result.stats == {
        "erased_channel_norms": 1,
        "unified": 1,
        "inserted_channel_norms": 1,
        "kept_channel_norms": 0,
        "load_shapes": 0,
        "load_consts": 2,
        "channel_norms": 3,
    }
    same_outputs(module, result.module)
    # without processMultiUse the two LoadConsts keep different layouts and nothing is inserted
    off, _ = execute(ConstNorm(multi_use=False), module, TX81)
    assert off.stats["inserted_channel_norms"] == 0
    assert ConstNorm().check(off.module) == [
        f"const id 0: its LoadConsts %{compact.owner} tx8be.LoadConst, "
        f"%{aligned.owner} tx8be.LoadConst have different layouts (NCx, NTensor)"
    ]


def test_const_norm_check_catches_a_pair_left() -> None:
    module = _after(zoo.build("tiny_cnn"), [*LAYOUT, "move-constant"])
    kept = ConstNorm(erase=False).run(module, TX81).module
    assert kept is module
    problems = ConstNorm().check(kept)
    assert len(problems) == _const_norm_pairs(module) > 0
    assert all("left after const-norm" in p for p in problems)
    assert ConstNorm(erase=False).check(kept) == []


def test_unpack_rule_check_and_knob() -> None:
    b = Builder()
    q = b.weight((8, 16), "i8", scale=40.0)
    b.output(b.op("Unpack", q))
    moved = MoveConstant().run(b.finish(), TX81).module
    assert ConstNorm().check(moved) == [
        "%0 tx8be.LoadConst: qweight for an Unpack without load_shape"
    ]
    assert ConstNorm(unpack_shape=False).run(moved, TX81).module is moved
    done = ConstNorm().run(moved, TX81).module
    assert done.main.ops[0].attrs["load_shape"] == (2, 64)
    assert done.main.ops[0].result.type.shape == (8, 16)
    same_outputs(moved, done)


# ------------------------------------------------------------------ random modules


@given(modules(max_ops=16), st.booleans())
def test_random_modules_keep_values_and_post_conditions(module: Module, per_use: bool) -> None:
    moved, _ = execute(MoveConstant(per_use=per_use), module, TX81)
    normed, _ = execute(ConstNorm(), moved.module, TX81)
    verify(normed.module)
    same_outputs(module, normed.module)


@given(modules(max_ops=16), st.booleans())
def test_random_modules_after_the_layout_passes(module: Module, per_use: bool) -> None:
    passes = [*build_pipeline(LAYOUT), MoveConstant(per_use=per_use), ConstNorm()]
    steps = list(run_pipeline(module, passes, TX81))
    final = steps[-1].after
    same_outputs(module, final)
    assert not _kinds(final, "tx8be.Constant")
    # one layout per const id, whatever processMultiUse had to do for it
    layouts: dict[int, set[LayoutMode]] = {}
    for op in _kinds(final, "tx8be.LoadConst"):
        dev = op.attrs.get("dev_info")
        if isinstance(dev, DevInfo):
            layouts.setdefault(op.attrs["const_id"], set()).add(dev.mem_layout)
    assert all(len(s) == 1 for s in layouts.values())
    stats = steps[-1].stats
    assert stats["inserted_channel_norms"] <= stats["unified"]
