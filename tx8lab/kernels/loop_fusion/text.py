"""MLIR text for affine loop nests: print and parse the subset :mod:`.ir` holds.

The printer writes what ``mlir-opt`` writes: ``module { func.func ... }`` with
``affine.for``/``affine.load``/``affine.store`` in the custom syntax, value names chosen
the way MLIR's printer chooses them (``%arg0``..., ``%alloc``, ``%cst``, ``%0``...; a
nested region continues the numbering of its parent, sibling regions restart from the
same number), and non-constant loop bounds and ``affine.apply`` maps as ``#map`` aliases
in order of first use. The parser reads that output back, and hand-written nests: memref
function arguments, ``memref.alloc``, ``arith.constant``, scalar ops of the form
``%r = dialect.op %a, %b : type``, ``affine.for`` with constant or single-result map
bounds and step 1, ``affine.load``/``affine.store``/``affine.apply`` with affine
expressions (``+ - *`` by constants; no ``floordiv``/``mod``). Anything else is an error
that names the file, line and column.

The explorer's analysis evaluates every depth of every producer-consumer pair with
constraint systems that grow with the loop depth (about its 4th power: a pair of 16-deep
nests takes seconds, of 32-deep nests over a minute) and with the square of the number of
nests; the reader refuses, before any analysis, nests deeper than :data:`MAX_NEST_DEPTH`
and functions with more than :data:`MAX_NESTS` nests (``parse_functions(...,
max_depth=N, max_nests=N)`` raises the limits).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from tx8lab.errors import Tx8labError
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
    Stmt,
    Store,
    check_function,
    format_lin,
    uniquify,
)

# --------------------------------------------------------------------------- printing


class _Scope:
    """Names visible in one region: printed names of values and definition order."""

    def __init__(self, parent: _Scope | None, value_id: int, arg_id: int, conflict_id: int):
        self.parent = parent
        self.names: dict[str, str] = {}
        self.order: dict[str, int] = {}
        self.used: set[str] = set()
        self.value_id = value_id
        self.arg_id = arg_id
        self.conflict_id = conflict_id

    def lookup(self, name: str) -> str:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        raise Tx8labError(f"%{name} is used before it is defined")

    def rank(self, name: str) -> int:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.order:
                return scope.order[name]
            scope = scope.parent
        return 1 << 30

    def is_used(self, printed: str) -> bool:
        scope: _Scope | None = self
        while scope is not None:
            if printed in scope.used:
                return True
            scope = scope.parent
        return False

    def unique(self, hint: str) -> str:
        name = hint
        if self.is_used(name):
            while True:
                probe = f"{hint}_{self.conflict_id}"
                self.conflict_id += 1
                if not self.is_used(probe):
                    name = probe
                    break
        self.used.add(name)
        return name

    def define(self, name: str, printed: str, counter: list[int]) -> None:
        self.names[name] = printed
        counter[0] += 1
        self.order[name] = counter[0]


def _hint(stmt: Stmt) -> str | None:
    """MLIR's result-name hint for an op (``None``: numbered)."""
    if isinstance(stmt, Alloc):
        return "alloc"
    if isinstance(stmt, Constant):
        if stmt.type.startswith(("f", "bf")):
            return "cst"
        value = stmt.value.split(".")[0]
        if stmt.type == "i1":
            return "false" if value in ("0", "false") else "true"
        if stmt.type == "index":
            return f"c{value}".replace("-", "_")
        return f"c{value}_{stmt.type}".replace("-", "_")
    return None


