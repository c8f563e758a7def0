"""group-cost: schedule every group for one strategy and estimate it (seed GroupCostPass).

Spec: seed 001 "GroupCostPass" (per group: DataSplit -> TS_SwPipeline -> SPMAlloc ->
estimate) and DESIGN.md §5. For each top-level ``tx8be.Group`` in program order, the
template cache (:mod:`~tx8lab.core.schedule.template_cache`) or
:meth:`GroupCost.schedule_one` (the strategy of the ``search`` mode, see
:func:`~tx8lab.core.schedule.search.schedule_group`) through the recorded group pipeline
(:mod:`~tx8lab.core.schedule.stages`: data-split -> sw-pipeline -> buffer-life ->
buffer-merge -> spm-alloc -> estimate). ``artifacts["runs"]`` maps each group id to its
:class:`~tx8lab.core.schedule.stages.GroupRun` (every stage's output, wall time and
decisions), which views read.

The model estimate sums the groups plus one barrier after each group whose
``need_barrier`` is set (opt-barrier; every group when that pass has not run).

Readings chosen:

- **Strategy.** A ``group_tag`` 2 group (its ops work in DDR; seed GroupCost's bail-out)
  is neither split nor searched; ``search``/``exhaustive`` take the best candidate of
  :func:`~tx8lab.core.schedule.search.search_group`; ``default`` the documented default
  of :func:`~tx8lab.core.schedule.slicing.default_strategy`.
- **Template hits** reuse the first identical group's strategy (mapped by body position)
  and its schedule: identical layers (BERT, LLaMA) are scheduled once. A hit's own run is
  made when ``artifacts["runs"][id]`` is first read: its stages up to buffer-merge, and
  as spm-alloc the template's packing under the hit's lifetime ids.
- **IR.** The IR keeps its structure and records the schedule as the seed's
  DS_UpdateSliceIR / SPMAlloc do, so later passes (codegen) read it from the module alone:
  each body compute op gets ``tile_shard`` and ``tile_split`` (per iteration dim, the op
  library's ``iter_dims`` order; ``chip_cut`` when cut across chips); each group gets
  ``cycles`` (simulated when simulated), ``plan_cycles`` and ``spm_peak_bytes`` (for graph
  overlays), the seed's ``spm_alloc_size``
  (the same peak), ``multi_buffer`` and ``retract`` (the knobs the pipeline used) and
  ``spm_offsets``: one ``[lifetime id, offset, bytes]`` per SPM lifetime of the
  allocation (a template hit's are the template's with the op ids mapped by body
  position). The recorded group pipeline on these attributes gives back the same timeline
  and lifetime ids (a test checks it). Everything larger (the runs, the model estimate)
  is in ``PassResult.artifacts`` for views, the JSON report and ``--trace``.
- The report's ``sharding`` / ``split`` of a group map each body op id to its tiles per
  iteration dim and its temporal splits per iteration dim (the op library's
  ``iter_dims`` order).
- ``search`` is ``search`` by default (the seed's GroupCost loop over DataSplitNew's
  candidates); it never does worse than ``default`` (the default strategy is its first
  candidate). Its budget (``search_budget`` candidates) and the allocator's
  (``alloc_nodes``) count work, so a loaded machine gives the same schedules; the
  wall-clock caps ``search_budget_s`` and ``alloc_time_limit_s`` only end a search that
  has not spent its work budget on a very slow machine or a huge group. The search
  allocates with the seed's first fit (falling back to ``best`` on overflow); the
  chosen strategy is re-allocated with the ``alloc`` knob for the report. Report entries
  carry ``candidates_evaluated`` (1 for ``default`` and ``group_tag`` 2, 0 on a template hit),
  ``search_space_size``, ``template_hit`` and ``search_clock_capped`` (the wall-clock cap
  ended the search before its work budget: the one way a point's schedule can depend on
  the machine; the Decision says so too, and ``stats["search_clock_capped"]`` counts them).
- ``model.groups`` (the :class:`~tx8lab.core.schedule.estimate.ModelEstimate`) holds a
  template hit's estimate as the template's under the hit's group id: the same cycles and
  engines, but its ``timeline`` names the template's ops; the hit's own timeline is
  ``artifacts["runs"][id].timeline``.
- **Multi-chip** (``dp``, ``tp``; ``dp * tp`` at most the preset's ``num_chips``): each
  group's chip plans come from :func:`~tx8lab.core.schedule.chip_cuts.chip_cuts` (dp: the
  batch dim of every op; tp ``gather``: the outputs' last dim, all-gathered after the
  group, :func:`~tx8lab.hw.cost.c2c_all_gather_cycles`; tp ``reduce``: the last matmul's
  K with its producers cut on N, its result all-reduced,
  :func:`~tx8lab.hw.cost.c2c_all_reduce_cycles`), each scheduled on one chip's tiles as
  usual. The cheapest of the plans and of running the group whole on every chip
  (replicated) wins; the Decision lists them. Report entries gain ``chips`` (op id ->
  chips per iteration dim), ``chip_plan`` and ``c2c_cycles``; the model total adds the
  chip-to-chip cycles.
- **``chip_parallel`` on an op** (seed 001's ``parallel_attr`` over chips) sets its group's
  chips, overriding the ``dp``/``tp`` knobs for that group (:func:`group_chips`): ``dp`` is
  ``dp_dim_x * dp_dim_y * dp_dim_z``, ``tp`` likewise, and the ``parallel`` mode must name
  the parallelism the dims use. Reading chosen: the seed gives the attribute's fields but
  no pass that reads them per op; a group runs as one kernel, so its ops must agree (ops
  without the attribute follow the ones that have it). ``sharding_is_given`` (a chip cut
  fixed per dim) is refused: the chip plans cut the batch and the last dim only. An op
  outside every group (it runs from DDR) carries it without effect.
- **Simulated cost** (issue 19): ``simulate_top`` > 0 (the default) hands the search the
  program layer's timer (:func:`~tx8lab.core.simulate.simulate_schedule`): the plan ranks
  the candidates, the tile simulator plays the plan's best ``simulate_top`` and the
  default strategy, and the best simulated one is chosen; the chosen strategy with its
  final packing is simulated again. A group's ``cycles`` (IR attribute, report, model
  total) are then its simulated kernel body; ``plan_cycles`` keeps the plan's, and the
  report entry carries ``latency_ms``, ``tile_ms``, ``busy_ms`` (``ne ct rdma wdma tdma
  dte kcore``), ``stall_ms`` and ``costliest_stall``. ``simulate_top=0`` is the seed's
  plan-only group-cost. A template hit takes its template's simulated figures (the same
  commands on other buffers).
- **NoC reductions** (``noc``, on by default): the search also weighs strategies that
  shard a matmul's K or a conv's IC across tiles and all-reduce the partial sums over the
  NoC, strategies that shard a dim another op reads whole and all-gather the pieces,
  and strategies whose loads the tiles reading one window share (each loads a
  chunk, the chunks are all-gathered over the NoC; ``search`` module docstring); rows a
  reader needs from a neighbour tile (a halo) are copied over (slicing's **Exchanges**);
  ``noc=false`` restores the non-communicating space, so the two can be compared. Every
  report entry carries ``comm`` (``k-reduce`` when a reduction dim is sharded across
  tiles, else ``gather`` when a computed value read whole is all-gathered, else
  ``exchange`` when tiles pass their readers halo pieces, else ``share`` when a load is
  shared, else ``none``: ``search.comm_kind``) and ``noc_bytes`` (the
  payload bytes its reductions and
  all-gathers send, every run counted); a communicating one chosen by a search also
  ``noc_saved_cycles``: the best non-communicating candidate's cycles minus its own
  (ranked as the search ranks: simulated for the ones it played), None when no
  non-communicating candidate the search ran fits.
- **Progress**: while searching, each finished group is reported through the
  :class:`~tx8lab.core.passes.base.PassContext` (groups done, template hits); the
  runner's ``Progress`` instrument draws the bar. It never changes results.
- A group that cannot fit in SPM even fully split is an error that names the group and
  its largest buffers (from slicing or from the allocator), never a silently wrong cost.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tx8lab.core.attrs import TAG_DDR
from tx8lab.core.ir import Block, Module, Op
from tx8lab.core.passes.base import Decision, Pass, PassContext, PassResult, knob
from tx8lab.core.schedule.chip_cuts import ChipCut
from tx8lab.core.schedule.estimate import GroupEstimate
from tx8lab.core.schedule.search import (
    MODES,
    SEARCH_BUDGET,
    ScheduledGroup,
    SearchResult,
    comm_kind,
    schedule_group,
)
from tx8lab.core.schedule.stages import (
    DEFAULT_ALLOC_NODES,
    GroupRun,
    GroupTimer,
    StageRecord,
    StageSettings,
    run_group,
)
from tx8lab.core.schedule.sw_pipeline import DEFAULT_MAX_INSTANCES
from tx8lab.core.schedule.tasks import Strategy
from tx8lab.core.schedule.template_cache import TemplateCache
from tx8lab.core.simulate import simulate_schedule
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

if TYPE_CHECKING:
    from tx8lab.core.schedule.spm_alloc import Allocation


@dataclass(frozen=True)
class GroupCost(Pass):
    """Schedule and estimate every group (see the module docstring)."""

    name: ClassVar[str] = "group-cost"
    summary: ClassVar[str] = "per group: slice, sw-pipeline, SPM lifetimes and allocation, cycles"

    multi_buffer: int = knob(2, "buffers per looping value (2 = double buffering)", min=1, max=4)
    """Set from Python or ``--set group-cost.multi_buffer=1``."""
    retract: bool = knob(True, "overlap the next iteration's head with the previous tail")
    """The seed's getRetract/doRetract."""
    alloc: str = knob(
        "best", "SPM allocator: seed (first fit by start time) or best", choices=("seed", "best")
    )
    """Which :func:`~tx8lab.core.schedule.spm_alloc.allocate` strategy places the buffers."""
    alloc_nodes: int = knob(
        DEFAULT_ALLOC_NODES, "work budget per group for alloc=best (branch-and-bound nodes)", min=1
    )
    """The best allocator is anytime: it keeps the best packing found within the budget.
    A budget of work, not seconds, so a group's packing is the same on a loaded machine."""
    alloc_time_limit_s: float = knob(
        10.0, "wall-clock cap per group for alloc=best (alloc_nodes ends it first)", min=0.01
    )
    """A cap on top of ``alloc_nodes`` for very large problems."""
    search: str = knob(
        "search",
        "strategy: default (one documented strategy), search (pruned, budgeted) or exhaustive",
        choices=MODES,
    )
    """:func:`~tx8lab.core.schedule.search.search_group` mode (the seed's GroupCost loop);
    ``default`` schedules the one documented default strategy only."""
    search_budget: int = knob(
        SEARCH_BUDGET, "candidates evaluated per searched group (search mode)", min=1
    )
    """The search stops between candidates once this many were evaluated and one fits."""
    search_budget_s: float = knob(
        10.0, "wall-clock cap per searched group (search_budget ends it first)", min=0.0
    )
    """A cap on top of ``search_budget`` (the group tuner's searches stay interactive)."""
    dp: int = knob(1, "chips in data parallel: dim 0 of each group output cut across them", min=1)
    """Seed ``chip_parallel`` dp dims; ``dp * tp`` must not exceed the preset's ``num_chips``."""
    tp: int = knob(1, "chips in tensor parallel: last dim cut, all-gathered after the group", min=1)
    """Seed ``chip_parallel`` tp dims (:func:`~tx8lab.core.schedule.chip_cuts.chip_cut`)."""
    simulate_top: int = knob(
        3, "candidates the tile simulator plays (the plan's best; 0 = the plan decides)", min=0
    )
    """The module docstring's "Simulated cost"."""
    noc: bool = knob(
        True,
        "search strategies whose tiles talk over the NoC (k-reduce, gathers, halo "
        "exchanges, shared loads)",
    )
    """The module docstring's "NoC reductions" (``--set group-cost.noc=false``: none)."""
    max_pipeline_instances: int = knob(
        DEFAULT_MAX_INSTANCES,
        "task instances a group's software pipeline may unroll (tile iterations x tasks); "
        "a larger group is refused",
        min=1,
    )
    """sw-pipeline's budget (:func:`~tx8lab.core.schedule.sw_pipeline.check_instances`):
    a huge tensor refuses with the group and the count instead of unrolling for hours."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        return self.run_with(module, hw, PassContext())

    def run_with(self, module: Module, hw: ChipConfig, context: PassContext) -> PassResult:
        """``run``, reporting the groups done to the runner's progress instruments."""
        from tx8lab.core.schedule.estimate import estimate_model

        _check_chips("group-cost", self.dp, self.tp, hw)
        entries: list[dict[str, Any]] = []
        decisions: list[Decision] = []
        estimates = []
        barriers: list[bool] = []
        strategies: dict[int, Strategy] = {}
        functions = []
        cache = TemplateCache()
        runs = _Runs(hw, self.settings(), self.timer())
        searches: dict[int, SearchResult] = {}
        groups = [op for func in module.functions for op in func.ops if op.kind == "tx8be.Group"]
        done_groups = 0
        for func in module.functions:
            ops = []
            for op in func.ops:
                if op.kind != "tx8be.Group":
                    ops.append(op)
                    continue
                done = self._schedule(op, hw, cache, runs)
                strategies[op.id] = done["strategy"]
                if done["search"] is not None:
                    searches[op.id] = done["search"]
                estimates.append(done["estimate"])
                barriers.append(op.attrs.get("need_barrier", True) is not False)
                entries.append(done["entry"])
                decisions.append(done["decision"])
                ops.append(
                    _annotated(op, done["entry"], done["strategy"], done["offsets"], self.retract)
                )
                done_groups += 1
                if self.search != "default":
                    # a bar is worth showing only while searching (seconds per group)
                    context.progress(
                        done_groups,
                        len(groups),
                        unit="group",
                        desc=f"group-cost ({self.search})",
                        hits=cache.hits,
                    )
            functions.append(func.with_ops(ops) if ops != list(func.ops) else func)
        c2c = [int(e.get("c2c_cycles", 0)) for e in entries]
        if not any(c2c):
            c2c = []
        model = estimate_model(estimates, hw, need_barrier=barriers, c2c_cycles=c2c)
        stats: dict[str, int | float | str] = {
            "groups_scheduled": len(entries),
            "total_cycles": model.total_cycles,
            "plan_total_cycles": sum(e.plan_cycles for e in estimates)
            + model.barriers * model.barrier_cycles
            + sum(model.c2c_cycles),
            "latency_s": model.latency_s,
            "barriers": sum(barriers),
            "spm_peak_bytes": max((e["spm_peak_bytes"] for e in entries), default=0),
            "template_hits": cache.hits,
            "template_hit_rate": round(cache.hit_rate, 4),
        }
        if self.dp * self.tp > 1 or any("chip_plan" in e for e in entries):
            stats["chips_dp"] = self.dp
            stats["chips_tp"] = self.tp
            stats["c2c_cycles"] = sum(c2c)
        if self.search != "default":
            stats["candidates_evaluated"] = sum(e["candidates_evaluated"] for e in entries)
            stats["search_time_s"] = round(sum(r.time_s for r in searches.values()), 4)
            stats["search_clock_capped"] = sum(r.clock_capped for r in searches.values())
            if self.simulate_top:
                stats["plan_choice_overruled"] = sum(not r.plan_agrees for r in searches.values())
        for entry in entries:
            key = f"limited_by_{entry['limiting_engine']}"
            stats[key] = int(stats.get(key, 0)) + 1
        new = Module(tuple(functions), module.attrs, module.next_id)
        artifacts = {
            "groups": entries,
            "model": model,
            "need_barrier": tuple(barriers),
            "runs": runs,
            "hw": hw,
            "strategies": strategies,
            "searches": searches,
            "template_cache": cache,
        }
        return PassResult(new, tuple(decisions), stats, artifacts)

    def settings(self) -> StageSettings:
        """The stages' knobs of this pass (the allocator's first-fit fallback on)."""
        return StageSettings(
            self.multi_buffer,
            self.retract,
            self.alloc,
            self.alloc_time_limit_s,
            best_fallback=True,
            alloc_nodes=self.alloc_nodes,
            noc=self.noc,
            max_pipeline_instances=self.max_pipeline_instances,
        )

    def _schedule(
        self, group: Op, hw: ChipConfig, cache: TemplateCache, runs: _Runs
    ) -> dict[str, Any]:
        """One group's strategy and run; the pieces for artifacts, the report and a Decision."""
        from tx8lab.core.schedule.chip_cuts import chip_cuts
        from tx8lab.core.schedule.estimate import report_fields
        from tx8lab.core.schedule.slicing import loop_counts, noc_bytes
        from tx8lab.hw.cost import c2c_all_gather_cycles, c2c_all_reduce_cycles

        dp, tp = group_chips(group, self.dp, self.tp)
        _check_chips(group.label, dp, tp, hw)
        settings = (self.search, self.multi_buffer, self.retract, self.alloc, dp, tp)
        cached = cache.lookup_payload(group, settings)
        if cached is not None:
            return self._reuse(group, cached[0], cached[1], runs)
        ddr_only = group.attrs.get("group_tag") == TAG_DDR
        cuts = chip_cuts(group, dp, tp) if dp * tp > 1 and not ddr_only else []
        got = self.schedule_one(group, hw)
        cut: ChipCut | None = None
        c2c = 0
        cut_note = ""
        if cuts:
            # each plan against running the group whole on every chip: the cheapest wins
            tried = [f"whole on every chip {got.run.estimate.cycles}"]
            for plan in cuts:
                try:
                    alt = self.schedule_one(group, hw, plan)
                except Tx8labError as exc:
                    tried.append(f"{plan.plan} refused ({str(exc)[:80]})")
                    continue
                comm = c2c_all_gather_cycles(plan.gathered_bytes, tp, hw) + c2c_all_reduce_cycles(
                    plan.reduced_bytes, tp, hw
                )
                tried.append(f"{plan.plan} {alt.run.estimate.cycles} + {comm} C2C")
                if alt.run.estimate.cycles + comm < got.run.estimate.cycles + c2c:
                    got, cut, c2c = alt, plan, comm
            cut_note = "; chip plans: " + ", ".join(tried)
            if cut is None:
                cut_note += " -> replicated on every chip"
        run = got.run
        strategy, inp, allocation, estimate = run.strategy, run.input, run.allocation, run.estimate
        runs.ready(run)
        loops = loop_counts(group, strategy, hw)
        entry: dict[str, Any] = {
            "id": group.id,
            **_strategy_fields(strategy),
            "loops": dict(loops),
            "tiles": inp.tiles,
            **report_fields(estimate, hw),
            "spm_peak_bytes": int(allocation.peak),
            "spm_lower_bound_bytes": int(allocation.lower_bound),
            "buffers": len(run.lifetimes),
            "candidates_evaluated": got.evaluated,
            "search_space_size": got.space_size,
            "template_hit": False,
            "search_clock_capped": bool(got.search is not None and got.search.clock_capped),
            "comm": comm_kind(group, inp.reductions),
            "noc_bytes": noc_bytes(inp),
        }
        if inp.reductions and got.search is not None:
            plain = [
                c.cycles
                for c in got.search.candidates
                if c.status == "OK" and c.comm == "none" and c.cycles is not None
            ]
            # against the best non-communicating candidate the search ranked the same way
            entry["noc_saved_cycles"] = min(plain) - estimate.cycles if plain else None
        if dp * tp > 1:
            entry["c2c_cycles"] = c2c
            entry["chip_plan"] = cut.plan if cut is not None else "replicated"
        looping = {stage: n for stage, n in loops.items() if n > 1}
        sim = estimate.sim
        timed = (
            f"{entry['cycles']} cycles simulated (plan {entry['plan_cycles']})"
            if sim is not None
            else f"{entry['cycles']} cycles (plan only)"
        )
        stall = sim.costliest_stall if sim is not None else None
        reason = (
            f"{timed} on {inp.tiles} tiles, limited by {entry['limiting_engine']}"
            + (f", costliest stall {stall[0]} {stall[1]} {stall[2]} cycles" if stall else "")
            + "; loops "
            + (", ".join(f"{s} x{n}" for s, n in looping.items()) or "none")
            + f"; SPM peak {entry['spm_peak_bytes']} B ({self.alloc} allocator, lower bound "
            f"{entry['spm_lower_bound_bytes']} B)"
        )
        if cut is not None:
            reason += (
                f"; cut across {dp * tp} chips (dp {dp} x tp {tp})"
                + f" ({cut.plan} plan)"
                + (f", C2C {entry['c2c_cycles']} cycles" if entry["c2c_cycles"] else "")
                + "".join(f"; {n}" for n in cut.notes)
            )
        reason += cut_note
        if ddr_only:
            reason += "; group_tag 2 (its ops work in DDR): not split, not searched"
        elif self.search != "default":
            reason += (
                f"; {self.search}: best of {got.evaluated} evaluated of {got.space_size} candidates"
            )
            found = got.search
            if found is not None and found.clock_capped:
                reason += (
                    f"; stopped by the wall-clock cap search_budget_s={self.search_budget_s:g} "
                    f"before search_budget={self.search_budget} candidates were evaluated "
                    "(a faster or idler machine may choose otherwise)"
                )
            if found is not None and found.simulated:
                preferred = found.plan_best
                reason += f" ({found.simulated} simulated: " + (
                    "the plan's best is the simulator's)"
                    if found.plan_agrees or preferred is None
                    else f"the plan preferred #{preferred.index}, {preferred.cycles} cycles "
                    "simulated)"
                )
        offsets = tuple(
            (lt.id, int(allocation.offsets[lt.id]), int(lt.size)) for lt in allocation.lifetimes
        )
        cache.store(
            group,
            settings,
            strategy,
            _Template(
                group.id,
                entry,
                estimate,
                reason,
                inp.notes,
                offsets,
                _positions(group),
                allocation,
            ),
        )
        decision = self.decide(
            group.id,
            f"{entry['cycles']} cycles",
            reason,
            related=[int(k) for k in strategy.ops],
            notes=list(inp.notes),
            stages={r.name: list(r.decisions) for r in run.records},
        )
        return {
            "entry": entry,
            "decision": decision,
            "estimate": estimate,
            "strategy": strategy,
            "search": got.search,
            "offsets": offsets,
        }

    def schedule_one(self, group: Op, hw: ChipConfig, cut: ChipCut | None = None) -> ScheduledGroup:
        """This pass's strategy for one group (on one chip's piece with ``cut``) and its run.

        The same call serves the group tuner, so both give the same cycles by construction.
        """
        return schedule_group(
            group,
            hw,
            self.settings(),
            mode=self.search,
            budget_s=self.search_budget_s,
            budget=self.search_budget,
            chips=cut,
            timer=self.timer(),
            simulate_top=max(self.simulate_top, 1),
            noc=self.noc,
        )

    def timer(self) -> GroupTimer | None:
        """The simulate stage's timer: the program layer's, unless ``simulate_top`` is 0."""
        return simulate_schedule if self.simulate_top else None

    def _reuse(
        self, group: Op, strategy: Strategy, template: _Template, runs: _Runs
    ) -> dict[str, Any]:
        """A template hit: the first identical group's schedule under this group's ids."""
        entry = {
            **template.entry,
            "id": group.id,
            **_strategy_fields(strategy),
            "candidates_evaluated": 0,
            "template_hit": True,
            "template_of": template.group_id,
        }
        reason = (
            f"{template.reason}; schedule reused from the template cache: same structure and "
            f"shapes as %{template.group_id}"
        )
        decision = self.decide(
            group.id,
            f"{entry['cycles']} cycles",
            reason,
            related=[int(k) for k in strategy.ops],
            notes=list(template.notes),
            template_of=template.group_id,
        )
        ids = dict(zip(template.positions, _positions(group), strict=True))
        # an op reference as the template names it -> as this group does
        refs = {str(old): f"%{new}" for old, new in ids.items()}

        def ref(m: re.Match[str]) -> str:
            got = refs.get(m.group(1))
            return got if got is not None else f"%{ids.get(int(m.group(1)), int(m.group(1)))}"

        def remap(text: str) -> str:
            return _OP_REF.sub(ref, text)

        offsets = tuple((remap(i), off, size) for i, off, size in template.offsets)
        runs.defer(group, strategy, template, {i: off for i, off, _ in offsets})
        return {
            "entry": entry,
            "decision": decision,
            "estimate": dataclasses.replace(template.estimate, group_id=group.id),
            "strategy": strategy,
            "search": None,
            "offsets": offsets,
        }

    def check(self, module: Module) -> list[str]:
        """Post-condition: every top-level group carries its cycles, SPM peak and offsets."""
        return [
            f"{op.label}: group-cost left no {key}"
            for op in module.walk()
            if op.kind == "tx8be.Group"
            for key in ("cycles", "spm_peak_bytes", "spm_offsets")
            if key not in op.attrs
        ]


