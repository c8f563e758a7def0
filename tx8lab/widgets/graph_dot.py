"""The graph view's pure part: a module (plus an overlay) as Graphviz DOT text.

Spec: the graph view and shared/reference/rendering.md (DOT built with the
``graphviz`` package, no binary needed to build it). :func:`module_to_dot` is all a
headless report needs; the widget (:mod:`tx8lab.widgets.graph_view`) adds layout,
hover, click and re-colouring on top.

Readings chosen:

- **One node per op**, named by its stable id: DOT node ``op12`` becomes ``<g id="op12">``
  in the SVG, so a colour map keyed by op id re-colours the drawing without a new layout,
  and a graph diff by op id marks the same node in every pass. Function arguments are
  ``in0``, ``in1`` ...; the function's return is ``out`` (``f1_in0`` ... when a module has
  several functions).
- **Groups are clusters** (``subgraph cluster_<id>``, SVG id ``grp<id>``): the region of a
  ``tx8be.Group`` is drawn inside a box; edges go from the producer outside straight to the
  member that reads the group's block argument, and from the member that produces a group
  result to its users. A *collapsed* group is one node ``op<id>`` (a 3-D box with its member
  count) that every edge of its members attaches to. Above ``collapse_above`` ops (800 by
  default; rendering.md: beyond ~1000 nodes a full drawing is slow and unreadable) every
  group starts collapsed.
- **ChannelNorms** are hexagons with a bold dark-red border, labelled with the layout they
  produce (``to ALIGN`` for ``direction = true``, see ``layout_align_npu.py``).
- **Constants are dimmed**: small font, grey dashed border, fill at 40 % opacity (the fill
  colour itself still comes from the overlay, so re-colouring keeps the dimming).
- **Removed ops** (``ghost``: the module before a pass) are drawn dashed with their old
  edges, so a graph diff shows what a pass erased next to what it added.
- Edge labels (tensor type) are off by default: they make dot about 5x slower
  (rendering.md).
- **Big drawings** (more than ``COLLAPSE_ABOVE`` nodes) use cheaper layout settings
  (:data:`FAST_LAYOUT`) and cut long edges: an edge spanning more than :data:`LONG_EDGE`
  nodes in program order (a rotary table or mask read by every layer) starts from a small
  ``from %N`` stub next to its user instead of crossing every rank between. A 5k-op
  transformer stack then lays out in ~1 s instead of ~100 s (``widgets/bench.py``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tx8lab.core.ir import TERMINATORS, Module, Op, Value
from tx8lab.widgets.overlays import MISSING_COLOR, Overlay, alignment_overlay

ValueKey = tuple[int, int, bool]

#: Above this many ops (nested ones included) a view starts with every group collapsed.
COLLAPSE_ABOVE = 800

#: In views above ``COLLAPSE_ABOVE`` nodes, an edge spanning more nodes than this (in
#: program order) is drawn from a "from %N" stub next to its user.
LONG_EDGE = 60

#: Graph attributes for views above ``COLLAPSE_ABOVE`` nodes (measured in ``bench.py``).
FAST_LAYOUT: dict[str, str] = {
    "nslimit": "0.1",
    "nslimit1": "0.1",
    "mclimit": "0.1",
    "searchsize": "10",
    "splines": "line",
}

CONSTANT_KINDS = frozenset({"tx8be.Constant", "tx8be.LoadConst"})
CHANNEL_NORM = "tx8be.ChannelNorm"
GROUP = "tx8be.Group"

#: Border of a marked node (graph diff): colour, pen width.
MARK_STYLE: dict[str, tuple[str, str]] = {
    "added": ("#1b7f3b", "3"),
    "changed": ("#d35400", "3"),
    "removed": ("#c0392b", "2"),
}


@dataclass
class ViewNode:
    """One drawn node: an op, a collapsed group, a function input or its return."""

    name: str
    """DOT node name and SVG id (``op12``, ``in0``, ``out``)."""
    role: str
    """``op``, ``group`` (collapsed), ``input``, ``output`` or ``removed``."""
    op: Op | None
    """The op (None for inputs and outputs)."""
    cluster: int | None
    """Id of the innermost expanded group drawn around it."""
    detail: str = ""
    """Second label line (result type, input type)."""


@dataclass
class ViewGraph:
    """Nodes, edges and clusters to draw: the module with some groups collapsed."""

    nodes: dict[str, ViewNode] = field(default_factory=dict)
    edges: dict[tuple[str, str], Value | None] = field(default_factory=dict)
    """(source, target) -> the value that flows (first one when several do)."""
    clusters: dict[int, tuple[Op, int | None]] = field(default_factory=dict)
    """Expanded group id -> (group op, id of the expanded group around it)."""
    drawn: dict[int, str] = field(default_factory=dict)
    """Op id -> the node it is drawn as (its own, or its collapsed group's)."""

    @property
    def op_nodes(self) -> list[ViewNode]:
        """Nodes that stand for ops or collapsed groups."""
        return [n for n in self.nodes.values() if n.op is not None]


def _type_text(value: Value) -> str:
    shape = "x".join(str(d) for d in value.type.shape) or "scalar"
    return f"{shape} {value.type.dtype}"


def _result_text(op: Op) -> str:
    if len(op.results) == 1:
        return _type_text(op.results[0])
    return f"{len(op.results)} results" if op.results else ""


def group_ids(module: Module) -> list[int]:
    """Ids of every ``tx8be.Group``, outer ones first."""
    return [op.id for op in module.walk() if op.kind == GROUP]


def groups_to_collapse(
    module: Module, collapse_above: int = COLLAPSE_ABOVE, expanded: Collection[int] = ()
) -> frozenset[int]:
    """The groups a view draws as one node: all but ``expanded`` above ``collapse_above`` ops."""
    if module.num_ops <= collapse_above:
        return frozenset()
    return frozenset(g for g in group_ids(module) if g not in expanded)


def build_view(module: Module, collapsed: Collection[int] = ()) -> ViewGraph:
    """What to draw for ``module`` with the groups in ``collapsed`` drawn as one node each."""
    view = ViewGraph()
    many = len(module.functions) > 1
    for index, func in enumerate(module.functions):
        prefix = f"f{index}_" if many else ""
        source: dict[ValueKey, str] = {}
        for i, arg in enumerate(func.args):
            name = f"{prefix}in{i}"
            view.nodes[name] = ViewNode(name, "input", None, None, _type_text(arg))
            source[arg.key] = name
        _add_block(view, func.ops, None, None, source, frozenset(collapsed))
        name = f"{prefix}out"
        view.nodes[name] = ViewNode(name, "output", None, None)
        for value in func.body.terminator.operands:
            _add_edge(view, source.get(value.key), name, value)
    return view


def _add_edge(view: ViewGraph, src: str | None, dst: str, value: Value) -> None:
    if src is not None and src != dst and (src, dst) not in view.edges:
        view.edges[(src, dst)] = value


def _add_block(
    view: ViewGraph,
    ops: Iterable[Op],
    cluster: int | None,
    collapsed_into: str | None,
    source: dict[ValueKey, str],
    collapsed: frozenset[int],
) -> None:
    for op in ops:
        if op.kind in TERMINATORS:
            continue
        if collapsed_into is not None:
            # inside a collapsed group: drawn as the group's node
            view.drawn[op.id] = collapsed_into
            for region in op.regions:
                _add_block(view, region.ops, cluster, collapsed_into, source, collapsed)
            continue
        name = f"op{op.id}"
        if op.kind == GROUP and op.regions and op.id not in collapsed:
            region = op.regions[0]
            view.clusters[op.id] = (op, cluster)
            for arg, outer in zip(region.args, op.operands, strict=False):
                if outer.key in source:
                    source[arg.key] = source[outer.key]
            _add_block(view, region.ops, op.id, None, source, collapsed)
            returned = region.ops[-1].operands if region.ops else ()
            for result, inner in zip(op.results, returned, strict=False):
                if inner.key in source:
                    source[result.key] = source[inner.key]
            continue
        role = "group" if op.kind == GROUP else "op"
        view.nodes[name] = ViewNode(name, role, op, cluster, _result_text(op))
        view.drawn[op.id] = name
        for value in op.operands:
            _add_edge(view, source.get(value.key), name, value)
        for result in op.results:
            source[result.key] = name
        if role == "group":
            for region in op.regions:
                _add_block(view, region.ops, cluster, name, source, collapsed)


def add_ghost(view: ViewGraph, before: Module, collapsed: Collection[int] = ()) -> list[int]:
    """Add the ops of ``before`` that ``view`` lacks as ``removed`` nodes with their edges.

    Returns the ids of the removed ops added.
    """
    old = build_view(before, collapsed)
    present = set(view.drawn)
    removed = [n.op.id for n in old.nodes.values() if n.op is not None and n.op.id not in present]
    ghost_names = {f"op{i}" for i in removed}
    for op_id in removed:
        node = old.nodes[f"op{op_id}"]
        view.nodes[node.name] = ViewNode(node.name, "removed", node.op, None, node.detail)

    def now(name: str) -> str | None:
        if name in ghost_names or name in view.nodes:
            return name
        if name.startswith("op") and name[2:].isdigit():
            return view.drawn.get(int(name[2:]))
        return None

    for (src, dst), value in old.edges.items():
        if src not in ghost_names and dst not in ghost_names:
            continue
        a, b = now(src), now(dst)
        if a is not None and b is not None and value is not None:
            _add_edge(view, a, b, value)
    return removed


# --------------------------------------------------------------------------- text


def attr_text(value: Any, limit: int = 120) -> str:
    """A short readable form of an attribute value (arrays as their shape, no bytes).

    Examples:
        >>> attr_text((1, 2)), attr_text(np.zeros((2, 3), np.float16))
        ('[1, 2]', 'dense 2x3 float16')
    """
    import dataclasses
    import enum

    if isinstance(value, np.ndarray):
        text = f"dense {'x'.join(map(str, value.shape)) or 'scalar'} {value.dtype}"
    elif isinstance(value, enum.Enum):
        text = str(value.value)
    elif isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, tuple):
        text = "[" + ", ".join(attr_text(v, limit) for v in value) + "]"
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        # only the fields that differ from the defaults (dev_info has nine)
        parts = []
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if f.default is not dataclasses.MISSING and v == f.default:
                continue
            parts.append(f"{f.name}={attr_text(v, limit)}")
        text = f"{type(value).__name__}({', '.join(parts)})"
    elif isinstance(value, float):
        text = f"{value:.6g}"
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def op_info(op: Op) -> dict[str, str]:
    """What hovering over the op shows: kind, types, operands, attributes, creator."""
    info = {"op": op.label}
    if op.operands:
        info["operands"] = ", ".join(_operand_name(v) for v in op.operands)
    if op.results:
        info["results"] = ", ".join(str(r.type) for r in op.results)
    for key in sorted(op.attrs):
        info[key] = attr_text(op.attrs[key])
    if op.kind == CHANNEL_NORM:
        info["converts to"] = _norm_target(op)
    if op.kind == GROUP and op.regions:
        members = [o for o in op.regions[0].ops if o.kind not in TERMINATORS]
        info["members"] = ", ".join(f"%{o.id}" for o in members[:40]) + (
            " …" if len(members) > 40 else ""
        )
    info["created_by"] = op.created_by or "the input model"
    return info


