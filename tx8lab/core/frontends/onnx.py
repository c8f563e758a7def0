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
  it, and is reported before anything else (even before missing ``input_shapes``) except a
  version the installed onnx package does not know; a dynamic dimension asks for
  ``input_shapes``.

Bad input. The import either maps the model faithfully or raises ``Tx8labError``; it makes
no silent conversion. Where the ONNX spec leaves room, the readings are:

- Versions: an IR version above ``onnx.IR_VERSION``, a missing IR version, or a
  default-domain opset outside ``1..onnx.defs.onnx_opset_version()`` is refused (the
  package's schemas and reference evaluator give the ops their meaning).
- Names (SSA): a name is defined once, by a graph input, an initializer or one node
  output; an initializer that is also a graph input is the input's default and is used as
  the constant. An empty input name is an omitted *optional* input; at a required position
  it is an error naming the node. Every default-domain node is checked against its schema
  (arity, attribute types) with ``onnx.checker.check_node``, and its inputs against the
  schema's type constraints: ``Add(float, int32)`` is an error, not a conversion.
- Enum-valued attributes (``auto_pad``, ``mode``, ``coordinate_transformation_mode``,
  ``dtype`` of the random ops, ...) must hold a value ONNX defines; int flags the spec
  describes as booleans (``keepdims``, ``transA``, ``ceil_mode``, ...) must be 0 or 1, as
  runtimes disagree on other values.
- Element types: float32/16, bfloat16, int8/32/64 and bool map one to one; uint8, int16
  and uint16 graph inputs and initializers widen to i32 (every value kept), and each
  widening is reported: the module's ``tx8.import_notes`` attribute lists one line per
  converted tensor (:attr:`~tx8lab.core.ir.Module.import_notes`; ``tx8lab run`` prints
  them and the report carries them as ``import_notes``). double, uint32 and uint64 have
  no tx8be type holding all their values and are refused, as graph inputs, outputs and
  Cast targets; so is a Cast to uint8/int16/uint16 (ONNX wraps, i32 would not). A graph
  output's declared element type must be the computed one; a declared shape
  (value_info or output) that contradicts the computed one is an error. When
  ``input_shapes`` is given, the declared downstream shapes were exported for other sizes
  and are inferred afresh instead.
- Shapes: every graph input needs a shape (``input_shapes`` may give it, rank included);
  a dimension of 0 (an empty tensor) or a negative one is an error saying so, not
  "dynamic". No tensor may exceed 64 GiB (``MAX_TENSOR_BYTES``, the biggest preset's
  DDR): the size is computed with Python integers, so an element count past int64 is the
  same clear error at import.
- Folding budget: before folding a node, the size of its result is computed from the
  inferred shape (or from the operands for ConstantOfShape, Expand, Tile, Range). A result
  larger than both its constant operands and ``max_fold_bytes`` (default 1 MiB, as
  ``fold-constants.max_bytes``) is not folded: an op the import maps (Expand, MatMul, ...)
  becomes tx8be ops, which the fold-constants pass bounds by its own ``max_bytes``; any
  other op is an error giving the size and naming ``max_fold_bytes``.
- Anything a handler trips over that is not a ``Tx8labError`` (an axis out of range, a
  malformed attribute list) is reported as one, naming the node.
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
from tx8lab.core.ir import IMPORT_NOTES_ATTR, Module, Value
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
        raise Tx8labError(
            f"{path}: the file holds no ONNX graph (empty or not an ONNX model); "
            "give a .onnx file written by an exporter (e.g. torch.onnx.export)"
        )
    return model, str(path)


def _check_text(model: Any, where: str) -> None:
    """Every name the import reads is text.

    Protobuf hands back bytes for a string field that is not valid UTF-8 (a corrupt file),
    which nothing downstream expects.
    """

    def check(value: Any, what: str) -> None:
        if not isinstance(value, str):
            raise Tx8labError(
                f"{where}: {what} {value!r} is not UTF-8 text; the file is corrupt: re-export it"
            )

    for opset in model.opset_import:
        check(opset.domain, "an opset_import domain")
    graph = model.graph
    for info in [*graph.input, *graph.output, *graph.value_info]:
        check(info.name, "a tensor name")
    for init in graph.initializer:
        check(init.name, "an initializer name")
    for node in graph.node:
        for text in (node.op_type, node.name, node.domain):
            check(text, "a node field")
        for name in [*node.input, *node.output]:
            check(name, f"an operand of node {node.name!r}")
        for a in node.attribute:
            check(a.name, f"an attribute name of node {node.name!r}")


def _check_versions(model: Any, where: str) -> None:
    """Refuse an IR version or a default-domain opset newer than the onnx package knows.

    The package's schemas, shape inference and reference evaluator are what give an op its
    meaning here; an op from a newer opset would be read with an older meaning.
    """
    onnx = _import_onnx()
    ir = int(model.ir_version)
    if ir <= 0:
        raise Tx8labError(
            f"{where}: the model has no IR version (ir_version is {ir}); "
            "re-export it, or set model.ir_version (e.g. onnx.helper.make_model does)"
        )
    if ir > onnx.IR_VERSION:
        raise Tx8labError(
            f"{where}: IR version {ir} is newer than the installed onnx package reads "
            f"({onnx.IR_VERSION}, onnx {onnx.__version__}); re-export with an older IR version "
            "or upgrade onnx"
        )
    newest = onnx.defs.onnx_opset_version()
    seen: dict[str, int] = {}
    for opset in model.opset_import:
        domain = opset.domain or "ai.onnx"
        version = int(opset.version)
        if domain in seen and seen[domain] != version:
            raise Tx8labError(
                f"{where}: opset_import lists domain {domain!r} twice (versions {seen[domain]} "
                f"and {version}); keep one"
            )
        seen[domain] = version
        if domain == "ai.onnx" and not 1 <= version <= newest:
            raise Tx8labError(
                f"{where}: default-domain opset {version} is not one the installed onnx "
                f"package knows (1..{newest}, onnx {onnx.__version__}); re-export with "
                f"opset_version <= {newest} or upgrade onnx"
            )


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
    overridden = False
    for inp in fixed.graph.input:
        if inp.name in initializers:
            continue
        if not inp.type.HasField("tensor_type"):
            raise Tx8labError(
                f"{where}: input {inp.name!r} is not a tensor (its type is "
                f"{inp.type.WhichOneof('value') or 'missing'}); only tensor inputs are supported"
            )
        tensor_type = inp.type.tensor_type
        dims = tensor_type.shape.dim
        given = input_shapes.get(inp.name)
        if given is not None:
            given = tuple(given)
            for index, value in enumerate(given):
                if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                    raise Tx8labError(
                        f"{where}: input_shapes[{inp.name!r}] = {given}: dimension {index} is "
                        "not an integer; give whole positive sizes"
                    )
                if value <= 0:
                    raise Tx8labError(
                        f"{where}: input_shapes[{inp.name!r}] = {given} has dimension {index} "
                        f"of size {value}; tx8be tensors need every size >= 1"
                    )
            if not tensor_type.HasField("shape"):
                tensor_type.shape.SetInParent()
                for _ in given:
                    dims.add()
            if len(given) != len(dims):
                raise Tx8labError(
                    f"{where}: input {inp.name!r} has rank {len(dims)}, input_shapes gives {given}"
                )
            overridden = True
            for dim, value in zip(dims, given, strict=True):
                dim.Clear()
                dim.dim_value = int(value)
        elif not tensor_type.HasField("shape"):
            raise Tx8labError(
                f"{where}: input {inp.name!r} has no shape (not even a rank); pass "
                f"input_shapes={{{inp.name!r}: (...)}} with every dimension"
            )
        for index, dim in enumerate(dims):
            if not dim.HasField("dim_value"):
                label = dim.dim_param or "?"
                raise Tx8labError(
                    f"{where}: input {inp.name!r} has a dynamic dimension {index} ({label!r}); "
                    f"pass input_shapes={{{inp.name!r}: (...)}} with every dimension fixed"
                )
            if dim.dim_value == 0:
                raise Tx8labError(
                    f"{where}: input {inp.name!r} has dimension {index} of size 0 (an empty "
                    "tensor); tx8be tensors need every size >= 1: pass input_shapes="
                    f"{{{inp.name!r}: (...)}} with positive sizes"
                )
            if dim.dim_value < 0:
                raise Tx8labError(
                    f"{where}: input {inp.name!r} has a negative dimension {index} "
                    f"({dim.dim_value}), which ONNX does not allow; fix the model or pass "
                    f"input_shapes={{{inp.name!r}: (...)}} with positive sizes"
                )
        shape = tuple(int(d.dim_value) for d in dims)
        _check_size(where, f"input {inp.name!r}", shape, tensor_type.elem_type)
    if overridden:
        # the declared shapes downstream were exported for other sizes: infer them afresh
        for info in [*fixed.graph.value_info, *fixed.graph.output]:
            if info.type.HasField("tensor_type"):
                info.type.tensor_type.ClearField("shape")
    try:
        return onnx.shape_inference.infer_shapes(fixed, strict_mode=False, data_prop=True)
    except Exception as err:
        raise Tx8labError(f"{where}: ONNX shape inference failed: {_first_line(err)}") from None


#: The largest tensor the import accepts: the DDR of the biggest TX8 preset (64 GiB). A
#: larger value cannot exist on the chip; refusing it at import spares a MemoryError (or an
#: element count past int64) in a later pass.
MAX_TENSOR_BYTES = 64 << 30

#: Default of ``load(max_fold_bytes=...)``: the same 1 MiB as ``fold-constants.max_bytes``.
MAX_FOLD_BYTES = 1 << 20


def _itemsize(elem_type: int) -> int:
    """Bytes per element of an ONNX tensor element type (8 when unknown: an upper bound)."""
    return {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}.get(
        int(elem_type), 8
    )


def _human(size: int) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.1f} {unit}"
    return f"{size} bytes"


