"""The pipeline runner: run passes in order (``run_pipeline``) or incrementally (``Explorer``).

Spec: DESIGN.md §5 (the runner yields one ``Step`` per pass; timing, verification, IR
dumps, progress and the cache are instruments handed to it). The pass contract is
:mod:`tx8lab.core.passes.base`, the instruments :mod:`tx8lab.core.instruments`.

Readings chosen:

- ``instruments=None`` means :func:`~tx8lab.core.instruments.default_instruments`
  (verify after each pass, progress bars); a list replaces it, so ``instruments=[]``
  runs without verification.
- :class:`Explorer` is the run's inputs plus a :class:`~tx8lab.core.instruments.Cache`
  placed after the other instruments.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from tx8lab.core.instruments import Cache, Instrument, Run, default_instruments
from tx8lab.core.ir import Module
from tx8lab.core.passes import DEFAULT_PIPELINE, resolve_passes
from tx8lab.core.passes.base import Pass, PassContext, PassResult, Step
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

# --------------------------------------------------------------------------- running


def _report(
    instruments: Sequence[Instrument],
    index: int,
    p: Pass,
    done: int,
    total: int,
    postfix: Mapping[str, Any],
) -> None:
    for inst in instruments:
        inst.progress(index, p, done, total, postfix)


def run_step(
    index: int, p: Pass, module: Module, hw: ChipConfig, instruments: Sequence[Instrument]
) -> Step:
    """One pass as the runner runs it: ``before`` hooks, ``run_with``, ``after`` hooks.

    Raises:
        Tx8labError: the pass rejected its input, or an instrument (:class:`Verify`)
            rejected its output; the message names the pass and the step.
    """
    hit: PassResult | Step | None = None
    for inst in instruments:
        hit = inst.before(index, p, module)
        if hit is not None:
            break
    if isinstance(hit, Step):
        step = Step(index, p, module, hit.result, hit.elapsed_s, True)
        if "changed" in hit.__dict__:
            step.__dict__["changed"] = hit.__dict__["changed"]
    elif isinstance(hit, PassResult):
        step = Step(index, p, module, hit, 0.0, True)
    else:
        context = PassContext(index, partial(_report, instruments, index, p))
        start = time.perf_counter()
        try:
            result = p.run_with(module, hw, context)
        except Tx8labError as err:
            raise Tx8labError(f"pass {p.name} (step {index}): {err}") from err
        elapsed = time.perf_counter() - start
        if not isinstance(result, PassResult):
            raise Tx8labError(f"pass {p.name} returned {type(result).__name__}, not a PassResult")
        step = Step(index, p, module, result, elapsed)
    for inst in instruments:
        inst.after(step)
    return step


def run_steps(
    module: Module,
    passes: Sequence[Pass],
    hw: ChipConfig,
    instruments: Sequence[Instrument],
    *,
    first_index: int = 0,
) -> Iterator[Step]:
    """Run ``passes`` in order under ``instruments`` (exactly these), one step per ``next``."""
    for inst in instruments:
        inst.start(Run(hw, tuple(passes)))
    try:
        current = module
        for index, p in enumerate(passes, first_index):
            step = run_step(index, p, current, hw, instruments)
            yield step
            current = step.after
    finally:
        for inst in instruments:
            inst.finish()


def execute(
    p: Pass,
    module: Module,
    hw: ChipConfig,
    *,
    index: int = 0,
    instruments: Iterable[Instrument] | None = None,
) -> tuple[PassResult, float]:
    """Run one pass (as step ``index``) and, by default, verify it; (result, wall seconds).

    Raises:
        Tx8labError: the pass rejected its input, or its output does not verify; the
            message names the pass and the op.
    """
    chosen = default_instruments() if instruments is None else list(instruments)
    (step,) = run_steps(module, [p], hw, chosen, first_index=index)
    return step.result, step.elapsed_s


def _until_index(passes: Sequence[Pass], until: str | None) -> int:
    if until is None:
        return len(passes)
    for i, p in enumerate(passes):
        if p.name == until:
            return i + 1
    names = ", ".join(p.name for p in passes) or "none"
    raise Tx8labError(f"--until {until}: no such pass in the pipeline ({names})")


def run_pipeline(
    module: Module,
    passes: Iterable[Pass | str],
    hw: ChipConfig,
    knobs: Mapping[str, Any] | Iterable[str] | None = None,
    until: str | None = None,
    instruments: Iterable[Instrument] | None = None,
) -> Iterator[Step]:
    """Run passes in order, yielding one :class:`Step` each; stop after pass ``until``.

    Pass names, knob settings and ``until`` are checked before the first pass runs; the
    passes run lazily as the iterator is advanced (``next(steps)`` runs one pass).
    ``instruments`` (default: verify, progress) watch the run; ``[]`` runs bare.
    """
    pipeline = resolve_passes(passes, knobs)
    stop = _until_index(pipeline, until)
    chosen = default_instruments() if instruments is None else list(instruments)
    return run_steps(module, pipeline[:stop], hw, chosen)


# --------------------------------------------------------------------------- exploring


class Explorer:
    """A pipeline that re-runs only what a change invalidates, for notebooks and widgets.

    ``instruments`` (default: verify, progress) watch every run; the Explorer's own
    :class:`~tx8lab.core.instruments.Cache` (``cache_size`` results) runs after them.

    Examples:
        >>> from tx8lab.core.builder import Builder
        >>> from tx8lab.hw import TX81
        >>> b = Builder(); x = b.input((2,)); _ = b.op("Neg", x); b.output(b.op("Relu", x))
        >>> ex = Explorer(b.finish(), ["fold-constants", "dce"], TX81)
        >>> [s.name for s in ex.steps], ex.final.num_ops
        (['fold-constants', 'dce'], 1)
        >>> ex.set_knob("fold-constants.max_bytes", "4Ki"); _ = ex.steps
        >>> dict(ex.run_count)  # fold changed nothing, so dce's input is the same object
        {'fold-constants': 2, 'dce': 1}
    """

    def __init__(
        self,
        module: Module,
        pipeline: Iterable[Pass | str] | None = None,
        hw: ChipConfig | None = None,
        *,
        until: str | None = None,
        cache_size: int = 512,
        instruments: Iterable[Instrument] | None = None,
    ) -> None:
        if pipeline is None:
            pipeline = DEFAULT_PIPELINE
        if hw is None:
            raise Tx8labError("Explorer needs hw: pass e.g. tx8lab.hw.get_preset('tx81')")
        self._module = module
        self._passes = resolve_passes(pipeline)
        self._hw = hw
        self._until = until
        _until_index(self._passes, until)
        self._instruments = default_instruments() if instruments is None else list(instruments)
        self.cache = Cache(cache_size)
        """The results kept between runs (run after ``instruments``)."""
        self._steps: list[Step] | None = None

    @property
    def run_count(self) -> Counter[str]:
        """Times each pass (by name) really ran, cache hits not counted."""
        return self.cache.run_count

    @property
    def instruments(self) -> tuple[Instrument, ...]:
        """The instruments every run uses, then :attr:`cache`."""
        return (*self._instruments, self.cache)

    # -- inputs
    @property
    def module(self) -> Module:
        """The input module."""
        return self._module

    @module.setter
    def module(self, module: Module) -> None:
        self._module = module
        self._steps = None

    @property
    def hw(self) -> ChipConfig:
        """The chip every pass runs for."""
        return self._hw

    @hw.setter
    def hw(self, hw: ChipConfig) -> None:
        self._hw = hw
        self._steps = None

    @property
    def passes(self) -> tuple[Pass, ...]:
        """The pipeline with its current knobs."""
        return tuple(self._passes)

    @property
    def until(self) -> str | None:
        """Name of the last pass to run (None: all)."""
        return self._until

    @until.setter
    def until(self, name: str | None) -> None:
        _until_index(self._passes, name)
        self._until = name
        self._steps = None

    def set_knob(self, key: str, value: Any) -> None:
        """Set ``"pass.knob"`` (a string is parsed); later passes re-run on next access."""
        self._passes = resolve_passes(self._passes, {key: value})
        self._steps = None

    def knobs(self) -> dict[str, Any]:
        """Every knob as ``{"pass.knob": value}``."""
        return {f"{p.name}.{k}": v for p in self._passes for k, v in p.knob_values().items()}

    # -- results
    @property
    def steps(self) -> list[Step]:
        """One step per executed pass, re-running only passes whose input or knobs changed."""
        if self._steps is None:
            self._steps = self._run()
        return self._steps

    @property
    def final(self) -> Module:
        """The output of the last executed pass (the input when no pass runs)."""
        steps = self.steps
        return steps[-1].after if steps else self._module

    def step(self, name: str) -> Step:
        """The first executed step of pass ``name``."""
        for s in self.steps:
            if s.name == name:
                return s
        names = ", ".join(s.name for s in self.steps) or "none"
        raise Tx8labError(f"no executed step named {name!r} (executed: {names})")

    def clear_cache(self) -> None:
        """Forget every cached result."""
        self.cache.clear()
        self._steps = None

    def _run(self) -> list[Step]:
        stop = _until_index(self._passes, self._until)
        return list(run_steps(self._module, self._passes[:stop], self._hw, self.instruments))


__all__ = [
    "Explorer",
    "execute",
    "run_pipeline",
    "run_step",
    "run_steps",
]
