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

Each template carries the tiling it names (seed 004 §1: "每一类模板都有其独特的UB及Block
切分轴"): its C block (rows of Q x columns of K one UB pass holds), the heads one pass
holds, and the core split of the axes left outside the UB. The models
(:mod:`.timeline`, :mod:`.backward`) take the tiling from the template unless a knob
gives it; :func:`forward_template` / :func:`backward_template` choose by the seed's rule
or take a named template (an override).

- **S1S2**: block ``(s1.i, s2.i)``; the cores split the fused ``B*N2*G*S1o`` (row-block
  units in contiguous ranges, model split ``fused``); the S2 blocks are the inner loop
  (online softmax).
- **S1**: block ``(s1.i, S2)``: one key block per row block (no rescale); cores as S1S2.
- **B**: block ``(S1, S2)`` and ``B.i*N2*G`` heads per pass (one batched command per
  step); the cores split the ``B/B.i`` passes (``fused``).
- **s1s2_bn2gs1s2**: block 128 x 128; cores split the fused axes (key-block units of
  every head, ``fused``).
- **s1s2_bn2**: block 128 x 128; cores split ``B*N2`` (a KV head's G query heads and all
  their blocks on one tile, model split ``bn2``).
- **n2gs1s2_bn1**: block ``(S1, S2)``, ``n2.i*G`` heads per pass; cores split the passes.
- **bn2gs1s2_b**: block ``(S1, S2)``, ``b.i*N2*G`` heads per pass; cores split the passes.

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
- FAG block sizes: the seed names none; the S1S2 FAG templates take the Cube base block
  128 x 128 (§2.1, "cube的基本块为128 * 128"). The inner counts of the two small FAG
  templates (``b.i``, ``n2.i``) are the largest that keep one pass under the template's
  own bound (``b.i*N2*G*S1*S2 < 64*128``, ``n2.i*G*S1*S2 < 64*128``), at least 1, and
  keep the cores filled as below. The FAG thresholds are the seed's (not scaled to the
  SPM).
- The forward ``B.i`` and ``s1.i`` (S1 template, a multiple of 16): the seed gives
  bounds (``<=``). Each is the largest within its bound that still leaves the cores as
  busy as the smallest inner size would (§1 (a) "将核心的数量用满": the core split takes
  the axes left after the UB split), as the S1S2 template's own rule does (``s1.i``
  128 only when the outer axes exceed the cores). The models shrink them further when a
  pass does not fit the tile's SPM.
- The seed's vector core count is Ascend's (48 AIV); on TX8 the cores are the chip's
  tiles (``hw.tile_count``, 16). :class:`TemplateLimits` defaults are the seed's numbers
  (UB thresholds 64K / 128K elements); :func:`tx8_limits` adapts them to a TX8 tile: the
  thresholds scale with the usable SPM over the Ascend UB (192 KiB, hw-fa-fusion §3.2),
  rounded down to a power of two (x8 on TX81: 512K / 1M elements). The S1S2 condition
  (S2 > 1024) and its 1024-wide S2 block stay: they come from the C block width.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol, TypeVar

from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

TILINGKEYOFFSET = 10**19


class _HasName(Protocol):
    @property
    def name(self) -> str: ...


_T = TypeVar("_T", bound=_HasName)

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


#: Forward templates in the seed's order (the first whose condition holds is chosen).
FORWARD_TEMPLATES: tuple[str, ...] = ("S1S2", "S1", "B")
#: Backward templates by priority (smaller first).
BACKWARD_TEMPLATES: tuple[str, ...] = ("bn2gs1s2_b", "n2gs1s2_bn1", "s1s2_bn2", "s1s2_bn2gs1s2")
#: The Cube base block (seed 004 §2.1): the S1S2 FAG templates' block edge.
CUBE_BASE = 128


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
    block: tuple[int, int] = (1, 1)
    """The C block one UB pass holds: (rows of Q, columns of K)."""
    heads: int = 1
    """Heads one UB pass holds (``B.i * N2 * G`` for B, else 1)."""
    split: str = "fused"
    """How the cores split the axes left outside the UB (the models' split name)."""

    def admits(self, s1: int, s2: int, block: tuple[int, int]) -> bool:
        """Whether a given C block keeps this template's UB axes.

        S1S2 splits both sequence axes (any block); S1 keeps the whole S2 in a block
        (``BC >= S2``); B keeps whole S1 x S2 blocks.
        """
        if self.name == "S1":
            return block[1] >= s2
        if self.name == "B":
            return block[0] >= s1 and block[1] >= s2
        return True