def _check_size(where: str, what: str, shape: Sequence[int], elem_type: int) -> None:
    count = 1
    for d in shape:
        count *= int(d)
    size = count * _itemsize(elem_type)
    if size > MAX_TENSOR_BYTES:
        raise Tx8labError(
            f"{where}: {what} has shape {tuple(shape)}: {count} elements, {_human(size)}, more "
            f"than the {_human(MAX_TENSOR_BYTES)} a TX8 chip's DDR holds; use smaller sizes"
        )


#: ONNX element type -> tx8be dtype. uint8, int16 and uint16 widen to i32 (every value
#: kept); double, uint32 and uint64 have no tx8be type that holds all their values and are
#: refused (see the module docstring).
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
    4: "i32",
}

#: ONNX element types held in a wider tx8be type (uint8, uint16, int16 -> i32): reported.
_WIDENED = frozenset({2, 4, 5})


def import_notes(module: Module) -> tuple[str, ...]:
    """The conversions the ONNX import reported for ``module`` (empty: none, or not ONNX)."""
    return module.import_notes


#: Cast targets: the element types tx8be holds exactly (a cast to uint8/int16/uint16 would
#: wrap or saturate in ONNX, and i32 does neither).
_CAST_TARGETS = {1: "f32", 10: "f16", 16: "bf16", 3: "i8", 6: "i32", 7: "i64", 9: "i1"}

