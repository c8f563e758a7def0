"""Computation slices: which producer iterations a consumer needs, per fusion depth.

Spec: seed 003 §3 (``canFuseLoops`` -> ``computeSliceUnion`` ->
``getComputationSliceState``), checked against MLIR 22 (``mlir-opt
--test-loop-fusion=test-loop-fusion-slice-computation`` prints the same bounds). For a
producer store and each dependent consumer access, the dependence polyhedron is
projected onto the producer loops and the first ``depth`` consumer loops; each producer
loop gets a lower and an upper bound as an affine map of those consumer loops
(``(d0, d1) -> (d0)`` .. ``(d0, d1) -> (d0 + 1)`` when it is pinned to one iteration,
constants when it is free). The bounds of all dependent pairs are unioned into one
bounding box, which must stay inside the producer's iteration space.

Readings chosen where MLIR's code is more general than the explorer's subset:

- A producer loop pinned to one value per consumer iteration (the projected relation is
  single-valued with an affine, div-free value) gets ``[e, e + 1)``; otherwise its lower
  (upper) bound is the lexicographic minimum (maximum + 1) when that is one affine
  piece, else the constant minimum (maximum) - MLIR's fallback when several bounds
  remain.
- The union of two bounds keeps the smaller lower / larger upper one when they differ
  by a constant, else the constant extremes (``unionBoundingBox``'s fallback).
- Slices are backward (producer before consumer, both top-level nests); sibling
  (input-reuse) fusion is not modelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import islpy as isl

from tx8lab.errors import Tx8labError
from tx8lab.kernels.loop_fusion.deps import (
    Access,
    Constraints,
    LoopInfo,
    check_dependence,
    collect_accesses,
    domain_rows,
    is_loop_parallel,
    lin_row,
    loops_under,
    num_common_loops,
)
from tx8lab.kernels.loop_fusion.ir import Function, Lin, Path, format_lin

#: MLIR's FusionResult values, as the explorer names them.
SUCCESS = "success"
FAIL_PRECONDITION = "fail-precondition"
FAIL_BLOCK_DEPENDENCE = "fail-block-dependence"
FAIL_FUSION_DEPENDENCE = "fail-fusion-dependence"
FAIL_INCORRECT_SLICE = "fail-incorrect-slice"

#: Fusion strategies: producer-consumer (the pass) or generic (the test pass).
PRODUCER_CONSUMER = "producer-consumer"
GENERIC = "generic"

NULL_MAP = "<<NULL AFFINE MAP>>"


@dataclass(frozen=True)
class SliceLoop:
    """One producer loop of a slice with its bounds in terms of the consumer loops."""

    loop: LoopInfo
    lb: Lin | None
    """Lower bound over the consumer induction variables; ``None`` keeps the loop's own."""
    ub: Lin | None
    """Exclusive upper bound; ``None`` keeps the loop's own."""

    @property
    def effective_lb(self) -> Lin:
        """The bound the sliced loop runs from."""
        return self.loop.lb if self.lb is None else self.lb

    @property
    def effective_ub(self) -> Lin:
        """The bound the sliced loop runs to (exclusive)."""
        return self.loop.ub if self.ub is None else self.ub

    @property
    def trip_count(self) -> int | None:
        """Constant ``ub - lb`` (MLIR's getConstDifference), else ``None``."""
        span = self.effective_ub - self.effective_lb
        return span.const if span.is_constant else None


