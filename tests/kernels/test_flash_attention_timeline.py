"""FlashAttention forward model: command streams by hand, range-ordered timing, search.

The oracles are independent of the simulator's code: the engine laws of
``tx8lab.hw.laws`` (called here with hand-counted work), hand derivations of a tiny
stream's timing, and the ordering contract (a command never starts before an earlier
command whose byte ranges conflict with its own has ended) checked by brute force.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings

from tests.kernels.fa_configs import fa_configs
from tx8lab.errors import Tx8labError
from tx8lab.hw import laws
from tx8lab.hw.presets import TX81
from tx8lab.hw.sim import Range
from tx8lab.kernels.flash_attention import block_pairs
from tx8lab.kernels.flash_attention.stream import vector_ops
from tx8lab.kernels.flash_attention.timeline import (
    BOARD,
    READINGS,
    FaConfig,
    FaModel,
    board_config,
    calibration,
    candidates,
    model,
    search,
    split_work,
)

HW = TX81
ISSUE = laws.issue(HW).cycles(HW)


def _ct(elements: int, ops: float, dtype: str) -> int:
    return laws.ct(elements, ops, dtype, HW).cycles(HW)


def _conflict(a_reads: tuple[Range, ...], a_writes: tuple[Range, ...], b: object) -> bool:
    def hit(x: Range, y: Range) -> bool:
        return x.space == y.space and x.lo < y.hi and y.lo < x.hi

    b_reads, b_writes = b.reads, b.writes  # type: ignore[attr-defined]
    return (
        any(hit(w, r) for w in a_writes for r in b_reads)
        or any(hit(r, w) for r in a_reads for w in b_writes)
        or any(hit(w, x) for w in a_writes for x in b_writes)
    )


def _check_ordering(m: FaModel) -> None:
    """Engines run one command at a time in issue order; ranges order conflicting commands."""
    cmds, timings = m.commands, m.run.timings
    assert len(cmds) == len(timings)
    by_engine: dict[str, list[tuple[int, int]]] = {}
    for c, t in zip(cmds, timings, strict=True):
        if c.engine == "join":
            continue
        assert t.end - t.start == c.cycles
        assert t.start >= t.issue_end
        by_engine.setdefault(c.engine, []).append((t.start, t.end))
    for spans in by_engine.values():
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end
    for b in range(len(cmds)):
        for a in range(b):
            if _conflict(cmds[a].reads, cmds[a].writes, cmds[b]):
                assert timings[b].start >= timings[a].end, (cmds[a].label, cmds[b].label)
    busy = {e: 0 for e in ("ne", "ct", "rdma", "wdma", "tdma")}
    for c in cmds:
        if c.engine in busy:
            busy[c.engine] += c.cycles
    run = m.run
    for e, cycles in busy.items():
        assert run.busy.get(e, 0) == cycles
    assert run.body == max(t.end for t in timings)
    assert m.latency_ms == pytest.approx(run.body / HW.clock_hz * 1e3)


# ------------------------------------------------------------------ a stream by hand


def _tiny() -> FaConfig:
    """One tile, one 64x64 pair, no layout moves, bf16 vector math, no lse."""
    return FaConfig(
        b=1, n1=1, s1=64, d=64, block=(64, 64), pingpong=False, double_issue=False,
        split="bn", io_layout="ncx", transpose="ne", save_lse=False, vector_dtype="bf16",
    )  # fmt: skip


def test_one_pair_stream_commands_laws_and_order() -> None:
    m = model(_tiny(), HW)
    dma = laws.dma("rdma", 64 * 64 * 2, HW, active_tiles=1).cycles(HW)  # one tile works
    ne = laws.ne(64, 64, 64, "bf16", HW).cycles(HW)
    n = 64 * 64
    want = [
        ("rdma", "RDMA Q h0 i0", dma),
        ("rdma", "RDMA K h0 j0", dma),
        ("rdma", "RDMA V h0 j0", dma),
        ("ne", "NE S=QK^T h0 i0 j0", ne),
        ("ct", "CT Mul scale S h0 i0 j0", _ct(n, 1, "bf16")),
        ("ct", "CT ReduceMax m h0 i0 j0", _ct(n, 1, "bf16")),
        ("ct", "CT Sub max h0 i0 j0", _ct(n, 1, "bf16")),
        ("ct", "CT Exp h0 i0 j0", _ct(n, 8, "bf16")),
        ("ct", "CT ReduceSum h0 i0 j0", _ct(n, 1, "bf16")),
        ("ne", "NE O+=PV h0 i0 j0", ne),
        ("ct", "CT Reciprocal l h0 i0", _ct(64, 3, "bf16")),
        ("ct", "CT Mul O h0 i0", _ct(n, 1, "bf16")),
        ("wdma", "WDMA O h0 i0", laws.dma("wdma", n * 2, HW, active_tiles=1).cycles(HW)),
    ]
    assert [(c.engine, c.label, c.cycles) for c in m.commands] == want
    # the op library's counts: a graph's Exp costs 8 vector ops per element, Reciprocal 3
    assert (vector_ops("Exp"), vector_ops("Reciprocal"), vector_ops("Sub")) == (8, 3, 1)
    assert m.tile_pairs[0] == 1
    assert sum(m.tile_pairs) == 1


def test_one_pair_body_by_hand() -> None:
    m = model(_tiny(), HW)
    c = [x.cycles for x in m.commands]
    t = m.run.timings
    # RDMA is FIFO: Q, K, V back to back from the first issue
    t_q = ISSUE + c[0]
    t_k = t_q + c[1]
    t_v = t_k + c[2]
    assert t_q >= 2 * ISSUE
    assert t_k >= 3 * ISSUE
    # NE S reads Q and K^T
    e1 = max(4 * ISSUE, t_k) + c[3]
    # the five score commands chain on the CT through S (each issued before it can start)
    assert e1 >= 9 * ISSUE
    e5 = e1 + sum(c[4:9])
    # NE P V reads P (= S here) and V
    e6 = max(10 * ISSUE, e5, t_v) + c[9]
    # Reciprocal reads l (written by ReduceSum): it runs on the CT while the NE works
    e_rec = max(11 * ISSUE, e5) + c[10]
    # Mul O is the CT's 7th pending command: the kernel core waits until the first (Mul
    # scale, started at e1) has started (queue depth 6), then issues it
    mul_o_issued = max(11 * ISSUE, e1) + ISSUE
    e7 = max(mul_o_issued, e6, e_rec) + c[11]
    body = max(mul_o_issued + ISSUE, e7) + c[12]
    assert [x.end for x in t[:4]] == [t_q, t_k, t_v, e1]
    assert [x.end for x in t[4:9]] == list(itertools.accumulate(c[4:9], initial=e1))[1:]
    assert (t[9].end, t[10].end, t[11].end, t[12].end) == (e6, e_rec, e7, body)
    assert m.run.body == body
    assert m.latency_ms == pytest.approx(body / HW.clock_hz * 1e3)
    assert m.stall_ms["kcore"].get("queue full", 0) > 0
    _check_ordering(m)


def test_softmax_costs_like_the_op_librarys() -> None:
    """A graph's Softmax (12 ops: max, sub, exp 8, sum, scale) vs the FA score commands."""
    from tx8lab.kernels.flash_attention.stream import vector_cycles

    r, c = 32, 256
    softmax = vector_cycles("Softmax", ((r, c),), ("bf16",), (("axis", -1),), HW)
    assert softmax == _ct(r * c, 12, "bf16")
    m = model(replace(_tiny(), s1=r, block=(r, c), s2=c), HW)
    score = [
        x for x in m.commands if x.label.split()[1] in ("ReduceMax", "Sub", "Exp", "ReduceSum")
    ]
    assert len(score) == 4
    # the same 11 ops per element (the 12th, scale by 1/sum, is applied to O instead) on
    # four commands instead of one: three more fixed costs
    fixed = _ct(0, 0, "bf16")
    assert sum(x.cycles for x in score) == softmax - (r * c) // 64 + 3 * fixed


