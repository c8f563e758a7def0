"""The recorded group pipeline: one strategy through data-split ... estimate, every stage kept.

Spec: seed 001 "GroupCostPass" (per candidate of DataSplitNew: DS_UpdateSliceIR ->
TS_SwPipeline -> SA_BufferLifePass -> SA_BufferMergePass -> SPMAlloc -> estimate).
:func:`run_group` runs :data:`GROUP_STAGES` in order and returns a :class:`GroupRun`
holding one :class:`StageRecord` (name, output, wall time, decisions) per stage; the
search, group-cost, codegen and every view call it, and views read the records instead of
running a stage again.

Readings chosen where the seed is vague:

- **Allocator fallback.** With ``alloc="seed"`` and ``best_fallback`` on, a first fit that
  overflows while the slicing's live bytes exceed the SPM is handed to ``best`` (branch
  and bound within ``alloc_nodes`` nodes); only when both fail is it an
  :class:`~tx8lab.errors.SpmOverflow`. The documented default strategy allocates with the
  chosen allocator as is (``best_fallback=False``), so ``seed`` can fail there where
  ``best`` fits, and the error shows it.
- **Reused stages.** ``reuse`` takes records the caller already holds for the same
  strategy and keeps them verbatim: an earlier run's (so a run with another allocator
  starts at spm-alloc), the default strategy's init pipeline (computed while choosing
  it), a template's packing.
- **simulate** (issue 19: one tile model for every figure) plays the group's command
  stream for this strategy and packing through the tile simulator. The stream is built
  by the program layer above this one (``tx8lab.core.simulate.group_timer``), so the
  caller hands it in as ``timer``; without one the stage records "plan only" and
  :attr:`GroupRun.estimate` is the plan's. When the program layer cannot build the
  group's commands (its error, e.g. an operand no load brings into SPM before
  group-ldst ran), the stage records "not simulated" with that error and the estimate
  stays the plan's. With one, :attr:`GroupRun.estimate` carries the
  :class:`~tx8lab.core.schedule.estimate.SimEstimate` and its ``cycles`` are simulated.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tx8lab.core.ir import Op
from tx8lab.core.schedule.estimate import GroupEstimate, SimEstimate, estimate_group
from tx8lab.core.schedule.lifetimes import buffer_life, buffer_merge
from tx8lab.core.schedule.slicing import SliceCache, schedule_input, schedule_live_bytes
from tx8lab.core.schedule.spm_alloc import Allocation, allocate
from tx8lab.core.schedule.sw_pipeline import DEFAULT_MAX_INSTANCES, sw_pipeline
from tx8lab.core.schedule.tasks import Lifetime, ScheduleInput, Strategy, Timeline
from tx8lab.errors import SpmOverflow, Tx8labError
from tx8lab.hw.config import ChipConfig

#: Default work budget of the ``best`` allocator per group (branch-and-bound nodes, about
#: 0.2 s on a 2-core machine). On the zoo only resnet50 has groups ``best`` cannot prove
#: at once: one reaches its optimum after 263k nodes; the other two stay 256 B above
#: their bound however long they search (tried to 3 s).
DEFAULT_ALLOC_NODES = 300_000

#: The simulated cost of one strategy and packing: (group, strategy, init pipeline,
#: timeline, allocation, hw) -> the group's command stream played by the tile simulator.
GroupTimer = Callable[[Op, Strategy, ScheduleInput, Timeline, Allocation, ChipConfig], SimEstimate]


@dataclass(frozen=True)
class StageSettings:
    """The knobs the stages read (group-cost's, less the strategy choice)."""

    multi_buffer: int = 2
    """Buffers per looping value (data-split's fit test, sw-pipeline's rotation)."""
    retract: bool = True
    """Overlap the next iteration's head with the previous tail (the seed's getRetract)."""
    alloc: str = "seed"
    """``seed`` (first fit by start time) or ``best`` (branch and bound)."""
    alloc_time_limit_s: float = 10.0
    """Wall-clock cap of the ``best`` allocator (``alloc_nodes`` normally ends it first)."""
    best_fallback: bool = True
    """With ``alloc="seed"``: hand an overflowing first fit to ``best`` (module docstring)."""
    alloc_nodes: int | None = DEFAULT_ALLOC_NODES
    """Work budget of the ``best`` allocator in branch-and-bound nodes (None: only the
    time cap), so a group's packing does not depend on the machine's load."""
    noc: bool = True
    """Tiles may pass their readers the pieces other tiles computed (a halo) over the NoC
    (slicing's **Exchanges**); False refuses a strategy that needs it (group-cost's
    ``noc=false``)."""
    max_pipeline_instances: int | None = DEFAULT_MAX_INSTANCES
    """sw-pipeline refuses a strategy that unrolls to more task instances (None: no bound;
    group-cost's ``max_pipeline_instances``)."""


@dataclass(frozen=True)
class StageRecord:
    """One stage of one run: what it produced, how long it took and what it decided."""

    name: str
    output: Any = field(repr=False)
    wall_s: float
    decisions: tuple[str, ...] = ()
    """One line per choice the stage made (a fallback, a retraction count, a peak)."""


@dataclass(frozen=True)
class _Flow:
    """What a stage sees: the group, its strategy, the settings and earlier outputs."""

    group: Op
    strategy: Strategy
    hw: ChipConfig
    settings: StageSettings
    done: Mapping[str, Any]
    timer: GroupTimer | None = None
    cache: SliceCache | None = None


StageFn = Callable[[_Flow], tuple[Any, tuple[str, ...]]]


@dataclass(frozen=True)
class Stage:
    """A named step of :data:`GROUP_STAGES`."""

    name: str
    run: StageFn = field(repr=False)


def _data_split(flow: _Flow) -> tuple[ScheduleInput, tuple[str, ...]]:
    si = schedule_input(
        flow.group,
        flow.strategy,
        flow.hw,
        multi_buffer=flow.settings.multi_buffer,
        cache=flow.cache,
        exchange=flow.settings.noc,
    )
    return si, tuple(si.notes)


def _sw_pipeline(flow: _Flow) -> tuple[Timeline, tuple[str, ...]]:
    s = flow.settings
    timeline = sw_pipeline(
        flow.done["data-split"],
        retract=s.retract,
        multi_buffer=s.multi_buffer,
        max_instances=s.max_pipeline_instances,
    )
    return timeline, (f"{timeline.steps} steps, {timeline.retracted} retracted",)


def _buffer_life(flow: _Flow) -> tuple[list[Lifetime], tuple[str, ...]]:
    raw = buffer_life(flow.done["sw-pipeline"], flow.done["data-split"])
    return raw, (f"{len(raw)} raw intervals",)


def _buffer_merge(flow: _Flow) -> tuple[tuple[Lifetime, ...], tuple[str, ...]]:
    raw = flow.done["buffer-life"]
    merged = tuple(buffer_merge(raw))
    return merged, (f"{len(merged)} lifetimes ({len(raw) - len(merged)} intervals merged)",)


def _spm_alloc(flow: _Flow) -> tuple[Allocation, tuple[str, ...]]:
    s = flow.settings
    lifetimes = flow.done["buffer-merge"]
    capacity = flow.hw.tile.spm_usable_bytes
    try:
        allocation = allocate(
            lifetimes,
            capacity,
            strategy=s.alloc,
            time_limit_s=s.alloc_time_limit_s,
            node_limit=s.alloc_nodes,
        )
        note = f"{s.alloc} allocator"
    except SpmOverflow as exc:
        si = flow.done["data-split"]
        if (
            not (s.alloc == "seed" and s.best_fallback)
            or schedule_live_bytes(si, s.multi_buffer) <= capacity
        ):
            raise
        # first fit is greedy: the branch and bound may still pack what it could not
        allocation = allocate(
            lifetimes,
            capacity,
            strategy="best",
            time_limit_s=s.alloc_time_limit_s,
            node_limit=s.alloc_nodes,
        )
        note = f"best allocator (first fit needed {exc.needed_bytes:,} B)"
    return allocation, (
        f"{note}: peak {allocation.peak:,} B of {capacity:,} B, lower bound "
        f"{allocation.lower_bound:,} B",
    )


def _estimate(flow: _Flow) -> tuple[GroupEstimate, tuple[str, ...]]:
    est = estimate_group(flow.done["sw-pipeline"])
    engine = est.limiting_engine
    return est, (f"{est.cycles} cycles, limited by {engine or 'nothing'}",)


def _simulate(flow: _Flow) -> tuple[SimEstimate | None, tuple[str, ...]]:
    if flow.timer is None:
        return None, ("plan only (no timer given)",)
    d = flow.done
    try:
        sim = flow.timer(
            flow.group, flow.strategy, d["data-split"], d["sw-pipeline"], d["spm-alloc"], flow.hw
        )
    except Tx8labError as exc:
        # no command stream for this group (e.g. an operand read in place from DDR before
        # group-ldst): the plan stays its estimate, and the record says why
        return None, (f"not simulated: {exc}",)
    stall = sim.costliest_stall
    return sim, (
        f"{sim.cycles} cycles simulated on tile {sim.slowest_tile} ({sim.commands} commands), "
        f"limited by {sim.limiting_engine}"
        + (f", costliest stall {stall[0]} {stall[1]} {stall[2]} cycles" if stall else ""),
    )


#: The per-group flow, in order; each stage reads the outputs of those before it.
GROUP_STAGES: tuple[Stage, ...] = (
    # the init pipeline: Repeat nodes, buffers and task cycles of the strategy
    Stage("data-split", _data_split),
    # frames, Repeat expansion, retraction, engine slots (TS_SwPipeline)
    Stage("sw-pipeline", _sw_pipeline),
    # one raw interval per access: in-place chains, imm and psum (SA_BufferLifePass)
    Stage("buffer-life", _buffer_life),
    # mergeOverlap per label (SA_BufferMergePass)
    Stage("buffer-merge", _buffer_merge),
    # offsets in the tile's usable SPM; SpmOverflow when they do not fit (SPMAlloc)
    Stage("spm-alloc", _spm_alloc),
    # makespan, per-engine busy cycles and the limiting engine of the timeline
    Stage("estimate", _estimate),
    # the command stream of this packing played by the tile simulator (given a timer)
    Stage("simulate", _simulate),
)

#: Stage names in order.
STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in GROUP_STAGES)


