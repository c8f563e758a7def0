"""estimate: cycles of a group from its timeline, engine busy time, the limiting engine.

Spec: DESIGN.md §6 ("The cost of a group = max over engines (NE, CGRA, RDMA, WDMA, TDMA) of
their busy time in the software pipeline plus issue overheads; the chip time is the
slowest tile"), timed by the one tile model. A tile's cycles are its timeline's makespan; a group's
are its slowest tile's; a model's are the sum over its groups plus one barrier per group
with ``need_barrier``.

Readings chosen where the spec is vague:

- **Makespan, not the busiest engine.** In the lockstep pipeline (see
  :mod:`~tx8lab.core.schedule.sw_pipeline`) engines wait for each step's longest task, so
  the makespan is at least the busiest engine's busy time (DESIGN's "max over engines")
  and is what the group costs. Issue overheads are inside each task's cycles (the tile
  cost model adds them), so they are not added again.
- **Limiting engine.** Per step, the engine of its longest task (ties: the first in
  ``ENGINES`` order: ld, ne, ct, st, tdma, dte). Overall, the engine that limits the most
  makespan cycles (the sum of the durations of the steps it limits): speeding that engine
  up shortens the group most. Ties go to the busier engine, then ``ENGINES`` order.
- **Tiles.** :func:`estimate_group` takes one :class:`Timeline` (every tile runs the same
  pipeline on its shard, the usual case) or a mapping tile -> timeline; the group's
  figures are those of its slowest tile (the lowest tile id among equals).
- **Barrier cost.** A parameter of :func:`estimate_model`; its default
  :func:`default_barrier_cycles` is the simulator's barrier law (``hw.laws.barrier`` over
  the chip's tiles: one NCC join plus two tile-to-tile messages, every tile signals
  arrival, then is released), so the summed model and the simulated program charge one
  barrier alike.

The plan and the simulated execution (issue 19: one tile model for every figure):

- The timeline above is the compiler's *plan* (TS_SwPipeline's lock-step frames, each
  task costed with the compiler's ``command_issue_s`` prior). What a group costs is its
  command stream played out by the tile simulator (``tx8lab.hw.sim``, engine laws fitted
  on board rows): a :class:`SimEstimate`, which ``tx8lab.core.simulate`` builds and the
  search attaches to the candidates it simulates. :attr:`GroupEstimate.cycles` is the
  simulated body when there is one, the plan's makespan otherwise
  (:attr:`GroupEstimate.plan_cycles` keeps the plan).
- **Limiting engine (simulated).** The engine (``kcore``, the issuing core, included) with
  the most busy cycles on the slowest tile; ties in :data:`SIM_ENGINES` order.
- **Costliest stall.** The limiting engine's idle time is what keeps the body above its
  busy time; the stall reason (``issue``, ``dependency``; for ``kcore``: ``queue full``,
  ``join``, ``barrier``) with the most cycles of that engine is the stall that cost most.
  When the limiting engine never stalled, the largest stall of any engine is named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tx8lab.core.schedule.tasks import ENGINES, Engine, ScheduleInput, Timeline
from tx8lab.errors import Tx8labError
from tx8lab.hw import laws
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.sim import ENGINES as HW_ENGINES
from tx8lab.hw.sim import SimResult, costliest_stall, limiting_engine

#: Simulator engines in report order, the issuing kernel core last.
SIM_ENGINES: tuple[str, ...] = (*HW_ENGINES, "kcore")
#: Plan engine -> the simulator engine that runs its tasks.
SIM_ENGINE_OF: Mapping[str, str] = {
    "ld": "rdma",
    "ne": "ne",
    "ct": "ct",
    "st": "wdma",
    "tdma": "tdma",
    "dte": "dte",
}


@dataclass(frozen=True)
class SimEstimate:
    """A group's command stream played out by the tile simulator (module docstring)."""

    cycles: int
    """Kernel body of the slowest tile (from its first issue to its last end)."""
    slowest_tile: int
    tile_cycles: Mapping[int, int]
    """Tile id -> its body."""
    busy: Mapping[str, int]
    """Busy cycles per engine on the slowest tile (every key of :data:`SIM_ENGINES`)."""
    stalls: Mapping[str, Mapping[str, int]]
    """Engine -> stall reason -> cycles on the slowest tile."""
    commands: int
    """Commands the slowest tile issues."""
    result: SimResult | None = field(default=None, repr=False, compare=False)
    """The simulator's run (per command timings, for the trace and the timeline)."""

    @property
    def limiting_engine(self) -> str:
        """The busiest engine of the slowest tile (module docstring)."""
        return limiting_engine(self.busy, SIM_ENGINES)

    @property
    def costliest_stall(self) -> tuple[str, str, int] | None:
        """``(engine, reason, cycles)`` of the stall that cost most (module docstring)."""
        return costliest_stall(self.busy, self.stalls, SIM_ENGINES)

    def busy_ms(self, clock_hz: float) -> dict[str, float]:
        """Busy time per engine, ms."""
        return {e: self.busy.get(e, 0) / clock_hz * 1e3 for e in SIM_ENGINES}

    def stall_ms(self, clock_hz: float) -> dict[str, dict[str, float]]:
        """Stall time per engine and reason, ms (reasons with cycles only)."""
        return {
            e: {r: c / clock_hz * 1e3 for r, c in rs.items() if c} for e, rs in self.stalls.items()
        }