# ------------------------------------------------------------------ buffers and pipelining


def _small(**knobs: object) -> FaConfig:
    cfg = FaConfig(
        b=1, n1=1, s1=1024, d=64, block=(128, 128), causal=False, split="bn",
        io_layout="ncx", transpose="ne", pingpong=False, double_issue=False,
    )  # fmt: skip
    return replace(cfg, **knobs)  # type: ignore[arg-type]


def _by_pair(m: FaModel, prefix: str) -> dict[int, int]:
    """Pair -> index of the command whose label starts with ``prefix``."""
    return {
        p: k
        for k, (p, c) in enumerate(zip(m.tiles.stream.pairs, m.commands, strict=True))
        if c.label.startswith(prefix)
    }


def test_single_buffer_serialises_through_the_score_slot() -> None:
    m = model(_small(), HW)
    ne1, convert = _by_pair(m, "NE S=QK^T"), _by_pair(m, "CT Convert P")
    t = m.run.timings
    assert len({m.commands[k].writes for k in ne1.values()}) == 1  # one S slot
    for p in range(len(ne1) - 1):
        # NE S(p+1) overwrites the slot Convert P(p) reads: it waits for it
        assert t[ne1[p + 1]].start >= t[convert[p]].end
    _check_ordering(m)


def test_pingpong_alternates_slots_and_double_issue_overlaps() -> None:
    serial = model(_small(), HW)
    pp = model(_small(pingpong=True), HW)
    ahead = model(_small(pingpong=True, double_issue=True), HW)
    ne1 = _by_pair(pp, "NE S=QK^T")
    slots = [pp.commands[ne1[p]].writes for p in sorted(ne1)]
    assert slots[0] != slots[1]
    assert slots[0] == slots[2]
    # in serial program order NE S(p+1) queues behind NE PV(p), which waits for the CT
    ne1_a, exp_a = _by_pair(ahead, "NE S=QK^T"), _by_pair(ahead, "CT Exp ")
    ta = ahead.run.timings
    overlapped = sum(ta[ne1_a[p + 1]].start < ta[exp_a[p]].end for p in range(len(ne1_a) - 1))
    assert overlapped > len(ne1_a) // 2  # the NE runs one block ahead of the CT
    ne1_s, exp_s = _by_pair(pp, "NE S=QK^T"), _by_pair(pp, "CT Exp ")
    tp = pp.run.timings
    assert not any(tp[ne1_s[p + 1]].start < tp[exp_s[p]].end for p in range(len(ne1_s) - 1))
    assert ahead.latency_ms < pp.latency_ms <= serial.latency_ms
    _check_ordering(ahead)


