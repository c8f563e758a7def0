r"""The GroupPattern automaton: op-kind patterns as data, their trie, and the depth-first match.

Spec: seed 001 ("GroupPatternPass": ``Automation::insertPatterns`` / ``processPattern`` /
``insertPattern`` / ``searchOp`` / ``search``, ``struct TrieNode``, ``printTree``). A
pattern is a sequence of op kinds with an integer priority (larger wins). ``OR`` splits a
pattern into alternatives and ``OP *`` (WILDCARD) repeats the op before it; the expanded,
plain sequences go into a trie. ``searchOp`` matches an op against a trie node's children
and, on a match, recurses into the op's users (program order), skipping a user when the op
needs no store but the user needs a load; the best pattern end found on the way is the
match.

Pattern files (``tx8lab/core/data/group_patterns_<config>.txt``, or any file through the
pass's ``patterns_file`` knob) hold one pattern per line::

    # comment (from '#' to the end of the line)
    <name> <priority>: <op> <op> ... [OR <op> <op> ...]

- ``<name>`` is an identifier, unique in the file; the pass reports group counts per name.
- ``<priority>`` is an integer; larger wins a tie between matches of the same length.
- ``<op>`` is an op kind of the op library, ``Conv2d`` or ``tx8be.Conv2d``.
- ``OR`` separates whole alternative sequences (seed: ``A B OR C D`` is ``A B`` and
  ``C D``), so ``conv_act 20: Conv2d Relu OR Conv2d Clip`` is two sequences.
- ``OP *`` (or ``OP WILDCARD``) stands for 1 to 5 copies of ``OP``.
- A line ending in ``\`` continues on the next line; the pattern's line is its first.

Readings chosen where the seed is vague:

- **WILDCARD.** The seed's loop ``for (int i = 0; i < 5; i++) temp.push_back(*(it - 1))``
  is read as making the sequences with ``OP`` once, twice ... five times (the seed's text:
  "OP, OP OP, OP OP OP, OP OP OP OP 等"); several wildcards in one alternative give every
  combination. ``OR`` binds loosest: a pattern is split on every ``OR`` first.
- **Priority of a trie node.** Several patterns may end at one node (the same sequence
  twice). The seed compares ``output.front()``; here a node's priority is the largest of
  its patterns', and the pattern that forms the group is that one (the earliest line on a
  tie).
- **Longest match, ties by priority** (``prefer="longest"``, the seed's text: "最长的匹配
  模式, 或者在有多个同样长度的模式时, 选择优先级最高的那个"): the best match from an op
  is the deepest pattern end, then the highest priority, then the first found (users are
  tried in program order). The seed's *code* compares priorities only (a deeper end
  replaces a shallower one only when its priority is strictly higher), which amounts to
  the highest priority, then the first found in pre-order; ``prefer="priority"`` does
  that.
- **Pruning** is the seed's line verbatim: ``if (!needStore && needLoad) continue``, with
  ``needStore`` the op's whole ``need_store`` mask and ``needLoad`` the user's whole
  ``need_load`` mask (not the bit of the operand between them).
- **What can be matched.** Only top-level ops of a function: a ``tx8be.Group`` and the ops
  inside one are left alone (a user that is a group stops the match, "in-group"), and the
  function's return is not a real op (it is skipped as the seed skips ``!isRealOp``).
  Patterns may name any op-library kind except ``tx8be.Group``.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tx8lab.core.ir import TERMINATORS, Function, Op
from tx8lab.core.ops.registry import OpAttr
from tx8lab.errors import Tx8labError

#: How many copies of ``OP`` the WILDCARD in ``OP *`` stands for at most (seed: 5).
WILDCARD_REPEATS = 5
#: Tokens meaning WILDCARD and OR in a pattern file.
WILDCARD_TOKENS = frozenset({"*", "WILDCARD"})
OR_TOKEN = "OR"
#: Most plain sequences one pattern line may expand to (a guard against typos like 6 ``*``).
MAX_SEQUENCES = 4096

#: Where the shipped configs live: ``group_patterns_<config>.txt``.
DATA_DIR = Path(__file__).resolve().parent / "data"
_CONFIG_PREFIX = "group_patterns_"

# the reasons a match stops at a user (codes shared by the pass and the inspector)
FOLLOWED = "followed"
KIND_MISMATCH = "kind-mismatch"
NEED_STORE_PRUNING = "need-store-pruning"
IN_GROUP = "in-group"
CLAIMED = "claimed"
END_OF_PATTERN = "end-of-pattern"
NO_USER = "no-user"
MULTIPLE_USERS = "multiple-users"

_LINE = re.compile(r"^([A-Za-z_][\w.-]*)\s+([+-]?\d+)\s*:\s*(.*)$")


# --------------------------------------------------------------------------- patterns


@dataclass(frozen=True)
class Pattern:
    """One pattern line: a name, a priority and the plain sequences it expands to."""

    name: str
    """Identifier from the file (unique in it)."""
    priority: int
    """Larger wins a tie between matches of the same length."""
    text: str
    """The sequence as written (``Conv2d BatchNorm_Inference Relu OR ...``)."""
    sequences: tuple[tuple[str, ...], ...]
    """Plain sequences of full op kinds after OR and WILDCARD expansion."""
    source: str
    """The config name (``cnn``) or the pattern file's path."""
    line: int
    """Line number of the pattern in its file (1-based)."""
    index: int = 0
    """Position among the file's patterns (0-based); the earlier line wins a full tie."""

    @property
    def rule(self) -> str:
        """``pattern:<config>:<line>``, the ``group_rule`` of the groups it forms."""
        return f"pattern:{self.source}:{self.line}"

    @property
    def max_length(self) -> int:
        """Length of its longest sequence."""
        return max(len(s) for s in self.sequences)


