"""The strategy search of group-cost: candidates, statuses, the best cost, a template cache.

Spec: seed 001 "GroupCostPass" (for each candidate of DataSplitNew: data-split ->
TS_SwPipeline -> SPMAlloc -> estimate; SPM overflow and invalid candidates are dropped; the
best cost is kept) and "DataSplitNewPass" (the candidates: the output ops' sharding levels
best first, then DS_TileSplit's split tries, DS_SlicePropagate to the whole group); the
stages are :mod:`tx8lab.core.schedule.sharding`, ``slicing``, ``pipeline``, ``lifetimes``,
``spm_alloc`` and ``estimate``.

A *candidate* is (sharding vector, split depth): the sharding vector of the group's first
output op taken from its levels (:func:`~tx8lab.core.schedule.sharding.op_sharding_levels`,
best level first, getShardings order within a level), and the number of DS_TileSplit
steps (:func:`~tx8lab.core.schedule.sharding.split_tries`) applied to it (0 = no split).
:func:`~tx8lab.core.schedule.sharding.propagate` turns it into the group's
:class:`~tx8lab.core.schedule.tasks.Strategy`. The documented default strategy of
``slicing.default_strategy`` is one more candidate (``sharding == "default"``), evaluated
first, so a search never does worse than today's group-cost.

Modes of :func:`search_group` / :func:`iter_search`:

- ``default``: the default strategy only (group-cost's behaviour before the search).
- ``exhaustive``: every candidate (refused above ``max_space`` candidates).
- ``search``: the seed's order with pruning and a time budget (rules below).

Readings chosen where the seed is vague:

- **Several output ops.** The first output op (program order) carries the candidate; every
  other output op takes the vector of its own levels at the same level index (clamped to
  its last level) and the same split depth (clamped to its tries). One vector per group
  keeps the space linear in the first op's choices instead of a product over outputs.
- **Statuses.** ``invalid``: the op library or slicing refuses the strategy (e.g. two
  linked dims split by different factors) — the reason is its error text;
  ``spm-overflow``: the allocator cannot place the buffers in ``tile.spm_usable_bytes``;
  ``OK`` otherwise. Candidates with the same propagated strategy as one already seen are
  ``duplicate`` (not re-evaluated; a split try that the propagation clears gives one).
- **Reduction splits** (seed DS_TileSplit's ``reduceSplit``, which it applies per op):
  the split tries walk the first output op's dims, and propagation gives its producers
  the same cuts, so a Gemm/MatMul/Conv inside the group never gets its K (IC) split from
  them. A candidate whose strategy overflows SPM is therefore retried with every
  reduction dim of every op split once more (getNextSplit, down to ``sliceShapeMin``),
  up to ``REDUCE_RETRIES`` times; the first that fits is the candidate (``OK``, its
  reason says which splits), else it stays ``spm-overflow``. A retry whose live bytes
  are above twice the SPM is split again without running the pipeline; in ``search``
  mode one whose busiest engine reaches the best cycles so far ends the retries (more
  splits only add tasks). Without this, a small SPM
  leaves only the default strategy (which halves any dim) fitting.
- **Allocator during the search.** ``seed`` (first fit, fast) for every candidate; when the
  live bytes exceed the SPM and first fit overflows, ``best`` (branch and bound, limited by
  ``alloc_time_limit_s``) decides; only when both fail is the status ``spm-overflow``. The
  chosen candidate is re-allocated with the caller's allocator for the report.
- **Split walk** (``search``): for one sharding vector, depths 0, 1, 2 ... until the first
  ``OK`` one, then deeper until ``SPLIT_PATIENCE`` (2) steps in a row do not beat the best
  of the walk (the seed stops at the first fit; a deeper split can pipeline better with
  multi-buffering, and the cycles are not monotone in the depth: on a resnet50 conv group
  depths 1..4 give 97311, 103974, 95036, 70979 cycles).
- **Order** (``search``): the default strategy, then the no-shard vector (the last of
  the last level: small groups often run fastest on one tile, and it gives the pruning
  an early incumbent), then the levels best first, getShardings order within a level.
- **Pruning rule** (``search``): once an ``OK`` candidate exists, a sharding vector is
  skipped (``pruned``) when its lower bound — the busiest engine's busy cycles of its
  no-split schedule input — is not below the best cycles found. A makespan is never
  below its busiest engine, and splitting only adds tasks (each with its fixed cost), so
  no depth of that vector can win. The bound costs one slicing call, not a pipeline. The
  same bound is taken at every depth of the split walk before the pipeline runs: a depth
  whose busiest engine already reaches the best is skipped (counted as a miss of the walk,
  never evaluated). Deeper depths are not skipped with it: a split try can move to another
  dim and hoist a reload, so the bound is not monotone in the depth. A
  level whose every vector is pruned, or whose candidates do not beat the best found
  before it, ends the search (later levels use fewer tiles).
- **Time budget**: checked between candidates; the search stops when it is spent *and*
  an ``OK`` candidate exists (a group is never left without a schedule by the budget).
  With no ``OK`` candidate after ``NO_FIT_FACTOR`` times the budget (at least 1 s) it
  stops with an error that names the group and the SPM (a tiny SPM made a search run for
  minutes before).
- **Chips** (``chips``: group-cost's ``dp``/``tp``, a
  :class:`~tx8lab.core.schedule.sharding.ChipCut`): every candidate, the default included,
  carries the group's chip cut (``OpStrategy.chips``); the tiles share one chip's piece.
  The sharding levels stay those of the whole tensors (not recomputed per chip piece).
- **Template cache** (:class:`TemplateCache`): keyed by the group body's structure (op
  kinds, attributes, operand and result types, wiring by position — not ids) and the
  search settings; a hit maps the cached winner's strategy onto the new group's ids by
  position, so identical layers (BERT, LLaMA) are searched once.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from tx8lab.core.ir import TERMINATORS, Op
from tx8lab.core.ops import get_op_def
from tx8lab.core.schedule.chip_cuts import ChipCut, with_chips
from tx8lab.core.schedule.estimate import GroupEstimate, estimate_group
from tx8lab.core.schedule.lifetimes import spm_lifetimes
from tx8lab.core.schedule.sharding import (
    ShardingLevel,
    SplitTry,
    min_slices,
    next_split,
    op_sharding_levels,
    output_ops,
    param_for,
    propagate,
    split_tries,
)
from tx8lab.core.schedule.slicing import (
    default_strategy,
    engine_busy_cycles,
    group_tile_budget,
    live_bytes,
    schedule_input,
)
from tx8lab.core.schedule.spm_alloc import Allocation, allocate
from tx8lab.core.schedule.sw_pipeline import sw_pipeline
from tx8lab.core.schedule.tasks import OpStrategy, ScheduleInput, Strategy
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

Mode = Literal["search", "exhaustive", "default"]
MODES: tuple[str, ...] = ("search", "exhaustive", "default")
Status = Literal["OK", "spm-overflow", "invalid", "duplicate"]

#: The split walk of ``search`` ends after this many deeper steps without a better OK one.
SPLIT_PATIENCE = 2

#: Reduction-split doublings tried on a candidate that overflows SPM (seed reduceSplit).
REDUCE_RETRIES = 6

#: ``search`` gives up (an error) when nothing fits after this many times its budget
#: (at least 1 s): with a tiny SPM every candidate overflows and each retry costs an
#: allocator run, which could otherwise take minutes.
NO_FIT_FACTOR = 10

#: ``exhaustive`` refuses spaces larger than this by default.
DEFAULT_MAX_SPACE = 2000


@dataclass(frozen=True)
class Candidate:
    """One evaluated (or rejected) candidate: one row of :meth:`SearchResult.frame`."""

    index: int
    """Position in evaluation order."""
    level: int
    """Sharding level factor (``-1`` for the default strategy)."""
    sharding: str
    """The first output op's sharding vector (its result dims), or ``default``."""
    depth: int
    """Split tries applied (``-1`` for the default strategy)."""
    split: str
    """The first output op's split (iteration dims) after ``depth`` tries."""
    status: Status
    reason: str = ""
    cycles: int | None = None
    spm_peak_bytes: int | None = None
    strategy: Strategy | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Scheduled:
    """Every stage's output for one strategy of one group."""

    strategy: Strategy
    input: ScheduleInput
    timeline: Any
    allocation: Allocation
    estimate: GroupEstimate


