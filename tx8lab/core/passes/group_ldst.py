"""group-ldst: a LoadVar per group input that needs one, a StoreVar per output; group_tag.

Spec: seed 001 ("GroupLdStPass" and its ``runOnOperation``; the GroupOp argument list for
``group_tag``). Per top-level group: for each block argument, the body ops that read it
are asked (``op_attr(user).needs_load(operand index)``, the seed's ``needLoad`` bit); if any
needs a load, one ``tx8be.LoadVar`` at the start of the body feeds exactly those users.
For each ``tx8be.Return`` operand, the op producing it is asked
(``needs_store(result index)``); if it needs a store, a ``tx8be.StoreVar`` before the
Return receives it and the Return returns the StoreVar's result. Then ``group_tag``.

``group_tag`` (seed: "0: 正常切分, 1: split nht, 2: 不切分 (reshape)"):

- **0**: the group loads or stores (a LoadVar, a StoreVar, or a LoadConst that is not
  ``bypasscodegen`` in its body): its data pass through SPM, so the sharding search
  (group-cost) splits it.
- **2**: the group neither loads nor stores: all its ops work on DDR (the seed's example
  is a reshape), so group-cost leaves it unsplit.
- 1 ("split nht") is not produced by the seed's GroupLdSt; an existing tag is overwritten.

Readings chosen where the seed is vague or its code is off:

- The seed tests ``!opAttr.needLoad && (1 << arg_idx)`` and ``!needStore && (1 << i)``,
  which read as "the whole mask is zero" (``&&`` for ``&``); we test the operand's own bit
  (:meth:`~tx8lab.core.ops.registry.OpAttr.needs_load`), as the seed's prose and
  ConstantToLoadConst do. The store bit is the producer's *result* index (the seed's ``i``
  is the Return position, which is not a bit of the producer's mask).
- One LoadVar per input, shared by every user that needs it (the code; its comment says
  "multiple loads"); users whose bit is clear keep reading the argument (the seed's
  ``replaceUsesOfWith`` on ``usersLoad`` only).
- Already loaded or stored values get no second load or store: a user that is a LoadVar,
  and an output that is a StoreVar's result or a block argument passed straight through
  (nothing computed it in SPM), so running the pass twice changes nothing.
- The same value returned twice gets one StoreVar.
- The Add/Sub/Mul/Div layout fix-up of the seed's code is left to ``layout-align-npu``,
  which has already given both operands one layout; the LoadVar copies the user's operand
  layout (``layout_str`` ``L-L``) and the producer's ``dev_info.mem_layout``, the StoreVar
  its producer's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tx8lab.core.attrs import TAG_DDR, TAG_SPLIT, DevInfo, LayoutMode
from tx8lab.core.ir import Block, Function, IdCounter, Module, Op, Value
from tx8lab.core.layout_str import op_layouts
from tx8lab.core.ops.registry import OpAttr
from tx8lab.core.passes.base import Decision, Pass, PassResult
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

ValueKey = tuple[int, int, bool]


def op_attr_of(op: Op) -> OpAttr:
    """The op library's ``queryOpAttr`` for ``op`` (the seed's defaults for unknown kinds)."""
    from tx8lab.core.ops import OPS

    entry = OPS.get(op.kind)
    return entry.op_attr(op) if entry is not None else OpAttr()


def is_load(op: Op) -> bool:
    """A body op that brings data from DDR into SPM (LoadVar, or a LoadConst with code)."""
    if op.kind == "tx8be.LoadVar":
        return True
    return op.kind == "tx8be.LoadConst" and not op.attrs.get("bypasscodegen", False)


def group_tag_of(group: Op) -> int:
    """0 when the group's body loads or stores, 2 when it does neither (see module doc)."""
    body = group.regions[0].ops
    moves = any(is_load(op) or op.kind == "tx8be.StoreVar" for op in body)
    return TAG_SPLIT if moves else TAG_DDR


