"""Chip and tile configuration: the frozen dataclasses every pass and the cost model receive.

This module holds the *shape* of a hardware description and its validation; the numbers,
each with its source, live in ``tx8lab.hw.presets`` (DESIGN.md §6). Both classes are frozen
and hashable, so ``functools.lru_cache`` keyed on ``(pass, module, hw)`` works as-is.

Readings chosen where the sources are vague:

- Rates are per tile and per element type, in operations (a multiply-add counts as two) per
  second. Element types use tx8lab's names (``f32 f16 bf16 tf32 i8 i32 i64 i1``).
- ``tile_count`` is the number of tiles in the whole modelled system, i.e. tiles per chip
  times ``num_chips``; ``tiles_per_chip`` is the mesh alone.
- A ``--hw key=value`` override names a field by its dotted path (``tile.spm_bytes``,
  ``ddr_bytes_per_s``). String values take an optional size suffix: ``K M G T`` are
  decimal (``150G`` = 150e9), ``Ki Mi Gi Ti`` binary (``3Mi`` = 3 * 2**20), each optionally
  followed by ``B`` or ``B/s``; a tuple is written ``4x4`` or ``4,4``.

Imports nothing from tx8lab except the leaf module ``tx8lab.errors``: ``core`` imports this
module, never the reverse (STYLE.md, "Dependencies only point one way").
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
import operator
import re
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Self

from tx8lab.errors import Tx8labError

#: Bits one element occupies in SPM (``i1`` is stored one per byte). Kept here rather than
#: imported from ``tx8lab.core.dtypes`` because ``hw.config`` must not import core.
_STORAGE_BITS: dict[str, int] = {
    "f32": 32,
    "f16": 16,
    "bf16": 16,
    "tf32": 32,
    "i8": 8,
    "i32": 32,
    "i64": 64,
    "i1": 8,
}

#: Fields that may be zero; every other numeric field must be strictly positive.
_MAY_BE_ZERO = frozenset({"spm_reserved_bytes", "spm_alloc_base_bytes"})

#: Fields that are a fraction in (0, 1].
_FRACTIONS = frozenset({"ddr_efficiency"})

#: Fixed lengths of tuple fields.
_TUPLE_LENGTHS = {"mesh_shape": 2, "ne_granule_mkn": 3}


class _ConfigMixin:
    """Validation, ``replace`` and dict conversion shared by TileConfig and ChipConfig."""

    #: Prefix of this class's fields in error messages and override keys ("tile." or "").
    _prefix: typing.ClassVar[str] = ""

    def __post_init__(self) -> None:
        hints = _type_hints(type(self))
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            object.__setattr__(self, f.name, self._check(f.name, hints[f.name], value))
        self._check_relations()

    def _check_relations(self) -> None:
        """Cross-field checks; overridden where a class has some."""

    def _check(self, name: str, kind: Any, value: Any) -> Any:
        qual = self._prefix + name
        if kind is int:
            return _check_number(qual, value, integral=True, may_be_zero=name in _MAY_BE_ZERO)
        if kind is float:
            number = _check_number(qual, value, integral=False, may_be_zero=False)
            if name in _FRACTIONS and number > 1.0:
                raise Tx8labError(f"hw field {qual!r} is a fraction in (0, 1], got {value!r}")
            return number
        if kind is str:
            if not isinstance(value, str) or not value:
                raise Tx8labError(f"hw field {qual!r} must be a non-empty string, got {value!r}")
            return value
        if typing.get_origin(kind) is tuple:
            return _check_tuple(qual, value, _TUPLE_LENGTHS[name])
        if kind is TileConfig:
            if not isinstance(value, TileConfig):
                raise Tx8labError(f"hw field {qual!r} must be a TileConfig, got {value!r}")
            return value
        raise AssertionError(f"no validation rule for {qual} of type {kind!r}")  # pragma: no cover

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied and validated.

        Raises:
            Tx8labError: a field name is unknown or a value is out of range; the message
                names the field.
        """
        names = _field_names(type(self))
        for key in changes:
            if key not in names:
                raise Tx8labError(_unknown_field(self._prefix + key, self._prefix, names))
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-able Python values (tuples become lists, tile a dict)."""
        out: dict[str, Any] = {}
        for name in _field_names(type(self)):
            value = getattr(self, name)
            if isinstance(value, _ConfigMixin):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = list(value)
            out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Inverse of ``to_dict``: every field must be present, unknown keys are errors."""
        names = _field_names(cls)
        unknown = [key for key in data if key not in names]
        if unknown:
            raise Tx8labError(_unknown_field(cls._prefix + unknown[0], cls._prefix, names))
        missing = [name for name in names if name not in data and _is_required(cls, name)]
        if missing:
            raise Tx8labError(
                "hw description lacks " + ", ".join(repr(cls._prefix + m) for m in missing)
            )
        values = dict(data)
        hints = _type_hints(cls)
        for name, value in values.items():
            if hints[name] is TileConfig and isinstance(value, Mapping):
                values[name] = TileConfig.from_dict(value)
            elif typing.get_origin(hints[name]) is tuple and isinstance(value, list):
                values[name] = tuple(value)
        return cls(**values)


