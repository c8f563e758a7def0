"""FlashAttention numerics: tiled forward/backward against the naive reference."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tx8lab.errors import Tx8labError
from tx8lab.kernels.flash_attention import (
    Attention,
    block_pairs,
    flash_backward,
    flash_forward,
    reference_backward,
    reference_forward,
    round_to,
)
from tx8lab.kernels.flash_attention.numerics import DType, Layout

# f32 kernels against the float64 reference; 16-bit kernels round P and the outputs.
DTYPE_CHOICES: list[DType] = ["f32", "bf16", "f16"]


class Case(NamedTuple):
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    dout: np.ndarray
    attn: Attention
    block: tuple[int, int]


TOL = {"f32": (2e-4, 2e-5), "bf16": (6e-2, 2e-2), "f16": (1e-2, 2e-3)}


@st.composite
def cases(draw: st.DrawFn) -> Case:
    b = draw(st.integers(1, 2))
    n2 = draw(st.integers(1, 2))
    g = draw(st.integers(1, 2))
    s1 = draw(st.integers(1, 13))
    s2 = draw(st.integers(1, 13))
    d = draw(st.sampled_from([1, 4, 8]))
    layout: Layout = draw(st.sampled_from(["BSND", "BNSD"]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    shape_q = (b, n2 * g, s1, d) if layout == "BNSD" else (b, s1, n2 * g, d)
    shape_k = (b, n2, s2, d) if layout == "BNSD" else (b, s2, n2, d)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in (shape_q, shape_k, shape_k))
    dout = rng.standard_normal(shape_q).astype(np.float32)
    mask = None
    if draw(st.booleans()):
        mask = rng.random((1, 1, s1, s2)) < 0.3
        if draw(st.booleans()):
            mask[0, 0, 0, :] = True  # a fully masked row
    pse = (
        rng.standard_normal((1, n2 * g, s1, s2)).astype(np.float32) if draw(st.booleans()) else None
    )
    attn = Attention(
        layout=layout,
        causal=draw(st.booleans()),
        atten_mask=mask,
        pse=pse,
        keep_prob=draw(st.sampled_from([1.0, 0.7])),
        seed=seed,
        dtype=draw(st.sampled_from(DTYPE_CHOICES)),
    )
    block = (draw(st.integers(1, 6)), draw(st.integers(1, 6)))
    return Case(q, k, v, dout, attn, block)


def _close(
    got: np.ndarray, want: np.ndarray, dtype: str, what: str, magnitude: float = 1.0
) -> None:
    rtol, atol = TOL[dtype]
    scale = max(1.0, magnitude, float(np.max(np.abs(want))) if want.size else 1.0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=what)


@settings(max_examples=120, deadline=None)
@given(cases())
def test_tiled_forward_and_backward_match_the_reference(case: Case) -> None:
    q, k, v, dout, attn, block = case
    fwd = flash_forward(q, k, v, attn, block=block)
    ref = reference_forward(q, k, v, attn)
    assert np.all(np.isfinite(fwd.out))
    _close(fwd.out, ref.out, attn.dtype, "out")
    finite = np.isfinite(ref.lse)
    assert np.array_equal(np.isfinite(fwd.lse), finite)
    _close(fwd.lse[finite], ref.lse[finite], attn.dtype, "lse")
    grads = flash_backward(q, k, v, fwd.out, dout, fwd.lse, attn, block=block)
    want = reference_backward(q, k, v, dout, attn)
    for name in ("dq", "dk", "dv"):
        got_g, want_g = getattr(grads, name), getattr(want, name)
        assert got_g.shape == want_g.shape
        assert np.all(np.isfinite(got_g))
        # the kernel reads its own rounded O: errors scale with |dO| |V| max(|Q|, |K|)
        mag = float(np.abs(dout).max() * np.abs(v).max() * max(np.abs(q).max(), np.abs(k).max()))
        _close(got_g, want_g, attn.dtype, name, mag)


def test_reference_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 2, 3, 4)) for _ in range(3))
    k, v = k[:, :1], v[:, :1]  # GQA, G = 2
    dout = rng.standard_normal((1, 2, 3, 4))
    mask = np.zeros((1, 1, 3, 3), dtype=bool)
    mask[0, 0, 2, 0] = True
    attn = Attention(causal=False, atten_mask=mask, pse=rng.standard_normal((1, 2, 3, 3)))
    grads = reference_backward(q, k, v, dout, attn)

    def loss(qq: np.ndarray, kk: np.ndarray, vv: np.ndarray) -> float:
        return float((reference_forward(qq, kk, vv, attn).out * dout).sum())

    eps = 1e-3
    for name, arr, got in (("q", q, grads.dq), ("k", k, grads.dk), ("v", v, grads.dv)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            plus, minus = arr.copy(), arr.copy()
            plus[idx] += eps
            minus[idx] -= eps
            args = {"q": q, "k": k, "v": v}
            f = []
            for x in (plus, minus):
                args[name] = x
                f.append(loss(args["q"], args["k"], args["v"]))
            num[idx] = (f[0] - f[1]) / (2 * eps)
        # the reference reads float32-rounded inputs, hence the tolerance
        np.testing.assert_allclose(got, num, rtol=1e-3, atol=1e-4, err_msg=name)


def test_fully_masked_rows_give_zero_output_and_minus_inf_lse() -> None:
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 1, 5, 4)).astype(np.float32) for _ in range(3))
    mask = np.zeros((5, 5), dtype=bool)
    mask[3] = True
    attn = Attention(atten_mask=mask)
    fwd = flash_forward(q, k, v, attn, block=(2, 2))
    assert np.all(fwd.out[0, 0, 3] == 0.0)
    assert fwd.lse[0, 0, 3] == -np.inf
    assert np.all(np.isfinite(fwd.lse[0, 0, [0, 1, 2, 4]]))
    grads = flash_backward(q, k, v, fwd.out, np.ones_like(q), fwd.lse, attn, block=(2, 2))
    assert np.all(grads.dq[0, 0, 3] == 0.0)


def test_causal_is_top_left_aligned_and_skips_blocks_above_the_diagonal() -> None:
    rng = np.random.default_rng(2)
    q = rng.standard_normal((1, 1, 3, 4)).astype(np.float32)
    k, v = (rng.standard_normal((1, 1, 6, 4)).astype(np.float32) for _ in range(2))
    out = flash_forward(q, k, v, Attention(causal=True), block=(1, 1)).out
    # query row 0 sees key 0 only
    np.testing.assert_allclose(out[0, 0, 0], v[0, 0, 0], rtol=1e-6)
    assert block_pairs(3, 6, 1, 2, causal=True) == [(0, 0), (1, 0), (2, 0), (2, 1)]


def test_dropout_is_seeded() -> None:
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 1, 8, 4)).astype(np.float32) for _ in range(3))
    a = flash_forward(q, k, v, Attention(keep_prob=0.5, seed=7)).out
    b = flash_forward(q, k, v, Attention(keep_prob=0.5, seed=7)).out
    c = flash_forward(q, k, v, Attention(keep_prob=0.5, seed=8)).out
    assert np.array_equal(a, b)
    assert not np.allclose(a, c)


def test_bf16_rounding_is_nearest_even() -> None:
    x = np.array([1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.5, 0.0], dtype=np.float32)
    assert round_to(x, "bf16").tolist() == [1.0, 1.015625, -2.5, 0.0]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"layout": "NSBD"}, "layout"),
        ({"dtype": "f64"}, "dtype"),
        ({"keep_prob": 0.0}, "keep_prob"),
        ({"atten_mask": np.zeros((3, 3), dtype=bool)}, "atten_mask"),
    ],
)
def test_bad_inputs_name_the_field(kwargs: dict[str, object], field: str) -> None:
    q = np.zeros((1, 1, 2, 4), dtype=np.float32)
    with pytest.raises(Tx8labError, match=field):
        flash_forward(q, q, q, Attention(**kwargs))  # type: ignore[arg-type]


def test_gqa_head_count_must_divide() -> None:
    q = np.zeros((1, 3, 2, 4), dtype=np.float32)
    k = np.zeros((1, 2, 2, 4), dtype=np.float32)
    with pytest.raises(Tx8labError, match="GQA"):
        flash_forward(q, k, k, Attention())


@pytest.mark.parametrize(
    ("shape", "template", "block"),
    [
        # seed 004 §1 at the seed's thresholds (TemplateLimits()): S2 = 1100 > 1024 -> S1S2,
        # outer 2 heads x ceil(20 / 64) = 2 <= 16 cores -> s1.i = 64, capped at S1;
        # s2.i = 1024
        ((1, 2, 20, 1100, 4), None, (20, 1024)),
        # S1 forced: s1.i * align16(1100) <= 128K -> 112, <= align16(20) = 32; 2 heads x
        # ceil(20 / 32) = 2 blocks; 16 rows would give 4, still under 16 cores -> 16
        ((1, 2, 20, 1100, 4), "S1", (16, 1100)),
        # S2 = 200 > 128 -> S1: s1.i <= min(align16(40) = 48, 128K / 208 = 630) -> 48;
        # 2 x 2 heads x ceil(40 / 16) = 12 blocks at 16 rows, under 16 cores -> 16
        ((2, 2, 40, 200, 8), None, (16, 200)),
        # S2 = 9 <= 128, area 16 * 16 <= 64K -> B: whole S1 x S2 blocks
        ((2, 2, 7, 9, 8), None, (7, 9)),
    ],
)
def test_numerics_follow_the_template_tiling(
    shape: tuple[int, int, int, int, int], template: str | None, block: tuple[int, int]
) -> None:
    """The tiled kernels at a template's tiling match the reference.

    The same bits as that block given by hand, within the reference's tolerances.
    """
    b, n, s1, s2, d = shape
    rng = np.random.default_rng(s1 * s2)
    q = rng.standard_normal((b, n, s1, d)).astype(np.float32)
    k, v = (rng.standard_normal((b, n, s2, d)).astype(np.float32) for _ in range(2))
    dout = rng.standard_normal(q.shape).astype(np.float32)
    for dtype in DTYPE_CHOICES:
        attn = Attention(causal=True, dtype=dtype)
        fwd = flash_forward(q, k, v, attn, template=template)
        by_hand = flash_forward(q, k, v, attn, block=block)
        assert np.array_equal(fwd.out, by_hand.out)
        assert np.array_equal(fwd.lse, by_hand.lse)
        ref = reference_forward(q, k, v, attn)
        _close(fwd.out, ref.out, dtype, "out")
        # the FAG template (G = 1, B*N2 <= 16): s1s2_bn2gs1s2 (G*S1*S2 >= 8192) takes
        # 128 x 128 blocks, the small ones (G*S1*S2 < 8192) whole S1 x S2
        fag_block = (min(128, s1), min(128, s2)) if s1 * s2 >= 8192 else (s1, s2)
        grads = flash_backward(q, k, v, fwd.out, dout, fwd.lse, attn)
        hand = flash_backward(q, k, v, fwd.out, dout, fwd.lse, attn, block=fag_block)
        want = reference_backward(q, k, v, dout, attn)
        mag = float(np.abs(dout).max() * np.abs(v).max() * max(np.abs(q).max(), np.abs(k).max()))
        for name in ("dq", "dk", "dv"):
            assert np.array_equal(getattr(grads, name), getattr(hand, name))
            _close(getattr(grads, name), getattr(want, name), dtype, name, mag)
