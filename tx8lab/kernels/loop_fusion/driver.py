"""The greedy driver of MLIR's loop-fusion pass over a function's top-level nests.

Spec: MLIR 22 ``LoopFusion.cpp`` (``GreedyFusion``: ``fuseProducerConsumerNodes``,
``performFusionsIntoDest``, ``canRemoveSrcNodeAfterFusion``, ``canCreatePrivateMemRef``)
and ``Analysis/Utils.cpp`` (``MemRefDependenceGraph``). Graph nodes are the top-level
nests and the allocs/constants they use; edges are SSA uses and memref dependences
(checked with isl, as MLIR 22 does). For every consumer, producers are tried in
reverse id order until nothing changes; each fusion picks its depth with
:func:`~.fusion.evaluate_depths`, inserts the slice, may privatize the memref and may
remove the producer. :func:`fuse` returns the fused function and the fusions done.

Readings chosen where MLIR's code is subtle:

- Nests are visited as MLIR visits its ``DenseMap`` of graph nodes: slots ordered by
  ``37 * id mod 64``, last slot first (:class:`DenseMapOrder`). That order decides which
  pair of a chain fuses first and so the order of the private buffers at the top.
- ``mode="greedy"`` runs MLIR's two producer-consumer phases (single-use producers
  first, then all) without the sibling (input-reuse) phase between them, which the
  explorer does not model; ``mode="producer"`` is exactly ``mode=producer``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tx8lab.kernels.loop_fusion.deps import (
    Access,
    check_dependence,
    collect_accesses,
    has_cyclic_dependence,
)
from tx8lab.kernels.loop_fusion.fusion import (
    FusionOptions,
    PairAnalysis,
    evaluate_depths,
    legality,
    producer_consumer_memrefs,
)
from tx8lab.kernels.loop_fusion.ir import (
    Alloc,
    Constant,
    Function,
    Load,
    Loop,
    Stmt,
    Store,
    uniquify,
    used_names,
    walk,
)
from tx8lab.kernels.loop_fusion.slices import Slice, dst_prefix_loops, is_slice_maximal
from tx8lab.kernels.loop_fusion.transform import (
    create_private_memref,
    fuse_loops,
    sink_sequential_loops,
)


class DenseMapOrder:
    """Iteration order of LLVM's ``DenseMap<unsigned, T>`` under inserts and erases.

    Examples:
        >>> m = DenseMapOrder()
        >>> for k in range(5):
        ...     m.insert(k)
        >>> m.keys()
        [0, 2, 4, 1, 3]
    """

    _EMPTY = -1
    _TOMB = -2

    def __init__(self) -> None:
        self.buckets: list[int] = []
        self.entries = 0
        self.tombstones = 0

    def _probe(self, key: int) -> tuple[int, bool]:
        n = len(self.buckets)
        mask = n - 1
        idx = (key * 37) & 0xFFFFFFFF & mask
        step = 1
        tomb = -1
        while True:
            b = self.buckets[idx]
            if b == key:
                return idx, True
            if b == self._EMPTY:
                return (tomb if tomb >= 0 else idx), False
            if b == self._TOMB and tomb < 0:
                tomb = idx
            idx = (idx + step) & mask
            step += 1

    def _grow(self, at_least: int) -> None:
        old = [b for b in self.buckets if b >= 0]
        size = 64
        while size < at_least:
            size *= 2
        self.buckets = [self._EMPTY] * size
        self.tombstones = 0
        self.entries = 0
        for key in old:
            idx, _ = self._probe(key)
            self.buckets[idx] = key
            self.entries += 1

    def insert(self, key: int) -> None:
        """Insert ``key`` (no-op if present)."""
        if self.buckets:
            _, found = self._probe(key)
            if found:
                return
        n = len(self.buckets)
        if (self.entries + 1) * 4 >= n * 3:
            self._grow(n * 2)
        elif n - (self.entries + 1 + self.tombstones) <= n // 8:
            self._grow(n)
        idx, _ = self._probe(key)
        if self.buckets[idx] == self._TOMB:
            self.tombstones -= 1
        self.buckets[idx] = key
        self.entries += 1

    def erase(self, key: int) -> None:
        """Erase ``key`` if present."""
        if not self.buckets:
            return
        idx, found = self._probe(key)
        if found:
            self.buckets[idx] = self._TOMB
            self.entries -= 1
            self.tombstones += 1

    def keys(self) -> list[int]:
        """Keys in iteration order."""
        return [b for b in self.buckets if b >= 0]


@dataclass
class _Node:
    id: int
    op: Stmt


@dataclass
class _Edge:
    id: int
    value: str


@dataclass
class FusionStep:
    """One fusion the driver performed."""

    src_nest: str
    dst_nest: str
    depth: int
    memrefs: tuple[str, ...]
    private: tuple[str, ...]
    """Memrefs replaced by a private buffer."""
    src_removed: bool
    analysis: PairAnalysis | None = None
    function_after: Function | None = None


@dataclass
class FusionRun:
    """The result of :func:`fuse`: the fused function and the fusions in order."""

    function: Function
    steps: list[FusionStep] = field(default_factory=list)


class _Graph:
    """MLIR's MemRefDependenceGraph over the top-level statements of one function."""

    def __init__(self, func: Function) -> None:
        self.name = func.name
        self.args = func.args
        self.block: list[Stmt] = list(func.body)
        self.nodes: dict[int, _Node] = {}
        self.order = DenseMapOrder()
        self.in_edges: dict[int, list[_Edge]] = {}
        self.out_edges: dict[int, list[_Edge]] = {}
        self.edge_count: dict[str, int] = {}
        self.next_id = 0
        self.labels: dict[int, str] = {}
        self._init()

    # -- state
    def func(self) -> Function:
        return Function(self.name, self.args, tuple(self.block))

    def index_of(self, op: Stmt) -> int:
        for i, s in enumerate(self.block):
            if s is op:
                return i
        raise AssertionError("op not in block")

    def pos(self, node_id: int) -> int:
        return self.index_of(self.nodes[node_id].op)

    def set_op(self, node_id: int, op: Stmt) -> None:
        self.block[self.pos(node_id)] = op
        self.nodes[node_id].op = op

    def accesses(self, node_id: int) -> list[Access]:
        if not isinstance(self.nodes[node_id].op, Loop):
            return []
        return collect_accesses(self.func(), (self.pos(node_id),))

    def stores(self, node_id: int, memref: str | None = None) -> list[Access]:
        return [a for a in self.accesses(node_id) if a.is_store and memref in (None, a.memref)]

    def loads(self, node_id: int, memref: str | None = None) -> list[Access]:
        return [a for a in self.accesses(node_id) if not a.is_store and memref in (None, a.memref)]

    def add_node(self, op: Stmt) -> int:
        nid = self.next_id
        self.next_id += 1
        self.nodes[nid] = _Node(nid, op)
        self.order.insert(nid)
        return nid

    def remove_node(self, nid: int) -> None:
        for e in list(self.in_edges.get(nid, [])):
            self.remove_edge(e.id, nid, e.value)
        for e in list(self.out_edges.get(nid, [])):
            self.remove_edge(nid, e.id, e.value)
        self.in_edges.pop(nid, None)
        self.out_edges.pop(nid, None)
        del self.nodes[nid]
        self.order.erase(nid)

    def has_edge(self, src: int, dst: int, value: str) -> bool:
        return any(e.id == dst and e.value == value for e in self.out_edges.get(src, []))

    def add_edge(self, src: int, dst: int, value: str) -> None:
        if self.has_edge(src, dst, value):
            return
        self.out_edges.setdefault(src, []).append(_Edge(dst, value))
        self.in_edges.setdefault(dst, []).append(_Edge(src, value))
        if value in self.memref_names():
            self.edge_count[value] = self.edge_count.get(value, 0) + 1

    def remove_edge(self, src: int, dst: int, value: str) -> None:
        if value in self.edge_count:
            self.edge_count[value] -= 1
        ins = self.in_edges.get(dst, [])
        for i, e in enumerate(ins):
            if e.id == src and e.value == value:
                del ins[i]
                break
        outs = self.out_edges.get(src, [])
        for i, e in enumerate(outs):
            if e.id == dst and e.value == value:
                del outs[i]
                break

    def memref_names(self) -> set[str]:
        return set(self.func().memrefs)

    # -- construction (MemRefDependenceGraph::init)
    def _init(self) -> None:
        func = self.func()
        used: set[str] = set()
        for _, s, _ in walk(func.body):
            used.update(used_names(s))
        accesses_by_memref: dict[str, list[int]] = {}
        nest_index = 0
        for stmt in self.block:
            if isinstance(stmt, Loop):
                nid = self.add_node(stmt)
                self.labels[nid] = f"nest{nest_index}"
                nest_index += 1
                for a in self.loads(nid):
                    lst = accesses_by_memref.setdefault(a.memref, [])
                    if nid not in lst:
                        lst.append(nid)
                for a in self.stores(nid):
                    lst = accesses_by_memref.setdefault(a.memref, [])
                    if nid not in lst:
                        lst.append(nid)
            elif isinstance(stmt, Alloc | Constant) and stmt.result in used:
                self.add_node(stmt)
        # SSA value edges from nodes without stores to the nests using their results
        for nid, node in list(self.nodes.items()):
            if not isinstance(node.op, Alloc | Constant):
                continue
            result = node.op.result
            for other, onode in self.nodes.items():
                if isinstance(onode.op, Loop) and result in _uses(onode.op):
                    self.add_edge(nid, other, result)
        for memref, ids in accesses_by_memref.items():
            for i, first in enumerate(ids):
                first_stores = bool(self.stores(first, memref))
                for second in ids[i + 1 :]:
                    second_stores = bool(self.stores(second, memref))
                    if (first_stores or second_stores) and self._may_depend(first, second, memref):
                        self.add_edge(first, second, memref)

    def _may_depend(self, a: int, b: int, memref: str) -> bool:
        for x in self.accesses(a):
            if x.memref != memref:
                continue
            for y in self.accesses(b):
                if y.memref == memref and check_dependence(x, y, 1):
                    return True
        return False

    # -- queries
    def out_edge_count(self, nid: int, value: str | None = None) -> int:
        return sum(1 for e in self.out_edges.get(nid, []) if value in (None, e.value))

    def incoming_memref_accesses(self, nid: int, memref: str) -> int:
        return sum(
            1 for e in self.in_edges.get(nid, []) if e.value == memref and self.stores(e.id, memref)
        )

    def has_dependence_path(self, src: int, dst: int) -> bool:
        dst_pos = self.pos(dst)
        stack = [src]
        seen: set[int] = set()
        while stack:
            n = stack.pop()
            if n == dst:
                return True
            if n in seen:
                continue
            seen.add(n)
            for e in self.out_edges.get(n, []):
                if self.pos(e.id) <= dst_pos and e.id != n:
                    stack.append(e.id)
        return False

    def producer_candidates(self, dst: int) -> list[int]:
        if not self.in_edges.get(dst):
            return []
        consumed = {a.memref for a in self.loads(dst)}
        out = set()
        for e in self.in_edges[dst]:
            node = self.nodes[e.id]
            if not isinstance(node.op, Loop):
                continue
            if any(a.memref in consumed for a in self.stores(e.id)):
                out.add(e.id)
        return sorted(out)

    def insertion_point(self, src: int, dst: int) -> Stmt | None:
        """MLIR's MemRefDependenceGraph::getFusedLoopNestInsertionPoint."""
        dst_op = self.nodes[dst].op
        if not self.out_edges.get(src):
            return dst_op
        memrefs = self.memref_names()
        defining = {e.id for e in self.in_edges.get(dst, []) if e.value not in memrefs}
        if any(self.has_dependence_path(src, d) for d in defining):
            return None
        src_deps = {id(self.nodes[e.id].op) for e in self.out_edges.get(src, []) if e.id != dst}
        dst_deps = {id(self.nodes[e.id].op) for e in self.in_edges.get(dst, []) if e.id != src}
        first = last = None
        between = self.block[self.pos(src) + 1 : self.pos(dst)]
        for k, op in enumerate(between):
            if id(op) in src_deps and first is None:
                first = k
            if id(op) in dst_deps:
                last = k
        if first is not None:
            if last is not None and first <= last:
                return None
            return between[first]
        return dst_op

    def escaping(self, src: int) -> set[str]:
        """MLIR's gatherEscapingMemrefs: stored memrefs that may be seen outside.

        A memref escapes when it is a function argument or has a user other than an
        affine load/store.
        """
        args = {name for name, _ in self.args}
        bad: set[str] = set()
        for a in self.stores(src):
            if a.memref in args:
                bad.add(a.memref)
                continue
            for _, stmt, _ in walk(tuple(self.block)):
                if isinstance(stmt, Load | Store):
                    index_names = {n for e in stmt.index for n in e.names}
                    value = stmt.value if isinstance(stmt, Store) else ""
                    if a.memref in index_names or a.memref == value:
                        bad.add(a.memref)
                elif a.memref in used_names(stmt):
                    bad.add(a.memref)
        return bad

    def update_edges(self, src: int, dst: int, private: set[str], remove_src: bool) -> None:
        for e in list(self.in_edges.get(src, [])):
            if e.value not in private:
                self.add_edge(e.id, dst, e.value)
        for e in list(self.out_edges.get(src, [])):
            if e.id == dst:
                self.remove_edge(src, e.id, e.value)
            elif remove_src:
                self.add_edge(dst, e.id, e.value)
                self.remove_edge(src, e.id, e.value)
        if private:
            for e in list(self.in_edges.get(dst, [])):
                if e.value in private:
                    self.remove_edge(e.id, dst, e.value)


