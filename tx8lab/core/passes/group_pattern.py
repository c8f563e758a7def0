"""group-pattern: group chains of ops that match configured op-kind patterns (a trie).

Spec: seed 001 ("Sharding Search and SPM Management": GroupPatternPass applies the group
config ``opt_group``; ``Automation`` insertPatterns / processPattern / insertPattern /
searchOp / search; the GroupOp arguments). The patterns of the chosen config go into a
trie (:mod:`tx8lab.core.group_automaton`); from every op in program order the automaton
walks users depth first and keeps the best pattern end; the matches become
``tx8be.Group`` ops (:func:`tx8lab.core.grouping.outline`, bodies in topological order).
The match inspector (:mod:`tx8lab.core.match_inspector`) shows, for every op, each pattern
that started there: matched fully or partly, how deep, and why it stopped.

Readings chosen where the seed is vague:

- **Configs.** ``opt_group`` names a shipped config (``tx8lab/core/data/
  group_patterns_<config>.txt``: ``cnn``, ``transformer``) or ``auto``: ``cnn`` when the
  module has Conv2d ops and at least as many as MatMul/BatchMatMul ops, else
  ``transformer``. (Not "any Conv2d": ViT's single patch-embedding conv would give a
  transformer the CNN config.) ``patterns_file`` replaces the config, as the seed's
  ``path`` does.
- **Applying overlapping matches** (the seed's ``PatternManager::applyAll`` is not shown):
  matches are applied greedily in program order of their first op. The search from a
  later op treats ops claimed by an earlier match like ops in a group (the walk stops
  there), so it finds the best match among the ops left rather than losing out. An op
  already claimed is not searched from.
- **Convexity.** A match whose ops would make a non-convex group (a path leaves it and
  comes back, possibly through groups formed before) is not applied; the next best
  complete match from the same op is tried, and the decision names the path.
- **Already grouped.** ``tx8be.Group`` ops and their bodies are left alone; a group as a
  user stops a match (``in-group``).
- **GroupOp arguments.** A group gets ``group_rule = "pattern:<config>:<line>"`` (the
  pattern line that formed it; ``<config>`` is the pattern file's path with
  ``patterns_file``), ``group_pattern`` (the op kinds matched, in order) and ``group_id``
  (the seed's "group id序号": creation order, after the largest ``group_id`` already in
  the module). The other arguments (``group_tag``, ``need_barrier``, ``dev_region`` ...)
  belong to later passes and keep their defaults.
- **The inspector** walks from every op with only the existing groups blocked (not the
  claims of the greedy application), so it shows what each pattern can match there. For
  a pattern it reports the deepest prefix reached (the first found on a tie), the longest
  complete match, and the stop at the deepest point: ``end-of-pattern``,
  ``kind-mismatch``, ``need-store-pruning``, ``in-group``, ``no-user`` or, with
  ``single_user``, ``multiple-users``. The seed's walk does not stop at an op with
  several users (it tries each); ``single_user`` is an opt-in what-if.
- ``ddr_kinds`` is a what-if for the pruning: the op library clears ``need_store`` for
  no op yet, so the seed's ``!needStore && needLoad`` never fires on its own. Kinds
  listed there count as working in DDR (``need_load = need_store = 0``).
"""

from __future__ import annotations

import bisect
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from tx8lab.core.group_automaton import (
    CLAIMED,
    IN_GROUP,
    Automaton,
    MatchGraph,
    MatchState,
    Pattern,
    config_names,
    load_config,
    load_pattern_file,
    pattern_kinds,
    short,
)
from tx8lab.core.grouping import is_compute, outline
from tx8lab.core.ir import Function, IdCounter, Module, Op
from tx8lab.core.match_inspector import MatchRecord, match_records, match_table
from tx8lab.core.passes.base import Decision, Pass, PassResult, knob
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

if TYPE_CHECKING:
    import pandas as pd

#: Config names ``opt_group`` takes besides ``auto``.
CONFIGS = config_names()


