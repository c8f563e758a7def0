"""FlashAttention templates (seed 004 §1) and the tiling key (seed 004 §2.2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tx8lab.errors import Tx8labError
from tx8lab.hw.presets import TX81
from tx8lab.kernels.flash_attention.templates import (
    KEY_FIELDS,
    TILINGKEYOFFSET,
    TemplateLimits,
    TilingKey,
    backward_template,
    backward_templates,
    choose_backward_template,
    choose_forward_template,
    decode_tiling_key,
    encode_tiling_key,
    forward_template,
    forward_templates,
    forward_tiling_key,
    tx8_limits,
)


@st.composite
def keys(draw: st.DrawFn) -> TilingKey:
    return TilingKey(**{name: draw(st.sampled_from(sorted(enum))) for name, enum in KEY_FIELDS})


@given(keys())
def test_tiling_key_round_trips(key: TilingKey) -> None:
    value = encode_tiling_key(key)
    assert TILINGKEYOFFSET <= value < 2**64  # fits the seed's uint64_t
    assert decode_tiling_key(value) == key


def _recursive_sum(ids: list[int]) -> int:
    """The seed's C++ ``RecursiveSum``, transcribed."""
    return ids[0] + 10 * _recursive_sum(ids[1:]) if ids else 0


def test_field_order_is_the_seeds_get_tilingkey_call() -> None:
    # GET_TILINGKEY(S1, S2, NONE, implMode, dtype, layout, bmm1Format, ANY,
    #               BIG_DOUBLE_BUFFER, hasDropOut, hasAttenMask, hasPse, enableL1Reuse)
    assert [name for name, _ in KEY_FIELDS] == [
        "ub0", "ub1", "block", "impl_mode", "dtype", "layout", "bmm1_format",
        "sparse", "performance", "has_dropout", "has_atten_mask", "has_pse",
        "enable_l1_reuse",
    ]  # fmt: skip
    key = TilingKey(impl_mode="AA_HIGH_PRECISION", dtype="FP16", layout="BSND", has_pse="true")
    ids = [3, 4, 9, 0, 0, 0, 0, 2, 2, 0, 0, 1, 0]
    assert encode_tiling_key(key) == 10**19 + _recursive_sum(ids)
    assert str(encode_tiling_key(key)) == "10000000100220000943"


@pytest.mark.parametrize("bad", [5, 10**19 - 1, 10**19 + 10**13, 10**19 + 5 * 10**6])
def test_bad_tiling_keys_are_rejected(bad: int) -> None:
    with pytest.raises(Tx8labError, match="tiling key"):
        decode_tiling_key(bad)


def test_unknown_field_value_is_named() -> None:
    with pytest.raises(Tx8labError, match="'dtype'"):
        encode_tiling_key(TilingKey(dtype="INT8"))


@pytest.mark.parametrize(
    ("shape", "name", "inner"),
    [
        # S2 > 1024: S1S2; outer B*N2*G*ceil(S1/64) = 28*32 > 16 cores -> s1.i = 128
        ((1, 28, 1, 2048, 2048), "S1S2", {"S1": 128, "S2": 1024}),
        # outer 1*1*1*1 <= 16 -> s1.i = 64 (capped by S1)
        ((1, 1, 1, 64, 4096), "S1S2", {"S1": 64, "S2": 1024}),
        # S2 = 512 > 128: S1 template, s1.i * 512 <= 128K -> 256
        ((2, 4, 2, 1000, 512), "S1", {"S1": 256}),
        # S2 = 128, align16(600) * 128 = 77824 > 64K -> S1; 128K / 128 = 1024 -> capped at
        # 608; one head: 16 blocks keep the 16 cores busy (38 would at s1.i = 16), so
        # ceil(600 / s1.i) >= 16 -> s1.i <= 37.5 -> 32
        ((1, 1, 1, 600, 128), "S1", {"S1": 32}),
        # S1 = 512 on 4 heads: 4 * ceil(512 / s1.i) >= 16 -> s1.i < 170.7 -> 160
        ((1, 4, 1, 512, 512), "S1", {"S1": 160}),
        # small: B template, B.i * 2 * 2 * 64 * 64 <= 128K -> 8; 16 batches on 16 cores -> 1
        ((16, 2, 2, 64, 64), "B", {"B": 1}),
        # 64 batches: the bound 8 leaves 8 passes; ceil(64 / B.i) >= 16 -> B.i = 4
        ((64, 2, 2, 64, 64), "B", {"B": 4}),
    ],
)
def test_forward_template_choice(
    shape: tuple[int, int, int, int, int], name: str, inner: dict[str, int]
) -> None:
    chosen = choose_forward_template(*shape)
    assert chosen.name == name
    assert chosen.inner == inner
    # the chosen one is the first matching in priority order
    rows = forward_templates(*shape)
    assert [t.priority for t in rows] == sorted(t.priority for t in rows)
    assert next(t for t in rows if t.matched) == chosen


@pytest.mark.parametrize(
    ("shape", "name", "block", "heads"),
    [
        # S1S2: (s1.i, s2.i) = (128, 1024); S1: (s1.i, S2); B: whole S1 x S2, B.i*N2*G heads
        ((1, 28, 1, 2048, 2048), "S1S2", (128, 1024), 1),
        ((2, 4, 2, 1000, 512), "S1", (256, 512), 1),
        ((64, 2, 2, 64, 64), "B", (64, 64), 4 * 2 * 2),
    ],
)
def test_each_template_names_its_tiling(
    shape: tuple[int, int, int, int, int], name: str, block: tuple[int, int], heads: int
) -> None:
    chosen = choose_forward_template(*shape)
    assert (chosen.name, chosen.block, chosen.heads) == (name, block, heads)


