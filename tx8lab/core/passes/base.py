"""The pass contract: Pass, Knob, PassResult, Decision and Step.

Spec: DESIGN.md §5 (passes and the runner) and STYLE.md ("How to write a pass"). A pass
is a frozen dataclass whose fields are its knobs; ``run(module, hw)`` returns a new module
plus the evidence for it (:class:`Decision` per choice, a ``stats`` dict). The runner
(:mod:`tx8lab.core.runner`) yields one :class:`Step` per pass.

Readings chosen:

- Knobs are the dataclass fields. Each field's ``metadata`` (written with :func:`knob`)
  holds its help text, choices and bounds, so a widget builds a slider and the command
  line (``--set pass.knob=value``) parses a value from :meth:`Knob.parse` alone. A
  ``Literal[...]`` annotation gives the choices.
- ``Pass.apply(module, hw, **knobs)`` is the one-call form ``run`` with knobs changed; the
  knobs themselves stay on the (frozen) pass instance so that the instance is the cache key.
- A pass that changes nothing returns its input module itself; ``Step.changed`` checks
  identity first, then op identity, and only then compares printed text.
- The runner calls ``run_with(module, hw, context)``; its default calls ``run``. A pass
  that reports progress overrides ``run_with`` and calls ``context.progress(done, total,
  **postfix)``; the runner forwards that to its instruments (no module-level state).
- ``spec()`` is MLIR's pass-pipeline text for one pass, ``name{knob=value knob2=value2}``,
  knobs that differ from their default only, in field order; a string value with a space,
  comma, brace, quote or ``=`` (or an empty one) is written in double quotes, a quote or
  backslash inside escaped with a backslash. ``from_spec`` reads it back.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Literal, Self

from tx8lab.core.ir import Module
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig, parse_number

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


# --------------------------------------------------------------------------- knobs


def knob(
    default: Any,
    help: str,
    *,
    choices: Sequence[Any] = (),
    min: float | None = None,
    max: float | None = None,
) -> Any:
    """A pass field that is a knob: its default, help text, and optional choices/bounds.

    Examples:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Demo(Pass):
        ...     name: ClassVar[str] = "demo"
        ...     depth: int = knob(2, "how deep", min=0)
        ...     def run(self, module, hw): return PassResult(module)
        >>> [(k.name, k.type.__name__, k.default) for k in Demo.knobs()]
        [('depth', 'int', 2)]
    """
    return field(
        default=default,
        metadata={"help": help, "choices": tuple(choices), "min": min, "max": max},
    )


@dataclass(frozen=True)
class Knob:
    """One knob of a pass, as widgets and the command line see it."""

    name: str
    """Field name (``max_bytes``); the command line writes ``<pass>.<name>``."""
    type: type
    """``int``, ``float``, ``bool``, ``str`` or an ``enum.Enum`` subclass."""
    default: Any
    """Value when not set."""
    help: str = ""
    """One line for ``--help`` text and widget tooltips."""
    choices: tuple[Any, ...] = ()
    """Allowed values (empty: any value of ``type``)."""
    min: float | None = None
    """Smallest allowed number, if bounded."""
    max: float | None = None
    """Largest allowed number, if bounded."""

    def describe(self) -> str:
        """``max_bytes: int = 1048576 (largest folded result)``."""
        kind = self.type.__name__
        extra = f" one of {', '.join(_show(c) for c in self.choices)}" if self.choices else ""
        return f"{self.name}: {kind} = {_show(self.default)}{extra} ({self.help})"

    def parse(self, text: str, where: str = "") -> Any:
        """The value that ``text`` (a command-line string) names, checked.

        Examples:
            >>> Knob("n", int, 1).parse("64Ki")
            65536
            >>> Knob("on", bool, True).parse("off")
            False
        """
        label = where or self.name
        raw = text.strip()
        value: Any
        try:
            if self.type is bool:
                low = raw.lower()
                if low not in _TRUE | _FALSE:
                    raise ValueError
                value = low in _TRUE
            elif self.type is int:
                number = parse_number(raw)
                if not isinstance(number, int):
                    raise ValueError
                value = number
            elif self.type is float:
                value = float(parse_number(raw))
            elif isinstance(self.type, type) and issubclass(self.type, enum.Enum):
                value = _enum_member(self.type, raw)
            else:
                value = raw
        except (ValueError, Tx8labError):
            want = self.type.__name__
            hint = " (true/false)" if self.type is bool else ""
            raise Tx8labError(f"knob {label}: {text!r} is not a valid {want}{hint}") from None
        return self.check(value, where)

    def check(self, value: Any, where: str = "") -> Any:
        """``value`` if it has the knob's type and range (ints pass as floats), else an error."""
        label = where or self.name
        if isinstance(value, str) and self.type is not str:
            return self.parse(value, where)
        ok = isinstance(value, self.type)
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if self.type is int and isinstance(value, bool):
            ok = False
        if not ok:
            raise Tx8labError(
                f"knob {label} must be {self.type.__name__}, got {value!r} ({type(value).__name__})"
            )
        if self.choices and value not in self.choices:
            valid = ", ".join(_show(c) for c in self.choices)
            raise Tx8labError(f"knob {label} must be one of {valid}, got {_show(value)}")
        if self.min is not None and value < self.min:
            raise Tx8labError(f"knob {label} must be >= {self.min}, got {value}")
        if self.max is not None and value > self.max:
            raise Tx8labError(f"knob {label} must be <= {self.max}, got {value}")
        return value


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value)


