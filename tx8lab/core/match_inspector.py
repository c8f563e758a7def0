"""The match inspector: what every group-pattern pattern did from every op, and why it stopped.

Spec: seed 001 (``Automation`` searchOp / search, as group-pattern runs it). From each op
the pattern trie (:mod:`tx8lab.core.group_automaton`) walks users with only the existing
groups blocked; :func:`match_records` turns the walk into one :class:`MatchRecord` per
pattern (deepest prefix, longest complete match, the stop and its reason), which
group-pattern (:mod:`tx8lab.core.passes.group_pattern`) uses to explain its decisions, and
:func:`inspect_matches` lays them out as a table for notebooks.

Readings chosen where the seed is vague:

- For a pattern the inspector reports the deepest prefix reached (the first found on a
  tie), the longest complete match, and the stop at the deepest point:
  ``end-of-pattern``, ``kind-mismatch``, ``need-store-pruning``, ``in-group``,
  ``no-user`` or, with ``single_user``, ``multiple-users``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tx8lab.core.group_automaton import (
    CLAIMED,
    END_OF_PATTERN,
    FOLLOWED,
    IN_GROUP,
    KIND_MISMATCH,
    MULTIPLE_USERS,
    NEED_STORE_PRUNING,
    NO_USER,
    Automaton,
    MatchGraph,
    MatchState,
    Pattern,
    short,
)
from tx8lab.core.ir import Module

if TYPE_CHECKING:
    import pandas as pd

_MAX_USERS_SHOWN = 4
#: Columns of :func:`inspect_matches`.
_COLUMNS = [
    "function",
    "op_id",
    "kind",
    "pattern",
    "rule",
    "priority",
    "status",
    "depth",
    "full_depth",
    "length",
    "path",
    "full_path",
    "stop",
    "reason",
]


@dataclass(frozen=True)
class MatchRecord:
    """What one pattern did from one op (a row of :func:`inspect_matches`)."""

    function: str
    """Function name."""
    op_id: int
    """The op the walk started at."""
    kind: str
    """Its kind (short name)."""
    pattern: Pattern | None
    """The pattern; None when no pattern starts with the op's kind."""
    status: str
    """``full`` (some sequence matched completely), ``partial`` or ``none``."""
    depth: int
    """Ops matched along the deepest path the pattern reached."""
    full_depth: int
    """Ops of the longest complete match (0: none)."""
    path: tuple[int, ...]
    """The deepest path (op ids)."""
    full_path: tuple[int, ...]
    """The longest complete match (op ids)."""
    stop: str
    """Why the deepest path stopped (``kind-mismatch``, ``end-of-pattern`` ...)."""
    reason: str
    """The stop in words, naming the ops."""
    blocked_next: tuple[int, ...] = ()
    """Users of the last op that the pattern expected but the walk could not enter."""

    def row(self) -> dict[str, Any]:
        """One DataFrame row."""
        p = self.pattern
        return {
            "function": self.function,
            "op_id": self.op_id,
            "kind": self.kind,
            "pattern": p.name if p else "",
            "rule": p.rule if p else "",
            "priority": p.priority if p else None,
            "status": self.status,
            "depth": self.depth,
            "full_depth": self.full_depth,
            "length": p.max_length if p else 0,
            "path": " ".join(f"%{i}" for i in self.path),
            "full_path": " ".join(f"%{i}" for i in self.full_path),
            "stop": self.stop,
            "reason": self.reason,
        }


def _user_text(
    graph: MatchGraph, last: int, user: int, code: str, claimed: Callable[[int], str]
) -> str:
    kind = short(graph.kind(user))
    if code == NEED_STORE_PRUNING:
        return (
            f"%{user} {kind} needs a load but %{last} needs no store "
            "(pruned: !needStore && needLoad)"
        )
    if code == IN_GROUP:
        return f"%{user} is a tx8be.Group (left alone)"
    if code == CLAIMED:
        return f"%{user} {kind} {claimed(user)}"
    return f"%{user} is a {kind}"


def _no_claims(user: int) -> str:
    return "is claimed"