@dataclass(frozen=True, kw_only=True)
class TileConfig(_ConfigMixin):
    """One TX8 tile: SPM, the NE matrix engine, the CT/CGRA vector unit and the LSU DMAs.

    Every rate is per tile. Values for the TX81 with their sources: ``presets.TX81_TILE``.
    """

    _prefix: typing.ClassVar[str] = "tile."

    # --- SPM (scratch-pad memory)
    spm_bytes: int
    """SPM capacity per tile, bytes."""
    spm_reserved_bytes: int
    """Bytes at the top of SPM reserved for the kernel core/runtime; never allocated."""
    spm_alloc_base_bytes: int
    """First SPM byte the tensor allocator may use (bytes below it belong to the runtime)."""
    spm_banks: int
    """Independent SPM banks, interleaved on the low address bits."""
    spm_bank_width_bytes: int
    """Width of one SPM bank access, bytes (also the batch/GEMM alignment)."""
    spm_align_bytes: int
    """Alignment of a batch start and of GEMM operands in SPM, bytes."""
    cx_channels: int
    """Channel block of the Cx/NCx layouts for 16/32-bit types, elements."""
    cx_channels_i8: int
    """Channel block of the Cx/NCx layouts for 8-bit types, elements."""

    # --- NE (neural engine: matrix multiply / convolution)
    ne_granule_mkn: tuple[int, int, int]
    """Shape granule (M, K, N) of one PE-array step; dimensions round up to it."""
    ne_i8_ops_per_s: float
    """NE peak for int8 operands, ops/s (a MAC is 2 ops)."""
    ne_f16_flops_per_s: float
    """NE peak for fp16 operands, FLOP/s."""
    ne_bf16_flops_per_s: float
    """NE peak for bf16 operands, FLOP/s."""
    ne_tf32_flops_per_s: float
    """NE peak for tf32 operands, FLOP/s."""
    ne_f32_flops_per_s: float
    """NE peak for fp32 operands, FLOP/s."""

    # --- CT (CGRA tensor / vector unit)
    ct_vector_bits: int
    """Width of the vector datapath, bits per cycle (64 lanes of 16 bits)."""
    ct_f16_ops_per_s: float
    """Vector peak for fp16 elementwise work, ops/s."""
    ct_bf16_ops_per_s: float
    """Vector peak for bf16 elementwise work, ops/s."""
    ct_f32_ops_per_s: float
    """Vector peak for fp32 (and tf32) elementwise work, ops/s."""
    ct_int_ops_per_s: float
    """Vector peak for integer elementwise work, ops/s."""

    # --- LSU DMA engines
    rdma_bytes_per_s: float
    """RDMA (DDR -> SPM) peak of one tile when it alone uses DDR, bytes/s."""
    wdma_bytes_per_s: float
    """WDMA (SPM -> DDR) peak of one tile when it alone uses DDR, bytes/s."""
    tdma_bytes_per_s: float
    """TDMA (SPM <-> SPM gather/scatter/reshape within the tile), bytes/s."""

    # --- command issue (kernel core -> NCC -> engine queues)
    queue_depth: int
    """Pending commands per NE/CT/RDMA/WDMA queue."""
    tdma_queue_depth: int
    """Pending commands in the TDMA queue."""
    command_issue_s: float
    """Kernel-core time to build and issue one engine command, seconds."""
    ncc_join_s: float
    """NCC cost of one join (wait for engines), seconds."""

    # --- NE accumulation
    psum_elem_bytes: int
    """Bytes per element of an NE/CT partial-sum (psum) buffer (fp32 / int32 accumulators)."""
    # --- engine laws of the simulator (``tx8lab.hw.laws``; fitted by ``tx8lab calibrate``)
    kcore_issue_s: float
    """Kernel-core time to issue one command (packet to an engine queue), seconds."""
    ne_command_s: float
    """Fixed time of one NE command, seconds."""
    ne_fill_k: float
    """NE fill / drain per 8x8 output block, in K-steps (elements of K)."""
    ct_command_s: float
    """Fixed time of one CT command, seconds."""
    rdma_command_s: float
    """Fixed time of one RDMA command, seconds."""
    wdma_command_s: float
    """Fixed time of one WDMA command, seconds."""
    rdma_alone_bytes_per_s: float
    """RDMA bandwidth of one tile using DDR alone, bytes/s."""
    wdma_alone_bytes_per_s: float
    """WDMA bandwidth of one tile using DDR alone, bytes/s."""
    tdma_command_s: float
    """Fixed time of one TDMA GatherScatter command, seconds."""
    tdma_iteration_s: float
    """TDMA time per inner iteration, seconds."""
    tdma_stream_bytes_per_s: float
    """TDMA SPM-to-SPM stream bandwidth, bytes/s."""
    join_s: float
    """Fixed time of one NCC join, seconds."""
    join_participant_s: float
    """NCC join time per participant, seconds."""

    def _check_relations(self) -> None:
        if self.spm_alloc_base_bytes + self.spm_reserved_bytes >= self.spm_bytes:
            raise Tx8labError(
                f"hw field 'tile.spm_bytes' ({self.spm_bytes}) leaves no room once "
                f"'tile.spm_alloc_base_bytes' ({self.spm_alloc_base_bytes}) and "
                f"'tile.spm_reserved_bytes' ({self.spm_reserved_bytes}) are set aside"
            )

    @property
    def spm_usable_bytes(self) -> int:
        """SPM bytes the allocator may hand out: capacity minus both reserved regions."""
        return self.spm_bytes - self.spm_reserved_bytes - self.spm_alloc_base_bytes

    @property
    def spm_limit_bytes(self) -> int:
        """End (exclusive) of the allocatable SPM range ``[spm_alloc_base_bytes, limit)``."""
        return self.spm_bytes - self.spm_reserved_bytes

    def ne_ops_per_s(self, dtype: str) -> float:
        """NE peak rate for operands of ``dtype``.

        Raises:
            Tx8labError: the NE has no mode for ``dtype`` (i32, i64, i1).
        """
        rates = {
            "i8": self.ne_i8_ops_per_s,
            "f16": self.ne_f16_flops_per_s,
            "bf16": self.ne_bf16_flops_per_s,
            "tf32": self.ne_tf32_flops_per_s,
            "f32": self.ne_f32_flops_per_s,
        }
        if dtype not in rates:
            raise Tx8labError(
                f"the NE has no {dtype!r} mode: use one of {', '.join(rates)} "
                "(compute such ops on the CT vector unit)"
            )
        return rates[dtype]

    def ct_ops_per_s(self, dtype: str) -> float:
        """CT vector peak rate for elementwise work on ``dtype``."""
        _check_dtype(dtype)
        if dtype == "f16":
            return self.ct_f16_ops_per_s
        if dtype == "bf16":
            return self.ct_bf16_ops_per_s
        if dtype in ("f32", "tf32"):
            return self.ct_f32_ops_per_s
        return self.ct_int_ops_per_s

    def ct_lanes(self, dtype: str) -> int:
        """Elements of ``dtype`` the vector datapath takes per cycle (64 for bf16)."""
        return self.ct_vector_bits // _STORAGE_BITS[_check_dtype(dtype)]


