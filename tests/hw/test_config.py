"""ChipConfig/TileConfig: preset values against their sources, validation, overrides, JSON."""

from __future__ import annotations

import ast
import dataclasses
import functools
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tx8lab.errors import Tx8labError
from tx8lab.hw import (
    PRESETS,
    TX81,
    ChipConfig,
    TileConfig,
    get_preset,
    parse_number,
    parse_override,
    resolve_hw,
)

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


# ---------------------------------------------------------------- preset values


def test_tx81_mesh_and_spm() -> None:
    assert TX81.name == "tx81"
    assert TX81.mesh_shape == (4, 4)
    assert (TX81.mesh_rows, TX81.mesh_cols) == (4, 4)
    assert TX81.tiles_per_chip == 16
    assert TX81.num_chips == 1
    assert TX81.tile_count == 16
    assert TX81.tile.spm_bytes == 3 * MiB == 0x300000
    assert TX81.tile.spm_reserved_bytes == 64 * KiB
    # DESIGN §6: last 64 KiB reserved -> tensors live in [0, 0x2F0000)
    assert TX81.tile.spm_limit_bytes == 0x2F0000
    assert TX81.tile.spm_usable_bytes == 3 * MiB - 64 * KiB


def test_tx81_per_tile_rates_add_up_to_the_chip_spec_table() -> None:
    """Seed 001's table gives chip totals; the preset stores per-tile rates."""
    tile, n = TX81.tile, TX81.tiles_per_chip
    assert tile.ne_ops_per_s("i8") * n == pytest.approx(256e12)
    assert tile.ne_ops_per_s("bf16") * n == pytest.approx(128e12)
    assert tile.ne_ops_per_s("f16") * n == pytest.approx(128e12)
    assert tile.ne_ops_per_s("tf32") * n == pytest.approx(128e12)
    assert tile.ne_ops_per_s("f32") * n == pytest.approx(21e12)
    # S2: vector "1 TOPS" fp16/bf16 and "0.5 TOPS" fp32 per chip (16 x 64 GOPS = 1.024)
    assert tile.ct_ops_per_s("bf16") * n == pytest.approx(1e12, rel=0.03)
    assert tile.ct_ops_per_s("f32") * n == pytest.approx(0.5e12, rel=0.03)
    assert tile.ct_ops_per_s("tf32") == tile.ct_ops_per_s("f32")
    assert tile.ne_granule_mkn == (8, 16, 8)


def test_tx81_vector_width_matches_cx_blocks() -> None:
    tile = TX81.tile
    assert tile.ct_lanes("bf16") == tile.cx_channels == 64
    assert tile.ct_lanes("i8") == tile.cx_channels_i8 == 128
    assert tile.ct_lanes("f32") == 32
    assert tile.spm_align_bytes * 8 == 2048  # "N 的起始地址向 2048bit 对齐"


def test_tx81_links_and_memory() -> None:
    assert TX81.ddr_bytes == 64 * GiB
    assert TX81.ddr_bytes_per_s == 200e9
    assert TX81.ddr_effective_bytes_per_s == pytest.approx(150e9)
    # 4 directions x 2 ways x 25 GB/s = 1600 Gbps (seed 001 "TsingMicro-Link 1600Gbps")
    assert TX81.c2c_links * 2 * TX81.c2c_link_bytes_per_s * 8 == pytest.approx(1600e9)
    assert TX81.pcie_bytes_per_s == 64e9
    assert TX81.noc_link_bytes_per_s == 128e9
    assert TX81.clock_hz == 1e9
    # DESIGN §6: command issue ~1 us; first tile-to-tile message 8-13 us
    assert TX81.tile.command_issue_s == pytest.approx(1e-6)
    assert 8e-6 <= TX81.dte_first_message_s <= 13e-6
    # a tile alone may not take more than the chip's DDR
    assert TX81.tile.rdma_bytes_per_s <= TX81.ddr_bytes_per_s


def test_ne_has_no_wide_integer_mode_and_dtypes_are_checked() -> None:
    with pytest.raises(Tx8labError, match=r"NE has no 'i32' mode"):
        TX81.tile.ne_ops_per_s("i32")
    with pytest.raises(Tx8labError, match=r"unknown element type 'f64'"):
        TX81.tile.ct_ops_per_s("f64")
    with pytest.raises(Tx8labError, match=r"unknown element type 'int8'"):
        TX81.tile.ct_lanes("int8")


_SOURCE_TAG = re.compile(r"seed \d{3}|\[(doc|code|board|derived|assumption)\]|DESIGN|S\d+")


def _preset_calls() -> list[ast.Call]:
    path = Path(__file__).resolve().parents[2] / "tx8lab" / "hw" / "presets.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("TileConfig", "ChipConfig")
    ]


