"""FlashAttention backward (FAG) on TX8 tiles: per-tile command streams, the tile simulator.

Spec: seed 004 §1 (FAG templates: UB splits S1 and S2, cores split B·N2·G·S1·S2 or B·N2),
§2.1/§3 (C/V tiling, ping-pong, the NE running ahead), the FA-2 backward pass
(hw-fa-fusion §3.1: backward = 2.5x forward FLOPs), seed 001 (Cx/NCx, TDMA
``op_gatherScatter``), issue 19 (one simulator, engine laws). It builds each tile's
command stream with the forward model's machinery (:mod:`.stream`: SPM byte ranges, NE /
DMA / TDMA laws, vector commands timed by the op library's CT law) and plays it on
:func:`tx8lab.hw.sim.simulate`; the knobs are the forward's (:class:`~.timeline.FaConfig`:
``transpose``, ``io_layout``, ``vector_dtype``, ``sync_issue`` ...).

The backward template comes first (:func:`resolve_backward`): seed 004 §1's four FAG
templates by priority (``fag_template=`` overrides the choice) give the tiling that is
simulated: ``s1s2_bn2gs1s2`` 128 x 128 blocks (the Cube base, §2.1) with the cores on the
fused (head, key block) axis; ``s1s2_bn2`` the same blocks with a KV head's G query heads
and all their blocks on one tile (cores split B·N2); ``n2gs1s2_bn1`` and ``bn2gs1s2_b``
whole S1 x S2 blocks, ``n2.i*G`` or ``b.i*N2*G`` heads per pass in one batched step (NE
``batch`` = the heads, one vector command over all their rows).

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
  (Ascend's FAG adds into GM atomically); the final dQ cast is not charged. When
  tiles share a head's rows (``fused``/``bns1`` splits) they would also need a
  cross-tile dQ reduction, which is not modelled (each tile's first visit stores its own
  partial).
- The transposed NE operands (Kᵀ, Vᵀ, Pᵀ, dSᵀ) are made as the forward makes Kᵀ
  (``transpose``: TDMA single-element GatherScatter by default, or the CT's
  ``Transpose``, or read by the NE as a what-if). Under the default the per-pair Pᵀ and
  dSᵀ moves dominate: the TDMA, not the NE, bounds the backward.
- ``double_issue`` issues the next pair's loads and ``NE S`` before the rest of the
  current pair (the NE runs one block ahead), as in the forward model; it needs ping-pong.
- Core split (a ``split`` knob overrides the template's): ``"fused"`` contiguous ranges
  of the (head, key block) units of about equal weight, ``"bn2"`` whole KV heads round
  robin, ``"bn"`` whole heads round robin, ``"bns1"`` key blocks (the FAG's outer axis)
  weighted by their pair counts, longest first. The seed's ``s1s2_bn2gs1s2`` splits
  S1o too (Ascend adds dK/dV across cores atomically); here a key block's rows stay on
  one tile so dK_j and dV_j accumulate in its SPM. The ``D`` pre-pass is not charged
  (one CT op per output element, small next to the pairs).
- dK_j and dV_j have one slot each (the next key block's first products wait for their
  cast); K and V operands two unit slots (the next unit's load overlaps).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

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
from tx8lab.kernels.flash_attention.templates import (
    BACKWARD_TEMPLATES,
    BackwardTemplate,
    backward_templates,
)
from tx8lab.kernels.flash_attention.timeline import (
    MAX_BLOCK_PAIRS,
    FaConfig,
    FaTilingError,
    apply_template,
    check_config,
    check_size,
    heads_tag,
    kv_group,
    kv_per_pass,
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
    """The backward template whose tiling ran (:func:`resolve_backward`)."""
    template_source: str
    """``shape`` (seed 004's priorities), ``knob`` (``fag_template=``) or ``block``."""
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
            "template_source": self.template_source,
            "config": {**asdict(self.config), "block": list(self.config.c_block)},
        }