@dataclass(frozen=True)
class GroupRun:
    """The records of one strategy of one group through :data:`GROUP_STAGES`."""

    group_id: int
    strategy: Strategy
    settings: StageSettings
    records: tuple[StageRecord, ...]

    def record(self, name: str) -> StageRecord:
        """The record of stage ``name``."""
        for r in self.records:
            if r.name == name:
                return r
        ran = ", ".join(r.name for r in self.records) or "none"
        raise Tx8labError(
            f"group %{self.group_id}: stage {name!r} did not run (ran: {ran}); "
            f"stages: {', '.join(STAGE_NAMES)}"
        )

    def output(self, name: str) -> Any:
        """What stage ``name`` produced."""
        return self.record(name).output

    def before(self, name: str) -> tuple[StageRecord, ...]:
        """The records of the stages before ``name`` (to ``reuse`` them)."""
        if name not in STAGE_NAMES:
            raise Tx8labError(f"unknown stage {name!r}; stages: {', '.join(STAGE_NAMES)}")
        return tuple(r for r in self.records if STAGE_NAMES.index(r.name) < STAGE_NAMES.index(name))

    @property
    def input(self) -> ScheduleInput:
        """data-split's init pipeline."""
        out: ScheduleInput = self.output("data-split")
        return out

    @property
    def timeline(self) -> Timeline:
        """sw-pipeline's timeline."""
        out: Timeline = self.output("sw-pipeline")
        return out

    @property
    def lifetimes(self) -> tuple[Lifetime, ...]:
        """buffer-merge's lifetimes (the allocator's input)."""
        out: tuple[Lifetime, ...] = self.output("buffer-merge")
        return out

    @property
    def allocation(self) -> Allocation:
        """spm-alloc's packing."""
        out: Allocation = self.output("spm-alloc")
        return out

    @property
    def estimate(self) -> GroupEstimate:
        """Estimate's plan, with the simulated run when the simulate stage had a timer."""
        out: GroupEstimate = self.output("estimate")
        sim = self.simulated
        return out if sim is None else dataclasses.replace(out, sim=sim)

    @property
    def simulated(self) -> SimEstimate | None:
        """The simulate stage's output (None when it did not run or had no timer)."""
        for r in self.records:
            if r.name == "simulate":
                out: SimEstimate | None = r.output
                return out
        return None

    @property
    def wall_s(self) -> float:
        """Wall time of every stage, reused records with the time they took then."""
        return sum(r.wall_s for r in self.records)

    def rows(self) -> list[dict[str, Any]]:
        """One row per stage: name, wall ms, decisions (a table for views)."""
        return [
            {
                "stage": r.name,
                "wall_ms": round(r.wall_s * 1e3, 3),
                "decisions": "; ".join(r.decisions),
            }
            for r in self.records
        ]