class _Printer:
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.lines: list[str] = []
        self.counter = [0]

    def alias(self, map_text: str) -> str:
        if map_text not in self.aliases:
            n = len(self.aliases)
            self.aliases[map_text] = "#map" if n == 0 else f"#map{n}"
        return self.aliases[map_text]

    def map_call(self, expr: Lin, scope: _Scope, extra: Sequence[str] = ()) -> str:
        operands = sorted(dict.fromkeys((*extra, *expr.names)), key=scope.rank)
        dims = {name: f"d{i}" for i, name in enumerate(operands)}
        head = "(" + ", ".join(dims[n] for n in operands) + ")"
        text = f"{head} -> ({format_lin(expr, dims, tuple(operands))})"
        args = ", ".join(f"%{scope.lookup(n)}" for n in operands)
        return f"{self.alias(text)}({args})"

    def expr(self, expr: Lin, scope: _Scope) -> str:
        operands = tuple(sorted(expr.names, key=scope.rank))
        names = {n: f"%{scope.lookup(n)}" for n in operands}
        return format_lin(expr, names, operands)

    def bound(self, expr: Lin, scope: _Scope) -> str:
        return str(expr.const) if expr.is_constant else self.map_call(expr, scope)

    def number_block(self, body: Sequence[Stmt], scope: _Scope) -> None:
        for stmt in body:
            if isinstance(stmt, Loop | Store):
                continue
            hint = _hint(stmt)
            if hint is None:
                printed = str(scope.value_id)
                scope.value_id += 1
            else:
                printed = scope.unique(hint)
            scope.define(stmt.result, printed, self.counter)

    def region(
        self, body: Sequence[Stmt], scope: _Scope, indent: str, memrefs: dict[str, MemRefType]
    ) -> None:
        self.number_block(body, scope)
        for stmt in body:
            self.stmt(stmt, scope, indent, memrefs)

    def stmt(self, stmt: Stmt, scope: _Scope, indent: str, memrefs: dict[str, MemRefType]) -> None:
        out = self.lines
        if isinstance(stmt, Loop):
            inner = _Scope(scope, scope.value_id, scope.arg_id, scope.conflict_id)
            iv = inner.unique(f"arg{inner.arg_id}")
            inner.arg_id += 1
            lb = self.bound(stmt.lb, scope)
            ub = self.bound(stmt.ub, scope)
            inner.define(stmt.iv, iv, self.counter)
            out.append(f"{indent}affine.for %{iv} = {lb} to {ub} {{")
            self.region(stmt.body, inner, indent + "  ", memrefs)
            out.append(f"{indent}}}")
            return
        if isinstance(stmt, Load):
            index = ", ".join(self.expr(e, scope) for e in stmt.index)
            out.append(
                f"{indent}%{scope.lookup(stmt.result)} = affine.load "
                f"%{scope.lookup(stmt.memref)}[{index}] : {memrefs[stmt.memref]}"
            )
        elif isinstance(stmt, Store):
            index = ", ".join(self.expr(e, scope) for e in stmt.index)
            out.append(
                f"{indent}affine.store %{scope.lookup(stmt.value)}, "
                f"%{scope.lookup(stmt.memref)}[{index}] : {memrefs[stmt.memref]}"
            )
        elif isinstance(stmt, Arith):
            args = ", ".join(f"%{scope.lookup(a)}" for a in stmt.operands)
            out.append(f"{indent}%{scope.lookup(stmt.result)} = {stmt.name} {args} : {stmt.type}")
        elif isinstance(stmt, Constant):
            out.append(
                f"{indent}%{scope.lookup(stmt.result)} = arith.constant {stmt.value} : {stmt.type}"
            )
        elif isinstance(stmt, Apply):
            out.append(
                f"{indent}%{scope.lookup(stmt.result)} = affine.apply "
                f"{self.map_call(stmt.expr, scope, stmt.operands)}"
            )
        elif isinstance(stmt, Alloc):
            out.append(f"{indent}%{scope.lookup(stmt.result)} = memref.alloc() : {stmt.type}")


def print_function(func: Function) -> str:
    """``func`` as an MLIR module that ``mlir-opt`` accepts (see the module docstring)."""
    return print_functions((func,))


