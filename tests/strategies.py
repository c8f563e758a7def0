"""Hypothesis strategies for random valid tx8be modules, shared by every pass's tests.

``modules()`` draws DAGs with fan-out, multi-input and multi-result ops, constants (numpy
data and RandomInit), ranks 1-4 and several element types, and optionally wraps a run of
ops into a ``tx8be.Group`` region. Every module it returns verifies.

Kinds used are those of docs/ops.md; a kind missing from the op library is skipped, so the
strategy keeps working while the library grows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tx8lab.core.attrs import RandomInit
from tx8lab.core.builder import make_op
from tx8lab.core.ir import Block, Function, IdCounter, Module, Op, TensorType, Value
from tx8lab.core.ops import OPS
from tx8lab.core.verify import verify

FLOATS = ("f32", "f16", "bf16")
DTYPES = ("f32", "f16", "bf16", "i32")
UNARY_FLOAT = ("Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Silu")
UNARY_INT = ("Neg", "Abs", "Relu")
BINARY = ("Add", "Sub", "Mul", "Max", "Min")


def _has(kind: str) -> bool:
    return f"tx8be.{kind}" in OPS


@st.composite
def shapes(draw: Any, min_rank: int = 1, max_rank: int = 4) -> tuple[int, ...]:
    """A small static shape."""
    rank = draw(st.integers(min_rank, max_rank))
    return tuple(draw(st.integers(1, 5)) for _ in range(rank))


class _Gen:
    """Appends ops to a list, keeping track of the values available so far."""

    def __init__(self) -> None:
        self.ids = IdCounter(0)
        self.ops: list[Op] = []
        self.values: list[Value] = []
        self.used: set[tuple[int, int, bool]] = set()

    def add(self, kind: str, operands: list[Value], **attrs: Any) -> Op:
        op = make_op(kind, operands, attrs, op_id=self.ids())
        self.ops.append(op)
        self.values.extend(op.results)
        self.used.update(v.key for v in operands)
        return op


def _constant(draw: Any, gen: _Gen, ttype: TensorType) -> Value:
    if draw(st.booleans()):
        seed = draw(st.integers(0, 1000))
        op = gen.add(
            "Constant",
            [],
            value=RandomInit(seed, "normal", 1.0, 0.0),
            shape=ttype.shape,
            dtype=ttype.dtype,
        )
    else:
        rng = np.random.default_rng(draw(st.integers(0, 1000)))
        data = (
            rng.integers(-4, 5, ttype.shape)
            if ttype.dtype == "i32"
            else (rng.standard_normal(ttype.shape))
        )
        from tx8lab.core.dtypes import round_to

        op = gen.add("Constant", [], value=round_to(data, ttype.dtype), dtype=ttype.dtype)
    return op.results[0]


def _step(draw: Any, gen: _Gen) -> None:
    x = draw(st.sampled_from(gen.values))
    t = x.type
    is_float = t.dtype in FLOATS
    choice = draw(
        st.sampled_from(
            (
                "unary",
                "binary",
                "binary_const",
                "reshape",
                "transpose",
                "concat",
                "split",
                "slice",
                "convert",
                "reduce",
                "softmax",
                "matmul",
            )
        )
    )
    if t.rank == 0 and choice not in ("unary", "binary", "binary_const", "reshape", "convert"):
        choice = "unary"
    if choice == "unary":
        kinds = [k for k in (UNARY_FLOAT if is_float else UNARY_INT) if _has(k)]
        if kinds:
            gen.add(draw(st.sampled_from(kinds)), [x])
    elif choice in ("binary", "binary_const"):
        kind = draw(st.sampled_from([k for k in BINARY if _has(k)]))
        if choice == "binary":
            partners = [v for v in gen.values if v.type.dtype == t.dtype and _broadcasts(v, x)]
            y = draw(st.sampled_from(partners))
        else:
            # a V_VS-style operand: the last dimension only, or the same shape
            shape = t.shape[-1:] if draw(st.booleans()) else t.shape
            y = _constant(draw, gen, TensorType(shape, t.dtype))
        operands = [x, y] if draw(st.booleans()) else [y, x]
        gen.add(kind, operands)
    elif choice == "reshape" and _has("Reshape"):
        gen.add("Reshape", [x], shape=(t.num_elements,) if t.rank > 1 else (1, t.num_elements))
    elif choice == "transpose" and _has("Transpose") and t.rank > 1:
        perm = tuple(draw(st.permutations(range(t.rank))))
        gen.add("Transpose", [x], perm=perm)
    elif choice == "concat" and _has("Concatenate"):
        same = [v for v in gen.values if v.type == t]
        others = draw(st.lists(st.sampled_from(same), min_size=1, max_size=3))
        gen.add("Concatenate", [x, *others], axis=draw(st.integers(0, t.rank - 1)))
    elif choice == "split" and _has("Split"):
        axis = draw(st.integers(0, t.rank - 1))
        if t.shape[axis] >= 2:
            first = draw(st.integers(1, t.shape[axis] - 1))
            gen.add("Split", [x], axis=axis, sizes=(first, t.shape[axis] - first))
    elif choice == "slice" and _has("Slice"):
        starts = tuple(draw(st.integers(0, d - 1)) for d in t.shape)
        ends = tuple(draw(st.integers(s + 1, d)) for s, d in zip(starts, t.shape, strict=True))
        gen.add("Slice", [x], starts=starts, ends=ends)
    elif choice == "convert" and _has("Convert"):
        target = draw(st.sampled_from([d for d in DTYPES if d != t.dtype]))
        gen.add("Convert", [x], dtype=target)
    elif choice == "reduce" and _has("ReduceSum") and is_float:
        axis = draw(st.integers(0, t.rank - 1))
        gen.add("ReduceSum", [x], axes=(axis,), keepdims=draw(st.booleans()))
    elif choice == "softmax" and _has("Softmax") and is_float:
        gen.add("Softmax", [x], axis=-1)
    elif choice == "matmul" and _has("MatMul") and is_float and t.rank >= 2:
        n = draw(st.integers(1, 4))
        w = _constant(draw, gen, TensorType((t.shape[-1], n), t.dtype))
        gen.add("MatMul", [x, w])


def _broadcasts(a: Value, b: Value) -> bool:
    try:
        np.broadcast_shapes(a.type.shape, b.type.shape)
    except ValueError:
        return False
    return True


def _group_run(ops: list[Op], gen_ids: IdCounter, start: int, stop: int) -> list[Op]:
    """Wrap ops[start:stop] (top level, not terminators) into one tx8be.Group."""
    inside = ops[start:stop]
    inside_keys = {r.key for op in inside for r in op.results}
    later_uses = {v.key for op in ops[stop:] for v in op.operands}
    inputs: list[Value] = []
    for op in inside:
        for v in op.operands:
            if v.key not in inside_keys and v not in inputs:
                inputs.append(v)
    outputs = [r for op in inside for r in op.results if r.key in later_uses]
    if not outputs:
        return ops
    gid = gen_ids()
    args = tuple(Value(gid, i, v.type, is_arg=True) for i, v in enumerate(inputs))
    from tx8lab.core.ir import remap_operands

    body_ops = remap_operands(inside, {v.key: a for v, a in zip(inputs, args, strict=True)})
    ret = Op(-1, "tx8be.Return", tuple(outputs), ())
    results = tuple(Value(gid, i, v.type) for i, v in enumerate(outputs))
    group = Op(gid, "tx8be.Group", tuple(inputs), results, {}, (Block(args, (*body_ops, ret)),))
    after = remap_operands(ops[stop:], {v.key: r for v, r in zip(outputs, results, strict=True)})
    return [*ops[:start], group, *after]


@st.composite
def modules(draw: Any, max_ops: int = 24, groups: bool = True) -> Module:
    """A random valid module (verified)."""
    gen = _Gen()
    args: list[Value] = []
    for i in range(draw(st.integers(1, 3))):
        ttype = TensorType(draw(shapes()), draw(st.sampled_from(DTYPES)))
        args.append(Value(-1, i, ttype, is_arg=True))
    gen.values.extend(args)
    for _ in range(draw(st.integers(1, max_ops))):
        _step(draw, gen)
    if not gen.ops:
        gen.add("Relu", [args[0]])
    ops = gen.ops
    if groups and len(ops) >= 3 and draw(st.booleans()):
        start = draw(st.integers(0, len(ops) - 2))
        stop = draw(st.integers(start + 1, len(ops)))
        ops = _group_run(ops, gen.ids, start, stop)
    top_results = [r for op in ops for r in op.results]
    used = {v.key for op in ops for v in op.operands}
    outputs = [r for r in top_results if r.key not in used] or [top_results[-1]]
    extra = draw(st.lists(st.sampled_from(top_results), max_size=2))
    outputs.extend(v for v in extra if v not in outputs)
    ret = Op(-1, "func.return", tuple(outputs), ())
    module = Module((Function("main", Block(tuple(args), (*ops, ret))),), {}, gen.ids.next_id)
    verify(module)
    return module
