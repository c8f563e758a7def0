"""Kernel models: FlashAttention, the BatchNorm walkthrough, the loop-fusion explorer.

Covers FlashAttention forward and backward (seed 004), the BatchNorm worked example
(seed 001) and affine loop fusion (seed 003); see DESIGN.md §1. Empty for now: the
FlashAttention, BatchNorm and loop-fusion issues fill it. Modules here are pure computation
and never import ``tx8lab.widgets``.
"""
