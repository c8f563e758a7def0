"""MLIR generic-syntax text form of a module: ``print_module`` and ``parse_module``.

Spec: DESIGN.md §2. The text is what ``mlir-opt --allow-unregistered-dialect
--mlir-print-op-generic`` reads and writes, so the two can be compared once values are
renumbered; ``parse_module`` also reads mlir-opt's own output (``%0:2``, ``%0#1``,
``<{properties}>``, renumbered ``%argN``, floats as ``1.500000e+00``, small dense
literals as nested lists, splats).

Readings chosen:

- Attributes print sorted by name, as mlir-opt does.
- ``int`` prints as ``N : i64``, ``float`` as its shortest exact decimal ``: f64`` (inf and
  nan as the hex bit pattern), ``bool`` as ``true``/``false``, a tuple of ints as
  ``array<i64: ...>``, a tuple of floats as ``array<f64: ...>``, any other tuple (and the
  empty one) as ``[...]``.
- Constant data prints as ``dense<"0x...">`` (little-endian bytes; bf16 as its 16-bit
  pattern, i1 as a list of ``true``/``false``), exact for every element type.
- ``print_module(m, elide_bytes=N)`` prints data larger than N bytes as
  ``dense_resource<__elided__>`` (mlir-opt's own elision); such text does not parse back
  to the data, and ``parse_module`` says so.

Examples:
    >>> from tx8lab.core.builder import Builder
    >>> b = Builder(); x = b.input((2,), "f32"); b.output(b.op("Relu", x))
    >>> text = print_module(b.finish())
    >>> print_module(parse_module(text)) == text
    True
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from tx8lab.core import attrs as A
from tx8lab.core.dtypes import from_bits_image, numpy_dtype, round_to, to_bits_image
from tx8lab.core.ir import (
    TERMINATORS,
    Block,
    Function,
    Module,
    Op,
    TensorType,
    Value,
    set_module_printer,
)
from tx8lab.errors import Tx8labError

_INDENT = "  "


# --------------------------------------------------------------------------- printing


def _escape(text: str) -> str:
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append("\\22")
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        else:
            out.extend(f"\\{b:02X}" for b in ch.encode("utf-8"))
    return '"' + "".join(out) + '"'


def _float(value: float) -> str:
    """Shortest exact decimal that MLIR reads as a float (it needs a '.'); hex for inf/nan."""
    if math.isfinite(value):
        text = repr(float(value))
        mantissa, e, exponent = text.partition("e")
        if "." not in mantissa:
            mantissa += ".0"
        return mantissa + (e + exponent if e else "")
    bits = np.array([value], dtype=np.float64).view(np.uint64)[0]
    return f"0x{int(bits):016X}"


def _elided(array: np.ndarray[Any, Any], elide_bytes: int | None) -> bool:
    return elide_bytes is not None and array.nbytes > elide_bytes


def print_attr(value: Any, elide_bytes: int | None = None) -> str:
    """One attribute value in MLIR syntax.

    Examples:
        >>> print_attr((1, 2)), print_attr(True), print_attr(0.5), print_attr("a")
        ('array<i64: 1, 2>', 'true', '0.5 : f64', '"a"')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return f"{_float(value)} : f64"
    if isinstance(value, str):
        return _escape(value)
    if isinstance(value, enum.Enum):
        mnemonic = A.ENUM_MNEMONICS[type(value)]
        return f"#tx8be.{mnemonic}<{value.value}>"
    if isinstance(value, tuple):
        if value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return "array<i64: " + ", ".join(str(v) for v in value) + ">"
        if value and all(isinstance(v, float) for v in value):
            return "array<f64: " + ", ".join(_float(v) for v in value) + ">"
        return "[" + ", ".join(print_attr(v, elide_bytes) for v in value) + "]"
    if isinstance(value, np.ndarray):
        raise Tx8labError("a numpy array needs its element type: use print_dense")
    if is_dataclass(value) and hasattr(value, "mnemonic"):
        body = ", ".join(
            f"{f.name} = {print_attr(getattr(value, f.name), elide_bytes)}" for f in fields(value)
        )
        return f"#tx8be.{value.mnemonic}<{body}>"
    raise Tx8labError(f"cannot print attribute value {value!r} of type {type(value).__name__}")


def print_dense(array: np.ndarray[Any, Any], dtype: str, elide_bytes: int | None = None) -> str:
    """Constant data as ``dense<...> : tensor<...>``."""
    ttype = TensorType(tuple(int(d) for d in array.shape), dtype)
    if _elided(array, elide_bytes):
        return f"dense_resource<__elided__> : {ttype}"
    if dtype == "i1":
        # MLIR reads i1 data only as a literal nested like the shape (a flat list of a
        # rank-2 tensor is an error); a bool array's ``tolist`` has exactly that nesting.
        return f"dense<{_bool_literal(array.tolist())}> : {ttype}"
    return f'dense<"0x{_dense_image(array, dtype).hex().upper()}"> : {ttype}'