@dataclass(frozen=True)
class TileEstimate:
    """One tile's pipeline, summed up."""

    cycles: int
    """Makespan of the timeline."""
    steps: int
    engine_busy_cycles: Mapping[Engine, int]
    """Cycles each engine runs a task (every engine of ``ENGINES`` is a key)."""
    utilization: Mapping[Engine, float]
    """``busy / cycles`` per engine (0 when the makespan is 0)."""
    step_limiting: tuple[Engine, ...]
    """Engine of the longest task of each step."""
    limiting_cycles: Mapping[Engine, int]
    """Per engine, the summed longest-task cycles of the steps it limits."""
    limiting_engine: Engine | None
    """The engine limiting the most cycles (None for an empty timeline)."""
    retracted: int


@dataclass(frozen=True)
class GroupEstimate:
    """A group on the chip: its tiles' estimates and the slowest one."""

    group_id: int
    tiles: Mapping[int, TileEstimate]
    """Tile id -> estimate (tile 0 stands for all tiles when they run one pipeline)."""
    slowest_tile: int
    timeline: Timeline
    """The slowest tile's timeline (its steps are explained)."""
    sim: SimEstimate | None = None
    """The group's command stream played by the tile simulator (None: plan only)."""

    @property
    def slowest(self) -> TileEstimate:
        """The plan's estimate of the slowest tile."""
        return self.tiles[self.slowest_tile]

    @property
    def cycles(self) -> int:
        """Chip cycles of the group: the simulated body, else the plan's makespan."""
        return self.sim.cycles if self.sim is not None else self.slowest.cycles

    @property
    def plan_cycles(self) -> int:
        """The plan's cycles: the slowest tile's lock-step makespan."""
        return self.slowest.cycles

    @property
    def engine_busy_cycles(self) -> Mapping[Engine, int]:
        """The plan's busy cycles per engine on the slowest tile."""
        return self.slowest.engine_busy_cycles

    @property
    def plan_busy_by_sim_engine(self) -> dict[str, int]:
        """The plan's busy cycles per simulator engine (``ld`` on ``rdma``, ``st`` on ``wdma``).

        There is no ``dte`` or ``kcore`` key: the plan charges issue inside each task.
        """
        out: dict[str, int] = {}
        for plan_engine, busy in self.engine_busy_cycles.items():
            engine = SIM_ENGINE_OF[plan_engine]
            out[engine] = out.get(engine, 0) + busy
        return out

    @property
    def limiting_engine(self) -> str | None:
        """The simulated limiting engine, else the plan's (module docstring)."""
        if self.sim is not None:
            return self.sim.limiting_engine
        return self.slowest.limiting_engine


@dataclass(frozen=True)
class ModelEstimate:
    """End-to-end latency of a model: the groups in program order, plus barriers."""

    groups: tuple[GroupEstimate, ...]
    need_barrier: tuple[bool, ...]
    barrier_cycles: int
    """Cycles charged per barrier."""
    clock_hz: float
    c2c_cycles: tuple[int, ...] = ()
    """Chip-to-chip cycles after each group (tensor parallel all-gathers); () = none."""

    @property
    def barriers(self) -> int:
        """Groups followed by a barrier."""
        return sum(self.need_barrier)

    @property
    def total_cycles(self) -> int:
        """Sum of the groups' cycles, the barriers' and the chip-to-chip transfers'."""
        return (
            sum(g.cycles for g in self.groups)
            + self.barriers * self.barrier_cycles
            + sum(self.c2c_cycles)
        )

    @property
    def latency_s(self) -> float:
        """``total_cycles`` at the preset clock, seconds."""
        return self.total_cycles / self.clock_hz


