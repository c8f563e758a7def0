"""FlashAttention forward on TX8 tiles: per-tile command streams timed by the tile simulator.

Spec: seed 004 §2.1 (C/V tiling: Cube block, Vector block, "Vector 计算使用的数据类型是
float32"), §3.1 (V-side ping-pong), §3.2 (CV pipelining, "Cube 双发": the Cube issues one
block ahead); seed 001 (Cx/NCx layouts, the LSU's TDMA ``op_gatherScatter``, NE ops are
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

Work split: the B·N1 heads x S1 row blocks over the tiles (``split="bn"``: whole heads
round robin, as the board kernel; ``"bns1"``: row blocks weighted by their pair counts,
longest first). Each tile walks its (row block i, key block j) pairs. Per pair, in the
FA-2 order (``n`` is the pair's index in its row block):

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
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

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
    choose_forward_template,
    encode_tiling_key,
    forward_tiling_key,
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

Transpose = Literal["tdma", "ct", "ne"]
IoLayout = Literal["nd", "ncx"]


@dataclass(frozen=True)
class FaConfig:
    """One FA forward problem and its tiling (the knobs of the model)."""

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
    block: tuple[int, int] = (256, 256)
    """NE (C) block (BR, BC): rows of Q, columns of K per pair."""
    v_rows: int | None = None
    """CT (V) block rows per vector command; default BR (whole C block, ratio 1)."""
    pingpong: bool = True
    """Two slots for every per-pair buffer (else one)."""
    double_issue: bool = True
    """The seed's ring: the NE runs one block ahead of the CT (needs ``pingpong``)."""
    split: Literal["bn", "bns1"] = "bns1"
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
    def vector_pieces(self) -> int:
        """CT commands per C block: its BR rows in ``v_rows`` pieces (1 by default)."""
        br = self.block[0]
        return -(-br // (br if self.v_rows is None else self.v_rows))

    def block_rows(self, i: int) -> int:
        """Rows of Q in row block ``i`` (the last one may be short)."""
        br = self.block[0]
        return min(self.s1, (i + 1) * br) - i * br

    def block_cols(self, j: int) -> int:
        """Keys in key block ``j`` (the last one may be short)."""
        bc = self.block[1]
        return min(self.keys, (j + 1) * bc) - j * bc


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
            cfg.vector_pieces, attrs,
        )  # fmt: skip

    return vec


@dataclass(frozen=True)
class FaModel:
    """The modelled FA forward on the chip."""

    config: FaConfig
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
        cfg["block"] = list(self.config.block)
        return {
            **self.tiles.timing_json(),
            "waiting_on": self.waiting_on(),
            "commands": len(self.commands),
            "tile_pairs": list(self.tile_pairs),
            "load_balance": self.load_balance,
            "spm_bytes": self.spm_bytes,
            "kv_resident": self.kv_resident,
            "template": self.template,
            "tiling_key": str(self.tiling_key),
            "schedule": schedule_name(self.config),
            "config": cfg,
        }


# ------------------------------------------------------------------ work split