def _dense_image(array: np.ndarray[Any, Any], dtype: str) -> bytes:
    """The raw data of an MLIR dense attribute: the memory image, except for tf32.

    MLIR's tf32 is a 19-bit float (1 sign, 8 exponent, 10 mantissa bits) whose dense data
    takes 3 bytes per element, little-endian; it is the top 19 bits of the f32 pattern.
    """
    if dtype != "tf32":
        return to_bits_image(array, dtype)
    top = round_to(array, "tf32").astype(np.float32).reshape(-1).view(np.uint32) >> np.uint32(13)
    return top.astype("<u4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()


def _dense_values(data: bytes, dtype: str, count: int) -> np.ndarray[Any, Any]:
    """Inverse of :func:`_dense_image` for ``count`` elements."""
    if dtype != "tf32":
        return from_bits_image(data, dtype, count)
    raw = np.frombuffer(data, dtype=np.uint8, count=3 * count).reshape(-1, 3).astype(np.uint32)
    pattern: np.ndarray[Any, Any] = raw[:, 0] | (raw[:, 1] << 8) | (raw[:, 2] << 16)
    return (pattern << np.uint32(13)).view(np.float32)


def _bool_literal(data: Any) -> str:
    if isinstance(data, list):
        return "[" + ", ".join(_bool_literal(item) for item in data) + "]"
    return "true" if data else "false"


def _print_attrs(op: Op, elide_bytes: int | None) -> str:
    items = dict(op.attrs)
    if op.created_by is not None:
        items["tx8.created_by"] = op.created_by
    if not op.results and op.kind not in TERMINATORS:
        items["tx8.id"] = op.id
    if not items:
        return ""
    parts = []
    for key in sorted(items):
        value = items[key]
        if isinstance(value, np.ndarray):
            text = print_dense(value, _array_dtype(op, key, value), elide_bytes)
        else:
            text = print_attr(value, elide_bytes)
        name = key if _BARE_NAME.fullmatch(key) else _escape(key)
        parts.append(f"{name} = {text}")
    return " {" + ", ".join(parts) + "}"


def _array_dtype(op: Op, key: str, array: np.ndarray[Any, Any]) -> str:
    # Constant data is stored in the element type of the op's result when it has one
    if key == "value" and op.results and op.results[0].type.shape == array.shape:
        return op.results[0].type.dtype
    from tx8lab.core.dtypes import from_numpy

    return from_numpy(array.dtype)


_BARE_NAME = re.compile(r"[A-Za-z_][\w$.]*")


def _value_name(value: Value, names: Mapping[tuple[int, int, bool], str]) -> str:
    return names[value.key]


def _types(types: tuple[TensorType, ...]) -> str:
    return ", ".join(str(t) for t in types)


def _result_types(types: tuple[TensorType, ...]) -> str:
    if len(types) == 1:
        return str(types[0])
    return f"({_types(types)})"


def _print_block(
    block: Block,
    names: dict[tuple[int, int, bool], str],
    arg_names: list[str],
    depth: int,
    out: list[str],
    elide_bytes: int | None,
) -> None:
    pad = _INDENT * depth
    for value, name in zip(block.args, arg_names, strict=True):
        names[value.key] = name
    header = ", ".join(f"{n}: {v.type}" for n, v in zip(arg_names, block.args, strict=True))
    out.append(f"{_INDENT * (depth - 1)}^bb0({header}):")
    for op in block.ops:
        _print_op(op, names, depth, out, elide_bytes)
    del pad


def _print_op(
    op: Op,
    names: dict[tuple[int, int, bool], str],
    depth: int,
    out: list[str],
    elide_bytes: int | None,
) -> None:
    pad = _INDENT * depth
    operands = ", ".join(names[v.key] for v in op.operands)
    lhs = ""
    if len(op.results) == 1:
        names[op.results[0].key] = f"%{op.id}"
        lhs = f"%{op.id} = "
    elif op.results:
        for r in op.results:
            names[r.key] = f"%{op.id}#{r.index}"
        lhs = f"%{op.id}:{len(op.results)} = "
    signature = f"({_types(tuple(v.type for v in op.operands))}) -> "
    signature += _result_types(op.result_types) if op.results else "()"
    if not op.regions:
        attrs = _print_attrs(op, elide_bytes)
        out.append(f'{pad}{lhs}"{op.kind}"({operands}){attrs} : {signature}')
        return
    out.append(f'{pad}{lhs}"{op.kind}"({operands}) ({{')
    for index, region in enumerate(op.regions):
        if index:
            out.append(f"{pad}}}, {{")
        arg_names = [f"%b{op.id}_{index}_{i}" for i in range(len(region.args))]
        _print_block(region, names, arg_names, depth + 1, out, elide_bytes)
    out.append(f"{pad}}}){_print_attrs(op, elide_bytes)} : {signature}")


def print_function(func: Function, elide_bytes: int | None = None, depth: int = 1) -> str:
    """One ``func.func`` in generic syntax."""
    out: list[str] = []
    names: dict[tuple[int, int, bool], str] = {}
    pad = _INDENT * depth
    out.append(f'{pad}"func.func"() ({{')
    arg_names = [f"%arg{i}" for i in range(len(func.args))]
    _print_block(func.body, names, arg_names, depth + 1, out, elide_bytes)
    in_types = _types(tuple(v.type for v in func.args))
    out_types = tuple(v.type for v in func.outputs)
    ftype = f"({in_types}) -> " + (_result_types(out_types) if out_types else "()")
    out.append(f"{pad}}}) {{function_type = {ftype}, sym_name = {_escape(func.name)}}} : () -> ()")
    return "\n".join(out)


def print_module(module: Module, elide_bytes: int | None = None) -> str:
    """The module in MLIR generic syntax (exact round trip with :func:`parse_module`)."""
    parts = ['"builtin.module"() ({']
    parts.extend(print_function(f, elide_bytes) for f in module.functions)
    mod_attrs = dict(module.attrs)
    mod_attrs["tx8.next_id"] = module.next_id
    body = ", ".join(
        f"{k if _BARE_NAME.fullmatch(k) else _escape(k)} = {print_attr(mod_attrs[k])}"
        for k in sorted(mod_attrs)
    )
    parts.append(f"}}) {{{body}}} : () -> ()")
    return "\n".join(parts) + "\n"


# --------------------------------------------------------------------------- parsing

_SPACE = re.compile(r"(?:[ \t\r\n]++|//[^\n]*+)*+")

_TOKEN = re.compile(
    r"""
    (?:[ \t\r\n]++|//[^\n]*+)*+
    (?:(?P<tensor>tensor<[^<>]*>)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<value>%[A-Za-z_0-9$.\-]+(?:[:#][0-9]+)?)
  | (?P<block>\^[A-Za-z_0-9$.\-]+)
  | (?P<hash>\#[A-Za-z_][\w$.]*)
  | (?P<number>-?(?:0x[0-9A-Fa-f]+|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?))
  | (?P<arrow>->)
  | (?P<ident>[A-Za-z_][\w$.]*)
  | (?P<punct>[(){}\[\]<>,:=?*+])
  | (?P<end>$)
    )""",
    re.VERBOSE,
)


class _Lexer:
    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.text = text
        tokens: list[tuple[str, str, int]] = []
        pos = 0
        match = _TOKEN.match
        append = tokens.append
        while True:
            m = match(text, pos)
            if m is None:
                pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
                if text[pos] == '"':
                    self._fail_at(pos, "a string without its closing '\"' (truncated?)")
                if text.startswith("tensor<", pos):
                    self._fail_at(pos, "a tensor type without its closing '>' (truncated?)")
                self._fail_at(pos, f"unexpected character {text[pos]!r}; this is not MLIR text")
                raise AssertionError
            kind = m.lastgroup or ""
            if kind == "end":
                break
            append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.tokens = tokens
        append = self.tokens.append
        append(("eof", "", len(text)))
        self.i = 0

    def _fail_at(self, pos: int, message: str) -> None:
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        raise Tx8labError(f"{self.source}:{line}:{col}: {message}")

    def fail(self, message: str) -> None:
        self._fail_at(self.tokens[min(self.i, len(self.tokens) - 1)][2], message)

    def fail_token(self, index: int, message: str) -> NoReturn:
        """Raise at token ``index`` (the position of a token already consumed)."""
        self._fail_at(self.tokens[max(0, min(index, len(self.tokens) - 1))][2], message)
        raise AssertionError

    def peek(self) -> tuple[str, str]:
        kind, text, _ = self.tokens[self.i]
        return kind, text

    def peek2(self) -> str:
        """The text of the token after the next one ('' at the end of the input)."""
        return self.tokens[min(self.i + 1, len(self.tokens) - 1)][1]

    def next(self) -> tuple[str, str]:
        """The next token; at the end of the input, the end token again (never past it)."""
        kind, text, _ = self.tokens[self.i]
        if kind != "eof":
            self.i += 1
        return kind, text

    def unescape(self, token: str, index: int) -> str:
        """The contents of string token ``token`` (token ``index``), or an error there."""
        try:
            return _unescape(token)
        except ValueError as err:
            self.fail_token(index, f"bad string {token[:40]}: {err}")

    def accept(self, text: str) -> bool:
        if self.tokens[self.i][1] == text:
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if self.tokens[self.i][1] != text:
            got = self.tokens[self.i][1]
            self.fail(
                f"expected {text!r}, got {got!r}"
                if got
                else f"expected {text!r}: the input ends here (truncated?)"
            )
        self.i += 1


def _unescape(token: str) -> str:
    """The contents of a string token; ``ValueError`` names a bad escape or bad UTF-8."""
    body = token[1:-1]
    if "\\" not in body:
        return body
    out = bytearray()
    i = 0
    simple = {"n": b"\n", "t": b"\t", '"': b'"', "\\": b"\\"}
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            nxt = body[i + 1 : i + 2]
            if nxt in simple:
                out += simple[nxt]
                i += 2
            else:
                digits = body[i + 1 : i + 3]
                if not re.fullmatch(r"[0-9A-Fa-f]{2}", digits):
                    raise ValueError(
                        f'escape \\{digits} is not \\n, \\t, \\", \\\\ or two hex digits'
                    )
                out.append(int(digits, 16))
                i += 3
        else:
            out += ch.encode("utf-8")
            i += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"its escapes spell bytes that are not UTF-8 ({err.reason})") from None


