"""The strategy search of group-cost: candidates, statuses, the best cost.

Spec: seed 001 "GroupCostPass" (for each candidate of DataSplitNew: data-split ->
TS_SwPipeline -> SPMAlloc -> estimate; SPM overflow and invalid candidates are dropped; the
best cost is kept) and "DataSplitNewPass" (the candidates: the output ops' sharding levels
best first, then DS_TileSplit's split tries, DS_SlicePropagate to the whole group). Each
candidate goes through the recorded group pipeline (:func:`~tx8lab.core.schedule.stages.run_group`),
and an OK candidate keeps its :class:`~tx8lab.core.schedule.stages.GroupRun`.
:func:`schedule_group` is group-cost's choice per mode (what the pass and the group tuner
call).

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
- ``search``: the seed's order with pruning and a work budget (rules below).

Readings chosen where the seed is vague:

- **Several output ops.** The first output op (program order) carries the candidate; every
  other output op takes the vector of its own levels at the same level index (clamped to
  its last level) and the same split depth (clamped to its tries). One vector per group
  keeps the space linear in the first op's choices instead of a product over outputs.
- **Statuses.** ``invalid``: the op library or slicing refuses the strategy (e.g. two
  linked dims split by different factors) — the reason is its error text;
  ``spm-overflow``: an :class:`~tx8lab.errors.SpmOverflow` (slicing or the allocator cannot
  place the buffers in ``tile.spm_usable_bytes``);
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
  live bytes exceed the SPM and first fit overflows, ``best`` (branch and bound, limited to
  ``alloc_nodes`` nodes, capped at ``alloc_time_limit_s``) decides; only when both fail is
  the status ``spm-overflow``. The chosen candidate's allocation is made again with the
  caller's allocator for the report (:func:`schedule_group`; its stages before spm-alloc
  are reused).
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
- **Plan cut** (``search``): a depth that passes that bound and whose buffers' live bytes
  fit the SPM runs sw-pipeline first; when its plan cycles are not below the
  ``simulate_top``-th best plan so far (the best without a timer) it cannot be among the
  candidates the simulator plays, nor the plan's best, so buffer-life, buffer-merge and
  spm-alloc are skipped: it counts as ``pruned``, not evaluated, and the split walk goes
  on as if it were an OK candidate of those cycles. So the result, the walk and the
  candidates played are those without the cut. Not cut: a plain candidate while ``noc``
  is on (the shared-loads twins come from the plain ones the plan ranks best among
  themselves), and a candidate whose live bytes exceed the SPM (its allocation may
  overflow, and the reduction-split retry below may then find another strategy). On
  resnet50 with ``noc`` it skips 555 of the 861 K-sharded candidates that reach it:
  their plan is about twice their busiest engine (the all-reduce of a chunk waits for
  its last partial, and the store for the all-reduce), so the bound lets them through.
- **Budget**: ``budget`` candidates evaluated (run through the stages; duplicates and
  pruned ones are not), checked between candidates; the search stops when it is spent
  *and* an ``OK`` candidate exists (a group is never left without a schedule by the
  budget). A budget of work, not seconds, so the same group gives the same result on a
  loaded machine (DESIGN: budgets count work); ``budget_s`` is a wall-clock cap on top,
  for interactive use, and makes the result load-dependent only when it ends the search
  first. With no ``OK`` candidate after ``NO_FIT_FACTOR`` times either budget (the
  clock's at least 1 s) it stops with an error that names the group and the SPM (a tiny
  SPM made a search run for minutes before).
- **Chips** (``chips``: group-cost's ``dp``/``tp``, a
  :class:`~tx8lab.core.schedule.chip_cuts.ChipCut`): every candidate, the default included,
  carries the group's chip cut (``OpStrategy.chips``); the tiles share one chip's piece.
  The sharding levels stay those of the whole tensors (not recomputed per chip piece).
- **NoC reductions** (``noc=True``, group-cost's ``noc`` knob; seed SecsInfo sharding
  modes 1-3). After the levels above, the walk runs again for each width ``k`` of
  :func:`noc_ways_of` (2, 4, 8, 16 while it divides the group's tiles and some
  ``noc_reduce`` dim is that long): the output op's levels over ``tiles / k`` tiles,
  each candidate propagated as usual and then every op with a ``noc_reduce`` dim (a
  matmul's K, a conv's IC) sharded by ``k`` on it (:func:`noc_sharded`): each tile sums
  a ``1/k`` share and the tiles all-reduce the partials over the NoC (slicing's ``noc``
  task). Their rows say ``K/k`` after the vector and ``comm == "k-reduce"``; pruning,
  the budget and the level rules apply as to any candidate, and the space counts them.
  Producers of a K-sharded operand are not asked to cut K (they compute it whole and
  each tile reads its share).
- **Gathers** (``noc=True``; slicing's **Gathers**). For each width ``k`` of
  :func:`~tx8lab.core.schedule.slicing.gather_ways_of` (2, 4, 8, 16 while it divides the
  tiles and some dim that a compute op produces and another reads whole is that long),
  the walk runs again as for a NoC reduction width: the output op's levels over
  ``tiles / k`` tiles, propagated, then each such dim sharded ``k`` ways on every op that
  has it (:func:`~tx8lab.core.schedule.slicing.gather_sharded`), so the tiles all-gather
  the pieces for the reader instead of each computing the whole. Rows say ``G/k`` and
  ``comm == "gather"``. The widths run narrowest first, a width's gathers before its
  reductions, so a budget spent on one kind leaves the other its narrow widths.
- **Halos.** The split walk keeps whole in time each output op's dims whose chunks would
  read overlapping parts of what an op of the group computes (:func:`halo_dims`: a 3 x 3
  pool over a Relu), which slicing refuses (its **Exchanges**: a halo across a loop);
  otherwise the walk's later depths, which only add splits, would all be refused too.
  Between tiles a halo is copied (``comm == "exchange"``) whatever the candidate.
- **Shared loads** (``noc=True``). Then the ``SHARE_TOP`` plain candidates the plan ranks
  best (every OK plain one in ``exhaustive``) among those some load of which several
  tiles read alike (``slicing.replicates_a_load``) run again with ``Strategy.share``: slicing
  shares each load whose chunk plus all-gather beats every tile loading it (slicing's
  **Shared loads**). A twin where no load is worth sharing is a ``duplicate``; the others
  say ``comm == "share"``. The space counts a twin per plain candidate; a twin not run
  (its plain candidate did not fit, reads no load alike, or is not among the
  ``SHARE_TOP``) counts as ``pruned``.
- **Memory.** Every OK candidate keeps its run (timeline, lifetimes, packing), so the
  factor-space view shows any candidate without scheduling it again.
- **Simulated ranking** (issue 19: one tile model for every figure). The walk, its
  pruning and its split patience rank candidates by the plan (the lock-step timeline's
  cycles), which costs no command stream. With a ``timer`` (the program layer's
  ``tx8lab.core.simulate.simulate_schedule``), the ``simulate_top`` OK candidates the
  plan ranks best (``search``; every OK candidate in ``exhaustive``), and the default
  strategy, are then played by the tile simulator on the search's own packing, and the
  best *simulated* one is the result. Their ``cycles`` are simulated and ``plan_cycles``
  keeps the plan's. So among the candidates simulated, the result is never slower than
  the default strategy, and ``exhaustive``'s never slower than ``search``'s.
  :func:`schedule_group` packs the result again with the caller's allocator and
  simulates that packing (what group-cost reports): a different packing can add or
  remove false dependencies (two buffers sharing bytes), so that figure may differ a
  little from the ranked one. ``plan_best`` is the plan's choice, so a view (and
  ``make bench``) can show how often the two rankings disagree. Without a timer the
  plan decides, as the seed's GroupCost does; a candidate the program layer cannot
  build commands for is left unsimulated (and the plan decides when none could be).
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from tx8lab._bulk import gc_paused
from tx8lab.core.attrs import TAG_DDR
from tx8lab.core.grouping import is_compute
from tx8lab.core.ir import TERMINATORS, Op, TensorType
from tx8lab.core.ops import get_op_def
from tx8lab.core.ops.registry import effective_split
from tx8lab.core.schedule.chip_cuts import ChipCut, with_chips
from tx8lab.core.schedule.estimate import estimate_group
from tx8lab.core.schedule.sharding import (
    PropagateCache,
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
    SliceCache,
    default_schedule,
    default_strategy,
    engine_busy_cycles,
    gather_sharded,
    gather_ways_of,
    group_tile_budget,
    noc_widths,
    replicates_a_load,
    schedule_live_bytes,
    unsplit_strategy,
)
from tx8lab.core.schedule.stages import (
    GroupRun,
    GroupTimer,
    StageRecord,
    StageSettings,
    run_group,
)
from tx8lab.core.schedule.sw_pipeline import DEFAULT_MAX_INSTANCES
from tx8lab.core.schedule.tasks import NocReduce, OpStrategy, ScheduleInput, Strategy
from tx8lab.errors import SpmOverflow, Tx8labError
from tx8lab.hw.config import ChipConfig

if TYPE_CHECKING:
    import pandas as pd

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

#: OK candidates the plan ranks best that the tile simulator then plays (with a timer).
SIMULATE_TOP = 3
#: Plain candidates (the plan's best) tried again with shared loads when ``noc`` is on.
SHARE_TOP = 3
#: The reason of a shared-loads twin where no load was worth sharing (run, then dropped).
NO_SHARE = "no load is worth sharing: the plain candidate's schedule"

#: Candidates a ``search`` evaluates before it stops (once one fits). The zoo's largest
#: search (a resnet50 conv group) evaluates 81, so the budget ends none of the zoo's.
SEARCH_BUDGET = 200

#: Work budget of the ``best`` fallback per candidate (branch-and-bound nodes): the
#: fallback needs a packing that fits, not the lowest peak.
SEARCH_ALLOC_NODES = 100_000


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
    """The simulated cycles when ``simulated``, else the plan's."""
    spm_peak_bytes: int | None = None
    strategy: Strategy | None = field(default=None, repr=False, compare=False)
    run: GroupRun | None = field(default=None, repr=False, compare=False)
    """The stages' records of an OK candidate (views read them instead of re-running)."""
    plan_cycles: int | None = None
    """The plan's cycles (the lock-step timeline's makespan) of an OK candidate."""
    simulated: bool = False
    """Played by the tile simulator (module docstring, "Simulated ranking")."""
    comm: str = "none"
    """``k-reduce`` when its reduction dims are sharded across tiles (module docstring,
    "NoC reductions"), ``gather`` when dims read whole are sharded and all-gathered
    ("Gathers"), ``exchange`` when its tiles pass their readers halo pieces (slicing's
    **Exchanges**), ``share`` when some load is shared over the NoC ("Shared loads"), else
    ``none``."""


