"""Building many frozen objects at once: a program's commands, their streams and timings.

A program of resnet50 is some 14k commands and 40k ranges, LLaMA's with 32 layers some 850k
commands; two things Python does for each object cost more than the work it stands for:

- **The cyclic garbage collector.** Every command built survives, so the collector's young
  generations promote them all and its full collections walk the whole heap (the
  pipeline's modules included) again and again while finding nothing to free, which more
  than doubled the time of building a program. :func:`gc_paused` turns it off for the
  build; garbage with reference cycles made meanwhile is collected once it runs again.
  What it then collects should be little: a recursive closure (``def walk(...)`` that calls
  ``walk``) is a reference cycle (the function holds the cell that holds it), so whatever
  it refers to, a whole init pipeline in slicing, stays until a collection. The hot ones
  are module-level functions instead (their state passed in): on resnet50's pipeline
  with ``group-cost.noc`` that cut the garbage the collector finds from some 415,000
  objects to 2,100, and its time from about 0.3 s to 0.1 s.
- **A frozen dataclass's ``__init__``** sets each field through ``object.__setattr__``
  (the class forbids plain assignment). For a class with ``slots=True`` (which also keeps
  each instance at a few words per field instead of a dict), :func:`constructor` gives a
  function that takes every field positionally and stores each through its slot: the same
  object (equal, same hash, same repr, pickles alike) in half the time.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block; re-enable it after if it was on.

    Examples:
        >>> import gc
        >>> with gc_paused():
        ...     gc.isenabled()
        False
        >>> gc.isenabled()
        True
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def constructor(cls: type[T]) -> Callable[..., T]:
    """``make(*fields) -> cls`` for a frozen dataclass with slots: every field, in order.

    Raises:
        TypeError: ``cls`` is not a frozen dataclass with ``slots=True``, or it has a
            ``__post_init__`` (which ``make`` would skip).

    Examples:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True, slots=True)
        ... class Point:
        ...     x: int
        ...     y: int = 0
        >>> make = constructor(Point)
        >>> make(1, 2) == Point(1, 2), hash(make(1, 2)) == hash(Point(1, 2)), make(1, 2)
        (True, True, Point(x=1, y=2))
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"constructor: {cls.__name__} is not a frozen dataclass with slots")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"constructor: {cls.__name__} has a __post_init__")
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    space: dict[str, Any] = {"new": object.__new__, "cls": cls}
    for name in names:
        space[f"set_{name}"] = cls.__dict__[name].__set__  # the slot's member descriptor
    source = (
        f"def make({', '.join(names)}):\n"
        "    obj = new(cls)\n"
        + "".join(f"    set_{name}(obj, {name})\n" for name in names)
        + "    return obj\n"
    )
    exec(source, space)
    make: Callable[..., T] = space["make"]
    make.__qualname__ = f"constructor({cls.__qualname__})"
    return make


__all__ = ["constructor", "gc_paused"]