def test_every_preset_number_has_a_source_comment() -> None:
    """DESIGN §6: every number carries its source; an assumption says so."""
    path = Path(__file__).resolve().parents[2] / "tx8lab" / "hw" / "presets.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    calls = _preset_calls()
    assert len(calls) >= 2
    checked = 0
    for call in calls:
        for kw in call.keywords:
            if kw.arg in ("name", "tile"):
                continue
            comment = []
            row = kw.lineno - 2  # the line above, 0-based
            while row >= 0 and lines[row].strip().startswith("#"):
                comment.append(lines[row])
                row -= 1
            text = " ".join(comment)
            assert _SOURCE_TAG.search(text), f"presets.py:{kw.lineno} {kw.arg} has no source"
            checked += 1
    expected = len(dataclasses.fields(TileConfig)) + len(dataclasses.fields(ChipConfig)) - 2
    assert checked == expected  # every field set explicitly, none left to a default


# ---------------------------------------------------------------- value semantics


def test_configs_are_frozen_and_hashable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        TX81.num_chips = 2  # type: ignore[misc]
    calls = []

    @functools.lru_cache
    def cost(hw: ChipConfig) -> int:
        calls.append(hw)
        return hw.tile_count

    assert cost(TX81) == cost(TX81.replace(num_chips=1)) == 16
    assert len(calls) == 1  # an equal config is a cache hit
    assert TX81.replace(num_chips=2) != TX81


def test_replace_returns_a_validated_copy() -> None:
    two = TX81.replace(num_chips=2, clock_hz=2_000_000_000)
    assert two.tile_count == 32
    assert two.clock_hz == 2e9
    assert isinstance(two.clock_hz, float)  # ints are stored as floats in float fields
    assert TX81.num_chips == 1  # the preset is untouched
    smaller = TX81.replace(tile={"spm_bytes": 2 * MiB})
    assert smaller.tile.spm_bytes == 2 * MiB
    assert smaller.tile.ne_granule_mkn == TX81.tile.ne_granule_mkn
    assert TX81.tile.replace(spm_banks=4).spm_banks == 4


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"num_chip": 2}, r"unknown hw field 'num_chip' \(did you mean 'num_chips'\?\)"),
        ({"spm_bytes": 1}, r"unknown hw field 'spm_bytes' \(did you mean 'tile.spm_bytes'\?\)"),
        ({"num_chips": 0}, r"'num_chips' must be positive, got 0"),
        ({"num_chips": -1}, r"'num_chips' must be positive, got -1"),
        ({"num_chips": 1.5}, r"'num_chips' must be a whole number"),
        ({"num_chips": True}, r"'num_chips' must be a number, got True"),
        ({"num_chips": "2"}, r"'num_chips' must be a number, got '2'"),
        ({"ddr_bytes_per_s": math.inf}, r"'ddr_bytes_per_s' must be finite"),
        ({"clock_hz": math.nan}, r"'clock_hz' must be finite"),
        ({"ddr_efficiency": 1.2}, r"'ddr_efficiency' is a fraction in \(0, 1\]"),
        ({"mesh_shape": (4,)}, r"'mesh_shape' must be a tuple of 2 ints"),
        ({"mesh_shape": (4, 0)}, r"'mesh_shape\[1\]' must be positive"),
        ({"name": ""}, r"'name' must be a non-empty string"),
        ({"tile": 3}, r"'tile' must be a TileConfig"),
        ({"tile": {"spm_bytes": -3}}, r"'tile.spm_bytes' must be positive, got -3"),
        ({"tile": {"spm_byte": 3}}, r"unknown hw field 'tile.spm_byte'"),
        ({"tile": {"spm_reserved_bytes": -1}}, r"'tile.spm_reserved_bytes' must be non-negative"),
        ({"tile": {"spm_bytes": 64 * KiB}}, r"'tile.spm_bytes' \(65536\) leaves no room"),
    ],
)
def test_replace_rejects_bad_fields_by_name(changes: dict[str, object], message: str) -> None:
    with pytest.raises(Tx8labError, match=message):
        TX81.replace(**changes)


def test_zero_is_allowed_only_where_it_means_none() -> None:
    assert TX81.tile.replace(spm_reserved_bytes=0).spm_usable_bytes == 3 * MiB
    with pytest.raises(Tx8labError, match=r"'tile.spm_banks' must be positive"):
        TX81.tile.replace(spm_banks=0)


# ---------------------------------------------------------------- overrides


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3145728", 3145728),
        ("3_145_728", 3145728),
        ("0x10000", 65536),
        ("3Mi", 3 * MiB),
        ("3MiB", 3 * MiB),
        ("64KiB", 64 * KiB),
        ("64 Gi", 64 * GiB),
        ("150G", 150 * 10**9),
        ("150GB/s", 150 * 10**9),
        ("1.5k", 1500),
        ("200e9", 200e9),
        ("1e-6", 1e-6),
        ("0.75", 0.75),
        ("-1", -1),
    ],
)
def test_parse_number(text: str, value: float) -> None:
    parsed = parse_number(text)
    assert parsed == value
    assert type(parsed) is type(value)


