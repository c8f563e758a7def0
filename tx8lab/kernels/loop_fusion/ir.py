"""Affine loop nests: affine expressions, loops, loads/stores and a builder.

A :class:`Function` holds memref arguments and a body of top-level statements
(``memref.alloc``, ``arith.constant`` and ``affine.for`` nests). Loops have one lower and
one upper bound, each an affine expression of the enclosing induction variables (a
constant for the nests users write; slice loops after fusion get bounds like
``%i to %i + 3``), step 1. Loads and stores index a memref with one affine expression per
dimension. Everything is frozen: transformations build new trees.

Statements are addressed by their *path*, the tuple of indices from the function body down
(``(2, 0, 1)`` is ``body[2].body[0].body[1]``); the analyses name ops that way.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from tx8lab.errors import Tx8labError

#: Bytes per element of the memref element types the explorer accepts.
ELEMENT_BYTES: dict[str, int] = {
    "f64": 8,
    "f32": 4,
    "f16": 2,
    "bf16": 2,
    "i64": 8,
    "i32": 4,
    "i16": 2,
    "i8": 1,
    "i1": 1,
}

Path: TypeAlias = tuple[int, ...]


# --------------------------------------------------------------------------- affine exprs


@dataclass(frozen=True)
class Lin:
    """An affine expression ``sum(c * var) + const`` over named values (no div/mod).

    Examples:
        >>> e = Lin.var("i") * 2 + Lin.var("j") - 1
        >>> e.coeff("i"), e.const
        (2, -1)
        >>> e.evaluate({"i": 3, "j": 4})
        9
    """

    coeffs: tuple[tuple[str, int], ...] = ()
    """(name, coefficient) pairs, sorted by name, no zero coefficients."""
    const: int = 0

    @staticmethod
    def of(mapping: Mapping[str, int], const: int = 0) -> Lin:
        """The expression with these coefficients (zeros dropped)."""
        return Lin(tuple(sorted((k, int(v)) for k, v in mapping.items() if v)), int(const))

    @staticmethod
    def var(name: str) -> Lin:
        """The expression ``name``."""
        return Lin(((name, 1),), 0)

    @staticmethod
    def constant(value: int) -> Lin:
        """The constant expression ``value``."""
        return Lin((), int(value))

    @staticmethod
    def lift(value: Lin | int) -> Lin:
        """``value`` as an expression (an int becomes a constant)."""
        return value if isinstance(value, Lin) else Lin.constant(value)

    def as_dict(self) -> dict[str, int]:
        """Coefficients by name."""
        return dict(self.coeffs)

    def coeff(self, name: str) -> int:
        """Coefficient of ``name`` (0 when absent)."""
        return self.as_dict().get(name, 0)

    @property
    def names(self) -> tuple[str, ...]:
        """The names with a non-zero coefficient."""
        return tuple(k for k, _ in self.coeffs)

    @property
    def is_constant(self) -> bool:
        """No name appears."""
        return not self.coeffs

    def __add__(self, other: Lin | int) -> Lin:
        other = Lin.lift(other)
        merged = self.as_dict()
        for k, v in other.coeffs:
            merged[k] = merged.get(k, 0) + v
        return Lin.of(merged, self.const + other.const)

    __radd__ = __add__

    def __neg__(self) -> Lin:
        return Lin(tuple((k, -v) for k, v in self.coeffs), -self.const)

    def __sub__(self, other: Lin | int) -> Lin:
        return self + (-Lin.lift(other))

    def __rsub__(self, other: Lin | int) -> Lin:
        return Lin.lift(other) - self

    def __mul__(self, factor: int) -> Lin:
        if not isinstance(factor, int):
            raise Tx8labError(
                f"affine expressions multiply by integer constants only, not {factor!r}"
            )
        return Lin.of({k: v * factor for k, v in self.coeffs}, self.const * factor)

    __rmul__ = __mul__

    def subs(self, env: Mapping[str, Lin]) -> Lin:
        """Replace every name found in ``env`` by its expression."""
        out = Lin.constant(self.const)
        for k, v in self.coeffs:
            out = out + (env[k] * v if k in env else Lin(((k, v),)))
        return out

    def rename(self, names: Mapping[str, str]) -> Lin:
        """Rename variables (names not in ``names`` stay)."""
        return Lin.of(
            _sum_by_key((names.get(k, k), v) for k, v in self.coeffs),
            self.const,
        )

    def evaluate(self, env: Mapping[str, int]) -> int:
        """The value for integer values of every name."""
        return self.const + sum(v * env[k] for k, v in self.coeffs)

    def __str__(self) -> str:
        return format_lin(self, {k: k for k, _ in self.coeffs}, order=self.names)


def _sum_by_key(items: Iterator[tuple[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for k, v in items:
        out[k] = out.get(k, 0) + v
    return out


def format_lin(expr: Lin, names: Mapping[str, str], order: tuple[str, ...]) -> str:
    """MLIR's way of printing an affine expression: ``-d0 + d1 * 2 - 3``.

    ``names`` maps each variable to its printed name, ``order`` gives the term order
    (MLIR prints dims in operand order).
    """
    coeffs = expr.as_dict()
    terms = [(names[k], coeffs[k]) for k in order if coeffs.get(k)]
    terms += [(names[k], v) for k, v in expr.coeffs if k not in order]
    out = ""
    for name, c in terms:
        if not out:
            out = name if c == 1 else f"-{name}" if c == -1 else f"{name} * {c}"
        elif c > 0:
            out += f" + {name}" if c == 1 else f" + {name} * {c}"
        else:
            out += f" - {name}" if c == -1 else f" - {name} * {-c}"
    if not out:
        return str(expr.const)
    if expr.const > 0:
        out += f" + {expr.const}"
    elif expr.const < 0:
        out += f" - {-expr.const}"
    return out


# --------------------------------------------------------------------------- types and ops


@dataclass(frozen=True)
class MemRefType:
    """A statically shaped memref of scalars, e.g. ``memref<8x128xf32>``."""

    shape: tuple[int, ...]
    element: str

    def __post_init__(self) -> None:
        if self.element not in ELEMENT_BYTES:
            raise Tx8labError(
                f"memref element type {self.element!r} is not supported: use one of "
                f"{', '.join(ELEMENT_BYTES)}"
            )
        if any(d < 1 for d in self.shape):
            raise Tx8labError(f"memref shape {self.shape} must be static and positive")

    @property
    def rank(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def element_bytes(self) -> int:
        """Bytes per element."""
        return ELEMENT_BYTES[self.element]

    @property
    def num_bytes(self) -> int:
        """Bytes of the whole memref."""
        return math.prod(self.shape) * self.element_bytes

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"memref<{dims}{self.element}>"


@dataclass(frozen=True)
class Load:
    """``%result = affine.load %memref[index...]``."""

    result: str
    memref: str
    index: tuple[Lin, ...]


@dataclass(frozen=True)
class Store:
    """``affine.store %value, %memref[index...]``."""

    value: str
    memref: str
    index: tuple[Lin, ...]


@dataclass(frozen=True)
class Arith:
    """Any other scalar op, printed ``%r = name %a, %b : type`` (arith.addf, math.exp...)."""

    result: str
    name: str
    operands: tuple[str, ...]
    type: str


@dataclass(frozen=True)
class Constant:
    """``%result = arith.constant value : type``."""

    result: str
    value: str
    type: str


@dataclass(frozen=True)
class Apply:
    """``%result = affine.apply map(operands)``: one affine expression of outer values."""

    result: str
    expr: Lin
    operands: tuple[str, ...] = ()
    """The map's operands when they are more than the names ``expr`` uses."""


