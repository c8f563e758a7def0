"""The op library: one :class:`~tx8lab.core.ops.registry.OpDef` per tx8be op kind.

``OPS`` is the only registry; add an op by adding its class to ``_ALL``.
"""

from __future__ import annotations

from tx8lab.core.ops import (
    activation,
    conv,
    data,
    elementwise,
    group,
    layout,
    matmul,
    memory,
    norm,
    pool,
    reduce,
)
from tx8lab.core.ops.registry import AttrSpec, OpAttr, OpDef
from tx8lab.errors import Tx8labError

_ALL: tuple[type[OpDef], ...] = (
    # memory
    memory.Constant,
    memory.LoadConst,
    memory.LoadVar,
    memory.StoreVar,
    # elementwise (V_VV / V_VS)
    elementwise.Add,
    elementwise.Sub,
    elementwise.Mul,
    elementwise.Div,
    elementwise.Max,
    elementwise.Min,
    elementwise.Pow,
    elementwise.Compare,
    elementwise.Where,
    # activation
    activation.Relu,
    activation.Sigmoid,
    activation.HardSwish,
    activation.Silu,
    activation.Tanh,
    activation.Erf,
    activation.Exp,
    activation.Log,
    activation.Sqrt,
    activation.Rsqrt,
    activation.Neg,
    activation.Abs,
    activation.Reciprocal,
    activation.Clip,
    activation.HardSigmoid,
    activation.Gelu,
    # norm
    norm.Softmax,
    norm.LayerNorm,
    norm.RMSNorm,
    norm.BatchNorm_Inference,
    # matmul / conv / pool / reduce
    matmul.Gemm,
    matmul.MatMul,
    matmul.BatchMatMul,
    conv.Conv2d,
    pool.MaxPool2d,
    pool.AvgPool2d,
    pool.GlobalAvgPool,
    reduce.ReduceSum,
    reduce.ReduceMean,
    reduce.ReduceMax,
    # data
    data.Reshape,
    data.Transpose,
    data.Concatenate,
    data.Split,
    data.Slice,
    data.Pad,
    data.Broadcast,
    data.Gather,
    data.Embedding,
    data.Scatter,
    data.Convert,
    data.Resize,
    data.Unpack,
    data.Tuple,
    # layout / group
    layout.ChannelNorm,
    group.Group,
)

OPS: dict[str, OpDef] = {cls.kind: cls() for cls in _ALL}


def get_op_def(kind: str) -> OpDef:
    """The entry for ``kind`` (``Gemm`` or ``tx8be.Gemm``), or a clear error."""
    full = kind if "." in kind else f"tx8be.{kind}"
    entry = OPS.get(full)
    if entry is None:
        raise Tx8labError(
            f"unknown op kind {kind!r}: the op library has {len(OPS)} kinds "
            f"(see tx8lab.core.ops.OPS); add an OpDef entry for it"
        )
    return entry


__all__ = ["OPS", "AttrSpec", "OpAttr", "OpDef", "get_op_def"]