def test_seed_vector_block_multiplies_vector_commands() -> None:
    whole = model(_small(cv_ratio=False), HW)
    seed = model(_small(v_rows=8), HW)  # 8-row vector blocks: 16 per 128-row block
    ct = [sum(c.engine == "ct" for c in m.commands) for m in (whole, seed)]
    assert ct[1] == 16 * ct[0]
    assert seed.busy_ms["kcore"] > 10 * whole.busy_ms["kcore"]
    assert seed.latency_ms > whole.latency_ms


def test_sync_issue_what_if_inserts_joins() -> None:
    free = model(_small(), HW)
    joined = model(_small(sync_issue=True), HW)
    joins = [c for c in joined.commands if c.engine == "join"]
    assert joins
    assert all(c.cycles == laws.join(1, HW).cycles(HW) for c in joins)
    assert not any(c.engine == "join" for c in free.commands)
    assert joined.latency_ms > free.latency_ms
    assert joined.stall_ms["kcore"].get("join", 0) > 0


# ------------------------------------------------------------------ the board case


def test_board_busiest_tile_engines_by_law() -> None:
    m = model(board_config(), HW)
    assert max(m.tile_pairs) == BOARD["busiest_tile_pairs"] == 72
    assert m.load_balance == pytest.approx(28 / 32)  # 28 heads on 16 tiles
    ms = 1e3 / HW.clock_hz

    def cyc(t: laws.Timed) -> int:
        return t.cycles(HW)

    # NE: 72 pairs x (S = Q K^T + O += P V)
    ne = 72 * (cyc(laws.ne(256, 128, 256, "bf16", HW)) + cyc(laws.ne(256, 256, 128, "bf16", HW)))
    assert m.busy_ms["ne"] == pytest.approx(ne * ms)
    # RDMA: two heads x 8 blocks of Q, K, V (K/V resident: once per head), 64 KiB each
    rdma = 2 * 3 * 8 * cyc(laws.dma("rdma", 256 * 128 * 2, HW, active_tiles=16))
    assert m.busy_ms["rdma"] == pytest.approx(rdma * ms)
    # TDMA: per head 8 K^T transposes (32,768 single elements = 2 GS of 16,384) and 8 moves
    # each of Q, V, O to or from NCx (256 rows x 2 runs of 64 elements)
    move = cyc(laws.tdma(512, 128, HW))
    tdma = 2 * 8 * (2 * cyc(laws.tdma(16384, 2, HW)) + 3 * move)
    assert m.busy_ms["tdma"] == pytest.approx(tdma * ms)
    # CT: per pair 6 fp32 passes (scale, max, sub, sum, convert; + causal select on the 8
    # diagonal blocks) and Exp (8), plus the row and accumulator work
    n = 256 * 256
    per_pair = 5 * _ct(n, 1, "f32") + _ct(n, 8, "f32")
    assert m.busy_ms["ct"] > (72 * per_pair + 16 * _ct(n, 1, "f32")) * ms
    assert m.limiting_engine == "ct"
    # the CT's dependency stalls, walked back along the commands that set each start
    waits = m.waiting_on()
    assert sum(waits.values()) == pytest.approx(m.stall_ms["ct"]["dependency"])
    assert max(waits, key=lambda e: waits[e]) == "tdma"  # the K^T transposes
    _check_ordering(m)


