"""layout-init and layout-transmit beyond the golden files.

The golden files in ``tests/golden/layout_init/`` and ``layout_transmit/`` show one rule
each; these tests cover every zoo model, random modules (hypothesis), the knob, the
decisions and the errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from tests.strategies import modules
from tx8lab.core import Builder, interpret, random_inputs, zoo
from tx8lab.core.ir import TERMINATORS, Block, Function, Module, Op, TensorType, Value
from tx8lab.core.layout_str import op_layouts
from tx8lab.core.passes.layout_init import LayoutInit, initial_layout
from tx8lab.core.passes.layout_transmit import LayoutGraph, LayoutTransmit
from tx8lab.core.text import print_module
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81

# sizes small enough to interpret quickly (layouts are checked at full size too)
SMALL: dict[str, dict[str, int]] = {
    "llama_decoder": {"hidden": 64, "heads": 2, "ffn": 128, "vocab": 100, "seq": 8},
    "bert_base": {"layers": 1, "seq": 8, "vocab": 100},
    "resnet50": {"size": 32},
    "mobilenet_v2": {"size": 32},
    "vit_tiny": {"layers": 1},
}


def _transmit(module: Module, **knobs: bool) -> tuple[Module, dict[str, int | float | str]]:
    init = LayoutInit().run(module, TX81)
    done = LayoutTransmit(**knobs).run(init.module, TX81)
    return done.module, done.stats


def _value_layouts(module: Module) -> dict[tuple[int, int, bool], set[str]]:
    """Every layout each value is given by the ops that produce or read it."""
    graph = LayoutGraph.build(module)
    seen: dict[tuple[int, int, bool], set[str]] = {}
    for op in graph.ops.values():
        ins, outs = op_layouts(op)
        keys = [*graph.in_keys(op), *graph.out_keys(op)]
        for key, layout in zip(keys, [*ins, *outs], strict=True):
            assert layout is not None, op.label
            seen.setdefault(key, set()).add(layout)
    return seen


@pytest.mark.parametrize("name", sorted(zoo.MODELS))
def test_every_zoo_op_is_known_after_transmit(name: str) -> None:
    done, stats = _transmit(zoo.build(name))
    assert LayoutTransmit().check(done) == []
    # producer and users agree on each tensor's layout
    conflicts = {k: v for k, v in _value_layouts(done).items() if len(v) > 1}
    assert len(conflicts) == stats["conflicts"] == 0
    module = zoo.build(name, **SMALL.get(name, {}))
    done, _ = _transmit(module)
    inputs = random_inputs(module, seed=1)
    for want, got in zip(interpret(module, inputs), interpret(done, inputs), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2"])
def test_convolution_networks_are_covered_by_propagation(name: str) -> None:
    # a CNN is Conv everywhere: all but the final flatten/reshape tail learns its layout
    _, stats = _transmit(zoo.build(name))
    assert stats["seeds"] > 50
    assert stats["defaulted_ops"] <= 1
    assert stats["forward"] + stats["backward"] > 300


def test_conv_and_gemm_strings() -> None:
    b = Builder()
    x = b.input((1, 8, 8, 4))
    w = b.constant(np.ones((8, 3, 3, 4), np.float32))
    bias = b.constant(np.ones((8,), np.float32))
    y = b.op("Conv2d", x, w, bias, pads=(1, 1, 1, 1))
    rows = b.input((4, 16))
    k = b.input((16, 2))
    z = b.op("Gemm", rows, k)
    b.output(y, z)
    module = b.finish()
    conv, gemm = (op for op in module.main.ops if op.kind in ("tx8be.Conv2d", "tx8be.Gemm"))
    assert initial_layout(conv) == "NHWC-OHWI-Tensor-NHWC"
    assert initial_layout(gemm) == "NTensor-NTensor-NTensor"  # dim 0 is 4: a batch of rows
    init = LayoutInit().run(module, TX81)
    kinds = {
        op.kind: op.attrs["layout_str"] for op in init.module.main.ops if op.kind not in TERMINATORS
    }
    assert kinds["tx8be.Constant"] == "Unknown"
    assert init.stats == {"fixed": 2, "unknown": 2, "overwritten": 0}
    assert LayoutInit().check(init.module) == []


def test_layout_init_overwrites_and_says_what_was_there() -> None:
    b = Builder()
    x = b.input((1, 4, 4, 8))
    y = b.op("Relu", x, layout_str="NCHW-NCHW")
    b.output(y)
    result = LayoutInit().run(b.finish(), TX81)
    (decision,) = result.decisions
    assert decision.choice == "Unknown"
    assert decision.data["previous"] == "NCHW-NCHW"
    assert "overwritten" in decision.reason
    assert result.stats["overwritten"] == 1


def test_forward_and_backward_through_an_add() -> None:
    # Conv -> Add(conv, relu(arg1)): the Add learns NHWC forward from the Conv, and the
    # Relu feeding its other operand learns NHWC backward from the Add.
    b = Builder()
    x = b.input((1, 4, 4, 8))
    other = b.input((1, 4, 4, 8))
    w = b.input((8, 1, 1, 8))
    c = b.op("Conv2d", x, w)
    r = b.op("Relu", other)
    s = b.op("Add", c, r)
    b.output(s)
    module = b.finish()
    done, stats = _transmit(module)
    by_kind = {
        op.kind: op.attrs["layout_str"] for op in done.main.ops if op.kind not in TERMINATORS
    }
    assert by_kind["tx8be.Add"] == "NHWC-NHWC-NHWC"
    assert by_kind["tx8be.Relu"] == "NHWC-NHWC"
    assert stats["backward"] == 1
    assert stats["forward"] == 1
    relu_decision = next(
        d
        for d in LayoutTransmit().run(LayoutInit().run(module, TX81).module, TX81).decisions
        if d.op_id == r.owner
    )
    assert relu_decision.data["rule"] == "backward"
    # without backward inference the Relu is not reached from its user
    _, forward_only = _transmit(module, backward=False)
    assert forward_only["backward"] == 0
    assert forward_only["defaulted_ops"] == 1


def test_reshape_stops_the_spread_and_says_so() -> None:
    b = Builder()
    x = b.input((1, 4, 4, 8))
    w = b.input((8, 1, 1, 8))
    c = b.op("Conv2d", x, w)
    flat = b.op("Reshape", c, shape=(1, 128))
    out = b.op("Relu", flat)
    b.output(out)
    module = b.finish()
    result = LayoutTransmit().run(LayoutInit().run(module, TX81).module, TX81)
    layouts = {
        op.kind: op.attrs["layout_str"]
        for op in result.module.main.ops
        if op.kind not in TERMINATORS
    }
    assert layouts["tx8be.Reshape"] == "NHWC-Tensor"
    assert layouts["tx8be.Relu"] == "Tensor-Tensor"
    reshape = next(d for d in result.decisions if d.op_id == flat.owner)
    assert reshape.data["rule"] == "default"
    assert "cannot infer" in reshape.reason
    assert reshape.related_ids == (c.owner,)


def test_no_gemm_or_conv_defaults_everything_by_shape() -> None:
    b = Builder()
    x = b.input((2, 8))
    b.output(b.op("Relu", x))
    result = LayoutTransmit().run(LayoutInit().run(b.finish(), TX81).module, TX81)
    assert result.decisions[0].choice == "no-seed"
    (relu,) = [op for op in result.module.main.ops if op.kind not in TERMINATORS]
    assert relu.attrs["layout_str"] == "NTensor-NTensor"  # dim 0 is 2


@given(modules(max_ops=16))
def test_random_modules_get_complete_consistent_layouts(module: Module) -> None:
    done, stats = _transmit(module)
    assert LayoutTransmit().check(done) == []
    seen = _value_layouts(done)
    assert sum(len(v) > 1 for v in seen.values()) <= stats["conflicts"]
    inputs = random_inputs(module, seed=2)
    for want, got in zip(interpret(module, inputs), interpret(done, inputs), strict=True):
        np.testing.assert_array_equal(got, want)
    # running the pair again changes nothing: the analysis starts afresh each time
    again, _ = _transmit(done)
    assert print_module(again) == print_module(done)


def test_unknown_op_kind_is_a_clear_error() -> None:
    arg = Value(-1, 0, TensorType((4,), "f32"), is_arg=True)
    bad = Op(0, "tx8be.NoSuchOp", (arg,), (Value(0, 0, TensorType((4,), "f32")),))
    ret = Op(-1, "func.return", (bad.results[0],), ())
    module = Module((Function("main", Block((arg,), (bad, ret))),), {}, 1)
    with pytest.raises(Tx8labError, match=r"NoSuchOp.*add an OpDef"):
        LayoutInit().run(module, TX81)
    with pytest.raises(Tx8labError, match=r"NoSuchOp.*add an OpDef"):
        LayoutTransmit().run(module, TX81)


def test_malformed_layout_str_names_the_op() -> None:
    b = Builder()
    x = b.input((1, 8))
    w = b.input((8, 4))
    b.output(b.op("Gemm", x, w, layout_str="Tensor-Tensor"))  # 3 tensors, 2 parts
    with pytest.raises(Tx8labError, match="Gemm"):
        LayoutTransmit().run(b.finish(), TX81)