@dataclass(frozen=True)
class SearchResult:
    """The outcome of :func:`search_group` (or a best-so-far step of :func:`iter_search`)."""

    group_id: int
    mode: str
    candidates: tuple[Candidate, ...]
    best: Candidate | None
    space_size: int
    """Candidates in the space (the default strategy included)."""
    pruned: int
    """Candidates skipped by the pruning rule or the budget (never evaluated)."""
    time_s: float
    done: bool = True
    template_hit: bool = False

    @property
    def evaluated(self) -> int:
        """Candidates run through the stages (duplicates excluded)."""
        return sum(c.status != "duplicate" for c in self.candidates)

    def rejected(self) -> dict[str, int]:
        """Rejected candidates counted by status."""
        out: dict[str, int] = {}
        for c in self.candidates:
            if c.status != "OK":
                out[c.status] = out.get(c.status, 0) + 1
        return out

    def rejected_by_reason(self) -> dict[str, int]:
        """Rejected candidates counted by status and reason.

        The reason is its first clause with numbers as ``#``, so every "does not fit in
        3080192 bytes" counts as one kind.
        """
        out: dict[str, int] = {}
        for c in self.candidates:
            if c.status == "OK":
                continue
            head = re.split(r"[:;.]\s", c.reason, maxsplit=1)[0] if c.reason else ""
            key = f"{c.status}: {re.sub(r'[0-9][0-9,]*', '#', head)}" if head else c.status
            out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def frame(self) -> pd.DataFrame:
        """One row per candidate: sharding, split, cycles, SPM peak, status, reason."""
        cols = ["index", "level", "sharding", "depth", "split", "cycles", "spm_peak_bytes"]
        rows = [
            {**{k: getattr(c, k) for k in cols}, "status": c.status, "reason": c.reason}
            for c in self.candidates
        ]
        df = pd.DataFrame(rows, columns=[*cols, "status", "reason"])
        df["best"] = [self.best is not None and c.index == self.best.index for c in self.candidates]
        return df

    def pareto(self) -> list[Candidate]:
        """OK candidates no other OK candidate beats on both cycles and SPM peak (by cycles)."""
        ok = sorted(
            (c for c in self.candidates if c.status == "OK"),
            key=lambda c: (c.cycles, c.spm_peak_bytes, c.index),
        )
        front: list[Candidate] = []
        for c in ok:
            assert c.spm_peak_bytes is not None
            if not front or c.spm_peak_bytes < (front[-1].spm_peak_bytes or 0):
                front.append(c)
        return front


