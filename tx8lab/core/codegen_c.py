"""C text helpers of the op library's ``codegen`` members (seed 001 ``genOpCode``).

Spec: seed 001 ("OpLibInterface": ``genOpCode`` returns the op's code for ``main.c``; the
BatchNorm ``op_batchnorm_inference(param, in, scale, shift, mean, var, imm, out)``
prototype; the ``TSR`` / ``L_SHAPE`` / ``G_SHAPE`` structs; ``OP_INSTR_TYPE``; the AddVS
example: a parameter struct per instruction, ``TsmExecute`` returns the cycles, the caller
adds them up). This module knows no op: the op families (``tx8lab/core/ops``) say which
parameter struct they fill and with what, and :func:`compute_call` / :func:`prototype`
turn that into one C call and its declaration (an op entry is read through
:class:`OpSignature`, so this module sits below the op library that calls it);
``tx8lab.core.c_header`` prints the whole shipped ``tx8lab/kernels/include/tx8_oplib.h``.

Readings chosen where the seed is vague:

- **One call convention for every compute op**, the seed's BatchNorm one generalised:
  ``uint64_t op_<name>(const <FAMILY>_PARAM *param, TSR *in0, ..., TSR *imm, TSR *psum,
  TSR *out)``; the result is the op's cycles (as ``TsmExecute`` gives them). A variadic
  op (Concatenate, Tuple) takes ``TSR *const *ins, int32_t num_ins`` instead of ``in0..``;
  an op with several results (Split, Tuple) ``TSR *const *outs, int32_t num_outs``.
  ``imm`` (getImmSpSize scratch) and ``psum`` (the partial-sum accumulator of a reduction
  split in time) are ``NULL`` when the slice has none.
- **Parameter structs per family** (``CONV2D_PARAM``, ``MATMUL_PARAM`` ...; BatchNorm keeps
  the seed's ``BATCHNORM_INFER_PARAM``). Every one starts with the common fields: the data
  format, the iteration slice (the op library's ``temporalSliceShape`` iteration dims) and
  the psum flags ``psum_init`` (first step of the reduction loop: write, do not add) and
  ``psum_last`` (last step: write the result out); before them ``op`` (the IR op id the
  call computes) and ``at`` (the indices of the loops around the call, outermost first):
  the op library turns the tile id and ``at`` into the slice's position, as the chip's
  library reads ``L_SHAPE.shape_start``. DMA calls take a ``DMA_PARAM`` with the same
  ``op`` and ``at``. Values may be C expressions of the
  loop indices (``i2 == 0``).
- Function names are ``op_`` + the kind in snake case, with the seed's spellings
  (``op_batchnorm_inference``, ``op_matmul``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tx8lab.core.tiling import SliceShape
from tx8lab.errors import Tx8labError

#: Largest rank of an ``L_SHAPE`` / ``G_SHAPE`` / iteration slice.
MAX_SHAPE_DIM = 8
#: Loops around a call: one per stage (NH, OC, IC), or one per split group dim where a
#: partial sum needs its own loop (``slicing.loop_slots``).
MAX_LOOP_DEPTH = 6

#: IR dtype -> the seed's ``Data_Format`` name.
FORMATS: dict[str, str] = {
    "f16": "Fmt_FP16",
    "bf16": "Fmt_BF16",
    "f32": "Fmt_FP32",
    "tf32": "Fmt_TF32",
    "i8": "Fmt_INT8",
    "i32": "Fmt_INT32",
    "i64": "Fmt_INT64",
    "i1": "Fmt_BOOL",
}

#: Fields every parameter struct starts with.
COMMON_FIELDS: tuple[str, ...] = (
    "int32_t op",
    "int32_t at[MAX_LOOP_DEPTH]",
    "Data_Format fmt",
    "int32_t dim",
    "int32_t slice[MAX_SHAPE_DIM]",
    "int32_t psum_init",
    "int32_t psum_last",
)

#: Parameter struct -> its family's own fields (after :data:`COMMON_FIELDS`).
PARAM_STRUCTS: dict[str, tuple[str, ...]] = {
    "DMA_PARAM": ("int32_t chunk", "int32_t chunks"),
    "NOC_PARAM": ("int32_t transfer", "int32_t chunk", "int32_t peer"),
    "ELTWISE_PARAM": (),
    "UNARY_PARAM": ("float alpha", "float beta"),
    "MATMUL_PARAM": (
        "int32_t batch",
        "int32_t m",
        "int32_t k",
        "int32_t n",
        "int32_t trans_a",
        "int32_t trans_b",
    ),
    "CONV2D_PARAM": (
        "int32_t kernel[2]",
        "int32_t strides[2]",
        "int32_t pads[4]",
        "int32_t dilations[2]",
        "int32_t group",
    ),
    "POOL_PARAM": ("int32_t kernel[2]", "int32_t strides[2]", "int32_t pads[4]"),
    "REDUCE_PARAM": ("int32_t axes[MAX_SHAPE_DIM]", "int32_t num_axes", "int32_t keepdims"),
    "NORM_PARAM": ("int32_t axis", "float epsilon"),
    "BATCHNORM_INFER_PARAM": ("float epsilon",),
    "DATA_PARAM": ("int32_t axis",),
    "CHANNEL_NORM_PARAM": ("int32_t direction",),
}

#: The seed's OP_INSTR_TYPE, in its order.
OP_INSTR_TYPES: tuple[str, ...] = (
    "I_CGRA",
    "I_NEUR",
    "I_RDMA",
    "I_WDMA",
    "I_TDMA",
    "I_SCALAR",
    "I_DTE",
    "I_CSR",
)


class OpSignature(Protocol):
    """What the C helpers read of an op-library entry (every ``OpDef`` has these members)."""

    @property
    def kind(self) -> str: ...

    @property
    def num_operands(self) -> int | tuple[int, int | None]: ...

    @property
    def c_param(self) -> str: ...

    @property
    def c_multi_results(self) -> bool: ...


_SPELLINGS = (("BatchNorm", "Batchnorm"), ("MatMul", "Matmul"), ("RMS", "Rms"))


def c_function(kind: str) -> str:
    """The op library function of an op kind.

    Examples:
        >>> c_function("tx8be.BatchNorm_Inference"), c_function("tx8be.BatchMatMul")
        ('op_batchnorm_inference', 'op_batch_matmul')
        >>> c_function("tx8be.Conv2d"), c_function("tx8be.RMSNorm")
        ('op_conv2d', 'op_rms_norm')
    """
    name = kind.split(".", 1)[-1]
    for seed, spelled in _SPELLINGS:
        name = name.replace(seed, spelled)
    return "op_" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().replace("__", "_")


def c_format(dtype: str, where: str = "") -> str:
    """The ``Data_Format`` of an IR dtype, or an error naming ``where``."""
    fmt = FORMATS.get(dtype)
    if fmt is None:
        at = f"{where}: " if where else ""
        raise Tx8labError(
            f"{at}element type {dtype!r} has no Data_Format in codegen; known: "
            f"{', '.join(FORMATS)} (add it to tx8lab/core/codegen_c.py FORMATS)"
        )
    return fmt


def c_value(value: Any) -> str:
    """A C initializer for a field value (ints, bools, floats, tuples, C expressions).

    Examples:
        >>> c_value((3, 3)), c_value(True), c_value(1e-06), c_value("i2 == 0")
        ('{3, 3}', '1', '1e-06f', 'i2 == 0')
    """
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        if text in ("inf", "-inf", "nan"):
            raise Tx8labError(f"codegen: {value} has no C float literal")
        return text + ("f" if any(c in text for c in ".e") else ".0f")
    if isinstance(value, tuple | list):
        return "{" + ", ".join(c_value(v) for v in value) + "}"
    return str(value)


@dataclass(frozen=True)
class CCall:
    """What the code generator hands an op's ``codegen``: its slice and its C operands."""

    slice: SliceShape
    """``temporalSliceShape`` of the op under its strategy (one tile, one step)."""
    ins: tuple[str, ...] = ()
    """One ``TSR *`` expression per operand (``&t_37``)."""
    outs: tuple[str, ...] = ()
    """One ``TSR *`` expression per result."""
    imm: str = "NULL"
    """The scratch buffer (``&t_6_imm``) or ``NULL``."""
    psum: str = "NULL"
    """The partial-sum accumulator or ``NULL``."""
    psum_init: str = "1"
    """C expression: this step starts the accumulation."""
    psum_last: str = "1"
    """C expression: this step ends it."""
    op: int = 0
    """The IR op id the call computes."""
    at: tuple[str, ...] = ()
    """Loop indices around the call (C expressions, outermost first)."""
    ddr: str = "0"
    """DMA ops: the DDR address (a macro of main.c, ``DDR_37``)."""
    g_shape: str = "NULL"
    """DMA ops: the ``G_SHAPE *`` of the DDR tensor."""
    gather: str = ""
    """A gather load (seed rdmaGather): the ``TSR *`` of the indices that pick the rows."""
    share: tuple[str, int] | None = None
    """A shared load: (C expression of this tile's position in its share group, the
    group's tiles): it loads that chunk of its window."""


