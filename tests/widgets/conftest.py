"""Fixtures of the widget tests: each small zoo model and its pipeline output."""

from __future__ import annotations

import pytest

from tests.widgets.traces import MODELS, trace_of
from tx8lab.core.ir import Module


@pytest.fixture(params=MODELS)
def model_name(request: pytest.FixtureRequest) -> str:
    """Each small zoo model in turn."""
    name: str = request.param
    return name


@pytest.fixture
def final(model_name: str) -> Module:
    """The model after the whole default pipeline."""
    return trace_of(model_name)[-1].after