def choose_config(module: Module) -> tuple[str, str]:
    """The config ``opt_group=auto`` picks for ``module`` and why.

    Examples:
        >>> from tx8lab.core import zoo
        >>> choose_config(zoo.build("tiny_cnn"))[0], choose_config(zoo.build("vit_tiny"))[0]
        ('cnn', 'transformer')
    """
    counts = Counter(op.kind for op in module.walk())
    convs = counts["tx8be.Conv2d"]
    matmuls = counts["tx8be.MatMul"] + counts["tx8be.BatchMatMul"]
    if convs and convs >= matmuls:
        return "cnn", f"auto: {convs} Conv2d >= {matmuls} MatMul/BatchMatMul ops"
    if not convs:
        return "transformer", f"auto: no Conv2d ({matmuls} MatMul/BatchMatMul ops)"
    return "transformer", f"auto: {convs} Conv2d < {matmuls} MatMul/BatchMatMul ops"


def parse_kind_list(text: str, what: str = "group-pattern.ddr_kinds") -> frozenset[str]:
    """``"Reshape,Transpose"`` -> full kinds, checked against the op library."""
    from tx8lab.core.ops import OPS

    kinds: set[str] = set()
    for token in (t.strip() for t in text.replace(" ", ",").split(",")):
        if not token:
            continue
        kind = token if "." in token else f"tx8be.{token}"
        if kind not in OPS:
            raise Tx8labError(
                f"{what}: unknown op kind {token!r}; op kinds that exist: "
                f"{', '.join(pattern_kinds())}"
            )
        kinds.add(kind)
    return frozenset(kinds)


# --------------------------------------------------------------------------- applying


@dataclass
class _Chosen:
    """A match the pass applies."""

    state: MatchState
    pattern: Pattern
    span: tuple[int, int]


@dataclass
class _FunctionPlan:
    """What the pass decided for one function."""

    graph: MatchGraph
    chosen: list[_Chosen] = field(default_factory=list)
    owner: dict[int, int] = field(default_factory=dict)
    """Op id -> index into ``chosen``."""
    searched: dict[int, list[MatchState]] = field(default_factory=dict)
    """Start op -> the walk of the application (with claims), for ops searched from."""
    rejected: dict[int, list[tuple[MatchState, list[int]]]] = field(default_factory=dict)
    """Start op -> complete matches not applied (not convex) and the path that shows it."""
    inspector: dict[int, list[MatchRecord]] = field(default_factory=dict)
    """Op id -> the inspector's records (existing groups blocked, no claims)."""
    _before: dict[int, MatchRecord] | None = field(default=None, repr=False)
    _through: dict[int, MatchRecord] | None = field(default=None, repr=False)

    def stopped_before(self) -> dict[int, MatchRecord]:
        """Op id -> the first inspector record whose walk expected it but could not enter."""
        if self._before is None:
            self._before = {}
            for records in self.inspector.values():
                for record in records:
                    for op_id in record.blocked_next:
                        self._before.setdefault(op_id, record)
        return self._before

    def full_through(self) -> dict[int, MatchRecord]:
        """Op id -> the first inspector record (program order) whose full match has it."""
        if self._through is None:
            self._through = {}
            for records in self.inspector.values():
                for record in records:
                    for op_id in record.full_path[1:]:
                        self._through.setdefault(op_id, record)
        return self._through


