"""Building ops and modules: ``make_op`` infers result types from the op library.

Spec: DESIGN.md §2 (a builder creates ops through shape inference, seed 001
``inferShapes``). Sits above the op library and the verifier, which it calls; the IR
itself (``tx8lab.core.ir``) knows neither.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tx8lab.core.attrs import RandomInit
from tx8lab.core.dtypes import from_numpy, round_to
from tx8lab.core.ir import (
    Block,
    Function,
    IdCounter,
    Module,
    Op,
    TensorType,
    Value,
    full_kind,
    normalize_attr,
)
from tx8lab.core.ops import get_op_def
from tx8lab.core.verify import verify
from tx8lab.errors import Tx8labError


def make_op(
    kind: str,
    operands: Sequence[Value],
    attrs: Mapping[str, Any] | None = None,
    *,
    op_id: int,
    result_types: Sequence[TensorType] | None = None,
    regions: Sequence[Block] = (),
    created_by: str | None = None,
) -> Op:
    """Create an op, inferring result types from the op library when not given."""
    kind = full_kind(kind)
    clean = {k: normalize_attr(k, v) for k, v in (attrs or {}).items()}
    if result_types is None:
        result_types = get_op_def(kind).infer_type([v.type for v in operands], clean)
    results = tuple(Value(op_id, i, t) for i, t in enumerate(result_types))
    return Op(op_id, kind, tuple(operands), results, clean, tuple(regions), created_by)


class Builder:
    """Builds a module op by op; reads well in a notebook.

    Examples:
        >>> b = Builder()
        >>> x = b.input((1, 4), "f32")
        >>> y = b.op("Relu", x)
        >>> b.output(y)
        >>> module = b.finish()
        >>> [op.kind for op in module.main.ops]
        ['tx8be.Relu', 'func.return']
    """

    def __init__(self, name: str = "main", **module_attrs: Any) -> None:
        self._name = name
        self._ids = IdCounter(0)
        self._args: list[Value] = []
        self._ops: list[Op] = []
        self._outputs: list[Value] = []
        self._attrs = {k: normalize_attr(k, v) for k, v in module_attrs.items()}
        self._const_seed = itertools.count(1)

    def input(self, shape: Sequence[int], dtype: str = "f32") -> Value:
        """Add a function argument."""
        value = Value(-1, len(self._args), TensorType(tuple(shape), dtype), is_arg=True)
        self._args.append(value)
        return value

    def op(self, kind: str, *operands: Value, **attrs: Any) -> Any:
        """Append an op; returns its result, or a tuple of results when several."""
        op = make_op(kind, operands, attrs, op_id=self._ids())
        self._ops.append(op)
        return op.results[0] if len(op.results) == 1 else op.results

    def constant(self, data: Any, dtype: str | None = None) -> Value:
        """A ``tx8be.Constant`` holding ``data`` (numpy array or nested lists)."""
        array = np.asarray(data)
        dtype = dtype or from_numpy(array.dtype)
        array = round_to(array, dtype)
        value: Value = self.op("Constant", value=array, dtype=dtype)
        return value

    def weight(
        self,
        shape: Sequence[int],
        dtype: str = "f16",
        *,
        scale: float | None = None,
        offset: float = 0.0,
        distribution: str = "normal",
    ) -> Value:
        """A random constant described by a seed (see ``RandomInit``), not by bytes.

        ``scale`` defaults to ``1/sqrt(fan_in)`` with fan-in the product of all but the
        first dimension, which keeps activations of deep zoo models in range.
        """
        shape = tuple(int(d) for d in shape)
        if scale is None:
            fan_in = 1
            for d in shape[1:] or shape:
                fan_in *= d
            scale = float(1.0 / np.sqrt(max(fan_in, 1)))
        init = RandomInit(next(self._const_seed), distribution, float(scale), float(offset))
        value: Value = self.op("Constant", value=init, shape=shape, dtype=dtype)
        return value

    def output(self, *values: Value) -> None:
        """Mark values as function outputs (call once, with all of them)."""
        self._outputs.extend(values)

    def finish(self) -> Module:
        """The finished module (verified)."""
        if not self._outputs:
            raise Tx8labError("Builder.finish: call output(...) with the function's results")
        ret = Op(-1, "func.return", tuple(self._outputs), ())
        func = Function(self._name, Block(tuple(self._args), (*self._ops, ret)))
        module = Module((func,), self._attrs, self._ids.next_id)
        verify(module)
        return module


__all__ = ["Builder", "make_op"]