def estimate_tile(timeline: Timeline) -> TileEstimate:
    """Busy time, utilization and limiting engines of one tile's timeline.

    Examples:
        >>> from tx8lab.core.schedule.sw_pipeline import sw_pipeline
        >>> from tx8lab.core.schedule.tasks import Buffer, Repeat, ScheduleInput, Task
        >>> body = (Task("ld:x", 0, "ld", 10, writes=("x",)),
        ...         Task("ne:y", 1, "ne", 30, reads=("x",), writes=("y",)),
        ...         Task("st:y", 1, "st", 10, reads=("y",)))
        >>> inp = ScheduleInput(0, (Repeat(4, body),), {b: Buffer(b, 0, 64) for b in "xy"})
        >>> e = estimate_tile(sw_pipeline(inp))
        >>> e.cycles, e.engine_busy_cycles["ne"], e.limiting_engine, e.step_limiting
        (140, 120, 'ne', ('ld', 'ne', 'ne', 'ne', 'ne', 'st'))
    """
    busy: dict[Engine, int] = dict.fromkeys(ENGINES, 0)
    longest: list[tuple[int, int, Engine] | None] = [None] * timeline.steps
    order = {e: i for i, e in enumerate(ENGINES)}
    for s in timeline.slots:
        cycles = s.end - s.start
        busy[s.engine] += cycles
        candidate = (cycles, -order[s.engine], s.engine)
        current = longest[s.step]
        if current is None or candidate[:2] > current[:2]:
            longest[s.step] = candidate
    step_limiting: list[Engine] = []
    limiting: dict[Engine, int] = dict.fromkeys(ENGINES, 0)
    for index, entry in enumerate(longest):
        if entry is None:
            raise Tx8labError(
                f"group {timeline.group_id}: step {index} of the timeline has no task"
            )
        step_limiting.append(entry[2])
        limiting[entry[2]] += entry[0]

    def rank(e: Engine) -> tuple[int, int, int]:
        return (limiting[e], busy[e], -order[e])

    best: Engine = max(ENGINES, key=rank)
    top = best if timeline.slots else None
    span = timeline.makespan
    return TileEstimate(
        cycles=span,
        steps=timeline.steps,
        engine_busy_cycles=busy,
        utilization={e: busy[e] / span if span else 0.0 for e in ENGINES},
        step_limiting=tuple(step_limiting),
        limiting_cycles=limiting,
        limiting_engine=top,
        retracted=timeline.retracted,
    )


def estimate_group(timelines: Timeline | Mapping[int, Timeline]) -> GroupEstimate:
    """The group's estimate: every tile's, and the slowest tile's figures.

    A single timeline stands for every tile (all run the same pipeline); a mapping gives
    each tile its own.
    """
    per_tile = {0: timelines} if isinstance(timelines, Timeline) else dict(timelines)
    if not per_tile:
        raise Tx8labError("estimate_group: no tile timelines given; pass at least one")
    groups = {t.group_id for t in per_tile.values()}
    if len(groups) != 1:
        raise Tx8labError(
            f"estimate_group: the tile timelines belong to groups {sorted(groups)}; "
            "pass the timelines of one group"
        )
    tiles = {tile: estimate_tile(t) for tile, t in sorted(per_tile.items())}
    slowest = max(tiles, key=lambda tile: (tiles[tile].cycles, -tile))
    return GroupEstimate(groups.pop(), tiles, slowest, per_tile[slowest])


def default_barrier_cycles(hw: ChipConfig) -> int:
    """One chip-wide barrier over a chip's tiles, by the simulator's law (``laws.barrier``).

    Examples:
        >>> from tx8lab.hw.presets import TX81
        >>> from tx8lab.hw import laws
        >>> default_barrier_cycles(TX81) == laws.barrier(16, TX81).cycles(TX81)
        True
    """
    return laws.barrier(hw.tiles_per_chip, hw).cycles(hw)


def estimate_model(
    groups: Sequence[GroupEstimate],
    hw: ChipConfig,
    *,
    need_barrier: Sequence[bool] | None = None,
    barrier_cycles: int | None = None,
    c2c_cycles: Sequence[int] = (),
) -> ModelEstimate:
    """End-to-end latency: groups in program order, a barrier after each flagged one.

    Args:
        groups: the group estimates in program order.
        hw: the chip (its clock converts cycles to seconds).
        need_barrier: the groups' ``need_barrier`` attribute (opt-barrier); None means
            every group has one (the seed's default without opt_barrier).
        barrier_cycles: cost of one barrier; None takes :func:`default_barrier_cycles`.
        c2c_cycles: chip-to-chip cycles after each group (empty: a single chip).
    """
    flags = tuple(need_barrier) if need_barrier is not None else (True,) * len(groups)
    if len(flags) != len(groups):
        raise Tx8labError(
            f"estimate_model: {len(groups)} groups but {len(flags)} need_barrier flags; "
            "give one flag per group"
        )
    cost = default_barrier_cycles(hw) if barrier_cycles is None else barrier_cycles
    if cost < 0:
        raise Tx8labError(f"estimate_model: barrier_cycles={cost}; use 0 or more")
    if c2c_cycles and len(c2c_cycles) != len(groups):
        raise Tx8labError(
            f"estimate_model: {len(groups)} groups but {len(c2c_cycles)} c2c_cycles; "
            "give one per group (or none)"
        )
    return ModelEstimate(tuple(groups), flags, cost, hw.clock_hz, tuple(c2c_cycles))


