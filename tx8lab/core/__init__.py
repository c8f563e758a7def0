"""tx8lab core: the tx8be IR, op library, interpreter, passes and frontends.

Imports nothing from ``tx8lab.widgets`` (DESIGN.md §1). These re-exports sit above the
modules they name: code inside core imports the submodules, never this namespace
(``tests/test_layering.py``).
"""

from __future__ import annotations

from tx8lab.core.builder import Builder, make_op
from tx8lab.core.interpret import interpret, random_inputs
from tx8lab.core.ir import Block, Function, Module, Op, TensorType, Value
from tx8lab.core.text import parse_module, print_module
from tx8lab.core.verify import verify

__all__ = [
    "Block",
    "Builder",
    "Function",
    "Module",
    "Op",
    "TensorType",
    "Value",
    "interpret",
    "make_op",
    "parse_module",
    "print_module",
    "random_inputs",
    "verify",
]
