"""Calibration of the tile cost model against the board's BF16 GEMM (``make bench``).

Spec: ``../shared/reference/hw-fa-fusion.md`` §1.4 (PJLAB vibe_compiler on one TX81: BF16
GEMM 4096x1024x4096 on 16 tiles in 1.801 ms). Models the GEMM three ways (NE peak, the
ideal 4x4 sharding, the default pipeline's group through ``core.schedule.slicing``) and
reports each as a ratio to the board figure.
"""

from __future__ import annotations

from typing import Any

from tx8lab.core.builder import Builder
from tx8lab.core.passes import build_pipeline
from tx8lab.core.runner import run_pipeline
from tx8lab.core.schedule.slicing import engine_busy_cycles, groups_of, schedule_input
from tx8lab.hw import cost as hwcost
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.presets import TX81

#: Board figure (hw-fa-fusion.md §1.4, PJLAB vibe_compiler on one TX81): BF16 GEMM
#: M = N = 4096, K = 1024 on 16 tiles, longest-tile kernel body.
BOARD_GEMM_MS = 1.801


def cost_figures(hw: ChipConfig | None = None) -> list[dict[str, Any]]:
    """Calibration of the cost model against the board's BF16 GEMM 4096x1024x4096 (1.801 ms).

    Rows: the NE peak alone; the ideal 4x4 output sharding (each tile loads 1024x1024 of A
    and of B, computes, stores 1024x1024) as the busiest engine; and the default strategy's
    init pipeline through this module, as the busiest engine (perfect pipeline) and as
    serial. ``ratio`` is modelled / board: below 1 means the model is optimistic.
    """
    chip = hw or TX81
    m = k = 4096
    inner = 1024
    tiles = chip.tiles_per_chip
    to_ms = 1e3 / chip.clock_hz
    rows: list[dict[str, Any]] = []

    def row(case: str, cycles: int, limiting: str, **extra: Any) -> None:
        ms = cycles * to_ms
        rows.append(
            {
                "case": case,
                "modelled_ms": round(ms, 4),
                "board_ms": BOARD_GEMM_MS,
                "ratio": round(ms / BOARD_GEMM_MS, 3),
                "limiting_engine": limiting,
                **extra,
            }
        )

    ne_all = hwcost.ne_cost(m // 4, inner, k // 4, "bf16", chip)
    row("NE peak only, 1024x1024x1024 per tile", ne_all.work_cycles, "ne")
    tile_bytes = 1024 * 1024 * 2
    ld = hwcost.dma_cost("ld", 2 * tile_bytes, chip, active_tiles=tiles)
    st = hwcost.dma_cost("st", tile_bytes, chip, active_tiles=tiles)
    ideal = {"ld": ld.cycles, "ne": ne_all.cycles, "st": st.cycles}
    row(
        "ideal 4x4 output sharding, busiest engine",
        max(ideal.values()),
        max(ideal, key=ideal.__getitem__),
        **{f"{e}_ms": round(c * to_ms, 4) for e, c in ideal.items()},
    )
    b = Builder()
    x = b.input((m, inner), "bf16")
    w = b.weight((inner, k), "bf16")
    b.output(b.op("MatMul", x, w))
    module = b.finish()
    out = module
    for step in run_pipeline(module, build_pipeline(), chip):
        out = step.after
    group = next(g for g in groups_of(out) if any(o.kind == "tx8be.MatMul" for o in g.walk()))
    si = schedule_input(group, None, chip)
    busy = engine_busy_cycles(si)
    limiting = max(busy, key=busy.__getitem__)
    extra = {f"{e}_ms": round(c * to_ms, 4) for e, c in sorted(busy.items())}
    notes = "; ".join(si.notes)
    row("default strategy, busiest engine", busy[limiting], limiting, notes=notes, **extra)
    row("default strategy, serial", sum(busy.values()), limiting)
    return rows


__all__ = ["BOARD_GEMM_MS", "cost_figures"]
