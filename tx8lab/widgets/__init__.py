"""JupyterLab views (ipywidgets/anywidget, graphviz) over tx8lab.core results.

Needs the ``[widgets]`` extra. Widgets import core, hw and kernels; nothing outside
widgets and notebooks imports this package (DESIGN.md §1).

- :class:`GraphView` (``graph_view.py``): ops coloured by an overlay, ChannelNorms,
  groups as clusters; hover, click -> decisions, re-colour without a new layout.
- :class:`PassStepper` (``stepper.py``): a pipeline trace pass by pass: IR diff, graph
  diff by stable op id, decisions, stats and wall time; its C tab shows a group's IR
  beside its C, runs main.c on the host model and lists the group's executed commands
  per tile.
- :class:`KnobPanel` (``knob_panel.py``): controls generated from the pass knobs and the
  hardware preset; a change re-runs only the passes after it (``Explorer`` cache) and
  updates the linked views, with the measured times.
- :class:`GroupTuner` (``group_tuner.py``): one group's group-cost knobs, hardware and a
  strategy picker over its search candidates; a change re-estimates only that group and
  redraws its timeline, SPM Gantt and factor space in place, with the measured times.
- :class:`SpmGantt` (``spm_gantt.py``): a group's SPM buffers in time x offset, two
  allocators side by side; :class:`TimelineView` / :class:`ScheduleView`
  (``timeline.py``): the sw-pipeline timeline per engine, one time cursor shared with the
  Gantt and a GraphView. Figures headless: :func:`spm_gantt_figure`, :func:`timeline_figure`,
  :func:`simulated_figure` (the simulated execution beside the plan).
- :class:`FactorSpaceView` (``factor_space.py``): a group's sharding candidates, cycles
  vs SPM peak with the Pareto front, rejected ones by status; selecting one shows its
  split, propagation and timeline. Headless: :func:`factor_space_figure`,
  :func:`levels_frame`.
- :func:`write_html_report` (``report_html.py``): the standalone HTML page of a run
  (``tx8lab run --report``); :func:`mesh_figure` / :func:`mesh_frame` (``mesh.py``): a
  group on the tile mesh (cycles, SPM peak, DMA bytes per tile); :func:`mesh_links_figure` /
  :func:`link_frame` / :func:`tile_sim_frame`: a simulated run's NoC link traffic and
  per-tile figures.
- Pure parts usable headless: :func:`module_to_dot` (``graph_dot.py``), :func:`render_svg`
  (``render.py``), overlays (``overlays.py``), :func:`graph_diff` (``diff.py``);
  measured figures in ``bench.py`` (``figures()``).
"""

from tx8lab.widgets.diff import GraphDiff, decisions_frame, graph_diff, ir_diff_html
from tx8lab.widgets.factor_space import FactorSpaceView, factor_space_figure, levels_frame
from tx8lab.widgets.graph_dot import module_to_dot
from tx8lab.widgets.graph_view import GraphView
from tx8lab.widgets.group_tuner import GroupTuner
from tx8lab.widgets.knob_panel import HW_FIELDS, KnobPanel
from tx8lab.widgets.mesh import (
    link_frame,
    mesh_figure,
    mesh_frame,
    mesh_links_figure,
    tile_sim_frame,
)
from tx8lab.widgets.overlays import (
    Overlay,
    alignment_overlay,
    category_overlay,
    created_by_overlay,
    engine_overlay,
    group_overlay,
    numeric_overlay,
)
from tx8lab.widgets.render import render_svg, restyle_svg
from tx8lab.widgets.report_html import write_html_report
from tx8lab.widgets.spm_gantt import (
    SpmGantt,
    compare_allocations,
    group_schedule,
    spm_gantt_figure,
)
from tx8lab.widgets.stepper import PassStepper
from tx8lab.widgets.timeline import (
    ScheduleView,
    TimelineView,
    simulated_figure,
    timeline_figure,
)

__all__ = [
    "HW_FIELDS",
    "FactorSpaceView",
    "GraphDiff",
    "GraphView",
    "GroupTuner",
    "KnobPanel",
    "Overlay",
    "PassStepper",
    "ScheduleView",
    "SpmGantt",
    "TimelineView",
    "alignment_overlay",
    "category_overlay",
    "compare_allocations",
    "created_by_overlay",
    "decisions_frame",
    "engine_overlay",
    "factor_space_figure",
    "graph_diff",
    "group_overlay",
    "group_schedule",
    "ir_diff_html",
    "levels_frame",
    "link_frame",
    "mesh_figure",
    "mesh_frame",
    "mesh_links_figure",
    "module_to_dot",
    "numeric_overlay",
    "render_svg",
    "restyle_svg",
    "simulated_figure",
    "spm_gantt_figure",
    "tile_sim_frame",
    "timeline_figure",
    "write_html_report",
]