def comm_kind(group: Op, reductions: Mapping[int, NocReduce]) -> str:
    """What a schedule's tiles send each other (``Candidate.comm``, the report's ``comm``).

    ``k-reduce`` (an all-reduce of partial sums), else ``gather`` (a compute op's pieces
    all-gathered), else ``exchange`` (halo pieces), else ``share`` (a shared load's
    all-gather), else ``none``.
    """
    kinds = {r.collective for r in reductions.values()}
    if "all-reduce" in kinds:
        return "k-reduce"
    computed = {op.id for op in group.regions[0].ops if is_compute(op)}
    if any(k in computed and r.collective == "all-gather" for k, r in reductions.items()):
        return "gather"
    if "exchange" in kinds:
        return "exchange"
    return "share" if reductions else "none"


def _evaluated(rows: Sequence[Candidate]) -> int:
    """Candidates of ``rows`` run through the stages.

    A duplicate is not re-run, but a shared-loads twin that shared nothing was.
    """
    return sum(c.status != "duplicate" or c.reason == NO_SHARE for c in rows)


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
    plan_best: Candidate | None = None
    """The candidate the plan ranks best (``best`` when nothing was simulated)."""
    clock_capped: bool = False
    """The wall-clock cap (``budget_s``) ended the search before the work budget
    (``budget`` candidates) was spent: another machine may find another best."""

    @property
    def simulated(self) -> int:
        """Candidates played by the tile simulator."""
        return sum(c.simulated for c in self.candidates)

    @property
    def plan_agrees(self) -> bool:
        """Whether the plan's best is the simulator's best (always, when none simulated)."""
        plan = self.plan_best if self.plan_best is not None else self.best
        return plan is None or self.best is None or plan.index == self.best.index

    @property
    def evaluated(self) -> int:
        """Candidates run through the stages (duplicates excluded)."""
        return _evaluated(self.candidates)

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
        import pandas as pd  # only views ask for a frame: the pipeline does not import it

        cols = [
            "index",
            "level",
            "sharding",
            "depth",
            "split",
            "cycles",
            "plan_cycles",
            "simulated",
            "spm_peak_bytes",
            "comm",
        ]
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
    whole: tuple[int, ...] = ()
    """Dims the split walk keeps whole in time (:func:`halo_dims`)."""
    tries: dict[tuple[int, ...], list[SplitTry]] = field(default_factory=dict, compare=False)
    """split_tries by iteration shard, computed once per vector (every depth reads them)."""

    def split_tries(self, shard: tuple[int, ...]) -> list[SplitTry]:
        got = self.tries.get(shard)
        if got is None:
            got = self.tries[shard] = split_tries(self.op, shard, whole=self.whole)
        return got