def resolve_backward(cfg: FaConfig, hw: ChipConfig) -> tuple[FaConfig, BackwardTemplate, str]:
    """The tiling the backward template names, filled into ``cfg``; the template; its source.

    As :func:`~.timeline.resolve` for the forward: the FAG template is chosen by priority
    from the shape (seed 004 §1, cores = the chip's tiles) or taken from
    ``fag_template=``, and gives what a knob left None: the C block (128 x 128 for the
    S1S2 templates, whole S1 x S2 for the small ones), the heads per pass (``b.i*N2*G``,
    ``n2.i*G``) and the core split (``fused``; ``bn2`` for ``s1s2_bn2``: a KV head's G query
    heads on one tile). Sizes from the template shrink until a pass fits the SPM. A given
    block runs under the first matching template that admits it (the S1S2 ones admit any).
    """
    check_config(cfg, "FAG")
    rows = backward_templates(cfg.b, cfg.kv_heads, cfg.group, cfg.s1, cfg.keys, hw.tile_count)
    usable = hw.tile.spm_usable_bytes
    out, tmpl, source = apply_template(
        cfg,
        rows,
        (cfg.fag_template, BACKWARD_TEMPLATES, "FAG"),
        lambda c: fag_spm_bytes(c) <= usable,
    )
    out = replace(out, fag_template=tmpl.name)
    return out, tmpl, source


def fag_spm_layout(cfg: FaConfig) -> SpmLayout:
    """The tile's SPM buffers for the backward tiling (module docstring).

    A pass of ``head_batch`` heads holds that many copies of every per-head buffer.
    """
    br, bc = cfg.c_block
    hb, nkv = cfg.heads_per_pass, kv_per_pass(cfg)
    d, e, ve = cfg.d, elem_bytes(cfg.dtype), elem_bytes(cfg.vector_dtype, "vector_dtype")
    slots = 2 if cfg.pingpong else 1
    kv, rows, cols = bc * nkv, br * hb, bc * hb
    spm = SpmLayout()
    spm.add("K_in", kv * d * e, 2)
    spm.add("V_in", kv * d * e, 2)
    spm.add("KT", kv * d * e, 2)
    if cfg.io_layout == "nd":
        spm.add("K", kv * d * e, 2)
    spm.add("VT", kv * d * e, 2)
    spm.add("dK", cols * d * ve, 1)
    spm.add("dV", cols * d * ve, 1)
    if cfg.vector_dtype != cfg.dtype:
        spm.add("dK_out", cols * d * e, 1)
        spm.add("dV_out", cols * d * e, 1)
    if cfg.io_layout == "nd":
        spm.add("dK_nd", cols * d * e, 1)
        spm.add("dV_nd", cols * d * e, 1)
        spm.add("Q_in", rows * d * e, slots)
        spm.add("dO_in", rows * d * e, slots)
    spm.add("Q", rows * d * e, slots)
    spm.add("dO", rows * d * e, slots)
    spm.add("STATS", 2 * rows * ve, slots)
    spm.add("S", rows * bc * ve, slots)
    if cfg.vector_dtype != cfg.dtype:
        spm.add("P", rows * bc * e, slots)
        spm.add("dS", rows * bc * e, slots)
    spm.add("PT", rows * bc * e, slots)
    spm.add("dP", rows * bc * ve, slots)
    spm.add("dST", rows * bc * e, slots)
    spm.add("dQp", rows * d * ve, slots)
    spm.add("dQ_in", rows * d * ve, slots)
    return spm


def fag_spm_bytes(cfg: FaConfig) -> int:
    """SPM one tile needs for the backward tiling (:func:`fag_spm_layout`)."""
    return fag_spm_layout(cfg).total_bytes