# ---------------------------------------------------------------- the space


@dataclass(frozen=True)
class _Out:
    op: Op
    levels: list[ShardingLevel]
    rmap: tuple[int | None, ...]
    n_dims: int
    tries: dict[tuple[int, ...], list[SplitTry]] = field(default_factory=dict, compare=False)
    """split_tries by iteration shard, computed once per vector (every depth reads them)."""

    def split_tries(self, shard: tuple[int, ...]) -> list[SplitTry]:
        got = self.tries.get(shard)
        if got is None:
            got = self.tries[shard] = split_tries(self.op, shard)
        return got


def _outs(group: Op, tiles: int) -> list[_Out]:
    outs = []
    for op in output_ops(group):
        defn = get_op_def(op.kind)
        outs.append(
            _Out(
                op,
                op_sharding_levels(op, tiles),
                tuple(defn.result_dims(op)[0]),
                len(defn.iter_dims(op)),
            )
        )
    return outs


def _iter_shard(out: _Out, vec: tuple[int, ...]) -> tuple[int, ...]:
    shard = [1] * out.n_dims
    for e, d in enumerate(out.rmap):
        if d is not None:
            shard[d] = vec[e]
    return tuple(shard)


def _op_strategy(out: _Out, li: int, vi: int, depth: int) -> OpStrategy:
    level = out.levels[min(li, len(out.levels) - 1)]
    vec = level.shardings[min(vi, len(level.shardings) - 1)]
    shard = _iter_shard(out, vec)
    tries = out.split_tries(shard)
    d = min(depth, len(tries))
    split = tries[d - 1].split if d else (1,) * out.n_dims
    return OpStrategy(shard, split)


