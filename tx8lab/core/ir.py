"""The tx8be IR: modules of functions of ops, immutable so that passes can share them.

Spec: DESIGN.md §2 and seed 001 ("TX8 BE": the tx8be dialect). A :class:`Module` holds
functions; a :class:`Function` holds one :class:`Block` whose ops are in topological
order and end with ``func.return``. Ops are frozen; a pass builds a new op only where
something changed and a new tuple of ops, so copying a 10k-op module costs a tuple copy.

Readings chosen:

- Every op carries a **stable id** (``Op.id``) that survives passes. In the text form an
  op's results are named after it: ``%7`` (one result) or ``%7:2`` / ``%7#1`` (several).
  A zero-result op that is not a terminator prints its id as ``tx8.id``. Terminators
  (``func.return``, ``tx8be.Return``) are not graph nodes and have id -1.
- An op created by a pass records the pass name in ``Op.created_by`` (printed as the
  attribute ``tx8.created_by``). The module's id counter prints as ``tx8.next_id`` so that
  ids stay fresh across a print/parse round trip.
- Regions have a single block (all the tx8be dialect uses: ``tx8be.Group`` bodies).
- Function arguments are block arguments owned by ``-(function index + 1)``; a group's
  block arguments are owned by the group op's id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tx8lab.core.dtypes import bits_of, check_dtype
from tx8lab.errors import Tx8labError

DIALECT = "tx8be"
TERMINATORS = frozenset({"func.return", "tx8be.Return"})


@dataclass(frozen=True, slots=True)
class TensorType:
    """A ranked tensor type such as ``tensor<1x56x56x64xf16>``.

    Examples:
        >>> str(TensorType((1, 56, 56, 64), "f16"))
        'tensor<1x56x56x64xf16>'
        >>> TensorType((2, 3), "f32").num_elements
        6
    """

    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self) -> None:
        check_dtype(self.dtype)
        if not isinstance(self.shape, tuple) or any(
            not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in self.shape
        ):
            raise Tx8labError(f"tensor shape must be a tuple of ints >= 0, got {self.shape!r}")

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.dtype}>"

    @property
    def rank(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def num_elements(self) -> int:
        """Number of elements (1 for a rank-0 tensor)."""
        count = 1
        for d in self.shape:
            count *= d
        return count

    def empty_reason(self) -> str:
        """Why the tensor is empty ('' when no dimension has size 0), for error messages."""
        if 0 not in self.shape:
            return ""
        return (
            f"{self} is empty (dimension {self.shape.index(0)} has size 0); tx8lab compiles "
            "tensors whose dimensions are all >= 1"
        )

    @property
    def dense_bytes(self) -> int:
        """Bytes the tensor takes stored densely (i1: one byte per element, as in memory)."""
        return self.num_elements * max(bits_of(self.dtype), 8) // 8

    def with_shape(self, shape: Sequence[int]) -> TensorType:
        """The same element type with another shape."""
        return TensorType(tuple(int(d) for d in shape), self.dtype)

    def with_dtype(self, dtype: str) -> TensorType:
        """The same shape with another element type."""
        return TensorType(self.shape, dtype)


@dataclass(frozen=True, slots=True)
class Value:
    """An SSA value: result ``index`` of op ``owner``, or block argument ``index``."""

    owner: int
    index: int
    type: TensorType
    is_arg: bool = False

    @property
    def key(self) -> tuple[int, int, bool]:
        """Identity of the value regardless of its type."""
        return (self.owner, self.index, self.is_arg)


@dataclass(frozen=True, slots=True)
class Block:
    """A block: arguments and ops in topological order, ending with a terminator."""

    args: tuple[Value, ...]
    ops: tuple[Op, ...]

    @property
    def terminator(self) -> Op:
        """The block's last op (``func.return`` or ``tx8be.Return``)."""
        if not self.ops or self.ops[-1].kind not in TERMINATORS:
            raise Tx8labError("block does not end with a terminator")
        return self.ops[-1]


