"""Run a module on numpy inputs with the op library's reference compute.

Spec: DESIGN.md §3 (``compute``) and the foundation issue: passes use it to prove that they
preserve values. Results are rounded to each result's element type after every op
(f16 by numpy, bf16/tf32 by mantissa rounding), as the chip stores them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tx8lab.core.dtypes import round_to
from tx8lab.core.ir import TERMINATORS, Block, Module, Value
from tx8lab.core.ops import OPS
from tx8lab.core.ops.registry import Array
from tx8lab.errors import Tx8labError


def _run_block(block: Block, env: dict[tuple[int, int, bool], Array]) -> list[Array]:
    for op in block.ops:
        inputs = [env[v.key] for v in op.operands]
        if op.kind in TERMINATORS:
            return inputs
        if op.kind == "tx8be.Group":
            body = op.regions[0]
            inner = {arg.key: x for arg, x in zip(body.args, inputs, strict=True)}
            outputs: Sequence[Array] = _run_block(body, inner)
        else:
            entry = OPS.get(op.kind)
            if entry is None:
                raise Tx8labError(f"{op.label}: unknown op kind, cannot interpret it")
            try:
                outputs = entry.compute(op, *inputs)
            except NotImplementedError as err:
                raise Tx8labError(f"{op.label}: {err}") from None
        if len(outputs) != len(op.results):
            raise Tx8labError(
                f"{op.label}: compute gave {len(outputs)} results, the op has {len(op.results)}"
            )
        for value, out in zip(op.results, outputs, strict=True):
            array = np.asarray(out)
            if tuple(array.shape) != value.type.shape:
                raise Tx8labError(
                    f"{op.label}: compute gave shape {array.shape}, the type says {value.type}"
                )
            env[value.key] = round_to(array, value.type.dtype)
    raise Tx8labError("block has no terminator")


def prepare_inputs(
    module: Module, inputs: Sequence[Any] | Mapping[int, Any], func: str = "main"
) -> dict[tuple[int, int, bool], Array]:
    """Check the inputs against the function's arguments and round them to their types."""
    function = next((f for f in module.functions if f.name == func), None)
    if function is None:
        raise Tx8labError(f"interpret: module has no function {func!r}")
    args: Sequence[Value] = function.args
    given = dict(inputs) if isinstance(inputs, Mapping) else dict(enumerate(inputs))
    if sorted(given) != list(range(len(args))):
        raise Tx8labError(
            f"interpret: function {func} takes {len(args)} inputs, got indices {sorted(given)}"
        )
    env: dict[tuple[int, int, bool], Array] = {}
    for arg in args:
        array = np.asarray(given[arg.index])
        if tuple(array.shape) != arg.type.shape:
            raise Tx8labError(
                f"interpret: input {arg.index} has shape {array.shape}, expected {arg.type}"
            )
        env[arg.key] = round_to(array, arg.type.dtype)
    return env


def interpret(
    module: Module, inputs: Sequence[Any] | Mapping[int, Any], func: str = "main"
) -> list[Array]:
    """Outputs of ``func`` for ``inputs`` (a list, or a map from argument index)."""
    env = prepare_inputs(module, inputs, func)
    function = next(f for f in module.functions if f.name == func)
    return _run_block(function.body, env)


def random_inputs(module: Module, seed: int = 0, func: str = "main") -> list[Array]:
    """Reproducible random inputs for ``func``: normal floats, small non-negative integers."""
    rng = np.random.default_rng(seed)
    function = next((f for f in module.functions if f.name == func), None)
    if function is None:
        raise Tx8labError(f"random_inputs: module has no function {func!r}")
    out = []
    for arg in function.args:
        if arg.type.dtype == "i1":
            out.append(rng.integers(0, 2, arg.type.shape).astype(bool))
        elif arg.type.dtype.startswith("i"):
            out.append(round_to(rng.integers(0, 8, arg.type.shape), arg.type.dtype))
        else:
            out.append(round_to(rng.standard_normal(arg.type.shape), arg.type.dtype))
    return out
