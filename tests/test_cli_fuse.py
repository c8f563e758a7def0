"""``tx8lab fuse NESTS.mlir --json OUT.json``: the loop-fusion explorer on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tx8lab.cli import main
from tx8lab.kernels.loop_fusion import parse_function

NESTS = Path(__file__).resolve().parent / "kernels" / "nests"


def test_fuse_seed_writes_the_per_depth_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json = tmp_path / "fuse.json"
    assert main(["fuse", str(NESTS / "seed_bmm_chain.mlir"), "--json", str(out_json)]) == 0
    table = capsys.readouterr().out
    assert "nest0 -> nest1 via %arg2" in table
    assert "chosen_depth: 2" in table
    assert "1,1,1,384" in table
    assert "5400.00%" in table
    report = json.loads(out_json.read_text())
    (func,) = report["functions"]
    assert func["function"] == "bmm_chain"
    (pair,) = func["pairs"]
    assert (pair["src"], pair["dst"], pair["memrefs"]) == ("nest0", "nest1", ["%arg2"])
    assert pair["chosen_depth"] == 2
    assert pair["cyclic_producer"] is True
    assert pair["tolerance_used"] == 0.0
    assert [d["slice_trip_counts"] for d in pair["depths"]] == [
        [1, 128, 512, 384],
        [1, 1, 512, 384],
        [1, 1, 512, 384],
        [1, 1, 1, 384],
    ]
    assert [d["legal"] for d in pair["depths"]] == [True] * 4
    assert [d["additional_compute_fraction"] for d in pair["depths"]] == [0.0, 0.0, 54.0, 54.0]
    assert [d["storage_reduction"] for d in pair["depths"]] == [1.0] * 4
    assert pair["depths"][1]["fused_cost"] == 1_409_286_144
    assert pair["depths"][3]["slice_bounds"][2] == {
        "loop": "%i2",
        "lb": "(d0, d1, d2, d3) -> (d3)",
        "ub": "(d0, d1, d2, d3) -> (d3 + 1)",
    }
    assert pair["spm"]["depths"][1]["private_bytes"] == 2048
    assert report["options"]["mode"] == "greedy"
    assert report["hw"] == "tx81"
    assert func["fusion"]["steps"] == [
        {
            "src": "nest0",
            "dst": "nest1",
            "depth": 2,
            "memrefs": ["%arg2"],
            "privatized": [],
            "src_removed": True,
        }
    ]
    assert parse_function(func["fusion"]["mlir"]).name == "bmm_chain"


def test_chosen_depth_is_null_when_nothing_fuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json = tmp_path / "stencil.json"
    assert main(["fuse", str(NESTS / "stencil3.mlir"), "--json", str(out_json)]) == 0
    assert "chosen_depth: null" in capsys.readouterr().out
    (pair,) = json.loads(out_json.read_text())["functions"][0]["pairs"]
    assert pair["chosen_depth"] is None
    assert json.loads(out_json.read_text())["functions"][0]["fusion"]["steps"] == []


def test_options_change_the_choice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "loose.json"
    args = ["fuse", str(NESTS / "stencil3.mlir"), "--compute-tolerance", "1.0", "--json"]
    assert main([*args, str(out_json), "--print-fused", "--mode", "producer"]) == 0
    out = capsys.readouterr().out
    assert "memref<3xf32>" in out  # the fused function is printed
    report = json.loads(out_json.read_text())
    assert report["options"] == {"compute_tolerance": 1.0, "maximal": False, "mode": "producer"}
    assert report["functions"][0]["pairs"][0]["chosen_depth"] == 1
    assert main(["fuse", str(NESTS / "seed_bmm_chain.mlir"), "--maximal"]) == 0
    assert "nothing fused" in capsys.readouterr().out


def test_pairs_of_a_chain(tmp_path: Path) -> None:
    out_json = tmp_path / "chain.json"
    assert main(["fuse", str(NESTS / "rowsum_init_chain.mlir"), "--json", str(out_json)]) == 0
    pairs = json.loads(out_json.read_text())["functions"][0]["pairs"]
    assert [(p["src"], p["dst"], p["chosen_depth"]) for p in pairs] == [
        ("nest0", "nest1", 1),
        ("nest0", "nest2", None),
        ("nest1", "nest2", 1),
    ]
    assert pairs[0]["depths"][1]["result"] == "fail-fusion-dependence"
    assert pairs[1]["depths"][0]["result"] == "fail-block-dependence"


def test_hw_override_changes_the_spm_view(tmp_path: Path) -> None:
    out_json = tmp_path / "small.json"
    args = ["fuse", str(NESTS / "seed_bmm_chain.mlir"), "--json", str(out_json)]
    assert main([*args, "--hw-set", "tile.spm_bytes=512Ki"]) == 0
    spm = json.loads(out_json.read_text())["functions"][0]["pairs"][0]["spm"]
    assert spm["spm_usable_bytes"] == 512 * 1024 - 64 * 1024
    assert [d["fits"] for d in spm["depths"]] == [False, False, False, True]


def test_bad_file_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "func.func @f(%a: memref<8xf32>) {\n"
        "  affine.for %i = 0 to 8 {\n"
        "    %x = affine.load %a[%i mod 2] : memref<8xf32>\n"
        "  }\n"
        "  return\n"
        "}\n"
    )
    assert main(["fuse", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tx8lab: error: {bad}:3:28: 'mod' is not supported")
    assert "Traceback" not in err


def test_missing_file_and_single_nest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuse", str(tmp_path / "none.mlir")]) == 2
    assert "none.mlir: no such file" in capsys.readouterr().err
    one = tmp_path / "one.mlir"
    one.write_text(
        "func.func @single(%a: memref<8xf32>) {\n"
        "  affine.for %i = 0 to 8 {\n"
        "    %x = affine.load %a[%i] : memref<8xf32>\n"
        "    affine.store %x, %a[%i] : memref<8xf32>\n"
        "  }\n"
        "  return\n"
        "}\n"
    )
    assert main(["fuse", str(one)]) == 2
    err = capsys.readouterr().err
    assert "two or more affine.for nests" in err
    assert "@single (1)" in err
    assert main(["fuse", str(NESTS / "stencil3.mlir"), "--compute-tolerance", "-1"]) == 2
    assert "--compute-tolerance -1.0: give a fraction >= 0" in capsys.readouterr().err


def test_fuse_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuse", "--help"]) == 0
    assert "--compute-tolerance" in capsys.readouterr().out
