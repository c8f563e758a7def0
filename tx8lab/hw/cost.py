"""Tile cost model: cycles of one op slice on one engine of one tile (seed ``getOpClockCycle``).

Spec: seed 001 (tile micro-architecture: the NE's 8x16x8 PE-array step, the CGRA vector
unit, the LSU's RDMA/WDMA/TDMA, SPM, NoC, DDR; OpLibInterface ``getOpClockCycle``),
DESIGN.md §6 and ``shared/reference/hw-fa-fusion.md`` §1 for the numbers, which all come
from the :class:`~tx8lab.hw.config.ChipConfig` passed in (``tx8lab.hw.presets`` cites each).

This module takes plain numbers (shapes, element-type names, byte and element counts), so
it imports nothing from ``tx8lab.core``; the op library (``tx8lab.core.ops``) knows how many
MACs or elements an op slice has and which engine runs it, and calls the functions here.

The formulas (``cycles = ceil(seconds * clock_hz)``; every term is one :class:`Cost`):

- **NE** (matrix engine): ``2 * batch * pad(M, 8) * pad(K, 16) * pad(N, 8) / NE peak(dtype)``.
  Each dimension rounds up to the PE-array granule ``tile.ne_granule_mkn`` (seed 001: "一次完成
  8x16x8 大小的矩阵乘法"), so a skinny product pays for the padding.
- **CT** (CGRA vector unit): ``pad(elements, lanes) * vector_ops_per_element / CT peak(dtype)``,
  the elements rounded up to the 1024-bit datapath (64 lanes of 16 bits).
- **RDMA / WDMA** (``ld`` / ``st``): ``bytes / share`` with the tile's share of DDR
  ``min(per-tile DMA peak, DDR working point / active tiles)``: one tile alone gets its
  1/16 of the spec, all 16 streaming together split the ~150 GB/s working point. Data that
  comes from another tile's SPM instead goes over the NoC: ``bytes / NoC link`` plus one
  DTE message latency plus ``hops * noc_hop_s``.
- **TDMA** (in-tile gather/scatter/reshape): ``bytes / tdma_bytes_per_s`` (SPM bandwidth).
- Every command also costs the kernel core's issue time ``tile.command_issue_s`` (≈1 µs,
  board notes), reported apart as ``issue_cycles``.

Readings chosen where the sources are vague:

- The NE is modelled by its documented peak rate, with 8x16x8 used only as the (M, K, N)
  shape granule (hw-fa-fusion §1.2: the NE clock is not published).
- No calibration factor: the model is the data sheet plus the granule, DMA share and issue
  overhead. Its ratio to the board's GEMM figure is reported by
  ``tx8lab.bench.cost.cost_figures`` rather than folded into a hidden constant.
- Issue overhead is per command and one op slice is one command, as in seed 001's
  ``main.c`` (one ``op_*`` call per load, compute and store in each loop iteration).
- A zero-sized slice costs nothing but its issue time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

#: Engine slots of a cost, named as the software pipeline names them (seed ``enginsBase``).
CostEngine = Literal["ld", "st", "ne", "ct", "tdma"]


@dataclass(frozen=True)
class Cost:
    """The time of one command on one engine, with the formula that gave it."""

    engine: CostEngine
    work_cycles: int
    """Cycles the engine is busy with the data."""
    issue_cycles: int
    """Cycles the kernel core spends issuing the command(s)."""
    formula: str
    """The formula with its numbers (``explain``)."""

    @property
    def cycles(self) -> int:
        """``work_cycles + issue_cycles``."""
        return self.work_cycles + self.issue_cycles


def pad_up(value: int, granule: int) -> int:
    """``value`` rounded up to a multiple of ``granule``.

    Examples:
        >>> pad_up(30, 16), pad_up(32, 16), pad_up(0, 8)
        (32, 32, 0)
    """
    return -(-int(value) // int(granule)) * int(granule)


def to_cycles(seconds: float, hw: ChipConfig) -> int:
    """Whole clock cycles (rounded up) that ``seconds`` take at ``hw.clock_hz``.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> to_cycles(1e-6, TX81), to_cycles(0.0, TX81)
        (1000, 0)
    """
    return math.ceil(seconds * hw.clock_hz - 1e-9) if seconds > 0 else 0


def issue_cycles(hw: ChipConfig, commands: int = 1) -> int:
    """Kernel-core cycles to issue ``commands`` engine commands."""
    return to_cycles(hw.tile.command_issue_s, hw) * _count(commands, "commands")


def ne_cost(
    m: int, k: int, n: int, dtype: str, hw: ChipConfig, *, batch: int = 1, commands: int = 1
) -> Cost:
    """A ``batch`` of (M x K) @ (K x N) products on the NE of one tile.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> ne_cost(1024, 1024, 1024, "bf16", TX81).work_cycles  # 2 GFLOP / 8 TFLOP/s
        268436
        >>> one_row, full = ne_cost(1, 16, 8, "bf16", TX81), ne_cost(8, 16, 8, "bf16", TX81)
        >>> one_row.work_cycles == full.work_cycles  # M pads to the 8-row granule
        True
    """
    for name, value in (("M", m), ("K", k), ("N", n), ("batch", batch)):
        _count(value, name)
    gm, gk, gn = hw.tile.ne_granule_mkn
    pm, pk, pn = pad_up(m, gm), pad_up(k, gk), pad_up(n, gn)
    macs = batch * pm * pk * pn
    rate = hw.tile.ne_ops_per_s(dtype)
    work = to_cycles(2 * macs / rate, hw)
    issue = issue_cycles(hw, commands)
    batch_text = f"{batch} x " if batch != 1 else ""
    formula = (
        f"NE {dtype}: 2 x {batch_text}pad(M={m},{gm})={pm} x pad(K={k},{gk})={pk} x "
        f"pad(N={n},{gn})={pn} = {2 * macs:,} op / {_rate(rate)}op/s = {work:,} cycles"
        f"{_issue_text(hw, commands, issue)}; total {work + issue:,} cycles"
    )
    return Cost("ne", work, issue, formula)


def ct_cost(
    elements: int,
    ops_per_element: float,
    dtype: str,
    hw: ChipConfig,
    *,
    commands: int = 1,
) -> Cost:
    """``elements`` x ``ops_per_element`` vector operations on the CGRA of one tile.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> ct_cost(64 * 1000, 1, "bf16", TX81).work_cycles  # 64 lanes at 1 GHz
        1000
        >>> ct_cost(1, 1, "bf16", TX81).work_cycles  # one element fills a 64-lane vector
        1
    """
    _count(elements, "elements")
    if ops_per_element < 0 or not math.isfinite(ops_per_element):
        raise Tx8labError(f"vector ops per element must be >= 0, got {ops_per_element!r}")
    lanes = hw.tile.ct_lanes(dtype)
    padded = pad_up(elements, lanes)
    rate = hw.tile.ct_ops_per_s(dtype)
    ops = padded * ops_per_element
    work = to_cycles(ops / rate, hw)
    issue = issue_cycles(hw, commands)
    formula = (
        f"CT {dtype}: pad({elements:,} elements, {lanes} lanes)={padded:,} x "
        f"{ops_per_element:g} op/element = {ops:,.0f} op / {_rate(rate)}op/s = {work:,} cycles"
        f"{_issue_text(hw, commands, issue)}; total {work + issue:,} cycles"
    )
    return Cost("ct", work, issue, formula)


def dma_share_bytes_per_s(
    hw: ChipConfig, engine: Literal["ld", "st"], active_tiles: int | None = None
) -> float:
    """Bytes/s one tile's RDMA (``ld``) or WDMA (``st``) gets from DDR.

    ``min(per-tile peak, DDR working point / active_tiles)``; ``active_tiles`` defaults to
    every tile of the chip (a group runs on all of them).

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> dma_share_bytes_per_s(TX81, "ld") / 1e9  # 150 GB/s / 16 tiles
        9.375
        >>> dma_share_bytes_per_s(TX81, "ld", active_tiles=1) / 1e9  # 200 GB/s / 16
        12.5
    """
    peak = _dma_peak(hw, engine)
    tiles = hw.tiles_per_chip if active_tiles is None else _count(active_tiles, "active_tiles")
    if tiles == 0:
        raise Tx8labError("active_tiles must be at least 1")
    return min(peak, hw.ddr_effective_bytes_per_s / min(tiles, hw.tiles_per_chip))


def dma_cost(
    engine: Literal["ld", "st"],
    num_bytes: int,
    hw: ChipConfig,
    *,
    active_tiles: int | None = None,
    noc_hops: int = 0,
    commands: int = 1,
) -> Cost:
    """A load (RDMA, DDR -> SPM) or store (WDMA, SPM -> DDR) of ``num_bytes``.

    With ``noc_hops > 0`` the data comes from (or goes to) another tile's SPM that many
    mesh hops away instead of DDR: NoC link bandwidth, one DTE message, hop latency.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> dma_cost("ld", 9_375_000, TX81).work_cycles  # 1 ms at 9.375 GB/s
        1000000
    """
    _dma_peak(hw, engine)
    _count(num_bytes, "bytes")
    hops = _count(noc_hops, "noc_hops")
    issue = issue_cycles(hw, commands)
    name = "RDMA" if engine == "ld" else "WDMA"
    if hops == 0:
        share = dma_share_bytes_per_s(hw, engine, active_tiles)
        work = to_cycles(num_bytes / share, hw)
        tiles = hw.tiles_per_chip if active_tiles is None else active_tiles
        formula = (
            f"{name}: {num_bytes:,} B / min({_rate(_dma_peak(hw, engine))}B/s per tile, "
            f"{_rate(hw.ddr_effective_bytes_per_s)}B/s DDR / {tiles} tiles) = "
            f"{num_bytes:,} B / {_rate(share)}B/s = {work:,} cycles"
        )
    else:
        transfer = to_cycles(num_bytes / hw.noc_link_bytes_per_s, hw)
        latency = to_cycles(hw.dte_message_s + hops * hw.noc_hop_s, hw)
        work = transfer + latency
        formula = (
            f"{name} over NoC: {num_bytes:,} B / {_rate(hw.noc_link_bytes_per_s)}B/s = "
            f"{transfer:,} cycles + DTE message {hw.dte_message_s * 1e6:g} us + {hops} hops x "
            f"{hw.noc_hop_s * 1e9:g} ns = {latency:,} cycles; {work:,} cycles"
        )
    formula += f"{_issue_text(hw, commands, issue)}; total {work + issue:,} cycles"
    return Cost(engine, work, issue, formula)


def c2c_all_gather_cycles(num_bytes: int, chips: int, hw: ChipConfig) -> int:
    """Cycles to all-gather a ``num_bytes`` tensor cut over ``chips`` chips (a ring).

    Each chip receives the ``(chips - 1) / chips`` of the tensor it lacks over one
    chip-to-chip link direction (``c2c_link_bytes_per_s``), all chips at once; one chip
    needs nothing. Link latency is not modelled (not in the sources).

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> c2c_all_gather_cycles(50_000_000, 2, TX81)  # 25 MB at 25 GB/s: 1 ms
        1000000
    """
    _count(num_bytes, "bytes")
    n = _count(chips, "chips")
    if n <= 1:
        return 0
    return to_cycles(num_bytes * (n - 1) / n / hw.c2c_link_bytes_per_s, hw)


def c2c_all_reduce_cycles(num_bytes: int, chips: int, hw: ChipConfig) -> int:
    """Cycles to sum a ``num_bytes`` tensor held as partial sums on ``chips`` chips (a ring).

    A ring all-reduce is a reduce-scatter then an all-gather: each chip sends and receives
    ``2 (chips - 1) / chips`` of the tensor over one link direction. The additions are
    not counted (vector-unit work far below the transfer).

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> c2c_all_reduce_cycles(50_000_000, 2, TX81)  # twice the all-gather's 1 ms
        2000000
    """
    return 2 * c2c_all_gather_cycles(num_bytes, chips, hw)


def tdma_cost(num_bytes: int, hw: ChipConfig, *, commands: int = 1) -> Cost:
    """An in-tile TDMA move (gather/scatter, reshape) of ``num_bytes`` through SPM.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> tdma_cost(256_000, TX81).work_cycles  # 256 GB/s
        1000
    """
    _count(num_bytes, "bytes")
    rate = hw.tile.tdma_bytes_per_s
    work = to_cycles(num_bytes / rate, hw)
    issue = issue_cycles(hw, commands)
    formula = (
        f"TDMA: {num_bytes:,} B / {_rate(rate)}B/s = {work:,} cycles"
        f"{_issue_text(hw, commands, issue)}; total {work + issue:,} cycles"
    )
    return Cost("tdma", work, issue, formula)


def explain(cost: Cost) -> str:
    """The formula of ``cost`` with its numbers, one line.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> print(explain(ne_cost(100, 30, 7, "bf16", TX81)))  # doctest: +NORMALIZE_WHITESPACE
        NE bf16: 2 x pad(M=100,8)=104 x pad(K=30,16)=32 x pad(N=7,8)=8 = 53,248 op /
        8 Top/s = 7 cycles + issue 1 x 1,000 = 1,000 cycles; total 1,007 cycles
    """
    return cost.formula


# ---------------------------------------------------------------- helpers


def _count(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Tx8labError(f"cost model: {name} must be a whole number >= 0, got {value!r}")
    return value


def _dma_peak(hw: ChipConfig, engine: str) -> float:
    if engine == "ld":
        return hw.tile.rdma_bytes_per_s
    if engine == "st":
        return hw.tile.wdma_bytes_per_s
    raise Tx8labError(f"DMA engine must be 'ld' (RDMA) or 'st' (WDMA), got {engine!r}")


def _issue_text(hw: ChipConfig, commands: int, issue: int) -> str:
    per = to_cycles(hw.tile.command_issue_s, hw)
    return f" + issue {commands} x {per:,} = {issue:,} cycles"


def _rate(value: float) -> str:
    """``8e12`` -> ``'8 T'``; a short SI rendering for formulas."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.4g} {prefix}"
    return f"{value:.4g} "


__all__ = [
    "Cost",
    "CostEngine",
    "c2c_all_gather_cycles",
    "c2c_all_reduce_cycles",
    "ct_cost",
    "dma_cost",
    "dma_share_bytes_per_s",
    "explain",
    "issue_cycles",
    "ne_cost",
    "pad_up",
    "tdma_cost",
    "to_cycles",
]
