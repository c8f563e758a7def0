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

**The HDFG file** (``tx8lab/core/data/hdfg_<graph>.txt``, knob ``graph``): one statement
per line, ``#`` starts a comment::

    node <name> <module>          a hardware unit (several may share a module)
    source <name>                 where every trip through the hardware starts
    link <from> -> <to>           data flows from one unit to the next, in visit order
    map <Kind> -> <alt> | <alt>   the units a tx8be kind runs on; <alt> is a module,
                                  or "m1 > m2": a unit of m1, then one of m2 after it
    virtual <Kind>                a kind that runs on no unit but rides along in the
                                  current group (a layout or view change)

Every node must be reachable from the source, every module a map names must belong to a
node, and every map entry must be matchable from the source; each broken rule is an error
naming the file and the line. The shipped ``opu`` graph is the seed's
concat → add_pre → mul_pre → pad → ipa → mul → add → {compare, pool_pad, res_add} … with
the op map of fuse_op_hw translated to tx8be kinds (each choice is commented in the file).

**FindMatch** (as the seed's code): from ``last_match`` the search starts at its
successors (``last_match`` itself is not revisited), from nothing at the source itself;
breadth first, successors in ``link`` order; the first node whose module the op's kind
maps to wins. An alternative ``m1 > m2`` finds m1 that way, then m2 from that node, as
two FindMatch calls would for the two Relay ops the seed has in its place.

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
- **Unmapped compute ops stay out.** The seed adds every op the op map does not know to
  the current group, calling it "virtually mapped" (``nn.batch_flatten``: "alter layout in
  hardware memory or just change the data fetch pattern"). Here only the kinds the file
  declares ``virtual`` do that (the opu file: ``Reshape`` and the layout conversion
  ``ChannelNorm`` that layout-align-npu inserts between a MatMul and its bias Add); they
  join the current group when they read a value of it and keep it convex, do not move
  ``last_match``, and otherwise stay out. Every other unmapped op (Softmax, LayerNorm,
  Gelu ...) stays ungrouped and ``last_match`` stays where it was (group-optimization
  gives it a group of its own later).
- **A matched op opens a new group** not only when FindMatch fails from ``last_match``
  (the seed's restart) but also when it reads no value the current group computes (the
  seed's depth-first walk backtracking to a sibling would glue two independent ops into
  one trip through the hardware) and when joining would make the group non-convex (an
  operand depends on the group through an op outside it). The decision names which.
- **CollectInputs** walks the producers of each op added to a group and collects those
  that are Constant, LoadConst, LoadVar or Tuple, recursively, stopping at (1) the root
  (last matched op) of another group, (2) an op already in a group, (3) a compute op: the
  seed stops only at mapped ones because it groups unmapped ones itself. Two stops are
  ours: Group and StoreVar ops are never collected, and an input that is also read by an
  op already visited outside the group stays out (collecting it would let that op, or
  the group, wait on itself). A constant shared by two groups is collected by the first
  and read from it by the second (seed condition 2).
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
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from tx8lab.core.grouping import group_members, is_compute, outline
from tx8lab.core.ir import TERMINATORS, Function, IdCounter, Module, Op, full_kind
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

ValueKey = tuple[int, int, bool]

#: Where the shipped graphs live: ``hdfg_<name>.txt``.
DATA_DIR = Path(__file__).resolve().parent.parent / "data"

#: Op kinds CollectInputs gathers upward: the seed's constants, tuples and vars.
COLLECTABLE = frozenset({"tx8be.Constant", "tx8be.LoadConst", "tx8be.LoadVar", "tx8be.Tuple"})

#: Why CollectInputs stopped at an op (seed conditions 1-3, then ours).
STOP_ROOT = "root-of-other-group"
STOP_GROUPED = "grouped"
STOP_COMPUTE = "compute"
STOP_NOT_COLLECTABLE = "not-collectable"
STOP_CONVEXITY = "read-outside"


# --------------------------------------------------------------------------- the HDFG


@dataclass(frozen=True)
class HDFGNode:
    """One hardware unit of the graph."""

    name: str
    """Node name (``ipa``, ``res_add``), unique in the graph."""
    module: str
    """Hardware module it is an instance of (``adder``); op-map entries name modules."""
    line: int
    """Line of its ``node`` statement, for messages."""


@dataclass(frozen=True)
class HDFG:
    """A hardware dataflow graph and its op map (see the module docstring)."""

    name: str
    """Graph name (``opu``); groups record ``group_rule = "hdfg:<name>"``."""
    filename: str
    """File it was read from, for messages."""
    nodes: tuple[HDFGNode, ...]
    """Units in declaration order."""
    succ: Mapping[str, tuple[str, ...]]
    """Node name -> successor names, in ``link`` order."""
    source: str
    """The node every trip starts at (the seed's ``hdfg.root``)."""
    op_map: Mapping[str, tuple[tuple[str, ...], ...]]
    """Full op kind -> alternatives, each a sequence of modules."""
    map_lines: Mapping[str, int] = field(default_factory=dict)
    """Full op kind -> line of its ``map`` statement."""
    virtual: frozenset[str] = frozenset()
    """Full op kinds that ride along in the current group without a unit."""
    _cache: dict[tuple[str | None, str], tuple[str, ...] | None] = field(
        default_factory=dict, compare=False, repr=False
    )

    @cached_property
    def node_by_name(self) -> dict[str, HDFGNode]:
        """Name -> node."""
        return {n.name: n for n in self.nodes}

    def maps(self, kind: str) -> bool:
        """Whether the op map has an entry for ``kind`` (``Add`` or ``tx8be.Add``)."""
        return full_kind(kind) in self.op_map

    def is_virtual(self, kind: str) -> bool:
        """Whether ``kind`` is declared ``virtual`` (joins a group without a unit)."""
        return full_kind(kind) in self.virtual

    def find_match(self, last: str | None, kind: str) -> tuple[str, ...] | None:
        """The seed's ``FindMatch``: the nodes an op of ``kind`` runs on after ``last``.

        ``last`` None searches from the source (included), else from the successors of
        ``last``. Returns one node per module of the first alternative that matches at
        the earliest node breadth first, or None.

        Examples:
            >>> opu = load_hdfg("opu")
            >>> opu.find_match(None, "Conv2d"), opu.find_match("ipa", "BatchNorm_Inference")
            (('ipa',), ('mul', 'add'))
            >>> opu.find_match("add", "Add"), opu.find_match("compare", "Conv2d")
            (('res_add',), None)
        """
        key = (last, full_kind(kind))
        if key not in self._cache:
            self._cache[key] = self._find(last, key[1])
        return self._cache[key]

    def _find(self, last: str | None, kind: str) -> tuple[str, ...] | None:
        alternatives = self.op_map.get(kind, ())
        for node in self._bfs(last):
            for alt in alternatives:
                if alt[0] != self.node_by_name[node].module:
                    continue
                path = [node]
                for module in alt[1:]:
                    nxt = next(
                        (n for n in self._bfs(path[-1]) if self.node_by_name[n].module == module),
                        None,
                    )
                    if nxt is None:
                        break
                    path.append(nxt)
                else:
                    return tuple(path)
        return None

    def _bfs(self, last: str | None) -> Iterator[str]:
        """Nodes breadth first from the successors of ``last`` (from the source if None)."""
        if last is None:
            queue, seen = deque([self.source]), {self.source}
        else:
            queue, seen = deque(self.succ[last]), {last, *self.succ[last]}
        while queue:
            current = queue.popleft()
            yield current
            for nxt in self.succ[current]:
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)

    def reachable(self, start: str, end: str) -> bool:
        """Whether ``end`` is a successor of ``start``, directly or not."""
        return any(n == end for n in self._bfs(start))


def parse_hdfg(text: str, filename: str = "<hdfg>", name: str | None = None) -> HDFG:
    r"""Read an HDFG file (format: the module docstring); errors name the file and line.

    Examples:
        >>> text = ["node a adder", "node b ipa", "source a", "link a -> b", "map Add -> adder"]
        >>> g = parse_hdfg("\n".join(text))
        >>> g.succ["a"], g.op_map["tx8be.Add"]
        (('b',), (('adder',),))
        >>> parse_hdfg("\n".join([*text[:3], "link a -> c"]), "g.txt")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tx8lab.errors.Tx8labError: g.txt:4: link names unknown node 'c'; declare it ...
    """
    nodes: dict[str, HDFGNode] = {}
    succ: dict[str, list[str]] = {}
    source: tuple[str, int] | None = None
    op_map: dict[str, tuple[tuple[str, ...], ...]] = {}
    map_lines: dict[str, int] = {}
    virtual: dict[str, int] = {}
    pending_maps: list[tuple[int, str, list[list[str]]]] = []

    def fail(line: int, message: str) -> Tx8labError:
        return Tx8labError(f"{filename}:{line}: {message}")

    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        head, rest = words[0], words[1:]
        if head == "node":
            if len(rest) != 2:
                raise fail(number, f"'node' takes a name and a module, got {' '.join(rest)!r}")
            if rest[0] in nodes:
                other = nodes[rest[0]].line
                raise fail(number, f"node {rest[0]!r} is declared twice (first on line {other})")
            nodes[rest[0]] = HDFGNode(rest[0], rest[1], number)
            succ[rest[0]] = []
        elif head == "source":
            if len(rest) != 1:
                raise fail(number, "'source' takes one node name")
            if source is not None:
                raise fail(number, f"a second 'source' (the first is on line {source[1]})")
            if rest[0] not in nodes:
                raise fail(number, f"source {rest[0]!r} is not a declared node")
            source = (rest[0], number)
        elif head == "link":
            if len(rest) != 3 or rest[1] != "->":
                raise fail(number, "write a link as 'link <from> -> <to>'")
            for end in (rest[0], rest[2]):
                if end not in nodes:
                    raise fail(
                        number,
                        f"link names unknown node {end!r}; declare it with 'node {end} <module>'",
                    )
            if rest[2] in succ[rest[0]]:
                raise fail(number, f"link {rest[0]} -> {rest[2]} is given twice")
            succ[rest[0]].append(rest[2])
        elif head == "virtual":
            if len(rest) != 1:
                raise fail(number, "'virtual' takes one op kind")
            kind = _compute_kind(rest[0], fail, number)
            if kind in virtual or kind in map_lines:
                first = virtual.get(kind, map_lines.get(kind))
                raise fail(number, f"{rest[0]} is declared twice (first on line {first})")
            virtual[kind] = number
        elif head == "map":
            if len(rest) < 3 or rest[1] != "->":
                raise fail(number, "write a map as 'map <Kind> -> <module> [> <module>] | ...'")
            kind = _compute_kind(rest[0], fail, number)
            if kind in virtual or kind in map_lines:
                first = virtual.get(kind, map_lines.get(kind))
                raise fail(number, f"{rest[0]} is declared twice (first on line {first})")
            alternatives = [alt.split(">") for alt in " ".join(rest[2:]).split("|")]
            alts = [[m.strip() for m in alt] for alt in alternatives]
            if any(not m for alt in alts for m in alt):
                raise fail(number, "an empty module in the map (check the '|' and '>')")
            map_lines[kind] = number
            pending_maps.append((number, kind, alts))
        else:
            raise fail(
                number, f"unknown statement {head!r}; use node, source, link, map or virtual"
            )
    last_line = len(text.splitlines())
    if not nodes:
        raise fail(last_line, "no 'node' statement: the graph is empty")
    if source is None:
        raise fail(last_line, "no 'source' statement: say where the hardware data flow starts")
    modules = {n.module for n in nodes.values()}
    for number, kind, alts in pending_maps:
        for alt in alts:
            for module in alt:
                if module not in modules:
                    known = ", ".join(sorted(modules))
                    raise fail(number, f"module {module!r} is on no node; modules: {known}")
        op_map[kind] = tuple(tuple(alt) for alt in alts)
    graph = HDFG(
        name or Path(filename).stem.removeprefix("hdfg_"),
        filename,
        tuple(nodes.values()),
        {k: tuple(v) for k, v in succ.items()},
        source[0],
        op_map,
        map_lines,
        frozenset(virtual),
    )
    reached = {source[0], *graph._bfs(source[0])}
    for node in nodes.values():
        if node.name not in reached:
            raise fail(node.line, f"node {node.name!r} cannot be reached from {source[0]!r}")
    for number, kind, _ in pending_maps:
        if graph.find_match(None, kind) is None:
            raise fail(number, f"no path from {source[0]!r} runs {kind.split('.', 1)[1]}")
    return graph


def _compute_kind(word: str, fail: Any, number: int) -> str:
    """The full kind ``word`` names, if it is a compute op of the op library."""
    from tx8lab.core.ops import OPS

    kind = full_kind(word)
    if kind not in OPS:
        raise fail(number, f"{word!r} is not an op kind of the op library")
    if not is_compute(Op(-1, kind, (), ())):
        raise fail(number, f"{word} is not a compute op; only compute ops are mapped")
    return kind


def hdfg_path(graph: str) -> Path:
    """The file the knob value ``graph`` names: a shipped name or a path."""
    if "/" in graph or graph.endswith(".txt"):
        return Path(graph)
    return DATA_DIR / f"hdfg_{graph}.txt"


def load_hdfg(graph: str = "opu") -> HDFG:
    """The HDFG called ``graph`` (``tx8lab/core/data/hdfg_<graph>.txt``) or at a path."""
    path = hdfg_path(graph)
    if not path.is_file():
        shipped = sorted(p.stem.removeprefix("hdfg_") for p in DATA_DIR.glob("hdfg_*.txt"))
        raise Tx8labError(
            f"no HDFG file {str(path)!r} for group-hdfg.graph={graph!r}; "
            f"shipped graphs: {', '.join(shipped)} (or give a path to a .txt file)"
        )
    return parse_hdfg(path.read_text(encoding="utf-8"), str(path))


# --------------------------------------------------------------------------- partition


@dataclass
class OpRecord:
    """What the partition did with one op (turned into a Decision by the pass)."""

    choice: str
    """``new-group``, ``matched``, ``virtual``, ``collected``, ``unmapped`` or ``ungrouped``."""
    group: int | None = None
    """Index of its group in :attr:`HdfgPartition.groups`, if any."""
    nodes: tuple[str, ...] = ()
    """HDFG nodes it matched."""
    cause: str = ""
    """For ``new-group``: ``first``, ``no-successor``, ``not-fed`` or ``convexity``;
    for ``collected`` / ``ungrouped``: what happened upward."""
    last_match: str | None = None
    """``last_match`` before it was matched (None: from the source)."""
    related: tuple[int, ...] = ()
    """Ops the reason names: the op that collected it, the operand that broke convexity."""
    stops: list[tuple[int, str]] = field(default_factory=list)
    """For grouped ops: where CollectInputs stopped above it, and why."""


@dataclass
class HdfgPartition:
    """The groups of one function and the record of every op."""

    groups: list[list[int]] = field(default_factory=list)
    """Member op ids per group, in the order they joined."""
    paths: list[list[str]] = field(default_factory=list)
    """HDFG nodes matched per group, in order."""
    records: dict[int, OpRecord] = field(default_factory=dict)
    """Op id -> record, in the order decided (constant data not collected last)."""
    order: list[int] = field(default_factory=list)
    """The visit order (ops visited downward only)."""


def partition(func: Function, hdfg: HDFG) -> HdfgPartition:
    """Group the top-level ops of ``func`` on ``hdfg`` (the seed's ``Partition``)."""
    return _Partitioner(func, hdfg).run()


class _Partitioner:
    """Mutable state of one partition: the seed's ``GraphMatchFuser`` fields."""

    def __init__(self, func: Function, hdfg: HDFG) -> None:
        self.hdfg = hdfg
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
        self.out = HdfgPartition()
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

    def run(self) -> HdfgPartition:
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
                self.out.records[op.id] = OpRecord("ungrouped", cause=stop, related=related)
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
        if self.hdfg.is_virtual(op.kind):
            self._virtual(op.id, group)
            return
        if not self.hdfg.maps(op.kind):
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
        """A virtual op joins the current group if it reads it and keeps it convex."""
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
            self.out.records[pred] = OpRecord("collected", group, related=(op_id,))
            todo.extend(reversed(self.preds[pred]))

    def _stop(self, pred: int, group: int) -> str | None:
        """Why CollectInputs stops at ``pred`` (None: collect it)."""
        if self.roots.get(pred, group) != group:
            return STOP_ROOT
        if pred in self.gmap:
            return STOP_GROUPED
        op = self.by_id[pred]
        if is_compute(op):
            return STOP_COMPUTE
        if op.kind not in COLLECTABLE:
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
        """An op visited already, outside ``group``, that reads ``op_id`` (through data)."""
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

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        hdfg = load_hdfg(self.graph)
        ids = IdCounter(module.next_id)
        decisions: list[Decision] = []
        functions: list[Function] = []
        stats: dict[str, int | float | str] = dict.fromkeys(
            ("groups", "grouped_ops", "collected_ops", "restarts", "convexity_restarts"), 0
        )
        stats |= {"virtual_ops": 0, "unmapped_ops": 0, "ungrouped_ops": 0, "largest_group": 0}
        for func in module.functions:
            part = partition(func, hdfg)
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
        self, part: HdfgPartition, made: Sequence[Op], hdfg: HDFG, kinds: Mapping[int, str]
    ) -> list[Decision]:
        """One decision per op of the function, then one per group."""
        where = Path(hdfg.filename).name
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
            elif rec.choice == "collected":
                reason = (
                    f"input of {_ids(rec.related)} collected upward (CollectInputs) into {group}"
                )
            elif rec.choice == "virtual":
                reason = (
                    f"{kinds[op_id]} is virtual in {where} (no unit, a layout or view change): "
                    f"rides along in {group}, last match stays {rec.last_match}"
                )
            elif rec.choice == "unmapped" and rec.cause == "not-fed":
                reason = (
                    f"{kinds[op_id]} is virtual in {where} but reads no value of the current "
                    "group: left ungrouped"
                )
            elif rec.choice == "unmapped" and rec.cause == "convexity":
                reason = (
                    f"{kinds[op_id]} is virtual in {where} but operand {_ids(rec.related)} "
                    "depends on the current group through an op outside it: left ungrouped"
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
                for op_id in members:
                    op = by_id[op_id]
                    if is_compute(op) and not (hdfg.maps(op.kind) or hdfg.is_virtual(op.kind)):
                        problems.append(f"{group.label}: member {op.label} is not in the op map")
        return problems


def _count(part: HdfgPartition) -> dict[str, int]:
    """The pass's stats for one function."""
    records = list(part.records.values())
    matched = {i for i, r in part.records.items() if r.choice in _GROUPED}
    return {
        "groups": len(part.groups),
        "grouped_ops": len(matched),
        "collected_ops": sum(r.choice == "collected" for r in records),
        "restarts": sum(r.choice == "new-group" and r.cause != "first" for r in records),
        "convexity_restarts": sum(
            r.choice == "new-group" and r.cause == "convexity" for r in records
        ),
        "virtual_ops": sum(r.choice == "virtual" for r in records),
        "unmapped_ops": sum(r.choice == "unmapped" for r in records),
        "ungrouped_ops": sum(r.choice == "ungrouped" for r in records),
        "largest_group": max((sum(i in matched for i in g) for g in part.groups), default=0),
    }


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(f"%{i}" for i in ids)


__all__ = [
    "COLLECTABLE",
    "HDFG",
    "GroupHDFG",
    "HDFGNode",
    "HdfgPartition",
    "OpRecord",
    "hdfg_path",
    "load_hdfg",
    "parse_hdfg",
    "partition",
]
