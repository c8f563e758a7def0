"""Finding and running mlir-opt (``tx8lab._tools``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tx8lab import _tools
from tx8lab._tools import find_mlir_opt, run_mlir_opt
from tx8lab.errors import Tx8labError

# Echoes its arguments to stderr and stdin to stdout: enough to check the plumbing.
_FAKE = '#!/bin/sh\necho "$@" >&2\ncat\n'


def _fake_tool(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_FAKE, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def no_system_tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty PATH and no /usr/lib/llvm-* candidates; returns the PATH directory."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.delenv(_tools.MLIR_OPT_ENV, raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(_tools, "LLVM_GLOB", str(tmp_path / "nothing-*" / "mlir-opt"))
    return bin_dir


def test_env_var_comes_first(
    no_system_tools: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_tool(no_system_tools / "mlir-opt")  # on PATH, but the variable wins
    chosen = _fake_tool(tmp_path / "llvm-build" / "bin" / "mlir-opt")
    monkeypatch.setenv(_tools.MLIR_OPT_ENV, str(chosen))
    assert find_mlir_opt() == str(chosen)


def test_env_var_may_name_a_command_on_path(
    no_system_tools: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_tool(no_system_tools / "my-mlir-opt")
    monkeypatch.setenv(_tools.MLIR_OPT_ENV, "my-mlir-opt")
    assert find_mlir_opt() == str(no_system_tools / "my-mlir-opt")


def test_env_var_naming_nothing_is_an_error(
    no_system_tools: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_tool(no_system_tools / "mlir-opt")
    monkeypatch.setenv(_tools.MLIR_OPT_ENV, str(tmp_path / "missing"))
    with pytest.raises(Tx8labError, match=r"TX8LAB_MLIR_OPT=.*is not an executable"):
        find_mlir_opt()


def test_empty_env_var_is_ignored(no_system_tools: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_tool(no_system_tools / "mlir-opt-19")
    monkeypatch.setenv(_tools.MLIR_OPT_ENV, "  ")
    assert find_mlir_opt() == str(no_system_tools / "mlir-opt-19")


def test_path_names_are_tried_in_order(no_system_tools: Path) -> None:
    _fake_tool(no_system_tools / "mlir-opt-16")
    _fake_tool(no_system_tools / "mlir-opt-19")
    assert find_mlir_opt() == str(no_system_tools / "mlir-opt-19")
    _fake_tool(no_system_tools / "mlir-opt")
    assert find_mlir_opt() == str(no_system_tools / "mlir-opt")


def test_llvm_dirs_newest_first(
    no_system_tools: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "usr-lib"
    for version in (9, 17, 16):  # 9 sorts after 17 as text: the order must be numeric
        _fake_tool(root / f"llvm-{version}" / "bin" / "mlir-opt")
    monkeypatch.setattr(_tools, "LLVM_GLOB", str(root / "llvm-*" / "bin" / "mlir-opt"))
    assert find_mlir_opt() == str(root / "llvm-17" / "bin" / "mlir-opt")


def test_nothing_installed_gives_none(no_system_tools: Path) -> None:
    assert find_mlir_opt() is None
    with pytest.raises(Tx8labError, match="mlir-opt is not installed"):
        run_mlir_opt("module {}")


def test_run_mlir_opt_feeds_stdin_and_allows_unregistered_ops(tmp_path: Path) -> None:
    tool = _fake_tool(tmp_path / "mlir-opt")
    done = run_mlir_opt(
        '"tx8be.Gemm"() : () -> ()\n', "--mlir-print-op-generic", mlir_opt=str(tool)
    )
    assert done.returncode == 0
    assert done.stdout == '"tx8be.Gemm"() : () -> ()\n'
    assert done.stderr.split() == ["--allow-unregistered-dialect", "--mlir-print-op-generic"]
    assert done.args[0] == str(tool)


@pytest.mark.mlir
def test_real_mlir_opt_accepts_a_tx8be_op(mlir_opt: str) -> None:
    text = (
        '%0 = "tx8be.Input"() : () -> tensor<1x4xf16>\n'
        '%1 = "tx8be.ChannelNorm"(%0) {direction = true} : (tensor<1x4xf16>) -> tensor<1x4xf16>\n'
    )
    done = run_mlir_opt(text, "--mlir-print-op-generic", mlir_opt=mlir_opt)
    assert done.returncode == 0, done.stderr
    assert '"tx8be.ChannelNorm"' in done.stdout
    assert "direction = true" in done.stdout


def test_conftest_uses_this_lookup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.conftest import _find_mlir_opt

    tool = _fake_tool(tmp_path / "mlir-opt")
    monkeypatch.setenv(_tools.MLIR_OPT_ENV, str(tool))
    assert _find_mlir_opt() == str(tool)
    assert os.access(tool, os.X_OK)
