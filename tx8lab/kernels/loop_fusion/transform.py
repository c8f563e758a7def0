"""The IR rewrites of MLIR's loop fusion: sink, insert a slice, promote, privatize.

Spec: MLIR 22 ``sinkSequentialLoops``/``permuteLoops`` (LoopUtils), ``fuseLoops``
(LoopFusionUtils), ``promoteIfSingleIteration`` and ``createPrivateMemRef`` (LoopFusion),
``replaceAllMemRefUsesWith`` (Utils). Each function takes a :class:`Function` and returns
a new one.

Readings chosen where MLIR's code is subtle (kept so the output matches ``mlir-opt``):

- A promoted loop's induction variable becomes its lower bound: the consumer loop itself
  when the bound is ``(d0) -> (d0)``, an ``affine.apply`` placed before the loop
  otherwise, an ``arith.constant ... : index`` at the top of the function for a
  constant.
- Privatization rewrites every access to the old memref in the fused nest to
  ``index - lb(outer loops)``; an access whose map is not the identity leaves behind
  one unused ``affine.apply`` per index, as ``replaceAllMemRefUsesWith`` does (they
  count as ops for later fusions in MLIR's cost model, so the explorer keeps them).
- The permutation that sinks sequential loops is applied to a perfectly nested band
  with constant bounds only.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from tx8lab.errors import Tx8labError
from tx8lab.kernels.loop_fusion.cost import region_of
from tx8lab.kernels.loop_fusion.deps import (
    check_dependence,
    collect_accesses,
    distance_bounds,
)
from tx8lab.kernels.loop_fusion.ir import (
    Alloc,
    Apply,
    Arith,
    Constant,
    Function,
    Lin,
    Load,
    Loop,
    MemRefType,
    Path,
    Stmt,
    Store,
    replace_at,
    walk,
)
from tx8lab.kernels.loop_fusion.slices import Slice

_FRESH = itertools.count(1)


def _fresh(name: str) -> str:
    base = name.split("_f")[0] if "_f" in name else name
    return f"{base}_f{next(_FRESH)}"


# --------------------------------------------------------------------------- renaming


def rename_stmt(stmt: Stmt, names: dict[str, str]) -> Stmt:
    """``stmt`` (and its body) with every use of a name in ``names`` renamed."""
    r = names.get
    if isinstance(stmt, Loop):
        return Loop(
            r(stmt.iv, stmt.iv),
            stmt.lb.rename(names),
            stmt.ub.rename(names),
            tuple(rename_stmt(s, names) for s in stmt.body),
        )
    if isinstance(stmt, Load):
        index = tuple(e.rename(names) for e in stmt.index)
        return Load(r(stmt.result, stmt.result), r(stmt.memref, stmt.memref), index)
    if isinstance(stmt, Store):
        index = tuple(e.rename(names) for e in stmt.index)
        return Store(r(stmt.value, stmt.value), r(stmt.memref, stmt.memref), index)
    if isinstance(stmt, Arith):
        ops = tuple(r(o, o) for o in stmt.operands)
        return Arith(r(stmt.result, stmt.result), stmt.name, ops, stmt.type)
    if isinstance(stmt, Apply):
        operands = tuple(r(o, o) for o in stmt.operands)
        return Apply(r(stmt.result, stmt.result), stmt.expr.rename(names), operands)
    if isinstance(stmt, Constant):
        return Constant(r(stmt.result, stmt.result), stmt.value, stmt.type)
    return Alloc(r(stmt.result, stmt.result), stmt.type)


def clone_fresh(stmt: Stmt) -> tuple[Stmt, dict[str, str]]:
    """A copy of ``stmt`` whose every defined name is new; returns the renaming too."""
    names: dict[str, str] = {}
    for _, s, _ in walk((stmt,)):
        if isinstance(s, Loop):
            names[s.iv] = _fresh(s.iv)
        elif not isinstance(s, Store):
            names[s.result] = _fresh(s.result)
    return rename_stmt(stmt, names), names


# --------------------------------------------------------------------------- sinking


def perfect_band(func: Function, nest: int) -> list[Path]:
    """MLIR's getPerfectlyNestedLoops: loops nested with nothing else beside them."""
    path: Path = (nest,)
    band = [path]
    loop = func.at(path)
    while isinstance(loop, Loop) and len(loop.body) == 1 and isinstance(loop.body[0], Loop):
        path = (*path, 0)
        band.append(path)
        loop = loop.body[0]
    return band