_TENSOR = re.compile(r"tensor<((?:\d+x)*)([a-z]+[0-9]*)>")

#: Most elements one tensor type may have (2**40: beyond any memory of the chip or host).
MAX_ELEMENTS = 1 << 40

#: Most elements of one constant (``dense<...>``) the parser materializes.
MAX_DENSE_ELEMENTS = 1 << 28

#: Largest op id (a value name ``%N``, ``tx8.id``, ``tx8.next_id``) the parser accepts.
MAX_ID = (1 << 31) - 1

#: Deepest nesting of regions, lists and dense literals the parser follows.
MAX_NESTING = 64

_I64_MIN, _U64_MAX = -(1 << 63), (1 << 64) - 1
_SCALAR_TYPE = re.compile(r"(?:[isu]|ui|si)[0-9]+|f(?:16|32|64|80|128)|bf16|tf32|index")


def _bad_tensor_type(text: str) -> str:
    """Why ``text`` (a ``tensor<...>`` token) is not a ranked static tensor type."""
    body = text[len("tensor<") : -1]
    parts = body.split("x")
    for position, dim in enumerate(parts[:-1]):
        dim = dim.strip()
        if dim == "?":
            return (
                f"{text}: dimension {position} is dynamic ('?'); tx8lab compiles static "
                "shapes only: write its size"
            )
        if re.fullmatch(r"-[0-9]+", dim):
            return f"{text}: dimension {position} is negative ({dim}); sizes are >= 1"
        if not dim.isdigit():
            return (
                f"{text}: dimension {position} is {dim!r}, not a whole number; write a "
                "ranked static type like tensor<2x3xf16>"
            )
    return f"cannot read tensor type {text}: write a ranked static type like tensor<2x3xf16>"


