"""The README's table of seed mechanisms: every path it names exists, and it covers the registry.

Also the naming rule for passes: pass ``a-b`` lives in ``core/passes/a_b.py`` as class
``AB`` (acronyms upper case as the seeds write them: NPU, DDR, HDFG, DCE; ``LdSt`` as the
seed spells it), its golden cases, if any, in ``tests/golden/a_b/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tx8lab.core.passes import PASSES

ROOT = Path(__file__).resolve().parent.parent
HEADER = "| mechanism | pass | module | test | golden | notebook |"
_ACRONYMS = {"npu": "NPU", "ddr": "DDR", "hdfg": "HDFG", "dce": "DCE", "ldst": "LdSt"}


def _rows() -> list[list[str]]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index(HEADER) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_the_table_has_six_columns_and_rows() -> None:
    rows = _rows()
    assert len(rows) >= 20
    for row in rows:
        assert len(row) == 6, row
        for cell in row[1:]:
            assert cell == "—" or _names(cell), f"{row[0]}: cell {cell!r} is neither — nor paths"


def test_every_file_and_notebook_the_table_names_exists() -> None:
    missing = [
        path
        for row in _rows()
        for cell in row[2:]
        for path in _names(cell)
        if not (ROOT / path).exists()
    ]
    assert missing == []
    notebooks = [p for row in _rows() for p in _names(row[5])]
    assert notebooks
    assert all(p.startswith("notebooks/") and p.endswith(".ipynb") for p in notebooks)


def test_every_registered_pass_has_a_row_and_every_named_pass_is_registered() -> None:
    named = {name for row in _rows() for name in _names(row[1])}
    assert named - set(PASSES) == set()
    assert set(PASSES) - named == set()


def _class_name(pass_name: str) -> str:
    return "".join(_ACRONYMS.get(w, w.capitalize()) for w in pass_name.split("-"))


@pytest.mark.parametrize("name", list(PASSES))
def test_one_spelling_per_pass(name: str) -> None:
    cls = PASSES[name]
    module = name.replace("-", "_")
    assert cls.__module__ == f"tx8lab.core.passes.{module}"
    assert cls.__name__ == _class_name(name)
    golden = ROOT / "tests" / "golden"
    folders = {p.name for p in golden.iterdir() if p.is_dir()}
    # a golden folder that looks like this pass's must be spelled as its module
    assert not any(f != module and f.replace("_", "") == module.replace("_", "") for f in folders)
    row = next(r for r in _rows() if name in _names(r[1]))
    assert f"tx8lab/core/passes/{module}.py" in _names(row[2])


def test_golden_folders_are_named_after_a_pass_module() -> None:
    modules = {name.replace("-", "_") for name in PASSES}
    folders = {p.name for p in (ROOT / "tests" / "golden").iterdir() if p.is_dir()}
    assert folders - modules == set()
