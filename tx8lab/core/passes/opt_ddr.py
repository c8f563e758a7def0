"""opt-ddr: place constants and variables in DDR so that each starts on a 4096-byte bank.

Spec: seed 001 ("Compile Option 1: opt_ddr", ``ddrConstReorderPass`` and
``ddrVarReorderPass``): change the layout of consts and vars in DDR so they are aligned to
DDR_BANK (4096 bytes) and read faster. One walk collects the DDR buffers, then each region
is laid out from address 0: consts, then vars (the var region starts on a bank). The
baseline it is compared with is the same order packed back to back.

Readings chosen where the seed is vague:

- **Consts** are the ``tx8be.LoadConst`` (and, before ``move-constant``, ``tx8be.Constant``)
  ops anywhere in the module. Ops with the same ``const_id`` (>= 0) share one buffer (the
  copies ``group-optimization`` makes, the per-use LoadConsts of ``move-constant``); ops
  without one share a buffer when their data are the same (same ``RandomInit`` or same
  bytes). Order: by ``const_id`` (``move-constant`` already puts the large ones first),
  then ops without an id in program order.
- **Vars** are the tensors that live in DDR between groups: the value a ``tx8be.LoadVar``
  reads (a group's input, seen at the top level) and the value a ``tx8be.StoreVar`` writes
  (the group result it is returned as). A tensor stored by one group and loaded by another
  is one var. Order: first access in program order. Each var has its own range (no reuse
  by lifetime: the seed's passes reorder, they do not allocate). A tensor no LoadVar or
  StoreVar moves (an Embedding table argument read in place) is not placed: no op would
  carry its address.
- **Bytes** of a buffer: its footprint in its ``dev_info.mem_layout`` (Cx/NCx padding
  included; compact Tensor/NTensor when not set; ``i1`` one byte per element).
- **Policies** (knob ``policy``): ``all`` (the seed) starts every buffer on a bank;
  ``large`` starts the buffers of at least one bank on a bank, first, and packs the smaller
  ones after them, moving one to the next bank only when it would cross a bank boundary.
  ``packed`` is the baseline itself (every buffer on a ``packed_align_bytes`` boundary).
- **Accesses** are the ops that move a buffer: each LoadConst/Constant (not
  ``bypasscodegen``: an Embedding table is read in place), LoadVar and StoreVar. An access
  is *bank-aligned* when its buffer starts on a bank; an access touches
  ``ceil(bytes / bank)`` banks at best, and every bank more is an *extra bank*.
- The address is recorded on every const op, LoadVar and StoreVar as the attribute
  ``ddr_addr`` (bytes from the start of the model's DDR area: consts from 0, vars after
  them). ``dev_info.mem_addr`` is left alone: it holds SPM addresses (spm-alloc sets them).

Stats: ``ddr_bytes`` (extent), ``padding_bytes`` (extent minus data), ``aligned_accesses``
and ``extra_banks`` for the chosen policy, the same with ``_packed`` for the baseline, and
``accesses``, ``consts``, ``vars``, ``data_bytes``. ``artifacts["placement"]`` holds the
:class:`DdrSlot` list; :func:`placement_frame` turns it into a DataFrame for notebooks.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from tx8lab.core.attrs import DevInfo, LayoutMode, RandomInit
from tx8lab.core.ir import Function, Module, Op, TensorType, Value
from tx8lab.core.layouts import geometry
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.core.passes.group_ldst import value_name
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

if TYPE_CHECKING:
    import pandas as pd

ValueKey = tuple[int, int, bool]

#: seed 001: "对齐 DDR_BANK(4096Bytes)".
DDR_BANK_BYTES = 4096

#: Op kinds whose buffer is a const.
CONST_KINDS = frozenset({"tx8be.Constant", "tx8be.LoadConst"})

Policy = Literal["all", "large", "packed"]


def tensor_ddr_bytes(ttype: TensorType, layout: LayoutMode | None) -> int:
    """Bytes a tensor occupies in DDR in ``layout`` (compact when None).

    Examples:
        >>> tensor_ddr_bytes(TensorType((1, 4, 4, 3), "f16"), None)
        96
        >>> tensor_ddr_bytes(TensorType((1, 4, 4, 3), "f16"), LayoutMode.Cx)
        128
    """
    return _ddr_bytes(ttype, layout or LayoutMode.Tensor)


@functools.lru_cache(maxsize=4096)
def _ddr_bytes(ttype: TensorType, mode: LayoutMode) -> int:
    if ttype.dtype == "i1":
        return ttype.num_elements
    try:
        return -(-geometry(ttype.shape, ttype.dtype, mode).footprint_bits // 8)
    except Tx8labError:
        return -(-geometry(ttype.shape, ttype.dtype, LayoutMode.Tensor).footprint_bits // 8)


def _layout(op: Op) -> LayoutMode | None:
    dev = op.attrs.get("dev_info")
    return dev.mem_layout if isinstance(dev, DevInfo) else None


@dataclass(frozen=True)
class DdrSlot:
    """One buffer in DDR: what it holds, its size, who moves it and where it is placed."""

    region: Literal["const", "var"]
    """``const`` (weights) or ``var`` (tensors between groups)."""
    name: str
    """``const_id 3``, ``const %7`` (no const_id: its first op), ``var %12`` / ``var %arg0``."""
    nbytes: int
    """Bytes of the buffer (its mem_layout footprint)."""
    access_ids: tuple[int, ...]
    """Ids of the ops that move it (LoadConst/Constant, LoadVar, StoreVar)."""
    op_ids: tuple[int, ...]
    """Ids of every op that gets its ``ddr_addr`` (accesses plus bypassed consts)."""
    addr: int = -1
    """Start address with the chosen policy, bytes (-1: not placed yet)."""
    packed_addr: int = -1
    """Start address in the packed baseline, bytes."""


def ddr_buffers(module: Module) -> list[DdrSlot]:
    """The module's DDR buffers, consts first then vars, in placement order (unplaced)."""
    consts: dict[Any, dict[str, Any]] = {}
    for op in module.walk():
        if op.kind in CONST_KINDS and op.results:
            key = _const_key(op)
            entry = consts.setdefault(key, {"first": op, "nbytes": 0, "access": [], "ops": []})
            entry["nbytes"] = max(
                entry["nbytes"], tensor_ddr_bytes(op.results[0].type, _layout(op))
            )
            entry["ops"].append(op.id)
            if not op.attrs.get("bypasscodegen", False):
                entry["access"].append(op.id)
    with_id = sorted((k for k in consts if k[0] == "id"), key=lambda k: k[1])
    ordered = [*with_id, *(k for k in consts if k[0] != "id")]
    slots = [
        DdrSlot(
            "const",
            f"const_id {key[1]}" if key[0] == "id" else f"const %{consts[key]['first'].id}",
            consts[key]["nbytes"],
            tuple(consts[key]["access"]),
            tuple(consts[key]["ops"]),
        )
        for key in ordered
    ]
    for func in module.functions:
        slots += _var_buffers(func, len(module.functions) > 1)
    return slots


