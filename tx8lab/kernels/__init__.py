"""Kernel models: FlashAttention, the BatchNorm walkthrough, the loop-fusion explorer.

Covers FlashAttention forward and backward (seed 004), the BatchNorm worked example
(seed 001) and affine loop fusion (seed 003); see DESIGN.md §1:
:mod:`tx8lab.kernels.flash_attention` (numerics, templates and tiling key, per-tile
command streams timed by the tile simulator), :mod:`tx8lab.kernels.batchnorm` (the seed's
ten steps on byte images, timed by the simulator; main.c),
:mod:`tx8lab.kernels.testcase` (the seed's test-case generator for BatchNorm),
:mod:`tx8lab.kernels.op_testcase` (the same flow for every op kind, through the whole
compiler), :mod:`tx8lab.kernels.loop_fusion` and :mod:`tx8lab.kernels.board_cases` (the
board's whole kernels compiled, simulated and set beside the board's figures, per engine).
Modules here are pure computation and never import ``tx8lab.widgets``.
"""