def _enum_member(cls: type[enum.Enum], text: str) -> enum.Enum:
    for member in cls:
        if text in (member.name, str(member.value)):
            return member
    raise ValueError(text)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Decision:
    """One choice a pass made, and why: ``Decision(7, "removed", "result has no users")``.

    Views answer "why is this op yellow / gone / in this group" from these, without
    re-running the pass.
    """

    op_id: int | None
    """The op the choice is about (its stable id); None for a module-wide choice."""
    choice: str
    """What was decided: ``removed``, ``folded``, ``kept``, ``ALIGN`` ..."""
    reason: str
    """Why, in one line that names the ops involved (``%3``)."""
    pass_name: str = ""
    """The pass that decided (set by :meth:`Pass.decide`)."""
    related_ids: tuple[int, ...] = ()
    """Other ops involved: the Constant that replaced a folded op, a group's members."""
    data: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """Extra facts for views (bytes, cycles ...), JSON-friendly values."""

    @property
    def op_ids(self) -> tuple[int, ...]:
        """``op_id`` then ``related_ids``."""
        head = () if self.op_id is None else (self.op_id,)
        return (*head, *self.related_ids)

    def to_json(self) -> dict[str, Any]:
        """A plain dict for reports and widgets."""
        return {
            "pass": self.pass_name,
            "op_id": self.op_id,
            "choice": self.choice,
            "reason": self.reason,
            "related_ids": list(self.related_ids),
            "data": dict(self.data),
        }


@dataclass(frozen=True)
class PassResult:
    """What a pass returns: the new module plus the evidence for it."""

    module: Module
    """The output module; the input itself when the pass changed nothing."""
    decisions: tuple[Decision, ...] = ()
    """Every choice made, in the order made."""
    stats: Mapping[str, int | float | str] = field(default_factory=dict)
    """Counters for tables and the JSON report (``removed``: 3)."""
    artifacts: Mapping[str, Any] = field(default_factory=dict)
    """Larger results that are not IR (schedules, allocations) for views and the report."""


# --------------------------------------------------------------------------- context


def _no_report(done: int, total: int, postfix: Mapping[str, Any]) -> None:
    del done, total, postfix


