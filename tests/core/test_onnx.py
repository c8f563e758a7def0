"""ONNX import: numerics against onnxruntime, layout handling, and clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from tx8lab.core import interpret, verify
from tx8lab.core.frontends.onnx import load, supported_ops
from tx8lab.errors import Tx8labError

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is a dev dependency (make test)")

RNG = np.random.default_rng(0)


def _init(name: str, shape: tuple[int, ...], scale: float = 0.3, positive: bool = False) -> Any:
    data = RNG.standard_normal(shape).astype(np.float32) * scale
    if positive:
        data = np.abs(data) + 0.5
    return numpy_helper.from_array(data, name)


def _const(name: str, values: Any, dtype: Any = np.int64) -> Any:
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def _model(
    nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any], opset: int = 17
) -> Any:
    graph = helper.make_graph(nodes, "test", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _check_against_onnxruntime(
    model: Any, feeds: dict[str, np.ndarray], rtol: float = 1e-3
) -> None:
    module = load(model)
    verify(module)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    names = [i.name for i in model.graph.input if i.name in feeds]
    got = interpret(module, [feeds[n] for n in names])
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        scale = max(1.0, float(np.abs(e).max()))
        np.testing.assert_allclose(g.astype(np.float64), e, rtol=rtol, atol=rtol * scale)


def small_cnn() -> Any:
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["n1"], epsilon=1e-5),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], group=2, pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "p1"], ["a1"]),
        helper.make_node("Mul", ["a1", "chan"], ["a2"]),
        helper.make_node("Concat", ["a2", "p1"], ["cat"], axis=1),
        helper.make_node("ReduceMean", ["cat", "axes"], ["rm"], keepdims=1),
        helper.make_node("Sub", ["cat", "rm"], ["centered"]),
        helper.make_node("GlobalAveragePool", ["centered"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    inits = [
        _init("w1", (8, 3, 3, 3)),
        _init("b1", (8,)),
        _init("s", (8,), positive=True),
        _init("bb", (8,)),
        _init("m", (8,)),
        _init("v", (8,), positive=True),
        _init("w2", (8, 4, 3, 3)),
        _init("chan", (1, 8, 1, 1)),
        _init("wf", (10, 16)),
        _init("bf", (10,)),
        _const("axes", [2, 3]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])
    return _model(nodes, [x], [y], inits, opset=18)


def attention_block() -> Any:
    s, d, h = 6, 16, 2
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "beta"], ["ln"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["ln", "wq"], ["q"]),
        helper.make_node("Add", ["q", "bq"], ["qb"]),
        helper.make_node("Shape", ["qb"], ["shp"]),
        helper.make_node("Gather", ["shp", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "ax0"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "rest"], ["newshape"], axis=0),
        helper.make_node("Reshape", ["qb", "newshape"], ["heads"]),
        helper.make_node("Transpose", ["heads"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["heads"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["qt", "kt"], ["scores"]),
        helper.make_node("Div", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "qt"], ["ctx"]),
        helper.make_node("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctxt", "flat"], ["merged"]),
        helper.make_node("Div", ["merged", "sqrt2"], ["half"]),
        helper.make_node("Erf", ["half"], ["erf"]),
        helper.make_node("Add", ["erf", "one"], ["erf1"]),
        helper.make_node("Mul", ["merged", "erf1"], ["gelu2"]),
        helper.make_node("Mul", ["gelu2", "halfc"], ["gelu"]),
        helper.make_node("Gelu", ["gelu"], ["gelu_op"]),
        helper.make_node("Sqrt", ["probs"], ["sq"]),
        helper.make_node("Pow", ["sq", "two"], ["pw"]),
        helper.make_node("ReduceSum", ["pw", "lastax"], ["rs"], keepdims=0),
        helper.make_node("Cast", ["rs"], ["rs16"], to=TensorProto.FLOAT16),
        helper.make_node("Cast", ["rs16"], ["rs32"], to=TensorProto.FLOAT),
    ]
    inits = [
        _init("g", (d,), positive=True),
        _init("beta", (d,)),
        _init("wq", (d, d)),
        _init("bq", (d,)),
        _const("zero", 0),
        _const("ax0", [0]),
        _const("rest", [s, h, d // h]),
        _const("flat", [1, s, d]),
        _const("scale", np.sqrt(d // h), np.float32),
        _const("sqrt2", np.sqrt(2.0), np.float32),
        _const("one", 1.0, np.float32),
        _const("halfc", 0.5, np.float32),
        _const("two", 2.0, np.float32),
        _const("lastax", [-1]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, s, d])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("gelu_op", "rs32")]
    return _model(nodes, [x], outs, inits, opset=20)


def shapes_and_data_movement() -> Any:
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2], auto_pad="SAME_UPPER"),
        helper.make_node("HardSigmoid", ["c"], ["hs"], alpha=0.2, beta=0.5),
        helper.make_node("HardSwish", ["hs"], ["hw"]),
        helper.make_node("Clip", ["hw", "lo", "hi"], ["cl"]),
        helper.make_node("Pad", ["cl", "pads"], ["pd"], mode="constant"),
        helper.make_node("Slice", ["pd", "st", "en", "sax"], ["sl"]),
        helper.make_node("Split", ["sl", "sp"], ["s0", "s1"], axis=1),
        helper.make_node("Sigmoid", ["s0"], ["sg"]),
        helper.make_node("Resize", ["sg", "", "scales"], ["up"], mode="nearest"),
        helper.make_node(
            "AveragePool",
            ["up"],
            ["ap"],
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
            strides=[1, 1],
            count_include_pad=0,
        ),
        helper.make_node("Tanh", ["s1"], ["th"]),
        helper.make_node("Squeeze", ["th", "sq"], ["sqz"]),
        helper.make_node("Unsqueeze", ["sqz", "sq"], ["usq"]),
        helper.make_node("Max", ["usq", "s1"], ["mx"]),
    ]
    inits = [
        _init("w", (6, 4, 3, 3)),
        _const("lo", 0.0, np.float32),
        _const("hi", 6.0, np.float32),
        _const("pads", [0, 0, 1, 1, 0, 0, 1, 1]),
        _const("st", [1, 0]),
        _const("en", [6, 100]),
        _const("sax", [1, 3]),
        _const("sp", [2, 3]),
        _const("scales", [1, 1, 2, 2], np.float32),
        _const("sq", [0]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 9])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("ap", "mx")]
    return _model(nodes, [x], outs, inits, opset=18)


@pytest.mark.parametrize(
    ("make", "shape"),
    [
        (small_cnn, (1, 3, 16, 16)),
        (attention_block, (1, 6, 16)),
        (shapes_and_data_movement, (1, 4, 9, 9)),
    ],
)
def test_matches_onnxruntime(make: Any, shape: tuple[int, ...]) -> None:
    feeds = {"x": RNG.standard_normal(shape).astype(np.float32)}
    _check_against_onnxruntime(make(), feeds)


def test_feature_maps_become_nhwc_with_one_transpose_per_value() -> None:
    module = load(small_cnn())
    kinds = [op.name for op in module.main.ops]
    # the input is transposed to NHWC once; the flatten after the global pool goes back once
    assert kinds.count("Transpose") == 2
    conv = next(op for op in module.main.ops if op.name == "Conv2d")
    assert conv.operands[0].type.shape == (1, 16, 16, 3)
    assert conv.operands[1].type.shape == (8, 3, 3, 3)


def test_shape_subgraph_is_folded() -> None:
    module = load(attention_block())
    kinds = {op.name for op in module.main.ops}
    assert "Gather" not in kinds  # Shape -> Gather -> Unsqueeze -> Concat folded into Reshape
    assert "Reshape" in kinds


def test_dynamic_dimension_needs_input_shapes(tmp_path: Path) -> None:
    model = small_cnn()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    with pytest.raises(Tx8labError, match=r"input 'x' has a dynamic dimension 0 \('batch'\)"):
        load(model)
    module = load(model, input_shapes={"x": (2, 3, 16, 16)})
    assert module.main.args[0].type.shape == (2, 3, 16, 16)
    with pytest.raises(Tx8labError, match="input_shapes names 'nope'"):
        load(model, input_shapes={"nope": (1,)})


def test_unsupported_op_names_node_and_lists_supported() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("NonZero", ["r"], ["y"], name="nz"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, None)
    model = _model(nodes, [x], [y], [])
    with pytest.raises(Tx8labError, match=r"node 'nz' \(NonZero\): unsupported ONNX op 'NonZero'"):
        load(model)
    assert "Conv" in supported_ops()


def test_control_flow_is_a_clear_error() -> None:
    branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["o"])],
        "b",
        [],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, [2])],
    )
    nodes = [
        helper.make_node("If", ["c"], ["y"], name="branch", then_branch=branch, else_branch=branch)
    ]
    inputs = [
        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
    ]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    model = _model(nodes, inputs, [y], [])
    with pytest.raises(Tx8labError, match=r"node 'branch' \(If\): control flow"):
        load(model)


def test_bad_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(Tx8labError, match="no such ONNX file"):
        load(tmp_path / "missing.onnx")
    good = small_cnn().SerializeToString()
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(good[: len(good) // 2])
    with pytest.raises(Tx8labError, match=r"truncated\.onnx: cannot read"):
        load(truncated)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x00\xff not a protobuf" * 10)
    with pytest.raises(Tx8labError, match=r"garbage\.onnx"):
        load(garbage)
