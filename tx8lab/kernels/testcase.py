"""The BatchNorm test-case generator and its reader (seed 001 "Test Case").

Spec: seed 001 "Test Case": ``init_param`` (fixed cases from a table, or random dim,
layout, dtype and shape within what the op supports) builds the parameters and an MLIR
module with one function holding the op; ``init_data`` makes inputs in ranges that avoid
NaN and cover both signs; ``compile`` runs the ComputeInterface reference (here the
interpreter on the op library's ``compute``) and the backend's code (here the numpy model
of ``op_batchnorm_inference``, :mod:`tx8lab.kernels.batchnorm`, and the main.c text);
``saveInfoFile`` writes the data as ``.bin`` files and the module's description as
``.json``. :func:`rerun_case` reads a case directory back, re-runs both and compares.

Readings chosen where the seed is vague:

- **Support** (the op's ``queryOpAttr`` and the seed's "维度为 2/3/4, bf16/fp16/fp32/tf32"):
  rank 2-4, input bf16/f16/f32/tf32, parameters f32 ``1x..x1xC``. Random shapes take N in
  1..4, each H/W in 1..6 and C in 1..160, which covers C <= 32, 32 < C <= 64 and C > 64
  with and without a C0 tail.
- **Layout** is the memory image the ``.bin`` files hold: random between the aligned
  Cx/NCx image the op computes on and the compact Tensor/NTensor one (the seed's "数据对齐
  方式随机"); ``N``- prefixed when dim 0 is not 1. Parameters are always compact f32.
  A rank-3 aligned image is the NCx of the ``[N, 1, W, C]`` view the kernel computes on
  (Cx needs rank 2 or 4, seed 000); ``case.json`` keeps the rank-3 shape.
  Reading a compact input into the kernel is a ChannelNorm (unpack, pack), as a load with
  a layout change would do.
- **Data ranges**: x uniform in [-4, 4] with its first element negative and last positive
  (both signs always present), scale in [-2, 2], shift and mean in [-1, 1], variance in
  [0.1, 2] (positive, so ``rsqrt(var + eps)`` is finite: no NaN or inf).
- **Files**: ``<case>/case.json`` (parameters, printed module, one entry per file with
  its shape, dtype, layout, byte count and sha256), ``in0_x.bin`` .. ``in4_variance.bin``,
  ``out0_expected.bin`` (the reference) and ``main.c``. The comparison tolerance is one
  step of the output type (``rtol = 2**-mantissa``) plus ``atol = 1e-5``: the kernel
  computes in fp32, the reference in float64.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from tx8lab.core.attrs import LayoutMode
from tx8lab.core.builder import Builder
from tx8lab.core.dtypes import round_to
from tx8lab.core.interpret import interpret
from tx8lab.core.ir import Module
from tx8lab.core.layouts import aligned_view, layout_for, pack, unpack
from tx8lab.core.text import parse_module, print_module
from tx8lab.errors import Tx8labError
from tx8lab.kernels.batchnorm import batchnorm_flow, main_c

Array = npt.NDArray[Any]

OP_KIND = "tx8be.BatchNorm_Inference"
DIMS = (2, 3, 4)
DTYPES = ("bf16", "f16", "f32", "tf32")
INPUT_NAMES = ("x", "scale", "offset", "mean", "variance")
MANTISSA = {"f16": 10, "bf16": 7, "tf32": 10, "f32": 21}
ATOL = 1e-5
FORMAT_VERSION = 1


@dataclass(frozen=True)
class CaseParam:
    """One test case's configuration (seed ``init_param``)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    aligned: bool
    """The ``.bin`` input/output images are Cx/NCx (True) or Tensor/NTensor."""
    epsilon: float = 1e-6
    seed: int = 0

    @property
    def layout(self) -> LayoutMode:
        """The memory layout of the input and output images."""
        return layout_for(aligned_view(self.shape), aligned=self.aligned)


