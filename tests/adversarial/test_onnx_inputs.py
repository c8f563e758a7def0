"""Bad ONNX input: every malformed model is one clear Tx8labError, never a traceback.

A corpus of hand-built models (``onnx.helper``), each with exactly one expected outcome:

- ``error``: ``load`` raises ``Tx8labError`` whose message matches a regex naming the file
  and the node / input / initializer at fault. The models break a rule of the ONNX spec
  (or ask for something tx8be cannot hold), so the outcome follows from the spec, not from
  what the importer happens to do.
- ``success``: a valid-but-odd model; ``interpret`` of the import equals onnxruntime.

Every model is written to a file named after its case, so each message must name that file.
A few cases also go through ``tx8lab run`` (exit code 2, one line on stderr). The fuzz
tests mutate small valid models (bytes and proto fields) and check that nothing but
``Tx8labError`` escapes ``load`` and ``interpret``; ``TX8LAB_FUZZ_EXAMPLES=10`` multiplies
their example count for a long run.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from tx8lab.core import interpret
from tx8lab.core.frontends.onnx import import_notes, load, supported_ops
from tx8lab.errors import Tx8labError

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is a dev dependency (make test)")

F = TensorProto.FLOAT
I64 = TensorProto.INT64
RNG = np.random.default_rng(0)


def vi(name: str, elem: int = F, shape: Any = (2, 3)) -> Any:
    return helper.make_tensor_value_info(name, elem, None if shape is None else list(shape))


def model(
    nodes: list[Any],
    inputs: list[Any] | None = None,
    outputs: list[Any] | None = None,
    inits: list[Any] | None = None,
    opset: int = 17,
    ir: int = 8,
    value_info: list[Any] | None = None,
) -> Any:
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x")] if inputs is None else inputs,
        [vi("y")] if outputs is None else outputs,
        inits or [],
        value_info=value_info or [],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m


def const(name: str, values: Any, dtype: Any = np.int64) -> Any:
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def weights(name: str, shape: tuple[int, ...]) -> Any:
    return numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32), name)


def node(op: str, inputs: list[str], outputs: list[str] | None = None, **attrs: Any) -> Any:
    return helper.make_node(op, inputs, outputs or ["y"], name="bad", **attrs)


@dataclass
class Case:
    """One corpus model and its one expected outcome."""

    name: str
    build: Callable[[], Any]  # a ModelProto, or the raw bytes of the file
    outcome: str  # "error", "conversion" (success with a reported note) or "success"
    pattern: str = ""  # regex the error message (or each import note) must match
    input_shapes: dict[str, tuple[int, ...]] | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)


CASES: list[Case] = []


def error(name: str, pattern: str, build: Callable[[], Any], **kw: Any) -> None:
    CASES.append(Case(name, build, "error", pattern, **kw))


def success(name: str, build: Callable[[], Any], **kw: Any) -> None:
    CASES.append(Case(name, build, "success", **kw))


def conversion(name: str, pattern: str, build: Callable[[], Any], **kw: Any) -> None:
    """Imported, with one import note per converted tensor matching ``pattern``."""
    CASES.append(Case(name, build, "conversion", pattern, **kw))


BAD = r"node 'bad' \((\w+)\)"

# ------------------------------------------------------------------ files that are no models
error("empty_file", r"holds no ONNX graph", lambda: b"")
error("text_file", r"cannot read the ONNX model|holds no ONNX graph", lambda: b"hello world\n" * 9)
error("json_file", r"cannot read the ONNX model|holds no ONNX graph", lambda: b'{"graph": []}')
for seed in range(4):
    error(
        f"random_bytes_{seed}",
        r"cannot read the ONNX model|holds no ONNX graph|is not valid|no IR version|opset",
        lambda seed=seed: np.random.default_rng(seed).bytes(300),
    )


def _not_utf8_operand() -> bytes:
    data = model([node("Add", ["x", "zzzz"])], inputs=[vi("x"), vi("zzzz")]).SerializeToString()
    return data.replace(b"zzzz", b"z\xff\xfez", 1)  # the node's operand, not the input


error(
    "not_utf8_operand_name",
    r"an operand of node 'bad' b'z\\xff\\xfez' is not UTF-8 text",
    _not_utf8_operand,
)


def _not_utf8_op_type() -> bytes:  # found by test_fuzz_bytes: a flipped byte in "Gemm"
    data = model([node("Relu", ["x"])]).SerializeToString()
    return data.replace(b"Relu", b"R\x80lu", 1)


error("not_utf8_op_type", r"a node field b'R\\x80lu' is not UTF-8 text", _not_utf8_op_type)

# ------------------------------------------------------------------ versions
error(
    "opset_999",
    r"opset 999 is not one the installed onnx",
    lambda: model([node("Relu", ["x"])], opset=999),
)
error(
    "opset_0",
    r"opset 0 is not one the installed onnx",
    lambda: model([node("Relu", ["x"])], opset=0),
)
error("ir_99", r"IR version 99 is newer", lambda: model([node("Relu", ["x"])], ir=99))
error("ir_0", r"has no IR version", lambda: model([node("Relu", ["x"])], ir=0))


def _two_opsets() -> Any:
    m = model([node("Relu", ["x"])])
    m.opset_import.append(helper.make_opsetid("", 13))
    return m


error("opset_listed_twice", r"lists domain 'ai.onnx' twice", _two_opsets)

# ------------------------------------------------------------------ names (SSA)
error(
    "two_nodes_one_output",
    r"node 'b' \(Neg\) writes 'y', which node 'a' \(Relu\) already defines",
    lambda: model(
        [
            helper.make_node("Relu", ["x"], ["y"], name="a"),
            helper.make_node("Neg", ["x"], ["y"], name="b"),
        ]
    ),
)
error(
    "node_output_is_graph_input",
    r"node 'bad' \(Relu\) writes 'x', which a graph input already defines",
    lambda: model([node("Relu", ["x"], ["x"]), node("Neg", ["x"])]),
)
error(
    "node_output_is_initializer",
    r"node 'bad' \(Relu\) writes 'w', which an initializer already defines",
    lambda: model(
        [node("Relu", ["x"], ["w"]), helper.make_node("Add", ["x", "w"], ["y"])],
        inits=[weights("w", (2, 3))],
    ),
)
error(
    "one_node_two_equal_outputs",
    r"node 'bad' \(Split\) writes 'y', which node 'bad' \(Split\) already defines",
    lambda: model([node("Split", ["x"], ["y", "y"], axis=1, num_outputs=2)], opset=18),
)
error(
    "two_inputs_one_name",
    r"two graph inputs are named 'x'",
    lambda: model([node("Relu", ["x"])], inputs=[vi("x"), vi("x")]),
)
error(
    "two_initializers_one_name",
    r"two initializers are named 'w'",
    lambda: model([node("Add", ["x", "w"])], inits=[weights("w", (2, 3)), weights("w", (2, 3))]),
)
error(
    "empty_input_name",
    r"a graph input has an empty name",
    lambda: model([node("Relu", ["x"])], inputs=[vi("x"), vi("")]),
)
error(
    "undefined_operand",
    BAD + r": uses 'nope', which no earlier node produces",
    lambda: model([node("Add", ["x", "nope"])]),
)
error(
    "nodes_out_of_order",
    r"node 'second' \(Neg\): uses 'r', which no earlier node produces",
    lambda: model(
        [
            helper.make_node("Neg", ["r"], ["y"], name="second"),
            helper.make_node("Relu", ["x"], ["r"], name="first"),
        ]
    ),
)
error(
    "output_never_produced",
    r"graph output 'z' is never produced",
    lambda: model([node("Relu", ["x"])], outputs=[vi("y"), vi("z")]),
)
error(
    "no_outputs",
    r"declares no outputs.*graph\.output",
    lambda: model([node("Relu", ["x"])], outputs=[]),
)
success(
    "initializer_is_also_input",  # ONNX: the initializer is the input's default
    lambda: model(
        [node("Add", ["x", "w"])],
        inputs=[vi("x"), vi("w")],
        inits=[weights("w", (2, 3))],
    ),
)

# ------------------------------------------------------------------ empty (omitted) inputs
REQUIRED_EMPTY = [
    ("Add", ["x", ""], {}, 1),
    ("Add", ["", "x"], {}, 0),
    ("Sub", ["x", ""], {}, 1),
    ("Mul", ["x", ""], {}, 1),
    ("Div", ["x", ""], {}, 1),
    ("Pow", ["x", ""], {}, 1),
    ("Max", ["x", ""], {}, 1),
    ("Equal", ["x", ""], {}, 1),
    ("MatMul", ["x", ""], {}, 1),
    ("Gemm", ["x", ""], {}, 1),
    ("Where", ["", "x", "x"], {}, 0),
    ("Reshape", ["x", ""], {}, 1),
    ("Gather", ["x", ""], {}, 1),
    ("Expand", ["x", ""], {}, 1),
    ("Slice", ["x", "", "s"], {}, 1),
    ("Relu", [""], {}, 0),
    ("Concat", ["x", ""], {"axis": 0}, 1),
    ("Sum", ["x", ""], {}, 1),
    ("Conv", ["x", ""], {}, 1),
    ("LayerNormalization", ["x", ""], {}, 1),
]
for op, inputs, attrs, index in REQUIRED_EMPTY:
    error(
        f"empty_required_{op}_{index}",
        rf"node 'bad' \({op}\): input {index} \(\w+\) is empty; .* required",
        lambda op=op, inputs=inputs, attrs=attrs: model(
            [node(op, inputs, **attrs)], inits=[const("s", [1])]
        ),
    )
success(  # Clip(x, "", max): the min is omitted, legal (optional)
    "empty_optional_clip_min",
    lambda: model(
        [node("Clip", ["x", "", "hi"])], inits=[numpy_helper.from_array(np.float32(0.5), "hi")]
    ),
)
success(  # Gemm without C
    "empty_optional_gemm_c",
    lambda: model(
        [node("Gemm", ["x", "w", ""], transB=1)],
        outputs=[vi("y", F, (2, 4))],
        inits=[weights("w", (4, 3))],
    ),
)
success(  # Slice with axes omitted but steps given
    "empty_optional_slice_axes",
    lambda: model(
        [node("Slice", ["x", "s", "e", "", "st"])],
        outputs=[vi("y", F, (1, 3))],
        inits=[const("s", [1, 0]), const("e", [2, 3]), const("st", [1, 1])],
    ),
)
success(
    "empty_optional_pad_value",
    lambda: model(
        [node("Pad", ["x", "p", ""])],
        outputs=[vi("y", F, (4, 3))],
        inits=[const("p", [1, 0, 1, 0])],
    ),
)

# ------------------------------------------------------------------ input shapes
error(
    "input_without_shape",
    r"input 'x' has no shape \(not even a rank\); pass input_shapes",
    lambda: model([node("Relu", ["x"])], inputs=[vi("x", F, None)]),
)
success(
    "input_without_shape_given",
    lambda: model([node("Relu", ["x"])], inputs=[vi("x", F, None)]),
    input_shapes={"x": (2, 3)},
)
error(
    "input_dim_zero",
    r"input 'x' has dimension 0 of size 0 \(an empty tensor\)",
    lambda: model([node("Relu", ["x"])], inputs=[vi("x", F, (0, 3))]),
)
error(
    "input_dim_negative",
    r"input 'x' has a negative dimension 1 \(-4\)",
    lambda: model([node("Relu", ["x"])], inputs=[vi("x", F, (2, -4))]),
)
error(
    "input_shapes_zero",
    r"input_shapes\['x'\] = \(2, 0\) has dimension 1 of size 0",
    lambda: model([node("Relu", ["x"])], inputs=[vi("x", F, ("n", 3))]),
    input_shapes={"x": (2, 0)},
)
error(
    "input_shapes_negative",
    r"input_shapes\['x'\] = \(-1, 3\) has dimension 0 of size -1",
    lambda: model([node("Relu", ["x"])], inputs=[vi("x", F, ("n", 3))]),
    input_shapes={"x": (-1, 3)},
)
error(
    "input_shapes_rank",
    r"input 'x' has rank 2, input_shapes gives \(2, 3, 4\)",
    lambda: model([node("Relu", ["x"])]),
    input_shapes={"x": (2, 3, 4)},
)
error(
    "input_shapes_unknown_name",
    r"input_shapes names 'q'",
    lambda: model([node("Relu", ["x"])]),
    input_shapes={"q": (2, 3)},
)
error(
    "input_dynamic",
    r"input 'x' has a dynamic dimension 0 \('batch'\)",
    lambda: model([node("Relu", ["x"])], inputs=[vi("x", F, ("batch", 3))]),
)
error(
    "input_2_pow_62_elements",
    r"input 'x' has shape \(2147483648, 2147483648\): 4611686018427387904 elements",
    lambda: model([node("Relu", ["x"])], inputs=[vi("x", F, (1 << 31, 1 << 31))]),
)
error(
    "input_100_gib",
    r"input 'x' has shape .* more than the 64\.0 GiB",
    lambda: model([node("Relu", ["x"])], inputs=[vi("x", F, (25 << 30,))]),
)
success(  # declared output shapes were for batch 1; input_shapes asks for batch 2
    "input_shapes_override_static_output",
    lambda: model(
        [node("Relu", ["x"])], inputs=[vi("x", F, ("n", 3))], outputs=[vi("y", F, (1, 3))]
    ),
    input_shapes={"x": (2, 3)},
)

# ------------------------------------------------------------------ element types
for elem, label in (
    (TensorProto.DOUBLE, "double"),
    (TensorProto.UINT32, "uint32"),
    (TensorProto.UINT64, "uint64"),
):
    error(
        f"input_type_{label}",
        rf"input 'x' has element type {label}, which the import refuses",
        lambda elem=elem: model(
            [node("Identity", ["x"])], inputs=[vi("x", elem)], outputs=[vi("y", elem)]
        ),
    )
    error(
        f"output_type_{label}",
        rf"graph output 'y' is declared {label}, which the import refuses",
        lambda elem=elem: model(
            [node("Identity", ["w"])],
            outputs=[vi("y", elem)],
            inits=[
                numpy_helper.from_array(np.ones((2, 3), helper.tensor_dtype_to_np_dtype(elem)), "w")
            ],
        ),
    )
for elem, label in (
    (TensorProto.DOUBLE, "double"),
    (TensorProto.UINT32, "uint32"),
    (TensorProto.UINT8, "uint8"),
    (TensorProto.INT16, "int16"),
    (TensorProto.UINT16, "uint16"),
):
    error(
        f"cast_to_{label}",
        rf"{BAD}: cast to {label} is not supported",
        lambda elem=elem: model(
            [node("Cast", ["x"], ["c"], to=elem), helper.make_node("Cast", ["c"], ["y"], to=F)]
        ),
    )
error(
    "input_type_string",
    r"input 'x' has element type string",
    lambda: model(
        [node("Identity", ["x"])],
        inputs=[vi("x", TensorProto.STRING)],
        outputs=[vi("y", TensorProto.STRING)],
    ),
)
error(
    "input_type_undefined",
    r"input 'x' has element type type 0",
    lambda: model([node("Identity", ["x"])], inputs=[vi("x", 0)], outputs=[vi("y", 0)]),
)
for elem, label in (
    (TensorProto.UINT8, "uint8"),
    (TensorProto.INT16, "int16"),
    (TensorProto.UINT16, "uint16"),
):
    conversion(  # widened to i32 without changing a value, and said so
        f"input_{label}_widened",
        rf"input 'x' is {label}, held as i32",
        lambda elem=elem: model([node("Cast", ["x"], to=F)], inputs=[vi("x", elem)]),
    )
    conversion(
        f"initializer_{label}_widened",
        rf"initializer 'w' is {label}, held as i32",
        lambda elem=elem: model(
            [helper.make_node("Cast", ["w"], ["c"], to=F), node("Add", ["x", "c"])],
            inits=[
                numpy_helper.from_array(
                    np.arange(6, dtype=helper.tensor_dtype_to_np_dtype(elem)).reshape(2, 3), "w"
                )
            ],
        ),
    )
success(  # Pow's exponent has its own type constraint (T1): float base, int64 exponent
    "pow_int_exponent",
    lambda: model([node("Pow", ["x", "e"])], inits=[const("e", 2)]),
)
MIXED = [
    ("Add", ["x", "z"], TensorProto.INT32, {}),
    ("Mul", ["x", "z"], I64, {}),
    ("Sub", ["x", "z"], TensorProto.FLOAT16, {}),
    ("Div", ["z", "x"], TensorProto.INT32, {}),
    ("Max", ["x", "z"], TensorProto.INT32, {}),
    ("Min", ["x", "z"], TensorProto.INT32, {}),
    ("Sum", ["x", "z"], TensorProto.FLOAT16, {}),
    ("Equal", ["x", "z"], I64, {}),
    ("Less", ["x", "z"], TensorProto.INT32, {}),
    ("Concat", ["x", "z"], I64, {"axis": 0}),
    ("MatMul", ["x", "z"], TensorProto.INT32, {}),
]
for op, inputs, elem, attrs in MIXED:
    shape = (3, 2) if op == "MatMul" else (2, 3)
    error(
        f"mixed_types_{op}",
        rf"node 'bad' \({op}\): input \d \('\w'\) is \w+ but '\w' is \w+; "
        "ONNX requires one element type",
        lambda op=op, inputs=inputs, elem=elem, attrs=attrs, shape=shape: model(
            [node(op, inputs, **attrs)],
            inputs=[vi("x"), vi("z", elem, shape)],
            outputs=[vi("y", TensorProto.UNDEFINED, None)],
        ),
    )
error(
    "mixed_types_const_operand",
    rf"{BAD}: input 1 \('w'\) is double but 'x' is float",
    lambda: model([node("Add", ["x", "w"])], inits=[const("w", np.ones((2, 3)), np.float64)]),
)
error(
    "where_float_condition",
    rf"{BAD}: input 0 \('c'\) is float, which Where does not take \(condition allows bool\)",
    lambda: model([node("Where", ["c", "x", "x"])], inputs=[vi("x"), vi("c")]),
)
error(
    "relu_on_bool",
    rf"{BAD}: input 0 \('x'\) is bool, which Relu does not take",
    lambda: model(
        [node("Relu", ["x"])],
        inputs=[vi("x", TensorProto.BOOL)],
        outputs=[vi("y", TensorProto.BOOL)],
    ),
)

# ------------------------------------------------------------------ enum attributes
X4 = [vi("x", F, (1, 2, 4, 4))]
Y4 = [vi("y", F, None)]
ENUMS = [
    ("MaxPool", ["x"], {"kernel_shape": [2, 2], "auto_pad": "BOGUS"}, "auto_pad"),
    ("AveragePool", ["x"], {"kernel_shape": [2, 2], "auto_pad": "same"}, "auto_pad"),
    ("Conv", ["x", "w4"], {"auto_pad": "SAME"}, "auto_pad"),
    ("ConvTranspose", ["x", "w4"], {"auto_pad": "FULL"}, "auto_pad"),
    ("MaxPool", ["x"], {"kernel_shape": [2, 2], "ceil_mode": 3}, "ceil_mode"),
    ("AveragePool", ["x"], {"kernel_shape": [2, 2], "count_include_pad": 5}, "count_include_pad"),
    ("ReduceMean", ["x"], {"keepdims": 2}, "keepdims"),
    ("ReduceSum", ["x"], {"keepdims": -1}, "keepdims"),
    ("ReduceMax", ["x"], {"keepdims": 7}, "keepdims"),
    ("ReduceSum", ["x"], {"noop_with_empty_axes": 2}, "noop_with_empty_axes"),
    ("Pad", ["x", "p4"], {"mode": "mirror"}, "mode"),
    ("Resize", ["x", "", "sc"], {"mode": "bilinear"}, "mode"),
    (
        "Resize",
        ["x", "", "sc"],
        {"coordinate_transformation_mode": "center"},
        "coordinate_transformation_mode",
    ),
    ("Resize", ["x", "", "sc"], {"nearest_mode": "round"}, "nearest_mode"),
    ("Resize", ["x", "", "sc"], {"keep_aspect_ratio_policy": "fit"}, "keep_aspect_ratio_policy"),
    ("Gelu", ["x"], {"approximate": "erf"}, "approximate"),
    ("Reshape", ["x", "sh"], {"allowzero": 2}, "allowzero"),
    ("Cast", ["x"], {"to": 99}, "to"),
    ("DepthToSpace", ["x"], {"blocksize": 2, "mode": "XYZ"}, "mode"),
]
for op, inputs, attrs, attr in ENUMS:
    error(
        f"enum_{op}_{attr}",
        rf"node 'bad' \({op}\): attribute {attr}=.* is not an ONNX value; use one of",
        lambda op=op, inputs=inputs, attrs=attrs: model(
            [node(op, inputs, **attrs)],
            inputs=X4,
            outputs=Y4,
            inits=[
                weights("w4", (2, 2, 3, 3)),
                const("p4", [0, 0, 1, 1, 0, 0, 1, 1]),
                const("sc", [1, 1, 2, 2], np.float32),
                const("sh", [1, 2, 16]),
            ],
            opset=20,
        ),
    )
error(
    "enum_Gemm_transA",
    rf"{BAD}: attribute transA=2",
    lambda: model([node("Gemm", ["x", "w"], transA=2)], inits=[weights("w", (2, 3))], outputs=Y4),
)
for op in ("RandomNormal", "RandomUniform"):
    error(
        f"enum_{op}_dtype",
        rf"node 'bad' \({op}\): attribute dtype=6 is not an ONNX value; "
        "use one of bfloat16, double, float, float16",
        lambda op=op: model(
            [
                node(op, [], ["r"], shape=[2, 3], dtype=TensorProto.INT32),
                helper.make_node("Add", ["x", "r"], ["y"]),
            ]
        ),
    )

# ------------------------------------------------------------------ declared types and shapes
error(
    "output_declared_int64_for_float",
    r"graph output 'y' is declared int64, but the graph computes it as f32",
    lambda: model([node("Relu", ["x"])], outputs=[vi("y", I64)]),
)
error(
    "output_declared_float_for_int64",
    r"graph output 'y' is declared float, but the graph computes it as i64",
    lambda: model([node("Cast", ["x"], to=I64)], outputs=[vi("y", F)]),
)
error(
    "output_declared_bool_for_float",
    r"graph output 'y' is declared bool",
    lambda: model([node("Neg", ["x"])], outputs=[vi("y", TensorProto.BOOL)]),
)
error(
    "output_declared_shape_contradiction",
    rf"{BAD}: computes 'y' with shape \(2, 3\), but the model declares \(5, 3\)",
    lambda: model([node("Relu", ["x"])], outputs=[vi("y", F, (5, 3))]),
)
error(
    "value_info_shape_contradiction",
    r"node 'first' \(Relu\): computes 'r' with shape \(2, 3\), but the model declares \(3, 2\)",
    lambda: model(
        [
            helper.make_node("Relu", ["x"], ["r"], name="first"),
            helper.make_node("Squeeze", ["r"], ["y"]),
        ],
        value_info=[vi("r", F, (3, 2))],
    ),
)

# ------------------------------------------------------------------ malformed initializers


def _short_raw() -> Any:
    w = weights("w", (2, 3))
    w.raw_data = w.raw_data[:-4]
    return model([node("Add", ["x", "w"])], inits=[w])


def _long_raw() -> Any:
    w = weights("w", (2, 3))
    w.raw_data = w.raw_data + b"\0" * 8
    return model([node("Add", ["x", "w"])], inits=[w])


def _float_data_count() -> Any:
    w = helper.make_tensor("w", F, [2, 3], [1.0] * 6)
    del w.float_data[3:]
    return model([node("Add", ["x", "w"])], inits=[w])


def _int64_data_count() -> Any:
    w = helper.make_tensor("s", I64, [2], [3, 2])
    w.int64_data.append(4)
    return model([node("Reshape", ["x", "s"])], inits=[w], outputs=Y4)


def _negative_dims() -> Any:
    w = weights("w", (2, 3))
    w.dims[0] = -2
    return model([node("Add", ["x", "w"])], inits=[w])


def _empty_init_name() -> Any:
    return model([node("Relu", ["x"])], inits=[weights("", (2, 3))])


error(
    "initializer_raw_data_short",
    r"initializer 'w' is malformed: .*raw_data size \(20 bytes\)",
    _short_raw,
)
error("initializer_raw_data_long", r"initializer 'w' (is malformed|cannot be read)", _long_raw)
error(
    "initializer_float_data_count",
    r"initializer 'w' (is malformed|cannot be read)",
    _float_data_count,
)
error(
    "initializer_int64_data_count",
    r"initializer 's' (is malformed|cannot be read)",
    _int64_data_count,
)
error("initializer_negative_dim", r"initializer 'w' (is malformed|cannot be read)", _negative_dims)
error("initializer_empty_name", r"an initializer has an empty name", _empty_init_name)

# ------------------------------------------------------------------ schema: arity, attribute types
error(
    "arity_add_three",
    rf"{BAD} is not valid ONNX: .*input size 3 not in range",
    lambda: model([node("Add", ["x", "x", "x"])]),
)
error(
    "arity_relu_two",
    rf"{BAD} is not valid ONNX: .*input size 2",
    lambda: model([node("Relu", ["x", "x"])]),
)
error(
    "arity_conv_one",
    rf"{BAD} is not valid ONNX: .*input size 1",
    lambda: model([node("Conv", ["x"])], inputs=X4, outputs=Y4),
)
error(
    "attr_type_softmax_axis_string",
    rf"{BAD} is not valid ONNX: Mismatched attribute type",
    lambda: model([node("Softmax", ["x"], axis="a")]),
)
error(
    "attr_type_gemm_alpha_string",
    rf"{BAD} is not valid ONNX: Mismatched attribute type",
    lambda: model([node("Gemm", ["x", "x"], alpha="a")]),
)
error(
    "attr_unknown_relu",
    rf"{BAD} is not valid ONNX: Unrecognized attribute",
    lambda: model([node("Relu", ["x"], nope=1)]),
)
error(
    "attr_missing_maxpool_kernel",
    rf"{BAD} is not valid ONNX: Required attribute 'kernel_shape'",
    lambda: model([node("MaxPool", ["x"])], inputs=X4, outputs=Y4),
)
error(
    "attr_missing_cast_to",
    rf"{BAD} is not valid ONNX: Required attribute 'to'",
    lambda: model([node("Cast", ["x"])]),
)
error(
    "unknown_op",
    rf"{BAD}: unsupported ONNX op 'Frobnicate'; supported: ",
    lambda: model([node("Frobnicate", ["x"])]),
)
error(
    "unknown_domain",
    rf"{BAD}: operator domain 'com.example' is not supported",
    lambda: model([helper.make_node("Relu", ["x"], ["y"], name="bad", domain="com.example")]),
)

# ------------------------------------------------------------------ bad values per mapped op
BAD_VALUES = [
    ("Softmax", ["x"], {"axis": 7}, [vi("x")]),
    ("Concat", ["x", "x"], {"axis": 9}, [vi("x")]),
    ("Gather", ["x", "i"], {"axis": 5}, [vi("x")]),
    ("Flatten", ["x"], {"axis": 9}, [vi("x")]),
    ("Transpose", ["x"], {"perm": [0, 0]}, [vi("x")]),
    ("Transpose", ["x"], {"perm": [0, 1, 2]}, [vi("x")]),
    ("Split", ["x", "sp"], {"axis": 1}, [vi("x")]),
    ("Squeeze", ["x", "ax0"], {}, [vi("x")]),
    ("Unsqueeze", ["x", "ax9"], {}, [vi("x")]),
    ("Reshape", ["x", "sh7"], {}, [vi("x")]),
    ("Slice", ["x", "i", "i", "ax9"], {}, [vi("x")]),
    ("Pad", ["x", "p3"], {}, [vi("x")]),
    ("Conv", ["x", "w3"], {"group": 2}, X4),
    ("Conv", ["x", "w4"], {"strides": [0, 1]}, X4),
    ("MaxPool", ["x"], {"kernel_shape": [9, 9]}, X4),
    ("MaxPool", ["x"], {"kernel_shape": [2, 2], "strides": [0, 0]}, X4),
    ("Resize", ["x", "", "sc3"], {}, X4),
    ("LayerNormalization", ["x", "g5"], {}, [vi("x")]),
    ("BatchNormalization", ["x", "g5", "g5", "g5", "g5"], {}, X4),
    ("Gemm", ["x", "x"], {}, [vi("x")]),
    ("MatMul", ["x", "x"], {}, [vi("x")]),
    ("ReduceSum", ["x", "ax9"], {}, [vi("x")]),
    ("Expand", ["x", "sh7"], {}, [vi("x")]),
]
for index, (op, inputs, attrs, ins) in enumerate(BAD_VALUES):
    error(
        f"bad_value_{index}_{op}",
        rf"{BAD}: ",
        lambda op=op, inputs=inputs, attrs=attrs, ins=ins: model(
            [node(op, inputs, **attrs)],
            inputs=ins,
            outputs=Y4,
            inits=[
                const("i", [1]),
                const("sp", [1, 1]),
                const("ax0", [0]),
                const("ax9", [9]),
                const("sh7", [7, 5]),
                const("p3", [1, 1, 1]),
                weights("w3", (3, 2, 3, 3)),
                weights("w4", (2, 2, 3, 3)),
                const("sc3", [1, 1, 1.5, 1.5], np.float32),
                weights("g5", (5,)),
            ],
        ),
    )

# found by test_fuzz_fields: the handler tripped over an operand of the wrong rank
error(
    "fuzz_conv_weight_rank_2",
    rf"{BAD}: the weight has shape \(2, 3\); 2-D convolution needs a 4-D",
    lambda: model([node("Conv", ["x", "w"])], inputs=X4, outputs=Y4, inits=[weights("w", (2, 3))]),
)
error(
    "fuzz_slice_lengths_differ",
    rf"{BAD}: starts, ends, axes and steps must be 1-D of one length",
    lambda: model(
        [node("Slice", ["x", "s", "e"])], outputs=Y4, inits=[const("s", [0, 0]), const("e", [1])]
    ),
)
error(
    "fuzz_slice_scalar_starts",
    rf"{BAD}: starts, ends, axes and steps must be 1-D",
    lambda: model(
        [node("Slice", ["x", "s", "e"])], outputs=Y4, inits=[const("s", 0), const("e", 1)]
    ),
)
error(
    "fuzz_reshape_scalar_shape",
    rf"{BAD}: the shape input has shape \(\); ONNX needs a 1-D tensor",
    lambda: model([node("Reshape", ["x", "s"])], outputs=Y4, inits=[const("s", 6)]),
)

# ------------------------------------------------------------------ empty tensors
error(
    "slice_to_empty",
    rf"{BAD}: output 'y' is empty \(shape \(2, 0\)\)",
    lambda: model(
        [node("Slice", ["x", "s", "s", "a"])], outputs=Y4, inits=[const("s", [1]), const("a", [1])]
    ),
)
error(
    "constant_empty_operand",
    rf"{BAD}: constant 'z' is empty",
    lambda: model(
        [node("Add", ["x", "z"])], inits=[const("z", np.zeros((2, 0)), np.float32)], outputs=Y4
    ),
)

# ------------------------------------------------------------------ folding budget
error(
    "constant_of_shape_37_gib",
    rf"{BAD}: folding it would make a constant of shape \(9, 1024, 1024, 1024\), 36\.0 GiB, "
    "over the "
    r"import's folding limit of 1\.0 MiB.*max_fold_bytes",
    lambda: model(
        [node("ConstantOfShape", ["s"], ["c"]), helper.make_node("Add", ["x", "c"], ["y"])],
        inputs=[vi("x", F, (1,))],
        outputs=Y4,
        inits=[const("s", [9, 1 << 10, 1 << 10, 1 << 10])],
    ),
)
error(
    "constant_of_shape_2_pow_62",
    rf"{BAD}: folding it would make a constant of shape \(2147483648, 2147483648\)",
    lambda: model(
        [node("ConstantOfShape", ["s"], ["c"]), helper.make_node("Add", ["x", "c"], ["y"])],
        inputs=[vi("x", F, (1,))],
        outputs=Y4,
        inits=[const("s", [1 << 31, 1 << 31])],
    ),
)
error(
    "tile_over_budget",
    rf"{BAD}: folding it would make a constant of shape \(2000, 3000\)",
    lambda: model(
        [node("Tile", ["w", "r"], ["c"]), helper.make_node("Add", ["x", "c"], ["y"], name="add")],
        outputs=Y4,
        inits=[weights("w", (2, 3)), const("r", [1000, 1000])],
    ),
)
error(
    "range_over_budget",
    rf"{BAD}: folding it would make a constant of shape \(1000000000,\)",
    lambda: model(
        [
            node("Range", ["a", "b", "d"], ["c"]),
            helper.make_node("Add", ["x", "c"], ["y"], name="add"),
        ],
        outputs=Y4,
        inits=[const("a", 0), const("b", 1_000_000_000), const("d", 1)],
    ),
)
error(
    "expand_past_ddr",
    r"node 'bad' \(Expand\) output 'y' has shape \(100, 1024, 1024, 1024\).*64\.0 GiB",
    lambda: model(
        [node("Expand", ["w", "s"])],
        inputs=[vi("x", F, (1,))],
        outputs=Y4,
        inits=[weights("w", (1,)), const("s", [100, 1 << 10, 1 << 10, 1 << 10])],
    ),
)
success(  # over the folding limit but mapped: a Broadcast op instead of a 4 MiB constant
    "expand_over_budget_becomes_op",
    lambda: model(
        [node("Expand", ["w", "s"], ["c"]), helper.make_node("Add", ["x", "c"], ["y"])],
        inputs=[vi("x", F, (1024, 1024))],
        outputs=[vi("y", F, (1024, 1024))],
        inits=[weights("w", (1, 1024)), const("s", [1024, 1024])],
    ),
)
success(  # the limit raised: the 4 MiB ConstantOfShape folds
    "constant_of_shape_limit_raised",
    lambda: model(
        [
            node("ConstantOfShape", ["s"], ["c"], value=helper.make_tensor("v", F, [1], [2.0])),
            helper.make_node("Mul", ["x", "c"], ["y"]),
        ],
        inputs=[vi("x", F, (1024, 1024))],
        outputs=[vi("y", F, (1024, 1024))],
        inits=[const("s", [1024, 1024])],
    ),
    kwargs={"max_fold_bytes": 8 << 20},
)

# ------------------------------------------------------------------ valid but odd
success("identity_input_is_output", lambda: model([node("Identity", ["x"])]))
success(
    "reshape_zero_and_minus_one",
    lambda: model(
        [node("Reshape", ["x", "s"])],
        outputs=[vi("y", F, (2, 3, 1))],
        inits=[const("s", [0, -1, 1])],
    ),
)
success("negative_axis_softmax", lambda: model([node("Softmax", ["x"], axis=-2)]))
success("opset_7_model", lambda: model([node("Add", ["x", "x"])], opset=7, ir=3))
error(
    "resize_fractional_scale",  # ONNX: 8 = floor(4 * 2.1) pixels, but sampled at i / 2.1
    rf"{BAD}: scales \[1\.0, 1\.0, 2\.0999\d*, 2\.0999\d*\]: only integer scales",
    lambda: model(
        [
            node(
                "Resize",
                ["x", "", "sc"],
                mode="nearest",
                coordinate_transformation_mode="asymmetric",
                nearest_mode="floor",
            )
        ],
        inputs=X4,
        outputs=Y4,
        inits=[const("sc", [1, 1, 2.1, 2.1], np.float32)],
    ),
)

CASE_IDS = [c.name for c in CASES]
assert len(set(CASE_IDS)) == len(CASE_IDS), "case names must be unique"


def _write(case: Case, directory: Path) -> tuple[Path, Any]:
    built = case.build()
    data = built if isinstance(built, bytes) else built.SerializeToString()
    path = directory / f"{case.name}.onnx"
    path.write_bytes(data)
    return path, built


def _feeds(m: Any, shapes: dict[str, tuple[int, ...]] | None) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    inits = {t.name for t in m.graph.initializer}
    feeds = {}
    for inp in m.graph.input:
        if inp.name in inits:
            continue
        shape = (shapes or {}).get(inp.name) or tuple(
            d.dim_value for d in inp.type.tensor_type.shape.dim
        )
        elem = inp.type.tensor_type.elem_type
        if elem in (TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16):
            np_type = helper.tensor_dtype_to_np_dtype(elem)
            info = np.iinfo(np_type)
            feeds[inp.name] = rng.integers(info.min, info.max, shape, endpoint=True).astype(np_type)
        else:
            feeds[inp.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_corpus(case: Case, tmp_path: Path) -> None:
    path, m = _write(case, tmp_path)
    if case.outcome == "error":
        with pytest.raises(Tx8labError) as info:
            load(path, input_shapes=case.input_shapes, **case.kwargs)
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(str(path)), message
        assert re.search(case.pattern, message), message
        return
    module = load(path, input_shapes=case.input_shapes, **case.kwargs)
    notes = import_notes(module)
    if case.outcome == "conversion":
        assert notes, "the conversion is reported"
        for note in notes:
            assert note.startswith(str(path)), note
            assert re.search(case.pattern, note), note
    else:
        assert notes == ()
    feeds = _feeds(m, case.input_shapes)
    session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    inits = {t.name for t in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    got = interpret(module, [feeds[n] for n in names])
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g.astype(np.float64), e, rtol=1e-4, atol=1e-4)


def test_corpus_size() -> None:
    assert len(CASES) >= 100
    assert {c.outcome for c in CASES} == {"error", "conversion", "success"}


CLI_CASES = [
    "two_nodes_one_output",
    "opset_999",
    "input_dim_negative",
    "empty_file",
    "constant_of_shape_37_gib",
    "mixed_types_Add",
]


@pytest.mark.parametrize("name", CLI_CASES)
def test_cli_one_line(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tx8lab.cli import main

    case = next(c for c in CASES if c.name == name)
    path, _ = _write(case, tmp_path)
    assert main(["run", str(path)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"tx8lab: error: {path}"), lines[0]
    assert "Traceback" not in captured.err + captured.out


def test_the_fold_constants_knob_bounds_the_import_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a 4 MiB ConstantOfShape (1024 x 1024 f32) over the default 1 MiB, within 8 MiB
    from tx8lab.cli import main

    m = model(
        [
            node("ConstantOfShape", ["s"], ["c"], value=helper.make_tensor("v", F, [1], [2.0])),
            helper.make_node("Mul", ["x", "c"], ["y"]),
        ],
        inputs=[vi("x", F, (1024, 1024))],
        outputs=[vi("y", F, (1024, 1024))],
        inits=[const("s", [1024, 1024])],
    )
    path = tmp_path / "cos.onnx"
    onnx.save(m, str(path))
    assert main(["run", str(path), "--until", "dce"]) == 2
    err = capsys.readouterr().err
    assert "4.0 MiB" in err, err
    assert "--set fold-constants.max_bytes=N" in err, err
    assert main(["run", str(path), "--until", "dce", "--set", "fold-constants.max_bytes=8Mi"]) == 0


# ---------------------------------------------------------------------- fuzzing

SCALE = int(os.environ.get("TX8LAB_FUZZ_EXAMPLES", "1"))


def _seed_mlp() -> Any:
    return model(
        [
            helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1, name="fc"),
            helper.make_node("Relu", ["h"], ["r"], name="act"),
            helper.make_node("Softmax", ["r"], ["y"], axis=-1, name="sm"),
        ],
        inputs=[vi("x", F, (2, 3))],
        outputs=[vi("y", F, (2, 4))],
        inits=[weights("w", (4, 3)), weights("b", (4,))],
    )


def _seed_cnn() -> Any:
    return model(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
            helper.make_node(
                "MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"
            ),
            helper.make_node("Add", ["p", "p"], ["a"], name="add"),
            helper.make_node("ReduceMean", ["a", "axes"], ["y"], keepdims=1, name="mean"),
        ],
        inputs=[vi("x", F, (1, 2, 4, 4))],
        outputs=[vi("y", F, (1, 2, 1, 1))],
        inits=[weights("w", (2, 2, 3, 3)), weights("b", (2,)), const("axes", [2, 3])],
        opset=18,
    )


def _seed_shapes() -> Any:
    return model(
        [
            helper.make_node("Shape", ["x"], ["s"], name="shape"),
            helper.make_node("Gather", ["s", "zero"], ["n"], axis=0, name="gather"),
            helper.make_node("Unsqueeze", ["n", "ax"], ["n1"], name="unsq"),
            helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0, name="cat"),
            helper.make_node("Reshape", ["x", "target"], ["r"], name="reshape"),
            helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0], name="tr"),
            helper.make_node("Slice", ["t", "st", "en"], ["y"], name="slice"),
        ],
        inputs=[vi("x", F, (2, 3, 2))],
        outputs=[vi("y", F, (5, 2))],
        inits=[
            const("zero", 0),
            const("ax", [0]),
            const("minus1", [-1]),
            const("st", [1]),
            const("en", [6]),
        ],
    )


SEEDS = [_seed_mlp(), _seed_cnn(), _seed_shapes()]
SEED_BYTES = [m.SerializeToString() for m in SEEDS]
OPS = sorted({*supported_ops(), "ConstantOfShape", "Tile", "Range", "Frobnicate", "If"})
FUZZ_DIR = Path(tempfile.mkdtemp(prefix="tx8lab-fuzz-"))


def _load_and_run(source: Any) -> None:
    """``load``, then ``interpret`` with small inputs: success or Tx8labError only."""
    try:
        module = load(source)
    except Tx8labError:
        return
    args = module.main.args
    if sum(int(np.prod(a.type.shape)) for a in args) > 100_000:
        return  # valid and huge: interpreting it is slow, not a finding
    rng = np.random.default_rng(0)
    feeds = [rng.standard_normal(a.type.shape).astype(np.float32) for a in args]
    try:
        with np.errstate(all="ignore"):
            interpret(module, feeds)
    except Tx8labError:
        return


@settings(
    max_examples=1000 * SCALE,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
@given(
    seed=st.integers(0, len(SEEDS) - 1),
    edits=st.lists(
        st.tuples(
            st.sampled_from(["flip", "cut", "insert"]), st.integers(0, 1 << 16), st.integers(0, 255)
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_fuzz_bytes(seed: int, edits: list[tuple[str, int, int]]) -> None:
    data = bytearray(SEED_BYTES[seed])
    for kind, where, value in edits:
        if not data:
            break
        at = where % len(data)
        if kind == "flip":
            data[at] ^= value or 1
        elif kind == "cut":
            del data[at:]
        else:
            data[at:at] = bytes([value])
    path = FUZZ_DIR / "mutant.onnx"
    path.write_bytes(bytes(data))
    _load_and_run(path)


MUTATIONS = [
    "dim",
    "elem",
    "attr_int",
    "attr_ints",
    "attr_str",
    "input_name",
    "output_name",
    "order",
    "drop_node",
    "dup_node",
    "op_type",
    "opset",
    "init_dims",
    "init_type",
    "init_data",
]


def _mutate(m: Any, kind: str, a: int, b: int, text: str) -> None:
    g = m.graph
    names = sorted(
        {n for nd in g.node for n in [*nd.input, *nd.output]} | {i.name for i in g.input}
    )
    nodes = list(g.node)
    nd = nodes[a % len(nodes)]
    infos = [*g.input, *g.output, *g.value_info]
    if kind == "dim":
        dims = [d for info in infos for d in info.type.tensor_type.shape.dim]
        if dims:
            dims[a % len(dims)].dim_value = b
    elif kind == "elem":
        infos[a % len(infos)].type.tensor_type.elem_type = b % 20
    elif kind in ("attr_int", "attr_ints", "attr_str") and nd.attribute:
        attr = nd.attribute[b % len(nd.attribute)]
        value = a - (1 << 15)
        if kind == "attr_int":
            attr.i = value
        elif kind == "attr_ints":
            attr.ints[:] = [value, b - 128][: 1 + a % 2]
        else:
            attr.s = text.encode()
    elif kind == "input_name" and nd.input:
        nd.input[b % len(nd.input)] = ["", "nope", *names][a % (len(names) + 2)]
    elif kind == "output_name":
        nd.output[b % len(nd.output)] = ["", *names][a % (len(names) + 1)]
    elif kind == "order":
        order = np.random.default_rng(a).permutation(len(nodes))
        g.ClearField("node")
        g.node.extend(nodes[i] for i in order)
    elif kind == "drop_node":
        del g.node[a % len(nodes)]
    elif kind == "dup_node":
        g.node.append(nd)
    elif kind == "op_type":
        nd.op_type = OPS[b % len(OPS)]
    elif kind == "opset":
        m.opset_import[0].version = [0, 7 + b % 22, 99][a % 3]
    elif g.initializer:
        init = g.initializer[a % len(g.initializer)]
        if kind == "init_dims":
            if init.dims:
                init.dims[b % len(init.dims)] = a % 9 - 1
            else:
                init.dims.append(a % 9)
        elif kind == "init_type":
            init.data_type = b % 20
        else:
            raw = bytearray(init.raw_data)
            init.raw_data = bytes(raw[: a % (len(raw) + 1)])


@settings(
    max_examples=2000 * SCALE,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
@given(
    seed=st.integers(0, len(SEEDS) - 1),
    edits=st.lists(
        st.tuples(
            st.sampled_from(MUTATIONS + MUTATIONS[:11] * 2),  # fewer initializer edits
            st.integers(0, 1 << 16),
            st.one_of(st.integers(-8, 300), st.sampled_from([1 << 31, 1 << 40, (1 << 62) + 1])),
            st.sampled_from(
                ["", "NOTSET", "SAME_UPPER", "VALID", "nearest", "bogus", "\u00e9\u00e9"]
            ),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_fuzz_fields(seed: int, edits: list[tuple[str, int, int, str]]) -> None:
    m = onnx.ModelProto()
    m.CopyFrom(SEEDS[seed])
    for kind, a, b, text in edits:
        # the proto may refuse an edit (a value out of its field's range)
        with contextlib.suppress(ValueError, TypeError, IndexError):
            _mutate(m, kind, a, b, text)
    _load_and_run(m)


def test_seeds_load_and_match_onnxruntime() -> None:
    """The fuzz seeds are valid: a mutation is what makes a model bad."""
    for m in SEEDS:
        feeds = _feeds(m, None)
        session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)
        got = interpret(load(m), [feeds[i.name] for i in m.graph.input])
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def test_cli_prints_a_conversion_and_the_report_keeps_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from tx8lab.cli import main

    case = next(c for c in CASES if c.name == "input_int16_widened")
    path, _ = _write(case, tmp_path)
    out = tmp_path / "r.json"
    assert main(["run", str(path), "--json", str(out)]) == 0
    err = capsys.readouterr().err
    note = f"{path}: input 'x' is int16, held as i32"
    assert f"note: {note}" in err
    (kept,) = json.loads(out.read_text(encoding="utf-8"))["import_notes"]
    assert kept.startswith(note)