def _row_pairs(cfg: FaConfig) -> list[int]:
    br, bc = cfg.block
    pairs = block_pairs(cfg.s1, cfg.keys, br, bc, cfg.causal)
    rows = [0] * (-(-cfg.s1 // br))
    for i, _ in pairs:
        rows[i] += 1
    return rows


def split_work(cfg: FaConfig, tiles: int) -> list[list[tuple[int, int]]]:
    """(head, row block) units per tile: whole heads round robin, or row blocks longest-first.

    Examples:
        >>> cfg = FaConfig(b=1, n1=28, s1=2048, d=128, causal=True, split="bn")
        >>> [len(u) for u in split_work(cfg, 16)][:2], max(len(u) for u in split_work(cfg, 16))
        ([16, 16], 16)
    """
    return split_units(_row_pairs(cfg), cfg.b * cfg.n1, tiles, cfg.split)


def split_units(
    weights: list[int], heads: int, tiles: int, split: str
) -> list[list[tuple[int, int]]]:
    """(head, block) units per tile; ``weights[i]`` is block i's pair count (0: no work).

    ``bn``: whole heads round robin; ``bns1``: blocks longest-first onto the least loaded
    tile. The forward splits row blocks, the backward key blocks.
    """
    out: list[list[tuple[int, int]]] = [[] for _ in range(tiles)]
    if split == "bn":
        for h in range(heads):
            out[h % tiles].extend((h, i) for i in range(len(weights)) if weights[i])
        return out
    if split != "bns1":
        raise Tx8labError(f"FA split must be 'bn' or 'bns1', got {split!r}")
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


def spm_layout(cfg: FaConfig, kv_resident: bool) -> SpmLayout:
    """The tile's SPM buffers for the tiling (module docstring)."""
    br, bc = cfg.block
    d, e, ve = cfg.d, elem_bytes(cfg.dtype), elem_bytes(cfg.vector_dtype, "vector_dtype")
    slots = 2 if cfg.pingpong else 1
    spm = SpmLayout()
    spm.add("Q", br * d * e, slots)
    if cfg.io_layout == "nd":
        spm.add("Q_in", br * d * e, slots)
    kv_bytes, kv_slots = (cfg.keys * d * e, 1) if kv_resident else (bc * d * e, slots)
    spm.add("KT", kv_bytes, kv_slots)
    spm.add("V", kv_bytes, kv_slots)
    if _k_staged(cfg):
        spm.add("K_in", bc * d * e, slots)
    if cfg.io_layout == "nd":
        spm.add("V_in", bc * d * e, slots)
    spm.add("S", br * bc * ve, slots)
    if cfg.vector_dtype != cfg.dtype:
        spm.add("P", br * bc * e, slots)
    spm.add("PV", br * d * ve, slots)
    if not cfg.acc_ncx:
        spm.add("PV_nd", br * d * ve, slots)
    spm.add("ACC", br * d * ve, 2)
    if cfg.vector_dtype != cfg.dtype:
        spm.add("O", br * d * e, 2)
    if _final_move(cfg):
        spm.add("O_out", br * d * e, 2)
    spm.add("M", br * ve, 4)  # two row-block slots x two parities (old / new max)
    spm.add("L", br * ve, 2)
    if cfg.save_lse:
        spm.add("LSE", br * ve, 2)
    for name in ("MT", "LT", "ALPHA"):
        spm.add(name, br * ve, slots)
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
    """The command stream of one tile walking ``units`` (head, row block)."""
    br, bc = cfg.block
    d, s1, s2, dt, vt = cfg.d, cfg.s1, cfg.keys, cfg.dtype, cfg.vector_dtype
    e, ve = elem_bytes(dt), elem_bytes(vt, "vector_dtype")
    g = cfg.n1 // cfg.kv_heads
    spm, ddr = spm_layout(cfg, kv_resident), _ddr_layout(cfg)
    ts = TileStream(hw, active_tiles, cfg.sync_issue)
    by_row: dict[int, list[int]] = {}
    for i, j in block_pairs(s1, s2, br, bc, cfg.causal):
        by_row.setdefault(i, []).append(j)
    # the flat pair list: head, i, j, index in the row block, last?, row-block counter
    work: list[tuple[int, int, int, int, bool, int]] = []
    for rb, (h, i) in enumerate(units):
        js = by_row.get(i, [])
        work.extend((h, i, j, n, n == len(js) - 1, rb) for n, j in enumerate(js))
    loaded: dict[tuple[int, ...], int] = {}
    kv_loads = itertools.count()
    staged_p = spm.has("P")

    rows_of, cols_of, vec = cfg.block_rows, cfg.block_cols, vector_op(ts, cfg)

    def kv_range(name: str, j: int, t: int, c: int) -> Range:
        if kv_resident:
            lo = j * bc * d * e
            return spm.at(name, 0, lo, lo + c * d * e)
        return spm.at(name, t, 0, c * d * e)

    def loads(t: int) -> None:
        h, i, j, n, _, rb = work[t]
        r, c = rows_of(i), cols_of(j)
        if n == 0:
            lo = (h * s1 + i * br) * d * e
            src = ddr.at("Q", lo, lo + r * d * e)
            q = spm.at("Q", rb, 0, r * d * e)
            q_in = spm.at("Q_in", rb, 0, r * d * e) if cfg.io_layout == "nd" else None
            ts.load_ncx(r, d, dt, src, q, q_in, "Q", f"h{h} i{i}", t)
        hk = h // g
        key = (hk, j) if kv_resident else (hk, j, t)
        if key in loaded:
            return
        loaded[key] = t
        stage = next(kv_loads)
        lo = (hk * s2 + j * bc) * d * e
        kt, v = kv_range("KT", j, t, c), kv_range("V", j, t, c)
        k_src, v_src = ddr.at("K", lo, lo + c * d * e), ddr.at("V", lo, lo + c * d * e)
        if _k_staged(cfg):
            k_in = spm.at("K_in", stage, 0, c * d * e)
            ts.load(c * d * e, k_src, k_in, f"RDMA K h{hk} j{j}", t)
            if cfg.transpose == "tdma":
                ts.transpose(c, d, dt, k_in, kt, f"TDMA K^T h{hk} j{j}", t)
            elif cfg.transpose == "ct":
                vec("Transpose", [(c, d)], (k_in,), (kt,), f"CT K^T h{hk} j{j}", t, perm=(1, 0))
            else:
                ts.to_layout(c, d, dt, k_in, kt, f"TDMA K ND->NCx h{hk} j{j}", t)
        else:
            ts.load(c * d * e, k_src, kt, f"RDMA K h{hk} j{j}", t)
        v_in = spm.at("V_in", stage, 0, c * d * e) if cfg.io_layout == "nd" else None
        ts.load_ncx(c, d, dt, v_src, v, v_in, "V", f"h{hk} j{j}", t)

    cache: dict[int, dict[str, Range]] = {}

    def ranges(t: int) -> dict[str, Range]:
        if t in cache:
            return cache[t]
        _, i, j, n, _, rb = work[t]
        r, c = rows_of(i), cols_of(j)
        out: dict[str, Range] = {
            "q": spm.at("Q", rb, 0, r * d * e),
            "kt": kv_range("KT", j, t, c),
            "v": kv_range("V", j, t, c),
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
        h, i, j, *_ = work[t]
        x = ranges(t)
        mkn = (rows_of(i), d, cols_of(j))
        ts.ne(mkn, dt, (x["q"], x["kt"]), (x["s"],), f"NE S=QK^T h{h} i{i} j{j}", t)

    def ct1(t: int) -> None:
        h, i, j, n, _, _ = work[t]
        r, c = rows_of(i), cols_of(j)
        x = ranges(t)
        s, m, tag = x["s"], x["m"], f"h{h} i{i} j{j}"
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
        h, i, j, n, _, _ = work[t]
        x = ranges(t)
        into = x["acc"] if n == 0 and cfg.acc_ncx else x["pv"]
        mkn = (rows_of(i), cols_of(j), d)
        ts.ne(mkn, dt, (x["p"], x["v"]), (into,), f"NE O+=PV h{h} i{i} j{j}", t)

    def ct2(t: int) -> None:
        h, i, j, n, last, rb = work[t]
        r = rows_of(i)
        x = ranges(t)
        acc, tag = x["acc"], f"h{h} i{i} j{j}"
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
        l_, tag = x["l"], f"h{h} i{i}"
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
    if len(cfg.block) != 2 or min(cfg.block) < 1:
        raise Tx8labError(f"{what} tiling: block sizes must be two numbers >= 1, got {cfg.block}")
    elem_bytes(cfg.dtype)
    elem_bytes(cfg.vector_dtype, "vector_dtype")
    if cfg.v_rows is not None and cfg.v_rows < 1:
        raise Tx8labError(f"{what} tiling: v_rows must be >= 1 (or None), got {cfg.v_rows}")
    if cfg.double_issue and not cfg.pingpong:
        raise Tx8labError(
            f"{what} tiling: double_issue (the NE one block ahead) needs pingpong=True "
            "(two S/P/PV slots)"
        )
    if cfg.split not in ("bn", "bns1"):
        raise Tx8labError(f"{what} split must be 'bn' or 'bns1', got {cfg.split!r}")
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


def check_size(
    cfg: FaConfig, max_block_pairs: int | None = MAX_BLOCK_PAIRS, what: str = "FA"
) -> int:
    """The block pairs of ``cfg``, refused above ``max_block_pairs`` (None: no bound).

    B x N1 x row blocks x column blocks (the pairs a causal mask skips counted too),
    counted before anything is built.
    """
    br, bc = cfg.block
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

    Raises:
        FaTooLarge: more block pairs than ``max_block_pairs`` (:func:`check_size`).
    """
    check_config(cfg)
    check_size(cfg, max_block_pairs)
    usable = hw.tile.spm_usable_bytes
    resident = cfg.kv_resident
    if resident is None:
        resident = spm_bytes(cfg, True) <= usable
    need = spm_bytes(cfg, resident)
    if need > usable:
        raise Tx8labError(
            f"FA tiling block={cfg.block} (pingpong={cfg.pingpong}, kv_resident={resident}) "
            f"needs {need:,} B of SPM but a tile has {usable:,} B: choose smaller blocks"
        )
    tiles = hw.tile_count
    split = split_work(cfg, tiles)
    rows = _row_pairs(cfg)
    tile_pairs = tuple(sum(rows[i] for _, i in units) for units in split)
    active = cfg.ddr_tiles or max(1, sum(1 for units in split if units))
    tset = run_tiles(
        tiles,
        lambda t: build_tile(cfg, hw, split[t], resident, active) if split[t] else None,
        lambda t: _signature(cfg, split[t]) if split[t] else None,
        hw,
    )
    tmpl = choose_forward_template(
        cfg.b, cfg.kv_heads, cfg.n1 // cfg.kv_heads, cfg.s1, cfg.keys, tx8_limits(hw)
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
        tiling_key=encode_tiling_key(key),
        tiles=tset,
    )


def _signature(cfg: FaConfig, units: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """What a tile's timing depends on: row blocks and where the K/V head changes."""
    g = cfg.n1 // cfg.kv_heads
    out = []
    prev = -1
    for h, i in units:
        out.append((i, int(h // g != prev)))
        prev = h // g
    return tuple(out)


# ------------------------------------------------------------------ calibration and search


def board_config(**overrides: object) -> FaConfig:
    """The board kernel's tiling: [1,28,2048,128] causal BF16, 256x256, whole heads per tile.

    28 heads on 16 tiles (72 pairs on the busiest), no cube double issue and one buffer
    (its K/V double buffering "gave no net gain", hw-fa-fusion §1.4), asynchronous issue.
    """
    cfg = FaConfig(
        b=1, n1=28, s1=2048, d=128, causal=True, dtype="bf16", block=(256, 256),
        pingpong=False, double_issue=False, split="bn",
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
    """Tilings the search tries: block sizes x pipelining x split.

    Every candidate keeps ``cfg``'s other knobs (issue model, vector type, layouts), so
    the candidates and the baseline ``cfg`` are modelled alike.
    """
    splits: tuple[Literal["bn", "bns1"], ...] = ("bn", "bns1")
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

    A candidate above ``max_block_pairs`` is left out; when every one is, the error of
    the one with the fewest pairs is raised.
    """
    check_config(cfg)
    tried: list[FaModel] = []
    too_large: list[tuple[int, FaTooLarge]] = []
    for cand in candidates(cfg, sizes):
        try:
            check_size(cand, max_block_pairs)
        except FaTooLarge as err:
            too_large.append((check_size(cand, None), err))
            continue
        try:
            tried.append(model(cand, hw, max_block_pairs=None))
        except Tx8labError as err:
            if "SPM" not in str(err):
                raise
            continue  # does not fit SPM
    if not tried and too_large:
        raise min(too_large, key=lambda t: t[0])[1]
    if not tried:
        raise Tx8labError(f"FA search: no tiling of {sizes} fits the SPM for {cfg}")
    best = min(tried, key=lambda m: (m.latency_ms, m.config.block))
    return best, tried


__all__ = [
    "BOARD",
    "ENGINES",
    "MAX_BLOCK_PAIRS",
    "READINGS",
    "SCHEDULES",
    "FaConfig",
    "FaModel",
    "FaTooLarge",
    "board_config",
    "build_tile",
    "calibration",
    "candidates",
    "check_config",
    "check_size",
    "model",
    "schedule_name",
    "search",
    "split_units",
    "split_work",
    "spm_bytes",
    "spm_layout",
]
