"""The pipeline runner: run passes in order (``run_pipeline``) or incrementally (``Explorer``).

Spec: DESIGN.md §5 (the runner yields one ``Step`` per pass and caches results keyed on
input module, pass with its knobs and hw). The pass contract is :mod:`tx8lab.core.passes.base`.

Readings chosen:

- The runner verifies the module after each pass by default.
- :class:`Explorer` caches a pass's result on (input module *identity*, the pass with its
  knobs, hw). A knob change at pass k gives pass k a new key; when its output is a new
  module object every later pass misses the cache too and re-runs, while passes before k
  hit it. A pass that changed nothing returns its input object, so the passes after it
  hit the cache. Setting the knob back hits the old entries again.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from tx8lab.core.ir import Module
from tx8lab.core.passes import DEFAULT_PIPELINE, resolve_passes
from tx8lab.core.passes.base import Pass, PassResult, Step
from tx8lab.core.verify import verify_problems
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

# --------------------------------------------------------------------------- running


def execute(
    p: Pass, module: Module, hw: ChipConfig, *, verify: bool = True, index: int = 0
) -> tuple[PassResult, float]:
    """Run one pass and (by default) verify its output; returns (result, wall seconds).

    Raises:
        Tx8labError: the pass rejected its input, or its output does not verify; the
            message names the pass and the op.
    """
    start = time.perf_counter()
    try:
        result = p.run(module, hw)
    except Tx8labError as err:
        raise Tx8labError(f"pass {p.name} (step {index}): {err}") from err
    elapsed = time.perf_counter() - start
    if not isinstance(result, PassResult):
        raise Tx8labError(f"pass {p.name} returned {type(result).__name__}, not a PassResult")
    if verify:
        problems = verify_problems(result.module) + list(p.check(result.module))
        if problems:
            more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
            raise Tx8labError(
                f"pass {p.name} (step {index}) produced a module that does not verify: "
                f"{problems[0]}{more}"
            )
    return result, elapsed


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
    verify: bool = True,
) -> Iterator[Step]:
    """Run passes in order, yielding one :class:`Step` each; stop after pass ``until``.

    Pass names, knob settings and ``until`` are checked before the first pass runs; the
    passes run lazily as the iterator is advanced (``next(steps)`` runs one pass).
    """
    pipeline = resolve_passes(passes, knobs)
    stop = _until_index(pipeline, until)

    def steps() -> Iterator[Step]:
        current = module
        for index, p in enumerate(pipeline[:stop]):
            result, elapsed = execute(p, current, hw, verify=verify, index=index)
            yield Step(index, p, current, result, elapsed)
            current = result.module

    return steps()


# --------------------------------------------------------------------------- exploring


class Explorer:
    """A pipeline that re-runs only what a change invalidates, for notebooks and widgets.

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
        verify: bool = True,
        until: str | None = None,
        cache_size: int = 512,
    ) -> None:
        if pipeline is None:
            pipeline = DEFAULT_PIPELINE
        if hw is None:
            raise Tx8labError("Explorer needs hw: pass e.g. tx8lab.hw.get_preset('tx81')")
        self._module = module
        self._passes = resolve_passes(pipeline)
        self._hw = hw
        self._verify = verify
        self._until = until
        _until_index(self._passes, until)
        self._cache: OrderedDict[tuple[Any, ...], tuple[PassResult, float, Step]] = OrderedDict()
        self._cache_size = cache_size
        self._steps: list[Step] | None = None
        self.run_count: Counter[str] = Counter()
        """Times each pass (by name) really ran, cache hits not counted."""

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
        self._cache.clear()
        self._steps = None

    def _run(self) -> list[Step]:
        steps: list[Step] = []
        current = self._module
        hw_key: Any = _hashable(self._hw)
        for index, p in enumerate(self._passes[: _until_index(self._passes, self._until)]):
            key = (current, p, hw_key)
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                result, elapsed, first = hit
                step = Step(index, p, current, result, elapsed, True)
                # ``changed`` compares two modules (it may print both): computed once per
                # cached result, on the step that first asked
                if "changed" in first.__dict__:
                    step.__dict__["changed"] = first.__dict__["changed"]
                else:
                    self._cache[key] = (result, elapsed, step)
            else:
                result, elapsed = execute(p, current, self._hw, verify=self._verify, index=index)
                self.run_count[p.name] += 1
                step = Step(index, p, current, result, elapsed, False)
                self._cache[key] = (result, elapsed, step)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            steps.append(step)
            current = result.module
        return steps


def _hashable(value: Any) -> Any:
    """``value`` itself when hashable, else an identity token."""
    try:
        hash(value)
    except TypeError:
        return (id(value), value.__class__)
    return value


__all__ = [
    "Explorer",
    "execute",
    "run_pipeline",
]
