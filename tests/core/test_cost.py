"""The tile cost model (``tx8lab.hw.cost``) and the op library's cost entries.

Covers the NE granule padding, the CT lane padding and per-dtype rates, the DMA share of
DDR bandwidth (and NoC transfers), TDMA, the issue overhead, the explain text, the errors,
and how the op library turns an op slice into MACs or vector work. The calibration against
the board's GEMM figure is printed by ``test_calibration_figures`` (run with ``-s``).
"""

from __future__ import annotations

import math

import pytest

from tests.core.ops.ophelpers import build
from tx8lab.bench.cost import BOARD_GEMM_MS, cost_figures
from tx8lab.core.ir import TensorType
from tx8lab.core.ops import OPS
from tx8lab.core.schedule.tasks import OpStrategy
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81
from tx8lab.hw import cost as hwcost

ISSUE = 1000  # 1 us at 1 GHz (tile.command_issue_s)


# ---------------------------------------------------------------- NE


def test_ne_pads_every_dim_to_the_8x16x8_granule() -> None:
    one = hwcost.ne_cost(8, 16, 8, "bf16", TX81)
    # 8*16*8 MACs = 2048 op at 8 Top/s = 0.256 ns -> 1 cycle
    assert one.work_cycles == 1
    big = hwcost.ne_cost(800, 1600, 800, "bf16", TX81)
    assert big.work_cycles == math.ceil(2 * 800 * 1600 * 800 / 8e12 * 1e9)
    # M = 801 pads to 808, K = 1601 to 1616, N = 801 to 808
    padded = hwcost.ne_cost(801, 1601, 801, "bf16", TX81)
    assert padded.work_cycles == math.ceil(2 * 808 * 1616 * 808 / 8e12 * 1e9)
    # a 1-row product costs as much as an 8-row one; K = 17 as much as K = 32
    assert (
        hwcost.ne_cost(1, 1024, 1024, "f16", TX81).work_cycles
        == hwcost.ne_cost(8, 1024, 1024, "f16", TX81).work_cycles
    )
    assert (
        hwcost.ne_cost(64, 17, 64, "f16", TX81).work_cycles
        == hwcost.ne_cost(64, 32, 64, "f16", TX81).work_cycles
    )


def test_ne_rate_follows_the_dtype() -> None:
    bf16 = hwcost.ne_cost(1024, 1024, 1024, "bf16", TX81).work_cycles
    i8 = hwcost.ne_cost(1024, 1024, 1024, "i8", TX81).work_cycles
    f32 = hwcost.ne_cost(1024, 1024, 1024, "f32", TX81).work_cycles
    assert bf16 == 268436  # 2^31 op / 8e12 op/s
    assert i8 == pytest.approx(bf16 / 2, abs=1)  # 16 TOPS
    assert f32 == math.ceil(2 * 1024**3 / (21e12 / 16) * 1e9)
    with pytest.raises(Tx8labError, match="NE has no 'i32' mode"):
        hwcost.ne_cost(8, 16, 8, "i32", TX81)


def test_ne_batch_multiplies_and_granule_comes_from_the_preset() -> None:
    one = hwcost.ne_cost(64, 64, 64, "bf16", TX81).work_cycles
    assert hwcost.ne_cost(64, 64, 64, "bf16", TX81, batch=4).work_cycles == pytest.approx(
        4 * one, abs=1
    )
    coarse = TX81.replace(tile={"ne_granule_mkn": (64, 64, 64)})
    assert hwcost.ne_cost(1, 1, 1, "bf16", coarse).work_cycles == math.ceil(2 * 64**3 / 8e12 * 1e9)


# ---------------------------------------------------------------- CT


def test_ct_elements_times_ops_over_the_vector_rate() -> None:
    # bf16: 64 GOPS = 64 elements per cycle at 1 GHz
    assert hwcost.ct_cost(64_000, 1, "bf16", TX81).work_cycles == 1000
    assert hwcost.ct_cost(64_000, 12, "bf16", TX81).work_cycles == 12_000
    # f32 runs at half the rate (32 GOPS)
    assert hwcost.ct_cost(64_000, 1, "f32", TX81).work_cycles == 2000
    # elements pad to the 1024-bit datapath: 65 bf16 elements fill two 64-lane vectors
    assert hwcost.ct_cost(65, 64, "bf16", TX81).work_cycles == 128
    assert hwcost.ct_cost(0, 4, "bf16", TX81).work_cycles == 0
    with pytest.raises(Tx8labError, match="vector ops per element"):
        hwcost.ct_cost(10, -1, "bf16", TX81)


# ---------------------------------------------------------------- DMA


