"""const-norm: fold ChannelNorms of constants into the LoadConst's own memory layout.

Spec: seed 001 ("constNormPass": the walk for ``LoadConst -> ChannelNorm`` pairs,
``ConstNormDoPass``, ``constChannelNormErase``, ``processMultiUse`` and the Unpack qweight
rule). Three rules, in the seed's order:

- **constChannelNormErase**: a LoadConst whose only user is a ChannelNorm. The
  ChannelNorm's users read the LoadConst directly, and the LoadConst is stored in the
  layout the ChannelNorm produced (``dev_info.mem_layout``: Tensor -> Cx, NTensor -> NCx).
  The compiler lays constants out itself, so the conversion costs nothing at run time.
- **processMultiUse**: LoadConsts sharing a ``const_id`` load the same DDR bytes, so they
  get one layout: the first one's, unless one of them is Cx/NCx, and then the first such.
- **Unpack rule**: a LoadConst whose only user is an Unpack reading it as operand 0 (an
  int4 ``qweight`` packed in i8) is loaded as ``[rows / 4, cols * 4]``.

Readings chosen where the seed is vague or its code is off:

- **ConstNormDoPass** has no body in the seed; its walk only collects the ChannelNorms
  and erases them while they still have users. We read it as "apply
  constChannelNormErase to each LoadConst", which is what the collected pairs are for.
- **Which layout.** The seed's ``get_aligned_layout`` always makes the constant Cx/NCx;
  we give it the layout the ChannelNorm *produces* (``direction`` true: Cx/NCx, false:
  Tensor/NTensor, named by :func:`~tx8lab.core.layouts.layout_for`), as
  ``layout-align-opt`` does. Both agree for every ChannelNorm layout-align-npu puts after
  a constant (constants start NALIGN); ours stays right after an aligned constant too.
  ``layout_str`` is left alone, as the seed's erase leaves it.
- **processMultiUse is planned first.** Each LoadConst's wanted layout is what the erase
  would give it (or its current ``mem_layout``); the id's layout is chosen from those
  (the seed runs it after the erase, so it sees the same layouts). A LoadConst whose
  ChannelNorm produces the id's layout has it erased; one whose ChannelNorm produces the
  other layout keeps it (the ChannelNorm then converts the shared layout for its users).
- **Users that need the other layout.** When Cx wins, a LoadConst of the id that fed a
  compact user directly would hand it Cx data; the seed ignores that. We keep every edge
  right: such users read a ChannelNorm (``direction`` = what they need, created by
  const-norm, one per LoadConst and direction) placed right after the LoadConst, so
  ``alignment_conflicts`` stays empty. LoadConsts with ``const_id`` -1 are not grouped.
- **The Unpack rule** cannot change the LoadConst's result type here: the verifier checks
  each type against shape inference, and Unpack infers ``[rows, 2 * cols]`` from its
  operand (the seed changes the type in place and never re-infers). The rule is recorded
  in the attribute ``load_shape = [rows / 4, cols * 4]``: the shape the RDMA moves. The
  bytes are the same (row-major ``[r, c]`` and ``[r / 4, 4c]`` are one image), so values
  are kept. Only rank-2 LoadConsts with rows divisible by 4 take it (the seed's
  ``shape[0] / 4`` would drop rows); others get a ``kept`` decision saying why.
- Group bodies are walked too (the seed's ``walk`` is recursive); processMultiUse groups
  LoadConsts module-wide, since const ids are module-wide.
- Values are unchanged: ChannelNorm's reference compute is the identity.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from tx8lab.core.attrs import DevInfo, LayoutMode
from tx8lab.core.builder import make_op
from tx8lab.core.constants import LOAD_CONST
from tx8lab.core.ir import Block, IdCounter, Module, Op, Value
from tx8lab.core.layouts import layout_for
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.core.passes.layout_align_npu import ALIGNED_LAYOUTS, alignment_conflicts, color_name
from tx8lab.core.passes.move_constant import Use, block_uses
from tx8lab.hw.config import ChipConfig

ValueKey = tuple[int, int, bool]
CHANNEL_NORM = "tx8be.ChannelNorm"
UNPACK = "tx8be.Unpack"


def _color(layout: LayoutMode) -> bool:
    return layout in ALIGNED_LAYOUTS


def _layout_of(op: Op) -> LayoutMode | None:
    dev = op.attrs.get("dev_info")
    return dev.mem_layout if isinstance(dev, DevInfo) else None


def _with_layout(op: Op, layout: LayoutMode) -> Op:
    """``op`` with ``dev_info.mem_layout`` set (seed ``setDevInfoWithLayout``)."""
    dev = op.attrs.get("dev_info")
    if isinstance(dev, DevInfo):
        if dev.mem_layout == layout:
            return op
        return op.with_attrs(dev_info=dataclasses.replace(dev, mem_layout=layout))
    return op.with_attrs(dev_info=DevInfo(mem_layout=layout))


def _need(user: Op) -> bool | None:
    """The color ``user`` needs on its operands (None: it does not say)."""
    if user.kind == "func.return":
        return False
    if user.kind == CHANNEL_NORM:
        return not bool(user.attrs.get("direction"))
    layout = _layout_of(user)
    return None if layout is None else _color(layout)


def _name(op: Op) -> str:
    """How a decision names an op (terminators have no id)."""
    return op.kind if op.id < 0 else op.label


def _only_user(uses: list[Use]) -> Op | None:
    """The single distinct user of a value (the seed's ``users.size() == 1``), else None."""
    users = {id(op): op for _, _, op in uses}
    return next(iter(users.values())) if len(users) == 1 else None


@dataclass
class _Load:
    """One LoadConst and what the plan makes of it."""

    op: Op
    uses: list[Use]
    norm: Op | None
    """Its only user, when that is a ChannelNorm (and erasing is on)."""
    wanted: LayoutMode | None
    """The layout it would have on its own: the ChannelNorm's output, else its own."""
    final: LayoutMode | None = None
    """The color it gets (the id's, under processMultiUse)."""
    rule: str = ""
    """Which rule chose ``final``."""
    leader: Op | None = None
    """The LoadConst of the same id whose layout won (processMultiUse)."""


@dataclass(frozen=True)
class ConstNorm(Pass):
    """constChannelNormErase, processMultiUse and the Unpack rule on LoadConst ops."""

    name: ClassVar[str] = "const-norm"
    summary: ClassVar[str] = (
        "fold a LoadConst's only ChannelNorm into its layout; one layout per const id "
        "(Cx wins); Unpack qweight load shape"
    )

    erase: bool = knob(True, "constChannelNormErase: fold a LoadConst's only ChannelNorm")
    """Set from Python or ``--set const-norm.erase=false``."""
    multi_use: bool = knob(True, "processMultiUse: one layout per const id, Cx wins")
    """Set from Python or ``--set const-norm.multi_use=false``."""
    unpack_shape: bool = knob(True, "Unpack rule: a qweight LoadConst loads [rows/4, cols*4]")
    """Set from Python or ``--set const-norm.unpack_shape=false``."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        decisions: list[Decision] = []
        loads: dict[int, _Load] = {}
        for func in module.functions:
            self._collect(func.body, loads)
        self._plan(loads)
        ids = IdCounter(module.next_id)
        counts = {"erased": 0, "unified": 0, "inserted": 0, "kept": 0, "load_shape": 0}
        functions = []
        for func in module.functions:
            body = self._rewrite(func.body, loads, ids, decisions, counts)
            if self.unpack_shape:
                body = self._unpack(body, decisions, counts)
            functions.append(func if body is func.body else func.with_ops(body.ops))
        stats: dict[str, int | float | str] = {
            "erased_channel_norms": counts["erased"],
            "unified": counts["unified"],
            "inserted_channel_norms": counts["inserted"],
            "kept_channel_norms": counts["kept"],
            "load_shapes": counts["load_shape"],
            "load_consts": len(loads),
            "channel_norms": sum(
                1 for f in functions for op in f.walk() if op.kind == CHANNEL_NORM
            ),
        }
        if all(f is g for f, g in zip(functions, module.functions, strict=True)):
            return PassResult(module, tuple(decisions), stats)
        out = Module(tuple(functions), module.attrs, ids.next_id)
        return PassResult(out, tuple(decisions), stats)

    # ------------------------------------------------------------------ planning
    def _collect(self, block: Block, loads: dict[int, _Load]) -> None:
        uses = block_uses(block)
        for op in block.ops:
            if op.kind == LOAD_CONST:
                op_uses = uses.get(op.result.key, [])
                user = _only_user(op_uses)
                norm = (
                    user if self.erase and user is not None and user.kind == CHANNEL_NORM else None
                )
                wanted = (
                    _layout_of(op)
                    if norm is None
                    else layout_for(op.result.type.shape, bool(norm.attrs.get("direction")))
                )
                loads[op.id] = _Load(op, op_uses, norm, wanted)
            for region in op.regions:
                self._collect(region, loads)

    def _plan(self, loads: dict[int, _Load]) -> None:
        """Each LoadConst's final layout: its own, or its id's (processMultiUse)."""
        by_id: dict[int, list[_Load]] = {}
        for load in loads.values():
            load.final, load.rule = load.wanted, "own"
            const_id = load.op.attrs.get("const_id", -1)
            if isinstance(const_id, int) and const_id >= 0:
                by_id.setdefault(const_id, []).append(load)
        if not self.multi_use:
            return
        for group in by_id.values():
            known = [g for g in group if g.wanted is not None]
            if len(group) < 2 or not known:
                continue
            # seed: the front's layout, unless some LoadConst is Cx: then the first such
            leader = next((g for g in known if g.wanted in ALIGNED_LAYOUTS), known[0])
            for g in group:
                if g.wanted != leader.wanted:
                    g.final, g.rule, g.leader = leader.wanted, "processMultiUse", leader.op

    # ------------------------------------------------------------------ rewriting
    def _rewrite(
        self,
        block: Block,
        loads: dict[int, _Load],
        ids: IdCounter,
        decisions: list[Decision],
        counts: dict[str, int],
    ) -> Block:
        mapping: dict[ValueKey, Value] = {}
        per_use: dict[tuple[int, int], Value] = {}
        replaced: dict[int, list[Op]] = {}
        erased: set[int] = set()
        for op in block.ops:
            load = loads.get(op.id) if op.kind == LOAD_CONST else None
            if load is None or load.final is None:
                continue
            layout = load.final
            new = _with_layout(op, layout)
            extra: list[Op] = []
            if load.rule == "processMultiUse":
                counts["unified"] += 1
                decisions.append(self._unified(load, layout))
            if load.norm is not None:
                if bool(load.norm.attrs.get("direction")) == _color(layout):
                    mapping[load.norm.result.key] = new.result
                    erased.add(load.norm.id)
                    counts["erased"] += 1
                    decisions.append(self._erased(load, layout))
                else:
                    counts["kept"] += 1
                    decisions.append(self._kept(load, layout))
            elif load.rule == "processMultiUse":
                extra = self._convert_back(new, load, ids, per_use, decisions, counts)
            replaced[op.id] = [new, *extra]
        out: list[Op] = []
        for pos, op in enumerate(block.ops):
            if op.id in erased:
                continue
            if op.kind == LOAD_CONST and op.id in replaced:
                out.extend(replaced[op.id])
                continue
            operands = tuple(
                mapping.get(v.key, per_use.get((pos, i), v)) for i, v in enumerate(op.operands)
            )
            regions = tuple(self._rewrite(r, loads, ids, decisions, counts) for r in op.regions)
            if any(a is not b for a, b in zip(operands, op.operands, strict=True)) or any(
                a is not b for a, b in zip(regions, op.regions, strict=True)
            ):
                op = op.replace(operands=operands, regions=regions)
            out.append(op)
        if len(out) == len(block.ops) and all(a is b for a, b in zip(out, block.ops, strict=True)):
            return block
        return Block(block.args, tuple(out))

    def _convert_back(
        self,
        load_op: Op,
        load: _Load,
        ids: IdCounter,
        per_use: dict[tuple[int, int], Value],
        decisions: list[Decision],
        counts: dict[str, int],
    ) -> list[Op]:
        """ChannelNorms for the users that need the other layout than the LoadConst's."""
        norms: dict[bool, Op] = {}
        for pos, index, user in load.uses:
            need = _need(user)
            if need is None or load.final is None or need == _color(load.final):
                continue
            norm = norms.get(need)
            if norm is None:
                norm_id = ids()
                norm = make_op(
                    CHANNEL_NORM,
                    [load_op.result],
                    {
                        "direction": need,
                        "dev_info": DevInfo(mem_layout=layout_for(load_op.result.type.shape, need)),
                    },
                    op_id=norm_id,
                    result_types=[load_op.result.type],
                    created_by=self.name,
                )
                norms[need] = norm
            per_use[(pos, index)] = norm.result
        stored = load.final.value if load.final is not None else "?"
        for need, norm in norms.items():
            readers = [u for _, _, u in load.uses if _need(u) == need]
            counts["inserted"] += 1
            decisions.append(
                self.decide(
                    norm.id,
                    "inserted",
                    f"processMultiUse stores {load_op.label} {stored} like the rest of its "
                    f"const id, but {', '.join(_name(u) for u in readers)} "
                    f"{'needs' if len(readers) == 1 else 'need'} {color_name(need)}: a "
                    "ChannelNorm converts it for them",
                    related=[load_op.id, *(u.id for u in readers if u.id >= 0)],
                    rule="processMultiUse",
                )
            )
        return list(norms.values())

    # ------------------------------------------------------------------ the Unpack rule
    def _unpack(self, block: Block, decisions: list[Decision], counts: dict[str, int]) -> Block:
        uses = block_uses(block)
        out: list[Op] = []
        changed = False
        for op in block.ops:
            if op.kind == LOAD_CONST:
                user = _only_user(uses.get(op.result.key, []))
                if user is not None and user.kind == UNPACK and user.operands[0] == op.result:
                    new = self._unpack_one(op, user, decisions, counts)
                    changed = changed or new is not op
                    op = new
            if op.regions:
                regions = tuple(self._unpack(r, decisions, counts) for r in op.regions)
                if any(a is not b for a, b in zip(regions, op.regions, strict=True)):
                    op, changed = op.replace(regions=regions), True
            out.append(op)
        return Block(block.args, tuple(out)) if changed else block

    def _unpack_one(
        self, op: Op, user: Op, decisions: list[Decision], counts: dict[str, int]
    ) -> Op:
        shape = op.result.type.shape
        if len(shape) != 2 or shape[0] % 4:
            why = (
                f"rank {len(shape)}, not 2"
                if len(shape) != 2
                else f"{shape[0]} rows, not a multiple of 4"
            )
            decisions.append(
                self.decide(
                    op.id,
                    "kept",
                    f"its only user {user.label} unpacks it, but {tuple(shape)} has {why}: "
                    "the load shape [rows/4, cols*4] does not apply",
                    related=[user.id],
                    rule="Unpack",
                )
            )
            return op
        load_shape = (shape[0] // 4, shape[1] * 4)
        if op.attrs.get("load_shape") == load_shape:
            return op
        counts["load_shape"] += 1
        decisions.append(
            self.decide(
                op.id,
                "load_shape",
                f"its only user {user.label} unpacks the qweight: loaded as "
                f"{list(load_shape)} instead of {list(shape)} (same bytes)",
                related=[user.id],
                rule="Unpack",
                load_shape=list(load_shape),
            )
        )
        return op.with_attrs(load_shape=load_shape)

    # ------------------------------------------------------------------ decisions
    def _erased(self, load: _Load, layout: LayoutMode) -> Decision:
        assert load.norm is not None
        why = (
            f"processMultiUse gives const id {load.op.attrs.get('const_id')} {layout.value}"
            if load.rule == "processMultiUse"
            else f"the LoadConst is stored {layout.value} instead"
        )
        return self.decide(
            load.norm.id,
            "erased",
            f"its input {load.op.label} has no other user: {why}; its users read the LoadConst",
            related=[load.op.id],
            rule="constChannelNormErase",
            layout=layout.value,
        )

    def _kept(self, load: _Load, layout: LayoutMode) -> Decision:
        assert load.norm is not None
        assert load.leader is not None
        return self.decide(
            load.norm.id,
            "kept",
            f"const id {load.op.attrs.get('const_id')} is stored {layout.value} "
            f"(processMultiUse: {load.leader.label}); this ChannelNorm converts it for its "
            "users",
            related=[load.op.id, load.leader.id],
            rule="processMultiUse",
        )

    def _unified(self, load: _Load, layout: LayoutMode) -> Decision:
        assert load.leader is not None
        leader = load.leader
        why = "a Cx layout wins" if _color(layout) else "it comes first and none is Cx"
        return self.decide(
            load.op.id,
            layout.value,
            f"const id {load.op.attrs.get('const_id')} is shared with {leader.label}, stored "
            f"{layout.value}: {why}, so every LoadConst of the id is stored {layout.value}",
            related=[leader.id],
            rule="processMultiUse",
        )

    # ------------------------------------------------------------------ post-conditions
    def check(self, module: Module) -> list[str]:
        """No foldable LoadConst->ChannelNorm pair; one layout per id; edges agree."""
        problems = list(alignment_conflicts(module))
        layouts: dict[int, list[Op]] = {}
        pairs: list[tuple[Op, Op]] = []
        unpacks: list[Op] = []

        def scan(block: Block) -> None:
            uses = block_uses(block)
            for op in block.ops:
                if op.kind == LOAD_CONST:
                    const_id = op.attrs.get("const_id", -1)
                    if isinstance(const_id, int) and const_id >= 0:
                        layouts.setdefault(const_id, []).append(op)
                    user = _only_user(uses.get(op.result.key, []))
                    if user is not None and user.kind == CHANNEL_NORM:
                        pairs.append((op, user))
                    if user is not None and user.kind == UNPACK:
                        unpacks.append(op)
                for region in op.regions:
                    scan(region)

        for func in module.functions:
            scan(func.body)
        if self.multi_use:
            for const_id, ops in layouts.items():
                seen = {_layout_of(op) for op in ops}
                if len(seen) > 1:
                    names = sorted(m.value if m else "none" for m in seen)
                    problems.append(
                        f"const id {const_id}: its LoadConsts {', '.join(o.label for o in ops)} "
                        f"have different layouts ({', '.join(names)})"
                    )
        if self.erase:
            for op, norm in pairs:
                const_id = op.attrs.get("const_id", -1)
                shared = self.multi_use and len(layouts.get(const_id, [])) > 1
                layout = _layout_of(op)
                converts_away = layout is not None and bool(norm.attrs.get("direction")) != _color(
                    layout
                )
                if not (shared and converts_away):
                    problems.append(
                        f"{norm.label}: the only user of {op.label}, left after const-norm"
                    )
        if self.unpack_shape:
            for op in unpacks:
                shape = op.result.type.shape
                want = (shape[0] // 4, shape[1] * 4) if len(shape) == 2 else None
                if want is not None and shape[0] % 4 == 0 and op.attrs.get("load_shape") != want:
                    problems.append(f"{op.label}: qweight for an Unpack without load_shape")
        return problems


__all__ = ["ConstNorm"]
