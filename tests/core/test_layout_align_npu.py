"""layout-align-npu and layout-align-opt: seed 000's rules, the optimal mode, value keeping.

The golden files in ``tests/golden/layout_align_npu/`` and ``tests/golden/layout_align_opt/``
show one rule each; these tests cover what a golden file cannot: every zoo model and random
modules (hypothesis), the optimal <= greedy bound, the seed demo, and the report section.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import INTERPRETABLE, same_outputs
from tests.strategies import modules
from tx8lab.core import Builder, verify, zoo
from tx8lab.core.attrs import DevInfo, LayoutMode
from tx8lab.core.ir import TERMINATORS, Block, Function, IdCounter, Module
from tx8lab.core.passes import build_pipeline
from tx8lab.core.passes.layout_align_npu import (
    FIXED_RULES,
    LayoutAlignNPU,
    _Graph,
    alignment_conflicts,
    coloring_problem,
    greedy_colors,
    plan_conversions,
    view_odd_ranks,
)
from tx8lab.core.passes.layout_align_opt import LayoutAlignOpt
from tx8lab.core.passes.layout_mincut import cost
from tx8lab.core.report import build_report
from tx8lab.core.runner import run_pipeline
from tx8lab.hw import TX81

ZOO = [
    "layout_align_demo",
    "batchnorm_demo",
    "tiny_cnn",
    "tiny_transformer_block",
    "resnet50",
    "mobilenet_v2",
    "vit_tiny",
    "bert_base",
    "llama_decoder",
]


def _norms(module: Module) -> int:
    return sum(1 for op in module.walk() if op.kind == "tx8be.ChannelNorm")


# ------------------------------------------------------------------ every zoo model


@pytest.mark.parametrize("name", ZOO)
def test_zoo_models_align_without_conflicts(name: str) -> None:
    module = zoo.build(name)
    greedy = LayoutAlignNPU().run(module, TX81)
    optimal = LayoutAlignNPU(strategy="optimal").run(module, TX81)
    for result in (greedy, optimal):
        verify(result.module)
        assert alignment_conflicts(result.module) == []
        cleaned = LayoutAlignOpt().run(result.module, TX81)
        verify(cleaned.module)
        assert alignment_conflicts(cleaned.module) == []
        assert _norms(cleaned.module) <= _norms(result.module)
    # the count each strategy reports is the number of ChannelNorms it inserted
    assert _norms(greedy.module) == greedy.stats["channel_norms_greedy"]
    assert _norms(optimal.module) == optimal.stats["channel_norms_optimal"]
    assert greedy.stats["channel_norms_optimal"] == optimal.stats["channel_norms_optimal"]
    assert optimal.stats["channel_norms_optimal"] <= greedy.stats["channel_norms_greedy"]


@pytest.mark.parametrize(
    "name",
    ["layout_align_demo", "tiny_cnn", "tiny_transformer_block", "batchnorm_demo", "vit_tiny"],
)
def test_zoo_values_are_kept(name: str) -> None:
    module = zoo.build(name, **({"layers": 1} if name == "vit_tiny" else {}))
    for strategy in ("greedy", "optimal"):
        aligned = LayoutAlignNPU(strategy=strategy).run(module, TX81).module
        same_outputs(module, aligned)
        same_outputs(module, LayoutAlignOpt().run(aligned, TX81).module)


def test_every_op_gets_a_layout_and_a_reason() -> None:
    module = zoo.build("tiny_transformer_block")
    result = LayoutAlignNPU().run(module, TX81)
    colors = {d.op_id: d for d in result.decisions if d.choice in ("ALIGN", "NALIGN")}
    for op in module.main.ops[:-1]:
        decision = colors[op.id]
        assert decision.reason
        assert decision.data["rule"]
    for op in result.module.main.ops[:-1]:
        dev = op.attrs["dev_info"]
        assert isinstance(dev, DevInfo)
        aligned = dev.mem_layout in (LayoutMode.Cx, LayoutMode.NCx)
        if op.id in colors:
            assert aligned == (colors[op.id].choice == "ALIGN")
        else:
            assert op.created_by == "layout-align-npu"
            assert op.kind == "tx8be.ChannelNorm"


# ------------------------------------------------------------------ the seed demo (by hand)


#: seed 000's rules applied by hand to ``zoo.layout_align_demo`` (op id: color, rule, why).
#: The graph: x -> Conv2d(%0 weight, %1 bias) %2 -> Relu %3 -> Mul(%4 [64]) %5 -> Slice C
#: 32:64 %6 / Slice C 0:32 %7 -> Add %8 -> Reshape [1,256,32] %9 -> Reshape [256,32] %10 ->
#: Gemm(%11) %12 -> Softmax %13 -> out 0; %3 -> MaxPool2d %14 -> Conv2d(%15) %16;
#: Concatenate(%14, %16) %17 -> Transpose %18 -> Reshape [1,94,64] %19 -> out 1.
DEMO_COLORS = {
    0: ("NALIGN", "no_parent"),  # a constant: BOTH with no parent starts NALIGN
    1: ("NALIGN", "odd_rank"),  # rank-1 bias: an output of rank 1 is NALIGN
    2: ("ALIGN", "align_only"),  # Conv2d: "ALIGN Only" list
    3: ("ALIGN", "both"),  # Relu follows its parent %2
    4: ("NALIGN", "odd_rank"),  # rank-1 scale
    5: ("ALIGN", "broadcast"),  # V_VS Mul follows its complete input %3
    6: ("NALIGN", "slice"),  # C start 32 > 0 and C end 64 a multiple of 64
    7: ("ALIGN", "slice"),  # C start 0
    8: ("NALIGN", "both"),  # parents disagree; %6 and %7 tie on depth, operand 0 wins
    9: ("NALIGN", "odd_rank"),  # rank-3 output
    10: ("NALIGN", "odd_rank"),  # reads the rank-3 %9, which has no Cx
    11: ("NALIGN", "no_parent"),
    12: ("ALIGN", "align_only"),  # Gemm
    13: ("ALIGN", "both"),  # Softmax follows %12
    14: ("ALIGN", "align_only"),  # MaxPool2d
    15: ("NALIGN", "no_parent"),
    16: ("ALIGN", "align_only"),  # Conv2d
    17: ("ALIGN", "align_only"),  # Concatenate (rank 4)
    18: ("ALIGN", "align_only"),  # Transpose (rank 4)
    19: ("NALIGN", "odd_rank"),  # rank-3 output
}
#: Values whose producer's color differs from a user's need (function input and output
#: NALIGN): one ChannelNorm each. "arg0" -> %2; %0, %1 -> %2; %4 -> %5; %5 -> %6; %7 -> %8;
#: %10, %11 -> %12; %13 -> output 0; %15 -> %16; %18 -> %19.
DEMO_CONVERTED = {"arg0", 0, 1, 4, 5, 7, 10, 11, 13, 15, 18}


def test_seed_demo_colors() -> None:
    """``zoo.layout_align_demo`` colored as seed 000's rules give it by hand (above)."""
    module = zoo.build("layout_align_demo")
    for odd_rank in ("view", "nalign"):  # no ALIGN-only op of the demo has an odd rank
        result = LayoutAlignNPU(compare=False, odd_rank=odd_rank).run(module, TX81)
        got = {
            d.op_id: (d.choice, d.data["rule"])
            for d in result.decisions
            if d.choice in ("ALIGN", "NALIGN")
        }
        assert got == DEMO_COLORS
        converted = {
            "arg0" if op.operands[0].key[2] else op.operands[0].key[0]
            for op in result.module.main.ops
            if op.kind == "tx8be.ChannelNorm"
        }
        assert converted == DEMO_CONVERTED
        assert result.stats["channel_norms"] == len(DEMO_CONVERTED)
    # ConstChannelNormErase removes the ChannelNorms of the rank-1 constants %1 and %4
    cleaned = LayoutAlignOpt().run(result.module, TX81)
    assert cleaned.stats["erased_const"] == 2
    assert _norms(cleaned.module) == len(DEMO_CONVERTED) - 2


