"""group-optimization, group-ldst, group-mapping, opt-barrier and opt-ddr.

The golden files in ``tests/golden/{group_optimization,group_ldst,group_mapping,
opt_barrier,opt_ddr}/`` show one rule each; these tests cover what a golden file cannot:
every zoo model and random modules (hypothesis) through the whole chain with values kept,
the post-conditions catching broken modules, the knobs, the errors, the DataFrame and
report helpers, and the inputs left untouched.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import INTERPRETABLE, same_outputs
from tests.strategies import modules
from tx8lab.core import Builder, verify, zoo
from tx8lab.core.attrs import TAG_DDR, TAG_SPLIT, RandomInit
from tx8lab.core.group_report import group_entries
from tx8lab.core.grouping import is_compute, outline
from tx8lab.core.ir import TERMINATORS, Block, Function, IdCounter, Module, Op, Value
from tx8lab.core.layout_str import op_layouts
from tx8lab.core.ops import OPS
from tx8lab.core.ops.registry import OpAttr
from tx8lab.core.passes import PASSES, build_pipeline
from tx8lab.core.passes.group_ldst import GroupLdSt
from tx8lab.core.passes.group_mapping import TILE_DX, TILE_DY, GroupMapping
from tx8lab.core.passes.group_optimization import GroupOptimization
from tx8lab.core.passes.opt_barrier import OptBarrier, group_layers
from tx8lab.core.passes.opt_ddr import (
    DdrSlot,
    OptDDR,
    ddr_buffers,
    place,
    placement_frame,
    placement_stats,
)
from tx8lab.core.runner import execute, run_pipeline
from tx8lab.core.text import parse_module, print_module
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81

#: The passes before grouping that exist; move-constant/const-norm join once registered.
EARLIER = [
    "fold-constants",
    "dce",
    "layout-init",
    "layout-transmit",
    "layout-align-npu",
    "layout-align-opt",
    *(name for name in ("move-constant", "const-norm") if name in PASSES),
]
MINE = ["group-optimization", "group-ldst", "group-mapping", "opt-barrier", "opt-ddr"]


# ------------------------------------------------------------------ helpers


def _run(module: Module, *passes: Any) -> Module:
    """Run pass instances in order with the verifier and each pass's post-condition."""
    for index, p in enumerate(passes):
        result, _ = execute(p, module, TX81, index=index)
        module = result.module
    return module


def to_load_consts(module: Module) -> Module:
    """Seed ConstantToLoadConst: one LoadConst per use of each top-level Constant."""
    ids = IdCounter(module.next_id)
    func = module.main
    out: list[Op] = []
    consts = {op.results[0].key: op for op in func.ops if op.kind == "tx8be.Constant"}
    number = {key: n for n, key in enumerate(consts)}
    for op in func.ops:
        if op.kind == "tx8be.Constant":
            continue
        operands = []
        for v in op.operands:
            const = consts.get(v.key)
            if const is None:
                operands.append(v)
                continue
            new_id = ids()
            load = Op(
                new_id,
                "tx8be.LoadConst",
                (),
                (Value(new_id, 0, v.type),),
                {**const.attrs, "const_id": number[v.key]},
                (),
                "test",
            )
            out.append(load)
            operands.append(load.results[0])
        out.append(op.replace(operands=tuple(operands)) if operands != list(op.operands) else op)
    return Module((func.with_ops(out),), module.attrs, ids.next_id)


def _groups(module: Module) -> list[Op]:
    return [op for op in module.main.ops if op.kind == "tx8be.Group"]


def _body(group: Op) -> list[Op]:
    return [op for op in group.regions[0].ops if op.kind not in TERMINATORS]


def _weight(b: Builder, shape: tuple[int, ...], seed: int, **attrs: Any) -> Value:
    value: Value = b.op(
        "LoadConst",
        value=RandomInit(seed, "normal", 1.0, 0.0),
        shape=shape,
        dtype="f32",
        **attrs,
    )
    return value