def _variadic(opdef: OpSignature) -> bool:
    spec = opdef.num_operands
    return not isinstance(spec, int) and spec[0] != spec[1]


def c_at(at: tuple[str, ...]) -> str:
    """The ``at`` initializer: the loop indices, ``{0}`` outside loops.

    Examples:
        >>> c_at(()), c_at(("i0", "i1"))
        ('{0}', '{i0, i1}')
    """
    if len(at) > MAX_LOOP_DEPTH:
        raise Tx8labError(f"codegen: {len(at)} loops around a call exceed {MAX_LOOP_DEPTH}")
    return "{" + (", ".join(at) if at else "0") + "}"


def dma_param(call: CCall) -> str:
    """``&(DMA_PARAM){.op = 35, .at = {i0}}``: a DMA call's op and loop indices.

    A shared load adds the chunk it moves: ``.chunk = noc_pos_35[tile_id], .chunks = 4``.
    """
    share = ""
    if call.share is not None:
        share = f", .chunk = {call.share[0]}, .chunks = {call.share[1]}"
    return f"&(DMA_PARAM){{.op = {call.op}, .at = {c_at(call.at)}{share}}}"


def compute_call(opdef: OpSignature, call: CCall, fields: Mapping[str, Any], dtype: str) -> str:
    """``op_<name>(&(PARAM){...}, ins, imm, psum, outs)`` for one slice (no ``;``)."""
    struct = opdef.c_param
    if len(call.slice.iteration) > MAX_SHAPE_DIM:
        raise Tx8labError(
            f"{opdef.kind}: {len(call.slice.iteration)} iteration dims exceed "
            f"MAX_SHAPE_DIM = {MAX_SHAPE_DIM} of the C structs"
        )
    values: dict[str, Any] = {
        "op": call.op,
        "at": c_at(call.at),
        "fmt": c_format(dtype, opdef.kind),
        "dim": len(call.slice.iteration),
        "slice": tuple(call.slice.iteration),
        "psum_init": call.psum_init,
        "psum_last": call.psum_last,
    }
    known = {f.split()[-1].split("[")[0] for f in (*COMMON_FIELDS, *PARAM_STRUCTS[struct])}
    for name, value in fields.items():
        if name not in known:
            raise Tx8labError(f"{opdef.kind}: {struct} has no field {name!r}")
        values[name] = value
    param = "&(" + struct + "){" + ", ".join(f".{k} = {c_value(v)}" for k, v in values.items())
    args = [param + "}"]
    if _variadic(opdef):
        args += ["(TSR *[]){" + ", ".join(call.ins) + "}", str(len(call.ins))]
    else:
        args += list(call.ins)
    args += [call.imm, call.psum]
    if opdef.c_multi_results:
        args += ["(TSR *[]){" + ", ".join(call.outs) + "}", str(len(call.outs))]
    else:
        args += list(call.outs)
    return f"{c_function(opdef.kind)}({', '.join(args)})"