def run_group(
    group: Op,
    strategy: Strategy,
    hw: ChipConfig,
    settings: StageSettings = StageSettings(),
    *,
    until: str | None = None,
    reuse: Sequence[StageRecord] = (),
    timer: GroupTimer | None = None,
    cache: SliceCache | None = None,
) -> GroupRun:
    """Run :data:`GROUP_STAGES` on ``strategy`` (up to and including ``until``).

    Args:
        group: a ``tx8be.Group`` with its body.
        strategy: the sharding and split of every compute op of the body.
        hw: the chip.
        settings: the stages' knobs.
        until: the last stage to run (default: all).
        reuse: records the caller holds for this group and strategy (not recomputed).
        timer: the simulate stage's timer (module docstring); None: plan only.
        cache: data-split's :class:`~tx8lab.core.schedule.slicing.SliceCache` of
            ``group`` (a search runs one group for many strategies); the same records.

    Raises:
        SpmOverflow: the buffers do not fit in the tile's usable SPM.
        Tx8labError: the op library or slicing refuses the strategy; an unknown stage name.
    """
    if until is not None and until not in STAGE_NAMES:
        raise Tx8labError(f"unknown stage {until!r}; stages: {', '.join(STAGE_NAMES)}")
    kept = {r.name: r for r in reuse}
    for name in kept:
        if name not in STAGE_NAMES:
            raise Tx8labError(
                f"reused record of unknown stage {name!r}; stages: {', '.join(STAGE_NAMES)}"
            )
    done: dict[str, Any] = {}
    records: list[StageRecord] = []
    for stage in GROUP_STAGES:
        if stage.name in kept:
            record = kept[stage.name]
        else:
            flow = _Flow(group, strategy, hw, settings, done, timer, cache)
            start = time.perf_counter()
            output, decisions = stage.run(flow)
            record = StageRecord(stage.name, output, time.perf_counter() - start, decisions)
        done[stage.name] = record.output
        records.append(record)
        if stage.name == until:
            break
    return GroupRun(group.id, strategy, settings, tuple(records))


__all__ = [
    "GROUP_STAGES",
    "STAGE_NAMES",
    "GroupRun",
    "GroupTimer",
    "Stage",
    "StageRecord",
    "StageSettings",
    "run_group",
]