def halo_dims(group: Op, op: Op) -> tuple[int, ...]:
    """Iteration dims of ``op`` whose consecutive chunks read overlapping parts of a value.

    A value a compute op of the group produces (a pool's or conv's window over a Relu).
    Split in time, chunk ``c`` would read what chunk ``c - 1`` of the producer computed,
    which slicing refuses (its **Exchanges**); the walk keeps them whole instead. Read
    from the op library's windows of two consecutive one-element boxes.
    """
    computed = {o.id for o in group.regions[0].ops if is_compute(o)}
    defn = get_op_def(op.kind)
    dims = defn.iter_dims(op)
    out = []
    for i, d in enumerate(dims):
        if d.size < 3:
            continue
        for j, v in enumerate(op.operands):
            if v.is_arg or v.owner not in computed:
                continue
            base = [(0, x.size) for x in dims]
            first, second = list(base), list(base)
            first[i], second[i] = (1, 2), (2, 3)
            a = defn.operand_window(op, j, tuple(first))
            b = defn.operand_window(op, j, tuple(second))
            if any(x != y and x[1] > y[0] for x, y in zip(a, b, strict=True)):
                out.append(i)
                break
    return tuple(out)


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
                halo_dims(group, op),
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


def space_size(group: Op, hw: ChipConfig, *, noc: bool = False) -> int:
    """Candidates of ``group``: the default plus (vector, depth) pairs of its first output.

    ``noc``: plus those of each NoC reduction width, and the shared-loads twin of each
    plain one (module docstring).
    """
    tiles = group_tile_budget(group, hw)
    outs = _outs(group, tiles)
    return _space_size(outs, _comm_outs(group, tiles) if noc and outs else {}, share=noc)


Comm = tuple[Literal["k-reduce", "gather"], int]
"""A kind of communicating candidate and its width: tiles per reduction or gather group."""


