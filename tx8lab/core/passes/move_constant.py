"""move-constant: every ``tx8be.Constant`` becomes ``tx8be.LoadConst`` ops with a const id.

Spec: seed 001 ("MoveConstantPass": ``createConstContainer``, the ``ConstantToLoadConst``
rewrite pattern, ``updateConstContainer(tile_num)`` and ``updateLdConstop``). Each
constant is registered in the const container (:mod:`tx8lab.core.constants`), its users
decide whether it needs a load (their ``op_attr().need_load`` bit for the operand), it is
replaced by LoadConst ops, and the ids are reordered so that constants larger than
``4 KiB x tiles`` come first.

Readings chosen where the seed is vague:

- **One LoadConst per use** (knob ``per_use``, on by default), as the seed's rewrite
  does: it creates the LoadConst *inside* the loop over the constant's uses, every one
  with the same id, which is why const-norm's ``processMultiUse`` exists. It also lets a
  grouping pass move each LoadConst into the one group that reads it. The first use's
  LoadConst keeps the Constant's op id (LoadConst replaces Constant one for one, so the
  stable id survives); the others get fresh ids, created by move-constant. All of them
  stand where the Constant stood (the seed's rewriter inserts there), in use order.
  ``per_use=false`` makes one LoadConst per constant that every user reads.
- **needLoad of a use** is the user's ``op_attr().need_load`` bit for the operand index.
  Tuple users and terminators (``func.return``, ``tx8be.Return``) are skipped, as the
  seed skips ``TupleOp``: they move no data. A ``tx8be.Group`` user answers for its block
  argument: loaded when any body op using it needs a load.
- **Users that disagree.** The seed asserts, for a user that needs no load, that no
  *earlier* user needed one, so its result depends on the order of the users. Here each
  per-use LoadConst follows its own user (an Embedding's table is bypassed while the
  LoadConst feeding an Add is loaded), and a skipped use follows the constant (loaded
  when any user needs it). With ``per_use=false`` the one LoadConst is loaded when any
  user needs it. Either way the constant's decision is ``mixed`` and names the users.
- **bypasscodegen** = true on a LoadConst no user loads (no user at all but skipped
  ones counts as none). The attribute is absent otherwise, as the seed sets it only then.
- **Ids.** Every constant with a use gets an id, a bypassed one too: its data still sits
  in DDR for the op that reads it there. A constant without uses is erased without an id
  (the seed's rewrite makes no LoadConst for it and erases it). LoadConsts already in the
  input keep their data and are renumbered with the rest (those sharing an id stay one
  constant; each one with id -1 is its own), so running the pass twice changes nothing.
- **Order.** Constants are registered in walk order (functions, then ops top-down, group
  bodies in place), as the seed's top-down pattern driver meets them. Then
  ``updateConstContainer`` puts the ones larger (strictly) than the threshold first,
  keeping the order within each part, and ``updateLdConstop`` writes the new ids; here
  both happen before the ops are rebuilt, so the LoadConsts are written once.
- **Threshold.** ``threshold_bytes`` = 0 (the default) means the seed's
  ``4 * 1024 * tile_num`` with the tiles of one chip (``hw.tiles_per_chip``: 65536 bytes
  on the TX81). The value used is stored in the module attribute
  ``tx8.const_threshold_bytes`` for ``check`` and the report.
- Values are unchanged: a LoadConst computes what its Constant did. The container
  (``artifacts["constants"]``) is read back from the new module
  (:meth:`ConstContainer.from_module`) and carries the renumbering in ``oid_to_nid``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

from tx8lab.core.builder import make_op
from tx8lab.core.constants import (
    LOAD_CONST,
    THRESHOLD_ATTR,
    ConstContainer,
    ParamInfo,
    default_threshold_bytes,
)
from tx8lab.core.ir import TERMINATORS, Block, IdCounter, Module, Op, Value
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

ValueKey = tuple[int, int, bool]
CONSTANT = "tx8be.Constant"

#: Users that neither ask for nor refuse a load (seed: ``isa<TupleOp>`` is skipped).
SKIPPED_USERS = frozenset({"tx8be.Tuple", *TERMINATORS})

#: One use of a value in a block: (position of the user in the block, operand index, user).
Use = tuple[int, int, Op]


def block_uses(block: Block) -> dict[ValueKey, list[Use]]:
    """Value key -> its uses by the block's top-level ops (terminator included), in order."""
    uses: dict[ValueKey, list[Use]] = {}
    for pos, op in enumerate(block.ops):
        for index, value in enumerate(op.operands):
            uses.setdefault(value.key, []).append((pos, index, op))
    return uses