@dataclass(frozen=True)
class Slice:
    """A computation slice of the producer at a consumer loop depth."""

    depth: int
    dst_ivs: tuple[str, ...]
    """The consumer's first ``depth`` induction variables: the maps' ``d0, d1, ...``."""
    loops: tuple[SliceLoop, ...]
    """Producer loops the slice bounds (outermost first)."""
    insert_loop: Path
    """Consumer loop at ``depth``; the slice goes at the start of its body."""

    @property
    def trip_counts(self) -> tuple[int | None, ...]:
        """Trip count of each producer loop in the slice (the seed's ``1,1,1,384``)."""
        return tuple(s.trip_count for s in self.loops)

    @property
    def iteration_count(self) -> int | None:
        """Producer iterations per consumer iteration at ``depth``."""
        total = 1
        for t in self.trip_counts:
            if t is None:
                return None
            total *= t
        return total

    def map_text(self, expr: Lin | None) -> str:
        """``expr`` as an MLIR affine map over the consumer loops, e.g. ``(d0) -> (d0)``."""
        if expr is None:
            return NULL_MAP
        dims = {iv: f"d{k}" for k, iv in enumerate(self.dst_ivs)}
        head = ", ".join(dims[iv] for iv in self.dst_ivs)
        return f"({head}) -> ({format_lin(expr, dims, self.dst_ivs)})"

    def bounds_text(self) -> str:
        """The bounds as MLIR's test pass prints them: ``[lb, ub] [lb, ub] ...``."""
        return " ".join(f"[{self.map_text(s.lb)}, {self.map_text(s.ub)}]" for s in self.loops)


@dataclass(frozen=True)
class FusionCheck:
    """MLIR's canFuseLoops at one depth: the result, why, and the slice it computed."""

    depth: int
    result: str
    reason: str
    slice: Slice | None
    """Set on success and on an incorrect slice (MLIR keeps the bounds it computed)."""

    @property
    def ok(self) -> bool:
        """Fusion is legal at this depth."""
        return self.result == SUCCESS


# --------------------------------------------------------------------------- isl helpers


def _set(
    columns: Sequence[str], eqs: Sequence[tuple[int, ...]], ineqs: Sequence[tuple[int, ...]]
) -> isl.Set:
    return Constraints(tuple(columns), tuple(eqs), tuple(ineqs)).isl_set


def _aff_to_lin(aff: isl.Aff, names: Sequence[str]) -> Lin | None:
    if aff.dim(isl.dim_type.div) or aff.get_denominator_val().to_python() != 1:
        return None
    coeffs = {
        name: int(aff.get_coefficient_val(isl.dim_type.in_, k).to_python())
        for k, name in enumerate(names)
    }
    return Lin.of(coeffs, int(aff.get_constant_val().to_python()))


def _single_piece(pw: isl.PwAff, names: Sequence[str]) -> Lin | None:
    pieces: list[isl.Aff] = []
    pw.foreach_piece(lambda _set_, aff: pieces.append(aff))
    lins = [_aff_to_lin(a, names) for a in pieces]
    if not lins or any(x is None for x in lins) or len(set(lins)) != 1:
        return None
    return lins[0]


def _relation(pset: isl.Set, out_pos: int, in_positions: Sequence[int]) -> isl.Map:
    """``{[dims in_positions] -> [dim out_pos]}`` with every other dim projected out."""
    n = pset.dim(isl.dim_type.set)
    names = [f"x{k}" for k in range(n)]
    ins = ", ".join(names[k] for k in in_positions)
    perm = isl.Map(f"{{ [{', '.join(names)}] -> [{ins}, {names[out_pos]}] }}")
    image = pset.apply(perm)
    m = isl.Map.from_range(image)
    return m.move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, len(in_positions))


# --------------------------------------------------------------------------- slices


