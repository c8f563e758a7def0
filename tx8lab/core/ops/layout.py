"""ChannelNorm: the layout-conversion op LayoutAlignToNPU inserts where colours clash.

Spec: seed 000 (LayoutAlignToNPU: "ChannelNormOp ... 根据其 direction 属性进行判断"; the
conflict rule ``direction = opAlignMode == NALIGN ? false : true``) and docs/ops.md.

Readings chosen where the seed is vague:

- ``direction`` true converts to ALIGN (Cx/NCx), false to NALIGN (compact); the op's own
  ``align_mode`` is the layout it produces. Values are unchanged: compute is the identity.
- One side of a ChannelNorm is Cx/NCx, which exists for rank 2 and 4 only (seed 000: "Cx
  模式需要数据的维度是2或者4"; rank 0/1 one pixel, see :mod:`tx8lab.core.layouts`): a
  ChannelNorm of a rank-3 or rank >= 5 tensor is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from tx8lab.core.attrs import AlignMode
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.layouts import has_aligned_layout
from tx8lab.core.ops.common import both_attr
from tx8lab.core.ops.registry import (
    Array,
    AttrSpec,
    OpAttr,
    OpDef,
    SliceShape,
)


class ChannelNorm(OpDef):
    """Memory-layout conversion ALIGN <-> NALIGN; values unchanged."""

    window_compute = True

    kind: ClassVar[str] = "tx8be.ChannelNorm"
    summary = "layout conversion (direction true: to ALIGN)"
    family = "layout"
    num_operands = 1
    c_param = "CHANNEL_NORM_PARAM"

    def codegen_fields(self, op: Op, slice_shape: SliceShape) -> dict[str, Any]:
        """``direction``: 1 = to ALIGN (Cx), 0 = to NALIGN."""
        return {"direction": bool(self.attr(op, "direction"))}

    attrs: ClassVar[dict[str, AttrSpec]] = {
        "direction": AttrSpec(bool, doc="true = to ALIGN, false = to NALIGN"),
    }

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        x = operands[0]
        if not has_aligned_layout(x.rank):
            raise self.fail(
                f"x {x} has rank {x.rank}, which has no Cx/NCx (Cx needs rank 2 or 4, seed "
                "000): reshape it to rank 4 first"
            )
        return (x,)

    def op_attr(self, op: Op) -> OpAttr:
        mode = AlignMode.ALIGN if self.attr(op, "direction") else AlignMode.NALIGN
        return both_attr(op, align_mode=mode)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (inputs[0].copy(),)