# ---------------------------------------------------------------- helpers


#: An op reference inside a buffer or lifetime id (``%7``, ``%7.imm``, ``%7:1#2``).
_OP_REF = re.compile(r"%(\d+)")


def group_chips(group: Op, dp: int, tp: int) -> tuple[int, int]:
    """The group's chips: its ops' ``chip_parallel`` (module docstring), else ``dp``, ``tp``.

    Raises:
        Tx8labError: an op's ``chip_parallel`` has a dim below 1, a ``parallel`` mode that
            contradicts its dims or ``sharding_is_given``, or two ops of the group disagree.
            The message names the op.
    """
    from tx8lab.core.attrs import ParallelAttr, ParallelMode

    found: tuple[int, int, Op] | None = None
    for op in group.regions[0].ops:
        attr = op.attrs.get("chip_parallel")
        if attr is None:
            continue
        if not isinstance(attr, ParallelAttr):
            raise Tx8labError(f"{op.label}: chip_parallel must be a #tx8be.parallel_attr")
        dims = {
            f"{kind}_dim_{axis}": getattr(attr, f"{kind}_dim_{axis}")
            for kind in ("dp", "tp")
            for axis in "xyz"
        }
        low = [f"{k}={v}" for k, v in dims.items() if v < 1]
        if low:
            raise Tx8labError(f"{op.label}: chip_parallel {', '.join(low)}; each dim is >= 1")
        chips = (
            dims["dp_dim_x"] * dims["dp_dim_y"] * dims["dp_dim_z"],
            dims["tp_dim_x"] * dims["tp_dim_y"] * dims["tp_dim_z"],
        )
        uses = {
            ParallelMode.NONE: (False, False),
            ParallelMode.DP: (True, False),
            ParallelMode.TP: (False, True),
            ParallelMode.DP_TP: (True, True),
        }[attr.parallel]
        for name, n, allowed in (("dp", chips[0], uses[0]), ("tp", chips[1], uses[1])):
            if n > 1 and not allowed:
                raise Tx8labError(
                    f"{op.label}: chip_parallel has {name} dims of {n} chips but parallel = "
                    f"{attr.parallel.value}; set parallel to "
                    f"{'DP_TP' if chips[0] > 1 and chips[1] > 1 else name.upper()}"
                )
        if attr.sharding_is_given:
            raise Tx8labError(
                f"{op.label}: chip_parallel sharding_is_given (a chip cut fixed per dim) is "
                "not supported: the chip plans cut the batch (dp) and the last dim (tp); give "
                "dp/tp dims and sharding_is_given = false"
            )
        if found is not None and found[:2] != chips:
            raise Tx8labError(
                f"{op.label}: chip_parallel asks dp={chips[0]} x tp={chips[1]} but "
                f"{found[2].label} in the same group {group.label} asks dp={found[0]} x "
                f"tp={found[1]}; a group runs as one kernel, give its ops one chip_parallel"
            )
        found = (*chips, op)
    return (found[0], found[1]) if found is not None else (dp, tp)