def _uses(loop: Loop) -> set[str]:
    out: set[str] = set()
    for _, s, _ in walk((loop,)):
        out.update(used_names(s))
    return out


def _new_nest(old_block: Sequence[Stmt], body: Sequence[Stmt]) -> Stmt:
    """The one statement of ``body`` that is not (by identity) in ``old_block``."""
    fresh = [s for s in body if not any(s is o for o in old_block) and isinstance(s, Loop)]
    assert len(fresh) == 1, "a rewrite changed more than one nest"
    return fresh[0]


def _perform_fusions_into(
    graph: _Graph, dst: int, max_src_users: int, opts: FusionOptions, run: FusionRun
) -> None:
    """MLIR's performFusionsIntoDest."""
    if dst not in graph.nodes or not isinstance(graph.nodes[dst].op, Loop):
        return
    sunk = sink_sequential_loops(graph.func(), graph.pos(dst))
    graph.set_op(dst, sunk.body[graph.pos(dst)])
    changed = True
    while changed:
        changed = False
        for src in reversed(graph.producer_candidates(dst)):
            func = graph.func()
            src_pos, dst_pos = graph.pos(src), graph.pos(dst)
            memrefs = producer_consumer_memrefs(func, src_pos, dst_pos)
            if any(graph.out_edge_count(src, m) > max_src_users for m in memrefs):
                continue
            escaping = graph.escaping(src)
            ins_point = graph.insertion_point(src, dst)
            if ins_point is None or src_pos > dst_pos:
                continue
            checks = legality(func, src_pos, dst_pos, memrefs)
            if not any(c.ok for c in checks):
                continue
            cyclic = has_cyclic_dependence(func, (src_pos,))
            tolerance = 0.0 if cyclic and not opts.maximal else opts.compute_tolerance
            analysis = evaluate_depths(
                func,
                src_pos,
                dst_pos,
                checks,
                tolerance,
                opts.maximal,
                memrefs,
                cyclic,
                opts.compute_tolerance,
            )
            if opts.maximal and cyclic and analysis.chosen_depth is None:
                return
            if analysis.chosen_depth is None:
                continue
            depth = analysis.chosen_depth
            best = checks[depth - 1].slice
            assert best is not None
            remove_src = _can_remove_src(graph, src, dst, best, ins_point, escaping, func)
            private = [
                m for m in memrefs if _can_privatize(graph, m, escaping, src, dst, remove_src)
            ]
            dst_before = graph.nodes[dst].op
            fused = fuse_loops(func, src_pos, dst_pos, best)
            new_dst = _new_nest(graph.block, fused.body)
            graph.block = list(fused.body)
            graph.nodes[dst].op = new_dst
            changed = True
            if ins_point is not dst_before:
                graph.block.remove(new_dst)
                graph.block.insert(graph.block.index(ins_point), new_dst)
            graph.update_edges(src, dst, set(private), remove_src)
            for memref in _first_store_order(graph, dst, private):
                old_block = list(graph.block)
                after = create_private_memref(graph.func(), graph.pos(dst), memref, depth)
                new_alloc = after.body[0]
                assert isinstance(new_alloc, Alloc)
                graph.block = list(after.body)
                graph.nodes[dst].op = _new_nest(old_block, after.body)
                nid = graph.add_node(new_alloc)
                graph.add_edge(nid, dst, new_alloc.result)
            if remove_src:
                graph.block = [s for s in graph.block if s is not graph.nodes[src].op]
                graph.remove_node(src)
            run.steps.append(
                FusionStep(
                    graph.labels.get(src, f"node{src}"),
                    graph.labels.get(dst, f"node{dst}"),
                    depth,
                    tuple(memrefs),
                    tuple(private),
                    remove_src,
                    analysis,
                    graph.func(),
                )
            )


