"""``tx8lab opt``: passes on IR text; and ``run --print-ir-after-all`` through its instrument."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from tx8lab.cli import DUMP_ELIDE_BYTES, main
from tx8lab.core.passes import DCE, FoldConstants
from tx8lab.core.runner import run_pipeline
from tx8lab.core.text import parse_module, print_module
from tx8lab.core.zoo import build
from tx8lab.hw import get_preset

REPO = Path(__file__).resolve().parent.parent
CASE = REPO / "tests" / "golden" / "fold_constants" / "chain.mlir"


def _expected(passes: list[object]) -> str:
    module = parse_module(CASE.read_text(encoding="utf-8"), str(CASE))
    *_, last = run_pipeline(module, passes, get_preset("tx81"))  # type: ignore[arg-type]
    return print_module(last.after) + "\n"


def test_opt_prints_the_module_after_the_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["opt", str(CASE), "-p", "fold-constants{max_bytes=1Ki},dce"]) == 0
    captured = capsys.readouterr()
    assert captured.out == _expected([FoldConstants(max_bytes=1024), DCE()])
    assert captured.err == ""


def test_opt_reads_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(CASE.read_text(encoding="utf-8")))
    assert main(["opt", "-", "-p", "dce", "--hw", "tx81", "--no-verify"]) == 0
    assert capsys.readouterr().out == _expected([DCE()])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["opt", str(CASE), "-p", "nope"], "unknown pass 'nope'; known passes:"),
        (["opt", str(CASE), "-p", "dce{depth=1}"], "pass 'dce' has no knob 'depth'"),
        (["opt", str(CASE), "-p", "dce{recurse_groups=maybe"], "unbalanced '{'"),
        (["opt", "missing.mlir", "-p", "dce"], "missing.mlir: no such file"),
        (["opt", str(CASE)], "the following arguments are required: -p/--pass-pipeline"),
        (
            ["opt", str(CASE), "-p", "dce", "--hw-set", "tile.spm_bytes=lots"],
            "hw override tile.spm_bytes='lots'",
        ),
    ],
)
def test_opt_errors_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("tx8lab: error: ")
    assert message in captured.err
    assert captured.err.count("\n") == 1


def test_opt_as_a_subprocess_on_bad_input_has_no_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tx8lab", "opt", "-", "-p", "dce"],
        input="not mlir\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("tx8lab: error: <stdin>:1:1:")
    assert "Traceback" not in done.stderr


def test_help_lists_opt(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "opt " in capsys.readouterr().out


def test_print_ir_after_all_output_is_the_dump_format(capsys: pytest.CaptureFixture[str]) -> None:
    """The exact text ``--print-ir-after-all`` wrote before it became an instrument."""
    assert main(["run", "tiny_cnn", "--until", "dce", "--print-ir-after-all"]) == 0
    out = capsys.readouterr().out
    steps = run_pipeline(build("tiny_cnn"), ["fold-constants", "dce"], get_preset("tx81"))
    want = (
        "// tx8lab run tiny_cnn: the IR after each pass, one module per split chunk "
        "(mlir-opt --split-input-file)\n"
    )
    for step in steps:
        want += f"// -----// IR Dump After {step.name} (step {step.index}) //----- //\n"
        want += print_module(step.after, elide_bytes=DUMP_ELIDE_BYTES) + "\n"
    assert out == want
