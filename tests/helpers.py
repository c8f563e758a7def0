"""Helpers shared by the test modules: small zoo sizes and the value-preservation check."""

from __future__ import annotations

from typing import Any

import numpy as np

from tx8lab.core import interpret, random_inputs
from tx8lab.core.ir import Module

#: Zoo parameters small enough to interpret (LLaMA-7B's embedding alone is 131 M values):
#: the same ops and rules as the default sizes, a fraction of the compute.
INTERPRETABLE: dict[str, dict[str, Any]] = {
    "llama_decoder": {"hidden": 256, "heads": 4, "ffn": 512, "vocab": 1000, "seq": 16},
    "bert_base": {"layers": 2, "seq": 32, "vocab": 1000},
    "resnet50": {"size": 64},
    "mobilenet_v2": {"size": 64},
    "vit_tiny": {"layers": 2},
}


def same_outputs(a: Module, b: Module, seed: int = 0) -> None:
    """The interpreter gives bit-identical outputs for ``a`` and ``b`` on random inputs."""
    inputs = random_inputs(a, seed=seed)
    for want, got in zip(interpret(a, inputs), interpret(b, inputs), strict=True):
        np.testing.assert_array_equal(got, want)
