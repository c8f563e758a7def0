"""Shared fixtures: hypothesis profiles and the mlir-opt lookup."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else "default")

REPO = Path(__file__).resolve().parent.parent


def _find_mlir_opt() -> str | None:
    try:
        from tx8lab._tools import find_mlir_opt
    except ImportError:  # pragma: no cover - the helper module is part of the package
        for name in ("mlir-opt", "mlir-opt-22", "mlir-opt-19", "mlir-opt-16"):
            path = shutil.which(name)
            if path:
                return path
        return None
    return find_mlir_opt()


@pytest.fixture(scope="session")
def mlir_opt() -> str:
    """Path of mlir-opt; the test is skipped with a printed reason when it is missing."""
    path = _find_mlir_opt()
    if path is None:
        pytest.skip(
            "mlir-opt not installed (make test installs Debian's mlir-22-tools when "
            "it can; set TX8LAB_MLIR_OPT to use another build)"
        )
    return path