def parallel_band_loops(func: Function, nest: int) -> tuple[list[Path], list[bool], bool]:
    """(band, is-parallel per band loop, sinking permutation legal) for the nest."""
    band = perfect_band(func, nest)
    n = len(band)
    accesses = collect_accesses(func, (nest,))
    comps: list[list[tuple[int, int]]] = []
    for d in range(1, n + 1):
        for a in accesses:
            for b in accesses:
                dep = check_dependence(a, b, d)
                if dep is not None:
                    comps.append(distance_bounds(dep, n))
    parallel = [all(c[j] == (0, 0) for c in comps) for j in range(n)]
    num_par = sum(1 for is_par in parallel if is_par)
    perm: list[int] = []
    nxt_par, nxt_seq = 0, num_par
    for is_par in parallel:
        if is_par:
            perm.append(nxt_par)
            nxt_par += 1
        else:
            perm.append(nxt_seq)
            nxt_seq += 1
    inv = [0] * n
    for i, target in enumerate(perm):
        inv[target] = i
    legal = True
    for c in comps:
        for j in range(n):
            lb = c[inv[j]][0]
            if lb > 0:
                break
            if lb < 0:
                legal = False
                break
    return band, parallel, legal


def sink_sequential_loops(func: Function, nest: int) -> Function:
    """MLIR's sinkSequentialLoops: parallel loops outward, sequential loops inward.

    The relative order inside each group is kept.
    """
    band, parallel, legal = parallel_band_loops(func, nest)
    if len(band) < 2 or not legal:
        return func
    loops = [func.at(p) for p in band]
    assert all(isinstance(lp, Loop) for lp in loops)
    headers = [lp for lp in loops if isinstance(lp, Loop)]
    ivs = {lp.iv for lp in headers}
    if any(set(lp.lb.names + lp.ub.names) & ivs for lp in headers):
        return func
    order = [lp for lp, p in zip(headers, parallel, strict=True) if p]
    order += [lp for lp, p in zip(headers, parallel, strict=True) if not p]
    if [lp.iv for lp in order] == [lp.iv for lp in headers]:
        return func
    body: tuple[Stmt, ...] = headers[-1].body
    for lp in reversed(order):
        body = (Loop(lp.iv, lp.lb, lp.ub, body),)
    return func.with_body(replace_at(func.body, (nest,), body))


# --------------------------------------------------------------------------- fusion


def _find_loop(body: tuple[Stmt, ...], iv: str) -> Path | None:
    for path, stmt, _ in walk(body):
        if isinstance(stmt, Loop) and stmt.iv == iv:
            return path
    return None


def fuse_loops(func: Function, src: int, dst: int, the_slice: Slice) -> Function:
    """MLIR's fuseLoops: insert ``the_slice`` of nest ``src`` into nest ``dst``.

    The slice goes at the start of the consumer loop it names; slice loops that run once
    are promoted. The producer nest stays; removing it is the caller's decision.
    """
    src_loop = func.body[src]
    if not isinstance(src_loop, Loop) or the_slice.insert_loop[0] != dst:
        raise Tx8labError("fuse_loops: src must be a nest and the slice must target dst")
    clone, names = clone_fresh(src_loop)
    assert isinstance(clone, Loop)
    # set the slice bounds on the cloned loops
    for s in the_slice.loops:
        rel = s.loop.path[1:]
        new_iv = names[s.loop.iv]
        path = _find_loop((clone,), new_iv)
        assert path is not None
        assert path[1:] == rel
        old = _at((clone,), path)
        lb = s.lb if s.lb is not None else old.lb
        ub = s.ub if s.ub is not None else old.ub
        clone = _replace_in(clone, path, Loop(old.iv, lb, ub, old.body))
    target = func.at(the_slice.insert_loop)
    assert isinstance(target, Loop)
    fused = Loop(target.iv, target.lb, target.ub, (clone, *target.body))
    out = func.with_body(replace_at(func.body, the_slice.insert_loop, (fused,)))
    # promote single-iteration slice loops, outermost first
    for s in the_slice.loops:
        path = _find_loop(out.body, names[s.loop.iv])
        if path is None:
            continue
        loop = out.at(path)
        if isinstance(loop, Loop) and loop.trip_count == 1:
            out = promote_if_single_iteration(out, path)
    return out


