"""Preset fields the cost model added: NoC hop latency and the psum element width."""

from __future__ import annotations

import pytest

from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81, resolve_hw
from tx8lab.hw import cost as hwcost


def test_new_fields_have_their_documented_values() -> None:
    assert TX81.noc_hop_s == pytest.approx(5e-9)  # [assumption] 5 NoC cycles per hop
    assert TX81.tile.psum_elem_bytes == 4  # [assumption] fp32 / int32 accumulators


def test_new_fields_take_command_line_overrides() -> None:
    hw = resolve_hw(["tx81", "noc_hop_s=20e-9", "tile.psum_elem_bytes=2"])
    assert hw.noc_hop_s == pytest.approx(20e-9)
    assert hw.tile.psum_elem_bytes == 2
    near = hwcost.dma_cost("ld", 0, TX81, noc_hops=4).work_cycles
    slow = hwcost.dma_cost("ld", 0, hw, noc_hops=4).work_cycles
    assert slow - near == 4 * 15  # 15 ns more per hop at 1 GHz


def test_new_fields_are_validated() -> None:
    with pytest.raises(Tx8labError, match=r"'tile.psum_elem_bytes' must be positive"):
        TX81.tile.replace(psum_elem_bytes=0)
    with pytest.raises(Tx8labError, match=r"'noc_hop_s' must be positive"):
        TX81.replace(noc_hop_s=0.0)