def _a16(x: int) -> int:
    return -(-x // 16) * 16


def _fill_cores(bound: int, units: Callable[[int], int], cores: int) -> int:
    """The largest inner count ``k <= bound`` whose outer ``units(k)`` still fill the cores.

    Seed 004 §1 (a): "将核心的数量用满" - as many cores busy as the smallest inner size
    (``k = 1``) would keep busy, ``min(cores, units(1))``.
    """
    want = min(cores, units(1))
    k = bound
    while k > 1 and units(k) < want:
        k -= 1
    return k


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
    s1s2_inner = {"S1": min(s1i, s1), "S2": min(lim.s1s2_s2_inner, s2)}
    s1s2 = Template(
        "S1S2",
        96,
        f"S2 > {lim.s1s2_min_s2}",
        s2 > lim.s1s2_min_s2,
        ("S1", "S2"),
        "NONE",
        s1s2_inner,
        (s1s2_inner["S1"], s1s2_inner["S2"]),
    )
    area = _a16(s1) * _a16(s2)
    bng = b * n2 * g
    s1_inner = max(1, min(_a16(s1), lim.ub_elems // _a16(s2)))
    if s1_inner >= 16:
        s1_inner -= s1_inner % 16
        s1_inner = 16 * _fill_cores(s1_inner // 16, lambda k: bng * -(-s1 // (16 * k)), lim.cores)
    s1t = Template(
        "S1",
        97,
        f"S2 > {lim.s1_min_s2} or align16(S1) * align16(S2) > {lim.s1_area}",
        s2 > lim.s1_min_s2 or area > lim.s1_area,
        ("S1", "NONE"),
        "NONE",
        {"S1": min(s1_inner, s1)},
        (min(s1_inner, s1), s2),
    )
    b_inner = max(1, min(b, lim.ub_elems // (n2 * g * area)))
    b_inner = _fill_cores(b_inner, lambda k: -(-b // k), lim.cores)
    bt = Template(
        "B", 98, "every other shape", True, ("B", "NONE"), "B", {"B": b_inner},
        (s1, s2), b_inner * n2 * g,
    )  # fmt: skip
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


def named_template(name: str, rows: Sequence[_T], what: str, names: tuple[str, ...]) -> _T:
    """The template called ``name`` among ``rows``, or one error naming the choices."""
    got = next((t for t in rows if t.name == name), None)
    if got is None:
        raise Tx8labError(
            f"{what} template {name!r} is not one of {', '.join(names)} (seed 004 §1); "
            "leave it unset for the seed's choice by shape"
        )
    return got


def forward_template(
    b: int,
    n2: int,
    g: int,
    s1: int,
    s2: int,
    limits: TemplateLimits | None = None,
    name: str | None = None,
) -> Template:
    """The FA template ``name`` (an override) or, for None, the seed's choice by shape.

    Examples:
        >>> forward_template(1, 28, 1, 2048, 2048, name="S1").block  # 128K / 2048 rows
        (64, 2048)
    """
    rows = forward_templates(b, n2, g, s1, s2, limits)
    if name is None:
        return next(t for t in rows if t.matched)
    return named_template(name, rows, "FA", FORWARD_TEMPLATES)


BackwardName = Literal["bn2gs1s2_b", "n2gs1s2_bn1", "s1s2_bn2", "s1s2_bn2gs1s2"]


@dataclass(frozen=True)
class BackwardTemplate:
    """One FAG template with its priority, whether its condition holds, and its tiling."""

    name: BackwardName
    priority: int
    condition: str
    matched: bool
    block: tuple[int, int] = (1, 1)
    """The C block of one UB pass: (rows of Q, columns of K)."""
    heads: int = 1
    """Heads one UB pass holds (``b.i*N2*G`` or ``n2.i*G``; 1 for the S1S2 templates)."""
    split: str = "fused"
    """How the cores split the axes left outside the UB (the models' split name)."""

    def admits(self, s1: int, s2: int, block: tuple[int, int]) -> bool:
        """Whether a given C block keeps this template's UB axes.

        Whole S1 x S2 blocks for the two small templates; any block for the S1S2 ones.
        """
        if self.name.startswith("s1s2"):
            return True
        return block[0] >= s1 and block[1] >= s2


def backward_templates(
    b: int, n2: int, g: int, s1: int, s2: int, cores: int = 16
) -> list[BackwardTemplate]:
    """Every FAG template sorted by priority (smaller first) with its condition's value.

    Examples:
        >>> [(t.name, t.block, t.heads) for t in backward_templates(8, 2, 1, 32, 64)][:2]
        [('bn2gs1s2_b', (32, 64), 2), ('n2gs1s2_bn1', (32, 64), 1)]
    """
    for name, value in (("B", b), ("N2", n2), ("G", g), ("S1", s1), ("S2", s2)):
        if value < 1:
            raise Tx8labError(f"FlashAttentionGrad template: axis {name} must be >= 1, got {value}")
    small = 64 * 128
    b_inner = max(1, min(b, (small - 1) // (n2 * g * s1 * s2)))
    b_inner = _fill_cores(b_inner, lambda k: -(-b // k), cores)
    n2_inner = max(1, min(n2, (small - 1) // (g * s1 * s2)))
    n2_inner = _fill_cores(n2_inner, lambda k: b * -(-n2 // k), cores)
    base = (min(CUBE_BASE, s1), min(CUBE_BASE, s2))
    rows = [
        BackwardTemplate(
            "bn2gs1s2_b", 10000, "N2 * G * S1 * S2 < 64 * 128", n2 * g * s1 * s2 < small,
            (s1, s2), b_inner * n2 * g,
        ),
        BackwardTemplate(
            "n2gs1s2_bn1", 11000, "G * S1 * S2 < 64 * 128", g * s1 * s2 < small,
            (s1, s2), n2_inner * g,
        ),
        BackwardTemplate(
            "s1s2_bn2", 15000, f"B * N2 > cores ({cores})", b * n2 > cores, base, 1, "bn2"
        ),
        BackwardTemplate("s1s2_bn2gs1s2", 16000, "none (fallback)", True, base),
    ]  # fmt: skip
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


def backward_template(
    b: int, n2: int, g: int, s1: int, s2: int, cores: int = 16, name: str | None = None
) -> BackwardTemplate:
    """The FAG template ``name`` (an override) or, for None, the seed's choice by priority.

    Examples:
        >>> backward_template(1, 8, 1, 2048, 2048, name="s1s2_bn2").split
        'bn2'
    """
    rows = backward_templates(b, n2, g, s1, s2, cores)
    if name is None:
        return next(t for t in rows if t.matched)
    return named_template(name, rows, "FAG", BACKWARD_TEMPLATES)


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
    "BACKWARD_TEMPLATES",
    "CUBE_BASE",
    "FORWARD_TEMPLATES",
    "KEY_FIELDS",
    "SEED_UB_BYTES",
    "TILINGKEYOFFSET",
    "BackwardTemplate",
    "Template",
    "TemplateLimits",
    "TilingKey",
    "backward_template",
    "backward_templates",
    "choose_backward_template",
    "choose_forward_template",
    "decode_tiling_key",
    "encode_tiling_key",
    "forward_template",
    "forward_templates",
    "forward_tiling_key",
    "named_template",
    "tx8_limits",
]
