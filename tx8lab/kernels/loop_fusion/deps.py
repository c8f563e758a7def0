"""Dependences as integer sets: access relations, the composed relation, emptiness.

Spec: seed 003 §3.2 (``checkMemrefAccessDependence``). An access relation maps the
iteration vector of a load/store to the memref element it touches; the dependence
relation between a source and a destination access is the composition
``srcRel ∘ dstRel⁻¹`` restricted to both iteration domains, plus MLIR's ordering
constraints at a loop depth ``d``: the first ``d-1`` common loops run the same iteration
and loop ``d`` runs a later one on the destination side (``d`` = number of common loops
+ 1 asks for a dependence inside one iteration of every common loop, which needs the
source to come first in the program text). A dependence exists iff the integer set is
non-empty (isl decides; MLIR uses its own Presburger library with the same answer on
these sets).

:class:`Constraints` keeps MLIR's layout of a ``FlatAffineValueConstraints`` - one column
per variable plus the constant, equalities ``= 0`` first, then inequalities ``>= 0`` -
so :meth:`Constraints.to_text` prints the matrices the seed shows.

Readings chosen where the seed is vague:

- Variables are named like the seed's isl form: ``i0..`` for the source loops, ``j0..``
  for the destination loops, ``l0..`` for memref dimensions.
- Equality rows of the dependence relation are ``dst index - src index = 0`` (the seed's
  ``-1 0 0 0 1 0 0 0 0 = 0``), then the source domain, then the destination domain,
  then ordering rows, each loop's ``iv - lb >= 0`` before ``ub - 1 - iv >= 0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import islpy as isl

from tx8lab.errors import Tx8labError
from tx8lab.kernels.loop_fusion.ir import (
    Apply,
    Constant,
    Function,
    Lin,
    Load,
    Loop,
    Path,
    Stmt,
    Store,
    walk,
)

# --------------------------------------------------------------------------- accesses


@dataclass(frozen=True)
class LoopInfo:
    """A loop with its bounds resolved to affine functions of outer induction variables."""

    path: Path
    iv: str
    lb: Lin
    ub: Lin
    """Exclusive upper bound."""

    @property
    def trip_count(self) -> int | None:
        """Constant trip count, if any."""
        span = self.ub - self.lb
        return max(span.const, 0) if span.is_constant else None


@dataclass(frozen=True)
class Access:
    """An ``affine.load``/``affine.store`` with resolved index and enclosing loops."""

    path: Path
    op: Load | Store
    memref: str
    index: tuple[Lin, ...]
    """One expression per memref dimension over the induction variables of ``loops``."""
    loops: tuple[LoopInfo, ...]
    """Enclosing loops, outermost first."""

    @property
    def is_store(self) -> bool:
        """True for a store."""
        return isinstance(self.op, Store)

    @property
    def depth(self) -> int:
        """Number of enclosing loops (MLIR's getNestingDepth)."""
        return len(self.loops)


def resolve_env(func: Function) -> dict[Path, dict[str, Lin]]:
    """For every statement, the affine value of the apply results/constants it sees.

    Names of ``affine.apply`` results and index constants map to their expressions;
    induction variables stay themselves.
    """
    out: dict[Path, dict[str, Lin]] = {}

    def visit(body: tuple[Stmt, ...], prefix: Path, env: dict[str, Lin]) -> None:
        local = dict(env)
        for i, stmt in enumerate(body):
            path = (*prefix, i)
            out[path] = local
            if isinstance(stmt, Apply):
                local = {**local, stmt.result: stmt.expr.subs(local)}
            elif isinstance(stmt, Constant) and stmt.type in ("index", "i64", "i32"):
                if stmt.value.lstrip("-").isdigit():
                    local = {**local, stmt.result: Lin.constant(int(stmt.value))}
            elif isinstance(stmt, Loop):
                visit(stmt.body, path, local)

    visit(func.body, (), {})
    return out


def collect_accesses(func: Function, root: Path = ()) -> list[Access]:
    """Every load and store under ``root`` (the whole function for ``()``), in program order."""
    envs = resolve_env(func)
    infos: dict[Path, LoopInfo] = {}
    out: list[Access] = []
    for path, stmt, _ in walk(func.body):
        env = envs[path]
        if isinstance(stmt, Loop):
            infos[path] = LoopInfo(path, stmt.iv, stmt.lb.subs(env), stmt.ub.subs(env))
        elif isinstance(stmt, Load | Store) and path[: len(root)] == root:
            loop_infos = tuple(infos[path[:k]] for k in range(1, len(path)))
            index = tuple(e.subs(env) for e in stmt.index)
            ivs = {info.iv for info in loop_infos}
            for e in index:
                bad = [n for n in e.names if n not in ivs]
                if bad:
                    raise Tx8labError(
                        f"@{func.name}: index of %{stmt.memref} uses %{bad[0]}, which is not "
                        "an enclosing loop variable, affine.apply of one or an index constant"
                    )
            out.append(Access(path, stmt, stmt.memref, index, loop_infos))
    return out


def loops_under(func: Function, root: Path) -> list[LoopInfo]:
    """Every loop under (and including) ``root``, pre-order, with resolved bounds."""
    envs = resolve_env(func)
    out: list[LoopInfo] = []
    for path, stmt, _ in walk(func.body):
        if isinstance(stmt, Loop) and path[: len(root)] == root:
            env = envs[path]
            out.append(LoopInfo(path, stmt.iv, stmt.lb.subs(env), stmt.ub.subs(env)))
    return out


def num_common_loops(a: Access, b: Access) -> int:
    """Loops surrounding both accesses (MLIR's getNumCommonSurroundingLoops)."""
    n = 0
    for la, lb in zip(a.loops, b.loops, strict=False):
        if la.path != lb.path:
            break
        n += 1
    return n


def appears_before(a: Path, b: Path) -> bool:
    """``a``'s ancestor comes before ``b``'s in their innermost common block."""
    for x, y in zip(a, b, strict=False):
        if x != y:
            return x < y
    return False


# --------------------------------------------------------------------------- constraints


@dataclass(frozen=True)
class Constraints:
    """An integer set as MLIR stores it: ``columns`` plus a constant column.

    A row ``r`` of ``equalities`` means ``r · [x, 1] = 0``, of ``inequalities``
    ``r · [x, 1] >= 0``.
    """

    columns: tuple[str, ...]
    equalities: tuple[tuple[int, ...], ...] = ()
    inequalities: tuple[tuple[int, ...], ...] = ()
    title: str = ""

    @property
    def num_constraints(self) -> int:
        """Rows in both matrices."""
        return len(self.equalities) + len(self.inequalities)

    def to_text(self) -> str:
        """The seed's dump: a header of column names, one row per constraint."""
        width = max([len(c) for c in self.columns] + [5, *self._widths()])
        head = " ".join(f"{c:>{width}}" for c in (*self.columns, "const"))
        rows = [f"{head}"]
        for kind, matrix in (("= 0", self.equalities), (">= 0", self.inequalities)):
            for row in matrix:
                rows.append(" ".join(f"{v:>{width}}" for v in row) + f"  {kind}")
        title = f"{self.title}: " if self.title else ""
        return f"{title}{len(self.columns)} variables, {self.num_constraints} constraints\n" + (
            "\n".join(rows)
        )

    def _widths(self) -> list[int]:
        return [len(str(v)) for m in (self.equalities, self.inequalities) for r in m for v in r]

    def __str__(self) -> str:
        return self.to_text()

    def isl_text(self) -> str:
        """The set in isl syntax, e.g. ``{ [i0, j0] : -i0 + j0 = 0 and i0 >= 0 }``."""
        parts = [_row_text(r, self.columns) + " = 0" for r in self.equalities]
        parts += [_row_text(r, self.columns) + " >= 0" for r in self.inequalities]
        dims = ", ".join(self.columns)
        return f"{{ [{dims}] : {' and '.join(parts)} }}" if parts else f"{{ [{dims}] }}"

    @cached_property
    def isl_set(self) -> isl.Set:
        """The set as an ``isl.Set``."""
        return isl.Set(self.isl_text())

    def is_empty(self) -> bool:
        """No integer point satisfies the constraints."""
        return bool(self.isl_set.is_empty())

    def with_rows(
        self,
        equalities: Sequence[tuple[int, ...]] = (),
        inequalities: Sequence[tuple[int, ...]] = (),
    ) -> Constraints:
        """A copy with more rows appended."""
        return Constraints(
            self.columns,
            (*self.equalities, *equalities),
            (*self.inequalities, *inequalities),
            self.title,
        )

    def as_dataframe(self) -> object:
        """The matrix as a ``pandas.DataFrame`` (rows labelled ``=`` or ``>=``)."""
        import pandas as pd

        rows = [(*r, "= 0") for r in self.equalities] + [(*r, ">= 0") for r in self.inequalities]
        return pd.DataFrame(rows, columns=[*self.columns, "const", "kind"])

    @staticmethod
    def from_isl(bset: isl.BasicSet, columns: Sequence[str], title: str = "") -> Constraints:
        """Read back an isl basic set with ``len(columns)`` set dimensions (no divs)."""
        n = len(columns)
        if bset.dim(isl.dim_type.div):
            raise Tx8labError("cannot show a set with existential (div) variables as a matrix")
        eqs: list[tuple[int, ...]] = []
        ineqs: list[tuple[int, ...]] = []
        for c in bset.get_constraints():
            coeffs = [int(c.get_coefficient_val(isl.dim_type.set, i).to_python()) for i in range(n)]
            row = (*coeffs, int(c.get_constant_val().to_python()))
            (eqs if c.is_equality() else ineqs).append(row)
        return Constraints(tuple(columns), tuple(eqs), tuple(ineqs), title)


def _row_text(row: Sequence[int], columns: Sequence[str]) -> str:
    terms = [
        name if c == 1 else f"-{name}" if c == -1 else f"{c}{name}"
        for c, name in zip(row, columns, strict=False)
        if c
    ]
    const = row[-1]
    if const or not terms:
        terms.append(str(const))
    return " + ".join(terms).replace("+ -", "- ")


def lin_row(expr: Lin, columns: Sequence[str], names: dict[str, str]) -> tuple[int, ...]:
    """The row of ``expr`` over ``columns`` (``names`` maps IR names to columns)."""
    index = {c: i for i, c in enumerate(columns)}
    row = [0] * (len(columns) + 1)
    for var, coeff in expr.coeffs:
        col = names.get(var)
        if col is None or col not in index:
            raise Tx8labError(f"%{var} is not a variable of this constraint system")
        row[index[col]] += coeff
    row[-1] = expr.const
    return tuple(row)


def domain_rows(
    loops: Sequence[LoopInfo], columns: Sequence[str], names: dict[str, str]
) -> list[tuple[int, ...]]:
    """``iv - lb >= 0`` and ``ub - 1 - iv >= 0`` for each loop."""
    rows: list[tuple[int, ...]] = []
    for loop in loops:
        iv = Lin.var(loop.iv)
        rows.append(lin_row(iv - loop.lb, columns, names))
        rows.append(lin_row(loop.ub - 1 - iv, columns, names))
    return rows


def access_relation(access: Access, prefix: str = "i") -> Constraints:
    """The access relation as the seed prints it: loop columns, memref columns, const."""
    loop_cols = [f"{prefix}{k}" for k in range(access.depth)]
    mem_cols = [f"l{k}" for k in range(len(access.index))]
    columns = (*loop_cols, *mem_cols)
    names = {loop.iv: col for loop, col in zip(access.loops, loop_cols, strict=True)}
    names.update({col: col for col in mem_cols})
    eqs = [
        lin_row(e - Lin.var(col), columns, names)
        for e, col in zip(access.index, mem_cols, strict=True)
    ]
    ineqs = domain_rows(access.loops, columns, names)
    kind = "store" if access.is_store else "load"
    return Constraints(columns, tuple(eqs), tuple(ineqs), f"{kind} %{access.memref} relation")


def iteration_domain(access: Access, prefix: str = "i") -> Constraints:
    """The iteration domain of an access (its loops' bounds)."""
    cols = tuple(f"{prefix}{k}" for k in range(access.depth))
    names = {loop.iv: col for loop, col in zip(access.loops, cols, strict=True)}
    return Constraints(cols, (), tuple(domain_rows(access.loops, cols, names)), "domain")


@dataclass(frozen=True)
class Dependence:
    """A non-empty dependence polyhedron between two accesses at a loop depth."""

    src: Access
    dst: Access
    depth: int
    constraints: Constraints
    """Columns ``i0..`` (source loops) then ``j0..`` (destination loops)."""


def dependence_constraints(src: Access, dst: Access, depth: int) -> Constraints | None:
    """The composed relation with ordering constraints at ``depth``.

    ``None`` when MLIR skips the pair before building it: the destination does not
    follow the source in the program.
    """
    common = num_common_loops(src, dst)
    if depth > common + 1:
        raise Tx8labError(f"dependence depth {depth} exceeds common loops + 1 ({common + 1})")
    if depth > common and not appears_before(src.path, dst.path):
        return None
    src_cols = [f"i{k}" for k in range(src.depth)]
    dst_cols = [f"j{k}" for k in range(dst.depth)]
    columns = (*src_cols, *dst_cols)
    src_names = {loop.iv: c for loop, c in zip(src.loops, src_cols, strict=True)}
    dst_names = {loop.iv: c for loop, c in zip(dst.loops, dst_cols, strict=True)}
    identity = {c: c for c in columns}
    eqs: list[tuple[int, ...]] = []
    for es, ed in zip(src.index, dst.index, strict=True):
        rs = lin_row(es, columns, src_names)
        rd = lin_row(ed, columns, dst_names)
        eqs.append(tuple(d - s for s, d in zip(rs, rd, strict=True)))
    ineqs = domain_rows(src.loops, columns, src_names) + domain_rows(dst.loops, columns, dst_names)
    for k in range(min(common, depth)):
        diff = lin_row(Lin.var(dst_cols[k]) - Lin.var(src_cols[k]), columns, identity)
        if k == depth - 1:
            ineqs.append((*diff[:-1], diff[-1] - 1))
        else:
            eqs.append(diff)
    title = f"dependence %{src.memref} depth {depth}"
    return Constraints(columns, tuple(eqs), tuple(ineqs), title)


def check_dependence(
    src: Access, dst: Access, depth: int, allow_rar: bool = False
) -> Dependence | None:
    """MLIR's checkMemrefAccessDependence: the dependence polyhedron, or ``None``."""
    if src.memref != dst.memref:
        return None
    if not allow_rar and not src.is_store and not dst.is_store:
        return None
    cst = dependence_constraints(src, dst, depth)
    if cst is None or cst.is_empty():
        return None
    return Dependence(src, dst, depth, cst)


def distance_bounds(dep: Dependence, num_loops: int) -> list[tuple[int, int]]:
    """(min, max) of ``dst_iv - src_iv`` per common loop (MLIR's dependence components).

    Only the first ``num_loops`` common loops are reported.
    """
    cst = dep.constraints
    out = []
    common = num_common_loops(dep.src, dep.dst)
    for k in range(min(num_loops, common)):
        cols = (*cst.columns, "delta")
        names = {c: c for c in cols}
        row = lin_row(Lin.var("delta") - Lin.var(f"j{k}") + Lin.var(f"i{k}"), cols, names)
        ext = Constraints(
            cols,
            (*((*r[:-1], 0, r[-1]) for r in cst.equalities), row),
            tuple((*r[:-1], 0, r[-1]) for r in cst.inequalities),
        )
        s = ext.isl_set
        out.append(
            (
                int(s.dim_min_val(len(cols) - 1).to_python()),
                int(s.dim_max_val(len(cols) - 1).to_python()),
            )
        )
    return out


def is_loop_parallel(func: Function, loop_path: Path) -> bool:
    """MLIR's isLoopMemoryParallel: no dependence carried by the loop at ``loop_path``."""
    accesses = collect_accesses(func, loop_path)
    depth = len(loop_path)
    return not any(check_dependence(a, b, depth) for a in accesses for b in accesses)


def has_cyclic_dependence(func: Function, root: Path) -> bool:
    """MLIR's hasCyclicDependence: the dependence graph of the nest's accesses has a cycle."""
    accesses = collect_accesses(func, root)
    root_depth = len(root) - 1
    edges: dict[int, set[int]] = {i: set() for i in range(len(accesses))}
    for i, a in enumerate(accesses):
        for j, b in enumerate(accesses):
            if a.memref != b.memref:
                continue
            common = num_common_loops(a, b)
            for d in range(root_depth + 1, common + 2):
                if check_dependence(a, b, d):
                    edges[i].add(j)
                    break
    return _has_cycle(edges)


def _has_cycle(edges: dict[int, set[int]]) -> bool:
    state: dict[int, int] = {}

    def dfs(n: int) -> bool:
        state[n] = 1
        for m in sorted(edges[n]):
            if state.get(m) == 1:
                return True
            if m not in state and dfs(m):
                return True
        state[n] = 2
        return False

    return any(n not in state and dfs(n) for n in edges)
