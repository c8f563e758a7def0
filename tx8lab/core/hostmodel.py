"""A host model of the chip that executes a :class:`~tx8lab.core.program.Program`.

Spec: seed 001 ("TX8 Compiler": the op library runs each instruction on the tile's SPM;
the random test-case flow compares the backend's result with the CPU reference
``compute``), the BatchNorm kernel (it overwrites its variance buffer), "SPMAllocPass"
(buffers at their offsets), "Tensor Layout" (Cx/NCx byte placement). 16 tiles' SPM and
the DDR are byte arrays; every command moves or computes bytes there, and the op library's
reference ``compute`` does the arithmetic, so no second implementation of the ops exists.
Two drivers feed it: :func:`run_program` walks the Program itself, and
``tx8lab.core.execute`` runs the compiled main.c whose op-library calls land here.

What it checks (each failure is a :class:`~tx8lab.errors.ProgramError` naming the tile,
group, op, buffer and step):

- an access past the SPM range ``[spm_base, spm_limit)``, or a holder larger than the
  lifetime's allocation;
- a write that lands on a **live** region of another lifetime (one a later command still
  reads), including an op's scratch (``imm``) filled with garbage when it runs;
- a read of a region that holds another value, was never written, was overwritten by an
  op that clobbers that operand, or whose requested box was not (all) written;
- a DDR load of a tensor range no store, input or constant put there.

Readings chosen where the sources are vague:

- **Bytes.** A region holds its holder box packed in its layout (``core/layouts.pack``);
  a write updates the box it touches and leaves the holder packed, a read unpacks the
  bytes at the address the command gives, so a wrong address reads whatever is there.
  Unwritten elements are NaN (floats) while the region is being filled. Only the
  written box is packed when the rest of the bytes already are the holder's image (the
  region wrote them and nothing wrote over them since); the bytes are the same as a
  re-pack of the whole holder.
- **Slice compute.** An op whose ``window_compute`` is set runs its reference ``compute``
  on the operand slices; any other runs it on full-size operands holding the slices at
  their boxes and NaN (integers: 0) elsewhere, so a result that depends on data the
  program did not bring shows up as NaN. Outside the box of a reduction dim split in
  time the operands hold the combine's identity (0 for ``add``, -inf for ``max``) so
  the result is that chunk's partial; so is a tile's result when a ``noc_reduce`` dim is
  cut across tiles. An operand that follows no cut reduction dim (a bias) takes part in
  the partial that holds index 0 of every cut reduction dim only (a time split's
  ``psum_init``; across tiles, the tiles with the first piece).
- **Psum.** Partial results are kept in the psum region as f32 (i32 for integer ops):
  written at ``psum_init``, combined otherwise, and rounded into the result region at
  ``psum_last``. Results are rounded to their element type as the interpreter rounds.
- **NoC transfers** (a reduction dim sharded across tiles, ``program`` all-reduce). A
  ``send`` reads its source range when it runs and the payload waits, by its tag, until
  the receiving tile's ``recv`` writes it into its own SPM (a DTE transfer in flight; the
  receiver's liveness checks run at the receive, on its tile). ``reduce`` adds a landed
  payload into the sum (in f64, rounded to the sum's type once). A tile whose next command
  is a receive with nothing sent yet waits; every tile waiting is a deadlock (an error).
- **Clobbers.** After an op that overwrites an operand (the op library's
  ``clobbered_operands``) the operand's region holds what the kernel leaves there
  (``clobbered_value``, else garbage) and reads as a different value.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from tx8lab.core.attrs import LayoutMode
from tx8lab.core.dtypes import numpy_dtype, round_to
from tx8lab.core.ir import Module, Op
from tx8lab.core.layouts import geometry, pack, unpack
from tx8lab.core.ops import get_op_def
from tx8lab.core.ops.registry import Window, value_bytes
from tx8lab.core.program import Access, Command, DdrTensor, Program
from tx8lab.errors import ProgramError, Tx8labError

Array = npt.NDArray[Any]

#: What an op's scratch (``imm``) holds after it runs: garbage.
IMM_GARBAGE = 0xA5


def _empty(box: Window) -> bool:
    return any(b <= a for a, b in box)


def _rel(box: Window, holder: Window) -> tuple[slice, ...]:
    return tuple(slice(a - h0, b - h0) for (a, b), (h0, _) in zip(box, holder, strict=True))


def _rel_box(box: Window, holder: Window) -> Window:
    return tuple((a - h0, b - h0) for (a, b), (h0, _) in zip(box, holder, strict=True))


def _inside(box: Window, holder: Window) -> bool:
    return all(h0 <= a and b <= h1 for (a, b), (h0, h1) in zip(box, holder, strict=True))


def _box_text(box: Window) -> str:
    return "[" + ", ".join(f"{a}:{b}" for a, b in box) + "]"


#: Mantissa bits ``round_to`` drops for the float types it rounds by hand.
_DROPPED_BITS = {"bf16": 16, "tf32": 13}


def _round(values: npt.ArrayLike, dtype: str) -> Array:
    """``dtypes.round_to``, the same array bit for bit, with bf16/tf32 in 32-bit integers.

    ``round_to`` rounds to nearest, ties to even, in 64-bit integers and turns NaN into the
    one quiet NaN; the sum wraps the same way in 32 bits once the dropped bits are cleared.
    A C-ordered array comes back C-ordered as from ``round_to``; any other goes to it.
    """
    array = np.asarray(values)
    drop = _DROPPED_BITS.get(dtype)
    if drop is None or not array.flags.c_contiguous:
        return round_to(array, dtype)
    out = array.astype(np.float32)
    bits = out.reshape(-1).view(np.uint32)
    nan = np.isnan(out)
    step = bits >> np.uint32(drop)
    step &= np.uint32(1)
    step += np.uint32((1 << (drop - 1)) - 1)
    bits += step
    bits &= np.uint32(~((1 << drop) - 1) & 0xFFFFFFFF)
    np.copyto(out, np.float32(np.nan), where=nan)
    return out


def _is_rounded(data: Any, dtype: str, rounded: str | None) -> bool:
    """Whether ``round_to(data, dtype)`` is ``data`` bit for bit.

    So it is when ``data`` holds round_to results for ``dtype`` (``rounded``), or when
    ``dtype``'s rounding is a cast to the type ``data`` has.
    """
    if not isinstance(data, np.ndarray) or data.dtype != numpy_dtype(dtype):
        return False
    return rounded == dtype or dtype not in _DROPPED_BITS


def _poison(dtype: str) -> Any:
    kind = numpy_dtype(dtype).kind
    return np.nan if kind == "f" else (False if kind == "b" else 0)


#: A box of :meth:`Machine._store_spm`: no element changed.
_UNCHANGED: Window = ((0, 0),)

#: The image codec writes and reads native integers as the layouts' little-endian bytes.
_LITTLE_ENDIAN = sys.byteorder == "little"


@dataclass(frozen=True)
class _Piece:
    """One strided run of a box's elements in a memory image."""

    cols: slice
    """Which channels of the box (its last axis) the run holds."""
    offset: int
    """Bytes from the image's base to the run's first element."""
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    """In bytes."""
    block: int = 0
    """> 0: the channels are whole blocks of this many, the run's last two axes."""


