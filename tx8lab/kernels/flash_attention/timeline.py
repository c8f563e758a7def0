"""FlashAttention forward on TX8 tiles: per-tile command streams timed by the tile simulator.

Spec: seed 004 §1 (templates chosen by shape, each with its UB and core split axes),
§2.1 (C/V tiling: Cube block, Vector block, "Vector 计算使用的数据类型是 float32"),
§3.1 (V-side ping-pong), §3.2 (CV pipelining, "Cube 双发": the Cube issues one block
ahead); seed 001 (Cx/NCx layouts, the LSU's TDMA ``op_gatherScatter``, NE ops are
ALIGN-only); ``shared/reference/hw-fa-fusion.md`` §1.4 and §3.3 and ``shared/board``
(``kernels.csv`` attention row, ``micro.csv``) for the board kernel; issue 19 (one
simulator, :mod:`tx8lab.hw.sim`, and the engine laws of :mod:`tx8lab.hw.laws`). On TX8
the seed's Cube is the NE, its Vector the CGRA (CT), its UB/L1 the SPM.

The model: every tile's work becomes the ordered list of commands its kernel core
issues (:func:`build_tile`), each timed by a law (NE ``laws.ne``, RDMA/WDMA
``laws.dma``, TDMA ``laws.tdma``, vector commands the op library's CT law for the
same op, see :mod:`.stream`), each with the SPM and DDR byte ranges it reads and writes
in the tile's SPM layout (:func:`spm_layout`). :func:`tx8lab.hw.sim.simulate` plays the
streams out: in-order issue at ``laws.issue`` per command, per-engine queues of depth 6
(TDMA 4), FIFO engines, and a command waits for the earlier ones whose ranges overlap
its own (the hardware's address-range checks). Ping-pong slot reuse, K/V reuse and the
accumulator's chain all follow from the ranges. The chip time is the slowest tile's
kernel body.

The template comes first (:func:`resolve`): seed 004 §1 chooses S1S2, S1 or B from the
shape (``template=`` overrides it, :mod:`.templates` has the rules) and the template
gives the tiling that is simulated: the C block (S1S2 ``(s1.i, 1024)``, S1 ``(s1.i,
S2)``: one key block per row, B ``(S1, S2)``), the heads one pass holds (B: ``B.i*N2*G``
heads in one batched step) and the core split (the fused outer axes in contiguous
ranges). ``block``, ``head_batch`` and ``split`` override the template's values.

C/V ratio (``cv_ratio``, on by default): seed 004 §2.1 gives the Cube and the Vector
their own blocks. "Vector的tiling基本块为8 * 1024" (the largest UB piece, 32 KB, in
fp32); "cube的基本块为128 * 128, 所以通过nRation=8配比出128 * 1024的数据量" (nRatio = 8
Cube base blocks give the 128 x 1024 C block, a C:V data ratio of 16:1), and the
Vector walks the C block in ``S1_c_i / S1_v_i = 128 / 8`` row pieces. Here every vector
op over a C block is one CT command per 32 KB of the vector type (:func:`v_block_rows`:
8 rows of a 1024-wide block), each with its issue and fixed cost; ``cv_ratio=False``
runs it as one command over the whole block. The V block is the seed's 32 KB, not
scaled to the SPM as the template thresholds are: it is the Vector's command granule,
which the seed derives from its buffer split, and TX8's CT reads its operands in place.

Work split: the B·N1 heads x S1 row blocks over the tiles (``split="fused"``, the
templates': contiguous ranges of the fused (head, row block) axis of about equal pair
weight; ``"bn"``: whole heads round robin, as the board kernel; ``"bns1"``: row blocks
weighted by their pair counts, longest first; ``"bn2"``: whole KV heads). Each tile
walks its (row block i, key block j) pairs. Per pair, in the FA-2 order (``n`` is the
pair's index in its row block):

- **loads**: Q_i once per row block; K_j and V_j once per (KV head, key block) when they
  stay resident in SPM (``kv_resident``, default when they fit), else once per pair.
  With ``io_layout="nd"`` (Q/K/V/O are plain BNSD tensors in DDR) each goes through a
  staging buffer and a TDMA move into the layout the NE reads: Q and V to NCx
  (:func:`~.stream.ncx_runs` transfers), K to Kᵀ in Cx by ``transpose`` (default a TDMA
  GatherScatter of single elements, split at 16,384 transfers per command).
- ``NE S = Q Kᵀ`` into the score buffer (``vector_dtype``, the NE's fp32 partial sum by
  default);
- ``CT`` on the scores: ``Mul`` by 1/sqrt(D), ``Where`` (causal mask, diagonal blocks
  only), ``ReduceMax`` (row max; for ``n > 0`` then ``Max`` with the running max, and
  ``alpha = Exp(Sub(m_old, m_new))`` per row), ``Sub`` the max, ``Exp``, ``ReduceSum``,
  ``Convert`` P to the input type (when ``vector_dtype`` differs), and for ``n > 0`` the
  running sum ``l = l * alpha + rowsum`` (``Mul``, ``Add`` per row);
- ``NE O += P V``: into the accumulator for ``n = 0``, else into the PV buffer, then
  ``CT`` ``acc = acc * alpha + PV`` (``Mul``, ``Add``);
- after the last pair of a row block: ``lse = Log(l) + m`` (``save_lse``),
  ``Reciprocal(l)``, ``Mul`` acc by it, ``Convert`` to the input type, a TDMA move NCx ->
  ND when the accumulator's layout is not the output's, and the WDMA stores of O (and lse).

Every ``CT`` step is the op library's op of that name (:func:`~.stream.vector_cycles`),
so it costs what a graph's op costs: ``Exp`` 8 vector ops per element, the others 1,
``Reciprocal`` 3, at its operand's element type (32 GOPS for fp32, 64 for 16-bit).
A graph's ``Softmax`` (12 ops: max, subtract, exp 8, sum, scale) and this kernel's
softmax therefore cost alike; the kernel differs where FA-2 differs (the running max
and sum per row, the rescale of the accumulator, one normalisation of O instead of P).

Program order (``pingpong`` gives two slots to every per-pair buffer, one without):
``serial`` issues loads(t), NE1(t), CT1(t), NE2(t), CT2(t); ``double_issue`` issues the
seed's ring loads(t), NE1(t), CT1(t-1), NE2(t-1), CT2(t-2), so the NE runs one block
ahead of the CT (needs ping-pong).

Readings chosen where the sources are vague (each knob of :class:`FaConfig` keeps the
alternative visible; :func:`calibration` lists a row for each):

- **Vector math type** (``vector_dtype``): fp32, seed 004 §2.1 and the NE's fp32 partial
  sums (``kernels.csv``: "FP32 psum"). The alternative, 16-bit vector math (the type a
  graph's Softmax runs at when its operand is BF16), is the other side of the board's CT
  time: its 1.127 ms on the busiest tile is 7.6 fp32 or 15 bf16 ops per score element,
  while the kernel's softmax counts 13 (``Exp`` 8) plus the row work, so fp32 models the
  CT well above the board and bf16 somewhat below it. The board kernel used ``Explp``
  (faster than ``Exp``, hw-fa-fusion §1.4) whose cost is not published, so ``Exp`` keeps
  the op library's 8 ops.
- **K/V residency** (``kv_resident``): resident when they fit, so each K/V byte is read
  once per head (the busiest tile's RDMA time, 0.388 ms, is what its 3 MiB of Q, K and V
  take at one tile's fitted RDMA rate). Streaming K_j/V_j per pair (``kv_resident=False``)
  fits another board figure instead: the whole-card DDR read of 144 MiB (``micro.csv``,
  a version of the kernel with a 4.086 ms event; per pair K_j and V_j plus Q once make
  140 MiB, resident K/V 42 MiB). Its RDMA and TDMA rows are in the calibration table.
- **Kᵀ** (``transpose``): ``"tdma"`` (default) a GatherScatter of single elements into
  Cx: the board notes' GatherScatter policy (16,384 inner transfers per command, after a
  32,768-transfer GS tripped the LSU timeout) comes from the attention work, and the
  board kernel's TDMA was busy 0.885 ms; no source says which moves those were.
  ``"ct"``: the op library's ``Transpose`` on the CT (1 op per element, as a graph's
  Transpose is costed); ``"ne"``: the NE reads K as it is (a what-if: no source says the
  NE takes a transposed operand).
- **DDR layout** (``io_layout``): ``"nd"`` (default: the board's Q/K/V/O are BNSD
  tensors) converts on the TDMA in SPM (``micro.csv``: the RDMA strides only on the DDR
  side, "SPM-side stride needs GatherScatter"); ``"ncx"`` (DDR already in NCx, as the
  board's GEMM "NCx external I/O") loads and stores as they are.
- **Accumulator layout** (``acc_ncx``): kept NCx through the key loop, as the board
  kernel ("loop accumulator kept NCx", ``kernels.csv``); ``False`` moves each P·V to ND
  on the TDMA before the add (the version before that change).
- The causal select is a ``Where`` on diagonal blocks whose mask is an immediate
  pattern (no mask buffer, no load). The row statistics broadcast over a row within the
  CT's ``Sub``/``Mul`` (the board notes mention a GS "prefix copy" for a broadcast in this
  kernel, with no size: not modelled).
- Row statistics (running max in two parities, running sum, lse) and the accumulator
  have two row-block slots, so one row block's normalisation and stores overlap the next
  one's start; per-pair buffers (Q, staging, S, P, PV, row temporaries) have the
  ``pingpong`` slots.
- The DDR share of a DMA counts every tile with work (the law's reading: they stream at
  once); ``ddr_tiles`` overrides it (``1``: one tile's own rate).
- ``sync_issue`` is a what-if: the kernel core joins (``laws.join``) on a command of
  another engine before issuing one whose ranges conflict with it. No source states
  this; the board notes describe per-engine queues with hardware dependency checks, so
  the board case, every search candidate and the baseline use asynchronous issue.
- Busy times per engine are the **largest over the tiles** (the board's profile reports
  per-tile maxima, ``kernels.csv``), which need not all be the slowest tile's; stalls
  and the limiting engine are the slowest tile's.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Literal, Protocol, TypeVar

from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.sim import Range, SimCommand, TileRun, Timing
from tx8lab.kernels.flash_attention.numerics import block_pairs
from tx8lab.kernels.flash_attention.stream import (
    REPORT_ENGINES,
    DdrLayout,
    SpmLayout,
    TileSet,
    TileStream,
    elem_bytes,
    run_tiles,
)
from tx8lab.kernels.flash_attention.templates import (
    FORWARD_TEMPLATES,
    Template,
    encode_tiling_key,
    forward_templates,
    forward_tiling_key,
    named_template,
    tx8_limits,
)

#: Engines of the reports (``kcore``: the kernel core issuing and joining).
ENGINES: tuple[str, ...] = REPORT_ENGINES

#: The board figure: BF16 [1,28,2048,128] causal prefill, 256x256 blocks, whole heads
#: per tile (12 tiles x 2 heads + 4 x 1), busiest tile 72 block pairs. Kernel body
#: hw-fa-fusion §1.4 ("body 2.461 ms"); per-engine activity ``kernels.csv`` (per-tile
#: maxima, ms).
BOARD: dict[str, object] = {
    "shape": (1, 28, 2048, 128),
    "block": (256, 256),
    "latency_ms": 2.461,
    "ne_ms": 0.363568,
    "ct_ms": 1.127309,
    "rdma_ms": 0.387578,
    "wdma_ms": 0.033470,
    "tdma_ms": 0.885470,
    "busiest_tile_pairs": 72,
}


class _Tiled(Protocol):
    """A template as :func:`apply_template` reads it (forward or backward)."""

    @property
    def name(self) -> str: ...

    @property
    def matched(self) -> bool: ...

    @property
    def block(self) -> tuple[int, int]: ...

    @property
    def heads(self) -> int: ...

    @property
    def split(self) -> str: ...

    def admits(self, s1: int, s2: int, block: tuple[int, int]) -> bool: ...


T = TypeVar("T", bound=_Tiled)

Transpose = Literal["tdma", "ct", "ne"]
IoLayout = Literal["nd", "ncx"]


Split = Literal["bn", "bns1", "bn2", "fused"]

#: The seed's Vector block (§2.1): the largest UB piece, 32 KB, of fp32 (8 x 1024).
V_BLOCK_BYTES = 32 * 1024


@dataclass(frozen=True)
class FaConfig:
    """One FA forward problem and its tiling (the knobs of the model).

    The tiling knobs left None (``template``, ``block``, ``split``, ``head_batch``,
    ``v_rows``) are filled by :func:`resolve` from the template seed 004 §1 chooses for
    the shape; a value given overrides the template's.
    """

    b: int
    n1: int
    s1: int
    d: int
    s2: int | None = None
    """Key length; default S1."""
    n2: int | None = None
    """Key/value heads (GQA); default N1."""
    causal: bool = False
    dtype: str = "bf16"
    """Element type of Q, K, V, O in DDR and of the NE's operands."""
    template: str | None = None
    """Forward template (``S1S2``, ``S1``, ``B``); default the seed's choice by shape.
    The backward model reads ``fag_template`` instead."""
    fag_template: str | None = None
    """Backward template (``bn2gs1s2_b``, ``n2gs1s2_bn1``, ``s1s2_bn2``,
    ``s1s2_bn2gs1s2``); default the seed's choice by priority."""
    block: tuple[int, int] | None = None
    """NE (C) block (BR, BC): rows of Q, columns of K per pair; default the template's."""
    head_batch: int | None = None
    """Heads one pass holds (one batched command per step); default the template's
    (``B.i * N2 * G`` for the B template, else 1)."""
    cv_ratio: bool = True
    """Seed 004 §2.1's C/V tiling split (nRatio): the Vector works the Cube's block in
    its own blocks of 32 KB fp32 (8 x 1024 at the S1S2 template's 1024-wide C block, a
    C:V data ratio of 16:1); False: one CT command per op over the whole C block."""
    v_rows: int | None = None
    """CT (V) block rows per vector command; default from ``cv_ratio``."""
    pingpong: bool = True
    """Two slots for every per-pair buffer (else one)."""
    double_issue: bool = True
    """The seed's ring: the NE runs one block ahead of the CT (needs ``pingpong``)."""
    split: Split | None = None
    """Core split: ``fused`` contiguous ranges of the fused (pass, block) axis, ``bn``
    whole passes (heads) round robin, ``bns1`` blocks longest-first by weight, ``bn2``
    whole KV heads round robin; default the template's (:func:`split_units`)."""
    kv_resident: bool | None = None
    """Keep a head's K (transposed) and V in SPM; default: when they fit."""
    sync_issue: bool = False
    """What-if: the kernel core joins on a conflicting command of another engine before
    issuing (module docstring). Default asynchronous issue (hardware range checks)."""
    vector_dtype: str = "f32"
    """Element type of the scores, P·V, accumulator and row statistics (the CT's type)."""
    transpose: Transpose = "tdma"
    """How Kᵀ for S = Q Kᵀ is made: TDMA GatherScatter, CT Transpose, or read by the NE."""
    io_layout: IoLayout = "nd"
    """Layout of Q/K/V/O in DDR: plain BNSD (``nd``, TDMA moves in SPM) or ``ncx``."""
    acc_ncx: bool = True
    """Keep the accumulator NCx through the key loop (the board kernel)."""
    save_lse: bool = True
    """Compute and store the logsumexp per row (the backward pass reads it)."""
    ddr_tiles: int | None = None
    """Tiles sharing DDR in the DMA law; default every tile with work."""

    @property
    def keys(self) -> int:
        return self.s1 if self.s2 is None else self.s2

    @property
    def kv_heads(self) -> int:
        return self.n1 if self.n2 is None else self.n2

    @property
    def group(self) -> int:
        """Query heads per KV head (G)."""
        return self.n1 // self.kv_heads

    @property
    def c_block(self) -> tuple[int, int]:
        """The C block of a resolved config (:func:`resolve` fills it from the template)."""
        if self.block is None:
            raise Tx8labError("FA config: block unset; resolve(cfg, hw) fills it from the template")
        return self.block

    @property
    def heads_per_pass(self) -> int:
        """Heads one pass holds (1 when unset)."""
        return self.head_batch or 1

    @property
    def core_split(self) -> Split:
        """The core split of a resolved config (``bns1`` when unset)."""
        return self.split or "bns1"

    def block_rows(self, i: int) -> int:
        """Rows of Q in row block ``i`` (the last one may be short)."""
        br = self.c_block[0]
        return min(self.s1, (i + 1) * br) - i * br

    def block_cols(self, j: int) -> int:
        """Keys in key block ``j`` (the last one may be short)."""
        bc = self.c_block[1]
        return min(self.keys, (j + 1) * bc) - j * bc

    def pass_heads(self, u: int) -> tuple[int, int]:
        """(first head, heads) of pass ``u``.

        Passes of ``head_batch`` heads; the last may be short.
        """
        hb = self.heads_per_pass
        return u * hb, min(hb, self.b * self.n1 - u * hb)

    def kv_span(self, h: int, nh: int) -> tuple[int, int]:
        """(first KV head, KV heads) the query heads ``h .. h+nh-1`` read."""
        g = self.group
        return h // g, (h + nh - 1) // g - h // g + 1

    @property
    def passes(self) -> int:
        """Passes over the B*N1 heads."""
        return -(-(self.b * self.n1) // self.heads_per_pass)


def heads_tag(h: int, nh: int) -> str:
    """``h3`` for one head, ``h0-7`` for a pass of several."""
    return f"h{h}" if nh == 1 else f"h{h}-{h + nh - 1}"


def v_block_rows(bc: int, vector_dtype: str) -> int:
    """Rows of the seed's V block at C block width ``bc``: 32 KB of the vector type.

    Examples:
        >>> v_block_rows(1024, "f32")  # the seed's 8 x 1024
        8
        >>> v_block_rows(256, "f32")
        32
    """
    return max(1, V_BLOCK_BYTES // (bc * elem_bytes(vector_dtype, "vector_dtype")))


def vector_op(ts: TileStream, cfg: FaConfig) -> Callable[..., None]:
    """``vec(kind, shapes, reads, writes, label, pair, **attrs)``: an FA vector op of ``cfg``.

    :meth:`TileStream.fa_vector` with the config's operand types and CT pieces, as both
    the forward and the backward builders issue them.
    """

    def vec(
        kind: str,
        shapes: list[tuple[int, ...]],
        reads: tuple[Range, ...],
        writes: tuple[Range, ...],
        label: str,
        t: int,
        **attrs: object,
    ) -> None:
        ts.fa_vector(
            kind, shapes, cfg.vector_dtype, cfg.dtype, reads, writes, label, t,
            cfg.v_rows, attrs,
        )  # fmt: skip

    return vec


@dataclass(frozen=True)
class FaModel:
    """The modelled FA forward on the chip."""

    config: FaConfig
    """The resolved config: the tiling the template (or a knob) gave."""
    latency_ms: float
    """Kernel body of the slowest tile."""
    tile_ms: dict[int, float]
    """Kernel body of every tile (0 for a tile without work)."""
    busy_ms: dict[str, float]
    """Engine -> busy ms, the largest over the tiles (``ne ct rdma wdma tdma kcore``)."""
    stall_ms: dict[str, dict[str, float]]
    """Engine -> stall reason -> ms on the slowest tile (the simulator's reasons)."""
    busiest_tile: int
    """The slowest tile (its body is the latency)."""
    limiting_engine: str
    """The engine busiest on the slowest tile."""
    top_stall: tuple[str, str, float]
    """(engine, reason, ms): the limiting engine's largest stall on the slowest tile."""
    tile_pairs: tuple[int, ...]
    load_balance: float
    """mean / max block pairs per tile."""
    spm_bytes: int
    kv_resident: bool
    template: str
    """The template whose tiling ran (:func:`resolve`)."""
    template_source: str
    """How it was chosen: ``shape`` (seed 004's rule), ``knob`` (``template=``) or
    ``block`` (a given block: the template whose UB axes it keeps)."""
    tiling_key: int
    tiles: TileSet = field(repr=False)

    @property
    def commands(self) -> tuple[SimCommand, ...]:
        """The slowest tile's command stream."""
        return tuple(self.tiles.stream.commands)

    @property
    def run(self) -> TileRun:
        """The slowest tile's simulated run."""
        return self.tiles.result.tiles[self.busiest_tile]

    def timeline(self, until_pair: int | None = None) -> list[tuple[int, Timing]]:
        """(pair, timing) of the slowest tile's commands, up to pair ``until_pair``."""
        out = []
        for pair, timing in zip(self.tiles.stream.pairs, self.run.timings, strict=True):
            if until_pair is None or pair < until_pair:
                out.append((pair, timing))
        return out

    def waiting_on(self) -> dict[str, float]:
        """Engine -> ms the limiting engine's dependency stalls waited for (critical chain).

        See :meth:`~.stream.TileSet.waiting_on`: the board tiling's CT waits on the NE
        computing its scores and, behind it, on the TDMA making Kᵀ.
        """
        return self.tiles.waiting_on(self.limiting_engine)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready summary (no command list)."""
        cfg = asdict(self.config)
        cfg["block"] = list(self.config.c_block)
        return {
            **self.tiles.timing_json(),
            "waiting_on": self.waiting_on(),
            "commands": len(self.commands),
            "tile_pairs": list(self.tile_pairs),
            "load_balance": self.load_balance,
            "spm_bytes": self.spm_bytes,
            "kv_resident": self.kv_resident,
            "template": self.template,
            "template_source": self.template_source,
            "tiling_key": str(self.tiling_key),
            "schedule": schedule_name(self.config),
            "config": cfg,
        }


# ------------------------------------------------------------------ the template's tiling


def _largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int:
    """The largest ``k`` in ``[lo, hi]`` with ``ok(k)`` (``ok`` monotone falling), else lo."""
    if ok(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def given_block_template(
    rows: Sequence[T], block: tuple[int, int], s1: int, s2: int, what: str
) -> tuple[T, str]:
    """The template a given block runs under, and the source ``block``.

    The first template whose condition holds (seed order / priority) and whose UB axes
    admit the block; else the narrowest that admits it (the last in that order). A given
    block is a tiling of its own; this names the template whose loop structure it keeps.
    """
    for t in rows:
        if t.matched and t.admits(s1, s2, block):
            return t, "block"
    for t in reversed(rows):
        if t.admits(s1, s2, block):
            return t, "block"
    raise Tx8labError(f"{what}: no template admits block {block}")  # pragma: no cover


def fit_tiling(
    cfg: FaConfig,
    tmpl: _Tiled,
    from_template: tuple[bool, bool],
    fits: Callable[[FaConfig], bool],
) -> FaConfig:
    """``cfg`` with the template's sizes shrunk until ``fits`` (the tile's SPM).

    ``from_template`` = (block, heads): which of them came from the template (a given
    value never shrinks). Heads per pass shrink first (the B templates' ``B.i``), then
    the rows of the C block in multiples of 16 (the S1 templates' ``s1.i``) while
    ``tmpl`` admits the block (a B template keeps whole S1 x S2 blocks: the model then
    reports the SPM it lacks).
    """
    block_free, heads_free = from_template
    if heads_free and cfg.heads_per_pass > 1 and not fits(cfg):
        hb = _largest(1, cfg.heads_per_pass, lambda k: fits(replace(cfg, head_batch=k)))
        cfg = replace(cfg, head_batch=hb)
    br, bc = cfg.c_block
    admits = tmpl.admits(cfg.s1, cfg.keys, (16, bc)) and cfg.heads_per_pass == 1
    if block_free and admits and br > 16 and not fits(cfg):
        k = _largest(1, br // 16, lambda k: fits(replace(cfg, block=(16 * k, bc))))
        cfg = replace(cfg, block=(16 * k, bc))
    return cfg


def resolve(cfg: FaConfig, hw: ChipConfig) -> tuple[FaConfig, Template, str]:
    """The tiling the forward template names, filled into ``cfg``; the template; its source.

    Seed 004 §1 first: the template is chosen from the shape (``tx8_limits``: the seed's
    thresholds at a TX8 tile's SPM, the cores = tiles), or taken from ``template=``.
    It gives what a knob left None: the C block (S1S2 ``(s1.i, s2.i)``, S1 ``(s1.i,
    S2)``, B ``(S1, S2)``), the heads per pass (B: ``B.i * N2 * G``), the core split
    (``fused``: the fused B·N2·G·S1o, or B/B.i passes), and with ``cv_ratio``
    the V block rows (:func:`v_block_rows`). The template's sizes are the seed's bounds;
    one pass must also fit the tile's SPM, so they shrink until it does
    (:func:`fit_tiling`: K/V streamed unless ``kv_resident``). A given ``block`` with no
    ``template`` runs under the template whose axes it keeps (:func:`given_block_template`);
    a given ``template`` must admit a given ``block``.
    """
    check_config(cfg)
    limits = tx8_limits(hw)
    rows = forward_templates(cfg.b, cfg.kv_heads, cfg.group, cfg.s1, cfg.keys, limits)
    usable = hw.tile.spm_usable_bytes
    out, tmpl, source = apply_template(
        cfg,
        rows,
        (cfg.template, FORWARD_TEMPLATES, "FA"),
        lambda c: spm_bytes(c, bool(c.kv_resident)) <= usable,
    )
    out = replace(out, template=tmpl.name)
    return out, tmpl, source


def apply_template(
    cfg: FaConfig,
    rows: Sequence[T],
    named: tuple[str | None, tuple[str, ...], str],
    fits: Callable[[FaConfig], bool],
) -> tuple[FaConfig, T, str]:
    """The template of ``rows`` (forward or backward) and ``cfg`` with its tiling filled in.

    ``named`` = (the template knob's value, the template names, ``FA``/``FAG``). The
    template: the named one (source ``knob``; it must admit a given block), else for a
    given block :func:`given_block_template` (``block``), else the first whose condition
    holds (``shape``). It fills the knobs left None (block, heads per pass, core split),
    shrinks what it gave until ``fits`` (:func:`fit_tiling`) and, with ``cv_ratio``, sets
    the V block rows.
    """
    name, names, what = named
    source = "shape"
    if name is not None:
        tmpl = named_template(name, rows, what, names)
        source = "knob"
        if cfg.block is not None and not tmpl.admits(cfg.s1, cfg.keys, cfg.block):
            raise FaTilingError(
                f"{what} template {tmpl.name} does not admit block {cfg.block} at "
                f"S1={cfg.s1} x S2={cfg.keys} (seed 004 §1: S1 keeps the whole S2 in a block; "
                "B and the small FAG templates whole S1 x S2): drop the block or the template"
            )
    elif cfg.block is None:
        tmpl = next(t for t in rows if t.matched)
    else:
        tmpl, source = given_block_template(rows, cfg.block, cfg.s1, cfg.keys, what)
    out = replace(
        cfg,
        block=cfg.block or tmpl.block,
        head_batch=cfg.head_batch or tmpl.heads,
        split=cfg.split or tmpl.split,  # type: ignore[arg-type]
    )
    check_batch(out, what)
    out = fit_tiling(out, tmpl, (cfg.block is None, cfg.head_batch is None), fits)
    if out.v_rows is None and out.cv_ratio:
        out = replace(out, v_rows=v_block_rows(out.c_block[1], out.vector_dtype))
    return out, tmpl, source


def check_batch(cfg: FaConfig, what: str) -> None:
    """Several heads per pass need whole S1 x S2 blocks (one pass, one batched step)."""
    br, bc = cfg.c_block
    if cfg.heads_per_pass > 1 and (br < cfg.s1 or bc < cfg.keys):
        raise FaTilingError(
            f"{what} tiling: head_batch={cfg.head_batch} needs whole S1 x S2 blocks "
            f"({cfg.s1}x{cfg.keys}), got block {cfg.c_block}: give head_batch=1 or no block"
        )


# ------------------------------------------------------------------ work split


def _row_pairs(cfg: FaConfig) -> list[int]:
    br, bc = cfg.c_block
    pairs = block_pairs(cfg.s1, cfg.keys, br, bc, cfg.causal)
    rows = [0] * (-(-cfg.s1 // br))
    for i, _ in pairs:
        rows[i] += 1
    return rows


def kv_group(cfg: FaConfig) -> int:
    """Passes per KV head for the ``bn2`` split (1 when a pass spans whole KV heads)."""
    hb, g = cfg.heads_per_pass, cfg.group
    return g // hb if hb <= g and g % hb == 0 else 1


def split_work(cfg: FaConfig, tiles: int) -> list[list[tuple[int, int]]]:
    """(pass, row block) units per tile: whole passes round robin, or row blocks by weight.

    A pass is ``head_batch`` heads (one head unless the template batches them).

    Examples:
        >>> cfg = FaConfig(b=1, n1=28, s1=2048, d=128, causal=True, split="bn", block=(256, 256))
        >>> [len(u) for u in split_work(cfg, 16)][:2], max(len(u) for u in split_work(cfg, 16))
        ([16, 16], 16)
    """
    return split_units(_row_pairs(cfg), cfg.passes, tiles, cfg.core_split, kv_group(cfg))


def split_units(
    weights: list[int], heads: int, tiles: int, split: str, group: int = 1
) -> list[list[tuple[int, int]]]:
    """(pass, block) units per tile; ``weights[i]`` is block i's pair count (0: no work).

    ``fused``: the (pass, block) units in order, cut into one contiguous range per tile
    of about equal weight (a unit goes to the tile its weight's midpoint falls in): seed
    004 §1's core split, "把核内切分后剩余的轴合并后依据AI Core核数再进行切分" (the axes
    left after the UB split, fused, then split by the core count); a tile's blocks are
    mostly of one head, so its K/V stay loaded. ``bn``: whole passes round robin;
    ``bn2``: whole KV heads (``group`` consecutive passes) round robin; ``bns1``: blocks
    longest-first onto the least loaded tile. The forward splits row blocks, the
    backward key blocks.

    Examples:
        >>> split_units([1, 2], 2, 2, "fused")  # weights 1, 2, 1, 2: cut at 3
        [[(0, 0), (0, 1)], [(1, 0), (1, 1)]]
    """
    out: list[list[tuple[int, int]]] = [[] for _ in range(tiles)]
    if split == "fused":
        order = [(h, i) for h in range(heads) for i in range(len(weights)) if weights[i]]
        total = sum(weights[i] for _, i in order)
        done = 0
        for h, i in order:
            mid2 = 2 * done + weights[i]  # twice the unit's weight midpoint
            out[min(tiles - 1, mid2 * tiles // (2 * total))].append((h, i))
            done += weights[i]
        return out
    if split in ("bn", "bn2"):
        step = group if split == "bn2" else 1
        for h in range(heads):
            out[(h // step) % tiles].extend((h, i) for i in range(len(weights)) if weights[i])
        return out
    if split != "bns1":
        raise Tx8labError(f"FA split must be 'fused', 'bn', 'bn2' or 'bns1', got {split!r}")
    units = sorted(
        ((weights[i], h, i) for h in range(heads) for i in range(len(weights)) if weights[i]),
        key=lambda u: (-u[0], u[1], u[2]),
    )
    load = [(0, t) for t in range(tiles)]
    for weight, h, i in units:
        done, t = heapq.heappop(load)
        out[t].append((h, i))
        heapq.heappush(load, (done + weight, t))
    for units_t in out:
        units_t.sort()
    return out


# ------------------------------------------------------------------ layouts


def _k_staged(cfg: FaConfig) -> bool:
    """Whether K lands in a staging buffer before the move that makes Kᵀ."""
    return cfg.io_layout == "nd" or cfg.transpose != "ne"


def _final_move(cfg: FaConfig) -> bool:
    """Whether O moves between layouts before its store (accumulator layout vs DDR's)."""
    return cfg.acc_ncx != (cfg.io_layout == "ncx")


def kv_per_pass(cfg: FaConfig) -> int:
    """KV heads one pass reads at most."""
    hb, g = cfg.heads_per_pass, cfg.group
    if hb % g == 0:
        return hb // g
    return 1 if g % hb == 0 else -(-hb // g) + 1


def spm_layout(cfg: FaConfig, kv_resident: bool) -> SpmLayout:
    """The tile's SPM buffers for the tiling (module docstring).

    A pass of ``head_batch`` heads holds that many copies of every per-head buffer.
    """
    br, bc = cfg.c_block
    hb, nkv = cfg.heads_per_pass, kv_per_pass(cfg)
    d, e, ve = cfg.d, elem_bytes(cfg.dtype), elem_bytes(cfg.vector_dtype, "vector_dtype")
    slots = 2 if cfg.pingpong else 1
    rows = br * hb
    spm = SpmLayout()
    spm.add("Q", rows * d * e, slots)
    if cfg.io_layout == "nd":
        spm.add("Q_in", rows * d * e, slots)
    kv_bytes, kv_slots = (cfg.keys * d * e, 1) if kv_resident else (bc * d * e, slots)
    spm.add("KT", kv_bytes * nkv, kv_slots)
    spm.add("V", kv_bytes * nkv, kv_slots)
    if _k_staged(cfg):
        spm.add("K_in", bc * d * e * nkv, slots)
    if cfg.io_layout == "nd":
        spm.add("V_in", bc * d * e * nkv, slots)
    spm.add("S", rows * bc * ve, slots)
    if cfg.vector_dtype != cfg.dtype:
        spm.add("P", rows * bc * e, slots)
    spm.add("PV", rows * d * ve, slots)
    if not cfg.acc_ncx:
        spm.add("PV_nd", rows * d * ve, slots)
    spm.add("ACC", rows * d * ve, 2)
    if cfg.vector_dtype != cfg.dtype:
        spm.add("O", rows * d * e, 2)
    if _final_move(cfg):
        spm.add("O_out", rows * d * e, 2)
    spm.add("M", rows * ve, 4)  # two row-block slots x two parities (old / new max)
    spm.add("L", rows * ve, 2)
    if cfg.save_lse:
        spm.add("LSE", rows * ve, 2)
    for name in ("MT", "LT", "ALPHA"):
        spm.add(name, rows * ve, slots)
    return spm


def spm_bytes(cfg: FaConfig, kv_resident: bool) -> int:
    """SPM bytes one tile needs for the tiling (:func:`spm_layout`)."""
    return spm_layout(cfg, kv_resident).total_bytes


def _ddr_layout(cfg: FaConfig) -> DdrLayout:
    e, ve = elem_bytes(cfg.dtype), elem_bytes(cfg.vector_dtype, "vector_dtype")
    ddr = DdrLayout()
    q = cfg.b * cfg.n1 * cfg.s1 * cfg.d * e
    kv = cfg.b * cfg.kv_heads * cfg.keys * cfg.d * e
    for name, size in (("Q", q), ("K", kv), ("V", kv), ("O", q)):
        ddr.add(name, size)
    ddr.add("LSE", cfg.b * cfg.n1 * cfg.s1 * ve)
    return ddr


# ------------------------------------------------------------------ the stream


def build_tile(
    cfg: FaConfig,
    hw: ChipConfig,
    units: list[tuple[int, int]],
    kv_resident: bool,
    active_tiles: int = 1,
) -> TileStream:
    """The command stream of one tile walking ``units`` (pass, row block).

    A pass of several heads (the B template) is one pair per step: its loads, NE
    products (``batch`` = the heads) and vector commands cover every head at once.
    """
    br, bc = cfg.c_block
    d, s1, s2, dt, vt = cfg.d, cfg.s1, cfg.keys, cfg.dtype, cfg.vector_dtype
    e, ve = elem_bytes(dt), elem_bytes(vt, "vector_dtype")
    spm, ddr = spm_layout(cfg, kv_resident), _ddr_layout(cfg)
    ts = TileStream(hw, active_tiles, cfg.sync_issue)
    by_row: dict[int, list[int]] = {}
    for i, j in block_pairs(s1, s2, br, bc, cfg.causal):
        by_row.setdefault(i, []).append(j)
    # the flat pair list: first head, heads, i, j, index in the row block, last?,
    # row-block counter
    work: list[tuple[int, int, int, int, int, bool, int]] = []
    for rb, (u, i) in enumerate(units):
        h, nh = cfg.pass_heads(u)
        js = by_row.get(i, [])
        work.extend((h, nh, i, j, n, n == len(js) - 1, rb) for n, j in enumerate(js))
    loaded: dict[tuple[int, ...], int] = {}
    kv_loads = itertools.count()
    staged_p = spm.has("P")

    rows_of, cols_of, vec = cfg.block_rows, cfg.block_cols, vector_op(ts, cfg)

    def kv_range(name: str, j: int, t: int, c: int, nkv: int) -> Range:
        if kv_resident:
            lo = j * bc * d * e * nkv
            return spm.at(name, 0, lo, lo + nkv * c * d * e)
        return spm.at(name, t, 0, nkv * c * d * e)

    def loads(t: int) -> None:
        h, nh, i, j, n, _, rb = work[t]
        r, c = rows_of(i), cols_of(j)
        hk, nkv = cfg.kv_span(h, nh)
        if n == 0:
            lo = (h * s1 + i * br) * d * e
            src = ddr.at("Q", lo, lo + nh * r * d * e)
            q = spm.at("Q", rb, 0, nh * r * d * e)
            q_in = spm.at("Q_in", rb, 0, nh * r * d * e) if cfg.io_layout == "nd" else None
            ts.load_ncx(nh * r, d, dt, src, q, q_in, "Q", f"{heads_tag(h, nh)} i{i}", t)
        key = (hk, nkv, j) if kv_resident else (hk, nkv, j, t)
        if key in loaded:
            return
        loaded[key] = t
        stage = next(kv_loads)
        size = nkv * c * d * e
        lo = (hk * s2 + j * bc) * d * e
        kt, v = kv_range("KT", j, t, c, nkv), kv_range("V", j, t, c, nkv)
        k_src, v_src = ddr.at("K", lo, lo + size), ddr.at("V", lo, lo + size)
        where = f"{heads_tag(hk, nkv)} j{j}"
        if _k_staged(cfg):
            k_in = spm.at("K_in", stage, 0, size)
            ts.load(size, k_src, k_in, f"RDMA K {where}", t)
            if cfg.transpose == "tdma":
                ts.transpose(nkv * c, d, dt, k_in, kt, f"TDMA K^T {where}", t)
            elif cfg.transpose == "ct":
                vec("Transpose", [(nkv * c, d)], (k_in,), (kt,), f"CT K^T {where}", t, perm=(1, 0))
            else:
                ts.to_layout(nkv * c, d, dt, k_in, kt, f"TDMA K ND->NCx {where}", t)
        else:
            ts.load(size, k_src, kt, f"RDMA K {where}", t)
        v_in = spm.at("V_in", stage, 0, size) if cfg.io_layout == "nd" else None
        ts.load_ncx(nkv * c, d, dt, v_src, v, v_in, "V", where, t)

    cache: dict[int, dict[str, Range]] = {}

    def ranges(t: int) -> dict[str, Range]:
        if t in cache:
            return cache[t]
        h, nh, i, j, n, _, rb = work[t]
        r, c = nh * rows_of(i), cols_of(j)
        nkv = cfg.kv_span(h, nh)[1]
        out: dict[str, Range] = {
            "q": spm.at("Q", rb, 0, r * d * e),
            "kt": kv_range("KT", j, t, c, nkv),
            "v": kv_range("V", j, t, c, nkv),
            "s": spm.at("S", t, 0, r * c * ve),
            "pv": spm.at("PV", t, 0, r * d * ve),
            "acc": spm.at("ACC", rb, 0, r * d * ve),
            "m": spm.at("M", 2 * (rb % 2) + n % 2, 0, r * ve),
            "m_old": spm.at("M", 2 * (rb % 2) + (n - 1) % 2, 0, r * ve),
            "l": spm.at("L", rb, 0, r * ve),
            "mt": spm.at("MT", t, 0, r * ve),
            "lt": spm.at("LT", t, 0, r * ve),
            "alpha": spm.at("ALPHA", t, 0, r * ve),
        }
        out["p"] = spm.at("P", t, 0, r * c * e) if staged_p else out["s"]
        cache[t] = out
        return out

    def ne1(t: int) -> None:
        h, nh, i, j, *_ = work[t]
        x = ranges(t)
        mkn = (rows_of(i), d, cols_of(j))
        label = f"NE S=QK^T {heads_tag(h, nh)} i{i} j{j}"
        ts.ne(mkn, dt, (x["q"], x["kt"]), (x["s"],), label, t, batch=nh)

    def ct1(t: int) -> None:
        h, nh, i, j, n, _, _ = work[t]
        r, c = nh * rows_of(i), cols_of(j)
        x = ranges(t)
        s, m, tag = x["s"], x["m"], f"{heads_tag(h, nh)} i{i} j{j}"
        vec("Mul", [(r, c), (1,)], (s,), (s,), f"CT Mul scale S {tag}", t)
        if cfg.causal and (j + 1) * bc - 1 > i * br:
            vec("Where", [(r, c), (r, c), (1,)], (s,), (s,), f"CT Where causal {tag}", t)
        if n == 0:
            vec("ReduceMax", [(r, c)], (s,), (m,), f"CT ReduceMax m {tag}", t, axes=(-1,))
        else:
            mt, m_old, alpha = x["mt"], x["m_old"], x["alpha"]
            vec("ReduceMax", [(r, c)], (s,), (mt,), f"CT ReduceMax {tag}", t, axes=(-1,))
            vec("Max", [(r, 1), (r, 1)], (m_old, mt), (m,), f"CT Max m {tag}", t)
            vec("Sub", [(r, 1), (r, 1)], (m_old, m), (alpha,), f"CT Sub alpha {tag}", t)
            vec("Exp", [(r, 1)], (alpha,), (alpha,), f"CT Exp alpha {tag}", t)
        vec("Sub", [(r, c), (r, 1)], (s, m), (s,), f"CT Sub max {tag}", t)
        vec("Exp", [(r, c)], (s,), (s,), f"CT Exp {tag}", t)
        total = x["l"] if n == 0 else x["lt"]
        vec("ReduceSum", [(r, c)], (s,), (total,), f"CT ReduceSum {tag}", t, axes=(-1,))
        if staged_p:
            vec("Convert", [(r, c)], (s,), (x["p"],), f"CT Convert P {tag}", t, dtype=dt)
        if n > 0:
            l_, lt, alpha = x["l"], x["lt"], x["alpha"]
            vec("Mul", [(r, 1), (r, 1)], (l_, alpha), (l_,), f"CT Mul l {tag}", t)
            vec("Add", [(r, 1), (r, 1)], (l_, lt), (l_,), f"CT Add l {tag}", t)

    def ne2(t: int) -> None:
        h, nh, i, j, n, _, _ = work[t]
        x = ranges(t)
        into = x["acc"] if n == 0 and cfg.acc_ncx else x["pv"]
        mkn = (rows_of(i), cols_of(j), d)
        label = f"NE O+=PV {heads_tag(h, nh)} i{i} j{j}"
        ts.ne(mkn, dt, (x["p"], x["v"]), (into,), label, t, batch=nh)

    def ct2(t: int) -> None:
        h, nh, i, j, n, last, rb = work[t]
        r = nh * rows_of(i)
        x = ranges(t)
        acc, tag = x["acc"], f"{heads_tag(h, nh)} i{i} j{j}"
        add_src = x["pv"]
        if not cfg.acc_ncx:
            add_src = spm.at("PV_nd", t, 0, r * d * ve)
            target = acc if n == 0 else add_src
            ts.to_layout(r, d, vt, x["pv"], target, f"TDMA PV NCx->ND {tag}", t)
        if n > 0:
            vec("Mul", [(r, d), (r, 1)], (acc, x["alpha"]), (acc,), f"CT Mul acc {tag}", t)
            vec("Add", [(r, d), (r, d)], (acc, add_src), (acc,), f"CT Add acc {tag}", t)
        if not last:
            return
        l_, tag = x["l"], f"{heads_tag(h, nh)} i{i}"
        if cfg.save_lse:
            lse = spm.at("LSE", rb, 0, r * ve)
            vec("Log", [(r, 1)], (l_,), (lse,), f"CT Log lse {tag}", t)
            vec("Add", [(r, 1), (r, 1)], (lse, x["m"]), (lse,), f"CT Add lse {tag}", t)
        vec("Reciprocal", [(r, 1)], (l_,), (l_,), f"CT Reciprocal l {tag}", t)
        vec("Mul", [(r, d), (r, 1)], (acc, l_), (acc,), f"CT Mul O {tag}", t)
        out = acc
        if cfg.vector_dtype != cfg.dtype:
            out = spm.at("O", rb, 0, r * d * e)
            vec("Convert", [(r, d)], (acc,), (out,), f"CT Convert O {tag}", t, dtype=dt)
        if _final_move(cfg):
            moved = spm.at("O_out", rb, 0, r * d * e)
            way = "NCx->ND" if cfg.acc_ncx else "ND->NCx"
            ts.to_layout(r, d, dt, out, moved, f"TDMA O {way} {tag}", t)
            out = moved
        lo = (h * s1 + i * br) * d * e
        ts.store(r * d * e, out, ddr.at("O", lo, lo + r * d * e), f"WDMA O {tag}", t)
        if cfg.save_lse:
            lo = (h * s1 + i * br) * ve
            ts.store(r * ve, lse, ddr.at("LSE", lo, lo + r * ve), f"WDMA lse {tag}", t)

    n = len(work)
    if cfg.double_issue:
        for step in range(n + 2):
            if step < n:
                loads(step)
                ne1(step)
            if 0 <= step - 1 < n:
                ct1(step - 1)
                ne2(step - 1)
            if 0 <= step - 2 < n:
                ct2(step - 2)
    else:
        for t in range(n):
            loads(t)
            ne1(t)
            ct1(t)
            ne2(t)
            ct2(t)
    return ts


# ------------------------------------------------------------------ the model


def check_config(cfg: FaConfig, what: str = "FA") -> None:
    """Every knob in range, or one clear error naming it and what to do."""
    for name, value in (
        ("B", cfg.b),
        ("N1", cfg.n1),
        ("S1", cfg.s1),
        ("S2", cfg.keys),
        ("D", cfg.d),
        ("N2", cfg.kv_heads),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise Tx8labError(f"{what} shape: {name} must be a whole number >= 1, got {value!r}")
    if cfg.n1 % cfg.kv_heads:
        raise Tx8labError(
            f"{what} GQA: N1={cfg.n1} must be a multiple of N2={cfg.kv_heads}; "
            "give --kv-heads a divisor of the head count"
        )
    if cfg.block is not None and (len(cfg.block) != 2 or min(cfg.block) < 1):
        raise Tx8labError(f"{what} tiling: block sizes must be two numbers >= 1, got {cfg.block}")
    elem_bytes(cfg.dtype)
    elem_bytes(cfg.vector_dtype, "vector_dtype")
    for name, knob in (("v_rows", cfg.v_rows), ("head_batch", cfg.head_batch)):
        if knob is not None and knob < 1:
            raise Tx8labError(f"{what} tiling: {name} must be >= 1 (or None), got {knob}")
    if cfg.double_issue and not cfg.pingpong:
        raise Tx8labError(
            f"{what} tiling: double_issue (the NE one block ahead) needs pingpong=True "
            "(two S/P/PV slots)"
        )
    if cfg.split not in (None, "fused", "bn", "bns1", "bn2"):
        raise Tx8labError(f"{what} split must be 'fused', 'bn', 'bn2' or 'bns1', got {cfg.split!r}")
    if cfg.transpose not in ("tdma", "ct", "ne"):
        raise Tx8labError(f"{what} transpose must be 'tdma', 'ct' or 'ne', got {cfg.transpose!r}")
    if cfg.io_layout not in ("nd", "ncx"):
        raise Tx8labError(f"{what} io_layout must be 'nd' or 'ncx', got {cfg.io_layout!r}")
    if cfg.ddr_tiles is not None and cfg.ddr_tiles < 1:
        raise Tx8labError(f"{what} ddr_tiles must be >= 1 (or None), got {cfg.ddr_tiles}")


#: Block pairs (heads x row blocks x column blocks) :func:`model` and the backward model
#: play at most; ``tx8lab fa --max-block-pairs``. Every pair is a few commands on a tile
#: (about 0.2 ms and 10 KiB each), so this bounds a model to seconds and a few hundred MB.
MAX_BLOCK_PAIRS = 1 << 16


class FaTooLarge(Tx8labError):
    """A shape and tiling with more block pairs than the budget (:func:`check_size`)."""


class FaTilingError(Tx8labError):
    """A tiling that does not fit a tile's SPM, or a block its template does not admit."""


def check_size(
    cfg: FaConfig, max_block_pairs: int | None = MAX_BLOCK_PAIRS, what: str = "FA"
) -> int:
    """The block pairs of a resolved ``cfg``, refused above ``max_block_pairs``.

    B x N1 x row blocks x column blocks (the pairs a causal mask skips counted too, a
    pass of several heads counted per head), counted before anything is built.
    ``max_block_pairs`` None: no bound.
    """
    br, bc = cfg.c_block
    pairs = cfg.b * cfg.n1 * -(-cfg.s1 // br) * -(-cfg.keys // bc)
    if max_block_pairs is not None and pairs > max_block_pairs:
        raise FaTooLarge(
            f"{what} shape B={cfg.b} N={cfg.n1} S1={cfg.s1} S2={cfg.keys} at block {br}x{bc}: "
            f"{pairs:,} block pairs to model, above max_block_pairs={max_block_pairs:,}; "
            "take larger blocks or a smaller shape, or raise --max-block-pairs"
        )
    return pairs


def model(
    cfg: FaConfig, hw: ChipConfig, *, max_block_pairs: int | None = MAX_BLOCK_PAIRS
) -> FaModel:
    """The modelled FA forward on the chip: every tile simulated, the slowest one reported.

    The template comes first (:func:`resolve`): its tiling is the one simulated.

    Raises:
        FaTooLarge: more block pairs than ``max_block_pairs`` (:func:`check_size`).
    """
    cfg, tmpl, source = resolve(cfg, hw)
    check_size(cfg, max_block_pairs)
    usable = hw.tile.spm_usable_bytes
    resident = cfg.kv_resident
    if resident is None:
        resident = spm_bytes(cfg, True) <= usable
    need = spm_bytes(cfg, resident)
    if need > usable:
        raise FaTilingError(
            f"FA tiling block={cfg.block} heads/pass={cfg.heads_per_pass} (template "
            f"{tmpl.name}, pingpong={cfg.pingpong}, kv_resident={resident}) needs {need:,} B "
            f"of SPM but a tile has {usable:,} B: choose smaller blocks"
        )
    tiles = hw.tile_count
    split = split_work(cfg, tiles)
    rows = _row_pairs(cfg)
    tile_pairs = tuple(sum(rows[i] * cfg.pass_heads(u)[1] for u, i in units) for units in split)
    active = cfg.ddr_tiles or max(1, sum(1 for units in split if units))
    tset = run_tiles(
        tiles,
        lambda t: build_tile(cfg, hw, split[t], resident, active) if split[t] else None,
        lambda t: _signature(cfg, split[t]) if split[t] else None,
        hw,
    )
    key = forward_tiling_key(tmpl, dtype=cfg.dtype, causal=cfg.causal, double_buffer=cfg.pingpong)
    mean = sum(tile_pairs) / tiles
    return FaModel(
        config=cfg,
        **tset.timing(),
        tile_pairs=tile_pairs,
        load_balance=mean / max(tile_pairs) if max(tile_pairs) else 1.0,
        spm_bytes=need,
        kv_resident=resident,
        template=tmpl.name,
        template_source=source,
        tiling_key=encode_tiling_key(key),
        tiles=tset,
    )


def _signature(
    cfg: FaConfig, units: list[tuple[int, int]]
) -> tuple[tuple[int, int, int, int], ...]:
    """What a tile's timing depends on: row blocks, heads per pass, where the K/V changes."""
    out = []
    prev = (-1, -1)
    for u, i in units:
        h, nh = cfg.pass_heads(u)
        kv = cfg.kv_span(h, nh)
        out.append((i, nh, kv[1], int(kv != prev)))
        prev = kv
    return tuple(out)


# ------------------------------------------------------------------ calibration and search


def board_config(**overrides: object) -> FaConfig:
    """The board kernel's tiling: [1,28,2048,128] causal BF16, 256x256, whole heads per tile.

    28 heads on 16 tiles (72 pairs on the busiest), no cube double issue and one buffer
    (its K/V double buffering "gave no net gain", hw-fa-fusion §1.4), asynchronous issue.
    The board's blocks are its own (not seed 004's S1S2 template's 128 x 1024; the block
    keeps that template's axes, so it runs under it). Its vector work runs over the
    whole 256 x 256 block (``cv_ratio=False``): the board notes name the kernel's blocks
    (BQ = BK = 256) and no Vector sub-block.
    """
    cfg = FaConfig(
        b=1, n1=28, s1=2048, d=128, causal=True, dtype="bf16", block=(256, 256),
        pingpong=False, double_issue=False, split="bn", cv_ratio=False,
    )  # fmt: skip
    return replace(cfg, **overrides)  # type: ignore[arg-type]


#: Alternative readings the calibration table shows beside the default: (label, knobs,
#: the quantities it reports).
READINGS: tuple[tuple[str, dict[str, object], tuple[str, ...]], ...] = (
    ("vector math in bf16", {"vector_dtype": "bf16"}, ("latency", "ct")),
    ("K/V streamed per pair", {"kv_resident": False}, ("latency", "rdma", "tdma")),
    ("accumulator moved to ND each pair", {"acc_ncx": False}, ("latency", "tdma")),
    ("K^T by CT Transpose", {"transpose": "ct"}, ("latency", "ct", "tdma")),
    ("DDR not shared (one tile's rate)", {"ddr_tiles": 1}, ("latency", "wdma")),
    ("kernel core joins on inputs (what-if)", {"sync_issue": True}, ("latency",)),
)

_QUANTITY = {
    "latency": ("kernel body (slowest tile)", "latency_ms"),
    "ne": ("NE busy", "ne_ms"),
    "ct": ("CT busy", "ct_ms"),
    "rdma": ("RDMA busy", "rdma_ms"),
    "wdma": ("WDMA busy", "wdma_ms"),
    "tdma": ("TDMA busy", "tdma_ms"),
}


def calibration(hw: ChipConfig) -> list[dict[str, object]]:
    """Modelled vs board (ms) for the board's tiling: the default reading, then the others.

    The first six rows are the kernel body and the five engines (per-tile maxima, as the
    board reports them) under the default readings; each row after them changes one
    reading (:data:`READINGS`, ``reading`` names the knob).
    """

    def value(m: FaModel, what: str) -> float:
        return m.latency_ms if what == "latency" else m.busy_ms[what]

    out: list[dict[str, object]] = []

    def row(name: str, reading: str, got: float, what: str) -> None:
        want = BOARD[_QUANTITY[what][1]]
        assert isinstance(want, float)
        out.append(
            {
                "quantity": name,
                "reading": reading,
                "model_ms": got,
                "board_ms": want,
                "ratio": got / want if want else math.nan,
            }
        )

    base = model(board_config(), hw)
    for what in ("latency", "ne", "ct", "rdma", "wdma", "tdma"):
        row(_QUANTITY[what][0], "default", value(base, what), what)
    for label, knobs, quantities in READINGS:
        alt = model(board_config(**knobs), hw)
        setting = ", ".join(f"{k}={v!r}" for k, v in knobs.items())
        for what in quantities:
            name = "kernel body" if what == "latency" else _QUANTITY[what][0]
            row(f"  {label}: {name}", setting, value(alt, what), what)
    return out


#: Pipelining options the search tries: name -> (pingpong, double_issue).
SCHEDULES: dict[str, tuple[bool, bool]] = {
    "serial": (False, False),
    "pingpong": (True, False),
    "double-issue": (True, True),
}


def schedule_name(cfg: FaConfig) -> str:
    """The :data:`SCHEDULES` name of ``cfg``'s pipelining (``+joins`` with ``sync_issue``)."""
    key = (cfg.pingpong, cfg.double_issue)
    name = next((n for n, v in SCHEDULES.items() if v == key), "custom")
    return f"{name}+joins" if cfg.sync_issue else name


def candidates(cfg: FaConfig, sizes: tuple[int, ...] = (128, 256, 512)) -> Iterator[FaConfig]:
    """Tilings the search tries: ``cfg``'s own, then block sizes x pipelining x split.

    ``cfg``'s own tiling (the template's when it gives no block) comes under every
    pipelining.
    Every candidate keeps ``cfg``'s other knobs (template, issue model, vector type,
    layouts), so the candidates and the baseline ``cfg`` are modelled alike; a block the
    template does not admit is left out by :func:`search`.
    """
    for pp, di in SCHEDULES.values():
        yield replace(cfg, pingpong=pp, double_issue=di)
    splits: tuple[Split, ...] = ("bn", "bns1")
    for br, bc, (pp, di), split in itertools.product(sizes, sizes, SCHEDULES.values(), splits):
        if br > max(cfg.s1, 16) * 2 or bc > max(cfg.keys, 16) * 2:
            continue
        yield replace(cfg, block=(br, bc), pingpong=pp, double_issue=di, split=split)


def search(
    cfg: FaConfig,
    hw: ChipConfig,
    sizes: tuple[int, ...] = (128, 256, 512),
    *,
    max_block_pairs: int | None = MAX_BLOCK_PAIRS,
) -> tuple[FaModel, list[FaModel]]:
    """The best modelled tiling (lowest latency) and every feasible one tried.

    A candidate that does not fit the SPM, or whose block the given template does not
    admit, is left out, and so is one above ``max_block_pairs``; when every one is too
    large, the error of the one with the fewest pairs is raised.
    """
    check_config(cfg)
    tried: list[FaModel] = []
    seen: set[FaConfig] = set()
    too_large: list[tuple[int, FaTooLarge]] = []
    for cand in candidates(cfg, sizes):
        try:
            resolved = resolve(cand, hw)[0]
        except FaTilingError:
            continue  # a block the template does not admit
        if resolved in seen:
            continue
        seen.add(resolved)
        try:
            check_size(resolved, max_block_pairs)
        except FaTooLarge as err:
            too_large.append((check_size(resolved, None), err))
            continue
        try:
            tried.append(model(cand, hw, max_block_pairs=None))
        except FaTilingError:
            continue  # does not fit SPM
    if not tried and too_large:
        raise min(too_large, key=lambda t: t[0])[1]
    if not tried:
        raise Tx8labError(f"FA search: no tiling of {sizes} fits the SPM for {cfg}")
    best = min(tried, key=lambda m: (m.latency_ms, m.config.c_block))
    return best, tried


__all__ = [
    "BOARD",
    "ENGINES",
    "MAX_BLOCK_PAIRS",
    "READINGS",
    "SCHEDULES",
    "V_BLOCK_BYTES",
    "FaConfig",
    "FaModel",
    "FaTilingError",
    "FaTooLarge",
    "apply_template",
    "board_config",
    "build_tile",
    "calibration",
    "candidates",
    "check_config",
    "check_size",
    "fit_tiling",
    "given_block_template",
    "model",
    "resolve",
    "schedule_name",
    "search",
    "split_units",
    "split_work",
    "spm_bytes",
    "spm_layout",
]
