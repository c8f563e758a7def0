"""Chrome / Perfetto trace of group timelines: one track per tile engine.

Spec: ``tx8lab run --trace`` (DESIGN.md §7), a Perfetto-loadable pipeline timeline. The Trace
Event Format's JSON object form: ``{"traceEvents": [...]}`` with complete events (``"ph":
"X"``, ``ts`` and ``dur`` in microseconds) and metadata events (``"ph": "M"``) naming
processes and threads; both chrome://tracing and ui.perfetto.dev open it.

Readings chosen:

- **pid = tile, tid = engine.** A group given as one :class:`Timeline` (every tile runs the
  same pipeline) is drawn once as pid 0, named "tile 0 (all tiles alike)"; a mapping tile
  -> timeline gives one process per tile. Each engine of ``ENGINES`` is a thread (tid =
  its index), so every tile engine has its own track.
- **Time.** Cycles at the preset clock (``hw.clock_hz``): ``ts = cycles / clock_hz * 1e6``.
- **A model** (:func:`model_trace`) lays the groups end to end in program order; a group
  starts when the previous one ended on every tile (its slowest tile), plus a barrier
  when the previous group has ``need_barrier``. An extra process ("groups", pid = one past
  the largest tile id) has a "group" track with one event per group and a "barrier" track.
- Event ``args`` carry the group id, task id, iteration, step and cycles, so a click in
  the viewer says which slice of which op ran. Given the program's commands
  (``commands``: group id -> (task id, iteration) -> the command's fields, as
  ``Program.command_args`` gives them for one tile), each event's ``args["command"]``
  also shows the call main.c makes for that slot: its C function and the SPM / DDR
  ranges it reads and writes. This module sits below the program layer, so it takes the
  fields as plain data.
- **The simulated execution** (:func:`sim_events`, issue 19) goes beside the plan: one
  process per tile ("simulated tile T", pids after the plan's), one track per simulator
  engine and one for the issuing kernel core. Each command is a slice on its engine's
  track (and its issue a slice on ``kcore``); each wait is a ``stall`` slice on the track
  that waited, named and coloured by its reason: ``issue`` (the engine was free, the
  command not yet issued), ``dependency`` (issued, waiting on an overlapping earlier
  command or another tile), ``queue full`` / ``join`` / ``barrier`` on ``kcore``. The
  stall slices of a track add up to the simulator's stall figures of that engine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tx8lab.core.schedule.estimate import SIM_ENGINES, default_barrier_cycles
from tx8lab.core.schedule.tasks import ENGINES, Timeline
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.sim import SimResult

#: Trace colour (the viewers' reserved colour names) of each stall reason.
STALL_COLOURS: Mapping[str, str] = {
    "issue": "grey",
    "dependency": "bad",
    "queue full": "terrible",
    "join": "yellow",
    "barrier": "olive",
    "receive": "rail_response",
    "link": "rail_animation",
}

GroupTimelines = Timeline | Mapping[int, Timeline]
"""One group: a timeline for every tile, or tile id -> timeline."""
SlotCommands = Mapping[tuple[str, tuple[int, ...]], Mapping[str, Any]]
"""(task id, iteration) -> the fields of the command that slot issues."""

_TID = {e: i for i, e in enumerate(ENGINES)}


def _us(cycles: int, clock_hz: float) -> float:
    return cycles / clock_hz * 1e6


def _tiles(group: GroupTimelines) -> dict[int, Timeline]:
    per_tile = {0: group} if isinstance(group, Timeline) else dict(group)
    if not per_tile:
        raise Tx8labError("trace: a group has no tile timelines; pass at least one")
    return per_tile


def timeline_events(
    timeline: Timeline,
    *,
    clock_hz: float,
    pid: int,
    offset_cycles: int = 0,
    commands: SlotCommands | None = None,
) -> list[dict[str, Any]]:
    """Complete (``"X"``) events for every slot of ``timeline``, shifted by ``offset_cycles``.

    ``commands`` adds each slot's command fields as ``args["command"]``.

    Examples:
        >>> from tx8lab.core.schedule.sw_pipeline import sw_pipeline
        >>> from tx8lab.core.schedule.tasks import Buffer, ScheduleInput, Task
        >>> inp = ScheduleInput(1, (Task("ld:x", 0, "ld", 500, writes=("x",)),),
        ...                     {"x": Buffer("x", 0, 64)})
        >>> ev = timeline_events(sw_pipeline(inp), clock_hz=1e9, pid=0, offset_cycles=1000)
        >>> ev[0]["name"], ev[0]["ts"], ev[0]["dur"], ev[0]["tid"]
        ('ld:x', 1.0, 0.5, 0)
    """
    events: list[dict[str, Any]] = []
    for s in timeline.slots:
        task = timeline.tasks.get(s.task)
        name = s.task + ("[" + ",".join(map(str, s.iteration)) + "]" if s.iteration else "")
        args: dict[str, Any] = {
            "group": timeline.group_id,
            "task": s.task,
            "iteration": list(s.iteration),
            "step": s.step,
            "cycles": s.end - s.start,
        }
        if task is not None:
            args["op_id"] = task.op_id
            if task.stage:
                args["stage"] = task.stage
            if task.explain:
                args["explain"] = task.explain
        command = commands.get((s.task, tuple(s.iteration))) if commands else None
        if command is not None:
            args["command"] = dict(command)
        events.append(
            {
                "name": name,
                "cat": f"group {timeline.group_id}",
                "ph": "X",
                "ts": _us(offset_cycles + s.start, clock_hz),
                "dur": _us(s.end - s.start, clock_hz),
                "pid": pid,
                "tid": _TID[s.engine],
                "args": args,
            }
        )
    return events


def _metadata(pid: int, name: str, threads: Sequence[tuple[int, str]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}},
        {
            "name": "process_sort_index",
            "ph": "M",
            "pid": pid,
            "tid": 0,
            "args": {"sort_index": pid},
        },
    ]
    for tid, thread in threads:
        events.append(
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": thread}}
        )
        events.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": pid,
                "tid": tid,
                "args": {"sort_index": tid},
            }
        )
    return events


def _tile_metadata(per_tile: Mapping[int, Timeline]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    alike = len(per_tile) == 1
    for tile in sorted(per_tile):
        name = f"tile {tile}" + (" (all tiles alike)" if alike else "")
        events.extend(_metadata(tile, name, [(i, e) for i, e in enumerate(ENGINES)]))
    return events


def group_trace(group: GroupTimelines, hw: ChipConfig) -> dict[str, Any]:
    """The trace of one group (one process per tile, one track per engine)."""
    return model_trace([group], hw, need_barrier=[False])


def model_trace(
    groups: Sequence[GroupTimelines],
    hw: ChipConfig,
    *,
    need_barrier: Sequence[bool] | None = None,
    barrier_cycles: int | None = None,
    commands: Mapping[int, SlotCommands] | None = None,
) -> dict[str, Any]:
    """The trace of a model: the groups end to end, barriers between flagged ones.

    Args:
        groups: per group, its timeline (all tiles alike) or tile id -> timeline.
        hw: the chip (its clock converts cycles to microseconds).
        need_barrier: per group, whether a barrier follows it; None = every group.
        barrier_cycles: cost of one barrier; None = ``estimate.default_barrier_cycles``.
        commands: group id -> its slots' command fields (module docstring); a group
            missing here has none.
    """
    flags = list(need_barrier) if need_barrier is not None else [True] * len(groups)
    if len(flags) != len(groups):
        raise Tx8labError(
            f"model_trace: {len(groups)} groups but {len(flags)} need_barrier flags; "
            "give one flag per group"
        )
    cost = default_barrier_cycles(hw) if barrier_cycles is None else barrier_cycles
    tiles: dict[int, Timeline] = {}
    per_group = [_tiles(g) for g in groups]
    for per_tile in per_group:
        for tile, timeline in per_tile.items():
            tiles.setdefault(tile, timeline)
    overview = max(tiles, default=0) + 1
    events: list[dict[str, Any]] = []
    events.extend(_tile_metadata(tiles))
    events.extend(_metadata(overview, "groups", [(0, "group"), (1, "barrier")]))
    clock = hw.clock_hz
    t = 0
    for per_tile, barrier in zip(per_group, flags, strict=True):
        span = max(tl.makespan for tl in per_tile.values())
        group_id = next(iter(per_tile.values())).group_id
        for tile, tl in sorted(per_tile.items()):
            events.extend(
                timeline_events(
                    tl,
                    clock_hz=clock,
                    pid=tile,
                    offset_cycles=t,
                    commands=(commands or {}).get(group_id),
                )
            )
        events.append(
            {
                "name": f"group {group_id}",
                "cat": "group",
                "ph": "X",
                "ts": _us(t, clock),
                "dur": _us(span, clock),
                "pid": overview,
                "tid": 0,
                "args": {"group": group_id, "cycles": span, "tiles": sorted(per_tile)},
            }
        )
        t += span
        if barrier:
            events.append(
                {
                    "name": "barrier",
                    "cat": "barrier",
                    "ph": "X",
                    "ts": _us(t, clock),
                    "dur": _us(cost, clock),
                    "pid": overview,
                    "tid": 1,
                    "args": {"after_group": group_id, "cycles": cost},
                }
            )
            t += cost
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"hw": hw.name, "clock_hz": clock, "total_cycles": t},
    }


def sim_events(result: SimResult, *, pid_base: int, offset_cycles: int = 0) -> list[dict[str, Any]]:
    """The simulated run as trace events: commands and stalls per tile and engine.

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> from tx8lab.hw.sim import Range, StreamBuilder, simulate
        >>> b = StreamBuilder(TX81)
        >>> _ = b.load(4096, Range("spm", 0, 4096), label="ld x")
        >>> _ = b.ct(2048, 1, "f16", reads=(Range("spm", 0, 4096),), label="add")
        >>> ev = sim_events(simulate({0: b.commands}, TX81), pid_base=20)
        >>> for e in ev:
        ...     if e["ph"] == "X":
        ...         print(e["name"], "on", e["args"]["engine"])
        stall: issue on rdma
        ld x on rdma
        issue ld x on kcore
        stall: issue on ct
        stall: dependency on ct
        add on ct
        issue add on kcore
    """
    clock = result.clock_hz
    tid = {e: i for i, e in enumerate(SIM_ENGINES)}
    events: list[dict[str, Any]] = []

    def add(pid: int, engine: str, name: str, lo: int, hi: int, **args: Any) -> None:
        if hi <= lo:
            return
        event: dict[str, Any] = {
            "name": name,
            "cat": "stall" if name.startswith("stall: ") else "simulated",
            "ph": "X",
            "ts": _us(offset_cycles + lo, clock),
            "dur": _us(hi - lo, clock),
            "pid": pid,
            "tid": tid[engine],
            "args": {"engine": engine, "cycles": hi - lo, **args},
        }
        reason = name.removeprefix("stall: ")
        if reason in STALL_COLOURS:
            event["cname"] = STALL_COLOURS[reason]
        events.append(event)

    for k, (tile, run) in enumerate(sorted(result.tiles.items())):
        pid = pid_base + k
        events.extend(_metadata(pid, f"simulated tile {tile}", list(enumerate(SIM_ENGINES))))
        free: dict[str, int] = {}
        kcore = 0
        for t in run.timings:
            label = t.label or t.engine
            if t.engine in ("join", "barrier", "recv"):
                reason = "receive" if t.engine == "recv" else t.engine
                add(pid, "kcore", f"stall: {reason}", kcore, t.start, before=label)
                add(pid, "kcore", label, t.start, t.end, command=t.index)
                kcore = t.end
                continue
            prev = free.get(t.engine, 0)
            add(pid, t.engine, "stall: issue", prev, min(t.issue_end, t.start), before=label)
            add(pid, t.engine, "stall: dependency", max(prev, t.issue_end), t.start, before=label)
            # a NoC transfer's wait for its links is drawn at its start
            add(pid, t.engine, "stall: link", t.start, t.start + t.link_wait, before=label)
            add(pid, t.engine, label, t.start + t.link_wait, t.end, command=t.index)
            free[t.engine] = t.end
            add(pid, "kcore", "stall: queue full", kcore, t.issue_start, before=label)
            add(pid, "kcore", f"issue {label}", t.issue_start, t.issue_end, command=t.index)
            kcore = t.issue_end
    if result.links:
        pid = pid_base + len(result.tiles)
        used = list(result.links)
        names = [(i, f"link {a}->{b}") for i, (a, b) in enumerate(used)]
        events.extend(_metadata(pid, "NoC links", names))
        for i, link in enumerate(used):
            for u in result.links[link]:
                events.append(
                    {
                        "name": f"tile {u.tile} #{u.index}",
                        "cat": "noc",
                        "ph": "X",
                        "ts": _us(offset_cycles + u.start, clock),
                        "dur": _us(u.end - u.start, clock),
                        "pid": pid,
                        "tid": i,
                        "args": {"link": list(link), "bytes": u.num_bytes, "command": u.index},
                    }
                )
    return events


def write_trace(trace: Mapping[str, Any], path: str | Path) -> Path:
    """Write ``trace`` as JSON to ``path`` (open it in ui.perfetto.dev); return the path."""
    out = Path(path)
    out.write_text(json.dumps(trace, separators=(",", ":")) + "\n")
    return out


__all__ = [
    "STALL_COLOURS",
    "GroupTimelines",
    "SlotCommands",
    "group_trace",
    "model_trace",
    "sim_events",
    "timeline_events",
    "write_trace",
]