def _first_store_order(graph: _Graph, dst: int, memrefs: Sequence[str]) -> list[str]:
    order: list[str] = []
    for a in graph.stores(dst):
        if a.memref in memrefs and a.memref not in order:
            order.append(a.memref)
    return order + [m for m in memrefs if m not in order]


def _can_remove_src(
    graph: _Graph,
    src: int,
    dst: int,
    the_slice: Slice,
    ins_point: Stmt,
    escaping: set[str],
    func: Function,
) -> bool:
    """MLIR's canRemoveSrcNodeAfterFusion."""
    has_out = False
    ins = graph.index_of(ins_point)
    for e in graph.out_edges.get(src, []):
        if e.id == dst:
            continue
        dep_op = graph.nodes[e.id].op
        if ins_point is not dep_op and ins >= graph.index_of(dep_op):
            return False
        has_out = True
    if has_out or escaping:
        maximal = is_slice_maximal(the_slice, dst_prefix_loops(func, the_slice))
        if not maximal:
            return False
    return True


def _can_privatize(
    graph: _Graph, memref: str, escaping: set[str], src: int, dst: int, remove_src: bool
) -> bool:
    """MLIR's canCreatePrivateMemRef."""
    if memref in escaping and (remove_src or graph.stores(dst, memref)):
        return False
    if graph.incoming_memref_accesses(src, memref) > 0 or graph.out_edge_count(dst, memref) > 0:
        return False
    return not (
        remove_src and any(e.value == memref and e.id != dst for e in graph.out_edges.get(src, []))
    )


