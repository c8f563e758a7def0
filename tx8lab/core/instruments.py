"""Runner instruments: timing, verification, IR dumps, progress bars and the result cache.

Spec: DESIGN.md §5 ("cross-cutting concerns are instruments handed to the runner"), in
the shape of TVM's PassInstrument. The runner (:mod:`tx8lab.core.runner`) calls each
instrument's hooks in list order: ``start(run)``, then per pass ``before`` (the first
instrument that returns a result skips the pass, TVM's ``should_run``), ``progress`` while
the pass reports, ``after(step)``, and ``finish()`` when the run ends, fails or is dropped.

Readings chosen:

- ``before`` returns ``None`` (run the pass), a :class:`PassResult` (used as the step's
  result, wall time 0) or an earlier :class:`Step` of the same pass on the same input
  object (its result, wall time and ``changed`` answer are reused). Either gives a step
  with ``cached=True``; later instruments' ``before`` is not called for it.
- The runner itself measures ``Step.elapsed_s`` (the wall time of ``run``, without the
  instruments), because a step carries it; :class:`Timing` collects those times and the
  run's own wall time, hooks included.
- :class:`Verify` skips cached steps: they were verified when they ran. An ``after`` that
  raises stops the run, so the instruments after it do not see the step (put
  :class:`Cache` last, and a bad result is never cached).
- :class:`Progress` shows nothing unless stderr is a terminal or a Jupyter kernel runs
  (``TX8LAB_NO_PROGRESS=1`` turns that off); a bar never changes results.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from tx8lab.core.ir import Module
from tx8lab.core.passes.base import Pass, PassResult, Step
from tx8lab.core.verify import first_problem, verify_problems
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig


@dataclass(frozen=True)
class Run:
    """What an instrument learns when a run starts."""

    hw: ChipConfig
    """The chip every pass runs for."""
    passes: tuple[Pass, ...]
    """The passes the run will execute, in order (``until`` applied)."""


class Instrument:
    """Base of runner instruments; every hook does nothing, override the ones you need."""

    def start(self, run: Run) -> None:
        """A run begins (before its first pass)."""

    def before(self, index: int, pass_: Pass, module: Module) -> PassResult | Step | None:
        """Pass ``index`` is about to run on ``module``; return a result to skip it."""
        del index, pass_, module
        return None

    def progress(
        self, index: int, pass_: Pass, done: int, total: int, postfix: Mapping[str, Any]
    ) -> None:
        """The running pass reported ``done`` of ``total`` (see ``PassContext.progress``)."""

    def after(self, step: Step) -> None:
        """A pass finished (or came from a cache); raise to stop the run."""

    def finish(self) -> None:
        """The run ended: all passes ran, one failed, or the caller dropped the iterator."""


def default_instruments() -> list[Instrument]:
    """What a run uses when given no instruments: :class:`Verify`, then :class:`Progress`."""
    return [Verify(), Progress()]


# --------------------------------------------------------------------------- the instruments


class Timing(Instrument):
    """Wall time per pass (``Step.elapsed_s``) and of the whole run, as TVM's PassTimingInstrument.

    Examples:
        >>> from tx8lab.core.builder import Builder
        >>> from tx8lab.core.runner import run_pipeline
        >>> from tx8lab.hw import TX81
        >>> b = Builder(); b.output(b.op("Relu", b.input((2,))))
        >>> timing = Timing()
        >>> _ = list(run_pipeline(b.finish(), ["dce"], TX81, instruments=[timing]))
        >>> list(timing.seconds), timing.run_s >= timing.total_s
        ([0], True)
    """

    def __init__(self) -> None:
        self.seconds: dict[int, float] = {}
        """Step index -> wall seconds of its pass (for a cached step, of the run that filled
        the cache)."""
        self.names: dict[int, str] = {}
        """Step index -> pass name."""
        self.run_s = 0.0
        """Wall seconds from ``start`` to ``finish``: passes, hooks and verification."""
        self._t0 = 0.0

    def start(self, run: Run) -> None:
        """Forget the previous run."""
        del run
        self.seconds.clear()
        self.names.clear()
        self._t0 = time.perf_counter()

    def after(self, step: Step) -> None:
        """Record the step's wall time."""
        self.seconds[step.index] = step.elapsed_s
        self.names[step.index] = step.name

    def finish(self) -> None:
        """Stop the run's clock."""
        self.run_s = time.perf_counter() - self._t0

    @property
    def total_s(self) -> float:
        """Sum of the passes' wall times."""
        return sum(self.seconds.values())

    def render(self) -> str:
        """One line per step: index, pass, wall ms, then the total."""
        lines = [f"{'#':>3}  {'pass':<24}{'wall ms':>9}"]
        lines += [
            f"{i:>3}  {self.names[i]:<24}{1e3 * s:>9.2f}" for i, s in sorted(self.seconds.items())
        ]
        lines.append(f"{'':>3}  {'total':<24}{1e3 * self.total_s:>9.2f}")
        return "\n".join(lines)


class Verify(Instrument):
    """The verifier on a run's input, then with the pass's own ``check`` after every pass.

    The input is checked once per run, before its first pass: a module that is wrong from
    the start is reported as the input's problem, not as the first pass's.
    """

    def __init__(self) -> None:
        self._input_checked = False

    def start(self, run: Run) -> None:
        """A new run: its input has not been checked yet."""
        del run
        self._input_checked = False

    def before(self, index: int, pass_: Pass, module: Module) -> PassResult | Step | None:
        """Raise when the run's input does not verify (checked before its first pass)."""
        if not self._input_checked:
            self._input_checked = True
            problems = verify_problems(module)
            if problems:
                raise Tx8labError(
                    f"the input module does not verify (checked before pass {pass_.name}, "
                    f"step {index}; no pass ran): {first_problem(problems)}"
                )
        return None

    def after(self, step: Step) -> None:
        """Raise when the step's output does not verify; the message names pass and step."""
        if step.cached:
            return
        problems = verify_problems(step.after) + list(step.pass_.check(step.after))
        if problems:
            raise Tx8labError(
                f"pass {step.name} (step {step.index}) produced a module that does not "
                f"verify: {first_problem(problems)}"
            )