class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self.lex = _Lexer(text.removeprefix("\ufeff"), source)
        self.max_id = -1
        # owners for the block arguments of region ops whose id is not known yet (a
        # result-less op carries it in ``tx8.id`` after its regions): unique, so they
        # never collide with function arguments (owners -1, -2, ...)
        self.pending_owner = -(1 << 40)
        self.renumber: list[Op] = []
        self.types: dict[str, TensorType] = {}
        # the op being read, for messages ('"tx8be.Add" %3: '); empty outside ops
        self.where = ""
        self.depth = 0

    def enter(self) -> None:
        """One nesting level deeper (a region, a list, a dense literal); refuse past the limit."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.lex.fail(
                f"{self.where}nested more than {MAX_NESTING} levels deep (regions, lists or "
                "dense literals); this is not a module tx8lab wrote or reads"
            )

    def leave(self) -> None:
        self.depth -= 1

    def int_number(self, text: str, index: int, what: str) -> int:
        """An integer literal (decimal or 0x hex) that fits in 64 bits, or an error."""
        try:
            value = int(text, 16) if text.lower().lstrip("-").startswith("0x") else int(text, 10)
        except ValueError:
            self.lex.fail_token(index, f"{self.where}{what}: expected an integer, got {text!r}")
        if not _I64_MIN <= value <= _U64_MAX:
            self.lex.fail_token(
                index, f"{self.where}{what}: integer {text[:30]} does not fit in 64 bits"
            )
        return value

    def float_number(self, text: str, index: int, what: str) -> float:
        """A float literal; hex (``0x...``) is the IEEE bit pattern of an f64."""
        if text.lower().lstrip("-").startswith("0x"):
            bits = self.int_number(text, index, what)
            if bits < 0:
                self.lex.fail_token(index, f"{self.where}{what}: hex float {text} is negative")
            return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])
        try:
            return float(text)
        except ValueError:
            self.lex.fail_token(index, f"{self.where}{what}: expected a number, got {text!r}")

    # --- types
    def parse_type(self) -> TensorType:
        at = self.lex.i
        kind, text = self.lex.next()
        cached = self.types.get(text)
        if cached is not None:
            return cached
        where = self.where
        if kind != "tensor":
            got = f"got {text!r}" if text else "the input ends here (truncated?)"
            self.lex.fail_token(at, f"{where}expected a tensor type like tensor<2x3xf16>, {got}")
        m = _TENSOR.fullmatch(text)
        if m is None:
            self.lex.fail_token(at, where + _bad_tensor_type(text))
        dims = tuple(int(d) for d in m.group(1).split("x") if d)
        try:
            ttype = TensorType(dims, m.group(2))
        except Tx8labError as err:
            self.lex.fail_token(at, f"{where}{text}: {err}")
        if ttype.empty_reason():
            self.lex.fail_token(at, where + ttype.empty_reason())
        if ttype.num_elements > MAX_ELEMENTS:
            self.lex.fail_token(
                at,
                f"{where}{text} has {ttype.num_elements} elements, more than the "
                f"{MAX_ELEMENTS} (2**40) any memory holds; check the dimensions",
            )
        self.types[text] = ttype
        return ttype

    def parse_type_list(self) -> tuple[TensorType, ...]:
        if self.lex.accept("("):
            types: list[TensorType] = []
            if not self.lex.accept(")"):
                types.append(self.parse_type())
                while self.lex.accept(","):
                    types.append(self.parse_type())
                self.lex.expect(")")
            return tuple(types)
        return (self.parse_type(),)

    # --- attributes
    def parse_attr(self) -> Any:
        kind, text = self.lex.peek()
        at = self.lex.i
        if kind == "string":
            self.lex.next()
            return self.lex.unescape(text, at)
        if text in ("true", "false"):
            self.lex.next()
            return text == "true"
        if text == "unit":
            self.lex.next()
            return True
        if kind == "number":
            self.lex.next()
            number = text
            if self.lex.accept(":"):
                ty = self.scalar_type(f"the type of {number}")
                if ty.startswith("f") or ty in ("bf16", "tf32"):
                    return self.float_number(number, at, f"{number} : {ty}")
                return self.int_number(number, at, f"{number} : {ty}")
            if any(c in number for c in ".eE") and "x" not in number.lower():
                return self.float_number(number, at, number)
            return self.int_number(number, at, number)
        if text == "[":
            self.lex.next()
            self.enter()
            items: list[Any] = []
            if not self.lex.accept("]"):
                items.append(self.parse_attr())
                while self.lex.accept(","):
                    items.append(self.parse_attr())
                self.lex.expect("]")
            self.leave()
            return tuple(items)
        if text == "array":
            self.lex.next()
            self.lex.expect("<")
            elem = self.scalar_type("the element type of array<...>")
            items = []
            if self.lex.accept(":"):
                while True:
                    index = self.lex.i
                    num_kind, num = self.lex.next()
                    what = f"an element of array<{elem}: ...>"
                    if num in ("true", "false"):
                        items.append(num == "true")
                    elif num_kind != "number":
                        got = repr(num) if num else "the end of the input"
                        self.lex.fail_token(
                            index, f"{self.where}{what}: expected a number, got {got}"
                        )
                    elif elem.startswith("f"):
                        items.append(self.float_number(num, index, what))
                    else:
                        items.append(self.int_number(num, index, what))
                    if not self.lex.accept(","):
                        break
            self.lex.expect(">")
            return tuple(items)
        if text in ("dense", "dense_resource"):
            return self.parse_dense()
        if kind == "hash":
            return self.parse_dialect_attr()
        got = repr(text) if text else "the end of the input (truncated?)"
        self.lex.fail(f"{self.where}cannot read an attribute value starting at {got}")
        raise AssertionError

    def scalar_type(self, what: str) -> str:
        """A scalar type name (``i64``, ``f32``, ``index``...), or an error naming ``what``."""
        at = self.lex.i
        _, ty = self.lex.next()
        if not _SCALAR_TYPE.fullmatch(ty):
            got = repr(ty) if ty else "the end of the input"
            self.lex.fail_token(
                at, f"{self.where}{what}: expected a type like i64 or f32, got {got}"
            )
        return ty

    def parse_dialect_attr(self) -> Any:
        _, text = self.lex.next()
        if not text.startswith("#tx8be."):
            self.lex.i -= 1
            self.lex.fail(f"unknown attribute {text!r}: tx8lab reads #tx8be.* attributes only")
        mnemonic = text[len("#tx8be.") :]
        cls = A.BY_MNEMONIC.get(mnemonic)
        if cls is None:
            self.lex.i -= 1
            self.lex.fail(f"unknown tx8be attribute {mnemonic!r}")
        assert cls is not None
        self.lex.expect("<")
        if issubclass(cls, enum.Enum):
            _, name = self.lex.next()
            if name == "3" and self.lex.peek()[1] == "DDRAM":
                name += self.lex.next()[1]
            self.lex.expect(">")
            try:
                return cls(name)
            except ValueError:
                self.lex.i -= 2
                choices = ", ".join(m.value for m in cls)
                self.lex.fail(f"#tx8be.{mnemonic}: unknown case {name!r} (use {choices})")
        values: dict[str, Any] = {}
        start = self.lex.i
        self.enter()
        if not self.lex.accept(">"):
            while True:
                index = self.lex.i
                key_kind, key = self.lex.next()
                if key_kind != "ident":
                    self.lex.fail_token(
                        index, f"{self.where}#tx8be.{mnemonic}: expected a field name, got {key!r}"
                    )
                self.lex.expect("=")
                values[key] = self.parse_attr()
                if not self.lex.accept(","):
                    break
            self.lex.expect(">")
        self.leave()
        try:
            return cls(**values)
        except (TypeError, ValueError) as err:
            self.lex.fail_token(start, f"{self.where}#tx8be.{mnemonic}: {err}")

    def parse_dense(self) -> Any:
        _, word = self.lex.next()
        self.lex.expect("<")
        if word == "dense_resource":
            _, name = self.lex.next()
            self.lex.expect(">")
            self.lex.expect(":")
            self.parse_type()
            self.lex.i -= 1
            self.lex.fail(
                f"dense_resource<{name}>: the data was elided when printed; "
                "print without elide_bytes to get text that parses back"
            )
        kind, text = self.lex.peek()
        literal: Any
        start = self.lex.i
        if kind == "string":
            self.lex.next()
            hex_text = self.lex.unescape(text, start)
            try:
                if not hex_text.startswith("0x"):
                    raise ValueError("it does not start with 0x")
                literal = bytes.fromhex(hex_text[2:])
            except ValueError as err:
                self.lex.fail_token(
                    start,
                    f'{self.where}dense<"0x...">: not hex data ({err}); write pairs of hex digits',
                )
        else:
            literal = self.parse_dense_literal()
        self.lex.expect(">")
        self.lex.expect(":")
        at = self.lex.i
        ttype = self.parse_type()
        count = ttype.num_elements
        if count > MAX_DENSE_ELEMENTS:
            self.lex.fail_token(
                at,
                f"{self.where}constant data of {ttype} has {count} elements, more than the "
                f"{MAX_DENSE_ELEMENTS} (2**28) tx8lab holds in memory; check the type",
            )
        if isinstance(literal, bytes):
            width = {"i1": 1, "tf32": 3}.get(ttype.dtype) or max(1, _bits(ttype.dtype) // 8)
            if len(literal) == width and count != 1:
                array = np.broadcast_to(_dense_values(literal, ttype.dtype, 1), ttype.shape)
                return np.array(array)
            if len(literal) != width * count:
                self.lex.fail_token(
                    at,
                    f"{self.where}dense hex data has {len(literal)} bytes; {ttype} needs "
                    f"{width * count}",
                )
            return _dense_values(literal, ttype.dtype, count).reshape(ttype.shape)
        try:
            return _dense_array(literal, ttype)
        except (ValueError, OverflowError, TypeError) as err:
            self.lex.fail_token(
                start,
                f"{self.where}dense literal does not fit {ttype}: {err}; give one value or a "
                "list nested like the shape",
            )

    def parse_dense_literal(self) -> Any:
        if self.lex.accept("["):
            self.enter()
            items: list[Any] = []
            if not self.lex.accept("]"):
                items.append(self.parse_dense_literal())
                while self.lex.accept(","):
                    items.append(self.parse_dense_literal())
                self.lex.expect("]")
            self.leave()
            return items
        at = self.lex.i
        kind, text = self.lex.next()
        if text in ("true", "false"):
            return text == "true"
        if kind != "number":
            got = repr(text) if text else "the end of the input"
            self.lex.fail_token(at, f"{self.where}expected a number in dense literal, got {got}")
        if any(c in text for c in ".eE") and "x" not in text.lower():
            return self.float_number(text, at, "dense literal")
        return self.int_number(text, at, "dense literal")

    def parse_attr_dict(self, into: dict[str, Any]) -> None:
        self.lex.expect("{")
        if self.lex.accept("}"):
            return
        while True:
            at = self.lex.i
            kind, key = self.lex.next()
            if kind == "string":
                key = self.lex.unescape(key, at)
            elif kind != "ident":
                got = repr(key) if key else "the end of the input (truncated?)"
                self.lex.fail_token(at, f"{self.where}expected an attribute name, got {got}")
            if self.lex.accept("="):
                into[key] = self.parse_attr()
            else:
                into[key] = True
            if not self.lex.accept(","):
                break
        self.lex.expect("}")

    def parse_attr_dict_func(self, into: dict[str, Any]) -> None:
        """Function attributes: ``function_type`` is a type, not an attribute; skip it."""
        lex = self.lex
        lex.expect("{")
        while True:
            at = lex.i
            kind, key = lex.next()
            if kind == "string":
                key = lex.unescape(key, at)
            elif kind != "ident":
                got = repr(key) if key else "the end of the input (truncated?)"
                lex.fail_token(at, f"func.func: expected an attribute name, got {got}")
            lex.expect("=")
            if key == "function_type":
                self.parse_type_list()
                lex.expect("->")
                self.parse_type_list()
            else:
                into[key] = self.parse_attr()
            if not lex.accept(","):
                break
        lex.expect("}")

    # --- ops
    def parse_block(self, scope: dict[str, Value], owner: int, keep_ids: bool) -> Block:
        args: list[Value] = []
        if self.lex.peek()[0] == "block":
            self.lex.next()
            self.lex.expect("(")
            if not self.lex.accept(")"):
                while True:
                    at = self.lex.i
                    kind, name = self.lex.next()
                    if kind != "value":
                        got = repr(name) if name else "the end of the input (truncated?)"
                        self.lex.fail_token(
                            at, f"{self.where}expected a block argument name, got {got}"
                        )
                    self.lex.expect(":")
                    outer, self.where = self.where, f"{self.where}block argument {name}: "
                    value = Value(owner, len(args), self.parse_type(), is_arg=True)
                    self.where = outer
                    if name in scope:
                        self.lex.fail_token(at, f"{self.where}redefinition of {name}")
                    scope[name] = value
                    args.append(value)
                    if not self.lex.accept(","):
                        break
                self.lex.expect(")")
            self.lex.expect(":")
        ops: list[Op] = []
        while self.lex.peek()[1] != "}":
            ops.append(self.parse_op(scope))
        return Block(tuple(args), tuple(ops))

    def parse_op(self, scope: dict[str, Value]) -> Op:
        outer_where = self.where
        count = 0
        start = self.lex.i
        kind, text = self.lex.peek()
        base = ""
        if kind == "value":
            self.lex.next()
            base, colon, num = text.partition(":")
            if "#" in base:
                self.lex.fail_token(
                    start,
                    f"{text} cannot be defined (a #N name uses one result); write "
                    f"{base.partition('#')[0]}:N = ... for an op with N results",
                )
            count = int(num) if colon else 1
            if count < 1:
                self.lex.fail_token(start, f"{text}: an op defines at least one result")
            self.lex.expect("=")
        at = self.lex.i
        kind, op_kind = self.lex.next()
        if kind != "string":
            got = repr(op_kind) if op_kind else "the end of the input (truncated?)"
            self.lex.fail_token(at, f"expected an op name in quotes (generic syntax), got {got}")
        op_kind = self.lex.unescape(op_kind, at)
        self.where = f'"{op_kind}"{" " + base if base else ""}: '
        self.lex.expect("(")
        operand_names: list[str] = []
        if not self.lex.accept(")"):
            while True:
                at = self.lex.i
                kind, name = self.lex.next()
                if kind != "value":
                    got = repr(name) if name else "the end of the input (truncated?)"
                    self.lex.fail_token(at, f"{self.where}expected an operand, got {got}")
                operand_names.append(name)
                if not self.lex.accept(","):
                    break
            self.lex.expect(")")
        attrs: dict[str, Any] = {}
        if self.lex.peek()[1] == "<" and self.lex.peek2() == "{":
            self.lex.next()
            self.parse_attr_dict(attrs)
            self.lex.expect(">")
        op_id = -1
        digits = base[1:]
        if base and digits.isdigit():
            op_id = int(digits)
            if op_id > MAX_ID:
                self.lex.fail_token(
                    start, f"{self.where}op id {digits[:30]} is above {MAX_ID}; renumber the values"
                )
        regions: list[Block] = []
        region_start = len(self.renumber)
        arg_owner = op_id
        if op_id < 0:
            self.pending_owner -= 1
            arg_owner = self.pending_owner
        if self.lex.peek()[1] == "(" and self.lex.peek2() == "{":
            self.lex.next()
            self.enter()
            while True:
                self.lex.expect("{")
                regions.append(self.parse_block(scope, arg_owner, True))
                self.where = f'"{op_kind}"{" " + base if base else ""}: '
                self.lex.expect("}")
                if not self.lex.accept(","):
                    break
            self.lex.expect(")")
            self.leave()
        if self.lex.peek()[1] == "{":
            self.parse_attr_dict(attrs)
        self.lex.expect(":")
        in_types = self.parse_type_list()
        self.lex.expect("->")
        out_types = self.parse_type_list() if self.lex.peek()[1] != "(" else self._paren_types()
        if len(in_types) != len(operand_names):
            self.lex.fail_token(
                start,
                f"{self.where}{len(operand_names)} operands but {len(in_types)} operand types",
            )
        if base and len(out_types) != count:
            self.lex.fail_token(
                start, f"{self.where}{count} result names but {len(out_types)} result types"
            )
        names = [base] if count == 1 else [f"{base}#{i}" for i in range(count)]
        if not base:
            names = []
        operands = []
        for name, ttype in zip(operand_names, in_types, strict=True):
            value = scope.get(name)
            if value is None:
                self.lex.fail_token(start, f"{self.where}use of undefined value {name}")
                raise AssertionError
            if value.type != ttype:
                self.lex.fail_token(
                    start, f"{self.where}{name} has type {value.type}, used as {ttype}"
                )
            operands.append(value)
        created_by = attrs.pop("tx8.created_by", None)
        if created_by is not None and not isinstance(created_by, str):
            self.lex.fail_token(
                start,
                f"{self.where}tx8.created_by must be a string (a pass name), not {created_by!r}",
            )
        explicit_id = attrs.pop("tx8.id", None)
        if explicit_id is not None and (
            not isinstance(explicit_id, int)
            or isinstance(explicit_id, bool)
            or not 0 <= explicit_id <= MAX_ID
        ):
            self.lex.fail_token(
                start,
                f"{self.where}tx8.id must be an integer 0..{MAX_ID} (the op's id), not "
                f"{str(explicit_id)[:30]}",
            )
        if not out_types and op_kind not in TERMINATORS and isinstance(explicit_id, int):
            op_id = explicit_id
        if regions and op_id >= 0 and arg_owner != op_id:
            regions = [_reown(block, op_id) for block in regions]
        if op_kind in TERMINATORS:
            op_id = -1
        for key, value in list(attrs.items()):
            if isinstance(value, list):
                attrs[key] = tuple(value)
        results = tuple(Value(op_id, i, t) for i, t in enumerate(out_types))
        op = Op(op_id, op_kind, tuple(operands), results, attrs, tuple(regions), created_by)
        if op_id < 0 and op_kind not in TERMINATORS:
            self.renumber.append(op)
        elif op_id >= 0:
            self.max_id = max(self.max_id, op_id)
        del region_start
        for name, value in zip(names, results if base else (), strict=True):
            if name in scope:
                self.lex.fail_token(start, f"{self.where}redefinition of {name}")
            scope[name] = value
        self.where = outer_where
        return op

    def _paren_types(self) -> tuple[TensorType, ...]:
        return self.parse_type_list()


def _reown(block: Block, owner: int) -> Block:
    """``block`` with its arguments owned by ``owner`` (uses inside it follow)."""
    mapping = {a.key: Value(owner, a.index, a.type, True) for a in block.args}

    def fix(inner: Block) -> Block:
        ops = []
        for op in inner.ops:
            operands = tuple(mapping.get(v.key, v) for v in op.operands)
            regions = tuple(fix(r) for r in op.regions)
            ops.append(op.replace(operands=operands, regions=regions))
        return Block(inner.args, tuple(ops))

    fixed = fix(block)
    return Block(tuple(mapping[a.key] for a in block.args), fixed.ops)


def _dense_array(literal: Any, ttype: TensorType) -> np.ndarray[Any, Any]:
    """The data of a ``dense<[...]>`` literal as ``ttype`` (numpy errors for a misfit)."""
    array = np.array(literal, dtype=np.float64 if ttype.dtype[0] in "ftb" else object)
    if array.shape == () and ttype.shape != ():
        array = np.broadcast_to(array, ttype.shape)
    if array.size != ttype.num_elements:
        raise ValueError(f"{array.size} values for {ttype.num_elements} elements")
    if ttype.dtype == "i1":
        return np.array(array, dtype=bool).reshape(ttype.shape)
    if ttype.dtype in ("f32", "f16", "bf16", "tf32"):
        return round_to(array.reshape(ttype.shape), ttype.dtype)
    return np.array(array.reshape(ttype.shape).astype(np.int64), dtype=numpy_dtype(ttype.dtype))


def _bits(dtype: str) -> int:
    from tx8lab.core.dtypes import bits_of

    return bits_of(dtype)


def parse_module(text: str, source: str = "<text>") -> Module:
    """Read a module printed by :func:`print_module` or by ``mlir-opt`` (generic form)."""
    parser = _Parser(text, source)
    lex = parser.lex
    kind, name = lex.next()
    if kind != "string" or lex.unescape(name, 0) != "builtin.module":
        got = repr(name[:40]) if name else "an empty input"
        lex.fail_token(0, f'expected "builtin.module"() ({{ ... }}) in generic syntax, got {got}')
    lex.expect("(")
    lex.expect(")")
    lex.expect("(")
    lex.expect("{")
    functions: list[Function] = []
    while lex.peek()[1] != "}":
        functions.append(_parse_function(parser, len(functions)))
    lex.expect("}")
    lex.expect(")")
    mod_attrs: dict[str, Any] = {}
    attrs_at = lex.i
    if lex.peek()[1] == "{":
        parser.parse_attr_dict(mod_attrs)
    lex.expect(":")
    lex.expect("(")
    lex.expect(")")
    lex.expect("->")
    lex.expect("(")
    lex.expect(")")
    if lex.peek()[0] != "eof":
        lex.fail("text after the module")
    next_id = mod_attrs.pop("tx8.next_id", parser.max_id + 1)
    if not isinstance(next_id, int) or isinstance(next_id, bool) or not 0 <= next_id <= MAX_ID:
        lex.fail_token(
            attrs_at,
            f"builtin.module: tx8.next_id must be an integer 0..{MAX_ID} (the next free op "
            f"id), not {str(next_id)[:30]}",
        )
    next_id = max(next_id, parser.max_id + 1)
    if parser.renumber:
        functions, next_id = _assign_ids(functions, next_id)
    return Module(tuple(functions), mod_attrs, next_id)


def decode_source(data: bytes, source: str) -> str:
    r"""``data`` as UTF-8 text (a leading byte-order mark dropped), else an error.

    The error names the line and column of the first byte that is not UTF-8.

    Examples:
        >>> decode_source(b"ok", "a.mlir")
        'ok'
        >>> decode_source(b"x\n\xff", "a.mlir")
        Traceback (most recent call last):
        ...
        tx8lab.errors.Tx8labError: a.mlir:2:1: byte 0xFF is not UTF-8 text; save the file as UTF-8
    """
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise Tx8labError(
            f"{source}:{line}:{col}: byte 0x{data[err.start]:02X} is not UTF-8 text; save the "
            "file as UTF-8"
        ) from None


def read_source(path: str | Path) -> str:
    """The UTF-8 text of file ``path``; a missing, unreadable or non-UTF-8 file is an error."""
    file = Path(path)
    if not file.is_file():
        what = "is a directory, not a file" if file.is_dir() else "no such file"
        raise Tx8labError(f"{path}: {what}")
    try:
        data = file.read_bytes()
    except OSError as err:
        raise Tx8labError(f"{path}: cannot read it ({err.strerror or err})") from None
    return decode_source(data, str(path))


def check_input(module: Module, source: str) -> Module:
    """``module`` when it verifies; else an error saying the input ``source`` does not.

    Loaders call it before any pass runs, so a problem of the input is never blamed on a
    pass; the message names the source, the op and the first problem.
    """
    from tx8lab.core.verify import first_problem, verify_problems

    problems = verify_problems(module)
    if problems:
        raise Tx8labError(
            f"{source}: the input module does not verify: {first_problem(problems)}; fix the input"
        )
    return module


def read_module(path: str | Path) -> Module:
    """Parse and verify the MLIR file ``path`` (generic syntax); errors name the file."""
    return check_input(parse_module(read_source(path), str(path)), str(path))


def _parse_function(parser: _Parser, index: int) -> Function:
    lex = parser.lex
    at = lex.i
    kind, name = lex.next()
    if kind != "string" or lex.unescape(name, at) != "func.func":
        got = repr(name[:40]) if name else "the end of the input (truncated?)"
        lex.fail_token(at, f'expected "func.func" inside the module, got {got}')
    lex.expect("(")
    lex.expect(")")
    attrs: dict[str, Any] = {}
    if lex.peek()[1] == "<":
        lex.next()
        parser.parse_attr_dict_func(attrs)
        lex.expect(">")
    lex.expect("(")
    lex.expect("{")
    scope: dict[str, Value] = {}
    body = parser.parse_block(scope, -(index + 1), True)
    lex.expect("}")
    lex.expect(")")
    if lex.peek()[1] == "{":
        parser.parse_attr_dict_func(attrs)
    lex.expect(":")
    lex.expect("(")
    lex.expect(")")
    lex.expect("->")
    lex.expect("(")
    lex.expect(")")
    sym = attrs.get("sym_name")
    if not isinstance(sym, str):
        lex.fail_token(at, 'func.func without sym_name = "NAME" (a string)')
    if not body.ops or body.ops[-1].kind != "func.return":
        lex.fail_token(at, f"function {sym}: body must end with func.return")
    assert isinstance(sym, str)
    return Function(sym, body)


def _assign_ids(functions: list[Function], next_id: int) -> tuple[list[Function], int]:
    """Give fresh ids to ops whose names did not carry one (text from mlir-opt)."""
    mapping: dict[tuple[int, int, bool], Value] = {}

    def fix_block(block: Block) -> Block:
        nonlocal next_id
        new_ops = []
        for op in block.ops:
            operands = tuple(mapping.get(v.key, v) for v in op.operands)
            op_id = op.id
            if op_id < 0 and op.kind not in TERMINATORS:
                op_id = next_id
                next_id += 1
            results = tuple(Value(op_id, r.index, r.type) for r in op.results)
            for old, new in zip(op.results, results, strict=True):
                mapping[old.key] = new
            regions = []
            for region in op.regions:
                args = tuple(Value(op_id, a.index, a.type, True) for a in region.args)
                for old, new in zip(region.args, args, strict=True):
                    mapping[old.key] = new
                regions.append(fix_block(Block(args, region.ops)))
            new_ops.append(
                op.replace(id=op_id, operands=operands, results=results, regions=tuple(regions))
            )
        return Block(block.args, tuple(new_ops))

    return [Function(f.name, fix_block(f.body)) for f in functions], next_id


def renumber(module: Module) -> Module:
    """The module with op ids 0, 1, 2, ... in walk order (how mlir-opt names values).

    Two modules that differ only in their ids print identically after ``renumber``; the
    tests use it to compare our text with mlir-opt's.
    """
    counter = 0
    mapping: dict[tuple[int, int, bool], Value] = {}

    def fix(block: Block, args: tuple[Value, ...]) -> Block:
        nonlocal counter
        for old, new in zip(block.args, args, strict=True):
            mapping[old.key] = new
        new_ops = []
        for op in block.ops:
            operands = tuple(mapping[v.key] for v in op.operands)
            if op.kind in TERMINATORS:
                new_ops.append(op.replace(operands=operands))
                continue
            op_id = counter
            counter += 1
            results = tuple(Value(op_id, r.index, r.type) for r in op.results)
            for old, new in zip(op.results, results, strict=True):
                mapping[old.key] = new
            regions = tuple(
                fix(r, tuple(Value(op_id, a.index, a.type, True) for a in r.args))
                for r in op.regions
            )
            new_ops.append(
                op.replace(id=op_id, operands=operands, results=results, regions=regions)
            )
        return Block(args, tuple(new_ops))

    functions = tuple(Function(f.name, fix(f.body, f.body.args)) for f in module.functions)
    return Module(functions, module.attrs, counter)


# str(module) prints the text form; the IR cannot import this module, so it is told here
set_module_printer(print_module)
