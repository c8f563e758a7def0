"""FlashAttention forward on TX8 tiles: C/V tiling, ping-pong, cube double issue, core split.

Spec: seed 004 §2.1 (CV tiling: Cube block 128x1024, Vector block 8x1024, ratio), §3.1
(V-side ping-pong double buffer), §3.2 (CV pipelining, "Cube 双发": the Cube issues one
block ahead), ``shared/reference/hw-fa-fusion.md`` §1.4 and §3.3 (board figure and the
per-tile model). On TX8 the Cube is the NE, the Vector the CGRA (CT), UB/L1 the SPM.
Every engine time comes from :mod:`tx8lab.hw.cost` (``ne_cost``, ``ct_cost``,
``dma_cost``) with the preset's numbers; there is no calibration factor.

The model, per tile (a dedicated C/V timeline rather than ``core.schedule``, because the
FA block loop has data-dependent trip counts per row block under a causal mask and its
buffer reuse (ping-pong slots) is the thing being studied):

- Work: the B·N1 heads x S1 row blocks are split over the tiles (``split="bn"``: whole
  heads, as the board kernel; ``"bns1"``: row blocks, weighted by their block pairs,
  longest-first). Each tile walks its (row block i, key block j) pairs.
- Commands per pair, in the FA-2 order: ``NE1`` S = Q_i K_j^T, ``CT1`` softmax part
  (:data:`CT1_OPS` per score element, plus the causal select on diagonal blocks), ``NE2``
  P V_j, ``CT2`` rescale-accumulate (:data:`CT2_OPS` per accumulator element) and the
  row statistics (:data:`ROW_OPS` per row). The last pair of a row block adds ``CT3``
  (normalise, logsumexp, cast: :data:`FINAL_OPS`) and a store. Loads: Q_i per row block;
  K_j and V_j per pair, or once per head when they fit in SPM (``kv_resident``).
- The CT runs a C block as ``ceil(BR / v_rows)`` vector commands per op (seed: 8-row
  vector blocks under a 32 KB UB piece). On TX8 the CT reads SPM directly, so the default
  ``v_rows`` is the whole C block (ratio 1); ``v_rows=8`` shows the seed's split and its
  issue cost.
- Engines run their commands in order; a command starts when the kernel core has issued
  it (``tile.command_issue_s`` per command, the core issues in program order and waits
  while the engine already holds ``tile.queue_depth`` pending commands), its inputs are
  ready and the engine is free. Buffers S, P and PV have ``2`` slots with ping-pong and
  ``1`` without: writing slot ``t % slots`` waits for the reader of pair ``t - slots``.
- Program order: ``serial`` issues NE1(t), CT1(t), NE2(t), CT2(t); ``double_issue``
  issues the seed's ring NE1(t), CT1(t-1), NE2(t-1), CT2(t-2), so the NE runs one block
  ahead of the CT (needs ping-pong).

Readings chosen where the seed is vague:

- Softmax ops per score element (:data:`CT1_OPS`): scale, row max, subtract, exp, row
  sum, cast P to 16-bit = 6 fp32 vector ops, exp counted as one op (the board kernel
  used the single-instruction Explp); the causal select only on diagonal blocks.
- The CT works in fp32 (seed 004 §2.1: "Vector 计算使用的数据类型是 float32").
- SPM per tile: Q (slots), K/V (slots, or the whole head when resident), S fp32, P 16-bit,
  PV fp32 (slots each), two accumulators and row statistics; a tiling that does not fit
  the usable SPM is rejected (the search skips it).
- The chip time is the slowest tile's makespan (the board's "longest-tile kernel body").
- TDMA is not modelled (no relayout is charged): the board's 0.885 ms of TDMA is listed
  against 0 in the calibration table.
- The vector ops of one stage (CT1, CT2, CT3) are one timeline entry: the kernel core
  spends ``ops x ceil(BR / v_rows)`` issue slots on it, its work starts after the first
  and cannot end before the last is issued; the queue depth counts these entries.
- Calibration reading: the board kernel (no cube double issue) is modelled with the
  kernel core joining on cross-engine inputs (``sync_issue``, the NCC join cost of the
  preset). With asynchronous issue the same tiling models at about half the board time;
  :func:`calibration` lists both rows so the weight of this reading stays visible.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.cost import ct_cost, dma_cost, ne_cost, to_cycles
from tx8lab.kernels.flash_attention.numerics import block_pairs
from tx8lab.kernels.flash_attention.templates import (
    choose_forward_template,
    encode_tiling_key,
    forward_tiling_key,
    tx8_limits,
)

Engine = Literal["ld", "st", "ne", "ct", "kcore"]
ENGINES: tuple[Engine, ...] = ("ne", "ct", "ld", "st", "kcore")

#: fp32 vector ops per score element in CT1: scale, row max, subtract max, exp, row sum,
#: cast P to 16-bit (FA-2 forward inner loop, hw-fa-fusion §3.1).
CT1_OPS: tuple[str, ...] = ("scale", "rowmax", "sub_max", "exp", "rowsum", "cast_p")
#: vector ops per accumulator element (BR x D) per pair: acc *= alpha, acc += P V.
CT2_OPS: tuple[str, ...] = ("rescale_acc", "add_pv")
#: vector ops per row per pair: max merge, m_old - m_new, exp (alpha), l * alpha, l + rowsum.
ROW_OPS: tuple[str, ...] = ("max_merge", "sub_m", "exp_alpha", "mul_l", "add_l")
#: ops per output element at the end of a row block: divide by l, cast O to 16-bit.
FINAL_OPS: tuple[str, ...] = ("div_l", "cast_o")
#: ops per row at the end of a row block: log l, m + log l (the saved logsumexp).
LSE_OPS: tuple[str, ...] = ("log_l", "add_m")

#: The board figure (hw-fa-fusion §1.4, [board] S4/S5): BF16 [1,28,2048,128] causal prefill,
#: 256x256 blocks, busiest tile (72 block pairs). Times in ms.
BOARD = {
    "shape": (1, 28, 2048, 128),
    "block": (256, 256),
    "latency_ms": 2.461,
    "ct_ms": 1.127,
    "ne_ms": 0.364,
    "rdma_ms": 0.388,
    "wdma_ms": 0.033,
    "tdma_ms": 0.885,
    "busiest_tile_pairs": 72,
}


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
    block: tuple[int, int] = (256, 256)
    """NE (C) block (BR, BC): rows of Q, columns of K per pair."""
    v_rows: int | None = None
    """CT (V) block rows per vector command; default BR (whole C block, ratio 1)."""
    pingpong: bool = True
    double_issue: bool = True
    split: Literal["bn", "bns1"] = "bns1"
    kv_resident: bool | None = None
    """Keep a head's K and V in SPM; default: when they fit."""
    sync_issue: bool = False
    """The kernel core waits (an NCC join, ``tile.ncc_join_s``) for a command's inputs from
    other engines before issuing it, instead of leaving the check to the hardware busytable;
    commands for one engine still queue in order. Default: asynchronous issue."""

    @property
    def keys(self) -> int:
        return self.s1 if self.s2 is None else self.s2

    @property
    def kv_heads(self) -> int:
        return self.n1 if self.n2 is None else self.n2


