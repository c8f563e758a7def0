"""Pausing Python's cyclic garbage collector while a large acyclic structure is built.

A program of resnet50 is some 14k commands and 40k ranges, LLaMA's with 32 layers some 850k
commands: every one survives, so the collector's young generations promote them all and
its full collections walk the whole heap (the pipeline's modules included) again and again
while finding nothing to free, which more than doubled the time of building one. Garbage
with reference cycles made meanwhile is only collected later, once the collector runs again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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


__all__ = ["gc_paused"]