def _depths(out: _Out, vec: tuple[int, ...]) -> int:
    return len(out.split_tries(_iter_shard(out, vec)))


def space_size(group: Op, hw: ChipConfig) -> int:
    """Candidates of ``group``: the default plus (vector, depth) pairs of its first output."""
    return _space_size(_outs(group, group_tile_budget(group, hw)))


def _space_size(outs: list[_Out]) -> int:
    if not outs:
        return 1
    first = outs[0]
    return 1 + sum(_depths(first, v) + 1 for lv in first.levels for v in lv.shardings)


# ---------------------------------------------------------------- one candidate


def run_stages(
    group: Op,
    strategy: Strategy,
    hw: ChipConfig,
    *,
    retract: bool = True,
    multi_buffer: int = 2,
    alloc: str = "seed",
    alloc_time_limit_s: float = 1.0,
    si: ScheduleInput | None = None,
) -> Scheduled:
    """schedule_input -> sw_pipeline -> spm_lifetimes -> allocate -> estimate_group.

    ``alloc="seed"`` falls back to ``best`` when first fit overflows and the live bytes
    exceed the SPM (module docstring).

    Raises:
        Tx8labError: the strategy is refused, or the buffers do not fit in SPM.
    """
    if si is None:
        si = schedule_input(group, strategy, hw, multi_buffer=multi_buffer)
    timeline = sw_pipeline(si, retract=retract, multi_buffer=multi_buffer)
    lifetimes = spm_lifetimes(timeline, si)
    capacity = hw.tile.spm_usable_bytes
    try:
        allocation = allocate(lifetimes, capacity, strategy=alloc, time_limit_s=alloc_time_limit_s)
    except Tx8labError:
        if alloc != "seed" or live_bytes(si, multi_buffer) <= capacity:
            raise
        allocation = allocate(lifetimes, capacity, strategy="best", time_limit_s=alloc_time_limit_s)
    return Scheduled(strategy, si, timeline, allocation, estimate_group(timeline))


def _split_reductions(group: Op, strategy: Strategy) -> Strategy | None:
    """``strategy`` with every reduction dim of every op split once more (getNextSplit).

    None when no reduction dim can be split further (each is at its ``sliceShapeMin``).
    """
    body = {op.id: op for op in group.regions[0].ops}
    ops: dict[int, OpStrategy] = {}
    changed = False
    for k, st in strategy.ops.items():
        op = body[k]
        dims = get_op_def(op.kind).iter_dims(op)
        lows = min_slices(op)
        split = list(st.split)
        for i, (d, cut) in enumerate(zip(dims, st.per_tile(), strict=True)):
            if d.reduce and d.splittable:
                nxt = next_split(d.size, cut, split[i], lows[i])
                if nxt is not None:
                    split[i], changed = nxt, True
        ops[k] = OpStrategy(st.shard, tuple(split), st.chips)
    return Strategy(ops, strategy.multi_buffer) if changed else None