def test_calibration_lists_body_and_all_five_engines() -> None:
    rows = calibration(HW)
    default = {r["quantity"]: r for r in rows if r["reading"] == "default"}
    assert list(default) == [
        "kernel body (slowest tile)",
        "NE busy",
        "CT busy",
        "RDMA busy",
        "WDMA busy",
        "TDMA busy",
    ]
    m = model(board_config(), HW)
    want = {
        "kernel body (slowest tile)": (m.latency_ms, 2.461),
        "NE busy": (m.busy_ms["ne"], 0.363568),
        "CT busy": (m.busy_ms["ct"], 1.127309),
        "RDMA busy": (m.busy_ms["rdma"], 0.387578),
        "WDMA busy": (m.busy_ms["wdma"], 0.033470),
        "TDMA busy": (m.busy_ms["tdma"], 0.885470),
    }
    for name, (got, board) in want.items():
        row = default[name]
        assert row["model_ms"] == pytest.approx(got)
        assert row["board_ms"] == board
        assert row["ratio"] == pytest.approx(got / board)
    readings = {r["reading"] for r in rows} - {"default"}
    assert len(readings) == len(READINGS)


def test_row_block_split_balances_causal_work() -> None:
    cfg = board_config(split="bns1")
    units = split_work(cfg, 16)
    assert sorted(u for tile in units for u in tile) == [
        (h, i) for h in range(28) for i in range(8)
    ]
    m = model(cfg, HW)
    assert max(m.tile_pairs) == 63  # 28 * 36 / 16
    assert m.load_balance == 1.0
    assert max(m.tile_ms.values()) == pytest.approx(m.latency_ms)
    assert len(m.tile_ms) == 16


def test_search_models_every_candidate_like_the_baseline() -> None:
    base = board_config(sync_issue=True, vector_dtype="bf16")
    for cand in candidates(base):
        assert (cand.sync_issue, cand.vector_dtype, cand.transpose) == (True, "bf16", "tdma")
    cfg = _small(s1=512)
    best, tried = search(cfg, HW, sizes=(64, 128))
    assert all(best.latency_ms <= m.latency_ms for m in tried)
    # the baseline's own tiling is a candidate, so the best is never worse than it
    baseline = model(cfg, HW)
    assert any(m.config == baseline.config for m in tried)
    assert best.latency_ms <= baseline.latency_ms