def ddr_floor_bytes(module: Module) -> int:
    """Bytes of DDR any placement of ``module`` needs at least: inputs and results.

    Its functions' inputs and results, densely. Every pass keeps them (a function's
    signature does not change) and opt-ddr places each for the whole run; constants (dce may
    drop one, fold-constants merge some) and intermediates (grouped ones stay in SPM) are
    left out, so this is a floor. ``tx8lab run`` compares it with the preset's DDR before
    the pipeline, so a model that cannot fit is refused at once, not after every pass.
    """
    total = 0
    for func in module.functions:
        seen: set[Any] = set()
        values = [*func.body.args, *func.body.ops[-1].operands]
        for v in values:
            if v.key not in seen:
                seen.add(v.key)
                total += v.type.dense_bytes
    return total


def _const_key(op: Op) -> tuple[Any, ...]:
    const_id = op.attrs.get("const_id", -1)
    if isinstance(const_id, int) and const_id >= 0:
        return ("id", const_id)
    value = op.attrs.get("value")
    ttype = op.results[0].type
    if isinstance(value, RandomInit):
        return ("data", str(ttype), value)
    data = getattr(value, "tobytes", None)
    digest = hashlib.sha1(data()).hexdigest() if callable(data) else str(op.id)
    return ("data", str(ttype), digest)


