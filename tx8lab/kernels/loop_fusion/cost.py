"""MLIR's loop-fusion cost model: op-instance counts, memref regions, footprints.

Spec: seed 003 §4 and ``../shared/reference/hw-fa-fusion.md`` §2 (MLIR 22's
``getLoopNestStats``, ``getComputeCost``, ``getFusionComputeCost``,
``MemRefRegion::compute``, ``getMemoryFootprintBytes``). The cost of a nest is the number
of dynamic op instances: each loop contributes (its non-loop body ops + its children's
costs + any slice inserted there) x its trip count. One op = one unit; no latency, width
or memory level enters - MLIR's own "placeholder cost model".

Readings chosen where MLIR's code is subtle (kept on purpose, they change answers):

- When a slice runs once per consumer iteration (store-to-load forwarding assumed), MLIR
  subtracts the producer's stores at the insertion loop and one op per dependent load
  in deeper loops - and then overwrites the insertion loop's entry with the slice cost,
  so only the deeper loads' discount survives. The explorer does the same.
- A region's extent per memref dimension is the tightest ``ub - lb + 1`` with ``lb`` an
  affine function of the outer loops (``getConstantBoundOnDimSize``), falling back to
  the memref's size; regions at depth 0 are constant boxes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import islpy as isl

from tx8lab.errors import Tx8labError
from tx8lab.kernels.loop_fusion.deps import (
    Access,
    Constraints,
    LoopInfo,
    collect_accesses,
    domain_rows,
    lin_row,
)
from tx8lab.kernels.loop_fusion.ir import Function, Lin, Load, Loop, Path, walk
from tx8lab.kernels.loop_fusion.slices import Slice

# --------------------------------------------------------------------------- op counts


@dataclass(frozen=True)
class NestStats:
    """MLIR's LoopNestStats: ops per loop body and trip counts, by loop path."""

    op_count: dict[Path, int]
    """Non-loop ops in each loop body, plus one for the terminator (as MLIR counts)."""
    trip_count: dict[Path, int]
    children: dict[Path, list[Path]]


def nest_stats(func: Function, root: Path) -> NestStats | None:
    """Stats of the nest at ``root``; ``None`` if a trip count is not constant."""
    stmt = func.at(root)
    if not isinstance(stmt, Loop):
        raise Tx8labError(f"no affine.for at {root}")
    ops: dict[Path, int] = {}
    trips: dict[Path, int] = {}
    children: dict[Path, list[Path]] = {}

    def visit(loop: Loop, path: Path) -> bool:
        ops[path] = sum(1 for s in loop.body if not isinstance(s, Loop)) + 1
        trip = loop.trip_count
        if trip is None:
            return False
        trips[path] = trip
        children[path] = []
        for i, s in enumerate(loop.body):
            if isinstance(s, Loop):
                children[path].append((*path, i))
                if not visit(s, (*path, i)):
                    return False
        return True

    return NestStats(ops, trips, children) if visit(stmt, root) else None


def compute_cost(
    stats: NestStats,
    root: Path,
    trip_override: Mapping[Path, int] | None = None,
    extra_ops: Mapping[Path, int] | None = None,
) -> int:
    """MLIR's getComputeCostHelper: dynamic op instances of the nest at ``root``."""
    op_count = stats.op_count[root] - 1
    for child in stats.children[root]:
        op_count += compute_cost(stats, child, trip_override, extra_ops)
    if extra_ops and root in extra_ops:
        op_count += extra_ops[root]
    trip = stats.trip_count[root]
    if trip_override and root in trip_override:
        trip = trip_override[root]
    return trip * op_count


@dataclass(frozen=True)
class FusionCost:
    """The cost of the consumer with the slice inserted (MLIR's getFusionComputeCost)."""

    slice_iterations: int
    slice_cost: int
    fused_cost: int
    store_load_forwarding: bool
    """The slice runs once per consumer iteration, so MLIR discounts forwarded loads."""