class PrintAfterAll(Instrument):
    """The IR after each pass, written to ``stream`` (``--print-ir-after-all``).

    Each module follows a header like MLIR's own, ``// -----// IR Dump After dce (step 1)
    //----- //``; ``title``, when given, is a comment line written when the run starts.
    """

    def __init__(self, stream: TextIO, *, elide_bytes: int | None = None, title: str = "") -> None:
        self.stream = stream
        """Where the dumps go."""
        self.elide_bytes = elide_bytes
        """Constant data above this many bytes prints elided (None: all of it)."""
        self.title = title
        """Opening comment line (without ``// ``); empty: none."""

    def start(self, run: Run) -> None:
        """Write the title line."""
        del run
        if self.title:
            self.stream.write(f"// {self.title}\n")

    def after(self, step: Step) -> None:
        """Write the step's output module."""
        from tx8lab.core.text import print_module

        self.stream.write(f"// -----// IR Dump After {step.name} (step {step.index}) //----- //\n")
        self.stream.write(print_module(step.after, elide_bytes=self.elide_bytes))
        self.stream.write("\n")
        self.stream.flush()


def is_interactive() -> bool:
    """Whether a progress bar would be seen: a Jupyter kernel or a terminal on stderr."""
    if os.environ.get("TX8LAB_NO_PROGRESS"):
        return False
    return "ipykernel" in sys.modules or sys.stderr.isatty()


class Progress(Instrument):
    """A tqdm bar (``tqdm.auto``: a widget in Jupyter) for each pass that reports progress.

    ``enabled=None`` decides on the first report with :func:`is_interactive`. The bar's
    label is the pass name, or the ``desc`` the pass reports; its unit the ``unit`` it
    reports; every other postfix key is shown beside the bar.
    """

    def __init__(
        self, enabled: bool | None = None, *, file: TextIO | None = None, mininterval: float = 0.1
    ) -> None:
        self.enabled = enabled
        """True: always show, False: never, None: when :func:`is_interactive`."""
        self.file = file
        """Stream of a terminal bar (None: stderr)."""
        self.mininterval = mininterval
        """Least seconds between redraws (tqdm's ``mininterval``)."""
        self._bars: dict[int, Any] = {}

    def progress(
        self, index: int, pass_: Pass, done: int, total: int, postfix: Mapping[str, Any]
    ) -> None:
        """Advance (or open) the pass's bar to ``done`` of ``total``."""
        if self.enabled is None:
            self.enabled = is_interactive()
        if not self.enabled:
            return
        extra = {k: v for k, v in postfix.items() if k not in ("unit", "desc")}
        bar = self._bars.get(index)
        if bar is None:
            from tqdm.auto import tqdm

            bar = tqdm(
                total=total,
                desc=str(postfix.get("desc", pass_.name)),
                unit=str(postfix.get("unit", "it")),
                leave=False,
                file=self.file,
                mininterval=self.mininterval,
            )
            self._bars[index] = bar
        bar.total = total
        if extra:
            bar.set_postfix(extra, refresh=False)
        bar.update(done - bar.n)

    def after(self, step: Step) -> None:
        """Close the step's bar."""
        bar = self._bars.pop(step.index, None)
        if bar is not None:
            bar.close()

    def finish(self) -> None:
        """Close the bars left open (a pass that failed)."""
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()


class Cache(Instrument):
    """Results keyed on (input module identity, pass with its knobs, hw), least recently used out.

    A knob change at pass k gives pass k a new key; when its output is a new module object
    every later pass misses too, while passes before k hit. A pass that changed nothing
    returns its input object, so the passes after it hit.
    """

    def __init__(self, size: int = 512) -> None:
        self.size = size
        """Most results kept."""
        self.run_count: Counter[str] = Counter()
        """Times each pass (by name) really ran, cache hits not counted."""
        self.hits = 0
        """Steps answered from the cache."""
        self._entries: OrderedDict[tuple[Any, ...], Step] = OrderedDict()
        self._hw: Any = None

    def __len__(self) -> int:
        return len(self._entries)

    def start(self, run: Run) -> None:
        """Key this run's results on its hw."""
        self._hw = _hashable(run.hw)

    def before(self, index: int, pass_: Pass, module: Module) -> Step | None:
        """The step that ran ``pass_`` on this very ``module`` for this hw, if kept."""
        del index
        key = (module, pass_, self._hw)
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            self.hits += 1
        return hit

    def after(self, step: Step) -> None:
        """Keep a step that ran; for a hit, keep the step that answered ``changed``."""
        key = (step.before, step.pass_, self._hw)
        if step.cached:
            kept = self._entries.get(key)
            # ``changed`` compares two modules (it may print both): computed once per
            # cached result, on the step that first asked
            if kept is not None and "changed" not in kept.__dict__:
                self._entries[key] = step
            return
        self.run_count[step.name] += 1
        self._entries[key] = step
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every result (run counts stay)."""
        self._entries.clear()


def _hashable(value: Any) -> Any:
    """``value`` itself when hashable, else an identity token."""
    try:
        hash(value)
    except TypeError:
        return (id(value), value.__class__)
    return value


__all__ = [
    "Cache",
    "Instrument",
    "PrintAfterAll",
    "Progress",
    "Run",
    "Timing",
    "Verify",
    "default_instruments",
    "is_interactive",
]