def _reduce_split_retry(
    group: Op,
    strategy: Strategy,
    hw: ChipConfig,
    stages: Mapping[str, Any],
    limit: int | None,
    multi_buffer: int,
) -> tuple[Scheduled, Strategy, str] | None:
    """An overflowing candidate with its reduction dims split until it fits (or None).

    With ``limit`` (the search's best cycles so far) a split whose busiest engine already
    reaches it ends the retries: more splits only add tasks.
    """
    current = strategy
    for step in range(1, REDUCE_RETRIES + 1):
        nxt = _split_reductions(group, current)
        if nxt is None:
            return None
        current = nxt
        try:
            si = schedule_input(group, current, hw, multi_buffer=multi_buffer)
            if limit is not None and _busy_bound(si) >= limit:
                return None
            if live_bytes(si, multi_buffer) > 2 * hw.tile.spm_usable_bytes:
                continue  # far from fitting: split again before running the pipeline
            done = run_stages(group, current, hw, si=si, **stages)
        except Tx8labError as exc:
            if "does not fit" in str(exc):
                continue
            return None
        splits = sorted(
            {
                f"%{k} {list(v.split)}"
                for k, v in current.ops.items()
                if v.split != strategy.ops[k].split
            }
        )
        return done, current, f"reduce split x{2**step} to fit: {', '.join(splits)}"
    return None


def _busy_bound(si: ScheduleInput) -> int:
    return max(engine_busy_cycles(si).values(), default=0)


def _key(strategy: Strategy) -> tuple[Any, ...]:
    return tuple(sorted((k, v.shard, v.split, v.chips) for k, v in strategy.ops.items()))


# ---------------------------------------------------------------- the search


