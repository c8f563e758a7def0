"""ChannelNorm: the layout-conversion op LayoutAlignToNPU inserts where colours clash.

Spec: seed 000 (LayoutAlignToNPU: "ChannelNormOp ... 根据其 direction 属性进行判断"; the
conflict rule ``direction = opAlignMode == NALIGN ? false : true``) and docs/ops.md.

Readings chosen where the seed is vague:

- ``direction`` true converts to ALIGN (Cx/NCx), false to NALIGN (compact); the op's own
  ``align_mode`` is the layout it produces. Values are unchanged: compute is the identity.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tx8lab.core.attrs import AlignMode
from tx8lab.core.ir import Op
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

    def op_attr(self, op: Op) -> OpAttr:
        mode = AlignMode.ALIGN if self.attr(op, "direction") else AlignMode.NALIGN
        return both_attr(op, align_mode=mode)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        return (inputs[0].copy(),)
