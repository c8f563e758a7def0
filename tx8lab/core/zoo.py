"""The built-in model zoo (DESIGN.md §4), re-exported from :mod:`tx8lab.core.frontends.zoo`.

Each model is also a function of its parameters, all optional (defaults as in
``MODELS[name].signature``)::

    >>> from tx8lab.core import zoo
    >>> zoo.llama_decoder(layers=1).num_ops
    70
    >>> zoo.MODELS["tiny_cnn"].signature
    'batch=1 size=8 channels=8 classes=10 dtype=f16'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tx8lab.core.frontends.zoo import MODELS, ZooModel, build
from tx8lab.core.ir import Module


def _entry(name: str) -> Callable[..., Module]:
    model = MODELS[name]

    def make(**kwargs: Any) -> Module:
        return build(name, **kwargs)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"{model.summary}.\n\nParameters and defaults: ``{model.signature}``."
    return make


resnet50 = _entry("resnet50")
mobilenet_v2 = _entry("mobilenet_v2")
bert_base = _entry("bert_base")
llama_decoder = _entry("llama_decoder")
vit_tiny = _entry("vit_tiny")
tiny_cnn = _entry("tiny_cnn")
tiny_transformer_block = _entry("tiny_transformer_block")
layout_align_demo = _entry("layout_align_demo")
batchnorm_demo = _entry("batchnorm_demo")

__all__ = [
    "MODELS",
    "ZooModel",
    "batchnorm_demo",
    "bert_base",
    "build",
    "layout_align_demo",
    "llama_decoder",
    "mobilenet_v2",
    "resnet50",
    "tiny_cnn",
    "tiny_transformer_block",
    "vit_tiny",
]
