"""FlashAttention backward (FAG) on TX8 tiles: per-tile command streams, the tile simulator.

Spec: seed 004 §1 (FAG templates: UB splits S1 and S2, cores split B·N2·G·S1·S2 or B·N2),
§2.1/§3 (C/V tiling, ping-pong, the NE running ahead), the FA-2 backward pass
(hw-fa-fusion §3.1: backward = 2.5x forward FLOPs), seed 001 (Cx/NCx, TDMA
``op_gatherScatter``), issue 19 (one simulator, engine laws). It builds each tile's
command stream with the forward model's machinery (:mod:`.stream`: SPM byte ranges, NE /
DMA / TDMA laws, vector commands timed by the op library's CT law) and plays it on
:func:`tx8lab.hw.sim.simulate`; the knobs are the forward's (:class:`~.timeline.FaConfig`:
``transpose``, ``io_layout``, ``vector_dtype``, ``sync_issue`` ...).

Loop order (FA-2, key/value outer): a tile owns (head, key block j) units; for each it loads
K_j and V_j, makes the operands the NE reads (Kᵀ for S = Q Kᵀ, K in NCx for dQ = dS K,
Vᵀ for dP = dO Vᵀ), keeps dK_j and dV_j (``vector_dtype``, NCx) in SPM and walks the row
blocks i (from the diagonal under a causal mask). Per pair:

- loads Q_i and dO_i (to NCx on the TDMA with ``io_layout="nd"``) and the row statistics
  (logsumexp and ``D = rowsum(dO * O)``, one load);
- ``NE S = Q_i Kᵀ``; ``CT`` P = exp(scale S - lse): ``Mul``, ``Where`` (diagonal
  blocks), ``Sub``, ``Exp``, ``Convert`` to the input type;
- Pᵀ (``transpose``), ``NE dV += Pᵀ dO``; ``NE dP = dO Vᵀ``; ``CT`` dS = P (dP - D):
  ``Sub``, ``Mul``, ``Convert``; dSᵀ (``transpose``), ``NE dK += dSᵀ Q``;
  ``NE dQ_i partial = dS K``;
- dQ_i accumulates in a DDR workspace (``vector_dtype``): the first visit of row i on the
  tile stores the partial, later ones load the workspace, ``Add`` and store it back (the
  DDR byte ranges order the read after the previous store).

At the end of a key block: ``Convert`` dK_j and dV_j, move them to ND (``io_layout="nd"``)
and store them.

Readings chosen where the seed is vague:

- TX8 documents no atomic add into DDR, so dQ is a read-modify-write of a workspace
  (Ascend's FAG adds into GM atomically); the final dQ cast is not charged. With
  ``split="bns1"`` tiles that share a head's rows would also need a cross-tile dQ
  reduction, which is not modelled (each tile's first visit stores its own partial).
- The transposed NE operands (Kᵀ, Vᵀ, Pᵀ, dSᵀ) are made as the forward makes Kᵀ
  (``transpose``: TDMA single-element GatherScatter by default, or the CT's
  ``Transpose``, or read by the NE as a what-if). Under the default the per-pair Pᵀ and
  dSᵀ moves dominate: the TDMA, not the NE, bounds the backward.
- ``double_issue`` issues the next pair's loads and ``NE S`` before the rest of the
  current pair (the NE runs one block ahead), as in the forward model; it needs ping-pong.
- Core split: ``"bn"`` whole heads round robin, ``"bns1"`` (here: key blocks, the FAG's
  outer axis) weighted by their pair counts, longest first. The ``D`` pre-pass is not
  charged (one CT op per output element, small next to the pairs).
- dK_j and dV_j have one slot each (the next key block's first products wait for their
  cast); K and V operands two unit slots (the next unit's load overlaps).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.sim import Range, SimCommand
from tx8lab.kernels.flash_attention.numerics import block_pairs
from tx8lab.kernels.flash_attention.stream import (
    DdrLayout,
    SpmLayout,
    TileSet,
    TileStream,
    elem_bytes,
    run_tiles,
)
from tx8lab.kernels.flash_attention.templates import choose_backward_template
from tx8lab.kernels.flash_attention.timeline import (
    MAX_BLOCK_PAIRS,
    FaConfig,
    check_config,
    check_size,
    split_units,
    vector_op,
)


@dataclass(frozen=True)
class FagModel:
    """The modelled FA backward on the chip."""

    config: FaConfig
    latency_ms: float
    """Kernel body of the slowest tile."""
    tile_ms: dict[int, float]
    busy_ms: dict[str, float]
    """Engine -> busy ms, the largest over the tiles (``ne ct rdma wdma tdma kcore``)."""
    stall_ms: dict[str, dict[str, float]]
    """Engine -> stall reason -> ms on the slowest tile."""
    busiest_tile: int
    """The slowest tile."""
    limiting_engine: str
    top_stall: tuple[str, str, float]
    tile_pairs: tuple[int, ...]
    load_balance: float
    spm_bytes: int
    template: str
    tiles: TileSet = field(repr=False)

    @property
    def commands(self) -> tuple[SimCommand, ...]:
        """The slowest tile's command stream."""
        return tuple(self.tiles.stream.commands)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready summary."""
        return {
            **self.tiles.timing_json(),
            "tile_pairs": list(self.tile_pairs),
            "load_balance": self.load_balance,
            "spm_bytes": self.spm_bytes,
            "template": self.template,
        }


def fag_spm_layout(cfg: FaConfig) -> SpmLayout:
    """The tile's SPM buffers for the backward tiling (module docstring)."""
    br, bc = cfg.block
    d, e, ve = cfg.d, elem_bytes(cfg.dtype), elem_bytes(cfg.vector_dtype, "vector_dtype")
    slots = 2 if cfg.pingpong else 1
    spm = SpmLayout()
    spm.add("K_in", bc * d * e, 2)
    spm.add("V_in", bc * d * e, 2)
    spm.add("KT", bc * d * e, 2)
    if cfg.io_layout == "nd":
        spm.add("K", bc * d * e, 2)
    spm.add("VT", bc * d * e, 2)
    spm.add("dK", bc * d * ve, 1)
    spm.add("dV", bc * d * ve, 1)
    if cfg.vector_dtype != cfg.dtype:
        spm.add("dK_out", bc * d * e, 1)
        spm.add("dV_out", bc * d * e, 1)
    if cfg.io_layout == "nd":
        spm.add("dK_nd", bc * d * e, 1)
        spm.add("dV_nd", bc * d * e, 1)
        spm.add("Q_in", br * d * e, slots)
        spm.add("dO_in", br * d * e, slots)
    spm.add("Q", br * d * e, slots)
    spm.add("dO", br * d * e, slots)
    spm.add("STATS", 2 * br * ve, slots)
    spm.add("S", br * bc * ve, slots)
    if cfg.vector_dtype != cfg.dtype:
        spm.add("P", br * bc * e, slots)
        spm.add("dS", br * bc * e, slots)
    spm.add("PT", br * bc * e, slots)
    spm.add("dP", br * bc * ve, slots)
    spm.add("dST", br * bc * e, slots)
    spm.add("dQp", br * d * ve, slots)
    spm.add("dQ_in", br * d * ve, slots)
    return spm