def _combine(opinions: Iterable[bool | None]) -> bool | None:
    """True if any says load, else False if any says no, else None (no opinion)."""
    seen = set(opinions)
    if True in seen:
        return True
    return False if False in seen else None


def use_needs_load(user: Op, index: int) -> bool | None:
    """Whether ``user`` needs operand ``index`` loaded (seed ``opAttr.needLoad & (1 << i)``).

    None for a use that has no say: a Tuple or a terminator, or a group whose block
    argument only such ops use.

    Examples:
        >>> from tx8lab.core.builder import Builder
        >>> b = Builder(); ids = b.input((2,), "i32")
        >>> table = b.weight((10, 4), "f16")
        >>> b.output(b.op("Embedding", table, ids))
        >>> emb = b.finish().main.ops[1]
        >>> use_needs_load(emb, 0), use_needs_load(emb, 1)
        (False, True)
    """
    if user.kind in SKIPPED_USERS:
        return None
    if user.kind == "tx8be.Group":
        body = user.regions[0]
        inner = block_uses(body).get(body.args[index].key, [])
        return _combine(use_needs_load(op, i) for _, i, op in inner)
    from tx8lab.core.ops import OPS

    entry = OPS.get(user.kind)
    if entry is None:
        raise Tx8labError(
            f"{user.label}: not in the op library, so move-constant cannot ask it "
            f"(queryOpAttr) whether operand {index} needs a load; add the op to tx8lab.core.ops"
        )
    return entry.op_attr(user).needs_load(index)


def _describe(use: Use, opinion: bool | None) -> str:
    _, index, user = use
    name = user.kind if user.kind in TERMINATORS else user.label
    if opinion is None:
        return f"{name} (operand {index}, skipped: moves no data)"
    if user.kind == "tx8be.Group":
        inside = "a body op needs it loaded" if opinion else "its body reads it in DDR"
        return f"{name} (operand {index}: {inside})"
    if opinion:
        return f"{name} (operand {index} needs a load)"
    return f"{name} (operand {index} read in DDR: need_load bit {index} clear)"


@dataclass
class _Plan:
    """One constant to register: its ops (a Constant, or LoadConsts sharing an id)."""

    ops: list[Op]
    uses: list[Use] = field(default_factory=list)
    opinions: list[bool | None] = field(default_factory=list)
    old_id: int = -1

    @property
    def first(self) -> Op:
        return self.ops[0]

    @property
    def is_constant(self) -> bool:
        return self.first.kind == CONSTANT

    @property
    def needs_load(self) -> bool:
        if not self.is_constant:
            return any(not op.attrs.get("bypasscodegen", False) for op in self.ops)
        return True in self.opinions

    @property
    def mixed(self) -> bool:
        return True in self.opinions and False in self.opinions


