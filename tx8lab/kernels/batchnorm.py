"""The BatchNorm walkthrough: ``op_batchnorm_inference`` run step by step on SPM byte images.

Spec: seed 001 ("BatchNorm Design", "Batchnorm Computation Flow", VuV_mul /
VuV_mul_loop, "LSU" gatherScatter for fp16 -> fp32, "Tensor Layout" Cx/NCx, the main.c
load -> compute -> store loop). One tile's slice lives in a model SPM (a byte array);
every instruction reads and writes its bytes, and each of the seed's ten steps leaves a
:class:`StepRecord` (its instructions, the buffer it wrote as bytes and as values) that a
notebook can show. For non-fp32 inputs (fp16 in the seed's figure, bf16 alike):

1. ``op_gatherScatter`` (TDMA): the compact 16-bit elements of ``in`` go to the 32-bit
   slots of ``imm`` (the fp32 Cx/NCx image of the same shape), low half of each slot.
2. ``convert_fp16_fp32`` (CGRA), in place over every 32-bit slot of ``imm``.
3. ``VuV_sub`` / ``VuV_sub_loop``: ``imm_a = x - mean``, looping over the batches.
4. ``addVS``: ``var += epsilon`` (in place, the seed's ``varAddr`` as source and result).
5. ``rsqrt``: ``var = 1 / sqrt(var)`` in place.
6. ``VuV_mul`` / ``VuV_mul_loop``: ``imm_a *= var``.
7. ``VuV_mul`` / ``VuV_mul_loop``: ``imm_a *= scale``.
8. ``VuV_add`` / ``VuV_add_loop``: ``imm_a += shift``.
9. ``convert_fp32_fp16`` in place: each result into the low half of its slot.
10. ``op_gatherScatter`` back: the low halves to the compact 16-bit image ``out``.

VuV semantics (seed "VuV_mul_loop"): ``VuV_op(src, dst, unit, src_elem_num,
unit_elem_num)`` computes ``dst[i] = src[i] op unit[i % unit_elem_num]`` for ``i <
src_elem_num``; ``VuV_op_loop`` repeats it ``full_src_elem_num / src_elem_num`` times,
chunk ``j`` of the source against chunk ``j`` of ``full_unit``, and requires the seed's
condition ``full_src_elem_num / full_unit_elem_num == src_elem_num / unit_elem_num`` with
``unit_elem_num == 64``. In a batch of a C > 32 tensor (``N[CxHW64, HWC0]``) the Cx blocks
are one ``VuV_op_loop`` (``src_elem_num = HW*64``, loop over Cx) and the C0 tail one
``VuV_op`` (``unit_elem_num`` = padded C0); a C <= 32 batch is one ``VuV_op``; the batch
dimension is the outer loop, as the seed says.

Timing (issue 19: every figure through the one simulator): :func:`timing` turns each
instruction into a :class:`~tx8lab.hw.sim.SimCommand` (:func:`instruction_law`), plays
them on one tile with :func:`tx8lab.hw.sim.simulate` and gives each step its engine, start,
end and busy time (:class:`BatchNormTiming`). The op's own instructions only: the main.c
loads and stores around it are the program's (``tx8lab.core.program``). The op library
costs the op from the same steps without running them
(``tx8lab.core.ops.norm.batchnorm_steps``): each step's busy time here is its cycles there,
and the op's cost is their sum (the seed's accumulated ``TsmExecute`` cycles); the span
here is longer by the kernel core's issue gaps between the commands.

Readings chosen where the seed is vague:

- **Buffers.** One tile slice; SPM buffers in the order in, scale, shift, mean, var, imm,
  out, each on a 2048-bit (256-byte) boundary, starting at 0, and the SPM starts zeroed.
  The parameters are fp32 Cx images of their C channels; ``imm`` is ``2 x sizeof(in)``
  bytes (the op library's ``imm_bytes``), which always holds the fp32 image of the slice.
  ``imm_a`` is the start of ``imm``.
- **Rank 3.** The seed's kernel takes rank 2/3/4 in Cx/NCx, and Cx needs rank 2 or 4
  (seed 000): a rank-3 slice ``[N, W, C]`` is held and computed as its rank-4 view
  ``[N, 1, W, C]`` (:func:`tx8lab.core.layouts.aligned_view`), so the buffers and the
  step values have that shape; the result is returned in the input's shape.
- **fp32 and tf32 inputs** skip steps 1, 2 and 10: step 3 reads ``in`` directly and step
  8 writes ``out``; step 9 rounds ``out`` to tf32 in place for tf32 and is skipped for
  fp32. The seed only draws the 16-bit flow.
- **Arithmetic** is IEEE fp32 with round-to-nearest-even (the seed's ``RND_NEAREST_EVEN``);
  ``rsqrt`` is the correctly rounded fp32 ``1/sqrt`` (the op library's ``rsqrt_f32``; the
  CGRA's approximation error is not published). The conversions round to nearest even.
- **Steps 4 and 5 overwrite ``var``** (it holds ``rsqrt(var + epsilon)`` afterwards), so a
  loop that runs the op again must reload it: that is why the seed's main.c loads the
  variance inside the loop. :func:`main_loop` and :func:`main_c` keep the seed's loop,
  which loads the slice and all four parameters every iteration. The op library declares
  the overwrite (``BatchNorm_Inference.clobbered_operands``, ``clobbered_value``), and the
  group schedule behind the pipeline's C (``tx8lab.core.schedule.slicing``) reloads the
  variance inside the loop too, while it loads scale, shift and mean once before the
  loop: the kernel only reads them (steps 3, 7, 8).
- **main.c** (:func:`main_c`) is the text for one tile: the seed's pseudo-code loop with
  the seed's struct names (``L_SHAPE``, ``G_SHAPE``, ``TSR``, ``varience`` as spelled), the
  buffers of :func:`buffer_plan` for the op library's ``temporal_slice_shape``, tile ``t``
  taking channels ``[t*ceil(C/shard), ...)`` (a tile left without channels is an error),
  and ``op_dma_load`` advancing ``shape_start`` over the split grid (last dim fastest)
  until it sets ``done``. :func:`main_loop` executes that loop with the numpy flow.
- A step's ``values`` are what its buffer holds in the buffer's current format (fp16 bits
  in the low halves after step 1, fp32 after step 2, ...), in the slice's logical shape.
- **GatherScatter timing.** An inner transfer is a run of elements contiguous at both
  ends (:func:`inner_transfers`): 16-bit elements into 32-bit slots are one 2-byte
  transfer each, so the TDMA law counts one iteration per element. One instruction is
  one command, as the seed issues it; the board's LSU watchdog trips a single
  GatherScatter of about 32,768 iterations (``micro.csv`` "TDMA execution counter
  increment ... fatal") and a compiler splits at 16,384, which would add only the law's
  fixed cost per extra command.
- **CGRA timing.** Every CGRA instruction here works on fp32 slots, so the CT law runs at
  the fp32 rate with 32 lanes (a conversion too: its wider side); its vector work per
  element is the op library's for the same operation (``Sub``, ``Mul``, ``Add``,
  ``Rsqrt``, ``Convert``: :data:`CT_OP_KIND`); a ``VuV_*_loop`` is one command over its
  full element count. Byte ranges are the fp32 bytes each reads and writes; a
  GatherScatter covers its whole source and destination buffers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tx8lab.core.attrs import LayoutMode
from tx8lab.core.dtypes import FLOAT_DTYPES, bits_of, from_bits_image, round_to, to_bits_image
from tx8lab.core.ir import Op
from tx8lab.core.layouts import (
    BATCH_ALIGN_BITS,
    Geometry,
    aligned_view,
    geometry,
    layout_for,
    pack,
    slot_map,
)
from tx8lab.core.ops import get_op_def
from tx8lab.core.ops.norm import BATCHNORM_CT_OP_KIND, BATCHNORM_STEP_TITLES, rsqrt_f32
from tx8lab.core.schedule.tasks import OpStrategy
from tx8lab.errors import Tx8labError
from tx8lab.hw import laws
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.sim import Range, SimCommand, SimResult, simulate

Array = npt.NDArray[Any]

#: The unit vector length VuV_*_loop requires (seed: "unit_elem_num=64").
VUV_LOOP_UNIT = 64

#: SPM buffers start on this many bytes (2048 bits, the batch alignment).
SPM_ALIGN_BYTES = BATCH_ALIGN_BITS // 8

_OPS = {"mul": np.multiply, "add": np.add, "sub": np.subtract}

#: The seed's step titles (BatchNorm Design, fp16 example), as the op library names them.
STEP_TITLES = BATCHNORM_STEP_TITLES


@dataclass(frozen=True)
class Region:
    """One SPM buffer of the slice."""

    name: str
    addr: int
    """Start, in bytes from the SPM base."""
    nbytes: int
    dtype: str
    """Element type of the image it is allocated for."""
    shape: tuple[int, ...]
    layout: LayoutMode


@dataclass(frozen=True)
class Instr:
    """One instruction issued by the op (engine, seed name, arguments)."""

    engine: str
    name: str
    args: tuple[tuple[str, Any], ...]

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={_fmt(k, v)}" for k, v in self.args)
        return f"{self.name}({inner})"


def _fmt(key: str, value: Any) -> str:
    """SPM addresses in hex, counts and scalars as they are."""
    return f"0x{value:x}" if key in ("src", "dst", "unit") else str(value)


@dataclass(frozen=True)
class StepRecord:
    """What one of the seed's ten steps did."""

    index: int
    title: str
    engine: str
    instructions: tuple[Instr, ...]
    region: str
    """The buffer the step wrote ('' when skipped)."""
    image: bytes
    """That buffer's bytes after the step."""
    values: Array | None
    """The buffer's contents decoded in its current format (see the module doc)."""
    skipped: str = ""
    """Why the step does not apply to this dtype ('' when it ran)."""


