"""Group: the region op that holds a fused run of ops (seed 001/002 layer groups).

Spec: DESIGN.md §2-3 and docs/ops.md. The verifier checks a group through its region
(``verify.REGION_OPS``) and the interpreter runs its body; this entry exists so the
registry lists the kind, with a family and an ``op_attr``.

Readings chosen where the seed is vague:

- ``infer_type`` cannot work from operand types alone: a group's result types are the
  types of its body's ``tx8be.Return`` operands, so it raises a clear error instead.
- ``compute`` is never called (the interpreter walks the body); it raises if it is.
- ``iter_dims`` / ``temporal_slice_shape`` raise too: a group is sliced op by op through its
  body (``tx8lab.core.schedule.slicing``).
- Layout inference answers None: ``layout-transmit`` propagates through the body's ops
  (block argument i is operand i, result j is the Return's operand j).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from tx8lab.core.ir import Op, TensorType
from tx8lab.core.ops.common import both_attr
from tx8lab.core.ops.registry import Array, IterDim, OpAttr, StopsLayout


class Group(StopsLayout):
    """A fused group of ops: one region whose tx8be.Return gives the results."""

    kind: ClassVar[str] = "tx8be.Group"
    summary = "fused op group (region)"
    family = "group"
    num_operands = (0, None)

    def _infer(
        self, operands: Sequence[TensorType], attrs: Mapping[str, Any]
    ) -> tuple[TensorType, ...]:
        raise self.fail(
            "result types come from the body's tx8be.Return, not from the operands; "
            "build the op with explicit result_types (the verifier checks the region)"
        )

    def op_attr(self, op: Op) -> OpAttr:
        return both_attr(op)

    def compute(self, op: Op, *inputs: Array) -> tuple[Array, ...]:
        raise self.fail("a group is run through its body (tx8lab.core.interpret), not compute")

    def iter_dims(self, op: Op) -> tuple[IterDim, ...]:
        raise self.fail(
            "a group has no iteration dims of its own: slice its body op by op "
            "(tx8lab.core.schedule.slicing.schedule_input)"
        )