def print_functions(funcs: Sequence[Function]) -> str:
    """Several functions in one module."""
    printer = _Printer()
    body: list[str] = []
    for func in funcs:
        scope = _Scope(None, 0, 0, 0)
        args = []
        for name, memref in func.args:
            printed = scope.unique(f"arg{scope.arg_id}")
            scope.arg_id += 1
            scope.define(name, printed, printer.counter)
            args.append(f"%{printed}: {memref}")
        printer.lines = []
        printer.lines.append(f"  func.func @{func.name}({', '.join(args)}) {{")
        printer.region(func.body, scope, "    ", func.memrefs)
        printer.lines.append("    return")
        printer.lines.append("  }")
        body.extend(printer.lines)
    head = [f"{alias} = affine_map<{text}>" for text, alias in printer.aliases.items()]
    return "\n".join([*head, "module {", *body, "}"]) + "\n"


# --------------------------------------------------------------------------- lexing


@dataclass(frozen=True)
class _Tok:
    kind: str  # ssa, sym, alias, type, float, int, ident, str, punct, eof
    text: str
    line: int
    col: int


_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+|//[^\n]*)
  | (?P<type>memref<[^>]*>)
  | (?P<ssa>%[A-Za-z0-9_$.\-]+)
  | (?P<sym>@[A-Za-z0-9_$.]+)
  | (?P<alias>\#[A-Za-z0-9_$.]+)
  | (?P<float>(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|0x[0-9A-Fa-f]+))
  | (?P<int>\d+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<punct>->|[(){}\[\]<>,:=+\-*?])
    """,
    re.VERBOSE,
)


def _lex(text: str, filename: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise Tx8labError(
                f"{filename}:{line}:{pos - line_start + 1}: unexpected character {text[pos]!r}"
            )
        kind = m.lastgroup or ""
        value = m.group()
        if kind != "ws":
            toks.append(_Tok(kind, value, line, pos - line_start + 1))
        newlines = value.count("\n")
        if newlines:
            line += newlines
            line_start = pos + value.rfind("\n") + 1
        pos = m.end()
    toks.append(_Tok("eof", "", line, pos - line_start + 1))
    return toks


_UNSUPPORTED_MAP_OPS = ("floordiv", "ceildiv", "mod")

#: Deepest loop nest the reader accepts (see the module docstring for why).
MAX_NEST_DEPTH = 16

#: Most top-level nests one function may have.
MAX_NESTS = 128

#: Deepest parenthesis nesting of an affine expression.
MAX_PARENS = 64

_MEMREF = re.compile(r"memref<((?:[0-9]+x)*)([a-z]+[0-9]*)>")


def _deepest_nest(toks: Sequence[_Tok]) -> tuple[int, _Tok | None]:
    """The deepest ``affine.for`` nesting in ``toks`` and the loop that reaches it first."""
    stack: list[bool] = []
    depth = deepest = 0
    pending = False
    where: _Tok | None = None
    loop: _Tok | None = None
    for tok in toks:
        if tok.kind == "ident" and tok.text == "affine.for":
            pending, loop = True, tok
        elif tok.text == "{" and tok.kind == "punct":
            stack.append(pending)
            if pending:
                depth += 1
                if depth > deepest:
                    deepest, where = depth, loop
            pending = False
        elif tok.text == "}" and tok.kind == "punct" and stack:
            depth -= stack.pop()
    return deepest, where


#: Parses one atom of an affine expression.
_Atom: TypeAlias = Callable[[], Lin]


class _Parser:
    def __init__(
        self,
        text: str,
        filename: str,
        max_depth: int = MAX_NEST_DEPTH,
        max_nests: int = MAX_NESTS,
    ) -> None:
        self.filename = filename
        self.toks = _lex(text, filename)
        self.i = 0
        self.aliases: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[Lin, ...]]] = {}
        self.fresh = 0
        self.max_nests = max_nests
        self.parens = 0
        deepest, loop = _deepest_nest(self.toks)
        if deepest > max_depth:
            raise self.error(
                f"a loop nest {deepest} loops deep; the fusion analysis grows with about the "
                f"4th power of the depth, so nests are limited to {max_depth} loops "
                "(parse_functions(..., max_depth=N) raises the limit; "
                f"tx8lab.kernels.loop_fusion.text.MAX_NEST_DEPTH is {MAX_NEST_DEPTH})",
                loop,
            )

    # -- helpers
    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def error(self, message: str, tok: _Tok | None = None) -> Tx8labError:
        t = tok or self.tok
        return Tx8labError(f"{self.filename}:{t.line}:{t.col}: {message}")

    def next(self) -> _Tok:
        t = self.tok
        self.i += 1
        return t

    def accept(self, text: str) -> bool:
        if self.tok.text == text and self.tok.kind in ("punct", "ident"):
            self.i += 1
            return True
        return False

    def expect(self, text: str, what: str = "") -> _Tok:
        if self.tok.text != text:
            found = self.tok.text or "end of file"
            raise self.error(f"expected {text!r}{' ' + what if what else ''}, found {found!r}")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> _Tok:
        if self.tok.kind != kind:
            found = self.tok.text or "end of file"
            raise self.error(f"expected {what}, found {found!r}")
        return self.next()

    # -- top level
    def module(self) -> tuple[Function, ...]:
        funcs: list[Function] = []
        while self.tok.kind != "eof":
            if self.tok.kind == "alias":
                self.alias_def()
            elif self.tok.text == "module":
                self.next()
                if self.tok.text == "attributes":
                    raise self.error("module attributes are not supported")
                self.expect("{", "after 'module'")
                while not self.accept("}"):
                    if self.tok.kind == "eof":
                        raise self.error("missing '}' closing the module")
                    funcs.append(self.func())
            elif self.tok.text in ("func.func", "func"):
                funcs.append(self.func())
            else:
                raise self.error(
                    f"expected 'func.func', 'module' or a '#map' alias, found {self.tok.text!r}"
                )
        if not funcs:
            raise Tx8labError(f"{self.filename}: no func.func found")
        return tuple(funcs)

    def alias_def(self) -> None:
        name = self.next()
        self.expect("=")
        if self.tok.text != "affine_map":
            raise self.error("only affine_map aliases are supported")
        self.aliases[name.text] = self.affine_map()

    def func(self) -> Function:
        start = self.next()
        if start.text not in ("func.func", "func"):
            raise self.error("expected 'func.func'", start)
        name = self.expect_kind("sym", "a function name like @f").text[1:]
        self.expect("(")
        args: list[tuple[str, MemRefType]] = []
        if not self.accept(")"):
            while True:
                arg = self.expect_kind("ssa", "an argument like %A").text[1:]
                self.expect(":")
                args.append((arg, self.memref_type()))
                if self.accept(")"):
                    break
                self.expect(",")
        if self.tok.text == "->":
            raise self.error("functions that return values are not supported")
        if self.tok.text == "attributes":
            raise self.error("function attributes are not supported")
        self.expect("{")
        memrefs = dict(args)
        body = self.block(memrefs, top=True)
        func = Function(name, tuple(args), body)
        check_function(func, f"{self.filename}:{start.line}")
        nests = sum(isinstance(stmt, Loop) for stmt in body)
        if nests > self.max_nests:
            raise self.error(
                f"@{name} has {nests} loop nests; the fusion analysis grows with the square of "
                f"the number of nests, so a function is limited to {self.max_nests} "
                "(parse_functions(..., max_nests=N) raises the limit; "
                f"tx8lab.kernels.loop_fusion.text.MAX_NESTS is {MAX_NESTS})",
                start,
            )
        return uniquify(func)

    def memref_type(self) -> MemRefType:
        tok = self.tok
        if tok.kind != "type":
            raise self.error(f"expected a memref type like memref<8x128xf32>, found {tok.text!r}")
        self.next()
        inner = tok.text[len("memref<") : -1]
        if "," in inner or "?" in inner:
            raise self.error(f"{tok.text}: only static memrefs without layout are supported", tok)
        match = _MEMREF.fullmatch(tok.text.replace(" ", ""))
        if match is None:
            raise self.error(
                f"{tok.text}: write a static memref type like memref<8x128xf32> (sizes, then "
                "the element type)",
                tok,
            )
        try:
            shape = tuple(int(p) for p in match.group(1).split("x") if p)
            return MemRefType(shape, match.group(2))
        except Tx8labError as err:
            raise self.error(f"{tok.text}: {err}", tok) from err

    # -- statements
    def block(self, memrefs: dict[str, MemRefType], top: bool = False) -> tuple[Stmt, ...]:
        body: list[Stmt] = []
        while True:
            tok = self.tok
            if tok.text == "}":
                if top:
                    raise self.error("function body must end with 'return'")
                self.next()
                return tuple(body)
            if tok.text in ("return", "func.return"):
                if not top:
                    raise self.error("'return' inside a loop")
                self.next()
                if self.tok.kind == "ssa":
                    raise self.error("returning values is not supported")
                self.expect("}", "after 'return'")
                return tuple(body)
            if tok.kind == "eof":
                raise self.error("missing '}'")
            body.append(self.statement(memrefs))

    def statement(self, memrefs: dict[str, MemRefType]) -> Stmt:
        tok = self.tok
        if tok.text == "affine.for":
            return self.loop(memrefs)
        if tok.text == "affine.store":
            self.next()
            value = self.expect_kind("ssa", "the stored value").text[1:]
            self.expect(",")
            memref, index = self.access()
            self.expect(":")
            self.check_type(memref, memrefs, self.memref_type(), tok)
            return Store(value, memref, index)
        if tok.kind != "ssa":
            raise self.error(f"unsupported operation {tok.text!r}")
        result = self.next().text[1:]
        if self.tok.text == ":":
            raise self.error("multi-result operations are not supported")
        self.expect("=")
        op = self.tok
        if op.text == "affine.load":
            self.next()
            memref, index = self.access()
            self.expect(":")
            self.check_type(memref, memrefs, self.memref_type(), op)
            return Load(result, memref, index)
        if op.text == "memref.alloc":
            self.next()
            self.expect("(")
            self.expect(")", "(dynamic sizes are not supported)")
            if self.tok.text == "{":
                raise self.error("alloc attributes (alignment) are not supported")
            self.expect(":")
            memref_type = self.memref_type()
            memrefs[result] = memref_type
            return Alloc(result, memref_type)
        if op.text == "arith.constant":
            self.next()
            negative = self.accept("-")
            literal = self.tok
            if literal.kind not in ("int", "float") and literal.text not in ("true", "false"):
                raise self.error(f"expected a number after arith.constant, found {literal.text!r}")
            self.next()
            self.expect(":")
            type_ = self.expect_kind("ident", "a scalar type").text
            return Constant(result, ("-" if negative else "") + literal.text, type_)
        if op.text == "affine.apply":
            self.next()
            expr, map_operands = self.map_use_with_operands()
            return Apply(result, expr, map_operands)
        if op.kind != "ident" or "." not in op.text:
            raise self.error(f"expected an operation name after '=', found {op.text!r}")
        if op.text.startswith(("affine.", "memref.", "scf.", "func.")):
            raise self.error(f"{op.text} is not supported by the loop-fusion explorer")
        self.next()
        operands: list[str] = []
        while self.tok.kind == "ssa":
            operands.append(self.next().text[1:])
            if not self.accept(","):
                break
        if self.tok.text != ":":
            raise self.error(
                f"{op.text}: only the form '%r = {op.text} %a, %b : type' is supported "
                f"(found {self.tok.text!r})"
            )
        self.next()
        type_ = self.expect_kind("ident", "a scalar result type").text
        if self.tok.text == "to":
            self.next()
            type_ = self.expect_kind("ident", "a scalar result type").text
        return Arith(result, op.text, tuple(operands), type_)

    def check_type(
        self, memref: str, memrefs: dict[str, MemRefType], got: MemRefType, tok: _Tok
    ) -> None:
        if memref not in memrefs:
            raise self.error(f"%{memref} is not a memref argument or alloc", tok)
        if memrefs[memref] != got:
            raise self.error(f"%{memref} has type {memrefs[memref]}, the access says {got}", tok)

    def access(self) -> tuple[str, tuple[Lin, ...]]:
        memref = self.expect_kind("ssa", "a memref").text[1:]
        self.expect("[")
        index: list[Lin] = []
        if not self.accept("]"):
            while True:
                index.append(self.ssa_expr())
                if self.accept("]"):
                    break
                self.expect(",")
        return memref, tuple(index)

    def loop(self, memrefs: dict[str, MemRefType]) -> Loop:
        self.next()
        iv = self.expect_kind("ssa", "an induction variable").text[1:]
        self.expect("=")
        bound_tok = self.tok
        lb = self.bound()
        self.expect("to")
        ub = self.bound()
        for name in (*lb.names, *ub.names):
            if name in memrefs:
                raise self.error(
                    f"loop %{iv}: its bound uses memref %{name}; bounds are constants, "
                    "index values or affine maps of them",
                    bound_tok,
                )
        if self.tok.text == "step":
            self.next()
            step = self.expect_kind("int", "a step")
            if step.text != "1":
                raise self.error("only step 1 loops are supported", step)
        if self.tok.text == "iter_args":
            raise self.error("loops with iter_args (loop-carried values) are not supported")
        self.expect("{")
        body = self.block(memrefs)
        return Loop(iv, lb, ub, body)

    def bound(self) -> Lin:
        tok = self.tok
        if tok.text in ("max", "min"):
            raise self.error(f"{tok.text} bounds are not supported (single-result bounds only)")
        if tok.kind == "int" or tok.text == "-":
            negative = self.accept("-")
            value = int(self.expect_kind("int", "a constant bound").text)
            return Lin.constant(-value if negative else value)
        if tok.kind == "ssa":
            return Lin.var(self.next().text[1:])
        return self.map_use()

    def map_use(self) -> Lin:
        return self.map_use_with_operands()[0]

    def map_use_with_operands(self) -> tuple[Lin, tuple[str, ...]]:
        tok = self.tok
        if tok.kind == "alias":
            self.next()
            if tok.text not in self.aliases:
                raise self.error(f"unknown map alias {tok.text}", tok)
            dims, syms, results = self.aliases[tok.text]
        elif tok.text == "affine_map":
            dims, syms, results = self.affine_map()
        else:
            raise self.error(f"expected a constant, an affine map or %value, found {tok.text!r}")
        if len(results) != 1:
            raise self.error("only single-result maps are supported here", tok)
        operands = self.operand_list("(", ")")
        symbols = self.operand_list("[", "]") if self.tok.text == "[" else []
        if len(operands) != len(dims) or len(symbols) != len(syms):
            raise self.error("map operand count does not match the map", tok)
        env = {d: Lin.var(o) for d, o in zip(dims, operands, strict=True)}
        env.update({s: Lin.var(o) for s, o in zip(syms, symbols, strict=True)})
        return results[0].subs(env), (*operands, *symbols)

    def operand_list(self, open_: str, close: str) -> list[str]:
        self.expect(open_)
        out: list[str] = []
        if self.accept(close):
            return out
        while True:
            out.append(self.expect_kind("ssa", "an operand").text[1:])
            if self.accept(close):
                return out
            self.expect(",")

    def affine_map(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[Lin, ...]]:
        self.expect("affine_map")
        self.expect("<")
        dims = self.name_list("(", ")")
        syms = self.name_list("[", "]") if self.tok.text == "[" else ()
        self.expect("->")
        self.expect("(")
        names = set(dims) | set(syms)
        results: list[Lin] = []
        if not self.accept(")"):
            while True:
                results.append(self.map_expr(names))
                if self.accept(")"):
                    break
                self.expect(",")
        self.expect(">")
        return dims, syms, tuple(results)

    def name_list(self, open_: str, close: str) -> tuple[str, ...]:
        self.expect(open_)
        out: list[str] = []
        if self.accept(close):
            return ()
        while True:
            out.append(self.expect_kind("ident", "a dimension name like d0").text)
            if self.accept(close):
                return tuple(out)
            self.expect(",")

    # -- affine expressions: over %values (accesses) or over map dims (maps)
    def ssa_expr(self) -> Lin:
        return self._sum(lambda: self._ssa_atom())

    def map_expr(self, names: set[str]) -> Lin:
        return self._sum(lambda: self._map_atom(names))

    def _sum(self, atom: _Atom) -> Lin:
        out = self._product(atom)
        while self.tok.text in ("+", "-"):
            op = self.next().text
            term = self._product(atom)
            out = out + term if op == "+" else out - term
        return out

    def _product(self, atom: _Atom) -> Lin:
        out = self._unary(atom)
        while True:
            if self.tok.text in _UNSUPPORTED_MAP_OPS:
                raise self.error(
                    f"'{self.tok.text}' is not supported: the explorer handles affine "
                    "expressions with + - and * by constants"
                )
            if not self.accept("*"):
                return out
            tok = self.tok
            rhs = self._unary(atom)
            if rhs.is_constant:
                out = out * rhs.const
            elif out.is_constant:
                out = rhs * out.const
            else:
                raise self.error("the product of two variables is not affine", tok)

    def _unary(self, atom: _Atom) -> Lin:
        if self.tok.text in ("-", "("):
            self.parens += 1
            if self.parens > MAX_PARENS:
                raise self.error(f"an affine expression nested more than {MAX_PARENS} deep")
            try:
                if self.accept("-"):
                    return -self._unary(atom)
                self.next()
                inner = self._sum(atom)
                self.expect(")")
                return inner
            finally:
                self.parens -= 1
        return atom()

    def _ssa_atom(self) -> Lin:
        tok = self.tok
        if tok.kind == "int":
            self.next()
            return Lin.constant(int(tok.text))
        if tok.kind == "ssa":
            self.next()
            return Lin.var(tok.text[1:])
        if tok.text == "symbol":
            raise self.error("symbol(...) operands are not supported")
        raise self.error(f"expected an index expression, found {tok.text!r}")

    def _map_atom(self, names: set[str]) -> Lin:
        tok = self.tok
        if tok.kind == "int":
            self.next()
            return Lin.constant(int(tok.text))
        if tok.kind == "ident" and tok.text in names:
            self.next()
            return Lin.var(tok.text)
        raise self.error(f"expected a map dimension or constant, found {tok.text!r}")


def parse_functions(
    text: str,
    filename: str = "<string>",
    *,
    max_depth: int = MAX_NEST_DEPTH,
    max_nests: int = MAX_NESTS,
) -> tuple[Function, ...]:
    """Every ``func.func`` in ``text`` (MLIR affine dialect, the subset described above).

    ``max_depth`` and ``max_nests`` bound the analysis work (see the module docstring).

    Raises:
        Tx8labError: the text is outside the subset or over a limit; the message starts
            with ``filename:line:col``.
    """
    return _Parser(text, filename, max_depth, max_nests).module()


def parse_function(text: str, filename: str = "<string>") -> Function:
    """The single function in ``text`` (an error names the file if there are several)."""
    funcs = parse_functions(text, filename)
    if len(funcs) != 1:
        raise Tx8labError(
            f"{filename}: expected one func.func, found {len(funcs)} "
            f"({', '.join('@' + f.name for f in funcs)})"
        )
    return funcs[0]
