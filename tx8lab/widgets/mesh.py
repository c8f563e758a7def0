"""Mesh heatmap: one group on the tile mesh, per tile cycles, SPM use and DMA bytes.

Spec: the mesh view ("the 4x4 tiles with per-tile cycles, SPM use and DMA bytes for a
group"). :func:`mesh_frame` gives one row per tile of ``hw.mesh_shape``;
:func:`mesh_figure` draws the three quantities as three plotly heatmap panels side by side
(headless: ``fig.to_html()``).

Readings chosen (what the estimate can and cannot say):

- **Every busy tile runs the same pipeline.** group-cost schedules one tile's init pipeline
  (``ScheduleInput``: "the init pipeline of one group on one tile") and all
  ``ScheduleInput.tiles`` tiles run it on their shard, so tile 0 stands for all of them.
  The heatmap therefore shows *which* tiles a group uses and which stay idle, with the same
  numbers on every busy tile; it does not show per-tile imbalance (the model has none).
- **Which tiles.** The group uses ``ScheduleInput.tiles`` tiles; they are taken in
  row-major order (tile ``r * cols + c``) from tile (0, 0). group-mapping gives every group
  the whole mesh as ``dev_region``, so the region does not narrow this down.
- **Cycles** of a busy tile are the timeline's makespan (the group's cycles without the
  barrier); an idle tile shows 0.
- **SPM use** of a busy tile is the allocation's peak (``Allocation.peak``: the highest
  byte any buffer of the packing reaches), the capacity being ``Allocation.capacity_bytes``.
- **DMA bytes** of a busy tile: for every ``ld`` / ``st`` task instance in the timeline
  (Repeat iterations counted), the bytes of the SPM buffers it writes (a load) or reads (a
  store), from ``ScheduleInput.buffers`` (one slice on one tile). ``tdma`` (tile to tile)
  is not counted: its transfers do not go to DDR. A load/store naming no known buffer adds
  no bytes; ``dma_busy_cycles`` (the ld + st busy cycles) stands next to the bytes, so
  either can be read.
- Tiles beyond one chip's mesh (``num_chips > 1``) are not drawn: the heatmap is one chip.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tx8lab.hw.config import ChipConfig
from tx8lab.widgets.spm_gantt import GroupSchedule

#: The quantities :func:`mesh_figure` draws, column name -> panel title.
PANELS: dict[str, str] = {
    "cycles": "cycles",
    "spm_bytes": "SPM peak (bytes)",
    "dma_bytes": "DMA bytes (ld + st)",
}


def dma_bytes(sched: GroupSchedule) -> tuple[int, int]:
    """(bytes moved by ld/st task instances, their busy cycles) on one busy tile."""
    total = 0
    busy = 0
    buffers = sched.inp.buffers
    for slot in sched.timeline.slots:
        if slot.engine not in ("ld", "st"):
            continue
        busy += slot.end - slot.start
        task = sched.timeline.tasks.get(slot.task)
        if task is None:
            continue
        names = task.writes if slot.engine == "ld" else task.reads
        total += sum(buffers[name].bytes for name in names if name in buffers)
    return total, busy


def mesh_frame(sched: GroupSchedule, hw: ChipConfig) -> pd.DataFrame:
    """One row per tile of one chip: tile, row, col, busy, cycles, SPM and DMA figures."""
    rows, cols = hw.mesh_shape
    used = min(sched.inp.tiles, rows * cols)
    moved, dma_busy = dma_bytes(sched)
    records: list[dict[str, Any]] = []
    for tile in range(rows * cols):
        busy = tile < used
        records.append(
            {
                "tile": tile,
                "row": tile // cols,
                "col": tile % cols,
                "busy": busy,
                "cycles": sched.timeline.makespan if busy else 0,
                "spm_bytes": int(sched.allocation.peak) if busy else 0,
                "spm_capacity_bytes": int(sched.allocation.capacity_bytes),
                "dma_bytes": moved if busy else 0,
                "dma_busy_cycles": dma_busy if busy else 0,
            }
        )
    return pd.DataFrame.from_records(records)


def mesh_figure(
    sched: GroupSchedule, hw: ChipConfig, *, title: str | None = None, height: int = 320
) -> go.Figure:
    """Three heatmaps over the tile mesh (cycles, SPM peak, DMA bytes); idle tiles say so."""
    df = mesh_frame(sched, hw)
    rows, cols = hw.mesh_shape
    fig = make_subplots(
        rows=1, cols=len(PANELS), subplot_titles=list(PANELS.values()), horizontal_spacing=0.08
    )
    text = [
        [
            f"tile {r * cols + c}" + ("" if df.at[r * cols + c, "busy"] else " (idle)")
            for c in range(cols)
        ]
        for r in range(rows)
    ]
    for index, (column, label) in enumerate(PANELS.items(), start=1):
        z = df[column].to_numpy().reshape(rows, cols)
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=list(range(cols)),
                y=list(range(rows)),
                text=text,
                texttemplate="%{z:,}",
                hovertemplate=f"%{{text}}<br>{label}: %{{z:,}}<extra></extra>",
                colorscale="Blues",
                showscale=False,
                name=label,
                xgap=2,
                ygap=2,
            ),
            row=1,
            col=index,
        )
        fig.update_yaxes(autorange="reversed", title_text="row", row=1, col=index)
        fig.update_xaxes(title_text="col", row=1, col=index)
    used = int(df["busy"].sum())
    fig.update_layout(
        title=title
        or (
            f"group %{sched.group_id} on the {rows}x{cols} mesh: {used} busy tiles "
            "(each runs the same pipeline)"
        ),
        height=height,
        margin={"l": 40, "r": 20, "t": 70, "b": 40},
    )
    return fig


__all__ = ["PANELS", "dma_bytes", "mesh_figure", "mesh_frame"]
