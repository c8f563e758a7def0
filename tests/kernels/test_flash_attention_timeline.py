"""FlashAttention tile timeline: C/V pipelining invariants, core split, calibration, search."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tx8lab.errors import Tx8labError
from tx8lab.hw.presets import TX81
from tx8lab.kernels.flash_attention import block_pairs
from tx8lab.kernels.flash_attention.timeline import (
    BOARD,
    CT1_OPS,
    FaConfig,
    FaModel,
    board_config,
    calibration,
    model,
    search,
    split_work,
)


def _check_invariants(m: FaModel) -> None:
    cmds = m.timeline.commands
    by_engine: dict[str, list[tuple[int, int]]] = {}
    for c in cmds:
        assert c.end >= c.start >= 0
        assert c.end - c.start >= c.work
        by_engine.setdefault(c.engine, []).append((c.start, c.end))
    for spans in by_engine.values():  # each engine runs its queue in order, one at a time
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end
    stage = {(c.label.split()[0], c.pair): c for c in cmds}
    for (name, t), c in stage.items():
        before = {"CT1": "NE1", "NE2": "CT1", "CT2": "NE2"}.get(name)
        if before:
            assert c.start >= stage[(before, t)].end, (name, t)
    makespan = m.timeline.makespan
    assert makespan >= max(v for k, v in m.timeline.busy.items() if k != "kcore")
    assert makespan <= sum(c.end - c.start for c in cmds) + m.timeline.busy["kcore"]


@st.composite
def configs(draw: st.DrawFn) -> FaConfig:
    pp = draw(st.booleans())
    return FaConfig(
        b=draw(st.integers(1, 2)),
        n1=draw(st.sampled_from([1, 2, 4])),
        n2=1,
        s1=draw(st.integers(1, 700)),
        s2=draw(st.integers(1, 700)),
        d=draw(st.sampled_from([64, 128])),
        causal=draw(st.booleans()),
        block=(draw(st.sampled_from([64, 128, 256])), draw(st.sampled_from([64, 128, 256]))),
        pingpong=pp,
        double_issue=pp and draw(st.booleans()),
        sync_issue=draw(st.booleans()),
        split=draw(st.sampled_from(["bn", "bns1"])),
    )


@settings(max_examples=40, deadline=None)
@given(configs())
def test_timeline_invariants_on_random_shapes(cfg: FaConfig) -> None:
    m = model(cfg, TX81)
    _check_invariants(m)
    pairs = block_pairs(cfg.s1, cfg.keys, cfg.block[0], cfg.block[1], cfg.causal)
    assert sum(m.tile_pairs) == cfg.b * cfg.n1 * len(pairs)  # every pair on one tile
    assert m.timeline.pairs == max(m.tile_pairs) or cfg.split == "bns1"
    assert 0 < m.load_balance <= 1


def test_board_tiling_busiest_tile_and_ne_time() -> None:
    m = model(board_config(), TX81)
    assert max(m.tile_pairs) == BOARD["busiest_tile_pairs"] == 72
    assert m.load_balance == pytest.approx(28 / 32)  # 28 heads on 16 tiles
    # NE: 72 pairs x 2 products x 2*256*256*128 flop at 8 TFLOP/s
    assert m.busy_ms["ne"] == pytest.approx(72 * 2 * 2 * 256 * 256 * 128 / 8e12 * 1e3, rel=1e-3)
    # CT: 6 ops per score element (+1 on the 8 diagonal blocks of each head), fp32 32 GOPS
    ct1 = (72 * len(CT1_OPS) + 16) * 256 * 256 / 32e9 * 1e3
    assert ct1 < m.busy_ms["ct"] < ct1 * 1.2
    _check_invariants(m)


def test_calibration_within_twenty_percent_of_the_board() -> None:
    rows = {r["quantity"]: r for r in calibration(TX81)}
    for name in (
        "kernel body (slowest tile)",
        "vector (CT) busy, busiest tile",
        "matrix (NE) busy, busiest tile",
        "RDMA busy, busiest tile",
    ):
        ratio = rows[name]["ratio"]
        assert isinstance(ratio, float)
        assert 0.8 <= ratio <= 1.2, (name, ratio)


def test_single_buffer_serialises_and_double_issue_overlaps() -> None:
    base = board_config(sync_issue=False)
    serial = model(base, TX81)
    ahead = model(replace(base, pingpong=True, double_issue=True), TX81)
    cmds = {(c.label.split()[0], c.pair): c for c in serial.timeline.commands}
    # one S slot: NE1(t+1) waits for CT1(t) to have read S
    for t in range(serial.timeline.pairs - 1):
        assert cmds[("NE1", t + 1)].start >= cmds[("CT1", t)].end
    ahead_cmds = {(c.label.split()[0], c.pair): c for c in ahead.timeline.commands}
    overlapped = sum(
        ahead_cmds[("NE1", t + 1)].start < ahead_cmds[("CT1", t)].end
        for t in range(ahead.timeline.pairs - 1)
    )
    assert overlapped > ahead.timeline.pairs // 2  # the NE runs a block ahead
    assert ahead.latency_ms < serial.latency_ms
    assert model(board_config(), TX81).latency_ms > serial.latency_ms  # joins cost time


def test_seed_vector_block_multiplies_issue_commands() -> None:
    whole = model(board_config(), TX81)
    seed = model(board_config(v_rows=8), TX81)  # 8-row vector blocks: 32 per 256-row block
    assert seed.busy_ms["kcore"] > 10 * whole.busy_ms["kcore"] / 2
    assert seed.latency_ms > whole.latency_ms


def test_row_block_split_balances_causal_work() -> None:
    cfg = board_config(split="bns1")
    units = split_work(cfg, 16)
    assert sorted(u for tile in units for u in tile) == [
        (h, i) for h in range(28) for i in range(8)
    ]
    m = model(cfg, TX81)
    assert max(m.tile_pairs) == 63  # 28 * 36 / 16
    assert m.load_balance == 1.0


def test_search_finds_a_faster_tiling_than_the_board() -> None:
    best, tried = search(board_config(), TX81)
    assert all(best.latency_ms <= m.latency_ms for m in tried)
    assert best.latency_ms < model(board_config(), TX81).latency_ms / 1.5
    assert best.spm_bytes <= TX81.tile.spm_usable_bytes
    assert any(m.config.block == (256, 256) for m in tried)


def test_tiling_that_does_not_fit_spm_is_rejected() -> None:
    with pytest.raises(Tx8labError, match="SPM"):
        model(board_config(block=(2048, 2048), kv_resident=False), TX81)


def test_double_issue_needs_pingpong() -> None:
    with pytest.raises(Tx8labError, match="pingpong"):
        model(board_config(double_issue=True, pingpong=False), TX81)


def test_template_and_key_follow_the_shape() -> None:
    m = model(board_config(), TX81)
    assert m.template == "S1S2"
    assert str(m.tiling_key).startswith("1000000")
