"""The template cache: a group scheduled once serves every group of the same structure.

Spec: seed 001 "GroupCostPass" (identical groups share a schedule: BERT's and LLaMA's
layers). :func:`template_key` is the group body's structure and shapes without ids (op
kinds, attributes, operand and result types, wiring by position); a hit maps the cached
winner's strategy onto the new group's ids by body position.

Readings chosen where the seed is vague:

- Constants' ids and payloads are data, not structure: two layers with different weights
  share a template.
- The key also holds the caller's settings (search mode and the stages' knobs), so a
  template found under other knobs is never reused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tx8lab.core.ir import TERMINATORS, Op
from tx8lab.core.schedule.tasks import OpStrategy, Strategy

#: Attributes that name or hold data, not structure: a constant's id and payload.
_DATA_ATTRS = frozenset({"const_id", "value"})


def _attr_text(value: Any) -> str:
    return repr(value)


def template_key(group: Op) -> tuple[Any, ...]:
    """The group's structure and shapes, without ids (module docstring)."""
    body = [op for op in group.regions[0].ops]
    pos = {op.id: i for i, op in enumerate(body)}
    external: dict[tuple[int, int, bool], int] = {}
    items: list[Any] = []
    for op in body:
        wiring = []
        for v in op.operands:
            if not v.is_arg and v.owner in pos:
                wiring.append(("op", pos[v.owner], v.index))
            else:
                wiring.append(("in", external.setdefault(v.key, len(external)), v.index))
        items.append(
            (
                op.kind,
                tuple(
                    sorted((k, _attr_text(a)) for k, a in op.attrs.items() if k not in _DATA_ATTRS)
                ),
                tuple((v.type.shape, v.type.dtype) for v in op.operands),
                tuple((v.type.shape, v.type.dtype) for v in op.results),
                tuple(wiring),
                bool(op.regions),
            )
        )
    return tuple(items)


def _positions(group: Op) -> list[int]:
    return [op.id for op in group.regions[0].ops if op.kind not in TERMINATORS]


@dataclass
class TemplateCache:
    """Search results of groups by :func:`template_key` (and the search settings)."""

    entries: dict[Any, tuple[dict[int, OpStrategy], int, bool]] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    payloads: dict[Any, Any] = field(default_factory=dict)
    """Whatever the caller stored with a winner (group-cost: the template's schedule)."""

    @property
    def hit_rate(self) -> float:
        """Hits over lookups (0 when nothing was looked up)."""
        n = self.hits + self.misses
        return self.hits / n if n else 0.0

    def lookup(self, group: Op, settings: tuple[Any, ...]) -> Strategy | None:
        """The cached winner mapped onto ``group``'s ids, or None (counted as a miss)."""
        return self._lookup(group, (template_key(group), settings))

    def lookup_payload(self, group: Op, settings: tuple[Any, ...]) -> tuple[Strategy, Any] | None:
        """:meth:`lookup` plus the payload stored with the winner (a hit or a miss counted)."""
        key = (template_key(group), settings)
        strategy = self._lookup(group, key)
        if strategy is None:
            return None
        return strategy, self.payloads.get(key)

    def _lookup(self, group: Op, key: Any) -> Strategy | None:
        got = self.entries.get(key)
        if got is None:
            self.misses += 1
            return None
        self.hits += 1
        by_pos, mb, share = got
        ids = _positions(group)
        return Strategy({ids[p]: st for p, st in by_pos.items()}, mb, share)

    def store(
        self, group: Op, settings: tuple[Any, ...], strategy: Strategy, payload: Any = None
    ) -> None:
        """Remember ``strategy`` (the winner for ``group``) by body position."""
        index = {op_id: p for p, op_id in enumerate(_positions(group))}
        by_pos = {index[k]: v for k, v in strategy.ops.items()}
        key = (template_key(group), settings)
        self.entries[key] = (by_pos, strategy.multi_buffer, strategy.share)
        if payload is not None:
            self.payloads[key] = payload


__all__ = ["TemplateCache", "template_key"]
