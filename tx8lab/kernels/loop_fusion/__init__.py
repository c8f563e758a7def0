"""Affine loop-fusion explorer: MLIR's LoopFusion pass, step by step, with integer sets.

Spec: seed 003 (Affine Fusion Pass 浅析) and ``../shared/reference/hw-fa-fusion.md`` §2.
Checked against ``mlir-opt`` 22 (``tests/kernels/test_loop_fusion_mlir.py``).
Why a package: the explorer follows MLIR's own split (IR and text, dependence analysis,
slices, cost model, rewrites, the driver), one module each, so a notebook can call one
stage on its own:

- :mod:`.ir` - loop nests (:class:`~.ir.Function`, :class:`~.ir.Loop`, loads/stores with
  affine indices) and :class:`~.ir.NestBuilder`;
- :mod:`.text` - print and parse the MLIR affine subset (``print_function``,
  ``parse_functions``); the printer writes what ``mlir-opt`` writes;
- :mod:`.deps` - access relations and dependence relations as constraint matrices
  (:class:`~.deps.Constraints`, the seed's layout) decided with isl;
- :mod:`.slices` - ``canFuseLoops``: legality and slice bounds per depth;
- :mod:`.cost` - op-instance costs, memref regions and footprints;
- :mod:`.transform` - sinking sequential loops, slice insertion, promotion, private
  memrefs;
- :mod:`.fusion` - the depth search (:func:`~.fusion.analyze_pair`);
- :mod:`.driver` - MLIR's dependence graph and greedy driver (:func:`~.driver.fuse`);
- :mod:`.tx8` - the private buffer and the per-iteration working set against a TX8
  tile's SPM;
- :mod:`.report` - the JSON report of ``tx8lab fuse``.

Readings chosen for the whole explorer:

- The subset: top-level ``affine.for`` nests (perfect or imperfect, step 1, bounds that
  are constants or single affine expressions of outer loops), ``affine.load``/``store``
  with affine indices (no ``floordiv``/``mod``, no symbols), ``memref.alloc`` and memref
  arguments with static shapes, scalar ops. ``affine.if``, ``iter_args``, dynamic
  shapes and non-unit steps are rejected with an error naming file, line and column.
- Producer-consumer fusion is modelled exactly (including MLIR's quirks, listed in
  each module); sibling (input-reuse) fusion is not. ``tests/kernels`` lists the nests
  where that makes the default greedy mode differ from ``mlir-opt``.
"""

from tx8lab.kernels.loop_fusion.deps import (
    Access,
    Constraints,
    Dependence,
    access_relation,
    check_dependence,
    collect_accesses,
    dependence_constraints,
    has_cyclic_dependence,
    iteration_domain,
)
from tx8lab.kernels.loop_fusion.driver import FusionRun, FusionStep, fuse
from tx8lab.kernels.loop_fusion.fusion import (
    DEFAULT_TOLERANCE,
    DepthRow,
    FusionOptions,
    PairAnalysis,
    analyze_pair,
    producer_consumer_pairs,
)
from tx8lab.kernels.loop_fusion.ir import (
    Function,
    Lin,
    Load,
    Loop,
    MemRefType,
    NestBuilder,
    Store,
)
from tx8lab.kernels.loop_fusion.report import function_report, report
from tx8lab.kernels.loop_fusion.slices import FusionCheck, Slice, SliceLoop, can_fuse
from tx8lab.kernels.loop_fusion.text import parse_function, parse_functions, print_function
from tx8lab.kernels.loop_fusion.transform import fuse_loops, sink_sequential_loops
from tx8lab.kernels.loop_fusion.tx8 import SpmReport, SpmRow, spm_report

__all__ = [
    "DEFAULT_TOLERANCE",
    "Access",
    "Constraints",
    "Dependence",
    "DepthRow",
    "Function",
    "FusionCheck",
    "FusionOptions",
    "FusionRun",
    "FusionStep",
    "Lin",
    "Load",
    "Loop",
    "MemRefType",
    "NestBuilder",
    "PairAnalysis",
    "Slice",
    "SliceLoop",
    "SpmReport",
    "SpmRow",
    "Store",
    "access_relation",
    "analyze_pair",
    "can_fuse",
    "check_dependence",
    "collect_accesses",
    "dependence_constraints",
    "function_report",
    "fuse",
    "fuse_loops",
    "has_cyclic_dependence",
    "iteration_domain",
    "parse_function",
    "parse_functions",
    "print_function",
    "producer_consumer_pairs",
    "report",
    "sink_sequential_loops",
    "spm_report",
]