@dataclass(frozen=True)
class DmaFunction:
    """One DMA (or NoC) function of the op library: its C parameters, the TSRs it reads/writes."""

    name: str
    params: str
    """The C parameter list."""
    reads: tuple[str, ...]
    """The ``TSR *`` parameters whose SPM bytes it reads."""
    writes: tuple[str, ...]
    """The ``TSR *`` parameters whose SPM bytes it writes."""

    def prototype(self) -> str:
        """The C signature, without ``;``."""
        return f"uint64_t {self.name}({self.params})"


_DMA_PARAMS = "const DMA_PARAM *param, TSR *{}, uint64_t ddr_addr, G_SHAPE *g"

#: The DMA functions main.c calls (RDMA loads, the rdmaGather load, WDMA stores).
DMA_FUNCTIONS: tuple[DmaFunction, ...] = (
    DmaFunction("op_dma_load", _DMA_PARAMS.format("dst"), (), ("dst",)),
    DmaFunction("op_dma_load_const", _DMA_PARAMS.format("dst"), (), ("dst",)),
    DmaFunction("op_dma_store", _DMA_PARAMS.format("src"), ("src",), ()),
    DmaFunction(
        "op_dma_gather",
        _DMA_PARAMS.format("dst") + ", const TSR *indices",
        ("indices",),
        ("dst",),
    ),
)

