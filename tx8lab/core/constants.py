"""The const manager: ``ParamInfo``, ``ConstContainer`` and the report's ``constants`` summary.

Spec: seed 001 ("Const Management": ``struct ParamInfo`` with ``data_ptr``, ``chip_id`` and
``label``; ``class ConstContainer`` with ``_data`` (id -> ParamInfos), ``oidToSize`` (id ->
chip -> bytes) and ``oidToNid`` (old id -> new id); MoveConstantPass's
``updateConstContainer``, which puts every constant larger than
``thresholdSize = 4 * 1024 * tile_num`` (DDR_BANK_SIZE) before the smaller ones).

The seed's container is a global object the passes fill. The IR here is immutable and
every ``tx8be.LoadConst`` carries its data and its ``const_id``, so the container is a
*view* of a module: ``move-constant`` builds one while it numbers the constants (its
``PassResult.artifacts["constants"]``) and :meth:`ConstContainer.from_module` rebuilds the
same table from any later module.

Readings chosen where the seed is vague:

- ``ParamInfo.data`` is the data as the IR holds it: a numpy array, or a ``RandomInit``
  generator with the shape and dtype beside it. Sizes come from shape and dtype, so the
  container never materialises a zoo weight (LLaMA-7B's embedding is 131 M values);
  :meth:`ParamInfo.materialize` does it on request.
- ``chip_id`` -1 means "every chip holds the same data", as in the seed. No pass splits
  constants across chips yet, so each constant is one ``ParamInfo`` for chip -1; the
  container keeps the seed's list per id so a chip-sharding pass can add more.
  ``label`` is 0 for data shared by all chips and 1 for data assigned to listed chips
  (the seed: "whether the data is assigned to a certain chip_id").
- Bytes are the compact DDR image: elements times bytes per element, ``i1`` one byte
  each (as ``dtypes.to_bits_image`` stores it). A constant on several chips counts its
  largest per-chip size against the threshold. ``layout_bytes`` is the footprint in the
  constant's ``dev_info.mem_layout`` (Cx/NCx pad the channels), None where that layout is
  not defined for the element type.
- "Larger than the threshold" is strict (``bytes > threshold``). The threshold uses the
  tiles of one chip (``hw.tiles_per_chip``: DDR and its banks are per chip), 64 KiB on the
  TX81; ``move-constant`` records the value it used in the module attribute
  ``tx8.const_threshold_bytes`` so that later readers (this module, the report) agree.
- Within the large and the small constants the registration order (the order the pass
  meets the constants, top-down) is kept: the seed only moves the large ones first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tx8lab.core.attrs import DevInfo, LayoutMode, RandomInit
from tx8lab.core.dtypes import bits_of
from tx8lab.core.ir import Module, Op
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

#: Chip id meaning "every chip has the same data" (seed ``ParamInfo.chip_id``).
ALL_CHIPS = -1

#: DDR bank bytes per tile; the threshold is this times the tile count (seed DDR_BANK_SIZE).
DDR_BANK_BYTES_PER_TILE = 4 * 1024

#: Module attribute holding the threshold ``move-constant`` used, in bytes.
THRESHOLD_ATTR = "tx8.const_threshold_bytes"

LOAD_CONST = "tx8be.LoadConst"


def default_threshold_bytes(hw: ChipConfig) -> int:
    """``4 KiB x tiles per chip``: constants larger than this get the first ids.

    Examples:
        >>> from tx8lab.hw import TX81
        >>> default_threshold_bytes(TX81)
        65536
    """
    return DDR_BANK_BYTES_PER_TILE * hw.tiles_per_chip


def tensor_bytes(shape: Sequence[int], dtype: str) -> int:
    """Bytes of the compact image of a ``shape`` tensor of ``dtype`` (``i1``: 1 byte each).

    Examples:
        >>> tensor_bytes((32000, 4096), "f16")
        262144000
        >>> tensor_bytes((3,), "i1")
        3
    """
    count = 1
    for d in shape:
        count *= int(d)
    return count * max(bits_of(dtype), 8) // 8


@dataclass(frozen=True, eq=False)
class ParamInfo:
    """One constant's data on some chips (seed ``struct ParamInfo``)."""

    data: npt.NDArray[Any] | RandomInit
    """The value: numpy data, or a ``RandomInit`` generator (materialised on request)."""
    shape: tuple[int, ...]
    """Shape of the data."""
    dtype: str
    """Element type of the data."""
    chip_ids: frozenset[int] = frozenset({ALL_CHIPS})
    """Chips holding this data; ``{-1}``: every chip, the same data."""
    label: int = 0
    """0: the same data on every chip; 1: data assigned to the chips in ``chip_ids``."""

    @property
    def num_bytes(self) -> int:
        """Bytes of the compact image (computed from shape and dtype, never materialised)."""
        return tensor_bytes(self.shape, self.dtype)

    @property
    def is_random(self) -> bool:
        """True when the data is a ``RandomInit`` generator."""
        return isinstance(self.data, RandomInit)

    def materialize(self) -> npt.NDArray[Any]:
        """The values as a numpy array (draws a ``RandomInit``)."""
        if isinstance(self.data, RandomInit):
            return self.data.materialize(self.shape, self.dtype)
        return np.asarray(self.data)

    def same_data(self, other: ParamInfo) -> bool:
        """Whether ``other`` holds the same values (identity or equality, no drawing)."""
        if self.shape != other.shape or self.dtype != other.dtype:
            return False
        if self.data is other.data:
            return True
        if isinstance(self.data, RandomInit) or isinstance(other.data, RandomInit):
            return self.data == other.data
        return bool(np.array_equal(self.data, other.data))

    @classmethod
    def from_op(cls, op: Op) -> ParamInfo:
        """The data of a ``tx8be.Constant`` or ``tx8be.LoadConst`` (for all chips)."""
        value = op.attrs.get("value")
        if not isinstance(value, np.ndarray | RandomInit):
            raise Tx8labError(
                f"{op.label}: attribute 'value' must be numpy data or a RandomInit, got "
                f"{type(value).__name__}; build constants with Builder.constant/weight"
            )
        ttype = op.results[0].type
        return cls(value, ttype.shape, ttype.dtype)