def test_tiling_that_does_not_fit_spm_is_rejected() -> None:
    with pytest.raises(Tx8labError, match=r"block=\(2048, 2048\).*SPM.*choose smaller blocks"):
        model(board_config(block=(2048, 2048), kv_resident=False), HW)


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"double_issue": True, "pingpong": False}, "pingpong"),
        ({"vector_dtype": "f8"}, "vector_dtype"),
        ({"transpose": "dma"}, "transpose"),
        ({"io_layout": "nchw"}, "io_layout"),
        ({"v_rows": 0}, "v_rows"),
        ({"n2": 3}, "N2=3"),
        ({"block": (0, 64)}, "block"),
        ({"ddr_tiles": 0}, "ddr_tiles"),
    ],
)
def test_bad_knobs_name_the_field(knobs: dict[str, object], message: str) -> None:
    with pytest.raises(Tx8labError, match=message):
        model(board_config(**knobs), HW)


def _key_digits(m: FaModel) -> str:
    """The 13 field digits of the model's tiling key, low digit first."""
    value = m.tiling_key - 10**19
    assert 0 <= value < 10**13
    return str(value).zfill(13)[::-1]


_SERIAL = {"pingpong": False, "double_issue": False}


@pytest.mark.parametrize(
    ("knobs", "template", "digits"),
    [
        # seed 004 §2.2, low digit first: UB0, UB1, Block (AxisEnum B=0 S1=3 S2=4 NONE=9),
        # ImplMode (high performance 1), DType (FP16 0, BF16 2), Layout (BNSD 2),
        # Bmm1Format (ND 0), Sparse (ANY 2, CAUSAL 3), performance (NONE 0,
        # BIG_DOUBLE_BUFFER 2), hasDropOut, hasAttenMask, hasPse, enableL1Reuse
        (None, "S1S2", "3491220300100"),  # the board: S2 = 2048 > 1024; causal -> mask
        ({"b": 1, "n1": 4, "s1": 512, "d": 64}, "S1", "3991220220000"),  # 128 < S2 <= 1024
        # S2 = 64 <= 128, 64 * 64 <= 512K: UB and cores split B
        ({"b": 32, "n1": 2, "s1": 64, "d": 32, "dtype": "f16", **_SERIAL}, "B", "0901020200000"),
        # the S1S2 shape with the S1 template forced: UB S1 only
        (
            {"b": 1, "n1": 2, "s1": 512, "s2": 2048, "d": 64, "template": "S1"},
            "S1",
            "3991220220000",
        ),
        # a B shape (S2 = 64) given 32-row blocks: the S1 template's axes (whole S2)
        ({"b": 2, "n1": 2, "s1": 64, "d": 32, "block": (32, 64), **_SERIAL}, "S1", "3991220200000"),
    ],
)
def test_tiling_key_digits_by_hand(
    knobs: dict[str, object] | None, template: str, digits: str
) -> None:
    cfg = board_config() if knobs is None else FaConfig(**knobs)  # type: ignore[arg-type]
    m = model(cfg, HW)
    assert m.template == template
    assert _key_digits(m) == digits


def _per_tile(m: FaModel, prefix: str) -> list[object]:
    return [c for c in m.commands if c.label.startswith(prefix)]


# The TX81 thresholds (tx8_limits: the SPM is 8x the seed's 192 KiB UB): S1 area 512K
# elements, UB pass 1M elements; S2 > 1024 and s2.i = 1024 unscaled; 16 cores.


def test_s1s2_shape_runs_the_s1s2_tiling() -> None:
    # S2 = 2048 > 1024 -> S1S2; outer B*N2*G*ceil(S1/64) = 2 * 8 = 16, not above 16 cores,
    # so s1.i = 64; s2.i = 1024: 8 row blocks per head, 2 key blocks per row block. The
    # cores split the 16 (head, row block) units: one per tile, S2 the inner loop.
    cfg = FaConfig(b=1, n1=2, s1=512, s2=2048, d=64, pingpong=False, double_issue=False)
    m = model(cfg, HW)
    assert (m.template, m.template_source) == ("S1S2", "shape")
    assert m.config.block == (64, 1024)
    assert m.config.head_batch == 1
    assert m.tile_pairs == (2,) * 16
    ne_s = _per_tile(m, "NE S=QK^T")
    assert [c.label.split()[-1] for c in ne_s] == ["j0", "j1"]  # one row block, S2 inner
    assert len({c.label.split()[-2] for c in ne_s}) == 1
    assert all(c.cycles == laws.ne(64, 64, 1024, "bf16", HW).cycles(HW) for c in ne_s)
    # the second key block rescales the running statistics (online softmax)
    assert len(_per_tile(m, "CT Max m")) == 8  # 64 rows in 8-row V blocks