class _Convexity:
    """Cycle test for a new group against the groups accepted so far (program order)."""

    def __init__(self, graph: MatchGraph, plan: _FunctionPlan) -> None:
        self.graph = graph
        self.plan = plan
        self.mins: list[int] = []
        self.prefix_max: list[int] = []

    def add(self, span: tuple[int, int]) -> None:
        # groups are accepted in program order of their first op: mins stay sorted
        self.mins.append(span[0])
        top = max(span[1], self.prefix_max[-1] if self.prefix_max else span[1])
        self.prefix_max.append(top)

    def _bound(self, last: int) -> int:
        """No op after this position can lead back into the group (even via a group)."""
        bound = last
        while True:
            i = bisect.bisect_right(self.mins, bound)
            if i == 0 or self.prefix_max[i - 1] <= bound:
                return bound
            bound = self.prefix_max[i - 1]

    def cycle(self, members: Sequence[int]) -> list[int] | None:
        """A path that leaves ``members`` and comes back (op ids), or None when convex."""
        graph, plan = self.graph, self.plan
        inside = set(members)
        pos = graph.position
        bound = self._bound(max(pos[m] for m in members))
        came_from: dict[int, int] = {}
        queue: deque[int] = deque()
        for m in members:
            for u in graph.users[m]:
                if u not in inside and u not in came_from:
                    came_from[u] = m
                    queue.append(u)
        seen: set[int] = set()
        while queue:
            node = queue.popleft()
            if node in seen or pos[node] > bound:
                continue
            seen.add(node)
            group = plan.owner.get(node)
            spread = [node]
            if group is not None:
                spread = list(plan.chosen[group].state.path)
                for other in spread:
                    if other != node and other not in came_from:
                        came_from[other] = node
            for x in spread:
                seen.add(x)
                for u in graph.users[x]:
                    if u in inside:
                        path = [u, x]
                        while path[-1] not in inside:
                            path.append(came_from[path[-1]])
                        return path[::-1]
                    if u not in came_from:
                        came_from[u] = x
                        queue.append(u)
        return None


def _plan(
    automaton: Automaton,
    graph: MatchGraph,
    function: str,
    prefer: str,
    single_user: bool,
) -> _FunctionPlan:
    plan = _FunctionPlan(graph)
    base = {op.id: IN_GROUP for op in graph.ops if op.kind == "tx8be.Group"}
    for op in graph.ops:
        states = automaton.explore(graph, op.id, base, single_user=single_user)
        plan.inspector[op.id] = match_records(automaton, graph, function, op.id, states, base)
    blocked = dict(base)
    convexity = _Convexity(graph, plan)
    for op in graph.ops:
        if op.id in blocked or not automaton.starts(op.kind):
            continue
        states = automaton.explore(graph, op.id, blocked, single_user=single_user)
        plan.searched[op.id] = states
        for candidate in automaton.candidates(states, prefer):
            cycle = convexity.cycle(candidate.path)
            if cycle is not None:
                plan.rejected.setdefault(op.id, []).append((candidate, cycle))
                continue
            pattern = candidate.node.best
            assert pattern is not None
            positions = [graph.position[i] for i in candidate.path]
            span = (min(positions), max(positions))
            index = len(plan.chosen)
            plan.chosen.append(_Chosen(candidate, pattern, span))
            convexity.add(span)
            for member in candidate.path:
                plan.owner[member] = index
                blocked[member] = CLAIMED
            break
    return plan


# --------------------------------------------------------------------------- the pass