def _colors(module: Module) -> tuple[dict[int, LayoutMode], int]:
    """Each original op's layout after greedy coloring, and the ChannelNorms inserted."""
    out = LayoutAlignNPU(compare=False).run(module, TX81).module
    ids = {op.id for op in module.main.ops}
    layouts = {
        op.id: op.attrs["dev_info"].mem_layout
        for op in out.main.ops
        if op.id in ids and isinstance(op.attrs.get("dev_info"), DevInfo)
    }
    return layouts, _norms(out) - _norms(module)


def _conv_plus_constant(constant_first: bool) -> tuple[Module, int]:
    b = Builder()
    x = b.input((1, 8, 8, 16), "f16")
    w = b.weight((16, 3, 3, 16), "f16")
    if constant_first:
        c = b.constant(np.ones((1, 8, 8, 16)), "f16")
        y = b.op("Conv2d", x, w, pads=(1, 1, 1, 1))
    else:
        y = b.op("Conv2d", x, w, pads=(1, 1, 1, 1))
        c = b.constant(np.ones((1, 8, 8, 16)), "f16")
    add = b.op("Add", y, c)
    b.output(add)
    return b.finish(), add.owner


def test_a_constant_parent_never_decides_the_color() -> None:
    # Conv -> Add(conv, full-shape constant): the constant imposes no color (seed 000's
    # code), so the Add follows the Conv, ALIGN, whichever of the two is printed first;
    # ChannelNorms by hand: the argument, the Conv's weight and the constant to ALIGN, the
    # Add's result back to NALIGN for the return
    for constant_first in (False, True):
        module, add = _conv_plus_constant(constant_first)
        layouts, norms = _colors(module)
        assert layouts[add] == LayoutMode.Cx, constant_first
        assert norms == 4, constant_first