def test_a_named_template_overrides_the_choice() -> None:
    shape = (1, 28, 1, 2048, 2048)  # S1S2 by the seed's rule
    # S1 forced: s1.i * 2048 <= 128K -> 64 (28 heads x 32 blocks fill the cores)
    assert forward_template(*shape, name="S1").block == (64, 2048)
    # B forced: B.i * 28 * 2048 * 2048 > 128K -> 1 batch of 28 heads, whole blocks
    forced = forward_template(*shape, name="B")
    assert (forced.block, forced.heads) == ((2048, 2048), 28)
    assert forward_template(*shape) == choose_forward_template(*shape)
    with pytest.raises(Tx8labError, match=r"FA template 'S2'.*S1S2, S1, B"):
        forward_template(*shape, name="S2")
    with pytest.raises(Tx8labError, match=r"FAG template 's1s2'.*s1s2_bn2gs1s2"):
        backward_template(*shape, name="s1s2")


@pytest.mark.parametrize(
    ("shape", "name", "block", "heads", "split"),
    [
        # N2*G*S1*S2 = 2*32*32 = 2048 < 8192: b.i*2048 < 8192 -> 3; 32 batches on 16
        # cores: ceil(32 / b.i) >= 16 -> b.i = 2, so 2 * 2 heads per pass
        ((32, 2, 1, 32, 32), "bn2gs1s2_b", (32, 32), 4, "fused"),
        # N2*G*S1*S2 = 32768 (not < 8192); G*S1*S2 = 2048: n2.i*2048 < 8192 -> 3; 4
        # batches x ceil(16 / 3) = 24 passes still fill 16 cores -> n2.i = 3, 3 * 2 heads
        ((4, 16, 2, 32, 32), "n2gs1s2_bn1", (32, 32), 6, "fused"),
        # B*N2 = 32 > 16: whole KV heads per core, Cube base blocks
        ((4, 8, 1, 2048, 2048), "s1s2_bn2", (128, 128), 1, "bn2"),
        ((1, 8, 1, 2048, 100), "s1s2_bn2gs1s2", (128, 100), 1, "fused"),
    ],
)
def test_each_backward_template_names_its_tiling(
    shape: tuple[int, int, int, int, int],
    name: str,
    block: tuple[int, int],
    heads: int,
    split: str,
) -> None:
    chosen = choose_backward_template(*shape)
    assert (chosen.name, chosen.block, chosen.heads, chosen.split) == (name, block, heads, split)
    assert backward_template(*shape) == chosen


def test_vector_core_count_changes_s1_inner() -> None:
    shape = (1, 2, 1, 256, 2048)  # outer 2 * 4 = 8
    assert choose_forward_template(*shape, TemplateLimits(cores=16)).inner["S1"] == 64
    assert choose_forward_template(*shape, TemplateLimits(cores=4)).inner["S1"] == 128


@pytest.mark.parametrize(
    ("shape", "name"),
    [
        ((8, 2, 1, 32, 64), "bn2gs1s2_b"),  # N2*G*S1*S2 = 4096 < 8192
        ((8, 4, 1, 32, 64), "n2gs1s2_bn1"),  # 8192 not < 8192, G*S1*S2 = 2048
        ((4, 8, 1, 2048, 2048), "s1s2_bn2"),  # B*N2 = 32 > 16
        ((1, 8, 1, 2048, 2048), "s1s2_bn2gs1s2"),
    ],
)
def test_backward_template_by_priority(shape: tuple[int, int, int, int, int], name: str) -> None:
    assert choose_backward_template(*shape).name == name
    rows = backward_templates(*shape)
    assert [t.priority for t in rows] == [10000, 11000, 15000, 16000]
    assert rows[-1].matched  # the fallback always matches


def test_forward_key_from_template_and_options() -> None:
    tmpl = choose_forward_template(1, 28, 1, 2048, 2048)
    key = forward_tiling_key(tmpl, dtype="bf16", layout="BSND", causal=True, has_pse=True)
    decoded = decode_tiling_key(encode_tiling_key(key))
    assert (decoded.ub0, decoded.ub1, decoded.block) == ("S1", "S2", "NONE")
    assert (decoded.sparse, decoded.has_atten_mask, decoded.has_pse) == ("CAUSAL", "true", "true")
    assert decoded.layout == "BSND"
    with pytest.raises(Tx8labError, match="dtype"):
        forward_tiling_key(tmpl, dtype="int8")


def test_bad_axis_is_named() -> None:
    with pytest.raises(Tx8labError, match="axis S1"):
        choose_forward_template(1, 1, 1, 0, 16)


def test_tx8_limits_scale_the_ub_thresholds_with_the_spm() -> None:
    lim = tx8_limits(TX81)
    assert lim.cores == 16
    assert (lim.s1_area, lim.ub_elems) == (8 * 64 * 1024, 8 * 128 * 1024)  # 3 MiB / 192 KiB
    shape = (1, 1, 1, 600, 128)  # align16(600) * 128 = 77824
    assert choose_forward_template(*shape).name == "S1"  # > 64K on Ascend
    assert choose_forward_template(*shape, lim).name == "B"  # <= 512K on a TX81 tile
    small = TX81.with_overrides({"tile.spm_bytes": "256Ki"})
    assert tx8_limits(small).ub_elems == 128 * 1024  # below 2x the UB: the seed's numbers
