"""``layout_str``: the middle end's layout attribute (seed 001), and every helper on it.

Spec: seed 001 ("Layout Initialization and Pass"): ``layout_str`` is the middle end's
layout; CNN ops name feature layouts (``NCHW``/``NHWC``) and weight layouts
(``OIHW``/``HWOI``), non-CNN ops ``Tensor``/``NTensor`` ("whether dim 0 is 1"). A Gemm
reads ``"Tensor-Tensor-Tensor"``: the layouts of its two inputs, then its output.

This module is the one place that reads and writes the string; passes and the op library
go through it.

Readings chosen where the seed is vague:

- **Order.** One layout per operand, then one per result, joined by ``-``. A multi-result
  op (``Split``) lists every result; an op without operands (``Constant``) has only its
  result's. The whole string ``Unknown`` (the attribute's default) means nothing is known;
  inside a longer string an ``Unknown`` part means that one tensor is not known.
- **Tensor or NTensor** is a function of the shape, :func:`tensor_layout`, shared with the
  memory layouts (:func:`tx8lab.core.layouts.layout_for`): ``NTensor`` when the tensor has
  a batch dimension (rank >= 2) that is not 1. So when a ``Tensor``-family layout moves
  through an op it is re-derived from the destination's shape (:func:`carry_layout`):
  ``Tensor`` and ``NTensor`` are one family.
- **Dimension-named layouts** (``NHWC``, ``NCHW``, ``OHWI`` ...: one distinct capital letter
  per dimension) move only to a tensor of the same rank; a ``Transpose`` permutes the
  letters (:func:`permute_layout`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tx8lab.core.ir import TERMINATORS, Block, Module, Op
from tx8lab.core.layouts import layout_for
from tx8lab.errors import Tx8labError

#: The attribute's default: nothing known (seed "UNKNOWN").
UNKNOWN = "Unknown"
#: Compact layout of a tensor whose dim 0 is 1 (or that has no batch dimension).
TENSOR = "Tensor"
#: Compact layout of a tensor with a batch dimension that is not 1.
NTENSOR = "NTensor"
#: Feature-map layout of the library's CNN ops (Conv2d, pools, Resize work on NHWC).
NHWC = "NHWC"
#: Weight layout of Conv2d: ``[Cout, KH, KW, Cin/group]`` (see ``ops/conv.py``).
OHWI = "OHWI"
#: Separator between the parts of a ``layout_str``.
SEP = "-"

TENSOR_FAMILY = frozenset({TENSOR, NTENSOR})


def is_known(layout: str | None) -> bool:
    """Whether ``layout`` names a layout (not None, empty or ``Unknown``).

    Examples:
        >>> is_known("NHWC"), is_known("Unknown"), is_known(None)
        (True, False, False)
    """
    return bool(layout) and layout != UNKNOWN


def tensor_layout(shape: Sequence[int]) -> str:
    """``Tensor`` or ``NTensor`` for a tensor of ``shape`` (seed: "whether dim 0 is 1").

    Examples:
        >>> tensor_layout((1, 64)), tensor_layout((4, 64)), tensor_layout(())
        ('Tensor', 'NTensor', 'Tensor')
    """
    return layout_for(tuple(shape), aligned=False).value


def is_dim_named(layout: str) -> bool:
    """Whether ``layout`` names one dimension per letter (``NHWC``, ``OHWI``, ``NC``).

    Examples:
        >>> is_dim_named("NHWC"), is_dim_named("NTensor"), is_dim_named("NHHC")
        (True, False, False)
    """
    return (
        layout not in TENSOR_FAMILY
        and layout.isascii()
        and layout.isalpha()
        and layout.isupper()
        and len(set(layout)) == len(layout)
    )


def carry_layout(layout: str | None, shape: Sequence[int]) -> str | None:
    """``layout`` moved onto a tensor of ``shape`` whose dims keep their meaning; None = cannot.

    A ``Tensor``-family layout is re-derived from ``shape``; a dimension-named one needs one
    letter per dimension; any other name moves unchanged.

    Examples:
        >>> carry_layout("Tensor", (3, 8)), carry_layout("NHWC", (1, 4, 4, 8))
        ('NTensor', 'NHWC')
        >>> carry_layout("NHWC", (4, 8)) is None
        True
    """
    if not is_known(layout):
        return None
    assert layout is not None
    if layout in TENSOR_FAMILY:
        return tensor_layout(shape)
    if is_dim_named(layout) and len(layout) != len(shape):
        return None
    return layout


def permute_layout(layout: str | None, perm: Sequence[int]) -> str | None:
    """A dimension-named layout after ``transpose(perm)``: output dim i is input dim perm[i].

    Examples:
        >>> permute_layout("NHWC", (0, 3, 1, 2))
        'NCHW'
    """
    if not is_known(layout) or layout is None or not is_dim_named(layout):
        return None
    if len(layout) != len(perm):
        return None
    return "".join(layout[p] for p in perm)


def join_layout(parts: Sequence[str | None]) -> str:
    """Parts joined into a ``layout_str``; an unknown part becomes ``Unknown``.

    Examples:
        >>> join_layout(["NHWC", "OHWI", "NHWC"])
        'NHWC-OHWI-NHWC'
        >>> join_layout([])
        'Unknown'
    """
    if not parts:
        return UNKNOWN
    for part in parts:
        if part is not None and (SEP in part or not part):
            raise Tx8labError(f"layout part {part!r} must be a non-empty name without {SEP!r}")
    return SEP.join(part if part is not None and is_known(part) else UNKNOWN for part in parts)


def split_layout(text: str, count: int, where: str = "layout_str") -> list[str | None]:
    """``count`` parts of a ``layout_str``, None for unknown ones (``Unknown`` is all None).

    Raises:
        Tx8labError: ``text`` does not have ``count`` non-empty parts; the message starts
            with ``where`` (e.g. the op's label).

    Examples:
        >>> split_layout("NHWC-OHWI-NHWC", 3)
        ['NHWC', 'OHWI', 'NHWC']
        >>> split_layout("Unknown", 2)
        [None, None]
    """
    if not isinstance(text, str):
        raise Tx8labError(f"{where}: layout_str must be a string, got {text!r}")
    if text in ("", UNKNOWN):
        return [None] * count
    parts = text.split(SEP)
    if len(parts) != count or not all(parts):
        raise Tx8labError(
            f"{where}: layout_str {text!r} must have {count} parts joined by {SEP!r} "
            "(one per operand, then one per result)"
        )
    return [p if is_known(p) else None for p in parts]


def op_layouts(op: Op) -> tuple[list[str | None], list[str | None]]:
    """(operand layouts, result layouts) from an op's ``layout_str`` attribute (None: unknown).

    Raises:
        Tx8labError: the attribute is malformed (names the op), or a dimension-named part
            does not fit its tensor's rank.
    """
    values = [*op.operands, *op.results]
    parts = split_layout(op.attrs.get("layout_str", UNKNOWN), len(values), op.label)
    for part, value, index in zip(parts, values, range(len(values)), strict=True):
        if part is not None and is_dim_named(part) and len(part) != value.type.rank:
            what = (
                f"operand {index}"
                if index < len(op.operands)
                else f"result {index - len(op.operands)}"
            )
            raise Tx8labError(
                f"{op.label}: layout_str part {part!r} names {len(part)} dimensions but "
                f"{what} is {value.type}"
            )
    return parts[: len(op.operands)], parts[len(op.operands) :]


def result_layout(op: Op, index: int = 0) -> str | None:
    """The layout of result ``index`` in an op's ``layout_str`` (None: unknown)."""
    return op_layouts(op)[1][index]


def set_layout_strs(module: Module, layouts: Mapping[int, str]) -> Module:
    """``module`` with ``layout_str`` set on the ops whose ids ``layouts`` lists.

    Ops that do not change stay the same objects, and ``module`` itself comes back when
    nothing changes (so the runner sees an unchanged step). Group bodies are walked too.
    """

    def rebuild(block: Block) -> Block:
        ops: list[Op] = []
        changed = False
        for op in block.ops:
            new = op
            if op.regions:
                regions = tuple(rebuild(r) for r in op.regions)
                if any(a is not b for a, b in zip(regions, op.regions, strict=True)):
                    new = new.replace(regions=regions)
            text = layouts.get(op.id) if op.kind not in TERMINATORS else None
            if text is not None and op.attrs.get("layout_str") != text:
                new = new.with_attrs(layout_str=text)
            changed = changed or new is not op
            ops.append(new)
        return Block(block.args, tuple(ops)) if changed else block

    functions = tuple(
        f if (body := rebuild(f.body)) is f.body else f.with_ops(body.ops) for f in module.functions
    )
    if all(a is b for a, b in zip(functions, module.functions, strict=True)):
        return module
    return Module(functions, module.attrs, module.next_id)


__all__ = [
    "NHWC",
    "NTENSOR",
    "OHWI",
    "SEP",
    "TENSOR",
    "TENSOR_FAMILY",
    "UNKNOWN",
    "carry_layout",
    "is_dim_named",
    "is_known",
    "join_layout",
    "op_layouts",
    "permute_layout",
    "result_layout",
    "set_layout_strs",
    "split_layout",
    "tensor_layout",
]