@dataclass(frozen=True)
class Command:
    """One engine command of the tile timeline (times in cycles)."""

    engine: Engine
    label: str
    pair: int
    start: int
    end: int
    work: int
    issued: int


@dataclass(frozen=True)
class TileTimeline:
    """One tile's commands, makespan and per-engine busy cycles."""

    tile: int
    pairs: int
    makespan: int
    busy: dict[str, int]
    commands: tuple[Command, ...] = field(repr=False)


@dataclass(frozen=True)
class FaModel:
    """The modelled FA forward on the chip."""

    config: FaConfig
    latency_ms: float
    busiest_tile: int
    busy_ms: dict[str, float]
    """Per-engine busy time of the busiest tile (``kcore`` = command issue)."""
    tile_pairs: tuple[int, ...]
    load_balance: float
    """mean / max block pairs per tile."""
    spm_bytes: int
    kv_resident: bool
    template: str
    tiling_key: int
    timeline: TileTimeline = field(repr=False)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready summary (no command list)."""
        cfg = asdict(self.config)
        cfg["block"] = list(self.config.block)
        return {
            "latency_ms": self.latency_ms,
            "busiest_tile": self.busiest_tile,
            "busy_ms": self.busy_ms,
            "tile_pairs": list(self.tile_pairs),
            "load_balance": self.load_balance,
            "spm_bytes": self.spm_bytes,
            "kv_resident": self.kv_resident,
            "template": self.template,
            "tiling_key": str(self.tiling_key),
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


# ------------------------------------------------------------------ SPM


def spm_bytes(cfg: FaConfig, kv_resident: bool) -> int:
    """SPM bytes one tile needs for the tiling (see the module docstring)."""
    br, bc = cfg.block
    d, e = cfg.d, _elem_bytes(cfg.dtype)
    slots = 2 if cfg.pingpong else 1
    q = slots * br * d * e
    kv = 2 * cfg.keys * d * e if kv_resident else 2 * slots * bc * d * e
    s = slots * br * bc * 4
    p = slots * br * bc * e
    pv = slots * br * d * 4
    acc = 2 * br * d * 4
    rows = 2 * 3 * br * 4
    return q + kv + s + p + pv + acc + rows


def _elem_bytes(dtype: str) -> int:
    sizes = {"bf16": 2, "f16": 2, "f32": 4}
    if dtype not in sizes:
        raise Tx8labError(f"FA dtype must be one of {sorted(sizes)}, got {dtype!r}")
    return sizes[dtype]


# ------------------------------------------------------------------ timeline


@dataclass
class _Sim:
    hw: ChipConfig
    issue: int
    depth: int
    kcore: int = 0
    free: dict[str, int] = field(default_factory=dict)
    ends: dict[str, list[int]] = field(default_factory=dict)
    commands: list[Command] = field(default_factory=list)
    kbusy: int = 0

    sync: bool = False
    join: int = 0

    def run(
        self, engine: Engine, label: str, pair: int, work: int, n_cmd: int, deps: list[int]
    ) -> int:
        ends = self.ends.setdefault(engine, [])
        if self.sync and deps:
            # the kernel core joins on the inputs from other engines before issuing (no
            # busytable); commands for one engine need no join (its queue is in order)
            self.kcore = max([self.kcore, *deps]) + self.join
        if len(ends) >= self.depth:  # the queue holds `depth` pending commands
            self.kcore = max(self.kcore, ends[-self.depth])
        first_issued = self.kcore + self.issue
        self.kcore += self.issue * n_cmd
        self.kbusy += self.issue * n_cmd
        start = max([first_issued, self.free.get(engine, 0), *deps])
        # sub-commands start as they are issued: the last cannot end before its issue
        end = max(start + work, self.kcore + -(-work // max(1, n_cmd)))
        self.free[engine] = end
        ends.append(end)
        self.commands.append(Command(engine, label, pair, start, end, work, first_issued))
        return end


def simulate_tile(
    cfg: FaConfig,
    hw: ChipConfig,
    units: list[tuple[int, int]],
    tile: int = 0,
    kv_resident: bool = True,
) -> TileTimeline:
    """The command timeline of one tile walking ``units`` (head, row block)."""
    br, bc = cfg.block
    d, s1, s2, dt = cfg.d, cfg.s1, cfg.keys, cfg.dtype
    e = _elem_bytes(dt)
    slots = 2 if cfg.pingpong else 1
    if cfg.double_issue and not cfg.pingpong:
        raise Tx8labError(
            "FA tiling: double_issue (the NE one block ahead) needs pingpong=True "
            "(two S/P/PV slots)"
        )
    v_rows = br if cfg.v_rows is None else cfg.v_rows
    if v_rows < 1:
        raise Tx8labError(f"FA tiling: v_rows must be >= 1, got {v_rows}")
    vcmds = -(-br // v_rows)
    issue = to_cycles(hw.tile.command_issue_s, hw)
    sim = _Sim(hw, issue, hw.tile.queue_depth, sync=cfg.sync_issue)
    sim.join = to_cycles(hw.tile.ncc_join_s, hw) if cfg.sync_issue else 0
    pairs = block_pairs(s1, s2, br, bc, cfg.causal)
    by_row: dict[int, list[int]] = {}
    for i, j in pairs:
        by_row.setdefault(i, []).append(j)

    # the flat pair list of this tile
    work: list[tuple[int, int, int, bool, bool]] = []  # head, i, j, first, last
    for h, i in units:
        js = by_row.get(i, [])
        for n, j in enumerate(js):
            work.append((h, i, j, n == 0, n == len(js) - 1))

    def rows_of(i: int) -> int:
        return min(s1, (i + 1) * br) - i * br

    def cols_of(j: int) -> int:
        return min(s2, (j + 1) * bc) - j * bc

    done: dict[tuple[str, int], int] = {}
    loaded_kv: dict[tuple[int, int], tuple[int, int]] = {}
    q_ready: dict[int, int] = {}
    acc_rows: list[int] = []  # row-block index per pair (for accumulator slots)
    store_end: list[int] = []

    def dep(stage: str, t: int) -> list[int]:
        return [done[(stage, t)]] if t >= 0 and (stage, t) in done else []

    def issue_loads(t: int) -> None:
        h, i, j, first, _ = work[t]
        r, c = rows_of(i), cols_of(j)
        if first:
            q_ready[t] = sim.run(
                "ld", f"LD Q[{h},{i}]", t, dma_cost("ld", r * d * e, hw).work_cycles, 1, []
            )
        else:
            q_ready[t] = q_ready[t - 1]
        # resident: one load per (batch, kv head, key block); else one per pair
        key = (h // (cfg.n1 // cfg.kv_heads) if kv_resident else -1 - t, j)
        if key not in loaded_kv:
            w = dma_cost("ld", c * d * e, hw).work_cycles
            kdeps = [] if kv_resident else dep("NE1", t - slots)
            vdeps = [] if kv_resident else dep("NE2", t - slots)
            k_end = sim.run("ld", f"LD K[{h},{j}]", t, w, 1, kdeps)
            v_end = sim.run("ld", f"LD V[{h},{j}]", t, w, 1, vdeps)
            loaded_kv[key] = (k_end, v_end)
        done[("K", t)], done[("V", t)] = loaded_kv[key]

    def ne1(t: int) -> None:
        h, i, j, *_ = work[t]
        w = ne_cost(rows_of(i), d, cols_of(j), dt, hw).work_cycles
        deps = [q_ready[t], done[("K", t)], *dep("CT1", t - slots)]
        done[("NE1", t)] = sim.run("ne", f"NE1 S=QK^T [{h},{i},{j}]", t, w, 1, deps)

    def ct1(t: int) -> None:
        h, i, j, *_ = work[t]
        r, c = rows_of(i), cols_of(j)
        diag = cfg.causal and (j + 1) * bc - 1 > i * br
        ops = len(CT1_OPS) + (1 if diag else 0)
        w = ct_cost(r * c, ops, "f32", hw).work_cycles
        deps = [done[("NE1", t)], *dep("NE2", t - slots)]
        done[("CT1", t)] = sim.run("ct", f"CT1 softmax [{h},{i},{j}]", t, w, ops * vcmds, deps)

    def ne2(t: int) -> None:
        h, i, j, *_ = work[t]
        w = ne_cost(rows_of(i), cols_of(j), d, dt, hw).work_cycles
        deps = [done[("CT1", t)], done[("V", t)], *dep("CT2", t - slots)]
        done[("NE2", t)] = sim.run("ne", f"NE2 O+=PV [{h},{i},{j}]", t, w, 1, deps)

    def ct2(t: int) -> None:
        h, i, j, first, last = work[t]
        r = rows_of(i)
        w = ct_cost(r * d, len(CT2_OPS), "f32", hw).work_cycles
        w += ct_cost(r, len(ROW_OPS), "f32", hw).work_cycles
        n_cmd = len(CT2_OPS) * vcmds + len(ROW_OPS)
        deps = [done[("NE2", t)]]
        if first:
            acc_rows.append(t)
            if len(store_end) >= 2:  # two accumulator slots
                deps.append(store_end[-2])
        done[("CT2", t)] = sim.run("ct", f"CT2 rescale [{h},{i},{j}]", t, w, n_cmd, deps)
        if last:
            w3 = ct_cost(r * d, len(FINAL_OPS), "f32", hw).work_cycles
            w3 += ct_cost(r, len(LSE_OPS), "f32", hw).work_cycles
            n3 = len(FINAL_OPS) * vcmds + len(LSE_OPS)
            end3 = sim.run("ct", f"CT3 normalise [{h},{i}]", t, w3, n3, [done[("CT2", t)]])
            ws = dma_cost("st", r * d * e + r * 4, hw).work_cycles
            store_end.append(sim.run("st", f"ST O,lse [{h},{i}]", t, ws, 1, [end3]))

    n = len(work)
    if cfg.double_issue:
        for step in range(n + 2):
            if step < n:
                issue_loads(step)
                ne1(step)
            if 0 <= step - 1 < n:
                ct1(step - 1)
                ne2(step - 1)
            if 0 <= step - 2 < n:
                ct2(step - 2)
    else:
        for t in range(n):
            issue_loads(t)
            ne1(t)
            ct1(t)
            ne2(t)
            ct2(t)
    busy: dict[str, int] = {eng: 0 for eng in ENGINES}
    for cmd in sim.commands:
        busy[cmd.engine] += cmd.work
    busy["kcore"] = sim.kbusy
    makespan = max((c.end for c in sim.commands), default=0)
    return TileTimeline(tile, n, makespan, busy, tuple(sim.commands))


def model(cfg: FaConfig, hw: ChipConfig) -> FaModel:
    """The modelled FA forward on the chip: every tile simulated, the slowest one reported."""
    for name, value in (
        ("B", cfg.b),
        ("N1", cfg.n1),
        ("S1", cfg.s1),
        ("S2", cfg.keys),
        ("D", cfg.d),
    ):
        if value < 1:
            raise Tx8labError(f"FA shape: {name} must be >= 1, got {value}")
    if cfg.n1 % cfg.kv_heads:
        raise Tx8labError(f"FA GQA: N1={cfg.n1} must be a multiple of N2={cfg.kv_heads}")
    br, bc = cfg.block
    if br < 1 or bc < 1:
        raise Tx8labError(f"FA tiling: block sizes must be >= 1, got {cfg.block}")
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
    cache: dict[tuple[tuple[int, int], ...], TileTimeline] = {}
    lines = []
    for t, units in enumerate(split):
        if not units:
            continue
        sig = _signature(cfg, units)
        if sig not in cache:
            cache[sig] = simulate_tile(cfg, hw, units, t, resident)
        lines.append(replace(cache[sig], tile=t))
    worst = max(lines, key=lambda tl: (tl.makespan, -tl.tile))
    busy_ms = {k: v / hw.clock_hz * 1e3 for k, v in worst.busy.items()}
    mean = sum(tile_pairs) / tiles
    tmpl = choose_forward_template(
        cfg.b, cfg.kv_heads, cfg.n1 // cfg.kv_heads, cfg.s1, cfg.keys, tx8_limits(hw)
    )
    key = forward_tiling_key(tmpl, dtype=cfg.dtype, causal=cfg.causal, double_buffer=cfg.pingpong)
    return FaModel(
        config=cfg,
        latency_ms=worst.makespan / hw.clock_hz * 1e3,
        busiest_tile=worst.tile,
        busy_ms=busy_ms,
        tile_pairs=tile_pairs,
        load_balance=mean / max(tile_pairs) if max(tile_pairs) else 1.0,
        spm_bytes=need,
        kv_resident=resident,
        template=tmpl.name,
        tiling_key=encode_tiling_key(key),
        timeline=worst,
    )


def _signature(cfg: FaConfig, units: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """What a tile's timeline depends on: row blocks and where the K/V head changes."""
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

    28 heads on 16 tiles: 72 pairs on the busiest), no cube double issue, one buffer (its
    K/V double buffering "gave no net gain", hw-fa-fusion §1.4), and the kernel core joining
    on cross-engine inputs (``sync_issue``).
    """
    cfg = FaConfig(
        b=1, n1=28, s1=2048, d=128, causal=True, dtype="bf16", block=(256, 256),
        pingpong=False, double_issue=False, split="bn", sync_issue=True,
    )  # fmt: skip
    return replace(cfg, **overrides)  # type: ignore[arg-type]


def calibration(hw: ChipConfig) -> list[dict[str, object]]:
    """Modelled vs board, side by side (ms) for the board's tiling."""
    m = model(board_config(), hw)
    asynchronous = model(board_config(sync_issue=False), hw)
    rows = [
        ("kernel body (slowest tile)", m.latency_ms, BOARD["latency_ms"]),
        ("  same tiling, asynchronous issue", asynchronous.latency_ms, BOARD["latency_ms"]),
        ("vector (CT) busy, busiest tile", m.busy_ms["ct"], BOARD["ct_ms"]),
        ("matrix (NE) busy, busiest tile", m.busy_ms["ne"], BOARD["ne_ms"]),
        ("RDMA busy, busiest tile", m.busy_ms["ld"], BOARD["rdma_ms"]),
        ("WDMA busy, busiest tile", m.busy_ms["st"], BOARD["wdma_ms"]),
        ("TDMA busy (not modelled)", 0.0, BOARD["tdma_ms"]),
    ]
    out: list[dict[str, object]] = []
    for name, got, want in rows:
        assert isinstance(want, float)
        out.append(
            {
                "quantity": name,
                "model_ms": got,
                "board_ms": want,
                "ratio": got / want if want else math.nan,
            }
        )
    return out