def short(kind: str) -> str:
    """``tx8be.Conv2d`` -> ``Conv2d``."""
    return kind.split(".", 1)[1] if kind.startswith("tx8be.") else kind


def pattern_kinds() -> tuple[str, ...]:
    """The op kinds a pattern may name (short names, sorted)."""
    from tx8lab.core.ops import OPS

    return tuple(sorted(short(k) for k in OPS if k != "tx8be.Group"))


def _kind_error(where: str, token: str) -> Tx8labError:
    kinds = pattern_kinds()
    close = difflib.get_close_matches(short(token), kinds, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return Tx8labError(
        f"{where}: unknown op kind {token!r}{hint}; op kinds that exist: {', '.join(kinds)}"
    )


def process_pattern(tokens: Sequence[str], where: str = "pattern") -> list[tuple[str, ...]]:
    """The plain sequences a token list stands for (seed ``processPattern``).

    Tokens are op kinds, ``OR`` and ``*``; kinds are returned as written (the caller
    checks them against the op library).

    Examples:
        >>> process_pattern(["A", "B", "OR", "C", "D"])
        [('A', 'B'), ('C', 'D')]
        >>> [len(s) for s in process_pattern(["A", "B", "*"])]
        [2, 3, 4, 5, 6]
    """
    alternatives: list[list[str]] = [[]]
    for token in tokens:
        if token == OR_TOKEN:
            alternatives.append([])
        else:
            alternatives[-1].append(token)
    out: list[tuple[str, ...]] = []
    for alternative in alternatives:
        if not alternative:
            raise Tx8labError(f"{where}: OR needs a sequence of op kinds on both sides")
        # each position: the ways it can be spelled (one op, or 1..5 copies before a '*')
        choices: list[list[tuple[str, ...]]] = []
        for token in alternative:
            if token in WILDCARD_TOKENS:
                if not choices or len(choices[-1]) != 1:
                    raise Tx8labError(f"{where}: '*' must follow an op kind (write 'OP *')")
                (op,) = choices[-1][0]
                choices[-1] = [(op,) * n for n in range(1, WILDCARD_REPEATS + 1)]
            else:
                choices.append([(token,)])
        count = 1
        for c in choices:
            count *= len(c)
        if len(out) + count > MAX_SEQUENCES:
            raise Tx8labError(
                f"{where}: expands to more than {MAX_SEQUENCES} sequences; use fewer '*'"
            )
        for combo in itertools.product(*choices):
            out.append(tuple(op for part in combo for op in part))
    return out


def parse_patterns(text: str, source: str, path: str | None = None) -> tuple[Pattern, ...]:
    """Patterns from the text of a pattern file (format in the module docstring).

    ``source`` labels the patterns' rules (a config name or a path); ``path`` names the
    file in error messages (default: ``source``).

    Examples:
        >>> (p,) = parse_patterns("conv_act 20: Conv2d Relu OR Conv2d Clip", "demo")
        >>> p.rule, p.priority, [[short(k) for k in s] for s in p.sequences]
        ('pattern:demo:1', 20, [['Conv2d', 'Relu'], ['Conv2d', 'Clip']])
    """
    from tx8lab.core.ops import OPS

    label = path or source
    logical: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].rstrip()
        more = line.endswith("\\")
        if more:
            line = line[:-1]
        if pending is not None:
            pending = (pending[0], f"{pending[1]} {line.strip()}")
        elif line.strip():
            pending = (number, line.strip())
        if pending is not None and not more:
            logical.append(pending)
            pending = None
    if pending is not None:
        raise Tx8labError(f"{label}, line {pending[0]}: the last line ends with '\\'")
    patterns: list[Pattern] = []
    seen: dict[str, int] = {}
    for number, line in logical:
        where = f"{label}, line {number}"
        found = _LINE.match(line)
        if found is None:
            raise Tx8labError(
                f"{where}: {line!r} is not '<name> <priority>: <op> <op> ...' "
                "(e.g. 'conv_bn_act 20: Conv2d BatchNorm_Inference Relu')"
            )
        name, priority, body = found.group(1), int(found.group(2)), found.group(3)
        if name in seen:
            raise Tx8labError(
                f"{where}: pattern name {name!r} is used before, on line {seen[name]}"
            )
        seen[name] = number
        tokens = body.split()
        if not tokens:
            raise Tx8labError(f"{where}: pattern {name!r} has no op kinds after ':'")
        for token in tokens:
            if token in WILDCARD_TOKENS or token == OR_TOKEN:
                continue
            kind = token if "." in token else f"tx8be.{token}"
            if kind not in OPS or kind == "tx8be.Group":
                raise _kind_error(where, token)
        sequences = process_pattern(tokens, where)
        full = tuple(
            tuple(t if "." in t else f"tx8be.{t}" for t in seq) for seq in dict.fromkeys(sequences)
        )
        patterns.append(Pattern(name, priority, body, full, source, number, len(patterns)))
    if not patterns:
        raise Tx8labError(f"{label}: no patterns (write '<name> <priority>: <op> <op> ...')")
    return tuple(patterns)


