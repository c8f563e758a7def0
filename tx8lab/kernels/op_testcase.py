"""The random test-case generator for every op kind of the op library (seed 001 "Test Case").

Spec: seed 001 "Test Case": per op, ``init_param`` draws random dims, dtype, layout and
shape within what the op supports and builds an MLIR module with one function holding the
op; ``init_data`` makes inputs in ranges that avoid NaN and cover both signs; ``compile``
runs the CPU reference (the ComputeInterface) and the backend (tx8be codegen);
``saveInfoFile`` writes the data as ``.bin`` files and the case's description as ``.json``.
:mod:`tx8lab.kernels.testcase` does this for BatchNorm_Inference against the numpy model of
its kernel; this module does it for any op kind of :data:`tx8lab.core.ops.OPS` against the
whole compiler: the default pipeline schedules the one-op module, its main.c is compiled
and executed on the host model of the chip (:func:`tx8lab.core.execute.execute_module`),
and the outputs are compared with the interpreter's. :func:`rerun_case` reads a case
directory back, checks every file, re-runs the same flow and compares with the saved
expected output.

Readings chosen where the seed is vague:

- **Support** ("维度/数据类型/layout 在算子支持范围内随机"): per kind, the element types the
  op library accepts and the pipeline runs: every op takes f32, f16, bf16 and tf32; ops
  that are exact on integers (elementwise arithmetic, Relu/Neg/Abs/Clip, ReduceSum/Max,
  MaxPool, the data-movement ops, ChannelNorm) also take i8 and i32; the matrix-engine ops
  (MatMul, BatchMatMul, Conv2d) take i8 (the NE has no i32 mode); Gemm, transcendental
  activations, the norms, AvgPool, GlobalAvgPool and ReduceMean are float only. i64 is
  left out: the aligned layouts do not define it. Ranks are 1-4 (what the op allows:
  NHWC rank 4 for conv, pool and Resize; 2-4 for BatchNorm_Inference; 2 for Gemm; 1, 2
  or 4 for ChannelNorm, whose Cx side needs rank 2 or 4).
  Shapes keep dims small (batch 1-4, inner dims 1-8) and draw the last (channel) dim from
  1-32, 33-64 or 65-160, so C <= 32, one Cx block and blocks plus a C0 tail all occur.
  Attributes are drawn over their whole declared range: axes (negative too), perms,
  kernel/stride/pad/dilation/group, ceil_mode, keepdims, Gemm's transposes and scales, a
  Slice's clamped and strided (also negative-step) windows, Convert's target type.
- **Weights** are ``tx8be.Constant`` ops with a ``RandomInit`` value (what
  ``Builder.weight`` makes) whose seed comes from the case's seed, uniform in the
  operand's range, for the operands a compiler sees as weights: a conv's filter and bias,
  Embedding's table, and by a coin flip a matmul's second operand, Gemm's B and C, the
  norms' gamma/beta/parameters and one operand of a binary op. Every other operand is a
  function argument.
- **Data ranges** (no NaN, no inf, both signs): floats uniform in [-4, 4] with the first
  element negative and the last positive; positive ranges where the op needs them (Log,
  Sqrt, Rsqrt in [0.1, 4]; a variance in [0.1, 2]; Pow's base in [0.5, 2] with exponents
  in [-2, 2]); divisors and Reciprocal's operand of magnitude [0.25, 4] (or [1, 4] for
  integers) with both signs; integers in [-8, 8] ([-128, 127] for Unpack's packed bytes);
  matrix-engine operands in [-2, 2] (integers [-3, 3]); norm parameters in [-2, 2] (gamma,
  scale) or [-1, 1] (beta, offset, mean, Gemm's C); indices in range (Gather also
  negative ones, numpy style); Scatter's indices distinct along the axis (ONNX leaves the
  order of repeated indices undefined); i1 both values.
  Weights are uniform in their range, which covers both signs when it does.
- **Layout** of the ``.bin`` images: one coin flip per case between the aligned Cx/NCx
  image and the compact Tensor/NTensor one (``N``- prefixed when dim 0 is not 1, as
  :func:`tx8lab.core.layouts.layout_for` names it), applied to every file whose element
  type and rank the aligned layouts define; the others (i1, i64; rank 3 and >= 5, which
  have no Cx: seed 000) are compact. An i1 image is one
  byte (0 or 1) per element, the compact i8 image of its values.
- **Comparison**: the executed outputs against the interpreter's (``Execution.ok``) and
  against this module's reference of the module before the pipeline, both with
  :func:`tx8lab.core.execute.compare_outputs`' rule (bit-exact unless partial sums or
  matrix-engine products are reordered, then 4 ulp at the output's magnitude).
- **Failures** of the pipeline or of the executed program are results, not exceptions:
  the case is written with its error in ``case.json`` (and main.c when codegen got that
  far), so a failing case is a reproducer. Kinds that fail today for a reason in the
  compiler are listed in :data:`KNOWN_FAILING` with that reason.
- **Files**: ``<out>/<Kind>_s<seed>/`` holds ``case.json`` (parameters, hardware
  overrides, the printed module, one entry per file with its shape, dtype, layout, byte
  count and sha256, and the execution's result), ``in<i>_<name>.bin`` per function
  argument, ``const<j>_<name>.bin`` per weight (its materialised values),
  ``out<i>_expected.bin`` per output (the reference) and ``main.c``. The directory is
  written under a temporary name next to it and renamed when complete, so no
  half-written case is left behind; an existing case directory is replaced, any other
  existing path is refused.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import re
import secrets
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from tx8lab.core.attrs import LayoutMode, RandomInit
from tx8lab.core.builder import Builder
from tx8lab.core.dtypes import FLOAT_DTYPES, round_to
from tx8lab.core.execute import (
    OutputDiff,
    compare_outputs,
    execute_module,
    reorders_sums,
    sum_ulps,
)
from tx8lab.core.interpret import interpret
from tx8lab.core.ir import Module, Value
from tx8lab.core.layouts import (
    ALIGNED_DTYPES,
    aligned_view,
    has_aligned_layout,
    layout_for,
    pack,
    unpack,
)
from tx8lab.core.ops import OPS
from tx8lab.core.text import parse_module, print_module
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.presets import resolve_hw
from tx8lab.kernels.testcase import read_checked

Array = npt.NDArray[Any]

FORMAT_VERSION = 1
FLOATS = ("f32", "f16", "bf16", "tf32")
INTS = ("i8", "i32")
#: Element types of the matrix engine (seed 001: no i32 mode).
NE_TYPES = (*FLOATS, "i8")


@dataclass(frozen=True)
class KnownFailure:
    """A failure in the compiler that cases of one op kind run into today."""

    reason: str
    """What fails and why, with the error's text."""
    pattern: str
    """A regular expression the failing case's error (or its output diff) matches."""
    seeds: tuple[int, ...]
    """Seeds whose case shows it on the default chip (the tests run them)."""
    always: bool = False
    """Every case of the kind fails (else only some shapes do)."""


