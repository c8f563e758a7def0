"""FlashAttention backward (FAG) tile timeline."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tx8lab.errors import Tx8labError
from tx8lab.hw.presets import TX81
from tx8lab.kernels.flash_attention import block_pairs
from tx8lab.kernels.flash_attention.backward import fag_model, split_fag_work
from tx8lab.kernels.flash_attention.timeline import FaConfig, board_config, model


@st.composite
def configs(draw: st.DrawFn) -> FaConfig:
    pp = draw(st.booleans())
    return FaConfig(
        b=draw(st.integers(1, 2)),
        n1=draw(st.sampled_from([1, 2, 4])),
        s1=draw(st.integers(1, 600)),
        s2=draw(st.integers(1, 600)),
        d=draw(st.sampled_from([64, 128])),
        causal=draw(st.booleans()),
        block=(draw(st.sampled_from([64, 128, 256])), draw(st.sampled_from([64, 128, 256]))),
        pingpong=pp,
        double_issue=pp and draw(st.booleans()),
        sync_issue=draw(st.booleans()),
        split=draw(st.sampled_from(["bn", "bns1"])),
    )


@settings(max_examples=30, deadline=None)
@given(configs())
def test_backward_timeline_invariants(cfg: FaConfig) -> None:
    m = fag_model(cfg, TX81)
    pairs = block_pairs(cfg.s1, cfg.keys, cfg.block[0], cfg.block[1], cfg.causal)
    assert sum(m.tile_pairs) == cfg.b * cfg.n1 * len(pairs)
    cmds = m.timeline.commands
    spans: dict[str, list[tuple[int, int]]] = {}
    for c in cmds:
        assert c.end - c.start >= c.work
        spans.setdefault(c.engine, []).append((c.start, c.end))
    for engine_spans in spans.values():
        for (_, end), (start, _) in itertools.pairwise(engine_spans):
            assert start >= end
    stage = {(c.label.split()[0], c.pair): c for c in cmds if c.engine in ("ne", "ct")}
    for t in range(m.timeline.pairs):
        assert stage[("CT1", t)].start >= stage[("NE1", t)].end
        assert stage[("NE2", t)].start >= stage[("CT1", t)].end
        assert stage[("CT2", t)].start >= stage[("NE3", t)].end
        assert stage[("NE4", t)].start >= stage[("CT2", t)].end
        assert stage[("NE5", t)].start >= stage[("CT2", t)].end
    assert m.timeline.makespan >= max(v for k, v in m.timeline.busy.items() if k != "kcore")


def test_backward_ne_work_is_two_and_a_half_times_forward() -> None:
    fwd = model(board_config(), TX81)
    bwd = fag_model(board_config(), TX81)
    assert bwd.busy_ms["ne"] == pytest.approx(2.5 * fwd.busy_ms["ne"], rel=1e-3)
    assert bwd.template == "s1s2_bn2"  # B * N2 = 28 > 16 tiles
    assert max(bwd.tile_pairs) == 72


def test_dq_is_read_modify_written_after_the_first_visit() -> None:
    m = fag_model(board_config(), TX81)
    labels = [c.label for c in m.timeline.commands]
    rows_visited = {label.split()[1] for label in labels if label.startswith("ST dQ")}
    stores = sum(label.startswith("ST dQ") for label in labels)
    loads = sum(label.startswith("LD dQ") for label in labels)
    assert stores == m.timeline.pairs
    assert loads == stores - len(rows_visited)


def test_double_issue_and_row_split_help() -> None:
    base = board_config(sync_issue=False)
    serial = fag_model(base, TX81)
    ahead = fag_model(board_config(sync_issue=False, pingpong=True, double_issue=True), TX81)
    assert ahead.latency_ms < serial.latency_ms
    cfg = board_config(split="bns1")
    assert max(fag_model(cfg, TX81).tile_pairs) == 63
    units = split_fag_work(cfg, 16)
    assert sorted(u for tile in units for u in tile) == [
        (h, j) for h in range(28) for j in range(8)
    ]


def test_backward_errors() -> None:
    with pytest.raises(Tx8labError, match="SPM"):
        fag_model(board_config(block=(1024, 1024)), TX81)
    with pytest.raises(Tx8labError, match="pingpong"):
        fag_model(board_config(double_issue=True), TX81)
