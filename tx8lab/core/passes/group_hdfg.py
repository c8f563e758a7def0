"""group-hdfg: group ops by matching them onto a hardware dataflow graph (HDFG).

Spec: seed 002 (fuse_op_hw: ``HDFG::Create``, ``HDFG::FindMatch``,
``GraphMatchFuser::Partition``, ``AddToGroup``, ``CollectInputs``). The ops of each
function are visited depth first along their users; each compute op the HDFG's op map
knows is matched breadth first from the last matched hardware node (``last_match``) and
joins the current group, or, when no node after ``last_match`` can run it, the match
restarts from the HDFG source in a new group; the constants, tuples and vars above a
grouped op are collected into its group upward (``CollectInputs``). The groups become
``tx8be.Group`` ops (:func:`tx8lab.core.grouping.outline`) with the attributes
``group_rule = "hdfg:<graph>"`` and ``hdfg_path`` (the HDFG nodes matched, in order).

The HDFG, its file format and FindMatch are :mod:`tx8lab.core.hdfg`.

**Traversal** (the seed's ``Partition``): a stack, started at the ops that read only
function arguments and constant data; popping an op visits it and pushes its users,
the latest in program order first, so the earliest user is visited next and a chain is
followed to its end before its siblings (depth first, as the seed's ``CompareIndex``).

Readings chosen where the seed is vague:

- **The op map.** Seed 002 names ``hdfg.op_map`` but does not list it; the opu file
  follows fuse_op_hw's own map (Relay op -> hardware modules) and translates each Relay
  op to the tx8be kinds that do the same work (Conv2d/Gemm/MatMul/BatchMatMul on the ipa,
  BatchNorm_Inference as multiplier then adder, Clip/Max/Min/Compare on the comparator,
  Sub on the adders ...; each line says why). An alternative ``m1 > m2`` is matched
  greedily (the nearest m1, then the nearest m2 after it), which is what FindMatch does on
  the multiply and add Relay has in place of a batch norm.
- **An op is visited when its last producer has been** (the seed visits an op when the
  first one reaches it and skips it later), so the visit order is topological: a residual
  ``Add`` is matched after both branches, and groups never wait on later ones. The seed
  starts from one node only; we start from every op that reads no computed value, in
  program order, so no op is missed. Constant data (Constants, LoadConsts, LoadVars and
  Tuples of them) is never visited downward; it is reached upward only (seed: constants
  are new branches "没办法向下遍历时访问到, 只能通过向上遍历").
- **Unmapped compute ops ride along** (knob ``unmapped``, default ``seed``). The seed's
  Partition adds every op FindMatch accepts to ``GetLatestGroup()``, and fuse_op_hw's
  FindMatch accepts an op the op map does not know as "virtually mapped"
  (``nn.batch_flatten``: "alter layout in hardware memory or just change the data fetch
  pattern") without a node, so ``last_match`` stays where it was. Here such an op joins
  the current group when it reads a value of it and keeps it convex (the guards a
  matched op has too, below); otherwise it is left for
  CollectInputs, which collects it upward into the group of the first op that reads it
  (the seed's AddToGroup: "aim to collect nodes that cannot be mapped via hdfg.op_map
  e.g. tuple, const, expand_dims"), or, if no group does, it stays ungrouped
  (group-optimization gives it a group of its own). An unmapped op never opens a group:
  only FindMatch from the source does (the seed's ``GetLatestGroup(true)``).
  ``unmapped=out`` is the earlier reading: only the kinds the file declares ``virtual``
  (the opu file: ``Reshape`` and the layout conversion ``ChannelNorm`` that
  layout-align-npu inserts between a MatMul and its bias Add) ride along, every other
  unmapped op (Softmax, LayerNorm, Gelu ...) stays ungrouped, ``last_match`` stays where
  it was, and CollectInputs stops at every compute op.
- **A matched op opens a new group** not only when FindMatch fails from ``last_match``
  (the seed's restart) but also when it reads no value the current group computes (the
  seed's depth-first walk backtracking to a sibling would glue two independent ops into
  one trip through the hardware) and when joining would make the group non-convex (an
  operand depends on the group through an op outside it). The decision names which.
- **CollectInputs** walks the producers of each op added to a group and collects those
  that are Constant, LoadConst, LoadVar or Tuple, or (``unmapped=seed``) a compute op the
  op map does not know that is in no group yet, recursively, stopping at (1) the root of
  another group (the op AddToGroup added to it last: ``root_ref``), (2) an op already in
  a group, (3) a compute op in the op map (the seed's "a CallNode ... in op_map"; with
  ``unmapped=out`` every compute op). Two stops are ours: Group and StoreVar ops are
  never collected, and an input that is also read by an op already visited outside the
  group, or that depends on the group through an op outside it, stays out (collecting
  it would let that op, or the group, wait on itself). A constant shared by two groups
  is collected by the first and read from it by the second (seed condition 2).
- **Groups are convex and acyclic by construction**, so outlining never fails: ops are
  visited in a topological order, a group only grows while it is the latest one, an op
  joins only if no operand depends on the group through an op outside it, and an input
  is collected only if no op visited already reads it from outside the group.
- The seed's post-pass for a channel-expanding pad before a residual add (TVM specific)
  is not reproduced.
- Every function of the module is grouped on its own; existing ``tx8be.Group`` ops are
  left as they are (they are not compute ops and are never collected).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tx8lab.core.grouping import group_members, is_compute, outline
from tx8lab.core.hdfg import HDFG, load_hdfg
from tx8lab.core.ir import TERMINATORS, Function, IdCounter, Module, Op
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

ValueKey = tuple[int, int, bool]

#: Op kinds CollectInputs gathers upward: the seed's constants, tuples and vars.
COLLECTABLE = frozenset({"tx8be.Constant", "tx8be.LoadConst", "tx8be.LoadVar", "tx8be.Tuple"})

#: Values of the ``unmapped`` knob: the seed's reading, or ops outside the map stay out.
UNMAPPED_MODES = ("seed", "out")

#: Why CollectInputs stopped at an op (seed conditions 1-3, then ours).
STOP_ROOT = "root-of-other-group"
STOP_GROUPED = "grouped"
STOP_COMPUTE = "compute"
STOP_NOT_COLLECTABLE = "not-collectable"
STOP_CONVEXITY = "read-outside"


# --------------------------------------------------------------------------- partition


@dataclass
class OpRecord:
    """What the partition did with one op (turned into a Decision by the pass)."""

    choice: str
    """``new-group``, ``matched``, ``virtual``, ``collected``, ``unmapped`` or ``ungrouped``."""
    group: int | None = None
    """Index of its group in :attr:`HDFGPartition.groups`, if any."""
    nodes: tuple[str, ...] = ()
    """HDFG nodes it matched."""
    cause: str = ""
    """For ``new-group``: ``first``, ``no-successor``, ``not-fed`` or ``convexity``;
    for ``unmapped``: why it did not ride along (``not-fed``, ``convexity``, empty: out);
    for ``collected``: ``unmapped`` when it is a compute op outside the op map;
    for ``ungrouped``: what happened upward."""
    last_match: str | None = None
    """``last_match`` before it was matched (None: from the source)."""
    related: tuple[int, ...] = ()
    """Ops the reason names: the op that collected it, the operand that broke convexity."""
    stops: list[tuple[int, str]] = field(default_factory=list)
    """For grouped ops: where CollectInputs stopped above it, and why."""


@dataclass
class HDFGPartition:
    """The groups of one function and the record of every op."""

    groups: list[list[int]] = field(default_factory=list)
    """Member op ids per group, in the order they joined."""
    paths: list[list[str]] = field(default_factory=list)
    """HDFG nodes matched per group, in order."""
    records: dict[int, OpRecord] = field(default_factory=dict)
    """Op id -> record, in the order decided (constant data not collected last)."""
    order: list[int] = field(default_factory=list)
    """The visit order (ops visited downward only)."""


def partition(func: Function, hdfg: HDFG, unmapped: str = "seed") -> HDFGPartition:
    """Group the top-level ops of ``func`` on ``hdfg`` (the seed's ``Partition``).

    ``unmapped``: ``seed`` (ops outside the op map ride along or are collected upward)
    or ``out`` (only ``virtual`` kinds ride along); see the module docstring.
    """
    if unmapped not in UNMAPPED_MODES:
        raise Tx8labError(
            f"group-hdfg.unmapped={unmapped!r}: use one of {', '.join(UNMAPPED_MODES)}"
        )
    return _Partitioner(func, hdfg, unmapped == "seed").run()


class _Partitioner:
    """Mutable state of one partition: the seed's ``GraphMatchFuser`` fields."""

    def __init__(self, func: Function, hdfg: HDFG, seed_unmapped: bool) -> None:
        self.hdfg = hdfg
        self.seed_unmapped = seed_unmapped
        self.ops = [op for op in func.ops if op.kind not in TERMINATORS]
        self.by_id = {op.id: op for op in self.ops}
        self.pos = {op.id: i for i, op in enumerate(self.ops)}
        producer = {r.key: op.id for op in self.ops for r in op.results}
        self.preds: dict[int, list[int]] = {}
        self.users: dict[int, list[int]] = {op.id: [] for op in self.ops}
        for op in self.ops:
            preds = list(dict.fromkeys(producer[v.key] for v in op.operands if v.key in producer))
            self.preds[op.id] = preds
            for p in preds:
                self.users[p].append(op.id)
        # constant data: collectable ops computed from constant data only
        self.data_only: set[int] = set()
        for op in self.ops:
            if op.kind in COLLECTABLE and all(p in self.data_only for p in self.preds[op.id]):
                self.data_only.add(op.id)
        self.out = HDFGPartition()
        self.gmap: dict[int, int] = {}  # op -> group index (the seed's gmap_)
        self.matched: set[int] = set()  # compute members of the current group
        self.group_root: list[int] = []  # latest matched op per group (root_ref)
        self.roots: dict[int, int] = {}  # root op of each closed group (root_map)
        self.last_match: str | None = None
        self.visited: set[int] = set(self.data_only)
        self.taint: dict[int, int] = {}  # op -> group it depends on through outside ops
        self.kept_out: dict[int, tuple[str, int | None]] = {}  # input -> (stop, reader)

    @property
    def current(self) -> int | None:
        return len(self.out.groups) - 1 if self.out.groups else None

    def run(self) -> HDFGPartition:
        for op_id in self._traverse():
            self.visited.add(op_id)
            self.out.order.append(op_id)
            self._visit(self.by_id[op_id])
        for op in self.ops:
            record = self.out.records.get(op.id)
            if record is not None and record.group is not None:
                continue
            if op.id in self.kept_out:
                stop, reader = self.kept_out[op.id]
                related = () if reader is None else (reader,)
                # a compute op stays "unmapped"; the stop says why it was not collected
                choice = "unmapped" if is_compute(op) else "ungrouped"
                self.out.records[op.id] = OpRecord(choice, cause=stop, related=related)
            elif record is None:
                self.out.records[op.id] = OpRecord("ungrouped", cause="unread")
        return self.out

    # -- traversal
    def _traverse(self) -> Iterator[int]:
        """Depth first along users, an op once all its producers are visited."""
        waiting = {
            op.id: sum(1 for p in self.preds[op.id] if p not in self.data_only)
            for op in self.ops
            if op.id not in self.data_only
        }
        stack = sorted((i for i, n in waiting.items() if n == 0), key=self.pos.__getitem__)
        stack.reverse()
        while stack:
            op_id = stack.pop()
            yield op_id
            ready = []
            for user in self.users[op_id]:
                waiting[user] -= 1
                if waiting[user] == 0:
                    ready.append(user)
            ready.sort(key=self.pos.__getitem__, reverse=True)
            stack.extend(ready)

    # -- one op (the body of the seed's Partition loop)
    def _visit(self, op: Op) -> None:
        if not is_compute(op):
            self.out.records[op.id] = OpRecord("ungrouped", cause="not-compute")
            self._mark_taint(op.id)
            return
        group = self.current
        if not self.hdfg.maps(op.kind):
            if self.seed_unmapped or self.hdfg.is_virtual(op.kind):
                self._virtual(op.id, group)
            else:
                self.out.records[op.id] = OpRecord("unmapped")
                self._mark_taint(op.id)
            return
        if group is None:
            self._open(op.id, "first")
            return
        path = self.hdfg.find_match(self.last_match, op.kind)
        if path is None:
            self._open(op.id, "no-successor")
            return
        if not any(p in self.matched for p in self.preds[op.id]):
            self._open(op.id, "not-fed")
            return
        tainted = [p for p in self.preds[op.id] if self.taint.get(p) == group]
        if tainted:
            self._open(op.id, "convexity", (tainted[0],))
            return
        self.out.records[op.id] = OpRecord("matched", group, path, last_match=self.last_match)
        self._add(op.id, group, path)

    def _virtual(self, op_id: int, group: int | None) -> None:
        """An op that rides along joins the current group if it reads it, keeping it convex.

        Otherwise it is left out, for CollectInputs to collect upward (``unmapped=seed``).
        """
        preds = self.preds[op_id]
        if group is None or not any(p in self.matched for p in preds):
            self.out.records[op_id] = OpRecord("unmapped", cause="not-fed")
        elif any(self.taint.get(p) == group for p in preds):
            tainted = next(p for p in preds if self.taint.get(p) == group)
            self.out.records[op_id] = OpRecord("unmapped", cause="convexity", related=(tainted,))
        else:
            self.out.records[op_id] = OpRecord("virtual", group, last_match=self.last_match)
            self._add(op_id, group, ())
            return
        self._mark_taint(op_id)

    def _open(self, op_id: int, cause: str, related: tuple[int, ...] = ()) -> None:
        """Restart from the HDFG source in a new group (the seed's GetLatestGroup(true))."""
        path = self.hdfg.find_match(None, self.by_id[op_id].kind)
        if path is None:  # pragma: no cover - parse_hdfg rejects such a map
            raise Tx8labError(f"%{op_id}: {self.hdfg.filename} cannot run it from its source")
        if self.current is not None:
            self.roots[self.group_root[self.current]] = self.current
        group = len(self.out.groups)
        self.out.groups.append([])
        self.out.paths.append([])
        self.group_root.append(op_id)
        self.matched = set()
        self.out.records[op_id] = OpRecord(
            "new-group", group, path, cause, self.last_match, related
        )
        self._add(op_id, group, path)

    def _add(self, op_id: int, group: int, path: tuple[str, ...]) -> None:
        """The seed's ``AddToGroup``: join, move ``last_match``, collect inputs upward."""
        self.gmap[op_id] = group
        self.out.groups[group].append(op_id)
        self.out.paths[group].extend(path)
        self.matched.add(op_id)
        self.group_root[group] = op_id
        self.last_match = path[-1] if path else self.last_match
        self._collect_inputs(op_id, group)

    def _mark_taint(self, op_id: int) -> None:
        """An op left outside depends on the current group when a producer does."""
        group = self.current
        if group is None:
            return
        if any(self.gmap.get(p) == group or self.taint.get(p) == group for p in self.preds[op_id]):
            self.taint[op_id] = group

    # -- CollectInputs
    def _collect_inputs(self, op_id: int, group: int) -> None:
        """The seed's ``CollectInputs`` over every predecessor of ``op_id``.

        Collects constant data above it into ``group``, recording where it stopped.
        """
        record = self.out.records[op_id]
        todo = list(reversed(self.preds[op_id]))
        while todo:
            pred = todo.pop()
            stop = self._stop(pred, group)
            if stop is not None:
                if (pred, stop) not in record.stops:
                    record.stops.append((pred, stop))
                continue
            self.gmap[pred] = group
            self.out.groups[group].append(pred)
            self.kept_out.pop(pred, None)
            cause = ""
            if is_compute(self.by_id[pred]):
                # an op outside the op map, left out when visited: a value of the group now
                self.matched.add(pred)
                cause = "unmapped"
            self.out.records[pred] = OpRecord("collected", group, cause=cause, related=(op_id,))
            todo.extend(reversed(self.preds[pred]))

    def _stop(self, pred: int, group: int) -> str | None:
        """Why CollectInputs stops at ``pred`` (None: collect it)."""
        if self.roots.get(pred, group) != group:
            return STOP_ROOT
        if pred in self.gmap:
            return STOP_GROUPED
        op = self.by_id[pred]
        if is_compute(op):
            # seed: "Operators in op_map will be taken care of in Partition()"
            if not self.seed_unmapped or self.hdfg.maps(op.kind):
                return STOP_COMPUTE
        elif op.kind not in COLLECTABLE:
            return STOP_NOT_COLLECTABLE
        if self.taint.get(pred) == group:
            self.kept_out[pred] = (STOP_CONVEXITY, None)
            return STOP_CONVEXITY
        reader = self._read_outside(pred, group)
        if reader is not None:
            self.kept_out[pred] = (STOP_CONVEXITY, reader)
            return STOP_CONVEXITY
        return None

    def _read_outside(self, op_id: int, group: int) -> int | None:
        """An op visited already, outside ``group``, that reads ``op_id`` (through data).

        Data only (constants, tuples of them) is looked through: its readers are asked.
        """
        todo = [op_id]
        seen = {op_id}
        while todo:
            for user in self.users[todo.pop()]:
                if user in seen or self.gmap.get(user) == group:
                    continue
                seen.add(user)
                if user in self.data_only:
                    todo.append(user)
                elif user in self.visited:
                    return user
        return None


# --------------------------------------------------------------------------- the pass


#: Record choices of compute ops that are in a group.
_GROUPED = ("matched", "new-group", "virtual")

_CAUSES = {
    "first": "the first op the hardware runs: matched from the HDFG source {source}",
    "no-successor": "no HDFG node after the last match {last} runs it: restart from {source}",
    "not-fed": "it reads no value of the current group: restart from {source}",
    "convexity": (
        "operand {rel} depends on the current group through an op outside it, so joining "
        "would make the group non-convex: restart from {source}"
    ),
}


@dataclass(frozen=True)
class GroupHDFG(Pass):
    """Seed 002 fuse_op_hw: FindMatch on the HDFG, restart from its source, CollectInputs."""

    name: ClassVar[str] = "group-hdfg"
    summary: ClassVar[str] = "group ops along the hardware dataflow graph (seed 002 fuse_op_hw)"

    graph: str = knob("opu", "HDFG file: a name in tx8lab/core/data (hdfg_<name>.txt) or a path")
    """Set from Python or ``--set group-hdfg.graph=opu``."""
    unmapped: str = knob(
        "seed",
        "ops outside the op map: seed (ride along, collected upward; fuse_op_hw) or out "
        "(stay out; only the file's virtual kinds ride along)",
        choices=UNMAPPED_MODES,
    )
    """Set from Python or ``--set group-hdfg.unmapped=out`` (module docstring)."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        hdfg = load_hdfg(self.graph)
        ids = IdCounter(module.next_id)
        decisions: list[Decision] = []
        functions: list[Function] = []
        stats: dict[str, int | float | str] = dict.fromkeys(
            ("groups", "grouped_ops", "collected_ops", "restarts", "convexity_restarts"), 0
        )
        stats |= dict.fromkeys(
            ("collected_unmapped_ops", "virtual_ops", "unmapped_ops", "ungrouped_ops"), 0
        )
        stats["largest_group"] = 0
        for func in module.functions:
            part = partition(func, hdfg, self.unmapped)
            kinds = {op.id: op.name for op in func.ops}
            made: list[Op] = []
            if part.groups:
                attrs = [
                    {"group_rule": f"hdfg:{hdfg.name}", "hdfg_path": tuple(path)}
                    for path in part.paths
                ]
                func, made = outline(func, part.groups, ids, attrs=attrs, created_by=self.name)
            functions.append(func)
            decisions += self._decisions(part, made, hdfg, kinds)
            for key, value in _count(part).items():
                stats[key] = (
                    max(int(stats[key]), value)
                    if key == "largest_group"
                    else (int(stats[key]) + value)
                )
        if not stats["groups"]:
            note = self.decide(None, "no-groups", f"no op maps to {Path(hdfg.filename).name}")
            return PassResult(module, (note, *decisions), stats, {"hdfg": hdfg})
        out = Module(tuple(functions), module.attrs, ids.next_id)
        return PassResult(out, tuple(decisions), stats, {"hdfg": hdfg})

    def _decisions(
        self, part: HDFGPartition, made: Sequence[Op], hdfg: HDFG, kinds: Mapping[int, str]
    ) -> list[Decision]:
        """One decision per op of the function, then one per group."""
        where = Path(hdfg.filename).name
        seed = self.unmapped == "seed"
        out: list[Decision] = []
        for op_id, rec in part.records.items():
            data: dict[str, Any] = {}
            group = "" if rec.group is None else f"%{made[rec.group].id}"
            if rec.group is not None:
                data["group"] = made[rec.group].id
            if rec.nodes:
                data["hdfg_nodes"] = list(rec.nodes)
            if rec.stops:
                data["collect_stops"] = [list(s) for s in rec.stops]
            nodes = " > ".join(rec.nodes)
            if rec.choice == "new-group":
                why = _CAUSES[rec.cause].format(
                    source=hdfg.source, last=rec.last_match, rel=_ids(rec.related)
                )
                reason = f"{kinds[op_id]} runs on {nodes}; {why}; opens group {group}"
                data["cause"] = rec.cause
            elif rec.choice == "matched":
                reason = (
                    f"{kinds[op_id]} runs on {nodes} after the last match {rec.last_match}: "
                    f"joins {group}"
                )
                data["last_match"] = rec.last_match
            elif rec.choice == "collected" and rec.cause == "unmapped":
                reason = (
                    f"{kinds[op_id]} has no entry in the op map of {where}: input of "
                    f"{_ids(rec.related)} collected upward (CollectInputs) into {group}"
                )
            elif rec.choice == "collected":
                reason = (
                    f"input of {_ids(rec.related)} collected upward (CollectInputs) into {group}"
                )
            elif rec.choice == "virtual":
                reason = (
                    f"{kinds[op_id]} {_rides(hdfg, kinds[op_id], where)}: "
                    f"rides along in {group}, last match stays {rec.last_match}"
                )
            elif rec.choice == "unmapped" and rec.cause == "not-fed":
                reason = (
                    f"{kinds[op_id]} {_rides(hdfg, kinds[op_id], where)} but reads no value "
                    "of the current group: left ungrouped"
                    + (" (CollectInputs may collect it upward)" if seed else "")
                )
            elif rec.choice == "unmapped" and rec.cause == "convexity":
                reason = (
                    f"{kinds[op_id]} {_rides(hdfg, kinds[op_id], where)} but operand "
                    f"{_ids(rec.related)} depends on the current group through an op outside "
                    "it: left ungrouped"
                )
            elif rec.choice == "unmapped" and rec.cause == STOP_CONVEXITY:
                reason = f"{kinds[op_id]} {_rides(hdfg, kinds[op_id], where)}, but " + (
                    f"also read by {_ids(rec.related)}, visited before outside the group that "
                    "reads it: CollectInputs left it out"
                    if rec.related
                    else "it depends on the group that reads it through an op outside it: "
                    "CollectInputs left it out"
                )
            elif rec.choice == "unmapped":
                reason = (
                    f"{kinds[op_id]} has no entry in the op map of {where}: left ungrouped "
                    "(group-optimization gives it a group of its own)"
                )
            elif rec.cause == STOP_CONVEXITY and rec.related:
                reason = (
                    f"also read by {_ids(rec.related)}, visited before outside the group that "
                    "reads it: collecting it would make that group wait on itself"
                )
            elif rec.cause == STOP_CONVEXITY:
                reason = (
                    "depends on the group that reads it through an op outside it: not collected"
                )
            elif rec.cause == "not-compute":
                reason = "not a compute op and no group collected it"
            else:
                reason = "no grouped op reads it: left ungrouped"
            out.append(self.decide(op_id, rec.choice, reason, related=rec.related, **data))
        for g, group_op in enumerate(made):
            path = " > ".join(part.paths[g])
            out.append(
                self.decide(
                    group_op.id,
                    "group",
                    f"hdfg:{hdfg.name} trip {path} ({len(part.groups[g])} ops)",
                    related=part.groups[g],
                    hdfg_path=list(part.paths[g]),
                )
            )
        return out

    def check(self, module: Module) -> list[str]:
        """Post-condition: each group this graph formed is a trip along the HDFG."""
        hdfg = load_hdfg(self.graph)
        rule = f"hdfg:{hdfg.name}"
        nodes = hdfg.node_by_name
        problems: list[str] = []
        for func in module.functions:
            by_id = {op.id: op for op in func.walk()}
            for group_id, members in group_members(func).items():
                group = by_id[group_id]
                if group.attrs.get("group_rule") != rule:
                    continue
                path = tuple(group.attrs.get("hdfg_path", ()))
                if not path or any(n not in nodes for n in path):
                    problems.append(f"{group.label}: hdfg_path {path} is not a path of {rule}")
                    continue
                for a, b in itertools.pairwise(path):
                    if not hdfg.reachable(a, b):
                        problems.append(f"{group.label}: {b} does not follow {a} in {rule}")
                if self.unmapped == "seed":
                    continue  # any kind may ride along (virtually mapped)
                for op_id in members:
                    op = by_id[op_id]
                    if is_compute(op) and not (hdfg.maps(op.kind) or hdfg.is_virtual(op.kind)):
                        problems.append(f"{group.label}: member {op.label} is not in the op map")
        return problems


def _count(part: HDFGPartition) -> dict[str, int]:
    """The pass's stats for one function (``grouped_ops``: compute ops in a group)."""
    records = list(part.records.values())
    matched = {
        i
        for i, r in part.records.items()
        if r.choice in _GROUPED or (r.choice == "collected" and r.cause == "unmapped")
    }
    return {
        "groups": len(part.groups),
        "grouped_ops": len(matched),
        "collected_ops": sum(r.choice == "collected" for r in records),
        "collected_unmapped_ops": sum(
            r.choice == "collected" and r.cause == "unmapped" for r in records
        ),
        "restarts": sum(r.choice == "new-group" and r.cause != "first" for r in records),
        "convexity_restarts": sum(
            r.choice == "new-group" and r.cause == "convexity" for r in records
        ),
        "virtual_ops": sum(r.choice == "virtual" for r in records),
        "unmapped_ops": sum(r.choice == "unmapped" for r in records),
        "ungrouped_ops": sum(r.choice == "ungrouped" for r in records),
        "largest_group": max((sum(i in matched for i in g) for g in part.groups), default=0),
    }


def _rides(hdfg: HDFG, kind: str, where: str) -> str:
    """Why an op outside the op map may ride along: declared virtual, or the seed's rule."""
    if hdfg.is_virtual(kind):
        return f"is virtual in {where} (no unit, a layout or view change)"
    return f"has no entry in the op map of {where} (virtually mapped, as fuse_op_hw does)"


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(f"%{i}" for i in ids)


__all__ = [
    "COLLECTABLE",
    "UNMAPPED_MODES",
    "GroupHDFG",
    "HDFGPartition",
    "OpRecord",
    "partition",
]