_TOLERANCE_PATTERN = r"f32\[.*OUTSIDE the tolerance"

#: Op kinds whose cases fail in the compiler today, found by sweeping seeds 0-199 (every
#: kind 0-59) on the default chip. Each entry names the failure; the tests assert that
#: its seeds still fail, so a fix is noticed and the entry removed. A case of one of
#: these kinds that fails with another error is not covered by the entry.
KNOWN_FAILING: dict[str, KnownFailure] = {
    "tx8be.Compare": KnownFailure(
        "the i1 result has no memory image in the host model of the chip: storing it "
        "raises 'i1 has no memory layout here: store it as i8 (Convert) first' "
        "(layouts.geometry via hostmodel.spm_write), while the scheduler sizes an i1 "
        "buffer one byte per element (registry.value_bytes); the pipeline itself passes",
        r"i1 has no memory layout here",
        (0,),
        always=True,
    ),
    "tx8be.Where": KnownFailure(
        "the i1 condition has no memory image in the host model of the chip: placing the "
        "argument in DDR raises 'i1 has no memory layout here: store it as i8 (Convert) "
        "first' (layouts.geometry via hostmodel.setup); the pipeline itself passes",
        r"i1 has no memory layout here",
        (0,),
        always=True,
    ),
    "tx8be.Tuple": KnownFailure(
        "a function that returns a Tuple's results is refused by the program: 'program: "
        "result 0 of main comes from %0 tx8be.Tuple, which stores nothing to DDR; the "
        "program cannot return it' (the interpreter runs the module)",
        r"comes from %\d+ tx8be.Tuple, which stores nothing to DDR",
        (0,),
        always=True,
    ),
    "tx8be.MatMul": KnownFailure(
        "1 of seeds 0-199: an f32 product with a long K differs from the interpreter by "
        "more than execute's bound of 4 ulp at the output's magnitude, with no partial "
        "sum: numpy's matmul sums each tile's slice in another order than the whole "
        "product (seed 42, a[3,11,137] @ b[137,19]: max |diff| 2.67e-05, tolerance "
        "2.28e-05); the bound does not grow with K",
        _TOLERANCE_PATTERN,
        (42,),
    ),
    "tx8be.Gemm": KnownFailure(
        "1 of seeds 0-199: as MatMul's, an f32 product with a long K outside execute's "
        "4-ulp bound (seed 69, A[133,14] transposed @ B[133,71] + C: max |diff| 1.53e-05)",
        _TOLERANCE_PATTERN,
        (69,),
    ),
}

#: Families whose kinds are not standalone graphs: the pipeline makes them.
NOT_GENERABLE: dict[str, str] = {
    "memory": (
        "is a memory op the pipeline inserts around a group (move-constant, group-ldst); "
        "a one-op module of it has nothing to compute: test it through a compute op's case"
    ),
    "group": (
        "is made by the grouping passes from a body of ops; generate a case of an op "
        "inside it instead"
    ),
}