@dataclass(frozen=True)
class GroupPattern(Pass):
    """Seed GroupPatternPass (see the module docstring)."""

    name: ClassVar[str] = "group-pattern"
    summary: ClassVar[str] = "group op chains matching the config's op-kind patterns (trie)"

    opt_group: str = knob(
        "auto",
        "pattern config: a shipped one, or auto (cnn if Conv2d >= MatMul ops, else transformer)",
        choices=("auto", *CONFIGS),
    )
    """Set from Python or ``--set group-pattern.opt_group=transformer``."""
    patterns_file: str = knob("", "a pattern file to use instead of opt_group's config")
    """Path of a pattern file (format: :mod:`tx8lab.core.group_automaton`); empty: none."""
    prefer: Literal["longest", "priority"] = knob(
        "longest", "best match: longest then priority (seed text), or priority (seed code)"
    )
    """How the best complete match from an op is chosen (see the module docstring)."""
    single_user: bool = knob(False, "stop a match at an op whose result has several readers")
    """Off in the seed; on keeps every intermediate result of a group inside it."""
    ddr_kinds: str = knob("", "op kinds treated as working in DDR (need_load=need_store=0)")
    """Comma-separated op kinds; a what-if for the seed's needStore/needLoad pruning."""

    def __post_init__(self) -> None:
        super().__post_init__()
        parse_kind_list(self.ddr_kinds)

    # -- the patterns
    def load(self, module: Module) -> tuple[tuple[Pattern, ...], str, str]:
        """(patterns, config label, why that config) for ``module``."""
        if self.patterns_file:
            patterns = load_pattern_file(self.patterns_file)
            return patterns, self.patterns_file, f"patterns_file {self.patterns_file}"
        if self.opt_group == "auto":
            config, why = choose_config(module)
        else:
            config, why = self.opt_group, f"opt_group={self.opt_group}"
        return load_config(config), config, why

    def automaton(self, module: Module) -> tuple[Automaton, str, str]:
        """The automaton of the patterns ``run`` would use, its config label and reason."""
        patterns, config, why = self.load(module)
        return Automaton(patterns), config, why

    # -- running
    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        automaton, config, why = self.automaton(module)
        ddr = parse_kind_list(self.ddr_kinds)
        decisions = [
            self.decide(
                None,
                "config",
                f"patterns from {config} ({why}): {len(automaton.patterns)} patterns, "
                f"{len(automaton.sequences)} sequences",
                config=config,
            )
        ]
        ids = IdCounter(module.next_id)
        next_group_id = 1 + max(
            (
                int(op.attrs["group_id"])
                for op in module.walk()
                if op.kind == "tx8be.Group" and isinstance(op.attrs.get("group_id"), int)
            ),
            default=-1,
        )
        functions: list[Function] = []
        groups_json: list[dict[str, Any]] = []
        per_pattern: Counter[str] = Counter()
        stats: Counter[str] = Counter()
        for func in module.functions:
            graph = MatchGraph.from_function(func, ddr)
            plan = _plan(automaton, graph, func.name, self.prefer, self.single_user)
            new_func, made = self._apply(func, plan, ids, next_group_id)
            next_group_id += len(made)
            functions.append(new_func)
            decisions += self._decisions(automaton, plan, made)
            for chosen, group in zip(plan.chosen, made, strict=True):
                per_pattern[chosen.pattern.name] += 1
                groups_json.append(
                    {
                        "function": func.name,
                        "id": group.id,
                        "group_id": group.attrs["group_id"],
                        "ops": list(chosen.state.path),
                        "rule": chosen.pattern.rule,
                        "pattern": chosen.pattern.name,
                    }
                )
            stats["groups"] += len(made)
            stats["grouped_ops"] += len(plan.owner)
            stats["ungrouped_compute_ops"] += sum(
                1
                for op in graph.ops
                if is_compute(op) and op.id not in plan.owner and op.kind != "tx8be.Group"
            )
            stats["rejected_not_convex"] += sum(len(r) for r in plan.rejected.values())
            stats["ops_with_full_match"] += sum(
                1 for records in plan.inspector.values() if any(r.status == "full" for r in records)
            )
        out_stats: dict[str, int | float | str] = {"config": config, **stats}
        out_stats["patterns"] = len(automaton.patterns)
        for pattern in automaton.patterns:
            out_stats[f"pattern.{pattern.name}"] = per_pattern[pattern.name]
        artifacts = {"automaton": automaton.print_tree(), "groups": groups_json}
        if not stats["groups"]:
            return PassResult(module, tuple(decisions), out_stats, artifacts)
        out = Module(tuple(functions), module.attrs, ids.next_id)
        return PassResult(out, tuple(decisions), out_stats, artifacts)

    def _apply(
        self, func: Function, plan: _FunctionPlan, ids: IdCounter, first_id: int
    ) -> tuple[Function, list[Op]]:
        if not plan.chosen:
            return func, []
        attrs = [
            {
                "group_rule": chosen.pattern.rule,
                "group_pattern": " ".join(short(plan.graph.kind(i)) for i in chosen.state.path),
                "group_id": first_id + n,
            }
            for n, chosen in enumerate(plan.chosen)
        ]
        new_func, made = outline(
            func, [list(c.state.path) for c in plan.chosen], ids, attrs=attrs, created_by=self.name
        )
        return new_func, made

    def _decisions(
        self, automaton: Automaton, plan: _FunctionPlan, made: Sequence[Op]
    ) -> list[Decision]:
        graph = plan.graph
        out: list[Decision] = []

        def claimed(op_id: int) -> str:
            index = plan.owner.get(op_id)
            if index is None:
                return "is claimed"
            return f"is in group %{made[index].id} formed earlier"

        for chosen, group in zip(plan.chosen, made, strict=True):
            p, path = chosen.pattern, chosen.state.path
            reason = f"pattern {p.name} ({p.rule}, priority {p.priority}) matched " + " -> ".join(
                f"%{i} {short(graph.kind(i))}" for i in path
            )
            for state, cycle in plan.rejected.get(path[0], []):
                better = state.node.best
                assert better is not None
                reason += (
                    f"; the better match {better.name} ({' '.join(f'%{i}' for i in state.path)})"
                    f" is not convex: {' -> '.join(f'%{i}' for i in cycle)} leaves it and "
                    "comes back"
                )
            out.append(
                self.decide(
                    group.id,
                    "group",
                    reason,
                    related=path,
                    rule=p.rule,
                    pattern=p.name,
                    group_id=group.attrs["group_id"],
                )
            )
        for op in graph.ops:
            out.append(self._op_decision(automaton, plan, made, op, claimed))
        for op in graph.ops:
            for record in plan.inspector[op.id]:
                if record.pattern is None:
                    continue
                p = record.pattern
                depth = (
                    f"fully ({record.full_depth} ops)"
                    if record.status == "full"
                    else f"partly ({record.depth} of {p.max_length} ops)"
                )
                out.append(
                    self.decide(
                        op.id,
                        f"match-{record.status}",
                        f"{p.name} ({p.rule}) matched {depth}; {record.reason}",
                        related=record.path,
                        pattern=p.name,
                        rule=p.rule,
                        depth=record.depth,
                        full_depth=record.full_depth,
                        stop=record.stop,
                    )
                )
        return out

    def _op_decision(
        self,
        automaton: Automaton,
        plan: _FunctionPlan,
        made: Sequence[Op],
        op: Op,
        claimed: Callable[[int], str],
    ) -> Decision:
        index = plan.owner.get(op.id)
        if index is not None:
            chosen, group = plan.chosen[index], made[index]
            path = chosen.state.path
            return self.decide(
                op.id,
                "grouped",
                f"in group %{group.id} (group_id {group.attrs['group_id']}), op "
                f"{path.index(op.id) + 1} of {len(path)} of pattern {chosen.pattern.name} "
                f"({chosen.pattern.rule}) started at %{path[0]}",
                related=[group.id],
                rule=chosen.pattern.rule,
                pattern=chosen.pattern.name,
            )
        if op.kind == "tx8be.Group":
            body = [i.id for i in op.regions[0].ops[:-1]] if op.regions else []
            return self.decide(
                op.id, "kept", "already a group: it and its ops are left alone", related=body
            )
        if not is_compute(op):
            return self.decide(
                op.id,
                "not-compute",
                f"{op.kind} is not a compute op; no pattern grouped it",
            )
        return self.decide(op.id, "ungrouped", self._why_not(automaton, plan, made, op, claimed))

    def _why_not(
        self,
        automaton: Automaton,
        plan: _FunctionPlan,
        made: Sequence[Op],
        op: Op,
        claimed: Callable[[int], str],
    ) -> str:
        graph = plan.graph
        rejected = plan.rejected.get(op.id)
        if rejected:
            state, cycle = rejected[0]
            p = state.node.best
            assert p is not None
            return (
                f"its match {p.name} ({' '.join(f'%{i}' for i in state.path)}) is not convex: "
                + " -> ".join(f"%{i}" for i in cycle)
                + " leaves the group and comes back"
            )
        searched = plan.searched.get(op.id)
        if searched:
            records = match_records(automaton, graph, "", op.id, searched, {}, claimed)
            best = max(records, key=lambda r: (r.depth, r.pattern.priority if r.pattern else 0))
            assert best.pattern is not None
            return (
                f"no pattern matched fully from here; deepest: {best.pattern.name} "
                f"({best.depth} of {best.pattern.max_length} ops), {best.reason}"
            )
        # a complete match through this op that the inspector saw but was not applied
        record = plan.full_through().get(op.id)
        if record is not None and record.pattern is not None:
            start = record.op_id
            taken = [i for i in record.full_path if i in plan.owner]
            chosen = plan.owner.get(start)
            if any(state.path == record.full_path for state, _ in plan.rejected.get(start, [])):
                why = f"it would not be a convex group (see the decision for %{start})"
            elif chosen is not None and plan.chosen[chosen].state.path[0] == start:
                other = plan.chosen[chosen].pattern.name
                why = f"the search from %{start} chose {other} (prefer={self.prefer})"
            elif taken:
                why = f"%{taken[0]} of it {claimed(taken[0])}"
            else:
                why = f"the search from %{start} found no convex match through it"
            return (
                f"pattern {record.pattern.name} matches fully from %{start} through "
                f"it, but that match was not applied: {why}"
            )
        record = plan.stopped_before().get(op.id)
        if record is not None and record.pattern is not None:
            return (
                f"pattern {record.pattern.name} from %{record.op_id} expected it next but "
                f"could not take it: {record.reason}"
            )
        if automaton.starts(op.kind):
            return f"{claimed(op.id)}"
        if automaton.names(op.kind):
            return f"no pattern starts with {short(op.kind)} and no complete match reaches it"
        return f"no pattern names {short(op.kind)}"

    def check(self, module: Module) -> list[str]:
        """Post-condition: each group this pass formed holds its pattern's ops, in order."""
        problems = []
        for op in module.walk():
            if op.kind != "tx8be.Group" or op.created_by != self.name:
                continue
            rule = op.attrs.get("group_rule")
            if not isinstance(rule, str) or not rule.startswith("pattern:"):
                problems.append(f"{op.label}: group without a pattern group_rule")
                continue
            body = [short(i.kind) for i in op.regions[0].ops[:-1]]
            if " ".join(body) != op.attrs.get("group_pattern"):
                problems.append(
                    f"{op.label}: body {' '.join(body)} is not its group_pattern "
                    f"{op.attrs.get('group_pattern')!r}"
                )
        return problems


