"""FlashAttention numerics: tiled forward (online softmax) and backward, and a naive reference.

Spec: seed 004 (FlashAttentionScore / FlashAttentionScoreGrad inputs: B, N2, G, S1, S2,
D axes, ``atten_mask``, ``real_shift`` (pse), ``drop_mask``; layouts BSND / BNSD), and the
FlashAttention-2 algorithm (``shared/reference/hw-fa-fusion.md`` §3.1: unnormalised
accumulator, one final division, the logsumexp saved for the backward pass).

The forward pass walks (S1 block i, S2 block j) pairs exactly as the tile model schedules
them (:mod:`.timeline`): for each row block it keeps the running max ``m`` and sum ``l``
and rescales the accumulator by ``exp(m_old - m_new)``. The backward pass recomputes
``P = exp(S - lse)`` per block from the saved logsumexp and accumulates dQ, dK, dV.
Loops run over blocks only; B and N are vectorised.

Readings chosen where the seed is vague:

- ``atten_mask`` follows Ascend: ``True`` (1) means *masked out*. It broadcasts to
  (B, N1, S1, S2). ``causal`` masks key ``j > i`` (top-left aligned, also when S1 != S2);
  block pairs fully above the diagonal are skipped, as a kernel does.
- ``pse`` (real_shift) is added to the *scaled* score: ``S = scale * Q K^T + pse``.
- A fully masked row gives output 0, logsumexp ``-inf`` and zero gradients (no NaN).
- Dropout: ``keep_prob`` with a mask drawn from ``numpy.random.default_rng(seed)`` over the
  whole (B, N1, S1, S2) score (:func:`dropout_mask`); kept entries are scaled by
  ``1 / keep_prob``. The logsumexp is that of the undropped softmax.
- GQA: N1 = G * N2; query head ``n`` reads key/value head ``n // G``.
- dtype emulation (``"bf16"``/``"f16"``): Q, K, V (and dO) are rounded to the dtype, both
  matmuls accumulate in float32 (the NE's fp32 psum), P is rounded to the dtype before
  the P·V product (the NE takes 16-bit inputs), softmax statistics stay float32 (the
  CGRA's fp32 vector math, seed 004 §2.1), and outputs are rounded to the dtype.
  ``"f32"`` keeps everything in float32. The reference works in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from tx8lab.errors import Tx8labError
from tx8lab.kernels.flash_attention.templates import (
    TemplateLimits,
    backward_template,
    forward_template,
)

Layout = Literal["BSND", "BNSD"]
DType = Literal["f32", "bf16", "f16"]
F = NDArray[np.floating]

LAYOUTS: tuple[str, ...] = ("BSND", "BNSD")
DTYPES: tuple[str, ...] = ("f32", "bf16", "f16")


@dataclass(frozen=True)
class Attention:
    """What the kernel computes besides Q, K, V: masks, bias, dropout, scale, layout."""

    layout: Layout = "BNSD"
    causal: bool = False
    atten_mask: NDArray[np.bool_] | None = None
    """Broadcastable to (B, N1, S1, S2); True = masked out."""
    pse: F | None = None
    """real_shift, broadcastable to (B, N1, S1, S2); added to the scaled score."""
    scale: float | None = None
    """Default ``1 / sqrt(D)``."""
    keep_prob: float = 1.0
    seed: int = 0
    dtype: DType = "f32"


@dataclass(frozen=True)
class ForwardResult:
    """Output in the input layout and the logsumexp (B, N1, S1) (float32, ``-inf`` if masked)."""

    out: F
    lse: F


@dataclass(frozen=True)
class GradResult:
    """dQ, dK, dV in the input layout."""

    dq: F
    dk: F
    dv: F


# ------------------------------------------------------------------ dtype emulation


def round_to(x: NDArray[np.floating], dtype: str) -> NDArray[np.float32]:
    """``x`` rounded to ``dtype`` (nearest even) and returned as float32.

    Examples:
        >>> float(round_to(np.array([1.0 + 2**-9]), "bf16")[0])  # 8 mantissa bits
        1.0
        >>> float(round_to(np.array([1.0 + 2**-9]), "f16")[0])
        1.001953125
    """
    x32 = np.asarray(x, dtype=np.float32)
    if dtype == "f32":
        return x32
    if dtype == "f16":
        return x32.astype(np.float16).astype(np.float32)
    if dtype == "bf16":
        bits = x32.view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        out = rounded.astype(np.uint32).view(np.float32)
        return np.where(np.isnan(x32), x32, out).astype(np.float32)
    raise Tx8labError(f"FlashAttention dtype must be one of {DTYPES}, got {dtype!r}")


# ------------------------------------------------------------------ shapes and masks


def _to_bnsd(x: F, layout: str, name: str) -> F:
    if layout not in LAYOUTS:
        raise Tx8labError(f"FlashAttention layout must be one of {LAYOUTS}, got {layout!r}")
    if np.ndim(x) != 4:
        raise Tx8labError(
            f"FlashAttention input {name} must be 4-D ({layout}), got shape {np.shape(x)}"
        )
    return np.swapaxes(x, 1, 2) if layout == "BSND" else np.asarray(x)


def _from_bnsd(x: F, layout: str) -> F:
    return np.swapaxes(x, 1, 2) if layout == "BSND" else x


def _check(q: F, k: F, v: F, attn: Attention) -> tuple[int, int, int, int, int, int]:
    if attn.dtype not in DTYPES:
        raise Tx8labError(f"FlashAttention dtype must be one of {DTYPES}, got {attn.dtype!r}")
    qb, kb, vb = (_to_bnsd(t, attn.layout, n) for t, n in ((q, "q"), (k, "k"), (v, "v")))
    b, n1, s1, d = qb.shape
    if kb.shape != vb.shape:
        raise Tx8labError(f"FlashAttention: key shape {kb.shape} != value shape {vb.shape}")
    b2, n2, s2, d2 = kb.shape
    if b2 != b or d2 != d:
        raise Tx8labError(
            f"FlashAttention: query {qb.shape} and key {kb.shape} (BNSD) must agree on B and D"
        )
    if n2 == 0 or n1 % n2:
        raise Tx8labError(
            f"FlashAttention GQA: query heads N1={n1} must be a multiple of key heads N2={n2}"
        )
    if not 0.0 < attn.keep_prob <= 1.0:
        raise Tx8labError(f"FlashAttention keep_prob must be in (0, 1], got {attn.keep_prob}")
    return b, n1, n2, s1, s2, d


def dropout_mask(shape: tuple[int, int, int, int], keep_prob: float, seed: int) -> F:
    """The seeded keep mask scaled by ``1 / keep_prob`` (float32), shape (B, N1, S1, S2).

    Examples:
        >>> m = dropout_mask((1, 1, 2, 3), 0.5, seed=3)
        >>> sorted(set(m.ravel().tolist())) in ([0.0, 2.0], [0.0], [2.0])
        True
    """
    if keep_prob >= 1.0:
        return np.ones(shape, dtype=np.float32)
    keep = np.random.default_rng(seed).random(shape) < keep_prob
    return (keep / np.float32(keep_prob)).astype(np.float32)


def full_mask(attn: Attention, shape: tuple[int, int, int, int]) -> NDArray[np.bool_]:
    """The combined mask (causal and ``atten_mask``) at full (B, N1, S1, S2) shape."""
    s1, s2 = shape[2], shape[3]
    mask = np.zeros(shape, dtype=bool)
    if attn.causal:
        mask |= np.triu(np.ones((s1, s2), dtype=bool), k=1)[None, None]
    if attn.atten_mask is not None:
        try:
            mask |= np.broadcast_to(np.asarray(attn.atten_mask, dtype=bool), shape)
        except ValueError:
            raise Tx8labError(
                f"FlashAttention atten_mask shape {np.shape(attn.atten_mask)} does not "
                f"broadcast to (B, N1, S1, S2) = {shape}"
            ) from None
    return mask


def _pse(attn: Attention, shape: tuple[int, int, int, int]) -> F | None:
    if attn.pse is None:
        return None
    try:
        return np.broadcast_to(np.asarray(attn.pse, dtype=np.float32), shape)
    except ValueError:
        raise Tx8labError(
            f"FlashAttention pse shape {np.shape(attn.pse)} does not broadcast to "
            f"(B, N1, S1, S2) = {shape}"
        ) from None


def _scale(attn: Attention, d: int) -> float:
    return float(attn.scale) if attn.scale is not None else 1.0 / math.sqrt(d)


# ------------------------------------------------------------------ naive reference


def reference_forward(q: F, k: F, v: F, attn: Attention) -> ForwardResult:
    """Softmax attention over the full score in float64 (inputs rounded to ``attn.dtype``)."""
    b, n1, n2, s1, s2, d = _check(q, k, v, attn)
    g = n1 // n2
    qb, kb, vb = (
        round_to(_to_bnsd(t, attn.layout, "x"), attn.dtype).astype(np.float64) for t in (q, k, v)
    )
    kb, vb = np.repeat(kb, g, axis=1), np.repeat(vb, g, axis=1)
    shape = (b, n1, s1, s2)
    s = np.einsum("bnid,bnjd->bnij", qb, kb) * _scale(attn, d)
    pse = _pse(attn, shape)
    if pse is not None:
        s = s + pse
    mask = full_mask(attn, shape)
    s = np.where(mask, -np.inf, s)
    m = s.max(axis=-1, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m_safe)
    total = e.sum(axis=-1, keepdims=True)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    drop = dropout_mask(shape, attn.keep_prob, attn.seed).astype(np.float64)
    out = np.einsum("bnij,bnjd->bnid", p * drop, vb)
    with np.errstate(divide="ignore"):
        lse = np.where(total[..., 0] > 0, m_safe[..., 0] + np.log(total[..., 0]), -np.inf)
    return ForwardResult(_from_bnsd(out, attn.layout), lse)


def reference_backward(q: F, k: F, v: F, dout: F, attn: Attention) -> GradResult:
    """Analytic gradients of :func:`reference_forward` in float64 (no autograd).

    With ``P = softmax(S)``, ``Pd = P * drop``, ``O = Pd V``: ``dV = Pd^T dO``,
    ``dP = (dO V^T) * drop``, ``dS = P * (dP - rowsum(dO * O))``, ``dQ = scale dS K``,
    ``dK = scale dS^T Q``; GQA sums dK, dV over the G query heads of a key head.
    """
    b, n1, n2, s1, s2, d = _check(q, k, v, attn)
    g = n1 // n2
    qb, kb, vb, dob = (
        round_to(_to_bnsd(t, attn.layout, "x"), attn.dtype).astype(np.float64)
        for t in (q, k, v, dout)
    )
    kb, vb = np.repeat(kb, g, axis=1), np.repeat(vb, g, axis=1)
    shape = (b, n1, s1, s2)
    scale = _scale(attn, d)
    s = np.einsum("bnid,bnjd->bnij", qb, kb) * scale
    pse = _pse(attn, shape)
    if pse is not None:
        s = s + pse
    s = np.where(full_mask(attn, shape), -np.inf, s)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    drop = dropout_mask(shape, attn.keep_prob, attn.seed).astype(np.float64)
    out = np.einsum("bnij,bnjd->bnid", p * drop, vb)
    dv = np.einsum("bnij,bnid->bnjd", p * drop, dob)
    dp = np.einsum("bnid,bnjd->bnij", dob, vb) * drop
    ds = p * (dp - (dob * out).sum(axis=-1, keepdims=True))
    dq = np.einsum("bnij,bnjd->bnid", ds, kb) * scale
    dk = np.einsum("bnij,bnid->bnjd", ds, qb) * scale
    dk = dk.reshape(b, n2, g, s2, d).sum(axis=2)
    dv = dv.reshape(b, n2, g, s2, d).sum(axis=2)
    lay = attn.layout
    return GradResult(_from_bnsd(dq, lay), _from_bnsd(dk, lay), _from_bnsd(dv, lay))


# ------------------------------------------------------------------ tiled kernels


def block_pairs(s1: int, s2: int, br: int, bc: int, causal: bool) -> list[tuple[int, int]]:
    """(i, j) block pairs a kernel visits: all of them, or those not above the diagonal.

    Examples:
        >>> block_pairs(4, 4, 2, 2, causal=True)
        [(0, 0), (1, 0), (1, 1)]
        >>> len(block_pairs(5, 3, 2, 2, causal=False))
        6
    """
    if br <= 0 or bc <= 0:
        raise Tx8labError(f"FlashAttention block sizes must be >= 1, got ({br}, {bc})")
    pairs = []
    for i in range(-(-s1 // br)):
        last_row = min(s1, (i + 1) * br) - 1
        for j in range(-(-s2 // bc)):
            if causal and j * bc > last_row:
                break
            pairs.append((i, j))
    return pairs


def flash_forward(
    q: F,
    k: F,
    v: F,
    attn: Attention,
    *,
    block: tuple[int, int] | None = None,
    template: str | None = None,
    limits: TemplateLimits | None = None,
) -> ForwardResult:
    """Tiled forward with online softmax (running max ``m``, running sum ``l``).

    ``block`` (rows of Q, columns of K) defaults to the C block of the FA template seed
    004 §1 chooses for the shape (``template`` overrides the choice; ``limits`` the
    thresholds, default the seed's): S1S2 ``(s1.i, 1024)``, S1 ``(s1.i, S2)``, B whole.
    """
    b, n1, n2, s1, s2, d = _check(q, k, v, attn)
    g = n1 // n2
    if block is None:
        block = forward_template(b, n2, g, s1, s2, limits, template).block
    br, bc = block
    dt = attn.dtype
    qb, kb, vb = (round_to(_to_bnsd(t, attn.layout, "x"), dt) for t in (q, k, v))
    kb, vb = np.repeat(kb, g, axis=1), np.repeat(vb, g, axis=1)
    shape = (b, n1, s1, s2)
    scale = np.float32(_scale(attn, d))
    mask = full_mask(attn, shape)
    pse = _pse(attn, shape)
    drop = dropout_mask(shape, attn.keep_prob, attn.seed)
    out = np.zeros((b, n1, s1, d), dtype=np.float32)
    lse = np.full((b, n1, s1), -np.inf, dtype=np.float32)
    pairs = block_pairs(s1, s2, br, bc, attn.causal)
    for i in sorted({i for i, _ in pairs}):
        rows = slice(i * br, min(s1, (i + 1) * br))
        m = np.full((b, n1, rows.stop - rows.start), -np.inf, dtype=np.float32)
        ell = np.zeros_like(m)
        acc = np.zeros((b, n1, rows.stop - rows.start, d), dtype=np.float32)
        for _, j in (p for p in pairs if p[0] == i):
            cols = slice(j * bc, min(s2, (j + 1) * bc))
            s = np.einsum("bnid,bnjd->bnij", qb[:, :, rows], kb[:, :, cols]) * scale
            if pse is not None:
                s = s + pse[:, :, rows, cols]
            s = np.where(mask[:, :, rows, cols], np.float32(-np.inf), s)
            m_new = np.maximum(m, s.max(axis=-1))
            m_safe = np.where(np.isfinite(m_new), m_new, np.float32(0.0))
            alpha = np.where(np.isfinite(m), np.exp(m - m_safe), np.float32(0.0))
            p = np.exp(s - m_safe[..., None]).astype(np.float32)
            ell = ell * alpha + p.sum(axis=-1)
            pv = round_to(p * drop[:, :, rows, cols], dt)
            acc = acc * alpha[..., None] + np.einsum("bnij,bnjd->bnid", pv, vb[:, :, cols])
            m = m_new
        safe = np.where(ell > 0, ell, np.float32(1.0))
        out[:, :, rows] = np.where(ell[..., None] > 0, acc / safe[..., None], np.float32(0.0))
        with np.errstate(divide="ignore"):
            lse[:, :, rows] = np.where(ell > 0, m + np.log(safe), -np.inf)
    return ForwardResult(_from_bnsd(round_to(out, dt), attn.layout), lse)


def flash_backward(
    q: F,
    k: F,
    v: F,
    out: F,
    dout: F,
    lse: F,
    attn: Attention,
    *,
    block: tuple[int, int] | None = None,
    template: str | None = None,
    cores: int = 16,
) -> GradResult:
    """Tiled backward: P recomputed per block from the saved logsumexp ``lse`` (B, N1, S1).

    ``block`` defaults to the C block of the FAG template seed 004 §1 chooses by priority
    (``template`` overrides it; ``cores`` for ``B * N2 > cores``): 128 x 128 for the S1S2
    templates, whole S1 x S2 for the small ones.
    """
    b, n1, n2, s1, s2, d = _check(q, k, v, attn)
    g = n1 // n2
    if block is None:
        block = backward_template(b, n2, g, s1, s2, cores, template).block
    br, bc = block
    dt = attn.dtype
    qb, kb, vb, ob, dob = (
        round_to(_to_bnsd(t, attn.layout, "x"), dt) for t in (q, k, v, out, dout)
    )
    kb, vb = np.repeat(kb, g, axis=1), np.repeat(vb, g, axis=1)
    shape = (b, n1, s1, s2)
    if np.shape(lse) != (b, n1, s1):
        raise Tx8labError(
            f"FlashAttention backward: lse shape {np.shape(lse)} must be (B, N1, S1) = "
            f"{(b, n1, s1)}"
        )
    scale = np.float32(_scale(attn, d))
    mask = full_mask(attn, shape)
    pse = _pse(attn, shape)
    drop = dropout_mask(shape, attn.keep_prob, attn.seed)
    lse32 = np.asarray(lse, dtype=np.float32)
    lse_safe = np.where(np.isfinite(lse32), lse32, np.float32(np.inf))  # exp(-inf) = 0
    delta = (dob * ob).sum(axis=-1)  # rowsum(dO * O), (B, N1, S1)
    dq = np.zeros((b, n1, s1, d), dtype=np.float32)
    dk = np.zeros((b, n1, s2, d), dtype=np.float32)
    dv = np.zeros((b, n1, s2, d), dtype=np.float32)
    for i, j in block_pairs(s1, s2, br, bc, attn.causal):
        rows = slice(i * br, min(s1, (i + 1) * br))
        cols = slice(j * bc, min(s2, (j + 1) * bc))
        s = np.einsum("bnid,bnjd->bnij", qb[:, :, rows], kb[:, :, cols]) * scale
        if pse is not None:
            s = s + pse[:, :, rows, cols]
        s = np.where(mask[:, :, rows, cols], np.float32(-np.inf), s)
        p = np.exp(s - lse_safe[:, :, rows, None]).astype(np.float32)
        dmask = drop[:, :, rows, cols]
        dv[:, :, cols] += np.einsum("bnij,bnid->bnjd", round_to(p * dmask, dt), dob[:, :, rows])
        dp = np.einsum("bnid,bnjd->bnij", dob[:, :, rows], vb[:, :, cols]) * dmask
        ds = round_to(p * (dp - delta[:, :, rows, None]), dt)
        dq[:, :, rows] += np.einsum("bnij,bnjd->bnid", ds, kb[:, :, cols]) * scale
        dk[:, :, cols] += np.einsum("bnij,bnid->bnjd", ds, qb[:, :, rows]) * scale
    dk = dk.reshape(b, n2, g, s2, d).sum(axis=2)
    dv = dv.reshape(b, n2, g, s2, d).sum(axis=2)
    lay = attn.layout
    return GradResult(
        _from_bnsd(round_to(dq, dt), lay),
        _from_bnsd(round_to(dk, dt), lay),
        _from_bnsd(round_to(dv, dt), lay),
    )


__all__ = [
    "DTYPES",
    "LAYOUTS",
    "Attention",
    "DType",
    "ForwardResult",
    "GradResult",
    "Layout",
    "block_pairs",
    "dropout_mask",
    "flash_backward",
    "flash_forward",
    "full_mask",
    "reference_backward",
    "reference_forward",
    "round_to",
]
