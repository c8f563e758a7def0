"""Byte-exact on-chip memory layouts: Tensor, NTensor, Cx and NCx (seed 001, "Tensor Layout").

The seed's table, for one batch ``n`` of a tensor viewed as ``N x HW x C``:

=================  ============  ===============================================
dtype              channels      placement
=================  ============  ===============================================
f16/bf16/f32/tf32  C <= 32       NHWC, C padded up to 4/8/16/32
f16/bf16/f32/tf32  C > 32        N[Cx*HW*64, HW*C0], C0 padded up to 4/8/16/32
i8                 C <= 64       NHWC, C padded up to 4/8/16/32/64
i8                 C > 64        N[Cx*HW*128, HW*C0], C0 padded up to 4/8/16/32/64
=================  ============  ===============================================

and in every case each batch starts on a 2048-bit boundary. Tensor and NTensor are the
compact ("紧密排布") row-major image with no padding at all.

Readings chosen where the seed is silent (each is tested in ``tests/core/test_layouts.py``):

- **Addresses are in bits.** The worked example (f16 ``2x1x2x131`` in NCx: batch 0 ends at
  0x1080, batch 1 starts at 0x1800) only works out in bits: batch 0 holds
  ``2*2*64 + 2*4 = 264`` f16 slots = 4224 bits = 0x1080, and the next multiple of 2048 is
  6144 = 0x1800. All offsets here are in bits; ``pack`` images are bytes.
- **Which dims are N, HW and C.** Dim 0 is N, the last dim is C and the dims between are
  HW flattened (rank 4: N,H,W,C; rank 2: N,C with HW = 1). A rank-1 (or rank-0) tensor is
  one batch of one pixel: N = 1, HW = 1, C = its length. This matches the seed's
  "Tensor/NTensor differ in whether dim 0 is 1": dim 0 is the batch everywhere.
- **Which ranks have Cx/NCx.** Seed 000 ("Odd-Dimension Output"): "Cx模式需要数据的维度是2
  或者4" (Cx needs rank 2 or 4), so ranks 3 and >= 5 have only Tensor/NTensor and asking
  for their Cx is an error (:func:`has_aligned_layout`). Ranks 0 and 1 keep a Cx: it is
  the compact placement with C padded (one pixel), seed 000 says one-dimensional data
  meets both modes ("一维的数据可以同时被认为满足两种对齐模式"), and seed 001's
  ConstChannelNormErase stores ``dim < 2`` constants Cx. An ALIGN kernel that reads a
  rank-3 tensor (seed 001's BatchNorm takes rank 2/3/4) sees it as the rank-4
  ``[N, 1, W, C]`` (:func:`aligned_view`), whose NCx places every element where the
  former rank-3 (N, W, C) reading did.
- **Cx and NCx place elements identically**; as with Tensor/NTensor the name records
  whether dim 0 is 1 (:func:`layout_for` picks the name).
- **C0 above the largest step.** C0 is ``C mod 64`` (``mod 128`` for i8), so it can exceed
  32 (64 for i8); the padding ladder then continues to the next step, the full block
  (64 / 128), i.e. the tail becomes one more full channel block in size.
- **Padding bits are zero** in ``pack`` images and ignored by ``unpack``.
- **Element types.** The 16/32-bit rule also covers i32 (a 32-bit type the seed's table
  does not list); i64 and i1 have only the compact Tensor/NTensor layouts.

Examples:
    >>> footprint_bits((2, 1, 2, 131), "f16", LayoutMode.NCx)
    10368
    >>> hex(element_offset_bits((2, 1, 2, 131), "f16", LayoutMode.NCx, (1, 0, 0, 0)))
    '0x1800'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from tx8lab.core.attrs import LayoutMode
from tx8lab.core.dtypes import bits_of, from_bits_image, numpy_dtype, round_to, to_bits_image
from tx8lab.errors import Tx8labError

#: Every batch of a Cx/NCx tensor starts on a multiple of this many bits (seed 001).
BATCH_ALIGN_BITS = 2048

#: Element types with a Cx/NCx layout (the seed's table, plus i32 as a 32-bit type).
ALIGNED_DTYPES = frozenset({"f16", "bf16", "f32", "tf32", "i8", "i32"})

_FORMATTED = (LayoutMode.Cx, LayoutMode.NCx)

#: Ranks with a Cx/NCx placement of their own (seed 000: Cx needs rank 2 or 4).
ALIGNED_RANKS = frozenset({2, 4})


def has_aligned_layout(rank: int) -> bool:
    """Whether a tensor of ``rank`` can be stored Cx/NCx: rank 2 or 4, or one pixel (<= 1)."""
    return rank in ALIGNED_RANKS or rank <= 1


def aligned_view(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape an ALIGN kernel sees ``shape`` as: rank 3 ``[N, W, C]`` -> ``[N, 1, W, C]``.

    Ranks with a Cx of their own are returned as they are. A rank >= 5 tensor has no
    view that does not depend on the op (which dims may merge), so it is an error here.
    """
    shape = tuple(int(d) for d in shape)
    if len(shape) == 3:
        return (shape[0], 1, shape[1], shape[2])
    if not has_aligned_layout(len(shape)):
        raise Tx8labError(
            f"a rank-{len(shape)} tensor {shape} has no Cx/NCx view: Cx needs rank 2 or 4 "
            "(seed 000); reshape it to rank 4 first or keep it Tensor/NTensor"
        )
    return shape


