"""MLIR's loop-fusion cost model at work: the depth search for one producer/consumer pair.

Spec: seed 003 §4 and ``../shared/reference/hw-fa-fusion.md`` §2 (MLIR 22
``LoopFusion.cpp``: ``isFusionProfitable``, ``performFusionsIntoDest``,
``MemRefDependenceGraph``). :func:`analyze_pair` evaluates one producer/consumer pair
and returns the per-depth table; :mod:`.driver` runs the whole pass with it.

The depth search: for every depth from the deepest legal one up to 1, the extra work
``fused / (src + dst) - 1`` and the storage reduction ``src write region / slice write
region`` are computed; the first depth (deepest first) whose extra work is within the
compute tolerance and whose storage reduction beats the best so far wins - ties go to the
deepest depth. A producer with a dependence cycle (a reduction) gets tolerance 0. The
pair is then dropped if the fused nest's memory footprint exceeds the two nests'.

Readings chosen where MLIR's code is subtle:

- The default tolerance is MLIR's ``0.30f``: the float ``0.3`` widened to double
  (0.30000001192092896), compared with ``<=``. ``tests/kernels/nests/tolerance_edge.mlir``
  costs exactly 30% extra work: ``mlir-opt`` fuses it by default and not with
  ``compute-tolerance=0.3``, and so does the explorer.
- Depths where the slice was computed but is incorrect still take part in the depth
  search (MLIR keeps the bounds and only checks that a slice exists).
- :func:`analyze_pair` passes the consumer through MLIR's sinking of sequential loops
  first, as the pass does, so its depths refer to the sunk nest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tx8lab.errors import Tx8labError
from tx8lab.kernels.loop_fusion.cost import (
    Region,
    compute_cost,
    footprint_bytes,
    fusion_cost,
    nest_stats,
    region_of,
    write_region,
)
from tx8lab.kernels.loop_fusion.deps import (
    Access,
    check_dependence,
    collect_accesses,
    has_cyclic_dependence,
)
from tx8lab.kernels.loop_fusion.ir import (
    Function,
    uniquify,
)
from tx8lab.kernels.loop_fusion.slices import (
    SUCCESS,
    FusionCheck,
    Slice,
    can_fuse,
    dst_prefix_loops,
    innermost_common_depth,
)
from tx8lab.kernels.loop_fusion.transform import (
    fuse_loops,
    sink_sequential_loops,
)

#: MLIR's default ``compute-tolerance``: ``0.30f`` as a double.
DEFAULT_TOLERANCE = float(np.float32(0.3))

MODES = ("greedy", "producer")


@dataclass(frozen=True)
class FusionOptions:
    """The options of ``mlir-opt --affine-loop-fusion`` the explorer models."""

    compute_tolerance: float = DEFAULT_TOLERANCE
    """Extra work tolerated, as a fraction of the unfused work (``compute-tolerance``)."""
    maximal: bool = False
    """Fuse at the deepest legal depth without the cost model (``maximal``)."""
    mode: str = "greedy"
    """``greedy`` (without sibling fusion) or ``producer`` (``mode=producer``)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise Tx8labError(f"fusion mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if not self.compute_tolerance >= 0:
            raise Tx8labError(f"compute_tolerance must be >= 0, got {self.compute_tolerance}")


# --------------------------------------------------------------------------- depth search


@dataclass(frozen=True)
class DepthRow:
    """One row of the per-depth table of a producer/consumer pair."""

    depth: int
    result: str
    """MLIR's FusionResult: ``success`` or why fusion is illegal at this depth."""
    reason: str
    slice: Slice | None
    evaluated: bool = False
    """MLIR's depth search looked at this depth (a slice exists, depth <= max legal)."""
    slice_iterations: int | None = None
    slice_cost: int | None = None
    fused_cost: int | None = None
    additional_compute_fraction: float | None = None
    slice_write_region_bytes: int | None = None
    storage_reduction: float | None = None
    within_tolerance: bool | None = None
    private_shape: tuple[int, ...] | None = None
    """Shape of the producer's buffer per consumer iteration if fused here (legal depths)."""
    private_bytes: int | None = None

    @property
    def legal(self) -> bool:
        """Fusion is legal at this depth."""
        return self.result == SUCCESS

    @property
    def trip_counts(self) -> tuple[int | None, ...] | None:
        """Slice trip count per producer loop."""
        return None if self.slice is None else self.slice.trip_counts


@dataclass(frozen=True)
class PairAnalysis:
    """Everything MLIR computes to decide whether and where a producer fuses into a consumer."""

    function: Function
    """The function analysed (the consumer after MLIR's sinking of sequential loops)."""
    src: int
    """Body position of the producer nest."""
    dst: int
    """Body position of the consumer nest."""
    memrefs: tuple[str, ...]
    """Memrefs the producer stores and the consumer loads."""
    rows: tuple[DepthRow, ...]
    """Depths 1 .. the innermost common depth of the consumer's accesses to them."""
    max_legal_depth: int
    src_cost: int | None
    dst_cost: int | None
    cyclic: bool
    """The producer has a dependence cycle (a reduction): tolerance forced to 0."""
    tolerance: float
    tolerance_used: float
    maximal: bool
    producer_stores: int
    src_write_region_bytes: int | None
    chosen_depth: int | None
    """The depth MLIR fuses at; ``None`` when it does not fuse."""
    decision: str
    """Why this depth (or why no fusion), in one sentence."""
    src_footprint_bytes: int | None = None
    dst_footprint_bytes: int | None = None
    fused_footprint_bytes: int | None = None
    dst_sunk: bool = False
    """MLIR permuted the consumer's loops (sequential ones inward) before analysing."""

    @property
    def chosen(self) -> DepthRow | None:
        """The row of the chosen depth."""
        if self.chosen_depth is None:
            return None
        return self.rows[self.chosen_depth - 1]


def _fraction(fused: int, src_cost: int, dst_cost: int) -> float:
    return fused / (float(src_cost) + dst_cost) - 1


def evaluate_depths(
    func: Function,
    src: int,
    dst: int,
    checks: Sequence[FusionCheck],
    tolerance: float,
    maximal: bool,
    memrefs: Sequence[str],
    cyclic: bool,
    base_tolerance: float,
    dst_sunk: bool = False,
) -> PairAnalysis:
    """MLIR's isFusionProfitable (and the maximal/cyclic handling around it)."""
    max_legal = max((c.depth for c in checks if c.ok), default=0)
    src_stats = nest_stats(func, (src,))
    dst_stats = nest_stats(func, (dst,))
    src_cost = compute_cost(src_stats, (src,)) if src_stats else None
    dst_cost = compute_cost(dst_stats, (dst,)) if dst_stats else None
    producer = [
        a for a in collect_accesses(func, (src,)) if a.is_store and a.memref in set(memrefs)
    ]
    src_region = write_region(func, producer[0]) if producer else None
    rows: list[DepthRow] = []
    for check in checks:
        row = DepthRow(check.depth, check.result, check.reason, check.slice)
        if check.slice is not None:
            row = _fill_row(func, src, dst, row, producer, src_cost, dst_cost, src_region)
            if check.ok:
                row = _with_private(func, src, dst, row, producer, memrefs)
        rows.append(row)
    base = PairAnalysis(
        function=func,
        src=src,
        dst=dst,
        memrefs=tuple(memrefs),
        rows=tuple(rows),
        max_legal_depth=max_legal,
        src_cost=src_cost,
        dst_cost=dst_cost,
        cyclic=cyclic,
        tolerance=base_tolerance,
        tolerance_used=tolerance,
        maximal=maximal,
        producer_stores=len(producer),
        src_write_region_bytes=src_region.num_bytes if src_region else None,
        chosen_depth=None,
        decision="",
        src_footprint_bytes=footprint_bytes(func, src),
        dst_footprint_bytes=footprint_bytes(func, dst),
        dst_sunk=dst_sunk,
    )

    def done(
        depth: int | None, decision: str, out: list[DepthRow], fused_mem: int | None = None
    ) -> PairAnalysis:
        return dataclasses.replace(
            base,
            rows=tuple(out),
            chosen_depth=depth,
            decision=decision,
            fused_footprint_bytes=fused_mem,
        )

    if max_legal == 0:
        return done(None, "fusion is illegal at every depth", rows)
    # rows MLIR's depth search considers
    rows = [
        dataclasses.replace(r, evaluated=r.slice is not None and r.depth <= max_legal) for r in rows
    ]
    if cyclic and maximal:
        top = rows[max_legal - 1]
        frac = top.additional_compute_fraction
        if frac is None or frac > 0:
            return done(
                None,
                "maximal fusion with a producer cycle needs zero extra work at the deepest "
                f"legal depth {max_legal} (it needs {_pct(frac)})",
                rows,
            )
    if maximal:
        return done(max_legal, f"maximal fusion: the deepest legal depth {max_legal}", rows)
    if len(producer) > 1:
        top = rows[max_legal - 1]
        frac = top.additional_compute_fraction
        if frac is None or frac > tolerance:
            return done(
                None,
                f"{len(producer)} producer stores: MLIR only checks the deepest legal depth "
                f"{max_legal}, whose extra work {_pct(frac)} exceeds the tolerance "
                f"{_pct(tolerance)}",
                rows,
            )
        return done(
            max_legal,
            f"{len(producer)} producer stores: MLIR fuses at the deepest legal depth "
            f"{max_legal} (extra work {_pct(frac)} within {_pct(tolerance)})",
            rows,
        )
    best: DepthRow | None = None
    best_reduction = 0.0
    marked: list[DepthRow] = list(rows)
    for depth in range(max_legal, 0, -1):
        row = rows[depth - 1]
        if not row.evaluated or row.additional_compute_fraction is None:
            continue
        if row.storage_reduction is None:
            continue
        ok = row.additional_compute_fraction <= tolerance
        marked[depth - 1] = dataclasses.replace(row, within_tolerance=ok)
        if row.storage_reduction > best_reduction and ok:
            best_reduction = row.storage_reduction
            best = row
    if best is None:
        return done(
            None,
            f"every legal depth needs more extra work than the tolerance {_pct(tolerance)}"
            + (" (forced to 0: the producer has a dependence cycle)" if cyclic else ""),
            marked,
        )
    assert best.slice_write_region_bytes is not None
    src_mem = base.src_footprint_bytes
    dst_mem = base.dst_footprint_bytes
    assert src_mem is not None
    assert dst_mem is not None
    fused_mem = dst_mem + best.slice_write_region_bytes
    if fused_mem > src_mem + dst_mem:
        return done(
            None,
            f"depth {best.depth} would need {fused_mem} B, more than the unfused "
            f"{src_mem + dst_mem} B",
            marked,
            fused_mem,
        )
    deeper = [
        r.depth
        for r in marked
        if r.evaluated and r.depth > best.depth and r.within_tolerance is False
    ]
    why = (
        f"depth {best.depth}: the deepest depth within the tolerance {_pct(tolerance)}"
        + (" (forced to 0: the producer has a dependence cycle)" if cyclic else "")
        + f", extra work {_pct(best.additional_compute_fraction)}, storage reduction "
        f"{best.storage_reduction:.2f}x"
    )
    if deeper:
        why += f"; deeper depths {', '.join(map(str, sorted(deeper)))} need more extra work"
    return done(best.depth, why, marked, fused_mem)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def _fill_row(
    func: Function,
    src: int,
    dst: int,
    row: DepthRow,
    producer: Sequence[Access],
    src_cost: int | None,
    dst_cost: int | None,
    src_region: Region | None,
) -> DepthRow:
    """Costs, extra work and storage reduction of the row's slice."""
    the_slice = row.slice
    assert the_slice is not None
    cost = fusion_cost(func, src, dst, the_slice)
    if cost is not None and src_cost is not None and dst_cost is not None:
        row = dataclasses.replace(
            row,
            slice_iterations=cost.slice_iterations,
            slice_cost=cost.slice_cost,
            fused_cost=cost.fused_cost,
            additional_compute_fraction=_fraction(cost.fused_cost, src_cost, dst_cost),
        )
    if len(producer) == 1 and src_region is not None:
        # MLIR's storage model looks at the single producer store only
        dst_loops = dst_prefix_loops(func, the_slice)
        region = region_of(func, producer[0], 0, the_slice, dst_loops)
        row = dataclasses.replace(row, slice_write_region_bytes=region.num_bytes)
        if region.num_bytes:
            reduction = float(src_region.num_bytes) / float(region.num_bytes)
            row = dataclasses.replace(row, storage_reduction=reduction)
    return row


def _with_private(
    func: Function,
    src: int,
    dst: int,
    row: DepthRow,
    producer: Sequence[Access],
    memrefs: Sequence[str],
) -> DepthRow:
    """The buffer the producer would write per consumer iteration if fused at the row's depth."""
    assert row.slice is not None
    if not producer:
        return row
    fused = fuse_loops(func, src, dst, row.slice)
    memref = producer[0].memref
    stores = [a for a in collect_accesses(fused, (dst,)) if a.is_store and a.memref == memref]
    if not stores:
        return row
    region = region_of(fused, stores[0], row.depth)
    return dataclasses.replace(row, private_shape=region.shape, private_bytes=region.num_bytes)


def producer_consumer_memrefs(func: Function, src: int, dst: int) -> tuple[str, ...]:
    """Memrefs ``src`` stores and ``dst`` loads (MLIR's gatherProducerConsumerMemrefs)."""
    stored = {a.memref for a in collect_accesses(func, (src,)) if a.is_store}
    loaded = [a.memref for a in collect_accesses(func, (dst,)) if not a.is_store]
    return tuple(dict.fromkeys(m for m in loaded if m in stored))


def legality(func: Function, src: int, dst: int, memrefs: Sequence[str]) -> list[FusionCheck]:
    """MLIR's canFuseLoops at each depth it tries (1 .. dstLoopDepthTest).

    dstLoopDepthTest is the innermost common depth of the consumer's accesses to
    ``memrefs``.
    """
    dst_ops = [a for a in collect_accesses(func, (dst,)) if a.memref in set(memrefs)]
    depth_test = innermost_common_depth(dst_ops)
    return [can_fuse(func, src, dst, d) for d in range(1, depth_test + 1)]


def analyze_pair(
    func: Function, src: int, dst: int, options: FusionOptions | None = None
) -> PairAnalysis:
    """The per-depth table and MLIR's choice for fusing nest ``src`` into nest ``dst``.

    ``src``/``dst`` are body positions (``func.nests`` lists them). The consumer is first
    passed through MLIR's sinking of sequential loops, as the pass does.

    Raises:
        Tx8labError: the positions are not nests in program order, or the producer
            stores nothing the consumer loads.
    """
    opts = options or FusionOptions()
    func = uniquify(func)
    if src not in func.nests or dst not in func.nests or src >= dst:
        raise Tx8labError(
            f"@{func.name}: src and dst must be nest positions with src < dst "
            f"(nests at {list(func.nests)})"
        )
    sunk = sink_sequential_loops(func, dst)
    memrefs = producer_consumer_memrefs(sunk, src, dst)
    if not memrefs:
        raise Tx8labError(
            f"@{func.name}: nest at {src} stores nothing the nest at {dst} loads: "
            "not a producer/consumer pair"
        )
    checks = legality(sunk, src, dst, memrefs)
    cyclic = has_cyclic_dependence(sunk, (src,))
    tolerance = 0.0 if cyclic and not opts.maximal else opts.compute_tolerance
    return evaluate_depths(
        sunk,
        src,
        dst,
        checks,
        tolerance,
        opts.maximal,
        memrefs,
        cyclic,
        opts.compute_tolerance,
        dst_sunk=sunk != func,
    )


def producer_consumer_pairs(func: Function) -> list[tuple[int, int]]:
    """(src, dst) body positions of the producer/consumer pairs of nests.

    ``dst`` loads what ``src`` stores and a dependence exists (an edge of MLIR's
    dependence graph).
    """
    func = uniquify(func)
    pairs = []
    nests = func.nests
    for i, src in enumerate(nests):
        stores = [a for a in collect_accesses(func, (src,)) if a.is_store]
        for dst in nests[i + 1 :]:
            loads = [a for a in collect_accesses(func, (dst,)) if not a.is_store]
            if any(check_dependence(s, ld, 1) for s in stores for ld in loads):
                pairs.append((src, dst))
    return pairs
