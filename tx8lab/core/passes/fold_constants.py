"""FoldConstants: replace ops whose operands are all dense constants by a tx8be.Constant.

Spec: none of the seeds names it; seed 001's const management (ConstContainer,
MoveConstant) starts from a graph whose constant subgraphs (shape arithmetic, transposed or
reshaped tables, scalars combined with scalars) are already folded, as the middle end and
MLIR's folders leave it. One forward walk per block: an op whose operands are all dense
constants (given or folded earlier in the walk) is computed with the op library's
reference ``compute``, rounded to its result type as the interpreter does, and becomes a
``tx8be.Constant`` created by this pass at the same place, with a fresh id.

Readings chosen:

- Never fold a ``RandomInit`` weight into dense bytes: a zoo weight is a seed, and folding
  a ``Transpose`` of LLaMA's 500 MB embedding would materialise it. An op with such an
  operand stays, with a ``kept`` decision saying why.
- ``max_bytes`` bounds the folded result (a Broadcast of a scalar would otherwise turn into
  a large table); the size is taken from the result type before anything is computed.
- Multi-result ops (``Split``) are not folded: they would become several Constants and
  the pass never grows the op count. Memory ops (loads, ``StoreVar``), region ops and
  zero-operand ops are never folded.
- The constants an op used are left in place, unused; ``dce`` removes them. Folding and
  erasing stay two steps so each shows its own decisions.
- A ``tx8be.Group`` body is folded on its own (it is isolated from above); a constant
  outside the group is not seen inside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from tx8lab.core.attrs import RandomInit
from tx8lab.core.builder import make_op
from tx8lab.core.dtypes import round_to
from tx8lab.core.ir import TERMINATORS, Block, IdCounter, Module, Op, Value
from tx8lab.core.ops.registry import Array
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.hw.config import ChipConfig

#: Op families never folded: they move data or hold regions.
NEVER_FOLD_FAMILIES = frozenset({"memory", "group"})

ValueKey = tuple[int, int, bool]


def result_bytes(value: Value) -> int:
    """Bytes the value takes stored densely (:attr:`~tx8lab.core.ir.TensorType.dense_bytes`)."""
    return value.type.dense_bytes


def is_dense_constant(op: Op) -> bool:
    """A ``tx8be.Constant`` that holds numpy data (not a ``RandomInit``)."""
    return op.kind == "tx8be.Constant" and isinstance(op.attrs.get("value"), np.ndarray)


@dataclass(frozen=True)
class FoldConstants(Pass):
    """Constant folding (see the module docstring)."""

    name: ClassVar[str] = "fold-constants"
    summary: ClassVar[str] = "compute ops whose operands are all constants at compile time"

    max_bytes: int = knob(1 << 20, "largest folded result, bytes; bigger ones stay ops", min=0)
    """Set from Python or ``--set fold-constants.max_bytes=64Ki``."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        ids = IdCounter(module.next_id)
        decisions: list[Decision] = []
        functions = []
        for func in module.functions:
            body = self._fold_block(func.body, ids, decisions)
            functions.append(func if body is func.body else func.with_ops(body.ops))
        folded = [d for d in decisions if d.choice == "folded"]
        stats: dict[str, int | float | str] = {
            "folded": len(folded),
            "folded_bytes": sum(int(d.data.get("bytes", 0)) for d in folded),
            "kept_random_init": sum(1 for d in decisions if d.data.get("rule") == "random"),
            "kept_too_large": sum(1 for d in decisions if d.data.get("rule") == "max_bytes"),
        }
        if not folded:
            return PassResult(module, tuple(decisions), stats)
        out = Module(tuple(functions), module.attrs, ids.next_id)
        return PassResult(out, tuple(decisions), stats)

    def _fold_block(self, block: Block, ids: IdCounter, decisions: list[Decision]) -> Block:
        from tx8lab.core.ops import OPS

        dense: dict[ValueKey, Array] = {}
        random: dict[ValueKey, int] = {}
        mapping: dict[ValueKey, Value] = {}
        out: list[Op] = []
        changed = False
        for op in block.ops:
            if mapping and any(v.key in mapping for v in op.operands):
                op = op.replace(operands=tuple(mapping.get(v.key, v) for v in op.operands))
                changed = True
            if op.kind == "tx8be.Constant":
                if is_dense_constant(op):
                    dense[op.result.key] = round_to(
                        np.asarray(op.attrs["value"]), op.result.type.dtype
                    )
                elif isinstance(op.attrs.get("value"), RandomInit):
                    random[op.result.key] = op.id
                out.append(op)
                continue
            if op.kind == "tx8be.Group":
                body = self._fold_block(op.regions[0], ids, decisions)
                if body is not op.regions[0]:
                    op = op.replace(regions=(body,))
                    changed = True
                out.append(op)
                continue
            entry = OPS.get(op.kind)
            if (
                op.kind in TERMINATORS
                or entry is None
                or not op.operands
                or op.regions
                or entry.family in NEVER_FOLD_FAMILIES
                or not all(v.key in dense or v.key in random for v in op.operands)
            ):
                out.append(op)
                continue
            weights = [random[v.key] for v in op.operands if v.key in random]
            folded = None
            if weights:
                decisions.append(
                    self.decide(
                        op.id,
                        "kept",
                        f"operand {_ids(weights)} is a RandomInit weight; folding would turn it "
                        "into dense bytes",
                        related=weights,
                        rule="random",
                    )
                )
            elif len(op.results) != 1:
                decisions.append(
                    self.decide(
                        op.id,
                        "kept",
                        f"{op.kind} has {len(op.results)} results; folding would add ops",
                        rule="multi_result",
                    )
                )
            elif result_bytes(op.result) > self.max_bytes:
                size = result_bytes(op.result)
                decisions.append(
                    self.decide(
                        op.id,
                        "kept",
                        f"the result would take {size} bytes > max_bytes {self.max_bytes}",
                        rule="max_bytes",
                        bytes=size,
                    )
                )
            else:
                folded = self._fold(op, [dense[v.key] for v in op.operands], ids, decisions)
            if folded is None:
                out.append(op)
                continue
            dense[folded.result.key] = np.asarray(folded.attrs["value"])
            mapping[op.result.key] = folded.result
            out.append(folded)
            changed = True
        if not changed:
            return block
        return Block(block.args, tuple(out))

    def _fold(
        self, op: Op, inputs: list[Array], ids: IdCounter, decisions: list[Decision]
    ) -> Op | None:
        from tx8lab.core.ops import OPS

        ttype = op.result.type
        try:
            with np.errstate(all="ignore"):
                (value,) = OPS[op.kind].compute(op, *inputs)
        except NotImplementedError as err:
            decisions.append(
                self.decide(op.id, "kept", f"no reference compute: {err}", rule="no_compute")
            )
            return None
        data = round_to(np.asarray(value), ttype.dtype)
        if tuple(data.shape) != ttype.shape:
            decisions.append(
                self.decide(
                    op.id,
                    "kept",
                    f"compute gave shape {data.shape}, the type says {ttype}",
                    rule="bad_compute",
                )
            )
            return None
        new_id = ids()
        new = make_op(
            "Constant",
            [],
            {"value": data, "dtype": ttype.dtype},
            op_id=new_id,
            result_types=[ttype],
            created_by=self.name,
        )
        sources = _ids([v.owner for v in op.operands])
        decisions.append(
            self.decide(
                op.id,
                "folded",
                f"all operands ({sources}) are constants; replaced by %{new_id}",
                related=[new_id],
                bytes=result_bytes(op.result),
                new_op=new_id,
            )
        )
        return new


def _ids(ids: list[int]) -> str:
    return ", ".join(f"%{i}" for i in ids)
