"""``tx8lab fa --shape B,N,S,D``: the FlashAttention model on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tx8lab.cli import main
from tx8lab.hw.presets import TX81
from tx8lab.kernels.flash_attention.timeline import board_config, model

ENGINES = {"ne", "ct", "rdma", "wdma", "tdma", "kcore"}


def test_board_shape_with_block_writes_the_simulated_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json = tmp_path / "fa.json"
    argv = ["fa", "--shape", "1,28,2048,128", "--causal", "--block", "256,256"]
    assert main([*argv, "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    want = model(board_config(), TX81)
    assert "block 256x256, schedule serial, split bn" in text
    assert "72 block pairs on the busiest, load balance 87.5%" in text
    engine, reason, ms = want.top_stall
    assert f"limiting engine {want.limiting_engine} " in text
    assert f"largest stall: {engine} {reason} {ms:.3f} ms" in text
    data = json.loads(out_json.read_text())
    assert data["searched"] is False
    assert data["latency_ms"] == pytest.approx(want.latency_ms)
    assert set(data["busy_ms"]) == ENGINES
    assert data["busy_ms"] == pytest.approx(want.busy_ms)
    assert set(data["stall_ms"]) == ENGINES
    assert data["stall_ms"]["ct"] == pytest.approx(want.stall_ms["ct"])
    assert set(data["tile_ms"]) == {str(t) for t in range(16)}
    assert max(data["tile_ms"].values()) == pytest.approx(data["latency_ms"])
    assert data["top_stall"] == {"engine": engine, "reason": reason, "ms": pytest.approx(ms)}
    assert data["waiting_on"] == pytest.approx(want.waiting_on())
    assert data["config"]["block"] == [256, 256]
    assert data["config"]["sync_issue"] is False
    assert data["template"] == "S1S2"
    rows = {r["quantity"]: r for r in data["calibration"] if r["reading"] == "default"}
    assert set(rows) == {
        "kernel body (slowest tile)",
        "NE busy",
        "CT busy",
        "RDMA busy",
        "WDMA busy",
        "TDMA busy",
    }
    assert rows["kernel body (slowest tile)"]["model_ms"] == pytest.approx(data["latency_ms"])
    assert rows["TDMA busy"]["model_ms"] == pytest.approx(data["busy_ms"]["tdma"])


def test_without_block_searches_and_reports_the_best(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json = tmp_path / "fa.json"
    assert main(["fa", "--shape", "1,4,512,64", "--causal", "--json", str(out_json)]) == 0
    assert "(all with asynchronous issue); best:" in capsys.readouterr().out
    data = json.loads(out_json.read_text())
    assert data["searched"] is True
    assert data["latency_ms"] == min(row["latency_ms"] for row in data["tried"])
    assert data["tried"][0]["latency_ms"] == data["latency_ms"]
    assert all("+joins" not in row["schedule"] for row in data["tried"])
    assert "calibration" not in data  # not the board's shape


def test_sync_issue_what_if_is_applied_to_every_candidate(tmp_path: Path) -> None:
    out_json = tmp_path / "fa.json"
    argv = ["fa", "--shape", "1,2,256,64", "--sync-issue", "--json", str(out_json)]
    assert main(argv) == 0
    data = json.loads(out_json.read_text())
    assert data["tried"]
    assert all(row["schedule"].endswith("+joins") for row in data["tried"])


def test_backward_at_the_same_tiling(tmp_path: Path) -> None:
    out_json = tmp_path / "fa.json"
    argv = ["fa", "--shape", "1,28,2048,128", "--causal", "--block", "256,256", "--backward"]
    assert main([*argv, "--json", str(out_json), "--transpose", "ne"]) == 0
    data = json.loads(out_json.read_text())
    bwd = data["backward"]
    assert bwd["template"] == "s1s2_bn2"
    assert set(bwd["busy_ms"]) == ENGINES
    assert bwd["busy_ms"]["ne"] > 2 * data["busy_ms"]["ne"]
    assert bwd["latency_ms"] > data["latency_ms"]
    assert bwd["limiting_engine"] in ENGINES


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fa", "--shape", "1,28,20x,128"], "--shape"),
        (["fa", "--shape", "1,28,2048"], "4 positive integers"),
        (["fa", "--shape", "1,1,64,64", "--block", "0,64"], "--block"),
        (["fa", "--shape", "1,1,8192,128", "--block", "4096,4096"], "SPM"),
        (["fa", "--shape", "1,3,64,64", "--kv-heads", "2", "--block", "64,64"], "N2=2"),
        (["fa", "--shape", "1,1,64,64", "--s2", "0", "--block", "64,64"], "S2"),
    ],
)
def test_bad_arguments_give_one_line_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("tx8lab: error:")
    assert message in err
