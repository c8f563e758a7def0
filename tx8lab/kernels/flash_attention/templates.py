"""FlashAttention templates (FA and FAG) and the tiling key, as seed 004 §1 and §2.2 define them.

Forward (FA) templates, tried in the seed's order (a smaller number wins; the CANN
registry numbers 96/97/98 are kept as ``priority``):

1. **S1S2** - condition ``S2 > 1024``; UB splits S1 and S2: ``s1.i = 64``, or 128 when the
   outer ``B*N2*G*ceil(S1/64)`` exceeds the vector core count; ``s2.i = 1024``.
2. **S1** - condition ``S2 > 128`` or ``align16(S1) * align16(S2) > 64*1024``; UB splits S1
   with ``s1.i * align16(S2) <= 128*1024``.
3. **B** - every other shape; ``B.i * N2 * G * align16(S1) * align16(S2) <= 128*1024``.

Backward (FAG) templates by priority (smaller first): ``bn2gs1s2_b`` 10000
(``N2*G*S1*S2 < 64*128``), ``n2gs1s2_bn1`` 11000 (``G*S1*S2 < 64*128``), ``s1s2_bn2``
15000 (``B*N2 > cores``), ``s1s2_bn2gs1s2`` 16000 (always; the fallback).

Tiling key: ``10^19 + sum(field_k * 10^k)``, one decimal digit per field from the low
digit, as ``GET_TILINGKEY``/``RecursiveSum`` compute it; :func:`decode_tiling_key` inverts it.

Readings chosen where the seed is vague:

- Field order: the seed's prose lists ``... Format, Sparse, BIG_DOUBLE_BUFFER,
  tilingKeyBmm1Format ...`` and a ``tilingKeyBmm2Source`` digit, but its code passes
  ``(UB0, UB1, Block, implMode, DType, Layout, Bmm1Format, Sparse, BIG_DOUBLE_BUFFER,
  hasDropOut, hasAttenMask, hasPse, enableL1Reuse)`` and no Bmm2Source. The code is what
  produces a key, so :data:`KEY_FIELDS` follows the code (13 digits).
- Enum values follow CANN's ``tiling_type.h`` (hw-fa-fusion §3.2): AxisEnum B=0, N2=1,
  G=2, S1=3, S2=4, D=5, NONE=9; DType FP16=0, FP32=1, BF16=2, FP16_PRECISION=3; Layout
  BSND=0, SBND=1, BNSD=2, TND=3; Sparse ALL=0, NONE=1, ANY=2, CAUSAL=3, BAND=4, PREFIX=5;
  BIG_DOUBLE_BUFFER=2. Not given there (assumptions): ImplMode AA_HIGH_PRECISION=0,
  AA_HIGH_PERFORMANCE=1, AA_INVALID_LINE_HIGH_PRECISION=2; performance NONE=0,
  BIG_BUFFER=1; CubeFormat ND=0, NZ=1.
- Key axes per template: S1S2 -> (S1, S2, NONE) as the seed's code; S1 -> (S1, NONE, NONE);
  B -> (B, NONE, B). Block NONE means the fused outer axes are split over the cores.
- The seed's vector core count is Ascend's (48 AIV); on TX8 the cores are the chip's
  tiles (``hw.tile_count``, 16). :class:`TemplateLimits` defaults are the seed's numbers
  (UB thresholds 64K / 128K elements); :func:`tx8_limits` adapts them to a TX8 tile: the
  thresholds scale with the usable SPM over the Ascend UB (192 KiB, hw-fa-fusion §3.2),
  rounded down to a power of two (x8 on TX81: 512K / 1M elements). The S1S2 condition
  (S2 > 1024) and its 1024-wide S2 block stay: they come from the C block width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

TILINGKEYOFFSET = 10**19

AXIS = {"B": 0, "N2": 1, "G": 2, "S1": 3, "S2": 4, "D": 5, "NONE": 9}
DTYPE = {"FP16": 0, "FP32": 1, "BF16": 2, "FP16_PRECISION": 3}
LAYOUT = {"BSND": 0, "SBND": 1, "BNSD": 2, "TND": 3}
SPARSE = {"ALL": 0, "NONE": 1, "ANY": 2, "CAUSAL": 3, "BAND": 4, "PREFIX": 5}
PERFORMANCE = {"NONE": 0, "BIG_BUFFER": 1, "BIG_DOUBLE_BUFFER": 2}
CUBE_FORMAT = {"ND": 0, "NZ": 1}
IMPL_MODE = {
    "AA_HIGH_PRECISION": 0,
    "AA_HIGH_PERFORMANCE": 1,
    "AA_INVALID_LINE_HIGH_PRECISION": 2,
}
BOOL = {"false": 0, "true": 1}

#: Key fields from the low decimal digit up, with the enum each one uses (seed's code order).
KEY_FIELDS: tuple[tuple[str, dict[str, int]], ...] = (
    ("ub0", AXIS),
    ("ub1", AXIS),
    ("block", AXIS),
    ("impl_mode", IMPL_MODE),
    ("dtype", DTYPE),
    ("layout", LAYOUT),
    ("bmm1_format", CUBE_FORMAT),
    ("sparse", SPARSE),
    ("performance", PERFORMANCE),
    ("has_dropout", BOOL),
    ("has_atten_mask", BOOL),
    ("has_pse", BOOL),
    ("enable_l1_reuse", BOOL),
)


@dataclass(frozen=True)
class TilingKey:
    """The named fields of a tiling key (enum names, as in the seed)."""

    ub0: str = "S1"
    ub1: str = "S2"
    block: str = "NONE"
    impl_mode: str = "AA_HIGH_PERFORMANCE"
    dtype: str = "BF16"
    layout: str = "BNSD"
    bmm1_format: str = "ND"
    sparse: str = "ANY"
    performance: str = "BIG_DOUBLE_BUFFER"
    has_dropout: str = "false"
    has_atten_mask: str = "false"
    has_pse: str = "false"
    enable_l1_reuse: str = "false"


def encode_tiling_key(key: TilingKey) -> int:
    """``GET_TILINGKEY``: ``10^19 + RecursiveSum(fields)``, the first field in the low digit.

    Examples:
        >>> encode_tiling_key(TilingKey())
        10000000000220221943
    """
    total = 0
    for digit, (name, enum) in enumerate(KEY_FIELDS):
        value = getattr(key, name)
        if value not in enum:
            known = sorted(enum, key=lambda k: enum[k])
            raise Tx8labError(f"tiling key field {name!r}: {value!r} is not one of {known}")
        total += enum[value] * 10**digit
    return TILINGKEYOFFSET + total


def decode_tiling_key(value: int) -> TilingKey:
    """The fields of a tiling key; inverse of :func:`encode_tiling_key`.

    Examples:
        >>> decode_tiling_key(10000000000220221943).ub0
        'S1'
    """
    rest = int(value) - TILINGKEYOFFSET
    if rest < 0 or rest >= 10 ** len(KEY_FIELDS):
        raise Tx8labError(
            f"tiling key {value} is not 10^19 plus {len(KEY_FIELDS)} decimal digits: "
            "pass a key made by GET_TILINGKEY"
        )
    fields: dict[str, str] = {}
    for name, enum in KEY_FIELDS:
        digit = rest % 10
        rest //= 10
        names = [k for k, v in enum.items() if v == digit]
        if not names:
            raise Tx8labError(f"tiling key {value}: digit {digit} of field {name!r} is unknown")
        fields[name] = names[0]
    return TilingKey(**fields)


# ------------------------------------------------------------------ templates


@dataclass(frozen=True)
class TemplateLimits:
    """The seed's UB thresholds (elements) and the number of vector cores."""

    cores: int = 16
    """Vector cores the outer axes are split over; on TX8 the chip's tiles."""
    s1s2_min_s2: int = 1024
    s1_min_s2: int = 128
    s1_area: int = 64 * 1024
    ub_elems: int = 128 * 1024
    s1s2_s1_inner: int = 64
    s1s2_s2_inner: int = 1024