def _check_rank(shape: tuple[int, ...], mode: LayoutMode) -> None:
    if mode in _FORMATTED and not has_aligned_layout(len(shape)):
        raise Tx8labError(
            f"layout {mode.value} needs rank 2 or 4 (seed 000: Cx needs rank 2 or 4), not the "
            f"rank-{len(shape)} shape {shape}: keep it Tensor/NTensor or view it as rank 4 "
            "(layouts.aligned_view)"
        )


def _as_layout(layout: LayoutMode | str) -> LayoutMode:
    if isinstance(layout, LayoutMode):
        return layout
    try:
        return LayoutMode(layout)
    except ValueError:
        names = ", ".join(m.value for m in LayoutMode)
        raise Tx8labError(f"unknown memory layout {layout!r}: use one of {names}") from None


@dataclass(frozen=True)
class Geometry:
    """How a tensor of one shape, dtype and layout sits in memory.

    All sizes are in elements unless the name says bits.

    ``block`` is the channel block (64, or 128 for i8); ``blocks`` the number of full
    blocks (Cx); ``tail`` the channels left over (C0 before padding) and ``tail_pad`` the
    padded width of the tail (or of the whole C when C fits in one padded group).
    """

    layout: LayoutMode
    dtype: str
    n: int
    hw: int
    c: int
    elem_bits: int
    block: int
    blocks: int
    tail: int
    tail_pad: int
    batch_bits: int
    batch_stride_bits: int

    @property
    def footprint_bits(self) -> int:
        """Bits from the first element's slot to the end of the last batch's data."""
        if self.n == 0:
            return 0
        return (self.n - 1) * self.batch_stride_bits + self.batch_bits


def _pad_ladder(width: int, block: int) -> int:
    """The smallest of 4, 8, 16, ... up to ``block`` that holds ``width`` channels."""
    if width == 0:
        return 0
    step = 4
    while step < width:
        step *= 2
    return min(step, block) if width <= block else block


def _split_shape(shape: tuple[int, ...]) -> tuple[int, int, int]:
    if len(shape) <= 1:
        return 1, 1, (shape[0] if shape else 1)
    return shape[0], math.prod(shape[1:-1]), shape[-1]


