"""The JSON report of ``tx8lab fuse``: per producer/consumer pair, the per-depth table.

Spec: the explorer's report (``tx8lab fuse --json``). One entry per pair of top-level nests
where the consumer loads what the producer stores (an edge of MLIR's dependence graph), each
analysed on the input function as MLIR sees the pair first (:func:`~.fusion.analyze_pair`);
then the whole pass (:func:`~.fusion.fuse`) and the fused function's MLIR text.
"""

from __future__ import annotations

from typing import Any

from tx8lab.hw import TX81, ChipConfig
from tx8lab.kernels.loop_fusion.driver import fuse
from tx8lab.kernels.loop_fusion.fusion import (
    DepthRow,
    FusionOptions,
    PairAnalysis,
    analyze_pair,
    producer_consumer_pairs,
)
from tx8lab.kernels.loop_fusion.ir import Function, Loop, Stmt, uniquify
from tx8lab.kernels.loop_fusion.text import print_function
from tx8lab.kernels.loop_fusion.tx8 import SpmReport, spm_report


def _depth_json(row: DepthRow) -> dict[str, Any]:
    s = row.slice
    return {
        "depth": row.depth,
        "legal": row.legal,
        "result": row.result,
        "reason": row.reason,
        "slice_bounds": None
        if s is None
        else [
            {"loop": f"%{x.loop.iv}", "lb": s.map_text(x.lb), "ub": s.map_text(x.ub)}
            for x in s.loops
        ],
        "slice_trip_counts": None if s is None else list(s.trip_counts),
        "slice_iterations": row.slice_iterations,
        "slice_cost": row.slice_cost,
        "fused_cost": row.fused_cost,
        "additional_compute_fraction": row.additional_compute_fraction,
        "slice_write_region_bytes": row.slice_write_region_bytes,
        "storage_reduction": row.storage_reduction,
        "evaluated": row.evaluated,
        "within_tolerance": row.within_tolerance,
        "private_shape": None if row.private_shape is None else list(row.private_shape),
        "private_bytes": row.private_bytes,
    }


def _spm_json(report: SpmReport) -> dict[str, Any]:
    return {
        "memref": report.memref,
        "unfused_shape": list(report.unfused_shape),
        "unfused_bytes": report.unfused_bytes,
        "spm_usable_bytes": report.spm_usable_bytes,
        "unfused_fits": report.unfused_fits,
        "src_footprint_bytes": report.src_footprint_bytes,
        "dst_footprint_bytes": report.dst_footprint_bytes,
        "chosen_private_bytes": None if report.chosen is None else report.chosen.private_bytes,
        "reduction": report.reduction,
        "depths": [
            {
                "depth": r.depth,
                "private_shape": list(r.private_shape),
                "private_bytes": r.private_bytes,
                "working_set_bytes": r.working_set_bytes,
                "fits": r.fits,
            }
            for r in report.rows
        ],
    }


def pair_json(analysis: PairAnalysis, labels: dict[int, str], hw: ChipConfig) -> dict[str, Any]:
    """One pair's entry of the report."""
    return {
        "src": labels[analysis.src],
        "dst": labels[analysis.dst],
        "memrefs": [f"%{m}" for m in analysis.memrefs],
        "src_cost": analysis.src_cost,
        "dst_cost": analysis.dst_cost,
        "cyclic_producer": analysis.cyclic,
        "compute_tolerance": analysis.tolerance,
        "tolerance_used": analysis.tolerance_used,
        "producer_stores": analysis.producer_stores,
        "dst_loops_sunk": analysis.dst_sunk,
        "max_legal_depth": analysis.max_legal_depth,
        "src_footprint_bytes": analysis.src_footprint_bytes,
        "dst_footprint_bytes": analysis.dst_footprint_bytes,
        "fused_footprint_bytes": analysis.fused_footprint_bytes,
        "src_write_region_bytes": analysis.src_write_region_bytes,
        "chosen_depth": analysis.chosen_depth,
        "decision": analysis.decision,
        "depths": [_depth_json(r) for r in analysis.rows],
        "spm": _spm_json(spm_report(analysis, hw)),
    }


def function_report(
    func: Function, options: FusionOptions | None = None, hw: ChipConfig = TX81
) -> dict[str, Any]:
    """The report for one function (see the module docstring)."""
    opts = options or FusionOptions()
    func = uniquify(func)
    labels = {pos: f"nest{k}" for k, pos in enumerate(func.nests)}
    nests = []
    for pos in func.nests:
        trips = []
        stmt: Stmt | None = func.body[pos]
        while isinstance(stmt, Loop):
            trips.append(stmt.trip_count)
            stmt = stmt.body[0] if len(stmt.body) == 1 else None
        nests.append({"name": labels[pos], "perfect_band_trip_counts": trips})
    pairs = [
        pair_json(analyze_pair(func, src, dst, opts), labels, hw)
        for src, dst in producer_consumer_pairs(func)
    ]
    run = fuse(func, opts)
    return {
        "function": func.name,
        "nests": nests,
        "pairs": pairs,
        "fusion": {
            "mode": opts.mode,
            "steps": [
                {
                    "src": s.src_nest,
                    "dst": s.dst_nest,
                    "depth": s.depth,
                    "memrefs": [f"%{m}" for m in s.memrefs],
                    "privatized": [f"%{m}" for m in s.private],
                    "src_removed": s.src_removed,
                }
                for s in run.steps
            ],
            "mlir": print_function(run.function),
        },
    }


def report(
    funcs: tuple[Function, ...], options: FusionOptions | None = None, hw: ChipConfig = TX81
) -> dict[str, Any]:
    """The whole ``tx8lab fuse`` report."""
    opts = options or FusionOptions()
    return {
        "options": {
            "compute_tolerance": opts.compute_tolerance,
            "maximal": opts.maximal,
            "mode": opts.mode,
        },
        "hw": hw.name,
        "functions": [function_report(f, opts, hw) for f in funcs],
    }
