"""The hardware dataflow graph (HDFG): its file format, its op map and FindMatch.

Spec: seed 002 (fuse_op_hw: ``HDFG::Create``, ``HDFG::FindMatch``). group-hdfg
(:mod:`tx8lab.core.passes.group_hdfg`) matches ops onto this graph; the model lives here
so that notebooks and views can load and query a graph without the pass.

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
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from tx8lab.core.grouping import is_compute
from tx8lab.core.ir import Op, full_kind
from tx8lab.errors import Tx8labError

#: Where the shipped graphs live: ``hdfg_<name>.txt``.
DATA_DIR = Path(__file__).resolve().parent / "data"


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


__all__ = ["DATA_DIR", "HDFG", "HDFGNode", "hdfg_path", "load_hdfg", "parse_hdfg"]