#: ONNX element type -> its name in schema type strings (``tensor(float)``).
_TYPE_NAMES = {
    1: "float",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    8: "string",
    9: "bool",
    10: "float16",
    11: "double",
    12: "uint32",
    13: "uint64",
    14: "complex64",
    15: "complex128",
    16: "bfloat16",
}

_REFUSED_TYPES = {
    11: "tx8be has no 64-bit float and narrowing to float32 would change values: export it "
    "as float32",
    12: "values above 2**31-1 have no tx8be type: export it as int32 or int64",
    13: "values above 2**63-1 have no tx8be type: export it as int64",
}


def _type_name(elem_type: int) -> str:
    return _TYPE_NAMES.get(int(elem_type), f"type {elem_type}")


_BOOL_INT = frozenset({0, 1})
_AUTO_PAD = frozenset({"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"})
_RANDOM_DTYPES = frozenset({1, 10, 11, 16})

#: Enum-valued attributes: (op type or "*", attribute) -> the values ONNX defines. A value
#: outside the set is refused (naming the node) instead of read as some default. Int flags
#: the spec describes as booleans accept 0 and 1 only: runtimes disagree on what 2 means.
_ENUM_ATTRS: dict[tuple[str, str], frozenset[Any]] = {
    ("*", "auto_pad"): _AUTO_PAD,
    ("Gemm", "transA"): _BOOL_INT,
    ("Gemm", "transB"): _BOOL_INT,
    ("*", "keepdims"): _BOOL_INT,
    ("*", "noop_with_empty_axes"): _BOOL_INT,
    ("*", "select_last_index"): _BOOL_INT,
    ("*", "ceil_mode"): _BOOL_INT,
    ("*", "count_include_pad"): _BOOL_INT,
    ("Reshape", "allowzero"): _BOOL_INT,
    ("Cast", "saturate"): _BOOL_INT,
    ("CumSum", "exclusive"): _BOOL_INT,
    ("CumSum", "reverse"): _BOOL_INT,
    ("TopK", "largest"): _BOOL_INT,
    ("TopK", "sorted"): _BOOL_INT,
    ("Pad", "mode"): frozenset({"constant", "reflect", "edge", "wrap"}),
    ("Resize", "mode"): frozenset({"nearest", "linear", "cubic"}),
    ("Upsample", "mode"): frozenset({"nearest", "linear"}),
    ("Resize", "coordinate_transformation_mode"): frozenset(
        {
            "half_pixel",
            "half_pixel_symmetric",
            "pytorch_half_pixel",
            "align_corners",
            "asymmetric",
            "tf_half_pixel_for_nn",
            "tf_crop_and_resize",
        }
    ),
    ("Resize", "nearest_mode"): frozenset(
        {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}
    ),
    ("Resize", "keep_aspect_ratio_policy"): frozenset({"stretch", "not_larger", "not_smaller"}),
    ("Resize", "exclude_outside"): _BOOL_INT,
    ("Resize", "antialias"): _BOOL_INT,
    ("Gelu", "approximate"): frozenset({"none", "tanh"}),
    ("DepthToSpace", "mode"): frozenset({"DCR", "CRD"}),
    ("ScatterElements", "reduction"): frozenset({"none", "add", "mul", "max", "min"}),
    ("ScatterND", "reduction"): frozenset({"none", "add", "mul", "max", "min"}),
    ("GridSample", "mode"): frozenset({"linear", "nearest", "cubic", "bilinear", "bicubic"}),
    ("GridSample", "padding_mode"): frozenset({"zeros", "border", "reflection"}),
    ("GridSample", "align_corners"): _BOOL_INT,
    ("RoiAlign", "mode"): frozenset({"avg", "max"}),
    ("RoiAlign", "coordinate_transformation_mode"): frozenset({"half_pixel", "output_half_pixel"}),
    ("NonMaxSuppression", "center_point_box"): _BOOL_INT,
    ("RandomNormal", "dtype"): _RANDOM_DTYPES,
    ("RandomUniform", "dtype"): _RANDOM_DTYPES,
    ("RandomNormalLike", "dtype"): _RANDOM_DTYPES,
    ("RandomUniformLike", "dtype"): _RANDOM_DTYPES,
    ("Bernoulli", "dtype"): frozenset(_TYPE_NAMES) - {8, 14, 15},
    ("EyeLike", "dtype"): frozenset(_TYPE_NAMES) - {8, 14, 15},
    ("Cast", "to"): frozenset(_TYPE_NAMES) - {14, 15},
    ("Multinomial", "dtype"): frozenset({6, 7}),
}