def _at(body: tuple[Stmt, ...], path: Path) -> Loop:
    stmt = Function("x", (), body).at(path)
    assert isinstance(stmt, Loop)
    return stmt


def _replace_in(root: Loop, path: Path, new: Loop) -> Loop:
    if len(path) == 1:
        return new
    body = replace_at(root.body, path[1:], (new,))
    return Loop(root.iv, root.lb, root.ub, body)


def promote_if_single_iteration(func: Function, path: Path) -> Function:
    """Replace the one-iteration loop at ``path`` by its body (promoteIfSingleIteration)."""
    loop = func.at(path)
    if not isinstance(loop, Loop) or loop.trip_count != 1:
        return func
    body = func.body
    before: tuple[Stmt, ...] = ()
    if loop.lb.is_constant:
        name = _fresh("c")
        body = (Constant(name, str(loop.lb.const), "index"), *body)
        path = (path[0] + 1, *path[1:])
    elif loop.lb.const == 0 and len(loop.lb.coeffs) == 1 and loop.lb.coeffs[0][1] == 1:
        name = loop.lb.coeffs[0][0]
    else:
        name = _fresh("apply")
        before = (Apply(name, loop.lb, tuple(loop.lb.names)),)
    renamed = tuple(rename_stmt(s, {loop.iv: name}) for s in loop.body)
    return func.with_body(replace_at(body, path, (*before, *renamed)))


def _is_identity(index: Sequence[Lin]) -> bool:
    names = []
    for e in index:
        if e.const != 0 or len(e.coeffs) != 1 or e.coeffs[0][1] != 1:
            return False
        names.append(e.coeffs[0][0])
    return len(set(names)) == len(names)


def create_private_memref(func: Function, dst: int, memref: str, depth: int) -> Function:
    """MLIR's createPrivateMemRef: give the fused nest its own, smaller ``memref``.

    The new buffer is the box the first store writes per iteration of the outer
    ``depth`` loops, allocated at the top of the function.
    """
    stores = [a for a in collect_accesses(func, (dst,)) if a.is_store and a.memref == memref]
    if not stores:
        raise Tx8labError(f"no store to %{memref} in the fused nest")
    region = region_of(func, stores[0], depth)
    old_type = func.memrefs[memref]
    new_name = _fresh("alloc")
    new_type = MemRefType(region.shape, old_type.element)
    lbs = region.lbs

    def rewrite(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in body:
            if isinstance(stmt, Loop):
                out.append(stmt.with_body(rewrite(stmt.body)))
            elif isinstance(stmt, Load | Store) and stmt.memref == memref:
                if not _is_identity(stmt.index):
                    operands = tuple(dict.fromkeys(n for e in stmt.index for n in e.names))
                    out.extend(Apply(_fresh("apply"), e, operands) for e in stmt.index)
                index = tuple(e - lb for e, lb in zip(stmt.index, lbs, strict=True))
                if isinstance(stmt, Load):
                    out.append(Load(stmt.result, new_name, index))
                else:
                    out.append(Store(stmt.value, new_name, index))
            else:
                out.append(stmt)
        return tuple(out)

    nest = func.body[dst]
    assert isinstance(nest, Loop)
    new_nest = nest.with_body(rewrite(nest.body))
    body = (Alloc(new_name, new_type), *replace_at(func.body, (dst,), (new_nest,)))
    return func.with_body(body)