def _pair_bounds(cst: Constraints, src: Access, dst: Access, depth: int) -> list[tuple[Lin, Lin]]:
    """Per producer loop of ``src``: (lb, ub) over ``dst``'s first ``depth`` IVs."""
    ns, nd = src.depth, dst.depth
    pset = cst.isl_set.project_out(isl.dim_type.set, ns + depth, nd - depth)
    dst_names = [loop.iv for loop in dst.loops[:depth]]
    ins = list(range(ns, ns + depth))
    out: list[tuple[Lin, Lin]] = []
    for k in range(ns):
        rel = _relation(pset, k, ins)
        lo = rel.lexmin_pw_multi_aff().get_pw_aff(0)
        hi = rel.lexmax_pw_multi_aff().get_pw_aff(0)
        lb = _single_piece(lo, dst_names)
        if rel.is_single_valued() and lb is not None:
            out.append((lb, lb + 1))
            continue
        ub = _single_piece(hi, dst_names)
        if lb is None:
            lb = Lin.constant(int(pset.dim_min_val(k).to_python()))
        ub = Lin.constant(int(pset.dim_max_val(k).to_python())) if ub is None else ub
        out.append((lb, ub + 1))
    return out


def _prefix_domain(
    dst_loops: Sequence[LoopInfo],
) -> tuple[list[str], dict[str, str], list[tuple[int, ...]]]:
    cols = [f"j{k}" for k in range(len(dst_loops))]
    names = {loop.iv: c for loop, c in zip(dst_loops, cols, strict=True)}
    return cols, names, domain_rows(dst_loops, cols, names)


def _const_range(expr: Lin, dst_loops: Sequence[LoopInfo], upper: bool) -> int:
    """Min (or max) of ``expr`` over the consumer prefix domain."""
    if expr.is_constant:
        return expr.const
    cols, names, rows = _prefix_domain(dst_loops)
    cols2 = [*cols, "x"]
    names2 = {**names, "x": "x"}
    eq = lin_row(expr - Lin.var("x"), cols2, names2)
    s = _set(cols2, [eq], [(*r[:-1], 0, r[-1]) for r in rows])
    val = s.dim_max_val(len(cols)) if upper else s.dim_min_val(len(cols))
    return int(val.to_python())


def _union(
    a: tuple[Lin, Lin], b: tuple[Lin, Lin], dst_loops: Sequence[LoopInfo]
) -> tuple[Lin, Lin]:
    """Bounding box of two (lb, ub) pairs (MLIR's unionBoundingBox for one dim)."""
    lb_diff = a[0] - b[0]
    if lb_diff.is_constant:
        lb = a[0] if lb_diff.const <= 0 else b[0]
    else:
        lb = Lin.constant(
            min(_const_range(a[0], dst_loops, False), _const_range(b[0], dst_loops, False))
        )
    ub_diff = a[1] - b[1]
    if ub_diff.is_constant:
        ub = a[1] if ub_diff.const >= 0 else b[1]
    else:
        ub = Lin.constant(
            max(_const_range(a[1], dst_loops, True), _const_range(b[1], dst_loops, True))
        )
    return lb, ub


def sequential_loops(func: Function, root: Path) -> set[Path]:
    """Loops of the nest at ``root`` that carry a dependence (MLIR's getSequentialLoops)."""
    return {info.path for info in loops_under(func, root) if not is_loop_parallel(func, info.path)}


def _ops_of(func: Function, nest: int) -> list[Access]:
    return collect_accesses(func, (nest,))


def innermost_common_depth(accesses: Sequence[Access]) -> int:
    """Number of loops surrounding every access (MLIR's getInnermostCommonLoopDepth)."""
    if not accesses:
        return 0
    depth = min(a.depth for a in accesses)
    for d in range(depth):
        if len({a.loops[d].path for a in accesses}) != 1:
            return d
    return depth


def max_loop_depth(src_ops: Sequence[Access], dst_ops: Sequence[Access]) -> int:
    """MLIR's getMaxLoopDepth: the deepest depth the consumer's own dependences allow."""
    produced = {a.memref for a in src_ops if a.is_store}
    consumed = {b.memref for b in dst_ops if not b.is_store}
    shared = produced & consumed
    targets = [b for b in dst_ops if b.memref in shared]
    if not targets:
        return 0
    depth = innermost_common_depth(targets)
    if all(not t.is_store for t in targets):
        return depth
    for a in targets:
        for b in targets:
            common = num_common_loops(a, b)
            for d in range(1, common + 2):
                if check_dependence(a, b, d):
                    depth = min(depth, d - 1)
                    break
    return depth