def test_only_the_v_vs_binary_ops_follow_their_complete_input() -> None:
    # seed 000's "Need BroadCast Ops" are the V_VS vector ops (add, mul, div, max, ...);
    # LayerNorm's scale, Gather's indices and Where's broadcast branch differ in shape
    # from the result too, but those ops are no broadcasts: the BOTH rule decides them
    from tx8lab.core.passes.layout_align_npu import requirement

    b = Builder()
    x, s, idx = b.input((1, 4, 4, 8), "f16"), b.input((8,), "f16"), b.input((3,), "i32")
    norm = b.op("LayerNorm", x, s, s, axis=-1)
    gathered = b.op("Gather", x, idx, axis=3)
    picked = b.op("Where", b.op("Compare", x, s, mode="gt"), x, s)
    b.output(b.op("Mul", norm, s), gathered, picked)
    ops = [op for op in b.finish().main.ops if op.kind not in TERMINATORS]
    rules = {op.kind.removeprefix("tx8be."): requirement(op).rule for op in ops}
    assert rules["LayerNorm"] == rules["Gather"] == rules["Where"] == "both"
    assert rules["Mul"] == rules["Compare"] == "broadcast"


def _shuffled(module: Module, rnd: Any) -> Module:
    """``module`` with its ops in another topological order, drawn at random."""
    func = module.main
    produced = {v.key for v in func.args}
    pending = [op for op in func.ops if op.kind not in TERMINATORS]
    order = []
    while pending:
        ready = [op for op in pending if all(v.key in produced for v in op.operands)]
        pick = rnd.choice(ready)
        pending.remove(pick)
        order.append(pick)
        produced.update(r.key for r in pick.results)
    body = Block(func.args, (*order, func.body.terminator))
    return Module((Function(func.name, body),), module.attrs, module.next_id)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(max_ops=14, groups=False), st.randoms(use_true_random=False))
