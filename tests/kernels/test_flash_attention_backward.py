"""FlashAttention backward (FAG) model: command streams timed by the tile simulator."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings

from tests.kernels.fa_configs import fa_configs
from tx8lab.errors import Tx8labError
from tx8lab.hw import laws
from tx8lab.hw.presets import TX81
from tx8lab.hw.sim import Range
from tx8lab.kernels.flash_attention import block_pairs
from tx8lab.kernels.flash_attention.backward import FagModel, fag_model, split_fag_work
from tx8lab.kernels.flash_attention.timeline import FaConfig, board_config

HW = TX81


def _hit(a: Range, b: Range) -> bool:
    return a.space == b.space and a.lo < b.hi and b.lo < a.hi


def _check_ordering(m: FagModel) -> None:
    cmds, timings = m.commands, m.tiles.result.tiles[m.busiest_tile].timings
    spans: dict[str, list[tuple[int, int]]] = {}
    for c, t in zip(cmds, timings, strict=True):
        if c.engine != "join":
            assert t.end - t.start == c.cycles
            spans.setdefault(c.engine, []).append((t.start, t.end))
    for engine_spans in spans.values():
        for (_, end), (start, _) in itertools.pairwise(engine_spans):
            assert start >= end
    for b in range(len(cmds)):
        for a in range(b):
            x, y = cmds[a], cmds[b]
            if (
                any(_hit(w, r) for w in x.writes for r in y.reads)
                or any(_hit(r, w) for r in x.reads for w in y.writes)
                or any(_hit(w, v) for w in x.writes for v in y.writes)
            ):
                assert timings[b].start >= timings[a].end, (x.label, y.label)


@settings(max_examples=20, deadline=None)
@given(fa_configs(forward=False))
def test_backward_ordering_contract(cfg: FaConfig) -> None:
    m = fag_model(cfg, HW)
    pairs = block_pairs(cfg.s1, cfg.keys, *m.config.c_block, cfg.causal)
    assert sum(m.tile_pairs) == cfg.b * cfg.n1 * len(pairs)
    _check_ordering(m)
    assert set(m.busy_ms) == {"ne", "ct", "rdma", "wdma", "tdma", "kcore"}


def test_backward_ne_work_is_five_products_per_pair_by_law() -> None:
    m = fag_model(board_config(transpose="ne"), HW)
    assert m.template == "s1s2_bn2"  # B * N2 = 28 > 16 tiles
    assert max(m.tile_pairs) == 72

    def cyc(mkn: tuple[int, int, int]) -> int:
        return laws.ne(*mkn, "bf16", HW).cycles(HW)

    # S = Q K^T and dP = dO V^T (256x128x256); dV += P^T dO, dK += dS^T Q, dQ = dS K
    # (256x256x128): 2.5x the forward's two products in FLOPs
    per_pair = 2 * cyc((256, 128, 256)) + 3 * cyc((256, 256, 128))
    assert m.busy_ms["ne"] == pytest.approx(72 * per_pair / HW.clock_hz * 1e3)
    flops = 5 * 2 * 256 * 256 * 128
    assert flops / (2 * 2 * 256 * 256 * 128) == 2.5


def test_dq_is_read_modify_written_in_ddr_after_the_first_visit() -> None:
    m = fag_model(board_config(transpose="ne"), HW)
    cmds = m.commands
    timings = m.tiles.result.tiles[m.busiest_tile].timings
    stores = [k for k, c in enumerate(cmds) if c.label.startswith("WDMA dQ")]
    loads = [k for k, c in enumerate(cmds) if c.label.startswith("RDMA dQ")]
    visited = {tuple(cmds[k].label.split()[2:4]) for k in stores}
    assert len(stores) == max(m.tile_pairs)
    assert len(loads) == len(stores) - len(visited)
    # each load of a row's workspace waits for that row's previous store (DDR ranges)
    for k in loads:
        row = cmds[k].label.split()[2:4]
        before = [s for s in stores if s < k and cmds[s].label.split()[2:4] == row]
        assert before
        assert timings[k].start >= timings[before[-1]].end


def test_transpose_readings_move_the_bound() -> None:
    tdma = fag_model(board_config(), HW)
    ct = fag_model(board_config(transpose="ct"), HW)
    ne = fag_model(board_config(transpose="ne"), HW)
    # per pair P^T and dS^T are single-element GatherScatters of 65,536 transfers
    assert tdma.limiting_engine == "tdma"
    gs = laws.tdma(16384, 2, HW).cycles(HW)
    assert tdma.busy_ms["tdma"] > 72 * 2 * 4 * gs / HW.clock_hz * 1e3
    assert ct.busy_ms["tdma"] < tdma.busy_ms["tdma"] / 10
    assert ct.busy_ms["ct"] > ne.busy_ms["ct"]
    assert ne.latency_ms < tdma.latency_ms
    assert not any(c.label.startswith(("TDMA P^T", "TDMA dS^T")) for c in ne.commands)


def test_double_issue_and_row_split_help() -> None:
    base = FaConfig(
        b=1, n1=1, s1=1024, d=64, causal=True, block=(128, 128), transpose="ne",
        split="bn", pingpong=False, double_issue=False,
    )  # fmt: skip
    serial = fag_model(base, HW)
    ahead = fag_model(replace(base, pingpong=True, double_issue=True), HW)
    assert ahead.latency_ms < serial.latency_ms
    _check_ordering(ahead)
    cfg = board_config(split="bns1")
    assert max(fag_model(cfg, HW).tile_pairs) == 63
    units = split_fag_work(cfg, 16)
    assert sorted(u for tile in units for u in tile) == [
        (h, j) for h in range(28) for j in range(8)
    ]


def test_backward_errors() -> None:
    with pytest.raises(Tx8labError, match="SPM"):
        fag_model(board_config(block=(1024, 1024)), HW)
    with pytest.raises(Tx8labError, match="pingpong"):
        fag_model(board_config(double_issue=True), HW)
    with pytest.raises(Tx8labError, match="FAG GQA"):
        fag_model(board_config(n2=3), HW)


# The FAG templates (seed 004 §1) by priority; thresholds 64 * 128 = 8192 elements and
# B * N2 > 16 cores. Their tiling: S1S2 ones the Cube base block 128 x 128 (§2.1); the
# small ones whole S1 x S2 blocks with b.i*N2*G / n2.i*G heads per pass.


def _ne_s(m: FagModel) -> list[tuple[str, int]]:
    return [(c.label, c.cycles) for c in m.commands if c.label.startswith("NE S=QK^T")]


def test_fallback_template_splits_the_fused_axes() -> None:
    # N2*G*S1*S2 and G*S1*S2 >= 8192, B*N2 = 4 <= 16: s1s2_bn2gs1s2, block 128 x 128:
    # 4 heads x 4 key blocks = 16 (head, key block) units of 4 pairs, one per tile
    m = fag_model(FaConfig(b=1, n1=4, s1=512, d=64, pingpong=False, double_issue=False), HW)
    assert (m.template, m.template_source) == ("s1s2_bn2gs1s2", "shape")
    assert m.config.block == (128, 128)
    assert m.tile_pairs == (4,) * 16
    cyc = laws.ne(128, 64, 128, "bf16", HW).cycles(HW)
    assert [c for _, c in _ne_s(m)] == [cyc] * 4


def test_bn2_template_keeps_a_kv_heads_query_heads_on_one_tile() -> None:
    # B*N2 = 4 * 8 = 32 > 16 -> s1s2_bn2: the cores split B*N2, so KV head k (query heads
    # 2k, 2k+1) goes to tile k % 16: tile 0 holds query heads 0, 1, 32, 33
    cfg = FaConfig(b=4, n1=16, n2=8, s1=256, d=64, pingpong=False, double_issue=False)
    m = fag_model(cfg, HW)
    assert m.template == "s1s2_bn2"
    assert m.config.split == "bn2"
    units = split_fag_work(m.config, 16)
    assert sorted({h for h, _ in units[0]}) == [0, 1, 32, 33]
    assert m.tile_pairs == (16,) * 16  # 4 heads x 2 key blocks x 2 row blocks
    # the fallback forced on the same shape cuts the fused (head, key block) axis in
    # contiguous ranges instead: tile 0 holds query heads 0..3
    fused = fag_model(replace(cfg, fag_template="s1s2_bn2gs1s2"), HW)
    assert (fused.template, fused.template_source) == ("s1s2_bn2gs1s2", "knob")
    assert sorted({h for h, _ in split_fag_work(fused.config, 16)[0]}) == [0, 1, 2, 3]
    assert [c.label for c in fused.commands] != [c.label for c in m.commands]


def test_small_templates_batch_heads_in_one_pass() -> None:
    # bn2gs1s2_b: N2*G*S1*S2 = 2 * 32 * 32 = 2048 < 8192; b.i*2048 < 8192 -> 3, and
    # ceil(32 / b.i) >= 16 cores -> 2: 16 passes of 2 * 2 heads, one per tile
    cfg = FaConfig(b=32, n1=2, s1=32, d=32, pingpong=False, double_issue=False)
    m = fag_model(cfg, HW)
    assert m.template == "bn2gs1s2_b"
    assert (m.config.block, m.config.head_batch) == ((32, 32), 4)
    assert m.tile_pairs == (4,) * 16
    assert _ne_s(m) == [
        ("NE S=QK^T h0-3 i0 j0", laws.ne(32, 32, 32, "bf16", HW, batch=4).cycles(HW))
    ]
    # forcing the fallback: one head per step, 128 x 128 blocks capped at 32 x 32
    single = fag_model(replace(cfg, fag_template="s1s2_bn2gs1s2"), HW)
    assert (single.config.block, single.config.head_batch) == ((32, 32), 1)
    one = laws.ne(32, 32, 32, "bf16", HW).cycles(HW)
    assert [c for _, c in _ne_s(single)] == [one] * 4
    # n2gs1s2_bn1: N2*G*S1*S2 = 4 * 2 * 32 * 32 = 8192 (not < 8192), G*S1*S2 = 2048;
    # n2.i*2048 < 8192 -> 3 but 2 batches x ceil(4 / n2.i) >= 8 passes -> n2.i = 1: a
    # pass is one KV head's G = 2 query heads, 8 passes on 8 tiles
    gqa = fag_model(FaConfig(b=2, n1=8, n2=4, s1=32, d=32, pingpong=False, double_issue=False), HW)
    assert gqa.template == "n2gs1s2_bn1"
    assert gqa.config.head_batch == 2
    assert sorted(gqa.tile_pairs) == [0] * 8 + [2] * 8
    assert _ne_s(gqa) == [
        ("NE S=QK^T h0-1 i0 j0", laws.ne(32, 32, 32, "bf16", HW, batch=2).cycles(HW))
    ]
    with pytest.raises(Tx8labError, match=r"FAG template 'b'"):
        fag_model(replace(cfg, fag_template="b"), HW)
    with pytest.raises(
        Tx8labError, match=r"FAG template bn2gs1s2_b does not admit block \(16, 32\)"
    ):
        fag_model(replace(cfg, fag_template="bn2gs1s2_b", block=(16, 32)), HW)
