"""The BatchNorm test-case generator (seed 001 "Test Case"): write, read back, re-run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from tx8lab.core.attrs import LayoutMode
from tx8lab.core.layouts import footprint_bits, pack
from tx8lab.errors import Tx8labError
from tx8lab.kernels.testcase import (
    DIMS,
    DTYPES,
    CaseParam,
    compile_case,
    generate,
    init_data,
    init_param,
    load_case,
    rerun_case,
    save_info_file,
)


def test_generated_cases_rerun_and_pass(tmp_path: Path) -> None:
    folders = generate(12, tmp_path, seed=3)
    assert [f.name for f in folders] == [f"case{i:03d}" for i in range(12)]
    for folder in folders:
        names = sorted(p.name for p in folder.iterdir())
        assert names == [
            "case.json",
            "in0_x.bin",
            "in1_scale.bin",
            "in2_offset.bin",
            "in3_mean.bin",
            "in4_variance.bin",
            "main.c",
            "out0_expected.bin",
        ]
        result = rerun_case(folder)
        assert result.passed, result
        assert result.reference_reproduced


def test_random_params_cover_the_support() -> None:
    rng = np.random.default_rng(0)
    params = [init_param(rng) for _ in range(120)]
    assert {len(p.shape) for p in params} == set(DIMS)
    assert {p.dtype for p in params} == set(DTYPES)
    assert {p.aligned for p in params} == {True, False}
    cs = [p.shape[-1] for p in params]
    assert min(cs) <= 32 < max(cs)
    assert any(32 < c <= 64 for c in cs)
    assert any(c > 64 and c % 64 for c in cs)  # Cx blocks and a C0 tail
    assert {p.layout for p in params} >= {LayoutMode.NCx, LayoutMode.NTensor}


def test_data_avoids_nan_and_covers_signs() -> None:
    for seed in range(10):
        param = init_param(seed)
        x, scale, shift, mean, var = init_data(param)
        if x.size > 1:
            assert x.min() < 0 < x.max()
        assert scale.shape == var.shape == (1,) * (len(param.shape) - 1) + (param.shape[-1],)
        assert (var >= 0.1).all()
        case = compile_case(param, (x, scale, shift, mean, var))
        assert np.isfinite(case.expected).all()
        assert np.isfinite(case.kernel).all()


def test_the_seed_case_images(tmp_path: Path) -> None:
    """4x112x2x129 f16: the .bin images are the NCx (or NTensor) images of the data."""
    for aligned, layout in ((True, LayoutMode.NCx), (False, LayoutMode.NTensor)):
        param = init_param(
            1,
            name=f"seed_{layout.value}",
            fixed={"shape": (4, 112, 2, 129), "dtype": "f16", "aligned": aligned},
        )
        assert param.layout is layout
        case = compile_case(param)
        folder = save_info_file(case, tmp_path)
        info = json.loads((folder / "case.json").read_text())
        x_entry = info["inputs"][0]
        assert x_entry["layout"] == layout.value
        assert x_entry["bytes"] == footprint_bits((4, 112, 2, 129), "f16", layout) // 8
        assert (folder / "in0_x.bin").read_bytes() == pack(case.inputs[0], "f16", layout)
        assert info["outputs"][0]["layout"] == layout.value
        assert info["inputs"][1]["layout"] == "Tensor"  # 1x1x1xC parameters, compact f32
        assert info["tolerance"] == {"rtol": 2.0**-10, "atol": 1e-5}
        assert '"tx8be.BatchNorm_Inference"' in info["module"]
        assert "op_batchnorm_inference" in (folder / "main.c").read_text()
        param2, module, inputs, expected = load_case(folder)
        assert param2 == param
        np.testing.assert_array_equal(inputs[0], case.inputs[0])
        np.testing.assert_array_equal(expected, case.expected)
        assert module.main.ops[0].kind == "tx8be.BatchNorm_Inference"


def _rehash(folder: Path, index: int, data: bytes, key: str = "inputs") -> None:
    info = json.loads((folder / "case.json").read_text())
    entry = info[key][index]
    (folder / entry["file"]).write_bytes(data)
    entry["sha256"] = hashlib.sha256(data).hexdigest()
    (folder / "case.json").write_text(json.dumps(info))


def test_rerun_catches_a_wrong_expected_output(tmp_path: Path) -> None:
    param = CaseParam("wrong", (2, 3, 40), "f32", aligned=True, seed=7)
    folder = save_info_file(compile_case(param), tmp_path)
    _, _, _, expected = load_case(folder)
    bad = expected.copy()
    bad[1, 2, 5] += 0.5
    # the rank-3 aligned image is the NCx of its [N, 1, W, C] view
    _rehash(folder, 0, pack(bad.reshape(2, 1, 3, 40), "f32", param.layout), key="outputs")
    result = rerun_case(folder)
    assert not result.passed
    assert not result.reference_reproduced
    assert result.mismatches == 1
    assert result.max_abs_err == pytest.approx(0.5, rel=1e-3)


def test_reader_names_the_broken_file(tmp_path: Path) -> None:
    param = CaseParam("broken", (2, 8), "bf16", aligned=False, seed=1)
    folder = save_info_file(compile_case(param), tmp_path)
    x = folder / "in0_x.bin"
    data = bytearray(x.read_bytes())
    data[0] ^= 0xFF
    x.write_bytes(bytes(data))
    with pytest.raises(Tx8labError, match=r"in0_x\.bin does not match its sha256"):
        rerun_case(folder)
    x.write_bytes(bytes(data[:-2]))
    with pytest.raises(Tx8labError, match=r"in0_x\.bin has 30 bytes, case\.json says 32"):
        rerun_case(folder)
    x.unlink()
    with pytest.raises(Tx8labError, match=r"missing in0_x\.bin"):
        rerun_case(folder)
    with pytest.raises(Tx8labError, match=r"no case\.json"):
        load_case(tmp_path / "nowhere")
    (folder / "case.json").write_text("{}")
    with pytest.raises(Tx8labError, match=r"malformed case\.json"):
        load_case(folder)


def test_params_outside_the_support_are_rejected() -> None:
    with pytest.raises(Tx8labError, match="must have rank 2, 3 or 4"):
        init_param(0, fixed={"shape": (8,)})
    with pytest.raises(Tx8labError, match="dtype 'i8' is not one of"):
        init_param(0, fixed={"dtype": "i8"})
    with pytest.raises(Tx8labError, match=r"unknown fixed fields \['layout'\]"):
        init_param(0, fixed={"layout": "NCx"})