def iter_search(
    group: Op,
    hw: ChipConfig,
    *,
    mode: str = "search",
    budget_s: float = 2.0,
    multi_buffer: int = 2,
    retract: bool = True,
    alloc: str = "seed",
    alloc_time_limit_s: float = 0.2,
    max_space: int = DEFAULT_MAX_SPACE,
    chips: ChipCut | None = None,
) -> Iterator[SearchResult]:
    """Anytime search: yields a :class:`SearchResult` after each candidate (best so far).

    The last one yielded has ``done=True``.

    Raises:
        Tx8labError: unknown mode, not a group, an exhaustive space above ``max_space``,
            or no candidate fits (the default strategy's error, naming the buffers).
    """
    if mode not in MODES:
        raise Tx8labError(f"unknown search mode {mode!r}; use one of {MODES}")
    if group.kind != "tx8be.Group" or not group.regions:
        raise Tx8labError(f"search needs a tx8be.Group op with a body, got {group.label}")
    start = time.perf_counter()
    outs = _outs(group, group_tile_budget(group, hw)) if mode != "default" else []
    size = _space_size(outs) if mode != "default" else 1
    if mode == "exhaustive" and size > max_space:
        raise Tx8labError(
            f"group %{group.id}: exhaustive search over {size} candidates exceeds "
            f"max_space={max_space}; use mode='search' or raise max_space"
        )
    rows: list[Candidate] = []
    seen: set[Any] = set()
    best: list[Candidate] = []
    pruned = 0
    stages = {
        "retract": retract,
        "multi_buffer": multi_buffer,
        "alloc": alloc,
        "alloc_time_limit_s": alloc_time_limit_s,
    }

    def snapshot(done: bool) -> SearchResult:
        return SearchResult(
            group.id,
            mode,
            tuple(rows),
            best[0] if best else None,
            size,
            pruned,
            time.perf_counter() - start,
            done,
        )

    def evaluate(
        level: int,
        sharding: str,
        depth: int,
        split: str,
        strategy: Strategy | None,
        si: ScheduleInput | None = None,
        error: str = "",
    ) -> Candidate:
        index = len(rows)
        if strategy is None:
            bad: Status = "spm-overflow" if "does not fit" in error else "invalid"
            cand = Candidate(index, level, sharding, depth, split, bad, error)
        elif _key(strategy) in seen:
            cand = Candidate(
                index, level, sharding, depth, split, "duplicate", "same strategy as before"
            )
        else:
            seen.add(_key(strategy))
            note = ""
            done: Scheduled | None
            try:
                done = run_stages(group, strategy, hw, si=si, **stages)  # type: ignore[arg-type]
            except Tx8labError as exc:
                text = str(exc)
                status: Status = "spm-overflow" if "does not fit" in text else "invalid"
                fixed = None
                if status == "spm-overflow":
                    limit = best[0].cycles if mode == "search" and best else None
                    fixed = _reduce_split_retry(group, strategy, hw, stages, limit, multi_buffer)
                if fixed is None:
                    done = None
                    cand = Candidate(index, level, sharding, depth, split, status, text)
                else:
                    done, strategy, note = fixed
                    seen.add(_key(strategy))
            if done is not None:
                cand = Candidate(
                    index,
                    level,
                    sharding,
                    depth,
                    split,
                    "OK",
                    note,
                    done.estimate.cycles,
                    int(done.allocation.peak),
                    strategy,
                )
        rows.append(cand)
        if cand.status == "OK" and (not best or (cand.cycles or 0) < (best[0].cycles or 0)):
            best[:] = [cand]
        return cand

    # the documented default first: today's result, and the first incumbent
    try:
        dflt: Strategy | None = default_strategy(
            group, hw, multi_buffer=multi_buffer, chips=chips.chips if chips else None
        )
        derr = ""
    except Tx8labError as exc:
        dflt, derr = None, str(exc)
    evaluate(-1, "default", -1, "default", dflt, error=derr)
    yield snapshot(mode == "default")
    if mode == "default":
        if not best:
            raise Tx8labError(rows[0].reason)
        return

    first = outs[0] if outs else None
    levels = first.levels if first is not None else []

    def build(li: int, vi: int, depth: int) -> tuple[Strategy | None, str, str]:
        assert first is not None
        outputs = {}
        try:
            for k, out in enumerate(outs):
                st = _op_strategy(out, li, vi if k == 0 else 0, depth)
                outputs[out.op.id] = param_for(out.op, st)
            prop = propagate(group, outputs, multi_buffer=multi_buffer)
        except Tx8labError as exc:
            return None, str(exc), ""
        split = prop.strategy.ops[first.op.id].split
        return with_chips(prop.strategy, chips), "", str(list(split))

    order: list[tuple[int, int]] = [
        (li, vi) for li, lv in enumerate(levels) for vi in range(len(lv.shardings))
    ]
    if mode == "search" and order:
        # the no-shard vector (the last of the last level) next: small groups often win
        # on one tile, and it gives the pruning an early incumbent
        order.insert(0, order.pop())
    out_of_time = False
    for li, level in [(-1, None), *enumerate(levels)]:
        if level is None and not (mode == "search" and order):
            continue
        assert first is not None
        level_pruned = True
        level_start = len(rows)
        todo = [(a, b) for a, b in order if a == li] if level is not None else order[:1]
        if level is not None and mode == "search" and order:
            todo = [(a, b) for a, b in todo if (a, b) != order[0]]
        for lj, vi in todo:
            vec = levels[lj].shardings[vi]
            n_depths = _depths(first, vec) + 1
            if out_of_time or (
                mode == "search" and best and time.perf_counter() - start > budget_s
            ):
                out_of_time = True
                pruned += n_depths
                continue
            if mode == "search" and best:
                strategy, _, _ = build(lj, vi, 0)
                if strategy is not None:
                    try:
                        bound = _busy_bound(
                            schedule_input(group, strategy, hw, multi_buffer=multi_buffer)
                        )
                    except Tx8labError:
                        bound = 0
                    if bound >= (best[0].cycles or 0):
                        pruned += n_depths
                        continue
            level_pruned = False
            low: int | None = None
            misses = 0
            for depth in range(n_depths):
                if mode == "search" and best and time.perf_counter() - start > budget_s:
                    out_of_time = True
                    pruned += n_depths - depth
                    break
                elapsed = time.perf_counter() - start
                if mode == "search" and not best and elapsed > NO_FIT_FACTOR * max(budget_s, 1):
                    raise Tx8labError(
                        f"group %{group.id}: no candidate fits in "
                        f"{hw.tile.spm_usable_bytes:,} B of usable SPM after {elapsed:.1f} s "
                        f"({len(rows)} of {size} candidates tried, the default strategy "
                        f"included: {rows[0].reason[:200]}); give the tile more SPM "
                        "(hw tile.spm_bytes), or raise search_budget_s to search longer"
                    )
                strategy, err, split = build(lj, vi, depth)
                si: ScheduleInput | None = None
                fresh = strategy is not None and _key(strategy) not in seen
                if mode == "search" and best and fresh and strategy is not None:
                    try:
                        si = schedule_input(group, strategy, hw, multi_buffer=multi_buffer)
                    except Tx8labError:
                        si = None
                    if si is not None and _busy_bound(si) >= (best[0].cycles or 0):
                        # this depth cannot win: skipped, and a miss of the walk
                        pruned += 1
                        misses += low is not None
                        if misses >= SPLIT_PATIENCE:
                            pruned += n_depths - depth - 1
                            break
                        continue
                cand = evaluate(
                    levels[lj].factor, str(list(vec)), depth, split, strategy, si=si, error=err
                )
                yield snapshot(False)
                if mode != "search":
                    continue
                if cand.status == "duplicate" or (cand.status != "OK" and low is None):
                    continue
                if cand.status == "OK" and (low is None or (cand.cycles or 0) < low):
                    low, misses = cand.cycles, 0
                    continue
                misses += 1
                if misses >= SPLIT_PATIENCE:
                    pruned += n_depths - depth - 1
                    break
        if level is None:
            continue
        improved = any(c.status == "OK" and c is best[0] for c in rows[level_start:])
        if mode == "search" and best and (level_pruned or not improved) and not out_of_time:
            # every vector of this level was pruned, or it did not beat the best: later
            # levels use fewer tiles
            rest = sum(_depths(first, levels[a].shardings[b]) + 1 for a, b in order[1:] if a > li)
            pruned += rest
            break
    if not best:
        reasons = "; ".join(sorted({c.reason.split(";")[0] for c in rows if c.reason}))[:600]
        raise Tx8labError(
            f"group %{group.id}: no candidate of {len(rows)} fits or is valid ({reasons})"
        )
    yield snapshot(True)