def _dependent_op_between(func: Function, a: int, b: int) -> tuple[int | None, int | None]:
    """(first op in (a, b) depending on nest a, last op in (a, b) nest b depends on)."""
    from tx8lab.kernels.loop_fusion.ir import used_names, walk

    def memrefs(index: int) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for acc in collect_accesses(func, (index,)):
            out[acc.memref] = out.get(acc.memref, False) or acc.is_store
        return out

    def depends(index: int, values: dict[str, bool]) -> bool:
        for acc in collect_accesses(func, (index,)):
            if acc.memref in values and (acc.is_store or values[acc.memref]):
                return True
        return False

    va, vb = memrefs(a), memrefs(b)
    first = next((x for x in range(a + 1, b) if depends(x, va)), None)
    b_uses = {n for _, s, _ in walk((func.body[b],)) for n in used_names(s)}
    last = None
    for x in range(b - 1, a, -1):
        stmt = func.body[x]
        defined = {getattr(stmt, "result", None)}
        if depends(x, vb) or (defined & b_uses):
            last = x
            break
    return first, last


def can_fuse(
    func: Function, src: int, dst: int, depth: int, strategy: str = PRODUCER_CONSUMER
) -> FusionCheck:
    """MLIR's canFuseLoops for the top-level nests at body positions ``src`` < ``dst``.

    Raises:
        Tx8labError: ``src``/``dst`` are not nests or the producer does not come first.
    """
    if strategy not in (PRODUCER_CONSUMER, GENERIC):
        raise Tx8labError(
            f"strategy must be {PRODUCER_CONSUMER!r} or {GENERIC!r}, not {strategy!r}"
        )
    nests = func.nests
    if src not in nests or dst not in nests:
        raise Tx8labError(f"@{func.name}: positions {src} and {dst} must both be affine.for nests")
    if src >= dst:
        raise Tx8labError(
            f"@{func.name}: the producer nest must come before the consumer "
            "(forward slices are not modelled)"
        )
    if depth < 1:
        return FusionCheck(depth, FAIL_PRECONDITION, "cannot fuse at depth 0", None)
    first, last = _dependent_op_between(func, src, dst)
    if first is not None and last is not None and first <= last:
        return FusionCheck(
            depth,
            FAIL_BLOCK_DEPENDENCE,
            f"statement {first} between the nests depends on the producer and statement "
            f"{last} feeds the consumer: no place for the fused nest",
            None,
        )
    ops_a = _ops_of(func, src)
    ops_b = _ops_of(func, dst)
    if strategy == PRODUCER_CONSUMER:
        max_depth = max_loop_depth(ops_a, ops_b)
        if max_depth < depth:
            return FusionCheck(
                depth,
                FAIL_FUSION_DEPENDENCE,
                f"the consumer's own dependences allow depth {max_depth} at most",
                None,
            )
        strategy_a = [a for a in ops_a if a.is_store]
    else:
        strategy_a = list(ops_a)
    return compute_slice_union(func, strategy_a, ops_b, depth)