#: The Ascend UB the seed's thresholds were sized for (hw-fa-fusion §3.2: "UB 192 KiB").
SEED_UB_BYTES = 192 * 1024


def tx8_limits(hw: ChipConfig) -> TemplateLimits:
    """The seed's thresholds scaled to a TX8 tile's usable SPM, cores = the chip's tiles.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> lim = tx8_limits(TX81)
        >>> lim.cores, lim.s1_area // 1024, lim.ub_elems // 1024
        (16, 512, 1024)
    """
    ratio = hw.tile.spm_usable_bytes / SEED_UB_BYTES
    scale = 2 ** max(0, math.floor(math.log2(ratio))) if ratio >= 1 else 1
    seed = TemplateLimits()
    return replace(
        seed, cores=hw.tile_count, s1_area=seed.s1_area * scale, ub_elems=seed.ub_elems * scale
    )


@dataclass(frozen=True)
class Template:
    """One template: its name, priority, condition, whether it matched, and its UB split."""

    name: str
    priority: int
    condition: str
    matched: bool
    ub_axes: tuple[str, str]
    block_axis: str
    inner: dict[str, int]
    """Inner (UB) block sizes per split axis."""


def _a16(x: int) -> int:
    return -(-x // 16) * 16


def forward_templates(
    b: int, n2: int, g: int, s1: int, s2: int, limits: TemplateLimits | None = None
) -> list[Template]:
    """Every FA template in priority order with whether its condition holds for the shape.

    Examples:
        >>> [t.name for t in forward_templates(1, 28, 1, 2048, 2048) if t.matched]
        ['S1S2', 'S1', 'B']
    """
    lim = limits or TemplateLimits()
    for name, value in (("B", b), ("N2", n2), ("G", g), ("S1", s1), ("S2", s2)):
        if value < 1:
            raise Tx8labError(f"FlashAttention template: axis {name} must be >= 1, got {value}")
    outer = b * n2 * g * -(-s1 // lim.s1s2_s1_inner)
    s1i = lim.s1s2_s1_inner if outer <= lim.cores else 2 * lim.s1s2_s1_inner
    s1s2 = Template(
        "S1S2",
        96,
        f"S2 > {lim.s1s2_min_s2}",
        s2 > lim.s1s2_min_s2,
        ("S1", "S2"),
        "NONE",
        {"S1": min(s1i, s1), "S2": min(lim.s1s2_s2_inner, s2)},
    )
    area = _a16(s1) * _a16(s2)
    s1_inner = max(1, min(_a16(s1), lim.ub_elems // _a16(s2)))
    if s1_inner >= 16:
        s1_inner -= s1_inner % 16
    s1t = Template(
        "S1",
        97,
        f"S2 > {lim.s1_min_s2} or align16(S1) * align16(S2) > {lim.s1_area}",
        s2 > lim.s1_min_s2 or area > lim.s1_area,
        ("S1", "NONE"),
        "NONE",
        {"S1": min(s1_inner, s1)},
    )
    b_inner = max(1, min(b, lim.ub_elems // (n2 * g * area)))
    bt = Template("B", 98, "every other shape", True, ("B", "NONE"), "B", {"B": b_inner})
    return [s1s2, s1t, bt]


def choose_forward_template(
    b: int, n2: int, g: int, s1: int, s2: int, limits: TemplateLimits | None = None
) -> Template:
    """The first matching FA template (seed order S1S2, S1, B).

    Examples:
        >>> choose_forward_template(1, 28, 1, 2048, 2048).name
        'S1S2'
        >>> choose_forward_template(2, 2, 1, 300, 128).name  # 304 * 128 <= 64K
        'B'
        >>> choose_forward_template(2, 2, 1, 600, 128).name  # 608*128 > 64K
        'S1'
    """
    return next(t for t in forward_templates(b, n2, g, s1, s2, limits) if t.matched)


BackwardName = Literal["bn2gs1s2_b", "n2gs1s2_bn1", "s1s2_bn2", "s1s2_bn2gs1s2"]


@dataclass(frozen=True)
class BackwardTemplate:
    """One FAG template with its priority and whether its condition holds."""

    name: BackwardName
    priority: int
    condition: str
    matched: bool


def backward_templates(
    b: int, n2: int, g: int, s1: int, s2: int, cores: int = 16
) -> list[BackwardTemplate]:
    """Every FAG template sorted by priority (smaller first) with its condition's value."""
    small = 64 * 128
    rows = [
        BackwardTemplate(
            "bn2gs1s2_b", 10000, "N2 * G * S1 * S2 < 64 * 128", n2 * g * s1 * s2 < small
        ),
        BackwardTemplate("n2gs1s2_bn1", 11000, "G * S1 * S2 < 64 * 128", g * s1 * s2 < small),
        BackwardTemplate("s1s2_bn2", 15000, f"B * N2 > cores ({cores})", b * n2 > cores),
        BackwardTemplate("s1s2_bn2gs1s2", 16000, "none (fallback)", True),
    ]
    return sorted(rows, key=lambda t: t.priority)


def choose_backward_template(
    b: int, n2: int, g: int, s1: int, s2: int, cores: int = 16
) -> BackwardTemplate:
    """The matching FAG template with the smallest priority number.

    Examples:
        >>> choose_backward_template(1, 8, 1, 2048, 2048).name
        's1s2_bn2gs1s2'
        >>> choose_backward_template(4, 8, 1, 2048, 2048).name
        's1s2_bn2'
        >>> choose_backward_template(8, 2, 1, 32, 64).name
        'bn2gs1s2_b'
    """
    return next(t for t in backward_templates(b, n2, g, s1, s2, cores) if t.matched)


def forward_tiling_key(
    template: Template,
    *,
    dtype: str = "bf16",
    layout: str = "BNSD",
    causal: bool = False,
    has_dropout: bool = False,
    has_atten_mask: bool = False,
    has_pse: bool = False,
    double_buffer: bool = True,
) -> TilingKey:
    """The tiling key fields for a chosen forward template and the kernel's options."""
    dt = {"bf16": "BF16", "f16": "FP16", "f32": "FP32"}.get(dtype)
    if dt is None:
        raise Tx8labError(f"tiling key: dtype must be bf16, f16 or f32, got {dtype!r}")
    return TilingKey(
        ub0=template.ub_axes[0],
        ub1=template.ub_axes[1],
        block=template.block_axis,
        dtype=dt,
        layout=layout,
        sparse="CAUSAL" if causal else "ANY",
        performance="BIG_DOUBLE_BUFFER" if double_buffer else "NONE",
        has_dropout=str(has_dropout).lower(),
        has_atten_mask=str(has_atten_mask or causal).lower(),
        has_pse=str(has_pse).lower(),
    )


__all__ = [
    "AXIS",
    "KEY_FIELDS",
    "SEED_UB_BYTES",
    "TILINGKEYOFFSET",
    "BackwardTemplate",
    "Template",
    "TemplateLimits",
    "TilingKey",
    "backward_templates",
    "choose_backward_template",
    "choose_forward_template",
    "decode_tiling_key",
    "encode_tiling_key",
    "forward_templates",
    "forward_tiling_key",
    "tx8_limits",
]