def search_group(
    group: Op,
    hw: ChipConfig,
    *,
    mode: str = "search",
    budget_s: float = 2.0,
    multi_buffer: int = 2,
    retract: bool = True,
    alloc: str = "seed",
    alloc_time_limit_s: float = 0.2,
    max_space: int = DEFAULT_MAX_SPACE,
    chips: ChipCut | None = None,
) -> SearchResult:
    """Run :func:`iter_search` to the end; the result with every candidate and the best.

    Raises:
        Tx8labError: as :func:`iter_search`.
    """
    results = iter_search(
        group,
        hw,
        mode=mode,
        budget_s=budget_s,
        multi_buffer=multi_buffer,
        retract=retract,
        alloc=alloc,
        alloc_time_limit_s=alloc_time_limit_s,
        max_space=max_space,
        chips=chips,
    )
    last = next(results)
    for last in results:  # noqa: B007 - the last one is the answer
        pass
    return last


# ---------------------------------------------------------------- template cache


#: Attributes that name or hold data, not structure: a constant's id and payload.
_DATA_ATTRS = frozenset({"const_id", "value"})


def _attr_text(value: Any) -> str:
    return repr(value)


def template_key(group: Op) -> tuple[Any, ...]:
    """The group's structure and shapes, without ids (module docstring)."""
    body = [op for op in group.regions[0].ops]
    pos = {op.id: i for i, op in enumerate(body)}
    external: dict[tuple[int, int, bool], int] = {}
    items: list[Any] = []
    for op in body:
        wiring = []
        for v in op.operands:
            if not v.is_arg and v.owner in pos:
                wiring.append(("op", pos[v.owner], v.index))
            else:
                wiring.append(("in", external.setdefault(v.key, len(external)), v.index))
        items.append(
            (
                op.kind,
                tuple(
                    sorted((k, _attr_text(a)) for k, a in op.attrs.items() if k not in _DATA_ATTRS)
                ),
                tuple((v.type.shape, v.type.dtype) for v in op.operands),
                tuple((v.type.shape, v.type.dtype) for v in op.results),
                tuple(wiring),
                bool(op.regions),
            )
        )
    return tuple(items)


