"""What a pass changed: a graph diff by stable op id, an IR text diff, a decision table.

Spec: the pass stepper's diffs (IR text diff, graph diff by stable op id, Decisions
as a table). Pure functions over two modules; the pass stepper only displays them.

Readings chosen:

- **Identity is the op id** (``Op.id`` survives passes). An id only in the output is
  *added*, only in the input *removed*; an id in both is *changed* when its kind, result
  types, attributes, creator, enclosing group or operand sources differ.
- **Operand sources** are compared after looking through groups: a group's block argument
  stands for the group's operand, a group result for the member value it returns. So
  outlining ops into a group changes only their ``group``, not their ``operands``; a
  LoadVar inserted in front of an op does change its operands (it reads something else).
- The IR diff is :func:`difflib.unified_diff` on the printed modules (constants elided
  above 64 bytes), two lines of context, rendered as an HTML table; a removed line followed
  by as many added lines gets its changed characters marked. It stops after
  ``max_lines`` lines, saying how many were left out (a pass that touches every op of a
  10k-op module would otherwise produce megabytes).
"""

from __future__ import annotations

import difflib
import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tx8lab.core.ir import TERMINATORS, Module, Op
from tx8lab.core.passes.base import Decision
from tx8lab.widgets.overlays import DIFF_COLORS, Overlay, category_overlay

ValueKey = tuple[int, int, bool]


@dataclass(frozen=True)
class GraphDiff:
    """Ops added, removed and changed between two modules, by stable id."""

    added: tuple[int, ...] = ()
    """Ids only in the output, in output order."""
    removed: tuple[int, ...] = ()
    """Ids only in the input, in input order."""
    changed: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    """Id -> what changed: ``kind``, ``type``, ``operands``, ``group``, ``created_by`` or
    ``attr:<name>`` per attribute."""

    @property
    def marks(self) -> dict[int, str]:
        """Op id -> ``added`` / ``changed`` (for the graph view's borders)."""
        out = {i: "added" for i in self.added}
        out.update({i: "changed" for i in self.changed})
        return out

    def summary(self) -> dict[str, int]:
        """Counts: ``{"added": 3, "removed": 1, "changed": 7}``."""
        return {
            "added": len(self.added),
            "removed": len(self.removed),
            "changed": len(self.changed),
        }


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b))
        )
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _index(module: Module) -> tuple[dict[int, Op], dict[int, int | None], dict[ValueKey, str]]:
    """Ops by id, each op's enclosing group, and each value's source (through groups)."""
    ops: dict[int, Op] = {}
    parent: dict[int, int | None] = {}
    source: dict[ValueKey, str] = {}

    def visit(block_ops: Iterable[Op], group: int | None) -> None:
        for op in block_ops:
            if op.kind in TERMINATORS:
                continue
            ops[op.id] = op
            parent[op.id] = group
            for r in op.results:
                source[r.key] = f"%{op.id}#{r.index}"
            for region in op.regions:
                for arg, outer in zip(region.args, op.operands, strict=False):
                    source[arg.key] = source.get(outer.key, f"?{outer.key}")
                visit(region.ops, op.id)
                returned = region.ops[-1].operands if region.ops else ()
                for r, inner in zip(op.results, returned, strict=False):
                    source[r.key] = source.get(inner.key, f"?{inner.key}")

    for f, func in enumerate(module.functions):
        for i, arg in enumerate(func.args):
            source[arg.key] = f"@{f}:arg{i}"
        visit(func.ops, None)
    return ops, parent, source


def op_changes(
    a: Op, b: Op, src_a: Mapping[ValueKey, str], src_b: Mapping[ValueKey, str]
) -> tuple[str, ...]:
    """What differs between two versions of one op (empty: nothing)."""
    out: list[str] = []
    if a.kind != b.kind:
        out.append("kind")
    if a.result_types != b.result_types:
        out.append("type")
    if [src_a.get(v.key) for v in a.operands] != [src_b.get(v.key) for v in b.operands]:
        out.append("operands")
    if a.created_by != b.created_by:
        out.append("created_by")
    for key in sorted(set(a.attrs) | set(b.attrs)):
        if key not in a.attrs or key not in b.attrs or not _same(a.attrs[key], b.attrs[key]):
            out.append(f"attr:{key}")
    return tuple(out)


def graph_diff(before: Module, after: Module) -> GraphDiff:
    """The ops ``after`` added, removed and changed relative to ``before``.

    Examples:
        >>> from tx8lab.core import zoo
        >>> from tx8lab.core.passes import get_pass
        >>> from tx8lab.hw import TX81
        >>> m = zoo.tiny_cnn()
        >>> d = graph_diff(m, get_pass("layout-init")().run(m, TX81).module)
        >>> d.summary()["added"], sorted({c for cs in d.changed.values() for c in cs})
        (0, ['attr:layout_str'])
    """
    if before is after:
        return GraphDiff()
    ops_b, parent_b, src_b = _index(before)
    ops_a, parent_a, src_a = _index(after)
    added = tuple(i for i in ops_a if i not in ops_b)
    removed = tuple(i for i in ops_b if i not in ops_a)
    changed: dict[int, tuple[str, ...]] = {}
    for i, new in ops_a.items():
        old = ops_b.get(i)
        if old is None:
            continue
        what = list(op_changes(old, new, src_b, src_a)) if old is not new else []
        if old is new and any(
            src_b.get(v.key) != src_a.get(v.key) for v in new.operands
        ):  # same object, but an operand's producer moved behind a new op
            what.append("operands")
        if parent_b.get(i) != parent_a.get(i):
            what.append("group")
        if what:
            changed[i] = tuple(what)
    return GraphDiff(added, removed, changed)