def test_dma_share_of_ddr_bandwidth() -> None:
    # all 16 tiles stream: 150 GB/s working point / 16; one tile alone: its 200/16 peak
    assert hwcost.dma_share_bytes_per_s(TX81, "ld") == pytest.approx(9.375e9)
    assert hwcost.dma_share_bytes_per_s(TX81, "ld", active_tiles=1) == pytest.approx(12.5e9)
    assert hwcost.dma_share_bytes_per_s(TX81, "st", active_tiles=4) == pytest.approx(12.5e9)
    assert hwcost.dma_share_bytes_per_s(TX81, "st", active_tiles=13) == pytest.approx(150e9 / 13)
    load = hwcost.dma_cost("ld", 9_375_000, TX81)
    assert (load.engine, load.work_cycles, load.issue_cycles) == ("ld", 1_000_000, ISSUE)
    alone = hwcost.dma_cost("ld", 9_375_000, TX81, active_tiles=1)
    assert alone.work_cycles == 750_000
    # the working point comes from the preset: a faster DDR raises every tile's share
    fast = TX81.replace(ddr_efficiency=1.0)
    assert hwcost.dma_share_bytes_per_s(fast, "ld") == pytest.approx(12.5e9)


def test_dma_from_another_tile_goes_over_the_noc() -> None:
    near = hwcost.dma_cost("ld", 128_000, TX81, noc_hops=1)
    far = hwcost.dma_cost("ld", 128_000, TX81, noc_hops=6)
    # 128 kB / 128 GB/s = 1000 cycles + DTE message 1.47 us + 5 ns per hop
    assert near.work_cycles == 1000 + math.ceil(1470 + 5)
    assert far.work_cycles - near.work_cycles == 25
    assert "NoC" in near.formula
    assert "6 hops" in far.formula


def test_tdma_and_issue_overhead() -> None:
    move = hwcost.tdma_cost(256_000, TX81)
    assert (move.engine, move.work_cycles, move.cycles) == ("tdma", 1000, 1000 + ISSUE)
    assert hwcost.issue_cycles(TX81, 3) == 3 * ISSUE
    assert hwcost.tdma_cost(0, TX81, commands=2).cycles == 2 * ISSUE
    slow = TX81.replace(tile={"command_issue_s": 2e-6})
    assert hwcost.issue_cycles(slow) == 2000


def test_explain_gives_the_formula_with_numbers() -> None:
    text = hwcost.explain(hwcost.ne_cost(100, 30, 7, "bf16", TX81))
    assert "pad(M=100,8)=104" in text
    assert "pad(K=30,16)=32" in text
    assert "pad(N=7,8)=8" in text
    assert "53,248 op" in text  # 2 * 104 * 32 * 8
    assert "total 1,007 cycles" in text
    dma = hwcost.explain(hwcost.dma_cost("st", 1000, TX81))
    assert "WDMA" in dma
    assert "16 tiles" in dma
    assert "9.375 GB/s" in dma
    ct = hwcost.explain(hwcost.ct_cost(100, 8, "f16", TX81))
    assert "pad(100 elements, 64 lanes)=128" in ct
    assert "x 8 op/element" in ct


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: hwcost.dma_cost("rd", 10, TX81), "DMA engine must be 'ld'"),  # type: ignore[arg-type]
        (lambda: hwcost.dma_cost("ld", -1, TX81), "bytes must be a whole number"),
        (lambda: hwcost.ne_cost(8, -16, 8, "bf16", TX81), "K must be a whole number"),
        (lambda: hwcost.dma_share_bytes_per_s(TX81, "ld", 0), "active_tiles must be at least 1"),
        (lambda: hwcost.ct_cost(10, 1, "q4", TX81), "unknown element type 'q4'"),
    ],
)
def test_bad_inputs_are_clear_errors(call: object, message: str) -> None:
    with pytest.raises(Tx8labError, match=message):
        call()  # type: ignore[operator]


# ---------------------------------------------------------------- op library -> cost


def test_gemm_slice_cost_is_its_ne_product() -> None:
    op = build("Gemm", TensorType((512, 256), "bf16"), TensorType((128, 256), "bf16"), trans_b=True)
    entry = OPS[op.kind]
    sliced = entry.temporal_slice_shape(op, OpStrategy((4, 1, 1), (2, 2, 1)))
    assert sliced.iteration == (64, 64, 256)  # M 512/4/2, N 128/2, K whole
    assert sliced.operands == ((64, 256), (64, 256))  # B is [N, K] transposed
    assert entry.ne_shape(op, sliced) == (1, 64, 256, 64)
    want = hwcost.ne_cost(64, 256, 64, "bf16", TX81)
    assert entry.cost(op, sliced, TX81) == want
    assert entry.cycles(op, sliced, TX81) == want.cycles
    assert "pad(M=64,8)=64" in entry.explain(op, sliced, TX81)