def config_names() -> tuple[str, ...]:
    """The shipped configs (``group_patterns_<name>.txt`` in ``tx8lab/core/data``)."""
    return tuple(
        sorted(p.stem[len(_CONFIG_PREFIX) :] for p in DATA_DIR.glob(f"{_CONFIG_PREFIX}*.txt"))
    )


def config_path(name: str) -> Path:
    """The file of shipped config ``name``, or an error listing the configs."""
    path = DATA_DIR / f"{_CONFIG_PREFIX}{name}.txt"
    if not path.is_file():
        raise Tx8labError(
            f"no group-pattern config {name!r}; shipped configs: {', '.join(config_names())}"
        )
    return path


def load_config(name: str) -> tuple[Pattern, ...]:
    """The patterns of shipped config ``name`` (``cnn``, ``transformer``)."""
    path = config_path(name)
    return parse_patterns(path.read_text(encoding="utf-8"), name, str(path))


def load_pattern_file(path: str | Path) -> tuple[Pattern, ...]:
    """The patterns of any pattern file (the seed's ``getPatternsFromFile``)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as err:
        raise Tx8labError(
            f"cannot read pattern file {str(path)!r} ({err.strerror}); relative paths are "
            f"read from the current directory {Path.cwd()}"
        ) from None
    except UnicodeDecodeError:
        raise Tx8labError(f"pattern file {str(path)!r} is not UTF-8 text") from None
    return parse_patterns(text, str(path))


# --------------------------------------------------------------------------- the graph


@dataclass
class MatchGraph:
    """A function's top-level ops as the automaton walks them: kinds, users, OpAttr bits."""

    ops: list[Op]
    """Top-level ops in program order (terminator left out)."""
    position: dict[int, int]
    """Op id -> index in ``ops``."""
    users: dict[int, tuple[int, ...]]
    """Op id -> the top-level ops reading one of its results, each once, program order."""
    returned: frozenset[int]
    """Ops whose results the function returns."""
    ddr_kinds: frozenset[str] = frozenset()
    """Kinds treated as working in DDR (need_load = need_store = 0) besides the library."""
    _attrs: dict[int, OpAttr] = field(default_factory=dict, repr=False)
    _by_id: dict[int, Op] = field(default_factory=dict, repr=False)

    @classmethod
    def from_function(cls, func: Function, ddr_kinds: frozenset[str] = frozenset()) -> MatchGraph:
        """The graph of ``func``'s top-level ops."""
        ops = [op for op in func.ops if op.kind not in TERMINATORS]
        position = {op.id: i for i, op in enumerate(ops)}
        users: dict[int, list[int]] = {op.id: [] for op in ops}
        for op in ops:
            for owner in dict.fromkeys(v.owner for v in op.operands if not v.is_arg):
                if owner in users and owner != op.id:
                    users[owner].append(op.id)
        returned = frozenset(
            v.owner for v in func.body.ops[-1].operands if not v.is_arg and v.owner in position
        )
        graph = cls(ops, position, {k: tuple(v) for k, v in users.items()}, returned, ddr_kinds)
        graph._by_id = {op.id: op for op in ops}
        return graph

    def op(self, op_id: int) -> Op:
        """The op with this id."""
        return self._by_id[op_id]

    def kind(self, op_id: int) -> str:
        """Full kind of op ``op_id``."""
        return self._by_id[op_id].kind

    def attr(self, op_id: int) -> OpAttr:
        """The op library's ``queryOpAttr`` for the op (the seed's defaults if unknown)."""
        found = self._attrs.get(op_id)
        if found is None:
            from tx8lab.core.ops import OPS

            op = self._by_id[op_id]
            entry = OPS.get(op.kind)
            found = entry.op_attr(op) if entry is not None else OpAttr()
            self._attrs[op_id] = found
        return found

    def need_store(self, op_id: int) -> int:
        """The op's ``need_store`` mask (0 for a ``ddr_kinds`` op)."""
        if self.kind(op_id) in self.ddr_kinds:
            return 0
        return self.attr(op_id).need_store

    def need_load(self, op_id: int) -> int:
        """The op's ``need_load`` mask (0 for a ``ddr_kinds`` op)."""
        if self.kind(op_id) in self.ddr_kinds:
            return 0
        return self.attr(op_id).need_load


