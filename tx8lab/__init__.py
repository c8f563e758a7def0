"""tx8lab: explain and model the TX8 NPU backend compiler.

Subpackages (DESIGN.md §1): ``tx8lab.core`` (IR, op library, passes, frontends),
``tx8lab.hw`` (chip/tile presets and the cost model), ``tx8lab.kernels`` (FlashAttention,
BatchNorm, loop fusion) and ``tx8lab.widgets`` (JupyterLab views, the ``[widgets]`` extra).
Importing ``tx8lab`` itself loads none of them, so ``import tx8lab`` stays cheap.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