def test_s1_shape_runs_the_s1_tiling() -> None:
    # S2 = 512: not > 1024, but > 128 -> S1. s1.i <= min(align16(512), 1M / 512) = 512;
    # 16 heads x 1 block already fill 16 cores -> s1.i = 512: block (512, 512), the whole
    # S2 in one block (no rescale), one (head, row block) per tile.
    cfg = FaConfig(b=1, n1=16, s1=512, d=64, pingpong=False, double_issue=False)
    m = model(cfg, HW)
    assert m.template == "S1"
    assert m.config.block == (512, 512)
    assert m.tile_pairs == (1,) * 16
    ne_s = _per_tile(m, "NE S=QK^T")
    assert len(ne_s) == 1
    assert ne_s[0].cycles == laws.ne(512, 64, 512, "bf16", HW).cycles(HW)
    assert not _per_tile(m, "CT Max m")


def test_b_shape_runs_the_b_tiling() -> None:
    # S2 = 64 <= 128 and 64 * 64 <= 512K -> B. B.i * 2 * 64 * 64 <= 1M -> 32 (all); 32
    # batches on 16 cores: ceil(32 / B.i) >= 16 -> B.i = 2: 16 passes of 2 x 2 = 4 heads,
    # one per tile, each one batched step over whole 64 x 64 blocks.
    cfg = FaConfig(b=32, n1=2, s1=64, d=32, pingpong=False, double_issue=False)
    m = model(cfg, HW)
    assert m.template == "B"
    assert (m.config.block, m.config.head_batch) == ((64, 64), 4)
    assert m.tile_pairs == (4,) * 16
    ne_s = _per_tile(m, "NE S=QK^T")
    assert len(ne_s) == 1
    assert ne_s[0].cycles == laws.ne(64, 32, 64, "bf16", HW, batch=4).cycles(HW)
    q = _per_tile(m, "RDMA Q")
    assert len(q) == 1
    assert q[0].cycles == laws.dma("rdma", 4 * 64 * 32 * 2, HW, active_tiles=16).cycles(HW)
    # the vector ops cover the 4 x 64 rows: 2 V blocks of 32 KB / (64 x 4 B) = 128 rows
    exp = _per_tile(m, "CT Exp ")
    assert [c.cycles for c in exp] == [_ct(128 * 64, 8, "f32")] * 2


def test_template_override_changes_the_schedule() -> None:
    cfg = FaConfig(b=1, n1=2, s1=512, s2=2048, d=64, pingpong=False, double_issue=False)
    auto = model(cfg, HW)
    forced = model(replace(cfg, template="S1"), HW)
    # S1: s1.i * 2048 <= 1M -> 512; 2 heads x ceil(512 / s1.i) >= 16 -> s1.i = 64
    assert (forced.template, forced.template_source) == ("S1", "knob")
    assert forced.config.block == (64, 2048)
    ne_s = _per_tile(forced, "NE S=QK^T")
    assert [c.cycles for c in ne_s] == [laws.ne(64, 64, 2048, "bf16", HW).cycles(HW)]
    assert not _per_tile(forced, "CT Max m")  # one key block: no online rescale
    assert len(_per_tile(auto, "NE S=QK^T")) == 2
    assert [c.label for c in forced.commands] != [c.label for c in auto.commands]
    assert _key_digits(forced)[:3] == "399"  # UB S1, -, cores on the fused axes
    assert _key_digits(auto)[:3] == "349"
    # a B pass holds the whole 512 x 2048 score of a head: more than a tile's SPM
    with pytest.raises(Tx8labError, match=r"template B.*SPM"):
        model(replace(cfg, template="B"), HW)
    with pytest.raises(Tx8labError, match=r"FA template 'S3'"):
        model(replace(cfg, template="S3"), HW)
    with pytest.raises(Tx8labError, match=r"template S1 .*block \(64, 1024\)"):
        model(replace(cfg, template="S1", block=(64, 1024)), HW)