#: Pipelining options the search tries: (pingpong, double_issue, sync_issue).
SCHEDULES: dict[str, tuple[bool, bool, bool]] = {
    "board": (False, False, True),
    "serial": (False, False, False),
    "pingpong": (True, False, False),
    "double-issue": (True, True, False),
}


def candidates(cfg: FaConfig, sizes: tuple[int, ...] = (128, 256, 512)) -> Iterator[FaConfig]:
    """Tilings the search tries: block sizes x pipelining x split."""
    splits: tuple[Literal["bn", "bns1"], ...] = ("bn", "bns1")
    for br, bc, (pp, di, sync), split in itertools.product(
        sizes, sizes, SCHEDULES.values(), splits
    ):
        if br > max(cfg.s1, 16) * 2 or bc > max(cfg.keys, 16) * 2:
            continue
        yield replace(
            cfg, block=(br, bc), pingpong=pp, double_issue=di, sync_issue=sync, split=split
        )


def search(
    cfg: FaConfig, hw: ChipConfig, sizes: tuple[int, ...] = (128, 256, 512)
) -> tuple[FaModel, list[FaModel]]:
    """The best modelled tiling (lowest latency) and every feasible one tried."""
    tried: list[FaModel] = []
    for cand in candidates(cfg, sizes):
        try:
            tried.append(model(cand, hw))
        except Tx8labError:
            continue  # does not fit SPM
    if not tried:
        raise Tx8labError(f"FA search: no tiling of {sizes} fits the SPM for {cfg}")
    best = min(tried, key=lambda m: (m.latency_ms, m.config.block))
    return best, tried


__all__ = [
    "BOARD",
    "CT1_OPS",
    "CT2_OPS",
    "ENGINES",
    "FINAL_OPS",
    "LSE_OPS",
    "ROW_OPS",
    "SCHEDULES",
    "Command",
    "FaConfig",
    "FaModel",
    "TileTimeline",
    "board_config",
    "calibration",
    "candidates",
    "model",
    "search",
    "simulate_tile",
    "split_units",
    "split_work",
    "spm_bytes",
]