def geometry(shape: tuple[int, ...], dtype: str, layout: LayoutMode | str) -> Geometry:
    """The :class:`Geometry` of ``shape``/``dtype`` under ``layout``.

    Raises a clear error for element types the layout does not define.
    """
    mode = _as_layout(layout)
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise Tx8labError(f"shape {shape} has a negative dimension")
    _check_rank(shape, mode)
    bits = bits_of(dtype)
    n, hw, c = _split_shape(shape)
    if mode not in _FORMATTED:
        if bits < 8:
            raise Tx8labError(f"{dtype} has no memory layout here: store it as i8 (Convert) first")
        per_batch = hw * c * bits
        return Geometry(mode, dtype, n, hw, c, bits, c, 0, c, c, per_batch, per_batch)
    if dtype not in ALIGNED_DTYPES:
        raise Tx8labError(
            f"layout {mode.value} is defined for {', '.join(sorted(ALIGNED_DTYPES))}, not "
            f"{dtype}: keep {dtype} tensors in Tensor/NTensor"
        )
    block = 128 if bits == 8 else 64
    small = 64 if bits == 8 else 32
    if c <= small:
        blocks, tail = 0, c
    else:
        blocks, tail = divmod(c, block)
    tail_pad = _pad_ladder(tail, block)
    batch_bits = (blocks * hw * block + hw * tail_pad) * bits
    stride = -(-batch_bits // BATCH_ALIGN_BITS) * BATCH_ALIGN_BITS
    return Geometry(mode, dtype, n, hw, c, bits, block, blocks, tail, tail_pad, batch_bits, stride)


def layout_for(shape: tuple[int, ...], aligned: bool) -> LayoutMode:
    """The layout name the compiler gives a tensor: N- prefixed when dim 0 is not 1.

    A tensor of rank 0 or 1 has no batch dimension (its one dimension is C, as the
    placement treats it), so it is always ``Tensor``/``Cx``: seed 001's
    ConstChannelNormErase stores a 1-D constant as ``Cx``. ``aligned`` for a rank-3 or
    rank >= 5 shape is an error (Cx needs rank 2 or 4).
    """
    batched = len(shape) >= 2 and shape[0] != 1
    if aligned:
        layout = LayoutMode.NCx if batched else LayoutMode.Cx
        _check_rank(tuple(shape), layout)
        return layout
    return LayoutMode.NTensor if batched else LayoutMode.Tensor


def _offsets(geo: Geometry) -> npt.NDArray[np.int64]:
    """Bit offset of every element, in row-major order of the (N, HW, C) view."""
    n = np.arange(geo.n, dtype=np.int64)[:, None, None]
    p = np.arange(geo.hw, dtype=np.int64)[None, :, None]
    c = np.arange(geo.c, dtype=np.int64)[None, None, :]
    if geo.layout not in _FORMATTED:
        slots = (n * geo.hw + p) * geo.c + c
        return (slots * geo.elem_bits).reshape(-1)
    in_block = c < geo.blocks * geo.block
    block_slot = ((c // geo.block) * geo.hw + p) * geo.block + c % geo.block
    tail_slot = geo.blocks * geo.hw * geo.block + p * geo.tail_pad + (c - geo.blocks * geo.block)
    slots = np.where(in_block, block_slot, tail_slot)
    return (n * geo.batch_stride_bits + slots * geo.elem_bits).reshape(-1)


def element_offset_bits(
    shape: tuple[int, ...], dtype: str, layout: LayoutMode | str, index: tuple[int, ...]
) -> int:
    """Bit address (from the tensor's base) of element ``index`` of a ``shape`` tensor."""
    geo = geometry(shape, dtype, layout)
    index = tuple(int(i) for i in index)
    if len(index) != len(shape) or any(not 0 <= i < d for i, d in zip(index, shape, strict=False)):
        raise Tx8labError(f"index {index} is outside shape {tuple(shape)}")
    flat = int(np.ravel_multi_index(index, shape)) if shape else 0
    c = flat % geo.c if geo.c else 0
    p = (flat // geo.c) % geo.hw if geo.c and geo.hw else 0
    n = flat // (geo.c * geo.hw) if geo.c and geo.hw else 0
    if geo.layout not in _FORMATTED:
        return flat * geo.elem_bits
    if c < geo.blocks * geo.block:
        slot = ((c // geo.block) * geo.hw + p) * geo.block + c % geo.block
    else:
        slot = geo.blocks * geo.hw * geo.block + p * geo.tail_pad + (c - geo.blocks * geo.block)
    return n * geo.batch_stride_bits + slot * geo.elem_bits


def footprint_bits(shape: tuple[int, ...], dtype: str, layout: LayoutMode | str) -> int:
    """Bits the tensor occupies, up to the end of the last batch's data.

    The last batch's padding counts; the alignment gap after it does not.
    """
    return geometry(shape, dtype, layout).footprint_bits


def _bytes_of(geo: Geometry) -> int:
    return -(-geo.footprint_bits // 8)


def pack(array: npt.ArrayLike, dtype: str, layout: LayoutMode | str) -> bytes:
    """The memory image of ``array`` stored as ``dtype`` in ``layout``.

    Little-endian bytes with zero padding; :func:`unpack` is its exact inverse.
    """
    values = round_to(np.asarray(array), dtype)
    geo = geometry(values.shape, dtype, layout)
    elem_bytes = geo.elem_bits // 8
    raw = np.frombuffer(to_bits_image(values, dtype), dtype=np.uint8).reshape(-1, elem_bytes)
    image = np.zeros(_bytes_of(geo), dtype=np.uint8)
    starts = _offsets(geo) // 8
    image[starts[:, None] + np.arange(elem_bytes)] = raw
    return image.tobytes()


def unpack(
    image: bytes, shape: tuple[int, ...], dtype: str, layout: LayoutMode | str
) -> npt.NDArray[Any]:
    """Read a ``shape`` tensor of ``dtype`` back out of a memory image."""
    geo = geometry(tuple(shape), dtype, layout)
    need = _bytes_of(geo)
    if len(image) < need:
        raise Tx8labError(
            f"memory image has {len(image)} bytes, a {tuple(shape)} {dtype} tensor in "
            f"{geo.layout.value} needs {need}"
        )
    elem_bytes = geo.elem_bits // 8
    buf = np.frombuffer(image, dtype=np.uint8)
    starts = _offsets(geo) // 8
    raw = buf[starts[:, None] + np.arange(elem_bytes)]
    count = math.prod(shape)
    values = from_bits_image(raw.tobytes(), dtype, count)
    return values.astype(numpy_dtype(dtype)).reshape(shape)


def slot_map(shape: tuple[int, ...], dtype: str, layout: LayoutMode | str) -> npt.NDArray[np.int64]:
    """For every element-sized slot of the image, the flat index stored there.

    Padding slots hold -1. It is a picture of the layout: ``reshape(-1, 2048 // bits)``
    gives one 2048-bit line per row.
    """
    geo = geometry(tuple(shape), dtype, layout)
    slots = np.full(-(-geo.footprint_bits // geo.elem_bits), -1, dtype=np.int64)
    slots[_offsets(geo) // geo.elem_bits] = np.arange(geo.n * geo.hw * geo.c)
    return slots


def hexdump(image: bytes, width: int = 32, *, unit: str = "bit") -> str:
    """A hex dump of a memory image, one ``width``-byte row per line.

    Each row is labelled with its address in ``unit`` ("bit", as the seed writes
    addresses, or "byte").
    """
    if unit not in ("bit", "byte"):
        raise Tx8labError(f"hexdump unit must be 'bit' or 'byte', not {unit!r}")
    scale = 8 if unit == "bit" else 1
    lines = []
    for start in range(0, len(image), width):
        row = image[start : start + width]
        lines.append(f"0x{start * scale:06x}: " + " ".join(f"{b:02x}" for b in row))
    return "\n".join(lines)


def channel_norm_images(array: npt.ArrayLike, dtype: str, aligned_to: bool) -> tuple[bytes, bytes]:
    """The images before and after a ChannelNorm of ``direction = aligned_to``.

    The values are the same; only their placement changes (compact <-> Cx/NCx).
    """
    values = np.asarray(array)
    compact = layout_for(values.shape, aligned=False)
    formatted = layout_for(values.shape, aligned=True)
    src, dst = (compact, formatted) if aligned_to else (formatted, compact)
    return pack(values, dtype, src), pack(values, dtype, dst)
