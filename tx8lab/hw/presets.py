"""Hardware presets: every number with its source (DESIGN.md §6).

Source keys, as in ``shared/reference/hw-fa-fusion.md`` (§0 lists them in full):

- seed 001: ``shared/seeds/001_*.txt``, the TX8 hardware and backend compiler notes (its
  spec table against the A100, the tile diagram text, the NE "8x16x8" step, Cx/NCx rules).
- S1: blog "TX8 Backend" (spec table, NE 8x16x8, CGRA ``unit_elem_num=64``), same content as
  seed 001. S2: PJLAB-CHIP/vibe_compiler hardware notes quoting the vendor PDFs. S3: the same
  repository's TX81 board calibration. S6: reference rates in its compiler's unit tests.
  S7: FlagTree ``third_party/tsingmicro`` (Triton backend). S8: FlagGems ``_tsingmicro``.
- Tags: [doc] vendor material, [code] a constant in public code, [board] measured on a TX81,
  [derived] arithmetic on tagged numbers, [assumption] a modelling choice, not documented.

Readings chosen where the sources are vague:

- "8x16x8 per step" does not give the NE clock; the NE is modelled by its peak rate, and
  8x16x8 is used only as the (M, K, N) shape granule.
- The per-tile DMA peak is not published: one tile alone is given its 1/16 share of the DDR
  spec; the cost model also caps all tiles together at the DDR working point.
- SPM: DESIGN.md §6 reserves only the last 64 KiB, so ``spm_alloc_base_bytes`` is 0. The
  Triton runtime (S7) also keeps the first 64 KiB; set ``tile.spm_alloc_base_bytes=0x10000``
  to model it (usable SPM then 3,014,656 B, as S7's ``max_shared_mem``).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig, TileConfig


def _calibration() -> dict[str, Any]:
    """The engine-law constants ``tx8lab calibrate`` fitted (``tx8lab/hw/calibration.json``)."""
    path = resources.files("tx8lab.hw") / "calibration.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {k: float(v["value"]) for k, v in data["constants"].items()}
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise Tx8labError(
            f"hw presets: {path} is missing or malformed ({err}); regenerate it with "
            "`tx8lab calibrate --write`"
        ) from err


def _fitted(name: str) -> float:
    """A fitted constant; the file names the board rows and method (``tx8lab calibrate``)."""
    if name not in _FIT:
        raise Tx8labError(
            f"hw presets: calibration.json has no {name!r}; run `tx8lab calibrate --write`"
        )
    return float(_FIT[name])


_FIT = _calibration()

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

TX81_TILE = TileConfig(
    # [doc] S2; [code] S8 SPM_SIZE = 3*1024*1024; DESIGN §6 "3 MiB per tile"
    spm_bytes=3 * MiB,
    # [doc] S2 (0x2F0000.. for kcore/runtime/sync/debug); [code] S8 SYS_SPM_RESERVED_SIZE
    spm_reserved_bytes=64 * KiB,
    # DESIGN §6 reserves only the tail; S7 starts its allocator at 0x10000 (see docstring)
    spm_alloc_base_bytes=0,
    # [doc] S2 (vendor HW pp.36-37): SPM1 has 8 independent banks
    spm_banks=8,
    # [doc] S2: 2048-bit banks = 256 B
    spm_bank_width_bytes=256,
    # seed 001 ("N 的起始地址向 2048bit 对齐"); [code] S7 AllocateSharedMemoryPass 256-B GEMM
    spm_align_bytes=256,
    # seed 001 Cx/NCx: channels split into Cx*64 blocks for 16/32-bit types
    cx_channels=64,
    # seed 001 Cx/NCx: Cx*128 blocks for int8
    cx_channels_i8=128,
    # seed 001 ("PE Array ... 一次完成 8x16x8 大小的矩阵乘法"); M x K x N order an [assumption]
    ne_granule_mkn=(8, 16, 8),
    # [doc] S2: INT8 16 TOPS per tile (= 256 TOPS per chip, seed 001 table / 16)
    ne_i8_ops_per_s=16e12,
    # [doc] S2: FP16/BF16 8 TFLOPS per tile; [code] S6 f16Bf16NPULogicalOpsPerSecondPerTile
    ne_f16_flops_per_s=8e12,
    # [doc] S2; [code] S6, as fp16 (= 128 TFLOPS per chip, seed 001 table / 16)
    ne_bf16_flops_per_s=8e12,
    # [derived] seed 001 table TF32 128T per chip / 16 tiles (S1 only)
    ne_tf32_flops_per_s=8e12,
    # [derived] seed 001 table FP32 21T per chip / 16 tiles (hw-fa-fusion §1.2: ~1.3 TFLOPS)
    ne_f32_flops_per_s=21e12 / 16,
    # [derived] S2 SPM0/RAM_ACC 1024-bit interface, S1 VuV unit_elem_num=64 x 16 bit
    ct_vector_bits=1024,
    # [doc] S2 CT FP16/BF16 64 GOPS per tile (x16 = S2's "1 TOPS" per chip); [code] S6 64e9
    ct_f16_ops_per_s=64e9,
    # [doc] S2; [code] S6 64e9, as fp16
    ct_bf16_ops_per_s=64e9,
    # [doc] S2 CT FP32 32 GOPS per tile (x16 = S2's "0.5 TOPS" per chip); [code] S6 32e9
    ct_f32_ops_per_s=32e9,
    # [assumption] integer vector rate undocumented: taken as the 32-bit (fp32) rate
    ct_int_ops_per_s=32e9,
    # [assumption] per-tile RDMA peak not published: DDR spec 200 GB/s / 16 tiles
    rdma_bytes_per_s=200e9 / 16,
    # [assumption] per-tile WDMA peak not published: DDR spec 200 GB/s / 16 tiles
    wdma_bytes_per_s=200e9 / 16,
    # [assumption] vibe_compiler's conservative prior, one 256-B SPM bank at 1 GHz (S2, S3)
    tdma_bytes_per_s=256e9,
    # [board] S3: pending depth 6 for CT/NE/RDMA/WDMA
    queue_depth=6,
    # [board] S3: pending depth 4 for TDMA
    tdma_queue_depth=4,
    # [board] S3 prior, uncalibrated: ~1 us per issued command; DESIGN §6
    command_issue_s=1e-6,
    # [board] S3: 0.14 us per NCC join (plus 0.045 us per participant, not modelled)
    ncc_join_s=0.14e-6,
    # [assumption] partial sums kept in fp32 (int32 for i8), as NE accumulators usually are;
    # seed 001 names the NE's psum input but not its width
    psum_elem_bytes=4,
    # --- engine laws of the simulator (tx8lab.hw.laws), fitted by `tx8lab calibrate` on the
    # rows of tx8lab/hw/board; calibration.json names the rows and the method of each
    # [board] S3 consecutive TsmExecute gaps, fitted
    kcore_issue_s=_fitted("tile.kcore_issue_s"),
    # [board] S3 NE x6 queue probe, fitted
    ne_command_s=_fitted("tile.ne_command_s"),
    # [board] S3 NE activity of the 4096^3 GEMM and attention kernels, fitted
    ne_fill_k=_fitted("tile.ne_fill_k"),
    # [board] S3 4 KiB and 256 B FP16 CT commands, fitted
    ct_command_s=_fitted("tile.ct_command_s"),
    # [board] S3 RDMA x6 queue probe, fitted
    rdma_command_s=_fitted("tile.rdma_command_s"),
    # [board] S3 WDMA x6 queue probe, fitted
    wdma_command_s=_fitted("tile.wdma_command_s"),
    # [board] S3 8 KiB RDMA then join, fitted
    rdma_alone_bytes_per_s=_fitted("tile.rdma_alone_bytes_per_s"),
    # [board] S3 8 KiB WDMA then join, fitted
    wdma_alone_bytes_per_s=_fitted("tile.wdma_alone_bytes_per_s"),
    # [board] S3 TDMA counter study, fitted
    tdma_command_s=_fitted("tile.tdma_command_s"),
    # [board] S3 TDMA counter study, fitted
    tdma_iteration_s=_fitted("tile.tdma_iteration_s"),
    # [board] S3 TDMA counter study, fitted
    tdma_stream_bytes_per_s=_fitted("tile.tdma_stream_bytes_per_s"),
    # [board] S3 idle NCC joins of 1-3 participants, fitted
    join_s=_fitted("tile.join_s"),
    # [board] S3 idle NCC joins of 1-3 participants, fitted
    join_participant_s=_fitted("tile.join_participant_s"),
)

TX81 = ChipConfig(
    name="tx81",
    tile=TX81_TILE,
    # seed 001 ("每个芯片由 4x4 总计 16 Tile 以 mesh 拓扑结构进行互连"); [code] S8 16 SMs
    mesh_shape=(4, 4),
    # [assumption] one card; chip-to-chip links are described but not modelled by default
    num_chips=1,
    # [assumption] 1 GHz: only the NoC clock is documented; the kcore cycle is ~1 ns (S3)
    clock_hz=1e9,
    # seed 001 ("片上 DDR 大小为 64GB"), read as GiB; [doc] S1, S2 (a 128 GB SKU exists)
    ddr_bytes=64 * GiB,
    # seed 001 spec table "内存带宽 200GB/s"; [doc] S1, S2
    ddr_bytes_per_s=200e9,
    # [board] S3: ~150 GB/s nominal working point of 200 GB/s (one user-confirmed figure)
    ddr_efficiency=150e9 / 200e9,
    # [doc] S2: each of 4 directions 128 GB/s send and 128 GB/s receive
    noc_link_bytes_per_s=128e9,
    # [doc] S2: NoC clock 1 GHz
    noc_clock_hz=1e9,
    # [board] S3: first Direct-DTE send per tile, median 8-13 us; 10 us is an [assumption]
    dte_first_message_s=10e-6,
    # [board] S3: later sends ~1.44-1.49 us (2/8 KiB)
    dte_message_s=1.47e-6,
    # [assumption] 5 NoC cycles (1 GHz, S2) per router hop; the router depth is not published
    noc_hop_s=5e-9,
    # [board] S3: later Direct-DTE sends (2/8 KiB), fitted by `tx8lab calibrate`
    dte_send_s=_fitted("dte_send_s"),
    # [board] S3: event minus longest-tile kernel on tiny kernels (~0.9 ms), reported apart
    launch_s=_fitted("launch_s"),
    # [doc] S2: C2C in 4 directions
    c2c_links=4,
    # [doc] S2: 25 GB/s send and 25 GB/s receive per direction (4 x 2 x 25 GB/s = 1600 Gbps,
    # seed 001 "TsingMicro-Link 1600Gbps")
    c2c_link_bytes_per_s=25e9,
    # seed 001 spec table "PCIe 64GB/s" (Gen4 x16, ~32 GB/s each way per S2)
    pcie_bytes_per_s=64e9,
)

#: Preset name -> chip description. ``tx8lab run --hw NAME`` picks one.
PRESETS: dict[str, ChipConfig] = {"tx81": TX81}

#: The preset used when none is named.
DEFAULT_PRESET = "tx81"


def get_preset(name: str) -> ChipConfig:
    """The preset called ``name``.

    Examples:
        >>> get_preset("tx81").tile_count
        16

    Raises:
        Tx8labError: no such preset; the message lists the known ones.
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise Tx8labError(
            f"unknown hardware preset {name!r}: known presets are {', '.join(sorted(PRESETS))}"
        ) from None


