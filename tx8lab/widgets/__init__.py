"""JupyterLab views (ipywidgets/anywidget, plotly, graphviz) over tx8lab.core results.

Empty for now: the widget issues (pass stepper, graph view, SPM Gantt, mesh heatmap) fill
it. Needs the ``[widgets]`` extra. Widgets import core, hw and kernels; nothing outside
widgets and notebooks imports this package (DESIGN.md §1).
"""
