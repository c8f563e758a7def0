"""TX8 hardware description: chip/tile configuration and presets (DESIGN.md §6).

``ChipConfig``/``TileConfig`` are frozen dataclasses passed explicitly to every pass; the
numbers for the TX81, each with its source, are in ``tx8lab.hw.presets``. The tile cost
model is :mod:`tx8lab.hw.cost` (cycles of an op slice per engine, with ``explain``).
"""

from __future__ import annotations

from tx8lab.hw.config import ChipConfig, TileConfig, parse_number
from tx8lab.hw.presets import (
    DEFAULT_PRESET,
    PRESETS,
    TX81,
    TX81_TILE,
    get_preset,
    parse_override,
    resolve_hw,
)

__all__ = [
    "DEFAULT_PRESET",
    "PRESETS",
    "TX81",
    "TX81_TILE",
    "ChipConfig",
    "TileConfig",
    "get_preset",
    "parse_number",
    "parse_override",
    "resolve_hw",
]
