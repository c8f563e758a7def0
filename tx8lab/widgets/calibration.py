"""The calibration view: modelled against measured for every board row, and residuals per engine.

Spec: issue 19 (a calibration view, plotly: modelled vs measured per row on log axes and
the residual per engine, in the notebook section "How far to trust the numbers"). Takes
the residual rows of ``tx8lab.hw.calibrate`` as they are.

Readings chosen:

- Left: one marker per row, x measured and y modelled (ns, log axes), the diagonal where
  they agree; filled markers are rows that informed a fitted constant, open ones are
  predictions. Right: ``modelled / measured`` per engine (log axis), one point per row.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tx8lab.hw.calibrate import Residual

_ENGINES = ("kcore", "ne", "ct", "rdma", "wdma", "tdma", "dte")


def calibration_figure(rows: Sequence[Residual], *, height: int = 420) -> go.Figure:
    """Modelled vs measured (left) and the ratio per engine (right), one trace per engine."""
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.6, 0.4],
        subplot_titles=("modelled vs measured (ns)", "modelled / measured per engine"),
    )
    lo = min((min(r.measured_ns, r.modelled_ns) for r in rows), default=1.0)
    hi = max((max(r.measured_ns, r.modelled_ns) for r in rows), default=10.0)
    fig.add_trace(
        go.Scatter(
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            line={"dash": "dot", "color": "grey"},
            name="modelled = measured",
            hoverinfo="skip",
        ),
        row=1,
        col=1,
    )
    engines = [e for e in _ENGINES if any(r.engine == e for r in rows)]
    for e in engines:
        mine = [r for r in rows if r.engine == e]
        text = [
            f"{r.ref}: {r.what}<br>{r.how}<br>measured {r.measured_ns:,.0f} ns, modelled "
            f"{r.modelled_ns:,.0f} ns, ratio {r.ratio:.3f}" + (" (fitted)" if r.fitted else "")
            for r in mine
        ]
        symbols = ["circle" if r.fitted else "circle-open" for r in mine]
        fig.add_trace(
            go.Scatter(
                x=[r.measured_ns for r in mine],
                y=[r.modelled_ns for r in mine],
                mode="markers",
                name=e,
                legendgroup=e,
                text=text,
                hoverinfo="text",
                marker={"symbol": symbols, "size": 9},
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=[e] * len(mine),
                y=[r.ratio for r in mine],
                mode="markers",
                name=e,
                legendgroup=e,
                showlegend=False,
                text=text,
                hoverinfo="text",
                marker={"symbol": symbols, "size": 9},
            ),
            row=1,
            col=2,
        )
    fig.update_xaxes(type="log", title_text="measured ns", row=1, col=1)
    fig.update_yaxes(type="log", title_text="modelled ns", row=1, col=1)
    fig.update_yaxes(type="log", title_text="ratio", row=1, col=2)
    fig.add_hline(y=1.0, line_dash="dot", line_color="grey", row=1, col=2)
    fig.update_layout(height=height, margin={"t": 40, "l": 50, "r": 10, "b": 40})
    return fig


__all__ = ["calibration_figure"]
