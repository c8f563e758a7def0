"""The op library: one :class:`~tx8lab.core.ops.registry.OpDef` per tx8be op kind.

``OPS`` is the only registry; add an op by adding its class to ``_ALL``.
"""

from __future__ import annotations

from tx8lab.core.ops import elementwise, memory
from tx8lab.core.ops.registry import AttrSpec, OpAttr, OpDef
from tx8lab.errors import Tx8labError

_ALL: tuple[type[OpDef], ...] = (
    memory.Constant,
    elementwise.Add,
    elementwise.Relu,
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