def test_conv_is_an_implicit_gemm_and_depthwise_wastes_the_granule() -> None:
    x = TensorType((1, 16, 16, 32), "f16")
    conv = build("Conv2d", x, TensorType((64, 3, 3, 32), "f16"), pads=(1, 1, 1, 1))
    entry = OPS[conv.kind]
    full = entry.temporal_slice_shape(conv)
    # M = N*OH*OW, K = KH*KW*Cin, N = Cout
    assert entry.ne_shape(conv, full) == (1, 256, 288, 64)
    dw = build("Conv2d", x, TensorType((32, 3, 3, 1), "f16"), pads=(1, 1, 1, 1), group=32)
    dw_full = entry.temporal_slice_shape(dw)
    assert entry.ne_shape(dw, dw_full) == (32, 256, 9, 1)
    # the depthwise conv does 1/64 of the MACs but pays for N padded 1 -> 8, K 9 -> 16
    dense = entry.cost(conv, full, TX81).work_cycles
    sparse = entry.cost(dw, dw_full, TX81).work_cycles
    assert sparse == math.ceil(2 * 32 * 256 * 16 * 8 / 8e12 * 1e9)
    assert sparse > dense / 64


def test_ct_ops_use_their_vector_ops_per_element() -> None:
    x = TensorType((64, 1000), "bf16")
    relu, exp = build("Relu", x), build("Exp", x)
    assert OPS[relu.kind].vector_ops_per_element(relu) == 1
    assert OPS[exp.kind].vector_ops_per_element(exp) == 8
    relu_cost = OPS[relu.kind].cost(relu, OPS[relu.kind].temporal_slice_shape(relu), TX81)
    exp_cost = OPS[exp.kind].cost(exp, OPS[exp.kind].temporal_slice_shape(exp), TX81)
    assert relu_cost.work_cycles == 1000  # 64,000 elements at 64 per cycle
    assert exp_cost.work_cycles == 8000
    gelu_tanh = build("Gelu", x, approximate="tanh")
    assert OPS[gelu_tanh.kind].vector_ops_per_element(gelu_tanh) == 18
    pool = build("MaxPool2d", TensorType((1, 8, 8, 64), "f16"), kernel=(3, 3))
    assert OPS[pool.kind].vector_ops_per_element(pool) == 9


def test_every_op_family_has_a_documented_vector_cost() -> None:
    for entry in OPS.values():
        if entry.kind == "tx8be.Group":
            continue
        assert entry.vector_ops >= 0
    # a reshape that keeps the last dim is a view; one that changes it is a copy
    x = TensorType((4, 6, 8), "f16")
    view, copy = build("Reshape", x, shape=(24, 8)), build("Reshape", x, shape=(4, 48))
    assert OPS[view.kind].vector_ops_per_element(view) == 0
    assert OPS[copy.kind].vector_ops_per_element(copy) == 1


def test_loads_and_stores_move_their_slice_bytes() -> None:
    v = TensorType((64, 1024), "f16")
    load, store = build("LoadVar", v), build("StoreVar", v)
    half = OpStrategy((1, 1), (2, 1))
    ld_cost = OPS[load.kind].cost(load, OPS[load.kind].temporal_slice_shape(load, half), TX81)
    st_cost = OPS[store.kind].cost(store, OPS[store.kind].temporal_slice_shape(store), TX81)
    assert ld_cost.engine == "ld"
    assert st_cost.engine == "st"
    assert ld_cost.work_cycles == math.ceil(32 * 1024 * 2 / 9.375e9 * 1e9)
    assert st_cost.work_cycles == math.ceil(64 * 1024 * 2 / 9.375e9 * 1e9)
    one_tile = OPS[store.kind].cost(
        store, OPS[store.kind].temporal_slice_shape(store), TX81, tiles=1
    )
    assert one_tile.work_cycles < st_cost.work_cycles


# ---------------------------------------------------------------- calibration


def test_calibration_figures() -> None:
    """Modelled vs board (BF16 GEMM 4096x1024x4096, 16 tiles, 1.801 ms kernel body)."""
    rows = cost_figures()
    for row in rows:
        print(f"{row['case']:45s} {row['modelled_ms']:8.4f} ms  ratio {row['ratio']:.3f}")
    cases = [row["case"] for row in rows]
    assert cases[0].startswith("NE peak only")
    assert all(row["board_ms"] == BOARD_GEMM_MS for row in rows)
    # the NE-only row is plain data-sheet arithmetic: 2 * 4096 * 1024 * 4096 / 16 / 8 TFLOP/s
    assert rows[0]["modelled_ms"] == pytest.approx(2 * 4096 * 1024 * 4096 / 16 / 8e12 * 1e3, 1e-3)
    # the model is cheaper than the board for every row, and the serial schedule is the
    # slowest modelled one (not a tight calibration: the ratios are the report)
    assert all(0 < row["ratio"] < 1 for row in rows)
    assert rows[-1]["modelled_ms"] == max(row["modelled_ms"] for row in rows)
    default = next(row for row in rows if row["case"] == "default strategy, busiest engine")
    assert default["limiting_engine"] == "ld"
    assert "OCSPLIT" in default["notes"]
