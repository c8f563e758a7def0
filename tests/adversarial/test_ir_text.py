"""Bad MLIR text and bad affine loop-nest text: one ``Tx8labError`` naming where, never more.

Two halves. A corpus of named cases, each a small edit of a printed module (or of an
affine nest file) with exactly one expected outcome: success, or a ``Tx8labError`` whose
message matches a pattern naming the file and line (or the op, value or field) and what
is wrong. Then fuzzing: hypothesis mutates printed zoo models (characters, deletions,
duplications, truncation, token swaps, numbers replaced by floats, huge and negative
values, attribute values and tensor types changed) and asserts that parsing and
verification either succeed or raise ``Tx8labError``, nothing else.

The fuzz budget is ``TX8LAB_FUZZ_EXAMPLES`` (default 1) times the per-test counts below,
about 6,000 MLIR-text mutations and 1,000 affine-text mutations per default run.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tx8lab.cli import main
from tx8lab.core.builder import Builder
from tx8lab.core.instruments import Verify
from tx8lab.core.ir import Block, Function, Module, Op, TensorType, Value
from tx8lab.core.passes import build_pipeline
from tx8lab.core.runner import run_pipeline
from tx8lab.core.text import check_input, decode_source, parse_module, print_module
from tx8lab.core.verify import verify, verify_problems
from tx8lab.core.zoo import build
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81, get_preset
from tx8lab.kernels.loop_fusion import parse_functions

FUZZ = int(os.environ.get("TX8LAB_FUZZ_EXAMPLES", "1"))
NESTS = Path(__file__).resolve().parent.parent / "kernels" / "nests"


def _relu_module() -> Module:
    b = Builder()
    x = b.input((2, 4), "f16")
    b.output(b.op("Relu", x))
    return b.finish()


#: The module most cases edit (printed below; ``%0`` is the Relu, ``%arg0`` its input).
RELU = print_module(_relu_module())

#: Every line of RELU, so a case can say which one it edits.
assert RELU.splitlines()[3].strip().startswith('%0 = "tx8be.Relu"(%arg0)')


def _sub(old: str, new: str, text: str = RELU) -> str:
    assert old in text, old
    return text.replace(old, new)


def _parse_and_verify(text: str, source: str = "in.mlir") -> Module:
    return check_input(parse_module(text, source), source)


# --------------------------------------------------------------------------- the corpus

#: (case id, MLIR text, regex the error matches; None: it parses and verifies)
MLIR_CASES: list[tuple[str, str, str | None]] = [
    ("printed-module", RELU, None),
    ("byte-order-mark-is-fine", "\ufeff" + RELU, None),
    ("comments-are-fine", "// a comment\n" + RELU.replace("\n", " // note\n", 2), None),
    (
        "unnamed-op-with-a-result",
        _sub(
            '    "func.return"',
            '    "tx8be.Relu"(%0) : (tensor<2x4xf16>) -> tensor<2x4xf16>\n    "func.return"',
        ),
        None,
    ),
    ("empty-input", "", r"^in\.mlir:1:1: expected \"builtin\.module\".*an empty input"),
    ("only-whitespace", "   \n\n  ", r"^in\.mlir:3:3: expected \"builtin\.module\""),
    ("not-mlir", "hello world", r"^in\.mlir:1:1: expected \"builtin\.module\".*'hello'"),
    # found by the fuzzer: a Unicode line separator alone made the lexer index past the end
    ("unicode-line-separator", "\u2028", r"^in\.mlir:1:1: unexpected character '\\u2028'"),
    (
        "unicode-space-inside",
        _sub("%0 = ", "%0 =\u00a0"),
        r"^in\.mlir:4:9: unexpected character '\\xa0'",
    ),
    ("binary-garbage", "\x00\x01\x02", r"^in\.mlir:1:1: unexpected character '\\x00'"),
    (
        "many-spaces-then-a-bad-character",
        '"builtin.module"() ({' + " " * 5000 + "~",
        r"^in\.mlir:1:5022: unexpected character '~'",
    ),
    (
        "float-where-an-integer-belongs",
        _sub("tx8.next_id = 1 : i64", "tx8.next_id = 1.5 : i64"),
        r"^in\.mlir:7:\d+: 1\.5 : i64: expected an integer, got '1\.5'",
    ),
    (
        "huge-integer",
        _sub("tx8.next_id = 1 : i64", "tx8.next_id = 99999999999999999999999 : i64"),
        r"^in\.mlir:7:\d+: .*integer 99999999999999999999999 does not fit in 64 bits",
    ),
    (
        "negative-next-id",
        _sub("tx8.next_id = 1 : i64", "tx8.next_id = -4 : i64"),
        r"^in\.mlir:7:\d+: builtin\.module: tx8\.next_id must be an integer 0\.\.\d+.*not -4",
    ),
    (
        "string-next-id",
        _sub("tx8.next_id = 1 : i64", 'tx8.next_id = "one"'),
        r"tx8\.next_id must be an integer .*not one",
    ),
    (
        "missing-type-after-colon",
        _sub("tx8.next_id = 1 : i64", "tx8.next_id = 1 : ]"),
        r"^in\.mlir:7:\d+: the type of 1: expected a type like i64 or f32, got '\]'",
    ),
    (
        "bad-string-escape",
        _sub('sym_name = "main"', 'sym_name = "ma\\zzin"'),
        r"^in\.mlir:6:\d+: bad string \"ma\\zzin\": escape \\zz is not",
    ),
    (
        "escape-spelling-bad-utf8",
        _sub('sym_name = "main"', 'sym_name = "m\\C3"'),
        r"^in\.mlir:6:\d+: bad string .*not UTF-8",
    ),
    (
        "escaped-op-name-with-bad-escape",
        _sub('"tx8be.Relu"', '"tx8be.Re\\lu"'),
        r"^in\.mlir:4:10: bad string \"tx8be\.Re\\lu\"",
    ),
    (
        "empty-tensor-result",
        _sub(
            "-> tensor<2x4xf16>\n",
            "-> tensor<0x4xf16>\n",
        ),
        r'^in\.mlir:4:\d+: "tx8be\.Relu" %0: tensor<0x4xf16> is empty \(dimension 0 has size 0\)',
    ),
    (
        "empty-tensor-argument",
        RELU.replace("tensor<2x4xf16>", "tensor<2x0xf16>"),
        r"^in\.mlir:3:\d+: block argument %arg0: tensor<2x0xf16> is empty \(dimension 1 has "
        r"size 0\)",
    ),
    (
        "negative-dimension-is-not-dynamic",
        RELU.replace("tensor<2x4xf16>", "tensor<-4x4xf16>"),
        r"^in\.mlir:3:\d+: block argument %arg0: tensor<-4x4xf16>: dimension 0 is negative "
        r"\(-4\)",
    ),
    (
        "dynamic-dimension",
        RELU.replace("tensor<2x4xf16>", "tensor<2x?xf16>"),
        r"^in\.mlir:3:\d+: .*tensor<2x\?xf16>: dimension 1 is dynamic",
    ),
    (
        "float-dimension",
        RELU.replace("tensor<2x4xf16>", "tensor<2x1.5xf16>"),
        r"^in\.mlir:3:\d+: .*tensor<2x1\.5xf16>: dimension 1 is '1\.5', not a whole number",
    ),
    (
        "huge-tensor",
        RELU.replace("tensor<2x4xf16>", "tensor<99999999x99999999xf16>"),
        r"^in\.mlir:3:\d+: .*tensor<99999999x99999999xf16> has \d+ elements, more than",
    ),
    (
        "unknown-element-type",
        RELU.replace("tensor<2x4xf16>", "tensor<2x4xq7>"),
        r"^in\.mlir:3:\d+: block argument %arg0: tensor<2x4xq7>: .*q7",
    ),
    (
        "unranked-tensor",
        RELU.replace("tensor<2x4xf16>", "tensor<*xf16>"),
        r"^in\.mlir:3:\d+: .*tensor<\*xf16>",
    ),
    (
        "zero-results-defined",
        _sub("%0 = ", "%0:0 = "),
        r"^in\.mlir:4:5: %0:0: an op defines at least one result",
    ),
    (
        "hash-result-defined",
        _sub("%0 = ", "%0#1 = "),
        r"^in\.mlir:4:5: %0#1 cannot be defined.*write %0:N",
    ),
    (
        "result-count-mismatch",
        _sub("%0 = ", "%0:3 = "),
        r'^in\.mlir:4:5: "tx8be\.Relu" %0: 3 result names but 1 result types',
    ),
    (
        "huge-result-count",
        _sub("%0 = ", "%0:999999999999 = "),
        r"999999999999 result names but 1 result types",
    ),
    (
        "huge-op-id",
        RELU.replace("%0", "%99999999999999"),
        r'^in\.mlir:4:5: "tx8be\.Relu" %99999999999999: op id 99999999999999 is above',
    ),
    (
        "undefined-operand",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg9)'),
        r'^in\.mlir:4:5: "tx8be\.Relu" %0: use of undefined value %arg9',
    ),
    (
        "operand-type-mismatch",
        _sub("(tensor<2x4xf16>) -> tensor<2x4xf16>\n", "(tensor<2x4xf32>) -> tensor<2x4xf16>\n"),
        r'^in\.mlir:4:5: "tx8be\.Relu" %0: %arg0 has type tensor<2x4xf16>, used as '
        r"tensor<2x4xf32>",
    ),
    (
        "operand-count-mismatch",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0, %arg0)'),
        r'"tx8be\.Relu" %0: 2 operands but 1 operand types',
    ),
    (
        "redefinition",
        _sub(
            '    "func.return"(%0)',
            '    %0 = "tx8be.Relu"(%arg0) : (tensor<2x4xf16>) -> tensor<2x4xf16>\n'
            '    "func.return"(%0)',
        ),
        r'^in\.mlir:5:5: "tx8be\.Relu" %0: redefinition of %0',
    ),
    (
        "op-name-not-quoted",
        _sub('"tx8be.Relu"', "tx8be.Relu"),
        r"^in\.mlir:4:10: expected an op name in quotes \(generic syntax\), got 'tx8be\.Relu'",
    ),
    (
        "text-after-the-module",
        RELU + "junk",
        r"^in\.mlir:8:1: text after the module",
    ),
    (
        "no-sym-name",
        _sub(', sym_name = "main"', ""),
        r"^in\.mlir:2:3: func\.func without sym_name",
    ),
    (
        "sym-name-not-a-string",
        _sub('sym_name = "main"', "sym_name = 3 : i64"),
        r"^in\.mlir:2:3: func\.func without sym_name = \"NAME\"",
    ),
    (
        "body-without-return",
        "\n".join(line for line in RELU.splitlines() if "func.return" not in line) + "\n",
        r"^in\.mlir:2:3: function main: body must end with func\.return",
    ),
    (
        "attribute-name-missing",
        _sub("tx8.next_id = 1 : i64", "= 1 : i64"),
        r"^in\.mlir:7:\d+: expected an attribute name, got '='",
    ),
    (
        "attribute-value-missing",
        _sub("tx8.next_id = 1 : i64", "tx8.next_id = }"),
        r"^in\.mlir:7:\d+: cannot read an attribute value starting at '\}'",
    ),
    (
        "array-of-floats-as-i64",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0) {k = array<i64: 1, 1.5>}'),
        r'^in\.mlir:4:\d+: "tx8be\.Relu" %0: an element of array<i64: \.\.\.>: expected an '
        r"integer, got '1\.5'",
    ),
    (
        "array-cut-short",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0) {k = array<i64: 1, >}'),
        r"an element of array<i64: \.\.\.>: expected a number, got '>'",
    ),
    (
        "array-without-element-type",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0) {k = array<: 1>}'),
        r"the element type of array<\.\.\.>: expected a type like i64 or f32, got ':'",
    ),
    (
        "deeply-nested-list",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0) {k = ' + "[" * 5000 + "]" * 5000 + "}"),
        r'^in\.mlir:4:\d+: "tx8be\.Relu" %0: nested more than 64 levels deep',
    ),
    (
        "deeply-nested-dense",
        _sub(
            '"tx8be.Relu"(%arg0)',
            '"tx8be.Relu"(%arg0) {k = dense<'
            + "[" * 3000
            + "1"
            + "]" * 3000
            + "> : tensor<1xf32>}",
        ),
        r"nested more than 64 levels deep",
    ),
    (
        "dense-hex-not-hex",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0) {k = dense<"0xZZ"> : tensor<1xi8>}'),
        r'^in\.mlir:4:\d+: "tx8be\.Relu" %0: dense<"0x\.\.\.">: not hex data',
    ),
    (
        "dense-hex-without-0x",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0) {k = dense<"abcd"> : tensor<2xi8>}'),
        r"not hex data \(it does not start with 0x\)",
    ),
    (
        "dense-hex-wrong-length",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0) {k = dense<"0x0102"> : tensor<3xi8>}'),
        r"dense hex data has 2 bytes; tensor<3xi8> needs 3",
    ),
    (
        "dense-ragged-list",
        _sub(
            '"tx8be.Relu"(%arg0)',
            '"tx8be.Relu"(%arg0) {k = dense<[[1, 2], [3]]> : tensor<2x2xf32>}',
        ),
        r"dense literal does not fit tensor<2x2xf32>",
    ),
    (
        "dense-too-few-values",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0) {k = dense<[1, 2, 3]> : tensor<2x2xi32>}'),
        r"dense literal does not fit tensor<2x2xi32>: 3 values for 4 elements",
    ),
    (
        "dense-word-in-list",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0) {k = dense<[1, x]> : tensor<2xi32>}'),
        r"expected a number in dense literal, got 'x'",
    ),
    (
        "dense-too-large-to-hold",
        _sub(
            '"tx8be.Relu"(%arg0)',
            '"tx8be.Relu"(%arg0) {k = dense<"0x00"> : tensor<65536x65536xi8>}',
        ),
        r"constant data of tensor<65536x65536xi8> has 4294967296 elements, more than",
    ),
    (
        "dense-resource-elided",
        _sub(
            '"tx8be.Relu"(%arg0)',
            '"tx8be.Relu"(%arg0) {k = dense_resource<__elided__> : tensor<4xi8>}',
        ),
        r"dense_resource<__elided__>: the data was elided when printed",
    ),
    (
        "unknown-dialect-attribute",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0) {k = #tx8be.nope<>}'),
        r"unknown tx8be attribute 'nope'",
    ),
    (
        "foreign-dialect-attribute",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0) {k = #gpu.x}'),
        r"unknown attribute '#gpu\.x': tx8lab reads #tx8be\.\* attributes only",
    ),
    (
        "negative-tx8-id",
        _sub(
            '    "func.return"',
            '    "tx8be.Print"(%0) {tx8.id = -3 : i64} : (tensor<2x4xf16>) -> ()\n'
            '    "func.return"',
        ),
        r"tx8\.id must be an integer 0\.\.\d+ \(the op's id\), not -3",
    ),
    (
        "created-by-not-a-string",
        _sub('"tx8be.Relu"(%arg0)', '"tx8be.Relu"(%arg0) {tx8.created_by = 5 : i64}'),
        r'"tx8be\.Relu" %0: tx8\.created_by must be a string',
    ),
    (
        "unknown-op-fails-verification-as-input",
        _sub("tx8be.Relu", "tx8be.Relux"),
        r"^in\.mlir: the input module does not verify: %0 tx8be\.Relux: unknown op kind",
    ),
    (
        "wrong-result-shape-fails-verification-as-input",
        _sub("-> tensor<2x4xf16>\n", "-> tensor<4x2xf16>\n").replace(
            '"func.return"(%0) : (tensor<2x4xf16>)', '"func.return"(%0) : (tensor<4x2xf16>)'
        ),
        r"^in\.mlir: the input module does not verify: %0 tx8be\.Relu: result types "
        r"\(tensor<4x2xf16>\) but shape inference gives \(tensor<2x4xf16>\)",
    ),
]


def _truncations() -> list[tuple[str, str, str | None]]:
    """RELU cut after every 9th token boundary (each a truncated file)."""
    cuts = [m.start() for m in re.finditer(r"(?<=\S)\s", RELU)][:-1]
    return [
        (f"truncated-at-{cut}", RELU[:cut], r"^in\.mlir:\d+:\d+: .*(truncated|end of the input)")
        for cut in cuts[::9]
    ]


MLIR_CASES += _truncations()


@pytest.mark.parametrize(
    ("text", "pattern"),
    [pytest.param(text, pattern, id=name) for name, text, pattern in MLIR_CASES],
)
def test_mlir_text_corpus(text: str, pattern: str | None) -> None:
    start = time.perf_counter()
    if pattern is None:
        module = _parse_and_verify(text)
        assert print_module(parse_module(print_module(module))) == print_module(module)
    else:
        with pytest.raises(Tx8labError) as info:
            _parse_and_verify(text)
        message = str(info.value)
        assert re.search(pattern, message), message
        assert "\n" not in message
        assert "dynamic" not in message or "?" in text
    assert time.perf_counter() - start < 2.0


def test_the_non_utf8_byte_is_located() -> None:
    data = RELU.encode().replace(b"Relu", b"R\xffelu")
    with pytest.raises(Tx8labError, match=r"^in\.mlir:4:18: byte 0xFF is not UTF-8 text"):
        decode_source(data, "in.mlir")


def _empty_relu() -> Module:
    """A Relu on a tensor<0x4xf16> (built by hand: the Builder verifies)."""
    ttype = TensorType((0, 4), "f16")
    arg, result = Value(-1, 0, ttype, True), Value(0, 0, ttype)
    relu = Op(0, "tx8be.Relu", (arg,), (result,))
    ret = Op(-1, "func.return", (result,), ())
    return Module((Function("main", Block((arg,), (relu, ret))),), {}, 1)


def test_the_verifier_names_an_empty_value_and_its_op() -> None:
    with pytest.raises(Tx8labError, match=r"block argument 0: tensor<0x4xf16> is empty"):
        verify(_empty_relu())
    problems = verify_problems(_empty_relu())
    assert any(
        re.fullmatch(r"function main: block argument 0: tensor<0x4xf16> is empty .*", p)
        for p in problems
    ), problems
    assert any(
        re.fullmatch(r"%\d+ tx8be\.Relu: result 0: tensor<0x4xf16> is empty.*", p) for p in problems
    ), problems


def test_a_bad_input_is_blamed_on_the_input_not_the_first_pass() -> None:
    module = _empty_relu()
    with pytest.raises(Tx8labError) as info:
        list(
            run_pipeline(
                module, ["fold-constants", "dce"], get_preset("tx81"), instruments=[Verify()]
            )
        )
    message = str(info.value)
    assert message.startswith(
        "the input module does not verify (checked before pass fold-constants, step 0; "
        "no pass ran): function main: block argument 0: tensor<0x4xf16> is empty"
    ), message
    assert "produced a module" not in message


def test_a_good_input_still_runs_under_verify() -> None:
    steps = list(
        run_pipeline(
            _relu_module(), ["fold-constants", "dce"], get_preset("tx81"), instruments=[Verify()]
        )
    )
    assert [s.name for s in steps] == ["fold-constants", "dce"]


# --------------------------------------------------------------------------- affine text

SEED = (NESTS / "elementwise_chain.mlir").read_text(encoding="utf-8")


def _deep(depth: int) -> str:
    lines = ["func.func @deep(%A: memref<2xf32>, %B: memref<2xf32>, %C: memref<2xf32>) {"]
    for src, dst, iv in (("%A", "%B", "i"), ("%B", "%C", "j")):
        lines += [f"{'  ' * (k + 1)}affine.for %{iv}{k} = 0 to 2 {{" for k in range(depth)]
        pad = "  " * (depth + 1)
        lines.append(f"{pad}%0 = affine.load {src}[%{iv}{depth - 1}] : memref<2xf32>")
        lines.append(f"{pad}affine.store %0, {dst}[%{iv}{depth - 1}] : memref<2xf32>")
        lines += [f"{'  ' * (k + 1)}}}" for k in reversed(range(depth))]
    return "\n".join([*lines, "  return", "}"]) + "\n"


def _many(count: int) -> str:
    args = ", ".join(f"%M{k}: memref<2xf32>" for k in range(count + 1))
    lines = [f"func.func @many({args}) {{"]
    for k in range(count):
        lines += [
            f"  affine.for %i{k} = 0 to 2 {{",
            f"    %0 = affine.load %M{k}[%i{k}] : memref<2xf32>",
            f"    affine.store %0, %M{k + 1}[%i{k}] : memref<2xf32>",
            "  }",
        ]
    return "\n".join([*lines, "  return", "}"]) + "\n"


def _seed(old: str, new: str) -> str:
    assert old in SEED, old
    return SEED.replace(old, new, 1)


AFFINE_CASES: list[tuple[str, str, str | None]] = [
    ("seed", SEED, None),
    ("nest-16-deep-is-accepted", _deep(16), None),
    ("zero-trip-loop", _seed("0 to 64", "0 to 0"), None),
    ("reversed-bounds", _seed("0 to 64", "64 to 0"), None),
    ("huge-bound", _seed("0 to 64", "0 to 99999999999999999999"), None),
    (
        "nest-300-deep-is-refused",
        _deep(300),
        r"^n\.mlir:\d+:\d+: a loop nest 300 loops deep; .*limited to 16 loops "
        r"\(parse_functions\(\.\.\., max_depth=N\) raises the limit",
    ),
    ("nest-17-deep-is-refused", _deep(17), r"a loop nest 17 loops deep"),
    (
        "too-many-nests",
        _many(129),
        r"^n\.mlir:1:1: @many has 129 loop nests; .*limited to 128 .*max_nests=N",
    ),
    ("empty-file", "", r"^n\.mlir: no func\.func found"),
    ("truncated-in-a-loop", SEED[: SEED.index("arith.addf")], r"^n\.mlir:\d+:\d+: "),
    ("truncated-after-for", SEED[: SEED.index("affine.for") + 10], r"^n\.mlir:\d+:\d+: expected"),
    ("float-bound", _seed("0 to 64", "0 to 6.4"), r"^n\.mlir:5:24: expected a constant"),
    ("step-2", _seed("0 to 64 {", "0 to 64 step 2 {"), r"^n\.mlir:5:\d+: only step 1 loops"),
    ("max-bound", _seed("0 to 64", "0 to max"), r"^n\.mlir:5:\d+: max bounds are not supported"),
    (
        "memref-as-bound",
        _seed("affine.for %j = 0 to 32 {", "affine.for %j = 0 to %A {"),
        r"^n\.mlir:6:\d+: loop %j: its bound uses memref %A",
    ),
    (
        "index-memref",
        SEED.replace("xf32>", "xindex>"),
        r"^n\.mlir:2:\d+: memref<64x32xindex>: memref element type 'index' is not supported",
    ),
    (
        "memref-without-element-type",
        SEED.replace("memref<64x32xf32>", "memref<64x32>"),
        r"^n\.mlir:2:\d+: memref<64x32>: .*element type",
    ),
    (
        "empty-memref",
        SEED.replace("memref<64x32xf32>", "memref<0x32xf32>"),
        r"^n\.mlir:2:\d+: memref<0x32xf32>: .*static and positive",
    ),
    (
        "dynamic-memref",
        SEED.replace("memref<64x32xf32>", "memref<?x32xf32>"),
        r"only static memrefs",
    ),
    (
        "rank-mismatch",
        _seed("affine.store %s, %t[%i, %j]", "affine.store %s, %t[%i]"),
        r"^n\.mlir:2: @ew_chain: %t has rank 2, indexed with 1",
    ),
    (
        "product-of-variables",
        _seed("affine.store %s, %t[%i, %j]", "affine.store %s, %t[%i * %j, %j]"),
        r"the product of two variables is not affine",
    ),
    (
        "floordiv",
        _seed("affine.store %s, %t[%i, %j]", "affine.store %s, %t[%i floordiv 2, %j]"),
        r"'floordiv' is not supported",
    ),
    (
        "deep-parentheses",
        _seed(
            "affine.store %s, %t[%i, %j]",
            "affine.store %s, %t[" + "(" * 500 + "%i" + ")" * 500 + ", %j]",
        ),
        r"an affine expression nested more than 64 deep",
    ),
    ("non-ascii-name", SEED.replace("%A", "%Aé"), r"^n\.mlir:2:\d+: unexpected character 'é'"),
    (
        "undefined-map-operand",
        _seed(
            "affine.for %j = 0 to 32 {",
            "affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%zz) {",
        ),
        r"^n\.mlir:2: @ew_chain: %zz is used before it is defined",
    ),
    ("unknown-alias", _seed("0 to 64", "0 to #nope(%A)"), r"unknown map alias #nope"),
    ("return-a-value", _seed("  return", "  return %A"), r"returning values is not supported"),
]


@pytest.mark.parametrize(
    ("text", "pattern"),
    [pytest.param(text, pattern, id=name) for name, text, pattern in AFFINE_CASES],
)
def test_affine_text_corpus(text: str, pattern: str | None) -> None:
    start = time.perf_counter()
    if pattern is None:
        assert parse_functions(text, "n.mlir")
    else:
        with pytest.raises(Tx8labError) as info:
            parse_functions(text, "n.mlir")
        assert re.search(pattern, str(info.value)), str(info.value)
    assert time.perf_counter() - start < 2.0


def test_the_depth_limit_can_be_raised() -> None:
    (func,) = parse_functions(_deep(17), "n.mlir", max_depth=17)
    assert len(func.nests) == 2


# --------------------------------------------------------------------------- the CLI


def _write(tmp_path: Path, name: str, data: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return str(path)


#: (case id, sub-command argv before the file, file name, contents, regex for the message)
CLI_CASES: list[tuple[str, list[str], str, str | bytes, str]] = [
    (
        "run-non-utf8",
        ["run"],
        "m.mlir",
        RELU.encode().replace(b"Relu", b"R\xe9lu"),
        r"m\.mlir:4:18: byte 0xE9 is not UTF-8 text; save the file as UTF-8$",
    ),
    ("run-truncated", ["run"], "m.mlir", RELU[:150], r"m\.mlir:\d+:\d+: .*truncated"),
    ("run-empty-tensor", ["run"], "m.mlir", RELU.replace("2x4", "0x4"), r"m\.mlir:3:\d+: .*empty"),
    (
        "run-unknown-op",
        ["run"],
        "m.mlir",
        _sub("tx8be.Relu", "tx8be.Relux"),
        r"m\.mlir: the input module does not verify: %0 tx8be\.Relux: unknown op kind",
    ),
    (
        "opt-unknown-op-is-the-input",
        ["opt", "-p", "fold-constants"],
        "m.mlir",
        _sub("tx8be.Relu", "tx8be.Relux"),
        r"m\.mlir: the input module does not verify: %0 tx8be\.Relux: unknown op kind",
    ),
    (
        "opt-non-utf8",
        ["opt", "-p", "dce"],
        "m.mlir",
        b"\xff\xfe" + RELU.encode(),
        r"m\.mlir:1:1: byte 0xFF is not UTF-8 text",
    ),
    (
        "opt-bad-escape",
        ["opt", "-p", "dce"],
        "m.mlir",
        _sub('sym_name = "main"', 'sym_name = "\\q"'),
        r"m\.mlir:6:\d+: bad string",
    ),
    ("opt-directory", ["opt", "-p", "dce"], "", "", r"is a directory, not a file$"),
    (
        "fuse-non-utf8",
        ["fuse"],
        "n.mlir",
        SEED.encode().replace(b"%A", b"%\xc3A"),
        r"n\.mlir:2:\d+: byte 0xC3 is not UTF-8 text",
    ),
    ("fuse-truncated", ["fuse"], "n.mlir", SEED[:400], r"n\.mlir:\d+:\d+: "),
    (
        "fuse-deep",
        ["fuse"],
        "n.mlir",
        _deep(300),
        r"a loop nest 300 loops deep; .*limited to 16 .*\(on the command line: --max-depth N\)$",
    ),
    (
        "fuse-deep-above-the-flag",
        ["fuse", "--max-depth", "8"],
        "n.mlir",
        _deep(9),
        r"a loop nest 9 loops deep; .*limited to 8 loops",
    ),
    (
        "fuse-many-nests",
        ["fuse", "--max-nests", "4"],
        "n.mlir",
        _many(5),
        r"@many has 5 loop nests; .*limited to 4 .*--max-nests N\)$",
    ),
    ("fuse-max-depth-zero", ["fuse", "--max-depth", "0"], "n.mlir", SEED, r"--max-depth"),
    ("fuse-empty", ["fuse"], "n.mlir", "", r"n\.mlir: no func\.func found"),
]


@pytest.mark.parametrize(
    ("argv", "name", "data", "pattern"),
    [pytest.param(argv, name, data, pat, id=cid) for cid, argv, name, data, pat in CLI_CASES],
)
def test_cli_reports_a_bad_file_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    name: str,
    data: str | bytes,
    pattern: str,
) -> None:
    path = _write(tmp_path, name, data) if name else str(tmp_path)
    command, *options = argv
    start = time.perf_counter()
    assert main([command, path, *options]) == 2
    assert time.perf_counter() - start < 10.0
    err = capsys.readouterr().err
    assert err.startswith("tx8lab: error: "), err
    assert err.endswith("\n"), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert re.search(pattern, err.rstrip("\n")), err
    assert "produced a module" not in err


def test_fuse_max_depth_raises_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "n.mlir", _deep(17))
    assert main(["fuse", path]) == 2
    capsys.readouterr()
    assert main(["fuse", path, "--max-depth", "17"]) == 0
    assert "fusion (greedy): nest0 into nest1" in capsys.readouterr().out


# --------------------------------------------------------------------------- fuzzing


@cache
def _printed() -> tuple[str, ...]:
    models = [
        ("tiny_cnn", {}),
        ("tiny_transformer_block", {}),
        ("layout_align_demo", {}),
        ("batchnorm_demo", {"batch": 1, "height": 2, "width": 2, "channels": 4}),
        ("llama_decoder", {"hidden": 32, "heads": 2, "ffn": 64, "vocab": 50, "seq": 8}),
    ]
    return tuple(print_module(build(name, **kw)) for name, kw in models)


_TOKEN = re.compile(
    r"tensor<[^>]*>|\"(?:[^\"\\]|\\.)*\"|%[\w#:$.\-]+|-?\d+(?:\.\d*)?(?:e[+-]?\d+)?|\w+|\S"
)
_NUMBER = re.compile(r"(?<![\w%#.])-?\d+(?![\w.])|(?<=[<x])\d+(?=x)")
_NUMBERS = ["1.5", "-4", "0", "-0", "99999999999999999999999", "1e400", "0x10", "2.", "-7", "nan"]
_PIECES = [
    "",
    "\\",
    '"',
    "%",
    "#tx8be.",
    "[",
    "]",
    "{",
    "}",
    "(",
    ")",
    "<",
    ">",
    ":",
    ",",
    "->",
    "true",
    "unit",
    "\x00",
    "\xff",
    "é",
    "\u2028",
    '"\\zz"',
    '"\\C3"',
    "tensor<0x4xf16>",
    "tensor<-4x4xf16>",
    "tensor<4x?xf16>",
    "array<i64: 1.5>",
    'dense<"0x12">',
    "dense<[1,",
]


def _mutate(text: str, kind: int, a: int, b: int, piece: int) -> str:
    """One mutation of ``text``, chosen by ``kind``; ``a``, ``b``, ``piece`` pick the place."""
    if not text:
        return _PIECES[piece % len(_PIECES)]
    n = len(text)
    i = a % n
    if kind == 0:  # replace one character
        return text[:i] + chr(32 + b % 95) + text[i + 1 :]
    if kind == 1:  # delete a span
        return text[:i] + text[i + 1 + b % 40 :]
    if kind == 2:  # duplicate a span
        j = min(n, i + 1 + b % 60)
        return text[:j] + text[i:j] + text[j:]
    if kind == 3:  # truncate
        return text[:i]
    tokens = [m.span() for m in _TOKEN.finditer(text)]
    if len(tokens) < 2:
        return text[:i]
    if kind == 4:  # swap two tokens
        (s1, e1), (s2, e2) = sorted((tokens[a % len(tokens)], tokens[b % len(tokens)]))
        if e1 > s2:
            return text
        return text[:s1] + text[s2:e2] + text[e1:s2] + text[s1:e1] + text[e2:]
    if kind == 5:  # a number becomes a float, a huge or a negative value...
        numbers = [m.span() for m in _NUMBER.finditer(text)]
        if numbers:
            s, e = numbers[a % len(numbers)]
            return text[:s] + _NUMBERS[b % len(_NUMBERS)] + text[e:]
    s, e = tokens[a % len(tokens)]  # a token becomes a piece of syntax
    return text[:s] + _PIECES[piece % len(_PIECES)] + text[e:]


_mutations = st.lists(
    st.tuples(
        st.integers(0, 6),
        st.integers(0, 1 << 20),
        st.integers(0, 1 << 20),
        st.integers(0, len(_PIECES) - 1),
    ),
    min_size=1,
    max_size=3,
)


def _parses_or_refuses(text: str) -> str:
    """'ok' or 'error'; anything but a Tx8labError escapes and fails the test."""
    try:
        verify(parse_module(text, "fuzz.mlir"))
    except Tx8labError:
        return "error"
    return "ok"


@settings(
    max_examples=FUZZ * 3000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(model=st.integers(0, 4), mutations=_mutations)
def test_fuzz_mutated_text_parses_or_is_refused(
    model: int, mutations: list[tuple[int, int, int, int]]
) -> None:
    text = _printed()[model]
    for kind, a, b, piece in mutations:
        text = _mutate(text, kind, a, b, piece)
    _parses_or_refuses(text)


_ATTR_NUMBER = re.compile(r"(?:[:,=] |\[)(-?\d+(?:\.\d+)?)(?= : |, |>|\])")
_ATTR_VALUE = re.compile(
    r"= ((?:array<[^>]*>|-?\d+(?:\.\d+)? : \w+|\"[^\"]*\"|true|false|#tx8be\.\w+<[^>]*>))"
)
_VALUES = ["0", "-1", "-4", "1.5", "2.0e300", "9223372036854775807", "4294967296", "65536", "3"]
_DIMS = ["1", "2", "3", "7", "64", "100000", "0"]
_DTYPES = ["f32", "i8", "i1", "bf16", "i64", "f64", "tf32", "i32", "f16"]


def _mutate_structure(text: str, kind: int, a: int, b: int) -> str:
    """Edits that keep the syntax: attribute numbers and values, tensor types everywhere."""
    if kind == 0:
        spans = [m.span(1) for m in _ATTR_NUMBER.finditer(text)]
        if spans:
            s, e = spans[a % len(spans)]
            return text[:s] + _VALUES[b % len(_VALUES)] + text[e:]
    if kind == 1:
        types = sorted(set(re.findall(r"tensor<[^>]*>", text)))
        if types:
            old = types[a % len(types)]
            dims = old[len("tensor<") : -1].split("x")
            if len(dims) > 1:
                dims[b % (len(dims) - 1)] = _DIMS[(a // 7) % len(_DIMS)]
            else:
                dims.insert(0, "2")
            if b % 5 == 0:
                dims[-1] = _DTYPES[(b // 5) % len(_DTYPES)]
            return text.replace(old, "tensor<" + "x".join(dims) + ">")
    values = [m.span(1) for m in _ATTR_VALUE.finditer(text)]
    if len(values) >= 2:
        (s1, e1), (s2, e2) = sorted((values[a % len(values)], values[b % len(values)]))
        if e1 <= s2:
            return text[:s1] + text[s2:e2] + text[e1:s2] + text[s1:e1] + text[e2:]
    return text


_edits = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 1 << 20), st.integers(0, 1 << 20)),
    min_size=1,
    max_size=3,
)


@settings(
    max_examples=FUZZ * 2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(
    model=st.integers(0, 4),
    edits=_edits,
)
def test_fuzz_attribute_and_type_edits_verify_or_are_refused(
    model: int, edits: list[tuple[int, int, int]]
) -> None:
    text = _printed()[model]
    for kind, a, b in edits:
        text = _mutate_structure(text, kind, a, b)
    _parses_or_refuses(text)


@settings(
    max_examples=FUZZ * 400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(
    model=st.integers(0, 4),
    edits=_edits,
)
def test_fuzz_edited_modules_that_verify_go_through_every_pass_or_are_refused(
    model: int, edits: list[tuple[int, int, int]]
) -> None:
    """The whole default pipeline on the edits that still verify (about 1 in 15).

    Only a Tx8labError may escape a pass. The search is off (``default``): the passes
    see the module, and the search's own inputs are fuzzed by the corpus's knobs.
    """
    text = _printed()[model]
    for kind, a, b in edits:
        text = _mutate_structure(text, kind, a, b)
    try:
        module = parse_module(text, "fuzz.mlir")
        verify(module)
    except Tx8labError:
        return
    with contextlib.suppress(Tx8labError):
        for _ in run_pipeline(module, build_pipeline(None, {"group-cost.search": "default"}), TX81):
            pass


@settings(
    max_examples=FUZZ * 1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(data=st.data())
def test_fuzz_byte_level_input_decodes_or_is_refused(data: st.DataObject) -> None:
    raw = bytearray(_printed()[data.draw(st.integers(0, 4))].encode())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at : at + 1] = data.draw(st.binary(min_size=0, max_size=4))
    try:
        text = decode_source(bytes(raw), "fuzz.mlir")
    except Tx8labError:
        return
    _parses_or_refuses(text)


@cache
def _nest_texts() -> tuple[str, ...]:
    return tuple(p.read_text(encoding="utf-8") for p in sorted(NESTS.glob("*.mlir")))


@settings(
    max_examples=FUZZ * 1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(nest=st.integers(0, 12), mutations=_mutations)
def test_fuzz_mutated_affine_text_parses_or_is_refused(
    nest: int, mutations: list[tuple[int, int, int, int]]
) -> None:
    texts = _nest_texts()
    text = texts[nest % len(texts)]
    for kind, a, b, piece in mutations:
        text = _mutate(text, kind, a, b, piece)
    with contextlib.suppress(Tx8labError):
        parse_functions(text, "fuzz.mlir")