def compute_slice_union(
    func: Function, ops_a: Sequence[Access], ops_b: Sequence[Access], depth: int
) -> FusionCheck:
    """MLIR's computeSliceUnion for a backward slice of ``ops_a`` at ``ops_b``'s ``depth``."""
    pair_bounds: list[tuple[Access, Access, list[tuple[Lin, Lin]]]] = []
    seq_cache: dict[Path, set[Path]] = {}
    for a in ops_a:
        for b in ops_b:
            if a.memref != b.memref:
                continue
            if depth > b.depth:
                return FusionCheck(
                    depth,
                    FAIL_PRECONDITION,
                    f"depth {depth} is deeper than the consumer access to %{b.memref}",
                    None,
                )
            read_read = not a.is_store and not b.is_store
            dep = check_dependence(a, b, num_common_loops(a, b) + 1, allow_rar=read_read)
            if dep is None:
                continue
            bounds = _pair_bounds(dep.constraints, a, b, depth)
            if read_read:
                root = a.loops[0].path
                if root not in seq_cache:
                    seq_cache[root] = sequential_loops(func, root)
                seq = seq_cache[root]
                for k, loop in enumerate(a.loops):
                    if loop.path in seq:
                        for m in range(k, len(a.loops)):
                            bounds[m] = (a.loops[m].lb, a.loops[m].ub)
                        break
            pair_bounds.append((a, b, bounds))
    if not pair_bounds:
        return FusionCheck(depth, FAIL_PRECONDITION, "no dependence between the nests", None)
    # the consumer loops around every dependent consumer access
    sinks = [b for _, b, _ in pair_bounds]
    common = innermost_common_depth(sinks)
    if depth > common:
        return FusionCheck(
            depth,
            FAIL_PRECONDITION,
            f"the dependent consumer accesses share {common} loops only",
            None,
        )
    dst_loops = sinks[0].loops[:depth]
    # union: producer loops in order of first appearance, missing ones at full bounds
    src_loops: list[LoopInfo] = []
    for a, _, _ in pair_bounds:
        for loop in a.loops:
            if loop.path not in {x.path for x in src_loops}:
                src_loops.append(loop)
    union: dict[Path, tuple[Lin, Lin]] = {}
    for a, _, bounds in pair_bounds:
        mine = {loop.path: bd for loop, bd in zip(a.loops, bounds, strict=True)}
        for loop in src_loops:
            bd = mine.get(loop.path, (loop.lb, loop.ub))
            union[loop.path] = (
                bd if loop.path not in union else _union(union[loop.path], bd, dst_loops)
            )
    the_slice = Slice(
        depth,
        tuple(loop.iv for loop in dst_loops),
        tuple(SliceLoop(loop, *union[loop.path]) for loop in src_loops),
        dst_loops[-1].path,
    )
    valid = is_slice_valid(the_slice, dst_loops)
    if not valid:
        return FusionCheck(
            depth,
            FAIL_INCORRECT_SLICE,
            "the slice bounds reach outside the producer's iteration space",
            the_slice,
        )
    return FusionCheck(depth, SUCCESS, "legal", the_slice)


def _fast_maximal(the_slice: Slice, dst_loops: Sequence[LoopInfo]) -> bool | None:
    """MLIR's isSliceMaximalFastCheck."""
    by_iv = {loop.iv: loop for loop in dst_loops}
    for s in the_slice.loops:
        if s.lb is None or s.ub is None or s.ub != s.lb + 1 or s.lb.is_constant:
            return None
        if s.lb.const != 0 or len(s.lb.coeffs) != 1 or s.lb.coeffs[0][1] != 1:
            return None
        dst_loop = by_iv[s.lb.coeffs[0][0]]
        if not (
            s.loop.lb.is_constant
            and s.loop.ub.is_constant
            and dst_loop.lb.is_constant
            and dst_loop.ub.is_constant
        ):
            return None
        if s.loop.lb != dst_loop.lb or s.loop.ub != dst_loop.ub:
            return False
    return True


def _src_set(the_slice: Slice) -> tuple[list[str], dict[str, str], list[tuple[int, ...]]]:
    cols = [f"i{k}" for k in range(len(the_slice.loops))]
    names = {s.loop.iv: c for s, c in zip(the_slice.loops, cols, strict=True)}
    rows = domain_rows([s.loop for s in the_slice.loops], cols, names)
    return cols, names, rows


