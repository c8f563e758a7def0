"""Attribute types of the tx8be dialect (seed 001, "Attribute").

Op attributes are plain Python values: ``bool``, ``int``, ``float``, ``str``, tuples of
those, numpy arrays (constant data), the enums below and the small frozen dataclasses
below. Each enum and dataclass prints as an MLIR dialect attribute
``#tx8be.<mnemonic><...>``, which ``mlir-opt --allow-unregistered-dialect`` accepts.

Readings chosen where the seed is vague:

- ``DevInfo.out_shape_buf_idx`` and ``source_type`` are kept with the seed's defaults
  (empty, 0); tx8lab has no dynamic shapes.
- ``ParallelAttr.parallel`` uses the mode names of :class:`ParallelMode`; the seed names the
  attribute type (``ParallelModeAttr``) but not its cases, so DP/TP/DP_TP/NONE are chosen.
- ``RandomInit`` is tx8lab's own: zoo weights are described by a seed and a distribution
  instead of megabytes of data, and materialised when the interpreter needs them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from tx8lab.core.dtypes import round_to

#: group_tag of a group whose data pass through SPM (the sharding search splits it).
TAG_SPLIT = 0
#: group_tag of a group that neither loads nor stores (all its ops work on DDR).
TAG_DDR = 2


class LayoutMode(enum.Enum):
    """Memory layout of a tensor on the chip (seed 001, "Tensor Layout")."""

    Tensor = "Tensor"
    NTensor = "NTensor"
    Cx = "Cx"
    NCx = "NCx"


class MemScope(enum.Enum):
    """Where a tensor lives (seed 001 ``MemScopeMode``: DDR = 0, SPM = 1, 3DDRAM = 2)."""

    DDR = "DDR"
    SPM = "SPM"
    DDRAM3D = "3DDRAM"


class AlignMode(enum.Enum):
    """Alignment requirement of an op's data (seed 000 ``AlignMode``)."""

    ALIGN = "ALIGN"
    NALIGN = "NALIGN"
    BOTH = "BOTH"
    UNKNOWN = "UNKNOWN"


class Engine(enum.Enum):
    """Engine an op runs on (seed 001 ``ENGINE_TYPE`` / ``OP_INSTR_TYPE``).

    CT is the CGRA (vector), NE the neural (matrix) engine, RDMA/WDMA the load/store DMA,
    TDMA the tile-to-tile DMA, SCALAR the RISC-V core.
    """

    CT = "CT"
    NE = "NE"
    RDMA = "RDMA"
    WDMA = "WDMA"
    TDMA = "TDMA"
    SCALAR = "SCALAR"


class ParallelMode(enum.Enum):
    """How a tensor is parallelised across tiles/chips (see module docstring)."""

    NONE = "NONE"
    DP = "DP"
    TP = "TP"
    DP_TP = "DP_TP"


ENUMS: tuple[type[enum.Enum], ...] = (LayoutMode, MemScope, AlignMode, Engine, ParallelMode)

#: Enum class -> the mnemonic it prints with: ``#tx8be.layout_mode<NCx>``.
ENUM_MNEMONICS: dict[type[enum.Enum], str] = {
    LayoutMode: "layout_mode",
    MemScope: "mem_scope",
    AlignMode: "align_mode",
    Engine: "engine",
    ParallelMode: "parallel_mode",
}


@dataclass(frozen=True, slots=True)
class DevInfo:
    """``dev_attr``: how an op is placed on the device (seed 001 ``Tx8be_DevAttr``)."""

    imm_size: int = 0
    """Bytes of immediate (scratch) SPM the op needs."""
    mem_layout: LayoutMode = LayoutMode.Tensor
    """Memory layout of the op's output."""
    multi_buf_en: bool = False
    """Double buffering on."""
    multi_buf_num: int = 1
    """Number of buffers when double buffering."""
    out_shape_buf_idx: tuple[int, ...] = ()
    """Index of the dynamic-shape buffer at run time (unused: no dynamic shapes)."""
    temporal_mem_slice: tuple[int, ...] = ()
    """Shape one tile processes per step (sharding + split)."""
    source_type: int = 0
    """Software pipeline stage."""
    imm_addr: int = 0
    """SPM byte address of the immediate buffer."""
    mem_addr: tuple[int, ...] = ()
    """SPM byte address of each buffer (several when multi-buffered)."""

    mnemonic: ClassVar[str] = "dev_info"


@dataclass(frozen=True, slots=True)
class ParallelAttr:
    """``parallel_attr``: data/tensor parallel split of each dimension (seed 001)."""

    parallel: ParallelMode = ParallelMode.NONE
    is_dp_inner: bool = False
    """True when the data-parallel dimension is the inner one."""
    dp_dim_x: int = 1
    dp_dim_y: int = 1
    dp_dim_z: int = 1
    tp_dim_x: int = 1
    tp_dim_y: int = 1
    tp_dim_z: int = 1
    sharding_is_given: bool = False
    """True when the user fixed the sharding."""
    shape_spatial_sharding: tuple[int, ...] = ()
    """Split factor per dimension."""

    mnemonic: ClassVar[str] = "parallel_attr"


@dataclass(frozen=True, slots=True)
class RandomInit:
    """Constant data given by a generator instead of bytes (zoo weights).

    ``materialize(shape, dtype)`` draws from ``numpy.random.default_rng(seed)``: normal
    with standard deviation ``scale`` around ``offset``, or uniform in
    ``[offset - scale, offset + scale)``; integer types take ``floor`` of the draw.
    """

    seed: int
    distribution: str = "normal"
    scale: float = 1.0
    offset: float = 0.0

    mnemonic: ClassVar[str] = "random"

    def materialize(self, shape: tuple[int, ...], dtype: str) -> npt.NDArray[Any]:
        """The constant's values, reproducibly, as the numpy array for ``dtype``."""
        rng = np.random.default_rng(self.seed)
        if self.distribution == "normal":
            data = rng.standard_normal(shape, dtype=np.float32) * self.scale + self.offset
        elif self.distribution == "uniform":
            data = rng.uniform(self.offset - self.scale, self.offset + self.scale, shape)
        else:
            raise ValueError(f"RandomInit: unknown distribution {self.distribution!r}")
        if dtype.startswith("i"):
            data = np.floor(data)
        return round_to(data, dtype)


DATACLASSES: tuple[type[Any], ...] = (DevInfo, ParallelAttr, RandomInit)

#: mnemonic -> enum or dataclass, for the parser.
BY_MNEMONIC: dict[str, type[Any]] = {
    **{name: cls for cls, name in ENUM_MNEMONICS.items()},
    **{cls.mnemonic: cls for cls in DATACLASSES},
}