def _var_name(v: Value, func: Function, qualify: bool) -> str:
    return f"var {func.name}:{value_name(v)}" if qualify else f"var {value_name(v)}"


def _var_buffers(func: Function, qualify: bool) -> list[DdrSlot]:
    """Vars of one function: values LoadVar'd or StoreVar'd, by first access."""
    order: list[ValueKey] = []
    info: dict[ValueKey, dict[str, Any]] = {}

    def touch(top: Value, op: Op) -> None:
        entry = info.get(top.key)
        if entry is None:
            order.append(top.key)
            entry = info[top.key] = {"value": top, "nbytes": 0, "ops": []}
        entry["nbytes"] = max(entry["nbytes"], tensor_ddr_bytes(top.type, _layout(op)))
        entry["ops"].append(op.id)

    for op in func.ops:
        if op.kind == "tx8be.LoadVar":
            touch(op.operands[0], op)
        elif op.kind == "tx8be.StoreVar":
            touch(op.results[0], op)
        elif op.kind == "tx8be.Group":
            body = op.regions[0]
            returned: dict[ValueKey, list[Value]] = {}
            for result, v in zip(op.results, body.ops[-1].operands, strict=False):
                returned.setdefault(v.key, []).append(result)
            for inner in body.ops[:-1]:
                if inner.kind == "tx8be.LoadVar":
                    v = inner.operands[0]
                    touch(op.operands[v.index] if v.is_arg and v.owner == op.id else v, inner)
                elif inner.kind == "tx8be.StoreVar":
                    outs = returned.get(inner.results[0].key) or [inner.results[0]]
                    touch(outs[0], inner)
    return [
        DdrSlot(
            "var",
            _var_name(info[k]["value"], func, qualify),
            info[k]["nbytes"],
            tuple(info[k]["ops"]),
            tuple(info[k]["ops"]),
        )
        for k in order
    ]


