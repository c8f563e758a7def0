"""The host model's memory: a box written or read at a time gives the bytes of whole images.

Oracles: ``layouts.pack``/``unpack`` (the image of a whole tensor), ``dtypes.round_to``
(the rounding the host model repeats in 32-bit integers) and the rule that every region
and DDR tensor holds its array packed in its layout after each command, as when every
write re-packed the whole holder.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tx8lab.core import zoo
from tx8lab.core.builder import Builder
from tx8lab.core.dtypes import round_to
from tx8lab.core.hostmodel import IMM_GARBAGE, Machine, _Codec, _round, execute_in_order, setup
from tx8lab.core.interpret import random_inputs
from tx8lab.core.ir import Module
from tx8lab.core.layouts import pack, unpack
from tx8lab.core.passes import build_pipeline
from tx8lab.core.program import Access, Program, build_program
from tx8lab.core.runner import run_pipeline
from tx8lab.hw.presets import resolve_hw

LAYOUTS = ("Tensor", "NTensor", "Cx", "NCx")
LLAMA_SMALL = {"hidden": 64, "heads": 2, "ffn": 128, "vocab": 100, "seq": 8}
DTYPES = ("f32", "f16", "bf16", "tf32", "i8", "i32")


@st.composite
def images(draw: Any) -> tuple[tuple[int, ...], str, str, tuple[tuple[int, int], ...]]:
    """A shape (channels across the 64/128 blocks), dtype, layout and a box inside it.

    Cx/NCx only for the ranks that have them (2 and 4, and one-pixel 0/1).
    """
    layout = draw(st.sampled_from(LAYOUTS))
    rank = draw(st.sampled_from((0, 1, 2, 4) if layout in ("Cx", "NCx") else (0, 1, 2, 3, 4)))
    lead = [draw(st.integers(1, 3)) for _ in range(max(0, rank - 1))]
    shape = (*lead, draw(st.sampled_from((1, 3, 8, 33, 64, 65, 129, 200, 300))))[:rank]
    box = []
    for d in shape:
        a = draw(st.integers(0, d - 1))
        box.append((a, draw(st.integers(a + 1, d))))
    return shape, draw(st.sampled_from(DTYPES)), layout, tuple(box)


def _values(shape: tuple[int, ...], dtype: str, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    values = np.array(round_to(rng.standard_normal(shape) * 100, dtype))
    if values.dtype.kind == "f":
        values[rng.random(shape) < 0.1] = np.nan
    return values


@settings(max_examples=300, deadline=None)
@given(images(), st.integers(0, 7), st.integers(0, 2**16))
def test_a_box_packs_and_unpacks_as_the_whole_image(
    case: tuple[tuple[int, ...], str, str, tuple[tuple[int, int], ...]], base: int, seed: int
) -> None:
    shape, dtype, layout, box = case
    values = _values(shape, dtype, seed)
    image = pack(values, dtype, layout)
    codec = _Codec(shape, dtype, layout)
    assert codec.image_bytes == len(image)
    noise = np.random.default_rng(seed).integers(0, 256, base + len(image) + 5, np.uint8)
    memory = bytearray(noise)
    codec.clear(memory, base)
    codec.put(memory, base, codec.full, values)
    assert bytes(memory[base : base + len(image)]) == image
    sl = tuple(slice(a, b) for a, b in box)
    got = codec.get(memory, base, box)
    want = unpack(image, shape, dtype, layout)[sl]
    assert (got.dtype, got.shape, got.tobytes()) == (want.dtype, want.shape, want.tobytes())
    # writing only the box leaves the image of the whole array
    changed = np.array(values, copy=True)
    changed[sl] = round_to(np.random.default_rng(seed + 1).standard_normal(got.shape), dtype)
    codec.put(memory, base, box, changed[sl])
    assert bytes(memory[base : base + len(image)]) == pack(changed, dtype, layout)
    assert memory[:base] == bytearray(noise[:base])


SPECIAL = np.array(
    [
        0x00000000,
        0x80000000,
        0x3F800000,
        0x3F808000,
        0x3F818000,
        0x3F80FFFF,
        0x3F807FFF,
        0x7F7FFFFF,
        0xFF7FFFFF,
        0x7F800000,
        0xFF800000,
        0x7FC00000,
        0xFFC00000,
        0x7F800001,
        0xFFFFFFFF,
        0x7FFFFFFF,
        0x00000001,
        0x00008000,
        0x00018000,
        0x80001000,
        0x3F801000,
        0x3F803000,
        0x3F802000,
        0x7F7FF000,
    ],
    dtype=np.uint32,
)


@pytest.mark.parametrize("dtype", ["bf16", "tf32"])
def test_round_is_round_to_bit_for_bit(dtype: str) -> None:
    rng = np.random.default_rng(5)
    bits = np.concatenate([SPECIAL, rng.integers(0, 2**32, 200_000, dtype=np.uint64)])
    values = bits.astype(np.uint32).view(np.float32)
    got, want = _round(values, dtype), round_to(values, dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    # another order (round_to's own), a 0-d array, wider floats, a Python number
    wide = rng.standard_normal(100) * 1e3
    for other in (values[:12].reshape(3, 4).T, values[5], wide, 3.5):
        a, b = _round(other, dtype), round_to(other, dtype)
        assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes())
        assert a.flags.c_contiguous == b.flags.c_contiguous


def _check_images(
    machine: Machine, imm: set[tuple[str, str]], tile: int | None = None, keys: Any = None
) -> None:
    """Regions and lone DDR tensors hold their arrays packed, as whole re-packs left them.

    ``tile`` and ``keys`` (region keys, DDR addresses) pick which; by default all.
    """
    for t, regions in machine.regions.items():
        for r in regions:
            if (tile is not None and t != tile) or (keys is not None and r.key not in keys):
                continue
            if r.key in imm:
                assert set(machine.spm[t][r.addr : r.addr + r.nbytes]) <= {IMM_GARBAGE}
                continue
            image = pack(r.array, r.dtype, r.layout)
            assert bytes(machine.spm[t][r.addr : r.addr + len(image)]) == image, r.key
    tensors = list(machine.tensors.values())
    for d in (
        tensors if keys is None else [machine.tensors[a] for a in keys if a in machine.tensors]
    ):
        alone = not any(
            o is not d and o.addr < d.addr + d.nbytes and d.addr < o.addr + o.nbytes
            for o in tensors
        )
        if alone and d.synced:
            masked = np.where(d.written, d.array, 0) if d.array.dtype.kind == "f" else d.array
            image = pack(masked, d.dtype, d.layout)
            assert bytes(machine.ddr[d.addr : d.addr + len(image)]) == image, d.addr


def _scheduled(module: Module, hw: Any) -> tuple[Module, Program]:
    module = list(run_pipeline(module, build_pipeline(None, {}), hw))[-1].result.module
    return module, build_program(module, hw)


def _bf16_psum() -> Module:
    """A bf16 product whose K is summed in f32 parts on a small SPM, then rounded to bf16."""
    b = Builder()
    x = b.input((1, 2, 128), "bf16")
    b.output(b.op("MatMul", x, b.weight((128, 64), "bf16")))
    return b.finish()


@pytest.mark.parametrize(
    ("build", "hw_args"),
    [
        (zoo.tiny_cnn, ["tile.spm_bytes=72Ki"]),
        (zoo.layout_align_demo, []),
        (lambda: zoo.build("llama_decoder", **LLAMA_SMALL), []),
        (_bf16_psum, ["tile.spm_bytes=68Ki"]),
    ],
    ids=["tiny_cnn", "layout_align_demo", "llama_small", "bf16_psum"],
)
def test_each_command_leaves_whole_images(build: Any, hw_args: list[str]) -> None:
    hw = resolve_hw(hw_args)
    module, program = _scheduled(build(), hw)
    if build is _bf16_psum:
        assert any(c.psum is not None for cs in program.tiles.values() for c in cs)
    machine = setup(program, module, random_inputs(module, 0), hw.tile.spm_bytes)
    imm = {
        (c.imm.lifetime, c.imm.value)
        for cs in program.tiles.values()
        for c in cs
        if c.imm is not None
    }
    _check_images(machine, imm)
    for c in execute_in_order(machine, program):
        touched = (*c.reads, *c.writes, c.psum, c.imm)
        keys = {(a.lifetime, a.value) for a in touched if a is not None}
        keys |= {a.addr for a in c.writes if a.space == "ddr"}
        _check_images(machine, imm, c.tile, keys)
    _check_images(machine, imm)


def _ddr(addr: int, shape: tuple[int, ...], window: tuple[tuple[int, int], ...]) -> Access:
    holder = tuple((0, d) for d in shape)
    nbytes = int(np.prod(shape)) * 4
    return Access("ddr", "DDR_x", "x", "", addr, nbytes, "f32", "Tensor", holder, window)


def test_a_store_over_another_tensors_bytes_repacks_its_whole_image() -> None:
    """Tensor b writes into a's bytes; a's next store writes all of a again, stale rows too."""
    hw = resolve_hw([])
    module, program = _scheduled(zoo.tiny_cnn(), hw)
    machine = setup(program, module, random_inputs(module, 0), hw.tile.spm_bytes)
    c = next(c for cs in program.tiles.values() for c in cs)
    base = machine.program.ddr_bytes - 256
    a_row0 = _ddr(base, (4, 8), ((0, 1), (0, 8)))
    machine.ddr_write(a_row0, c, np.full((1, 8), 1.0, np.float32))
    b = _ddr(base + 64, (4, 8), ((0, 4), (0, 8)))
    machine.ddr_write(b, c, np.full((4, 8), 2.0, np.float32))
    a_row1 = _ddr(base, (4, 8), ((1, 2), (0, 8)))
    machine.ddr_write(a_row1, c, np.full((1, 8), 3.0, np.float32))
    got = np.frombuffer(bytes(machine.ddr[base : base + 192]), np.float32)
    want = np.concatenate([[1.0] * 8, [3.0] * 8, [0.0] * 16, [2.0] * 16])
    np.testing.assert_array_equal(got, want)
    # b's next store writes all of b again (a wrote over it); the one after, its row only
    machine.ddr_write(_ddr(base + 64, (4, 8), ((3, 4), (0, 8))), c, np.full((1, 8), 4.0))
    machine.ddr_write(_ddr(base + 64, (4, 8), ((2, 3), (0, 8))), c, np.full((1, 8), 5.0))
    got = np.frombuffer(bytes(machine.ddr[base : base + 192]), np.float32)
    want = np.concatenate([[1.0] * 8, [3.0] * 8, [2.0] * 16, [5.0] * 8, [4.0] * 8])
    np.testing.assert_array_equal(got, want)
