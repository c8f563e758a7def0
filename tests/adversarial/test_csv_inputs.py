"""Bad CSV input (allocator problems and solutions, board data) and pattern files.

A corpus of named cases, each with one expected outcome (success, or a ``Tx8labError``
matching a pattern naming the file, line and column or field), CLI cases for ``tx8lab
alloc``, and hypothesis mutation of a problem CSV (about 1,000 per default run, times
``TX8LAB_FUZZ_EXAMPLES``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tx8lab.cli import main
from tx8lab.core.group_automaton import load_pattern_file
from tx8lab.core.schedule.spm_alloc import read_problem, read_solution
from tx8lab.errors import Tx8labError
from tx8lab.hw.calibrate import board_dir, read_board

FUZZ = int(os.environ.get("TX8LAB_FUZZ_EXAMPLES", "1"))
HEADER = "id,lower,upper,size\n"
GOOD = HEADER + "a,0,10,64\nb,5,20,128\nc,12,30,32\n"

#: (case id, file contents, regex the error matches; None: it reads)
PROBLEM_CASES: list[tuple[str, str | bytes, str | None]] = [
    ("good", GOOD, None),
    ("byte-order-mark", "\ufeff" + GOOD, None),
    ("crlf-lines", GOOD.replace("\n", "\r\n"), None),
    ("blank-lines-skipped", GOOD.replace("\n", "\n\n"), None),
    ("header-only", HEADER, None),
    ("old-column-names", "buffer,start,end,size\na,0,9,64\n", None),
    ("alignment-column", "id,lower,upper,size,alignment\na,0,10,64,16\n", None),
    ("zero-size", HEADER + "a,0,10,0\n", None),
    ("empty-lifetime", HEADER + "a,5,5,8\n", None),
    ("empty-file", "", r"p\.csv: empty file; a header id,lower,upper,size is needed"),
    ("no-size-column", "id,lower,upper\na,0,1\n", r"p\.csv:1: missing column\(s\) size"),
    ("wrong-header", "x,y,z,w\n1,2,3,4\n", r"p\.csv:1: missing column\(s\) id, lower, upper, size"),
    ("short-row", HEADER + "a,0\n", r"p\.csv:2: 2 cells, the header has 4"),
    ("float-size", HEADER + "a,0,10,1.5\n", r"p\.csv:2: column 'size': '1\.5' is not an integer"),
    ("word-size", HEADER + "a,0,10,big\n", r"p\.csv:2: column 'size': 'big' is not an integer"),
    ("inf-size", HEADER + "a,0,10,inf\n", r"p\.csv:2: column 'size': 'inf' is not an integer"),
    ("underscore-size", HEADER + "a,0,10,1_000\n", r"column 'size': '1_000' is not an integer"),
    ("hex-lower", HEADER + "a,0x10,20,8\n", r"p\.csv:2: column 'lower': '0x10' is not an integer"),
    ("empty-cell", HEADER + "a,0,,8\n", r"p\.csv:2: column 'upper': '' is not an integer"),
    ("negative-size", HEADER + "a,0,10,-8\n", r"p\.csv:2: buffer 'a' .*size=-8; need .*size >= 0"),
    ("reversed-lifetime", HEADER + "a,10,5,8\n", r"p\.csv:2: buffer 'a' has lower=10, upper=5"),
    ("duplicate-id", HEADER + "a,0,1,8\na,2,3,8\n", r"p\.csv:3: duplicate id 'a'"),
    ("empty-id", HEADER + ",0,1,8\n", r"p\.csv:2: column 'id' is empty"),
    ("gaps-column", "id,lower,upper,size,gaps\na,0,1,8,1-2\n", r"p\.csv:2: column 'gaps' is set"),
    (
        "alignment-zero",
        "id,lower,upper,size,alignment\na,0,10,64,0\n",
        r"p\.csv:2: column 'alignment' must be >= 1, not 0",
    ),
    (
        "huge-number-cell",
        HEADER + "a,0,10," + "9" * 400 + "\n",
        r"p\.csv:2: column 'size': '9{40}' is not an integer",
    ),
    ("not-utf8", HEADER.encode() + b"\xff,0,1,1\n", r"p\.csv:2: byte 0xFF is not UTF-8 text"),
    ("latin1-id", HEADER.encode() + b"caf\xe9,0,1,1\n", r"p\.csv:2: byte 0xE9 is not UTF-8"),
    ("utf16-file", GOOD.encode("utf-16"), r"p\.csv:1: byte 0xFF is not UTF-8 text"),
    (
        "cell-over-the-csv-field-limit",
        HEADER + "a" * 200_000 + ",0,1,1\n",
        r"p\.csv:2: not valid CSV \(field larger than field limit",
    ),
    ("nul-byte", HEADER + "a,0,10,1\x00\n", r"p\.csv:2: column 'size': .* is not an integer"),
    (
        "unclosed-quote",
        HEADER + 'a,0,10,"8\n',
        r"p\.csv:2: not valid CSV \(unexpected end of data\)",
    ),
    (
        "too-many-buffers",
        HEADER + "".join(f"b{i},0,1,1\n" for i in range(20_001)),
        r"p\.csv: 20001 buffers, more than the 20000 the allocator takes.*max_buffers=N",
    ),
]


@pytest.mark.parametrize(
    ("data", "pattern"),
    [pytest.param(data, pattern, id=name) for name, data, pattern in PROBLEM_CASES],
)
def test_problem_csv_corpus(tmp_path: Path, data: str | bytes, pattern: str | None) -> None:
    path = tmp_path / "p.csv"
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_bytes(data.encode("utf-8"))
    start = time.perf_counter()
    if pattern is None:
        problem = read_problem(path)
        assert all(lt.size >= 0 and lt.upper >= lt.lower for lt in problem.lifetimes)
    else:
        with pytest.raises(Tx8labError) as info:
            read_problem(path)
        message = str(info.value)
        assert re.search(pattern, message), message
        assert "\n" not in message
    assert time.perf_counter() - start < 5.0


def test_a_directory_is_not_a_problem_file(tmp_path: Path) -> None:
    with pytest.raises(Tx8labError, match=r"cannot read it .*give a MiniMalloc CSV"):
        read_problem(tmp_path)


#: (case id, solution file contents, regex; None: it reads)
SOLUTION_CASES: list[tuple[str, str | bytes, str | None]] = [
    ("good", "id,offset\na,0\nb,64\n", None),
    ("extra-column", "id,offset,note\na,0,x\n", None),
    ("columns-swapped", "offset,id\n0,a\n", None),
    ("no-offset", "id\na\n", r"s\.csv:1: a solution needs the columns id,offset"),
    ("empty", "", r"s\.csv:1: a solution needs the columns id,offset"),
    ("short-row", "id,offset\na\n", r"s\.csv:2: 1 cells, the header has 2"),
    ("float-offset", "id,offset\na,1.5\n", r"s\.csv:2: column 'offset': '1\.5' is not an integer"),
    ("duplicate", "id,offset\na,0\na,8\n", r"s\.csv:3: duplicate id 'a'"),
    ("not-utf8", b"id,offset\n\xfe,0\n", r"s\.csv:2: byte 0xFE is not UTF-8 text"),
]


@pytest.mark.parametrize(
    ("data", "pattern"),
    [pytest.param(data, pattern, id=name) for name, data, pattern in SOLUTION_CASES],
)
def test_solution_csv_corpus(tmp_path: Path, data: str | bytes, pattern: str | None) -> None:
    path = tmp_path / "s.csv"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    if pattern is None:
        assert read_solution(path)["a"] == 0
    else:
        with pytest.raises(Tx8labError) as info:
            read_solution(path)
        assert re.search(pattern, str(info.value)), str(info.value)


def _board_copy(tmp_path: Path) -> Path:
    target = tmp_path / "board"
    shutil.copytree(board_dir(), target)
    return target


#: (case id, file, edit of its text or raw bytes, regex; None: it reads)
BOARD_CASES: list[tuple[str, str, str | bytes | None, str | None]] = [
    ("shipped", "micro.csv", None, None),
    ("micro-empty", "micro.csv", "", r"calibrate: .*micro\.csv has no header row"),
    (
        "micro-no-value-column",
        "micro.csv",
        "quantity,condition\nx,y\n",
        r"calibrate: .*micro\.csv:1: missing column\(s\) value; the header needs quantity, "
        r"condition, value",
    ),
    (
        "kernels-no-metric-column",
        "kernels.csv",
        "workload,schedule\nx,y\n",
        r"calibrate: .*kernels\.csv:1: missing column\(s\) metric",
    ),
    (
        "micro-not-utf8",
        "micro.csv",
        b"quantity,condition,value\n\xff,1,2\n",
        r"calibrate: .*micro\.csv: byte 25 is not UTF-8 text",
    ),
    (
        "micro-huge-cell",
        "micro.csv",
        "quantity,condition,value\n" + "x" * 200_000 + ",1,2\n",
        r"calibrate: .*micro\.csv:2: not valid CSV",
    ),
]


@pytest.mark.parametrize(
    ("name", "data", "pattern"),
    [pytest.param(name, data, pattern, id=cid) for cid, name, data, pattern in BOARD_CASES],
)
def test_board_csv_corpus(
    tmp_path: Path, name: str, data: str | bytes | None, pattern: str | None
) -> None:
    directory = _board_copy(tmp_path)
    if data is not None:
        (directory / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    if pattern is None:
        assert read_board(directory)
    else:
        with pytest.raises(Tx8labError) as info:
            read_board(directory)
        assert re.search(pattern, str(info.value)), str(info.value)


#: (case id, pattern file contents, regex; None: it reads)
PATTERN_CASES: list[tuple[str, str | bytes, str | None]] = [
    ("good", "conv_act 20: Conv2d Relu\n", None),
    ("not-utf8", b"conv_act 20: Conv2d \xff\n", r"pattern file '.*pf\.txt' is not UTF-8 text"),
    ("no-priority", "conv_act: Conv2d Relu\n", r"pf\.txt, line 1: 'conv_act: Conv2d Relu' is not"),
    ("dangling-continuation", "conv_act 20: Conv2d \\\n", r"pf\.txt, line 1: the last line ends"),
    ("no-ops", "conv_act 20:\n", r"pf\.txt, line 1: "),
    (
        "duplicate-name",
        "a 1: Relu\na 2: Relu\n",
        r"pf\.txt, line 2: pattern name 'a' is used before, on line 1",
    ),
]


@pytest.mark.parametrize(
    ("data", "pattern"),
    [pytest.param(data, pattern, id=name) for name, data, pattern in PATTERN_CASES],
)
def test_pattern_file_corpus(tmp_path: Path, data: str | bytes, pattern: str | None) -> None:
    path = tmp_path / "pf.txt"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    if pattern is None:
        assert load_pattern_file(path)
    else:
        with pytest.raises(Tx8labError) as info:
            load_pattern_file(path)
        assert re.search(pattern, str(info.value)), str(info.value)


#: (case id, problem file contents, regex of the one stderr line)
ALLOC_CLI_CASES: list[tuple[str, str | bytes, str]] = [
    ("not-utf8", HEADER.encode() + b"\xff,0,1,1\n", r"p\.csv:2: byte 0xFF is not UTF-8 text"),
    ("float", HEADER + "a,0,10,1.5\n", r"p\.csv:2: column 'size': '1\.5' is not an integer"),
    ("empty", "", r"p\.csv: empty file"),
    ("missing-column", "id,lower,upper\n", r"p\.csv:1: missing column\(s\) size"),
    ("negative", HEADER + "a,0,10,-1\n", r"p\.csv:2: buffer 'a' .*size >= 0"),
    ("huge-field", HEADER + "a" * 200_000 + ",0,1,1\n", r"p\.csv:2: not valid CSV"),
    (
        "does-not-fit",
        HEADER + "a,0,10,99999999999999999999999\n",
        r"does not fit in 1048576 bytes",
    ),
]


@pytest.mark.parametrize(
    ("data", "pattern"),
    [pytest.param(data, pattern, id=name) for name, data, pattern in ALLOC_CLI_CASES],
)
def test_alloc_cli_reports_a_bad_problem_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: str | bytes, pattern: str
) -> None:
    path = tmp_path / "p.csv"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    assert main(["alloc", str(path), "--capacity", "1Mi", "--strategy", "seed"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tx8lab: error: "), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert re.search(pattern, err), err


def test_alloc_cli_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["alloc", str(tmp_path / "none.csv"), "--capacity", "1Mi"]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(r"tx8lab: error: .*none\.csv: no such file; give a MiniMalloc CSV\n", err)


def test_alloc_cli_max_buffers_bounds_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 12 one-step buffers of 64 bytes: over a limit of 10, within the default
    path = tmp_path / "p.csv"
    path.write_text("id,lower,upper,size\n" + "".join(f"{i},{i},{i + 1},64\n" for i in range(12)))
    assert main(["alloc", str(path), "--capacity", "1Ki", "--max-buffers", "10"]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(
        r"tx8lab: error: .*p\.csv: 12 buffers, more than the 10 .*--max-buffers N.*\n", err
    )
    assert main(["alloc", str(path), "--capacity", "1Ki", "--max-buffers", "0"]) == 2
    assert "--max-buffers 0" in capsys.readouterr().err
    assert main(["alloc", str(path), "--capacity", "1Ki", "--strategy", "seed"]) == 0


# --------------------------------------------------------------------------- fuzzing

_CELLS = ["", "-1", "0", "1.5", "1e3", "x", "99999999999999999999999", '"', "\x00", "é", "\\", ","]


@settings(
    max_examples=FUZZ * 1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(data=st.data())
def test_fuzz_mutated_problem_csv_reads_or_is_refused(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    raw = bytearray(GOOD.encode())
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.integers(0, 3))
        at = data.draw(st.integers(0, max(0, len(raw) - 1)))
        if kind == 0:
            raw[at : at + 1] = data.draw(st.binary(max_size=3))
        elif kind == 1:
            raw[at:at] = data.draw(st.sampled_from(_CELLS)).encode()
        elif kind == 2:
            del raw[at:]
        else:
            raw[at:at] = raw[: data.draw(st.integers(0, len(raw)))]
    path = tmp_path_factory.mktemp("fz") / "p.csv"
    path.write_bytes(bytes(raw))
    with contextlib.suppress(Tx8labError):
        problem = read_problem(path)
        assert all(lt.size >= 0 and lt.upper >= lt.lower for lt in problem.lifetimes)