def parse_override(text: str) -> tuple[str, str]:
    """Split one ``key=value`` override as given on the command line.

    Examples:
        >>> parse_override("tile.spm_bytes=2Mi")
        ('tile.spm_bytes', '2Mi')
    """
    key, eq, value = text.partition("=")
    if not eq or not key.strip() or not value.strip():
        raise Tx8labError(f"hw override {text!r} is not key=value: write e.g. tile.spm_bytes=2Mi")
    return key.strip(), value.strip()


def resolve_hw(specs: list[str] | tuple[str, ...] = ()) -> ChipConfig:
    """The chip that a list of ``--hw`` arguments describes.

    Each entry is a preset name or a ``key=value`` override. The last preset named is the
    base (``tx81`` when none is); every override applies to it, a later one for the same
    key winning.

    Examples:
        >>> resolve_hw(["tx81", "num_chips=2"]).tile_count
        32
    """
    base = get_preset(DEFAULT_PRESET)
    overrides: dict[str, str] = {}
    for spec in specs:
        if "=" in spec:
            key, value = parse_override(spec)
            overrides[key] = value
        else:
            base = get_preset(spec.strip())
    return base.with_overrides(overrides) if overrides else base


__all__ = [
    "DEFAULT_PRESET",
    "PRESETS",
    "TX81",
    "TX81_TILE",
    "get_preset",
    "parse_override",
    "resolve_hw",
]