def _operand_name(value: Value) -> str:
    if value.is_arg:
        return f"arg{value.index}" if value.owner < 0 else f"%{value.owner} arg {value.index}"
    return f"%{value.owner}" if value.index == 0 else f"%{value.owner}#{value.index}"


def _norm_target(op: Op) -> str:
    return "ALIGN (direction=true)" if op.attrs.get("direction") else "NALIGN (direction=false)"


def _member_count(op: Op) -> int:
    return sum(1 for o in op.walk() if o.kind not in TERMINATORS) - 1


def _clean(text: str) -> str:
    """Text from the IR for a label: a backslash would start a DOT escape sequence."""
    return text.replace("\\", "/")


# --------------------------------------------------------------------------- DOT


def view_to_dot(
    view: ViewGraph,
    overlay: Overlay | None = None,
    *,
    marks: Mapping[int, str] | None = None,
    edge_labels: bool = False,
    title: str | None = None,
) -> str:
    """DOT text for a :class:`ViewGraph`, built with the ``graphviz`` package."""
    import graphviz

    marks = marks or {}
    many = len(view.nodes) > COLLAPSE_ABOVE
    # big graphs: an edge spanning more than LONG_EDGE nodes (a shared constant, a mask read
    # by every layer) becomes a short edge from a small "from %N" stub next to its user;
    # dot would otherwise thread it through every rank between (the 5k stack: 260k
    # virtual nodes, 100 s)
    position = {name: i for i, name in enumerate(view.nodes)}
    stubs: dict[int | None, list[tuple[str, str]]] = {}
    edges: list[tuple[str, str, Value | None, bool]] = []
    for (src, dst), value in view.edges.items():
        a, b = view.nodes[src], view.nodes[dst]
        far = many and position[dst] - position[src] > LONG_EDGE
        if far and "removed" not in (a.role, b.role):
            stub = f"px-{src}-{dst}"
            stubs.setdefault(b.cluster, []).append((stub, src))
            edges.append((stub, dst, value, True))
        else:
            edges.append((src, dst, value, False))
    graph = graphviz.Digraph(
        "tx8lab",
        graph_attr={
            "rankdir": "TB",
            "nodesep": "0.2",
            "ranksep": "0.3",
            "fontname": "Helvetica",
            "fontsize": "10",
            "bgcolor": "white",
            **({"label": _clean(title), "labelloc": "t"} if title else {}),
            # big graphs: far fewer network-simplex and mincross iterations, straight
            # edges (a 5k-op transformer stack: 1.0 s instead of 2.6 s with Graphviz 16)
            **(FAST_LAYOUT if many else {}),
        },
        node_attr={
            "shape": "box",
            "style": "rounded,filled",
            "fontname": "Helvetica",
            "fontsize": "10",
            "height": "0.3",
            "margin": "0.06,0.03",
        },
        edge_attr={
            "color": "#666666",
            "arrowsize": "0.6",
            "fontsize": "8",
            "fontname": "Helvetica",
        },
    )
    by_cluster: dict[int | None, list[ViewNode]] = {}
    for node in view.nodes.values():
        by_cluster.setdefault(node.cluster, []).append(node)
    children: dict[int | None, list[int]] = {}
    for gid, (_, parent) in view.clusters.items():
        children.setdefault(parent, []).append(gid)

    def emit(container: Any, cluster: int | None) -> None:
        for node in by_cluster.get(cluster, ()):
            container.node(node.name, **_node_attrs(node, overlay, marks))
        for stub, src in stubs.get(cluster, ()):
            source = view.nodes[src]
            what = f"%{source.op.id}" if source.op is not None else source.name
            container.node(
                stub,
                id=stub,
                label=f"from {what}",
                shape="cds",
                style="filled",
                fillcolor="white",
                fontsize="8",
                height="0.2",
                **{"class": "stub"},
            )
        for gid in children.get(cluster, ()):
            op = view.clusters[gid][0]
            with container.subgraph(name=f"cluster_{gid}") as sub:
                sub.attr(
                    id=f"grp{gid}",
                    label=_group_title(op),
                    style="rounded,dashed",
                    color="#888888",
                    fontcolor="#555555",
                    fontsize="10",
                    **{"class": "group"},
                )
                emit(sub, gid)

    emit(graph, None)
    for src, dst, value, stubbed in edges:
        attrs: dict[str, str] = {}
        if edge_labels and value is not None:
            attrs["label"] = _type_text(value)
        if stubbed:
            attrs["style"] = "dashed"
        elif view.nodes[src].role == "removed" or view.nodes[dst].role == "removed":
            attrs.update(style="dashed", color=MARK_STYLE["removed"][0])
        graph.edge(src, dst, **attrs)
    return str(graph.source)