@dataclass(frozen=True)
class Case:
    """A generated case: parameters, module, inputs, reference and kernel outputs."""

    param: CaseParam
    module: Module
    inputs: tuple[Array, ...]
    expected: Array
    """The reference (ComputeInterface through the interpreter)."""
    kernel: Array
    """The numpy model of ``op_batchnorm_inference``."""
    main_c: str


@dataclass(frozen=True)
class CaseResult:
    """What re-running a saved case found."""

    name: str
    passed: bool
    max_abs_err: float
    mismatches: int
    """Elements outside the tolerance."""
    reference_reproduced: bool
    """The interpreter re-creates ``out0_expected.bin`` bit for bit."""


def check_param(param: CaseParam) -> CaseParam:
    """``param`` if the op supports it; a clear error naming the field otherwise."""
    if len(param.shape) not in DIMS:
        raise Tx8labError(f"test case {param.name}: shape {param.shape} must have rank 2, 3 or 4")
    if any(int(d) < 1 for d in param.shape):
        raise Tx8labError(f"test case {param.name}: shape {param.shape} has an empty dim")
    if param.dtype not in DTYPES:
        raise Tx8labError(
            f"test case {param.name}: dtype {param.dtype!r} is not one of {', '.join(DTYPES)}"
        )
    if not param.epsilon > 0:
        raise Tx8labError(f"test case {param.name}: epsilon must be > 0, got {param.epsilon}")
    return param


def init_param(
    rng: np.random.Generator | int, *, name: str = "case", fixed: Mapping[str, Any] | None = None
) -> CaseParam:
    """A case with random rank, shape, dtype and layout; ``fixed`` pins any field.

    Examples:
        >>> init_param(0, name="c0", fixed={"shape": (4, 112, 2, 129), "dtype": "f16"})
        ... # doctest: +ELLIPSIS
        CaseParam(name='c0', shape=(4, 112, 2, 129), dtype='f16', aligned=..., seed=...)
    """
    gen = np.random.default_rng(rng) if isinstance(rng, int) else rng
    fixed = dict(fixed or {})
    unknown = set(fixed) - {"shape", "dtype", "aligned", "epsilon", "seed"}
    if unknown:
        raise Tx8labError(f"init_param: unknown fixed fields {sorted(unknown)}")
    rank = int(gen.choice(DIMS))
    shape = (
        int(gen.integers(1, 5)),
        *(int(gen.integers(1, 7)) for _ in range(rank - 2)),
        int(gen.integers(1, 161)),
    )
    param = CaseParam(
        name=name,
        shape=tuple(int(d) for d in fixed.get("shape", shape)),
        dtype=str(fixed.get("dtype", gen.choice(DTYPES))),
        aligned=bool(fixed.get("aligned", gen.integers(0, 2) == 1)),
        epsilon=float(fixed.get("epsilon", 1e-6)),
        seed=int(fixed.get("seed", gen.integers(0, 2**31))),
    )
    return check_param(param)


def build_module(param: CaseParam) -> Module:
    """A module whose ``main`` takes x and the four parameters and returns the op's result."""
    check_param(param)
    b = Builder()
    x = b.input(param.shape, param.dtype)
    pshape = (1,) * (len(param.shape) - 1) + (param.shape[-1],)
    params = [b.input(pshape, "f32") for _ in range(4)]
    b.output(b.op("BatchNorm_Inference", x, *params, epsilon=param.epsilon))
    return b.finish()


def init_data(param: CaseParam) -> tuple[Array, ...]:
    """Inputs in the documented ranges: both signs in x, positive variance (no NaN)."""
    rng = np.random.default_rng(param.seed)
    c = param.shape[-1]
    pshape = (1,) * (len(param.shape) - 1) + (c,)
    x = rng.uniform(-4, 4, param.shape)
    flat = x.reshape(-1)
    flat[0] = -abs(flat[0]) - 0.5
    if flat.size > 1:
        flat[-1] = abs(flat[-1]) + 0.5
    scale = rng.uniform(-2, 2, pshape)
    shift = rng.uniform(-1, 1, pshape)
    mean = rng.uniform(-1, 1, pshape)
    var = rng.uniform(0.1, 2, pshape)
    return (
        round_to(x, param.dtype),
        *(round_to(a, "f32") for a in (scale, shift, mean, var)),
    )


