"""The ``groups`` entries of the JSON report, read off a grouped module.

Spec: the ``--json`` report's group table, DESIGN.md §7 (``groups``: ``id``, ``ops``,
``group_tag`` ...).
Readings chosen:

- One entry per top-level ``tx8be.Group`` of every function, in program order.
- ``rule`` is the group's ``group_rule`` attribute: the pattern or HDFG rule that formed
  it, ``"single"`` for group-optimization's one-op groups, None when no pass said.
- ``group_tag`` and ``need_barrier`` are the attributes group-ldst and opt-barrier set,
  None before those passes ran (the seed's default ``need_barrier = true`` is not
  invented here: None says "not decided yet").
"""

from __future__ import annotations

from typing import Any

from tx8lab.core.ir import TERMINATORS, Module


def group_entries(module: Module) -> list[dict[str, Any]]:
    """One JSON-ready dict per group: id, function, ops, kinds, rule, group_tag, need_barrier.

    Examples:
        >>> from tx8lab.core.builder import Builder
        >>> from tx8lab.core.passes.group_optimization import GroupOptimization
        >>> from tx8lab.hw import TX81
        >>> b = Builder(); b.output(b.op("Relu", b.input((2,))))
        >>> group_entries(GroupOptimization().run(b.finish(), TX81).module)
        [{'id': 1, 'function': 'main', 'ops': [0], 'kinds': ['Relu'], 'rule': 'single', \
'group_tag': None, 'need_barrier': None, 'dev_region': None}]
    """
    out: list[dict[str, Any]] = []
    for func in module.functions:
        for op in func.ops:
            if op.kind != "tx8be.Group":
                continue
            body = [inner for inner in op.regions[0].ops if inner.kind not in TERMINATORS]
            region = op.attrs.get("dev_region")
            out.append(
                {
                    "id": op.id,
                    "function": func.name,
                    "ops": [inner.id for inner in body],
                    "kinds": [inner.name for inner in body],
                    "rule": op.attrs.get("group_rule"),
                    "group_tag": op.attrs.get("group_tag"),
                    "need_barrier": op.attrs.get("need_barrier"),
                    "dev_region": list(region) if isinstance(region, tuple) else None,
                }
            )
    return out


__all__ = ["group_entries"]