class _Importer:
    def __init__(self, model: Any, where: str, max_fold_bytes: int = MAX_FOLD_BYTES) -> None:
        onnx = _import_onnx()
        self.onnx = onnx
        self.model = model
        self.where = where
        self.graph = model.graph
        self.max_fold_bytes = max_fold_bytes
        # dialect-prefixed, as the zoo does: mlir-opt rejects unprefixed module attributes
        name = Path(where).stem if where != "<ModelProto>" else "onnx_model"
        self.b = Builder(**{"tx8.model": name})
        self.notes: list[str] = []
        self.env: dict[str, _Tensor] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.elem: dict[str, int] = {}
        self.converted: dict[tuple[str, bool], Value] = {}
        self.consts: dict[tuple[int, str, bool], Value] = {}
        self.named_consts: dict[tuple[str, bool, str], Value] = {}
        self._keep: list[Array] = []
        self.opset = max(
            (o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=13
        )
        for info in [*self.graph.value_info, *self.graph.output, *self.graph.input]:
            tensor_type = info.type.tensor_type
            if tensor_type.elem_type:
                self.elem[info.name] = int(tensor_type.elem_type)
            dims = tensor_type.shape.dim
            if all(d.HasField("dim_value") for d in dims) and tensor_type.HasField("shape"):
                self.shapes[info.name] = tuple(int(d.dim_value) for d in dims)
        for init in self.graph.initializer:
            self.elem[init.name] = int(init.data_type)

    # ------------------------------------------------------------------ helpers
    def fail(self, node: Any, message: str) -> Tx8labError:
        return Tx8labError(f"{self.where}: {_node_label(node)}: {message}")

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
            if t.const.size == 0:
                raise Tx8labError(
                    f"constant {name!r} is empty (shape {tuple(t.const.shape)}); tx8be tensors "
                    "need every size >= 1"
                )
            if t.const.dtype.kind not in "biuf":
                raise Tx8labError(
                    f"constant {name!r} holds {t.const.dtype} values, which tx8be has no type for"
                )
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

    # ------------------------------------------------------------------ checks
    def elem_of(self, name: str) -> int | None:
        """The ONNX element type of tensor ``name``, when known."""
        if name in self.elem:
            return self.elem[name]
        t = self.env.get(name)
        if t is not None and t.const is not None:
            try:
                return int(self.onnx.helper.np_dtype_to_tensor_dtype(t.const.dtype))
            except Exception:
                return None
        return None

    def check_attributes(self, node: Any) -> None:
        """Enum-valued attributes hold a value ONNX defines (see ``_ENUM_ATTRS``)."""
        for a in node.attribute:
            allowed = _ENUM_ATTRS.get((node.op_type, a.name)) or _ENUM_ATTRS.get(("*", a.name))
            if allowed is None:
                continue
            value = self.onnx.helper.get_attribute_value(a)
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            if not isinstance(value, (int, str)) or value not in allowed:
                if all(isinstance(v, int) for v in allowed) and a.name in ("to", "dtype"):
                    shown = ", ".join(sorted(_type_name(v) for v in allowed))
                else:
                    shown = ", ".join(repr(v) for v in sorted(allowed, key=str))
                raise self.fail(
                    node, f"attribute {a.name}={value!r} is not an ONNX value; use one of {shown}"
                )

    def check_types(self, node: Any) -> None:
        """Input element types meet the schema's type constraints (one type per ``T``)."""
        schema = _schema(node, self.opset)
        if schema is None or not schema.inputs:
            return
        formal = list(schema.inputs)
        variadic = self.onnx.defs.OpSchema.FormalParameterOption.Variadic
        allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
        seen: dict[str, tuple[int, str]] = {}
        for index, name in enumerate(node.input):
            if not name:
                continue
            if index >= len(formal) and formal[-1].option != variadic:
                break
            param = formal[min(index, len(formal) - 1)]
            elem = self.elem_of(name)
            if elem is None:
                continue
            type_str = param.type_str
            accepted = allowed.get(type_str, {type_str})
            tensors = {t for t in accepted if t.startswith("tensor(")}
            if tensors and f"tensor({_type_name(elem)})" not in tensors:
                names = ", ".join(sorted(t[7:-1] for t in tensors))
                raise self.fail(
                    node,
                    f"input {index} ({name!r}) is {_type_name(elem)}, which {node.op_type} "
                    f"does not take ({param.name} allows {names}); insert a Cast",
                )
            if type_str not in allowed:
                continue
            if index >= len(formal) - 1 and param.option == variadic and not param.is_homogeneous:
                continue
            if type_str in seen and seen[type_str][0] != elem:
                first, other = seen[type_str]
                raise self.fail(
                    node,
                    f"input {index} ({name!r}) is {_type_name(elem)} but {other!r} is "
                    f"{_type_name(first)}; ONNX requires one element type for {type_str}: "
                    "insert a Cast",
                )
            seen.setdefault(type_str, (elem, name))

    def check_outputs(self, node: Any) -> None:
        """What the node produced: non-empty, not too large, as value_info declares."""
        for name in node.output:
            t = self.env.get(name) if name else None
            if t is None:
                continue
            shape = self.logical_shape(name)
            declared = self.shapes.get(name)
            if declared is not None and declared != tuple(shape):
                raise self.fail(
                    node,
                    f"computes {name!r} with shape {tuple(shape)}, but the model declares "
                    f"{declared} (value_info or graph output); fix or drop the declaration",
                )
            if t.value is None:
                continue
            if 0 in shape:
                raise self.fail(
                    node,
                    f"output {name!r} is empty (shape {tuple(shape)}); tx8be tensors need every "
                    "size >= 1",
                )
            _check_size(self.where, f"{_node_label(node)} output {name!r}", shape, 1)

    # ------------------------------------------------------------------ folding
    def fold_bytes(self, node: Any, arrays: list[Any]) -> tuple[int, tuple[int, ...]] | None:
        """Bytes and shape of the node's first result, computed before folding it."""
        out = node.output[0] if node.output else ""
        elem = self.elem.get(out)
        shape = self.shapes.get(out)
        try:
            if shape is None and node.op_type == "ConstantOfShape" and arrays:
                shape = tuple(int(d) for d in np.asarray(arrays[0]).reshape(-1))
            elif shape is None and node.op_type == "Expand" and len(arrays) == 2:
                target = tuple(int(d) for d in np.asarray(arrays[1]).reshape(-1))
                shape = tuple(
                    max(a, b) if 1 in (a, b) else a
                    for a, b in zip(
                        (1,) * (len(target) - arrays[0].ndim) + arrays[0].shape,
                        (1,) * (arrays[0].ndim - len(target)) + target,
                        strict=True,
                    )
                )
            elif shape is None and node.op_type == "Tile" and len(arrays) == 2:
                repeats = [int(r) for r in np.asarray(arrays[1]).reshape(-1)]
                shape = tuple(d * r for d, r in zip(arrays[0].shape, repeats, strict=False))
            elif shape is None and node.op_type == "Range" and len(arrays) == 3:
                start, limit, delta = (float(np.asarray(a).reshape(-1)[0]) for a in arrays)
                count = int(np.ceil((limit - start) / delta)) if delta else 0
                shape = (max(count, 0),)
        except (ValueError, TypeError, OverflowError, IndexError, ZeroDivisionError):
            return None  # malformed operands: the evaluator's error names them
        if shape is None:
            return None
        if elem is None:
            elem = max((self.elem_of(n) or 1 for n in node.input if n), key=_itemsize, default=1)
        count = 1
        for d in shape:
            count *= max(int(d), 0)
        return count * _itemsize(elem), shape

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
        arrays = [self.env[n].const for n in inputs]
        estimate = self.fold_bytes(node, arrays)
        given = sum(int(a.nbytes) for a in arrays if a is not None)
        if estimate is not None and estimate[0] > max(self.max_fold_bytes, given):
            size, folded_shape = estimate
            if node.op_type in _HANDLERS:
                return False  # mapped to a tx8be op instead (fold-constants decides)
            raise self.fail(
                node,
                f"folding it would make a constant of shape {folded_shape}, {_human(size)}, over "
                f"the import's folding limit of {_human(self.max_fold_bytes)}; if the model "
                "really needs it, raise the limit: load(..., max_fold_bytes=N)",
            )
        return self._fold_with_reference(node, arrays)

    def _fold_with_reference(self, node: Any, arrays: list[Any]) -> bool:
        from onnx.reference import ReferenceEvaluator

        helper = self.onnx.helper
        try:
            inputs = [
                helper.make_tensor_value_info(
                    name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape
                )
                for name, a in zip([n for n in node.input if n], arrays, strict=True)
            ]
            outputs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
            graph = helper.make_graph([node], "fold", inputs, outputs)
            model = helper.make_model(graph, opset_imports=list(self.model.opset_import))
            model.ir_version = self.model.ir_version
            results = ReferenceEvaluator(model).run(
                None, dict(zip([n for n in node.input if n], arrays, strict=True))
            )
        except Exception as err:
            raise self.fail(
                node, f"cannot fold this constant subgraph: {_first_line(err)}"
            ) from None
        for name, result in zip([o for o in node.output if o], results, strict=True):
            array = np.asarray(result)
            if array.dtype.kind not in "biuf":
                raise self.fail(
                    node, f"folds {name!r} to {array.dtype} values, which tx8be has no type for"
                )
            self.env[name] = _Tensor(const=array)
            self.elem.setdefault(name, int(helper.np_dtype_to_tensor_dtype(array.dtype)))
        return True

    # ------------------------------------------------------------------ import
    def run(self) -> Module:
        if not self.graph.output:
            raise Tx8labError(
                f"{self.where}: the graph declares no outputs, so there is nothing to compute; "
                "list the results in graph.output (onnx.helper.make_graph(nodes, name, inputs, "
                "outputs))"
            )
        for init in self.graph.initializer:
            try:
                array = self.onnx.numpy_helper.to_array(init)
            except Exception as err:
                raise Tx8labError(
                    f"{self.where}: initializer {init.name!r} cannot be read "
                    f"({_first_line(err)}); re-export the model"
                ) from None
            self.env[init.name] = _Tensor(const=array)
            self.note_widened("initializer", init.name, init.data_type)
        initializers = {t.name for t in self.graph.initializer}
        for inp in self.graph.input:
            if inp.name in initializers:
                continue
            elem = inp.type.tensor_type.elem_type
            dtype = _ONNX_DTYPES.get(elem)
            if dtype is None:
                reason = _REFUSED_TYPES.get(elem, "tx8be has no such type")
                raise Tx8labError(
                    f"{self.where}: input {inp.name!r} has element type {_type_name(elem)}, "
                    f"which the import refuses: {reason}"
                )
            shape = tuple(int(d.dim_value) for d in inp.type.tensor_type.shape.dim)
            self.env[inp.name] = _Tensor(value=self.b.input(shape, dtype))
            self.note_widened("input", inp.name, elem)
        for node in self.graph.node:
            if node.op_type in CONTROL_FLOW:
                raise self.fail(node, _CONTROL_FLOW_HINT)
            if node.domain not in ("", "ai.onnx"):
                raise self.fail(node, f"operator domain {node.domain!r} is not supported")
            self.check_attributes(node)
            self.check_types(node)
            try:
                if self.try_fold(node):
                    self.check_outputs(node)
                    continue
            except Tx8labError:
                raise
            except Exception as err:
                raise self.fail(
                    node,
                    f"cannot import this node ({type(err).__name__}: {_first_line(err)}); "
                    "check its attributes and inputs against the ONNX spec",
                ) from None
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
            except Exception as err:
                raise self.fail(
                    node,
                    f"cannot import this node ({type(err).__name__}: {_first_line(err)}); "
                    "check its attributes and inputs against the ONNX spec",
                ) from None
            self.check_outputs(node)
        outputs = []
        for out in self.graph.output:
            t = self.env.get(out.name)
            if t is None:
                raise Tx8labError(f"{self.where}: graph output {out.name!r} is never produced")
            value = self.value_for_output(out)
            outputs.append(value)
        self.b.output(*outputs)
        module = self.b.finish()
        if not self.notes:
            return module
        attrs = {**module.attrs, IMPORT_NOTES_ATTR: tuple(self.notes)}
        return Module(module.functions, attrs, module.next_id)

    def note_widened(self, what: str, name: str, elem: int) -> None:
        """Report a uint8/int16/uint16 tensor held as i32 (module docstring)."""
        if elem in _WIDENED:
            self.notes.append(
                f"{self.where}: {what} {name!r} is {_type_name(elem)}, held as i32 (every "
                "value kept; results computed from it are i32)"
            )

    def value_for_output(self, out: Any) -> Value:
        """Graph output ``out`` in NCHW, checked against its declared element type."""
        declared = int(out.type.tensor_type.elem_type)
        expected = _ONNX_DTYPES.get(declared)
        if declared and expected is None:
            reason = _REFUSED_TYPES.get(declared, "tx8be has no such type")
            raise Tx8labError(
                f"{self.where}: graph output {out.name!r} is declared "
                f"{_type_name(declared)}, which the import refuses: {reason}"
            )
        try:
            value = self.value(out.name, nhwc=False)
        except Tx8labError as err:
            raise Tx8labError(f"{self.where}: graph output {out.name!r}: {err}") from None
        if declared and expected != value.type.dtype:
            raise Tx8labError(
                f"{self.where}: graph output {out.name!r} is declared "
                f"{_type_name(declared)}, but the graph computes it as {value.type.dtype}; "
                "fix the output's declared type (or add a Cast)"
            )
        return value


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


def _node_label(node: Any) -> str:
    return f"node {node.name!r} ({node.op_type})" if node.name else f"{node.op_type} node"


def _schema(node: Any, opset: int) -> Any:
    """The ONNX schema of a default-domain node at ``opset`` (None for an unknown op)."""
    onnx = _import_onnx()
    if node.domain not in ("", "ai.onnx") or not onnx.defs.has(node.op_type):
        return None
    try:
        return onnx.defs.get_schema(node.op_type, opset, "")
    except Exception:  # SchemaError: the op does not exist yet at this opset
        return None


def _first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0].rstrip(".") if lines else type(err).__name__