def test_a_given_block_runs_under_the_template_it_keeps() -> None:
    # the board's 256 x 256 splits S1 and S2: S1S2 (which the shape also selects)
    m = model(board_config(), HW)
    assert (m.template, m.template_source, m.config.block) == ("S1S2", "block", (256, 256))
    # a B shape (S2 = 64) with row blocks of 32: B keeps whole S1, S1 keeps whole S2
    cfg = FaConfig(b=2, n1=2, s1=64, d=32, block=(32, 64))
    assert model(cfg, HW).template == "S1"
    assert model(replace(cfg, block=(32, 32)), HW).template == "S1S2"


def test_cv_ratio_is_on_by_default() -> None:
    cfg = FaConfig(b=1, n1=2, s1=512, s2=2048, d=64, pingpong=False, double_issue=False)
    assert cfg.cv_ratio
    on, off = model(cfg, HW), model(replace(cfg, cv_ratio=False), HW)
    # seed 004 §2.1: the Vector's block is 8 x 1024 fp32 (32 KB); the C block 64 x 1024
    assert on.config.v_rows == 8
    exp_on = _per_tile(on, "CT Exp h")
    assert [c.label.split()[-1] for c in exp_on[:8]] == [f"[{k}/8]" for k in range(1, 9)]
    assert all(c.cycles == _ct(8 * 1024, 8, "f32") for c in exp_on)
    exp_off = _per_tile(off, "CT Exp h")
    assert all(c.cycles == _ct(64 * 1024, 8, "f32") for c in exp_off)
    assert len(exp_on) == 8 * len(exp_off)
    assert off.config.v_rows is None


# ------------------------------------------------------------------ random shapes


@settings(max_examples=25, deadline=None)
@given(fa_configs())
def test_ordering_contract_on_random_shapes(cfg: FaConfig) -> None:
    m = model(cfg, HW)
    _check_ordering(m)
    pairs = block_pairs(cfg.s1, cfg.keys, *m.config.c_block, cfg.causal)
    assert sum(m.tile_pairs) == cfg.b * cfg.n1 * len(pairs)  # every pair on one tile
    assert 0 < m.load_balance <= 1
    assert set(m.busy_ms) == {"ne", "ct", "rdma", "wdma", "tdma", "kcore"}
    assert m.spm_bytes <= HW.tile.spm_usable_bytes
    assert not math.isnan(m.latency_ms)


# ------------------------------------------------------------------ the same attention as a graph


