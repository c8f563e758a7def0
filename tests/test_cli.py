"""The ``tx8lab`` command: models, run (report, IR dumps, knobs, hw), lab, and its errors."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tx8lab import cli
from tx8lab._tools import run_mlir_opt
from tx8lab.cli import main
from tx8lab.core.builder import Builder
from tx8lab.core.passes import DEFAULT_PIPELINE
from tx8lab.core.text import parse_module, print_module
from tx8lab.core.zoo import MODELS

REPO = Path(__file__).resolve().parent.parent
HEADER = re.compile(r"^// -----// IR Dump After (\S+) \(step (\d+)\) //----- //$", re.M)


def _foldable_module_file(tmp_path: Path) -> Path:
    """A .mlir file with a foldable subgraph whose result (4 KiB) is elided in dumps."""
    b = Builder(**{"tx8.model": "foldable"})
    x = b.input((32, 32), "f32")
    c = b.constant([[float(i + j) for j in range(32)] for i in range(32)], "f32")
    t = b.op("Transpose", c, perm=(1, 0))
    b.op("Neg", x)  # dead
    b.output(b.op("Add", x, b.op("Relu", t)))
    path = tmp_path / "foldable.mlir"
    path.write_text(print_module(b.finish()), encoding="utf-8")
    return path


def test_models_lists_every_zoo_model_with_params(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for name, model in MODELS.items():
        assert re.search(rf"^{name}\s+{re.escape(model.summary)}$", out, re.M)
    assert "params: batch=1 size=8 channels=8 classes=10 dtype=f16" in out


def test_run_writes_the_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "out.json"
    code = main(
        [
            "run",
            "tiny_cnn",
            "--model-arg",
            "channels=4",
            "--json",
            str(out_json),
            "--set",
            "fold-constants.max_bytes=64Ki",
            "--hw",
            "tx81",
            "--hw-set",
            "tile.spm_bytes=2Mi",
        ]
    )
    assert code == 0
    table = capsys.readouterr().out
    assert "fold-constants" in table
    assert "dce" in table
    report = json.loads(out_json.read_text())
    assert report["model"] == "tiny_cnn"
    assert report["model_args"] == {"channels": "4"}
    assert report["num_ops"] > 0
    assert [p["name"] for p in report["passes"]] == DEFAULT_PIPELINE
    for entry in report["passes"]:
        assert {
            "name",
            "wall_s",
            "changed",
            "num_ops_after",
            "num_ops_before",
            "knobs",
            "num_decisions",
            "spec",
        } <= set(entry)
    assert report["passes"][0]["knobs"] == {"max_bytes": 65536}
    assert report["passes"][0]["spec"] == "fold-constants{max_bytes=65536}"
    assert report["hw"]["preset"] == "tx81"
    assert report["hw"]["values"]["tile"]["spm_bytes"] == 2 * 1024 * 1024
    assert report["hw"]["overrides"] == {"tile.spm_bytes": "2Mi"}
    # the layout passes ran: their section counts the ChannelNorms actually in the IR
    layout = report["layout"]
    assert layout["strategy"] == "greedy"
    assert layout["channel_norms"] <= layout["channel_norms_inserted"]
    assert layout["channel_norms_greedy"] == layout["channel_norms_inserted"]
    # grouping ran: one entry per group with the rule that formed it
    assert report["groups"]
    for group in report["groups"]:
        assert group["rule"] == "single" or group["rule"].startswith("pattern:cnn:")
        assert group["group_tag"] in (0, 2)
        assert group["dev_region"] == [0, 0, 4, 4]
    assert report["constants"]["count"] > 0
    # group-cost ran: every group has its cycles, and the model its total
    assert all(group["cycles"] > 0 for group in report["groups"])
    assert report["total_cycles"] >= sum(group["cycles"] for group in report["groups"])
    # ... simulated, with the plan beside it: per group the keys, per engine sums
    keys = {"ne", "ct", "rdma", "wdma", "tdma", "kcore"}
    for group in report["groups"]:
        assert keys <= set(group["busy_ms"])
        assert group["latency_ms"] * 1e-3 * 1e9 == pytest.approx(group["cycles"])
        assert set(group["tile_ms"]) == {"0"}  # the region's first tile is timed
    both = report["plan_vs_simulated"]
    assert both["cycles"]["simulated"] == report["total_cycles"]
    assert both["cycles"]["plan"] - report["barriers"] * report["barrier_cycles"] == sum(
        g["plan_cycles"] for g in report["groups"]
    )
    for engine, row in both["busy_cycles"].items():
        assert row["simulated"] == sum(
            round(g["busy_ms"][engine] * 1e6) for g in report["groups"]
        ), engine
    assert set(report["simulated"]["groups"][0]["tile_ms"]) == {str(t) for t in range(16)}


def test_run_explain_names_the_limiting_engine_and_the_costliest_stall(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "tiny_cnn", "--explain", "slowest"]) == 0
    out = capsys.readouterr().out
    assert "(the plan)" in out
    assert re.search(r"limiting engine \(simulated\): (ne|ct|rdma|wdma|tdma|dte|kcore) ", out)
    assert re.search(r"costliest stall: \w+ (waiting|stopped)", out)
    for engine in ("ne", "ct", "rdma", "wdma", "kcore"):
        assert re.search(rf"^  {engine} +", out, re.M), engine
    assert main(["run", "tiny_cnn", "--explain", "%99999"]) == 2
    err = capsys.readouterr().err
    assert "--explain '%99999': no such group" in err
    assert "'slowest'" in err


def test_run_as_a_subprocess(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tx8lab", "run", "tiny_cnn", "--json", "out.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["model"] == "tiny_cnn"
    # every compute op ends in exactly one reported group
    grouped = [op for g in report["groups"] for op in g["ops"]]
    assert len(grouped) == len(set(grouped))
    assert report["num_ops_final"] > report["num_ops"]  # ChannelNorms, loads, stores, groups


def test_run_until_and_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "tiny_cnn", "--until", "fold-constants"]) == 0
    out = capsys.readouterr().out
    assert "fold-constants" in out
    assert " dce " not in out
    assert main(["run", "tiny_cnn", "--passes", "dce"]) == 0
    assert "fold-constants" not in capsys.readouterr().out


def _dump(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    assert main([*argv, "--print-ir-after-all"]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def _chunks(out: str) -> list[tuple[str, str]]:
    """(pass name, module text) per header of an IR dump."""
    heads = list(HEADER.finditer(out))
    return [
        (m.group(1), out[m.end() : heads[i + 1].start() if i + 1 < len(heads) else None])
        for i, m in enumerate(heads)
    ]


def test_print_ir_after_all_parses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = _dump(["run", str(_foldable_module_file(tmp_path))], capsys)
    assert "fold-constants" in err  # the pass table moves to stderr
    assert out.startswith("// tx8lab run ")
    chunks = _chunks(out)
    assert [name for name, _ in chunks] == DEFAULT_PIPELINE
    assert "dense_resource<__elided__>" in out  # the 4 KiB folded table
    dce_text = chunks[1][1]
    assert "tx8be.Neg" not in dce_text
    assert "tx8be.Transpose" not in dce_text
    # each chunk, header included, is a module our parser reads back (elided data aside)
    for _, text in chunks:
        module = parse_module(text.replace("dense_resource<__elided__>", "dense<0.0>"))
        assert module.num_ops > 0
    small, _ = _dump(["run", "tiny_cnn"], capsys)
    for step, (_, text) in enumerate(_chunks(small)):
        assert print_module(parse_module(text)) == text.strip() + "\n", step


@pytest.mark.mlir
def test_print_ir_after_all_is_accepted_by_mlir_opt(
    mlir_opt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["run", str(_foldable_module_file(tmp_path))], ["run", "tiny_transformer_block"]):
        out, _ = _dump(argv, capsys)
        whole = run_mlir_opt(out, "--split-input-file", mlir_opt=mlir_opt)
        assert whole.returncode == 0, whole.stderr
        # one separator per pass (the first chunk, before any header, is empty)
        assert whole.stdout.count("// -----") == len(DEFAULT_PIPELINE)
        for name, text in _chunks(out):
            alone = run_mlir_opt(text, mlir_opt=mlir_opt)
            assert alone.returncode == 0, f"{name}: {alone.stderr}"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "nope"], "'nope' is neither a zoo model nor a .onnx/.mlir file"),
        (["run", "missing.onnx"], "missing.onnx: no such file"),
        (["run", "missing.mlir"], "missing.mlir: no such file"),
        (
            ["run", "tiny_cnn", "--model-arg", "colour=red"],
            "model 'tiny_cnn' has no parameter 'colour'",
        ),
        (["run", "tiny_cnn", "--model-arg", "size"], "--model-arg 'size' is not name=value"),
        (["run", "tiny_cnn", "--set", "dce.nope=1"], "pass 'dce' has no knob 'nope'"),
        (["run", "tiny_cnn", "--set", "nope.x=1"], "unknown pass 'nope'"),
        (
            ["run", "tiny_cnn", "--set", "fold-constants.max_bytes=big"],
            "knob fold-constants.max_bytes: 'big' is not a valid int",
        ),
        (["run", "tiny_cnn", "--until", "main-c"], "--until main-c: no such pass"),
        (["run", "tiny_cnn", "--hw", "tx99"], "unknown hardware preset 'tx99'"),
        (["run", "tiny_cnn", "--hw-set", "tile.nope=1"], "unknown hw field 'tile.nope'"),
        (["run", "tiny_cnn", "--input-shape", "x=1x3"], "--input-shape applies to ONNX files"),
        (["run", "tiny_cnn", "--bogus"], "unrecognized arguments: --bogus"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_errors_are_one_line_with_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("tx8lab: error: ")
    assert message in lines[0]
    assert "Traceback" not in captured.err


def test_a_multi_line_error_is_joined(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text('"builtin.module"() ({\n  %0 = oops\n', encoding="utf-8")
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert err.startswith(f"tx8lab: error: {bad}:")


def test_corrupt_onnx_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00not an onnx model")
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "bad.onnx" in err


def test_run_an_onnx_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph), str(path))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "dynamic dimension" in err
    assert "--input-shape NAME=1x3x224x224" in err
    out_json = tmp_path / "r.json"
    assert main(["run", str(path), "--input-shape", "x=2x4", "--json", str(out_json)]) == 0
    assert json.loads(out_json.read_text())["num_ops"] == 1


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    assert "--print-ir-after-all" in capsys.readouterr().out


def test_lab_without_the_notebook_or_jupyter(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "TOUR", Path("no") / "such.ipynb")
    assert main(["lab"]) == 2
    assert "no/such.ipynb not found" in capsys.readouterr().err
    monkeypatch.setattr(cli, "TOUR", Path("pyproject.toml"))  # any file of the checkout
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    assert main(["lab"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tx8lab: error: JupyterLab is not installed")
    assert len(err.splitlines()) == 1


def test_lab_launches_jupyter_lab(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(cli, "TOUR", Path("pyproject.toml"))
    monkeypatch.setattr(shutil, "which", lambda *a, **k: "/opt/bin/jupyter-lab")

    def call(command: list[str]) -> int:
        calls.append(command)
        return 0

    monkeypatch.setattr(subprocess, "call", call)
    assert main(["lab", "--no-browser"]) == 0
    assert calls == [["/opt/bin/jupyter-lab", str(REPO / "pyproject.toml"), "--no-browser"]]
