"""The op registry against docs/ops.md: every kind present, documented, with op_attr/align."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.core.ops.ophelpers import build
from tx8lab.core.attrs import AlignMode, Engine, RandomInit
from tx8lab.core.ir import Op, TensorType
from tx8lab.core.ops import OPS
from tx8lab.core.ops.registry import OpAttr
from tx8lab.errors import Tx8labError

F = "f32"
X4 = TensorType((1, 8, 8, 4), F)
V = TensorType((2, 3), F)
C4 = TensorType((4,), F)
IDX = TensorType((2,), "i32")

#: One valid instance per kind: operand types and attributes.
SAMPLES: dict[str, tuple[tuple[TensorType, ...], dict[str, Any]]] = {
    **{k: ((V, V), {}) for k in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow")},
    "Compare": ((V, V), {"mode": "lt"}),
    "Where": ((TensorType((2, 3), "i1"), V, V), {}),
    **{
        k: ((V,), {})
        for k in (
            "Relu",
            "Sigmoid",
            "HardSwish",
            "Silu",
            "Tanh",
            "Erf",
            "Exp",
            "Log",
            "Sqrt",
            "Rsqrt",
            "Neg",
            "Abs",
            "Reciprocal",
            "Clip",
            "HardSigmoid",
            "Gelu",
            "Softmax",
        )
    },
    "LayerNorm": ((V, TensorType((3,), F), TensorType((3,), F)), {}),
    "RMSNorm": ((V, TensorType((3,), F)), {}),
    "BatchNorm_Inference": ((X4, C4, C4, C4, C4), {}),
    "Gemm": ((V, TensorType((3, 5), F)), {}),
    "MatMul": ((V, TensorType((3, 5), F)), {}),
    "BatchMatMul": ((TensorType((2, 2, 3), F), TensorType((2, 3, 5), F)), {}),
    "Conv2d": ((X4, TensorType((6, 3, 3, 4), F)), {}),
    "MaxPool2d": ((X4,), {"kernel": (2, 2)}),
    "AvgPool2d": ((X4,), {"kernel": (2, 2)}),
    "GlobalAvgPool": ((X4,), {}),
    "ReduceSum": ((V,), {"axes": (1,)}),
    "ReduceMean": ((V,), {"axes": (1,)}),
    "ReduceMax": ((V,), {"axes": (1,)}),
    "Reshape": ((V,), {"shape": (3, 2)}),
    "Transpose": ((V,), {"perm": (1, 0)}),
    "Concatenate": ((V, V), {"axis": 0}),
    "Split": ((V,), {"axis": 1, "sizes": (1, 2)}),
    "Slice": ((V,), {"starts": (0, 1), "ends": (2, 3)}),
    "Pad": ((V,), {"pads": (1, 0, 0, 1)}),
    "Broadcast": ((TensorType((1, 3), F),), {"shape": (4, 3)}),
    "Gather": ((V, IDX), {}),
    "Embedding": ((V, IDX), {}),
    "Scatter": ((V, TensorType((1, 3), "i32"), TensorType((1, 3), F)), {}),
    "Convert": ((V,), {"dtype": "f16"}),
    "Resize": ((X4,), {"scale_h": 2, "scale_w": 2}),
    "Unpack": ((TensorType((2, 4), "i8"),), {}),
    "Tuple": ((V, C4), {}),
    "ChannelNorm": ((V,), {"direction": True}),
    "Constant": ((), {"value": np.zeros((2, 3), np.float32)}),
    "LoadConst": ((), {"value": RandomInit(1), "shape": (2, 3), "dtype": "f16"}),
    "LoadVar": ((V,), {}),
    "StoreVar": ((V,), {}),
}

ALIGN_ONLY = {
    "Gemm",
    "MatMul",
    "BatchMatMul",
    "Conv2d",
    "MaxPool2d",
    "AvgPool2d",
    "GlobalAvgPool",
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "Transpose",
    "Concatenate",
    "Scatter",
    "Pad",
    "BatchNorm_Inference",
}
NE_OPS = {"Gemm", "MatMul", "BatchMatMul", "Conv2d"}


def _doc_kinds() -> list[str]:
    """Every kind named in the table of docs/ops.md."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "ops.md").read_text()
    kinds: list[str] = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 3 and cells[1] and not cells[1].startswith(("family", "---")):
            for name in re.split(r"[,/]\s*", cells[2]):
                name = name.strip()
                if re.fullmatch(r"[A-Z][A-Za-z0-9_]*", name):
                    kinds.append(name)
    return kinds


def _sample(kind: str) -> Op:
    types, attrs = SAMPLES[kind]
    return build(kind, *types, **attrs)


def test_every_documented_kind_is_registered() -> None:
    kinds = _doc_kinds()
    assert len(set(kinds)) == 59
    missing = [k for k in kinds if f"tx8be.{k}" not in OPS]
    assert not missing
    assert set(SAMPLES) | {"Group"} == {k.split(".", 1)[1] for k in OPS}


@pytest.mark.parametrize("full", sorted(OPS))
def test_every_kind_has_docstring_family_and_op_attr(full: str) -> None:
    entry = OPS[full]
    cls = type(entry)
    assert cls.__doc__, full
    assert cls.__doc__.strip(), full
    assert sys.modules[cls.__module__].__doc__, cls.__module__
    assert "Spec:" in (sys.modules[cls.__module__].__doc__ or "")
    assert entry.family != "other"
    assert entry.summary
    name = full.split(".", 1)[1]
    if name == "Group":
        return
    op = _sample(name)
    attr = entry.op_attr(op)
    assert isinstance(attr, OpAttr)
    assert attr.align_mode is not AlignMode.UNKNOWN
    assert entry.align_mode(op) is attr.align_mode
    want_align = AlignMode.ALIGN if name in ALIGN_ONLY else AlignMode.BOTH
    if name not in ("Slice", "ChannelNorm"):
        assert attr.align_mode is want_align, name
    if name in NE_OPS:
        assert attr.engine is Engine.NE
    elif name in ("LoadVar", "LoadConst"):
        assert attr.engine is Engine.RDMA
    elif name == "StoreVar":
        assert attr.engine is Engine.WDMA
    else:
        assert attr.engine is Engine.CT