def test_colors_do_not_depend_on_the_text_order_of_independent_ops(
    module: Module, rnd: Any
) -> None:
    shuffled = _shuffled(module, rnd)
    verify(shuffled)
    assert _colors(shuffled) == _colors(module)


def test_direction_names_the_layout_produced() -> None:
    """Seed 000's text (not its code): NALIGN producer -> ALIGN user is direction true."""
    b = Builder()
    x = b.input((1, 8, 8, 16), "f16")
    pooled = b.op("MaxPool2d", x, kernel=(2, 2), strides=(2, 2))
    b.output(pooled)
    out = LayoutAlignNPU().run(b.finish(), TX81).module
    norms = [op for op in out.main.ops if op.kind == "tx8be.ChannelNorm"]
    assert [n.attrs["direction"] for n in norms] == [True, False]
    assert norms[0].operands[0].is_arg
    assert [n.attrs["dev_info"].mem_layout for n in norms] == [LayoutMode.Cx, LayoutMode.Tensor]


def test_users_needing_the_same_conversion_share_one_channel_norm() -> None:
    b = Builder()
    x = b.input((1, 8, 8, 16), "f16")
    pools = [b.op("MaxPool2d", x, kernel=(2, 2), strides=(2, 2)) for _ in range(3)]
    b.output(b.op("Concatenate", *pools, axis=3))
    result = LayoutAlignNPU().run(b.finish(), TX81)
    inserted = [d for d in result.decisions if d.choice == "inserted"]
    assert len(inserted) == 2  # one for the argument (3 users), one before the output
    assert "need ALIGN" in inserted[0].reason
    assert len(inserted[0].related_ids) == 3


def test_unknown_op_kind_is_a_clear_error() -> None:
    from tx8lab.core.ir import Block, Function, Op, TensorType, Value
    from tx8lab.errors import Tx8labError

    arg = Value(-1, 0, TensorType((4,), "f32"), is_arg=True)
    bad = Op(0, "tx8be.NoSuchOp", (arg,), (Value(0, 0, TensorType((4,), "f32")),))
    ret = Op(-1, "func.return", (bad.results[0],), ())
    module = Module((Function("main", Block((arg,), (bad, ret))),), {}, 1)
    with pytest.raises(Tx8labError, match="NoSuchOp"):
        LayoutAlignNPU().run(module, TX81)


# ------------------------------------------------------------------ optimal vs brute force


def _viewed(module: Module) -> Function:
    """The main function as the pass colors it: odd-rank ALIGN-only ops on their views."""
    return view_odd_ranks(module.main, IdCounter(module.next_id), "test")[0]


def _brute_force_norms(module: Module) -> int:
    """Fewest ChannelNorms over every coloring of the free ops, by enumeration."""
    graph = _Graph.of(_viewed(module))
    free = [p for p, r in enumerate(graph.reqs) if r.rule not in FIXED_RULES]
    base, _ = greedy_colors(graph)
    best = len(plan_conversions(graph, base))
    for bits in itertools.product((False, True), repeat=len(free)):
        colors = list(base)
        for p, bit in zip(free, bits, strict=True):
            colors[p] = bit
        best = min(best, len(plan_conversions(graph, colors)))
    return best


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(max_ops=12, groups=False))
def test_optimal_matches_brute_force_on_random_modules(module: Module) -> None:
    graph = _Graph.of(_viewed(module))
    free = [p for p, r in enumerate(graph.reqs) if r.rule not in FIXED_RULES]
    if len(free) > 14:
        return
    result = LayoutAlignNPU(strategy="optimal").run(module, TX81)
    assert result.stats["channel_norms_optimal"] == _brute_force_norms(module)
    assert result.stats["channel_norms_optimal"] <= result.stats["channel_norms_greedy"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(max_ops=16), st.sampled_from(["greedy", "optimal"]))
