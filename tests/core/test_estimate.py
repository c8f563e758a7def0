"""estimate and the Perfetto trace (tx8lab.core.schedule.estimate, .trace)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.test_sw_pipeline import (
    batchnorm_loop,
    load_compute_store,
    nested_psum,
    schedule_inputs,
)
from tx8lab.core.schedule.estimate import (
    default_barrier_cycles,
    estimate_group,
    estimate_model,
    estimate_tile,
    explain,
    report_fields,
)
from tx8lab.core.schedule.sw_pipeline import sw_pipeline
from tx8lab.core.schedule.tasks import ENGINES, ScheduleInput
from tx8lab.core.schedule.trace import group_trace, model_trace, timeline_events, write_trace
from tx8lab.errors import Tx8labError
from tx8lab.hw.presets import TX81


def test_tile_estimate_batchnorm() -> None:
    e = estimate_tile(sw_pipeline(batchnorm_loop()))
    assert e.cycles == 325
    assert dict(e.engine_busy_cycles) == {
        "ld": 170,
        "ne": 0,
        "ct": 245,
        "st": 125,
        "tdma": 0,
        "dte": 0,
    }
    assert e.utilization["ct"] == pytest.approx(245 / 325)
    # golden batchnorm_loop: the loads, ct:bn in steps 2-5, then st:out[3] (30) beats
    # ct:post (5) in step 6, st:post alone in step 7
    assert e.step_limiting == ("ld", "ld", "ct", "ct", "ct", "ct", "st", "st")
    assert dict(e.limiting_cycles) == {"ld": 50, "ne": 0, "ct": 240, "st": 35, "tdma": 0, "dte": 0}
    assert e.limiting_engine == "ct"


def test_limiting_step_tie_goes_to_engine_order() -> None:
    from tx8lab.core.schedule.tasks import Buffer, Repeat, Task

    body = (Task("ld", 0, "ld", 10, writes=("x",)), Task("st", 0, "st", 10, reads=("x",)))
    t = sw_pipeline(ScheduleInput(0, (Repeat(2, body),), {"x": Buffer("x", 0, 8)}))
    e = estimate_tile(t)
    # step 1 holds st[0] and ld[1], both 10 cycles: ld comes first in ENGINES
    assert e.step_limiting == ("ld", "ld", "st")
    assert e.limiting_engine == "ld"


def test_group_is_its_slowest_tile() -> None:
    fast = sw_pipeline(batchnorm_loop())
    slow = sw_pipeline(batchnorm_loop(), multi_buffer=1)
    g = estimate_group({0: fast, 1: slow, 2: fast})
    assert (g.slowest_tile, g.cycles) == (1, slow.makespan)
    assert g.limiting_engine == estimate_tile(slow).limiting_engine
    assert estimate_group(fast).tiles.keys() == {0}
    with pytest.raises(Tx8labError, match="one group"):
        estimate_group({0: fast, 1: sw_pipeline(nested_psum())})
    with pytest.raises(Tx8labError, match="at least one"):
        estimate_group({})


def test_model_latency_sums_groups_and_barriers() -> None:
    groups = [
        estimate_group(sw_pipeline(f())) for f in (load_compute_store, batchnorm_loop, nested_psum)
    ]
    m = estimate_model(groups, TX81, need_barrier=[True, False, True], barrier_cycles=1000)
    assert m.barriers == 2
    assert m.total_cycles == 190 + 325 + 480 + 2000
    assert m.latency_s == pytest.approx(2995e-9)
    default = estimate_model(groups, TX81)
    assert default.barriers == 3
    assert default.barrier_cycles == default_barrier_cycles(TX81)
    with pytest.raises(Tx8labError, match="one flag per group"):
        estimate_model(groups, TX81, need_barrier=[True])


def test_default_barrier_is_the_simulator_barrier_law() -> None:
    # one NCC join over the chip's 16 tiles and two later DTE messages (laws.barrier)
    hw = TX81.replace(clock_hz=2e9)
    t = hw.tile
    seconds = t.join_s + 16 * t.join_participant_s + 2 * hw.dte_send_s
    assert default_barrier_cycles(hw) == math.ceil(seconds * 2e9 - 1e-9)
    assert 5000 < default_barrier_cycles(hw) < 9000  # a few µs, not a cycle count of 0


def test_report_fields() -> None:
    g = estimate_group(sw_pipeline(batchnorm_loop()))
    fields = report_fields(g)
    assert fields["cycles"] == 325
    assert fields["limiting_engine"] == "ct"
    assert fields["engine_busy_cycles"] == dict(g.engine_busy_cycles)
    json.dumps(fields)


def test_explain_names_the_numbers() -> None:
    inp = batchnorm_loop()
    text = explain(estimate_group(sw_pipeline(inp)), inp=inp, hw=TX81)
    assert "group 2: 325 cycles = 0.325 µs on tile 0" in text
    assert "limiting engine: ct (limits 240 of 325 cycles)" in text
    assert "steps limited by: 0-1 ld, 2-5 ct, 6-7 st" in text
    assert "ct:bn on ct: 60 x 4 = 240" in text


@given(schedule_inputs(), st.sampled_from([1, 2]), st.integers(0, 20))
def test_estimate_properties(inp: ScheduleInput, multi_buffer: int, overhead: int) -> None:
    t = sw_pipeline(inp, multi_buffer=multi_buffer, step_overhead_cycles=overhead)
    e = estimate_tile(t)
    assert e.cycles == t.makespan >= max(e.engine_busy_cycles.values())
    assert all(0.0 <= e.utilization[x] <= 1.0 for x in ENGINES)
    # the limiting tasks and the per-step overhead make up the makespan
    assert sum(e.limiting_cycles.values()) + overhead * t.steps == t.makespan
    assert len(e.step_limiting) == t.steps


# ----------------------------------------------------------------------------- trace


def _x(trace: dict[str, object]) -> list[dict[str, object]]:
    events = trace["traceEvents"]
    assert isinstance(events, list)
    return [e for e in events if e["ph"] == "X"]


def _spans(events: list[dict[str, object]]) -> list[object]:
    """ts, dur, ts, dur, ... of ``events``."""
    return [x for e in events for x in (e["ts"], e["dur"])]


def test_group_trace_one_track_per_engine() -> None:
    t = sw_pipeline(batchnorm_loop())
    trace = group_trace(t, TX81)
    xs = [e for e in _x(trace) if e["pid"] == 0]
    assert len(xs) == len(t.slots)
    st0 = next(e for e in xs if e["name"] == "st:out[0]")
    # step 3 starts at cycle 110, 30 cycles at 1 GHz
    assert (st0["ts"], st0["dur"]) == pytest.approx((0.11, 0.03))
    assert st0["tid"] == ENGINES.index("st")
    assert st0["args"] == {
        "group": 2,
        "task": "st:out",
        "iteration": [0],
        "step": 3,
        "cycles": 30,
        "op_id": 2,
    }
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in trace["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    assert [names[(0, i)] for i in range(len(ENGINES))] == list(ENGINES)


def test_model_trace_lays_groups_end_to_end() -> None:
    a, b = sw_pipeline(load_compute_store()), sw_pipeline(nested_psum())
    per_tile = {0: b, 5: sw_pipeline(nested_psum(), multi_buffer=1)}
    trace = model_trace([a, per_tile], TX81, need_barrier=[True, True], barrier_cycles=100)
    groups = [e for e in _x(trace) if e["name"].startswith("group ")]
    assert _spans(groups) == pytest.approx([0.0, 0.19, 0.29, 0.58])
    barriers = [e for e in _x(trace) if e["name"] == "barrier"]
    assert _spans(barriers) == pytest.approx([0.19, 0.1, 0.87, 0.1])
    # the second group's events are offset by 190 + 100 cycles, one process per tile
    first = min((e for e in _x(trace) if e["pid"] == 5), key=lambda e: e["ts"])
    assert first["ts"] == pytest.approx(0.29)
    assert trace["otherData"]["total_cycles"] == 190 + 100 + 580 + 100


def test_write_trace_is_json(tmp_path: Path) -> None:
    path = write_trace(group_trace(sw_pipeline(nested_psum()), TX81), tmp_path / "t.json")
    data = json.loads(path.read_text())
    assert set(data) == {"traceEvents", "displayTimeUnit", "otherData"}
    for e in data["traceEvents"]:
        assert {"name", "ph", "pid", "tid"} <= e.keys()
        if e["ph"] == "X":
            assert e["ts"] >= 0
            assert e["dur"] >= 0


def test_timeline_events_offset_and_clock() -> None:
    t = sw_pipeline(load_compute_store())
    ev = timeline_events(t, clock_hz=2e9, pid=3, offset_cycles=2000)
    assert [e["name"] for e in ev] == ["ld:%0", "ld:%1", "ne:%2", "st:%2"]
    assert _spans(ev) == pytest.approx([1.0, 0.02, 1.02, 0.01, 1.03, 0.05, 1.08, 0.015])
    assert {e["pid"] for e in ev} == {3}
