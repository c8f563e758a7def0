"""Helpers for the op-library tests: run one op's compute, run one ONNX node in onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

from tx8lab.core.builder import make_op
from tx8lab.core.dtypes import from_numpy
from tx8lab.core.ir import Op, TensorType, Value
from tx8lab.core.ops import get_op_def

RNG = np.random.default_rng(1234)


def ttype(array: np.ndarray, dtype: str | None = None) -> TensorType:
    """The tensor type of ``array`` (its numpy dtype's tx8be type unless given)."""
    return TensorType(tuple(int(d) for d in array.shape), dtype or from_numpy(array.dtype))


def build(kind: str, *types: TensorType, **attrs: Any) -> Op:
    """An op of ``kind`` on block arguments of ``types`` (result types inferred)."""
    operands = [Value(-1, i, t, is_arg=True) for i, t in enumerate(types)]
    return make_op(kind, operands, attrs, op_id=0)


def infer(kind: str, *types: TensorType, **attrs: Any) -> tuple[TensorType, ...]:
    """Inferred result types."""
    return tuple(get_op_def(kind).infer_type(list(types), attrs))


def run(kind: str, *arrays: np.ndarray, dtypes: tuple[str, ...] | None = None, **attrs: Any) -> Any:
    """Build the op on ``arrays``' types and return its compute result(s), shape-checked."""
    types = [ttype(a, dtypes[i] if dtypes else None) for i, a in enumerate(arrays)]
    op = build(kind, *types, **attrs)
    outs = get_op_def(kind).compute(op, *arrays)
    assert len(outs) == len(op.results)
    for out, res in zip(outs, op.results, strict=True):
        assert tuple(np.asarray(out).shape) == res.type.shape, (out.shape, res.type)
    return outs[0] if len(outs) == 1 else outs


_ONNX_TYPES = {
    np.dtype(np.float32): onnx.TensorProto.FLOAT,
    np.dtype(np.int64): onnx.TensorProto.INT64,
    np.dtype(np.int32): onnx.TensorProto.INT32,
    np.dtype(np.bool_): onnx.TensorProto.BOOL,
}


def ort_node(
    op_type: str,
    inputs: list[np.ndarray | None],
    num_outputs: int = 1,
    opset: int = 17,
    **attrs: Any,
) -> list[np.ndarray]:
    """Run one ONNX node in onnxruntime; ``None`` inputs are left empty (optional)."""
    import onnxruntime as ort

    names = [f"in{i}" if a is not None else "" for i, a in enumerate(inputs)]
    graph_inputs = [
        helper.make_tensor_value_info(n, _ONNX_TYPES[a.dtype], list(a.shape))
        for n, a in zip(names, inputs, strict=True)
        if a is not None
    ]
    outs = [f"out{i}" for i in range(num_outputs)]
    node = helper.make_node(op_type, names, outs, **attrs)
    graph = helper.make_graph(
        [node], "one", graph_inputs, [helper.make_empty_tensor_value_info(o) for o in outs]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {n: a for n, a in zip(names, inputs, strict=True) if a is not None}
    return [np.asarray(r) for r in session.run(None, feeds)]


def nhwc_to_nchw(x: np.ndarray) -> np.ndarray:
    """[N, H, W, C] -> [N, C, H, W]."""
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def nchw_to_nhwc(x: np.ndarray) -> np.ndarray:
    """[N, C, H, W] -> [N, H, W, C]."""
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-5) -> None:
    """Equal within ``rtol`` relative to each value, or to the array's scale near 0."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1e-30, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale * 1e-1)


def randn(*shape: int, scale: float = 1.0) -> np.ndarray:
    """Float32 normal data."""
    return (RNG.standard_normal(shape) * scale).astype(np.float32)