def _producer_consumer_phase(
    graph: _Graph, max_src_users: int, opts: FusionOptions, run: FusionRun
) -> None:
    worklist = graph.order.keys()
    while worklist:
        dst = worklist.pop()
        _perform_fusions_into(graph, dst, max_src_users, opts, run)


def _erase_unused_allocs(graph: _Graph) -> None:
    used: set[str] = set()
    for _, s, _ in walk(tuple(graph.block)):
        used.update(used_names(s))
    graph.block = [
        s
        for s in graph.block
        if not (
            isinstance(s, Alloc) and s.result not in used and graph.edge_count.get(s.result, 0) <= 0
        )
    ]


def fuse(func: Function, options: FusionOptions | None = None) -> FusionRun:
    """Run producer-consumer fusion on ``func`` as ``mlir-opt --affine-loop-fusion``.

    See the module docstring for what is modelled (no sibling fusion).
    """
    opts = options or FusionOptions()
    func = uniquify(func)
    run = FusionRun(func)
    if len(func.nests) < 2:
        return run
    graph = _Graph(func)
    unlimited = 1 << 31
    if opts.mode == "producer":
        _producer_consumer_phase(graph, unlimited, opts, run)
    else:
        _producer_consumer_phase(graph, 1, opts, run)
        _producer_consumer_phase(graph, unlimited, opts, run)
    _erase_unused_allocs(graph)
    run.function = graph.func()
    return run