#: How an operand's data is drawn (module doc, **Data ranges**).
RULES = ("range", "magnitude", "index", "distinct", "bool")


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Operand:
    """One operand of the case's op: its type and how its data is drawn."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    weight: bool = False
    """A ``RandomInit`` constant in the module (True) or a function argument."""
    low: float = -4.0
    high: float = 4.0
    rule: str = "range"
    """``range``: uniform in [low, high]; ``magnitude``: |v| in [low, high], both signs;
    ``index``: integers in [low, high]; ``distinct``: Scatter indices, distinct along
    ``axis``, in [0, high]; ``bool``: both truth values."""
    axis: int = 0
    init_seed: int = 0
    """The ``RandomInit`` seed of a weight."""

    def as_json(self) -> dict[str, Any]:
        """The entry ``case.json`` keeps."""
        return {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "weight": self.weight,
            "low": self.low,
            "high": self.high,
            "rule": self.rule,
            "axis": self.axis,
            "init_seed": self.init_seed,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Operand:
        """Inverse of :meth:`as_json`."""
        return Operand(
            str(data["name"]),
            tuple(int(d) for d in data["shape"]),
            str(data["dtype"]),
            bool(data["weight"]),
            float(data["low"]),
            float(data["high"]),
            str(data["rule"]),
            int(data["axis"]),
            int(data["init_seed"]),
        )


@dataclass(frozen=True)
class OpCaseParam:
    """One test case's configuration (seed ``init_param``)."""

    name: str
    kind: str
    """Full kind, ``tx8be.MatMul``."""
    seed: int
    dtype: str
    """The element type drawn for the op (its data operands')."""
    aligned: bool
    """The ``.bin`` images are Cx/NCx where the dtype allows (True) or Tensor/NTensor."""
    operands: tuple[Operand, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    hw: tuple[str, ...] = ()
    """Hardware specs for :func:`tx8lab.hw.presets.resolve_hw` (preset names, key=value)."""

    @property
    def short_kind(self) -> str:
        """``MatMul`` of ``tx8be.MatMul``."""
        return self.kind.split(".", 1)[1]

    def describe(self) -> str:
        """One line: dtype, operand shapes (``=w`` for weights), attributes, layout."""
        shapes = " ".join(
            f"{o.name}{list(o.shape)}"
            + ("=w" if o.weight else "")
            + (f":{o.dtype}" if o.dtype != self.dtype else "")
            for o in self.operands
        )
        attrs = " ".join(f"{k}={_show(v)}" for k, v in sorted(self.attrs.items()))
        image = "aligned" if self.aligned else "compact"
        return " ".join(p for p in (self.dtype, shapes, attrs, image) if p)

    def as_json(self) -> dict[str, Any]:
        """The ``param`` entry of ``case.json``."""
        return {
            "kind": self.kind,
            "seed": self.seed,
            "dtype": self.dtype,
            "aligned": self.aligned,
            "operands": [o.as_json() for o in self.operands],
            "attrs": {k: _to_json(v) for k, v in self.attrs.items()},
            "hw": list(self.hw),
        }


def _show(value: Any) -> str:
    if isinstance(value, tuple | list):
        return "(" + ",".join(_show(v) for v in value) + ")"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _to_json(value: Any) -> Any:
    return [_to_json(v) for v in value] if isinstance(value, tuple | list) else value


def _from_json(value: Any) -> Any:
    return tuple(_from_json(v) for v in value) if isinstance(value, list) else value


def resolve_kind(kind: str) -> str:
    """The full kind for ``MatMul`` or ``tx8be.MatMul`` (any case), or an error with close names.

    Examples:
        >>> resolve_kind("matmul"), resolve_kind("tx8be.Softmax")
        ('tx8be.MatMul', 'tx8be.Softmax')
    """
    text = str(kind).strip()
    full = text if "." in text else f"tx8be.{text}"
    if full in OPS:
        return full
    by_lower = {k.lower(): k for k in OPS}
    if full.lower() in by_lower:
        return by_lower[full.lower()]
    shorts = [k.split(".", 1)[1] for k in sorted(OPS)]
    close = difflib.get_close_matches(text.split(".")[-1], shorts, n=4, cutoff=0.5)
    hint = f"close names: {', '.join(close)}" if close else f"kinds: {', '.join(shorts)}"
    raise Tx8labError(
        f"test case: unknown op kind {text!r}; {hint} (the op library tx8lab.core.ops.OPS; "
        "`all` generates every kind)"
    )


def check_generable(kind: str) -> str:
    """The full kind if the generator can make a case of it, else a clear error."""
    full = resolve_kind(kind)
    family = OPS[full].family
    if family in NOT_GENERABLE:
        raise Tx8labError(f"test case: {full} ({family} family) {NOT_GENERABLE[family]}")
    if full.split(".", 1)[1] not in _KINDS:
        raise Tx8labError(
            f"test case: {full} has no parameter generator in tx8lab.kernels.op_testcase; "
            "add one to its _KINDS table"
        )
    return full


def generable_kinds() -> list[str]:
    """Every kind the generator makes cases of (full names, sorted)."""
    return sorted(
        k for k, d in OPS.items() if d.family not in NOT_GENERABLE and k.split(".")[1] in _KINDS
    )


def supported_dtypes(kind: str) -> tuple[str, ...]:
    """The element types the generator draws for ``kind`` (module doc, **Support**)."""
    return _KINDS[check_generable(kind).split(".", 1)[1]][0]


def check_via(via: str) -> str:
    """``via`` if it names a way to execute (``c`` or ``program``), else a clear error."""
    if via not in ("c", "program"):
        raise Tx8labError(
            f"test case: via {via!r} must be 'c' (compile and run main.c) or 'program' "
            "(walk the Program's command streams)"
        )
    return via


def check_seed(seed: Any) -> int:
    """``seed`` as an int in [0, 2**63), or an error saying what a seed is."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed < 2**63:
        raise Tx8labError(f"test case: seed {seed!r} must be an integer in [0, 2**63)")
    return int(seed)


class _Draw:
    """The random source of one case: numbers, shapes, operands (and their weight seeds)."""

    def __init__(self, seed: int, dtype: str) -> None:
        self.rng = np.random.default_rng(seed)
        self.dtype = dtype

    @property
    def is_int(self) -> bool:
        return self.dtype not in FLOAT_DTYPES

    def num(self, low: int, high: int) -> int:
        """Uniform in [low, high]."""
        return int(self.rng.integers(low, high + 1))

    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, items: Sequence[Any]) -> Any:
        return items[int(self.rng.integers(0, len(items)))]

    def channel(self, high: int = 160) -> int:
        """A last dim: 1-32, 33-64 or 65-``high`` (C <= 32, one Cx block, blocks and a tail)."""
        band = self.pick(((1, 32), (1, 32), (33, 64), (65, high)))
        return self.num(band[0], min(band[1], high))

    def shape(
        self, min_rank: int = 1, max_rank: int = 4, max_elems: int = 4096, channel: int = 160
    ) -> tuple[int, ...]:
        """Batch 1-4, inner dims 1-8, a channel last; at most ``max_elems`` elements."""
        rank = self.num(min_rank, max_rank)
        if rank == 1:
            return (self.channel(channel),)
        dims = [self.num(1, 4), *(self.num(1, 8) for _ in range(rank - 2)), self.channel(channel)]
        while math.prod(dims) > max_elems:
            i = int(np.argmax(dims[:-1])) if max(dims[:-1]) > 1 else rank - 1
            dims[i] = max(1, dims[i] // 2)
        return tuple(dims)

    def operand(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str | None = None,
        *,
        weight: bool = False,
        low: float | None = None,
        high: float | None = None,
        rule: str = "range",
        axis: int = 0,
    ) -> Operand:
        """An operand with the default range of its type (floats [-4, 4], ints [-8, 8])."""
        dtype = dtype or self.dtype
        floaty = dtype in FLOAT_DTYPES
        lo = low if low is not None else (-4.0 if floaty else -8.0)
        hi = high if high is not None else (4.0 if floaty else 8.0)
        seed = int(self.rng.integers(1, 2**31))
        return Operand(name, tuple(int(d) for d in shape), dtype, weight, lo, hi, rule, axis, seed)


_Made = tuple[list[Operand], dict[str, Any]]
_Generator = Callable[[_Draw, str], _Made]


# --------------------------------------------------------------------------- per family


def _broadcast_partner(g: _Draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape``, or a shape that broadcasts to it (size-1 dims, fewer leading dims)."""
    if g.coin(0.5):
        return shape
    out = [1 if g.coin(0.4) else d for d in shape]
    drop = g.num(0, len(shape) - 1)
    return tuple(out[drop:]) or (1,)


def _binary(g: _Draw, kind: str) -> _Made:
    shape = g.shape()
    other = _broadcast_partner(g, shape)
    a_shape, b_shape = (other, shape) if g.coin(0.3) else (shape, other)
    attrs: dict[str, Any] = {}
    a = g.operand("a", a_shape)
    b = g.operand("b", b_shape, weight=g.coin(0.25))
    if kind == "Div":
        low, high = (1.0, 4.0) if g.is_int else (0.25, 4.0)
        b = replace(b, low=low, high=high, rule="magnitude", weight=False)
    elif kind == "Pow":
        a = replace(a, low=0.5, high=2.0)
        b = replace(b, low=-2.0, high=2.0)
    elif kind == "Compare":
        attrs["mode"] = g.pick(("eq", "ne", "lt", "le", "gt", "ge"))
        if g.is_int:  # small integers: equal pairs occur
            a, b = replace(a, low=-2, high=2), replace(b, low=-2, high=2)
    return [a, b], attrs


def _where(g: _Draw, kind: str) -> _Made:
    shape = g.shape()
    cond = g.operand("cond", _broadcast_partner(g, shape), "i1", rule="bool")
    a = g.operand("a", shape)
    b = g.operand("b", _broadcast_partner(g, shape), weight=g.coin(0.25))
    return [cond, a, b], {}


_POSITIVE = {"Log", "Sqrt", "Rsqrt"}


def _unary(g: _Draw, kind: str) -> _Made:
    x = g.operand("x", g.shape())
    attrs: dict[str, Any] = {}
    if kind in _POSITIVE:
        x = replace(x, low=0.1, high=4.0)
    elif kind == "Reciprocal":
        x = replace(x, low=0.25, high=4.0, rule="magnitude")
    elif kind == "Clip":
        low = g.num(-12, 0) / 4
        attrs = {"min": low, "max": low + g.num(1, 16) / 4}
    elif kind == "HardSigmoid":
        attrs = {"alpha": g.num(2, 8) / 16, "beta": g.num(2, 6) / 8}
    elif kind == "Gelu":
        attrs = {"approximate": g.pick(("none", "tanh"))}
    return [x], attrs


def _softmax(g: _Draw, kind: str) -> _Made:
    shape = g.shape()
    return [g.operand("x", shape)], {"axis": g.num(-len(shape), len(shape) - 1)}


def _row_norm(g: _Draw, kind: str) -> _Made:
    shape = g.shape()
    rank = len(shape)
    axis = g.num(-rank, rank - 1)
    norm = shape[axis % rank :]
    pshape = norm[len(norm) - g.num(1, len(norm)) :]
    weight = g.coin(0.5)
    gamma = g.operand("gamma", pshape, weight=weight, low=-2.0, high=2.0)
    params = [gamma]
    if kind == "LayerNorm":
        params.append(g.operand("beta", pshape, weight=weight, low=-1.0, high=1.0))
    eps = g.pick((1e-5, 1e-6, 1e-3))
    return [g.operand("x", shape), *params], {"axis": axis, "epsilon": eps}


def _batchnorm(g: _Draw, kind: str) -> _Made:
    shape = g.shape(min_rank=2)
    c = shape[-1]
    pshape = (c,) if g.coin(0.5) else (1,) * (g.num(2, len(shape)) - 1) + (c,)
    weight = g.coin(0.5)
    params = [
        g.operand(name, pshape, "f32", weight=weight, low=low, high=high)
        for name, low, high in (
            ("scale", -2.0, 2.0),
            ("offset", -1.0, 1.0),
            ("mean", -1.0, 1.0),
            ("variance", 0.1, 2.0),
        )
    ]
    return [g.operand("x", shape), *params], {"epsilon": g.pick((1e-5, 1e-6, 1e-3))}


def _ne_range(g: _Draw) -> tuple[float, float]:
    return (-3.0, 3.0) if g.is_int else (-2.0, 2.0)


def _matmul(g: _Draw, kind: str) -> _Made:
    low, high = _ne_range(g)
    m, k, n = g.num(1, 48), g.channel(), g.num(1, 96)
    if kind == "BatchMatMul":
        batch: tuple[int, ...] = (g.num(1, 4),)
        a_batch, b_batch = batch, batch
    else:
        batch = tuple(g.num(1, 3) for _ in range(g.num(0, 2)))
        a_batch = batch
        b_batch = tuple(1 if g.coin(0.3) else d for d in batch)[g.num(0, len(batch)) :]
    weight = g.coin(0.5)
    if weight and kind == "MatMul":
        b_batch = ()
    a = g.operand("a", (*a_batch, m, k), low=low, high=high)
    b = g.operand("b", (*b_batch, k, n), weight=weight, low=low, high=high)
    return [a, b], {}


def _gemm(g: _Draw, kind: str) -> _Made:
    m, k, n = g.num(1, 48), g.channel(), g.num(1, 96)
    trans_a, trans_b = g.coin(), g.coin()
    a = g.operand("A", (k, m) if trans_a else (m, k), low=-2.0, high=2.0)
    b = g.operand("B", (n, k) if trans_b else (k, n), weight=g.coin(0.5), low=-2.0, high=2.0)
    attrs: dict[str, Any] = {
        "trans_a": trans_a,
        "trans_b": trans_b,
        "alpha": g.pick((1.0, 0.5, -1.5, 2.0)),
        "beta": g.pick((1.0, 0.5, -1.5, 2.0)),
    }
    operands = [a, b]
    if g.coin(0.6):
        cshape = g.pick(((n,), (1, n), (m, n), (m, 1)))
        operands.append(g.operand("C", cshape, weight=g.coin(0.5), low=-1.0, high=1.0))
    return operands, attrs


def _conv(g: _Draw, kind: str) -> _Made:
    low, high = _ne_range(g)
    while True:
        n, h, w = g.num(1, 2), g.num(1, 10), g.num(1, 10)
        c = g.pick((g.num(1, 16), g.num(17, 48), g.num(49, 80)))
        how = g.pick(("plain", "plain", "depthwise", "grouped"))
        if how == "depthwise":
            group, cout = c, c * g.num(1, 2)
        elif how == "grouped":
            group = g.pick([d for d in range(1, c + 1) if c % d == 0])
            cout = group * g.num(1, max(1, 64 // group))
        else:
            group, cout = 1, g.num(1, 72)
        kh, kw = g.num(1, 3), g.num(1, 3)
        strides, dilations = (g.num(1, 2), g.num(1, 2)), (g.num(1, 2), g.num(1, 2))
        pads = (g.num(0, kh - 1), g.num(0, kw - 1), g.num(0, kh - 1), g.num(0, kw - 1))
        eff_h, eff_w = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
        if eff_h <= h + pads[0] + pads[2] and eff_w <= w + pads[1] + pads[3]:
            break
    operands = [
        g.operand("x", (n, h, w, c), low=low, high=high),
        g.operand("w", (cout, kh, kw, c // group), weight=True, low=low, high=high),
    ]
    if g.coin(0.5):
        operands.append(g.operand("bias", (cout,), weight=True, low=low, high=high))
    attrs = {"strides": strides, "pads": pads, "dilations": dilations, "group": group}
    return operands, attrs


def _pool(g: _Draw, kind: str) -> _Made:
    x = g.operand("x", (g.num(1, 2), g.num(1, 12), g.num(1, 12), g.channel(96)))
    if kind == "GlobalAvgPool":
        return [x], {}
    _, h, w, _ = x.shape
    kh, kw = g.num(1, min(3, h)), g.num(1, min(3, w))
    attrs: dict[str, Any] = {
        "kernel": (kh, kw),
        "strides": (g.num(1, 3), g.num(1, 3)),
        "pads": (g.num(0, kh - 1), g.num(0, kw - 1), g.num(0, kh - 1), g.num(0, kw - 1)),
        "ceil_mode": g.coin(),
    }
    if kind == "AvgPool2d":
        attrs["count_include_pad"] = g.coin()
    return [x], attrs


def _reduce(g: _Draw, kind: str) -> _Made:
    shape = g.shape()
    rank = len(shape)
    count = g.num(1, rank)
    axes = sorted(int(a) for a in g.rng.choice(rank, size=count, replace=False))
    axes = [a - rank if g.coin(0.3) else a for a in axes]
    return [g.operand("x", shape)], {"axes": tuple(axes), "keepdims": g.coin()}


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out + ([n] if n > 1 else [])


def _reshape(g: _Draw, kind: str) -> _Made:
    shape = g.shape()
    rank = g.num(1, 4)
    dims = [1] * rank
    for p in _prime_factors(math.prod(shape)):
        dims[g.num(0, rank - 1)] *= p
    if g.coin(0.3):
        dims[g.num(0, rank - 1)] = -1
    return [g.operand("x", shape)], {"shape": tuple(dims)}


def _transpose(g: _Draw, kind: str) -> _Made:
    shape = g.shape(min_rank=2)
    perm = tuple(int(p) for p in g.rng.permutation(len(shape)))
    return [g.operand("x", shape)], {"perm": perm}


def _concatenate(g: _Draw, kind: str) -> _Made:
    shape = g.shape(max_elems=1024)
    rank = len(shape)
    axis = g.num(0, rank - 1)
    pieces = []
    for i in range(g.num(2, 3)):
        dim = g.channel(96) if axis == rank - 1 else g.num(1, 6)
        piece = (*shape[:axis], dim, *shape[axis + 1 :])
        pieces.append(g.operand(f"x{i}", piece))
    return pieces, {"axis": axis - rank if g.coin(0.3) else axis}


def _split(g: _Draw, kind: str) -> _Made:
    shape = list(g.shape())
    rank = len(shape)
    axis = g.num(0, rank - 1)
    shape[axis] = max(shape[axis], 2)
    count = g.num(2, min(3, shape[axis]))
    cuts = sorted(int(c) for c in g.rng.choice(range(1, shape[axis]), count - 1, replace=False))
    sizes = tuple(b - a for a, b in zip([0, *cuts], [*cuts, shape[axis]], strict=True))
    return [g.operand("x", shape)], {"axis": axis, "sizes": sizes}


def _slice(g: _Draw, kind: str) -> _Made:
    shape = g.shape()
    starts, ends, steps = [], [], []
    for d in shape:
        while True:
            how = g.pick(("whole", "window", "window", "stride", "reverse"))
            if how == "whole":
                start, end, step = 0, d, 1
            elif how == "reverse":
                start, step = g.num(0, d - 1), -g.num(1, 2)
                end = g.pick((-d - 1, g.num(0, start)))
            else:
                start, step = g.num(0, d - 1), 1 if how == "window" else g.num(1, 3)
                end = g.pick((d + g.num(0, 3), g.num(start + 1, d)))
            if len(range(*slice(start, end, step).indices(d))) >= 1:
                break
        starts.append(start)
        ends.append(end)
        steps.append(step)
    return [g.operand("x", shape)], {
        "starts": tuple(starts),
        "ends": tuple(ends),
        "steps": tuple(steps),
    }


def _pad(g: _Draw, kind: str) -> _Made:
    shape = g.shape(max_elems=2048)
    pads = tuple(g.num(0, 2) for _ in range(2 * len(shape)))
    value = g.pick((0.0, -1.5, 2.0)) if not g.is_int else float(g.num(-3, 3))
    return [g.operand("x", shape)], {"pads": pads, "value": value}


def _broadcast(g: _Draw, kind: str) -> _Made:
    target = list(g.shape(max_elems=2048))
    src = [1 if g.coin(0.5) else d for d in target]
    src = src[g.num(0, len(src) - 1) :]
    for i in range(len(target) - len(src), len(target)):
        if src[i - len(target) + len(src)] == 1 and target[i] == 1:
            target[i] = g.num(2, 4)
    return [g.operand("x", src)], {"shape": tuple(target)}


def _gather(g: _Draw, kind: str) -> _Made:
    data = g.shape(max_rank=3, max_elems=2048)
    axis = g.num(0, len(data) - 1)
    size = data[axis]
    ishape = tuple(g.num(1, 6) for _ in range(g.num(1, 2)))
    return [
        g.operand("data", data),
        g.operand("indices", ishape, "i32", low=-size, high=size - 1, rule="index"),
    ], {"axis": axis - len(data) if g.coin(0.3) else axis}


def _embedding(g: _Draw, kind: str) -> _Made:
    vocab = g.num(2, 50)
    table = g.operand("table", (vocab, g.channel(128)), weight=True)
    ishape = tuple(g.num(1, 6) for _ in range(g.num(1, 2)))
    return [table, g.operand("indices", ishape, "i32", low=0, high=vocab - 1, rule="index")], {}


def _scatter(g: _Draw, kind: str) -> _Made:
    data = g.shape(max_rank=3, max_elems=2048)
    axis = g.num(0, len(data) - 1)
    ishape = tuple(g.num(1, d) for d in data)
    return [
        g.operand("data", data),
        g.operand("indices", ishape, "i32", low=0, high=data[axis] - 1, rule="distinct", axis=axis),
        g.operand("updates", ishape),
    ], {"axis": axis}


def _convert(g: _Draw, kind: str) -> _Made:
    target = g.pick([t for t in (*FLOATS, *INTS) if t != g.dtype])
    return [g.operand("x", g.shape())], {"dtype": target}


def _resize(g: _Draw, kind: str) -> _Made:
    x = g.operand("x", (g.num(1, 2), g.num(1, 6), g.num(1, 6), g.channel(96)))
    return [x], {"scale_h": g.num(1, 3), "scale_w": g.num(1, 3)}


def _unpack(g: _Draw, kind: str) -> _Made:
    return [g.operand("x", g.shape(channel=80), "i8", low=-128, high=127)], {}


def _tuple(g: _Draw, kind: str) -> _Made:
    return [g.operand(f"x{i}", g.shape(max_elems=1024)) for i in range(g.num(1, 3))], {}


def _channel_norm(g: _Draw, kind: str) -> _Made:
    shape = g.shape()
    if len(shape) == 3:  # Cx needs rank 2 or 4: a rank-3 draw becomes its [N, 1, W, C] view
        shape = aligned_view(shape)
    return [g.operand("x", shape)], {"direction": g.coin()}


_ANY = (*FLOATS, *INTS)

#: Short kind -> (element types drawn, parameter generator).
_KINDS: dict[str, tuple[tuple[str, ...], _Generator]] = {
    **{k: (_ANY, _binary) for k in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Compare")},
    "Pow": (FLOATS, _binary),
    "Where": (_ANY, _where),
    **{k: (_ANY, _unary) for k in ("Relu", "Neg", "Abs", "Clip")},
    **{
        k: (FLOATS, _unary)
        for k in (
            "Sigmoid",
            "HardSwish",
            "Silu",
            "Tanh",
            "Erf",
            "Exp",
            "Log",
            "Sqrt",
            "Rsqrt",
            "Reciprocal",
            "HardSigmoid",
            "Gelu",
        )
    },
    "Softmax": (FLOATS, _softmax),
    "LayerNorm": (FLOATS, _row_norm),
    "RMSNorm": (FLOATS, _row_norm),
    "BatchNorm_Inference": (FLOATS, _batchnorm),
    "Gemm": (FLOATS, _gemm),
    "MatMul": (NE_TYPES, _matmul),
    "BatchMatMul": (NE_TYPES, _matmul),
    "Conv2d": (NE_TYPES, _conv),
    "MaxPool2d": (_ANY, _pool),
    "AvgPool2d": (FLOATS, _pool),
    "GlobalAvgPool": (FLOATS, _pool),
    "ReduceSum": (_ANY, _reduce),
    "ReduceMax": (_ANY, _reduce),
    "ReduceMean": (FLOATS, _reduce),
    "Reshape": (_ANY, _reshape),
    "Transpose": (_ANY, _transpose),
    "Concatenate": (_ANY, _concatenate),
    "Split": (_ANY, _split),
    "Slice": (_ANY, _slice),
    "Pad": (_ANY, _pad),
    "Broadcast": (_ANY, _broadcast),
    "Gather": (_ANY, _gather),
    "Embedding": (FLOATS, _embedding),
    "Scatter": (_ANY, _scatter),
    "Convert": (_ANY, _convert),
    "Resize": (_ANY, _resize),
    "Unpack": (("i8",), _unpack),
    "Tuple": (_ANY, _tuple),
    "ChannelNorm": (_ANY, _channel_norm),
}


def init_param(
    kind: str,
    seed: int,
    *,
    name: str | None = None,
    hw: Sequence[str] = (),
    fixed: Mapping[str, Any] | None = None,
) -> OpCaseParam:
    """A random case of ``kind`` (seed ``init_param``); ``fixed`` pins ``dtype``/``aligned``.

    The same kind, seed and ``fixed`` always give the same case.

    Examples:
        >>> p = init_param("Softmax", 3, fixed={"dtype": "f16"})
        >>> p.name, p.kind, p.dtype, len(p.operands)
        ('Softmax_s3', 'tx8be.Softmax', 'f16', 1)
    """
    full = check_generable(kind)
    seed = check_seed(seed)
    short = full.split(".", 1)[1]
    dtypes, make = _KINDS[short]
    name = f"{short}_s{seed}" if name is None else str(name)
    if not name or Path(name).name != name or name.startswith("."):
        raise Tx8labError(
            f"test case {short}: name {name!r} must be a plain folder name (no '/', not "
            "starting with '.')"
        )
    fixed = dict(fixed or {})
    unknown = set(fixed) - {"dtype", "aligned"}
    if unknown:
        raise Tx8labError(
            f"test case {short}: unknown fixed fields {sorted(unknown)}; pin dtype or aligned"
        )
    rng = np.random.default_rng(seed)
    dtype = str(fixed.get("dtype", dtypes[int(rng.integers(0, len(dtypes)))]))
    if dtype not in dtypes:
        raise Tx8labError(
            f"test case {short}: dtype {dtype!r} is not one the generator draws for it "
            f"({', '.join(dtypes)})"
        )
    aligned = bool(fixed.get("aligned", rng.integers(0, 2) == 1))
    g = _Draw(int(rng.integers(0, 2**63)), dtype)
    operands, attrs = make(g, short)
    hw_specs = tuple(str(s) for s in hw)
    resolve_hw(list(hw_specs))  # a bad override fails here, naming the key
    param = OpCaseParam(name, full, seed, dtype, aligned, tuple(operands), attrs, hw_specs)
    build_module(param)  # the op library checks the drawn types and attributes
    return param


# --------------------------------------------------------------------------- module and data


def _weight_init(o: Operand) -> RandomInit:
    """Uniform in the operand's range (integers: ``floor`` of [low, high + 1))."""
    top = o.high if o.dtype in FLOAT_DTYPES else o.high + 1
    return RandomInit(o.init_seed, "uniform", (top - o.low) / 2, (top + o.low) / 2)


def build_module(param: OpCaseParam) -> Module:
    """A module whose ``main`` takes the case's arguments and returns the op's results."""
    b = Builder()
    values: list[Value] = []
    for o in param.operands:
        if o.weight:
            values.append(b.op("Constant", value=_weight_init(o), shape=o.shape, dtype=o.dtype))
        else:
            values.append(b.input(o.shape, o.dtype))
    try:
        result = b.op(param.short_kind, *values, **dict(param.attrs))
    except Tx8labError as err:
        raise Tx8labError(f"test case {param.name}: {err}") from None
    b.output(*(result if isinstance(result, tuple) else (result,)))
    return b.finish()


def _both_signs(flat: Array, low: float, high: float, rng: np.random.Generator) -> None:
    """First element negative and last positive, when the range has both signs."""
    if flat.size > 1 and low < 0 < high:
        flat[0] = rng.uniform(low, low / 4)
        flat[-1] = rng.uniform(high / 4, high)


def _data(o: Operand, rng: np.random.Generator) -> Array:
    floaty = o.dtype in FLOAT_DTYPES
    if o.rule == "bool":
        values = rng.integers(0, 2, o.shape).astype(bool)
        if values.size > 1:
            values.reshape(-1)[:2] = (False, True)
        return values
    if o.rule in ("index", "range") and not floaty:
        lo, hi = int(o.low), int(o.high)
        ints = rng.integers(lo, hi + 1, o.shape)
        if o.rule == "range" and ints.size > 1 and lo < 0 < hi:
            ints.reshape(-1)[[0, -1]] = (lo, hi)
        return round_to(ints, o.dtype)
    if o.rule == "distinct":
        out = np.empty(o.shape, np.int64)
        moved = np.moveaxis(out, o.axis, -1)
        for index in np.ndindex(*moved.shape[:-1]):
            moved[index] = rng.permutation(int(o.high) + 1)[: moved.shape[-1]]
        return round_to(out, o.dtype)
    if o.rule == "magnitude":
        size = rng.uniform(o.low, o.high, o.shape)
        sign = np.where(rng.integers(0, 2, o.shape) == 1, 1.0, -1.0)
        flat = sign.reshape(-1)
        if flat.size > 1:
            flat[0], flat[-1] = -1.0, 1.0
        values = size * sign
        return round_to(np.round(values) if not floaty else values, o.dtype)
    values = rng.uniform(o.low, o.high, o.shape)
    _both_signs(values.reshape(-1), o.low, o.high, rng)
    return round_to(values, o.dtype)


def init_data(param: OpCaseParam) -> tuple[Array, ...]:
    """The function arguments' data in the documented ranges (seed ``init_data``)."""
    rng = np.random.default_rng([param.seed, 1])
    return tuple(_data(o, rng) for o in param.operands if not o.weight)


def weight_values(param: OpCaseParam) -> tuple[Array, ...]:
    """The weights' values, as the module's ``RandomInit`` constants materialise them."""
    return tuple(_weight_init(o).materialize(o.shape, o.dtype) for o in param.operands if o.weight)


# --------------------------------------------------------------------------- compile


@dataclass(frozen=True)
class OpCase:
    """A compiled case: parameters, module, data, reference and what the executed C gave."""

    param: OpCaseParam
    module: Module
    inputs: tuple[Array, ...]
    weights: tuple[Array, ...]
    expected: tuple[Array, ...]
    """The reference: the interpreter on the module before the pipeline."""
    main_c: str | None
    """The emitted main.c (None when the pipeline failed before codegen)."""
    diffs: tuple[OutputDiff, ...] = ()
    """Executed outputs against :attr:`expected` and against the scheduled module's
    interpretation (``Execution.diffs``), one per output each."""
    error: str | None = None
    """The pipeline's or the executed program's error, if any."""
    commands: int = 0

    @property
    def ok(self) -> bool:
        """The executed C matched the reference on every output."""
        return self.error is None and bool(self.diffs) and all(d.ok for d in self.diffs)

    @property
    def max_abs_diff(self) -> float:
        """Largest |executed - reference| over the outputs (nan when nothing ran)."""
        return max((d.max_abs for d in self.diffs), default=math.nan)

    def status(self) -> str:
        """``match``, ``DIFFER`` or ``FAIL: <error>`` for one line."""
        if self.error is not None:
            return f"FAIL: {_first_line(self.error)}"
        return "match" if self.ok else "DIFFER"

    def failure(self) -> str | None:
        """The error, or the lines of the outputs outside the tolerance; None when ok."""
        if self.ok:
            return None
        if self.error is not None:
            return self.error
        return "\n".join(d.text() for d in self.diffs if not d.ok) or "no output compared"

    def known_failure(self) -> KnownFailure | None:
        """The :data:`KNOWN_FAILING` entry this case's failure matches, if any."""
        entry = KNOWN_FAILING.get(self.param.kind)
        text = self.failure()
        if entry is None or text is None or not re.search(entry.pattern, text):
            return None
        return entry


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return " | ".join(lines[:3]) if lines else "unknown error"


def hw_of(param: OpCaseParam) -> ChipConfig:
    """The chip of the case: the default preset with the case's specs."""
    return resolve_hw(list(param.hw))


def _execute(
    module: Module, inputs: Sequence[Array], expected: Sequence[Array], hw: ChipConfig, via: str
) -> tuple[str | None, tuple[OutputDiff, ...], str | None, int]:
    """(main.c, diffs, error, commands) of the default pipeline and the executed program."""
    from tx8lab.core.codegen import groups_c, main_c
    from tx8lab.core.passes import build_pipeline
    from tx8lab.core.runner import run_pipeline

    text: str | None = None
    try:
        steps = list(run_pipeline(module, build_pipeline(None, {}), hw))
        done = steps[-1].result.module
        text = main_c(done, hw, groups_c(done, hw))
        ex = execute_module(done, hw, inputs=list(inputs), via=via, main_c=text)
    except Tx8labError as err:
        return text, (), f"{type(err).__name__}: {err}", 0
    dtypes = [v.type.dtype for v in module.main.ops[-1].operands]
    mine = compare_outputs(
        ex.outputs, list(expected), dtypes, reorders_sums(ex.program), sum_ulps(ex.program)
    )
    return text, (*mine, *ex.diffs), None, ex.program.num_commands


def compile_case(
    param: OpCaseParam, inputs: Sequence[Array] | None = None, *, via: str = "c"
) -> OpCase:
    """Reference and executed program of ``param`` (seed ``compile``).

    ``via="c"`` compiles and runs main.c (the default); ``"program"`` walks the Program's
    command streams (no C compiler). A failure of the pipeline or of the program is the
    case's :attr:`OpCase.error`; bad parameters raise.
    """
    check_via(via)
    module = build_module(param)
    data = tuple(inputs) if inputs is not None else init_data(param)
    expected = tuple(interpret(module, list(data)))
    text, diffs, error, commands = _execute(module, data, expected, hw_of(param), via)
    return OpCase(param, module, data, weight_values(param), expected, text, diffs, error, commands)


# --------------------------------------------------------------------------- files


def file_layout(shape: Sequence[int], dtype: str, aligned: bool) -> LayoutMode:
    """The layout of one ``.bin`` image (module doc, **Layout**)."""
    return layout_for(
        tuple(shape), aligned and dtype in ALIGNED_DTYPES and has_aligned_layout(len(shape))
    )


def _image(array: Array, dtype: str, layout: LayoutMode) -> bytes:
    if dtype == "i1":
        return pack(np.asarray(array).astype(np.int8), "i8", layout)
    return pack(array, dtype, layout)


def _from_image(data: bytes, shape: tuple[int, ...], dtype: str, layout: str) -> Array:
    if dtype == "i1":
        return unpack(data, shape, "i8", layout).astype(bool)
    return unpack(data, shape, dtype, layout)


def _write(
    folder: Path, file: str, name: str, array: Array, dtype: str, aligned: bool
) -> dict[str, Any]:
    layout = file_layout(array.shape, dtype, aligned)
    data = _image(array, dtype, layout)
    (folder / file).write_bytes(data)
    return {
        "name": name,
        "file": file,
        "shape": list(array.shape),
        "dtype": dtype,
        "layout": layout.value,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def _case_info(case: OpCase, folder: Path) -> dict[str, Any]:
    """Write the ``.bin`` files and main.c into ``folder``; the ``case.json`` content."""
    param = case.param
    args = [o for o in param.operands if not o.weight]
    weights = [o for o in param.operands if o.weight]
    inputs = [
        _write(folder, f"in{i}_{o.name}.bin", o.name, a, o.dtype, param.aligned)
        for i, (o, a) in enumerate(zip(args, case.inputs, strict=True))
    ]
    consts = [
        _write(folder, f"const{j}_{o.name}.bin", o.name, a, o.dtype, param.aligned)
        for j, (o, a) in enumerate(zip(weights, case.weights, strict=True))
    ]
    dtypes = [v.type.dtype for v in case.module.main.ops[-1].operands]
    outputs = [
        _write(folder, f"out{i}_expected.bin", f"out{i}", a, dt, param.aligned)
        for i, (a, dt) in enumerate(zip(case.expected, dtypes, strict=True))
    ]
    for entry, diff in zip(outputs, case.diffs, strict=False):
        entry["tolerance"] = diff.tolerance
    if case.main_c is not None:
        (folder / "main.c").write_text(case.main_c, encoding="utf-8")
    return {
        "format": FORMAT_VERSION,
        "name": param.name,
        "op": param.kind,
        "param": param.as_json(),
        "execution": {
            "ok": case.ok,
            "max_abs_diff": None if math.isnan(case.max_abs_diff) else case.max_abs_diff,
            "commands": case.commands,
            "error": case.error,
            "failure": case.failure(),
            "known_failing": known.reason if (known := case.known_failure()) else None,
        },
        "inputs": inputs,
        "constants": consts,
        "outputs": outputs,
        "main_c": "main.c" if case.main_c is not None else None,
        "module": print_module(case.module),
    }


def save_case(case: OpCase, directory: str | Path) -> Path:
    """Write ``case`` into ``directory/<name>/`` (seed ``saveInfoFile``); returns that folder.

    Written under a temporary name in ``directory`` and renamed when complete; an existing
    case folder of that name is replaced, any other existing path is refused.
    """
    name = case.param.name
    parent = Path(directory)
    final = parent / name
    what = f"test case {name}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        if final.exists() and not (final / "case.json").is_file():
            raise Tx8labError(
                f"{what}: {final} exists and is not a test-case folder (no case.json); "
                "remove it or choose another output directory"
            )
        tmp = parent / f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        tmp.mkdir()
    except OSError as err:
        raise Tx8labError(
            f"{what}: cannot write into {parent} ({err.strerror or err}); choose a writable "
            "output directory"
        ) from None
    try:
        info = _case_info(case, tmp)
        (tmp / "case.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        old = final.rename(parent / f"{tmp.name}.old") if final.exists() else None
        try:
            tmp.rename(final)
        except OSError:
            if old is not None:
                old.rename(final)  # the previous case stays where it was
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as err:
        raise Tx8labError(
            f"{what}: writing {final} failed ({err.strerror or err}); nothing was left behind"
        ) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


@dataclass(frozen=True)
class Generated:
    """One generated case: its folder and what compiling it found."""

    folder: Path
    case: OpCase

    def line(self) -> str:
        """The CLI's line: op, params, whether the executed C matched (max diff), folder."""
        case = self.case
        diff = "-" if math.isnan(case.max_abs_diff) else f"{case.max_abs_diff:.3g}"
        known = " (known failing, see KNOWN_FAILING)" if case.known_failure() else ""
        return (
            f"{case.param.short_kind}: {case.param.describe()}  {case.status()}{known}  "
            f"max|diff| {diff}  {self.folder}"
        )


def generate(
    kind: str,
    seed: int,
    directory: str | Path,
    *,
    count: int = 1,
    hw: Sequence[str] = (),
    via: str = "c",
) -> list[Generated]:
    """``count`` cases of ``kind`` (``all``: one per generable kind) with seeds ``seed`` ...

    Case ``i`` uses seed ``seed + i``, so it is the case ``--seed seed+i`` makes alone.
    """
    seed = check_seed(seed)
    check_via(via)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise Tx8labError(f"test case: count {count!r} must be a positive integer")
    kinds = generable_kinds() if str(kind).strip().lower() == "all" else [check_generable(kind)]
    out = []
    for full in kinds:
        for i in range(count):
            case = compile_case(init_param(full, seed + i, hw=hw), via=via)
            out.append(Generated(save_case(case, directory), case))
    return out


# --------------------------------------------------------------------------- reading back


@dataclass(frozen=True)
class LoadedCase:
    """A case read from its folder: parameters, module, data and the saved reference."""

    folder: Path
    param: OpCaseParam
    module: Module
    inputs: tuple[Array, ...]
    weights: tuple[Array, ...]
    expected: tuple[Array, ...]


@dataclass(frozen=True)
class CaseResult:
    """What re-running a saved case found."""

    name: str
    kind: str
    ok: bool
    """The executed C matched the saved expected output (and the reference reproduced)."""
    max_abs_diff: float
    reproduced: bool
    """The interpreter re-creates the saved expected output bit for bit and the weight
    files equal the module's constants."""
    error: str | None = None


def _read_bin(folder: Path, entry: Mapping[str, Any]) -> Array:
    data = read_checked(folder, entry)
    shape = tuple(int(d) for d in entry["shape"])
    return _from_image(data, shape, str(entry["dtype"]), str(entry["layout"]))


def load_case(folder: str | Path) -> LoadedCase:
    """Read a saved case; every file is checked against its size and sha256."""
    folder = Path(folder)
    path = folder / "case.json"
    if not path.is_file():
        raise Tx8labError(f"test case {folder}: no case.json (write the case with save_case)")
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        if info.get("format") != FORMAT_VERSION:
            raise Tx8labError(
                f"test case {path}: format {info.get('format')!r}, this reader reads format "
                f"{FORMAT_VERSION}: regenerate the case"
            )
        p = info["param"]
        param = OpCaseParam(
            str(info["name"]),
            resolve_kind(str(p["kind"])),
            check_seed(p["seed"]),
            str(p["dtype"]),
            bool(p["aligned"]),
            tuple(Operand.from_json(o) for o in p["operands"]),
            {str(k): _from_json(v) for k, v in p["attrs"].items()},
            tuple(str(s) for s in p["hw"]),
        )
        entries = info["inputs"], info["constants"], info["outputs"]
        text = str(info["module"])
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        if isinstance(err, Tx8labError):
            raise
        raise Tx8labError(f"test case {path}: malformed case.json ({err!r})") from None
    module = parse_module(text, str(path))
    inputs = tuple(_read_bin(folder, e) for e in entries[0])
    weights = tuple(_read_bin(folder, e) for e in entries[1])
    expected = tuple(_read_bin(folder, e) for e in entries[2])
    return LoadedCase(folder, param, module, inputs, weights, expected)


def rerun_case(folder: str | Path, *, via: str = "c") -> CaseResult:
    """Re-run a saved case: the pipeline and the executed C against the saved expected output."""
    check_via(via)
    case = load_case(folder)
    again = interpret(case.module, list(case.inputs))
    reproduced = len(again) == len(case.expected) and all(
        np.array_equal(np.asarray(a), e) for a, e in zip(again, case.expected, strict=True)
    )
    reproduced = reproduced and all(
        np.array_equal(w, m) for w, m in zip(case.weights, weight_values(case.param), strict=True)
    )
    _, diffs, error, _ = _execute(case.module, case.inputs, case.expected, hw_of(case.param), via)
    ok = error is None and bool(diffs) and all(d.ok for d in diffs) and reproduced
    worst = max((d.max_abs for d in diffs), default=math.nan)
    return CaseResult(case.param.name, case.param.kind, ok, worst, reproduced, error)


__all__ = [
    "KNOWN_FAILING",
    "CaseResult",
    "Generated",
    "KnownFailure",
    "LoadedCase",
    "OpCase",
    "OpCaseParam",
    "Operand",
    "build_module",
    "check_generable",
    "compile_case",
    "file_layout",
    "generable_kinds",
    "generate",
    "init_data",
    "init_param",
    "load_case",
    "rerun_case",
    "resolve_kind",
    "save_case",
    "supported_dtypes",
    "weight_values",
]
