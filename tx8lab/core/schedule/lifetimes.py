"""buffer-life and buffer-merge: SPM buffer lifetimes, in time steps, from a timeline.

Spec: seed 001 ("SPMAllocPass": BufferLabel, ValueBuffer, SA_BufferLifePass with in-place
chains, imm and psum, SA_BufferMergePass ``mergeOverlap``). :func:`buffer_life` walks the
task instances in program order (the seed's opIsTemp / consumerOps tables) and gives one
raw interval per access of a value, from its producer's step (getNearestProducer, in-place
chains traced back to the first non-in-place producer) to the accessing step;
:func:`buffer_merge` is mergeOverlap: per label, sort by start, drop the intervals the
current active one contains. The allocator reads ``buffer_merge(buffer_life(t, inp))``
(:func:`spm_lifetimes`).

Readings chosen where the seed is vague:

- **Half-open steps.** The seed's ValueBuffer ``[start, end]`` is inclusive, in pipeline
  steps; a :class:`Lifetime` is ``[lower, upper)`` with ``lower = start`` and
  ``upper = end + 1``: a value is live during its producer's step and its last
  consumer's step.
- **Labels (the seed's BufferLabel).** A label is one memory: a value's *generation*
  (a fresh write and the in-place writes and psum updates that reuse its memory, see
  :mod:`~tx8lab.core.schedule.sw_pipeline`). Its id is the root buffer's id, ``"%7"``, when
  the buffer is written fresh once, else ``"%7@g"`` for the g-th fresh write (with
  ``multi_buffer=2`` iteration i and i+1 are ``"%7@i"`` and ``"%7@i+1"``, distinct
  lifetimes that overlap in time; with ``multi_buffer=1`` the pipeline keeps them
  disjoint, so the allocator may give them one offset). ``Lifetime.buffer`` is the root
  :class:`Buffer` id. The raw intervals of one label share its id (the seed's vector of
  ValueBuffers per label); after :func:`buffer_merge` ids are unique.
- **Program order and steps.** main.c issues the instances in program order, and the
  timeline lets retraction run an instance of the next iteration at an earlier step than
  one issued before it; the memory must be right under both orders. So the interval of
  an access spans the steps of every instance issued from the label's first write up to
  that access (their smallest to their largest step): two labels live at one point of
  program order then share that instance's step, and two live at one step still do.
  Without this, a weight load of iteration 1 retracted to step 14 took the memory of a
  partial sum first written at step 16 by an instance issued before it, and main.c
  overwrote the partial sum.
- **Producers write too.** Besides one interval per read (the seed's consumers), every
  write gives one, so a value nobody reads still holds memory during its producer's step.
- **In-place chains** are one label under the root buffer's id, sized by the largest
  buffer of the chain (an in-place result is normally the same size as its source).
- **psum** accumulations are one label per accumulation chain (each output slice, see the
  pipeline's psum reading): the seed's "merge the discrete intervals into one from the
  earliest start to the latest end" is applied per chain, whose intervals share one
  memory, not across chains, which need not.
- **imm** buffers live during their task's step: one label per instance, ``"%7.imm"``
  when the task runs once, else ``"%7.imm@k"`` for its k-th run.
- **mergeOverlap order.** The seed's ``operator<`` (``start <= other.start``) is not a
  strict weak order; here the sort is stable by start, and intervals with equal start are
  taken longest first (the seed's "sort the equal-start run by end"), the only order
  under which the containment test drops the shorter ones. Only *contained* intervals are
  dropped, as in the seed; partial overlaps under one label stay, the later survivors
  getting ids ``"<label>/1"``, ``"<label>/2"`` (never produced by :func:`buffer_life`).
  Deviation: a survivor takes the largest size among the intervals it absorbs (the seed
  drops them with their size; equal here except in hand-made input).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tx8lab._bulk import constructor
from tx8lab.core.schedule.sw_pipeline import expand
from tx8lab.core.schedule.tasks import Lifetime, ScheduleInput, Timeline
from tx8lab.errors import Tx8labError


def buffer_life(timeline: Timeline, inp: ScheduleInput) -> list[Lifetime]:
    """The seed's raw lifetime intervals (SA_BufferLifePass), in program order.

    Examples:
        >>> from tx8lab.core.schedule.sw_pipeline import sw_pipeline
        >>> from tx8lab.core.schedule.tasks import Buffer, ScheduleInput, Task
        >>> inp = ScheduleInput(0, (Task("ld", 0, "ld", 5, writes=("x",)),
        ...                         Task("ct", 1, "ct", 5, reads=("x",), writes=("y",)),
        ...                         Task("st", 1, "st", 5, reads=("y",))),
        ...                     {"x": Buffer("x", 0, 64), "y": Buffer("y", 1, 32)})
        >>> [(lt.id, lt.lower, lt.upper) for lt in buffer_life(sw_pipeline(inp), inp)]
        [('x', 0, 1), ('x', 0, 2), ('y', 1, 2), ('y', 1, 3)]
    """
    instances = expand(inp, timeline.multi_buffer)
    step = {(s.task, s.iteration): s.step for s in timeline.slots}
    if len(step) != len(timeline.slots) or len(step) != len(instances):
        raise Tx8labError(
            f"group {inp.group_id}: the timeline has {len(timeline.slots)} slots but the input "
            f"expands to {len(instances)} task instances; pass the timeline sw_pipeline made "
            "from this input"
        )
    first: dict[tuple[str, int], int] = {}
    produced: dict[tuple[str, int], int] = {}
    size: dict[tuple[str, int], int] = {}
    generations: dict[str, int] = {}
    imm_runs: dict[str, int] = {}
    raw: list[tuple[str, tuple[str, int], int]] = []  # (kind, label key, step or position)
    nbytes = {b: buf.bytes for b, buf in inp.buffers.items()}
    steps: list[int] = []
    for n, inst in enumerate(instances):
        s = step.get((inst.task.id, inst.iteration))  # inst.key
        if s is None:
            raise Tx8labError(
                f"group {inp.group_id}: task {inst.task.id!r} at iteration "
                f"{list(inst.iteration)} is missing from the timeline"
            )
        steps.append(s)
        for u in inst.writes:
            key = (u.root, u.generation)
            if key not in first:
                first[key] = n
                produced[key] = s
            if generations.get(u.root, 0) < u.generation + 1:
                generations[u.root] = u.generation + 1
        for u in (*inst.reads, *inst.writes):
            key = (u.root, u.generation)
            if s < produced[key]:
                raise Tx8labError(
                    f"group {inp.group_id}: task {inst.task.id!r} at iteration "
                    f"{list(inst.iteration)} uses {u.buffer!r} in step {s}, before its "
                    f"producer's step {produced[key]}; the timeline breaks a dependence"
                )
            held = nbytes[u.buffer]
            if size.get(key, 0) < held:
                size[key] = held
            raw.append(("value", key, n))
        for b in inst.imm:
            run = imm_runs.get(b, 0)
            imm_runs[b] = run + 1
            raw.append(("imm", (b, run), s))
    bounds = _Spans(steps).bounds
    labels: dict[tuple[str, int], str] = {}
    out: list[Lifetime] = []
    for kind, key, s in raw:
        name, index = key
        if kind == "imm":
            label = name if imm_runs[name] == 1 else f"{name}@{index}"
            out.append(_new_lifetime(label, s, s + 1, nbytes[name], name))
        else:
            version = labels.get(key)  # one label per version, read many times
            if version is None:
                version = labels[key] = name if generations[name] == 1 else f"{name}@{index}"
            lower, upper = bounds(first[key], s)
            out.append(_new_lifetime(version, lower, upper + 1, size[key], name))
    return out


#: ``Lifetime`` from every field, positionally (one per access of a task instance).
_new_lifetime = constructor(Lifetime)


class _Spans:
    """Smallest and largest step over a run of instances in program order (sparse tables)."""

    def __init__(self, steps: Sequence[int]) -> None:
        base = np.asarray(steps, dtype=np.int64)
        low = [base]
        high = [base]
        width = 1
        while 2 * width <= len(base):
            lo, hi = low[-1], high[-1]
            low.append(np.minimum(lo[:-width], lo[width:]))
            high.append(np.maximum(hi[:-width], hi[width:]))
            width *= 2
        # read back one element at a time: plain lists index faster than arrays
        self.low: list[list[int]] = [level.tolist() for level in low]
        self.high: list[list[int]] = [level.tolist() for level in high]

    def bounds(self, first: int, last: int) -> tuple[int, int]:
        """(min, max) step of the instances ``first .. last`` (inclusive)."""
        k = (last - first + 1).bit_length() - 1
        end = last - (1 << k) + 1
        low, high = self.low[k], self.high[k]
        return min(low[first], low[end]), max(high[first], high[end])


def merge_overlap(intervals: Sequence[Lifetime]) -> list[Lifetime]:
    """The seed's mergeOverlap on the intervals of one label (see the module docstring).

    Examples:
        >>> from tx8lab.core.schedule.tasks import Lifetime
        >>> ls = [Lifetime("v", 0, 3, 8), Lifetime("v", 1, 2, 8), Lifetime("v", 0, 5, 8),
        ...       Lifetime("v", 4, 7, 8)]
        >>> [(lt.lower, lt.upper) for lt in merge_overlap(ls)]
        [(0, 5), (4, 7)]
    """
    ordered = sorted(intervals, key=lambda lt: (lt.lower, -lt.upper))
    kept: list[Lifetime] = []
    for lt in ordered:
        if lt.upper <= lt.lower or lt.size < 0:
            raise Tx8labError(
                f"lifetime {lt.id!r} is [{lt.lower}, {lt.upper}) of {lt.size} bytes; "
                "a lifetime needs lower < upper and size >= 0"
            )
        active = kept[-1] if kept else None
        if active is not None and lt.lower >= active.lower and lt.upper <= active.upper:
            if lt.size > active.size:
                kept[-1] = _new_lifetime(
                    active.id, active.lower, active.upper, lt.size, active.buffer
                )
            continue
        kept.append(lt)
    return kept


def buffer_merge(lifetimes: Iterable[Lifetime]) -> list[Lifetime]:
    """The seed's SA_BufferMergePass: :func:`merge_overlap` per label (``Lifetime.id``).

    Returns the survivors sorted by ``(lower, id)``, with unique ids.
    """
    by_label: dict[str, list[Lifetime]] = {}
    for lt in lifetimes:
        by_label.setdefault(lt.id, []).append(lt)
    out: list[Lifetime] = []
    for label, intervals in by_label.items():
        for n, lt in enumerate(merge_overlap(intervals)):
            name = label if n == 0 else f"{label}/{n}"
            out.append(_new_lifetime(name, lt.lower, lt.upper, lt.size, lt.buffer))
    ids = {lt.id for lt in out}
    if len(ids) != len(out):
        clash = sorted(i for i in ids if sum(lt.id == i for lt in out) > 1)
        raise Tx8labError(f"lifetime ids {clash} clash after the merge; rename those labels")
    return sorted(out, key=lambda lt: (lt.lower, lt.id))


def spm_lifetimes(timeline: Timeline, inp: ScheduleInput) -> list[Lifetime]:
    """The allocator's input: ``buffer_merge(buffer_life(timeline, inp))``."""
    return buffer_merge(buffer_life(timeline, inp))


def live_bytes_per_step(lifetimes: Iterable[Lifetime]) -> list[int]:
    """Bytes live in each step (index = step): the allocator's lower bound is the max.

    Examples:
        >>> from tx8lab.core.schedule.tasks import Lifetime
        >>> live_bytes_per_step([Lifetime("a", 0, 2, 8), Lifetime("b", 1, 3, 4)])
        [8, 12, 4]
    """
    items = list(lifetimes)
    horizon = max((lt.upper for lt in items), default=0)
    delta = [0] * (horizon + 1)
    for lt in items:
        delta[lt.lower] += lt.size
        delta[lt.upper] -= lt.size
    live: list[int] = []
    total = 0
    for d in delta[:horizon]:
        total += d
        live.append(total)
    return live


__all__ = ["buffer_life", "buffer_merge", "live_bytes_per_step", "merge_overlap", "spm_lifetimes"]
