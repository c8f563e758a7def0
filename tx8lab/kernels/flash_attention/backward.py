"""FlashAttention backward (FAG) on TX8 tiles: per-tile NE/CT timeline and core split.

Spec: seed 004 §1 (FAG templates: UB splits S1 and S2, cores split B·N2·G·S1·S2 or B·N2),
§2.1/§3 (C/V tiling, ping-pong, the NE running ahead) and the FA-2 backward pass
(hw-fa-fusion §3.1: backward = 2.5x forward FLOPs). It reuses the forward model's
engine simulation (:mod:`.timeline`): in-order engine queues, kernel-core issue with the
queue depth, optional join-on-input issue, ping-pong slots. Every time comes from
:mod:`tx8lab.hw.cost`.

Loop order (FA-2, key/value outer): a tile owns (head, key block j) units; for each it loads
K_j and V_j, keeps dK_j and dV_j (fp32) in SPM and walks the row blocks i (from the
diagonal under a causal mask). Per pair:

- loads Q_i, dO_i and the row statistics (logsumexp, ``D = rowsum(dO * O)``);
- ``NE1`` S = Q_i K_j^T; ``CT1`` P = exp(scale S - lse) and its 16-bit cast
  (:data:`BWD_CT1_OPS`, plus the causal select on diagonal blocks);
- ``NE2`` dV_j += P^T dO_i; ``NE3`` dP = dO_i V_j^T; ``CT2`` dS = P (dP - D) and its cast
  (:data:`BWD_CT2_OPS`); ``NE4`` dK_j += dS^T Q_i; ``NE5`` dQ_i partial = dS K_j;
- dQ_i accumulates in a DDR fp32 workspace: load it (not on the first visit of row i), add
  the partial on the CT, store it back.

At the end of a key block: cast dK_j, dV_j and store them.

Readings chosen where the seed is vague:

- TX8 documents no atomic add into DDR, so dQ is a read-modify-write of an fp32 workspace
  (Ascend's FAG adds into GM atomically); the final dQ cast is not charged.
- ``double_issue`` issues ``NE1`` of the next pair before the rest of the current one (the
  NE runs one block ahead), as in the forward model; it needs ping-pong.
- Core split: ``"bn"`` whole heads round robin, ``"bns1"`` (here: key blocks, the FAG's
  outer axis) weighted by their pair counts, longest first. The ``D`` pre-pass is not
  charged (one CT op per output element, small next to the pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.cost import ct_cost, dma_cost, ne_cost, to_cycles
from tx8lab.kernels.flash_attention.numerics import block_pairs
from tx8lab.kernels.flash_attention.templates import choose_backward_template
from tx8lab.kernels.flash_attention.timeline import (
    ENGINES,
    FaConfig,
    TileTimeline,
    _elem_bytes,
    _Sim,
    split_units,
)

#: fp32 vector ops per score element to recompute P: scale, subtract lse, exp, cast P.
BWD_CT1_OPS: tuple[str, ...] = ("scale", "sub_lse", "exp", "cast_p")
#: fp32 vector ops per score element for dS: dP - D, times P, cast dS.
BWD_CT2_OPS: tuple[str, ...] = ("sub_d", "mul_p", "cast_ds")


@dataclass(frozen=True)
class FagModel:
    """The modelled FA backward on the chip."""

    config: FaConfig
    latency_ms: float
    busiest_tile: int
    busy_ms: dict[str, float]
    tile_pairs: tuple[int, ...]
    load_balance: float
    spm_bytes: int
    template: str
    timeline: TileTimeline


def fag_spm_bytes(cfg: FaConfig) -> int:
    """SPM one tile needs for the backward tiling.

    K_j and V_j (two sets: the next unit's are prefetched), dK_j and dV_j (fp32), and per
    slot Q, dO, S, P, dP, dS, the dQ partial and the row statistics.
    """
    br, bc = cfg.block
    d, e = cfg.d, _elem_bytes(cfg.dtype)
    slots = 2 if cfg.pingpong else 1
    kv = 2 * 2 * bc * d * e + 2 * bc * d * 4
    per_slot = 2 * br * d * e + br * bc * (4 + e + 4 + e) + br * d * 4 * 2 + 2 * br * 4
    return kv + slots * per_slot


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


def simulate_fag_tile(
    cfg: FaConfig, hw: ChipConfig, units: list[tuple[int, int]], tile: int = 0
) -> TileTimeline:
    """The backward command timeline of one tile walking ``units`` (head, key block)."""
    br, bc = cfg.block
    d, s1, s2, dt = cfg.d, cfg.s1, cfg.keys, cfg.dtype
    e = _elem_bytes(dt)
    slots = 2 if cfg.pingpong else 1
    if cfg.double_issue and not cfg.pingpong:
        raise Tx8labError("FAG tiling: double_issue needs pingpong=True (two slots)")
    sim = _Sim(hw, to_cycles(hw.tile.command_issue_s, hw), hw.tile.queue_depth)
    sim.sync = cfg.sync_issue
    sim.join = to_cycles(hw.tile.ncc_join_s, hw) if cfg.sync_issue else 0
    cols = _col_pairs(cfg)
    work: list[tuple[int, int, int, bool, bool]] = []  # head, i, j, first, last (of j)
    for h, j in units:
        for n, i in enumerate(cols[j]):
            work.append((h, i, j, n == 0, n == len(cols[j]) - 1))
    done: dict[tuple[str, int], int] = {}
    dq_last: dict[tuple[int, int], int] = {}  # (head, i) -> end of the last dQ store
    kv_ready: dict[int, list[int]] = {}

    def rows(i: int) -> int:
        return min(s1, (i + 1) * br) - i * br

    def cols_of(j: int) -> int:
        return min(s2, (j + 1) * bc) - j * bc

    def dep(stage: str, t: int) -> list[int]:
        return [done[(stage, t)]] if t >= 0 and (stage, t) in done else []

    def front(t: int) -> None:
        h, i, j, first, _ = work[t]
        r, c = rows(i), cols_of(j)
        if first:
            wk = dma_cost("ld", c * d * e, hw).work_cycles
            kv_ready[t] = [
                sim.run("ld", f"LD K[{h},{j}]", t, wk, 1, []),
                sim.run("ld", f"LD V[{h},{j}]", t, wk, 1, []),
            ]
        else:
            kv_ready[t] = kv_ready[t - 1]
        wq = dma_cost("ld", r * d * e, hw).work_cycles
        done[("Q", t)] = sim.run("ld", f"LD Q[{h},{i}]", t, wq, 1, dep("NE4", t - slots))
        done[("dO", t)] = sim.run("ld", f"LD dO[{h},{i}]", t, wq, 1, dep("NE3", t - slots))
        ws = dma_cost("ld", 2 * r * 4, hw).work_cycles
        done[("stats", t)] = sim.run("ld", f"LD lse,D[{h},{i}]", t, ws, 1, [])
        w1 = ne_cost(r, d, c, dt, hw).work_cycles
        deps1 = [done[("Q", t)], kv_ready[t][0], *dep("CT1", t - slots)]
        done[("NE1", t)] = sim.run("ne", f"NE1 S=QK^T [{h},{i},{j}]", t, w1, 1, deps1)

    def back(t: int) -> None:
        h, i, j, first, last = work[t]
        # a new unit's dK/dV accumulators reuse the previous unit's after its cast
        acc = dep("CT4", t - 1) if first else []
        r, c = rows(i), cols_of(j)
        diag = cfg.causal and (j + 1) * bc - 1 > i * br
        ops1 = len(BWD_CT1_OPS) + (1 if diag else 0)
        wc1 = ct_cost(r * c, ops1, "f32", hw).work_cycles
        deps = [
            done[("NE1", t)],
            done[("stats", t)],
            *dep("NE2", t - slots),
            *dep("CT2", t - slots),
        ]
        done[("CT1", t)] = sim.run("ct", f"CT1 P [{h},{i},{j}]", t, wc1, ops1, deps)
        wmm = ne_cost(c, r, d, dt, hw).work_cycles
        deps = [done[("CT1", t)], done[("dO", t)], *acc]
        done[("NE2", t)] = sim.run("ne", f"NE2 dV+=P^T dO [{h},{i},{j}]", t, wmm, 1, deps)
        w3 = ne_cost(r, d, c, dt, hw).work_cycles
        deps = [done[("dO", t)], kv_ready[t][1], *dep("CT2", t - slots)]
        done[("NE3", t)] = sim.run("ne", f"NE3 dP=dO V^T [{h},{i},{j}]", t, w3, 1, deps)
        ops2 = len(BWD_CT2_OPS)
        wc2 = ct_cost(r * c, ops2, "f32", hw).work_cycles
        deps = [done[("NE3", t)], *dep("NE4", t - slots), *dep("NE5", t - slots)]
        done[("CT2", t)] = sim.run("ct", f"CT2 dS [{h},{i},{j}]", t, wc2, ops2, deps)
        deps = [done[("CT2", t)], *acc]
        done[("NE4", t)] = sim.run("ne", f"NE4 dK+=dS^T Q [{h},{i},{j}]", t, wmm, 1, deps)
        w5 = ne_cost(r, c, d, dt, hw).work_cycles
        done[("NE5", t)] = sim.run("ne", f"NE5 dQ=dS K [{h},{i},{j}]", t, w5, 1, deps)
        prev = dq_last.get((h, i))
        add_deps = [done[("NE5", t)]]
        if prev is not None:  # read-modify-write of the fp32 dQ workspace
            wl = dma_cost("ld", r * d * 4, hw).work_cycles
            add_deps.append(sim.run("ld", f"LD dQ[{h},{i}]", t, wl, 1, [prev]))
        wa = ct_cost(r * d, 1, "f32", hw).work_cycles
        end_add = sim.run("ct", f"CT3 dQ+= [{h},{i},{j}]", t, wa, 1, add_deps)
        wst = dma_cost("st", r * d * 4, hw).work_cycles
        dq_last[(h, i)] = sim.run("st", f"ST dQ[{h},{i}]", t, wst, 1, [end_add])
        if last:
            wcast = ct_cost(c * d, 2, "f32", hw).work_cycles
            end_cast = sim.run(
                "ct", f"CT4 cast dK,dV [{h},{j}]", t, wcast, 2, [done[("NE4", t)], done[("NE2", t)]]
            )
            done[("CT4", t)] = end_cast
            wkv = dma_cost("st", 2 * c * d * e, hw).work_cycles
            sim.run("st", f"ST dK,dV [{h},{j}]", t, wkv, 1, [end_cast])

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
    busy: dict[str, int] = {eng: 0 for eng in ENGINES}
    for cmd in sim.commands:
        busy[cmd.engine] += cmd.work
    busy["kcore"] = sim.kbusy
    makespan = max((c.end for c in sim.commands), default=0)
    return TileTimeline(tile, n, makespan, busy, tuple(sim.commands))


def fag_model(cfg: FaConfig, hw: ChipConfig) -> FagModel:
    """The modelled FA backward: every tile simulated, the slowest reported."""
    if cfg.n1 % cfg.kv_heads:
        raise Tx8labError(f"FAG GQA: N1={cfg.n1} must be a multiple of N2={cfg.kv_heads}")
    if min(cfg.block) < 1:
        raise Tx8labError(f"FAG tiling: block sizes must be >= 1, got {cfg.block}")
    need = fag_spm_bytes(cfg)
    usable = hw.tile.spm_usable_bytes
    if need > usable:
        raise Tx8labError(
            f"FAG tiling block={cfg.block} needs {need:,} B of SPM but a tile has "
            f"{usable:,} B: choose smaller blocks"
        )
    tiles = hw.tile_count
    split = split_fag_work(cfg, tiles)
    cols = _col_pairs(cfg)
    tile_pairs = tuple(sum(len(cols[j]) for _, j in units) for units in split)
    lines = [simulate_fag_tile(cfg, hw, u, t) for t, u in enumerate(split) if u]
    worst = max(lines, key=lambda tl: (tl.makespan, -tl.tile))
    tmpl = choose_backward_template(
        cfg.b, cfg.kv_heads, cfg.n1 // cfg.kv_heads, cfg.s1, cfg.keys, tiles
    )
    return FagModel(
        config=cfg,
        latency_ms=worst.makespan / hw.clock_hz * 1e3,
        busiest_tile=worst.tile,
        busy_ms={k: v / hw.clock_hz * 1e3 for k, v in worst.busy.items()},
        tile_pairs=tile_pairs,
        load_balance=(sum(tile_pairs) / tiles) / max(tile_pairs) if max(tile_pairs) else 1.0,
        spm_bytes=need,
        template=tmpl.name,
        timeline=worst,
    )


__all__ = [
    "BWD_CT1_OPS",
    "BWD_CT2_OPS",
    "FagModel",
    "fag_model",
    "fag_spm_bytes",
    "simulate_fag_tile",
    "split_fag_work",
]