def _check_chips(who: str, dp: int, tp: int, hw: ChipConfig) -> None:
    if dp * tp > hw.num_chips:
        raise Tx8labError(
            f"{who}: dp={dp} x tp={tp} = {dp * tp} chips but the preset {hw.name!r} has "
            f"num_chips={hw.num_chips}; lower dp/tp or set --hw-set num_chips={dp * tp}"
        )


def _positions(group: Op) -> tuple[int, ...]:
    return tuple(op.id for op in group.regions[0].ops)


def _annotated(
    group: Op,
    entry: Mapping[str, Any],
    strategy: Strategy,
    offsets: tuple[tuple[str, int, int], ...],
    retract: bool,
) -> Op:
    """The group with its schedule written into the IR (module docstring, "IR")."""
    body = group.regions[0]
    ops = []
    for op in body.ops:
        st = strategy.ops.get(op.id)
        if st is not None:
            extra: dict[str, Any] = {"tile_shard": st.shard, "tile_split": st.split}
            if st.chips:
                extra["chip_cut"] = st.chips
            op = op.with_attrs(**extra)
        ops.append(op)
    region = Block(body.args, tuple(ops))
    shared = {"noc_share": True} if strategy.share else {}
    return group.replace(regions=(region,)).with_attrs(
        **shared,
        cycles=entry["cycles"],
        plan_cycles=entry["plan_cycles"],
        spm_peak_bytes=entry["spm_peak_bytes"],
        spm_alloc_size=entry["spm_peak_bytes"],
        spm_offsets=offsets,
        multi_buffer=strategy.multi_buffer,
        retract=retract,
    )