@pytest.mark.parametrize("text", ["", "fast", "3 MiBs", "0x", "1e", "3MB/h", "--1"])
def test_parse_number_rejects_garbage(text: str) -> None:
    with pytest.raises(Tx8labError, match="cannot read"):
        parse_number(text)


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["", "K", "Mi", "G", "Ti"]))
def test_parse_number_scales_integers_exactly(n: int, suffix: str) -> None:
    scale = {"": 1, "K": 10**3, "Mi": 2**20, "G": 10**9, "Ti": 2**40}[suffix]
    assert parse_number(f"{n}{suffix}") == n * scale
    assert parse_number(f"{n}{suffix}B") == n * scale


def test_with_overrides_parses_strings_for_each_field_type() -> None:
    hw = TX81.with_overrides(
        {
            "tile.spm_bytes": "2MiB",
            "tile.spm_alloc_base_bytes": "0x10000",
            "tile.ne_granule_mkn": "16,16,16",
            "ddr_bytes_per_s": "150GB/s",
            "ddr_efficiency": "1",
            "mesh_shape": "2x4",
            "num_chips": 2,  # non-strings pass through
            "name": "tx81-small",
        }
    )
    assert hw.tile.spm_bytes == 2 * MiB
    assert hw.tile.spm_usable_bytes == 2 * MiB - 2 * 64 * KiB
    assert hw.tile.ne_granule_mkn == (16, 16, 16)
    assert hw.ddr_bytes_per_s == 150e9
    assert hw.ddr_effective_bytes_per_s == 150e9
    assert hw.mesh_shape == (2, 4)
    assert hw.tile_count == 16
    assert hw.name == "tx81-small"
    assert TX81.with_overrides({}) == TX81


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tile.spm_byte": "1"}, r"unknown hw field 'tile.spm_byte' \(did you mean"),
        ({"core.spm_bytes": "1"}, r"unknown hw field 'core.spm_bytes'"),
        ({"tile": "1"}, r"unknown hw field 'tile'; known fields: .*tile.spm_bytes"),
        ({"clock_hz": "fast"}, r"hw override clock_hz='fast': cannot read 'fast'"),
        ({"mesh_shape": "2x2x2"}, r"'mesh_shape' must be a tuple of 2 ints"),
        ({"tile.spm_bytes": "-1"}, r"'tile.spm_bytes' must be positive, got -1"),
        ({"tile.spm_bytes": "1.5"}, r"'tile.spm_bytes' must be a whole number"),
    ],
)
def test_with_overrides_errors_name_the_key(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(Tx8labError, match=message):
        TX81.with_overrides(overrides)


def test_iter_fields_keys_are_valid_override_keys() -> None:
    pairs = dict(TX81.iter_fields())
    assert "tile.spm_bytes" in pairs
    assert "tile" not in pairs
    assert len(pairs) == len(dataclasses.fields(ChipConfig)) - 1 + len(
        dataclasses.fields(TileConfig)
    )
    assert TX81.with_overrides(pairs) == TX81
    as_text = {
        key: "x".join(map(str, v)) if isinstance(v, tuple) else str(v) for key, v in pairs.items()
    }
    assert TX81.with_overrides(as_text) == TX81


def test_presets_and_resolve_hw() -> None:
    assert get_preset("tx81") is TX81
    assert PRESETS == {"tx81": TX81}
    with pytest.raises(Tx8labError, match=r"unknown hardware preset 'tx8': known presets are tx81"):
        get_preset("tx8")
    assert resolve_hw() is TX81
    assert resolve_hw(["tx81"]) is TX81
    hw = resolve_hw(["tile.spm_bytes=1Mi", "tx81", "num_chips=2", "num_chips=4"])
    assert hw.tile.spm_bytes == 1 * MiB
    assert hw.num_chips == 4  # the later override of a key wins
    assert parse_override(" ddr_efficiency = 0.5 ") == ("ddr_efficiency", "0.5")
    for bad in ("=3", "num_chips=", "num_chips"):
        with pytest.raises(Tx8labError, match="is not key=value"):
            parse_override(bad)


# ---------------------------------------------------------------- JSON


def test_to_dict_json_round_trip() -> None:
    for hw in (TX81, TX81.with_overrides({"mesh_shape": "2x2", "tile.spm_bytes": "1Mi"})):
        data = hw.to_dict()
        assert data["name"] == hw.name
        assert data["mesh_shape"] == list(hw.mesh_shape)
        assert data["tile"]["spm_bytes"] == hw.tile.spm_bytes
        text = json.dumps(data, allow_nan=False)
        back = ChipConfig.from_dict(json.loads(text))
        assert back == hw
        assert hash(back) == hash(hw)
    assert TileConfig.from_dict(TX81.tile.to_dict()) == TX81.tile


def test_from_dict_names_missing_and_unknown_keys() -> None:
    data = TX81.to_dict()
    del data["ddr_bytes"]
    with pytest.raises(Tx8labError, match=r"lacks 'ddr_bytes'"):
        ChipConfig.from_dict(data)
    data = TX81.to_dict()
    data["tile"]["spm_kib"] = 3
    with pytest.raises(Tx8labError, match=r"unknown hw field 'tile.spm_kib'"):
        ChipConfig.from_dict(data)
    data = TX81.to_dict()
    del data["num_chips"]  # has a default
    assert ChipConfig.from_dict(data).num_chips == 1
