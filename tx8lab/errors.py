"""The one exception type tx8lab raises for bad input.

Every message names what is wrong (the op, field, node or file) and what to do about it,
so a notebook shows one readable line instead of a traceback into library code.
"""

from __future__ import annotations


class Tx8labError(ValueError):
    """Bad input to tx8lab: a malformed module, an unsupported op, a knob out of range."""