class _Codec:
    """The bytes of one (shape, dtype, layout) image, a box at a time.

    The same placement as ``layouts.pack``/``unpack`` (``layouts.geometry``), as strided
    runs over the memory: a compact layout is one row-major run; Cx/NCx is a run per
    channel block cut by the box (whole blocks together) and one for the tail. Values go
    in as held (already rounded to ``dtype``, as every region's array is), so writing a
    box gives the bytes ``pack`` gives for those elements.
    """

    def __init__(self, shape: tuple[int, ...], dtype: str, layout: str) -> None:
        geo = geometry(shape, dtype, layout)
        self.shape = shape
        self.dtype = dtype
        self.geo = geo
        self.elem = geo.elem_bits // 8
        self.values = numpy_dtype(dtype)
        self.storage = np.dtype(f"u{self.elem}")
        self.image_bytes = -(-geo.footprint_bits // 8)
        self.full: Window = tuple((0, d) for d in shape)
        self._pieces: dict[Window, tuple[_Piece, ...]] = {}

    def pieces(self, box: Window) -> tuple[_Piece, ...]:
        got = self._pieces.get(box)
        if got is None:
            got = self._pieces[box] = self._cut(box)
        return got

    def _cut(self, box: Window) -> tuple[_Piece, ...]:
        geo, e = self.geo, self.elem
        shape = self.shape or (1,)
        box = box or ((0, 1),)
        *lead, (c0, c1) = box
        ext = tuple(b - a for a, b in lead)
        if geo.layout.value not in ("Cx", "NCx"):
            strides = [1] * len(shape)
            for d in range(len(shape) - 2, -1, -1):
                strides[d] = strides[d + 1] * shape[d + 1]
            at = sum(a * s for (a, _), s in zip(box, strides, strict=True))
            shape_out = (*ext, c1 - c0)
            return (_Piece(slice(0, c1 - c0), at * e, shape_out, tuple(s * e for s in strides)),)
        # (n, p, c): a block channel at n*batch + (c//B)*HW*B + p*B + c%B, a tail channel
        # at n*batch + blocks*HW*B + p*T + (c - blocks*B); p is the HW dims row-major
        block, hw, tail_pad = geo.block, geo.hw, geo.tail_pad
        edge = geo.blocks * block
        batch = geo.batch_stride_bits // geo.elem_bits
        pixel = [1] * max(0, len(shape) - 2)
        for d in range(len(pixel) - 2, -1, -1):
            pixel[d] = pixel[d + 1] * shape[d + 2]
        start = [a for a, _ in lead]
        n0 = start[0] if lead else 0
        p0 = sum(a * s for a, s in zip(start[1:], pixel, strict=True))
        lead_block = tuple(s * e for s in ([batch] if lead else []) + [s * block for s in pixel])
        lead_tail = tuple(s * e for s in ([batch] if lead else []) + [s * tail_pad for s in pixel])
        out: list[_Piece] = []
        c, stop_blocks = c0, min(c1, edge)
        while c < stop_blocks:
            b = c // block
            base = n0 * batch + b * hw * block + p0 * block
            if c % block == 0 and c + block <= stop_blocks:
                nb = (stop_blocks - c) // block
                out.append(
                    _Piece(
                        slice(c - c0, c - c0 + nb * block),
                        base * e,
                        (*ext, nb, block),
                        (*lead_block, hw * block * e, e),
                        block,
                    )
                )
                c += nb * block
            else:
                stop = min(stop_blocks, (b + 1) * block)
                out.append(
                    _Piece(
                        slice(c - c0, stop - c0),
                        (base + c % block) * e,
                        (*ext, stop - c),
                        (*lead_block, e),
                    )
                )
                c = stop
        if c1 > edge:
            first = max(c0, edge)
            at = n0 * batch + edge * hw + p0 * tail_pad + (first - edge)
            out.append(
                _Piece(slice(first - c0, c1 - c0), at * e, (*ext, c1 - first), (*lead_tail, e))
            )
        return tuple(out)

    def _encode(self, values: Array) -> Array:
        if self.dtype == "bf16":
            return (values.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
        return values.view(self.storage)

    def put(self, memory: bytearray, base: int, box: Window, values: Array) -> None:
        """Write ``values`` (box ``box`` of the image, as held) into ``memory`` at ``base``."""
        raw = self._encode(values.reshape(values.shape or (1,)))
        for p in self.pieces(box):
            dst: Array = np.ndarray(
                p.shape, self.storage, buffer=memory, offset=base + p.offset, strides=p.strides
            )
            src = raw[..., p.cols]
            if p.block:
                src = src.reshape(*src.shape[:-1], -1, p.block)
            dst[...] = src

    def get(self, memory: bytearray, base: int, box: Window) -> Array:
        """Box ``box`` of the image at ``base`` in ``memory``, decoded."""
        shape = tuple(b - a for a, b in box)
        raw = np.empty(shape or (1,), self.storage)
        for p in self.pieces(box):
            src: Array = np.ndarray(
                p.shape, self.storage, buffer=memory, offset=base + p.offset, strides=p.strides
            )
            dst = raw[..., p.cols]
            if p.block:
                dst = np.lib.stride_tricks.as_strided(
                    dst,
                    (*dst.shape[:-1], dst.shape[-1] // p.block, p.block),
                    (*dst.strides[:-1], dst.strides[-1] * p.block, dst.strides[-1]),
                    writeable=True,
                )
            dst[...] = src
        if self.dtype == "bf16":
            values = (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)
        else:
            values = raw.view(self.values)
        return values.reshape(shape)

    def clear(self, memory: bytearray, base: int) -> None:
        """Zero the image's bytes (its padding stays so)."""
        np.frombuffer(memory, np.uint8, self.image_bytes, base)[...] = 0

    def fits(self, memory: bytearray, base: int) -> bool:
        return base >= 0 and base + self.image_bytes <= len(memory)


def _make_codec(shape: tuple[int, ...], dtype: str, layout: str) -> _Codec | None:
    """The codec of an image, or None where ``pack``/``unpack`` run instead.

    None for a zero extent, a type or layout ``geometry`` refuses (their error is then the
    one raised) and a big-endian host.
    """
    if not _LITTLE_ENDIAN or not all(d > 0 for d in shape):
        return None
    try:
        codec = _Codec(shape, dtype, layout)
    except Tx8labError:
        return None
    held = 4 if dtype == "bf16" else codec.elem  # bytes of the array element
    return codec if codec.values.itemsize == held else None


@dataclass
class _Region:
    """What one SPM range holds: one box of one value through one lifetime."""

    addr: int
    nbytes: int
    lifetime: str
    value: str
    dtype: str
    layout: str
    holder: Window
    array: Array
    written: npt.NDArray[np.bool_]
    writer: Command
    clobbered_by: Command | None = None
    synced: bool = False
    """The bytes at ``addr`` are ``array`` packed in the region's own dtype and layout, so a
    write need only pack the box it changes."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.lifetime, self.value)


@dataclass
class _DdrTensor:
    addr: int
    shape: tuple[int, ...]
    dtype: str
    layout: str
    nbytes: int
    array: Array
    written: npt.NDArray[np.bool_]
    exact: bool = True
    """``array`` holds values rounded to ``dtype`` (it was not decoded from other bytes)."""
    synced: bool = False
    """The bytes at ``addr`` are the image ``_pack_ddr`` writes, as of ``stamp``."""
    stamp: int = 0
    """When the tensor last wrote DDR bytes (the machine's count of DDR writes)."""


@dataclass
class TraceEntry:
    """One executed call: what the driver asked for (addresses as given)."""

    tile: int
    group: int
    function: str
    op_id: int
    iteration: tuple[int, ...]
    addrs: tuple[int, ...]
    """SPM addresses of the operands/source, then results/destination, imm, psum; a DMA's
    DDR address last."""
    psum_init: bool = True
    psum_last: bool = True


def command_addrs(c: Command) -> tuple[int, ...]:
    """The addresses of a command in trace order (see :class:`TraceEntry`).

    A compute call: each operand's, each result's, imm, psum (an operand read in place
    from DDR gives its DDR address). A DMA: the SPM address (a gather's indices first),
    then the DDR address.
    """
    if c.what != "compute":
        spm = [a.addr for a in (c.gather, *c.reads, *c.writes) if a and a.space == "spm"]
        ddr = [a.addr for a in (*c.reads, *c.writes) if a.space == "ddr"]
        return (*spm, *ddr)
    out = [a.addr for a in (*c.reads, *c.writes)]
    if c.imm is not None:
        out.append(c.imm.addr)
    if c.psum is not None:
        out.append(c.psum.addr)
    return tuple(out)


def expected_entry(c: Command) -> TraceEntry:
    """The trace entry a faithful execution of ``c`` records."""
    psum = c.psum is not None
    return TraceEntry(
        c.tile,
        c.group,
        c.function,
        c.op_id,
        c.iteration,
        command_addrs(c),
        c.psum_init if psum else True,
        c.psum_last if psum else True,
    )


class Machine:
    """16 tiles' SPM and the DDR as bytes, executing commands (module docstring)."""

    def __init__(self, program: Program, module: Module, spm_bytes: int) -> None:
        self.program = program
        self.ops = module.op_by_id()
        self.spm = {t: bytearray(spm_bytes) for t in program.tiles}
        self.regions: dict[int, list[_Region]] = {t: [] for t in program.tiles}
        self.ddr = bytearray(program.ddr_bytes)
        self.tensors: dict[int, _DdrTensor] = {}
        self.trace: list[TraceEntry] = []
        self.position: dict[int, int] = {t: 0 for t in program.tiles}
        self.mail: dict[str, Array] = {}
        """Payloads sent and not yet received, by tag (a DTE transfer in flight)."""
        self._codecs: dict[tuple[tuple[int, ...], str, str], _Codec | None] = {}
        self._needs: dict[tuple[Window, str, str], int] = {}
        self._ddr_writes = 0
        self._retired: list[tuple[int, int, int]] = []
        """DDR ranges of tensors another type replaced: (start, end, stamp)."""
        self.last_read: dict[int, dict[tuple[str, str], int]] = {}
        for tile, commands in program.tiles.items():
            last: dict[tuple[str, str], int] = {}
            for i, c in enumerate(commands):
                for a in c.reads:
                    if a.space == "spm":
                        last[(a.lifetime, a.value)] = i
                if c.psum is not None and not c.psum_init:
                    last[(c.psum.lifetime, c.psum.value)] = i
            self.last_read[tile] = last

    def _codec(self, shape: tuple[int, ...], dtype: str, layout: str) -> _Codec | None:
        """The image codec of ``shape``/``dtype``/``layout``; None where ``pack`` decides."""
        key = (shape, dtype, layout)
        if key not in self._codecs:
            self._codecs[key] = _make_codec(shape, dtype, layout)
        return self._codecs[key]

    # ------------------------------------------------------------------ DDR
    def place(self, tensor: DdrTensor, array: Array) -> None:
        """Put ``array`` into DDR at the tensor's address, in its layout."""
        data = _round(np.asarray(array), tensor.dtype)
        self._ddr_tensor(
            tensor.addr, tensor.shape, tensor.dtype, tensor.layout, tensor.name, blank=False
        )
        t = self.tensors[tensor.addr]
        # round_to's array is a new one: no copy of it needed
        t.array = data.astype(numpy_dtype(tensor.dtype), copy=False).reshape(tensor.shape)
        t.written[...] = True
        t.exact = True
        self._store_ddr(t, None)

    def _ddr_tensor(
        self,
        addr: int,
        shape: tuple[int, ...],
        dtype: str,
        layout: str,
        name: str,
        *,
        blank: bool = True,
    ) -> _DdrTensor:
        """The tensor at ``addr`` as ``shape``/``dtype``/``layout``.

        A new one is unwritten and poisoned, unless ``blank`` is False: the caller then
        fills its array whole (placing an input or constant).
        """
        t = old = self.tensors.get(addr)
        if t is not None and (t.shape, t.dtype, t.layout) == (shape, dtype, layout):
            return t
        nbytes = value_bytes(shape, dtype, LayoutMode(layout))
        if addr < 0 or addr + nbytes > len(self.ddr):
            raise ProgramError(
                f"{name}: DDR range 0x{addr:x}+{nbytes} is outside the DDR image of "
                f"{len(self.ddr)} bytes (opt-ddr's placement)",
                buffer=name,
            )
        if t is None:
            kind = numpy_dtype(dtype)
            array = np.full(shape, _poison(dtype), dtype=kind) if blank else np.empty(shape, kind)
            written = np.zeros(shape, dtype=bool)
        else:
            # the same bytes read as another type or layout: decode them
            array = unpack(bytes(self.ddr[addr : addr + nbytes]), shape, dtype, layout)
            written = np.ones(shape, dtype=bool) if t.written.all() else np.zeros(shape, bool)
            self._retired.append((t.addr, t.addr + t.nbytes, t.stamp))
        t = _DdrTensor(addr, shape, dtype, layout, nbytes, array, written, exact=old is None)
        self.tensors[addr] = t
        return t

    def _pack_ddr(self, t: _DdrTensor) -> None:
        image = pack(
            np.where(t.written, t.array, 0) if t.array.dtype.kind == "f" else t.array,
            t.dtype,
            t.layout,
        )
        self.ddr[t.addr : t.addr + len(image)] = image

    def _store_ddr(self, t: _DdrTensor, box: Window | None) -> None:
        """The DDR bytes after box ``box`` (None: any) of ``t.array`` changed.

        The bytes become what :meth:`_pack_ddr` writes. Only the box is packed when the
        rest already is that image: ``t`` wrote it and no other tensor wrote into its
        range since.
        """
        codec = self._codec(t.shape, t.dtype, t.layout) if t.exact else None
        if codec is None or not codec.fits(self.ddr, t.addr):
            self._pack_ddr(t)
            t.synced = False
        elif box is not None and t.synced and not self._ddr_overwritten(t):
            codec.put(self.ddr, t.addr, box, t.array[tuple(slice(a, b) for a, b in box)])
        else:
            values = t.array
            if values.dtype.kind == "f" and not t.written.all():
                values = np.where(t.written, values, 0)
            codec.clear(self.ddr, t.addr)
            codec.put(self.ddr, t.addr, codec.full, values)
            t.synced = True
        self._ddr_writes += 1
        t.stamp = self._ddr_writes

    def _ddr_overwritten(self, t: _DdrTensor) -> bool:
        """Whether another tensor wrote into ``t``'s bytes after ``t`` last did."""
        end = t.addr + t.nbytes
        for o in self.tensors.values():
            if o.stamp > t.stamp and o is not t and o.addr < end and t.addr < o.addr + o.nbytes:
                return True
        return any(s > t.stamp and a < end and t.addr < b for a, b, s in self._retired)

    def ddr_read(self, a: Access, c: Command) -> Array:
        return np.array(self._ddr_box(a, c))

    def _ddr_box(self, a: Access, c: Command) -> Array:
        """What :meth:`ddr_read` returns, as a view of the tensor's array (read, never write)."""
        t = self._ddr_tensor(a.addr, a.holder_shape, a.dtype, a.layout, a.buffer)
        if _empty(a.window):
            return np.zeros(a.shape, dtype=numpy_dtype(a.dtype))
        sl = _rel(a.window, a.holder)
        if not t.written[sl].all():
            raise self._fail(
                c,
                a,
                f"reads DDR {a.buffer} at 0x{a.addr:x} box {_box_text(a.window)}, which no "
                "store, input or constant wrote",
            )
        return t.array[sl]

    def ddr_write(self, a: Access, c: Command, data: Array) -> None:
        t = self._ddr_tensor(a.addr, a.holder_shape, a.dtype, a.layout, a.buffer)
        if _empty(a.window):
            return
        sl = _rel(a.window, a.holder)
        t.array[sl] = _round(data, a.dtype)
        t.written[sl] = True
        self._store_ddr(t, _rel_box(a.window, a.holder) if _inside(a.window, a.holder) else None)

    def read_tensor(self, tensor: DdrTensor) -> Array:
        """A DDR tensor after the run (decoded from the DDR bytes)."""
        t = self._ddr_tensor(tensor.addr, tensor.shape, tensor.dtype, tensor.layout, tensor.name)
        if not t.written.all():
            raise ProgramError(
                f"output {tensor.name} at DDR 0x{tensor.addr:x} was not (fully) written by "
                "the program",
                buffer=tensor.name,
            )
        codec = self._codec(tensor.shape, tensor.dtype, tensor.layout)
        if codec is not None and codec.fits(self.ddr, tensor.addr):
            return codec.get(self.ddr, tensor.addr, codec.full)
        return unpack(
            bytes(self.ddr[tensor.addr : tensor.addr + tensor.nbytes]),
            tensor.shape,
            tensor.dtype,
            tensor.layout,
        )

    # ------------------------------------------------------------------ SPM
    def _fail(self, c: Command, a: Access | None, text: str) -> ProgramError:
        op = self.ops.get(c.op_id)
        what = op.label if op is not None else f"%{c.op_id}"
        buf = f" buffer {a.buffer}" if a is not None else ""
        return ProgramError(
            f"tile {c.tile} group %{c.group} {what} ({c.task}"
            + (f" {list(c.iteration)}" if c.iteration else "")
            + f", step {c.step}){buf}: {text}",
            group=c.group,
            op=c.op_id,
            buffer=a.buffer if a else "",
            step=c.step,
            tile=c.tile,
        )

    def _bounds(self, c: Command, a: Access, nbytes: int) -> None:
        p = self.program
        if a.addr < p.spm_base or a.addr + nbytes > p.spm_limit:
            raise self._fail(
                c,
                a,
                f"SPM range 0x{a.addr:x}+{nbytes} is outside the usable SPM "
                f"[0x{p.spm_base:x}, 0x{p.spm_limit:x})",
            )

    def _holder_bytes(self, c: Command, a: Access) -> int:
        key = (a.holder, a.dtype, a.layout)
        need = self._needs.get(key)
        if need is None:
            need = self._needs[key] = value_bytes(a.holder_shape, a.dtype, LayoutMode(a.layout))
        if need > a.nbytes:
            raise self._fail(
                c,
                a,
                f"holds box {_box_text(a.holder)} of {a.value} ({need} bytes in {a.layout}) but "
                f"its lifetime {a.lifetime} has {a.nbytes} bytes",
            )
        self._bounds(c, a, need)
        return need

    def _find(self, tile: int, a: Access) -> _Region | None:
        for r in self.regions[tile]:
            if r.addr == a.addr and r.key == (a.lifetime, a.value):
                return r
        return None

    def _claim(self, c: Command, a: Access, nbytes: int, index: int) -> None:
        """Drop dead regions under ``[addr, addr + nbytes)``; refuse to cover a live one."""
        keep = []
        for r in self.regions[c.tile]:
            overlaps = r.addr < a.addr + nbytes and a.addr < r.addr + r.nbytes
            if not overlaps or (r.key == (a.lifetime, a.value) and r.addr == a.addr):
                keep.append(r)
                continue
            reader = self.last_read[c.tile].get(r.key, -1)
            if reader > index and r.clobbered_by is None:
                later = self.program.tiles[c.tile][reader]
                raise self._fail(
                    c,
                    a,
                    f"writes {a.value} (lifetime {a.lifetime}) at SPM 0x{a.addr:x}+{nbytes}, "
                    f"over live {r.value} (lifetime {r.lifetime} at 0x{r.addr:x}+{r.nbytes}, "
                    f"written by {r.writer.task} at step {r.writer.step}) that {later.task} "
                    f"still reads at step {later.step}",
                )
        self.regions[c.tile] = keep

    def spm_write(
        self, c: Command, a: Access, data: Array | None, index: int, rounded: str | None = None
    ) -> None:
        """Write ``data`` (box ``a.window``; None: no values) into ``a``'s region.

        ``rounded``: an element type ``data`` holds ``round_to`` results of; as ``a``'s,
        rounding them again would change no bit, and is skipped.
        """
        nbytes = self._holder_bytes(c, a)
        region = self._find(c.tile, a)
        if region is None:
            self._claim(c, a, nbytes, index)
            shape = a.holder_shape
            region = _Region(
                a.addr,
                nbytes,
                a.lifetime,
                a.value,
                a.dtype,
                a.layout,
                a.holder,
                np.full(shape, _poison(a.dtype), dtype=numpy_dtype(a.dtype)),
                np.zeros(shape, dtype=bool),
                c,
            )
            self.regions[c.tile].append(region)
        elif region.holder != a.holder:
            raise self._fail(c, a, f"region holder {region.holder} differs from {a.holder}")
        region.writer = c
        region.clobbered_by = None
        box: Window | None = _UNCHANGED
        if data is not None and not _empty(a.window):
            sl = _rel(a.window, a.holder)
            kept = _is_rounded(data, a.dtype, rounded)
            region.array[sl] = data if kept else _round(data, a.dtype)
            region.written[sl] = True
            box = _rel_box(a.window, a.holder) if _inside(a.window, a.holder) else None
        self._store_spm(c.tile, a, region, box)

    def _store_spm(self, tile: int, a: Access, region: _Region, box: Window | None) -> None:
        """The SPM bytes after box ``box`` of ``region.array`` changed (None: any part).

        The bytes become ``array`` packed as ``a`` says at ``a.addr``, the holder whole. Only
        the box is packed when the region's bytes already are that image (no other region
        overlaps a region's range: claiming it dropped the older one).
        """
        memory = self.spm[tile]
        codec = self._codec(a.holder_shape, a.dtype, a.layout)
        if (
            codec is None
            or (region.dtype, region.layout, region.holder) != (a.dtype, a.layout, a.holder)
            or region.array.dtype != codec.values
            or not codec.fits(memory, a.addr)
        ):
            image = pack(region.array, a.dtype, a.layout)
            memory[a.addr : a.addr + len(image)] = image
            region.synced = False
        elif box is not None and region.synced:
            if box is not _UNCHANGED:
                codec.put(memory, a.addr, box, region.array[tuple(slice(s, e) for s, e in box)])
        else:
            codec.clear(memory, a.addr)
            codec.put(memory, a.addr, codec.full, region.array)
            region.synced = True

    def spm_read(self, c: Command, a: Access) -> Array:
        nbytes = self._holder_bytes(c, a)
        region = self._find(c.tile, a)
        if region is None:
            here = [
                r
                for r in self.regions[c.tile]
                if r.addr < a.addr + nbytes and a.addr < r.addr + r.nbytes
            ]
            what = (
                "; the bytes there hold "
                + ", ".join(
                    f"{r.value} (lifetime {r.lifetime}, written by {r.writer.task} at step "
                    f"{r.writer.step})"
                    for r in here
                )
                if here
                else "; nothing was written there"
            )
            raise self._fail(
                c,
                a,
                f"reads {a.value} (lifetime {a.lifetime}) at SPM 0x{a.addr:x}, which does not "
                f"hold it{what}",
            )
        if region.clobbered_by is not None:
            k = region.clobbered_by
            raise self._fail(
                c,
                a,
                f"reads {a.value} at SPM 0x{a.addr:x} after {k.task} (step {k.step}) overwrote "
                "it in place (the op clobbers that operand): reload it before this read",
            )
        if _empty(a.window):
            return np.zeros(a.shape, dtype=numpy_dtype(a.dtype))
        if not _inside(a.window, region.holder):
            raise self._fail(
                c,
                a,
                f"reads box {_box_text(a.window)} of {a.value} but the region holds "
                f"{_box_text(region.holder)}",
            )
        sl = _rel(a.window, region.holder)
        if not region.written[sl].all():
            raise self._fail(
                c,
                a,
                f"reads box {_box_text(a.window)} of {a.value} (lifetime {a.lifetime}) of which "
                f"{int((~region.written[sl]).sum())} elements no command wrote",
            )
        codec = self._codec(a.holder_shape, a.dtype, a.layout)
        if codec is not None and region.holder == a.holder and codec.fits(self.spm[c.tile], a.addr):
            return codec.get(self.spm[c.tile], a.addr, _rel_box(a.window, a.holder))
        image = bytes(self.spm[c.tile][a.addr : a.addr + nbytes])
        return np.array(unpack(image, a.holder_shape, a.dtype, a.layout)[sl])

    def clobber(self, c: Command, a: Access, data: Array | None) -> None:
        """The op overwrote operand ``a`` in place: new bytes, and the value is gone."""
        region = self._find(c.tile, a)
        if region is None or _empty(a.window):
            return
        sl = _rel(a.window, region.holder)
        if data is None:
            region.array[sl] = _poison(a.dtype) if region.array.dtype.kind == "f" else 0
        else:
            region.array[sl] = _round(data, a.dtype)
        inside = _inside(a.window, region.holder)
        self._store_spm(c.tile, a, region, _rel_box(a.window, region.holder) if inside else None)
        region.clobbered_by = c

    def scratch(self, c: Command, a: Access, index: int) -> None:
        """The op's imm region: claimed for it and filled with garbage."""
        self._bounds(c, a, a.nbytes)
        region = self._find(c.tile, a)
        if region is None:
            self._claim(c, a, a.nbytes, index)
            shape = a.holder_shape
            region = _Region(
                a.addr,
                a.nbytes,
                a.lifetime,
                a.value,
                a.dtype,
                a.layout,
                a.holder,
                np.zeros(shape, dtype=np.int8),
                np.ones(shape, dtype=bool),
                c,
            )
            self.regions[c.tile].append(region)
        self.spm[c.tile][a.addr : a.addr + a.nbytes] = bytes([IMM_GARBAGE]) * a.nbytes

    # ------------------------------------------------------------------ commands
    def execute(self, c: Command, index: int) -> None:
        """Run command number ``index`` of its tile (addresses as ``c`` gives them)."""
        if c.what in ("load", "load_const"):
            src = c.reads[0]
            data = self._ddr_box(src, c)
            if c.gather is not None:
                data = _picked_rows(c, data, self.spm_read(c, c.gather))
            rounded = src.dtype if self.tensors[src.addr].exact else None
            self.spm_write(c, c.writes[0], data, index, rounded)
        elif c.what == "store":
            data = self.spm_read(c, c.reads[0])
            self.ddr_write(c.writes[0], c, data)
        elif c.what == "compute":
            self._compute(c, index)
        elif c.what == "send":
            # the DTE reads the bytes now; they land when the receiver takes them
            self.mail[c.tag] = self.spm_read(c, c.reads[0])
        elif c.what == "recv":
            if c.tag not in self.mail:
                raise self._fail(
                    c,
                    c.writes[0],
                    f"receives from tile {c.peer} ({c.tag}) but no send with that tag ran",
                )
            self.spm_write(c, c.writes[0], self.mail.pop(c.tag), index, c.writes[0].dtype)
        elif c.what == "reduce":
            staged, acc = (self.spm_read(c, a) for a in c.reads)
            dtype = c.writes[0].dtype
            total = _round(np.add(staged.astype(np.float64), acc.astype(np.float64)), dtype)
            self.spm_write(c, c.writes[0], total, index, dtype)

    def ready(self, c: Command) -> bool:
        """Whether ``c`` can run now: a receive waits for its send."""
        return c.what != "recv" or c.tag in self.mail

    def _compute(self, c: Command, index: int) -> None:
        op = self.ops[c.op_id]
        entry = get_op_def(op.kind)
        inputs = [self.spm_read(c, a) if a.space == "spm" else self.ddr_read(a, c) for a in c.reads]
        if c.imm is not None:
            self.scratch(c, c.imm, index)
        empty = _empty(c.box)
        sliced, args = c, inputs
        if c.reads and c.reads[0].gather_axis >= 0 and not empty:
            sliced, args = _scattered_table(op, c, inputs)
        results: Sequence[Array | None] = (
            [None] * len(c.writes) if empty else compute_slice(op, sliced, args)
        )
        # the type compute_slice rounded each result to
        kinds: list[str | None] = [
            c.psum.dtype if c.psum is not None and r.index == 0 else r.type.dtype
            for r in op.results
        ]
        if c.psum is not None:
            partial = results[0]
            if c.psum_init:
                self.spm_write(c, c.psum, partial, index, kinds[0])
            else:
                before = self.spm_read(c, c.psum)
                if partial is not None:
                    combine = np.maximum if entry.psum_combine == "max" else np.add
                    partial = combine(before, _round(partial, c.psum.dtype))
                self.spm_write(c, c.psum, partial, index)
                kinds[0] = None
            if not c.psum_last:
                return
            results = [partial, *results[1:]]
        for a, data, kind in zip(c.writes, results, kinds, strict=False):
            self.spm_write(c, a, data, index, kind)
        for j in c.clobbers:
            if j < len(c.reads) and c.reads[j].space == "spm":
                left = _clobbered_value(entry, op, j, inputs) if not empty else None
                self.clobber(c, c.reads[j], left)


def _flat_indices(indices: Array, size: int) -> Array:
    """Index values in order, negative ones counted from the end of an axis of ``size``."""
    idx = np.asarray(indices).astype(np.int64).ravel()
    return np.where(idx < 0, idx + size, idx)


def _picked_rows(c: Command, table: Array, indices: Array) -> Array:
    """The rows of the DDR window ``table`` a gather load's ``indices`` pick, in order."""
    dst = c.writes[0]
    axis = dst.gather_axis
    start, stop = c.reads[0].window[axis]
    idx = _flat_indices(indices, c.reads[0].holder[axis][1])
    if idx.size and (idx.min() < start or idx.max() >= stop):
        raise ProgramError(
            f"{c.label} gathers rows {idx.min()}..{idx.max()} of {c.reads[0].buffer}, outside "
            f"the rows {start}..{stop} it moves",
            group=c.group,
            op=c.op_id,
            buffer=dst.buffer,
            step=c.step,
            tile=c.tile,
        )
    return np.take(table, idx - start, axis=axis)


def _scattered_table(op: Op, c: Command, inputs: Sequence[Array]) -> tuple[Command, list[Array]]:
    """A Gather on gathered rows: the rows put back at their indices in the table's box.

    The rest of the table stays poisoned, so a Gather that looked elsewhere would show.
    """
    a0 = c.reads[0]
    axis = a0.gather_axis
    size = op.operands[0].type.shape[axis]
    idx = _flat_indices(inputs[1], size)
    window = tuple((0, size) if e == axis else w for e, w in enumerate(a0.window))
    rows = np.asarray(inputs[0])
    full = np.full(
        tuple(b - a for a, b in window), _poison(op.operands[0].type.dtype), dtype=rows.dtype
    )
    np.moveaxis(full, axis, 0)[idx] = np.moveaxis(rows, axis, 0)
    read = replace(a0, holder=window, window=window, gather_axis=-1)
    return replace(c, reads=(read, *c.reads[1:])), [full, *inputs[1:]]


def _clobbered_value(entry: Any, op: Op, index: int, inputs: Sequence[Array]) -> Array | None:
    fn: Callable[..., Array] | None = getattr(entry, "clobbered_value", None)
    if fn is None:
        return None
    try:
        return fn(op, index, inputs)
    except Tx8labError:
        return None


def _split_reduce_dims(op: Op, c: Command) -> set[int]:
    """Iteration dims of ``op`` that are reductions cut in this command.

    Cut in time (the command has a psum) or across tiles (``noc_reduce``: the tile's
    result is its partial sum, added to the others' over the NoC).
    """
    dims = get_op_def(op.kind).iter_dims(op)
    return {
        i
        for i, d in enumerate(dims)
        if d.reduce and (c.psum is not None or d.noc_reduce) and c.box[i] != (0, d.size)
    }


def compute_slice(op: Op, c: Command, inputs: Sequence[Array]) -> list[Array | None]:
    """The results of one slice of ``op`` (module docstring, **Slice compute**)."""
    entry = get_op_def(op.kind)
    omaps = entry.operand_dims(op)
    cut = _split_reduce_dims(op, c)
    # the partial holding reduction index 0 on every cut dim (a time split's psum_init)
    first = all(c.box[i][0] == 0 for i in cut)
    identity_max = entry.psum_combine == "max"
    args: list[Array] = []
    for j, (a, x) in enumerate(zip(c.reads, inputs, strict=True)):
        follows_cut = any(m in cut for m in omaps[j] if m is not None)
        if not follows_cut and not first:
            x = np.zeros_like(x)  # a bias joins the first partial only
        if entry.window_compute:
            args.append(x)
            continue
        shape = tuple(v for v in op.operands[j].type.shape)
        full = np.full(shape, _poison(op.operands[j].type.dtype), dtype=x.dtype)
        if follows_cut:
            ext = tuple((0, shape[e]) if m in cut else a.window[e] for e, m in enumerate(omaps[j]))
            fill = -np.inf if identity_max and x.dtype.kind == "f" else 0
            if identity_max and x.dtype.kind in "iu":
                fill = np.iinfo(x.dtype).min
            full[tuple(slice(s, e) for s, e in ext)] = fill
        full[tuple(slice(s, e) for s, e in a.window)] = x
        args.append(full)
    with np.errstate(all="ignore"):
        try:
            out = entry.compute(op, *args)
        except NotImplementedError as err:
            raise Tx8labError(f"{op.label}: {err}") from None
    results: list[Array | None] = []
    for r, array in zip(op.results, out, strict=True):
        window = entry.result_window(op, r.index, c.box)
        array = np.asarray(array)
        if not entry.window_compute:
            array = array[tuple(slice(s, e) for s, e in window)]
        expected = tuple(b - a for a, b in window)
        if tuple(array.shape) != expected:
            raise Tx8labError(
                f"{op.label}: the slice compute gave shape {array.shape} for result "
                f"{r.index}, its box {_box_text(window)} has {expected}"
            )
        dtype = c.psum.dtype if c.psum is not None and r.index == 0 else r.type.dtype
        results.append(_round(array, dtype))
    return results


# ---------------------------------------------------------------------- running


@dataclass
class Run:
    """What an execution leaves: outputs, the trace, timings."""

    outputs: list[Array]
    trace: list[TraceEntry] = field(default_factory=list)
    seconds: float = 0.0
    machine: Machine | None = None


def setup(program: Program, module: Module, inputs: Sequence[Array], spm_bytes: int) -> Machine:
    """A machine with the inputs and constants in DDR."""
    from tx8lab.core.interpret import prepare_inputs

    env = prepare_inputs(module, inputs)
    args = {arg.index: env[arg.key] for arg in module.main.args}
    machine = Machine(program, module, spm_bytes)
    for t in program.inputs:
        machine.place(t, args[t.index])
    for t in program.constants:
        op = machine.ops[t.index]
        machine.place(t, get_op_def(op.kind).compute(op)[0])
    return machine


def outputs_of(machine: Machine, module: Module, inputs: Sequence[Array]) -> list[Array]:
    """``main``'s results read back after the run."""
    from tx8lab.core.interpret import prepare_inputs

    env = prepare_inputs(module, inputs)
    args = {arg.index: env[arg.key] for arg in module.main.args}
    out: list[Array] = []
    for o in machine.program.outputs:
        if o.kind == "ddr" and o.tensor is not None:
            out.append(machine.read_tensor(o.tensor))
        elif o.kind == "input":
            out.append(args[o.arg])
        else:
            op = machine.ops[o.op_id]
            value = get_op_def(op.kind).compute(op)[0]
            out.append(round_to(value, op.results[0].type.dtype))
    return out


def execute_in_order(machine: Machine, program: Program) -> Iterator[Command]:
    """Execute the Program's commands group by group, tile by tile; yield each once run.

    A tile whose next command is a receive with no payload yet gives way to the next
    tile (in tile order, round and round); when every tile of a group waits so, the
    program deadlocks: an error naming each waiting tile and what it waits for.
    """
    for group in program.groups:
        waiting = True
        while waiting:
            waiting = False
            progressed = False
            for tile in sorted(program.tiles):
                commands = program.tiles[tile]
                i = machine.position[tile]
                while i < len(commands) and commands[i].group == group:
                    c = commands[i]
                    if not machine.ready(c):
                        waiting = True
                        break
                    machine.execute(c, i)
                    progressed = True
                    yield c
                    i += 1
                machine.position[tile] = i
            if waiting and not progressed:
                raise deadlock(machine, program, group)


def deadlock(machine: Machine, program: Program, group: int) -> ProgramError:
    """The error of a group whose every unfinished tile waits in a receive."""
    stuck = []
    for tile in sorted(program.tiles):
        i = machine.position[tile]
        commands = program.tiles[tile]
        if i < len(commands) and commands[i].group == group:
            c = commands[i]
            stuck.append(f"tile {tile} waits for tile {c.peer} ({c.tag})")
    return ProgramError(
        f"group %{group} deadlocks: every tile left waits in a receive whose send never "
        f"runs: {'; '.join(stuck[:8])}",
        group=group,
    )


def run_program(program: Program, module: Module, inputs: Sequence[Array], spm_bytes: int) -> Run:
    """Execute the Program's own command streams, group by group, tile by tile."""
    machine = setup(program, module, inputs, spm_bytes)
    start = time.perf_counter()
    for c in execute_in_order(machine, program):
        machine.trace.append(expected_entry(c))
    seconds = time.perf_counter() - start
    return Run(outputs_of(machine, module, inputs), machine.trace, seconds, machine)


__all__ = [
    "Machine",
    "Run",
    "TraceEntry",
    "command_addrs",
    "compute_slice",
    "deadlock",
    "execute_in_order",
    "expected_entry",
    "outputs_of",
    "run_program",
    "setup",
]
