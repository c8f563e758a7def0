"""Engine laws: the time of one command on one engine, a small function of countable work.

Spec: issue 19 ("Engine laws, each a small documented function of countable work"), the
board measurements of ``tx8lab/hw/board/`` (a copy of ``shared/board``; each row names its
source), the vendor rates of ``tx8lab.hw.presets``. The constants a law needs are fields of
:class:`~tx8lab.hw.config.TileConfig` / :class:`~tx8lab.hw.config.ChipConfig`; the ones no
source states are fitted by ``tx8lab calibrate`` (``tx8lab.hw.calibrate``) and stored with
the rows they came from in ``tx8lab/hw/calibration.json``, which the ``tx81`` preset reads.
This module imports nothing from ``tx8lab.core``: callers count the work (the op library
knows an op slice's M/K/N or elements) and pass plain numbers.

The laws (time in seconds; :func:`cycles` turns it into clock cycles):

- **kernel core**: ``tile.kcore_issue_s`` per command it issues (the packet build and the
  ``TsmExecute`` call), whatever the engine.
- **NE**: ``ne_command_s + 2 * batch * pad(M, 8) * pad(N, 8) * (pad(K, 16) + ne_fill_k)
  / peak(dtype)``. Each 8x8 output block of the PE array streams its K and then pays a
  fill / drain of ``ne_fill_k`` K-steps, so a short K runs below peak (the board's 83 % at
  K = 128/256 against 90.5 % at K = 512); the 8x16x8 granule is seed 001's.
- **CT**: ``ct_command_s + pad(elements, lanes) * ops_per_element / rate(dtype)``, lanes
  and rate the vendor's (64 lanes of 16 bits, 64 GOPS for 16-bit types, 32 for 32-bit).
- **RDMA / WDMA**: ``command_s + bytes / share``; the share of one tile is
  ``min(alone, DDR working point / active tiles)``: ``alone`` is what one tile reaches by
  itself (fitted), the working point the shared DDR's (``ddr_effective_bytes_per_s``).
- **TDMA** (GatherScatter): ``tdma_command_s + iterations * tdma_iteration_s + bytes /
  tdma_stream_bytes_per_s``: a fixed cost, one per inner iteration, and the SPM stream.
- **NCC join**: ``join_s + participants * join_participant_s``.
- **DTE** message: ``dte_send_s + hops * noc_hop_s + bytes / noc_link_bytes_per_s``; the
  first message a tile sends in a launch costs ``dte_first_message_s`` instead of
  ``dte_send_s``; ``hops`` is 0 for a message with no route (the fitted rows).
- **Launch**: ``launch_s`` per kernel launch (event minus kernel body), reported apart.

Cycles round up as the plan's cost model does (``cost.to_cycles``), on the same granule
helper (``cost.pad_up``).

Readings chosen where the sources are vague:

- One issue cost per command, whatever the engine: the board's consecutive ``TsmExecute``
  gaps (prebuilt packets) are the fitted figure; the Kcore trace's 2.5-3 k cycle "short-call
  envelope" includes an observer and queue waits, so it stays in the residual table as a
  row the law does not claim (its ratio shows how far the two readings are apart).
- The NE's fill term is per 8x8 output block and per command, so it grows with M x N, not
  with K. Two board rows inform it (both derived from kernel profiles); a larger held-out
  set will judge it.
- The integer vector rate is the 32-bit one (undocumented; as the preset).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.cost import pad_up, to_cycles


@dataclass(frozen=True)
class Timed:
    """A law's answer: seconds and the formula with its numbers."""

    seconds: float
    formula: str

    def cycles(self, hw: ChipConfig) -> int:
        """Whole clock cycles, rounded up (``cost.to_cycles``)."""
        return to_cycles(self.seconds, hw)


