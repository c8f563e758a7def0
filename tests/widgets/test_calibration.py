"""The calibration view shows every residual row once per panel, fitted rows filled."""

from __future__ import annotations

from tx8lab.hw.calibrate import calibrate
from tx8lab.hw.presets import TX81
from tx8lab.widgets.calibration import calibration_figure


def test_every_row_is_a_marker_on_both_panels() -> None:
    _, rows = calibrate(TX81)
    fig = calibration_figure(rows)
    markers = [t for t in fig.data if t.mode == "markers"]
    left = [t for t in markers if t.xaxis == "x"]
    right = [t for t in markers if t.xaxis == "x2"]
    assert sum(len(t.x) for t in left) == sum(len(t.x) for t in right) == len(rows)
    for t in left:
        fitted = [r.fitted for r in rows if r.engine == t.name]
        assert list(t.marker.symbol) == ["circle" if f else "circle-open" for f in fitted]
        assert [y / x for x, y in zip(t.x, t.y, strict=True)] == [
            r.ratio for r in rows if r.engine == t.name
        ]
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