def _comm_outs(group: Op, tiles: int, cache: SliceCache | None = None) -> dict[Comm, list[_Out]]:
    """(kind, width) -> the output ops' levels over ``tiles / width`` tiles.

    Width by width, narrowest first, a width's gathers before its reductions (module
    docstring): a budget spent on one kind leaves the other its narrow widths.
    """
    kinds: list[Comm] = [("k-reduce", k) for k in noc_ways_of(group, tiles)]
    kinds += [("gather", k) for k in gather_ways_of(group, tiles, cache)]
    return {c: _outs(group, tiles // c[1]) for c in sorted(kinds, key=lambda c: (c[1], c[0]))}


def _space_size(
    outs: list[_Out], comm: Mapping[Comm, list[_Out]] | None = None, *, share: bool = False
) -> int:
    """The default plus every (vector, depth) of ``outs``, and of each width's in ``comm``.

    ``share``: twice the plain ones (each has a shared-loads twin).
    """
    if not outs:
        return 1
    first = outs[0]
    own = 1 + sum(_depths(first, v) + 1 for lv in first.levels for v in lv.shardings)
    twins = own if share else 0
    return own + twins + sum(_space_size(more) - 1 for more in (comm or {}).values())


# ---------------------------------------------------------------- one candidate


def _data_split(
    group: Op,
    strategy: Strategy,
    hw: ChipConfig,
    settings: StageSettings,
    cache: SliceCache | None = None,
) -> StageRecord:
    """The first stage alone: its busiest engine bounds every deeper stage's makespan."""
    return run_group(group, strategy, hw, settings, until="data-split", cache=cache).records[0]


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
    return Strategy(ops, strategy.multi_buffer, strategy.share) if changed else None


def _reduce_split_retry(
    group: Op,
    strategy: Strategy,
    hw: ChipConfig,
    settings: StageSettings,
    limit: int | None,
    cache: SliceCache | None = None,
) -> tuple[GroupRun, str] | None:
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
            first = _data_split(group, current, hw, settings, cache)
            if limit is not None and _busy_bound(first.output) >= limit:
                return None
            room = 2 * hw.tile.spm_usable_bytes
            if schedule_live_bytes(first.output, settings.multi_buffer) > room:
                continue  # far from fitting: split again before running the pipeline
            run = run_group(group, current, hw, settings, reuse=(first,), cache=cache)
        except SpmOverflow:
            continue
        except Tx8labError:
            return None
        splits = sorted(
            {
                f"%{k} {list(v.split)}"
                for k, v in current.ops.items()
                if v.split != strategy.ops[k].split
            }
        )
        return run, f"reduce split x{2**step} to fit: {', '.join(splits)}"
    return None


def _busy_bound(si: ScheduleInput) -> int:
    return max(engine_busy_cycles(si).values(), default=0)


def _key(strategy: Strategy) -> tuple[Any, ...]:
    ops = tuple(sorted((k, v.shard, v.split, v.chips) for k, v in strategy.ops.items()))
    return (*ops, strategy.share)


#: The row label of a communicating candidate: its vector, then ``K/k`` or ``G/k``.
COMM_LABEL = {"k-reduce": "K", "gather": "G"}


def noc_ways_of(group: Op, tiles: int) -> list[int]:
    """The NoC reduction widths a search tries (module docstring, "NoC reductions").

    Powers of two dividing ``tiles`` that some op's ``noc_reduce`` dim is as long as.
    """
    longest = 0
    for op in group.regions[0].ops:
        if op.kind in TERMINATORS or not is_compute(op):
            continue
        for d in get_op_def(op.kind).iter_dims(op):
            if d.noc_reduce:
                longest = max(longest, d.size)
    return noc_widths(longest, tiles)


def noc_sharded(group: Op, strategy: Strategy, ways: int) -> Strategy:
    """``strategy`` with each op's first ``noc_reduce`` dim sharded by ``ways``.

    Its split is brought down to the chunks that hold data.

    Raises:
        Tx8labError: an op's dim is shorter than ``ways`` (naming it).
    """
    if ways <= 1:
        return strategy
    body = {op.id: op for op in group.regions[0].ops}
    ops = dict(strategy.ops)
    for k, st in strategy.ops.items():
        op = body[k]
        dims = get_op_def(op.kind).iter_dims(op)
        i = next((i for i, d in enumerate(dims) if d.noc_reduce), None)
        if i is None:
            continue
        if dims[i].size < ways:
            raise Tx8labError(
                f"{op.label}: dim {dims[i].name} (size {dims[i].size}) is shorter than the "
                f"{ways} tiles its partial sums would be spread over"
            )
        shard = tuple(ways if j == i else s for j, s in enumerate(st.shard))
        split = tuple(
            effective_split(dims[j].size, ways, q) if j == i else q for j, q in enumerate(st.split)
        )
        ops[k] = OpStrategy(shard, split, st.chips)
    return Strategy(ops, strategy.multi_buffer, strategy.share)


# ---------------------------------------------------------------- the search


#: A candidate as :meth:`_Search.build` gives it, its busy bound and its data-split record.
_Head = tuple[tuple[Strategy | None, Tx8labError | None, str], int, StageRecord | None]


class _Search:
    """The state of one search: the candidates so far, the best, what was pruned.

    The walk is split in the seed's order: :meth:`default_first` (the documented default),
    then :meth:`levels` over the sharding levels, each vector's depths by
    :meth:`split_walk`; every candidate goes through :meth:`evaluate`.
    """

    def __init__(
        self,
        group: Op,
        hw: ChipConfig,
        mode: str,
        budget_s: float,
        settings: StageSettings,
        chips: ChipCut | None,
        timer: GroupTimer | None = None,
        simulate_top: int = SIMULATE_TOP,
        budget: int | None = SEARCH_BUDGET,
        noc: bool = False,
    ) -> None:
        self.group, self.hw, self.mode, self.budget_s = group, hw, mode, budget_s
        self.budget = budget
        self.settings, self.chips = settings, chips
        self.timer, self.simulate_top = timer, simulate_top
        self.plan_best: Candidate | None = None
        self.start = time.perf_counter()
        self.cache = SliceCache(group)
        """data-split's view of the group, shared by every candidate."""
        self.propagation = PropagateCache(group)
        """propagate's view of the group, shared by every candidate."""
        tiles = group_tile_budget(group, hw)
        self.outs = _outs(group, tiles) if mode != "default" else []
        self.ways = 1
        """Tiles per NoC reduction (gather) group of the candidates being built (1: none)."""
        self.kind: Literal["k-reduce", "gather"] = "k-reduce"
        """What the candidates being built send over the NoC when ``ways > 1``."""
        self.tiles = tiles
        self.comm = _comm_outs(group, tiles, self.cache) if noc and self.outs else {}
        self.noc = noc and bool(self.outs)
        self.size = _space_size(self.outs, self.comm, share=self.noc) if mode != "default" else 1
        self.rows: list[Candidate] = []
        self.seen: set[Any] = set()
        self.best: Candidate | None = None
        self.pruned = 0
        self.out_of_time = False
        # the wall-clock cap ended the search before the work budget was spent
        self.clock_capped = False

    # -- bookkeeping
    def snapshot(self, done: bool) -> SearchResult:
        return SearchResult(
            self.group.id,
            self.mode,
            tuple(self.rows),
            self.best,
            self.size,
            self.pruned,
            time.perf_counter() - self.start,
            done,
            plan_best=self.plan_best,
            clock_capped=self.clock_capped,
        )

    def simulate_best(self) -> None:
        """Play the plan's ``simulate_top`` best and the default; the simulated best wins."""
        self.plan_best = self.best
        if self.timer is None or self.best is None:
            return
        ok = [c for c in self.rows if c.status == "OK" and c.run is not None]
        ranked = sorted(ok, key=lambda c: (c.cycles or 0, c.index))
        if self.mode != "exhaustive":
            ranked = ranked[: max(self.simulate_top, 1)]
        if ok[0].sharding == "default" and ok[0] not in ranked:
            ranked.append(ok[0])
        for cand in ranked:
            assert cand.run is not None
            run = run_group(
                self.group,
                cand.run.strategy,
                self.hw,
                self.settings,
                reuse=cand.run.before("simulate"),
                timer=self.timer,
                cache=self.cache,
            )
            if run.simulated is None:
                continue  # no command stream (the simulate record says why)
            played = dataclasses.replace(cand, cycles=run.estimate.cycles, run=run, simulated=True)
            self.rows[cand.index] = played
        simulated = [c for c in self.rows if c.simulated]
        if simulated:
            self.best = min(simulated, key=lambda c: (c.cycles or 0, c.index))
        if self.plan_best is not None:
            self.plan_best = self.rows[self.plan_best.index]

    @property
    def searching(self) -> bool:
        """``search`` mode with an incumbent: pruning and the budget apply."""
        return self.mode == "search" and self.best is not None

    def best_cycles(self) -> int:
        return (self.best.cycles or 0) if self.best is not None else 0

    def evaluated(self) -> int:
        return _evaluated(self.rows)

    def spent(self) -> bool:
        if not self.searching:
            return False
        if self.budget is not None and self.evaluated() >= self.budget:
            return True
        if time.perf_counter() - self.start > self.budget_s:
            self.clock_capped = True
            return True
        return False

    # -- one candidate
    def evaluate(
        self,
        where: tuple[int, str, int, str],
        strategy: Strategy | None,
        reuse: Sequence[StageRecord] = (),
        error: Tx8labError | None = None,
    ) -> Candidate:
        """Run ``strategy`` through the stages and record its status (module docstring).

        ``reuse``: the records of its first stages the walk already ran.
        """
        index = len(self.rows)
        if strategy is None:
            assert error is not None
            bad: Status = "spm-overflow" if isinstance(error, SpmOverflow) else "invalid"
            cand = Candidate(index, *where, bad, str(error))
        elif _key(strategy) in self.seen:
            cand = Candidate(index, *where, "duplicate", "same strategy as before")
        else:
            self.seen.add(_key(strategy))
            cand = self._run(index, where, strategy, reuse)
        if self.ways > 1:
            cand = dataclasses.replace(cand, comm=self.kind)
        elif cand.run is not None and cand.run.input.reductions:
            cand = dataclasses.replace(cand, comm=comm_kind(self.group, cand.run.input.reductions))
        self.rows.append(cand)
        if cand.status == "OK" and (self.best is None or (cand.cycles or 0) < self.best_cycles()):
            self.best = cand
        return cand

    def _run(
        self,
        index: int,
        where: tuple[int, str, int, str],
        strategy: Strategy,
        reuse: Sequence[StageRecord],
    ) -> Candidate:
        note = ""
        try:
            run = run_group(
                self.group,
                strategy,
                self.hw,
                self.settings,
                reuse=reuse,
                cache=self.cache,
            )
        except SpmOverflow as exc:
            # the seed's reduceSplit: a producer's K is never split by propagation
            limit = self.best_cycles() if self.searching else None
            fixed = _reduce_split_retry(
                self.group, strategy, self.hw, self.settings, limit, self.cache
            )
            if fixed is None:
                return Candidate(index, *where, "spm-overflow", str(exc))
            run, note = fixed
            self.seen.add(_key(run.strategy))
        except Tx8labError as exc:
            return Candidate(index, *where, "invalid", str(exc))
        return Candidate(
            index,
            *where,
            "OK",
            note,
            run.estimate.cycles,
            int(run.allocation.peak),
            run.strategy,
            run,
            plan_cycles=run.estimate.plan_cycles,
        )

    # -- the walk
    def default_first(self) -> None:
        """The documented default: today's result, and the first incumbent."""
        try:
            dflt: Strategy | None = default_strategy(
                self.group,
                self.hw,
                multi_buffer=self.settings.multi_buffer,
                chips=self.chips.chips if self.chips else None,
            )
            error = None
        except Tx8labError as exc:
            dflt, error = None, exc
        self.evaluate((-1, "default", -1, "default"), dflt, error=error)

    def build(
        self, li: int, vi: int, depth: int
    ) -> tuple[Strategy | None, Tx8labError | None, str]:
        """Candidate (level ``li``, vector ``vi``, ``depth``) propagated to the whole group."""
        first = self.outs[0]
        outputs = {}
        try:
            for k, out in enumerate(self.outs):
                st = _op_strategy(out, li, vi if k == 0 else 0, depth)
                outputs[out.op.id] = param_for(out.op, st)
            prop = propagate(
                self.group,
                outputs,
                multi_buffer=self.settings.multi_buffer,
                cache=self.propagation,
            )
            strategy = (
                noc_sharded(self.group, prop.strategy, self.ways)
                if self.kind == "k-reduce"
                else gather_sharded(self.group, prop.strategy, self.ways, self.tiles, self.cache)
            )
        except Tx8labError as exc:
            return None, exc, ""
        split = strategy.ops[first.op.id].split
        return with_chips(strategy, self.chips), None, str(list(split))

    def shared(self) -> Iterator[SearchResult]:
        """The plain walk's best again with loads shared (module docstring, "Shared loads")."""
        if not self.noc:
            return
        plain = sorted(
            (c for c in self.rows if c.status == "OK" and c.comm == "none" and c.strategy),
            key=lambda c: (c.cycles or 0, c.index),
        )
        plain = [c for c in plain if c.strategy and replicates_a_load(self.group, c.strategy)]
        todo = []
        for c in plain if self.mode == "exhaustive" else plain[:SHARE_TOP]:
            assert c.strategy is not None
            strategy = dataclasses.replace(c.strategy, share=True)
            if _key(strategy) not in self.seen:
                self.seen.add(_key(strategy))
                todo.append((c, strategy))
        # the space counts a twin per plain slot: those not run are pruned
        self.pruned += _space_size(self.outs) - len(todo)
        for c, strategy in todo:
            where = (c.level, c.sharding, c.depth, c.split)
            cand = self._run(len(self.rows), where, strategy, ())
            if cand.status == "OK":
                gathers = cand.run.input.reductions.values() if cand.run is not None else ()
                if any(r.collective == "all-gather" for r in gathers):
                    cand = dataclasses.replace(cand, comm="share")
                else:  # the same schedule as the plain candidate
                    cand = dataclasses.replace(cand, status="duplicate", reason=NO_SHARE, run=None)
            self.rows.append(cand)
            if cand.status == "OK" and (cand.cycles or 0) < self.best_cycles():
                self.best = cand
            yield self.snapshot(False)

    def comm_levels(self) -> Iterator[SearchResult]:
        """The levels again for each NoC reduction width (module docstring)."""
        plain = self.outs
        for (kind, ways), outs in self.comm.items():
            self.outs, self.ways, self.kind = outs, ways, kind
            yield from self.levels()
        self.outs, self.ways, self.kind = plain, 1, "k-reduce"

    def rank_cut(self) -> int | None:
        """The plan cycles a new candidate must beat to matter (module docstring, "Plan cut").

        The ``simulate_top``-th best OK plan so far (the best without a timer); None while
        fewer are known.
        """
        k = max(self.simulate_top, 1) if self.timer is not None else 1
        ok = sorted(c.cycles or 0 for c in self.rows if c.status == "OK")
        return ok[k - 1] if len(ok) >= k else None

    def plan_cut(
        self, strategy: Strategy, first: StageRecord
    ) -> tuple[int | None, tuple[StageRecord, ...]]:
        """The plan cycles of ``strategy`` when they cannot matter, else None; the records.

        Only a k-reduce candidate (or any, with ``noc`` off: the shared-loads twins are
        made from plain candidates the plan ranks best among their own) whose buffers'
        live bytes fit the SPM is cut: an overflowing one takes the reduction-split retry
        as before.
        """
        cut = self.rank_cut()
        if cut is None or (self.noc and self.ways == 1):
            return None, (first,)
        if schedule_live_bytes(first.output, self.settings.multi_buffer) > (
            self.hw.tile.spm_usable_bytes
        ):
            return None, (first,)
        try:
            head = run_group(
                self.group,
                strategy,
                self.hw,
                self.settings,
                until="sw-pipeline",
                reuse=(first,),
                cache=self.cache,
            )
        except Tx8labError:
            return None, (first,)
        plan = estimate_group(head.timeline).cycles
        return (plan if plan >= cut else None), head.records

    def bound(self, strategy: Strategy) -> tuple[int, StageRecord | None]:
        """The busiest engine of data-split (0 when slicing refuses) and its record."""
        try:
            first = _data_split(self.group, strategy, self.hw, self.settings, self.cache)
        except Tx8labError:
            return 0, None
        return _busy_bound(first.output), first

    def order(self) -> list[tuple[int, int]]:
        levels = self.outs[0].levels if self.outs else []
        order = [(li, vi) for li, lv in enumerate(levels) for vi in range(len(lv.shardings))]
        if self.mode == "search" and order:
            # the no-shard vector (the last of the last level) next: small groups often win
            # on one tile, and it gives the pruning an early incumbent
            order.insert(0, order.pop())
        return order

    def levels(self) -> Iterator[SearchResult]:
        """Every level (best first), each vector's split walk; ends a level that does not pay."""
        first = self.outs[0] if self.outs else None
        levels = first.levels if first is not None else []
        order = self.order()
        for li, level in [(-1, None), *enumerate(levels)]:
            if level is None and not (self.mode == "search" and order):
                continue
            assert first is not None
            level_pruned = True
            level_start = len(self.rows)
            todo = [(a, b) for a, b in order if a == li] if level is not None else order[:1]
            if level is not None and self.mode == "search" and order:
                todo = [(a, b) for a, b in todo if (a, b) != order[0]]
            for lj, vi in todo:
                vec = levels[lj].shardings[vi]
                n_depths = _depths(first, vec) + 1
                if self.out_of_time or self.spent():
                    self.out_of_time = True
                    self.pruned += n_depths
                    continue
                head: _Head | None = None
                if self.searching:
                    built = self.build(lj, vi, 0)
                    if built[0] is not None:
                        bound, record = self.bound(built[0])
                        if bound >= self.best_cycles():
                            self.pruned += n_depths
                            continue
                        # depth 0 of the walk is this candidate: built and sliced once
                        head = (built, bound, record)
                level_pruned = False
                yield from self.split_walk(levels[lj].factor, lj, vi, vec, n_depths, head)
            if level is None:
                continue
            improved = any(c.status == "OK" and c is self.best for c in self.rows[level_start:])
            if self.searching and (level_pruned or not improved) and not self.out_of_time:
                # every vector of this level was pruned, or it did not beat the best: later
                # levels use fewer tiles
                self.pruned += sum(
                    _depths(first, levels[a].shardings[b]) + 1 for a, b in order[1:] if a > li
                )
                break

    def split_walk(
        self,
        factor: int,
        lj: int,
        vi: int,
        vec: tuple[int, ...],
        n_depths: int,
        head: _Head | None = None,
    ) -> Iterator[SearchResult]:
        """Depths 0, 1, ... of one vector until ``SPLIT_PATIENCE`` misses (module docstring).

        ``head``: depth 0 as :meth:`levels` already built and bounded it.
        """
        low: int | None = None
        misses = 0
        for depth in range(n_depths):
            if self.spent():
                self.out_of_time = True
                self.pruned += n_depths - depth
                return
            self.check_no_fit()
            given = head if depth == 0 else None
            strategy, error, split = given[0] if given else self.build(lj, vi, depth)
            reuse: tuple[StageRecord, ...] = ()
            if self.searching and strategy is not None and _key(strategy) not in self.seen:
                bound, first = given[1:] if given else self.bound(strategy)
                reuse = (first,) if first is not None else ()
                if first is not None and bound >= self.best_cycles():
                    # this depth cannot win: skipped, and a miss of the walk
                    self.pruned += 1
                    misses += low is not None
                    if misses >= SPLIT_PATIENCE:
                        self.pruned += n_depths - depth - 1
                        return
                    continue
                if first is not None:
                    plan, reuse = self.plan_cut(strategy, first)
                    if plan is not None:
                        # not among the plan's best: skipped; the walk goes on as if it
                        # were the OK candidate of these cycles
                        self.pruned += 1
                        if low is None or plan < low:
                            low, misses = plan, 0
                            continue
                        misses += 1
                        if misses >= SPLIT_PATIENCE:
                            self.pruned += n_depths - depth - 1
                            return
                        continue
            comm = f" {COMM_LABEL[self.kind]}/{self.ways}" if self.ways > 1 else ""
            label = str(list(vec)) + comm
            cand = self.evaluate((factor, label, depth, split), strategy, reuse, error)
            yield self.snapshot(False)
            if self.mode != "search":
                continue
            if cand.status == "duplicate" or (cand.status != "OK" and low is None):
                continue
            if cand.status == "OK" and (low is None or (cand.cycles or 0) < low):
                low, misses = cand.cycles, 0
                continue
            misses += 1
            if misses >= SPLIT_PATIENCE:
                self.pruned += n_depths - depth - 1
                return

    def check_no_fit(self) -> None:
        """Give up with an error when nothing fits after ``NO_FIT_FACTOR`` times the budget."""
        elapsed = time.perf_counter() - self.start
        if (
            self.mode == "search"
            and self.best is None
            and (
                elapsed > NO_FIT_FACTOR * max(self.budget_s, 1)
                or (self.budget is not None and self.evaluated() >= NO_FIT_FACTOR * self.budget)
            )
        ):
            raise Tx8labError(
                f"group %{self.group.id}: no candidate fits in "
                f"{self.hw.tile.spm_usable_bytes:,} B of usable SPM after {elapsed:.1f} s "
                f"({len(self.rows)} of {self.size} candidates tried, the default strategy "
                f"included: {self.rows[0].reason[:200]}); give the tile more SPM "
                "(hw tile.spm_bytes), or raise search_budget and search_budget_s to search longer"
            )


def pipeline_floor(group: Op, hw: ChipConfig) -> tuple[int, str]:
    """A lower bound of the task instances any strategy's pipeline unrolls on one tile.

    The largest tensor a compute op of the body reads or writes passes through the SPM of
    the system's tiles, at most ``spm_usable_bytes`` per tile at a time and each piece by
    one task at least: ``ceil(bytes / (spm_usable_bytes * tile_count))``. Returns that
    bound and the tensor that sets it (for the message). Counting needs no strategy, so
    a huge group is refused before its candidates are built.
    """
    largest, what = 0, "no tensor"
    for op in group.regions[0].ops:
        if not is_compute(op):
            continue
        for role, values in (("operand", op.operands), ("result", op.results)):
            for value in values:
                t = value.type
                if not isinstance(t, TensorType):
                    continue
                size = t.dense_bytes
                if size > largest:
                    largest, what = size, f"{op.label}'s {role} {t}"
    room = max(hw.tile.spm_usable_bytes, 1) * max(hw.tile_count, 1)
    return -(-largest // room), what


def iter_search(
    group: Op,
    hw: ChipConfig,
    *,
    mode: str = "search",
    budget_s: float = 10.0,
    budget: int | None = SEARCH_BUDGET,
    multi_buffer: int = 2,
    retract: bool = True,
    alloc: str = "seed",
    alloc_time_limit_s: float = 0.2,
    alloc_nodes: int | None = SEARCH_ALLOC_NODES,
    max_space: int = DEFAULT_MAX_SPACE,
    chips: ChipCut | None = None,
    timer: GroupTimer | None = None,
    simulate_top: int = SIMULATE_TOP,
    noc: bool = False,
    max_pipeline_instances: int | None = DEFAULT_MAX_INSTANCES,
) -> Iterator[SearchResult]:
    """Anytime search: yields a :class:`SearchResult` after each candidate (best so far).

    The last one yielded has ``done=True``; with a ``timer`` its best is the simulated
    best of the plan's ``simulate_top`` and the default (module docstring).

    Raises:
        Tx8labError: unknown mode, not a group, an exhaustive space above ``max_space``,
            or no candidate fits (the default strategy's error, naming the buffers).
    """
    if mode not in MODES:
        raise Tx8labError(f"unknown search mode {mode!r}; use one of {MODES}")
    if group.kind != "tx8be.Group" or not group.regions:
        raise Tx8labError(f"search needs a tx8be.Group op with a body, got {group.label}")
    settings = StageSettings(
        multi_buffer,
        retract,
        alloc,
        alloc_time_limit_s,
        True,
        alloc_nodes,
        noc=noc,
        max_pipeline_instances=max_pipeline_instances,
    )
    if max_pipeline_instances is not None:
        floor, what = pipeline_floor(group, hw)
        if floor > max_pipeline_instances:
            raise Tx8labError(
                f"group %{group.id}: {what} takes at least {floor:,} loads into the "
                f"{hw.tile_count} tiles' SPM, so every strategy's software pipeline unrolls "
                f"more than max_pipeline_instances={max_pipeline_instances:,} task instances; "
                "make the tensors smaller, or raise --set group-cost.max_pipeline_instances=N"
            )
    if simulate_top < 1:
        raise Tx8labError(f"search: simulate_top={simulate_top}; simulate at least 1 candidate")
    search = _Search(group, hw, mode, budget_s, settings, chips, timer, simulate_top, budget, noc)
    if mode == "exhaustive" and search.size > max_space:
        raise Tx8labError(
            f"group %{group.id}: exhaustive search over {search.size} candidates exceeds "
            f"max_space={max_space}; use mode='search' or raise max_space"
        )
    search.default_first()
    if mode == "default":
        if search.best is None:
            raise Tx8labError(search.rows[0].reason)
        search.simulate_best()
        yield search.snapshot(True)
        return
    yield search.snapshot(False)
    yield from search.levels()
    yield from search.comm_levels()
    yield from search.shared()
    if search.best is None:
        rows = search.rows
        reasons = "; ".join(sorted({c.reason.split(";")[0] for c in rows if c.reason}))[:600]
        raise Tx8labError(
            f"group %{group.id}: no candidate of {len(rows)} fits or is valid ({reasons})"
        )
    search.simulate_best()
    yield search.snapshot(True)


def search_group(
    group: Op,
    hw: ChipConfig,
    *,
    mode: str = "search",
    budget_s: float = 10.0,
    budget: int | None = SEARCH_BUDGET,
    multi_buffer: int = 2,
    retract: bool = True,
    alloc: str = "seed",
    alloc_time_limit_s: float = 0.2,
    alloc_nodes: int | None = SEARCH_ALLOC_NODES,
    max_space: int = DEFAULT_MAX_SPACE,
    chips: ChipCut | None = None,
    timer: GroupTimer | None = None,
    simulate_top: int = SIMULATE_TOP,
    noc: bool = False,
    max_pipeline_instances: int | None = DEFAULT_MAX_INSTANCES,
) -> SearchResult:
    """Run :func:`iter_search` to the end; the result with every candidate and the best.

    The cyclic garbage collector is paused meanwhile (as :mod:`tx8lab._bulk` explains:
    every OK candidate keeps its run, so its full collections would walk them again and
    again while finding little to free); what the search left is collected after.

    Raises:
        Tx8labError: as :func:`iter_search`.
    """
    results = iter_search(
        group,
        hw,
        mode=mode,
        budget_s=budget_s,
        budget=budget,
        multi_buffer=multi_buffer,
        retract=retract,
        alloc=alloc,
        alloc_time_limit_s=alloc_time_limit_s,
        alloc_nodes=alloc_nodes,
        max_space=max_space,
        chips=chips,
        timer=timer,
        simulate_top=simulate_top,
        noc=noc,
        max_pipeline_instances=max_pipeline_instances,
    )
    with gc_paused():  # every OK candidate's run survives: see tx8lab._bulk
        last = next(results)
        for last in results:  # noqa: B007 - the last one is the answer
            pass
    return last


# ---------------------------------------------------------------- group-cost's choice


@dataclass(frozen=True)
class ScheduledGroup:
    """One group's strategy, chosen as group-cost chooses it, and its recorded run."""

    run: GroupRun
    """The chosen strategy through every stage, with the caller's allocator."""
    how: str
    """``group_tag 2``, ``default``, ``search`` or ``exhaustive``."""
    search: SearchResult | None = None
    """The search that chose it (``search``/``exhaustive``)."""

    @property
    def strategy(self) -> Strategy:
        """The chosen strategy."""
        return self.run.strategy

    @property
    def evaluated(self) -> int:
        """Candidates run through the stages (1 without a search)."""
        return self.search.evaluated if self.search is not None else 1

    @property
    def space_size(self) -> int:
        """Candidates in the space (1 without a search)."""
        return self.search.space_size if self.search is not None else 1


def schedule_group(
    group: Op,
    hw: ChipConfig,
    settings: StageSettings,
    *,
    mode: str = "search",
    budget_s: float = 10.0,
    budget: int | None = SEARCH_BUDGET,
    chips: ChipCut | None = None,
    timer: GroupTimer | None = None,
    simulate_top: int = SIMULATE_TOP,
    noc: bool = False,
) -> ScheduledGroup:
    """group-cost's strategy for ``group`` through :func:`run_group`.

    ``settings.alloc`` is the allocator of the result; the search itself allocates with
    first fit (module docstring), and the chosen candidate's recorded stages before
    spm-alloc are reused. With a ``timer`` the search ranks by the simulator (module
    docstring) and the result, with its own packing, is simulated again (unless the
    packing is the one the search simulated: the same offsets for the same lifetimes give
    the same command stream, so that simulation is kept).

    Raises:
        SpmOverflow: the default strategy's buffers do not fit.
        Tx8labError: as :func:`iter_search`.
    """
    if group.attrs.get("group_tag") == TAG_DDR:
        # the seed's bail-out: a group_tag 2 group (its ops work in DDR) is neither split
        # nor searched
        strategy = unsplit_strategy(group, multi_buffer=settings.multi_buffer)
        return ScheduledGroup(run_group(group, strategy, hw, settings, timer=timer), "group_tag 2")
    if mode == "default":
        start = time.perf_counter()
        strategy, si = default_schedule(
            group,
            hw,
            multi_buffer=settings.multi_buffer,
            chips=chips.chips if chips else None,
            exchange=settings.noc,
        )
        # choosing the default built its init pipeline: that is its data-split
        first = StageRecord("data-split", si, time.perf_counter() - start, tuple(si.notes))
        # the default allocates with the chosen allocator as is (stages module docstring)
        exact = dataclasses.replace(settings, best_fallback=False)
        return ScheduledGroup(
            run_group(group, strategy, hw, exact, reuse=(first,), timer=timer), mode
        )
    found = search_group(
        group,
        hw,
        mode=mode,
        budget_s=budget_s,
        budget=budget,
        multi_buffer=settings.multi_buffer,
        retract=settings.retract,
        chips=chips,
        timer=timer,
        simulate_top=simulate_top,
        noc=noc,
        max_pipeline_instances=settings.max_pipeline_instances,
    )
    best = found.best
    assert best is not None
    assert best.run is not None
    strategy = best.run.strategy
    head = run_group(
        group, strategy, hw, settings, reuse=best.run.before("spm-alloc"), until="estimate"
    )
    packed, ranked = head.allocation, best.run.allocation
    if best.simulated and (packed.lifetimes, packed.offsets) == (ranked.lifetimes, ranked.offsets):
        # the caller's allocator packed it as the search did: the same command stream, whose
        # simulation the search already has
        reuse = (*head.records, best.run.record("simulate"))
    else:
        reuse = head.records
    run = run_group(group, strategy, hw, settings, reuse=reuse, timer=timer)
    return ScheduledGroup(run, mode, found)


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
    "SIMULATE_TOP",
    "SPLIT_PATIENCE",
    "Candidate",
    "ScheduledGroup",
    "SearchResult",
    "iter_search",
    "pareto_front",
    "schedule_group",
    "search_group",
    "space_size",
]