# --------------------------------------------------------------------------- text diff

_CSS = """<style>
.tx8-diff {font-family: monospace; font-size: 11px; border-collapse: collapse; width: 100%}
.tx8-diff td {white-space: pre; padding: 0 4px; vertical-align: top}
.tx8-diff .add {background: #e6ffed} .tx8-diff .del {background: #ffeef0}
.tx8-diff .hunk {background: #f1f8ff; color: #555} .tx8-diff .ctx {color: #444}
.tx8-diff mark {background: #fdb8c0} .tx8-diff .add mark {background: #acf2bd}
.tx8-diff .note {color: #888; font-style: italic}
</style>"""


def _marked(a: str, b: str) -> tuple[str, str]:
    """Both lines escaped, with the characters that differ in ``<mark>``."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out_a: list[str] = []
    out_b: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        pa, pb = html.escape(a[i1:i2]), html.escape(b[j1:j2])
        if tag == "equal":
            out_a.append(pa)
            out_b.append(pb)
        else:
            out_a.append(f"<mark>{pa}</mark>" if pa else "")
            out_b.append(f"<mark>{pb}</mark>" if pb else "")
    return "".join(out_a), "".join(out_b)


def ir_diff_lines(before: Module, after: Module, context: int = 2) -> list[str]:
    """Unified diff of the printed modules (constants elided above 64 bytes)."""
    from tx8lab.core.text import print_module

    a = print_module(before, elide_bytes=64).splitlines()
    b = print_module(after, elide_bytes=64).splitlines() if after is not before else a
    return list(difflib.unified_diff(a, b, "before", "after", n=context, lineterm=""))


def ir_diff_html(before: Module, after: Module, *, context: int = 2, max_lines: int = 1500) -> str:
    """The IR text diff as an HTML table (see the module docstring)."""
    lines = ir_diff_lines(before, after, context)[2:]
    if not lines:
        return _CSS + '<div class="tx8-diff note">the printed IR is identical</div>'
    rows: list[str] = []
    shown = lines[:max_lines]
    i = 0
    while i < len(shown):
        line = shown[i]
        if line.startswith("@@"):
            rows.append(f'<tr class="hunk"><td>{html.escape(line)}</td></tr>')
            i += 1
            continue
        if line.startswith("-"):
            j = i
            while j < len(shown) and shown[j].startswith("-"):
                j += 1
            k = j
            while k < len(shown) and shown[k].startswith("+"):
                k += 1
            dels, adds = shown[i:j], shown[j:k]
            if len(dels) == len(adds) and len(dels) <= 200:
                pairs = [_marked(d[1:], a[1:]) for d, a in zip(dels, adds, strict=True)]
                dels_html = [f"-{p[0]}" for p in pairs]
                adds_html = [f"+{p[1]}" for p in pairs]
            else:
                dels_html = [html.escape(d) for d in dels]
                adds_html = [html.escape(a) for a in adds]
            rows += [f'<tr class="del"><td>{d}</td></tr>' for d in dels_html]
            rows += [f'<tr class="add"><td>{a}</td></tr>' for a in adds_html]
            i = k
            continue
        css = "add" if line.startswith("+") else "ctx"
        rows.append(f'<tr class="{css}"><td>{html.escape(line)}</td></tr>')
        i += 1
    if len(lines) > max_lines:
        rows.append(
            f'<tr class="note"><td>… {len(lines) - max_lines} more diff lines not shown</td></tr>'
        )
    return _CSS + '<table class="tx8-diff">' + "".join(rows) + "</table>"


# --------------------------------------------------------------------------- decisions


def decisions_frame(decisions: Iterable[Decision]) -> Any:
    """A pandas DataFrame: one row per decision, its ``data`` keys as extra columns."""
    import pandas as pd

    from tx8lab.core.report import to_jsonable

    rows = []
    for d in decisions:
        row: dict[str, Any] = {
            "pass": d.pass_name,
            "op": "" if d.op_id is None else f"%{d.op_id}",
            "choice": d.choice,
            "reason": d.reason,
            "related": " ".join(f"%{i}" for i in d.related_ids),
        }
        for key, value in d.data.items():
            jv = to_jsonable(value)
            row[key] = jv if isinstance(jv, str | int | float | bool) or jv is None else str(jv)
        rows.append(row)
    columns = ["pass", "op", "choice", "reason", "related"]
    return pd.DataFrame(rows, columns=columns + sorted({k for r in rows for k in r} - set(columns)))


def diff_overlay(diff: GraphDiff, after: Module) -> Overlay:
    """An overlay colouring ops added / changed / removed / same (the stepper's default)."""
    values = {op.id: "same" for op in after.walk() if op.kind not in TERMINATORS}
    values.update({i: "changed" for i in diff.changed})
    values.update({i: "added" for i in diff.added})
    values.update({i: "removed" for i in diff.removed})
    return category_overlay("diff", values, DIFF_COLORS, order=list(DIFF_COLORS))


__all__ = [
    "GraphDiff",
    "decisions_frame",
    "diff_overlay",
    "graph_diff",
    "ir_diff_html",
    "ir_diff_lines",
    "op_changes",
]