def compile_case(param: CaseParam, inputs: Sequence[Array] | None = None) -> Case:
    """Reference (interpreter) and kernel results for ``param`` (seed ``compile``)."""
    module = build_module(param)
    data = tuple(inputs) if inputs is not None else init_data(param)
    (expected,) = interpret(module, list(data))
    x = _through_layout(data[0], param)
    kernel = _kernel(x, data, param)
    bn = next(op for op in module.main.ops if op.kind == OP_KIND)
    return Case(param, module, data, expected, kernel, main_c(bn))


def _kernel(x: Array, data: Sequence[Array], param: CaseParam) -> Array:
    """The numpy model of op_batchnorm_inference on ``x`` with ``data``'s parameters."""
    scale, shift, mean, var = data[1:5]
    run = batchnorm_flow(x, scale, shift, mean, var, dtype=param.dtype, epsilon=param.epsilon)
    return run.output


def _pack(array: Array, dtype: str, layout: LayoutMode) -> bytes:
    """The image of ``array``; a rank-3 Cx/NCx image is its ``[N, 1, W, C]`` view's."""
    array = np.asarray(array)
    if layout in (LayoutMode.Cx, LayoutMode.NCx):
        array = array.reshape(aligned_view(array.shape))
    return pack(array, dtype, layout)


def _unpack(data: bytes, shape: tuple[int, ...], dtype: str, layout: LayoutMode | str) -> Array:
    """:func:`_pack`'s inverse."""
    view = aligned_view(shape) if LayoutMode(layout) in (LayoutMode.Cx, LayoutMode.NCx) else shape
    return unpack(data, view, dtype, layout).reshape(shape)


def _through_layout(x: Array, param: CaseParam) -> Array:
    """``x`` as read from its ``.bin`` image (the load's ChannelNorm for a compact one)."""
    return _unpack(_pack(x, param.dtype, param.layout), param.shape, param.dtype, param.layout)


def tolerance(dtype: str) -> tuple[float, float]:
    """``(rtol, atol)`` of the comparison (module doc)."""
    return 2.0 ** -MANTISSA[dtype], ATOL


def compare(got: Array, want: Array, dtype: str) -> tuple[bool, float, int]:
    """``(passed, max |got - want|, elements outside the tolerance)``."""
    rtol, atol = tolerance(dtype)
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    err = np.abs(g - w)
    bad = int(np.count_nonzero(~(err <= atol + rtol * np.abs(w))))
    return bad == 0, float(err.max(initial=0.0)), bad