@dataclass(frozen=True)
class Alloc:
    """``%result = memref.alloc() : type`` (top level only)."""

    result: str
    type: MemRefType


@dataclass(frozen=True)
class Loop:
    """``affine.for %iv = lb to ub { body }`` with step 1; ``ub`` is exclusive."""

    iv: str
    lb: Lin
    ub: Lin
    body: tuple[Stmt, ...] = ()

    @property
    def trip_count(self) -> int | None:
        """``ub - lb`` when it is a constant (MLIR's getStaticTripCount), else ``None``."""
        span = self.ub - self.lb
        return max(span.const, 0) if span.is_constant else None

    def with_body(self, body: tuple[Stmt, ...]) -> Loop:
        """A copy with another body."""
        return Loop(self.iv, self.lb, self.ub, body)


Stmt: TypeAlias = Load | Store | Arith | Constant | Apply | Alloc | Loop


@dataclass(frozen=True)
class Function:
    """``func.func @name(%args: memref...)`` whose body holds allocs, constants and nests."""

    name: str
    args: tuple[tuple[str, MemRefType], ...]
    body: tuple[Stmt, ...]

    @property
    def memrefs(self) -> dict[str, MemRefType]:
        """Every memref value (arguments and top-level allocs) with its type."""
        out = dict(self.args)
        out.update({s.result: s.type for s in self.body if isinstance(s, Alloc)})
        return out

    @property
    def nests(self) -> tuple[int, ...]:
        """Body positions of the top-level ``affine.for`` nests, in program order."""
        return tuple(i for i, s in enumerate(self.body) if isinstance(s, Loop))

    def at(self, path: Path) -> Stmt:
        """The statement at ``path``."""
        body: tuple[Stmt, ...] = self.body
        stmt: Stmt | None = None
        for i in path:
            stmt = body[i]
            body = stmt.body if isinstance(stmt, Loop) else ()
        if stmt is None:
            raise Tx8labError("empty path names no statement")
        return stmt

    def with_body(self, body: tuple[Stmt, ...]) -> Function:
        """A copy with another body."""
        return Function(self.name, self.args, body)