def _whole(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Tx8labError(f"engine law: {name} must be a whole number >= 0, got {value!r}")
    return value


def issue(hw: ChipConfig) -> Timed:
    """Kernel-core time to issue one command."""
    s = hw.tile.kcore_issue_s
    return Timed(s, f"kcore issue {s * 1e9:.0f} ns")


def ne(m: int, k: int, n: int, dtype: str, hw: ChipConfig, *, batch: int = 1) -> Timed:
    """One NE command: a ``batch`` of (M x K) @ (K x N) products.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> t = ne(256, 512, 512, "bf16", TX81)
        >>> 0.85 < 2 * 256 * 512 * 512 / 8e12 / t.seconds < 0.95  # near the board's 90.5 %
        True
    """
    for name, value in (("M", m), ("K", k), ("N", n), ("batch", batch)):
        _whole(value, name)
    tile = hw.tile
    gm, gk, gn = tile.ne_granule_mkn
    pm, pk, pn = pad_up(m, gm), pad_up(k, gk), pad_up(n, gn)
    rate = tile.ne_ops_per_s(dtype)
    work = 2 * batch * pm * pn * (pk + tile.ne_fill_k) / rate if m and n and k else 0.0
    s = tile.ne_command_s + work
    formula = (
        f"NE {dtype}: {tile.ne_command_s * 1e9:.0f} ns + 2 x {batch} x {pm} x {pn} x "
        f"({pk} + fill {tile.ne_fill_k:.1f}) / {rate:.3g} op/s = {s * 1e9:,.0f} ns"
    )
    return Timed(s, formula)


def ct(elements: int, ops_per_element: float, dtype: str, hw: ChipConfig) -> Timed:
    """One CT command over ``elements`` elements, ``ops_per_element`` vector ops each.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> f"{ct(2048, 1, 'f16', TX81).seconds * 1e9:.1f}"  # a 4 KiB FP16 Add (board: 78/79)
        '78.5'
    """
    _whole(elements, "elements")
    if ops_per_element < 0 or not math.isfinite(ops_per_element):
        raise Tx8labError(f"engine law: vector ops per element must be >= 0, got {ops_per_element}")
    tile = hw.tile
    lanes = tile.ct_lanes(dtype)
    padded = pad_up(elements, lanes)
    rate = tile.ct_ops_per_s(dtype)
    s = tile.ct_command_s + padded * ops_per_element / rate
    formula = (
        f"CT {dtype}: {tile.ct_command_s * 1e9:.0f} ns + pad({elements}, {lanes}) = {padded} x "
        f"{ops_per_element:g} op / {rate:.3g} op/s = {s * 1e9:,.0f} ns"
    )
    return Timed(s, formula)


def dma_share(engine: str, hw: ChipConfig, active_tiles: int = 1) -> float:
    """Bytes/s one tile's RDMA (``rdma``) or WDMA (``wdma``) gets with ``active_tiles`` busy."""
    tile = hw.tile
    if engine == "rdma":
        alone = tile.rdma_alone_bytes_per_s
    elif engine == "wdma":
        alone = tile.wdma_alone_bytes_per_s
    else:
        raise Tx8labError(f"engine law: a DDR DMA engine is 'rdma' or 'wdma', got {engine!r}")
    if active_tiles < 1:
        raise Tx8labError(f"engine law: active_tiles must be >= 1, got {active_tiles}")
    return min(alone, hw.ddr_effective_bytes_per_s / min(active_tiles, hw.tiles_per_chip))


def dma(engine: str, num_bytes: int, hw: ChipConfig, *, active_tiles: int = 1) -> Timed:
    """One RDMA (DDR -> SPM) or WDMA (SPM -> DDR) command of ``num_bytes``."""
    _whole(num_bytes, "bytes")
    share = dma_share(engine, hw, active_tiles)
    fixed = hw.tile.rdma_command_s if engine == "rdma" else hw.tile.wdma_command_s
    s = fixed + num_bytes / share
    formula = (
        f"{engine.upper()}: {fixed * 1e9:.0f} ns + {num_bytes:,} B / {share / 1e9:.3g} GB/s "
        f"({active_tiles} tiles on DDR) = {s * 1e9:,.0f} ns"
    )
    return Timed(s, formula)


def tdma(iterations: int, inner_bytes: int, hw: ChipConfig) -> Timed:
    """One TDMA GatherScatter: ``iterations`` inner transfers of ``inner_bytes`` each.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> 1900 < tdma(1024, 4, TX81).seconds * 1e9 < 2300  # board: 2,125 counts
        True
    """
    _whole(iterations, "iterations")
    _whole(inner_bytes, "inner bytes")
    tile = hw.tile
    total = iterations * inner_bytes
    s = (
        tile.tdma_command_s
        + iterations * tile.tdma_iteration_s
        + total / tile.tdma_stream_bytes_per_s
    )
    formula = (
        f"TDMA: {tile.tdma_command_s * 1e9:.0f} ns + {iterations:,} it x "
        f"{tile.tdma_iteration_s * 1e9:.2f} ns + {total:,} B / "
        f"{tile.tdma_stream_bytes_per_s / 1e9:.3g} GB/s = {s * 1e9:,.0f} ns"
    )
    return Timed(s, formula)


def join(participants: int, hw: ChipConfig) -> Timed:
    """One NCC join over ``participants`` workers / engines."""
    _whole(participants, "participants")
    tile = hw.tile
    s = tile.join_s + participants * tile.join_participant_s
    return Timed(
        s,
        f"join: {tile.join_s * 1e9:.0f} ns + {participants} x "
        f"{tile.join_participant_s * 1e9:.0f} ns = {s * 1e9:,.0f} ns",
    )


def noc_payload(num_bytes: int, hw: ChipConfig) -> Timed:
    """A payload's serialisation on one NoC link direction (the DTE law's bytes term)."""
    _whole(num_bytes, "bytes")
    s = num_bytes / hw.noc_link_bytes_per_s
    return Timed(
        s,
        f"{num_bytes:,} B / {hw.noc_link_bytes_per_s / 1e9:.3g} GB/s = {s * 1e9:,.0f} ns",
    )


def dte(num_bytes: int, hw: ChipConfig, *, first: bool = False, hops: int = 0) -> Timed:
    """One tile-to-tile DTE message; ``first``: the tile's first send of the launch.

    ``hops``: mesh router hops of the route, each adding ``noc_hop_s`` (the board's
    sends do not say how far they went, so the fitted fixed cost holds any hops of them).
    """
    _whole(hops, "hops")
    fixed = hw.dte_first_message_s if first else hw.dte_send_s
    s = fixed + hops * hw.noc_hop_s + noc_payload(num_bytes, hw).seconds
    which = "first send" if first else "send"
    hop_text = f" + {hops} hops x {hw.noc_hop_s * 1e9:,.0f} ns" if hops else ""
    return Timed(
        s,
        f"DTE {which}: {fixed * 1e9:,.0f} ns{hop_text} + {num_bytes:,} B / "
        f"{hw.noc_link_bytes_per_s / 1e9:.3g} GB/s = {s * 1e9:,.0f} ns",
    )


def barrier(tiles: int, hw: ChipConfig) -> Timed:
    """A chip-wide barrier over ``tiles`` tiles: an NCC join and two DTE messages.

    The reading of ``schedule.estimate.default_barrier_cycles`` (no board row times a
    cross-tile barrier), with the join and message laws above.
    """
    j = join(tiles, hw)
    m = dte(0, hw)
    s = j.seconds + 2 * m.seconds
    return Timed(s, f"barrier: {j.formula}; + 2 x {m.formula}; = {s * 1e9:,.0f} ns")


__all__ = [
    "Timed",
    "barrier",
    "ct",
    "dma",
    "dma_share",
    "dte",
    "issue",
    "join",
    "ne",
    "noc_payload",
    "tdma",
]
