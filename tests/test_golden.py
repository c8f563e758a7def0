"""Golden IR cases: ``tests/golden/<pass module>/<case>.mlir``, checked with FileCheck.

Each file holds an input module in MLIR generic syntax, a RUN line that is a shell
command, ``// RUN: tx8lab opt %s -p 'dce{recurse_groups=false}' | filecheck %s``, and
``// CHECK`` lines. The test runs the RUN line in bash (with ``pipefail``, from the
repository root) after substituting, as lit does, ``%s`` with the file's path and ``%S``
with its folder, and ``tx8lab`` / ``filecheck`` at the start of a pipeline stage with
``<this python> -m tx8lab`` / ``-m filecheck`` (the PyPI FileCheck clone xDSL uses). It
also runs the ``-p`` passes in-process, with the verifier, and checks that they kept the
module's values (interpreter before == after), did not touch their input and named
themselves in every decision.

To see what a pass prints for a case while writing CHECK lines:
``python -m tests.test_golden tests/golden/dce/fan_out.mlir``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tx8lab.core.interpret import interpret, random_inputs
from tx8lab.core.passes import parse_pipeline_spec
from tx8lab.core.passes.base import Decision
from tx8lab.core.runner import run_pipeline
from tx8lab.core.text import parse_module, print_module
from tx8lab.hw import get_preset

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
CASES = sorted(GOLDEN.glob("*/*.mlir"))
_TOOL = re.compile(r"(^|\|)(\s*)(tx8lab|filecheck)(?=\s)")


def run_line(path: Path) -> str:
    """The file's RUN command, as written."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("// RUN:"):
            return line.split("RUN:", 1)[1].strip()
    raise AssertionError(f"{path}: no '// RUN: tx8lab opt %s -p ... | filecheck %s' line")


def substitute(command: str, path: Path) -> str:
    """The RUN command as bash runs it: tools through this python, ``%s``/``%S`` filled in."""
    python = shlex.quote(sys.executable)
    command = _TOOL.sub(lambda m: f"{m[1]}{m[2]}{python} -m {m[3]}", command)
    return command.replace("%s", shlex.quote(str(path))).replace(
        "%S", shlex.quote(str(path.parent))
    )


def run_shell(path: Path) -> subprocess.CompletedProcess[str]:
    """Run the file's RUN line in bash; the checkout's tx8lab comes first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", substitute(run_line(path), path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def pipeline_text(path: Path) -> str:
    """The ``-p`` argument of the RUN line, ``%S`` filled in."""
    words = shlex.split(run_line(path).split("|")[0])
    if words[:2] != ["tx8lab", "opt"] or "-p" not in words:
        raise AssertionError(f"{path}: the RUN line must start with tx8lab opt %s -p '...'")
    return words[words.index("-p") + 1].replace("%S", str(path.parent))


def run_case(path: Path) -> tuple[str, list[Decision], str]:
    """(input text as printed, decisions, output text): the RUN line's passes in-process."""
    text = path.read_text(encoding="utf-8")
    module = parse_module(text, str(path))
    before = print_module(module)
    steps = list(run_pipeline(module, parse_pipeline_spec(pipeline_text(path)), get_preset("tx81")))
    assert print_module(module) == before, f"{path.name}: a pass mutated its input"
    decisions = [d for s in steps for d in s.decisions]
    return before, decisions, print_module(steps[-1].after if steps else module)


def test_there_are_golden_cases_for_each_pass() -> None:
    folders = {p.parent.name for p in CASES}
    assert {"dce", "fold_constants"} <= folders
    for folder in ("dce", "fold_constants"):
        assert len([p for p in CASES if p.parent.name == folder]) >= 5


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden(path: Path) -> None:
    done = run_shell(path)
    assert done.returncode == 0, (
        f"RUN line failed for {path.name}: {run_line(path)}\n{done.stderr}\n"
        f"--- output ---\n{done.stdout}"
    )
    _, decisions, output = run_case(path)
    # the pass keeps every output value
    before = parse_module(path.read_text(encoding="utf-8"), str(path))
    after = parse_module(output, "<output>")
    inputs = random_inputs(before, seed=1)
    for want, got in zip(interpret(before, inputs), interpret(after, inputs), strict=True):
        np.testing.assert_array_equal(got, want)
    # and says why for each op it changed
    for decision in decisions:
        assert decision.pass_name
        assert decision.reason


def test_a_wrong_check_line_fails_the_run_line(tmp_path: Path) -> None:
    source = GOLDEN / "dce" / "fan_out.mlir"
    text = source.read_text(encoding="utf-8")
    assert "// CHECK" in text
    broken = tmp_path / "fan_out.mlir"
    broken.write_text(text + "// CHECK: tx8be.NoSuchOp\n", encoding="utf-8")
    done = run_shell(broken)
    assert done.returncode != 0
    assert "NoSuchOp" in done.stdout + done.stderr
    # a RUN line whose pass does not exist fails too (pipefail), with tx8lab's one-line error
    bad_pass = tmp_path / "bad_pass.mlir"
    bad_pass.write_text(text.replace("-p 'dce'", "-p 'nope'"), encoding="utf-8")
    done = run_shell(bad_pass)
    assert done.returncode != 0
    assert "tx8lab: error: unknown pass 'nope'" in done.stderr


def test_substitute_fills_in_tools_and_paths() -> None:
    path = Path("/x/y/case.mlir")
    command = substitute("tx8lab opt %s -p 'g{f=%S/a.txt}' | filecheck %s", path)
    python = shlex.quote(sys.executable)
    assert command == (
        f"{python} -m tx8lab opt /x/y/case.mlir -p 'g{{f=/x/y/a.txt}}' | "
        f"{python} -m filecheck /x/y/case.mlir"
    )


if __name__ == "__main__":  # pragma: no cover - authoring aid
    for arg in sys.argv[1:]:
        _, found, out = run_case(Path(arg))
        print(out)
        for d in found:
            print(f"// {d.choice} %{d.op_id}: {d.reason}")