class FrozenAttrs(dict[str, Any]):
    """An op's attributes: a dict whose mutating methods raise ``TypeError``.

    Reads cost what a dict's do (json, ``dict(attrs)``, ``attrs == {...}`` all work);
    :class:`Op` wraps its attributes in one, so a pass that writes ``op.attrs[k] = v``
    fails at once instead of changing the input module. Build a new op with
    :meth:`Op.with_attrs` or :meth:`Op.replace` instead.

    Examples:
        >>> attrs = FrozenAttrs({"axis": 1})
        >>> attrs["axis"] = 2
        Traceback (most recent call last):
        ...
        TypeError: op attributes are read-only: build a new op with Op.with_attrs
    """

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("op attributes are read-only: build a new op with Op.with_attrs")

    __setitem__ = _read_only
    __delitem__ = _read_only
    __ior__ = _read_only
    clear = _read_only
    pop = _read_only
    popitem = _read_only
    setdefault = _read_only
    update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenAttrs, (dict(self),))

    def __repr__(self) -> str:
        return f"FrozenAttrs({dict.__repr__(self)})"


def freeze_array(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``array`` made read-only in place (``flags.writeable = False``), then returned.

    Constant payloads enter the IR through this, so writing into a constant's data raises
    ``ValueError: assignment destination is read-only``; copy it to change it.
    """
    if array.flags.writeable:
        array.flags.writeable = False
    return array


def _freeze_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return freeze_array(value)
    if type(value) is tuple:
        for item in value:
            _freeze_value(item)
    return value


def freeze_attrs(attrs: Mapping[str, Any]) -> FrozenAttrs:
    """``attrs`` as a :class:`FrozenAttrs` whose numpy arrays are read-only."""
    if type(attrs) is FrozenAttrs:
        return attrs
    frozen = FrozenAttrs(attrs)
    for value in frozen.values():
        if type(value) is not int and type(value) is not str:
            _freeze_value(value)
    return frozen


@dataclass(frozen=True, slots=True, eq=False)
class Op:
    """One operation. Frozen: change it with :meth:`replace`, which returns a new op.

    ``attrs`` is always a :class:`FrozenAttrs` (the constructor converts any mapping) and
    every numpy array among its values is read-only, so neither can be changed in place.
    """

    id: int
    kind: str
    operands: tuple[Value, ...]
    results: tuple[Value, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    regions: tuple[Block, ...] = ()
    created_by: str | None = None

    def __post_init__(self) -> None:
        if type(self.attrs) is not FrozenAttrs:
            object.__setattr__(self, "attrs", freeze_attrs(self.attrs))

    @property
    def name(self) -> str:
        """The kind without the dialect prefix (``Gemm`` for ``tx8be.Gemm``)."""
        return self.kind.split(".", 1)[1] if "." in self.kind else self.kind

    @property
    def result(self) -> Value:
        """The single result (error if the op has zero or several)."""
        if len(self.results) != 1:
            raise Tx8labError(f"{self.label}: has {len(self.results)} results, not one")
        return self.results[0]

    @property
    def result_types(self) -> tuple[TensorType, ...]:
        """Types of the results."""
        return tuple(r.type for r in self.results)

    @property
    def label(self) -> str:
        """How messages name this op: ``%7 tx8be.Add``."""
        return f"%{self.id} {self.kind}"

    def replace(self, **changes: Any) -> Op:
        """A copy with some fields changed (``attrs``, ``operands``, ...)."""
        values: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "operands": self.operands,
            "results": self.results,
            "attrs": self.attrs,
            "regions": self.regions,
            "created_by": self.created_by,
        }
        values.update(changes)
        return Op(**values)

    def with_attrs(self, **attrs: Any) -> Op:
        """A copy with attributes set (a value of ``None`` removes the attribute)."""
        merged = dict(self.attrs)
        for key, value in attrs.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return self.replace(attrs=freeze_attrs(merged))

    def walk(self) -> Iterator[Op]:
        """This op, then every op nested in its regions, in order."""
        yield self
        for region in self.regions:
            for op in region.ops:
                yield from op.walk()


@dataclass(frozen=True, slots=True, eq=False)
class Function:
    """A ``func.func``: a name and a body whose arguments are the function inputs."""

    name: str
    body: Block

    @property
    def args(self) -> tuple[Value, ...]:
        """The function's inputs."""
        return self.body.args

    @property
    def ops(self) -> tuple[Op, ...]:
        """Top-level ops, terminator included."""
        return self.body.ops

    @property
    def outputs(self) -> tuple[Value, ...]:
        """Values the function returns."""
        return self.body.terminator.operands

    def with_ops(self, ops: Sequence[Op]) -> Function:
        """The same function with another op list (terminator included)."""
        return Function(self.name, Block(self.body.args, tuple(ops)))

    def walk(self) -> Iterator[Op]:
        """Every op, nested ones included, in order."""
        for op in self.body.ops:
            yield from op.walk()


#: The module attribute listing the conversions a frontend made (:attr:`Module.import_notes`).
IMPORT_NOTES_ATTR = "tx8.import_notes"


@dataclass(frozen=True, eq=False)
class Module:
    """A ``builtin.module``: functions, module attributes and the id counter.

    ``attrs`` is a read-only :class:`FrozenAttrs`, as an op's are.
    """

    functions: tuple[Function, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    next_id: int = 0

    def __post_init__(self) -> None:
        if type(self.attrs) is not FrozenAttrs:
            object.__setattr__(self, "attrs", freeze_attrs(self.attrs))

    @property
    def main(self) -> Function:
        """The function named ``main`` (or the first one)."""
        for func in self.functions:
            if func.name == "main":
                return func
        if not self.functions:
            raise Tx8labError("module has no function")
        return self.functions[0]

    def with_function(self, func: Function, next_id: int | None = None) -> Module:
        """The module with the function of the same name replaced by ``func``."""
        functions = tuple(func if f.name == func.name else f for f in self.functions)
        if not any(f.name == func.name for f in self.functions):
            functions = (*functions, func)
        return Module(functions, self.attrs, self.next_id if next_id is None else next_id)

    def walk(self) -> Iterator[Op]:
        """Every op of every function, nested ones included."""
        for func in self.functions:
            yield from func.walk()

    @property
    def import_notes(self) -> tuple[str, ...]:
        """The conversions the frontend reported (a uint8 ONNX input held as i32, ...)."""
        return tuple(str(n) for n in self.attrs.get(IMPORT_NOTES_ATTR, ()))

    def op_by_id(self) -> dict[int, Op]:
        """Map from stable id to op (terminators left out)."""
        return {op.id: op for op in self.walk() if op.id >= 0}

    @property
    def num_ops(self) -> int:
        """Number of ops, nested ones included, terminators not."""
        return sum(1 for op in self.walk() if op.kind not in TERMINATORS)

    def __str__(self) -> str:
        return _module_printer(self)


#: How ``str(module)`` prints; ``tx8lab.core.text`` installs ``print_module`` on import.
_module_printer: Callable[[Module], str] = repr


def set_module_printer(printer: Callable[[Module], str]) -> None:
    """Install the text form ``str(module)`` prints (the text layer sits above the IR)."""
    global _module_printer
    _module_printer = printer


def full_kind(kind: str) -> str:
    """``Gemm`` -> ``tx8be.Gemm``; a kind with a dialect prefix stays as it is."""
    return kind if "." in kind else f"{DIALECT}.{kind}"


def normalize_attr(name: str, value: Any) -> Any:
    """Turn lists into tuples and numpy scalars into Python values, checking types."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, list | tuple):
        return tuple(normalize_attr(name, v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    if value is None:
        raise Tx8labError(f"attribute {name!r}: None is not an attribute value; leave it out")
    return value


class IdCounter:
    """Hands out fresh op ids, starting at a module's ``next_id``."""

    def __init__(self, start: int = 0) -> None:
        self._next = start

    def __call__(self) -> int:
        value = self._next
        self._next += 1
        return value

    @property
    def next_id(self) -> int:
        """The first id not handed out yet."""
        return self._next


def remap_operands(ops: Iterable[Op], mapping: Mapping[tuple[int, int, bool], Value]) -> list[Op]:
    """Replace operands found in ``mapping`` (by value key), recursing into regions.

    Ops whose operands do not change are kept as the same objects, so passes stay cheap.
    A remapped result type propagates: the op keeps its own result types, so callers that
    change types must re-infer them (see ``tx8lab.core.verify``).
    """
    out: list[Op] = []
    for op in ops:
        operands = tuple(mapping.get(v.key, v) for v in op.operands)
        regions = op.regions
        if regions:
            regions = tuple(
                Block(r.args, tuple(remap_operands(r.ops, mapping))) for r in op.regions
            )
        changed = any(a is not b for a, b in zip(operands, op.operands, strict=True)) or any(
            a is not b for a, b in zip(regions, op.regions, strict=True)
        )
        out.append(op.replace(operands=operands, regions=regions) if changed else op)
    return out


def users_of(func: Function) -> dict[tuple[int, int, bool], list[tuple[Op, int]]]:
    """Map from value key to the (top-level op, operand index) pairs that use it."""
    uses: dict[tuple[int, int, bool], list[tuple[Op, int]]] = {}
    for op in func.ops:
        for index, value in enumerate(op.operands):
            uses.setdefault(value.key, []).append((op, index))
    return uses
