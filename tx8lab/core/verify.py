"""The verifier: structural invariants every module must satisfy after every pass.

Spec: DESIGN.md §2. Checks SSA order (a value is defined before it is used, so the op list
is a topological order and there is no cycle), that operand types equal the types of the
values they name, that result types equal the op library's shape inference, unique stable
ids, well-formed regions, and any extra post-conditions a pass adds.

Readings chosen:

- A tensor with a dimension of size 0 is a problem (no pass or cost model is defined on an
  empty tensor); the verifier names the value and the op.
- Shape inference that fails with something other than a ``Tx8labError`` (an attribute of
  the wrong type or out of range, read from text) is reported as that op's problem.
- A ``tx8be.Group`` body is isolated from above: it uses only its block arguments and
  values defined inside it (the group's inputs are its operands), so a group can be run,
  costed and shown on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from tx8lab.core.ir import TERMINATORS, Block, Module, Op, Value
from tx8lab.core.ops import OPS
from tx8lab.errors import Tx8labError

#: Ops whose result types come from their region (checked against the region's Return).
REGION_OPS = frozenset({"tx8be.Group"})

PostCondition = Callable[[Module], Iterable[str]]


def verify_problems(module: Module) -> list[str]:
    """Every problem found, each naming the op (``%7 tx8be.Add: ...``)."""
    problems: list[str] = []
    seen_ids: dict[int, Op] = {}
    names = [f.name for f in module.functions]
    if len(set(names)) != len(names):
        problems.append(f"module: duplicate function names {names}")

    def check_block(
        block: Block, scope: dict[tuple[int, int, bool], Value], where: str, terminator: str
    ) -> None:
        for index, value in enumerate(block.args):
            scope[value.key] = value
            if value.type.empty_reason():
                problems.append(f"{where}: block argument {index}: {value.type.empty_reason()}")
        if not block.ops or block.ops[-1].kind != terminator:
            problems.append(f"{where}: block must end with {terminator}")
        for position, op in enumerate(block.ops):
            label = op.label
            if op.kind in TERMINATORS:
                if position != len(block.ops) - 1:
                    problems.append(f"{where}: {op.kind} before the end of the block")
                if op.kind != terminator:
                    problems.append(f"{where}: {op.kind} where {terminator} belongs")
            else:
                if op.id < 0:
                    problems.append(f"{label}: op id must be >= 0")
                elif op.id in seen_ids:
                    problems.append(f"{label}: id {op.id} used twice")
                elif op.id >= module.next_id:
                    problems.append(f"{label}: id {op.id} >= module next_id {module.next_id}")
                seen_ids[op.id] = op
            for index, value in enumerate(op.operands):
                defined = scope.get(value.key)
                if defined is None:
                    problems.append(
                        f"{label}: operand {index} is used before it is defined "
                        "(ops out of topological order, a cycle, or a value from another scope)"
                    )
                elif defined.type != value.type:
                    problems.append(
                        f"{label}: operand {index} has type {value.type} but its value is "
                        f"{defined.type}"
                    )
            for index, result in enumerate(op.results):
                if result.owner != op.id or result.index != index or result.is_arg:
                    problems.append(f"{label}: result {index} is not owned by the op")
                if result.type.empty_reason():
                    problems.append(f"{label}: result {index}: {result.type.empty_reason()}")
            if op.kind in TERMINATORS:
                continue
            entry = OPS.get(op.kind)
            if op.kind in REGION_OPS:
                check_region_op(op, scope)
            elif entry is None:
                problems.append(f"{label}: unknown op kind (not in the op library)")
            else:
                if op.regions:
                    problems.append(f"{label}: has regions but is not a region op")
                try:
                    inferred = entry.infer_type([v.type for v in op.operands], op.attrs)
                except Tx8labError as err:
                    problems.append(f"{label}: {err}")
                except (ArithmeticError, LookupError, TypeError, ValueError) as err:
                    problems.append(
                        f"{label}: shape inference fails on its operands and attributes "
                        f"({type(err).__name__}: {err}); check the attribute values"
                    )
                else:
                    if tuple(inferred) != op.result_types:
                        got = ", ".join(str(t) for t in op.result_types)
                        want = ", ".join(str(t) for t in inferred)
                        problems.append(
                            f"{label}: result types ({got}) but shape inference gives ({want})"
                        )
            for result in op.results:
                scope[result.key] = result

    def check_region_op(op: Op, outer: dict[tuple[int, int, bool], Value]) -> None:
        if len(op.regions) != 1:
            problems.append(f"{op.label}: needs exactly one region, has {len(op.regions)}")
            return
        body = op.regions[0]
        arg_types = tuple(a.type for a in body.args)
        operand_types = tuple(v.type for v in op.operands)
        if arg_types != operand_types:
            problems.append(f"{op.label}: block argument types differ from operand types")
        for index, arg in enumerate(body.args):
            if arg.owner != op.id or arg.index != index or not arg.is_arg:
                problems.append(f"{op.label}: block argument {index} is not owned by the op")
        check_block(body, {}, op.label, "tx8be.Return")
        if body.ops and body.ops[-1].kind == "tx8be.Return":
            returned = tuple(v.type for v in body.ops[-1].operands)
            if returned != op.result_types:
                problems.append(f"{op.label}: tx8be.Return types differ from the result types")
        del outer

    for index, func in enumerate(module.functions):
        for i, arg in enumerate(func.args):
            if arg.owner != -(index + 1) or arg.index != i or not arg.is_arg:
                problems.append(f"function {func.name}: argument {i} is not owned by it")
        check_block(func.body, {}, f"function {func.name}", "func.return")
    return problems


def first_problem(problems: Sequence[str]) -> str:
    """The first of ``problems`` for a one-line message, with how many more there are.

    Examples:
        >>> first_problem(["%1 a", "%2 b", "%3 c"])
        '%1 a (and 2 more problems)'
    """
    more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
    return f"{problems[0]}{more}"


def verify(module: Module, post_conditions: Iterable[PostCondition] = ()) -> None:
    """Raise one ``Tx8labError`` listing the problems (at most 20), if any."""
    problems = verify_problems(module)
    for condition in post_conditions:
        problems.extend(condition(module))
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise Tx8labError(f"module does not verify:\n  {shown}{more}")