def _check_graph(model: Any, where: str) -> None:
    """Structural checks ONNX requires and the import relies on (before shape inference).

    One producer per name (SSA): graph inputs, initializers and node outputs never share a
    name, except that an initializer may also be a graph input (its default value). An empty
    input name means "optional input omitted" and is refused at a required position.
    Initializers must hold as many bytes as their dims say. Each default-domain node is
    checked against its schema (arity, attribute types) by onnx's own node checker; its
    message is kept as the reason.
    """
    onnx = _import_onnx()
    graph = model.graph
    if len(graph.sparse_initializer):
        raise Tx8labError(
            f"{where}: sparse initializer {graph.sparse_initializer[0].values.name!r} is not "
            "supported; store it dense (onnx.numpy_helper.from_array)"
        )
    producer: dict[str, str] = {}
    for init in graph.initializer:
        if not init.name:
            raise Tx8labError(f"{where}: an initializer has an empty name; name every initializer")
        if init.name in producer:
            raise Tx8labError(
                f"{where}: two initializers are named {init.name!r}; ONNX names each tensor "
                "once: rename or drop one"
            )
        producer[init.name] = "an initializer"
        try:
            onnx.checker.check_tensor(init)
        except Exception as err:
            raise Tx8labError(
                f"{where}: initializer {init.name!r} is malformed: {_first_line(err)}; "
                "re-export the model"
            ) from None
    initializers = set(producer)
    inputs: set[str] = set()
    for inp in graph.input:
        if not inp.name:
            raise Tx8labError(f"{where}: a graph input has an empty name; name every input")
        if inp.name in inputs:
            raise Tx8labError(
                f"{where}: two graph inputs are named {inp.name!r} (the second would shadow "
                "the first); rename one"
            )
        inputs.add(inp.name)
        if inp.name not in initializers:
            producer[inp.name] = "a graph input"
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=13)
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = int(model.ir_version)
    ctx.opset_imports = {o.domain: int(o.version) for o in model.opset_import}
    for node in graph.node:
        label = _node_label(node)
        for out in node.output:
            if not out:
                continue
            if out in producer:
                raise Tx8labError(
                    f"{where}: {label} writes {out!r}, which {producer[out]} already "
                    "defines; ONNX gives each name one producer (SSA): rename one of them"
                )
            producer[out] = label
        if node.domain not in ("", "ai.onnx") and node.op_type not in CONTROL_FLOW:
            raise Tx8labError(
                f"{where}: {label}: operator domain {node.domain!r} is not supported; "
                "only default-domain (ai.onnx) ops import"
            )
        schema = _schema(node, opset)
        if schema is None:
            continue  # an unknown op: reported later, with the supported list
        formal = list(schema.inputs)
        for index, name in enumerate(node.input):
            if name or not formal:
                continue
            param = formal[min(index, len(formal) - 1)]
            if param.option != onnx.defs.OpSchema.FormalParameterOption.Optional:
                raise Tx8labError(
                    f"{where}: {label}: input {index} ({param.name}) is empty; an empty name "
                    f"means an omitted optional input, and {param.name} of {node.op_type} is "
                    "required: name the tensor it reads"
                )
        try:
            onnx.checker.check_node(node, ctx)
        except Exception as err:
            raise Tx8labError(
                f"{where}: {label} is not valid ONNX: {_first_line(err)}; fix the node "
                "(onnx.checker.check_model reports the same)"
            ) from None


