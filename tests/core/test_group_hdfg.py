"""group-hdfg beyond the golden files: the HDFG file, FindMatch, the partition, models.

Every zoo model and random modules (hypothesis) are grouped and interpreted.

The golden files in ``tests/golden/group_hdfg/`` show one rule each (the seed 002 conv
chain, restart, CollectInputs and its stops, unmapped and virtual ops, convexity).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from tests.strategies import modules
from tx8lab.core import Builder, interpret, random_inputs, verify, zoo
from tx8lab.core.execute import execute_module
from tx8lab.core.grouping import group_members, is_compute, outline
from tx8lab.core.hdfg import load_hdfg, parse_hdfg
from tx8lab.core.ir import TERMINATORS, Function, IdCounter, Module, Op
from tx8lab.core.passes import DEFAULT_PIPELINE, PASSES, build_pipeline
from tx8lab.core.passes.group import Group
from tx8lab.core.passes.group_hdfg import GroupHDFG, partition
from tx8lab.core.runner import run_pipeline
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81

OPU = load_hdfg("opu")
IPA_KINDS = {f"tx8be.{k}" for k in ("Conv2d", "Gemm", "MatMul", "BatchMatMul")}

# the seed's HDFG::Create, link by link
SEED_LINKS = [
    ("concat", "add_pre"),
    ("add_pre", "mul_pre"),
    ("mul_pre", "pad"),
    ("pad", "ipa"),
    ("ipa", "mul"),
    ("mul", "add"),
    ("add", "compare"),
    ("add", "pool_pad"),
    ("add", "res_add"),
    ("pool_pad", "pool"),
    ("compare", "pool"),
    ("compare", "res_add"),
    ("pool", "compare"),
    ("pool", "res_add"),
    ("res_add", "compare"),
    ("res_add", "pool"),
    ("compare", "upsample"),
    ("pool", "upsample"),
    ("res_add", "upsample"),
]

# sizes small enough to interpret quickly (grouping is checked at full size too)
SMALL: dict[str, dict[str, int]] = {
    "llama_decoder": {"hidden": 64, "heads": 2, "ffn": 128, "vocab": 100, "seq": 8},
    "bert_base": {"layers": 2, "seq": 8, "vocab": 100},
    "resnet50": {"size": 32},
    "mobilenet_v2": {"size": 32},
    "vit_tiny": {"layers": 2},
}

TINY = """\
node rd   mem_rd
node mm   ipa
node act  comparator
node sum  adder
source rd
link rd -> mm
link mm -> act
link act -> sum
map MatMul -> ipa
map Relu -> comparator
map Add -> adder
"""


def _same(a: Module, b: Module) -> None:
    inputs = random_inputs(a, seed=3)
    for want, got in zip(interpret(a, inputs), interpret(b, inputs), strict=True):
        np.testing.assert_array_equal(got, want)


def _groups(module: Module) -> list[Op]:
    return [op for op in module.main.ops if op.kind == "tx8be.Group"]


def _body_kinds(group: Op) -> list[str]:
    return [op.kind for op in group.regions[0].ops if op.kind not in TERMINATORS]


def _run(module: Module, **knobs: str) -> tuple[Module, dict[str, int | float | str]]:
    result = GroupHDFG(**knobs).run(module, TX81)
    verify(result.module)
    assert GroupHDFG(**knobs).check(result.module) == []
    return result.module, dict(result.stats)


# --------------------------------------------------------------------------- the file


def test_shipped_opu_graph_is_the_seeds() -> None:
    assert OPU.name == "opu"
    assert OPU.source == "concat"
    links = [(a, b) for a in OPU.succ for b in OPU.succ[a]]
    assert sorted(links) == sorted(SEED_LINKS)
    # successors keep the seed's LinkFromTo order (FindMatch visits them in that order)
    assert OPU.succ["add"] == ("compare", "pool_pad", "res_add")
    assert OPU.succ["pool"] == ("compare", "res_add", "upsample")
    modules_ = {n.name: n.module for n in OPU.nodes}
    assert modules_["pad"] == modules_["pool_pad"] == "pad"
    assert modules_["add"] == modules_["add_pre"] == "adder"
    assert OPU.op_map["tx8be.Add"] == (("adder",), ("res_adder",))
    assert OPU.op_map["tx8be.BatchNorm_Inference"] == (("multiplier", "adder"),)
    assert {k for k, alts in OPU.op_map.items() if alts == (("ipa",),)} == IPA_KINDS
    assert OPU.virtual == {"tx8be.Reshape", "tx8be.ChannelNorm"}
    # every compute kind the zoo CNNs use is mapped
    for kind in ("Conv2d", "BatchNorm_Inference", "Relu", "Clip", "Add", "MaxPool2d"):
        assert OPU.maps(kind)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nod a adder", "f.txt:1: unknown statement 'nod'"),
        ("node a", "f.txt:1: 'node' takes a name and a module"),
        ("node a adder\nnode a ipa", "f.txt:2: node 'a' is declared twice (first on line 1)"),
        ("node a adder\nsource b", "f.txt:2: source 'b' is not a declared node"),
        ("node a adder\nsource a\nsource a", "f.txt:3: a second 'source'"),
        ("node a adder\nsource a\nlink a b", "f.txt:3: write a link as"),
        ("node a adder\nsource a\nlink a -> z", "f.txt:3: link names unknown node 'z'"),
        ("node a adder\nnode b ipa\nsource a\nlink a -> b\nlink a -> b", "f.txt:5: link a -> b"),
        ("node a adder\nsource a\nmap Foo -> adder", "f.txt:3: 'Foo' is not an op kind"),
        ("node a adder\nsource a\nmap Constant -> adder", "f.txt:3: Constant is not a compute"),
        ("node a adder\nsource a\nmap Add -> adder\nmap Add -> adder", "f.txt:4: Add is declared"),
        ("node a adder\nsource a\nvirtual Add\nmap Add -> adder", "f.txt:4: Add is declared"),
        ("node a adder\nsource a\nmap Add adder", "f.txt:3: write a map as"),
        ("node a adder\nsource a\nmap Add -> adder |", "f.txt:3: an empty module"),
        ("node a adder\nsource a\nmap Add -> ipa", "f.txt:3: module 'ipa' is on no node"),
        ("node a adder\nnode b ipa\nsource a", "f.txt:2: node 'b' cannot be reached from 'a'"),
        (
            "node a adder\nnode b ipa\nsource a\nlink a -> b\nmap Add -> ipa > adder",
            "f.txt:5: no path from 'a' runs Add",
        ),
        ("# nothing\n", "f.txt:1: no 'node' statement"),
        ("node a adder\n", "f.txt:1: no 'source' statement"),
        ("node a adder\nsource a\nvirtual", "f.txt:3: 'virtual' takes one op kind"),
    ],
)
def test_bad_file_names_file_and_line(text: str, message: str) -> None:
    with pytest.raises(Tx8labError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_hdfg(text, "f.txt")


def test_unknown_graph_name_lists_the_shipped_ones() -> None:
    with pytest.raises(Tx8labError, match="shipped graphs: opu"):
        load_hdfg("gpu")
    with pytest.raises(Tx8labError, match="no HDFG file"):
        GroupHDFG(graph="gpu").run(zoo.build("tiny_cnn"), TX81)


def test_graph_knob_takes_a_path(tmp_path: Path) -> None:
    path = tmp_path / "hdfg_tiny.txt"
    path.write_text(TINY, encoding="utf-8")
    b = Builder()
    x = b.input((2, 4))
    w = b.constant(np.eye(4, dtype=np.float32))
    y = b.op("Add", b.op("Relu", b.op("MatMul", x, w)), x)
    b.output(b.op("Relu", y))
    module = b.finish()
    out, stats = _run(module, graph=str(path))
    (first, second) = _groups(out)
    # tiny: rd > mm > act > sum; the second Relu cannot follow sum, so it restarts
    assert first.attrs == {"group_rule": "hdfg:tiny", "hdfg_path": ("mm", "act", "sum")}
    assert second.attrs["hdfg_path"] == ("act",)
    assert stats["restarts"] == 1
    _same(module, out)
    # the command-line form of the knob
    (p,) = build_pipeline(["group-hdfg"], [f"group-hdfg.graph={path}"])
    assert isinstance(p, GroupHDFG)
    assert p.graph == str(path)


def test_registered() -> None:
    assert PASSES["group-hdfg"] is GroupHDFG
    assert GroupHDFG.knob("graph").default == "opu"


def test_unmapped_knob_defaults_to_the_seed_and_reaches_the_grouper() -> None:
    knob = GroupHDFG.knob("unmapped")
    assert (knob.default, knob.choices) == ("seed", ("seed", "out"))
    (p,) = build_pipeline(["group-hdfg"], ["group-hdfg.unmapped=out"])
    assert isinstance(p, GroupHDFG)
    assert p.unmapped == "out"
    grouper = Group(strategy="hdfg", unmapped="out").grouper()
    assert isinstance(grouper, GroupHDFG)
    assert grouper.unmapped == "out"
    assert Group(strategy="hdfg").grouper() == GroupHDFG()
    with pytest.raises(Tx8labError, match="must be one of seed, out"):
        build_pipeline(["group-hdfg"], ["group-hdfg.unmapped=in"])
    with pytest.raises(Tx8labError, match=r"group-hdfg.unmapped='in': use one of seed, out"):
        partition(_residual_block().main, OPU, "in")


# --------------------------------------------------------------------------- FindMatch


@pytest.mark.parametrize(
    ("last", "kind", "expected"),
    [
        # from nothing the source itself is a candidate
        (None, "Concatenate", ("concat",)),
        (None, "Add", ("add_pre",)),
        (None, "Conv2d", ("ipa",)),
        (None, "BatchNorm_Inference", ("mul_pre", "add")),
        # from last_match only its successors, breadth first, in link order
        ("ipa", "Add", ("add",)),
        ("ipa", "BatchNorm_Inference", ("mul", "add")),
        ("add", "Add", ("res_add",)),
        ("add", "Pad", ("pool_pad",)),
        ("mul_pre", "Conv2d", ("ipa",)),
        ("compare", "MaxPool2d", ("pool",)),
        ("pool", "Relu", ("compare",)),  # the compare <-> pool cycle
        ("res_add", "Resize", ("upsample",)),
        # last_match itself is not revisited, and nothing leads back to the ipa
        ("compare", "Relu", None),
        ("compare", "Conv2d", None),
        ("add", "Mul", None),
        ("upsample", "Add", None),
        # a kind the map does not know never matches
        (None, "Softmax", None),
    ],
)
def test_find_match(last: str | None, kind: str, expected: tuple[str, ...] | None) -> None:
    assert OPU.find_match(last, kind) == expected


# --------------------------------------------------------------------------- partition


def _residual_block() -> Module:
    """Two branches: conv_a -> relu -> conv_b, and conv_s, meeting in add -> relu."""
    b = Builder()
    x = b.input((1, 4, 4, 2))
    wa = b.weight((2, 1, 1, 2), "f32")
    wb = b.weight((2, 1, 1, 2), "f32")
    ws = b.weight((2, 1, 1, 2), "f32")
    a = b.op("Relu", b.op("Conv2d", x, wa))  # %3 %4
    c = b.op("Conv2d", a, wb)  # %5
    s = b.op("Conv2d", x, ws)  # %6
    b.output(b.op("Relu", b.op("Add", c, s)))  # %7 %8
    return b.finish()


def test_traversal_is_depth_first_and_topological() -> None:
    module = _residual_block()
    part = partition(module.main, OPU)
    # the chain conv_a -> relu -> conv_b first (earliest user first), the add only after
    # both branches (the seed would reach it through conv_b and skip it later)
    assert part.order == [3, 4, 5, 6, 7, 8]
    assert part.groups == [[3, 0, 4], [5, 1], [6, 2, 7, 8]]
    assert part.paths == [["ipa", "compare"], ["ipa"], ["ipa", "add", "compare"]]
    causes = {i: (r.choice, r.cause) for i, r in part.records.items()}
    assert causes[3] == ("new-group", "first")
    assert causes[5] == ("new-group", "no-successor")
    assert causes[6] == ("new-group", "no-successor")
    assert causes[7] == ("matched", "")
    assert part.records[5].last_match == "compare"
    out, _ = _run(module)
    _same(module, out)


def _softmax_between_matmuls() -> Module:
    b = Builder()
    x = b.input((2, 4))
    w = b.constant(np.full((4, 4), 0.5, np.float32))  # %0
    bias = b.constant(np.ones(4, np.float32))  # %1
    g1 = b.op("Add", b.op("MatMul", x, w), bias)  # %2 %3
    sm = b.op("Softmax", g1, axis=-1)  # %4
    o = b.op("Add", b.op("MatMul", sm, w), g1)  # %5 %6
    b.output(o)
    return b.finish()


def test_collect_inputs_records_the_seeds_stops() -> None:
    part = partition(_softmax_between_matmuls().main, OPU, "out")
    assert part.groups == [[2, 0, 3, 1], [5, 6]]
    # %5 reads the Softmax (compute: stop 3) and %0 (grouped: stop 2); %6 reads %3, the
    # root of the first group (stop 1) before it would be "grouped"
    assert part.records[5].stops == [(4, "compute"), (0, "grouped")]
    assert part.records[6].stops == [(5, "grouped"), (3, "root-of-other-group")]
    assert part.records[0].choice == part.records[1].choice == "collected"
    assert part.records[0].related == (2,)
    assert part.records[4].choice == "unmapped"


def test_seed_unmapped_op_rides_along_and_becomes_the_root() -> None:
    # fuse_op_hw: FindMatch "virtually maps" the Softmax (no op-map entry) into the current
    # group; AddToGroup makes it the group's root_ref, and last_match stays at the adder
    module = _softmax_between_matmuls()
    part = partition(module.main, OPU)
    assert part.groups == [[2, 0, 3, 1, 4], [5, 6]]
    assert part.paths == [["ipa", "add"], ["ipa", "add"]]
    rec = part.records[4]
    assert (rec.choice, rec.nodes, rec.last_match) == ("virtual", (), "add")
    # the MatMul after it restarts (no ipa after the adder); the Softmax is the root of
    # the first group now (stop 1), the weight is grouped (stop 2)
    assert part.records[5].cause == "no-successor"
    assert part.records[5].stops == [(4, "root-of-other-group"), (0, "grouped")]
    out, stats = _run(module)
    assert (stats["virtual_ops"], stats["unmapped_ops"], stats["grouped_ops"]) == (1, 0, 5)
    _same(module, out)
    result = GroupHDFG().run(module, TX81)
    (why,) = [d.reason for d in result.decisions if d.op_id == 4]
    assert "no entry in the op map of hdfg_opu.txt (virtually mapped" in why
    assert "last match stays add" in why


def test_seed_collect_inputs_collects_unmapped_ops_upward() -> None:
    # an op outside the op map that reads no group value waits; CollectInputs collects it
    # into the group of its reader (seed: stop 3 is for ops in op_map only; AddToGroup:
    # "aim to collect nodes that cannot be mapped via hdfg.op_map e.g. tuple, const,
    # expand_dims"), with the Reshape and the Constant above it
    b = Builder()
    x = b.input((2, 4))
    k = b.constant(np.ones(8, np.float32))  # %0
    flat = b.op("Add", b.op("Reshape", b.op("Neg", x), shape=(8,)), k)  # %1 %2 %3
    b.output(b.op("Relu", flat))  # %4
    module = b.finish()
    part = partition(module.main, OPU)
    assert part.order == [1, 2, 3, 4]
    assert [(part.records[i].choice, part.records[i].cause) for i in (1, 2)] == [
        ("collected", "unmapped"),
        ("collected", "unmapped"),
    ]
    assert part.groups == [[3, 2, 1, 0, 4]]
    assert part.records[3].stops == []
    assert part.records[2].related == (3,)
    out, stats = _run(module)
    assert (stats["collected_unmapped_ops"], stats["grouped_ops"], stats["unmapped_ops"]) == (
        2,
        4,
        0,
    )
    _same(module, out)
    # the earlier reading: both stay out, CollectInputs stops at the Reshape (a compute op)
    old = partition(module.main, OPU, "out")
    assert old.groups == [[3, 0, 4]]
    assert old.records[3].stops == [(2, "compute")]
    assert [old.records[i].choice for i in (1, 2)] == ["unmapped", "unmapped"]


def test_seed_unmapped_op_read_outside_is_not_collected() -> None:
    # the Neg is read by the Sigmoid (visited before, outside the group) and by the Relu's
    # Add: collecting it would make the group produce the Sigmoid's input, so it stays out
    b = Builder()
    x = b.input((4,))
    n = b.op("Neg", x)  # %0
    s = b.op("Sigmoid", n)  # %1
    b.output(b.op("Add", b.op("Relu", x), n), s)  # %2 %3
    module = b.finish()
    part = partition(module.main, OPU)
    assert part.groups == [[2, 3]]
    assert (part.records[0].choice, part.records[0].cause) == ("unmapped", "read-outside")
    assert part.records[0].related == (1,)
    assert part.records[3].stops == [(2, "grouped"), (0, "read-outside")]
    out, stats = _run(module)
    assert stats["unmapped_ops"] == 2
    _same(module, out)
    result = GroupHDFG().run(module, TX81)
    (why,) = [d.reason for d in result.decisions if d.op_id == 0]
    assert "also read by %1" in why
    assert "CollectInputs left it out" in why


def test_collect_inputs_walks_up_through_data_only() -> None:
    b = Builder()
    x = b.input((4,))
    k = b.constant(np.ones(4, np.float32))  # %0
    t = b.op("Tuple", k, k)  # %1 (two results)
    b.output(b.op("Add", b.op("Relu", x), t[1]))  # %2 %3
    module = b.finish()
    part = partition(module.main, OPU)
    assert part.groups == [[2, 3, 1, 0]]
    assert [part.records[i].choice for i in (0, 1)] == ["collected", "collected"]
    assert part.records[1].related == (3,)
    out, stats = _run(module)
    assert stats["collected_ops"] == 2
    _same(module, out)


def test_constant_read_before_outside_is_not_collected() -> None:
    b = Builder()
    x = b.input((4,))
    k = b.constant(np.ones(4, np.float32))  # %0
    s = b.op("Sigmoid", k)  # %1, visited first, unmapped
    b.output(b.op("Add", b.op("Relu", x), k), s)  # %2 %3
    module = b.finish()
    part = partition(module.main, OPU)
    assert part.groups == [[2, 3]]
    assert part.records[3].stops == [(2, "grouped"), (0, "read-outside")]
    assert part.records[0].choice == "ungrouped"
    assert part.records[0].related == (1,)


def test_constant_read_later_by_an_ungrouped_op_is_collected_and_blocks_convexity() -> None:
    b = Builder()
    x = b.input((4,))
    k = b.constant(np.ones(4, np.float32))  # %0
    m = b.op("Mul", b.op("Relu", x), k)  # %1 compare; %2 restarts on mul_pre, collects %0
    s = b.op("Sigmoid", k)  # %3: reads the constant the group collected
    b.output(b.op("Add", m, s))  # %4: add follows mul_pre, but %3 depends on the group
    module = b.finish()
    part = partition(module.main, OPU, "out")
    assert part.order == [1, 2, 3, 4]
    assert part.groups == [[1], [2, 0], [4]]
    assert OPU.find_match("mul_pre", "Add") == ("add",)
    assert (part.records[4].cause, part.records[4].related) == ("convexity", (3,))
    assert part.records[4].stops == [(2, "root-of-other-group"), (3, "compute")]
    out, stats = _run(module, unmapped="out")
    assert stats["convexity_restarts"] == 1
    _same(module, out)
    # the seed's reading: the Sigmoid reads only a constant the Mul's group collected (no
    # value it computes), so it waits; the Add restarts for convexity as before and
    # collects the Sigmoid upward (it depends on the Mul's group, not on the Add's)
    part = partition(module.main, OPU)
    assert part.groups == [[1], [2, 0], [4, 3]]
    assert (part.records[3].choice, part.records[3].cause) == ("collected", "unmapped")
    assert part.records[3].related == (4,)
    assert part.records[4].cause == "convexity"
    # above the collected Sigmoid the walk stops at %0, grouped in the Mul's group
    assert part.records[4].stops == [(2, "root-of-other-group"), (0, "grouped")]
    out, stats = _run(module)
    assert stats["collected_unmapped_ops"] == 1
    _same(module, out)


def test_not_fed_and_virtual_rules() -> None:
    b = Builder()
    x = b.input((2, 4))
    w = b.constant(np.eye(4, dtype=np.float32))
    m = b.op("MatMul", x, w)  # %1
    r = b.op("Reshape", m, shape=(8,))  # %2 virtual: joins
    a = b.op("Add", x, b.constant(np.ones(4, np.float32)))  # %4: not fed
    r2 = b.op("Reshape", x, shape=(8,))  # %5 virtual, reads no group value: out
    b.output(r, a, r2)
    module = b.finish()
    part = partition(module.main, OPU)
    rec = part.records
    assert (rec[2].choice, rec[2].nodes, rec[2].last_match) == ("virtual", (), "ipa")
    assert (rec[4].choice, rec[4].cause) == ("new-group", "not-fed")
    assert (rec[5].choice, rec[5].cause) == ("unmapped", "not-fed")
    out, stats = _run(module)
    assert stats["virtual_ops"] == 1
    assert stats["unmapped_ops"] == 1
    _same(module, out)


def test_decisions_cover_every_op_once() -> None:
    module = zoo.build("tiny_cnn")
    result = GroupHDFG().run(module, TX81)
    per_op = Counter(d.op_id for d in result.decisions if d.choice != "group")
    top = [op.id for op in module.main.ops if op.kind not in TERMINATORS]
    assert sorted(per_op) == sorted(top)
    assert set(per_op.values()) == {1}
    groups = {d.op_id: d for d in result.decisions if d.choice == "group"}
    assert set(groups) == set(group_members(result.module.main))
    for group_id, members in group_members(result.module.main).items():
        assert sorted(groups[group_id].related_ids) == sorted(members)
    for d in result.decisions:
        assert d.pass_name == "group-hdfg"
        assert d.reason


def test_input_untouched_and_nothing_to_group() -> None:
    b = Builder()
    x = b.input((4,))
    b.output(b.op("Softmax", b.op("Sigmoid", x), axis=-1))
    module = b.finish()
    text = str(module)
    result = GroupHDFG().run(module, TX81)
    assert result.module is module
    assert str(module) == text
    assert result.decisions[0].choice == "no-groups"
    assert result.stats["groups"] == 0
    assert result.stats["unmapped_ops"] == 2


def test_existing_groups_are_left_alone() -> None:
    module = _residual_block()
    ids = IdCounter(module.next_id)
    func, _ = outline(module.main, [[3, 4]], ids)
    grouped = Module((func,), module.attrs, ids.next_id)
    out, stats = _run(grouped)
    inner = [g for g in _groups(out) if "group_rule" not in g.attrs]
    assert len(inner) == 1
    assert _body_kinds(inner[0]) == ["tx8be.Conv2d", "tx8be.Relu"]
    assert stats["groups"] == 2
    _same(grouped, out)


def test_check_finds_a_broken_trip() -> None:
    module = _residual_block()
    ids = IdCounter(module.next_id)
    func, _ = outline(
        module.main,
        [[3, 4], [5]],
        ids,
        attrs=[
            {"group_rule": "hdfg:opu", "hdfg_path": ("compare", "ipa")},
            {"group_rule": "hdfg:opu", "hdfg_path": ("nowhere",)},
        ],
    )
    problems = GroupHDFG().check(Module((func,), module.attrs, ids.next_id))
    assert any("ipa does not follow compare" in p for p in problems)
    assert any("'nowhere'" in p for p in problems)


# --------------------------------------------------------------------------- models


def _check_groups(module: Module, out: Module) -> None:
    """At most one ipa per group formed; every op in at most one group."""
    seen: Counter[int] = Counter()
    for group in _groups(out):
        for op in group.regions[0].ops:
            if op.kind not in TERMINATORS:
                seen[op.id] += 1
        if group.created_by != "group-hdfg":
            continue
        kinds = _body_kinds(group)
        assert sum(k in IPA_KINDS for k in kinds) <= 1, kinds
        assert list(group.attrs["hdfg_path"]).count("ipa") <= 1
    assert set(seen.values()) <= {1}
    # every top-level ipa op is grouped (it always matches from the source)
    for op in module.main.ops:
        if op.kind in IPA_KINDS:
            assert seen[op.id] == 1, op.label


@pytest.mark.parametrize("name", sorted(zoo.MODELS))
def test_every_zoo_model(name: str) -> None:
    module = zoo.build(name, **SMALL.get(name, {}))
    out, stats = _run(module)
    _check_groups(module, out)
    _same(module, out)
    ipa = sum(op.kind in IPA_KINDS for op in module.main.ops)
    assert stats["groups"] >= ipa


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2"])
def test_cnns_one_conv_per_group_with_its_followers(name: str) -> None:
    module = zoo.build(name)
    out, stats = _run(module)
    _check_groups(module, out)
    convs = sum(op.kind in IPA_KINDS for op in module.main.ops)
    # each Conv2d/Gemm opens its own group and nothing else does
    assert stats["groups"] == convs
    assert stats["convexity_restarts"] == 0
    paths = Counter(tuple(g.attrs["hdfg_path"]) for g in _groups(out))
    assert paths[("ipa", "mul", "add", "compare")] >= 30  # conv - BN - activation
    assert any(p[-2:] == ("res_add", "compare") or p[-1] == "res_add" for p in paths)
    # every BatchNorm joins its conv's group
    for group in _groups(out):
        kinds = _body_kinds(group)
        if "tx8be.BatchNorm_Inference" in kinds:
            assert "tx8be.Conv2d" in kinds
    # all weights and BN constants are collected into the groups
    assert not [op for op in out.main.ops if op.kind == "tx8be.Constant"]


@pytest.mark.parametrize("name", ["bert_base", "vit_tiny", "llama_decoder"])
@pytest.mark.parametrize("unmapped", ["seed", "out"])
def test_transformers_group_matmuls_with_their_followers(name: str, unmapped: str) -> None:
    module = zoo.build(name)
    out, stats = _run(module, unmapped=unmapped)
    _check_groups(module, out)
    assert stats["groups"] > 0
    paths = Counter(tuple(g.attrs["hdfg_path"]) for g in _groups(out))
    assert paths[("ipa", "add")] + paths[("ipa", "mul")] > 0
    if name != "llama_decoder":
        # the bias Add and the residual Add ride the same trip as their MatMul
        assert paths[("ipa", "add", "res_add")] > 0
    norms = {"tx8be.Softmax", "tx8be.LayerNorm", "tx8be.RMSNorm"}
    if unmapped == "out":
        # softmax and the norms never join a group
        for group in _groups(out):
            assert not set(_body_kinds(group)) & norms
        assert stats["unmapped_ops"] > 0
        return
    # fuse_op_hw: every op lands in a group, the ones outside the op map virtually mapped;
    # softmax and the norms ride along in the group of the op whose result they read
    assert stats["unmapped_ops"] == 0
    group_of = {op.id: g.id for g in _groups(out) for op in g.regions[0].ops}
    ridden = 0
    for op in module.main.ops:
        if op.kind in norms:
            producer = op.operands[0].owner
            assert group_of[op.id] == group_of[producer], op.label
            ridden += 1
    assert ridden > 0


def test_seed_groups_run_end_to_end() -> None:
    # the default pipeline with group.strategy=hdfg: the groups the seed's reading makes
    # (Softmax, LayerNorm, Gelu riding along with their MatMul) go through group-cost,
    # codegen and the executed program, whose outputs equal the interpreter's
    module = zoo.build("tiny_transformer_block")
    knobs = ["group.strategy=hdfg", "group-cost.search=default"]
    steps = list(run_pipeline(module, build_pipeline(None, knobs), TX81))
    grouped = next(s for s in steps if s.name == "group")
    assert grouped.stats["unmapped_ops"] == 0
    assert grouped.stats["virtual_ops"] > 0
    final = steps[-1].after
    # group-optimization had nothing left to wrap: every group is a trip of group-hdfg
    assert len(_groups(final)) == grouped.stats["groups"]
    assert {g.created_by for g in _groups(final)} == {"group-hdfg"}
    riding = [g for g in _groups(final) if "tx8be.Softmax" in _body_kinds(g)]
    assert riding
    assert all("tx8be.MatMul" in _body_kinds(g) for g in riding)
    ex = execute_module(final, TX81, via="program")
    assert ex.ok, ex.summary()
    assert all(d.exact for d in ex.diffs), ex.summary()


def test_after_the_layout_pipeline_channel_norms_ride_along() -> None:
    module = zoo.build("bert_base", **SMALL["bert_base"])
    # the layout and constant passes, then group-hdfg instead of the default grouping
    upto = DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index("const-norm") + 1]
    names = [*build_pipeline(upto), GroupHDFG(unmapped="out")]
    steps = list(run_pipeline(module, names, TX81))
    last = steps[-1]
    assert last.name == "group-hdfg"
    assert last.stats["virtual_ops"] > 0
    with_norm = [g for g in _groups(last.after) if "tx8be.ChannelNorm" in _body_kinds(g)]
    assert any(
        _body_kinds(g)[-1] == "tx8be.Add" and "tx8be.MatMul" in _body_kinds(g) for g in with_norm
    )
    _same(module, last.after)


@pytest.mark.parametrize("unmapped", ["seed", "out"])
@settings(max_examples=150, deadline=None)
@given(module=modules(max_ops=30))
def test_random_modules(unmapped: str, module: Module) -> None:
    out, stats = _run(module, unmapped=unmapped)
    _check_groups(module, out)
    _same(module, out)
    # every compute op of the input is grouped or recorded as left out
    result = GroupHDFG(unmapped=unmapped).run(module, TX81)
    choices = {d.op_id: d.choice for d in result.decisions if d.choice != "group"}
    grouped = {i for members in group_members(out.main).values() for i in members}
    for op in module.main.ops:
        if op.kind in TERMINATORS or op.kind == "tx8be.Group":
            continue
        if op.id in grouped:
            assert choices[op.id] in ("new-group", "matched", "virtual", "collected")
        elif is_compute(op):
            assert choices[op.id] == "unmapped"
    assert stats["grouped_ops"] + stats["unmapped_ops"] == sum(
        is_compute(op) and op.kind != "tx8be.Group"
        for op in module.main.ops
        if op.kind not in TERMINATORS
    )


def test_two_functions_are_grouped_each() -> None:
    module = _residual_block()
    b = Builder()
    x = b.input((2, 4))
    b.output(b.op("Relu", b.op("Add", x, x)))
    other = b.finish()
    # renumber the second function's ops past the first's
    shift = module.next_id
    ops = [
        op.replace(
            id=op.id + shift if op.id >= 0 else op.id,
            operands=tuple(
                v if v.is_arg else type(v)(v.owner + shift, v.index, v.type) for v in op.operands
            ),
            results=tuple(type(v)(v.owner + shift, v.index, v.type) for v in op.results),
        )
        for op in other.main.ops
    ]
    args = tuple(type(v)(-2, v.index, v.type, True) for v in other.main.args)
    ops = [
        op.replace(operands=tuple(args[v.index] if v.is_arg else v for v in op.operands))
        for op in ops
    ]
    second = Function("aux", type(other.main.body)(args, tuple(ops)))
    both = Module((module.main, second), module.attrs, shift + other.next_id)
    verify(both)
    result = GroupHDFG().run(both, TX81)
    verify(result.module)
    aux = result.module.functions[1]
    (group,) = [op for op in aux.ops if op.kind == "tx8be.Group"]
    assert group.attrs["hdfg_path"] == ("add_pre", "compare")
    assert result.stats["groups"] == 4
