"""layout-init: give Gemm/Conv ops their fixed ``layout_str`` and every other op ``Unknown``.

Spec: seed 001 ("Layout Initialization and Pass", layoutInitPass: "用于初始化计算图中 GemmOP
和 ConvOP 的 layout_str,其他的所有算子 layout_str 都设置为 UNKNOWN"). One walk over every
op, group bodies included: an op whose op-library entry has an
:meth:`~tx8lab.core.ops.registry.OpDef.init_layout` gets it, every other op ``Unknown``.

Readings chosen where the seed is vague:

- **Which ops.** "GemmOP and ConvOP" are the ops whose layout the NE fixes: Gemm, MatMul,
  BatchMatMul and Conv2d. The op library says which (``init_layout``), so a new NE op
  joins by defining it; pools and BatchNorm get their layout from ``layout-transmit``.
- **The strings** (:mod:`tx8lab.core.layout_str`): one layout per operand, then the
  result's. A matmul-family op is ``Tensor``/``NTensor`` per tensor by its dim 0
  (1: ``Tensor``, more: ``NTensor``), so [1, K] x [K, N] is "Tensor-NTensor-Tensor"
  (the weight has K rows) and a batch of rows times a weight "NTensor-NTensor-NTensor".
  The seed's figure labels its GemmOp "Tensor-Tensor-Tensor" without giving shapes;
  under this rule that is a Gemm whose three tensors all have dim 0 of 1. A Conv2d is
  ``NHWC-OHWI-NHWC`` (``NHWC-OHWI-Tensor-NHWC`` with a bias), OHWI because this
  library's weight is ``[Cout, KH, KW, Cin/group]``.
- ``Unknown`` is written on every other op rather than left as the attribute's default,
  as the seed "sets" it: the printed IR then shows which ops ``layout-transmit`` must
  infer. A layout an op had before is overwritten (the analysis starts afresh), and the
  op's decision says what it was.
- A ``tx8be.Group`` gets ``Unknown`` like any other op; its body's ops are initialised too.
  Terminators have no layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tx8lab.core.ir import TERMINATORS, Module, Op
from tx8lab.core.layout_str import UNKNOWN, op_layouts, set_layout_strs
from tx8lab.core.passes.base import Decision, Pass, PassResult
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig


def initial_layout(op: Op) -> str | None:
    """The layout_str layout-init gives ``op``: its fixed one, or None for ``Unknown``.

    Raises:
        Tx8labError: the op kind is not in the op library (names the op), or the library's
            string does not fit the op.

    Examples:
        >>> from tx8lab.core.builder import Builder
        >>> b = Builder(); a = b.input((1, 8)); w = b.input((8, 4))
        >>> b.output(b.op("Gemm", a, w)); gemm = b.finish().main.ops[0]
        >>> initial_layout(gemm)
        'Tensor-NTensor-Tensor'
    """
    from tx8lab.core.ops import OPS

    entry = OPS.get(op.kind)
    if entry is None:
        raise Tx8labError(
            f"{op.label}: not in the op library, so its layout is unknown; "
            "add an OpDef entry for it"
        )
    text = entry.init_layout(op)
    if text is not None:
        # a malformed string from the library is an error naming the op
        op_layouts(op.with_attrs(layout_str=text))
    return text


@dataclass(frozen=True)
class LayoutInit(Pass):
    """Seed layoutInitPass (see the module docstring)."""

    name: ClassVar[str] = "layout-init"
    summary: ClassVar[str] = "set layout_str of Gemm/MatMul/Conv ops; every other op Unknown"

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        layouts: dict[int, str] = {}
        decisions: list[Decision] = []
        for op in module.walk():
            if op.kind in TERMINATORS:
                continue
            text = initial_layout(op)
            layouts[op.id] = text or UNKNOWN
            decisions.append(self._decision(op, text))
        stats: dict[str, int | float | str] = {
            "fixed": sum(1 for d in decisions if d.data["rule"] == "fixed"),
            "unknown": sum(1 for d in decisions if d.data["rule"] == "unknown"),
            "overwritten": sum(1 for d in decisions if "previous" in d.data),
        }
        return PassResult(set_layout_strs(module, layouts), tuple(decisions), stats)

    def _decision(self, op: Op, text: str | None) -> Decision:
        previous = op.attrs.get("layout_str")
        extra: dict[str, str] = {}
        if text is not None:
            reason = (
                f"{op.kind} runs on the NE with a fixed layout: operands then result "
                "(seed layoutInitPass: Gemm and Conv)"
            )
            rule = "fixed"
        elif op.kind == "tx8be.Group":
            reason = "a group's layout comes from its body's ops (layout-transmit)"
            rule = "unknown"
        else:
            reason = f"{op.kind} is not a Gemm/Conv op: layout-transmit infers it"
            rule = "unknown"
        choice = text or UNKNOWN
        if isinstance(previous, str) and previous not in (choice, UNKNOWN):
            reason += f"; it was {previous!r} before, which is overwritten"
            extra["previous"] = previous
        return self.decide(op.id, choice, reason, related=(), kind=op.kind, rule=rule, **extra)

    def check(self, module: Module) -> list[str]:
        """Post-condition: every op holds its initial layout or ``Unknown``."""
        problems = []
        for op in module.walk():
            if op.kind in TERMINATORS:
                continue
            want = initial_layout(op) or UNKNOWN
            got = op.attrs.get("layout_str")
            if got != want:
                problems.append(
                    f"{op.label}: layout_str is {got!r} after layout-init, not {want!r}"
                )
        return problems
