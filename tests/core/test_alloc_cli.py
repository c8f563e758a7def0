"""``tx8lab alloc``: MiniMalloc CSV in, ``id,offset`` out, figures printed, errors one line."""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tx8lab.alloc_cli import add_arguments, alloc_main, cmd_alloc, parse_bytes
from tx8lab.bench.alloc import BENCH_DIR, case_path
from tx8lab.core.schedule.spm_alloc import find_conflicts, read_problem, read_solution
from tx8lab.errors import Tx8labError

EXAMPLE = BENCH_DIR / "input.12.csv"


def _checker(problem: Path, solution: Path, *extra: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCH_DIR / "check_solution.py"), str(problem), str(solution), *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("strategy", ["seed", "best"])
def test_alloc_writes_a_valid_solution_and_prints_the_figures(
    strategy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "solution.csv"
    code = alloc_main([str(EXAMPLE), "--capacity", "12", "--strategy", strategy, "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert f"strategy:    {strategy}" in printed
    assert "peak:        12  (optimal)" in printed
    assert "lower bound: 12  (max live bytes; gap 0.000%)" in printed
    assert "time:" in printed
    assert out.read_text().splitlines()[0] == "id,offset"
    offsets = read_solution(out)
    assert find_conflicts(read_problem(EXAMPLE).lifetimes, offsets, 12) == []
    assert _checker(EXAMPLE, out, "--capacity", "12").rstrip().endswith("VALID")


def test_capacity_comes_from_the_file_name_and_takes_size_suffixes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.csv"
    assert alloc_main([str(case_path("C")), "--out", str(out), "--time-limit", "10"]) == 0
    printed = capsys.readouterr().out
    assert "capacity:    1048576" in printed
    assert "peak:        1039360  (optimal)" in printed
    assert _checker(case_path("C"), out).rstrip().endswith("VALID")
    assert alloc_main([str(case_path("C")), "--capacity", "1Mi"]) == 0
    assert "capacity:    1048576" in capsys.readouterr().out
    assert parse_bytes("0x100000") == parse_bytes("1MiB") == 1 << 20


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--capacity", "11"], "does not fit in 11 bytes: 12 bytes are live at once"),
        (["--capacity", "lots"], "cannot read 'lots' as a number"),
        (["--capacity", "1.5"], "need a whole number of bytes"),
        (["--strategy", "fast"], "invalid choice: 'fast'"),
    ],
)
def test_errors_are_one_line_with_exit_code_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert alloc_main([str(EXAMPLE), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tx8lab alloc: error: ")
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_missing_file_and_missing_capacity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert alloc_main([str(tmp_path / "nope.csv"), "--capacity", "8"]) == 2
    assert "nope.csv: no such file" in capsys.readouterr().err
    unnamed = tmp_path / "problem.csv"
    shutil.copy(EXAMPLE, unnamed)
    assert alloc_main([str(unnamed)]) == 2
    assert "give --capacity BYTES" in capsys.readouterr().err


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert alloc_main(["--help"]) == 0
    assert "--time-limit S" in capsys.readouterr().out


def test_mounts_as_a_sub_command() -> None:
    parser = argparse.ArgumentParser(prog="tx8lab")
    sub = parser.add_subparsers(dest="command", required=True)
    add_arguments(sub.add_parser("alloc"))
    args = parser.parse_args(["alloc", str(EXAMPLE), "--capacity", "12", "--strategy", "seed"])
    out = io.StringIO()
    assert cmd_alloc(args, out) == 0
    assert "peak:        12" in out.getvalue()
    args = parser.parse_args(["alloc", str(EXAMPLE), "--capacity", "1"])
    with pytest.raises(Tx8labError, match="does not fit in 1 bytes"):
        cmd_alloc(args, out)