def _entry(file: str, array: Array, dtype: str, layout: LayoutMode, data: bytes) -> dict[str, Any]:
    return {
        "file": file,
        "shape": list(array.shape),
        "dtype": dtype,
        "layout": layout.value,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def save_info_file(case: Case, directory: str | Path) -> Path:
    """Write the case into ``directory/<name>/`` (seed ``saveInfoFile``); returns that folder."""
    param = case.param
    folder = Path(directory) / param.name
    folder.mkdir(parents=True, exist_ok=True)
    inputs = []
    for i, (name, array) in enumerate(zip(INPUT_NAMES, case.inputs, strict=True)):
        dtype, layout = (
            (param.dtype, param.layout) if i == 0 else ("f32", layout_for(array.shape, False))
        )
        data = _pack(array, dtype, layout)
        file = f"in{i}_{name}.bin"
        (folder / file).write_bytes(data)
        inputs.append({"name": name, **_entry(file, array, dtype, layout, data)})
    out = _pack(case.expected, param.dtype, param.layout)
    (folder / "out0_expected.bin").write_bytes(out)
    (folder / "main.c").write_text(case.main_c)
    rtol, atol = tolerance(param.dtype)
    info = {
        "format": FORMAT_VERSION,
        "name": param.name,
        "op": OP_KIND,
        "param": {
            "shape": list(param.shape),
            "dtype": param.dtype,
            "aligned": param.aligned,
            "layout": param.layout.value,
            "epsilon": param.epsilon,
            "seed": param.seed,
        },
        "tolerance": {"rtol": rtol, "atol": atol},
        "inputs": inputs,
        "outputs": [
            {
                "name": "output",
                **_entry("out0_expected.bin", case.expected, param.dtype, param.layout, out),
            }
        ],
        "module": print_module(case.module),
    }
    (folder / "case.json").write_text(json.dumps(info, indent=2) + "\n")
    return folder


def generate(count: int, directory: str | Path, *, seed: int = 0) -> list[Path]:
    """``count`` random cases written under ``directory`` (``case000`` ...)."""
    rng = np.random.default_rng(seed)
    return [
        save_info_file(compile_case(init_param(rng, name=f"case{i:03d}")), directory)
        for i in range(count)
    ]


def read_checked(folder: Path, entry: Mapping[str, Any]) -> bytes:
    """The bytes of one file a ``case.json`` lists, checked against its size and sha256."""
    path = folder / str(entry["file"])
    if not path.is_file():
        raise Tx8labError(f"test case {folder}: missing {path.name} (listed in case.json)")
    data = path.read_bytes()
    if len(data) != int(entry["bytes"]):
        raise Tx8labError(
            f"test case {folder}: {path.name} has {len(data)} bytes, case.json says "
            f"{entry['bytes']}: regenerate the case"
        )
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise Tx8labError(
            f"test case {folder}: {path.name} does not match its sha256 in case.json (the file "
            "changed after it was written): regenerate the case"
        )
    return data


def _read_bin(folder: Path, entry: Mapping[str, Any]) -> Array:
    data = read_checked(folder, entry)
    return _unpack(data, tuple(entry["shape"]), str(entry["dtype"]), str(entry["layout"]))


def load_case(folder: str | Path) -> tuple[CaseParam, Module, tuple[Array, ...], Array]:
    """Read a saved case: parameters, module, inputs and the expected output."""
    folder = Path(folder)
    path = folder / "case.json"
    if not path.is_file():
        raise Tx8labError(f"test case {folder}: no case.json (write it with save_info_file)")
    try:
        info = json.loads(path.read_text())
        p = info["param"]
        param = check_param(
            CaseParam(
                str(info["name"]),
                tuple(int(d) for d in p["shape"]),
                str(p["dtype"]),
                bool(p["aligned"]),
                float(p["epsilon"]),
                int(p["seed"]),
            )
        )
        entries = info["inputs"], info["outputs"]
        text = str(info["module"])
    except (KeyError, TypeError, ValueError) as err:
        raise Tx8labError(f"test case {path}: malformed case.json ({err!r})") from None
    if info.get("format") != FORMAT_VERSION or info.get("op") != OP_KIND:
        raise Tx8labError(
            f"test case {path}: format {info.get('format')} / op {info.get('op')}, this reader "
            f"reads format {FORMAT_VERSION} of {OP_KIND}"
        )
    module = parse_module(text, str(path))
    inputs = tuple(_read_bin(folder, e) for e in entries[0])
    (expected,) = (_read_bin(folder, e) for e in entries[1])
    return param, module, inputs, expected


def rerun_case(folder: str | Path) -> CaseResult:
    """Re-run a saved case: the kernel against the saved expected output."""
    param, module, inputs, expected = load_case(folder)
    (again,) = interpret(module, list(inputs))
    reproduced = bool(np.array_equal(round_to(again, param.dtype), expected))
    kernel = _kernel(inputs[0], inputs, param)
    passed, err, bad = compare(kernel, expected, param.dtype)
    return CaseResult(param.name, passed and reproduced, err, bad, reproduced)
