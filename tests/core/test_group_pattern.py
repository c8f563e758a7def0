"""group-pattern: the pattern files, the trie automaton, the pass and the match inspector.

The golden files in ``tests/golden/group_pattern/`` show one feature each (OR, WILDCARD,
priority tie, longest match, needStore pruning, an existing group, convexity, the shipped
configs); these tests cover the parser's errors, the automaton on its own, every zoo
model (convex groups, same values) and random modules (hypothesis).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import INTERPRETABLE, same_outputs
from tests.strategies import modules
from tx8lab.core import Builder, verify, zoo
from tx8lab.core.group_automaton import (
    CLAIMED,
    FOLLOWED,
    IN_GROUP,
    KIND_MISMATCH,
    NEED_STORE_PRUNING,
    WILDCARD_REPEATS,
    Automaton,
    MatchGraph,
    config_names,
    config_path,
    load_config,
    load_pattern_file,
    parse_patterns,
    process_pattern,
)
from tx8lab.core.grouping import group_members, is_compute, outline
from tx8lab.core.ir import TERMINATORS, IdCounter, Module
from tx8lab.core.match_inspector import inspect_matches
from tx8lab.core.passes import PASSES, build_pipeline
from tx8lab.core.passes.group_pattern import GroupPattern, choose_config
from tx8lab.core.runner import execute
from tx8lab.core.text import print_module
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81

S = (1, 4, 4, 8)


def _automaton(text: str) -> Automaton:
    return Automaton(parse_patterns(text, "test"))


def _groups(module: Module) -> dict[int, list[str]]:
    """Group id -> body op kinds (short), top level of main."""
    by_id = module.op_by_id()
    return {
        g: [by_id[i].name for i in members] for g, members in group_members(module.main).items()
    }


def _write(tmp_path: Path, text: str, name: str = "p.txt") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# --------------------------------------------------------------------------- pattern files


def test_or_splits_whole_sequences_and_wildcard_repeats_one_to_five() -> None:
    assert process_pattern(["A", "B", "OR", "C", "D"]) == [("A", "B"), ("C", "D")]
    assert process_pattern(["A", "B", "*"]) == [("A",) + ("B",) * n for n in range(1, 6)]
    assert WILDCARD_REPEATS == 5
    # two wildcards: every combination; WILDCARD is a synonym of '*'
    two = process_pattern(["A", "*", "B", "WILDCARD"])
    assert len(two) == 25
    assert ("A", "B") in two
    assert ("A",) * 5 + ("B",) * 5 in two
    # OR binds loosest: the wildcard belongs to its alternative only
    assert process_pattern(["A", "*", "OR", "C"]) == [
        *[("A",) * n for n in range(1, 6)],
        ("C",),
    ]


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (["*", "A"], "must follow an op kind"),
        (["A", "*", "*"], "must follow an op kind"),
        (["A", "OR"], "OR needs"),
        (["OR", "A"], "OR needs"),
        (["A", "OR", "OR", "B"], "OR needs"),
        (["A", "*", "B", "*", "C", "*", "D", "*", "E", "*", "F", "*"], "more than 4096"),
    ],
)
def test_process_pattern_errors(tokens: list[str], message: str) -> None:
    with pytest.raises(Tx8labError, match=message):
        process_pattern(tokens, "f.txt, line 3")


def test_parse_comments_continuations_and_full_kinds() -> None:
    text = (
        "# a comment\n"
        "\n"
        "first 10: Relu tx8be.Neg   # trailing comment\n"
        "second -2: Abs \\\n"
        "    OR Sigmoid Relu *\n"
        "third 7: Relu Neg\n"
    )
    first, second, third = parse_patterns(text, "demo")
    assert (first.name, first.priority, first.line) == ("first", 10, 3)
    assert first.sequences == (("tx8be.Relu", "tx8be.Neg"),)
    assert (second.priority, second.line, second.rule) == (-2, 4, "pattern:demo:4")
    assert len(second.sequences) == 1 + 5
    assert second.max_length == 6
    # the same sequence twice ends at one trie node; the higher priority forms the group
    node = Automaton((first, second, third)).root.children["tx8be.Relu"].children["tx8be.Neg"]
    assert [p.name for p in node.output] == ["first", "third"]
    assert node.best is not None
    assert node.best.name == "first"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a 1: Relu Conv\n", r"p\.txt, line 1: unknown op kind 'Conv' \(did you mean Conv2d\?\)"),
        ("a 1: Relu Group\n", "unknown op kind 'Group'"),
        ("# c\na: Relu\n", r"line 2: 'a: Relu' is not '<name> <priority>: <op> <op> \.\.\.'"),
        ("a x: Relu\n", "line 1: .* is not '<name> <priority>"),
        ("a 1:\n", "has no op kinds"),
        ("a 1: Relu\nb 2: Neg\na 3: Abs\n", "line 3: pattern name 'a' is used before, on line 1"),
        ("# only comments\n", "no patterns"),
        ("a 1: Relu \\\n", "the last line ends with"),
        ("a 1: Relu OR\n", "line 1: OR needs"),
    ],
)
def test_bad_pattern_files_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(Tx8labError, match=message) as info:
        load_pattern_file(path)
    assert path in str(info.value)


def test_unknown_kind_lists_the_kinds_that_exist(tmp_path: Path) -> None:
    path = _write(tmp_path, "ok 1: Relu\nbad 2: Relu Frobnicate\n")
    with pytest.raises(Tx8labError) as info:
        load_pattern_file(path)
    text = str(info.value)
    assert f"{path}, line 2: unknown op kind 'Frobnicate'" in text
    assert "op kinds that exist: " in text
    assert "Conv2d" in text
    assert "BatchNorm_Inference" in text
    assert "Group," not in text


def test_missing_file_and_unknown_config() -> None:
    with pytest.raises(
        Tx8labError, match=r"cannot read pattern file .nope\.txt.*current directory"
    ):
        load_pattern_file("nope.txt")
    with pytest.raises(Tx8labError, match="no group-pattern config 'rnn'; shipped configs: cnn"):
        config_path("rnn")


def test_shipped_configs_parse_and_name_real_op_kinds() -> None:
    assert {"cnn", "transformer"} <= set(config_names())
    for name in config_names():
        patterns = load_config(name)
        assert patterns
        assert all(p.rule.startswith(f"pattern:{name}:") for p in patterns)
        text = config_path(name).read_text(encoding="utf-8")
        # every rule points at the line the pattern starts on
        lines = text.splitlines()
        for p in patterns:
            assert lines[p.line - 1].startswith(f"{p.name} {p.priority}:")


# --------------------------------------------------------------------------- automaton


def test_trie_shares_prefixes_and_prints_ends() -> None:
    automaton = _automaton("a 1: Relu Neg Abs\nb 2: Relu Neg\nc 3: Relu Sigmoid\n")
    relu = automaton.root.children["tx8be.Relu"]
    assert set(relu.children) == {"tx8be.Neg", "tx8be.Sigmoid"}
    neg = relu.children["tx8be.Neg"]
    assert neg.priority == 2
    assert neg.sequence == ("tx8be.Relu", "tx8be.Neg")
    assert neg.through == {0, 1}
    assert relu.output == []
    assert relu.priority is None
    tree = automaton.print_tree()
    assert tree.splitlines()[:4] == [
        "root",
        "└── Relu",
        "    ├── Neg  => b (priority 2, pattern:test:2)",
        "    │   └── Abs  => a (priority 1, pattern:test:1)",
    ]
    assert automaton.starts("tx8be.Relu")
    assert not automaton.starts("tx8be.Neg")
    assert automaton.names("tx8be.Abs")
    assert not automaton.names("tx8be.Exp")


def _fan() -> Module:
    """%0 Relu -> %1 Neg -> %2 Abs; %0 -> %3 Sigmoid; %4 Exp -> %5 Neg."""
    b = Builder()
    x = b.input(S)
    r = b.op("Relu", x)
    n = b.op("Neg", r)
    a = b.op("Abs", n)
    s = b.op("Sigmoid", r)
    e = b.op("Exp", x)
    n2 = b.op("Neg", e)
    b.output(a, s, n2)
    return b.finish()


def test_longest_match_then_priority_then_first_found() -> None:
    graph = MatchGraph.from_function(_fan().main)
    longest = _automaton("short 50: Relu Neg\nlong 1: Relu Neg Abs\nside 99: Relu Sigmoid\n")
    best = longest.search_op(graph, 0)
    assert best is not None
    assert best.path == (0, 1, 2)
    # seed code (prefer=priority): the highest priority wherever it ends
    best = longest.search_op(graph, 0, prefer="priority")
    assert best is not None
    assert best.path == (0, 3)
    # same length: higher priority; same priority: the first user in program order
    tie = _automaton("a 1: Relu Neg\nb 2: Relu Sigmoid\n")
    best = tie.search_op(graph, 0)
    assert best is not None
    assert best.path == (0, 3)
    even = _automaton("a 1: Relu Neg\nb 1: Relu Sigmoid\n")
    best = even.search_op(graph, 0)
    assert best is not None
    assert best.path == (0, 1)
    # seed code on equal priority: the shallower end found first in pre-order stays
    seed = _automaton("a 5: Relu Neg\nb 5: Relu Neg Abs\n")
    best = seed.search_op(graph, 0, prefer="priority")
    assert best is not None
    assert best.path == (0, 1)
    # search(): the best match from every op that has one
    found = longest.search(graph)
    assert set(found) == {0}


def test_explore_records_why_each_user_was_not_followed() -> None:
    graph = MatchGraph.from_function(_fan().main)
    automaton = _automaton("a 1: Relu Neg Abs\n")
    states = automaton.explore(graph, 0, {3: CLAIMED})
    assert [s.path for s in states] == [(0,), (0, 1), (0, 1, 2)]
    assert states[0].users == [(1, FOLLOWED), (3, CLAIMED)]
    assert states[-1].stopped == "end-of-pattern"
    assert automaton.explore(graph, 0, {0: IN_GROUP}) == []
    assert automaton.explore(graph, 1) == []  # no pattern starts with Neg
    # single_user: %0 has two readers, so the walk stops there
    (only,) = automaton.explore(graph, 0, single_user=True)
    assert only.stopped == "multiple-users"
    mismatch = _automaton("a 1: Relu Exp\n").explore(graph, 0)
    assert mismatch[0].users == [(1, KIND_MISMATCH), (3, KIND_MISMATCH)]


def _reshape_chain() -> Module:
    b = Builder()
    x = b.input(S)
    r = b.op("Relu", x)  # %0
    flat = b.op("Reshape", r, shape=(16, 8))  # %1
    b.output(b.op("Neg", flat))  # %2
    return b.finish()


def test_need_store_pruning_is_the_seeds_condition() -> None:
    automaton = _automaton("r 1: Relu Reshape Neg OR Relu Reshape\nd 1: Reshape Neg\n")
    # the op library clears need_store for no op: nothing is pruned
    plain = MatchGraph.from_function(_reshape_chain().main)
    best = automaton.search_op(plain, 0)
    assert best is not None
    assert best.path == (0, 1, 2)
    # Reshape in DDR: it needs no store and the Neg needs a load -> skipped
    ddr = MatchGraph.from_function(_reshape_chain().main, frozenset({"tx8be.Reshape"}))
    states = automaton.explore(ddr, 0)
    assert states[1].users == [(2, NEED_STORE_PRUNING)]
    best = automaton.search_op(ddr, 0)
    assert best is not None
    assert best.path == (0, 1)
    # a user that needs no load is not skipped (Reshape after a DDR op)
    both = MatchGraph.from_function(
        _reshape_chain().main, frozenset({"tx8be.Reshape", "tx8be.Neg"})
    )
    best = automaton.search_op(both, 0)
    assert best is not None
    assert best.path == (0, 1, 2)


def test_a_cleared_need_load_bit_alone_does_not_prune() -> None:
    # Embedding clears need_load bit 0 (its table); the producer still needs a store,
    # so !needStore && needLoad is false and the walk goes on
    b = Builder()
    table = b.input((10, 4))
    ids = b.input((3,), "i32")
    b.output(b.op("Embedding", b.op("Relu", table), ids))
    graph = MatchGraph.from_function(b.finish().main)
    assert graph.need_load(1) == (2**64 - 1) & ~1
    best = _automaton("e 1: Relu Embedding\n").search_op(graph, 0)
    assert best is not None
    assert best.path == (0, 1)


# --------------------------------------------------------------------------- the pass


def test_registered_and_knobs() -> None:
    assert PASSES["group-pattern"] is GroupPattern
    names = [k.name for k in GroupPattern.knobs()]
    assert names == ["opt_group", "patterns_file", "prefer", "single_user", "ddr_kinds"]
    assert set(GroupPattern.knob("opt_group").choices) >= {"auto", "cnn", "transformer"}
    (p,) = build_pipeline(["group-pattern"], ["group-pattern.opt_group=transformer"])
    assert isinstance(p, GroupPattern)
    assert p.opt_group == "transformer"
    with pytest.raises(Tx8labError, match="opt_group must be one of auto, cnn, transformer"):
        GroupPattern(opt_group="rnn")
    with pytest.raises(Tx8labError, match="ddr_kinds: unknown op kind 'Reshap'"):
        GroupPattern(ddr_kinds="Reshap")


def test_run_groups_decides_for_every_op_and_keeps_its_input(tmp_path: Path) -> None:
    module = _fan()
    before = print_module(module)
    path = _write(tmp_path, "chain 5: Relu Neg Abs\nexp 1: Exp Neg\n")
    result, _ = execute(GroupPattern(patterns_file=path), module, TX81)
    assert print_module(module) == before
    out = result.module
    verify(out)
    same_outputs(module, out)
    assert sorted(_groups(out).values()) == [["Exp", "Neg"], ["Relu", "Neg", "Abs"]]
    groups = [op for op in out.main.ops if op.kind == "tx8be.Group"]
    assert [g.attrs["group_id"] for g in groups] == [0, 1]
    assert all(g.created_by == "group-pattern" for g in groups)
    assert groups[0].attrs["group_rule"] == f"pattern:{path}:1"
    assert groups[0].attrs["group_pattern"] == "Relu Neg Abs"
    # one op-level decision per top-level op of the input, one per group
    per_op = {
        d.op_id: d.choice
        for d in result.decisions
        if d.choice in ("grouped", "ungrouped", "not-compute", "kept")
    }
    assert per_op == {
        0: "grouped",
        1: "grouped",
        2: "grouped",
        3: "ungrouped",
        4: "grouped",
        5: "grouped",
    }
    group_decisions = [d for d in result.decisions if d.choice == "group"]
    assert [d.related_ids for d in group_decisions] == [(0, 1, 2), (4, 5)]
    why = next(d for d in result.decisions if d.op_id == 3 and d.choice == "ungrouped")
    assert "no pattern names Sigmoid" in why.reason
    stats = result.stats
    assert stats["groups"] == 2
    assert stats["grouped_ops"] == 5
    assert stats["ungrouped_compute_ops"] == 1
    assert stats["pattern.chain"] == 1
    assert stats["pattern.exp"] == 1
    assert result.artifacts["groups"][0]["ops"] == [0, 1, 2]
    assert "chain (priority 5" in result.artifacts["automaton"]


def test_nothing_matched_returns_the_input_module(tmp_path: Path) -> None:
    module = _fan()
    result = GroupPattern(patterns_file=_write(tmp_path, "x 1: Tanh Exp\n")).run(module, TX81)
    assert result.module is module
    assert result.stats["groups"] == 0


def test_overlapping_matches_go_to_the_earlier_start(tmp_path: Path) -> None:
    # %0 Relu -> %1 Neg -> %2 Abs -> %3 Exp; patterns from %0 and from %1 overlap
    b = Builder()
    x = b.input(S)
    b.output(b.op("Exp", b.op("Abs", b.op("Neg", b.op("Relu", x)))))
    module = b.finish()
    path = _write(tmp_path, "first 1: Relu Neg\nlater 9: Neg Abs Exp OR Abs Exp\n")
    result = GroupPattern(patterns_file=path).run(module, TX81)
    # %1 is claimed by the match from %0; the search from %2 finds Abs Exp
    assert sorted(_groups(result.module).values()) == [["Abs", "Exp"], ["Relu", "Neg"]]
    partial = next(d for d in result.decisions if d.op_id == 1 and d.choice == "match-full")
    assert "later" in partial.reason


def test_groups_formed_earlier_make_a_later_match_cyclic(tmp_path: Path) -> None:
    # G1 = {Relu %0, Mul %3} and S = {Neg %1, Add %2} are each convex, but %0 -> %2 and
    # %1 -> %3 make them depend on each other: S is not applied
    b = Builder()
    x = b.input(S)
    a = b.op("Relu", x)
    n = b.op("Neg", x)
    c = b.op("Add", a, n)
    d = b.op("Mul", a, n)
    b.output(c, d)
    module = b.finish()
    path = _write(tmp_path, "g1 1: Relu Mul\ns 1: Neg Add\n")
    result, _ = execute(GroupPattern(patterns_file=path), module, TX81)
    assert list(_groups(result.module).values()) == [["Relu", "Mul"]]
    assert result.stats["rejected_not_convex"] == 1
    why = next(d for d in result.decisions if d.op_id == 1 and d.choice == "ungrouped")
    assert "not convex: %1 -> %3 -> %0 -> %2" in why.reason
    same_outputs(module, result.module)


def test_existing_groups_are_left_alone_and_numbering_continues(tmp_path: Path) -> None:
    module = _fan()
    ids = IdCounter(module.next_id)
    func, (made,) = outline(module.main, [[0, 1]], ids, attrs=[{"group_id": 7}])
    module = Module((func,), module.attrs, ids.next_id)
    path = _write(tmp_path, "a 1: Relu Neg Abs OR Neg Abs OR Exp Neg\n")
    result, _ = execute(GroupPattern(patterns_file=path), module, TX81)
    groups = _groups(result.module)
    assert groups[made.id] == ["Relu", "Neg"]
    new = [op for op in result.module.main.ops if op.kind == "tx8be.Group" and op.id != made.id]
    assert [g.attrs["group_id"] for g in new] == [8]
    kept = next(d for d in result.decisions if d.op_id == made.id)
    assert kept.choice == "kept"
    assert kept.related_ids == (0, 1)
    # the group as a user stops a match: Abs is not reachable from inside
    table = inspect_matches(module, patterns_file=path)
    assert table[table.op_id == made.id].reason.iloc[0].startswith("a tx8be.Group")


def test_auto_config() -> None:
    assert choose_config(zoo.build("resnet50", size=32))[0] == "cnn"
    assert choose_config(zoo.build("tiny_cnn"))[0] == "cnn"
    # ViT has a patch conv but is a transformer
    name, why = choose_config(zoo.build("vit_tiny", layers=1))
    assert name == "transformer"
    assert "1 Conv2d < " in why
    assert choose_config(zoo.build("bert_base", layers=1))[0] == "transformer"
    result = GroupPattern().run(zoo.build("tiny_cnn"), TX81)
    assert result.stats["config"] == "cnn"
    assert result.decisions[0].op_id is None
    assert "auto:" in result.decisions[0].reason


def test_check_flags_a_body_that_is_not_its_pattern() -> None:
    module = _fan()
    ids = IdCounter(module.next_id)
    func, _ = outline(
        module.main,
        [[0, 1]],
        ids,
        attrs=[{"group_rule": "pattern:x:1", "group_pattern": "Relu Abs"}],
        created_by="group-pattern",
    )
    bad = Module((func,), module.attrs, ids.next_id)
    (problem,) = GroupPattern().check(bad)
    assert "body Relu Neg is not its group_pattern 'Relu Abs'" in problem


# --------------------------------------------------------------------------- inspector


def test_inspector_rows_for_every_op_and_stop_reasons(tmp_path: Path) -> None:
    module = _reshape_chain()
    path = _write(tmp_path, "r 1: Relu Reshape Neg OR Relu Reshape\nn 2: Relu Neg\n")
    table = inspect_matches(module, patterns_file=path, ddr_kinds="Reshape")
    assert list(table.columns) == [
        "function", "op_id", "kind", "pattern", "rule", "priority", "status", "depth",
        "full_depth", "length", "path", "full_path", "stop", "reason",
    ]  # fmt: skip
    # every op has at least one row
    assert set(table.op_id) == {0, 1, 2}
    r = table[(table.op_id == 0) & (table.pattern == "r")].iloc[0]
    assert (r.status, r.depth, r.full_depth, r.length) == ("full", 2, 2, 3)
    assert r.stop == "need-store-pruning"
    assert "pruned: !needStore && needLoad" in r.reason
    n = table[(table.op_id == 0) & (table.pattern == "n")].iloc[0]
    assert (n.status, n.depth, n.stop) == ("partial", 1, "kind-mismatch")
    assert n.reason == "after %0 Relu (1 op matched) it expects Neg: %1 is a Reshape"
    none = table[table.op_id == 2].iloc[0]
    assert none.status == "none"
    assert none.reason == "no pattern starts with Neg (it appears later in patterns)"
    # without the what-if nothing is pruned and r matches all three ops
    plain = inspect_matches(module, patterns_file=path)
    r = plain[(plain.op_id == 0) & (plain.pattern == "r")].iloc[0]
    assert (r.full_depth, r.full_path, r.stop) == (3, "%0 %1 %2", "end-of-pattern")


def test_inspector_no_user_and_multiple_users(tmp_path: Path) -> None:
    path = _write(tmp_path, "a 1: Relu Neg Abs\nb 1: Exp Neg Abs\n")
    table = inspect_matches(_fan(), patterns_file=path, single_user=True)
    a = table[(table.op_id == 0) & (table.pattern == "a")].iloc[0]
    assert a.stop == "multiple-users"
    assert "2 ops read the result" in a.reason
    b = table[(table.op_id == 4) & (table.pattern == "b")].iloc[0]
    assert b.stop == "no-user"
    assert "only the function's return reads the result" in b.reason


def test_inspector_decisions_on_the_pass_result() -> None:
    result = GroupPattern().run(zoo.build("tiny_cnn"), TX81)
    table = inspect_matches(zoo.build("tiny_cnn"))
    matches = [d for d in result.decisions if d.choice.startswith("match-")]
    assert len(matches) == int((table.status != "none").sum())
    full = {(d.op_id, d.data["pattern"]) for d in matches if d.choice == "match-full"}
    assert full == {(int(r.op_id), r.pattern) for r in table[table.status == "full"].itertuples()}


# --------------------------------------------------------------------------- zoo and random


def _compute_ops(module: Module) -> int:
    return sum(1 for op in module.main.ops if op.kind not in TERMINATORS and is_compute(op))


@pytest.mark.parametrize("name", sorted(zoo.MODELS))
def test_zoo_groups_are_convex_and_keep_values(name: str) -> None:
    module = zoo.build(name, **INTERPRETABLE.get(name, {}))
    result, _ = execute(GroupPattern(), module, TX81)  # verifies, checks post-conditions
    out = result.module
    same_outputs(module, out)
    # every op appears once, inside at most one group
    ids = [op.id for op in out.walk() if op.kind not in TERMINATORS]
    assert len(ids) == len(set(ids))
    grouped = result.stats["grouped_ops"]
    assert isinstance(grouped, int)
    assert grouped == sum(len(m) for m in group_members(out.main).values())


@pytest.mark.parametrize(
    ("name", "config", "least"),
    [
        ("resnet50", "cnn", 1.0),
        ("mobilenet_v2", "cnn", 1.0),
        ("bert_base", "transformer", 0.9),
        ("vit_tiny", "transformer", 0.8),
        ("llama_decoder", "transformer", 0.8),
    ],
)
def test_shipped_configs_group_the_zoo(name: str, config: str, least: float) -> None:
    module = zoo.build(name, **INTERPRETABLE.get(name, {}))
    result = GroupPattern().run(module, TX81)
    assert result.stats["config"] == config
    grouped = result.stats["grouped_ops"]
    assert isinstance(grouped, int)
    assert grouped >= least * _compute_ops(module)


def test_resnet50_blocks() -> None:
    result = GroupPattern().run(zoo.build("resnet50", size=32), TX81)
    stats = result.stats
    # 16 bottlenecks end in Conv BN Add Relu; the stem is Conv BN Relu MaxPool; the 4
    # shortcut convs are Conv BN; the other 32 convs Conv BN Relu; plus the head
    assert stats["pattern.conv_bn_add_act"] == 16
    assert stats["pattern.conv_bn_act_pool"] == 1
    assert stats["pattern.conv_bn"] == 4
    assert stats["pattern.conv_bn_act"] == 32
    assert stats["pattern.head"] == 1
    assert stats["ungrouped_compute_ops"] == 0


def test_after_the_layout_passes_channel_norms_join_the_chains() -> None:
    module = zoo.build("tiny_transformer_block")
    steps = build_pipeline(["layout-init", "layout-transmit", "layout-align-npu"])
    for p in steps:
        module = p.run(module, TX81).module
    result, _ = execute(GroupPattern(), module, TX81)
    patterns = [
        op.attrs["group_pattern"] for op in result.module.main.ops if op.kind == "tx8be.Group"
    ]
    assert any("ChannelNorm" in p for p in patterns)
    same_outputs(module, result.module)


@pytest.fixture(scope="module")
def random_patterns(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Patterns over the kinds tests/strategies.py draws, with OR and wildcards."""
    text = (
        "unary 30: Relu * OR Neg Abs OR Sigmoid Tanh * OR Silu Relu\n"
        "binary 20: Add Relu OR Mul Add * OR Sub Neg Abs OR Max Min\n"
        "data 10: Reshape Transpose OR Transpose Reshape OR Slice Concatenate OR Convert Relu\n"
        "mixed 10: MatMul Add OR MatMul Softmax OR ReduceSum Neg OR Softmax MatMul Add\n"
    )
    path = tmp_path_factory.mktemp("patterns") / "random.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    modules(max_ops=20),
    st.sampled_from(["longest", "priority"]),
    st.booleans(),
    st.sampled_from(["", "Reshape,Transpose"]),
)
def test_random_modules_keep_values_and_group_each_op_once(
    random_patterns: str, module: Module, prefer: str, single_user: bool, ddr: str
) -> None:
    p = GroupPattern(
        patterns_file=random_patterns, prefer=prefer, single_user=single_user, ddr_kinds=ddr
    )
    result, _ = execute(p, module, TX81)
    out = result.module
    verify(out)
    same_outputs(module, out)
    ids = [op.id for op in out.walk() if op.kind not in TERMINATORS]
    assert len(ids) == len(set(ids))
    # groups that were there before are kept; new ones come from a pattern line
    old = {op.id for op in module.main.ops if op.kind == "tx8be.Group"}
    for op in out.main.ops:
        if op.kind != "tx8be.Group":
            continue
        if op.id in old:
            assert op.created_by != "group-pattern"
        else:
            assert op.created_by == "group-pattern"
            assert str(op.attrs["group_rule"]).startswith(f"pattern:{random_patterns}:")
    # every top-level op of the input got one op-level decision
    decided = [
        d.op_id
        for d in result.decisions
        if d.choice in ("grouped", "ungrouped", "not-compute", "kept")
    ]
    top = [op.id for op in module.main.ops if op.kind not in TERMINATORS]
    assert sorted(decided) == sorted(top)