def test_run_and_fa_agree_within_the_commands_only_one_has() -> None:
    """``tx8lab run`` on softmax(Q Kᵀ / sqrt(D)) V and ``tx8lab fa`` on the same shape.

    The graph's program (default pipeline) shards the attention group over 2 heads x 8
    row blocks of 32 rows: one (head, row block) per tile, the whole key length per
    block. The FA model is set to the same tiling (block 32 x 256, row-block split, one
    pair per tile, no online rescale) and to the graph's readings where it has a knob
    for them (vector math at the graph's bf16, Kᵀ given in DDR as the graph's input,
    NCx in DDR, no lse). Seven commands per tile are then the same work timed by the same
    law: the loads of Q, Kᵀ, V, both NE products, the scale and the store. The rest only
    one program has: the graph's layout-conversion groups (ChannelNorm through DDR), its
    barriers, the scale constant's load and its Softmax; the FA's four score commands and
    the normalisation of O. Removing commands never delays the others in the simulator
    (every time is a max of sums), and each extra command delays the rest by at most its
    issue plus its own time when everything waits on it, so each latency lies between
    that of the common commands, T_c, and T_c + X (X: the extra commands' issue + law
    times): the two differ by at most max(X_run, X_fa).
    """
    from tx8lab.core.builder import Builder
    from tx8lab.core.passes import build_pipeline
    from tx8lab.core.program import build_program
    from tx8lab.core.runner import run_pipeline
    from tx8lab.core.simulate import program_streams, simulate_program

    b_, h_, s_, d_ = 1, 2, 256, 64
    b = Builder()
    q = b.input((b_, h_, s_, d_), "bf16")
    kt = b.input((b_, h_, d_, s_), "bf16")
    v = b.input((b_, h_, s_, d_), "bf16")
    s = b.op("MatMul", q, kt)
    s = b.op("Mul", s, b.constant([1.0 / math.sqrt(d_)], "bf16"))
    p = b.op("Softmax", s, axis=-1)
    b.output(b.op("MatMul", p, v))
    steps = list(run_pipeline(b.finish(), build_pipeline(None, {}), HW, instruments=[]))
    final = steps[-1].after
    program = build_program(final, HW)
    run = simulate_program(program, final, HW)
    streams = program_streams(program, final, HW)

    cfg = FaConfig(
        b=b_, n1=h_, s1=s_, d=d_, block=(32, s_), split="bns1", pingpong=False,
        double_issue=False, vector_dtype="bf16", io_layout="ncx", transpose="ne",
        save_lse=False,
    )  # fmt: skip
    fa = model(cfg, HW)
    assert fa.tile_pairs == (1,) * 16
    assert all(len(c) == len(streams[0]) for c in program.tiles.values())

    tile = 0
    commands = program.tiles[tile]
    attention = next(c.group for c in commands if c.op_kind == "tx8be.MatMul")
    common_kinds = {"tx8be.LoadVar", "tx8be.MatMul", "tx8be.Mul", "tx8be.StoreVar"}
    run_common, run_only = [], []
    for c, sc in zip(commands, streams[tile], strict=True):
        same = c.group == attention and c.op_kind in common_kinds
        (run_common if same else run_only).append(sc)
    fa_common_labels = ("RDMA", "NE", "CT Mul scale", "WDMA")
    fa_common = [c for c in fa.commands if c.label.startswith(fa_common_labels)]
    fa_only = [c for c in fa.commands if not c.label.startswith(fa_common_labels)]
    # the common commands: the same engines, the same law times, in the same order
    assert [(c.engine, c.cycles) for c in run_common] == [(c.engine, c.cycles) for c in fa_common]
    assert len(run_common) == 7
    assert sorted(c.label.split()[1] for c in fa_only) == [
        "Exp", "Mul", "Reciprocal", "ReduceMax", "ReduceSum", "Sub"
    ]  # fmt: skip
    kinds_only = sorted(
        {c.op_kind for c in commands if c.group != attention or c.op_kind not in common_kinds}
    )
    assert kinds_only == [
        "tx8be.ChannelNorm", "tx8be.Group", "tx8be.LoadConst", "tx8be.LoadVar",
        "tx8be.Softmax", "tx8be.StoreVar",
    ]  # fmt: skip

    barrier = laws.barrier(16, HW).cycles(HW)

    def extra(cmds: list[object]) -> int:
        total = 0
        for c in cmds:
            engine, cycles = c.engine, c.cycles  # type: ignore[attr-defined]
            total += barrier if engine == "barrier" else ISSUE + cycles
        return total

    x_run, x_fa = extra(run_only), extra(fa_only)
    t_run, t_fa = run.body_cycles, fa.run.body
    assert abs(t_run - t_fa) <= max(x_run, x_fa), (t_run, t_fa, x_run, x_fa)
    # the sharper statement inside the attention group (its span on the tile): the only
    # extra commands there are the constant's load and the Softmax
    in_group = [
        (c, t) for c, t in zip(commands, run.tiles[tile].timings, strict=True)
        if c.group == attention and c.what != "barrier"
    ]  # fmt: skip
    span = max(t.end for _, t in in_group) - min(t.issue_start for _, t in in_group)
    group_only = [
        sc for c, sc in zip(commands, streams[tile], strict=True)
        if c.group == attention and c.op_kind in ("tx8be.LoadConst", "tx8be.Softmax")
    ]  # fmt: skip
    x_group = extra(group_only)
    assert abs(span - t_fa) <= max(x_group, x_fa), (span, t_fa, x_group, x_fa)
    # and the whole run is the group plus what only the graph has around it
    assert t_run - span <= x_run - x_group