def report_fields(group: GroupEstimate, hw: ChipConfig | None = None) -> dict[str, object]:
    """The JSON report's per-group fields.

    ``cycles`` (simulated when simulated), ``plan_cycles``, the plan's
    ``engine_busy_cycles``, ``limiting_engine`` (the simulated one when simulated) and
    ``plan_limiting_engine``, ``steps``, ``retracted``; with a simulation and ``hw``, also
    ``latency_ms`` (the slowest tile's body), ``tile_ms``, ``busy_ms`` (keys
    :data:`SIM_ENGINES`), ``stall_ms`` and ``costliest_stall``.
    """
    out: dict[str, object] = {
        "cycles": group.cycles,
        "plan_cycles": group.plan_cycles,
        "engine_busy_cycles": dict(group.engine_busy_cycles),
        "limiting_engine": group.limiting_engine,
        "plan_limiting_engine": group.slowest.limiting_engine,
        "steps": group.slowest.steps,
        "retracted": group.slowest.retracted,
    }
    sim = group.sim
    if sim is not None and hw is not None:
        ms = 1e3 / hw.clock_hz
        out["latency_ms"] = sim.cycles * ms
        out["tile_ms"] = {str(t): c * ms for t, c in sorted(sim.tile_cycles.items())}
        out["busy_ms"] = sim.busy_ms(hw.clock_hz)
        out["stall_ms"] = sim.stall_ms(hw.clock_hz)
        stall = sim.costliest_stall
        out["costliest_stall"] = (
            {"engine": stall[0], "reason": stall[1], "ms": stall[2] * ms} if stall else None
        )
    return out


def _runs(items: Sequence[str]) -> str:
    """``a a a b a`` -> ``0-2 a, 3 b, 4 a``."""
    parts: list[str] = []
    start = 0
    for i in range(1, len(items) + 1):
        if i == len(items) or items[i] != items[start]:
            span = f"{start}" if i - 1 == start else f"{start}-{i - 1}"
            parts.append(f"{span} {items[start]}")
            start = i
    return ", ".join(parts)


def explain(
    group: GroupEstimate,
    *,
    inp: ScheduleInput | None = None,
    hw: ChipConfig | None = None,
    top_tasks: int = 5,
) -> str:
    """The group's estimate as text: cycles, engines, the limiting engine, the costly tasks.

    Examples:
        >>> from tx8lab.core.schedule.sw_pipeline import sw_pipeline
        >>> from tx8lab.core.schedule.tasks import Buffer, ScheduleInput, Task
        >>> inp = ScheduleInput(2, (Task("ld:x", 0, "ld", 10, writes=("x",)),
        ...                         Task("st:x", 0, "st", 4, reads=("x",))),
        ...                     {"x": Buffer("x", 0, 64)})
        >>> print(explain(estimate_group(sw_pipeline(inp)), top_tasks=1))
        group 2: 14 cycles on tile 0 (slowest of 1), 2 steps, 0 task instances retracted
          engine  busy  util  limits
          ld        10   71%      10
          st         4   29%       4
        limiting engine: ld (limits 10 of 14 cycles)
        steps limited by: 0 ld, 1 st
        costliest tasks (cycles x runs):
          ld:x on ld: 10 x 1 = 10
    """
    t = group.slowest
    lines = [
        f"group {group.group_id}: {t.cycles} cycles"
        + (f" = {t.cycles / hw.clock_hz * 1e6:.3f} µs" if hw is not None else "")
        + f" on tile {group.slowest_tile} (slowest of {len(group.tiles)}), {t.steps} steps, "
        f"{t.retracted} task instances retracted" + (" (the plan)" if group.sim is not None else "")
    ]
    if inp is not None:
        lines.append(f"  runs on {inp.tiles} tiles")
        lines.extend(f"  note: {n}" for n in inp.notes)
    lines.append(f"  {'engine':<6}  {'busy':>4}  {'util':>4}  {'limits':>6}")
    for e in ENGINES:
        if t.engine_busy_cycles[e] or t.limiting_cycles[e]:
            lines.append(
                f"  {e:<6}  {t.engine_busy_cycles[e]:>4}  {t.utilization[e]:>4.0%}  "
                f"{t.limiting_cycles[e]:>6}"
            )
    if t.limiting_engine is not None:
        lines.append(
            f"limiting engine: {t.limiting_engine} (limits "
            f"{t.limiting_cycles[t.limiting_engine]} of {t.cycles} cycles)"
        )
        lines.append(f"steps limited by: {_runs(t.step_limiting)}")
    if group.sim is not None:
        lines.extend(explain_sim(group, hw))
    runs: dict[str, int] = {}
    for s in group.timeline.slots:
        runs[s.task] = runs.get(s.task, 0) + 1
    tasks = group.timeline.tasks
    costly = sorted(runs, key=lambda k: (-tasks[k].cycles * runs[k], k) if k in tasks else (0, k))
    if costly and tasks:
        lines.append("costliest tasks (cycles x runs):")
        for k in costly[:top_tasks]:
            task = tasks[k]
            line = f"  {k} on {task.engine}: {task.cycles} x {runs[k]} = {task.cycles * runs[k]}"
            lines.append(line + (f"  ({task.explain})" if task.explain else ""))
    return "\n".join(lines)