@dataclass(frozen=True, eq=False)
class ConstEntry:
    """One row of the container: a constant id, its data per chip and how it is loaded."""

    const_id: int
    """The id (index in the table), as the LoadConst ops carry it in ``const_id``."""
    params: tuple[ParamInfo, ...]
    """The data per chip set (seed ``_data[id]``)."""
    needs_load: bool = True
    """False when no LoadConst of it is loaded (all carry ``bypasscodegen``)."""
    layouts: tuple[LayoutMode, ...] = ()
    """Distinct ``dev_info.mem_layout`` of its LoadConsts, in order (one after const-norm)."""
    layout_str: str | None = None
    """The middle-end ``layout_str`` the constant carries, if any."""
    op_ids: tuple[int, ...] = ()
    """The ops carrying this id (one LoadConst per use after move-constant)."""

    @property
    def sizes(self) -> dict[int, int]:
        """Chip -> bytes (seed ``oidToSize[id]``)."""
        return {chip: p.num_bytes for p in self.params for chip in sorted(p.chip_ids)}

    @property
    def num_bytes(self) -> int:
        """The largest per-chip size: what the threshold is compared with."""
        return max(p.num_bytes for p in self.params)

    @property
    def chip_ids(self) -> tuple[int, ...]:
        """Every chip that holds some of its data, sorted (-1: all)."""
        return tuple(sorted({c for p in self.params for c in p.chip_ids}))

    @property
    def layout_bytes(self) -> int | None:
        """Bytes in its (first) memory layout, None if that layout is undefined for it."""
        from tx8lab.core.layouts import footprint_bits

        param = self.params[0]
        if not self.layouts:
            return self.num_bytes
        try:
            bits = footprint_bits(param.shape, param.dtype, self.layouts[0])
        except Tx8labError:
            return None
        return -(-bits // 8)


@dataclass
class ConstContainer:
    """The table of constants of a module (seed ``class ConstContainer``).

    Ids are dense from 0. :meth:`add` registers a constant (the next id);
    :meth:`renumbered` is the seed's ``updateConstContainer``; :attr:`oid_to_nid` records
    the renumbering (seed ``oidToNid``).
    """

    entries: dict[int, ConstEntry] = field(default_factory=dict)
    """Id -> entry, in id order."""
    threshold_bytes: int | None = None
    """Constants larger than this come first (None: not known, e.g. before numbering)."""
    oid_to_nid: dict[int, int] = field(default_factory=dict)
    """Id before -> id after the last :meth:`renumbered` (empty before it)."""

    # ------------------------------------------------------------------ building
    def add(
        self,
        params: ParamInfo | Sequence[ParamInfo],
        *,
        needs_load: bool = True,
        layouts: Sequence[LayoutMode] = (),
        layout_str: str | None = None,
        op_ids: Sequence[int] = (),
    ) -> int:
        """Register a constant under the next free id and return that id."""
        infos = (params,) if isinstance(params, ParamInfo) else tuple(params)
        if not infos:
            raise Tx8labError("ConstContainer.add: a constant needs at least one ParamInfo")
        const_id = len(self.entries)
        self.entries[const_id] = ConstEntry(
            const_id, infos, needs_load, tuple(layouts), layout_str, tuple(op_ids)
        )
        return const_id

    def renumbered(self, threshold_bytes: int) -> ConstContainer:
        """Seed ``updateConstContainer``: constants larger than the threshold first.

        Stable: the large ones keep their relative order, then the small ones do.
        """
        big = [i for i, e in self.entries.items() if e.num_bytes > threshold_bytes]
        small = [i for i, e in self.entries.items() if e.num_bytes <= threshold_bytes]
        mapping = {old: new for new, old in enumerate([*big, *small])}
        entries = {}
        for old, new in sorted(mapping.items(), key=lambda item: item[1]):
            e = self.entries[old]
            entries[new] = ConstEntry(
                new, e.params, e.needs_load, e.layouts, e.layout_str, e.op_ids
            )
        return ConstContainer(entries, threshold_bytes, mapping)

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[ConstEntry]:
        return iter(self.entries.values())

    def __getitem__(self, const_id: int) -> ConstEntry:
        entry = self.entries.get(const_id)
        if entry is None:
            raise Tx8labError(f"const id {const_id} is not in the container (0..{len(self) - 1})")
        return entry

    @property
    def total_bytes(self) -> int:
        """Sum of every constant's size."""
        return sum(e.num_bytes for e in self)

    def is_large(self, entry: ConstEntry) -> bool:
        """Whether ``entry`` is above the threshold (False when the threshold is unknown)."""
        return self.threshold_bytes is not None and entry.num_bytes > self.threshold_bytes

    def to_dataframe(self) -> Any:
        """One row per constant, in id order (a ``pandas.DataFrame``).

        Columns: ``const_id``, ``label``, ``shape``, ``dtype``, ``elements``, ``bytes``,
        ``above_threshold`` (None when the threshold is unknown), ``layout`` (the
        ``mem_layout`` names joined by ``/`` when LoadConsts disagree), ``layout_bytes``,
        ``chips``, ``needs_load``, ``load_ops`` (LoadConsts carrying the id), ``op_ids``,
        ``data`` (``random`` or ``array``).
        """
        import pandas as pd

        rows = []
        for e in self:
            p = e.params[0]
            rows.append(
                {
                    "const_id": e.const_id,
                    "label": max(q.label for q in e.params),
                    "shape": p.shape,
                    "dtype": p.dtype,
                    "elements": int(np.prod(p.shape, dtype=np.int64)),
                    "bytes": e.num_bytes,
                    "above_threshold": (None if self.threshold_bytes is None else self.is_large(e)),
                    "layout": "/".join(m.value for m in e.layouts) or None,
                    "layout_bytes": e.layout_bytes,
                    "chips": e.chip_ids,
                    "needs_load": e.needs_load,
                    "load_ops": len(e.op_ids),
                    "op_ids": e.op_ids,
                    "data": "random" if p.is_random else "array",
                }
            )
        columns = [
            "const_id",
            "label",
            "shape",
            "dtype",
            "elements",
            "bytes",
            "above_threshold",
            "layout",
            "layout_bytes",
            "chips",
            "needs_load",
            "load_ops",
            "op_ids",
            "data",
        ]
        return pd.DataFrame(rows, columns=columns)

    @classmethod
    def from_module(cls, module: Module) -> ConstContainer:
        """The container of a module after ``move-constant``, from its LoadConst ops.

        LoadConsts sharing a ``const_id`` must carry the same data (else an error names
        both). LoadConsts with ``const_id`` -1 (not numbered) are left out. The threshold
        is the module's ``tx8.const_threshold_bytes`` attribute when set.
        """
        by_id: dict[int, list[Op]] = {}
        for op in module.walk():
            if op.kind == LOAD_CONST:
                const_id = op.attrs.get("const_id", -1)
                if isinstance(const_id, int) and const_id >= 0:
                    by_id.setdefault(const_id, []).append(op)
        threshold = module.attrs.get(THRESHOLD_ATTR)
        container = cls(threshold_bytes=threshold if isinstance(threshold, int) else None)
        for const_id in sorted(by_id):
            ops = by_id[const_id]
            info = ParamInfo.from_op(ops[0])
            for other in ops[1:]:
                if not info.same_data(ParamInfo.from_op(other)):
                    raise Tx8labError(
                        f"const id {const_id} is carried by {ops[0].label} and {other.label} "
                        "with different data; run move-constant to renumber the constants"
                    )
            layouts: list[LayoutMode] = []
            for op in ops:
                dev = op.attrs.get("dev_info")
                if isinstance(dev, DevInfo) and dev.mem_layout not in layouts:
                    layouts.append(dev.mem_layout)
            layout_str = ops[0].attrs.get("layout_str")
            container.entries[const_id] = ConstEntry(
                const_id,
                (info,),
                needs_load=any(not op.attrs.get("bypasscodegen", False) for op in ops),
                layouts=tuple(layouts),
                layout_str=layout_str if isinstance(layout_str, str) else None,
                op_ids=tuple(op.id for op in ops),
            )
        return container


def constants_summary(module: Module, threshold_bytes: int | None = None) -> dict[str, Any]:
    """The report's ``constants`` section: counts and bytes of the module's constants.

    ``threshold_bytes`` defaults to the module's ``tx8.const_threshold_bytes`` (set by
    ``move-constant``); the ``*_above_threshold`` keys are None when neither is known.
    Keys: ``count`` (const ids), ``load_ops`` (numbered LoadConst ops), ``shared`` (ids
    with several LoadConsts), ``total_bytes``, ``threshold_bytes``, ``above_threshold``,
    ``bytes_above_threshold``, ``bypassed`` (ids no LoadConst loads), ``bypassed_bytes``,
    ``bypassed_load_ops``, ``layouts`` (id count per memory layout), ``layout_bytes`` and
    ``padding_bytes`` (layout footprint minus compact bytes, over ids with a defined
    layout), ``random_bytes`` (data held as generators), ``unnumbered`` (LoadConsts with
    ``const_id`` -1), ``constants_left`` (``tx8be.Constant`` ops not moved yet) and
    ``largest`` (the five largest: id, shape, dtype, bytes).

    Examples:
        >>> from tx8lab.core import zoo
        >>> from tx8lab.core.passes.move_constant import MoveConstant
        >>> from tx8lab.hw import TX81
        >>> moved = MoveConstant().run(zoo.build("tiny_cnn"), TX81).module
        >>> s = constants_summary(moved)
        >>> s["count"], s["total_bytes"], s["threshold_bytes"]
        (9, 3236, 65536)
    """
    container = ConstContainer.from_module(module)
    if threshold_bytes is not None:
        container.threshold_bytes = threshold_bytes
    threshold = container.threshold_bytes
    entries = list(container)
    big = [e for e in entries if container.is_large(e)]
    bypassed = [e for e in entries if not e.needs_load]
    layouts: dict[str, int] = {}
    for e in entries:
        name = "/".join(m.value for m in e.layouts) or "none"
        layouts[name] = layouts.get(name, 0) + 1
    with_layout = [(e, e.layout_bytes) for e in entries]
    laid = [(e, b) for e, b in with_layout if b is not None]
    load_ops = [op for op in module.walk() if op.kind == LOAD_CONST]
    largest = sorted(entries, key=lambda e: (-e.num_bytes, e.const_id))[:5]
    return {
        "count": len(entries),
        "load_ops": sum(len(e.op_ids) for e in entries),
        "shared": sum(1 for e in entries if len(e.op_ids) > 1),
        "total_bytes": container.total_bytes,
        "threshold_bytes": threshold,
        "above_threshold": None if threshold is None else len(big),
        "bytes_above_threshold": None if threshold is None else sum(e.num_bytes for e in big),
        "bypassed": len(bypassed),
        "bypassed_bytes": sum(e.num_bytes for e in bypassed),
        "bypassed_load_ops": sum(1 for op in load_ops if op.attrs.get("bypasscodegen", False)),
        "layouts": layouts,
        "layout_bytes": sum(b for _, b in laid),
        "padding_bytes": sum(b - e.num_bytes for e, b in laid),
        "random_bytes": sum(e.num_bytes for e in entries if e.params[0].is_random),
        "unnumbered": sum(1 for op in load_ops if op.attrs.get("const_id", -1) == -1),
        "constants_left": sum(1 for op in module.walk() if op.kind == "tx8be.Constant"),
        "largest": [
            {
                "const_id": e.const_id,
                "shape": list(e.params[0].shape),
                "dtype": e.params[0].dtype,
                "bytes": e.num_bytes,
            }
            for e in largest
        ],
    }


__all__ = [
    "ALL_CHIPS",
    "DDR_BANK_BYTES_PER_TILE",
    "THRESHOLD_ATTR",
    "ConstContainer",
    "ConstEntry",
    "ParamInfo",
    "constants_summary",
    "default_threshold_bytes",
    "tensor_bytes",
]