def inspect_matches(module: Module, opt_group: str = "auto", **knobs: Any) -> pd.DataFrame:
    """The match inspector as a table: one row per (op, pattern that starts at it).

    Ops where no pattern starts get one row with ``status == "none"``. Columns: function,
    op_id, kind, pattern, rule, priority, status (full/partial/none), depth, full_depth,
    length (the pattern's longest sequence), path, full_path, stop, reason. ``knobs`` are
    the pass's other knobs (``patterns_file``, ``single_user``, ``ddr_kinds``).

    Examples:
        >>> from tx8lab.core import zoo
        >>> table = inspect_matches(zoo.build("tiny_cnn"))
        >>> first_conv = table[table.op_id == 1]
        >>> print(first_conv[["pattern", "status", "depth", "stop"]].to_string(index=False))
                 pattern  status  depth           stop
         conv_bn_add_act partial      2  kind-mismatch
             conv_bn_add partial      2  kind-mismatch
        conv_bn_act_pool    full      4 end-of-pattern
             conv_bn_act    full      3 end-of-pattern
                conv_act partial      1  kind-mismatch
                 conv_bn    full      2 end-of-pattern
        >>> first_conv.reason.iloc[0]
        'after %6 BatchNorm_Inference (2 ops matched) it expects Add: %7 is a Relu'
    """
    # the pass's own choice of patterns (config, patterns_file, ddr_kinds)
    p = GroupPattern(opt_group=opt_group, **knobs)
    automaton, _, _ = p.automaton(module)
    return match_table(module, automaton, parse_kind_list(p.ddr_kinds), p.single_user)


__all__ = [
    "CONFIGS",
    "GroupPattern",
    "choose_config",
    "inspect_matches",
    "parse_kind_list",
]