@dataclass
class Spm:
    """A model SPM: a zeroed byte array with named buffers, and the instructions it ran."""

    size_bytes: int = 0
    regions: dict[str, Region] = field(default_factory=dict)
    mem: Array = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    issued: list[Instr] = field(default_factory=list)

    def alloc(self, name: str, nbytes: int, dtype: str, shape: tuple[int, ...]) -> Region:
        """Place a buffer after the last one, on a 256-byte boundary."""
        addr = -(-self.size_bytes // SPM_ALIGN_BYTES) * SPM_ALIGN_BYTES
        region = Region(name, addr, nbytes, dtype, shape, layout_for(shape, aligned=True))
        self.regions[name] = region
        self.size_bytes = addr + nbytes
        grown = np.zeros(self.size_bytes, dtype=np.uint8)
        grown[: len(self.mem)] = self.mem
        self.mem = grown
        return region

    def image(self, name: str) -> bytes:
        """The bytes of buffer ``name``."""
        r = self.regions[name]
        return bytes(self.mem[r.addr : r.addr + r.nbytes].tobytes())

    def write(self, name: str, data: bytes) -> None:
        """Fill buffer ``name`` from its start (a DMA load)."""
        r = self.regions[name]
        if len(data) > r.nbytes:
            raise Tx8labError(f"SPM buffer {name!r} holds {r.nbytes} bytes, got {len(data)}")
        self.mem[r.addr : r.addr + len(data)] = np.frombuffer(data, dtype=np.uint8)

    def f32(self, addr: int, count: int) -> Array:
        """A writable fp32 view of ``count`` elements at byte ``addr``."""
        if addr % 4 or addr < 0 or addr + 4 * count > len(self.mem):
            raise Tx8labError(
                f"fp32 access of {count} elements at byte {addr} is outside the SPM "
                f"({len(self.mem)} bytes) or not 4-byte aligned"
            )
        return self.mem[addr : addr + 4 * count].view("<f4")

    def issue(self, engine: str, name: str, **args: Any) -> Instr:
        """Record an instruction."""
        instr = Instr(engine, name, tuple(args.items()))
        self.issued.append(instr)
        return instr


# ----------------------------------------------------------------- instructions
def vuv(
    spm: Spm, op: str, src: int, dst: int, unit: int, src_elem_num: int, unit_elem_num: int
) -> Instr:
    """``CGRATensor_ArithOp_V_VuV_<op>``: ``dst[i] = src[i] op unit[i % unit_elem_num]``.

    Addresses are SPM bytes of fp32 vectors.

    Examples:
        >>> spm = Spm()
        >>> _ = spm.alloc("v", 32, "f32", (8,)), spm.alloc("u", 16, "f32", (4,))
        >>> spm.f32(0, 8)[:] = np.arange(8); spm.f32(256, 4)[:] = [1, 10, 100, 1000]
        >>> print(vuv(spm, "mul", 0, 0, 256, 8, 4)); spm.f32(0, 8).tolist()
        VuV_mul(src=0x0, dst=0x0, unit=0x100, src_elem_num=8, unit_elem_num=4)
        [0.0, 10.0, 200.0, 3000.0, 4.0, 50.0, 600.0, 7000.0]
    """
    if op not in _OPS:
        raise Tx8labError(f"VuV_{op}: unknown operation, use one of {', '.join(_OPS)}")
    if unit_elem_num <= 0 or src_elem_num % unit_elem_num:
        raise Tx8labError(
            f"VuV_{op}: src_elem_num {src_elem_num} must be a multiple of unit_elem_num "
            f"{unit_elem_num} (the unit vector repeats over the source)"
        )
    a = spm.f32(src, src_elem_num)
    u = spm.f32(unit, unit_elem_num)
    result = _OPS[op](a.reshape(-1, unit_elem_num), u[None, :]).astype(np.float32)
    spm.f32(dst, src_elem_num)[:] = result.reshape(-1)
    return spm.issue(
        "CGRA",
        f"VuV_{op}",
        src=src,
        dst=dst,
        unit=unit,
        src_elem_num=src_elem_num,
        unit_elem_num=unit_elem_num,
    )


def vuv_loop(
    spm: Spm,
    op: str,
    src: int,
    dst: int,
    unit: int,
    src_elem_num: int,
    unit_elem_num: int,
    full_src_elem_num: int,
    full_unit_elem_num: int,
) -> Instr:
    """``CGRATensor_ArithOp_V_VuV_<op>_loop``: :func:`vuv` over consecutive chunks.

    Chunk ``j`` (``src_elem_num`` elements from ``src + j*src_elem_num``) is combined
    with unit chunk ``j`` (``unit_elem_num`` elements); the seed's conditions are checked.
    """
    name = f"VuV_{op}_loop"
    if unit_elem_num != VUV_LOOP_UNIT:
        raise Tx8labError(f"{name}: unit_elem_num must be {VUV_LOOP_UNIT}, got {unit_elem_num}")
    if (
        src_elem_num <= 0
        or full_src_elem_num % src_elem_num
        or full_unit_elem_num % unit_elem_num
        or full_src_elem_num * unit_elem_num != src_elem_num * full_unit_elem_num
    ):
        raise Tx8labError(
            f"{name}: needs full_src_elem_num / full_unit_elem_num == src_elem_num / "
            f"unit_elem_num in whole chunks, got {full_src_elem_num}/{full_unit_elem_num} "
            f"and {src_elem_num}/{unit_elem_num}"
        )
    before = len(spm.issued)
    for j in range(full_src_elem_num // src_elem_num):
        off = 4 * j * src_elem_num
        vuv(spm, op, src + off, dst + off, unit + 4 * j * unit_elem_num, src_elem_num, 64)
    del spm.issued[before:]
    return spm.issue(
        "CGRA",
        name,
        src=src,
        dst=dst,
        unit=unit,
        src_elem_num=src_elem_num,
        unit_elem_num=unit_elem_num,
        full_src_elem_num=full_src_elem_num,
        full_unit_elem_num=full_unit_elem_num,
    )


def _offsets_bytes(shape: tuple[int, ...], dtype: str) -> Array:
    """Byte offset of every element (row-major) in the Cx/NCx image of ``shape``."""
    slots = slot_map(shape, dtype, layout_for(shape, aligned=True))
    where = np.nonzero(slots >= 0)[0]
    out = np.empty(len(where), dtype=np.int64)
    out[slots[where]] = where * (bits_of(dtype) // 8)
    return out


def inner_transfers(src_off: Array, dst_off: Array, nbytes: int) -> tuple[int, int]:
    """``(iterations, inner bytes)`` of a GatherScatter moving ``nbytes`` per element.

    Consecutive elements share one inner transfer while both their source and their
    destination bytes are contiguous; the descriptor's inner size is uniform (seed: a
    3-level stride/iteration descriptor), so it is the largest size every run is a whole
    number of.

    Examples:
        >>> inner_transfers(np.array([0, 2, 4, 6]), np.array([0, 4, 8, 12]), 2)  # fp16 -> slots
        (4, 2)
        >>> inner_transfers(np.array([0, 4, 8, 12]), np.array([64, 68, 72, 76]), 4)
        (1, 16)
    """
    if len(src_off) == 0:
        return 0, nbytes
    breaks = (np.diff(src_off) != nbytes) | (np.diff(dst_off) != nbytes)
    starts = np.flatnonzero(np.concatenate(([True], breaks)))
    runs = np.diff(np.append(starts, len(src_off)))
    inner = int(np.gcd.reduce(runs))
    return len(src_off) // inner, inner * nbytes


def gather_scatter(
    spm: Spm, src: int, dst: int, src_off: Array, dst_off: Array, nbytes: int
) -> Instr:
    """``op_gatherScatter`` (TDMA): byte ``src + src_off[k]`` -> ``dst + dst_off[k]``.

    Offsets are bytes; ``nbytes`` is the element size moved. The instruction records its
    inner transfers (:func:`inner_transfers`), which the TDMA law times.
    """
    idx = np.arange(nbytes)
    spm.mem[(dst + dst_off)[:, None] + idx] = spm.mem[(src + src_off)[:, None] + idx]
    iterations, inner = inner_transfers(src_off, dst_off, nbytes)
    return spm.issue(
        "TDMA",
        "op_gatherScatter",
        src=src,
        dst=dst,
        elem_num=len(src_off),
        elem_bytes=nbytes,
        inner_num=iterations,
        inner_bytes=inner,
    )


def convert_16_to_32(spm: Spm, addr: int, count: int, dtype: str) -> Instr:
    """``convert_fp16_fp32`` (or bf16): the low half of each 32-bit slot -> fp32, in place."""
    raw = spm.mem[addr : addr + 4 * count].reshape(count, 4)[:, :2].tobytes()
    spm.f32(addr, count)[:] = from_bits_image(raw, dtype, count).astype(np.float32)
    return spm.issue("CGRA", f"convert_{_fmt_name(dtype)}_fp32", src=addr, dst=addr, elem_num=count)


def convert_32_to_16(spm: Spm, addr: int, count: int, dtype: str) -> Instr:
    """``convert_fp32_fp16`` (or bf16): fp32 slots -> low halves (high halves zeroed)."""
    half = np.frombuffer(to_bits_image(spm.f32(addr, count).copy(), dtype), dtype=np.uint8)
    slots = spm.mem[addr : addr + 4 * count].reshape(count, 4)
    slots[:, :2] = half.reshape(count, 2)
    slots[:, 2:] = 0
    return spm.issue("CGRA", f"convert_fp32_{_fmt_name(dtype)}", src=addr, dst=addr, elem_num=count)


def _fmt_name(dtype: str) -> str:
    return {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "tf32": "tf32"}[dtype]


# ----------------------------------------------------------------- the op
@dataclass(frozen=True)
class BatchNormRun:
    """One ``op_batchnorm_inference`` call on one slice: its steps, buffers and result."""

    shape: tuple[int, ...]
    dtype: str
    epsilon: float
    steps: tuple[StepRecord, ...]
    regions: tuple[Region, ...]
    output: Array
    """The result read back from ``out`` (values of ``dtype``)."""
    out_image: bytes
    """``out``'s bytes: the Cx/NCx image of the result."""

    @property
    def instructions(self) -> tuple[Instr, ...]:
        """Every instruction in issue order."""
        return tuple(i for s in self.steps for i in s.instructions)

    def instruction_counts(self) -> dict[str, int]:
        """Instructions by name."""
        return dict(Counter(i.name for i in self.instructions))

    def regions_table(self) -> list[dict[str, Any]]:
        """One row per SPM buffer (for a DataFrame)."""
        return [
            {
                "buffer": r.name,
                "addr": f"0x{r.addr:05x}",
                "bytes": r.nbytes,
                "dtype": r.dtype,
                "shape": "x".join(map(str, r.shape)),
                "layout": r.layout.value,
            }
            for r in self.regions
        ]


def _params_1d(name: str, value: npt.ArrayLike, c: int) -> Array:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0 or arr.shape[-1] != c or math.prod(arr.shape) != c:
        raise Tx8labError(f"BatchNorm {name}: must be [{c}] or 1x..x1x{c}, got {arr.shape}")
    return round_to(arr.reshape(c), "f32")


def _check_input(shape: tuple[int, ...], dtype: str) -> None:
    if dtype not in FLOAT_DTYPES:
        raise Tx8labError(
            f"BatchNorm input dtype {dtype!r}: the op supports {', '.join(sorted(FLOAT_DTYPES))}"
        )
    if len(shape) not in (2, 3, 4) or 0 in shape:
        raise Tx8labError(f"BatchNorm input shape {shape}: needs rank 2, 3 or 4, no empty dims")


def _vuv_batches(spm: Spm, op: str, src: int, dst: int, unit: int, geo: Geometry) -> list[Instr]:
    """The seed's batch loop: per batch a VuV_op_loop over the Cx blocks, a VuV_op for C0."""
    out = []
    stride = geo.batch_stride_bits // 8
    blocks_elems = geo.blocks * geo.hw * geo.block
    for n in range(geo.n):
        base_s, base_d = src + n * stride, dst + n * stride
        if geo.blocks:
            out.append(
                vuv_loop(
                    spm,
                    op,
                    base_s,
                    base_d,
                    unit,
                    geo.hw * geo.block,
                    geo.block,
                    blocks_elems,
                    geo.blocks * geo.block,
                )
            )
        if geo.tail_pad:
            out.append(
                vuv(
                    spm,
                    op,
                    base_s + 4 * blocks_elems,
                    base_d + 4 * blocks_elems,
                    unit + 4 * geo.blocks * geo.block,
                    geo.hw * geo.tail_pad,
                    geo.tail_pad,
                )
            )
    return out


def buffer_plan(shape: Sequence[int], dtype: str) -> tuple[Region, ...]:
    """The SPM buffers of one slice: in, scale, shift, mean, var, imm, out (module doc).

    Examples:
        >>> [(r.name, r.addr, r.nbytes) for r in buffer_plan((2, 1, 2, 131), "f16")]
        ... # doctest: +NORMALIZE_WHITESPACE
        [('in', 0, 1296), ('scale', 1536, 528), ('shift', 2304, 528), ('mean', 3072, 528),
         ('var', 3840, 528), ('imm', 4608, 2592), ('out', 7424, 1296)]
    """
    shape = tuple(int(d) for d in shape)
    _check_input(shape, dtype)
    shape = aligned_view(shape)  # rank 3 is held as [N, 1, W, C] (Cx needs rank 2 or 4)
    c = shape[-1]
    in_bytes = -(-geometry(shape, dtype, layout_for(shape, aligned=True)).footprint_bits // 8)
    param_bytes = -(-geometry((c,), "f32", LayoutMode.Cx).footprint_bits // 8)
    spm = Spm()
    spm.alloc("in", in_bytes, dtype, shape)
    for name in ("scale", "shift", "mean", "var"):
        spm.alloc(name, param_bytes, "f32", (c,))
    spm.alloc("imm", 2 * in_bytes, "f32", shape)  # seed: 2 x sizeof(input)
    spm.alloc("out", in_bytes, dtype, shape)
    return tuple(spm.regions.values())


def batchnorm_flow(
    x: npt.ArrayLike,
    scale: npt.ArrayLike,
    shift: npt.ArrayLike,
    mean: npt.ArrayLike,
    variance: npt.ArrayLike,
    dtype: str = "f16",
    epsilon: float = 1e-6,
) -> BatchNormRun:
    """Run ``op_batchnorm_inference`` on one slice ``x`` (NHWC, rank 2-4) step by step.

    ``x`` is rounded to ``dtype``; the parameters are fp32 ``[C]`` (or ``1x..x1xC``).

    Raises:
        Tx8labError: unsupported dtype/rank, or parameters not of ``x``'s C.
    """
    values = round_to(np.asarray(x), dtype)
    shape = tuple(int(d) for d in values.shape)
    _check_input(shape, dtype)
    c = shape[-1]
    params = {
        n: _params_1d(n, v, c)
        for n, v in zip(
            ("scale", "shift", "mean", "var"), (scale, shift, mean, variance), strict=True
        )
    }
    wide = bits_of(dtype) == 16
    given, shape = shape, aligned_view(shape)  # rank 3 runs on [N, 1, W, C]
    values = values.reshape(shape)
    layout = layout_for(shape, aligned=True)
    in_image = pack(values, dtype, layout)
    geo = geometry(shape, "f32", layout)  # imm_a: the fp32 image of the slice
    spm = Spm()
    for region in buffer_plan(shape, dtype):
        spm.alloc(region.name, region.nbytes, region.dtype, region.shape)
    imm, out = spm.regions["imm"], spm.regions["out"]
    # load (the main.c op_dma_load of the slice and the four parameters)
    spm.write("in", in_image)
    for name, vec in params.items():
        spm.write(name, pack(vec, "f32", LayoutMode.Cx))
    slots = geo.footprint_bits // 32
    r = spm.regions
    steps: list[StepRecord] = []

    def record(index: int, engine: str, instrs: Sequence[Instr], region: str, vals: Any) -> None:
        steps.append(
            StepRecord(
                index,
                STEP_TITLES[index - 1],
                engine,
                tuple(instrs),
                region,
                spm.image(region),
                vals,
            )
        )

    def skip(index: int, why: str) -> None:
        steps.append(StepRecord(index, STEP_TITLES[index - 1], "-", (), "", b"", None, why))

    def imm_f32() -> Array:
        return _decode_f32(spm, imm.addr, shape, layout)

    def param(name: str) -> Array:
        return spm.f32(r[name].addr, c).copy()

    f32_off = _offsets_bytes(shape, "f32")
    in_off = _offsets_bytes(shape, dtype)
    if wide:
        i1 = gather_scatter(spm, r["in"].addr, imm.addr, in_off, f32_off, 2)
        record(1, "TDMA", [i1], "imm", _decode_low(spm, imm.addr, f32_off, dtype, shape))
        i2 = convert_16_to_32(spm, imm.addr, slots, dtype)
        record(2, "CGRA", [i2], "imm", imm_f32())
        src3 = imm.addr
    else:
        skip(1, f"{dtype} is already 32-bit")
        skip(2, f"{dtype} is already 32-bit")
        src3 = r["in"].addr
    record(
        3, "CGRA", _vuv_batches(spm, "sub", src3, imm.addr, r["mean"].addr, geo), "imm", imm_f32()
    )
    var = spm.f32(r["var"].addr, c)
    var[:] = (var + np.float32(epsilon)).astype(np.float32)
    i4 = spm.issue(
        "CGRA",
        "addVS",
        src=r["var"].addr,
        scalar=float(np.float32(epsilon)),
        dst=r["var"].addr,
        elem_num=c,
        rnd="RND_NEAREST_EVEN",
        fmt="Fmt_FP32",
    )
    record(4, "CGRA", [i4], "var", param("var"))
    var[:] = rsqrt_f32(var)
    i5 = spm.issue("CGRA", "rsqrt", src=r["var"].addr, dst=r["var"].addr, elem_num=c)
    record(5, "CGRA", [i5], "var", param("var"))
    for index, op, pname in ((6, "mul", "var"), (7, "mul", "scale")):
        instrs = _vuv_batches(spm, op, imm.addr, imm.addr, r[pname].addr, geo)
        record(index, "CGRA", instrs, "imm", imm_f32())
    if wide:
        record(
            8,
            "CGRA",
            _vuv_batches(spm, "add", imm.addr, imm.addr, r["shift"].addr, geo),
            "imm",
            imm_f32(),
        )
        i9 = convert_32_to_16(spm, imm.addr, slots, dtype)
        record(9, "CGRA", [i9], "imm", _decode_low(spm, imm.addr, f32_off, dtype, shape))
        i10 = gather_scatter(spm, imm.addr, out.addr, f32_off, in_off, 2)
        result = _decode(spm, out.addr, shape, dtype, layout)
        record(10, "TDMA", [i10], "out", result)
    else:
        instrs = _vuv_batches(spm, "add", imm.addr, out.addr, r["shift"].addr, geo)
        record(8, "CGRA", instrs, "out", _decode_f32(spm, out.addr, shape, layout))
        if dtype == "tf32":
            view = spm.f32(out.addr, slots)
            view[:] = round_to(view.copy(), "tf32")
            i9 = spm.issue("CGRA", "convert_fp32_tf32", src=out.addr, dst=out.addr, elem_num=slots)
            record(9, "CGRA", [i9], "out", _decode(spm, out.addr, shape, dtype, layout))
        else:
            skip(9, "the result is already fp32")
        skip(10, "out was written by step 8")
        result = _decode(spm, out.addr, shape, dtype, layout)
    return BatchNormRun(
        given,
        dtype,
        float(epsilon),
        tuple(steps),
        tuple(r.values()),
        result.reshape(given),
        spm.image("out"),
    )


def _decode(spm: Spm, addr: int, shape: tuple[int, ...], dtype: str, layout: LayoutMode) -> Array:
    from tx8lab.core.layouts import unpack

    nbytes = -(-geometry(shape, dtype, layout).footprint_bits // 8)
    return unpack(spm.mem[addr : addr + nbytes].tobytes(), shape, dtype, layout)


def _decode_f32(spm: Spm, addr: int, shape: tuple[int, ...], layout: LayoutMode) -> Array:
    return _decode(spm, addr, shape, "f32", layout)


def _decode_low(spm: Spm, addr: int, f32_off: Array, dtype: str, shape: tuple[int, ...]) -> Array:
    """The 16-bit values in the low halves of the 32-bit slots, in logical order."""
    raw = spm.mem[(addr + f32_off)[:, None] + np.arange(2)].tobytes()
    return from_bits_image(raw, dtype, len(f32_off)).astype(np.float32).reshape(shape)


# ----------------------------------------------------------------- main.c
@dataclass(frozen=True)
class LoopRun:
    """The main.c loop on one tile: one :class:`BatchNormRun` per temporal slice."""

    output: Array
    """The stored result, assembled from every slice."""
    starts: tuple[tuple[int, ...], ...]
    """Each iteration's ``shape_start`` (seed ``L_SHAPE``)."""
    runs: tuple[BatchNormRun, ...]


def slice_starts(
    shape: Sequence[int], slice_shape: Sequence[int]
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """``(shape_start, shape_real)`` of every temporal slice, in load order (last dim fastest).

    Examples:
        >>> slice_starts((5, 4), (2, 4))
        [((0, 0), (2, 4)), ((2, 0), (2, 4)), ((4, 0), (1, 4))]
    """
    counts = [-(-int(d) // int(s)) for d, s in zip(shape, slice_shape, strict=True)]
    out = []
    for idx in np.ndindex(*counts):
        start = tuple(int(i) * int(s) for i, s in zip(idx, slice_shape, strict=True))
        real = tuple(
            min(int(s), int(d) - b) for s, d, b in zip(slice_shape, shape, start, strict=True)
        )
        out.append((start, real))
    return out


def main_loop(
    x: npt.ArrayLike,
    scale: npt.ArrayLike,
    shift: npt.ArrayLike,
    mean: npt.ArrayLike,
    variance: npt.ArrayLike,
    slice_shape: Sequence[int],
    dtype: str = "f16",
    epsilon: float = 1e-6,
) -> LoopRun:
    """Seed main.c: ``while (!input_done)`` load the slice and the parameters, compute, store.

    ``slice_shape`` cuts N, H, W only (the op's rule); C must be whole.

    Raises:
        Tx8labError: the slice cuts C or does not match ``x``'s rank.
    """
    values = round_to(np.asarray(x), dtype)
    shape = tuple(int(d) for d in values.shape)
    slice_shape = tuple(int(d) for d in slice_shape)
    if len(slice_shape) != len(shape) or slice_shape[-1] != shape[-1] or min(slice_shape) < 1:
        raise Tx8labError(
            f"BatchNorm main loop: slice {slice_shape} must have the input's rank and its whole "
            f"C = {shape[-1]} (the op splits only N, H, W), input {shape}"
        )
    out = np.zeros(shape, dtype=values.dtype)
    starts, runs = [], []
    for start, real in slice_starts(shape, slice_shape):
        window = tuple(slice(b, b + r) for b, r in zip(start, real, strict=True))
        # load -> compute -> store; the parameters are loaded again every time because
        # steps 4 and 5 overwrite var in place
        run = batchnorm_flow(values[window], scale, shift, mean, variance, dtype, epsilon)
        out[window] = run.output
        starts.append(start)
        runs.append(run)
    return LoopRun(out, tuple(starts), tuple(runs))


_FMT = {"f16": "Fmt_FP16", "bf16": "Fmt_BF16", "f32": "Fmt_FP32", "tf32": "Fmt_TF32"}


def _c_array(values: Sequence[int]) -> str:
    return "{" + ", ".join(str(int(v)) for v in values) + "}"


def main_c(op: Op, strategy: OpStrategy | None = None, *, tile: int = 0) -> str:
    """The main.c text of one tile for a ``tx8be.BatchNorm_Inference`` op (seed 001 loop).

    The slice shape comes from the op library's ``temporal_slice_shape`` for ``strategy``
    (None: the whole op in one step on one tile); tile ``tile`` takes its share of the C
    sharding. The buffers are :func:`buffer_plan`'s.

    Raises:
        Tx8labError: not a BatchNorm_Inference op, a strategy the op does not accept, or a
            tile outside the sharding.
    """
    from tx8lab.core.ops import OPS

    if op.kind != "tx8be.BatchNorm_Inference":
        raise Tx8labError(f"main_c: {op.label} is {op.kind}, not tx8be.BatchNorm_Inference")
    entry = OPS[op.kind]
    x = op.operands[0].type
    rank = x.rank
    strategy = strategy or OpStrategy((1,) * rank, (1,) * rank)
    sl = entry.temporal_slice_shape(op, strategy)
    tiles = math.prod(strategy.shard)
    if not 0 <= tile < tiles:
        raise Tx8labError(f"main_c: tile {tile} is outside the sharding {strategy.shard}")
    c_per_tile = -(-x.shape[-1] // strategy.shard[-1])
    c0 = tile * c_per_tile
    c_real = min(c_per_tile, x.shape[-1] - c0)
    if c_real <= 0:
        raise Tx8labError(f"main_c: tile {tile} gets no channel of C = {x.shape[-1]}")
    tile_shape = (*x.shape[:-1], c_real)
    slice_shape = (*sl.operands[0][:-1], c_real)
    iters = slice_starts(tile_shape, slice_shape)
    plan = {r.name: r for r in buffer_plan(slice_shape, x.dtype)}
    eps = float(entry.attr(op, "epsilon"))
    pshape = (1,) * (rank - 1) + (c_real,)
    pstart = (0,) * (rank - 1) + (c0,)
    pwhole = (1,) * (rank - 1) + (x.shape[-1],)
    lines = [
        f"/* main.c for {op.kind} %{op.id} on tile {tile} (seed 001 load -> compute -> store)",
        f" * input {'x'.join(map(str, x.shape))} {x.dtype} "
        f"{layout_for(aligned_view(x.shape), aligned=True).value}, sharding {strategy.shard}, "
        f"split {strategy.split}",
        f" * slice {'x'.join(map(str, slice_shape))} (temporalSliceShape), "
        f"{len(iters)} iterations, channels [{c0}, {c0 + c_real})",
        f" * SPM: imm {plan['imm'].nbytes} bytes = 2 x sizeof(input {plan['in'].nbytes})",
        " */",
        '#include "tx8be_oplib.h"',
        "",
        f"static L_SHAPE in_shape = {{{_c_array(x.shape)}, {_c_array((0,) * (rank - 1) + (c0,))}, "
        f"{_c_array(slice_shape)}, {_c_array(slice_shape)}, {rank}}};",
        f"static L_SHAPE param_shape = {{{_c_array(pwhole)}, {_c_array(pstart)}, "
        f"{_c_array(pshape)}, {_c_array(pshape)}, {rank}}};",
        f"static G_SHAPE in_g = {{.spatial_start = {_c_array((0,) * (rank - 1) + (c0,))}, "
        f".spatial_end = {_c_array([d - 1 for d in tile_shape[:-1]] + [c0 + c_real - 1])}, "
        f".shape = {_c_array(x.shape)}, .dim = {rank}, .done = 0}};",
        f"static G_SHAPE param_g = {{.spatial_start = {_c_array(pstart)}, "
        f".spatial_end = {_c_array((0,) * (rank - 1) + (c0 + c_real - 1,))}, "
        f".shape = {_c_array(pwhole)}, .dim = {rank}, .done = 0}};",
        "static G_SHAPE out_g;",
        "",
        "int main(void) {",
    ]
    names = {"in": "input", "var": "varience"}
    for name in ("in", "scale", "shift", "mean", "var", "imm", "out"):
        r = plan[name]
        fmt = _FMT[r.dtype]
        shp = "&param_shape" if name in ("scale", "shift", "mean", "var") else "&in_shape"
        lines.append(f"    TSR {names.get(name, name)} = {{{fmt}, 0x{r.addr:05x}, {shp}}};")
    lines += [
        f"    BATCHNORM_INFER_PARAM param = {{.epsilon = {eps!r}f}};",
        "    uint64_t cycles = 0;",
        "    int32_t input_done = 0;",
        f"    while (!input_done) {{  /* {len(iters)} slices; op_dma_load advances "
        "in_shape.shape_start */",
        "        // load",
        "        cycles += op_dma_load(&input, &in_g);",
        "        input_done = in_g.done;",
        "        cycles += op_dma_load(&scale, &param_g);",
        "        cycles += op_dma_load(&shift, &param_g);",
        "        cycles += op_dma_load(&mean, &param_g);",
        "        cycles += op_dma_load(&varience, &param_g);  /* again: rsqrt overwrote it */",
        "        // compute",
        "        cycles += op_batchnorm_inference(&param, &input, &scale, &shift, &mean, "
        "&varience, &imm, &out);",
        "        // store",
        "        cycles += op_store_var_ncx(&out, &out_g);",
        "    }",
        "    return 0;",
        "}",
    ]
    return "\n".join(lines) + "\n"


def main_c_for_group(group_op: Op, hw: ChipConfig, *, tile: int = 0) -> str:
    """:func:`main_c` of the group's BatchNorm_Inference with the group schedule's strategy.

    The strategy is ``tx8lab.core.schedule.slicing.default_strategy`` for ``hw``.

    Raises:
        Tx8labError: the group has no BatchNorm_Inference (or several).
    """
    from tx8lab.core.schedule.slicing import default_strategy

    if group_op.kind != "tx8be.Group" or not group_op.regions:
        raise Tx8labError(f"main_c_for_group: {group_op.label} is not a tx8be.Group")
    bns = [o for o in group_op.regions[0].ops if o.kind == "tx8be.BatchNorm_Inference"]
    if len(bns) != 1:
        raise Tx8labError(
            f"main_c_for_group: {group_op.label} holds {len(bns)} BatchNorm_Inference ops; "
            "pass the op to main_c with its OpStrategy instead"
        )
    strategy = default_strategy(group_op, hw).ops[bns[0].id]
    return main_c(bns[0], strategy, tile=tile)


# ----------------------------------------------------------------- timing
#: The walkthrough's engine names -> the simulator's.
SIM_ENGINE = {"TDMA": "tdma", "CGRA": "ct"}

#: CGRA instruction -> the op library kind that does the same vector work per element
#: (its ``vector_ops``); ``convert_*`` is ``Convert`` whatever the two types.
CT_OP_KIND = BATCHNORM_CT_OP_KIND


@dataclass(frozen=True)
class StepTiming:
    """When one of the ten steps ran in the simulator (cycles from the op's first issue)."""

    index: int
    title: str
    engine: str
    """``tdma`` or ``ct``; ``-`` for a step the dtype skips."""
    start_cycles: int
    """Its first command's engine start (0 for a skipped step)."""
    end_cycles: int
    """Its last command's end."""
    busy_cycles: int
    """The engine time of its commands (their laws)."""
    formulas: tuple[str, ...]
    """Each command's law with its numbers."""


@dataclass(frozen=True)
class BatchNormTiming:
    """The ten steps of one :class:`BatchNormRun` played by the tile simulator."""

    steps: tuple[StepTiming, ...]
    result: SimResult
    """The simulator's run (tile 0): every command's issue, start and end."""

    @property
    def total_cycles(self) -> int:
        """The op's time: the last command's end."""
        return self.result.body_cycles

    def us(self, cycles: int) -> float:
        """Cycles as microseconds at the chip's clock."""
        return self.result.ms(cycles) * 1e3

    def table(self) -> list[dict[str, Any]]:
        """One row per step (for a DataFrame): engine, start, end and busy time in µs."""
        return [
            {
                "step": s.index,
                "what": s.title,
                "engine": s.engine,
                "start us": round(self.us(s.start_cycles), 3),
                "end us": round(self.us(s.end_cycles), 3),
                "busy us": round(self.us(s.busy_cycles), 3),
            }
            for s in self.steps
        ]


def _spm_range(addr: int, nbytes: int) -> Range:
    return Range("spm", addr, addr + nbytes)


def _region_at(run: BatchNormRun, addr: int, instr: Instr) -> Range:
    """The whole buffer starting at ``addr`` (a GatherScatter's source or destination)."""
    for r in run.regions:
        if r.addr == addr:
            return _spm_range(r.addr, r.nbytes)
    raise Tx8labError(
        f"BatchNorm timing: {instr} names SPM byte 0x{addr:x}, no buffer starts there"
    )


@dataclass(frozen=True)
class TimedInstr:
    """One walkthrough instruction as the simulator sees it."""

    engine: str
    """``tdma`` or ``ct``."""
    law: laws.Timed
    reads: tuple[Range, ...]
    writes: tuple[Range, ...]


def instruction_law(instr: Instr, run: BatchNormRun, hw: ChipConfig) -> TimedInstr:
    """One walkthrough instruction's engine, law and SPM byte ranges.

    A GatherScatter is the TDMA law of its inner transfers and covers the whole source
    and destination buffers; a CGRA instruction is the CT law of its element count (a
    loop's full count), the op library's vector work per element of the same operation
    (:data:`CT_OP_KIND`) and fp32 (every CGRA instruction here works on fp32 slots), over
    the fp32 bytes it reads and writes.

    Raises:
        Tx8labError: an instruction or engine without a law here (names it).
    """
    args = dict(instr.args)
    engine = SIM_ENGINE.get(instr.engine)
    if engine == "tdma" and instr.name == "op_gatherScatter":
        return TimedInstr(
            "tdma",
            laws.tdma(int(args["inner_num"]), int(args["inner_bytes"]), hw),
            (_region_at(run, int(args["src"]), instr),),
            (_region_at(run, int(args["dst"]), instr),),
        )
    base = instr.name.removesuffix("_loop")
    kind = CT_OP_KIND.get("convert" if base.startswith("convert_") else base)
    if engine != "ct" or kind is None:
        raise Tx8labError(
            f"BatchNorm timing: no engine law for {instr.engine} instruction {instr.name!r} "
            f"(known: op_gatherScatter on TDMA; {', '.join(CT_OP_KIND)} on CGRA)"
        )
    reads: tuple[Range, ...]
    if "src_elem_num" in args:  # VuV: a source vector against a repeating unit vector
        looped = instr.name.endswith("_loop")
        count = int(args["full_src_elem_num" if looped else "src_elem_num"])
        unit = int(args["full_unit_elem_num" if looped else "unit_elem_num"])
        reads = (_spm_range(args["src"], 4 * count), _spm_range(args["unit"], 4 * unit))
    else:  # one fp32 source (in place for addVS, rsqrt and the converts)
        count = int(args["elem_num"])
        reads = (_spm_range(args["src"], 4 * count),)
    law = laws.ct(count, get_op_def(kind).vector_ops, "f32", hw)
    return TimedInstr("ct", law, reads, (_spm_range(args["dst"], 4 * count),))


def timing(run: BatchNormRun, hw: ChipConfig) -> BatchNormTiming:
    """Time the ten steps: every instruction one simulator command, played on one tile.

    The kernel core issues the instructions in the steps' order; each waits for its
    engine and for the earlier ones whose SPM bytes it shares (``tx8lab.hw.sim``).

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> run = batchnorm_flow(np.ones((1, 1, 2, 8)), *[np.ones(8)] * 4)
        >>> t = timing(run, TX81)
        >>> [s.engine for s in t.steps][:3], t.total_cycles == t.steps[-1].end_cycles
        (['tdma', 'ct', 'ct'], True)
    """
    commands: list[SimCommand] = []
    owner: list[int] = []
    formulas: dict[int, list[str]] = {}
    for step in run.steps:
        for instr in step.instructions:
            timed = instruction_law(instr, run, hw)
            label = f"step {step.index} {instr}"
            commands.append(
                SimCommand(timed.engine, timed.law.cycles(hw), timed.reads, timed.writes, label)
            )
            owner.append(step.index)
            formulas.setdefault(step.index, []).append(timed.law.formula)
    result = simulate({0: commands}, hw)
    timings = result.tiles[0].timings
    out = []
    for step in run.steps:
        mine = [t for t, i in zip(timings, owner, strict=True) if i == step.index]
        out.append(
            StepTiming(
                step.index,
                step.title,
                mine[0].engine if mine else "-",
                min((t.start for t in mine), default=0),
                max((t.end for t in mine), default=0),
                sum(t.end - t.start for t in mine),
                tuple(formulas.get(step.index, ())),
            )
        )
    return BatchNormTiming(tuple(out), result)
