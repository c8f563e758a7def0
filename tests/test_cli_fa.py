"""``tx8lab fa --shape B,N,S,D``: the FlashAttention model on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tx8lab.cli import main


def test_board_shape_with_block_writes_latency_and_busy_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json = tmp_path / "fa.json"
    argv = ["fa", "--shape", "1,28,2048,128", "--causal", "--block", "256,256"]
    assert main([*argv, "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    assert "block 256x256, schedule board, split bn" in text
    assert "72 block pairs, load balance 87.5%" in text
    data = json.loads(out_json.read_text())
    assert data["searched"] is False
    assert 0.8 * 2.461 <= data["latency_ms"] <= 1.2 * 2.461
    assert set(data["busy_ms"]) == {"ne", "ct", "ld", "st", "kcore"}
    assert data["busy_ms"]["ne"] == pytest.approx(0.302, abs=1e-3)
    assert data["config"]["block"] == [256, 256]
    assert data["template"] == "S1S2"
    quantities = [row["quantity"] for row in data["calibration"]]
    assert quantities[0] == "kernel body (slowest tile)"
    assert data["calibration"][0]["model_ms"] == pytest.approx(data["latency_ms"])


def test_without_block_searches_and_reports_the_best(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json = tmp_path / "fa.json"
    assert main(["fa", "--shape", "1,4,512,64", "--causal", "--json", str(out_json)]) == 0
    assert "searched" in capsys.readouterr().out
    data = json.loads(out_json.read_text())
    assert data["searched"] is True
    assert data["latency_ms"] == min(row["latency_ms"] for row in data["tried"])
    assert data["tried"][0]["latency_ms"] == data["latency_ms"]
    assert "calibration" not in data  # not the board's shape


def test_backward_at_the_same_tiling(tmp_path: Path) -> None:
    out_json = tmp_path / "fa.json"
    argv = ["fa", "--shape", "1,28,2048,128", "--causal", "--block", "256,256", "--backward"]
    assert main([*argv, "--json", str(out_json)]) == 0
    data = json.loads(out_json.read_text())
    bwd = data["backward"]
    assert bwd["template"] == "s1s2_bn2"
    assert bwd["busy_ms"]["ne"] == pytest.approx(2.5 * data["busy_ms"]["ne"], rel=1e-3)
    assert bwd["latency_ms"] > data["latency_ms"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fa", "--shape", "1,28,20x,128"], "--shape"),
        (["fa", "--shape", "1,28,2048"], "4 positive integers"),
        (["fa", "--shape", "1,1,64,64", "--block", "0,64"], "--block"),
        (["fa", "--shape", "1,1,8192,128", "--block", "4096,4096"], "SPM"),
        (["fa", "--shape", "1,3,64,64", "--kv-heads", "2", "--block", "64,64"], "N2=2"),
    ],
)
def test_bad_arguments_give_one_line_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("tx8lab: error:")
    assert message in err