def walk(
    body: tuple[Stmt, ...], prefix: Path = (), loops: tuple[Loop, ...] = ()
) -> Iterator[tuple[Path, Stmt, tuple[Loop, ...]]]:
    """Every statement in pre-order with its path and enclosing loops (outermost first)."""
    for i, stmt in enumerate(body):
        path = (*prefix, i)
        yield path, stmt, loops
        if isinstance(stmt, Loop):
            yield from walk(stmt.body, path, (*loops, stmt))


def replace_at(body: tuple[Stmt, ...], path: Path, new: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """``body`` with the statement at ``path`` replaced by ``new`` (zero or more)."""
    head, rest = path[0], path[1:]
    if not rest:
        return (*body[:head], *new, *body[head + 1 :])
    loop = body[head]
    if not isinstance(loop, Loop):
        raise Tx8labError(f"path {path} goes through a non-loop statement")
    return (*body[:head], loop.with_body(replace_at(loop.body, rest, new)), *body[head + 1 :])


def defined_names(stmt: Stmt) -> tuple[str, ...]:
    """SSA names a statement defines (loop: its induction variable)."""
    if isinstance(stmt, Store):
        return ()
    if isinstance(stmt, Loop):
        return (stmt.iv,)
    return (stmt.result,)


def used_names(stmt: Stmt) -> tuple[str, ...]:
    """SSA names a statement reads (not counting the body of a loop)."""
    if isinstance(stmt, Load):
        return (stmt.memref, *(n for e in stmt.index for n in e.names))
    if isinstance(stmt, Store):
        return (stmt.value, stmt.memref, *(n for e in stmt.index for n in e.names))
    if isinstance(stmt, Arith):
        return stmt.operands
    if isinstance(stmt, Apply):
        return tuple(dict.fromkeys((*stmt.operands, *stmt.expr.names)))
    if isinstance(stmt, Loop):
        return (*stmt.lb.names, *stmt.ub.names)
    return ()


# --------------------------------------------------------------------------- builder


@dataclass
class _Frame:
    body: list[Stmt] = field(default_factory=list)


class NestBuilder:
    """Build a :class:`Function` of affine loop nests from Python.

    Examples:
        >>> b = NestBuilder("scale")
        >>> x, y = b.arg("x", (4,)), b.arg("y", (4,))
        >>> with b.loop(0, 4) as i:
        ...     v = b.load(x, i)
        ...     b.store(b.op("arith.mulf", v, v), y, i)
        >>> print(b.build().nests)
        (0,)
    """

    def __init__(self, name: str = "nests") -> None:
        self.name = name
        self._args: list[tuple[str, MemRefType]] = []
        self._stack: list[_Frame] = [_Frame()]
        self._counter = 0
        self._ivs = 0
        self._types: dict[str, MemRefType] = {}

    def _fresh(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}{self._counter}"

    def arg(self, name: str, shape: tuple[int, ...], element: str = "f32") -> str:
        """A memref function argument (escapes the function: never privatized)."""
        self._check_new(name)
        memref = MemRefType(tuple(shape), element)
        self._args.append((name, memref))
        self._types[name] = memref
        return name

    def alloc(self, name: str, shape: tuple[int, ...], element: str = "f32") -> str:
        """A ``memref.alloc`` at the top of the function (a local buffer)."""
        if len(self._stack) != 1:
            raise Tx8labError(f"alloc {name!r}: allocate memrefs at the top level, not in a loop")
        self._check_new(name)
        memref = MemRefType(tuple(shape), element)
        self._stack[0].body.append(Alloc(name, memref))
        self._types[name] = memref
        return name

    def _check_new(self, name: str) -> None:
        if name in self._types:
            raise Tx8labError(f"memref {name!r} is defined twice")

    def constant(self, value: float, type: str = "f32") -> str:
        """An ``arith.constant`` in the current body."""
        result = self._fresh("cst")
        self._stack[-1].body.append(Constant(result, f"{float(value):e}", type))
        return result

    @contextlib.contextmanager
    def loop(self, lb: int | Lin, ub: int | Lin, iv: str | None = None) -> Iterator[Lin]:
        """``affine.for`` from ``lb`` to ``ub`` (exclusive); yields the induction variable."""
        self._ivs += 1
        name = iv or f"i{self._ivs}"
        frame = _Frame()
        self._stack.append(frame)
        try:
            yield Lin.var(name)
        finally:
            self._stack.pop()
        self._stack[-1].body.append(Loop(name, Lin.lift(lb), Lin.lift(ub), tuple(frame.body)))

    def load(self, memref: str, *index: Lin | int) -> str:
        """``affine.load``; returns the loaded value."""
        self._check_index(memref, index)
        result = self._fresh("v")
        self._stack[-1].body.append(Load(result, memref, tuple(Lin.lift(e) for e in index)))
        return result

    def store(self, value: str, memref: str, *index: Lin | int) -> None:
        """``affine.store``."""
        self._check_index(memref, index)
        self._stack[-1].body.append(Store(value, memref, tuple(Lin.lift(e) for e in index)))

    def op(self, name: str, *operands: str, type: str = "f32") -> str:
        """A scalar op such as ``arith.addf``; returns its result."""
        result = self._fresh("v")
        self._stack[-1].body.append(Arith(result, name, tuple(operands), type))
        return result

    def _check_index(self, memref: str, index: tuple[Lin | int, ...]) -> None:
        if memref not in self._types:
            raise Tx8labError(f"memref {memref!r} is not an argument or alloc of {self.name}")
        if len(index) != self._types[memref].rank:
            raise Tx8labError(
                f"memref {memref!r} has rank {self._types[memref].rank}, "
                f"indexed with {len(index)} expressions"
            )

    def build(self) -> Function:
        """The function (checked by :func:`check_function`)."""
        if len(self._stack) != 1:
            raise Tx8labError("build() inside an open loop: close every `with b.loop(...)` first")
        func = Function(self.name, tuple(self._args), tuple(self._stack[0].body))
        check_function(func)
        return func


# --------------------------------------------------------------------------- checks


def check_function(func: Function, where: str = "") -> None:
    """Raise a :class:`Tx8labError` unless ``func`` is in the supported subset.

    Checks: SSA names defined before use, memrefs indexed with their rank, top level holds
    only allocs, constants and loops, loop bounds use enclosing induction variables (or
    ``affine.apply``/index constants of them) only.
    """
    prefix = f"{where}: " if where else ""
    memrefs = dict(func.args)
    defined: set[str] = set(memrefs)
    for stmt in func.body:
        if isinstance(stmt, Load | Store | Arith | Apply):
            raise Tx8labError(
                f"{prefix}@{func.name}: only memref.alloc, arith.constant and affine.for "
                f"may appear at the top level, found {type(stmt).__name__.lower()}"
            )
        if isinstance(stmt, Alloc):
            memrefs[stmt.result] = stmt.type

    def visit(body: tuple[Stmt, ...], scope: set[str], ivs: set[str]) -> None:
        local = set(scope)
        for stmt in body:
            for name in used_names(stmt):
                if name not in local:
                    raise Tx8labError(f"{prefix}@{func.name}: %{name} is used before it is defined")
            if isinstance(stmt, Load | Store):
                if stmt.memref not in memrefs:
                    raise Tx8labError(f"{prefix}@{func.name}: %{stmt.memref} is not a memref")
                if len(stmt.index) != memrefs[stmt.memref].rank:
                    raise Tx8labError(
                        f"{prefix}@{func.name}: %{stmt.memref} has rank "
                        f"{memrefs[stmt.memref].rank}, indexed with {len(stmt.index)}"
                    )
                for e in stmt.index:
                    for n in e.names:
                        if n in memrefs:
                            raise Tx8labError(f"{prefix}@{func.name}: memref %{n} used as an index")
            for name in defined_names(stmt):
                if name in local:
                    raise Tx8labError(f"{prefix}@{func.name}: %{name} is defined twice")
            if isinstance(stmt, Loop):
                visit(stmt.body, local | {stmt.iv}, ivs | {stmt.iv})
            else:
                local.update(defined_names(stmt))

    visit(func.body, defined, set())


def uniquify(func: Function) -> Function:
    """``func`` with every SSA name defined once in the whole function.

    MLIR lets sibling regions reuse a name (two nests both with ``%i``); the analyses look
    values up by name across nests, so repeated names get a suffix (``%i_1``).
    """
    seen: set[str] = {name for name, _ in func.args}

    def fresh(name: str) -> str:
        if name not in seen:
            seen.add(name)
            return name
        k = 1
        while f"{name}_{k}" in seen:
            k += 1
        seen.add(f"{name}_{k}")
        return f"{name}_{k}"

    def rename_stmt(stmt: Stmt, env: dict[str, str]) -> tuple[Stmt, dict[str, str]]:
        r = env.get
        if isinstance(stmt, Loop):
            lb, ub = stmt.lb.rename(env), stmt.ub.rename(env)
            inner = {**env, stmt.iv: fresh(stmt.iv)}
            body = rename_body(stmt.body, inner)
            return Loop(inner[stmt.iv], lb, ub, body), env
        if isinstance(stmt, Store):
            index = tuple(e.rename(env) for e in stmt.index)
            return Store(r(stmt.value, stmt.value), r(stmt.memref, stmt.memref), index), env
        new_env = {**env, stmt.result: fresh(stmt.result)}
        out = new_env[stmt.result]
        if isinstance(stmt, Load):
            index = tuple(e.rename(env) for e in stmt.index)
            return Load(out, r(stmt.memref, stmt.memref), index), new_env
        if isinstance(stmt, Arith):
            ops = tuple(r(o, o) for o in stmt.operands)
            return Arith(out, stmt.name, ops, stmt.type), new_env
        if isinstance(stmt, Apply):
            ops = tuple(r(o, o) for o in stmt.operands)
            return Apply(out, stmt.expr.rename(env), ops), new_env
        if isinstance(stmt, Constant):
            return Constant(out, stmt.value, stmt.type), new_env
        return Alloc(out, stmt.type), new_env

    def rename_body(body: tuple[Stmt, ...], env: dict[str, str]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in body:
            new, env = rename_stmt(stmt, env)
            out.append(new)
        return tuple(out)

    return func.with_body(rename_body(func.body, {}))