# ------------------------------------------------------------------ group-optimization


def test_every_compute_op_gets_one_group_and_constants_move_in() -> None:
    b = Builder()
    x = b.input((1, 4))
    w = b.weight((4, 3), "f32")
    y = b.op("MatMul", x, w)
    b.output(b.op("Relu", y))
    module = b.finish()
    before = print_module(module)
    result = GroupOptimization().run(module, TX81)
    assert print_module(module) == before  # input untouched
    out = result.module
    verify(out)
    assert GroupOptimization().check(out) == []
    assert all(op.kind == "tx8be.Group" for op in out.main.ops[:-1])
    kinds = [[op.kind for op in _body(g)] for g in _groups(out)]
    assert kinds == [["tx8be.Constant", "tx8be.MatMul"], ["tx8be.Relu"]]
    assert all(g.attrs["group_rule"] == "single" for g in _groups(out))
    assert result.stats["single_groups"] == 2
    assert result.stats["moved"] == 1
    assert {d.choice for d in result.decisions} == {"single", "moved"}
    same_outputs(module, out)


def test_shared_constant_is_cloned_with_identical_attributes() -> None:
    b = Builder()
    x = b.input((4,))
    c = _weight(b, (4,), 3, const_id=7)
    b.output(b.op("Mul", b.op("Add", x, c), c), b.op("Sub", x, c))
    module = b.finish()
    out = GroupOptimization().run(module, TX81).module
    loads = [op for g in _groups(out) for op in _body(g) if op.kind == "tx8be.LoadConst"]
    assert len(loads) == 3
    assert len({op.id for op in loads}) == 3
    assert loads[0].id == c.owner  # the first reader keeps the op itself
    strip = {"tx8.created_by"}
    assert all(
        {k: v for k, v in op.attrs.items() if k not in strip} == dict(loads[0].attrs)
        for op in loads
    )
    assert [op.created_by for op in loads[1:]] == ["group-optimization"] * 2
    same_outputs(module, out)


def test_move_constants_off_keeps_them_as_group_inputs() -> None:
    b = Builder()
    x = b.input((4,))
    b.output(b.op("Add", x, _weight(b, (4,), 1)))
    out = GroupOptimization(move_constants=False).run(b.finish(), TX81).module
    (group,) = _groups(out)
    assert [v.owner for v in group.operands] == [-1, 0]
    assert GroupOptimization(move_constants=False).check(out) == []
    # the default pass would find this constant outside the group
    assert any("should have been moved" in p for p in GroupOptimization().check(out))


def test_check_reports_compute_op_outside_and_nested_groups() -> None:
    b = Builder()
    x = b.input((4,))
    b.output(b.op("Neg", b.op("Relu", x)))
    module = b.finish()
    problems = GroupOptimization().check(module)
    assert len(problems) == 2
    assert "compute op outside any group" in problems[0]
    grouped = GroupOptimization().run(module, TX81).module
    inner = _groups(grouped)[0]
    ids = IdCounter(grouped.next_id)
    nested_func, _ = outline(
        Function("main", Block(inner.regions[0].args, inner.regions[0].ops)), [[0]], ids
    )
    nested = inner.replace(regions=(nested_func.body,))
    func = grouped.main.with_ops([nested, *grouped.main.ops[1:]])
    broken = Module((func,), grouped.attrs, ids.next_id)
    assert any("group inside group" in p for p in GroupOptimization().check(broken))


def test_existing_group_keeps_id_and_rule() -> None:
    b = Builder()
    x = b.input((4,))
    s = b.op("Add", x, _weight(b, (4,), 1))
    b.output(b.op("Neg", b.op("Relu", s)))
    module = b.finish()
    ids = IdCounter(module.next_id)
    func, (group,) = outline(module.main, [[1, 2]], ids, attrs=[{"group_rule": "add_relu"}])
    pre = Module((func,), module.attrs, ids.next_id)
    out = GroupOptimization().run(pre, TX81).module
    first = _groups(out)[0]
    assert first.id == group.id
    assert first.attrs["group_rule"] == "add_relu"
    assert [op.kind for op in _body(first)][:1] == ["tx8be.LoadConst"]
    assert len(first.operands) == 1
    same_outputs(module, out)