@dataclass(frozen=True)
class MoveConstant(Pass):
    """Constant -> LoadConst (needLoad / bypasscodegen), const ids with large ones first."""

    name: ClassVar[str] = "move-constant"
    summary: ClassVar[str] = (
        "Constant -> LoadConst per use (needLoad from the users, else bypasscodegen); "
        "const ids with constants above 4 KiB x tiles first"
    )

    per_use: bool = knob(True, "one LoadConst per use as the seed does (false: one shared)")
    """Set from Python or ``--set move-constant.per_use=false``."""
    threshold_bytes: int = knob(
        0, "constants larger than this get the first ids (0: 4 KiB x tiles per chip)", min=0
    )
    """Bytes; 0 takes the seed's DDR_BANK_SIZE rule from ``hw``."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        threshold = self.threshold_bytes or default_threshold_bytes(hw)
        decisions: list[Decision] = []
        plans: list[_Plan] = []
        by_key: dict[tuple[str, int], _Plan] = {}
        dead: list[Op] = []
        for func in module.functions:
            self._collect(func.body, plans, by_key, dead)

        # createConstContainer + ConstantToLoadConst's registration, then updateConstContainer
        registered = ConstContainer()
        for plan in plans:
            plan.old_id = registered.add(ParamInfo.from_op(plan.first))
        renumbered = registered.renumbered(threshold)
        new_id = {plan.first.id: renumbered.oid_to_nid[plan.old_id] for plan in plans}
        plan_of = {op.id: plan for plan in plans for op in plan.ops}

        ids = IdCounter(module.next_id)
        functions = [
            func.with_ops(self._rewrite(func.body, plan_of, new_id, ids, decisions).ops)
            for func in module.functions
        ]
        for op in dead:
            decisions.append(
                self.decide(op.id, "removed", "the constant has no use: no LoadConst, no id")
            )
        large_count = sum(1 for e in renumbered if e.num_bytes > threshold)
        for plan in plans:
            decisions.append(self._id_decision(plan, renumbered, new_id, threshold, large_count))

        attrs = {**module.attrs, THRESHOLD_ATTR: threshold}
        unchanged = (
            not dead
            and not any(p.is_constant for p in plans)
            and all(op.attrs.get("const_id") == new_id[p.first.id] for p in plans for op in p.ops)
            and module.attrs.get(THRESHOLD_ATTR) == threshold
        )
        out = module if unchanged else Module(tuple(functions), attrs, ids.next_id)
        container = ConstContainer.from_module(out)
        container.oid_to_nid = dict(renumbered.oid_to_nid)
        loads = [op for op in out.walk() if op.kind == LOAD_CONST]
        large = [e for e in container if container.is_large(e)]
        stats: dict[str, int | float | str] = {
            "constants": len(container),
            "load_consts": len(loads),
            "bypassed": sum(1 for op in loads if op.attrs.get("bypasscodegen", False)),
            "mixed": sum(1 for p in plans if p.mixed),
            "removed": len(dead),
            "threshold_bytes": threshold,
            "above_threshold": len(large),
            "bytes_above_threshold": sum(e.num_bytes for e in large),
            "total_bytes": container.total_bytes,
        }
        return PassResult(out, tuple(decisions), stats, {"constants": container})

    # ------------------------------------------------------------------ registration
    def _collect(
        self,
        block: Block,
        plans: list[_Plan],
        by_key: dict[tuple[str, int], _Plan],
        dead: list[Op],
    ) -> None:
        """Register the block's constants in walk order (group bodies in place)."""
        uses = block_uses(block)
        for op in block.ops:
            if op.kind == CONSTANT:
                op_uses = uses.get(op.result.key, [])
                if not op_uses:
                    dead.append(op)
                else:
                    opinions = [use_needs_load(u, i) for _, i, u in op_uses]
                    plans.append(_Plan([op], op_uses, opinions))
            elif op.kind == LOAD_CONST:
                const_id = op.attrs.get("const_id", -1)
                numbered = isinstance(const_id, int) and const_id >= 0
                key = ("id", const_id) if numbered else ("op", op.id)
                plan = by_key.get(key)
                if plan is None:
                    plan = by_key[key] = _Plan([op])
                    plans.append(plan)
                else:
                    plan.ops.append(op)
            for region in op.regions:
                self._collect(region, plans, by_key, dead)

    # ------------------------------------------------------------------ rewriting
    def _rewrite(
        self,
        block: Block,
        plan_of: dict[int, _Plan],
        new_id: dict[int, int],
        ids: IdCounter,
        decisions: list[Decision],
    ) -> Block:
        """The block with Constants replaced by LoadConsts and every const_id updated."""
        replace: dict[tuple[int, int], Value] = {}
        loads_at: dict[int, list[Op]] = {}
        for pos, op in enumerate(block.ops):
            if op.kind == CONSTANT:
                plan = plan_of.get(op.id)
                loads_at[pos] = (
                    [] if plan is None else self._loads(plan, new_id, ids, replace, decisions)
                )
        out: list[Op] = []
        for pos, op in enumerate(block.ops):
            if pos in loads_at:
                out.extend(loads_at[pos])
                continue
            if op.kind == LOAD_CONST:
                plan = plan_of[op.id]
                const_id = new_id[plan.first.id]
                if op.attrs.get("const_id") != const_id:
                    op = op.with_attrs(const_id=const_id)
            operands = tuple(replace.get((pos, i), v) for i, v in enumerate(op.operands))
            regions = tuple(self._rewrite(r, plan_of, new_id, ids, decisions) for r in op.regions)
            if any(a is not b for a, b in zip(operands, op.operands, strict=True)) or any(
                a is not b for a, b in zip(regions, op.regions, strict=True)
            ):
                op = op.replace(operands=operands, regions=regions)
            out.append(op)
        return Block(block.args, tuple(out))

    def _loads(
        self,
        plan: _Plan,
        new_id: dict[int, int],
        ids: IdCounter,
        replace: dict[tuple[int, int], Value],
        decisions: list[Decision],
    ) -> list[Op]:
        """ConstantToLoadConst for one constant: its LoadConst ops, uses rewired."""
        const = plan.first
        const_id = new_id[const.id]
        wide = plan.needs_load
        if self.per_use:
            groups = [
                ([use], wide if o is None else o)
                for use, o in zip(plan.uses, plan.opinions, strict=True)
            ]
        else:
            groups = [(plan.uses, wide)]
        loads: list[Op] = []
        for k, (uses, loaded) in enumerate(groups):
            attrs = {**const.attrs, "const_id": const_id}
            if not loaded:
                attrs["bypasscodegen"] = True
            op_id = const.id if k == 0 else ids()
            load = make_op(
                LOAD_CONST,
                (),
                attrs,
                op_id=op_id,
                result_types=[const.result.type],
                created_by=const.created_by if k == 0 else self.name,
            )
            for pos, index, _ in uses:
                replace[(pos, index)] = load.result
            loads.append(load)
        decisions.append(self._load_decision(plan, loads))
        return loads

    # ------------------------------------------------------------------ decisions
    def _load_decision(self, plan: _Plan, loads: list[Op]) -> Decision:
        const = plan.first
        said = [_describe(u, o) for u, o in zip(plan.uses, plan.opinions, strict=True)]
        how = f"{len(loads)} LoadConsts, one per use" if len(loads) > 1 else "one LoadConst"
        bypassed = [op.id for op in loads if op.attrs.get("bypasscodegen", False)]
        if plan.mixed:
            choice = "mixed"
            if self.per_use:
                tail = "each LoadConst follows its own user (the seed asserts here)"
            else:
                tail = "the shared LoadConst is loaded (the seed asserts here)"
            reason = f"users disagree: {'; '.join(said)}; {how}: {tail}"
        elif plan.needs_load:
            choice = "load"
            reason = f"{'; '.join(said)}; {how}"
        else:
            choice = "bypasscodegen"
            reason = f"no user loads it: {'; '.join(said)}; {how} with bypasscodegen"
        return self.decide(
            const.id,
            choice,
            reason,
            related=[op.id for op in loads if op.id != const.id],
            rule="ConstantToLoadConst",
            load_ops=[op.id for op in loads],
            bypassed=bypassed,
        )

    def _id_decision(
        self,
        plan: _Plan,
        renumbered: ConstContainer,
        new_id: dict[int, int],
        threshold: int,
        large_count: int,
    ) -> Decision:
        const_id = new_id[plan.first.id]
        entry = renumbered[const_id]
        large = entry.num_bytes > threshold
        if large:
            why = f"{entry.num_bytes} B > threshold {threshold} B: large constants come first"
        elif large_count:
            why = (
                f"{entry.num_bytes} B <= threshold {threshold} B: after the {large_count} "
                "larger constant(s)"
            )
        else:
            why = f"{entry.num_bytes} B <= threshold {threshold} B, as every constant here"
        return self.decide(
            plan.first.id,
            f"const_id {const_id}",
            f"registered as #{plan.old_id}; {why}",
            related=[op.id for op in plan.ops[1:]],
            rule="updateConstContainer",
            const_id=const_id,
            registered_id=plan.old_id,
            bytes=entry.num_bytes,
            threshold_bytes=threshold,
        )

    # ------------------------------------------------------------------ post-conditions
    def check(self, module: Module) -> list[str]:
        """No Constant left; const ids unique per data, dense, large first; loads honoured."""
        problems: list[str] = []
        for op in module.walk():
            if op.kind == CONSTANT:
                problems.append(f"{op.label}: Constant left after move-constant")
            elif op.kind == LOAD_CONST:
                const_id = op.attrs.get("const_id", -1)
                if not isinstance(const_id, int) or const_id < 0:
                    problems.append(f"{op.label}: LoadConst without a const_id")
        if problems:
            return problems
        threshold = module.attrs.get(THRESHOLD_ATTR)
        if not isinstance(threshold, int):
            return [f"module: attribute {THRESHOLD_ATTR} missing after move-constant"]
        try:
            container = ConstContainer.from_module(module)
        except Tx8labError as err:
            return [str(err)]
        ids = sorted(container.entries)
        if ids != list(range(len(ids))):
            problems.append(f"const ids {ids} are not dense from 0")
        large = [container.is_large(e) for e in container]
        if large != sorted(large, reverse=True):
            first_small = large.index(False)
            late = large.index(True, first_small)
            problems.append(
                f"const id {late} is larger than {threshold} B but comes after the smaller "
                f"const id {first_small}"
            )
        for func in module.functions:
            problems += _bypassed_loads(func.body)
        return problems


def _bypassed_loads(block: Block) -> list[str]:
    """LoadConsts with bypasscodegen although a user needs the load."""
    problems: list[str] = []
    uses = block_uses(block)
    for op in block.ops:
        if op.kind == LOAD_CONST and op.attrs.get("bypasscodegen", False):
            for _, index, user in uses.get(op.result.key, []):
                if use_needs_load(user, index):
                    problems.append(
                        f"{op.label}: bypasscodegen, but {user.label} needs operand {index} loaded"
                    )
        for region in op.regions:
            problems += _bypassed_loads(region)
    return problems


__all__ = ["MoveConstant", "block_uses", "use_needs_load"]