# --------------------------------------------------------------------------- the trie


class TrieNode:
    """One trie node (seed ``struct TrieNode``): an op kind, children, patterns ending here."""

    __slots__ = ("children", "depth", "kind", "output", "sequence", "through")

    def __init__(self, kind: str, depth: int) -> None:
        self.kind = kind
        """Full op kind this node stands for (``root`` for the root)."""
        self.depth = depth
        """Ops matched when the walk is here (0 at the root)."""
        self.children: dict[str, TrieNode] = {}
        """Op kind -> next node."""
        self.output: list[Pattern] = []
        """Patterns ending here (seed ``output``; non-empty marks a pattern end)."""
        self.sequence: tuple[str, ...] = ()
        """The sequence ending here (seed ``pattern``)."""
        self.through: set[int] = set()
        """Indices of the patterns with a sequence through or ending at this node."""

    @property
    def priority(self) -> int | None:
        """Largest priority of the patterns ending here (None: not a pattern end)."""
        return max((p.priority for p in self.output), default=None)

    @property
    def best(self) -> Pattern | None:
        """The pattern ending here that forms the group: highest priority, earliest line."""
        if not self.output:
            return None
        return min(self.output, key=lambda p: (-p.priority, p.index))


@dataclass
class MatchState:
    """One step of the depth-first walk: a trie node reached through a path of ops."""

    node: TrieNode
    """The trie node the path's last op matched."""
    path: tuple[int, ...]
    """Op ids matched so far, the start op first."""
    order: int
    """Position of this state in the walk (pre-order)."""
    users: list[tuple[int, str]] = field(default_factory=list)
    """The last op's users and what happened at each (``followed``, ``kind-mismatch`` ...)."""
    stopped: str = ""
    """Why the walk did not look at users at all: end-of-pattern, no-user, multiple-users."""

    @property
    def is_end(self) -> bool:
        """Whether a pattern ends here (a complete match)."""
        return bool(self.node.output)