# ------------------------------------------------------------------ group-ldst


def test_ldst_is_idempotent_and_tags_every_group() -> None:
    module = zoo.build("tiny_cnn")
    grouped = _run(module, GroupOptimization())
    once = GroupLdSt().run(grouped, TX81)
    twice = GroupLdSt().run(once.module, TX81)
    assert print_module(twice.module) == print_module(once.module)
    assert twice.stats["loads"] == 0
    assert twice.stats["stores"] == 0
    tags = {g.attrs["group_tag"] for g in _groups(once.module)}
    assert tags == {TAG_SPLIT}
    assert once.stats["tag_0"] == len(_groups(once.module))


def test_ldst_check_catches_a_missing_load_and_store() -> None:
    b = Builder()
    b.output(b.op("Relu", b.input((4,))))
    grouped = _run(b.finish(), GroupOptimization())
    group = _groups(grouped)[0].with_attrs(group_tag=0)
    func = grouped.main.with_ops([group, grouped.main.ops[-1]])
    problems = GroupLdSt().check(Module((func,), grouped.attrs, grouped.next_id))
    assert any("without the LoadVar" in p for p in problems)
    assert any("is not stored" in p for p in problems)
    assert any("does not match its body" in p for p in problems)


def test_ddr_only_op_gives_tag_2(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Reshape that works in DDR (needLoad = needStore = 0, the seed's tag-2 example)."""
    reshape = OPS["tx8be.Reshape"]
    monkeypatch.setattr(
        type(reshape), "op_attr", lambda self, op: OpAttr(need_load=0, need_store=0)
    )
    b = Builder()
    x = b.input((2, 3))
    r = b.op("Reshape", x, shape=(6,))
    b.output(b.op("Relu", r))
    result = GroupLdSt().run(_run(b.finish(), GroupOptimization()), TX81)
    reshape_group, relu_group = _groups(result.module)
    assert reshape_group.attrs["group_tag"] == TAG_DDR
    assert [op.kind for op in _body(reshape_group)] == ["tx8be.Reshape"]
    assert relu_group.attrs["group_tag"] == TAG_SPLIT
    assert result.stats["tag_2"] == 1
    assert GroupLdSt().check(result.module) == []


def test_load_var_carries_layout_and_mem_layout() -> None:
    module = zoo.build("tiny_cnn")
    laid = list(run_pipeline(module, build_pipeline(EARLIER), TX81))[-1].after
    out = _run(laid, GroupOptimization(), GroupLdSt())
    checked = 0
    for group in _groups(out):
        body = _body(group)
        for load in (op for op in body if op.kind == "tx8be.LoadVar"):
            user = next(op for op in body if load.results[0] in op.operands)
            part = op_layouts(user)[0][user.operands.index(load.results[0])]
            assert load.attrs.get("layout_str") == (None if part is None else f"{part}-{part}")
            source = group.operands[load.operands[0].index]
            if not source.is_arg:
                # a group output: the StoreVar that wrote it has the producer's mem_layout
                assert load.attrs["dev_info"].mem_layout == _stored_layout(out, source)
                checked += 1
    assert checked > 5


def _stored_layout(module: Module, value: Value) -> Any:
    group = next(g for g in _groups(module) if g.id == value.owner)
    ret = group.regions[0].ops[-1]
    store = next(op for op in _body(group) if op.results[0] == ret.operands[value.index])
    return store.attrs["dev_info"].mem_layout


# ------------------------------------------------------------------ group-mapping


def test_mapping_uses_hw_mesh_and_module_dims() -> None:
    b = Builder()
    b.output(b.op("Relu", b.input((4,))))
    grouped = _run(b.finish(), GroupOptimization())
    hw = TX81.with_overrides({"mesh_shape": "2x4"})
    out = GroupMapping().run(grouped, hw).module
    assert _groups(out)[0].attrs["dev_region"] == (0, 0, 4, 2)
    assert (out.attrs[TILE_DX], out.attrs[TILE_DY]) == (4, 2)
    assert GroupMapping().check(out) == []
    bad = Module(grouped.functions, {TILE_DX: 8}, grouped.next_id)
    with pytest.raises(Tx8labError, match=r"tx8be.tile_dx = 8.*1\.\.4"):
        GroupMapping().run(bad, TX81)


# ------------------------------------------------------------------ opt-barrier


def _chains(order: list[str]) -> Module:
    b = Builder()
    x = b.input((4,))
    y = b.input((4,))
    made: dict[str, Value] = {}
    for name in order:
        src = {"a1": x, "a2": "a1", "b1": y, "b2": "b1"}[name]
        value = made[src] if isinstance(src, str) else src
        made[name] = b.op({"a1": "Neg", "a2": "Relu", "b1": "Abs", "b2": "Sigmoid"}[name], value)
    b.output(made["a2"], made["b2"])
    return _run(b.finish(), GroupOptimization())


def test_barriers_one_per_layer_after_sorting() -> None:
    module = _chains(["a1", "a2", "b1", "b2"])
    result = OptBarrier().run(module, TX81)
    flags = [g.attrs["need_barrier"] for g in _groups(result.module)]
    assert flags == [False, True, False, True]
    assert result.stats == {
        "groups": 4,
        "layers": 2,
        "barriers": 2,
        "barriers_saved": 2,
        "extra_barriers": 0,
        "moved": 2,
    }
    layers = group_layers(result.module.main)
    assert sorted(layers.values()) == [0, 0, 1, 1]
    assert result.artifacts["layers"] == layers
    same_outputs(module, result.module)


def test_keeping_order_adds_the_fewest_extra_barriers() -> None:
    module = _chains(["a1", "a2", "b1", "b2"])
    result = OptBarrier(sort_layers=False).run(module, TX81)
    assert [g.id for g in _groups(result.module)] == [g.id for g in _groups(module)]
    assert result.stats["extra_barriers"] == 1
    assert OptBarrier().check(result.module) == []
    # the seed's marks alone (last of each layer) leave a1 -> a2 without a barrier
    seed_only = [
        g.with_attrs(need_barrier=flag)
        for g, flag in zip(_groups(module), [False, False, True, True], strict=True)
    ]
    broken = Module((module.main.with_ops([*seed_only, module.main.ops[-1]]),), {}, 99)
    assert any("no barrier between" in p for p in OptBarrier().check(broken))


@given(modules(max_ops=16))
def test_barriers_cover_every_dependency(module: Module) -> None:
    grouped = _run(module, GroupOptimization())
    for sort in (True, False):
        result = OptBarrier(sort_layers=sort).run(grouped, TX81)
        assert OptBarrier().check(result.module) == []
        assert result.stats["barriers"] >= result.stats["layers"]
        if sort:
            assert result.stats["barriers"] == result.stats["layers"]


# ------------------------------------------------------------------ opt-ddr


def test_place_policies_and_stats() -> None:
    slots = [
        DdrSlot("const", "a", 100, (1,), (1,)),
        DdrSlot("const", "b", 5000, (2, 3), (2, 3)),
        DdrSlot("var", "v", 4000, (4,), (4,)),
    ]
    seed = place(slots)
    assert [(s.name, s.addr, s.packed_addr) for s in seed] == [
        ("a", 0, 0),
        ("b", 4096, 128),
        ("v", 12288, 5184),
    ]
    stats = placement_stats(seed)
    assert stats["aligned_accesses"] == 4
    assert stats["aligned_accesses_packed"] == 1
    assert stats["padding_bytes"] == 12288 + 4000 - 9100
    assert stats["padding_bytes_packed"] == 5184 + 4000 - 9100
    # packed, b (5000 B) needs two banks anyway; v (4000 B from 5184) spans banks 1 and 2
    assert stats["extra_banks_packed"] == 1
    assert stats["extra_banks"] == 0
    large = {s.name: s.addr for s in place(slots, policy="large")}
    # b first on a bank; a packed after it; v crosses no bank boundary from 8192
    assert large == {"b": 0, "a": 5056, "v": 8192}
    frame = placement_frame(seed)
    assert list(frame["aligned"]) == [True, True, True]
    assert list(frame["packed_aligned"]) == [True, False, False]
    assert list(frame["banks"]) == [1, 2, 1]


def test_opt_ddr_on_resnet_aligns_every_access() -> None:
    module = zoo.build("resnet50", size=64)
    laid = list(run_pipeline(module, build_pipeline(EARLIER), TX81))[-1].after
    result = OptDDR().run(_run(laid, GroupOptimization(), GroupLdSt()), TX81)
    stats = result.stats
    assert stats["aligned_accesses"] == stats["accesses"] > stats["aligned_accesses_packed"]
    assert stats["padding_bytes"] > stats["padding_bytes_packed"]
    assert stats["extra_banks"] == 0 < stats["extra_banks_packed"]
    assert OptDDR().check(result.module) == []
    slots = result.artifacts["placement"]
    assert {s.region for s in slots} == {"const", "var"}
    assert len(slots) == len(ddr_buffers(result.module))


def test_opt_ddr_too_small_ddr_is_a_clear_error() -> None:
    b = Builder()
    b.output(b.op("Add", b.input((1024,)), _weight(b, (1024,), 1)))
    module = _run(b.finish(), GroupOptimization(), GroupLdSt())
    with pytest.raises(Tx8labError, match=r"opt-ddr: .* need 12288 bytes of DDR"):
        OptDDR().run(module, TX81.replace(ddr_bytes=8192))


def test_opt_ddr_check_catches_overlap_and_misalignment() -> None:
    b = Builder()
    b.output(b.op("Add", b.input((4,)), _weight(b, (4,), 1, const_id=0)))
    placed = _run(b.finish(), GroupOptimization(), GroupLdSt(), OptDDR())
    group = _groups(placed)[0]
    body = [
        op.with_attrs(ddr_addr=8) if op.kind == "tx8be.LoadVar" else op
        for op in group.regions[0].ops
    ]
    group = group.replace(regions=(Block(group.regions[0].args, tuple(body)),))
    broken = Module((placed.main.with_ops([group, placed.main.ops[-1]]),), {}, placed.next_id)
    problems = OptDDR().check(broken)
    assert any("not on a bank" in p for p in problems)
    assert any("overlap" in p for p in problems)


# ------------------------------------------------------------------ the whole chain


@pytest.mark.parametrize("name", sorted(zoo.MODELS))
def test_chain_keeps_every_zoo_models_values(name: str) -> None:
    module = zoo.build(name, **INTERPRETABLE.get(name, {}))
    steps = list(run_pipeline(module, build_pipeline([*EARLIER, *MINE]), TX81))
    out = steps[-1].after
    assert [s.name for s in steps[-5:]] == MINE
    assert not any(is_compute(op) for op in out.main.ops[:-1])
    assert all(g.attrs["group_tag"] in (TAG_SPLIT, TAG_DDR) for g in _groups(out))
    assert all(isinstance(g.attrs["need_barrier"], bool) for g in _groups(out))
    same_outputs(module, out)


#: Groupers that ran before group-optimization in the seed's pipeline, where registered.
GROUPERS = ["none", *(name for name in ("group-pattern", "group-hdfg") if name in PASSES)]


@pytest.mark.parametrize("grouper", GROUPERS)
@pytest.mark.parametrize("name", ["tiny_cnn", "mobilenet_v2", "bert_base", "llama_decoder"])
def test_chain_after_a_grouper(name: str, grouper: str) -> None:
    """Groups formed before (pattern/HDFG) keep their rule; the rest become singles."""
    module = zoo.build(name, **INTERPRETABLE.get(name, {}))
    before = [] if grouper == "none" else [grouper]
    steps = list(run_pipeline(module, build_pipeline([*EARLIER, *before, *MINE]), TX81))
    out = steps[-1].after
    entries = group_entries(out)
    if grouper == "none":
        assert {e["rule"] for e in entries} == {"single"}
    else:
        formed = steps[len(EARLIER)].after
        kept = {g.id: g.attrs.get("group_rule") for g in _groups(formed)}
        assert kept, f"{grouper} formed no group on {name}"
        assert all(e["rule"] == kept[e["id"]] for e in entries if e["id"] in kept)
    assert not any(is_compute(op) for op in out.main.ops[:-1])
    same_outputs(module, out)


@given(modules(max_ops=20), st.booleans())
def test_chain_keeps_random_modules_values(module: Module, load_consts: bool) -> None:
    start = to_load_consts(module) if load_consts else module
    verify(start)
    steps = list(run_pipeline(start, build_pipeline([*EARLIER, *MINE]), TX81))
    same_outputs(module, steps[-1].after)


@given(modules(max_ops=14, groups=False), st.data())
def test_pregrouped_random_modules(module: Module, data: st.DataObject) -> None:
    """Groups formed before group-optimization (as group-pattern would) stay and get tags."""
    start = to_load_consts(module)
    top = [op.id for op in start.main.ops if op.kind not in TERMINATORS and is_compute(op)]
    chosen = data.draw(st.lists(st.sampled_from(top), unique=True, max_size=len(top)))
    ids = IdCounter(start.next_id)
    func, made = outline(
        start.main, [[i] for i in chosen], ids, attrs=[{"group_rule": "p"}] * len(chosen)
    )
    pre = Module((func,), start.attrs, ids.next_id)
    out = _run(pre, *(PASSES[n]() for n in MINE))
    rules = {g.id: g.attrs.get("group_rule") for g in _groups(out)}
    assert all(rules[g.id] == "p" for g in made)
    entries = group_entries(out)
    assert [e["id"] for e in entries] == [g.id for g in _groups(out)]
    assert all(e["dev_region"] == [0, 0, 4, 4] for e in entries)
    same_outputs(module, out)


def test_group_entries_report_rule_tag_and_barrier() -> None:
    b = Builder()
    x = b.input((4,))
    b.output(b.op("Add", b.op("Relu", x), b.op("Neg", x)))
    out = _run(b.finish(), *(PASSES[n]() for n in MINE))
    entries = group_entries(out)
    assert [e["rule"] for e in entries] == ["single"] * 3
    moves = {"LoadVar", "StoreVar"}
    assert [[k for k in e["kinds"] if k not in moves] for e in entries] == [
        ["Relu"],
        ["Neg"],
        ["Add"],
    ]
    assert [e["kinds"].count("LoadVar") for e in entries] == [1, 1, 2]
    assert [e["need_barrier"] for e in entries] == [False, True, True]
    assert all(e["group_tag"] == 0 for e in entries)


def test_grouped_module_round_trips_and_mlir_opt_accepts_it(mlir_opt: str) -> None:
    """The attributes the five passes set print, parse back and pass every check again."""
    module = zoo.build("tiny_cnn")
    out = list(run_pipeline(module, build_pipeline([*EARLIER, *MINE]), TX81))[-1].after
    text = print_module(out)
    back = parse_module(text)
    assert print_module(back) == text
    for name in MINE:
        assert PASSES[name]().check(back) == []
    done = subprocess.run(
        [mlir_opt, "--allow-unregistered-dialect", "-o", "/dev/null"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
