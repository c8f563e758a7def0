"""Mesh heatmap: one group on the tile mesh, per tile cycles, SPM use, DMA bytes, NoC links.

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
  store), from ``ScheduleInput.buffers`` (one slice on one tile); a shared load its chunk
  (the bytes over its share group's tiles). ``dte`` (tile to tile)
  is not counted: its transfers do not go to DDR. A load/store naming no known buffer adds
  no bytes; ``dma_busy_cycles`` (the ld + st busy cycles) stands next to the bytes, so
  either can be read.
- Tiles beyond one chip's mesh (``num_chips > 1``) are not drawn: the heatmap is one chip.

**The simulated run and the NoC links.** When group-cost ran the tile simulator
(``GroupSchedule.simulated``), every tile has figures of its own and the NoC traffic is
known link by link (:mod:`tx8lab.hw.sim`: a transfer's payload occupies every link
direction of its XY route). :func:`tile_sim_frame` gives one row per tile of the run,
:func:`link_frame` one row per link direction of the mesh (``noc.links``: all of them,
unused ones with zeros) and :func:`mesh_links_figure` draws both: tiles as squares
coloured by their body cycles, each link direction as an arrow between the tile centres.
:func:`mesh_figure` adds that panel under the three heatmaps when the run used a link;
without one the figure is the three heatmaps alone. Readings chosen:

- **Per-tile columns** sum ``TileRun.busy``: ``compute_cycles`` = ``ne`` + ``ct``,
  ``dma_cycles`` = ``rdma`` + ``wdma`` (DDR), ``tdma_cycles`` = ``tdma`` (moves within the
  tile's SPM, seed 001), ``noc_cycles`` = ``dte`` (tile to tile); ``body_cycles`` is
  ``TileRun.body``. A tile of the mesh the run does not name is inactive with zeros.
- **Bytes sent** by a tile: the payload of each of its transfers once (``LinkUse.tile``,
  one per ``(tile, index)``, however many links the route crosses). Only payloads that
  crossed a link count: the simulator records no link for a 0-byte transfer.
- **Bytes and busy time of a link** count every payload on it: a payload routed over three
  links adds its bytes to each (``SimResult.link_bytes`` / ``link_busy``), so the link
  bytes sum to ``bytes x hops``, not to the bytes sent.
- **SPM use** is not in the run; the caller gives each tile's peak (``spm_peak``).
  :func:`mesh_figure` gives every tile of the run the allocation's peak (each runs the
  group's pipeline with one packing).
- **Drawing.** Each direction of a wire keeps to its right as seen on screen (row 0 at the
  top), so the two directions of a wire are two parallel arrows; width and colour scale
  with ``metric`` (``"bytes"`` or ``"busy"``) relative to the busiest link, an unused link
  is a thin light grey line. Traces: one per link direction in :func:`link_frame` order
  (named ``"src->dst"``; hover on its start, middle and arrow head), then one for the tiles.
- The default title counts the bytes *sent* (not the per-link sum) and names the link
  with the longest busy time (ties: the most bytes, then the lower link).
- Tiles and links off ``hw``'s mesh: a run tile beyond the mesh is left out (one chip, as
  above); a used link that is not a link of the mesh is an error (a run of another mesh).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from tx8lab.errors import Tx8labError
from tx8lab.hw import noc
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.sim import SimResult
from tx8lab.widgets.spm_gantt import GroupSchedule

#: The quantities :func:`mesh_figure` draws, column name -> panel title.
PANELS: dict[str, str] = {
    "cycles": "cycles",
    "spm_bytes": "SPM peak (bytes)",
    "dma_bytes": "DMA bytes (ld + st)",
}

LinkMetric = Literal["bytes", "busy"]
#: What :func:`mesh_links_figure` can scale the link arrows by.
LINK_METRICS: tuple[LinkMetric, ...] = ("bytes", "busy")
#: The columns of :func:`link_frame`, in order.
LINK_COLUMNS: tuple[str, ...] = (
    "src",
    "dst",
    "src_x",
    "src_y",
    "dst_x",
    "dst_y",
    "bytes",
    "busy_cycles",
    "busy_ms",
    "transfers",
)
#: The columns of :func:`tile_sim_frame`, in order.
TILE_SIM_COLUMNS: tuple[str, ...] = (
    "tile",
    "row",
    "col",
    "active",
    "body_cycles",
    "compute_cycles",
    "dma_cycles",
    "tdma_cycles",
    "noc_cycles",
    "noc_bytes_sent",
    "spm_bytes",
)
#: ``TileRun.busy`` engines summed into each per-tile column (module docstring).
ENGINE_COLUMNS: dict[str, tuple[str, ...]] = {
    "compute_cycles": ("ne", "ct"),
    "dma_cycles": ("rdma", "wdma"),
    "tdma_cycles": ("tdma",),
    "noc_cycles": ("dte",),
}
_UNUSED_LINK_COLOR = "rgba(170, 170, 170, 0.6)"
_LINK_COLORSCALE = "Oranges"
#: Blues up to a middle blue, so the black tile number stays readable on the busiest tile.
_TILE_COLORSCALE: list[list[Any]] = [
    [k / 4, color]
    for k, color in enumerate(sample_colorscale("Blues", [k * 0.7 / 4 for k in range(5)]))
]
#: A link arrow runs from this fraction of the way between the tile centres to 1 minus it.
_LINK_INSET = 0.27
#: How far (in tile pitches) a link direction sits to the right of the centre line.
_LINK_SIDE = 0.1
#: Height of the link panel that :func:`mesh_figure` adds under the heatmaps, pixels.
LINK_PANEL_HEIGHT = 520


def dma_bytes(sched: GroupSchedule) -> tuple[int, int]:
    """(bytes moved by ld/st task instances, their busy cycles) on one busy tile.

    A shared load (an all-gather of ``ScheduleInput.reductions``) moves its chunk: the
    buffer's bytes over the share group's tiles, rounded up.
    """
    total = 0
    busy = 0
    buffers = sched.inp.buffers
    reductions = sched.inp.reductions
    for slot in sched.timeline.slots:
        if slot.engine not in ("ld", "st"):
            continue
        busy += slot.end - slot.start
        task = sched.timeline.tasks.get(slot.task)
        if task is None:
            continue
        names = task.writes if slot.engine == "ld" else task.reads
        moved = sum(buffers[name].bytes for name in names if name in buffers)
        red = reductions.get(task.op_id) if slot.engine == "ld" else None
        if red is not None and red.collective == "all-gather":
            moved = -(-moved // red.ways)
        total += moved
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


def check_link_metric(metric: str, who: str) -> LinkMetric:
    """``metric`` if it is one of :data:`LINK_METRICS`, else an error naming ``who``."""
    for known in LINK_METRICS:
        if metric == known:
            return known
    allowed = ", ".join(repr(m) for m in LINK_METRICS)
    raise Tx8labError(f"{who}: metric={metric!r} is not a link measure; use one of {allowed}")


def link_frame(result: SimResult, hw: ChipConfig) -> pd.DataFrame:
    """One row per link direction of the mesh (``noc.links`` order), unused ones with zeros.

    Columns :data:`LINK_COLUMNS`: the link's tiles and their ``(x, y)`` (column, row), the
    payload bytes it carried, its busy cycles (and ms at the run's clock) and how many
    payloads it carried (``LinkUse`` records).

    Raises:
        Tx8labError: the run used a link direction that is not one of ``hw``'s mesh.
    """
    mesh = noc.links(hw)
    stray = sorted(set(result.links) - set(mesh))
    if stray:
        raise Tx8labError(
            f"link_frame: the run used link directions {stray} that are not links of the "
            f"{hw.mesh_rows}x{hw.mesh_cols} mesh; give the hw the run was simulated on"
        )
    busy = result.link_busy()
    moved = result.link_bytes()
    records: list[dict[str, Any]] = []
    for link in mesh:
        src, dst = link
        (src_x, src_y), (dst_x, dst_y) = noc.coords(src, hw), noc.coords(dst, hw)
        cycles = busy.get(link, 0)
        records.append(
            {
                "src": src,
                "dst": dst,
                "src_x": src_x,
                "src_y": src_y,
                "dst_x": dst_x,
                "dst_y": dst_y,
                "bytes": moved.get(link, 0),
                "busy_cycles": cycles,
                "busy_ms": result.ms(cycles),
                "transfers": len(result.links.get(link, ())),
            }
        )
    return pd.DataFrame.from_records(records, columns=list(LINK_COLUMNS))


def noc_bytes_sent(result: SimResult) -> dict[int, int]:
    """Sending tile -> payload bytes of its transfers that crossed a link, each once.

    A transfer is a ``(tile, index)`` pair of ``LinkUse`` records; every link of its route
    carries the same payload, so the first one met counts and the others are skipped.
    """
    payload: dict[tuple[int, int], int] = {}
    for uses in result.links.values():
        for use in uses:
            payload.setdefault((use.tile, use.index), use.num_bytes)
    out: dict[int, int] = {}
    for (tile, _), num_bytes in payload.items():
        out[tile] = out.get(tile, 0) + num_bytes
    return out


def tile_sim_frame(
    result: SimResult, hw: ChipConfig, spm_peak: Mapping[int, int] | None = None
) -> pd.DataFrame:
    """One row per tile of one chip's mesh: the simulated run's figures of that tile.

    Columns :data:`TILE_SIM_COLUMNS`; the engine sums are :data:`ENGINE_COLUMNS` and
    ``spm_bytes`` is ``spm_peak[tile]`` (0 when not given). A tile the run does not name
    is inactive with zeros (but for ``spm_bytes``, which is the caller's).

    Raises:
        Tx8labError: ``spm_peak`` names a tile off the mesh.
    """
    rows, cols = hw.mesh_shape
    peaks = dict(spm_peak or {})
    stray = sorted(t for t in peaks if not 0 <= t < rows * cols)
    if stray:
        raise Tx8labError(
            f"tile_sim_frame: spm_peak names tiles {stray}, off the {rows}x{cols} mesh "
            f"(tiles 0..{rows * cols - 1}; hw mesh_shape)"
        )
    sent = noc_bytes_sent(result)
    records: list[dict[str, Any]] = []
    for tile in range(rows * cols):
        run = result.tiles.get(tile)
        busy = run.busy if run is not None else {}
        record: dict[str, Any] = {
            "tile": tile,
            "row": tile // cols,
            "col": tile % cols,
            "active": run is not None,
            "body_cycles": run.body if run is not None else 0,
        }
        for column, engines in ENGINE_COLUMNS.items():
            record[column] = sum(busy.get(e, 0) for e in engines)
        record["noc_bytes_sent"] = sent.get(tile, 0)
        record["spm_bytes"] = int(peaks.get(tile, 0))
        records.append(record)
    return pd.DataFrame.from_records(records, columns=list(TILE_SIM_COLUMNS))


def _hover_lines(record: Mapping[str, Any]) -> str:
    """``column: value`` lines of one frame row, numbers with thousands separators."""
    out = []
    for column, value in record.items():
        if isinstance(value, bool):
            shown = "yes" if value else "no"
        elif isinstance(value, int):
            shown = f"{value:,}"
        elif isinstance(value, float):
            shown = f"{value:,.6g}"
        else:
            shown = str(value)
        out.append(f"{column}: {shown}")
    return "<br>".join(out)


def _link_title(links: pd.DataFrame, sent: Mapping[int, int]) -> str:
    """The default title of the link panel (module docstring)."""
    used = links[links["transfers"] > 0]
    if used.empty:
        return "NoC traffic: none (no payload crossed a link)"
    ranked = used.sort_values(
        ["busy_cycles", "bytes", "src", "dst"], ascending=[False, False, True, True]
    )
    top = ranked.iloc[0]
    return (
        f"NoC traffic: {sum(sent.values()):,} bytes sent over {len(used)} link directions, "
        f"busiest link {int(top['src'])}->{int(top['dst'])} "
        f"{float(top['busy_ms']) * 1e3:,.3f} µs"
    )


def _link_panel(
    result: SimResult,
    hw: ChipConfig,
    metric: LinkMetric,
    spm_peak: Mapping[int, int] | None,
    tile_px: float,
) -> tuple[list[go.Scatter], str]:
    """The link traces (one per link direction), the tile trace last, and the title."""
    links = link_frame(result, hw)
    tiles = tile_sim_frame(result, hw, spm_peak)
    measure = "bytes" if metric == "bytes" else "busy_cycles"
    most = max(int(links[measure].max()), 1)
    traces: list[go.Scatter] = []
    for link in links.to_dict("records"):
        dx, dy = link["dst_x"] - link["src_x"], link["dst_y"] - link["src_y"]
        # keep to the right as seen on screen (y grows downwards): the two directions of
        # a wire are two parallel arrows
        side_x, side_y = -dy * _LINK_SIDE, dx * _LINK_SIDE
        xs = [link["src_x"] + side_x + f * dx for f in (_LINK_INSET, 0.5, 1 - _LINK_INSET)]
        ys = [link["src_y"] + side_y + f * dy for f in (_LINK_INSET, 0.5, 1 - _LINK_INSET)]
        used = link["transfers"] > 0
        share = link[measure] / most
        color = (
            sample_colorscale(_LINK_COLORSCALE, [0.35 + 0.65 * share])[0]
            if used
            else _UNUSED_LINK_COLOR
        )
        width = 1.5 + 6.5 * share if used else 1.0
        name = f"{link['src']}->{link['dst']}"
        hover = (
            f"link {name}: ({link['src_x']}, {link['src_y']}) -> "
            f"({link['dst_x']}, {link['dst_y']})<br>"
            f"bytes: {link['bytes']:,}<br>"
            f"busy: {link['busy_cycles']:,} cycles ({link['busy_ms'] * 1e3:,.3f} µs)<br>"
            f"transfers: {link['transfers']:,}"
        )
        traces.append(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers",
                line={"color": color, "width": width},
                marker={
                    "symbol": ["circle", "circle", "arrow"],
                    "size": [0, 0, 6 + 1.5 * width if used else 7],
                    "angleref": "previous",
                    "color": color,
                    "line": {"width": 0},
                    "opacity": 1.0,
                },
                name=name,
                text=[hover] * 3,
                hovertemplate="%{text}<extra></extra>",
                showlegend=False,
                meta={"src": int(link["src"]), "dst": int(link["dst"]), "role": "link"},
            )
        )
    body = tiles["body_cycles"]
    traces.append(
        go.Scatter(
            x=list(tiles["col"]),
            y=list(tiles["row"]),
            mode="markers+text",
            marker={
                "symbol": "square",
                "size": tile_px,
                "color": list(body),
                "colorscale": _TILE_COLORSCALE,
                "cmin": 0,
                "cmax": max(int(body.max()), 1),
                "line": {"color": "#555", "width": 1},
                "colorbar": {"title": {"text": "body cycles"}},
                "showscale": True,
            },
            text=[str(t) for t in tiles["tile"]],
            textfont={"color": "black"},
            hovertext=[_hover_lines(r) for r in tiles.to_dict("records")],
            hovertemplate="%{hovertext}<extra></extra>",
            name="tiles",
            showlegend=False,
            meta={"role": "tiles"},
        )
    )
    return traces, _link_title(links, noc_bytes_sent(result))


def _tile_px(hw: ChipConfig, plot_px: float) -> float:
    """Marker size of a tile square: under the links' inset, from the plot's pixels."""
    per_tile = plot_px / max(hw.mesh_rows, hw.mesh_cols)
    return max(8.0, min(48.0, 2 * (_LINK_INSET - 0.05) * per_tile))


def _style_mesh_axes(fig: go.Figure, hw: ChipConfig, row: int | None, col: int | None) -> None:
    """Square tiles, x the column, y the row with row 0 at the top (as the heatmaps)."""
    rows, cols = hw.mesh_shape
    where: dict[str, int] = {} if row is None or col is None else {"row": row, "col": col}
    x_name = "x" if row is None or col is None else fig.get_subplot(row, col).xaxis.plotly_name
    anchor = x_name.replace("axis", "")
    fig.update_xaxes(
        range=[-0.5, cols - 0.5],
        tickvals=list(range(cols)),
        title_text="col",
        showgrid=False,
        zeroline=False,
        constrain="domain",
        **where,
    )
    fig.update_yaxes(
        range=[rows - 0.5, -0.5],
        tickvals=list(range(rows)),
        title_text="row",
        showgrid=False,
        zeroline=False,
        scaleanchor=anchor,
        scaleratio=1,
        **where,
    )


def mesh_links_figure(
    result: SimResult,
    hw: ChipConfig,
    *,
    title: str | None = None,
    metric: str = "bytes",
    spm_peak: Mapping[int, int] | None = None,
    height: int = 520,
) -> go.Figure:
    """The simulated run on the mesh: tiles by body cycles, link directions as arrows.

    Traces: one per link direction of :func:`link_frame` (width and colour by ``metric``),
    then the tiles (hover: every column of :func:`tile_sim_frame`); module docstring.

    Raises:
        Tx8labError: ``metric`` is not one of :data:`LINK_METRICS`, or the run used a link
            that is not on ``hw``'s mesh.
    """
    chosen = check_link_metric(metric, "mesh_links_figure")
    margin = {"l": 50, "r": 20, "t": 70, "b": 50}
    traces, default_title = _link_panel(
        result, hw, chosen, spm_peak, _tile_px(hw, height - margin["t"] - margin["b"])
    )
    fig = go.Figure(data=traces)
    _style_mesh_axes(fig, hw, None, None)
    fig.update_layout(
        title=title or default_title,
        height=height,
        margin=margin,
        plot_bgcolor="white",
        showlegend=False,
    )
    return fig


def mesh_figure(
    sched: GroupSchedule,
    hw: ChipConfig,
    *,
    title: str | None = None,
    height: int = 320,
    metric: str = "bytes",
) -> go.Figure:
    """Three heatmaps over the tile mesh (cycles, SPM peak, DMA bytes); idle tiles say so.

    When ``sched.simulated`` used a NoC link, the :func:`mesh_links_figure` panel of that
    run (links by ``metric``) spans a second row, :data:`LINK_PANEL_HEIGHT` pixels added
    to ``height``; its traces follow the heatmaps'.

    Raises:
        Tx8labError: ``metric`` is not one of :data:`LINK_METRICS`.
    """
    chosen = check_link_metric(metric, "mesh_figure")
    df = mesh_frame(sched, hw)
    rows, cols = hw.mesh_shape
    result = sched.simulated
    with_links = result is not None and bool(result.links)
    if with_links:
        fig = make_subplots(
            rows=2,
            cols=len(PANELS),
            specs=[[{}] * len(PANELS), [{"colspan": len(PANELS)}] + [None] * (len(PANELS) - 1)],
            subplot_titles=[*PANELS.values(), "simulated run: NoC links"],
            horizontal_spacing=0.08,
            vertical_spacing=0.1,
            row_heights=[height, LINK_PANEL_HEIGHT],
        )
    else:
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
    margin = {"l": 40, "r": 20, "t": 70, "b": 40}
    total_height = height
    if result is not None and with_links:
        total_height = height + LINK_PANEL_HEIGHT
        peak = int(sched.allocation.peak)
        spm = {t: peak for t in result.tiles if 0 <= t < rows * cols}
        y_domain = fig.get_subplot(2, 1).yaxis.domain
        plot_px = (total_height - margin["t"] - margin["b"]) * (y_domain[1] - y_domain[0])
        traces, link_title = _link_panel(result, hw, chosen, spm, _tile_px(hw, plot_px))
        for trace in traces:
            fig.add_trace(trace, row=2, col=1)
        # the tile colour bar beside the link panel only
        fig.data[-1].marker.colorbar.update(
            y=(y_domain[0] + y_domain[1]) / 2, len=y_domain[1] - y_domain[0]
        )
        _style_mesh_axes(fig, hw, 2, 1)
        fig.layout.annotations[-1].text = f"simulated run: {link_title}"
        fig.update_layout(plot_bgcolor="white")
    used = int(df["busy"].sum())
    fig.update_layout(
        title=title
        or (
            f"group %{sched.group_id} on the {rows}x{cols} mesh: {used} busy tiles "
            "(each runs the same pipeline)"
        ),
        height=total_height,
        margin=margin,
    )
    return fig


__all__ = [
    "ENGINE_COLUMNS",
    "LINK_COLUMNS",
    "LINK_METRICS",
    "LINK_PANEL_HEIGHT",
    "PANELS",
    "TILE_SIM_COLUMNS",
    "LinkMetric",
    "check_link_metric",
    "dma_bytes",
    "link_frame",
    "mesh_figure",
    "mesh_frame",
    "mesh_links_figure",
    "noc_bytes_sent",
    "tile_sim_frame",
]
