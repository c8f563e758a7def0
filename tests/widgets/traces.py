"""Pipeline traces of small zoo models, shared by the widget tests (built once per session)."""

from __future__ import annotations

from tx8lab.core import zoo
from tx8lab.core.passes import build_pipeline
from tx8lab.core.passes.base import Step
from tx8lab.core.runner import run_pipeline
from tx8lab.hw import TX81

MODELS = ("tiny_cnn", "layout_align_demo", "tiny_transformer_block")

_TRACES: dict[tuple[str, ...], list[Step]] = {}


def trace_of(name: str, *settings: str) -> list[Step]:
    """The default pipeline's steps on zoo model ``name`` with knob ``settings`` (cached)."""
    key = (name, *settings)
    if key not in _TRACES:
        _TRACES[key] = list(
            run_pipeline(zoo.build(name), build_pipeline(None, list(settings)), TX81)
        )
    return _TRACES[key]


def step_of(name: str, pass_name: str) -> Step:
    """The first step of ``pass_name`` in model ``name``'s trace."""
    return next(s for s in trace_of(name) if s.name == pass_name)
