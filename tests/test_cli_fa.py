"""``tx8lab fa --shape B,N,S,D``: the FlashAttention model on the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
    argv += ["--split", "bn", "--no-cv-ratio"]  # the board's tiling (board_config)
    assert main([*argv, "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    want = model(board_config(), TX81)
    assert "template S1S2 (the one its block keeps)" in text
    assert "block 256x256, heads per pass 1, schedule serial, split bn" in text
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
    argv = ["fa", "--shape", "1,4,512,64", "--causal", "--search", "--json", str(out_json)]
    assert main(argv) == 0
    assert "(all with asynchronous issue); best:" in capsys.readouterr().out
    data = json.loads(out_json.read_text())
    assert data["searched"] is True
    assert data["latency_ms"] == min(row["latency_ms"] for row in data["tried"])
    assert data["tried"][0]["latency_ms"] == data["latency_ms"]
    assert all("+joins" not in row["schedule"] for row in data["tried"])
    assert "calibration" not in data  # not the board's shape


def test_sync_issue_what_if_is_applied_to_every_candidate(tmp_path: Path) -> None:
    out_json = tmp_path / "fa.json"
    argv = ["fa", "--shape", "1,2,256,64", "--sync-issue", "--search", "--json", str(out_json)]
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


def _fa_json(tmp_path: Path, argv: list[str], name: str = "fa.json") -> dict[str, Any]:
    """``tx8lab fa`` with ``argv`` and ``--json``; the JSON report."""
    out_json = tmp_path / name
    assert main(["fa", *argv, "--json", str(out_json)]) == 0
    data: dict[str, Any] = json.loads(out_json.read_text())
    return data


def test_default_models_the_templates_tiling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # S2 = 2048 > 1024 -> S1S2 (seed 004 §1); 2 heads x ceil(512 / 64) = 16 row blocks,
    # not above 16 cores -> s1.i = 64; s2.i = 1024; the seed's V block 8 x 1024
    argv = ["--shape", "1,2,512,64", "--s2", "2048"]
    data = _fa_json(tmp_path, argv)
    text = capsys.readouterr().out
    assert "template S1S2 (seed 004's choice by shape)" in text
    assert "block 64x1024, heads per pass 1" in text
    assert "C/V ratio V block 8 rows" in text
    assert data["searched"] is False
    assert (data["template"], data["template_source"]) == ("S1S2", "shape")
    assert data["config"]["block"] == [64, 1024]
    assert data["config"]["split"] == "fused"
    assert data["tile_pairs"] == [2] * 16
    # --template S1: s1.i * 2048 <= 1M, 2 x ceil(512 / s1.i) >= 16 -> 64; whole S2
    forced = _fa_json(tmp_path, [*argv, "--template", "S1"], "forced.json")
    assert (forced["template"], forced["template_source"]) == ("S1", "knob")
    assert forced["config"]["block"] == [64, 2048]
    assert forced["latency_ms"] != data["latency_ms"]
    # --no-cv-ratio: one CT command per op over the whole C block
    off = _fa_json(tmp_path, [*argv, "--no-cv-ratio"], "off.json")
    assert (off["config"]["cv_ratio"], off["config"]["v_rows"]) == (False, None)
    assert off["commands"] < data["commands"]


def test_backward_template_is_chosen_and_overridable(tmp_path: Path) -> None:
    argv = ["--shape", "32,2,32,32", "--backward"]
    bwd = _fa_json(tmp_path, argv)["backward"]
    # N2*G*S1*S2 = 2048 < 8192 -> bn2gs1s2_b: b.i = 2 (16 passes on 16 cores), 4 heads
    assert bwd["template"] == "bn2gs1s2_b"
    assert (bwd["config"]["block"], bwd["config"]["head_batch"]) == ([32, 32], 4)
    forced = _fa_json(tmp_path, [*argv, "--fag-template", "s1s2_bn2gs1s2"])["backward"]
    assert (forced["template"], forced["template_source"]) == ("s1s2_bn2gs1s2", "knob")
    assert forced["config"]["head_batch"] == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fa", "--shape", "1,28,20x,128"], "--shape"),
        (["fa", "--shape", "1,28,2048"], "4 positive integers"),
        (["fa", "--shape", "1,1,64,64", "--block", "0,64"], "--block"),
        (["fa", "--shape", "1,1,8192,128", "--block", "4096,4096"], "SPM"),
        (["fa", "--shape", "1,3,64,64", "--kv-heads", "2", "--block", "64,64"], "N2=2"),
        (["fa", "--shape", "1,1,64,64", "--s2", "0", "--block", "64,64"], "S2"),
        (["fa", "--shape", "1,1,64,64", "--template", "S3"], "--template"),
        (["fa", "--shape", "1,1,64,64", "--fag-template", "b"], "--fag-template"),
        (["fa", "--shape", "1,1,64,2048", "--template", "S1", "--block", "64,64"], "S1"),
    ],
)
def test_bad_arguments_give_one_line_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("tx8lab: error:")
    assert message in err