def explain_sim(group: GroupEstimate, hw: ChipConfig | None = None) -> list[str]:
    """The simulated execution beside the plan, per engine: busy and stalls, the verdict.

    Examples:
        >>> from tx8lab.core.schedule.sw_pipeline import sw_pipeline
        >>> from tx8lab.core.schedule.tasks import Buffer, ScheduleInput, Task
        >>> inp = ScheduleInput(0, (Task("ld:x", 0, "ld", 10, writes=("x",)),),
        ...                     {"x": Buffer("x", 0, 64)})
        >>> sim = SimEstimate(30, 0, {0: 30}, {"rdma": 12, "kcore": 18},
        ...                   {"rdma": {"issue": 18}}, 1)
        >>> from dataclasses import replace
        >>> est = replace(estimate_group(sw_pipeline(inp)), sim=sim)
        >>> for line in explain_sim(est): print(line)
        simulated: 30 cycles on tile 0 (plan 10 cycles, +200.0%), 1 commands
          engine   plan busy   sim busy  stalls
          ne               0          0
          ct               0          0
          rdma            10         12  issue 18
          wdma             0          0
          tdma             0          0
          dte              -          0
          kcore            -         18
        limiting engine (simulated): kcore (18 of 30 cycles busy)
        costliest stall: rdma waiting for issue, 18 cycles
    """
    sim = group.sim
    if sim is None:
        return []
    plan = group.plan_cycles
    change = f", {(sim.cycles - plan) / plan:+.1%}" if plan else ""
    head = f"simulated: {sim.cycles} cycles"
    if hw is not None:
        head += f" = {sim.cycles / hw.clock_hz * 1e6:.3f} µs"
    lines = [
        head + f" on tile {sim.slowest_tile} (plan {plan} cycles{change}), {sim.commands} commands",
        f"  {'engine':<6} {'plan busy':>11} {'sim busy':>10}  stalls",
    ]
    planned = group.plan_busy_by_sim_engine
    for e in SIM_ENGINES:
        stalls = ", ".join(
            f"{reason} {cycles}" for reason, cycles in sim.stalls.get(e, {}).items() if cycles
        )
        shown = str(planned[e]) if e in planned else "-"
        lines.append(f"  {e:<6} {shown:>11} {sim.busy.get(e, 0):>10}  {stalls}".rstrip())
    top = sim.limiting_engine
    lines.append(
        f"limiting engine (simulated): {top} ({sim.busy.get(top, 0)} of {sim.cycles} cycles busy)"
    )
    stall = sim.costliest_stall
    if stall is not None:
        what = {"issue": "waiting for issue", "dependency": "waiting on a dependency"}
        lines.append(
            f"costliest stall: {stall[0]} {what.get(stall[1], 'stopped by ' + stall[1])}, "
            f"{stall[2]} cycles"
        )
    else:
        lines.append("costliest stall: none (no engine waited)")
    return lines


__all__ = [
    "SIM_ENGINES",
    "SIM_ENGINE_OF",
    "GroupEstimate",
    "ModelEstimate",
    "SimEstimate",
    "TileEstimate",
    "default_barrier_cycles",
    "estimate_group",
    "estimate_model",
    "estimate_tile",
    "explain",
    "explain_sim",
    "report_fields",
]
