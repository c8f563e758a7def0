"""The one exception type tx8lab raises for bad input.

Every message names what is wrong (the op, field, node or file) and what to do about it,
so a notebook shows one readable line instead of a traceback into library code.
"""

from __future__ import annotations


class Tx8labError(ValueError):
    """Bad input to tx8lab: a malformed module, an unsupported op, a knob out of range."""


class SpmOverflow(Tx8labError):
    """A group's buffers do not fit in the tile's usable SPM.

    Raised by slicing (the live bytes of the smallest split still exceed the SPM) and by
    the allocator (no packing within the capacity); the search counts it as a candidate's
    ``spm-overflow`` status.
    """

    def __init__(self, message: str, *, needed_bytes: int, available_bytes: int) -> None:
        super().__init__(message)
        self.needed_bytes = needed_bytes
        """Bytes the buffers take: live bytes at once, or the height of the best packing
        found (a packing can fail on fragmentation with ``needed_bytes`` below the SPM)."""
        self.available_bytes = available_bytes
        """The usable SPM (capacity) the buffers had to fit in."""


class ProgramError(Tx8labError):
    """The executed program went wrong: a bad SPM or DDR access, or a trace mismatch.

    The message names the group, the op, the buffer and the step; the fields say the same
    for code that reacts to it (the views mark the command).
    """

    def __init__(
        self,
        message: str,
        *,
        group: int = -1,
        op: int = -1,
        buffer: str = "",
        step: int = -1,
        tile: int = -1,
    ) -> None:
        super().__init__(message)
        self.group = group
        self.op = op
        self.buffer = buffer
        self.step = step
        self.tile = tile