def _align(addr: int, to: int) -> int:
    return -(-addr // to) * to


def place(
    slots: Sequence[DdrSlot],
    bank_bytes: int = DDR_BANK_BYTES,
    policy: Policy = "all",
    packed_align_bytes: int = 64,
) -> list[DdrSlot]:
    """``slots`` with ``addr`` (policy) and ``packed_addr`` (baseline) set, in address order.

    Examples:
        >>> s = [DdrSlot("const", "a", 100, (1,), (1,)), DdrSlot("const", "b", 5000, (2,), (2,))]
        >>> [(x.name, x.addr, x.packed_addr) for x in place(s)]
        [('a', 0, 0), ('b', 4096, 128)]
        >>> [(x.name, x.addr) for x in place(s, policy="large")]
        [('b', 0), ('a', 5056)]
    """
    packed = _lay_out(slots, bank_bytes, "packed", packed_align_bytes)
    chosen = _lay_out(slots, bank_bytes, policy, packed_align_bytes)
    base = {id(s): a for s, a in packed}
    return [replace(s, addr=a, packed_addr=base[id(s)]) for s, a in chosen]


def _lay_out(
    slots: Sequence[DdrSlot], bank: int, policy: Policy, packed_align: int
) -> list[tuple[DdrSlot, int]]:
    out: list[tuple[DdrSlot, int]] = []
    cursor = 0
    for region in ("const", "var"):
        members = [s for s in slots if s.region == region]
        if not members:
            continue
        if region == "var" and policy != "packed":
            cursor = _align(cursor, bank)
        if policy == "large":
            members = [s for s in members if s.nbytes >= bank] + [
                s for s in members if s.nbytes < bank
            ]
        for s in members:
            if policy == "all" or (policy == "large" and s.nbytes >= bank):
                addr = _align(cursor, bank)
            else:
                addr = _align(cursor, packed_align)
                crosses = addr // bank != (addr + max(s.nbytes, 1) - 1) // bank
                if policy == "large" and crosses and s.nbytes <= bank:
                    addr = _align(addr, bank)
            out.append((s, addr))
            cursor = addr + s.nbytes
    return out


def _banks(addr: int, nbytes: int, bank: int) -> int:
    return (addr + max(nbytes, 1) - 1) // bank - addr // bank + 1


def _min_banks(nbytes: int, bank: int) -> int:
    return -(-max(nbytes, 1) // bank)


def placement_stats(slots: Sequence[DdrSlot], bank_bytes: int = DDR_BANK_BYTES) -> dict[str, int]:
    """Padding, extent, aligned accesses and extra banks, for the policy and the baseline."""
    stats: dict[str, int] = {
        "consts": sum(1 for s in slots if s.region == "const"),
        "vars": sum(1 for s in slots if s.region == "var"),
        "data_bytes": sum(s.nbytes for s in slots),
        "accesses": sum(len(s.access_ids) for s in slots),
    }
    for suffix, field in (("", "addr"), ("_packed", "packed_addr")):
        addrs = [(getattr(s, field), s) for s in slots]
        end = max((a + s.nbytes for a, s in addrs), default=0)
        stats["ddr_bytes" + suffix] = end
        stats["padding_bytes" + suffix] = end - stats["data_bytes"]
        stats["aligned_accesses" + suffix] = sum(
            len(s.access_ids) for a, s in addrs if a % bank_bytes == 0
        )
        stats["extra_banks" + suffix] = sum(
            len(s.access_ids) * (_banks(a, s.nbytes, bank_bytes) - _min_banks(s.nbytes, bank_bytes))
            for a, s in addrs
        )
    return stats


def placement_frame(slots: Sequence[DdrSlot], bank_bytes: int = DDR_BANK_BYTES) -> pd.DataFrame:
    """One row per buffer (address order): region, name, bytes, addresses, alignment, ops.

    For notebooks: ``placement_frame(OptDDR().run(m, hw).artifacts["placement"])``.
    """
    import pandas as pd

    rows = [
        {
            "region": s.region,
            "name": s.name,
            "bytes": s.nbytes,
            "addr": s.addr,
            "end": s.addr + s.nbytes,
            "bank": s.addr // bank_bytes,
            "aligned": s.addr % bank_bytes == 0,
            "banks": _banks(s.addr, s.nbytes, bank_bytes),
            "packed_addr": s.packed_addr,
            "packed_aligned": s.packed_addr % bank_bytes == 0,
            "packed_banks": _banks(s.packed_addr, s.nbytes, bank_bytes),
            "accesses": len(s.access_ids),
            "op_ids": list(s.op_ids),
        }
        for s in slots
    ]
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class OptDDR(Pass):
    """Place consts and vars in DDR on 4096-byte banks (ddrConstReorder/ddrVarReorder)."""

    name: ClassVar[str] = "opt-ddr"
    summary: ClassVar[str] = "const and var placement in DDR aligned to 4096-byte banks"

    bank_bytes: int = knob(DDR_BANK_BYTES, "DDR bank size, bytes (seed: 4096)", min=1)
    """Set from Python or ``--set opt-ddr.bank_bytes=8Ki``."""
    policy: Literal["all", "large", "packed"] = knob(
        "all",
        "all: every buffer on a bank (seed); large: only buffers >= a bank; packed: baseline",
        choices=("all", "large", "packed"),
    )
    """Set from Python or ``--set opt-ddr.policy=large``."""
    packed_align_bytes: int = knob(64, "alignment of the packed baseline, bytes", min=1)
    """An assumption (one DMA burst); ``1`` packs byte by byte."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        slots = place(ddr_buffers(module), self.bank_bytes, self.policy, self.packed_align_bytes)
        stats = placement_stats(slots, self.bank_bytes)
        if stats["ddr_bytes"] > hw.ddr_bytes:
            raise Tx8labError(
                f"opt-ddr: consts and vars need {stats['ddr_bytes']} bytes of DDR, the "
                f"{hw.name} has {hw.ddr_bytes}; use a smaller model or --hw-set ddr_bytes=..."
            )
        addr_of = {op_id: s.addr for s in slots for op_id in s.op_ids}
        decisions = [self._decision(s) for s in slots]
        functions = tuple(_set_addrs(f, addr_of) for f in module.functions)
        result_stats: dict[str, int | float | str] = dict(stats)
        artifacts = {"placement": tuple(slots)}
        if all(a is b for a, b in zip(functions, module.functions, strict=True)):
            return PassResult(module, tuple(decisions), result_stats, artifacts)
        out = Module(functions, module.attrs, module.next_id)
        return PassResult(out, tuple(decisions), result_stats, artifacts)

    def _decision(self, s: DdrSlot) -> Decision:
        bank = self.bank_bytes
        aligned = s.addr % bank == 0
        where = f"bank {s.addr // bank}" + ("" if aligned else f" + {s.addr % bank} B")
        if self.policy == "all":
            why = "every buffer starts on a bank (seed opt_ddr)"
        elif self.policy == "large":
            why = (
                "buffers of a bank or more start on a bank"
                if s.nbytes >= bank
                else "small buffer packed after the large ones, within one bank if it fits"
            )
        else:
            why = "packed baseline"
        reason = (
            f"{s.name} ({s.nbytes} B) at {s.addr} ({where}); {why}; "
            f"packed it would start at {s.packed_addr}"
        )
        first = s.op_ids[0] if s.op_ids else None
        return self.decide(
            first,
            "aligned" if aligned else "unaligned",
            reason,
            related=s.op_ids[1:],
            addr=s.addr,
            packed_addr=s.packed_addr,
            nbytes=s.nbytes,
            region=s.region,
        )

    def check(self, module: Module) -> list[str]:
        """Post-condition: every const/LoadVar/StoreVar placed, no two buffers overlap."""
        problems = [
            f"{op.label}: no ddr_addr after opt-ddr"
            for op in module.walk()
            if (op.kind in CONST_KINDS or op.kind in ("tx8be.LoadVar", "tx8be.StoreVar"))
            and not isinstance(op.attrs.get("ddr_addr"), int)
        ]
        if problems:
            return problems
        slots = ddr_buffers(module)
        spans = []
        by_id = module.op_by_id()
        for s in slots:
            addrs = {by_id[i].attrs["ddr_addr"] for i in s.op_ids}
            if len(addrs) != 1:
                problems.append(f"{s.name}: its ops have different ddr_addr {sorted(addrs)}")
                continue
            (addr,) = addrs
            if self.policy == "all" and addr % self.bank_bytes:
                problems.append(f"{s.name}: ddr_addr {addr} is not on a bank")
            spans.append((addr, addr + s.nbytes, s.name))
        spans.sort()
        for (_, end, name), (start, _, other) in itertools.pairwise(spans):
            if start < end:
                problems.append(f"DDR buffers {name} and {other} overlap")
        return problems


def _set_addrs(func: Function, addr_of: dict[int, int]) -> Function:
    """``func`` with ``ddr_addr`` set on the ops listed (group bodies too)."""

    def fix(op: Op) -> Op:
        new = op
        if op.regions:
            body = op.regions[0]
            ops = tuple(fix(inner) for inner in body.ops)
            if any(a is not b for a, b in zip(ops, body.ops, strict=True)):
                new = new.replace(regions=(type(body)(body.args, ops),))
        addr = addr_of.get(op.id)
        if addr is not None and op.attrs.get("ddr_addr") != addr:
            new = new.with_attrs(ddr_addr=addr)
        return new

    ops = [fix(op) for op in func.ops]
    if all(a is b for a, b in zip(ops, func.ops, strict=True)):
        return func
    return func.with_ops(ops)


__all__ = [
    "DDR_BANK_BYTES",
    "DdrSlot",
    "OptDDR",
    "ddr_buffers",
    "place",
    "placement_frame",
    "placement_stats",
    "tensor_ddr_bytes",
]