class Automaton:
    """The seed's ``Automation``: a trie of plain op-kind sequences and its search.

    Examples:
        >>> automaton = Automaton(parse_patterns("a 1: Relu Neg OR Relu *", "demo"))
        >>> print(automaton.print_tree())
        root
        └── Relu  => a (priority 1, pattern:demo:1)
            ├── Neg  => a (priority 1, pattern:demo:1)
            └── Relu  => a (priority 1, pattern:demo:1)
                └── Relu  => a (priority 1, pattern:demo:1)
                    └── Relu  => a (priority 1, pattern:demo:1)
                        └── Relu  => a (priority 1, pattern:demo:1)
    """

    def __init__(self, patterns: Sequence[Pattern] = ()) -> None:
        self.root = TrieNode("root", 0)
        """The trie's root (matches nothing itself)."""
        self.patterns: list[Pattern] = []
        """Patterns inserted, in order (their ``index`` is the position here)."""
        self.sequences: list[tuple[tuple[str, ...], Pattern]] = []
        """Every plain sequence inserted with its pattern (seed ``patterns_``)."""
        self._kinds: set[str] = set()
        self.insert_patterns(patterns)

    # -- building (seed insertPatterns / insertPattern)
    def insert_patterns(self, patterns: Sequence[Pattern]) -> None:
        """Insert every plain sequence of every pattern."""
        for pattern in patterns:
            pattern = Pattern(
                pattern.name,
                pattern.priority,
                pattern.text,
                pattern.sequences,
                pattern.source,
                pattern.line,
                len(self.patterns),
            )
            self.patterns.append(pattern)
            for sequence in pattern.sequences:
                self.insert_pattern(sequence, pattern)

    def insert_pattern(self, sequence: Sequence[str], pattern: Pattern) -> None:
        """Walk (and grow) the trie along ``sequence``; mark its last node as an end."""
        if not sequence:
            raise Tx8labError(f"{pattern.rule}: an empty sequence cannot be inserted")
        self.sequences.append((tuple(sequence), pattern))
        self._kinds.update(sequence)
        node = self.root
        node.through.add(pattern.index)
        for kind in sequence:
            child = node.children.get(kind)
            if child is None:
                child = node.children[kind] = TrieNode(kind, node.depth + 1)
            node = child
            node.through.add(pattern.index)
        node.sequence = tuple(sequence)
        if pattern not in node.output:
            node.output.append(pattern)

    def starts(self, kind: str) -> bool:
        """Whether some pattern starts with ``kind``."""
        return kind in self.root.children

    def names(self, kind: str) -> bool:
        """Whether some pattern names ``kind`` (anywhere in it)."""
        return kind in self._kinds

    # -- printing (seed printTree)
    def print_tree(self) -> str:
        """The trie as an indented tree; pattern ends show name, priority and rule."""
        lines = ["root"]

        def walk(node: TrieNode, prefix: str) -> None:
            children = list(node.children.values())
            for i, child in enumerate(children):
                last = i == len(children) - 1
                text = f"{prefix}{'└── ' if last else '├── '}{short(child.kind)}"
                if child.output:
                    ends = ", ".join(
                        f"{p.name} (priority {p.priority}, {p.rule})" for p in child.output
                    )
                    text += f"  => {ends}"
                lines.append(text)
                walk(child, prefix + ("    " if last else "│   "))

        walk(self.root, "")
        return "\n".join(lines)

    # -- matching (seed searchOp / search)
    def explore(
        self,
        graph: MatchGraph,
        start: int,
        blocked: Mapping[int, str] | None = None,
        *,
        single_user: bool = False,
    ) -> list[MatchState]:
        """Every state of the depth-first walk from op ``start``, in pre-order.

        ``blocked`` maps op ids that may not join a match to the reason (``in-group``,
        ``claimed``). With ``single_user`` the walk stops at an op whose result is read
        by more than one op (the function's return counts). Empty when ``start`` is
        blocked or no pattern starts with its kind.
        """
        blocked = blocked or {}
        states: list[MatchState] = []
        first = self.root.children.get(graph.kind(start))
        if first is None or start in blocked:
            return states

        def visit(node: TrieNode, op_id: int, path: tuple[int, ...]) -> None:
            path = (*path, op_id)
            state = MatchState(node, path, len(states))
            states.append(state)
            if not node.children:
                state.stopped = END_OF_PATTERN
                return
            users = graph.users[op_id]
            if single_user and len(users) + (op_id in graph.returned) > 1:
                state.stopped = MULTIPLE_USERS
                return
            if not users:
                state.stopped = NO_USER
                return
            stores = graph.need_store(op_id)
            for user in users:
                reason = blocked.get(user)
                if reason is not None:
                    state.users.append((user, reason))
                    continue
                # seed: if (!needStore && needLoad) continue;
                if not stores and graph.need_load(user):
                    state.users.append((user, NEED_STORE_PRUNING))
                    continue
                child = node.children.get(graph.kind(user))
                if child is None:
                    state.users.append((user, KIND_MISMATCH))
                    continue
                state.users.append((user, FOLLOWED))
                visit(child, user, path)

        visit(first, start, ())
        return states

    @staticmethod
    def rank(state: MatchState, prefer: str = "longest") -> tuple[int, ...]:
        """Sort key of a complete match: larger is better (see the module docstring)."""
        priority = state.node.priority
        assert priority is not None, "rank() of a state that is not a pattern end"
        if prefer == "priority":
            return (priority, -state.order)
        return (len(state.path), priority, -state.order)

    def candidates(self, states: Sequence[MatchState], prefer: str = "longest") -> list[MatchState]:
        """The complete matches among ``states``, best first."""
        ends = [s for s in states if s.is_end]
        ends.sort(key=lambda s: self.rank(s, prefer), reverse=True)
        return ends

    def search_op(
        self,
        graph: MatchGraph,
        start: int,
        blocked: Mapping[int, str] | None = None,
        *,
        prefer: str = "longest",
        single_user: bool = False,
    ) -> MatchState | None:
        """The best complete match starting at op ``start`` (seed ``searchOp(root, op)``)."""
        found = self.candidates(
            self.explore(graph, start, blocked, single_user=single_user), prefer
        )
        return found[0] if found else None

    def search(
        self,
        graph: MatchGraph,
        blocked: Mapping[int, str] | None = None,
        *,
        prefer: str = "longest",
        single_user: bool = False,
    ) -> dict[int, MatchState]:
        """Seed ``search``: the best match from every op that has one (start id -> match).

        Matches may overlap; the pass applies them (see ``group_pattern``).
        """
        out: dict[int, MatchState] = {}
        for op in graph.ops:
            best = self.search_op(graph, op.id, blocked, prefer=prefer, single_user=single_user)
            if best is not None:
                out[op.id] = best
        return out


__all__ = [
    "CLAIMED",
    "DATA_DIR",
    "END_OF_PATTERN",
    "FOLLOWED",
    "IN_GROUP",
    "KIND_MISMATCH",
    "MAX_SEQUENCES",
    "MULTIPLE_USERS",
    "NEED_STORE_PRUNING",
    "NO_USER",
    "WILDCARD_REPEATS",
    "Automaton",
    "MatchGraph",
    "MatchState",
    "Pattern",
    "TrieNode",
    "config_names",
    "config_path",
    "load_config",
    "load_pattern_file",
    "parse_patterns",
    "pattern_kinds",
    "process_pattern",
    "short",
]