def _group_title(op: Op) -> str:
    extra = [
        _clean(f"{k}={v}")
        for k, v in sorted(op.attrs.items())
        if isinstance(v, str | int) and len(str(v)) < 30
    ]
    head = f"%{op.id} Group ({_member_count(op)} ops)"
    return head + ("\\n" + ", ".join(extra[:3]) if extra else "")


def _node_attrs(
    node: ViewNode, overlay: Overlay | None, marks: Mapping[int, str]
) -> dict[str, str]:
    op = node.op
    if op is None:
        text = f"input {node.name.rsplit('in', 1)[-1]}" if node.role == "input" else "return"
        label = text + (f"\\n{node.detail}" if node.detail else "")
        shape = "ellipse" if node.role == "input" else "invhouse"
        return {
            "id": node.name,
            "label": label,
            "shape": shape,
            "style": "filled",
            "fillcolor": "white",
            "class": f"io {node.role}",
        }
    fill = overlay.color(op.id) if overlay is not None else MISSING_COLOR
    classes = ["op", f"k-{op.name}"]
    label = f"%{op.id} {op.name}"
    attrs: dict[str, str] = {"id": node.name}
    if op.kind == CHANNEL_NORM:
        target = "ALIGN" if op.attrs.get("direction") else "NALIGN"
        label += f"\\nto {target}"
        classes.append("cn")
        attrs.update(shape="hexagon", style="filled,bold", penwidth="2", color="#8b1a1a")
    elif op.kind in CONSTANT_KINDS:
        classes.append("const")
        fill = fill + "66"
        attrs.update(
            style="rounded,filled,dashed", color="#aaaaaa", fontcolor="#777777", fontsize="8"
        )
    elif node.role == "group":
        classes += ["group", "collapsed"]
        label = f"%{op.id} Group\\n{_member_count(op)} ops (click to expand)"
        attrs.update(shape="box3d", style="filled", penwidth="1.5")
    if node.detail and node.role != "group":
        label += f"\\n{node.detail}"
    mark = "removed" if node.role == "removed" else marks.get(op.id)
    if mark is not None:
        classes.append(mark)
        color, width = MARK_STYLE.get(mark, ("#000000", "2"))
        attrs.update(color=color, penwidth=width)
        if mark == "removed":
            label = f"removed: {label}"
            attrs["style"] = attrs.get("style", "rounded,filled") + ",dashed"
            attrs["fontcolor"] = "#8b1a1a"
    attrs.update(label=label, fillcolor=fill, **{"class": " ".join(classes)})
    return attrs


