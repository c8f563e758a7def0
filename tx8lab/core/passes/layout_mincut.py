"""Exact minimum-ChannelNorm coloring for LayoutAlignToNPU, solved as an s-t minimum cut.

Spec: seed 000 (LayoutAlignToNPU pass design), principles "insert as few ChannelNorm as
possible" and "prefer NALIGN, it uses less memory". The seed's greedy walk follows parent
colors; this module finds the coloring with the fewest ChannelNorm exactly, by one
maximum flow on a network with two auxiliary nodes per value, and breaks ties towards NALIGN.
It is a pure helper with no IR: the layout-align pass builds a :class:`ColoringProblem`
(ALIGN-only and NALIGN-only ops fixed, BOTH ops free) and inserts ChannelNorm where
:func:`conflicting_nets` says.

Readings chosen where the seed is vague:

- A ChannelNorm belongs to a value (a *net*: the producer and every op that reads it), not
  to a (producer, user) edge: every user whose color differs from the producer's needs the
  same conversion, since there are only two colors, so they share one ChannelNorm. The
  seed's ``insertPoint_`` records one point per user operand; one per value is never more.
- A multi-result op gives one net per result, all with the same producer; each result that
  clashes gets its own ChannelNorm.
- A consumer listed twice, or a producer listed among its own consumers, changes nothing:
  a net is the *set* ``{producer} | consumers``. A net whose set has one node costs 0.
- Function outputs must be NALIGN; the caller adds a fixed NALIGN pseudo-consumer for them
  (nothing here is special-cased).
- Ties: among all colorings with the fewest ChannelNorm, the one returned has the fewest
  ALIGN nodes, and it is unique: a free node is ALIGN only if it is ALIGN in *every*
  optimal coloring (seed: "尽可能使用非对齐的模式"). Free nodes in no net are NALIGN.
- The names ``ColoringProblem``/``colors`` follow the brief of the pass that calls this
  module, not STYLE.md's "color"; the pass-facing API was fixed first.

Why the minimum cut is the minimum cost (nodes on the source side are ALIGN, nodes on the
sink side NALIGN). For a net ``e`` let ``S_e = {producer} | consumers`` and call ``e`` *kept*
when ``|S_e| >= 2`` and some node of ``S_e`` is free; let ``K`` be the number of kept nets
and ``INF = 2K + 1``. The network has ``s``, ``t``, one vertex per op and, per kept net,
``a_e`` with ``s -> a_e`` (capacity 1) and ``a_e -> v`` (INF) for ``v`` in ``S_e``, and
``b_e`` with ``v -> b_e`` (INF) and ``b_e -> t`` (1). A fixed ALIGN node gets ``s -> v``
(INF), a fixed NALIGN node ``v -> t`` (INF).

1. Fix a coloring ``x`` that respects the fixed nodes and place the op vertices by it. No
   terminal edge is cut. Putting ``a_e`` on the source side costs 0 on ``s -> a_e`` but cuts
   an INF edge ``a_e -> v`` for every NALIGN ``v`` in ``S_e``; putting it on the sink side
   costs 1. So the cheapest place for ``a_e`` costs exactly ``[some node of S_e is
   NALIGN]``, and likewise ``b_e`` costs ``[some node of S_e is ALIGN]``. As ``S_e`` is
   not empty, the two brackets sum to ``1 + [S_e is not monochromatic]`` = ``1 + cost_e(x)``.
   The auxiliary vertices of different nets are independent, so the cheapest cut that
   colors the ops as ``x`` has capacity ``K + C(x)``, where ``C(x)`` sums ``cost_e`` over
   kept nets; this is at most ``2K`` because ``cost_e <= 1``.
2. A cut that crosses an INF edge has capacity at least ``INF = 2K + 1 > 2K``, more than the
   cut of step 1 for any respecting coloring (one exists: free nodes all NALIGN). So a
   minimum cut crosses no INF edge: its op coloring respects the fixed nodes, and by step 1
   its capacity is ``K + C(x)`` for that ``x`` and at least ``K + C(y)`` for every other
   respecting ``y``. Hence ``min cut = K + min C``, and the op side of every minimum cut is
   an optimal coloring. (``K + 1`` would also do as INF, with a longer argument; ``2K + 1``
   keeps it one line and is far from int32's limit.)
3. Nets that are not kept do not depend on the free nodes: a one-node net costs 0 and a
   net of fixed nodes costs a constant. Minimising ``C`` therefore minimises the total.
4. Ties. Let ``R`` be the vertices reachable from ``s`` over residual edges (capacity minus
   flow > 0, reverse edges included) of a maximum flow. ``R`` is the source side of a
   minimum cut, and ``R`` lies inside the source side ``X`` of every minimum cut: the edges
   leaving ``X`` are saturated and those entering it carry no flow (its capacity equals the
   flow value), so no residual edge leaves ``X``. Every optimal coloring has a minimum cut
   by step 1, so the free nodes in ``R`` are ALIGN in every optimal coloring, and ``R``'s
   own coloring is optimal: it is the unique optimum with the fewest ALIGN nodes. A free
   node in no kept net has no edge at all, so it is not in ``R``: NALIGN.

The network has ``n + 2 + 2K`` vertices and ``sum(2 |S_e| + 2)`` edges plus one per fixed
node in a kept net; :func:`scipy.sparse.csgraph.maximum_flow` (Dinic) solves it and
:func:`scipy.sparse.csgraph.breadth_first_order` finds ``R``. :func:`bench` measures it.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, maximum_flow

from tx8lab.errors import Tx8labError

#: ``solve_brute_force`` refuses ``max_free`` above this: 2**24 colorings is its memory limit.
MAX_ENUMERABLE_FREE = 24


@dataclass(frozen=True)
class ColoringProblem:
    """Ops to color ALIGN (``True``) or NALIGN (``False``), and the values they share.

    Checked and copied on construction (nets become tuples, ``fixed`` a read-only mapping),
    so a problem cannot change under a solver; bad input raises :class:`Tx8labError`
    naming the net or node.
    """

    num_nodes: int
    """Ops are ``0 .. num_nodes - 1``. Set by the caller (the layout-align pass)."""
    fixed: Mapping[int, bool]
    """Node -> its required color: ``True`` for ALIGN-only ops, ``False`` for NALIGN-only
    ops (inputs, the output pseudo-consumer). Nodes not listed (BOTH ops) are free."""
    nets: Sequence[tuple[int, Sequence[int]]]
    """``(producer, consumers)``, one per produced value. Costs one ChannelNorm when some
    consumer's color differs from the producer's."""

    def __post_init__(self) -> None:
        n = self.num_nodes
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
            raise Tx8labError(f"num_nodes must be an int >= 0, got {n!r}")
        n = int(n)
        if not isinstance(self.fixed, Mapping):
            raise Tx8labError(
                f"fixed must map node -> bool, got {type(self.fixed).__name__}; "
                "e.g. {0: False, 3: True}"
            )
        fixed: dict[int, bool] = {}
        for node, color in self.fixed.items():
            v = _node(node, n, "fixed")
            if not isinstance(color, bool):
                raise Tx8labError(
                    f"fixed node {v}: color must be True (ALIGN) or False (NALIGN), got {color!r}"
                )
            fixed[v] = color
        nets: list[tuple[int, tuple[int, ...]]] = []
        if isinstance(self.nets, str | bytes) or not isinstance(self.nets, Sequence):
            raise Tx8labError(
                f"nets must be a sequence of (producer, consumers), got {self.nets!r}"
            )
        for index, net in enumerate(self.nets):
            if isinstance(net, str | bytes) or not isinstance(net, Sequence) or len(net) != 2:
                raise Tx8labError(f"net {index}: expected (producer, consumers), got {net!r}")
            producer, consumers = net
            p = _node(producer, n, f"net {index}: producer")
            if isinstance(consumers, str | bytes) or not isinstance(
                consumers, Sequence | np.ndarray
            ):
                raise Tx8labError(
                    f"net {index}: consumers must be a sequence of node indices, got {consumers!r}"
                )
            cs = tuple(_node(c, n, f"net {index}: consumer") for c in consumers)
            nets.append((p, cs))
        object.__setattr__(self, "num_nodes", n)
        object.__setattr__(self, "fixed", MappingProxyType(fixed))
        object.__setattr__(self, "nets", tuple(nets))

    @property
    def free_nodes(self) -> list[int]:
        """Nodes not in ``fixed``, ascending."""
        return [v for v in range(self.num_nodes) if v not in self.fixed]


def _node(value: Any, num_nodes: int, where: str) -> int:
    """``value`` as a node index, or an error naming ``where`` it came from."""
    if type(value) is int and 0 <= value < num_nodes:  # the common case, checked fast
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise Tx8labError(f"{where}: node index must be an int, got {value!r}")
    v = int(value)
    if not 0 <= v < num_nodes:
        valid = f"0..{num_nodes - 1}" if num_nodes else "none: num_nodes is 0"
        raise Tx8labError(f"{where}: node {v} is out of range (valid: {valid})")
    return v


def _net_nodes(net: tuple[int, Sequence[int]]) -> tuple[int, ...]:
    """The distinct nodes of a net, producer first."""
    producer, consumers = net
    return tuple(dict.fromkeys((producer, *consumers)))


def _check_colors(problem: ColoringProblem, colors: Sequence[bool]) -> None:
    if len(colors) != problem.num_nodes:
        raise Tx8labError(
            f"coloring has {len(colors)} colors for {problem.num_nodes} nodes; "
            "give one bool per node"
        )
    for v, c in enumerate(colors):
        if not isinstance(c, bool | np.bool_):
            raise Tx8labError(f"node {v}: color must be a bool, got {c!r}")
    for v, c in problem.fixed.items():
        if bool(colors[v]) != c:
            want = "ALIGN (True)" if c else "NALIGN (False)"
            raise Tx8labError(f"node {v} is fixed {want} but the coloring gives {colors[v]!r}")


def conflicting_nets(problem: ColoringProblem, colors: Sequence[bool]) -> list[int]:
    """Indices of the nets that need a ChannelNorm under ``colors``, ascending.

    Examples:
        >>> p = ColoringProblem(3, {0: False, 2: True}, [(0, [1]), (1, [2])])
        >>> conflicting_nets(p, [False, False, True])
        [1]
    """
    _check_colors(problem, colors)
    found = []
    for index, (producer, consumers) in enumerate(problem.nets):
        mine = bool(colors[producer])
        if any(bool(colors[c]) != mine for c in consumers):
            found.append(index)
    return found


def cost(problem: ColoringProblem, colors: Sequence[bool]) -> int:
    """ChannelNorms needed when ops are colored ``colors`` (one per clashing net).

    Raises :class:`Tx8labError` when ``colors`` has the wrong length, holds a non-bool or
    contradicts a fixed node.

    Examples:
        >>> p = ColoringProblem(4, {0: True}, [(0, [1, 2]), (1, [3])])
        >>> cost(p, [True, False, False, False]), cost(p, [True, True, True, True])
        (1, 0)
    """
    return len(conflicting_nets(problem, colors))


@dataclass(frozen=True)
class _Network:
    """The flow network of the module docstring, as a CSR capacity matrix."""

    capacity: csr_matrix
    source: int
    sink: int
    kept_nets: int
    constant_cost: int
    """ChannelNorms of nets made only of fixed nodes (the same for every coloring)."""


def _build_network(problem: ColoringProblem) -> _Network:
    n = problem.num_nodes
    fixed = problem.fixed
    source, sink = n, n + 1
    heads: list[int] = []
    tails: list[int] = []
    caps: list[int] = []
    kept: list[tuple[int, ...]] = []
    constant_cost = 0
    for net in problem.nets:
        nodes = _net_nodes(net)
        if len(nodes) < 2:
            continue
        if all(v in fixed for v in nodes):
            constant_cost += len({fixed[v] for v in nodes}) - 1
            continue
        kept.append(nodes)
    inf = 2 * len(kept) + 1
    terminal: set[int] = set()
    for index, nodes in enumerate(kept):
        a = n + 2 + 2 * index
        b = a + 1
        # a_e: cut (cost 1) unless every node of the net is ALIGN
        heads.append(source)
        tails.append(a)
        caps.append(1)
        # b_e: cut (cost 1) unless every node of the net is NALIGN
        heads.append(b)
        tails.append(sink)
        caps.append(1)
        for v in nodes:
            heads += (a, v)
            tails += (v, b)
            caps += (inf, inf)
            if v in fixed:
                terminal.add(v)
    # fixed colors: an uncuttable edge ties the node to its terminal
    for v in sorted(terminal):
        heads.append(source if fixed[v] else v)
        tails.append(v if fixed[v] else sink)
        caps.append(inf)
    size = n + 2 + 2 * len(kept)
    capacity = csr_matrix(
        (
            np.asarray(caps, dtype=np.int32),
            (np.asarray(heads, dtype=np.int64), np.asarray(tails, dtype=np.int64)),
        ),
        shape=(size, size),
    )
    return _Network(capacity, source, sink, len(kept), constant_cost)


def _source_side(network: _Network) -> tuple[npt.NDArray[np.int32], int]:
    """Vertices reachable from s in the residual graph of a maximum flow, and its value."""
    result = maximum_flow(network.capacity, network.source, network.sink)
    # flow is antisymmetric, so capacity - flow also holds the reverse residual edges
    residual = (network.capacity - result.flow).tocsr()
    residual.data[residual.data < 0] = 0
    residual.eliminate_zeros()
    reached = breadth_first_order(
        residual, network.source, directed=True, return_predecessors=False
    )
    return np.asarray(reached, dtype=np.int32), int(result.flow_value)


def solve_optimal(problem: ColoringProblem) -> list[bool]:
    """The coloring with the fewest ChannelNorm; among those, the fewest ALIGN nodes.

    Exact (see the module docstring for the proof). Fixed nodes keep their color; free
    nodes in no net are NALIGN (``False``).

    Examples:
        A NALIGN input feeding two BOTH ops that each feed an ALIGN-only Conv: one shared
        ChannelNorm after the input beats the greedy "follow the parent" coloring's two.

        >>> p = ColoringProblem(5, {0: False, 3: True, 4: True}, [(0, [1, 2]), (1, [3]), (2, [4])])
        >>> colors = solve_optimal(p)
        >>> colors, cost(p, colors)
        ([False, True, True, True, True], 1)
    """
    colors = [False] * problem.num_nodes
    for v, c in problem.fixed.items():
        colors[v] = c
    network = _build_network(problem)
    if network.kept_nets == 0:
        return colors
    reached, flow_value = _source_side(network)
    if network.sink in reached:  # pragma: no cover - would mean the flow is not maximum
        raise AssertionError("layout_mincut: sink reachable after maximum flow")
    for v in reached[reached < problem.num_nodes].tolist():
        if v not in problem.fixed:
            colors[v] = True
    # step 2 of the proof: min cut = kept nets + their cost; a cheap check of the whole chain
    expected = flow_value - network.kept_nets + network.constant_cost
    got = cost(problem, colors)
    if got != expected:  # pragma: no cover - would mean a bug in the construction
        raise AssertionError(f"layout_mincut: cut gives cost {expected}, coloring costs {got}")
    return colors


def solve_brute_force(problem: ColoringProblem, max_free: int = 16) -> list[bool]:
    """The same answer as :func:`solve_optimal`, by trying every coloring (for tests).

    Enumerates the free nodes that appear in a net with two or more distinct nodes (other
    free nodes are NALIGN and change no cost). Picks the least cost, then the fewest ALIGN
    nodes, then the first in enumeration order; by step 4 of the module docstring that
    coloring is unique, so it equals :func:`solve_optimal`'s.

    Raises:
        Tx8labError: more than ``max_free`` free nodes to enumerate, or ``max_free`` above
            ``MAX_ENUMERABLE_FREE``.
    """
    if isinstance(max_free, bool) or not isinstance(max_free, int) or max_free < 0:
        raise Tx8labError(f"max_free must be an int >= 0, got {max_free!r}")
    if max_free > MAX_ENUMERABLE_FREE:
        raise Tx8labError(
            f"max_free={max_free} is above {MAX_ENUMERABLE_FREE}: enumerating that many "
            "colorings does not fit in memory; use solve_optimal"
        )
    fixed = problem.fixed
    nets = [nodes for nodes in map(_net_nodes, problem.nets) if len(nodes) >= 2]
    free = sorted({v for nodes in nets for v in nodes if v not in fixed})
    if len(free) > max_free:
        raise Tx8labError(
            f"solve_brute_force: {len(free)} free nodes in nets, more than max_free={max_free} "
            f"(2**{len(free)} colorings); use solve_optimal"
        )
    column = {v: i for i, v in enumerate(free)}
    count = 1 << len(free)
    # row r, column i: the color of free[i] in coloring r (bit i of r)
    bits = ((np.arange(count)[:, None] >> np.arange(len(free))[None, :]) & 1).astype(bool)
    costs = np.zeros(count, dtype=np.int64)
    for nodes in nets:
        cols = [column[v] for v in nodes if v in column]
        fixed_colors = {fixed[v] for v in nodes if v in fixed}
        any_align = bits[:, cols].any(axis=1) | (True in fixed_colors)
        any_nalign = (~bits[:, cols]).any(axis=1) | (False in fixed_colors)
        costs += any_align & any_nalign
    aligned = bits.sum(axis=1)
    best = int(np.lexsort((np.arange(count), aligned, costs))[0])
    colors = [False] * problem.num_nodes
    for v, c in fixed.items():
        colors[v] = c
    for v, i in column.items():
        colors[v] = bool(bits[best, i])
    return colors


def random_problem(
    num_nodes: int, seed: int = 0, fixed_fraction: float = 0.2, window: int = 16
) -> ColoringProblem:
    """A random DAG-like problem: each op reads 1-3 of the ``window`` ops before it.

    Producers therefore fan out to several consumers; ``fixed_fraction`` of the ops get a
    random fixed color and node 0 (the input) is fixed NALIGN.
    """
    rng = np.random.default_rng(seed)
    readers: list[list[int]] = [[] for _ in range(num_nodes)]
    # up to 3 reads per op (a repeated draw is one read), each 1..window ops back
    reads = rng.choice((1, 1, 2, 2, 3), size=num_nodes).tolist()
    back = rng.integers(1, window + 1, size=(num_nodes, 3)).tolist()
    for v in range(1, num_nodes):
        for u in {max(0, v - d) for d in back[v][: reads[v]]}:
            readers[u].append(v)
    nets = [(u, tuple(cs)) for u, cs in enumerate(readers) if cs]
    chosen = rng.random(num_nodes) < fixed_fraction
    color = rng.random(num_nodes) < 0.5
    fixed = {int(v): bool(color[v]) for v in np.flatnonzero(chosen)}
    if num_nodes:
        fixed[0] = False
    return ColoringProblem(num_nodes, fixed, nets)


def bench(num_nodes: int = 10_000, seed: int = 0) -> dict[str, float]:
    """Time :func:`solve_optimal` on :func:`random_problem` (``num_nodes`` ops, 20% fixed).

    Returns seconds per stage (``problem_s``: build and check the problem; ``network_s``,
    ``flow_s``: the stages inside the solver; ``solve_s``: :func:`solve_optimal` end to
    end) and the sizes and costs: ``cost`` (optimal) against ``nalign_cost`` (every free
    node NALIGN). Prints nothing and never fails on time.
    """
    start = time.perf_counter()
    problem = random_problem(num_nodes, seed)
    problem_s = time.perf_counter() - start
    start = time.perf_counter()
    network = _build_network(problem)
    network_s = time.perf_counter() - start
    start = time.perf_counter()
    if network.kept_nets:
        _source_side(network)
    flow_s = time.perf_counter() - start
    start = time.perf_counter()
    colors = solve_optimal(problem)
    solve_s = time.perf_counter() - start
    nalign = [problem.fixed.get(v, False) for v in range(problem.num_nodes)]
    return {
        "num_nodes": float(problem.num_nodes),
        "num_nets": float(len(problem.nets)),
        "num_fixed": float(len(problem.fixed)),
        "network_vertices": float(network.capacity.shape[0]),
        "network_edges": float(network.capacity.nnz),
        "problem_s": problem_s,
        "network_s": network_s,
        "flow_s": flow_s,
        "solve_s": solve_s,
        "cost": float(cost(problem, colors)),
        "nalign_cost": float(cost(problem, nalign)),
        "aligned_free": float(sum(colors[v] for v in problem.free_nodes)),
    }


__all__ = [
    "MAX_ENUMERABLE_FREE",
    "ColoringProblem",
    "bench",
    "conflicting_nets",
    "cost",
    "random_problem",
    "solve_brute_force",
    "solve_optimal",
]