def value_name(v: Value) -> str:
    """How messages name a value: ``%arg0``, ``%7``, ``%7#1`` or ``%b7_0`` (block argument).

    Examples:
        >>> from tx8lab.core.ir import TensorType
        >>> t = TensorType((2,), "f32")
        >>> value_name(Value(-1, 0, t, True)), value_name(Value(7, 1, t))
        ('%arg0', '%7#1')
    """
    if v.is_arg:
        return f"%arg{v.index}" if v.owner < 0 else f"%b{v.owner}_{v.index}"
    return f"%{v.owner}" if v.index == 0 else f"%{v.owner}#{v.index}"


def _layout_part(op: Op, index: int) -> str | None:
    """Part ``index`` of ``op``'s ``layout_str`` (operands then results), None if unknown."""
    try:
        operands, results = op_layouts(op)
    except Tx8labError:
        return None
    parts = [*operands, *results]
    return parts[index] if index < len(parts) else None


def _mem_layouts(func: Function) -> dict[ValueKey, LayoutMode]:
    """Top-level value -> its producer's ``dev_info.mem_layout`` (through group bodies)."""
    out: dict[ValueKey, LayoutMode] = {}
    for op in func.ops:
        if op.kind == "tx8be.Group":
            body = op.regions[0]
            inner = {r.key: o for o in body.ops for r in o.results}
            for result, v in zip(op.results, body.ops[-1].operands, strict=False):
                source = inner.get(v.key)
                dev = source.attrs.get("dev_info") if source is not None else None
                if isinstance(dev, DevInfo):
                    out[result.key] = dev.mem_layout
            continue
        dev = op.attrs.get("dev_info")
        if isinstance(dev, DevInfo):
            for r in op.results:
                out[r.key] = dev.mem_layout
    return out


def _move_attrs(layout: str | None, mem: LayoutMode | None) -> dict[str, object]:
    attrs: dict[str, object] = {}
    if layout is not None:
        attrs["layout_str"] = f"{layout}-{layout}"
    if mem is not None:
        attrs["dev_info"] = DevInfo(mem_layout=mem)
    return attrs


