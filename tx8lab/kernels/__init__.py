"""Kernel models: FlashAttention, the BatchNorm walkthrough, the loop-fusion explorer.

Covers FlashAttention forward and backward (seed 004), the BatchNorm worked example
(seed 001) and affine loop fusion (seed 003); see DESIGN.md §1. The loop-fusion explorer
is :mod:`tx8lab.kernels.loop_fusion`; FlashAttention and BatchNorm come with their issue.
Modules here are pure computation and never import ``tx8lab.widgets``.
"""