def test_group_infer_type_says_types_come_from_the_body() -> None:
    with pytest.raises(Tx8labError, match=r"tx8be.Group: .*Return"):
        OPS["tx8be.Group"].infer_type([V], {})


def test_batchnorm_op_attr_is_seed_001_query_op_attr() -> None:
    one = _sample("BatchNorm_Inference")
    attr = OPS[one.kind].op_attr(one)
    assert attr == OpAttr(
        align_mode=AlignMode.ALIGN, need_preset_to_npu=True, default_layout="Tensor"
    )
    x2 = TensorType((2, 8, 8, 4), F)
    two = build("BatchNorm_Inference", x2, C4, C4, C4, C4)
    assert OPS[two.kind].op_attr(two).default_layout == "NTensor"


def test_embedding_skips_the_table_load() -> None:
    op = _sample("Embedding")
    attr = OPS[op.kind].op_attr(op)
    assert not attr.needs_load(0)
    assert attr.needs_load(1)


@pytest.mark.parametrize(
    ("start", "end", "mode"),
    [
        (0, 128, AlignMode.ALIGN),
        (64, 128, AlignMode.NALIGN),
        (3, 64, AlignMode.NALIGN),
        (3, 100, AlignMode.ALIGN),
        (-64, 192, AlignMode.NALIGN),
        (1, 999, AlignMode.ALIGN),
    ],
)
def test_slice_alignment_rule_from_seed_000(start: int, end: int, mode: AlignMode) -> None:
    x = TensorType((1, 200), F)
    op = build("Slice", x, starts=(0, start), ends=(1, end))
    assert OPS[op.kind].align_mode(op) is mode


def test_channel_norm_alignment_follows_direction() -> None:
    for direction, mode in ((True, AlignMode.ALIGN), (False, AlignMode.NALIGN)):
        op = build("ChannelNorm", V, direction=direction)
        assert OPS[op.kind].align_mode(op) is mode


def _rows_read(kind: str, x: TensorType, rows: tuple[int, int], **attrs: Any) -> set[int]:
    """Brute force: the input rows whose values reach output rows ``rows`` (by compute)."""
    w = TensorType((2, 3, 3, x.shape[3]), F)
    op = build(kind, x, w, **attrs) if kind == "Conv2d" else build(kind, x, **attrs)
    read = set()
    for r in range(x.shape[1]):
        data = np.zeros(x.shape, np.float32)
        data[:, r] = 1.0
        args = [data] + ([np.ones(w.shape, np.float32)] if kind == "Conv2d" else [])
        (out,) = OPS[op.kind].compute(op, *args)
        if np.any(np.asarray(out)[:, rows[0] : rows[1]] != 0):
            read.add(r)
    return read


@pytest.mark.parametrize(
    ("kind", "attrs", "rows"),
    [
        ("Conv2d", {"pads": (1, 1, 1, 1)}, (4, 8)),
        ("Conv2d", {"pads": (1, 1, 1, 1)}, (0, 2)),
        ("Conv2d", {"strides": (2, 2), "pads": (1, 1, 1, 1)}, (3, 5)),
        ("Conv2d", {"dilations": (2, 2)}, (1, 3)),
        ("MaxPool2d", {"kernel": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1)}, (2, 4)),
    ],
)
def test_back_window_gives_the_input_rows_a_result_window_reads(
    kind: str, attrs: dict[str, Any], rows: tuple[int, int]
) -> None:
    x = TensorType((1, 12, 12, 4), F)
    w = TensorType((2, 3, 3, 4), F)
    op = build(kind, x, w, **attrs) if kind == "Conv2d" else build(kind, x, **attrs)
    n, _, ow, oc = op.results[0].type.shape
    windows = OPS[op.kind].back_window(op, ((0, n), rows, (0, ow), (0, oc)))
    expected = _rows_read(kind, x, rows, **attrs)
    start, stop = windows[0][1]
    assert set(range(start, stop)) == expected  # the halo, clipped to the input
    assert windows[0][3] == (0, 4)  # the conv's input channels (a reduction) whole
    if kind == "Conv2d":
        assert windows[1] == ((0, 2), (0, 3), (0, 3), (0, 4))  # the weights of both outputs


def test_back_window_of_a_matmul_reads_k_whole_and_the_window_s_rows_and_columns() -> None:
    op = build("MatMul", TensorType((64, 96), F), TensorType((96, 80), F))
    a, b = OPS[op.kind].back_window(op, ((16, 32), (40, 80)))
    assert a == ((16, 32), (0, 96))
    assert b == ((0, 96), (40, 80))


def test_back_window_refuses_a_window_that_is_not_the_result_s() -> None:
    op = _sample("Add")
    rank = op.results[0].type.rank
    with pytest.raises(Tx8labError, match=r"tx8be\.Add: back_window got a window of 1 dims"):
        OPS[op.kind].back_window(op, ((0, 1),) if rank != 1 else ((0, 1), (0, 1)))
    full = tuple((0, d) for d in op.results[0].type.shape)
    bad = ((0, full[0][1] + 1), *full[1:])
    with pytest.raises(Tx8labError, match=r"back_window dim 0: .* 0 <= start < stop <="):
        OPS[op.kind].back_window(op, bad)