@dataclass(frozen=True)
class GroupLdSt(Pass):
    """Insert LoadVar/StoreVar at each group's boundary and set its group_tag."""

    name: ClassVar[str] = "group-ldst"
    summary: ClassVar[str] = (
        "LoadVar per group input that needs a load, StoreVar per output; group_tag 0 or 2"
    )

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        ids = IdCounter(module.next_id)
        decisions: list[Decision] = []
        functions = []
        counts = {"loads": 0, "stores": 0, "groups": 0, "tag_0": 0, "tag_2": 0}
        for func in module.functions:
            mems = _mem_layouts(func)
            ops = []
            for op in func.ops:
                if op.kind == "tx8be.Group":
                    op = self._group(op, mems, ids, decisions, counts)
                ops.append(op)
            changed = any(a is not b for a, b in zip(ops, func.ops, strict=True))
            functions.append(func.with_ops(ops) if changed else func)
        stats: dict[str, int | float | str] = dict(counts)
        if all(a is b for a, b in zip(functions, module.functions, strict=True)):
            return PassResult(module, tuple(decisions), stats)
        return PassResult(
            Module(tuple(functions), module.attrs, ids.next_id), tuple(decisions), stats
        )

    def _group(
        self,
        group: Op,
        mems: dict[ValueKey, LayoutMode],
        ids: IdCounter,
        decisions: list[Decision],
        counts: dict[str, int],
    ) -> Op:
        body = group.regions[0]
        ops = list(body.ops[:-1])
        ret = body.ops[-1]
        wired = self._loads(group, ops, mems, ids, decisions)
        loads = [load for load, _ in wired]
        producer = {r.key: (op, r.index) for op in ops for r in op.results}
        stores: list[Op] = []
        stored: dict[ValueKey, Value] = {}
        returned: list[Value] = []
        for position, v in enumerate(ret.operands):
            if v.key in stored:
                returned.append(stored[v.key])
                continue
            source = producer.get(v.key)
            store = self._store(group, position, v, source, ids, decisions)
            if store is None:
                returned.append(v)
                continue
            stores.append(store)
            stored[v.key] = store.results[0]
            returned.append(store.results[0])
        new_ops = [
            *loads,
            *self._rewire(ops, wired),
            *stores,
            ret.replace(operands=tuple(returned)) if stores else ret,
        ]
        tagged = group.replace(regions=(Block(body.args, tuple(new_ops)),))
        tag = group_tag_of(tagged)
        counts["groups"] += 1
        counts["loads"] += len(loads)
        counts["stores"] += len(stores)
        counts[f"tag_{tag}"] += 1
        why = (
            "it loads or stores: its data pass through SPM and group-cost splits it"
            if tag == TAG_SPLIT
            else "it neither loads nor stores: all its ops work on DDR, group-cost skips it"
        )
        decisions.append(
            self.decide(
                group.id,
                f"group_tag={tag}",
                why,
                related=[op.id for op in (*loads, *stores)],
                loads=len(loads),
                stores=len(stores),
            )
        )
        if not loads and not stores and group.attrs.get("group_tag") == tag:
            return group
        return tagged.with_attrs(group_tag=tag)

    def _loads(
        self,
        group: Op,
        ops: list[Op],
        mems: dict[ValueKey, LayoutMode],
        ids: IdCounter,
        decisions: list[Decision],
    ) -> list[tuple[Op, frozenset[int]]]:
        """One LoadVar per block argument some body op needs loaded, with those ops' ids."""
        body = group.regions[0]
        loads: list[tuple[Op, frozenset[int]]] = []
        reads: dict[ValueKey, list[tuple[Op, int]]] = {}
        for op in ops:
            for index, v in enumerate(op.operands):
                if v.is_arg and v.owner == group.id:
                    reads.setdefault(v.key, []).append((op, index))
        attrs_of: dict[int, OpAttr] = {}
        for arg in body.args:
            needing: list[tuple[Op, int]] = []
            skipped: list[int] = []
            for op, index in reads.get(arg.key, ()):
                if op.kind != "tx8be.LoadVar":
                    attr = attrs_of.get(op.id)
                    if attr is None:
                        attr = attrs_of[op.id] = op_attr_of(op)
                    if attr.needs_load(index):
                        needing.append((op, index))
                        continue
                skipped.append(op.id)
            outer = group.operands[arg.index]
            if not needing:
                if skipped:
                    decisions.append(
                        self.decide(
                            group.id,
                            "no_load",
                            f"input {arg.index} ({value_name(outer)}) is read only by "
                            f"{', '.join(f'%{i}' for i in skipped)}: needLoad bit clear or "
                            "already a LoadVar, so no LoadVar",
                            related=skipped,
                            input=arg.index,
                        )
                    )
                continue
            user, index = needing[0]
            load_id = ids()
            attrs = _move_attrs(_layout_part(user, index), mems.get(outer.key))
            load = Op(
                load_id,
                "tx8be.LoadVar",
                (arg,),
                (Value(load_id, 0, arg.type),),
                attrs,
                (),
                self.name,
            )
            users = list({u.id: u for u, _ in needing}.values())
            loads.append((load, frozenset(u.id for u in users)))
            decisions.append(
                self.decide(
                    load_id,
                    "load",
                    f"input {arg.index} ({value_name(outer)}) of {group.label} is read by "
                    f"{', '.join(u.label for u in users)} with the needLoad bit set: "
                    "one LoadVar at the group's entry",
                    related=[group.id, *(u.id for u in users)],
                    group=group.id,
                    input=arg.index,
                    not_loaded=skipped,
                )
            )
        return loads

    @staticmethod
    def _rewire(ops: list[Op], wired: list[tuple[Op, frozenset[int]]]) -> list[Op]:
        """``ops`` with each load's users reading the load instead of the argument."""
        per_op: dict[int, dict[ValueKey, Value]] = {}
        for load, users in wired:
            for user in users:
                per_op.setdefault(user, {})[load.operands[0].key] = load.results[0]
        out: list[Op] = []
        for op in ops:
            mapping = per_op.get(op.id)
            if mapping is None:
                out.append(op)
                continue
            out.append(op.replace(operands=tuple(mapping.get(v.key, v) for v in op.operands)))
        return out

    def _store(
        self,
        group: Op,
        position: int,
        v: Value,
        source: tuple[Op, int] | None,
        ids: IdCounter,
        decisions: list[Decision],
    ) -> Op | None:
        """A StoreVar for Return operand ``position`` when its producer needs one."""
        if source is None:
            decisions.append(
                self.decide(
                    group.id,
                    "no_store",
                    f"output {position} is block argument {v.index} passed through: "
                    "nothing in the group computed it, it is already in DDR",
                    output=position,
                )
            )
            return None
        op, index = source
        if op.kind == "tx8be.StoreVar":
            return None
        if not op_attr_of(op).needs_store(index):
            decisions.append(
                self.decide(
                    group.id,
                    "no_store",
                    f"output {position} comes from {op.label} result {index}, whose "
                    "needStore bit is clear: no StoreVar",
                    related=[op.id],
                    output=position,
                )
            )
            return None
        store_id = ids()
        dev = op.attrs.get("dev_info")
        attrs = _move_attrs(
            _layout_part(op, len(op.operands) + index),
            dev.mem_layout if isinstance(dev, DevInfo) else None,
        )
        decisions.append(
            self.decide(
                store_id,
                "store",
                f"output {position} of {group.label} comes from {op.label} result {index}, "
                "whose needStore bit is set: StoreVar before the return",
                related=[group.id, op.id],
                group=group.id,
                output=position,
            )
        )
        return Op(
            store_id, "tx8be.StoreVar", (v,), (Value(store_id, 0, v.type),), attrs, (), self.name
        )

    def check(self, module: Module) -> list[str]:
        """Post-condition: no load or store missing, and every group tagged 0 or 2."""
        problems: list[str] = []
        for func in module.functions:
            for group in func.ops:
                if group.kind != "tx8be.Group":
                    continue
                tag = group.attrs.get("group_tag")
                if tag not in (TAG_SPLIT, TAG_DDR):
                    problems.append(f"{group.label}: group_tag is {tag!r}, not 0 or 2")
                elif tag != group_tag_of(group):
                    problems.append(f"{group.label}: group_tag {tag} does not match its body")
                body = group.regions[0]
                args = {a.key for a in body.args}
                for op in body.ops[:-1]:
                    if op.kind == "tx8be.LoadVar":
                        continue
                    problems += [
                        f"{op.label}: reads group input {v.index} of {group.label} without "
                        "the LoadVar its needLoad bit asks for"
                        for i, v in enumerate(op.operands)
                        if v.key in args and op_attr_of(op).needs_load(i)
                    ]
                inner = {r.key: (o, r.index) for o in body.ops[:-1] for r in o.results}
                for position, v in enumerate(body.ops[-1].operands):
                    src = inner.get(v.key)
                    if (
                        src is not None
                        and src[0].kind != "tx8be.StoreVar"
                        and op_attr_of(src[0]).needs_store(src[1])
                    ):
                        problems.append(
                            f"{group.label}: output {position} from {src[0].label} is not "
                            "stored (its needStore bit is set)"
                        )
        return problems


__all__ = [
    "GroupLdSt",
    "group_tag_of",
    "is_load",
    "op_attr_of",
    "value_name",
]