@dataclass(frozen=True, kw_only=True)
class ChipConfig(_ConfigMixin):
    """A TX8 chip (or several): the tile mesh, DDR, NoC, chip-to-chip links and PCIe.

    Values for the TX81 with their sources: ``presets.TX81``. Change a copy with
    ``replace`` (top-level fields) or ``with_overrides`` (dotted keys, strings allowed).
    """

    name: str
    """Preset name, reported with the values in ``tx8lab run --json``."""
    tile: TileConfig
    """Every tile of the mesh is identical."""
    mesh_shape: tuple[int, int]
    """Tiles per chip as (rows, columns) of the 2-D mesh."""
    num_chips: int = 1
    """Chips in the modelled system (cards linked chip-to-chip)."""
    clock_hz: float
    """Clock that cycle counts refer to, Hz."""

    # --- DDR
    ddr_bytes: int
    """DDR capacity per chip, bytes."""
    ddr_bytes_per_s: float
    """DDR bandwidth per chip (spec), shared by all its tiles, bytes/s."""
    ddr_efficiency: float
    """Fraction of ``ddr_bytes_per_s`` reached in practice (the working point)."""

    # --- NoC between tiles
    noc_link_bytes_per_s: float
    """Bandwidth of one mesh link per direction, bytes/s."""
    noc_clock_hz: float
    """NoC clock, Hz."""
    dte_first_message_s: float
    """Latency of the first tile-to-tile DTE message a tile sends, seconds."""
    dte_message_s: float
    """Latency of a later tile-to-tile DTE message, seconds."""
    noc_hop_s: float
    """Added latency per mesh router hop of a tile-to-tile transfer, seconds."""
    dte_send_s: float
    """Fixed time of a later DTE send (the simulator's message law), seconds."""
    launch_s: float
    """Kernel launch and completion-event overhead around the kernel body, seconds."""

    # --- off-chip links
    c2c_links: int
    """Chip-to-chip link directions per chip."""
    c2c_link_bytes_per_s: float
    """Bandwidth of one chip-to-chip link per direction, bytes/s."""
    pcie_bytes_per_s: float
    """Host PCIe bandwidth, both directions together, bytes/s."""

    @property
    def mesh_rows(self) -> int:
        """Rows of the tile mesh."""
        return self.mesh_shape[0]

    @property
    def mesh_cols(self) -> int:
        """Columns of the tile mesh."""
        return self.mesh_shape[1]

    @property
    def tiles_per_chip(self) -> int:
        """Tiles on one chip (16 on the TX81)."""
        return self.mesh_shape[0] * self.mesh_shape[1]

    @property
    def tile_count(self) -> int:
        """Tiles in the whole modelled system: ``tiles_per_chip * num_chips``."""
        return self.tiles_per_chip * self.num_chips

    @property
    def ddr_effective_bytes_per_s(self) -> float:
        """DDR bandwidth at the working point, shared by the tiles of one chip, bytes/s."""
        return self.ddr_bytes_per_s * self.ddr_efficiency

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied and validated.

        ``tile`` may also be given as a mapping of tile fields to change.

        Raises:
            Tx8labError: a field name is unknown or a value is out of range; the message
                names the field.
        """
        chip_names = _field_names(ChipConfig)
        for key in changes:
            if key not in chip_names:
                raise Tx8labError(_unknown_field(key, "", chip_names, _field_names(TileConfig)))
        tile = changes.get("tile")
        if isinstance(tile, Mapping):
            changes["tile"] = self.tile.replace(**tile)
        return super().replace(**changes)

    def with_overrides(self, overrides: Mapping[str, Any]) -> ChipConfig:
        """A copy with dotted-key overrides applied, as ``tx8lab run --hw key=value`` gives.

        Keys are field names (``ddr_bytes_per_s``) or ``tile.<field>``. A string value is
        parsed for the field's type: ``"3Mi"``, ``"0x10000"``, ``"150GB/s"``, ``"4x4"``.

        Examples:
            >>> from tx8lab.hw.presets import TX81
            >>> TX81.with_overrides({"tile.spm_bytes": "2MiB"}).tile.spm_bytes
            2097152
            >>> TX81.with_overrides({"mesh_shape": "2x4"}).tile_count
            8

        Raises:
            Tx8labError: a key names no field, or a value does not parse or is out of range.
        """
        chip_changes: dict[str, Any] = {}
        tile_changes: dict[str, Any] = {}
        chip_names, tile_names = _field_names(ChipConfig), _field_names(TileConfig)
        for key, value in overrides.items():
            head, dot, rest = key.partition(".")
            if dot and head == "tile":
                if rest not in tile_names:
                    raise Tx8labError(_unknown_field(key, "tile.", tile_names))
                tile_changes[rest] = _parse_for(TileConfig, rest, key, value)
            elif dot or key not in chip_names or key == "tile":
                raise Tx8labError(_unknown_field(key, "", chip_names, tile_names))
            else:
                chip_changes[key] = _parse_for(ChipConfig, key, key, value)
        tile = self.tile.replace(**tile_changes) if tile_changes else self.tile
        return self.replace(tile=tile, **chip_changes)

    def iter_fields(self) -> Iterator[tuple[str, Any]]:
        """Every ``(dotted key, value)`` pair, tile fields as ``tile.<name>``."""
        for name in _field_names(ChipConfig):
            if name == "tile":
                for tile_name in _field_names(TileConfig):
                    yield "tile." + tile_name, getattr(self.tile, tile_name)
            else:
                yield name, getattr(self, name)


# ---------------------------------------------------------------- helpers


_HINTS: dict[type, dict[str, Any]] = {}
_NAMES: dict[type, tuple[str, ...]] = {}


def _type_hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _field_names(cls: type) -> tuple[str, ...]:
    if cls not in _NAMES:
        _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return _NAMES[cls]


def _is_required(cls: type, name: str) -> bool:
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def element_bytes(dtype: str) -> int:
    """Bytes one element of ``dtype`` occupies in SPM (an error naming an unknown type)."""
    return _STORAGE_BITS[_check_dtype(dtype)] // 8


def _check_dtype(dtype: str) -> str:
    if dtype not in _STORAGE_BITS:
        raise Tx8labError(f"unknown element type {dtype!r}: use one of {', '.join(_STORAGE_BITS)}")
    return dtype


def _unknown_field(key: str, prefix: str, *name_sets: tuple[str, ...]) -> str:
    known = [prefix + n for n in name_sets[0]]
    if len(name_sets) > 1:
        known = [n for n in name_sets[0] if n != "tile"] + ["tile." + n for n in name_sets[1]]
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown hw field {key!r}{hint}; known fields: {', '.join(known)}"


def _check_number(qual: str, value: Any, *, integral: bool, may_be_zero: bool) -> Any:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise Tx8labError(f"hw field {qual!r} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise Tx8labError(f"hw field {qual!r} must be finite, got {value!r}")
    if integral:
        if isinstance(value, numbers.Integral):
            number: int | float = operator.index(value)
        elif float(value).is_integer():
            number = int(float(value))
        else:
            raise Tx8labError(f"hw field {qual!r} must be a whole number, got {value!r}")
    else:
        number = float(value)
    if number < 0 or (number == 0 and not may_be_zero):
        bound = "non-negative" if may_be_zero else "positive"
        raise Tx8labError(f"hw field {qual!r} must be {bound}, got {value!r}")
    return number


def _check_tuple(qual: str, value: Any, length: int) -> tuple[int, ...]:
    if not isinstance(value, tuple | list) or len(value) != length:
        raise Tx8labError(f"hw field {qual!r} must be a tuple of {length} ints, got {value!r}")
    return tuple(
        _check_number(f"{qual}[{i}]", item, integral=True, may_be_zero=False)
        for i, item in enumerate(value)
    )


_SUFFIX = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
_NUMBER = re.compile(
    r"(?P<num>[+-]?(0[xX][0-9a-fA-F_]+"
    r"|[0-9][0-9_]*(\.[0-9_]*)?([eE][+-]?[0-9]+)?"
    r"|\.[0-9]+([eE][+-]?[0-9]+)?))"
    r"\s*(?P<suffix>[kKMGT]i?)?\s*(?P<unit>B(/s)?)?"
)


def parse_number(text: str) -> int | float:
    """Parse an override value: decimal/hex number with an optional size suffix.

    Examples:
        >>> parse_number("3Mi"), parse_number("150GB/s"), parse_number("0x10000")
        (3145728, 150000000000, 65536)
        >>> parse_number("1e-6")
        1e-06

    Raises:
        Tx8labError: the text is not such a number.
    """
    match = _NUMBER.fullmatch(text.strip())
    if match is None:
        raise Tx8labError(
            f"cannot read {text!r} as a number: write e.g. 3145728, 3Mi, 0x10000, 150G or 1e-6"
        )
    num = match["num"].replace("_", "")
    scale = _SUFFIX[match["suffix"] or ""]
    if num.lstrip("+-").lower().startswith("0x"):
        return int(num, 16) * scale
    if re.fullmatch(r"[+-]?[0-9]+", num):
        return int(num) * scale
    value = float(num) * scale
    return int(value) if scale != 1 and value.is_integer() else value


def _parse_for(cls: type, name: str, key: str, value: Any) -> Any:
    """Convert a string override to the type of field ``name`` of ``cls``."""
    if not isinstance(value, str):
        return value
    kind = _type_hints(cls)[name]
    try:
        if kind is str:
            return value
        if typing.get_origin(kind) is tuple:
            parts = re.split(r"\s*[x,]\s*", value.strip().strip("()[]"))
            return tuple(parse_number(part) for part in parts)
        return parse_number(value)
    except Tx8labError as exc:
        raise Tx8labError(f"hw override {key}={value!r}: {exc}") from None