def fag_spm_bytes(cfg: FaConfig) -> int:
    """SPM one tile needs for the backward tiling (:func:`fag_spm_layout`)."""
    return fag_spm_layout(cfg).total_bytes


def _col_pairs(cfg: FaConfig) -> list[list[int]]:
    br, bc = cfg.block
    cols: list[list[int]] = [[] for _ in range(-(-cfg.keys // bc))]
    for i, j in block_pairs(cfg.s1, cfg.keys, br, bc, cfg.causal):
        cols[j].append(i)
    return cols


def split_fag_work(cfg: FaConfig, tiles: int) -> list[list[tuple[int, int]]]:
    """(head, key block) units per tile."""
    cols = _col_pairs(cfg)
    return split_units([len(c) for c in cols], cfg.b * cfg.n1, tiles, cfg.split)


def build_fag_tile(
    cfg: FaConfig, hw: ChipConfig, units: list[tuple[int, int]], active_tiles: int = 1
) -> TileStream:
    """The backward command stream of one tile walking ``units`` (head, key block)."""
    br, bc = cfg.block
    d, s1, s2, dt, vt = cfg.d, cfg.s1, cfg.keys, cfg.dtype, cfg.vector_dtype
    e, ve = elem_bytes(dt), elem_bytes(vt, "vector_dtype")
    g = cfg.n1 // cfg.kv_heads
    spm = fag_spm_layout(cfg)
    ddr = DdrLayout()
    q_bytes = cfg.b * cfg.n1 * s1 * d * e
    kv_bytes = cfg.b * cfg.kv_heads * s2 * d * e
    for name, size in (("Q", q_bytes), ("dO", q_bytes), ("K", kv_bytes), ("V", kv_bytes)):
        ddr.add(name, size)
    ddr.add("STATS", cfg.b * cfg.n1 * s1 * 2 * ve)
    ddr.add("dQ", cfg.b * cfg.n1 * s1 * d * ve)
    ddr.add("dK", cfg.b * cfg.n1 * s2 * d * e)
    ddr.add("dV", cfg.b * cfg.n1 * s2 * d * e)
    ts = TileStream(hw, active_tiles, cfg.sync_issue)
    staged = cfg.vector_dtype != cfg.dtype
    cols = _col_pairs(cfg)
    work: list[tuple[int, int, int, bool, bool, int]] = []  # h, i, j, first, last, unit
    for u, (h, j) in enumerate(units):
        for n, i in enumerate(cols[j]):
            work.append((h, i, j, n == 0, n == len(cols[j]) - 1, u))
    visited: set[tuple[int, int]] = set()
    operands: dict[int, tuple[Range, Range]] = {}  # unit -> (K^T, V^T) the NE reads

    rows_of, cols_of, vec = cfg.block_rows, cfg.block_cols, vector_op(ts, cfg)

    def transposed(
        rows: int, cols_: int, src: Range, dst: Range, label: str, t: int, nd: bool
    ) -> Range:
        """Make a transposed NE operand (``transpose`` knob); the range the NE reads.

        ``nd``: the source is a staging copy of a DDR tensor in ND (it needs a move to
        NCx even when the NE reads it transposed).
        """
        if cfg.transpose == "tdma":
            ts.transpose(rows, cols_, dt, src, dst, f"TDMA {label}", t)
        elif cfg.transpose == "ct":
            vec("Transpose", [(rows, cols_)], (src,), (dst,), f"CT {label}", t, perm=(1, 0))
        elif nd:
            ts.to_layout(rows, cols_, dt, src, dst, f"TDMA {label} ND->NCx (NE transposes)", t)
        else:
            return src
        return dst

    def rng(name: str, t: int, size: int) -> Range:
        return spm.at(name, t, 0, size)

    def front(t: int) -> None:
        h, i, j, first, _, u = work[t]
        r, c = rows_of(i), cols_of(j)
        hk = h // g
        if first:
            lo = (hk * s2 + j * bc) * d * e
            k_in, v_in = rng("K_in", u, c * d * e), rng("V_in", u, c * d * e)
            ts.load(c * d * e, ddr.at("K", lo, lo + c * d * e), k_in, f"RDMA K h{hk} j{j}", t)
            ts.load(c * d * e, ddr.at("V", lo, lo + c * d * e), v_in, f"RDMA V h{hk} j{j}", t)
            kt_nd = cfg.io_layout == "nd"
            kt = transposed(c, d, k_in, rng("KT", u, c * d * e), f"K^T h{hk} j{j}", t, kt_nd)
            if cfg.io_layout == "nd":
                k_ncx = rng("K", u, c * d * e)
                ts.to_layout(c, d, dt, k_in, k_ncx, f"TDMA K ND->NCx h{hk} j{j}", t)
            vt_ = transposed(c, d, v_in, rng("VT", u, c * d * e), f"V^T h{hk} j{j}", t, kt_nd)
            operands[u] = (kt, vt_)
        lo = (h * s1 + i * br) * d * e
        for name in ("Q", "dO"):
            dst = rng(name, t, r * d * e)
            src = ddr.at(name, lo, lo + r * d * e)
            staging = rng(f"{name}_in", t, r * d * e) if cfg.io_layout == "nd" else None
            ts.load_ncx(r, d, dt, src, dst, staging, name, f"h{h} i{i}", t)
        lo = (h * s1 + i * br) * 2 * ve
        stats = rng("STATS", t, 2 * r * ve)
        ts.load(2 * r * ve, ddr.at("STATS", lo, lo + 2 * r * ve), stats, f"RDMA lse,D h{h} i{i}", t)
        ts.ne(
            (r, d, c),
            dt,
            (rng("Q", t, r * d * e), operands[u][0]),
            (rng("S", t, r * c * ve),),
            f"NE S=QK^T h{h} i{i} j{j}",
            t,
        )

    def back(t: int) -> None:
        h, i, j, first, last, u = work[t]
        r, c = rows_of(i), cols_of(j)
        tag = f"h{h} i{i} j{j}"
        s, stats = rng("S", t, r * c * ve), rng("STATS", t, 2 * r * ve)
        q, do = rng("Q", t, r * d * e), rng("dO", t, r * d * e)
        dk, dv = rng("dK", 0, c * d * ve), rng("dV", 0, c * d * ve)
        vec("Mul", [(r, c), (1,)], (s,), (s,), f"CT Mul scale S {tag}", t)
        if cfg.causal and (j + 1) * bc - 1 > i * br:
            vec("Where", [(r, c), (r, c), (1,)], (s,), (s,), f"CT Where causal {tag}", t)
        vec("Sub", [(r, c), (r, 1)], (s, stats), (s,), f"CT Sub lse {tag}", t)
        vec("Exp", [(r, c)], (s,), (s,), f"CT Exp P {tag}", t)

        def accumulate(x: Range, name: str, y: Range, acc: Range, what: str) -> Range:
            """``acc (+)= xᵀ y`` on the NE, ``x`` first in the NE's type when staged.

            Returns ``x`` as the NE read it (dS feeds dQ too).
            """
            if staged:
                x_ne = rng(name, t, r * c * e)
                vec("Convert", [(r, c)], (x,), (x_ne,), f"CT Convert {name} {tag}", t, dtype=dt)
                x = x_ne
            xt = transposed(r, c, x, rng(f"{name}T", t, r * c * e), f"{name}^T {tag}", t, False)
            reads = (xt, y) if first else (xt, y, acc)
            ts.ne((c, r, d), dt, reads, (acc,), f"NE {what} {tag}", t)
            return x

        accumulate(s, "P", do, dv, "dV+=P^T dO")
        dp = rng("dP", t, r * c * ve)
        ts.ne((r, d, c), dt, (do, operands[u][1]), (dp,), f"NE dP=dO V^T {tag}", t)
        vec("Sub", [(r, c), (r, 1)], (dp, stats), (dp,), f"CT Sub D {tag}", t)
        vec("Mul", [(r, c), (r, c)], (dp, s), (dp,), f"CT Mul dS {tag}", t)
        ds = accumulate(dp, "dS", q, dk, "dK+=dS^T Q")
        dqp = rng("dQp", t, r * d * ve)
        k_ncx = rng("K" if cfg.io_layout == "nd" else "K_in", u, c * d * e)
        ts.ne((r, c, d), dt, (ds, k_ncx), (dqp,), f"NE dQ=dS K {tag}", t)
        lo = (h * s1 + i * br) * d * ve
        dq = ddr.at("dQ", lo, lo + r * d * ve)
        if (h, i) in visited:  # read-modify-write of the workspace
            dq_in = rng("dQ_in", t, r * d * ve)
            ts.load(r * d * ve, dq, dq_in, f"RDMA dQ h{h} i{i}", t)
            vec("Add", [(r, d), (r, d)], (dq_in, dqp), (dq_in,), f"CT Add dQ {tag}", t)
            ts.store(r * d * ve, dq_in, dq, f"WDMA dQ h{h} i{i}", t)
        else:
            visited.add((h, i))
            ts.store(r * d * ve, dqp, dq, f"WDMA dQ h{h} i{i}", t)
        if not last:
            return
        tag = f"h{h} j{j}"
        for name, acc in (("dK", dk), ("dV", dv)):
            out = acc
            if staged:
                out = rng(f"{name}_out", 0, c * d * e)
                vec("Convert", [(c, d)], (acc,), (out,), f"CT Convert {name} {tag}", t, dtype=dt)
            if cfg.io_layout == "nd":
                moved = rng(f"{name}_nd", 0, c * d * e)
                ts.to_layout(c, d, dt, out, moved, f"TDMA {name} NCx->ND {tag}", t)
                out = moved
            lo = (h * s2 + j * bc) * d * e
            ts.store(c * d * e, out, ddr.at(name, lo, lo + c * d * e), f"WDMA {name} {tag}", t)

    n = len(work)
    if cfg.double_issue:
        for step in range(n + 1):
            if step < n:
                front(step)
            if step >= 1:
                back(step - 1)
    else:
        for t in range(n):
            front(t)
            back(t)
    return ts


def fag_model(
    cfg: FaConfig, hw: ChipConfig, *, max_block_pairs: int | None = MAX_BLOCK_PAIRS
) -> FagModel:
    """The modelled FA backward: every tile simulated, the slowest reported.

    Raises:
        FaTooLarge: more block pairs than ``max_block_pairs`` (forward's ``check_size``).
    """
    check_config(cfg, "FAG")
    check_size(cfg, max_block_pairs, "FAG")
    need = fag_spm_bytes(cfg)
    usable = hw.tile.spm_usable_bytes
    if need > usable:
        raise Tx8labError(
            f"FAG tiling block={cfg.block} (pingpong={cfg.pingpong}) needs {need:,} B of SPM "
            f"but a tile has {usable:,} B: choose smaller blocks"
        )
    tiles = hw.tile_count
    split = split_fag_work(cfg, tiles)
    cols = _col_pairs(cfg)
    tile_pairs = tuple(sum(len(cols[j]) for _, j in units) for units in split)
    active = cfg.ddr_tiles or max(1, sum(1 for units in split if units))
    g = cfg.n1 // cfg.kv_heads

    def signature(t: int) -> object:
        if not split[t]:
            return None
        # the timing depends on the key blocks and where a row is visited again
        seen: set[tuple[int, int]] = set()
        out = []
        for h, j in split[t]:
            again = tuple(int((h, i) in seen) for i in cols[j])
            seen.update((h, i) for i in cols[j])
            out.append((j, h // g, again))
        return tuple(out)

    tset = run_tiles(
        tiles,
        lambda t: build_fag_tile(cfg, hw, split[t], active) if split[t] else None,
        signature,
        hw,
    )
    tmpl = choose_backward_template(
        cfg.b, cfg.kv_heads, cfg.n1 // cfg.kv_heads, cfg.s1, cfg.keys, tiles
    )
    return FagModel(
        config=cfg,
        **tset.timing(),
        tile_pairs=tile_pairs,
        load_balance=(sum(tile_pairs) / tiles) / max(tile_pairs) if max(tile_pairs) else 1.0,
        spm_bytes=need,
        template=tmpl.name,
        tiles=tset,
    )


__all__ = [
    "FagModel",
    "build_fag_tile",
    "fag_model",
    "fag_spm_bytes",
    "fag_spm_layout",
    "split_fag_work",
]
