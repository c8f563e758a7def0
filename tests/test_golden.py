"""Golden IR cases: ``tests/golden/<pass module>/<case>.mlir``, checked with FileCheck.

Each file holds an input module in MLIR generic syntax, a ``// RUN: <pass> [knob=value
...]`` line and ``// CHECK`` lines. The test parses the file (comments are skipped), runs
the pass with the verifier, prints the result and pipes it through the ``filecheck``
package (the Python FileCheck clone xDSL uses) with the file as the check file. It also
checks that the pass kept the module's values (interpreter before == after) and did not
touch its input.

To see what a pass prints for a case while writing CHECK lines:
``python -m tests.test_golden tests/golden/dce/fan_out.mlir``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tx8lab.core.interpret import interpret, random_inputs
from tx8lab.core.passes import build_pipeline
from tx8lab.core.passes.base import PassResult
from tx8lab.core.runner import execute
from tx8lab.core.text import parse_module, print_module
from tx8lab.hw import get_preset

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = sorted(GOLDEN.glob("*/*.mlir"))


def _run_line(text: str, path: Path) -> tuple[str, list[str]]:
    for line in text.splitlines():
        if line.strip().startswith("// RUN:"):
            words = line.split("RUN:", 1)[1].split()
            return words[0], [f"{words[0]}.{w}" for w in words[1:]]
    raise AssertionError(f"{path}: no '// RUN: <pass>' line")


def run_case(path: Path) -> tuple[str, PassResult, str]:
    """(input text as printed, pass result, output text) for one golden file."""
    text = path.read_text(encoding="utf-8")
    name, settings = _run_line(text, path)
    module = parse_module(text, str(path))
    before = print_module(module)
    (p,) = build_pipeline([name], settings)
    result, _ = execute(p, module, get_preset("tx81"))
    assert print_module(module) == before, f"{name} mutated its input"
    return before, result, print_module(result.module)


def test_there_are_golden_cases_for_each_pass() -> None:
    folders = {p.parent.name for p in CASES}
    assert {"dce", "fold_constants"} <= folders
    for folder in ("dce", "fold_constants"):
        assert len([p for p in CASES if p.parent.name == folder]) >= 5


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden(path: Path) -> None:
    _, result, output = run_case(path)
    done = subprocess.run(
        [sys.executable, "-m", "filecheck", str(path)],
        input=output,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, (
        f"FileCheck failed for {path.name}:\n{done.stderr}\n--- output ---\n{output}"
    )
    # the pass keeps every output value
    before = parse_module(path.read_text(encoding="utf-8"), str(path))
    inputs = random_inputs(before, seed=1)
    for want, got in zip(interpret(before, inputs), interpret(result.module, inputs), strict=True):
        np.testing.assert_array_equal(got, want)
    # and says why for each op it changed
    for decision in result.decisions:
        assert decision.pass_name
        assert decision.reason


if __name__ == "__main__":  # pragma: no cover - authoring aid
    for arg in sys.argv[1:]:
        _, res, out = run_case(Path(arg))
        print(out)
        for d in res.decisions:
            print(f"// {d.choice} %{d.op_id}: {d.reason}")
