"""group-cost: schedule every group for one strategy and estimate it (seed GroupCostPass).

Spec: seed 001 "GroupCostPass" (per group: DataSplit -> TS_SwPipeline -> SPMAlloc ->
estimate) and DESIGN.md §5 ("group-cost (data-split → sw-pipeline → spm-alloc → estimate
per candidate)"); the stages are :mod:`tx8lab.core.schedule`.

For each top-level ``tx8be.Group``, in program order:

1. the strategy: with ``search=default`` (the default knob) the documented default of
   :func:`~tx8lab.core.schedule.slicing.default_strategy` (shard the largest parallel dim
   over the tiles, then split in time until the group fits in SPM); with ``search=search``
   or ``exhaustive`` the best candidate of
   :func:`~tx8lab.core.schedule.search.search_group` (sharding levels x split tries,
   propagated; statuses, pruning and budget in that module), looked up first in a
   template cache shared by the groups of one run (identical layers are searched once);
2. :func:`~tx8lab.core.schedule.slicing.schedule_input` (the init pipeline with Repeat
   nodes and buffers, task cycles from the tile cost model);
3. :func:`~tx8lab.core.schedule.pipeline.sw_pipeline` (retraction, engine slots);
4. :func:`~tx8lab.core.schedule.lifetimes.spm_lifetimes` (buffer-life + buffer-merge);
5. :func:`~tx8lab.core.schedule.spm_alloc.allocate` into the tile's usable SPM;
6. :func:`~tx8lab.core.schedule.estimate.estimate_group`.

The model estimate sums the groups plus one barrier after each group whose
``need_barrier`` is set (opt-barrier; every group when that pass has not run).

Readings chosen:

- The IR keeps its structure; each group gets the attributes ``cycles`` and
  ``spm_peak_bytes`` (so a graph overlay can colour by them) and nothing else. Everything
  larger (timelines, schedule inputs, allocations, the model estimate) is in
  ``PassResult.artifacts`` for views, the JSON report and ``--trace``.
- The report's ``sharding`` / ``split`` of a group map each body op id to its tiles per
  iteration dim and its temporal splits per iteration dim (the op library's
  ``iter_dims`` order).
- ``search`` stays ``default`` by default so existing reports and figures do not change;
  ``search`` never does worse than it (the default strategy is its first candidate). The
  search allocates with the seed's first fit (falling back to ``best`` on overflow); the
  chosen strategy is re-allocated with the ``alloc`` knob for the report. Report entries
  carry ``candidates_evaluated`` (1 for ``default``, 0 on a template hit),
  ``search_space_size`` and ``template_hit``.
- A group that cannot fit in SPM even fully split is an error that names the group and
  its largest buffers (from slicing or from the allocator), never a silently wrong cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tx8lab.core.ir import Module, Op
from tx8lab.core.pipeline import Decision, Pass, PassResult, knob
from tx8lab.core.schedule.search import MODES, SearchResult, TemplateCache
from tx8lab.hw.config import ChipConfig


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
    alloc_time_limit_s: float = knob(1.0, "time limit per group for alloc=best", min=0.01)
    """The best allocator is anytime: it keeps the best packing found within the limit."""
    search: str = knob(
        "default",
        "strategy: default (one documented strategy), search (pruned, budgeted) or exhaustive",
        choices=MODES,
    )
    """:func:`~tx8lab.core.schedule.search.search_group` mode; ``default`` is the behaviour
    before the search existed."""
    search_budget_s: float = knob(2.0, "time budget per searched group (search mode)", min=0.0)
    """The search stops between candidates once this is spent and a candidate fits."""

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        from tx8lab.core.schedule.estimate import estimate_model

        entries: list[dict[str, Any]] = []
        decisions: list[Decision] = []
        estimates = []
        barriers: list[bool] = []
        details: dict[int, dict[str, Any]] = {}
        functions = []
        cache = TemplateCache()
        searches: dict[int, SearchResult] = {}
        for func in module.functions:
            ops = []
            for op in func.ops:
                if op.kind != "tx8be.Group":
                    ops.append(op)
                    continue
                done = self._schedule(op, hw, cache)
                details[op.id] = done
                if done["search"] is not None:
                    searches[op.id] = done["search"]
                estimates.append(done["estimate"])
                barriers.append(op.attrs.get("need_barrier", True) is not False)
                entries.append(done["entry"])
                decisions.append(done["decision"])
                entry = done["entry"]
                ops.append(
                    op.with_attrs(cycles=entry["cycles"], spm_peak_bytes=entry["spm_peak_bytes"])
                )
            functions.append(func.with_ops(ops) if ops != list(func.ops) else func)
        model = estimate_model(estimates, hw, need_barrier=barriers)
        stats: dict[str, int | float | str] = {
            "groups_scheduled": len(entries),
            "total_cycles": model.total_cycles,
            "latency_s": model.latency_s,
            "barriers": sum(barriers),
            "spm_peak_bytes": max((e["spm_peak_bytes"] for e in entries), default=0),
        }
        if self.search != "default":
            stats["candidates_evaluated"] = sum(e["candidates_evaluated"] for e in entries)
            stats["template_hits"] = cache.hits
            stats["template_hit_rate"] = round(cache.hit_rate, 4)
            stats["search_time_s"] = round(sum(r.time_s for r in searches.values()), 4)
        for entry in entries:
            key = f"limited_by_{entry['limiting_engine']}"
            stats[key] = int(stats.get(key, 0)) + 1
        new = Module(tuple(functions), module.attrs, module.next_id)
        artifacts = {
            "groups": entries,
            "model": model,
            "need_barrier": tuple(barriers),
            "timelines": {gid: d["timeline"] for gid, d in details.items()},
            "schedule_inputs": {gid: d["input"] for gid, d in details.items()},
            "allocations": {gid: d["allocation"] for gid, d in details.items()},
            "strategies": {gid: d["strategy"] for gid, d in details.items()},
            "searches": searches,
            "template_cache": cache,
        }
        return PassResult(new, tuple(decisions), stats, artifacts)

    def _schedule(self, group: Op, hw: ChipConfig, cache: TemplateCache) -> dict[str, Any]:
        """Every stage for one group; the pieces for artifacts, the report and a Decision."""
        from tx8lab.core.schedule.estimate import estimate_group, report_fields
        from tx8lab.core.schedule.lifetimes import spm_lifetimes
        from tx8lab.core.schedule.pipeline import sw_pipeline
        from tx8lab.core.schedule.search import run_stages, search_group, space_size
        from tx8lab.core.schedule.slicing import default_schedule, loop_counts
        from tx8lab.core.schedule.spm_alloc import allocate

        found: SearchResult | None = None
        hit = False
        evaluated, size = 1, 1
        if self.search == "default":
            strategy, inp = default_schedule(group, hw, multi_buffer=self.multi_buffer)
            timeline = sw_pipeline(inp, retract=self.retract, multi_buffer=self.multi_buffer)
            lifetimes = spm_lifetimes(timeline, inp)
            allocation = allocate(
                lifetimes,
                hw.tile.spm_usable_bytes,
                strategy=self.alloc,
                time_limit_s=self.alloc_time_limit_s,
            )
            estimate = estimate_group(timeline)
        else:
            settings = (self.search, self.multi_buffer, self.retract, hw.name)
            cached = cache.lookup(group, settings)
            if cached is not None:
                strategy, hit, evaluated = cached, True, 0
                size = space_size(group, hw)
            else:
                found = search_group(
                    group,
                    hw,
                    mode=self.search,
                    budget_s=self.search_budget_s,
                    multi_buffer=self.multi_buffer,
                    retract=self.retract,
                )
                assert found.best is not None
                assert found.best.strategy is not None
                strategy = found.best.strategy
                evaluated, size = found.evaluated, found.space_size
                cache.store(group, settings, strategy)
            done = run_stages(
                group,
                strategy,
                hw,
                retract=self.retract,
                multi_buffer=self.multi_buffer,
                alloc=self.alloc,
                alloc_time_limit_s=self.alloc_time_limit_s,
            )
            inp, timeline, allocation, estimate = (
                done.input,
                done.timeline,
                done.allocation,
                done.estimate,
            )
            lifetimes = list(allocation.lifetimes)
        loops = loop_counts(group, strategy, hw)
        entry: dict[str, Any] = {
            "id": group.id,
            "sharding": {str(k): list(v.shard) for k, v in strategy.ops.items()},
            "split": {str(k): list(v.split) for k, v in strategy.ops.items()},
            "loops": dict(loops),
            "tiles": inp.tiles,
            **report_fields(estimate),
            "spm_peak_bytes": int(allocation.peak),
            "spm_lower_bound_bytes": int(allocation.lower_bound),
            "buffers": len(lifetimes),
            "candidates_evaluated": evaluated,
            "search_space_size": size,
            "template_hit": hit,
        }
        looping = {stage: n for stage, n in loops.items() if n > 1}
        reason = (
            f"{entry['cycles']} cycles on {inp.tiles} tiles, limited by "
            f"{entry['limiting_engine']}; loops "
            + (", ".join(f"{s} x{n}" for s, n in looping.items()) or "none")
            + f"; SPM peak {entry['spm_peak_bytes']} B ({self.alloc} allocator, lower bound "
            f"{entry['spm_lower_bound_bytes']} B)"
        )
        if self.search != "default":
            reason += (
                f"; strategy from the template cache ({size} candidates in the space)"
                if hit
                else f"; {self.search}: best of {evaluated} evaluated of {size} candidates"
            )
        decision = self.decide(
            group.id,
            f"{entry['cycles']} cycles",
            reason,
            related=[int(k) for k in strategy.ops],
            notes=list(inp.notes),
        )
        return {
            "entry": entry,
            "decision": decision,
            "estimate": estimate,
            "timeline": timeline,
            "input": inp,
            "allocation": allocation,
            "strategy": strategy,
            "search": found,
        }

    def check(self, module: Module) -> list[str]:
        """Post-condition: every top-level group carries its cycles and SPM peak."""
        return [
            f"{op.label}: group-cost left no {key}"
            for op in module.walk()
            if op.kind == "tx8be.Group"
            for key in ("cycles", "spm_peak_bytes")
            if key not in op.attrs
        ]