#: The NoC functions of an all-reduce (``program`` **NoC reductions**): a DTE send of a
#: chunk of ``src`` to ``dst`` on tile ``param->peer``, the receive that waits for it,
#: and the add of a landed chunk into the sum. ``param->transfer`` names the transfer
#: in the op's all-reduce plan (both tiles give the same one), ``param->chunk`` the
#: chunk of the result slice; the library finds the chunk's box from the tile, the op
#: and ``at``, as for a compute call, and an empty chunk moves nothing.
NOC_FUNCTIONS: tuple[DmaFunction, ...] = (
    DmaFunction("dte_send", "const NOC_PARAM *param, TSR *src, TSR *dst", ("src",), ("dst",)),
    DmaFunction("dte_recv", "const NOC_PARAM *param, TSR *dst", (), ("dst",)),
    DmaFunction(
        "op_noc_add",
        "const NOC_PARAM *param, TSR *staged, TSR *acc, TSR *out",
        ("staged", "acc"),
        ("out",),
    ),
)


def prototype(opdef: OpSignature) -> str:
    """The header declaration of a compute op's function (see the module docstring)."""
    args = [f"const {opdef.c_param} *param"]
    spec = opdef.num_operands
    if _variadic(opdef):
        args += ["TSR *const *ins", "int32_t num_ins"]
    else:
        count = spec if isinstance(spec, int) else spec[0]
        args += [f"TSR *in{i}" for i in range(count)]
    args += ["TSR *imm", "TSR *psum"]
    if opdef.c_multi_results:
        args += ["TSR *const *outs", "int32_t num_outs"]
    else:
        args.append("TSR *out")
    return f"uint64_t {c_function(opdef.kind)}({', '.join(args)});"


__all__ = [
    "COMMON_FIELDS",
    "DMA_FUNCTIONS",
    "FORMATS",
    "MAX_LOOP_DEPTH",
    "MAX_SHAPE_DIM",
    "NOC_FUNCTIONS",
    "OP_INSTR_TYPES",
    "PARAM_STRUCTS",
    "CCall",
    "DmaFunction",
    "OpSignature",
    "c_at",
    "c_format",
    "c_function",
    "c_value",
    "compute_call",
    "dma_param",
    "prototype",
]
