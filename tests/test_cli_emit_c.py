"""``tx8lab run --emit-c OUT_DIR``: main.c and the header, listed in the JSON report."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tx8lab.cli import main
from tx8lab.core.passes.codegen import header_path


def test_emit_c_writes_main_c_and_the_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "out" / "c"
    report = tmp_path / "r.json"
    code = main(["run", "tiny_cnn", "--emit-c", str(out_dir), "--json", str(report)])
    assert code == 0
    main_c = out_dir / "main.c"
    header = out_dir / "tx8_oplib.h"
    assert main_c.read_text(encoding="utf-8").startswith("/* main.c of tiny_cnn")
    assert header.read_text(encoding="utf-8") == header_path().read_text(encoding="utf-8")
    assert f"main.c written to {main_c}" in capsys.readouterr().out
    section = json.loads(report.read_text(encoding="utf-8"))["codegen"]
    assert section["files"] == [str(main_c), str(header)]
    assert section["bytes"] == main_c.stat().st_size
    assert section["groups"] == 5
    if shutil.which("gcc"):
        proc = subprocess.run(
            ["gcc", "-fsyntax-only", "-Wall", "-Werror", str(main_c)],
            cwd=out_dir,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr


def test_the_report_lists_no_files_without_emit_c(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    assert main(["run", "tiny_cnn", "--json", str(report)]) == 0
    section = json.loads(report.read_text(encoding="utf-8"))["codegen"]
    assert section["files"] == []
    assert section["lines"] > 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--until", "opt-ddr"], "--emit-c needs the codegen pass"),
        (["--passes", "fold-constants,dce"], "--emit-c needs the codegen pass"),
    ],
)
def test_emit_c_without_codegen_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code = main(["run", "tiny_cnn", "--emit-c", str(tmp_path / "c"), *extra])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_emit_c_into_an_unwritable_place_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    code = main(["run", "tiny_cnn", "--emit-c", str(blocker / "c")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"--emit-c: cannot write to {blocker / 'c'}" in err
