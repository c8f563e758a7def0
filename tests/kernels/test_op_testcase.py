"""The test-case generator for every op kind (seed 001 "Test Case"): generate, execute, reread.

Oracles: the interpreter (the op library's reference) against main.c executed on the host
model of the chip, the saved files against the data they were written from (sizes,
sha256, the layouts' own ``pack``), and the documented failures of :data:`KNOWN_FAILING`,
which must still fail.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tx8lab.cli import main
from tx8lab.core.dtypes import FLOAT_DTYPES
from tx8lab.core.layouts import pack
from tx8lab.core.ops import OPS
from tx8lab.errors import Tx8labError
from tx8lab.kernels import op_testcase
from tx8lab.kernels.op_testcase import (
    KNOWN_FAILING,
    NOT_GENERABLE,
    compile_case,
    file_layout,
    generable_kinds,
    generate,
    init_data,
    init_param,
    load_case,
    rerun_case,
    save_case,
    supported_dtypes,
)

#: One op per family: kind, seed (small shapes), and what the case exercises.
FAMILY_CASES = {
    "activation": ("Gelu", 1),  # f16, exact erf form
    "conv": ("Conv2d", 1),  # bf16 depthwise, bias, pads, strides: filter and bias weights
    "data": ("Scatter", 3),  # i8, distinct indices along axis 1, compact images
    "elementwise": ("Add", 3),  # i8, V_VS broadcast of [4,1,5,1]
    "layout": ("ChannelNorm", 1),  # bf16 to NALIGN
    "matmul": ("MatMul", 5),  # tf32, batch dims, a weight
    "norm": ("LayerNorm", 2),  # tf32 over all four dims, gamma/beta weights
    "pool": ("MaxPool2d", 4),  # i8, a padded 3x1 window
    "reduce": ("ReduceSum", 1),  # bf16 over (0, -2), keepdims
}


def test_every_family_and_kind_is_covered_or_refused() -> None:
    families = {d.family for d in OPS.values()}
    assert set(FAMILY_CASES) | set(NOT_GENERABLE) == families
    kinds = set(generable_kinds())
    for full, opdef in OPS.items():
        if opdef.family in NOT_GENERABLE:
            assert full not in kinds
            with pytest.raises(Tx8labError, match=rf"{full} \({opdef.family} family\)"):
                init_param(full, 0)
        else:
            assert full in kinds, full
    assert len(kinds) == 54


@pytest.mark.parametrize("family", sorted(FAMILY_CASES))
def test_family_case_executes_and_round_trips(family: str, tmp_path: Path) -> None:
    kind, seed = FAMILY_CASES[family]
    param = init_param(kind, seed)
    assert OPS[param.kind].family == family
    case = compile_case(param)
    assert case.error is None, case.error
    assert case.ok, [d.text() for d in case.diffs]
    assert case.commands > 0
    assert case.main_c is not None
    assert "tx8_groups" in case.main_c
    folder = save_case(case, tmp_path)
    assert folder == tmp_path / f"{kind}_s{seed}"
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # no temporary left
    info = json.loads((folder / "case.json").read_text())
    assert info["op"] == param.kind
    assert info["execution"]["ok"] is True
    assert info["execution"]["failure"] is None
    args = [o for o in param.operands if not o.weight]
    weights = [o for o in param.operands if o.weight]
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(
        ["case.json", "main.c"]
        + [f"in{i}_{o.name}.bin" for i, o in enumerate(args)]
        + [f"const{j}_{o.name}.bin" for j, o in enumerate(weights)]
        + [f"out{i}_expected.bin" for i in range(len(case.expected))]
    )
    # each image is the layouts' own image of the data, in the drawn layout
    for entry, o, array in zip(info["inputs"], args, case.inputs, strict=True):
        layout = file_layout(o.shape, o.dtype, param.aligned)
        assert entry["layout"] == layout.value
        data = (folder / entry["file"]).read_bytes()
        assert data == pack(array, o.dtype, layout)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    loaded = load_case(folder)
    assert loaded.param == param
    for got, want in zip(loaded.inputs + loaded.expected, case.inputs + case.expected, strict=True):
        np.testing.assert_array_equal(got, want)
    result = rerun_case(folder)
    assert (result.ok, result.reproduced, result.error) == (True, True, None), result
    assert result.max_abs_diff == pytest.approx(case.max_abs_diff)
    # a flipped byte in a .bin file is caught by its sha256
    target = folder / info["inputs"][0]["file"]
    flipped = bytearray(target.read_bytes())
    flipped[len(flipped) // 2] ^= 0x01
    target.write_bytes(bytes(flipped))
    with pytest.raises(Tx8labError, match=rf"{target.name} does not match its sha256"):
        rerun_case(folder)


def test_weights_are_saved_and_checked_against_the_module(tmp_path: Path) -> None:
    param = init_param("Conv2d", 1)
    assert [o.name for o in param.operands if o.weight] == ["w", "bias"]
    folder = save_case(compile_case(param, via="program"), tmp_path)
    info = json.loads((folder / "case.json").read_text())
    assert [c["file"] for c in info["constants"]] == ["const0_w.bin", "const1_bias.bin"]
    # a weight file that no longer equals the module's RandomInit constant: not reproduced
    entry = info["constants"][1]
    bias = load_case(folder).weights[1]
    data = pack(bias + 1, "bf16", entry["layout"])
    (folder / entry["file"]).write_bytes(data)
    entry["sha256"] = hashlib.sha256(data).hexdigest()
    (folder / "case.json").write_text(json.dumps(info))
    result = rerun_case(folder, via="program")
    assert result.error is None
    assert not result.reproduced
    assert not result.ok


def test_rerun_catches_a_wrong_expected_output(tmp_path: Path) -> None:
    folder = save_case(compile_case(init_param("Softmax", 3), via="program"), tmp_path)
    info = json.loads((folder / "case.json").read_text())
    entry = info["outputs"][0]
    loaded = load_case(folder)
    bad = loaded.expected[0].copy()
    bad.reshape(-1)[7] += 0.25
    data = pack(bad, loaded.param.dtype, entry["layout"])
    (folder / entry["file"]).write_bytes(data)
    entry["sha256"] = hashlib.sha256(data).hexdigest()
    (folder / "case.json").write_text(json.dumps(info))
    result = rerun_case(folder, via="program")
    assert not result.ok
    assert not result.reproduced
    assert result.max_abs_diff == pytest.approx(0.25, rel=0.01)


def test_a_small_spm_splits_the_case_and_is_saved(tmp_path: Path) -> None:
    small = init_param("MatMul", 7, hw=["tile.spm_bytes=72Ki"])
    case = compile_case(small)
    assert case.ok, case.failure()
    default = compile_case(init_param("MatMul", 7), via="program")
    assert case.commands > 4 * default.commands  # the 8 KiB SPM loops over slices
    folder = save_case(case, tmp_path)
    assert json.loads((folder / "case.json").read_text())["param"]["hw"] == ["tile.spm_bytes=72Ki"]
    assert rerun_case(folder, via="program").ok


@pytest.mark.parametrize("kind", sorted(KNOWN_FAILING))
def test_known_failures_still_fail(kind: str) -> None:
    entry = KNOWN_FAILING[kind]
    assert kind in generable_kinds()
    for seed in entry.seeds:
        case = compile_case(init_param(kind, seed))
        assert not case.ok, f"{kind} seed {seed} passes now: remove it from KNOWN_FAILING"
        assert case.known_failure() is entry, case.failure()


def test_all_kinds_run_or_fail_as_documented(tmp_path: Path) -> None:
    made = generate("all", 0, tmp_path, via="program")
    assert [m.case.param.kind for m in made] == generable_kinds()
    failing = {m.case.param.kind for m in made if not m.case.ok}
    assert failing == {k for k, e in KNOWN_FAILING.items() if e.always}
    for m in made:
        assert m.case.ok or m.case.known_failure() is not None, m.line()
        assert (m.folder / "case.json").is_file()
    # a failing case is still written, with its error, as a reproducer
    where = json.loads((tmp_path / "Where_s0" / "case.json").read_text())
    assert "i1 has no memory layout" in where["execution"]["error"]
    assert where["execution"]["known_failing"] == KNOWN_FAILING["tx8be.Where"].reason


def test_random_params_cover_the_support() -> None:
    for kind in generable_kinds():
        params = [init_param(kind, seed) for seed in range(24)]
        want = set(supported_dtypes(kind))
        seen = {p.dtype for p in params}
        assert seen <= want, kind
        assert len(seen) >= min(len(want), 2), kind
    params = [init_param("Softmax", seed) for seed in range(40)]
    assert {p.aligned for p in params} == {True, False}
    assert {len(p.operands[0].shape) for p in params} == {1, 2, 3, 4}
    channels = [p.operands[0].shape[-1] for p in params]
    assert min(channels) <= 32
    assert any(32 < c <= 64 for c in channels)
    assert any(c > 64 and c % 64 for c in channels)  # Cx blocks and a C0 tail
    convs = [init_param("Conv2d", seed).attrs for seed in range(40)]
    assert {a["group"] > 1 for a in convs} == {True, False}
    assert {a["strides"] != (1, 1) for a in convs} == {True, False}


def test_data_avoids_nan_and_covers_both_signs() -> None:
    for kind in ("Log", "Rsqrt", "Div", "Reciprocal", "Pow", "BatchNorm_Inference", "Add"):
        for seed in range(6):
            param = init_param(kind, seed)
            args = [o for o in param.operands if not o.weight]
            for o, array in zip(args, init_data(param), strict=True):
                assert array.shape == o.shape
                if o.dtype in FLOAT_DTYPES:
                    assert np.isfinite(array).all()
                if o.name in ("variance",) or kind in ("Log", "Rsqrt"):
                    assert (array > 0).all(), (kind, o.name)
                if o.rule == "magnitude":
                    assert (np.abs(array) >= o.low).all()
                    assert array.size < 2 or array.min() < 0 < array.max(), (kind, o.name)
                if array.size > 1 and o.low < 0 < o.high:
                    assert array.min() < 0 < array.max(), (kind, o.name)
            case = compile_case(param, via="program")
            assert all(np.isfinite(np.asarray(e, np.float64)).all() for e in case.expected)


def test_scatter_indices_are_distinct_along_the_axis() -> None:
    for seed in range(8):
        param = init_param("Scatter", seed)
        axis = int(param.attrs["axis"])
        indices = init_data(param)[1]
        moved = np.moveaxis(indices, axis, -1).reshape(-1, indices.shape[axis])
        assert all(len(set(row)) == len(row) for row in moved.tolist())
        assert indices.min() >= 0
        assert indices.max() < param.operands[0].shape[axis]


@settings(max_examples=3, deadline=None, derandomize=True)
@given(st.sampled_from(("Conv2d", "Softmax")), st.integers(0, 2**32))
def test_random_seeds_execute_like_the_reference(kind: str, seed: int) -> None:
    param = init_param(kind, seed)
    assert param == init_param(kind, seed)  # reproducible
    case = compile_case(param)
    assert case.ok, f"{param.describe()}: {case.failure()}"


def test_cli_writes_one_line_per_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["testcase", "tx8be.ReduceMax", "--seed", "5", "--count", "2", "--out", str(tmp_path)])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    for seed, line in zip((5, 6), lines, strict=True):
        param = init_param("ReduceMax", seed)
        assert line.startswith(f"ReduceMax: {param.describe()}  match  max|diff| 0  ")
        assert line.endswith(str(tmp_path / f"ReduceMax_s{seed}"))
    assert rerun_case(tmp_path / "ReduceMax_s6").ok


def test_cli_small_spm_and_known_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["--out", str(tmp_path), "--hw-set", "tile.spm_bytes=72Ki"]
    assert main(["testcase", "MatMul", "--seed", "7", *args]) == 0
    saved = json.loads((tmp_path / "MatMul_s7" / "case.json").read_text())
    assert saved["param"]["hw"] == ["tx81", "tile.spm_bytes=72Ki"]
    # `all`: a known failure is marked and does not fail the command
    monkeypatch.setattr(op_testcase, "generable_kinds", lambda: ["tx8be.Relu", "tx8be.Tuple"])
    assert main(["testcase", "all", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("Relu: ")
    assert " match " in out[1]
    assert out[2].startswith("Tuple: ")
    assert "FAIL: Tx8labError: program: result 0" in out[2]
    assert out[2].count("(known failing, see KNOWN_FAILING)") == 1


def test_cli_exits_1_when_a_case_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(KNOWN_FAILING, "tx8be.Tuple")
    assert main(["testcase", "Tuple", "--out", str(tmp_path)]) == 1
    line = capsys.readouterr().out
    assert "FAIL: " in line
    assert "known failing" not in line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["testcase", "MatMull"],
            r"unknown op kind 'MatMull'; close names: MatMul, BatchMatMul, Mul",
        ),
        (["testcase", "LoadVar"], r"tx8be.LoadVar \(memory family\) is a memory op"),
        (["testcase", "Group"], r"tx8be.Group \(group family\) is made by the grouping"),
        (["testcase", "Relu", "--seed", "-1"], r"seed -1 must be an integer in \[0, 2\*\*63\)"),
        (["testcase", "Relu", "--count", "0"], r"count 0 must be a positive integer"),
        (["testcase", "Relu", "--hw-set", "tile.nope=1"], r"tile.nope"),
    ],
)
def test_cli_errors_are_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tx8lab: error: ")
    assert err.count("\n") == 1
    assert re.search(message, err), err
    assert list(tmp_path.iterdir()) == []


def test_bad_output_directories_leave_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = compile_case(init_param("Relu", 2), via="program")
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a directory")
    with pytest.raises(Tx8labError, match=r"test case Relu_s2: cannot write into .*file.txt"):
        save_case(case, blocker)
    with pytest.raises(Tx8labError, match=r"cannot write into .*file.txt/sub"):
        save_case(case, blocker / "sub")
    taken = tmp_path / "out" / "Relu_s2"
    taken.mkdir(parents=True)
    with pytest.raises(Tx8labError, match=r"exists and is not a test-case folder"):
        save_case(case, tmp_path / "out")
    taken.rmdir()
    # a write that fails half-way leaves neither the case nor a temporary folder
    real = op_testcase._write
    calls = []

    def failing(*args: object, **kwargs: object) -> object:
        calls.append(args)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(op_testcase, "_write", failing)
    with pytest.raises(Tx8labError, match=r"writing .*Relu_s2 failed \(No space left"):
        save_case(case, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []
    monkeypatch.setattr(op_testcase, "_write", real)
    # an existing case folder is replaced whole
    first = save_case(case, tmp_path / "out")
    (first / "stale.txt").write_text("from an older case")
    again = save_case(case, tmp_path / "out")
    assert again == first
    assert not (again / "stale.txt").exists()
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["Relu_s2"]


def test_bad_parameters_and_case_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(
        Tx8labError, match=r"test case Softmax: dtype 'i32' is not one the generator draws"
    ):
        init_param("Softmax", 0, fixed={"dtype": "i32"})
    with pytest.raises(Tx8labError, match=r"unknown fixed fields \['shape'\]"):
        init_param("Softmax", 0, fixed={"shape": (2, 3)})
    with pytest.raises(Tx8labError, match=r"seed 'x' must be an integer"):
        init_param("Softmax", "x")  # type: ignore[arg-type]
    with pytest.raises(Tx8labError, match=r"name '\.\./up' must be a plain folder name"):
        init_param("Softmax", 0, name="../up")
    with pytest.raises(Tx8labError, match=r"via 'gpu' must be 'c' .* or 'program'"):
        compile_case(init_param("Softmax", 0), via="gpu")
    with pytest.raises(Tx8labError, match=r"no case\.json"):
        load_case(tmp_path / "nowhere")
    folder = save_case(compile_case(init_param("Neg", 1), via="program"), tmp_path)
    (folder / "in0_x.bin").unlink()
    with pytest.raises(Tx8labError, match=r"missing in0_x\.bin"):
        rerun_case(folder)
    info = json.loads((folder / "case.json").read_text())
    (folder / "case.json").write_text(json.dumps({**info, "format": 99}))
    with pytest.raises(Tx8labError, match=r"format 99, this reader reads format 1"):
        load_case(folder)
    del info["param"]
    (folder / "case.json").write_text(json.dumps(info))
    with pytest.raises(Tx8labError, match=r"malformed case\.json"):
        load_case(folder)