def _positions(group: Op) -> list[int]:
    return [op.id for op in group.regions[0].ops if op.kind not in TERMINATORS]


@dataclass
class TemplateCache:
    """Search results of groups by :func:`template_key` (and the search settings)."""

    entries: dict[Any, tuple[dict[int, OpStrategy], int]] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    payloads: dict[Any, Any] = field(default_factory=dict)
    """Whatever the caller stored with a winner (group-cost: the template's schedule)."""

    @property
    def hit_rate(self) -> float:
        """Hits over lookups (0 when nothing was looked up)."""
        n = self.hits + self.misses
        return self.hits / n if n else 0.0

    def lookup(self, group: Op, settings: tuple[Any, ...]) -> Strategy | None:
        """The cached winner mapped onto ``group``'s ids, or None (counted as a miss)."""
        return self._lookup(group, (template_key(group), settings))

    def lookup_payload(self, group: Op, settings: tuple[Any, ...]) -> tuple[Strategy, Any] | None:
        """:meth:`lookup` plus the payload stored with the winner (a hit or a miss counted)."""
        key = (template_key(group), settings)
        strategy = self._lookup(group, key)
        if strategy is None:
            return None
        return strategy, self.payloads.get(key)

    def _lookup(self, group: Op, key: Any) -> Strategy | None:
        got = self.entries.get(key)
        if got is None:
            self.misses += 1
            return None
        self.hits += 1
        by_pos, mb = got
        ids = _positions(group)
        return Strategy({ids[p]: st for p, st in by_pos.items()}, mb)

    def store(
        self, group: Op, settings: tuple[Any, ...], strategy: Strategy, payload: Any = None
    ) -> None:
        """Remember ``strategy`` (the winner for ``group``) by body position."""
        index = {op_id: p for p, op_id in enumerate(_positions(group))}
        by_pos = {index[k]: v for k, v in strategy.ops.items()}
        key = (template_key(group), settings)
        self.entries[key] = (by_pos, strategy.multi_buffer)
        if payload is not None:
            self.payloads[key] = payload


def pareto_front(points: Mapping[int, tuple[int, int]]) -> list[int]:
    """Keys of ``{key: (cycles, spm)}`` on the cycles-vs-SPM Pareto front, by cycles."""
    front: list[int] = []
    low = math.inf
    for key, (_, spm) in sorted(points.items(), key=lambda kv: (kv[1], kv[0])):
        if spm < low:
            front.append(key)
            low = spm
    return front


__all__ = [
    "DEFAULT_MAX_SPACE",
    "MODES",
    "NO_FIT_FACTOR",
    "REDUCE_RETRIES",
    "SPLIT_PATIENCE",
    "Candidate",
    "Scheduled",
    "SearchResult",
    "TemplateCache",
    "iter_search",
    "pareto_front",
    "run_stages",
    "search_group",
    "space_size",
    "template_key",
]
