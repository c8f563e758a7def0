"""Loop fusion in TX8 terms: does the fused intermediate fit a tile's SPM?

Spec: fusion judged on a TX8 tile; ``tx8lab.hw`` (``TileConfig.spm_usable_bytes``). MLIR fuses to
shrink the producer's buffer to what one consumer iteration needs (the private memref);
on a TX8 tile that is the difference between spilling an intermediate to DDR and keeping
it in the 3 MiB SPM - what the grouping passes decide for tensor ops. For every legal
depth the report gives the private buffer's bytes, the bytes every memref the fused nest
touches per iteration of the depth's loop (its SPM working set: all operand tiles a
group would hold), and whether that fits the usable SPM.

Readings chosen where the sources are vague:

- The working set of a depth is, per memref the fused nest touches inside the loop at
  that depth, the bounding box of its accesses for one iteration of the outer loops
  (constant offsets between accesses widen the box, as MLIR's unionBoundingBox does),
  summed; the producer's memref counts with its private (fused) size.
- "Fits" compares with ``tile.spm_usable_bytes`` (capacity minus the reserved regions);
  double buffering is not assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

from tx8lab.hw import TX81, ChipConfig
from tx8lab.kernels.loop_fusion.cost import region_of
from tx8lab.kernels.loop_fusion.deps import collect_accesses
from tx8lab.kernels.loop_fusion.fusion import PairAnalysis
from tx8lab.kernels.loop_fusion.ir import Function
from tx8lab.kernels.loop_fusion.transform import create_private_memref, fuse_loops


@dataclass(frozen=True)
class SpmRow:
    """SPM view of fusing at one depth."""

    depth: int
    private_shape: tuple[int, ...]
    private_bytes: int
    working_set_bytes: int
    """Bytes of every memref tile one iteration of the depth's loop touches."""
    fits: bool
    """The working set fits the tile's usable SPM."""


@dataclass(frozen=True)
class SpmReport:
    """The producer's intermediate buffer, unfused and fused, against a tile's SPM."""

    memref: str
    unfused_shape: tuple[int, ...]
    unfused_bytes: int
    spm_usable_bytes: int
    unfused_fits: bool
    chosen_depth: int | None
    rows: tuple[SpmRow, ...]
    """One row per legal depth."""
    src_footprint_bytes: int
    """Every memref the unfused producer nest touches (MLIR's footprint)."""
    dst_footprint_bytes: int
    """Every memref the unfused consumer nest touches."""

    @property
    def unfused_nests_fit(self) -> bool:
        """Both unfused nests' footprints fit the usable SPM."""
        return max(self.src_footprint_bytes, self.dst_footprint_bytes) <= self.spm_usable_bytes

    @property
    def chosen(self) -> SpmRow | None:
        """The row of MLIR's chosen depth."""
        return next((r for r in self.rows if r.depth == self.chosen_depth), None)

    @property
    def reduction(self) -> float | None:
        """Unfused bytes / private bytes at the chosen depth."""
        row = self.chosen
        return None if row is None else self.unfused_bytes / row.private_bytes


def working_set_bytes(func: Function, nest: int, depth: int) -> int:
    """Bytes one iteration of the loop at ``depth`` touches, summed over memrefs.

    Per memref: the box its accesses inside that loop touch.
    """
    # boxes keyed by (memref, the symbolic part of each lower bound): accesses whose
    # lower bounds differ by constants share a box
    boxes: dict[tuple[str, tuple[str, ...]], tuple[list[int], list[int], int]] = {}
    for acc in collect_accesses(func, (nest,)):
        if acc.depth < depth:
            continue
        region = region_of(func, acc, depth)
        lo = [lb.const for lb in region.lbs]
        hi = [c + e - 1 for c, e in zip(lo, region.shape, strict=True)]
        key = (acc.memref, tuple(str(lb - lb.const) for lb in region.lbs))
        if key in boxes:
            old_lo, old_hi, _ = boxes[key]
            lo = [min(a, b) for a, b in zip(lo, old_lo, strict=True)]
            hi = [max(a, b) for a, b in zip(hi, old_hi, strict=True)]
        boxes[key] = (lo, hi, region.element_bytes)
    per_memref: dict[str, int] = {}
    for (memref, _), (lo, hi, elt) in boxes.items():
        size = elt
        for a, b in zip(lo, hi, strict=True):
            size *= b - a + 1
        per_memref[memref] = max(per_memref.get(memref, 0), size)
    return sum(per_memref.values())


def spm_report(analysis: PairAnalysis, hw: ChipConfig = TX81) -> SpmReport:
    """The SPM view of a pair analysed by :func:`~.fusion.analyze_pair`."""
    func = analysis.function
    memref = analysis.memrefs[0]
    memref_type = func.memrefs[memref]
    usable = hw.tile.spm_usable_bytes
    rows: list[SpmRow] = []
    for row in analysis.rows:
        if not row.legal or row.slice is None:
            continue
        # fuse_loops and create_private_memref only prepend top-level statements
        fused = fuse_loops(func, analysis.src, analysis.dst, row.slice)
        dst = analysis.dst + len(fused.body) - len(func.body)
        private = create_private_memref(fused, dst, memref, row.depth)
        stores = [a for a in collect_accesses(fused, (dst,)) if a.is_store and a.memref == memref]
        region = region_of(fused, stores[0], row.depth)
        ws = working_set_bytes(private, dst + 1, row.depth)
        rows.append(SpmRow(row.depth, region.shape, region.num_bytes, ws, ws <= usable))
    return SpmReport(
        memref,
        memref_type.shape,
        memref_type.num_bytes,
        usable,
        memref_type.num_bytes <= usable,
        analysis.chosen_depth,
        tuple(rows),
        analysis.src_footprint_bytes or 0,
        analysis.dst_footprint_bytes or 0,
    )
