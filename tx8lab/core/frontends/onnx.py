"""ONNX import: map a standard ONNX model onto tx8be ops.

Spec: DESIGN.md §4 and the foundation issue. ``load(path_or_model, input_shapes=None)``
returns a verified :class:`~tx8lab.core.ir.Module`.

The algorithm in one sentence: fix the input shapes, run ONNX shape inference, then walk
the nodes in order, folding every node whose inputs are all known constants with ONNX's
reference evaluator (shape subgraphs: Shape -> Gather -> Concat -> Reshape) and mapping
every other node to tx8be ops.

Readings chosen:

- tx8be feature maps are NHWC (docs/ops.md); ONNX's are NCHW. Every imported value
  remembers whether it is *physically NHWC* (it holds a logical NCHW tensor transposed).
  Conv, pools, BatchNormalization and Resize produce NHWC; elementwise ops, Concat,
  Softmax, reductions, Slice, Split and Pad work on NHWC values directly with their axes
  remapped (constant operands are permuted at import time); any other op gets a
  ``Transpose`` back to NCHW first, and so do graph outputs. Each value is converted at most
  once per direction.
- Conv weights are transposed OIHW -> OHWI at import time (they are initializers).
- ConvTranspose has no tx8be kind: kernel == stride (the usual 2x upsampler) becomes a 1x1
  Conv2d plus depth-to-space (Reshape/Transpose/Reshape); anything else zero-inserts the
  input (Reshape/Pad/Reshape) and runs a stride-1 Conv2d with the flipped weight.
- Nearest Resize maps onto tx8be ``Resize`` (pixel repetition by integer scales) only when
  its coordinate_transformation_mode/nearest_mode pair really repeats pixels (checked
  exactly, e.g. asymmetric+floor, half_pixel+round_prefer_floor); other pairs are errors.
- Errors name the file, the node (name and op type) and what to do: an unsupported op
  lists the supported ones; control flow (If/Loop/Scan) asks for a model exported without
  it, and is reported before anything else (even before missing ``input_shapes``); a
  dynamic dimension asks for ``input_shapes``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from tx8lab.core.builder import Builder
from tx8lab.core.dtypes import from_numpy, round_to
from tx8lab.core.ir import Module, Value
from tx8lab.errors import Tx8labError

Array = npt.NDArray[Any]

#: NCHW axis -> NHWC axis.
_TO_NHWC_AXIS = {0: 0, 1: 3, 2: 1, 3: 2}
_NCHW_TO_NHWC = (0, 2, 3, 1)
_NHWC_TO_NCHW = (0, 3, 1, 2)

CONTROL_FLOW = frozenset({"If", "Loop", "Scan", "SequenceMap"})


@dataclass
class _Tensor:
    """An imported ONNX value: a constant array, or a tx8be value (maybe NHWC)."""

    const: Array | None = None
    value: Value | None = None
    nhwc: bool = False

    @property
    def rank(self) -> int:
        if self.const is not None:
            return int(self.const.ndim)
        assert self.value is not None
        return self.value.type.rank


def _import_onnx() -> Any:
    try:
        import onnx
    except ImportError as err:  # pragma: no cover - onnx is a runtime dependency
        raise Tx8labError("ONNX import needs the 'onnx' package: pip install onnx") from err
    return onnx


def _read_model(source: Any) -> tuple[Any, str]:
    onnx = _import_onnx()
    if isinstance(source, onnx.ModelProto):
        return source, "<ModelProto>"
    path = Path(source)
    if not path.exists():
        raise Tx8labError(f"{path}: no such ONNX file")
    try:
        model = onnx.load(str(path))
    except Exception as err:  # onnx raises DecodeError, RuntimeError, ... for bad files
        raise Tx8labError(
            f"{path}: cannot read the ONNX model ({type(err).__name__}: {err}); "
            "the file is corrupt or truncated, or not an ONNX model"
        ) from None
    if not model.graph.node and not model.graph.output:
        raise Tx8labError(f"{path}: the file holds no ONNX graph (empty or not an ONNX model)")
    return model, str(path)


def _fix_input_shapes(model: Any, where: str, input_shapes: Mapping[str, Sequence[int]]) -> Any:
    onnx = _import_onnx()
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    initializers = {t.name for t in fixed.graph.initializer}
    names = [i.name for i in fixed.graph.input if i.name not in initializers]
    for name in input_shapes:
        if name not in names:
            raise Tx8labError(
                f"{where}: input_shapes names {name!r}, the model's inputs are {names}"
            )
    for inp in fixed.graph.input:
        if inp.name in initializers:
            continue
        dims = inp.type.tensor_type.shape.dim
        given = input_shapes.get(inp.name)
        if given is not None:
            if len(given) != len(dims):
                raise Tx8labError(
                    f"{where}: input {inp.name!r} has rank {len(dims)}, input_shapes gives "
                    f"{tuple(given)}"
                )
            for dim, value in zip(dims, given, strict=True):
                dim.Clear()
                dim.dim_value = int(value)
            continue
        for index, dim in enumerate(dims):
            if not dim.HasField("dim_value") or dim.dim_value <= 0:
                label = dim.dim_param or "?"
                raise Tx8labError(
                    f"{where}: input {inp.name!r} has a dynamic dimension {index} ({label!r}); "
                    f"pass input_shapes={{{inp.name!r}: (...)}} with every dimension fixed"
                )
    try:
        return onnx.shape_inference.infer_shapes(fixed, strict_mode=False, data_prop=True)
    except Exception as err:
        raise Tx8labError(f"{where}: ONNX shape inference failed: {err}") from None


_ONNX_DTYPES = {
    1: "f32",
    10: "f16",
    16: "bf16",
    3: "i8",
    2: "i32",
    5: "i32",
    6: "i32",
    7: "i64",
    9: "i1",
    11: "f32",
    12: "i32",
    13: "i64",
    4: "i32",
}


class _Importer:
    def __init__(self, model: Any, where: str) -> None:
        onnx = _import_onnx()
        self.onnx = onnx
        self.model = model
        self.where = where
        self.graph = model.graph
        # dialect-prefixed, as the zoo does: mlir-opt rejects unprefixed module attributes
        name = Path(where).stem if where != "<ModelProto>" else "onnx_model"
        self.b = Builder(**{"tx8.model": name})
        self.env: dict[str, _Tensor] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.converted: dict[tuple[str, bool], Value] = {}
        self.consts: dict[tuple[int, str, bool], Value] = {}
        self.named_consts: dict[tuple[str, bool, str], Value] = {}
        self._keep: list[Array] = []
        self.opset = max(
            (o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=13
        )
        for info in [*self.graph.value_info, *self.graph.output, *self.graph.input]:
            dims = info.type.tensor_type.shape.dim
            if all(d.HasField("dim_value") for d in dims) and info.type.tensor_type.HasField(
                "shape"
            ):
                self.shapes[info.name] = tuple(int(d.dim_value) for d in dims)

    # ------------------------------------------------------------------ helpers
    def fail(self, node: Any, message: str) -> Tx8labError:
        label = f"node {node.name!r} ({node.op_type})" if node.name else f"{node.op_type} node"
        return Tx8labError(f"{self.where}: {label}: {message}")

    def attr(self, node: Any, name: str, default: Any = None) -> Any:
        for a in node.attribute:
            if a.name == name:
                return self.onnx.helper.get_attribute_value(a)
        return default

    def const_value(self, array: Array, dtype: str | None = None) -> Value:
        """A tx8be Constant for ``array`` (cached by identity and dtype)."""
        dtype = dtype or from_numpy(array.dtype)
        key = (id(array), dtype, False)
        cached = self.consts.get(key)
        if cached is None:
            cached = self.b.constant(round_to(array, dtype), dtype)
            self.consts[key] = cached
            self._keep.append(array)
        return cached

    def value(self, name: str, nhwc: bool = False, dtype: str | None = None) -> Value:
        """The tx8be value of ONNX tensor ``name`` in the requested physical layout."""
        t = self.env[name]
        if t.const is not None:
            dtype = dtype or from_numpy(t.const.dtype)
            const_key = (name, nhwc, dtype)
            if const_key not in self.named_consts:
                array = _to_nhwc_const(t.const) if nhwc else t.const
                self.named_consts[const_key] = self.b.constant(round_to(array, dtype), dtype)
            return self.named_consts[const_key]
        assert t.value is not None
        if t.value.type.rank != 4 or t.nhwc == nhwc:
            return t.value
        key = (name, nhwc)
        if key not in self.converted:
            perm = _NCHW_TO_NHWC if nhwc else _NHWC_TO_NCHW
            self.converted[key] = self.b.op("Transpose", t.value, perm=perm)
        return self.converted[key]

    def logical_shape(self, name: str) -> tuple[int, ...]:
        t = self.env[name]
        if t.const is not None:
            return tuple(t.const.shape)
        assert t.value is not None
        shape = t.value.type.shape
        if t.nhwc:
            return (shape[0], shape[3], shape[1], shape[2])
        return shape

    def const_input(self, node: Any, index: int, what: str) -> Array | None:
        if index >= len(node.input) or not node.input[index]:
            return None
        t = self.env.get(node.input[index])
        if t is None or t.const is None:
            raise self.fail(node, f"{what} (input {index}) must be a constant")
        return t.const

    def set(self, name: str, value: Value, nhwc: bool = False) -> None:
        self.env[name] = _Tensor(value=value, nhwc=nhwc and value.type.rank == 4)

    # ------------------------------------------------------------------ folding
    def try_fold(self, node: Any) -> bool:
        inputs = [n for n in node.input if n]
        if node.op_type == "Shape" and inputs and inputs[0] in self.env:
            shape = np.array(self.logical_shape(inputs[0]), dtype=np.int64)
            start = int(self.attr(node, "start", 0))
            end = self.attr(node, "end", None)
            self.env[node.output[0]] = _Tensor(const=shape[start:end])
            return True
        if node.op_type == "Size" and inputs and inputs[0] in self.env:
            size = int(np.prod(self.logical_shape(inputs[0])))
            self.env[node.output[0]] = _Tensor(const=np.array(size, dtype=np.int64))
            return True
        if node.op_type in CONTROL_FLOW:
            return False
        if not all(self.env.get(n, _Tensor()).const is not None for n in inputs):
            return False
        if node.op_type == "Constant":
            return self._fold_with_reference(node, [])
        return self._fold_with_reference(node, [self.env[n].const for n in inputs])

    def _fold_with_reference(self, node: Any, arrays: list[Any]) -> bool:
        from onnx.reference import ReferenceEvaluator

        helper = self.onnx.helper
        inputs = [
            helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for name, a in zip([n for n in node.input if n], arrays, strict=True)
        ]
        outputs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
        graph = helper.make_graph([node], "fold", inputs, outputs)
        model = helper.make_model(graph, opset_imports=list(self.model.opset_import))
        try:
            results = ReferenceEvaluator(model).run(
                None, dict(zip([n for n in node.input if n], arrays, strict=True))
            )
        except Exception as err:
            raise self.fail(node, f"cannot fold this constant subgraph: {err}") from None
        for name, result in zip([o for o in node.output if o], results, strict=True):
            self.env[name] = _Tensor(const=np.asarray(result))
        return True

    # ------------------------------------------------------------------ import
    def run(self) -> Module:
        for init in self.graph.initializer:
            self.env[init.name] = _Tensor(const=self.onnx.numpy_helper.to_array(init))
        initializers = {t.name for t in self.graph.initializer}
        for inp in self.graph.input:
            if inp.name in initializers:
                continue
            elem = inp.type.tensor_type.elem_type
            dtype = _ONNX_DTYPES.get(elem)
            if dtype is None:
                raise Tx8labError(
                    f"{self.where}: input {inp.name!r} has an unsupported type {elem}"
                )
            shape = tuple(int(d.dim_value) for d in inp.type.tensor_type.shape.dim)
            self.env[inp.name] = _Tensor(value=self.b.input(shape, dtype))
        for node in self.graph.node:
            if node.op_type in CONTROL_FLOW:
                raise self.fail(node, _CONTROL_FLOW_HINT)
            if node.domain not in ("", "ai.onnx"):
                raise self.fail(node, f"operator domain {node.domain!r} is not supported")
            if self.try_fold(node):
                continue
            handler = _HANDLERS.get(node.op_type)
            if handler is None:
                supported = ", ".join(sorted(_HANDLERS))
                raise self.fail(
                    node,
                    f"unsupported ONNX op {node.op_type!r}; supported: {supported} "
                    "(plus any op whose inputs are all constants, which is folded)",
                )
            missing = [n for n in node.input if n and n not in self.env]
            if missing:
                raise self.fail(node, f"uses {missing[0]!r}, which no earlier node produces")
            try:
                handler(self, node)
            except Tx8labError as err:
                text = str(err)
                if text.startswith(self.where):
                    raise
                raise self.fail(node, text) from None
        outputs = []
        for out in self.graph.output:
            t = self.env.get(out.name)
            if t is None:
                raise Tx8labError(f"{self.where}: graph output {out.name!r} is never produced")
            outputs.append(self.value(out.name, nhwc=False))
        self.b.output(*outputs)
        return self.b.finish()


_CONTROL_FLOW_HINT = (
    "control flow (If/Loop/Scan) is not supported: export the model with the branch or loop "
    "unrolled (e.g. torch.onnx.export with fixed inputs)"
)


def _reject_control_flow(model: Any, where: str) -> None:
    """Fail on the first top-level If/Loop/Scan node, before asking for input shapes.

    No control-flow node is ever imported, so this is the error the model will end with;
    giving it first spares fixing dynamic dimensions only to fail here afterwards.
    """
    nodes = [n for n in model.graph.node if n.op_type in CONTROL_FLOW]
    if not nodes:
        return
    node = nodes[0]
    label = f"node {node.name!r} ({node.op_type})" if node.name else f"{node.op_type} node"
    more = f" (the graph has {len(nodes)} control-flow nodes)" if len(nodes) > 1 else ""
    raise Tx8labError(f"{where}: {label}: {_CONTROL_FLOW_HINT}{more}")


def _to_nhwc_const(array: Array) -> Array:
    """A constant operand of an op on NHWC values: broadcast to rank 4, then permuted."""
    if array.ndim > 4:
        raise Tx8labError(f"a constant of rank {array.ndim} cannot meet a 4-D feature map")
    array = array.reshape((1,) * (4 - array.ndim) + array.shape)
    return np.ascontiguousarray(array.transpose(_NCHW_TO_NHWC))


def _axis(axis: int, rank: int, nhwc: bool) -> int:
    axis = axis + rank if axis < 0 else axis
    return _TO_NHWC_AXIS[axis] if nhwc else axis


# ---------------------------------------------------------------------- handlers

Handler = Callable[[_Importer, Any], None]
_HANDLERS: dict[str, Handler] = {}


def _handles(*op_types: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for op_type in op_types:
            _HANDLERS[op_type] = fn
        return fn

    return register


_UNARY = {
    "Relu": "Relu",
    "Sigmoid": "Sigmoid",
    "Tanh": "Tanh",
    "Erf": "Erf",
    "Sqrt": "Sqrt",
    "Exp": "Exp",
    "Log": "Log",
    "Neg": "Neg",
    "Abs": "Abs",
    "Reciprocal": "Reciprocal",
    "HardSwish": "HardSwish",
}


@_handles(*_UNARY, "Identity", "Dropout", "HardSigmoid", "Gelu", "Clip", "LeakyRelu")
def _unary(im: _Importer, node: Any) -> None:
    src = im.env[node.input[0]]
    nhwc = src.nhwc
    x = im.value(node.input[0], nhwc=nhwc)
    op = node.op_type
    if op in ("Identity", "Dropout"):
        out = x
    elif op == "HardSigmoid":
        out = im.b.op(
            "HardSigmoid",
            x,
            alpha=float(im.attr(node, "alpha", 0.2)),
            beta=float(im.attr(node, "beta", 0.5)),
        )
    elif op == "Gelu":
        out = im.b.op("Gelu", x, approximate=str(im.attr(node, "approximate", "none")))
    elif op == "Clip":
        if im.opset < 11:
            low, high = im.attr(node, "min", -np.inf), im.attr(node, "max", np.inf)
        else:
            lo = im.const_input(node, 1, "min")
            hi = im.const_input(node, 2, "max")
            low = float(lo) if lo is not None else -np.inf
            high = float(hi) if hi is not None else np.inf
        out = im.b.op("Clip", x, min=float(low), max=float(high))
    elif op == "LeakyRelu":
        alpha = np.array(float(im.attr(node, "alpha", 0.01)), dtype=np.float32)
        scaled = im.b.op("Mul", x, im.const_value(alpha, x.type.dtype))
        out = im.b.op("Max", x, scaled)
    else:
        out = im.b.op(_UNARY[op], x)
    im.set(node.output[0], out, nhwc)


_BINARY = {
    "Add": "Add",
    "Sub": "Sub",
    "Mul": "Mul",
    "Div": "Div",
    "Pow": "Pow",
    "Max": "Max",
    "Min": "Min",
    "Sum": "Add",
}
_COMPARE = {
    "Equal": "eq",
    "Less": "lt",
    "LessOrEqual": "le",
    "Greater": "gt",
    "GreaterOrEqual": "ge",
}


def _operands_same_layout(im: _Importer, names: Sequence[str]) -> tuple[list[Value], bool]:
    """Operands of an elementwise op, all NHWC if any rank-4 operand is, same dtype."""
    tensors = [im.env[n] for n in names]
    nhwc = any(t.nhwc for t in tensors)
    ranks = {len(im.logical_shape(n)) for n in names}
    if nhwc and max(ranks) != 4:
        nhwc = False
    dtype = next((t.value.type.dtype for t in tensors if t.value is not None), None)
    values = []
    for name, t in zip(names, tensors, strict=True):
        if t.const is not None:
            values.append(im.value(name, nhwc=nhwc, dtype=dtype))
        elif nhwc and t.value is not None and t.value.type.rank < 4:
            shape = (1,) * (4 - t.value.type.rank) + t.value.type.shape
            v = im.b.op("Reshape", t.value, shape=shape)
            values.append(im.b.op("Transpose", v, perm=_NCHW_TO_NHWC))
        else:
            values.append(im.value(name, nhwc=nhwc))
    return values, nhwc


@_handles(*_BINARY, *_COMPARE)
def _binary(im: _Importer, node: Any) -> None:
    names = [n for n in node.input if n]
    values, nhwc = _operands_same_layout(im, names)
    if node.op_type in _COMPARE:
        out = im.b.op("Compare", values[0], values[1], mode=_COMPARE[node.op_type])
    else:
        out = values[0]
        for other in values[1:]:
            if other.type.dtype != out.type.dtype:
                other = im.b.op("Convert", other, dtype=out.type.dtype)
            out = im.b.op(_BINARY[node.op_type], out, other)
    im.set(node.output[0], out, nhwc)


@_handles("Where")
def _where(im: _Importer, node: Any) -> None:
    values, nhwc = _operands_same_layout(im, list(node.input))
    cond, a, b = values
    if cond.type.dtype != "i1":
        cond = im.b.op("Convert", cond, dtype="i1")
    if b.type.dtype != a.type.dtype:
        b = im.b.op("Convert", b, dtype=a.type.dtype)
    im.set(node.output[0], im.b.op("Where", cond, a, b), nhwc)


@_handles("Not")
def _not(im: _Importer, node: Any) -> None:
    x = im.value(node.input[0])
    false = im.const_value(np.array(False), "i1")
    im.set(node.output[0], im.b.op("Compare", x, false, mode="eq"))


def _pads_2d(
    im: _Importer,
    node: Any,
    in_hw: tuple[int, int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> tuple[int, int, int, int]:
    auto_pad = im.attr(node, "auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    if auto_pad in ("NOTSET", ""):
        pads = tuple(int(p) for p in im.attr(node, "pads", (0, 0, 0, 0)))
        if len(pads) != 4:
            raise im.fail(node, f"pads {pads} are not 2-D (only 2-D windows are supported)")
        return (pads[0], pads[1], pads[2], pads[3])
    if auto_pad == "VALID":
        return (0, 0, 0, 0)
    total = []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations, strict=True):
        out = -(-size // s)
        total.append(max(0, (out - 1) * s + (k - 1) * d + 1 - size))
    if auto_pad == "SAME_UPPER":
        return (total[0] // 2, total[1] // 2, total[0] - total[0] // 2, total[1] - total[1] // 2)
    return (total[0] - total[0] // 2, total[1] - total[1] // 2, total[0] // 2, total[1] // 2)


@_handles("Conv")
def _conv(im: _Importer, node: Any) -> None:
    shape = im.logical_shape(node.input[0])
    if len(shape) != 4:
        raise im.fail(node, f"only 2-D convolution is supported (input shape {shape})")
    weight = im.const_input(node, 1, "the weight")
    assert weight is not None
    kernel = tuple(int(k) for k in weight.shape[2:])
    strides = tuple(int(s) for s in im.attr(node, "strides", (1, 1)))
    dilations = tuple(int(d) for d in im.attr(node, "dilations", (1, 1)))
    pads = _pads_2d(im, node, (shape[2], shape[3]), kernel, strides, dilations)
    x = im.value(node.input[0], nhwc=True)
    w = im.const_value(np.ascontiguousarray(weight.transpose(0, 2, 3, 1)), x.type.dtype)
    operands = [x, w]
    bias = im.const_input(node, 2, "the bias")
    if bias is not None:
        operands.append(im.const_value(bias, x.type.dtype))
    out = im.b.op(
        "Conv2d",
        *operands,
        strides=strides,
        pads=pads,
        dilations=dilations,
        group=int(im.attr(node, "group", 1)),
    )
    im.set(node.output[0], out, nhwc=True)


def _conv_transpose_pads(
    im: _Importer,
    node: Any,
    in_hw: tuple[int, int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out_pad: Sequence[int],
) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) of a ConvTranspose, from pads, auto_pad or output_shape."""
    auto_pad = im.attr(node, "auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    output_shape = im.attr(node, "output_shape", None)
    if output_shape is None and auto_pad in ("NOTSET", "", "VALID"):
        if auto_pad == "VALID":
            return (0, 0, 0, 0)
        pads = tuple(int(p) for p in im.attr(node, "pads", (0, 0, 0, 0)))
        if len(pads) != 4:
            raise im.fail(node, f"pads {pads} are not 2-D (only 2-D windows are supported)")
        return (pads[0], pads[1], pads[2], pads[3])
    if output_shape is not None:
        target = [int(d) for d in output_shape][-2:]
    else:
        target = [size * s for size, s in zip(in_hw, strides, strict=True)]
    lows, highs = [], []
    for size, k, s, d, op, out in zip(
        in_hw, kernel, strides, dilations, out_pad, target, strict=True
    ):
        total = s * (size - 1) + op + (k - 1) * d + 1 - out
        if total < 0:
            raise im.fail(
                node, f"output_shape {tuple(target)} is larger than the full transposed convolution"
            )
        if auto_pad == "SAME_UPPER":
            lows.append(total // 2)
            highs.append(total - total // 2)
        else:
            lows.append(total - total // 2)
            highs.append(total // 2)
    return (lows[0], lows[1], highs[0], highs[1])


@_handles("ConvTranspose")
def _conv_transpose(im: _Importer, node: Any) -> None:
    """ConvTranspose as tx8be Conv2d (there is no transposed-convolution kind).

    kernel == stride, no padding, no dilation (the usual 2x upsampler): a 1x1 Conv2d to
    ``KH*KW*Cout`` channels, then depth-to-space (Reshape, Transpose, Reshape): no wasted
    MACs. Otherwise: insert ``stride - 1`` zeros between input pixels (Reshape, Pad,
    Reshape), then a stride-1 Conv2d with the spatially flipped, in/out-swapped weight and
    padding ``dilation * (K - 1) - pad`` (a negative amount crops the result with Slice).
    """
    shape = im.logical_shape(node.input[0])
    if len(shape) != 4:
        raise im.fail(node, f"only 2-D transposed convolution is supported (input shape {shape})")
    weight = im.const_input(node, 1, "the weight")
    assert weight is not None
    group = int(im.attr(node, "group", 1))
    n, cin, h, w_in = shape
    cog, kh, kw = (int(d) for d in weight.shape[1:])
    cout = cog * group
    cig = cin // group
    kernel = (kh, kw)
    strides = tuple(int(s) for s in im.attr(node, "strides", (1, 1)))
    dilations = tuple(int(d) for d in im.attr(node, "dilations", (1, 1)))
    out_pad = tuple(int(p) for p in im.attr(node, "output_padding", (0, 0)))
    if len(strides) != 2 or len(dilations) != 2 or len(out_pad) != 2:
        raise im.fail(node, "only 2-D transposed convolution is supported")
    pads = _conv_transpose_pads(im, node, (h, w_in), kernel, strides, dilations, out_pad)
    x = im.value(node.input[0], nhwc=True)
    dtype = x.type.dtype
    bias = im.const_input(node, 2, "the bias")
    b = im.b
    if (
        kernel == strides
        and pads == (0, 0, 0, 0)
        and dilations == (1, 1)
        and out_pad == (0, 0)
        and group == 1
    ):
        # w[ci, co, a, b] -> w'[(a, b, co), 1, 1, ci]
        w1 = np.ascontiguousarray(weight.transpose(2, 3, 1, 0)).reshape(kh * kw * cout, 1, 1, cin)
        operands = [x, im.const_value(w1, dtype)]
        if bias is not None:
            operands.append(im.const_value(np.tile(bias, kh * kw), dtype))
        y = b.op("Conv2d", *operands)
        y = b.op("Reshape", y, shape=(n, h, w_in, kh, kw, cout))
        y = b.op("Transpose", y, perm=(0, 1, 3, 2, 4, 5))
        im.set(node.output[0], b.op("Reshape", y, shape=(n, h * kh, w_in * kw, cout)), nhwc=True)
        return
    sh, sw = strides
    if (sh, sw) != (1, 1):
        # zero insertion: [N,H,W,C] -> [N,H,1,W,1,C] -> pad -> [N,H*sh,W*sw,C]; the last
        # sh-1 (sw-1) rows (columns) are zeros past the end, taken off the high padding below
        x = b.op("Reshape", x, shape=(n, h, 1, w_in, 1, cin))
        x = b.op("Pad", x, pads=(0, 0, 0, 0, 0, 0, 0, 0, sh - 1, 0, sw - 1, 0))
        x = b.op("Reshape", x, shape=(n, h * sh, w_in * sw, cin))
    # w[g*cig + ci, co, a, b] -> w'[g*cog + co, KH-1-a, KW-1-b, ci]
    wg = weight.reshape(group, cig, cog, kh, kw)[:, :, :, ::-1, ::-1]
    w2 = np.ascontiguousarray(wg.transpose(0, 2, 3, 4, 1)).reshape(cout, kh, kw, cig)
    dh, dw = dilations
    conv_pads = [
        dh * (kh - 1) - pads[0],
        dw * (kw - 1) - pads[1],
        dh * (kh - 1) - pads[2] + out_pad[0] - (sh - 1),
        dw * (kw - 1) - pads[3] + out_pad[1] - (sw - 1),
    ]
    operands = [x, im.const_value(w2, dtype)]
    if bias is not None:
        operands.append(im.const_value(bias, dtype))
    y = b.op(
        "Conv2d",
        *operands,
        pads=tuple(max(0, p) for p in conv_pads),
        dilations=dilations,
        group=group,
    )
    if any(p < 0 for p in conv_pads):
        _, oh, ow, _ = y.type.shape
        top, left = max(0, -conv_pads[0]), max(0, -conv_pads[1])
        bottom, right = max(0, -conv_pads[2]), max(0, -conv_pads[3])
        y = b.op("Slice", y, starts=(0, top, left, 0), ends=(n, oh - bottom, ow - right, cout))
    im.set(node.output[0], y, nhwc=True)


@_handles("BatchNormalization")
def _batchnorm(im: _Importer, node: Any) -> None:
    x = im.value(node.input[0], nhwc=len(im.logical_shape(node.input[0])) == 4)
    params = []
    for index, what in enumerate(("scale", "bias", "mean", "variance"), start=1):
        array = im.const_input(node, index, what)
        assert array is not None
        params.append(im.const_value(array.astype(np.float32), "f32"))
    out = im.b.op("BatchNorm_Inference", x, *params, epsilon=float(im.attr(node, "epsilon", 1e-5)))
    im.set(node.output[0], out, nhwc=x.type.rank == 4)


@_handles("MaxPool", "AveragePool")
def _pool(im: _Importer, node: Any) -> None:
    shape = im.logical_shape(node.input[0])
    kernel = tuple(int(k) for k in im.attr(node, "kernel_shape"))
    if len(kernel) != 2 or len(shape) != 4:
        raise im.fail(node, "only 2-D pooling is supported")
    if len(node.output) > 1 and node.output[1]:
        raise im.fail(node, "MaxPool with an Indices output is not supported")
    strides = tuple(int(s) for s in im.attr(node, "strides", (1, 1)))
    dilations = tuple(int(d) for d in im.attr(node, "dilations", (1, 1)))
    if dilations != (1, 1):
        raise im.fail(node, "dilated pooling is not supported")
    pads = _pads_2d(im, node, (shape[2], shape[3]), kernel, strides, dilations)
    x = im.value(node.input[0], nhwc=True)
    attrs: dict[str, Any] = {
        "kernel": kernel,
        "strides": strides,
        "pads": pads,
        "ceil_mode": bool(im.attr(node, "ceil_mode", 0)),
    }
    if node.op_type == "AveragePool":
        attrs["count_include_pad"] = bool(im.attr(node, "count_include_pad", 0))
    kind = "MaxPool2d" if node.op_type == "MaxPool" else "AvgPool2d"
    im.set(node.output[0], im.b.op(kind, x, **attrs), nhwc=True)


@_handles("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(im: _Importer, node: Any) -> None:
    x = im.value(node.input[0], nhwc=True)
    if node.op_type == "GlobalAveragePool":
        out = im.b.op("GlobalAvgPool", x)
    else:
        out = im.b.op("ReduceMax", x, axes=(1, 2), keepdims=True)
    im.set(node.output[0], out, nhwc=True)


@_handles("Gemm")
def _gemm(im: _Importer, node: Any) -> None:
    a = im.value(node.input[0])
    b = im.value(node.input[1], dtype=a.type.dtype)
    operands = [a, b]
    if len(node.input) > 2 and node.input[2]:
        operands.append(im.value(node.input[2], dtype=a.type.dtype))
    out = im.b.op(
        "Gemm",
        *operands,
        trans_a=bool(im.attr(node, "transA", 0)),
        trans_b=bool(im.attr(node, "transB", 0)),
        alpha=float(im.attr(node, "alpha", 1.0)),
        beta=float(im.attr(node, "beta", 1.0)),
    )
    im.set(node.output[0], out)


@_handles("MatMul")
def _matmul(im: _Importer, node: Any) -> None:
    a = im.value(node.input[0])
    b = im.value(node.input[1], dtype=a.type.dtype)
    squeeze_a = a.type.rank == 1
    squeeze_b = b.type.rank == 1
    if squeeze_a:
        a = im.b.op("Reshape", a, shape=(1, a.type.shape[0]))
    if squeeze_b:
        b = im.b.op("Reshape", b, shape=(b.type.shape[0], 1))
    out = im.b.op("MatMul", a, b)
    if squeeze_a or squeeze_b:
        shape = list(out.type.shape)
        if squeeze_b:
            shape.pop(-1)
        if squeeze_a:
            shape.pop(-2 if not squeeze_b else -1)
        out = im.b.op("Reshape", out, shape=tuple(shape))
    im.set(node.output[0], out)


def _reshape_to(im: _Importer, node: Any, shape: Sequence[int]) -> None:
    x = im.value(node.input[0])
    im.set(node.output[0], im.b.op("Reshape", x, shape=tuple(int(d) for d in shape)))


@_handles("Reshape")
def _reshape(im: _Importer, node: Any) -> None:
    target = im.const_input(node, 1, "the shape")
    assert target is not None
    in_shape = im.logical_shape(node.input[0])
    dims = [int(d) for d in target]
    if not im.attr(node, "allowzero", 0):
        dims = [in_shape[i] if d == 0 else d for i, d in enumerate(dims)]
    _reshape_to(im, node, dims)


@_handles("Flatten")
def _flatten(im: _Importer, node: Any) -> None:
    shape = im.logical_shape(node.input[0])
    axis = int(im.attr(node, "axis", 1))
    axis = axis + len(shape) if axis < 0 else axis
    _reshape_to(im, node, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))


@_handles("Squeeze", "Unsqueeze")
def _squeeze(im: _Importer, node: Any) -> None:
    out_shape = im.shapes.get(node.output[0])
    if out_shape is None:
        shape = list(im.logical_shape(node.input[0]))
        axes_in = im.const_input(node, 1, "axes") if len(node.input) > 1 else None
        axes = [int(a) for a in (axes_in if axes_in is not None else im.attr(node, "axes", []))]
        if node.op_type == "Squeeze":
            rank = len(shape)
            drop = {a + rank if a < 0 else a for a in axes} or {
                i for i, d in enumerate(shape) if d == 1
            }
            out_shape = tuple(d for i, d in enumerate(shape) if i not in drop)
        else:
            rank = len(shape) + len(axes)
            for a in sorted(a + rank if a < 0 else a for a in axes):
                shape.insert(a, 1)
            out_shape = tuple(shape)
    _reshape_to(im, node, out_shape)


@_handles("Transpose")
def _transpose(im: _Importer, node: Any) -> None:
    x = im.value(node.input[0])
    perm = im.attr(node, "perm", None)
    perm = tuple(int(p) for p in perm) if perm is not None else tuple(range(x.type.rank))[::-1]
    im.set(node.output[0], im.b.op("Transpose", x, perm=perm))


@_handles("Concat")
def _concat(im: _Importer, node: Any) -> None:
    names = [n for n in node.input if n]
    values, nhwc = _operands_same_layout(im, names)
    rank = values[0].type.rank
    axis = _axis(int(im.attr(node, "axis")), rank, nhwc)
    im.set(node.output[0], im.b.op("Concatenate", *values, axis=axis), nhwc)


@_handles("Split")
def _split(im: _Importer, node: Any) -> None:
    nhwc = im.env[node.input[0]].nhwc
    x = im.value(node.input[0], nhwc=nhwc)
    logical = im.logical_shape(node.input[0])
    axis_logical = int(im.attr(node, "axis", 0))
    axis_logical += len(logical) if axis_logical < 0 else 0
    sizes_in = im.const_input(node, 1, "split") if len(node.input) > 1 else None
    sizes = [int(s) for s in (sizes_in if sizes_in is not None else im.attr(node, "split", []))]
    if not sizes:
        count = len(node.output)
        total = logical[axis_logical]
        chunk = -(-total // count)
        sizes = [chunk] * (count - 1) + [total - chunk * (count - 1)]
    outs = im.b.op("Split", x, axis=_axis(axis_logical, len(logical), nhwc), sizes=tuple(sizes))
    outs = outs if isinstance(outs, tuple) else (outs,)
    for name, value in zip(node.output, outs, strict=True):
        im.set(name, value, nhwc)


@_handles("Slice")
def _slice(im: _Importer, node: Any) -> None:
    nhwc = im.env[node.input[0]].nhwc
    x = im.value(node.input[0], nhwc=nhwc)
    logical = im.logical_shape(node.input[0])
    rank = len(logical)
    starts_in = im.const_input(node, 1, "starts")
    ends_in = im.const_input(node, 2, "ends")
    assert starts_in is not None
    assert ends_in is not None
    axes_in = im.const_input(node, 3, "axes")
    steps_in = im.const_input(node, 4, "steps")
    axes = [int(a) for a in (axes_in if axes_in is not None else range(len(starts_in)))]
    steps_l = [int(s) for s in (steps_in if steps_in is not None else [1] * len(axes))]
    starts = [0] * rank
    ends = list(logical)
    steps = [1] * rank
    for a, s, e, st in zip(axes, starts_in, ends_in, steps_l, strict=True):
        a = a + rank if a < 0 else a
        if st <= 0:
            raise im.fail(node, f"step {st} on axis {a}: only positive steps are supported")
        size = logical[a]
        s, e = int(s), int(e)
        s = min(max(s + size if s < 0 else s, 0), size)
        e = min(max(e + size if e < 0 else e, 0), size)
        starts[a], ends[a], steps[a] = s, e, st
    if nhwc:
        perm = _NCHW_TO_NHWC
        starts = [starts[p] for p in perm]
        ends = [ends[p] for p in perm]
        steps = [steps[p] for p in perm]
    out = im.b.op("Slice", x, starts=tuple(starts), ends=tuple(ends), steps=tuple(steps))
    im.set(node.output[0], out, nhwc)


@_handles("Pad")
def _pad(im: _Importer, node: Any) -> None:
    mode = im.attr(node, "mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode != "constant":
        raise im.fail(node, f"pad mode {mode!r} is not supported (constant only)")
    nhwc = im.env[node.input[0]].nhwc
    x = im.value(node.input[0], nhwc=nhwc)
    rank = x.type.rank
    if im.opset < 11:
        pads = [int(p) for p in im.attr(node, "pads")]
        value = float(im.attr(node, "value", 0.0))
    else:
        pads_in = im.const_input(node, 1, "pads")
        assert pads_in is not None
        pads = [int(p) for p in pads_in]
        cval = im.const_input(node, 2, "constant_value")
        value = float(cval) if cval is not None and cval.size else 0.0
        axes_in = im.const_input(node, 3, "axes")
        if axes_in is not None:
            full = [0] * (2 * rank)
            axes = [int(a) + rank if int(a) < 0 else int(a) for a in axes_in]
            for i, a in enumerate(axes):
                full[a], full[a + rank] = pads[i], pads[i + len(axes)]
            pads = full
    if nhwc:
        lows = [pads[p] for p in _NCHW_TO_NHWC]
        highs = [pads[rank + p] for p in _NCHW_TO_NHWC]
        pads = lows + highs
    im.set(node.output[0], im.b.op("Pad", x, pads=tuple(pads), value=value), nhwc)


@_handles("Resize", "Upsample")
def _resize(im: _Importer, node: Any) -> None:
    mode = im.attr(node, "mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    in_shape = im.logical_shape(node.input[0])
    out_shape = im.shapes.get(node.output[0])
    if out_shape is None:
        scales = im.const_input(node, 2 if node.op_type == "Resize" else 1, "scales")
        if scales is None or scales.size == 0:
            sizes = im.const_input(node, 3, "sizes")
            if sizes is None:
                raise im.fail(node, "needs constant scales or sizes")
            out_shape = tuple(int(s) for s in sizes)
        else:
            out_shape = tuple(round(float(d * s)) for d, s in zip(in_shape, scales, strict=True))
    if mode != "nearest" or len(in_shape) != 4 or out_shape[:2] != in_shape[:2]:
        raise im.fail(node, "only 'nearest' resizing of H and W is supported")
    if out_shape[2] % in_shape[2] or out_shape[3] % in_shape[3]:
        raise im.fail(node, f"only integer scales are supported ({in_shape} -> {out_shape})")
    if node.op_type == "Resize" and im.opset >= 11:
        ctm = im.attr(node, "coordinate_transformation_mode", b"half_pixel")
        ctm = ctm.decode() if isinstance(ctm, bytes) else str(ctm)
        rounding = im.attr(node, "nearest_mode", b"round_prefer_floor")
        rounding = rounding.decode() if isinstance(rounding, bytes) else str(rounding)
        for axis in (2, 3):
            if not _nearest_is_repeat(ctm, rounding, in_shape[axis], out_shape[axis]):
                raise im.fail(
                    node,
                    f"nearest resize with coordinate_transformation_mode={ctm!r} and "
                    f"nearest_mode={rounding!r} does not repeat each pixel "
                    f"{out_shape[axis] // in_shape[axis]} times ({in_shape} -> {out_shape}); "
                    "tx8be Resize only repeats pixels (e.g. 'asymmetric' with 'floor', or "
                    "'half_pixel' with 'round_prefer_floor')",
                )
    x = im.value(node.input[0], nhwc=True)
    out = im.b.op(
        "Resize",
        x,
        scale_h=out_shape[2] // in_shape[2],
        scale_w=out_shape[3] // in_shape[3],
        mode="nearest",
    )
    im.set(node.output[0], out, nhwc=True)


def _nearest_is_repeat(ctm: str, rounding: str, in_size: int, out_size: int) -> bool:
    """Whether ONNX nearest Resize (opset >= 11) maps output i to input i // scale."""
    from fractions import Fraction
    from math import ceil, floor

    scale = Fraction(out_size, in_size)
    for i in range(out_size):
        if ctm in ("half_pixel", "half_pixel_symmetric") or (
            ctm == "pytorch_half_pixel" and out_size > 1
        ):
            x = (i + Fraction(1, 2)) / scale - Fraction(1, 2)
        elif ctm == "pytorch_half_pixel":
            x = Fraction(0)
        elif ctm == "asymmetric":
            x = i / scale
        elif ctm == "tf_half_pixel_for_nn":
            x = (i + Fraction(1, 2)) / scale
        elif ctm == "align_corners":
            x = Fraction(i * (in_size - 1), out_size - 1) if out_size > 1 else Fraction(0)
        else:  # tf_crop_and_resize needs roi; anything else is unknown
            return False
        if rounding == "round_prefer_floor":
            index = ceil(x - Fraction(1, 2))
        elif rounding == "round_prefer_ceil":
            index = floor(x + Fraction(1, 2))
        elif rounding == "floor":
            index = floor(x)
        elif rounding == "ceil":
            index = ceil(x)
        else:
            return False
        if min(max(index, 0), in_size - 1) != i // int(scale):
            return False
    return True


@_handles("Softmax")
def _softmax(im: _Importer, node: Any) -> None:
    nhwc = im.env[node.input[0]].nhwc
    x = im.value(node.input[0], nhwc=nhwc)
    rank = x.type.rank
    axis = int(im.attr(node, "axis", -1 if im.opset >= 13 else 1))
    axis = axis + rank if axis < 0 else axis
    if im.opset < 13 and axis != rank - 1:
        raise im.fail(node, "opset < 13 Softmax over a non-last axis is not supported")
    im.set(node.output[0], im.b.op("Softmax", x, axis=_axis(axis, rank, nhwc)), nhwc)


@_handles("LayerNormalization")
def _layernorm(im: _Importer, node: Any) -> None:
    x = im.value(node.input[0])
    gamma = im.value(node.input[1], dtype=x.type.dtype)
    if len(node.input) > 2 and node.input[2]:
        beta = im.value(node.input[2], dtype=x.type.dtype)
    else:
        beta = im.const_value(np.zeros(gamma.type.shape, np.float32), x.type.dtype)
    out = im.b.op(
        "LayerNorm",
        x,
        gamma,
        beta,
        axis=int(im.attr(node, "axis", -1)),
        epsilon=float(im.attr(node, "epsilon", 1e-5)),
    )
    im.set(node.output[0], out)


@_handles("ReduceMean", "ReduceSum", "ReduceMax")
def _reduce(im: _Importer, node: Any) -> None:
    nhwc = im.env[node.input[0]].nhwc
    x = im.value(node.input[0], nhwc=nhwc)
    rank = x.type.rank
    axes_attr = im.attr(node, "axes", None)
    if axes_attr is None and len(node.input) > 1 and node.input[1]:
        axes_attr = im.const_input(node, 1, "axes")
    axes = [int(a) for a in axes_attr] if axes_attr is not None else []
    if not axes:
        if im.attr(node, "noop_with_empty_axes", 0):
            im.set(node.output[0], x, nhwc)
            return
        axes = list(range(rank))
    keepdims = bool(im.attr(node, "keepdims", 1))
    if not keepdims and nhwc:
        x = im.value(node.input[0], nhwc=False)
        nhwc = False
    kind = {"ReduceMean": "ReduceMean", "ReduceSum": "ReduceSum", "ReduceMax": "ReduceMax"}
    out = im.b.op(
        kind[node.op_type],
        x,
        axes=tuple(sorted(_axis(a, rank, nhwc) for a in axes)),
        keepdims=keepdims,
    )
    im.set(node.output[0], out, nhwc)


@_handles("Gather")
def _gather(im: _Importer, node: Any) -> None:
    data = im.value(node.input[0])
    indices_t = im.env[node.input[1]]
    axis = int(im.attr(node, "axis", 0))
    if indices_t.const is not None:
        idx = indices_t.const.astype(np.int64)
        size = data.type.shape[axis]
        idx = np.where(idx < 0, idx + size, idx)
        indices = im.const_value(idx, "i64")
    else:
        indices = im.value(node.input[1])
    im.set(node.output[0], im.b.op("Gather", data, indices, axis=axis))


@_handles("Cast")
def _cast(im: _Importer, node: Any) -> None:
    nhwc = im.env[node.input[0]].nhwc
    x = im.value(node.input[0], nhwc=nhwc)
    to = _ONNX_DTYPES.get(int(im.attr(node, "to")))
    if to is None:
        raise im.fail(node, f"cast to ONNX type {im.attr(node, 'to')} is not supported")
    out = x if to == x.type.dtype else im.b.op("Convert", x, dtype=to)
    im.set(node.output[0], out, nhwc)


@_handles("Expand")
def _expand(im: _Importer, node: Any) -> None:
    x = im.value(node.input[0])
    shape = im.const_input(node, 1, "the shape")
    assert shape is not None
    target = tuple(int(d) for d in np.broadcast_shapes(x.type.shape, tuple(int(d) for d in shape)))
    im.set(node.output[0], im.b.op("Broadcast", x, shape=target))


def load(
    source: str | Path | Any, input_shapes: Mapping[str, Sequence[int]] | None = None
) -> Module:
    """Import an ONNX model (a path or an ``onnx.ModelProto``) as a tx8be module."""
    model, where = _read_model(source)
    _reject_control_flow(model, where)
    model = _fix_input_shapes(model, where, dict(input_shapes or {}))
    return _Importer(model, where).run()


def supported_ops() -> list[str]:
    """ONNX op types the importer maps (others fold when their inputs are constants)."""
    return sorted(_HANDLERS)