def _col_pairs(cfg: FaConfig) -> list[list[int]]:
    br, bc = cfg.c_block
    cols: list[list[int]] = [[] for _ in range(-(-cfg.keys // bc))]
    for i, j in block_pairs(cfg.s1, cfg.keys, br, bc, cfg.causal):
        cols[j].append(i)
    return cols


def split_fag_work(cfg: FaConfig, tiles: int) -> list[list[tuple[int, int]]]:
    """(pass, key block) units per tile."""
    cols = _col_pairs(cfg)
    return split_units([len(c) for c in cols], cfg.passes, tiles, cfg.core_split, kv_group(cfg))


def build_fag_tile(
    cfg: FaConfig, hw: ChipConfig, units: list[tuple[int, int]], active_tiles: int = 1
) -> TileStream:
    """The backward command stream of one tile walking ``units`` (pass, key block).

    A pass of several heads (the small FAG templates) is one pair per step: its loads,
    NE products (``batch`` = the heads) and vector commands cover every head at once.
    """
    br, bc = cfg.c_block
    d, s1, s2, dt, vt = cfg.d, cfg.s1, cfg.keys, cfg.dtype, cfg.vector_dtype
    e, ve = elem_bytes(dt), elem_bytes(vt, "vector_dtype")
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
    # first head, heads, i, j, first, last, unit
    work: list[tuple[int, int, int, int, bool, bool, int]] = []
    for u, (p, j) in enumerate(units):
        h, nh = cfg.pass_heads(p)
        for n, i in enumerate(cols[j]):
            work.append((h, nh, i, j, n == 0, n == len(cols[j]) - 1, u))
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
        h, nh, i, j, first, _, u = work[t]
        r, c = rows_of(i), cols_of(j)
        rows = nh * r
        hk, nkv = cfg.kv_span(h, nh)
        if first:
            size = nkv * c * d * e
            lo = (hk * s2 + j * bc) * d * e
            k_in, v_in = rng("K_in", u, size), rng("V_in", u, size)
            where = f"{heads_tag(hk, nkv)} j{j}"
            ts.load(size, ddr.at("K", lo, lo + size), k_in, f"RDMA K {where}", t)
            ts.load(size, ddr.at("V", lo, lo + size), v_in, f"RDMA V {where}", t)
            nd = cfg.io_layout == "nd"
            kt = transposed(nkv * c, d, k_in, rng("KT", u, size), f"K^T {where}", t, nd)
            if nd:
                ts.to_layout(nkv * c, d, dt, k_in, rng("K", u, size), f"TDMA K ND->NCx {where}", t)
            vt_ = transposed(nkv * c, d, v_in, rng("VT", u, size), f"V^T {where}", t, nd)
            operands[u] = (kt, vt_)
        lo = (h * s1 + i * br) * d * e
        tag = f"{heads_tag(h, nh)} i{i}"
        for name in ("Q", "dO"):
            dst = rng(name, t, rows * d * e)
            src = ddr.at(name, lo, lo + rows * d * e)
            staging = rng(f"{name}_in", t, rows * d * e) if cfg.io_layout == "nd" else None
            ts.load_ncx(rows, d, dt, src, dst, staging, name, tag, t)
        lo = (h * s1 + i * br) * 2 * ve
        stats = rng("STATS", t, 2 * rows * ve)
        src = ddr.at("STATS", lo, lo + 2 * rows * ve)
        ts.load(2 * rows * ve, src, stats, f"RDMA lse,D {tag}", t)
        ts.ne(
            (r, d, c),
            dt,
            (rng("Q", t, rows * d * e), operands[u][0]),
            (rng("S", t, rows * c * ve),),
            f"NE S=QK^T {tag} j{j}",
            t,
            batch=nh,
        )

    def back(t: int) -> None:
        h, nh, i, j, first, last, u = work[t]
        r, c = rows_of(i), cols_of(j)
        rows = nh * r
        tag = f"{heads_tag(h, nh)} i{i} j{j}"
        s, stats = rng("S", t, rows * c * ve), rng("STATS", t, 2 * rows * ve)
        q, do = rng("Q", t, rows * d * e), rng("dO", t, rows * d * e)
        dk, dv = rng("dK", 0, nh * c * d * ve), rng("dV", 0, nh * c * d * ve)
        vec("Mul", [(rows, c), (1,)], (s,), (s,), f"CT Mul scale S {tag}", t)
        if cfg.causal and (j + 1) * bc - 1 > i * br:
            vec("Where", [(rows, c), (rows, c), (1,)], (s,), (s,), f"CT Where causal {tag}", t)
        vec("Sub", [(rows, c), (rows, 1)], (s, stats), (s,), f"CT Sub lse {tag}", t)
        vec("Exp", [(rows, c)], (s,), (s,), f"CT Exp P {tag}", t)

        def accumulate(x: Range, name: str, y: Range, acc: Range, what: str) -> Range:
            """``acc (+)= xᵀ y`` on the NE, ``x`` first in the NE's type when staged.

            Returns ``x`` as the NE read it (dS feeds dQ too).
            """
            if staged:
                x_ne = rng(name, t, rows * c * e)
                vec("Convert", [(rows, c)], (x,), (x_ne,), f"CT Convert {name} {tag}", t, dtype=dt)
                x = x_ne
            xt = transposed(
                rows, c, x, rng(f"{name}T", t, rows * c * e), f"{name}^T {tag}", t, False
            )
            reads = (xt, y) if first else (xt, y, acc)
            ts.ne((c, r, d), dt, reads, (acc,), f"NE {what} {tag}", t, batch=nh)
            return x

        accumulate(s, "P", do, dv, "dV+=P^T dO")
        dp = rng("dP", t, rows * c * ve)
        ts.ne((r, d, c), dt, (do, operands[u][1]), (dp,), f"NE dP=dO V^T {tag}", t, batch=nh)
        vec("Sub", [(rows, c), (rows, 1)], (dp, stats), (dp,), f"CT Sub D {tag}", t)
        vec("Mul", [(rows, c), (rows, c)], (dp, s), (dp,), f"CT Mul dS {tag}", t)
        ds = accumulate(dp, "dS", q, dk, "dK+=dS^T Q")
        dqp = rng("dQp", t, rows * d * ve)
        nkv = cfg.kv_span(h, nh)[1]
        k_ncx = rng("K" if cfg.io_layout == "nd" else "K_in", u, nkv * c * d * e)
        ts.ne((r, c, d), dt, (ds, k_ncx), (dqp,), f"NE dQ=dS K {tag}", t, batch=nh)
        lo = (h * s1 + i * br) * d * ve
        dq = ddr.at("dQ", lo, lo + rows * d * ve)
        rtag = f"{heads_tag(h, nh)} i{i}"
        if (h, i) in visited:  # read-modify-write of the workspace
            dq_in = rng("dQ_in", t, rows * d * ve)
            ts.load(rows * d * ve, dq, dq_in, f"RDMA dQ {rtag}", t)
            vec("Add", [(rows, d), (rows, d)], (dq_in, dqp), (dq_in,), f"CT Add dQ {tag}", t)
            ts.store(rows * d * ve, dq_in, dq, f"WDMA dQ {rtag}", t)
        else:
            visited.add((h, i))
            ts.store(rows * d * ve, dqp, dq, f"WDMA dQ {rtag}", t)
        if not last:
            return
        tag = f"{heads_tag(h, nh)} j{j}"
        size = nh * c * d * e
        for name, acc in (("dK", dk), ("dV", dv)):
            out = acc
            if staged:
                out = rng(f"{name}_out", 0, size)
                vec(
                    "Convert",
                    [(nh * c, d)],
                    (acc,),
                    (out,),
                    f"CT Convert {name} {tag}",
                    t,
                    dtype=dt,
                )
            if cfg.io_layout == "nd":
                moved = rng(f"{name}_nd", 0, size)
                ts.to_layout(nh * c, d, dt, out, moved, f"TDMA {name} NCx->ND {tag}", t)
                out = moved
            lo = (h * s2 + j * bc) * d * e
            ts.store(size, out, ddr.at(name, lo, lo + size), f"WDMA {name} {tag}", t)

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

    The backward template comes first (:func:`resolve_backward`): its tiling is the one
    simulated.

    Raises:
        FaTooLarge: more block pairs than ``max_block_pairs`` (forward's ``check_size``).
    """
    cfg, tmpl, source = resolve_backward(cfg, hw)
    check_size(cfg, max_block_pairs, "FAG")
    need = fag_spm_bytes(cfg)
    usable = hw.tile.spm_usable_bytes
    if need > usable:
        raise FaTilingError(
            f"FAG tiling block={cfg.block} heads/pass={cfg.heads_per_pass} (template "
            f"{tmpl.name}, pingpong={cfg.pingpong}) needs {need:,} B of SPM but a tile has "
            f"{usable:,} B: choose smaller blocks"
        )
    tiles = hw.tile_count
    split = split_fag_work(cfg, tiles)
    cols = _col_pairs(cfg)
    tile_pairs = tuple(
        sum(len(cols[j]) * cfg.pass_heads(p)[1] for p, j in units) for units in split
    )
    active = cfg.ddr_tiles or max(1, sum(1 for units in split if units))

    def signature(t: int) -> object:
        if not split[t]:
            return None
        # the timing depends on the key blocks, the pass sizes and where a row is
        # visited again
        seen: set[tuple[int, int]] = set()
        out = []
        for p, j in split[t]:
            h, nh = cfg.pass_heads(p)
            again = tuple(int((h, i) in seen) for i in cols[j])
            seen.update((h, i) for i in cols[j])
            out.append((j, nh, cfg.kv_span(h, nh), again))
        return tuple(out)

    tset = run_tiles(
        tiles,
        lambda t: build_fag_tile(cfg, hw, split[t], active) if split[t] else None,
        signature,
        hw,
    )
    return FagModel(
        config=cfg,
        **tset.timing(),
        tile_pairs=tile_pairs,
        load_balance=(sum(tile_pairs) / tiles) / max(tile_pairs) if max(tile_pairs) else 1.0,
        spm_bytes=need,
        template=tmpl.name,
        template_source=source,
        tiles=tset,
    )


__all__ = [
    "FagModel",
    "build_fag_tile",
    "fag_model",
    "fag_spm_bytes",
    "fag_spm_layout",
    "resolve_backward",
    "split_fag_work",
]