def module_to_dot(
    module: Module,
    overlay: Overlay | None = None,
    *,
    collapsed: Collection[int] | None = None,
    collapse_above: int = COLLAPSE_ABOVE,
    expanded: Collection[int] = (),
    edge_labels: bool = False,
    marks: Mapping[int, str] | None = None,
    ghost: Module | None = None,
    title: str | None = None,
) -> str:
    """DOT text for ``module`` coloured by ``overlay`` (default: alignment).

    Args:
        module: The module to draw.
        overlay: Colours per op id; :func:`~tx8lab.widgets.overlays.alignment_overlay`
            when None.
        collapsed: Group ids drawn as one node; None: every group when the module has more
            than ``collapse_above`` ops, except those in ``expanded``.
        collapse_above: Op count above which groups start collapsed.
        expanded: Groups kept open when collapsing automatically.
        edge_labels: Label edges with the tensor type (slow on big graphs).
        marks: Op id -> ``added`` / ``changed``: a coloured border (graph diff).
        ghost: The module before a pass: its ops missing here are drawn as removed.
        title: A caption on top.

    Examples:
        >>> from tx8lab.core import zoo
        >>> dot = module_to_dot(zoo.layout_align_demo())
        >>> dot.count('class="op '), "cluster" in dot
        (20, False)
    """
    if overlay is None:
        overlay = alignment_overlay(module)
    if collapsed is None:
        collapsed = groups_to_collapse(module, collapse_above, expanded)
    view = build_view(module, collapsed)
    if ghost is not None:
        add_ghost(view, ghost, collapsed)
    return view_to_dot(view, overlay, marks=marks, edge_labels=edge_labels, title=title)


__all__ = [
    "COLLAPSE_ABOVE",
    "ViewGraph",
    "ViewNode",
    "add_ghost",
    "attr_text",
    "build_view",
    "group_ids",
    "groups_to_collapse",
    "module_to_dot",
    "op_info",
    "view_to_dot",
]