def test_random_modules_keep_values_and_post_condition(module: Module, strategy: str) -> None:
    result = LayoutAlignNPU(strategy=strategy).run(module, TX81)
    verify(result.module)
    assert alignment_conflicts(result.module) == []
    same_outputs(module, result.module)
    cleaned = LayoutAlignOpt().run(result.module, TX81)
    verify(cleaned.module)
    assert alignment_conflicts(cleaned.module) == []
    same_outputs(module, cleaned.module)
    # the problem handed to the solver counts ChannelNorms as the rewrite inserts them
    graph = _Graph.of(module.main)
    colors, _ = greedy_colors(graph)
    problem, _ = coloring_problem(graph)
    n = len(graph.ops)
    full = [*colors, *[problem.fixed[i] for i in range(n, problem.num_nodes)]]
    assert cost(problem, full) == len(plan_conversions(graph, colors))


# ------------------------------------------------------------------ layout-align-opt


def test_opposite_directions_are_not_merged() -> None:
    """The seed's RedundantChannelNormErase would merge these; they differ in layout."""
    b = Builder()
    x = b.input((1, 4, 4, 8), "f16")
    to_align = b.op("ChannelNorm", x, direction=True)
    back = b.op("ChannelNorm", to_align, direction=False)
    again = b.op("ChannelNorm", to_align, direction=False)
    other = b.op("ChannelNorm", back, direction=True)
    b.output(again, other)
    module = b.finish()
    result = LayoutAlignOpt().run(module, TX81)
    kinds = [(op.id, op.attrs.get("direction")) for op in result.module.main.ops[:-1]]
    # %1 and %2 both convert %0 to NALIGN: one goes; %3 converts %1 the other way: stays
    assert kinds == [(0, True), (1, False), (3, True)]
    same_outputs(module, result.module)


def test_opt_knobs_turn_patterns_off() -> None:
    module = LayoutAlignNPU().run(zoo.build("layout_align_demo"), TX81).module
    assert LayoutAlignOpt(const_erase=False).run(module, TX81).stats["erased_const"] == 0
    assert LayoutAlignOpt().run(module, TX81).stats["erased_const"] == 2
    unchanged = LayoutAlignOpt(const_erase=False, redundant_erase=False).run(module, TX81)
    assert unchanged.module is module


# ------------------------------------------------------------------ pipeline and report


def test_report_layout_section_has_both_counts() -> None:
    module = zoo.build("tiny_cnn")
    passes = build_pipeline(overrides={"layout-align-npu.strategy": "optimal"})
    steps = list(run_pipeline(module, passes, TX81))
    layout = build_report(module, steps, TX81)["layout"]
    assert layout["strategy"] == "optimal"
    assert layout["channel_norms_optimal"] <= layout["channel_norms_greedy"]
    assert layout["channel_norms_inserted"] == layout["channel_norms_optimal"]
    assert layout["channel_norms"] == _norms(steps[-1].after)
    assert layout["rules"]["align_only"] == 6
    assert set(layout["erased"]) == {"const", "redundant"}


def test_report_omits_the_count_not_computed() -> None:
    module = zoo.build("tiny_cnn")
    passes = build_pipeline(overrides={"layout-align-npu.compare": "false"})
    steps = list(run_pipeline(module, passes, TX81))
    layout = build_report(module, steps, TX81)["layout"]
    assert "channel_norms_greedy" in layout
    assert "channel_norms_optimal" not in layout


@pytest.mark.parametrize("name", sorted(zoo.MODELS))
def test_default_pipeline_keeps_every_zoo_models_values(name: str) -> None:
    """The whole layout pipeline, verifier and post-conditions on, changes no output."""
    module = zoo.build(name, **INTERPRETABLE.get(name, {}))
    steps = list(run_pipeline(module, build_pipeline(), TX81))
    names = [s.name for s in steps]
    assert names.index("layout-align-npu") < names.index("layout-align-opt")
    same_outputs(module, steps[-1].after)