def is_slice_valid(the_slice: Slice, dst_loops: Sequence[LoopInfo]) -> bool:
    """MLIR's isSliceValid: every slice iteration is an iteration of the producer."""
    if _fast_maximal(the_slice, dst_loops):
        return True
    cols, names, src_rows = _src_set(the_slice)
    dcols, dnames, drows = _prefix_domain(dst_loops)
    all_cols = [*cols, *dcols]
    all_names = {**names, **dnames}
    rows = [(*([0] * len(cols)), *r) for r in drows]
    for s in the_slice.loops:
        iv = Lin.var(s.loop.iv)
        rows.append(lin_row(iv - s.effective_lb, all_cols, all_names))
        rows.append(lin_row(s.effective_ub - 1 - iv, all_cols, all_names))
    slice_set = _set(all_cols, [], rows).project_out(isl.dim_type.set, len(cols), len(dcols))
    src_set = _set(cols, [], src_rows)
    return bool(slice_set.subtract(src_set).is_empty())


def is_slice_maximal(the_slice: Slice, dst_loops: Sequence[LoopInfo]) -> bool | None:
    """MLIR's ComputationSliceState::isMaximal, quirks included.

    The fast check first; otherwise MLIR builds the slice's set with consumer loop ``k``
    at dimension ``k`` and compares it with the producer's iteration space. ``None``: MLIR
    cannot tell (the consumer prefix is deeper than the producer nest, or a pinned bound is
    not a bare consumer loop).
    """
    fast = _fast_maximal(the_slice, dst_loops)
    if fast is not None:
        return fast
    n = len(the_slice.loops)
    if len(dst_loops) > n:
        return None
    cols, _, src_rows = _src_set(the_slice)
    pos = {loop.iv: k for k, loop in enumerate(dst_loops)}
    col_of = {loop.iv: cols[k] for k, loop in enumerate(dst_loops)}
    rows: list[tuple[int, ...]] = []
    for k, s in enumerate(the_slice.loops):
        if s.lb is not None and s.ub is not None and s.ub == s.lb + 1 and not s.lb.is_constant:
            if s.lb.const != 0 or len(s.lb.coeffs) != 1 or s.lb.coeffs[0][1] != 1:
                return None
            loop = dst_loops[pos[s.lb.coeffs[0][0]]]
            rows += domain_rows([loop], cols, col_of)
            continue
        me = {s.loop.iv: cols[k], **col_of}
        iv = Lin.var(s.loop.iv)
        if s.lb is not None:
            rows.append(lin_row(iv - s.lb, cols, me))
        if s.ub is not None:
            rows.append(lin_row(s.ub - 1 - iv, cols, me))
    slice_set = _set(cols, [], rows)
    src_set = _set(cols, [], src_rows)
    return bool(src_set.subtract(slice_set).is_empty())


def dst_prefix_loops(func: Function, the_slice: Slice) -> list[LoopInfo]:
    """The consumer loops the slice's maps refer to (outermost first)."""
    path = the_slice.insert_loop
    infos = {info.path: info for info in loops_under(func, path[:1])}
    return [infos[path[:k]] for k in range(1, len(path) + 1)]


def projected_relation(dependence_cst: Constraints, src_depth: int, depth: int) -> Constraints:
    """The dependence relation with consumer loops deeper than ``depth`` projected out.

    The seed's step before ``getSliceBounds``: columns are the ``src_depth`` producer
    loops and the consumer's first ``depth`` loops.

    Raises:
        Tx8labError: the projection is not one convex set without existential variables.
    """
    n = len(dependence_cst.columns)
    keep = src_depth + depth
    pset = dependence_cst.isl_set.project_out(isl.dim_type.set, keep, n - keep)
    pieces = pset.coalesce().get_basic_sets()
    if len(pieces) != 1:
        raise Tx8labError("the projected relation is a union of several sets")
    title = f"{dependence_cst.title}, projected to depth {depth}"
    return Constraints.from_isl(pieces[0], dependence_cst.columns[:keep], title)