def _to_nhwc_const(array: Array) -> Array:
    """A constant operand of an op on NHWC values: broadcast to rank 4, then permuted."""
    if array.ndim > 4:
        raise Tx8labError(f"a constant of rank {array.ndim} cannot meet a 4-D feature map")
    array = array.reshape((1,) * (4 - array.ndim) + array.shape)
    return np.ascontiguousarray(array.transpose(_NCHW_TO_NHWC))


def _axis(axis: int, rank: int, nhwc: bool) -> int:
    axis = _in_range(axis, rank)
    return _TO_NHWC_AXIS[axis] if nhwc else axis


def _in_range(axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[-rank, rank)`` made non-negative; out of range is an error."""
    if not -rank <= axis < rank:
        raise Tx8labError(
            f"{what} {axis} is out of range for rank {rank} (ONNX: -{rank}..{rank - 1})"
        )
    return axis + rank if axis < 0 else axis


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
    if weight.ndim != 4:
        raise im.fail(
            node, f"the weight has shape {weight.shape}; 2-D convolution needs a 4-D (OIHW) weight"
        )
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
    if target.ndim != 1:
        raise im.fail(node, f"the shape input has shape {target.shape}; ONNX needs a 1-D tensor")
    in_shape = im.logical_shape(node.input[0])
    dims = [int(d) for d in target]
    if not im.attr(node, "allowzero", 0):
        dims = [in_shape[i] if d == 0 else d for i, d in enumerate(dims)]
    _reshape_to(im, node, dims)


@_handles("Flatten")
def _flatten(im: _Importer, node: Any) -> None:
    shape = im.logical_shape(node.input[0])
    axis = int(im.attr(node, "axis", 1))
    axis = _in_range(axis, len(shape) + 1)  # ONNX: axis in [-r, r]
    _reshape_to(im, node, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))


@_handles("Squeeze", "Unsqueeze")
def _squeeze(im: _Importer, node: Any) -> None:
    out_shape = None
    axes_known = len(node.input) < 2 or not node.input[1] or im.env[node.input[1]].const is not None
    if not axes_known:
        # axes computed at run time: shape inference (data propagation) may still know them
        out_shape = im.shapes.get(node.output[0])
        if out_shape is None:
            im.const_input(node, 1, "axes")  # raises: must be a constant
    if out_shape is None:
        shape = list(im.logical_shape(node.input[0]))
        axes_in = im.const_input(node, 1, "axes") if len(node.input) > 1 else None
        axes = [int(a) for a in (axes_in if axes_in is not None else im.attr(node, "axes", []))]
        if node.op_type == "Squeeze":
            rank = len(shape)
            drop = {_in_range(a, rank) for a in axes} or {i for i, d in enumerate(shape) if d == 1}
            out_shape = tuple(d for i, d in enumerate(shape) if i not in drop)
        else:
            rank = len(shape) + len(axes)
            inserted = sorted(_in_range(a, rank) for a in axes)
            if len(set(inserted)) != len(inserted):
                raise im.fail(node, f"axes {axes} repeat an axis")
            for a in inserted:
                shape.insert(a, 1)
            out_shape = tuple(shape)
        if node.op_type == "Squeeze" and any(shape[a] != 1 for a in drop if 0 <= a < len(shape)):
            raise im.fail(node, f"axes {sorted(drop)} include a dimension > 1 of {tuple(shape)}")
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
    given = [a for a in (starts_in, ends_in, axes_in, steps_in) if a is not None]
    if any(a.ndim != 1 for a in given) or len({a.size for a in given}) != 1:
        shapes = ", ".join(str(a.shape) for a in given)
        raise im.fail(
            node, f"starts, ends, axes and steps must be 1-D of one length (shapes {shapes})"
        )
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
    scales_at = 2 if node.op_type == "Resize" else 1
    known = [
        i
        for i in (scales_at, 3)
        if i < len(node.input) and node.input[i] and im.env[node.input[i]].const is not None
    ]
    out_shape = im.shapes.get(node.output[0]) if not known else None
    if out_shape is None:
        scales = im.const_input(node, scales_at, "scales")
        if scales is None or scales.size == 0:
            sizes = im.const_input(node, 3, "sizes")
            if sizes is None:
                raise im.fail(node, "needs constant scales or sizes")
            out_shape = tuple(int(s) for s in sizes)
        else:
            if scales.size != len(in_shape):
                raise im.fail(node, f"scales {scales.tolist()} do not match rank {len(in_shape)}")
            out_shape = tuple(
                int(np.floor(float(d) * float(s))) for d, s in zip(in_shape, scales, strict=True)
            )
            # ONNX maps coordinates with the given scale, not with out/in: only a scale that
            # is exactly out/in repeats pixels
            for d, o, sc in zip(in_shape, out_shape, scales.tolist(), strict=True):
                if float(sc) * d != o or o % d:
                    raise im.fail(
                        node,
                        f"scales {scales.tolist()}: only integer scales are supported "
                        "(tx8be Resize repeats pixels)",
                    )
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
    axis = _in_range(int(im.attr(node, "axis", 0)), data.type.rank)
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
    target = int(im.attr(node, "to"))
    to = _CAST_TARGETS.get(target)
    if to is None:
        supported = ", ".join(_type_name(t) for t in _CAST_TARGETS)
        raise im.fail(
            node,
            f"cast to {_type_name(target)} is not supported: tx8be holds {supported} exactly, "
            "and a cast to another type would wrap or round differently",
        )
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
    source: str | Path | Any,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    max_fold_bytes: int = MAX_FOLD_BYTES,
) -> Module:
    """Import an ONNX model (a path or an ``onnx.ModelProto``) as a tx8be module.

    ``max_fold_bytes`` bounds a constant the import folds that is larger than the constants
    it was computed from (ConstantOfShape, Expand, Tile, Range, ...); see the module
    docstring. Bad input raises :class:`~tx8lab.errors.Tx8labError` naming the file and the
    node, input or initializer.
    """
    model, where = _read_model(source)
    _check_text(model, where)
    _check_versions(model, where)
    _reject_control_flow(model, where)
    _check_graph(model, where)
    model = _fix_input_shapes(model, where, dict(input_shapes or {}))
    return _Importer(model, where, max_fold_bytes).run()


def supported_ops() -> list[str]:
    """ONNX op types the importer maps (others fold when their inputs are constants)."""
    return sorted(_HANDLERS)
