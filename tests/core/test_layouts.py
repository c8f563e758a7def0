"""Memory layouts: the seed's worked example, the padding table, and pack/unpack inverses."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tx8lab.core.attrs import LayoutMode
from tx8lab.core.dtypes import round_to
from tx8lab.core.layouts import (
    aligned_view,
    channel_norm_images,
    element_offset_bits,
    footprint_bits,
    geometry,
    hexdump,
    layout_for,
    pack,
    slot_map,
    unpack,
)
from tx8lab.errors import Tx8labError

SEED_DTYPES = ("f16", "bf16", "f32", "tf32", "i8")
BITS = {"f16": 16, "bf16": 16, "f32": 32, "tf32": 32, "i8": 8, "i32": 32}


def naive_offset(shape: tuple[int, ...], dtype: str, layout: str, index: tuple[int, ...]) -> int:
    """The seed's table read literally, one element at a time (bits)."""
    bits = BITS[dtype]
    if len(shape) <= 1:
        hw_, c_ = 1, (shape[0] if shape else 1)
        n, p, c = 0, 0, (index[0] if index else 0)
    else:
        hw_, c_ = math.prod(shape[1:-1]), shape[-1]
        n, c = index[0], index[-1]
        p = int(np.ravel_multi_index(index[1:-1], shape[1:-1])) if len(shape) > 2 else 0
    if layout in ("Tensor", "NTensor"):
        return ((n * hw_ + p) * c_ + c) * bits
    block, small = (128, 64) if bits == 8 else (64, 32)
    ladder = [4, 8, 16, 32, 64, 128]

    def padded(width: int) -> int:
        return 0 if width == 0 else min(x for x in ladder if x >= width)

    if c_ <= small:
        per_batch = hw_ * padded(c_)
        slot = p * padded(c_) + c
    else:
        cx, c0 = divmod(c_, block)
        per_batch = cx * hw_ * block + hw_ * padded(c0)
        slot = (
            (c // block * hw_ + p) * block + c % block
            if c < cx * block
            else (cx * hw_ * block + p * padded(c0) + c - cx * block)
        )
    stride = -(-per_batch * bits // 2048) * 2048
    return n * stride + slot * bits


def test_seed_worked_example_f16_2x1x2x131_ncx() -> None:
    shape = (2, 1, 2, 131)
    geo = geometry(shape, "f16", "NCx")
    assert (geo.blocks, geo.tail, geo.tail_pad) == (2, 3, 4)
    # batch 0 ends at 0x1080 (4224) bits; batch 1 starts at 2048 * 3 = 0x1800 bits
    last_of_batch0 = element_offset_bits(shape, "f16", "NCx", (0, 0, 1, 130))
    assert geo.batch_bits == 0x1080
    assert last_of_batch0 + 16 + 16 == 0x1080  # the last slot of batch 0 is padding
    assert element_offset_bits(shape, "f16", "NCx", (1, 0, 0, 0)) == 0x1800
    assert footprint_bits(shape, "f16", "NCx") == 0x1800 + 0x1080
    # NTensor: compact from 0x0000
    assert element_offset_bits(shape, "f16", "NTensor", (1, 0, 0, 0)) == 262 * 16


@pytest.mark.parametrize(
    ("dtype", "c", "blocks", "tail_pad"),
    [
        ("f16", 1, 0, 4),
        ("f16", 5, 0, 8),
        ("f16", 17, 0, 32),
        ("f16", 32, 0, 32),
        ("f16", 33, 0, 64),
        ("f16", 64, 1, 0),
        ("f16", 65, 1, 4),
        ("f16", 100, 1, 64),
        ("f32", 131, 2, 4),
        ("i8", 64, 0, 64),
        ("i8", 65, 0, 128),
        ("i8", 129, 1, 4),
        ("i8", 200, 1, 128),
        ("i8", 40, 0, 64),
        ("tf32", 9, 0, 16),
    ],
)
def test_padding_table(dtype: str, c: int, blocks: int, tail_pad: int) -> None:
    # C <= 32 (64 for i8) is padded NHWC; above, full blocks of 64 (128) plus a padded tail.
    # A tail wider than 32 (64 for i8) pads to the full block (docstring of layouts.py).
    geo = geometry((1, 1, 3, c), dtype, "Cx")
    assert (geo.blocks, geo.tail_pad) == (blocks, tail_pad)


def test_every_batch_starts_on_2048_bits() -> None:
    for dtype in SEED_DTYPES:
        for c in (3, 40, 70, 131, 300):
            shape = (3, 2, 5, c)
            for n in range(3):
                assert element_offset_bits(shape, dtype, "NCx", (n, 0, 0, 0)) % 2048 == 0


shapes = st.lists(st.integers(1, 7), min_size=1, max_size=4).flatmap(
    lambda dims: st.sampled_from([3, 4, 31, 33, 64, 65, 70, 129, 131]).map(
        lambda c: (*dims[:-1], c)
    )
)


@given(
    shape=shapes,
    dtype=st.sampled_from((*SEED_DTYPES, "i32")),
    layout=st.sampled_from(["Tensor", "NTensor", "Cx", "NCx"]),
    data=st.data(),
)
def test_offsets_match_the_table_and_never_overlap(
    shape: tuple[int, ...], dtype: str, layout: str, data: st.DataObject
) -> None:
    index = tuple(data.draw(st.integers(0, d - 1)) for d in shape)
    if layout in ("Cx", "NCx") and len(shape) == 3:
        with pytest.raises(Tx8labError, match="needs rank 2 or 4"):
            element_offset_bits(shape, dtype, layout, index)
        return
    assert element_offset_bits(shape, dtype, layout, index) == naive_offset(
        shape, dtype, layout, index
    )
    slots = slot_map(shape, dtype, layout)
    used = slots[slots >= 0]
    assert sorted(used.tolist()) == list(range(math.prod(shape)))
    assert footprint_bits(shape, dtype, layout) == len(slots) * BITS[dtype]


@given(
    shape=shapes,
    dtype=st.sampled_from(SEED_DTYPES),
    layout=st.sampled_from(list(LayoutMode)),
    seed=st.integers(0, 2**16),
)
def test_unpack_inverts_pack(
    shape: tuple[int, ...], dtype: str, layout: LayoutMode, seed: int
) -> None:
    if layout in (LayoutMode.Cx, LayoutMode.NCx):
        shape = aligned_view(shape)  # a rank-3 tensor has Cx only through its rank-4 view
    rng = np.random.default_rng(seed)
    values = round_to(rng.integers(-100, 100, shape) * 0.25, dtype)
    image = pack(values, dtype, layout)
    assert len(image) * 8 == footprint_bits(shape, dtype, layout)
    back = unpack(image, shape, dtype, layout)
    np.testing.assert_array_equal(back, values)
    assert back.dtype == values.dtype


def test_padding_is_zero_and_compact_layouts_have_none() -> None:
    values = np.arange(1, 1 + 2 * 3 * 5, dtype=np.float16).reshape(1, 2, 3, 5)
    aligned = np.frombuffer(pack(values, "f16", "Cx"), dtype=np.uint16)
    assert np.count_nonzero(aligned) == values.size  # 3 padding slots per pixel are 0
    assert len(aligned) == 6 * 8
    compact = pack(values, "f16", "Tensor")
    assert compact == values.tobytes()


def test_channel_norm_changes_the_image_not_the_values() -> None:
    values = np.arange(2 * 1 * 2 * 131, dtype=np.float16).reshape(2, 1, 2, 131)
    before, after = channel_norm_images(values, "f16", aligned_to=True)
    assert before != after
    np.testing.assert_array_equal(unpack(before, values.shape, "f16", "NTensor"), values)
    np.testing.assert_array_equal(unpack(after, values.shape, "f16", "NCx"), values)
    dump = hexdump(after[:64], width=32)
    assert dump.splitlines()[1].startswith("0x000100:")  # 32 bytes = 0x100 bits


def test_layout_names_follow_dim_zero() -> None:
    assert layout_for((1, 8, 8, 64), aligned=True) is LayoutMode.Cx
    assert layout_for((2, 8, 8, 64), aligned=True) is LayoutMode.NCx
    assert layout_for((1, 64), aligned=False) is LayoutMode.Tensor
    assert layout_for((4, 64), aligned=False) is LayoutMode.NTensor
    # rank <= 1: the one dimension is C, never a batch
    assert layout_for((16,), aligned=True) is LayoutMode.Cx
    assert layout_for((), aligned=False) is LayoutMode.Tensor


def test_clear_errors() -> None:
    with pytest.raises(Tx8labError, match=r"NCx is defined for .* not i64"):
        geometry((1, 4), "i64", "NCx")
    with pytest.raises(Tx8labError, match="unknown memory layout 'NHWC'"):
        geometry((1, 4), "f16", "NHWC")
    with pytest.raises(Tx8labError, match="outside shape"):
        element_offset_bits((1, 4), "f16", "Cx", (0, 4))
    with pytest.raises(Tx8labError, match="needs 8"):
        unpack(b"\0" * 4, (1, 4), "f16", "Cx")
    with pytest.raises(Tx8labError, match="i1 has no memory layout"):
        geometry((4,), "i1", "Tensor")


def test_cx_needs_rank_2_or_4() -> None:
    # seed 000: "Cx模式需要数据的维度是2或者4"; ranks 3 and >= 5 have only Tensor/NTensor
    for shape in ((1, 3, 64), (2, 3, 64), (1, 2, 3, 4, 64), (1, 1, 1, 1, 1, 8)):
        for layout in ("Cx", "NCx"):
            with pytest.raises(Tx8labError, match=rf"{layout} needs rank 2 or 4 .* rank-"):
                geometry(shape, "f16", layout)
        with pytest.raises(Tx8labError, match="needs rank 2 or 4"):
            layout_for(shape, aligned=True)
        with pytest.raises(Tx8labError, match="needs rank 2 or 4"):
            pack(np.zeros(shape, np.float32), "f16", "Cx")
        assert layout_for(shape, aligned=False) in (LayoutMode.Tensor, LayoutMode.NTensor)
    # rank 0/1: one pixel of C channels, C padded (seed 001 stores dim < 2 constants Cx)
    # C = 40 > 32: no full block of 64, the tail C0 = 40 pads up the ladder to 64 slots
    assert footprint_bits((40,), "f16", "Cx") == 64 * 16
    assert footprint_bits((), "f16", "Cx") == 4 * 16


def test_rank3_is_read_through_its_rank4_view() -> None:
    # [N, W, C] -> [N, 1, W, C]; by hand for f16 [2, 3, 131]: per batch 3 pixels x 2 blocks
    # of 64 + 3 pixels x the tail 3 padded to 4 = 396 slots = 6336 bits, batch stride 8192
    assert aligned_view((2, 3, 131)) == (2, 1, 3, 131)
    assert aligned_view((2, 1, 3, 131)) == (2, 1, 3, 131)
    assert footprint_bits(aligned_view((2, 3, 131)), "f16", "NCx") == 8192 + 6336
    with pytest.raises(Tx8labError, match=r"rank-5 tensor .* has no Cx/NCx view"):
        aligned_view((1, 2, 3, 4, 5))