def describe_stop(
    graph: MatchGraph,
    state: MatchState,
    pattern_index: int,
    claimed: Callable[[int], str] = _no_claims,
) -> tuple[str, str, tuple[int, ...]]:
    """(stop code, reason, users it could not enter) for a pattern at its deepest state."""
    node = state.node
    expected = [k for k, c in node.children.items() if pattern_index in c.through]
    last = state.path[-1]
    count = len(state.path)
    head = f"after %{last} {short(graph.kind(last))} ({count} op{'s' if count > 1 else ''} matched)"
    if not expected:
        return END_OF_PATTERN, f"{head} the pattern ends", ()
    want = "|".join(short(k) for k in expected)
    if state.stopped == MULTIPLE_USERS:
        n = len(graph.users[last]) + (last in graph.returned)
        return MULTIPLE_USERS, f"{head} it expects {want}, but {n} ops read the result", ()
    if state.stopped == NO_USER:
        nobody = (
            "only the function's return reads the result"
            if last in graph.returned
            else "nothing reads the result"
        )
        return NO_USER, f"{head} it expects {want}, but {nobody}", ()
    code = KIND_MISMATCH
    parts: list[str] = []
    entered_not: list[int] = []
    for user, what in state.users:
        fits = graph.kind(user) in expected
        if what == FOLLOWED or (not fits and what not in (IN_GROUP, CLAIMED)):
            what = KIND_MISMATCH
        elif fits:
            entered_not.append(user)
            if code == KIND_MISMATCH:
                code = what
        parts.append(_user_text(graph, last, user, what, claimed))
    shown = "; ".join(parts[:_MAX_USERS_SHOWN])
    if len(parts) > _MAX_USERS_SHOWN:
        shown += f"; and {len(parts) - _MAX_USERS_SHOWN} more users"
    return code, f"{head} it expects {want}: {shown}", tuple(entered_not)


def match_records(
    automaton: Automaton,
    graph: MatchGraph,
    function: str,
    op_id: int,
    states: Sequence[MatchState],
    blocked: Mapping[int, str],
    claimed: Callable[[int], str] = _no_claims,
) -> list[MatchRecord]:
    """One record per pattern that started at ``op_id`` (from the walk's ``states``)."""
    kind = graph.kind(op_id)
    if not states:
        if blocked.get(op_id) == IN_GROUP:
            reason = "a tx8be.Group: its ops are left alone"
        elif op_id in blocked:
            reason = f"{claimed(op_id)}"
        elif automaton.names(kind):
            reason = f"no pattern starts with {short(kind)} (it appears later in patterns)"
        else:
            reason = f"no pattern names {short(kind)}"
        return [MatchRecord(function, op_id, short(kind), None, "none", 0, 0, (), (), "", reason)]
    deepest: dict[int, MatchState] = {}
    full: dict[int, MatchState] = {}
    for state in states:
        for index in state.node.through:
            have = deepest.get(index)
            if have is None or len(state.path) > len(have.path):
                deepest[index] = state
        for pattern in state.node.output:
            have = full.get(pattern.index)
            if have is None or len(state.path) > len(have.path):
                full[pattern.index] = state
    out = []
    for index in sorted(deepest):
        pattern = automaton.patterns[index]
        state = deepest[index]
        done = full.get(index)
        stop, reason, blocked_next = describe_stop(graph, state, index, claimed)
        out.append(
            MatchRecord(
                function,
                op_id,
                short(kind),
                pattern,
                "full" if done else "partial",
                len(state.path),
                len(done.path) if done else 0,
                state.path,
                done.path if done else (),
                stop,
                reason,
                blocked_next,
            )
        )
    return out


def match_table(
    module: Module, automaton: Automaton, ddr: frozenset[str], single_user: bool
) -> pd.DataFrame:
    """One row per (op, pattern that starts at it) of ``module`` under ``automaton``.

    :func:`~tx8lab.core.passes.group_pattern.inspect_matches` builds the automaton the
    group-pattern pass would use and calls this.
    """
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for func in module.functions:
        graph = MatchGraph.from_function(func, ddr)
        base = {op.id: IN_GROUP for op in graph.ops if op.kind == "tx8be.Group"}
        for op in graph.ops:
            states = automaton.explore(graph, op.id, base, single_user=single_user)
            for record in match_records(automaton, graph, func.name, op.id, states, base):
                rows.append(record.row())
    return pd.DataFrame(rows, columns=_COLUMNS)


__all__ = ["MatchRecord", "describe_stop", "match_records", "match_table"]