def fusion_cost(func: Function, src: int, dst: int, the_slice: Slice) -> FusionCost | None:
    """Fused cost of putting ``the_slice`` of nest ``src`` into nest ``dst``."""
    src_stats = nest_stats(func, (src,))
    dst_stats = nest_stats(func, (dst,))
    if src_stats is None or dst_stats is None:
        return None
    trips: dict[Path, int] = {}
    for s in the_slice.loops:
        if s.trip_count is None:
            return None
        trips[s.loop.path] = s.trip_count
    iterations = math.prod(trips.values())
    if iterations == 0:
        return None
    forwarding = iterations == 1
    insert = the_slice.insert_loop
    extra: dict[Path, int] = {}
    if forwarding:
        stores = [a for a in collect_accesses(func, (src,)) if a.is_store]
        if stores:
            extra[insert] = -len(stores)
        stored = {a.memref for a in stores}
        for path, stmt, _ in walk(func.body):
            if isinstance(stmt, Load) and stmt.memref in stored:
                enclosing = [path[:k] for k in range(1, len(path))]
                if insert in enclosing:
                    parent = path[:-1]
                    extra[parent] = extra.get(parent, 0) - 1
    slice_cost = compute_cost(src_stats, (src,), trips, extra)
    extra[insert] = slice_cost
    fused = compute_cost(dst_stats, (dst,), None, extra)
    return FusionCost(iterations, slice_cost, fused, forwarding)


# --------------------------------------------------------------------------- regions


@dataclass(frozen=True)
class Region:
    """The bounding box of the memref elements an access touches (MLIR's MemRefRegion)."""

    memref: str
    shape: tuple[int, ...]
    """Extent per dimension (constant)."""
    lbs: tuple[Lin, ...]
    """Lower bound per dimension, affine in the outer loops the region is symbolic in."""
    element_bytes: int

    @property
    def num_elements(self) -> int:
        """Elements in the box."""
        return math.prod(self.shape)

    @property
    def num_bytes(self) -> int:
        """Bytes in the box (MLIR's getRegionSize)."""
        return self.num_elements * self.element_bytes


def _aff_lin(aff: isl.Aff, names: Sequence[str]) -> Lin | None:
    if aff.dim(isl.dim_type.div) or aff.get_denominator_val().to_python() != 1:
        return None
    coeffs = {
        n: int(aff.get_coefficient_val(isl.dim_type.in_, k).to_python())
        for k, n in enumerate(names)
    }
    return Lin.of(coeffs, int(aff.get_constant_val().to_python()))


def _pieces(pw: isl.PwAff, names: Sequence[str]) -> list[Lin]:
    out: list[isl.Aff] = []
    pw.foreach_piece(lambda _s, aff: out.append(aff))
    lins = [_aff_lin(a, names) for a in out]
    return [x for x in lins if x is not None]