def _strategy_fields(strategy: Strategy) -> dict[str, Any]:
    """The report's ``sharding`` and ``split``: body op id -> factors per iteration dim."""
    fields: dict[str, Any] = {
        "sharding": {str(k): list(v.shard) for k, v in strategy.ops.items()},
        "split": {str(k): list(v.split) for k, v in strategy.ops.items()},
    }
    if any(v.chips for v in strategy.ops.values()):
        fields["chips"] = {str(k): list(v.chips) for k, v in strategy.ops.items() if v.chips}
    return fields


@dataclass(frozen=True)
class _Template:
    """What a template hit reuses from the first group of its structure."""

    group_id: int
    entry: Mapping[str, Any]
    estimate: GroupEstimate
    reason: str
    notes: tuple[str, ...]
    offsets: tuple[tuple[str, int, int], ...]
    """SPM (lifetime id, offset, bytes) of the template's allocation."""
    positions: tuple[int, ...]
    """The template's body op ids in order (to map ids in lifetime names)."""
    allocation: Allocation


class _Runs(Mapping[int, GroupRun]):
    """``artifacts["runs"]``: group id -> its :class:`~tx8lab.core.schedule.stages.GroupRun`.

    A scheduled group's run is stored as computed. A template hit's is made when first
    read: its own strategy through the stages up to buffer-merge, then the template's
    packing under the hit's lifetime ids as its spm-alloc record, and its own simulation
    (when group-cost simulates), so a run over 32 identical layers schedules each
    structure once unless a view asks for a hit's stages.
    """

    def __init__(
        self, hw: ChipConfig, settings: StageSettings, timer: GroupTimer | None = None
    ) -> None:
        self._hw = hw
        self._settings = settings
        self._timer = timer
        self._order: list[int] = []
        self._done: dict[int, GroupRun] = {}
        self._todo: dict[int, tuple[Op, Strategy, _Template, dict[str, int]]] = {}

    def ready(self, run: GroupRun) -> None:
        self._order.append(run.group_id)
        self._done[run.group_id] = run

    def defer(
        self, group: Op, strategy: Strategy, template: _Template, offsets: dict[str, int]
    ) -> None:
        self._order.append(group.id)
        self._todo[group.id] = (group, strategy, template, offsets)

    def __getitem__(self, group_id: int) -> GroupRun:
        got = self._done.get(group_id)
        if got is not None:
            return got
        if group_id not in self._todo:
            raise KeyError(group_id)
        group, strategy, template, offsets = self._todo.pop(group_id)
        head = run_group(group, strategy, self._hw, self._settings, until="buffer-merge")
        lifetimes = head.lifetimes
        if {lt.id for lt in lifetimes} != set(offsets):
            raise Tx8labError(
                f"group %{group_id}: its lifetimes differ from its template's; the template "
                "cache keyed two different groups alike (report this with the model)"
            )
        allocation = dataclasses.replace(
            template.allocation,
            offsets={lt.id: offsets[lt.id] for lt in lifetimes},
            lifetimes=lifetimes,
        )
        packed = StageRecord(
            "spm-alloc",
            allocation,
            0.0,
            (f"the packing of %{template.group_id} (template) under this group's lifetime ids",),
        )
        run = run_group(
            group,
            strategy,
            self._hw,
            self._settings,
            reuse=(*head.records, packed),
            timer=self._timer,
        )
        self._done[group_id] = run
        return run

    def __iter__(self) -> Iterator[int]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)