@dataclass(frozen=True)
class PassContext:
    """What the runner hands a pass besides module and hw: its step index and a progress channel.

    Examples:
        >>> seen = []
        >>> ctx = PassContext(0, lambda done, total, postfix: seen.append((done, total, postfix)))
        >>> ctx.progress(1, 4, unit="group", hits=0); seen
        [(1, 4, {'unit': 'group', 'hits': 0})]
    """

    index: int = 0
    """Position of the pass in the pipeline."""
    report: Callable[[int, int, Mapping[str, Any]], None] = _no_report
    """Set by the runner: forwards ``(done, total, postfix)`` to the run's instruments."""

    def progress(self, done: int, total: int, **postfix: Any) -> None:
        """Report that ``done`` of ``total`` units of work are finished.

        ``postfix`` holds short figures shown beside the bar (``hits=3``); the keys
        ``unit`` (what is counted, ``"it"`` by default) and ``desc`` (the bar's label, the
        pass name by default) name the bar itself. Reporting never changes results.
        """
        self.report(done, total, postfix)


# --------------------------------------------------------------------------- passes


@dataclass(frozen=True)
class Pass(ABC):
    """Base of every pass: a frozen dataclass whose fields are its knobs.

    Subclasses set ``name`` (kebab case, the seed's pass name), declare knobs with
    :func:`knob`, and implement :meth:`run`. ``run`` must never mutate its input.
    """

    name: ClassVar[str] = ""
    """Pass name in kebab case, as the command line and the registry spell it."""
    summary: ClassVar[str] = ""
    """One line for listings."""

    def __post_init__(self) -> None:
        for spec in self.knobs():
            value = getattr(self, spec.name)
            checked = spec.check(value, f"{self.name}.{spec.name}")
            if checked is not value:
                object.__setattr__(self, spec.name, checked)

    @abstractmethod
    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        """Transform ``module`` (never mutated) for ``hw``."""

    def run_with(self, module: Module, hw: ChipConfig, context: PassContext) -> PassResult:
        """``run`` as the runner calls it, with a :class:`PassContext` (ignored by default).

        A pass that reports progress overrides this method and defines ``run(module, hw)``
        as ``self.run_with(module, hw, PassContext())``.
        """
        del context
        return self.run(module, hw)

    def check(self, module: Module) -> list[str]:
        """Post-conditions on this pass's output, as verifier problems (none by default)."""
        del module
        return []

    # -- knobs
    @classmethod
    def knobs(cls) -> tuple[Knob, ...]:
        """The knobs, in field order."""
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            kind: Any = hints.get(f.name, type(f.default))
            choices = tuple(f.metadata.get("choices", ()))
            if typing.get_origin(kind) is Literal:
                choices = choices or typing.get_args(kind)
                kind = type(choices[0])
            out.append(
                Knob(
                    f.name,
                    kind,
                    f.default,
                    f.metadata.get("help", ""),
                    choices,
                    f.metadata.get("min"),
                    f.metadata.get("max"),
                )
            )
        return tuple(out)

    @classmethod
    def knob(cls, name: str) -> Knob:
        """The knob called ``name``, or an error listing the valid ones."""
        for spec in cls.knobs():
            if spec.name == name:
                return spec
        valid = ", ".join(k.name for k in cls.knobs()) or "none"
        raise Tx8labError(f"pass {cls.name!r} has no knob {name!r}; its knobs: {valid}")

    def knob_values(self) -> dict[str, Any]:
        """Current value of every knob."""
        return {spec.name: getattr(self, spec.name) for spec in self.knobs()}

    def with_knobs(self, **values: Any) -> Self:
        """A copy with knobs changed (strings are parsed for the knob's type)."""
        checked = {k: self.knob(k).check(v, f"{self.name}.{k}") for k, v in values.items()}
        return dataclasses.replace(self, **checked)

    def spec(self) -> str:
        """The pass-pipeline text of this pass: ``name{knob=value ...}`` (changed knobs only).

        Examples:
            >>> from tx8lab.core.passes import DCE, FoldConstants
            >>> DCE().spec(), DCE(recurse_groups=False).spec()
            ('dce', 'dce{recurse_groups=false}')
            >>> FoldConstants.from_spec("fold-constants{max_bytes=4Ki}").max_bytes
            4096
        """
        changed = [
            f"{k.name}={_spec_value(getattr(self, k.name))}"
            for k in self.knobs()
            if getattr(self, k.name) != k.default
        ]
        return f"{self.name}{{{' '.join(changed)}}}" if changed else self.name

    @classmethod
    def from_spec(cls, text: str) -> Self:
        """The pass that ``text`` (one ``name{knob=value ...}``, as :meth:`spec` writes) names.

        Raises:
            Tx8labError: the text names another pass, an unknown knob or a bad value, or
                its braces or quotes do not balance; the message says what to write.
        """
        name, raw = parse_spec_entry(text)
        if name != cls.name:
            raise Tx8labError(f"pass spec {text.strip()!r} names pass {name!r}, not {cls.name!r}")
        values: dict[str, Any] = {}
        for key, (value, quoted) in raw.items():
            spec = cls.knob(key)
            where = f"{cls.name}.{key}"
            values[key] = (
                spec.check(value, where)
                if quoted and spec.type is str
                else spec.parse(value, where)
            )
        return cls(**values)

    def apply(self, module: Module, hw: ChipConfig, **knobs: Any) -> PassResult:
        """``run`` with some knobs changed: ``DCE().apply(m, hw, recurse_groups=False)``."""
        return (self.with_knobs(**knobs) if knobs else self).run(module, hw)

    # -- helpers for subclasses
    def decide(
        self,
        op_id: int | None,
        choice: str,
        reason: str,
        *,
        related: Iterable[int] = (),
        **data: Any,
    ) -> Decision:
        """A :class:`Decision` made by this pass."""
        return Decision(op_id, choice, reason, self.name, tuple(related), data)