def region_of(
    func: Function,
    access: Access,
    depth: int,
    the_slice: Slice | None = None,
    dst_loops: Sequence[LoopInfo] = (),
) -> Region:
    """The region ``access`` touches, symbolic in its outermost ``depth`` loops.

    With ``the_slice`` (and the consumer loops its maps use), the producer loops are
    restricted to the slice for every consumer iteration and the region is taken over
    all of them (MLIR's slice write region, depth 0).
    """
    memref_type = func.memrefs[access.memref]
    rank = memref_type.rank
    loop_cols = [f"i{k}" for k in range(access.depth)]
    dst_cols = [f"j{k}" for k in range(len(dst_loops))]
    mem_cols = [f"x{k}" for k in range(rank)]
    params = loop_cols[:depth]
    columns = [*params, *loop_cols[depth:], *dst_cols, *mem_cols]
    names = {loop.iv: c for loop, c in zip(access.loops, loop_cols, strict=True)}
    names.update({loop.iv: c for loop, c in zip(dst_loops, dst_cols, strict=True)})
    names.update({c: c for c in mem_cols})
    eqs = [
        lin_row(e - Lin.var(c), columns, names) for e, c in zip(access.index, mem_cols, strict=True)
    ]
    ineqs = domain_rows(access.loops, columns, names) + domain_rows(dst_loops, columns, names)
    if the_slice is not None:
        by_path = {s.loop.path: s for s in the_slice.loops}
        for loop in access.loops:
            s = by_path.get(loop.path)
            if s is None:
                continue
            iv = Lin.var(loop.iv)
            ineqs.append(lin_row(iv - s.effective_lb, columns, names))
            ineqs.append(lin_row(s.effective_ub - 1 - iv, columns, names))
    for k, size in enumerate(memref_type.shape):
        x = Lin.var(mem_cols[k])
        ineqs.append(lin_row(x, columns, names))
        ineqs.append(lin_row(Lin.constant(size - 1) - x, columns, names))
    full = Constraints(tuple(columns), tuple(eqs), tuple(ineqs)).isl_set
    # keep the parameters and the memref dims only
    n_params = len(params)
    n_drop = len(columns) - n_params - rank
    box = full.project_out(isl.dim_type.set, n_params, n_drop)
    if box.is_empty():
        raise Tx8labError(f"the access to %{access.memref} touches no element")
    param_ivs = [loop.iv for loop in access.loops[:depth]]
    shape: list[int] = []
    lbs: list[Lin] = []
    for k in range(rank):
        dim = box
        for m in reversed(range(rank)):
            if m != k:
                dim = dim.project_out(isl.dim_type.set, n_params + m, 1)
        # dim has n_params + 1 set dims: params then x_k
        extent, lb = _extent(dim, n_params, param_ivs, memref_type.shape[k])
        shape.append(extent)
        lbs.append(lb)
    return Region(access.memref, tuple(shape), tuple(lbs), memref_type.element_bytes)


def _extent(dim: isl.Set, n_params: int, names: Sequence[str], size: int) -> tuple[int, Lin]:
    """Tightest constant extent of the last dim with an affine lower bound in the params."""
    if n_params == 0:
        lo = int(dim.dim_min_val(0).to_python())
        hi = int(dim.dim_max_val(0).to_python())
        return hi - lo + 1, Lin.constant(lo)
    rel = isl.Map.from_range(dim).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, n_params)
    lows = _pieces(rel.lexmin_pw_multi_aff().get_pw_aff(0), names)
    highs = _pieces(rel.lexmax_pw_multi_aff().get_pw_aff(0), names)
    best: tuple[int, Lin] | None = None
    cols = [*(f"p{k}" for k in range(n_params)), "x"]
    pnames = {n: f"p{k}" for k, n in enumerate(names)} | {"x": "x"}
    for low in lows:
        for high in highs:
            diff = high - low
            if not diff.is_constant:
                continue
            ext = diff.const + 1
            if best is not None and ext >= best[0]:
                continue
            x = Lin.var("x")
            bound = Constraints(
                tuple(cols),
                (),
                (lin_row(x - low, cols, pnames), lin_row(low + (ext - 1) - x, cols, pnames)),
            ).isl_set
            if dim.is_subset(bound):
                best = (ext, low)
    if best is None:
        return size, Lin.constant(0)
    return best


def write_region(func: Function, store: Access) -> Region:
    """The whole region a producer store writes (depth 0)."""
    return region_of(func, store, 0)


def footprint_bytes(func: Function, nest: int) -> int:
    """MLIR's getMemoryFootprintBytes: per memref the box of all its accesses, summed."""
    boxes: dict[str, tuple[list[int], list[int], int]] = {}
    for acc in collect_accesses(func, (nest,)):
        region = region_of(func, acc, 0)
        lo = [lb.const for lb in region.lbs]
        hi = [lb.const + e - 1 for lb, e in zip(region.lbs, region.shape, strict=True)]
        if acc.memref in boxes:
            old_lo, old_hi, _ = boxes[acc.memref]
            lo = [min(a, b) for a, b in zip(lo, old_lo, strict=True)]
            hi = [max(a, b) for a, b in zip(hi, old_hi, strict=True)]
        boxes[acc.memref] = (lo, hi, region.element_bytes)
    return sum(
        math.prod(h - low + 1 for low, h in zip(lo, hi, strict=True)) * elt
        for lo, hi, elt in boxes.values()
    )
