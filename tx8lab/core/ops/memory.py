"""Ops that hold or move data: Constant, LoadConst, LoadVar, StoreVar (seed 001).

Spec: seed 001 ("needLoad ... 会跳过 loadvar op 生成"; LoadVar/LoadConst on the RDMA,
StoreVar on the WDMA) and docs/ops.md.

Readings chosen where the seed is vague:

- ``Constant`` keeps its data in the attribute ``value``: a numpy array, or a
  ``RandomInit`` generator (with the attributes ``shape`` and ``dtype``) for zoo weights.
- ``LoadConst`` carries the constant's attributes itself (plus ``const_id``, -1 when the
  const manager has not numbered it yet), so it replaces a Constant one for one.
- All four are BOTH; the loads and the store keep their operand's type and values.
- Slicing and cost: their iteration dims are their value's dims; a load or store moves
  the slice's bytes in its layout (``dev_info.mem_layout``) on the RDMA / WDMA at the
  tile's share of DDR bandwidth. A Constant does no work on the chip (``vector_ops`` 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from tx8lab.core.attrs import AlignMode, Engine, RandomInit
from tx8lab.core.codegen_c import CCall, dma_param
from tx8lab.core.dtypes import from_numpy
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.ops.registry import (
    Array,
    AttrSpec,
    OpAttr,
    OpDef,
    _default_layout,
)


class Constant(OpDef):
    """A constant tensor (seed ``tx8be::ConstantOp``)."""

    kind: ClassVar[str] = "tx8be.Constant"
    summary = "constant data"
    family = "memory"
    num_operands = 0
    vector_ops = 0.0
    attrs: ClassVar[dict[str, AttrSpec]] = {
        "value": AttrSpec((np.ndarray, RandomInit), doc="numpy data or a RandomInit"),
        "shape": AttrSpec(tuple, None, "shape, for a RandomInit value"),
        "dtype": AttrSpec(str, None, "element type (f32, f16, bf16, tf32, i8, i32, i64, i1)"),
    }

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        value = attrs["value"]
        if isinstance(value, RandomInit):
            if attrs.get("shape") is None or attrs.get("dtype") is None:
                raise self.fail("a RandomInit value needs the attributes 'shape' and 'dtype'")
            return (TensorType(tuple(attrs["shape"]), attrs["dtype"]),)
        dtype = attrs.get("dtype") or from_numpy(value.dtype)
        return (TensorType(tuple(int(d) for d in value.shape), dtype),)

    def op_attr(self, op: Op) -> OpAttr:
        return OpAttr(align_mode=AlignMode.BOTH, default_layout=_default_layout(op))

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (constant_data(op),)


def constant_data(op: Op) -> Array:
    """The data of a Constant (or LoadConst-like op with a ``value``), materialised."""
    value = op.attrs["value"]
    ttype = op.results[0].type
    if isinstance(value, RandomInit):
        return value.materialize(ttype.shape, ttype.dtype)
    return np.asarray(value)


class LoadConst(Constant):
    """DDR -> SPM load of a constant (seed ``tx8be::LoadConstOp``), on the RDMA."""

    kind: ClassVar[str] = "tx8be.LoadConst"
    summary = "load constant DDR -> SPM"
    attrs: ClassVar[dict[str, AttrSpec]] = {
        **Constant.attrs,
        "const_id": AttrSpec(int, -1, "index in the const manager's table (-1: none yet)"),
    }
    c_param = "DMA"

    def codegen(self, op: Op, call: CCall) -> str:
        """``op_dma_load_const(param, dst, ddr, g)``: the constant's slice DDR -> SPM (RDMA).

        A table a Gather picks rows of: ``op_dma_gather(param, dst, ddr, g, indices)``.
        """
        if call.gather:
            return _gather_call(call)
        return f"op_dma_load_const({dma_param(call)}, {call.outs[0]}, {call.ddr}, {call.g_shape})"

    def op_attr(self, op: Op) -> OpAttr:
        return OpAttr(
            align_mode=AlignMode.BOTH, default_layout=_default_layout(op), engine=Engine.RDMA
        )


def _gather_call(call: CCall) -> str:
    args = f"{dma_param(call)}, {call.outs[0]}, {call.ddr}, {call.g_shape}, {call.gather}"
    return f"op_dma_gather({args})"


class LoadVar(OpDef):
    """DDR -> SPM load of a variable (seed ``tx8be::LoadVarOp``), on the RDMA."""

    kind: ClassVar[str] = "tx8be.LoadVar"
    summary = "load DDR -> SPM"
    family = "memory"
    num_operands = 1
    c_param = "DMA"

    def codegen(self, op: Op, call: CCall) -> str:
        """``op_dma_load(param, dst, ddr, g)``: the variable's slice DDR -> SPM (RDMA).

        A table a Gather picks rows of: ``op_dma_gather(param, dst, ddr, g, indices)``.
        """
        if call.gather:
            return _gather_call(call)
        return f"op_dma_load({dma_param(call)}, {call.outs[0]}, {call.ddr}, {call.g_shape})"

    def op_attr(self, op: Op) -> OpAttr:
        return OpAttr(
            align_mode=AlignMode.BOTH, default_layout=_default_layout(op), engine=Engine.RDMA
        )

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (inputs[0].copy(),)


class StoreVar(OpDef):
    """SPM -> DDR store of a variable (seed ``tx8be::StoreVarOp``), on the WDMA."""

    kind: ClassVar[str] = "tx8be.StoreVar"
    summary = "store SPM -> DDR"
    family = "memory"
    num_operands = 1
    c_param = "DMA"

    def codegen(self, op: Op, call: CCall) -> str:
        """``op_dma_store(param, src, ddr, g)``: the slice SPM -> DDR (WDMA)."""
        return f"op_dma_store({dma_param(call)}, {call.ins[0]}, {call.ddr}, {call.g_shape})"

    def op_attr(self, op: Op) -> OpAttr:
        return OpAttr(
            align_mode=AlignMode.BOTH, default_layout=_default_layout(op), engine=Engine.WDMA
        )

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (inputs[0].copy(),)