# --------------------------------------------------------------------------- spec text

_SPEC_HELP = "write name{knob=value knob2=value2}, passes separated by commas"
_BARE = re.compile(r"[^\s,{}=\"\\]+")


def _spec_value(value: Any) -> str:
    """One knob value as spec text; strings that need it are quoted."""
    text = _show(value)
    if isinstance(value, str) and not _BARE.fullmatch(text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def split_spec(text: str) -> list[str]:
    """The entries of a pipeline text ``'p1{k=v},p2'``, split at commas outside braces and quotes.

    Examples:
        >>> split_spec('dce, fold-constants{max_bytes=4Ki},group-pattern{ddr_kinds="a,b"}')
        ['dce', 'fold-constants{max_bytes=4Ki}', 'group-pattern{ddr_kinds="a,b"}']
    """
    entries: list[str] = []
    depth, quoted, escaped, start = 0, False, False, 0
    for i, ch in enumerate(text):
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise Tx8labError(f"pass pipeline {text!r}: unbalanced '}}'; {_SPEC_HELP}")
        elif ch == "," and depth == 0:
            entries.append(text[start:i].strip())
            start = i + 1
    if quoted:
        raise Tx8labError(f"pass pipeline {text!r}: unterminated '\"'; {_SPEC_HELP}")
    if depth:
        raise Tx8labError(f"pass pipeline {text!r}: unbalanced '{{'; {_SPEC_HELP}")
    entries.append(text[start:].strip())
    if any(not e for e in entries):
        raise Tx8labError(f"pass pipeline {text!r}: an empty pass name; {_SPEC_HELP}")
    return entries


def parse_spec_entry(text: str) -> tuple[str, dict[str, tuple[str, bool]]]:
    """``(name, {knob: (raw value, was quoted)})`` for one ``name{knob=value ...}``.

    Examples:
        >>> parse_spec_entry('group-pattern{ddr_kinds="a b" single_user=true}')
        ('group-pattern', {'ddr_kinds': ('a b', True), 'single_user': ('true', False)})
    """
    entries = split_spec(text)
    if len(entries) != 1:
        raise Tx8labError(f"pass spec {text!r} holds {len(entries)} passes, not one")
    (entry,) = entries
    name, brace, body = entry.partition("{")
    name = name.strip()
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        raise Tx8labError(f"pass spec {entry!r}: {name!r} is not a pass name; {_SPEC_HELP}")
    if not brace:
        return name, {}
    if not body.endswith("}"):
        raise Tx8labError(
            f"pass spec {entry!r}: unbalanced braces (text after '}}' or none); {_SPEC_HELP}"
        )
    body = body[:-1]
    values: dict[str, tuple[str, bool]] = {}
    i = 0
    while i < len(body):
        if body[i].isspace():
            i += 1
            continue
        match = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=").match(body, i)
        if match is None:
            raise Tx8labError(
                f"pass spec {entry!r}: expected knob=value at {body[i:]!r}; {_SPEC_HELP}"
            )
        key = match[1]
        i = match.end()
        if i < len(body) and body[i] == '"':
            chars: list[str] = []
            i += 1
            while i < len(body) and body[i] != '"':
                if body[i] == "\\" and i + 1 < len(body):
                    i += 1
                chars.append(body[i])
                i += 1
            if i >= len(body):
                raise Tx8labError(f"pass spec {entry!r}: unterminated '\"'; {_SPEC_HELP}")
            value, quoted = "".join(chars), True
            i += 1
        else:
            bare = _BARE.match(body, i)
            if bare is None:
                raise Tx8labError(
                    f"pass spec {entry!r}: knob {name}.{key} has no value; write {key}=VALUE "
                    '(quote a value with spaces or commas: "a b")'
                )
            value, quoted = bare[0], False
            i = bare.end()
        if key in values:
            raise Tx8labError(f"pass spec {entry!r}: knob {name}.{key} is set twice")
        values[key] = (value, quoted)
    return name, values


# --------------------------------------------------------------------------- steps


@dataclass(frozen=True)
class Step:
    """One executed pass: its index, the pass with its knobs, input, result and wall time."""

    index: int
    """Position in the pipeline (0-based)."""
    pass_: Pass
    """The pass instance that ran (its fields are the knobs used)."""
    before: Module
    """Input module."""
    result: PassResult
    """What the pass returned."""
    elapsed_s: float
    """Wall time of the pass (without verification), seconds; for a cached step, the
    time of the run that filled the cache."""
    cached: bool = False
    """True when an :class:`Explorer` took the result from its cache."""

    @property
    def name(self) -> str:
        """The pass name."""
        return self.pass_.name

    @property
    def knobs(self) -> dict[str, Any]:
        """Knob values the pass ran with."""
        return self.pass_.knob_values()

    @property
    def after(self) -> Module:
        """Output module."""
        return self.result.module

    @property
    def decisions(self) -> tuple[Decision, ...]:
        """The pass's decisions."""
        return self.result.decisions

    @property
    def stats(self) -> Mapping[str, int | float | str]:
        """The pass's counters."""
        return self.result.stats

    @cached_property
    def changed(self) -> bool:
        """Whether the output differs from the input (Compiler Explorer hides other steps)."""
        return not same_module(self.before, self.after)

    @property
    def num_ops_before(self) -> int:
        """Ops in the input (nested ones included, terminators not)."""
        return self.before.num_ops

    @property
    def num_ops_after(self) -> int:
        """Ops in the output."""
        return self.after.num_ops


def same_module(a: Module, b: Module) -> bool:
    """Whether two modules print the same; cheap when a pass shared its unchanged ops."""
    if a is b:
        return True
    if (
        dict(a.attrs) == dict(b.attrs)
        and len(a.functions) == len(b.functions)
        and all(
            fa.name == fb.name and fa.args == fb.args and fa.ops == fb.ops
            for fa, fb in zip(a.functions, b.functions, strict=True)
        )
    ):
        return True
    from tx8lab.core.text import print_module

    return print_module(a) == print_module(b)


__all__ = [
    "Decision",
    "Knob",
    "Pass",
    "PassContext",
    "PassResult",
    "Step",
    "knob",
    "parse_spec_entry",
    "same_module",
    "split_spec",
]
