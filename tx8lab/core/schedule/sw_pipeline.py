"""sw-pipeline: expand the init pipeline's Repeat nodes into time steps x engines, retracting.

Spec: seed 001 ("TS_SwPipelinePass": getInitPipelineOps, pipeline() with getRetract /
doRetract and canParallel, getEnginsPipeline) and the BatchNorm main.c load -> compute ->
store loop. The init pipeline (getInitPipelineOps) is :attr:`ScheduleInput.nodes`;
:func:`sw_pipeline` walks it in program order, each task one frame; a :class:`Repeat`
is expanded recursively, one copy of its body per iteration; at every boundary (between
iterations, and between a Repeat and the tasks around it) the head frames of the later
part are retracted into the tail frames of the earlier one as far as canParallel allows;
getEnginsPipeline then puts each task instance into its engine slot of a time step.

Readings chosen where the seed is vague:

- **Frames.** A frame (the seed's ``opsBase``) starts as one task. Within a run of plain
  tasks (a segment) nothing moves: the seed retracts only at boundaries. A *segment* is a
  maximal run of consecutive tasks, or one Repeat's expansion.
- **getRetract.** Joining part P (frames P[0..]) after the frames O[0..L) built so far,
  a retraction by k overlays P[j] on O[L-k+j] for j < k. k is valid when every overlaid
  pair canParallel: disjoint engines (a step holds at most one task per engine), and no
  task of P[j] depends on a task of O at position >= L-k+j (it must run strictly after
  its producers). The *largest* valid k is taken (scan from min(L, len(P)) down), as the
  seed's "最大可以回缩的指令数量"; validity is not monotone in k (a head ``ct`` may clash
  with the tail ``ct`` at k=1 yet fit beside the ``ld`` at k=2). Retraction therefore
  never adds a step: each join makes ``L + len(P) - k`` frames.
- **Dependences** are through SPM memory, tracked per buffer *version*: a read of a
  memory the other writes (RAW), a write to a memory the other reads (WAR) or writes
  (WAW). The memory of a version is ``(root buffer, copy)``: a fresh write of buffer b
  takes copy ``n % multi_buffer`` (n = fresh writes of b so far), so with
  ``multi_buffer=2`` iteration i+1 writes the other copy and only WAR/WAW with iteration
  i-1 remain; with ``multi_buffer=1`` there is no second copy and every WAR counts.
- **In-place.** A buffer with ``in_place_of`` lives in the memory of the current version
  of that buffer (chains followed to the first non-in-place producer, the seed's
  getInplaceIndex). A task that reads and writes one buffer updates it in place too.
- **psum.** A task that reads and writes a ``psum`` buffer accumulates into it; its
  instance at iteration 0 of its innermost Repeat (or outside any Repeat) initialises
  the accumulator instead: that read is dropped and the write is fresh (a new copy with
  multi-buffering), so each output slice has its own accumulation chain. The innermost
  Repeat around a psum update is taken to be its reduction loop.
- **Chunks.** A buffer whose writer sits in Repeats its reader is outside of
  (``Buffer.chunk_loops``: a MatMul split over N in time, read whole by a Reshape after
  the loop) holds every chunk side by side: a write is fresh only when each of those
  Repeats is at index 0; later iterations write the next chunk of the same version.
- **imm** (an op's scratch space, ``kind="imm"``) belongs to the one task that uses it
  and is not a dependence between tasks; buffer-life gives it the step of each instance.
- **getEnginsPipeline conflicts.** canParallel never lets two tasks of one engine share a
  frame, so frames built here never conflict. :func:`engines_pipeline` also takes
  hand-made frames: there a task whose engine slot is taken opens a new step right after,
  and the rest of that frame follows it (order is kept, so nothing runs earlier than in
  the frame list).
- **Cycles.** The engines of one step run in parallel and the step ends when its longest
  task ends (the frame is a join point, as the kernel core waits for every engine before
  issuing the next frame): step s starts at the end of step s-1; a slot runs
  ``[step start, step start + cycles)``. ``step_overhead_cycles`` adds a fixed cost per
  step (e.g. one NCC join, ``round(hw.tile.ncc_join_s * hw.clock_hz)``; default 0). Issue
  overheads are part of each task's cycles (the tile cost model adds them).
- ``retracted`` counts task instances placed into a frame that already existed, each
  once (a frame overlaid again at an outer boundary carries instances counted at the
  inner one); so ``steps = instances - retracted``.
- **Budget.** The expansion unrolls every iteration of every Repeat, so its work and
  memory grow with the tile's iteration count. :func:`sw_pipeline` counts the instances
  first (:func:`instance_count`, no unrolling) and refuses more than ``max_instances``
  (default :data:`DEFAULT_MAX_INSTANCES`; group-cost's ``max_pipeline_instances`` knob),
  naming the group and the count, instead of running for hours or out of memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from tx8lab._bulk import constructor
from tx8lab.core.schedule.tasks import (
    ENGINES,
    Buffer,
    Engine,
    Node,
    Repeat,
    ScheduleInput,
    Slot,
    Task,
    Timeline,
)
from tx8lab.errors import Tx8labError

Memory = tuple[str, int]
"""An SPM memory: (root buffer id, copy index)."""

_ENGINE_BIT: dict[str, int] = {e: 1 << i for i, e in enumerate(ENGINES)}


@dataclass(frozen=True, slots=True)
class Use:
    """One buffer version a task instance reads or writes."""

    buffer: str
    """The :class:`Buffer` id as the task names it."""
    root: str
    """The buffer whose memory holds it (in-place chains followed to the first producer)."""
    generation: int
    """Fresh writes of ``root`` before this one: versions sharing it share one memory."""
    copy: int
    """``generation % multi_buffer``: which of the root's buffers."""

    @property
    def memory(self) -> Memory:
        """The memory the version occupies."""
        return (self.root, self.copy)


@dataclass(frozen=True, slots=True)
class Instance:
    """One execution of a :class:`Task` in the expanded program (program order)."""

    task: Task
    iteration: tuple[int, ...]
    """Index of each enclosing Repeat, outermost first."""
    reads: tuple[Use, ...]
    writes: tuple[Use, ...]
    imm: tuple[str, ...]
    """Scratch (``imm``) buffers the task uses."""

    @property
    def key(self) -> tuple[str, tuple[int, ...]]:
        """``(task id, iteration)``: unique in a group."""
        return (self.task.id, self.iteration)


#: ``Use`` / ``Instance`` from every field, positionally (one per task instance).
_new_use = constructor(Use)
_new_instance = constructor(Instance)
_new_slot = constructor(Slot)


def check_input(inp: ScheduleInput) -> dict[str, Task]:
    """Validate ``inp``; return its tasks by id.

    Raises:
        Tx8labError: a duplicate task id, an unknown engine or buffer, negative cycles or
            bytes, a Repeat of fewer than one iteration or with an empty body, an in-place
            cycle, or an imm buffer shared by two tasks.
    """
    tasks: dict[str, Task] = {}
    where = f"group {inp.group_id}"
    for key, buf in inp.buffers.items():
        if key != buf.id:
            raise Tx8labError(f"{where}: buffers[{key!r}] holds Buffer id {buf.id!r}")
        if buf.bytes < 0:
            raise Tx8labError(f"{where}: buffer {buf.id!r} has negative bytes ({buf.bytes})")
        if buf.in_place_of is not None and buf.in_place_of not in inp.buffers:
            raise Tx8labError(
                f"{where}: buffer {buf.id!r} is in place of unknown buffer {buf.in_place_of!r}"
            )
    for buf in inp.buffers.values():
        _chain_root(inp.buffers, buf.id, where)
    imm_user: dict[str, str] = {}
    for node in _checked_tasks(inp.nodes, "", where):
        if node.id in tasks:
            raise Tx8labError(f"{where}: task id {node.id!r} appears twice; ids are unique")
        if node.engine not in _ENGINE_BIT:
            raise Tx8labError(
                f"{where}: task {node.id!r} has engine {node.engine!r}; "
                f"use one of {', '.join(ENGINES)}"
            )
        if node.cycles < 0:
            raise Tx8labError(f"{where}: task {node.id!r} has negative cycles {node.cycles}")
        for b in (*node.reads, *node.writes):
            if b not in inp.buffers:
                raise Tx8labError(
                    f"{where}: task {node.id!r} uses buffer {b!r}, which is not in buffers"
                )
            if inp.buffers[b].kind == "imm" and imm_user.setdefault(b, node.id) != node.id:
                raise Tx8labError(
                    f"{where}: imm buffer {b!r} is used by tasks {imm_user[b]!r} and "
                    f"{node.id!r}; scratch space belongs to one task"
                )
        tasks[node.id] = node
    return tasks


def _checked_tasks(nodes: Sequence[Node], path: str, where: str) -> Iterator[Task]:
    """Every task of ``nodes`` in order; each Repeat on the way checked (``path``: where).

    Module level, not closures: a recursive closure is a reference cycle (tx8lab._bulk).
    """
    for node in nodes:
        if isinstance(node, Repeat):
            if node.times < 1 or not node.body:
                raise Tx8labError(
                    f"{where}: Repeat at {path or 'top level'} has times={node.times} and "
                    f"{len(node.body)} body nodes; a Repeat needs times >= 1 and a body"
                )
            yield from _checked_tasks(node.body, f"{path}/Repeat({node.times})", where)
        else:
            yield node


def _chain_root(buffers: Mapping[str, Buffer], start: str, where: str) -> str:
    seen = [start]
    current = buffers[start]
    while current.in_place_of is not None:
        if current.in_place_of in seen:
            raise Tx8labError(f"{where}: in-place cycle {' -> '.join([*seen, seen[0]])}")
        seen.append(current.in_place_of)
        current = buffers[current.in_place_of]
    return current.id


#: Task instances :func:`sw_pipeline` unrolls at most (module docstring, **Budget**);
#: group-cost's ``max_pipeline_instances`` knob. About a second of work per 100k.
DEFAULT_MAX_INSTANCES = 1_000_000


def instance_count(nodes: Sequence[Node]) -> int:
    """Task instances the expansion of ``nodes`` makes, counted without unrolling.

    Examples:
        >>> from tx8lab.core.schedule.tasks import Repeat, Task
        >>> t = Task("ld", 0, "ld", 5)
        >>> instance_count((t, Repeat(3, (t, Repeat(1 << 40, (t, t))))))
        6597069766660
    """
    return sum(1 if isinstance(n, Task) else n.times * instance_count(n.body) for n in nodes)


def check_instances(inp: ScheduleInput, max_instances: int | None) -> int:
    """The instance count of ``inp``; refuses one above ``max_instances`` (None: no bound)."""
    count = instance_count(inp.nodes)
    if max_instances is not None and count > max_instances:
        raise Tx8labError(
            f"group %{inp.group_id}: the software pipeline would unroll {count:,} task "
            f"instances (max_pipeline_instances={max_instances:,}); split the group's "
            "tensors smaller, or raise --set group-cost.max_pipeline_instances=N"
        )
    return count


#: The last few expansions by input (identity) and multi_buffer: the software pipeline,
#: buffer-life and the simulator's program each expand the same input in turn.
_EXPANDED: dict[tuple[int, int], tuple[ScheduleInput, tuple[Instance, ...]]] = {}
_EXPANDED_KEPT = 8


def expand(inp: ScheduleInput, multi_buffer: int = 2) -> list[Instance]:
    """Every task instance in program order, with the buffer versions it reads and writes.

    An input is frozen: the last few expansions are kept (by the input's identity) for the
    next caller of the same input, who gets a list of its own.

    Examples:
        >>> from tx8lab.core.schedule.tasks import Buffer, Repeat, ScheduleInput, Task
        >>> inp = ScheduleInput(0, (Repeat(2, (Task("ld", 0, "ld", 5, writes=("x",)),)),),
        ...                     {"x": Buffer("x", 0, 64)})
        >>> [(i.iteration, i.writes[0].copy) for i in expand(inp)]
        [((0,), 0), ((1,), 1)]
    """
    key = (id(inp), multi_buffer)
    kept = _EXPANDED.get(key)
    if kept is not None and kept[0] is inp:
        return list(kept[1])
    check_input(inp)
    _check_multi_buffer(multi_buffer)
    out = _expand(inp, multi_buffer)
    if len(_EXPANDED) >= _EXPANDED_KEPT:
        del _EXPANDED[next(iter(_EXPANDED))]  # the oldest
    _EXPANDED[key] = (inp, tuple(out))
    return out


def _expand(inp: ScheduleInput, multi_buffer: int) -> list[Instance]:
    """:func:`expand` of a checked input."""
    buffers = inp.buffers
    current: dict[str, Use] = {}
    fresh: dict[str, int] = {}
    out: list[Instance] = []

    def version(task: Task, b: str, iteration: tuple[int, ...], what: str) -> Use:
        use = current.get(b)
        if use is None:
            at = f" at iteration {list(iteration)}" if iteration else ""
            raise Tx8labError(
                f"group {inp.group_id}: task {task.id!r}{at} {what} buffer {b!r} before any "
                "task writes it; load or compute it first"
            )
        return use

    # per task, what its reads and writes are whatever the iteration: (buffer, kind, the
    # buffer it writes in place of or its chunk loops)
    plans: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str, str | None, int]]]] = {}

    def plan(task: Task) -> tuple[list[tuple[str, str]], list[tuple[str, str, str | None, int]]]:
        got = plans.get(task.id)
        if got is None:
            writes_set = set(task.writes)
            read_plan = [
                (
                    b,
                    "imm"
                    if buffers[b].kind == "imm"
                    else "psum"
                    if buffers[b].kind == "psum" and b in writes_set
                    else "value",
                )
                for b in task.reads
            ]
            write_plan: list[tuple[str, str, str | None, int]] = [
                (b, buffers[b].kind, buffers[b].in_place_of, buffers[b].chunk_loops)
                for b in task.writes
            ]
            plans[task.id] = (read_plan, write_plan)
            return read_plan, write_plan
        return got

    def run(task: Task, iteration: tuple[int, ...]) -> None:
        initial = not iteration or iteration[-1] == 0
        got = plans.get(task.id)
        read_plan, write_plan = got if got is not None else plan(task)
        # current[b] is a use of buffer b itself: a read or in-place write of b is that use
        reads: list[Use] = []
        read_names: list[str] = []
        imm: list[str] = []
        for b, kind in read_plan:
            if kind == "imm":
                imm.append(b)
            elif not (kind == "psum" and initial):
                reads.append(current.get(b) or version(task, b, iteration, "reads"))
                read_names.append(b)
        writes: list[Use] = []
        for b, kind, in_place_of, chunk_loops in write_plan:
            if kind == "imm":
                if b not in imm:
                    imm.append(b)
                continue
            if in_place_of is not None:
                u = current.get(in_place_of) or version(
                    task, in_place_of, iteration, "writes in place of"
                )
                use = _new_use(b, u.root, u.generation, u.copy)
            elif b in read_names or (
                b in current and chunk_loops and any(iteration[-chunk_loops:])
            ):
                use = current[b]  # in place, or the next chunk of the version
            else:
                g = fresh.get(b, 0)
                fresh[b] = g + 1
                use = _new_use(b, b, g, g % multi_buffer)
            current[b] = use
            writes.append(use)
        out.append(_new_instance(task, iteration, tuple(reads), tuple(writes), tuple(imm)))

    for task, iteration in _task_iterations(inp.nodes, ()):
        run(task, iteration)
    return out


def _task_iterations(
    nodes: Sequence[Node], iteration: tuple[int, ...]
) -> Iterator[tuple[Task, tuple[int, ...]]]:
    """Every task instance of ``nodes`` in program order, with its Repeat indices.

    Module level, not a closure: a recursive closure is a reference cycle (tx8lab._bulk).
    """
    for node in nodes:
        if isinstance(node, Task):
            yield node, iteration
        else:
            for i in range(node.times):
                yield from _task_iterations(node.body, (*iteration, i))


def _check_multi_buffer(multi_buffer: int) -> None:
    if not isinstance(multi_buffer, int) or multi_buffer < 1:
        raise Tx8labError(
            f"multi_buffer={multi_buffer!r}: use 1 (no double buffering) or more buffers per value"
        )


@dataclass(slots=True)
class _Part:
    """Frames built so far, with the last position each memory is read / written."""

    frames: list[list[Instance]] = field(default_factory=list)
    masks: list[int] = field(default_factory=list)
    last_read: dict[Memory, int] = field(default_factory=dict)
    last_write: dict[Memory, int] = field(default_factory=dict)
    retracted: int = 0

    def append(self, inst: Instance) -> None:
        pos = len(self.frames)
        self.frames.append([inst])
        self.masks.append(_ENGINE_BIT[inst.task.engine])
        last_read, last_write = self.last_read, self.last_write
        for u in inst.reads:
            last_read[(u.root, u.copy)] = pos  # u.memory
        for u in inst.writes:
            last_write[(u.root, u.copy)] = pos


def _earliest(frame: Sequence[Instance], out: _Part) -> int:
    """First position of ``out`` this frame may share: after every conflicting access."""
    t = 0
    lw, lr = out.last_write.get, out.last_read.get
    for inst in frame:
        for u in inst.reads:
            at = lw((u.root, u.copy), -1) + 1  # after the last write of u.memory
            if at > t:
                t = at
        for u in inst.writes:
            m = (u.root, u.copy)
            at = lw(m, -1) + 1
            if at > t:
                t = at
            at = lr(m, -1) + 1
            if at > t:
                t = at
    return t


def get_retract(out: _Part, part: _Part) -> int:
    """The seed's getRetract: how many head frames of ``part`` overlay the tail of ``out``."""
    n_out = len(out.frames)
    k_max = min(n_out, len(part.frames))
    # a frame's earliest position, computed when a k needs it (an engine clash, the
    # cheaper test, rules most k out first)
    earliest: list[int | None] = [None] * k_max
    out_masks, part_masks, frames = out.masks, part.masks, part.frames
    for k in range(k_max, 0, -1):
        base = n_out - k
        for j in range(k):
            if out_masks[base + j] & part_masks[j]:
                break
            at = earliest[j]
            if at is None:
                at = earliest[j] = _earliest(frames[j], out)
            if base + j < at:
                break
        else:
            return k
    return 0


def do_retract(out: _Part, part: _Part, k: int) -> None:
    """The seed's doRetract: splice ``part`` after ``out``, its first ``k`` frames overlaid."""
    base = len(out.frames) - k
    frames, masks = out.frames, out.masks
    for j in range(min(k, len(part.frames))):
        frames[base + j].extend(part.frames[j])
        masks[base + j] |= part.masks[j]
    frames.extend(part.frames[k:])
    masks.extend(part.masks[k:])
    for mine, theirs in ((out.last_read, part.last_read), (out.last_write, part.last_write)):
        get = mine.get
        for m, pos in theirs.items():
            pos += base
            if get(m, -1) < pos:  # the later of the two
                mine[m] = pos
    # each overlaid frame brings one instance never moved before (the one that opened it;
    # the others joined it at a lower level and were counted there)
    out.retracted += part.retracted + k


def _join(out: _Part, part: _Part, retract: bool) -> None:
    """``part`` (a part no one else holds) spliced after ``out``."""
    if not part.frames:
        return
    if not out.frames and not out.last_read and not out.last_write and not out.retracted:
        # do_retract(out, part, 0) onto nothing: ``out`` takes ``part``'s frames as they are
        out.frames, out.masks = part.frames, part.masks
        out.last_read, out.last_write = part.last_read, part.last_write
        out.retracted = part.retracted
        return
    do_retract(out, part, get_retract(out, part) if retract and out.frames else 0)


def _pipeline(nodes: Sequence[Node], insts: Iterator[Instance], retract: bool) -> _Part:
    """The seed's pipeline(): frames of ``nodes``, Repeats expanded recursively."""
    out: _Part | None = None
    run = _Part()
    for node in nodes:
        if isinstance(node, Task):
            inst = next(insts)
            assert inst.task is node, "expand() and _pipeline() walk the same tree"
            run.append(inst)
            continue
        out = _joined(out, run, retract)
        run = _Part()
        seg: _Part | None = None
        for _ in range(node.times):
            seg = _joined(seg, _pipeline(node.body, insts, retract), retract)
        if seg is not None:
            out = _joined(out, seg, retract)
    return _joined(out, run, retract) or _Part()


def _joined(out: _Part | None, part: _Part, retract: bool) -> _Part | None:
    """``out`` with ``part`` joined (:func:`_join`).

    None stands for a part with no frames yet, which joining a part makes that part.
    """
    if out is None:
        return part if part.frames else None
    _join(out, part, retract)
    return out


def engines_pipeline(frames: Sequence[Sequence[Instance]]) -> list[dict[Engine, Instance]]:
    """The seed's getEnginsPipeline: each frame's instances in their engine slots.

    A frame holding two tasks of one engine is split: the second opens a new step right
    after, and the rest of the frame goes with it.
    """
    steps: list[dict[Engine, Instance]] = []
    for frame in frames:
        step: dict[Engine, Instance] = {}
        for inst in frame:
            if inst.task.engine in step:
                steps.append(step)
                step = {}
            step[inst.task.engine] = inst
        if step:
            steps.append(step)
    return steps


def sw_pipeline(
    inp: ScheduleInput,
    *,
    retract: bool = True,
    multi_buffer: int = 2,
    step_overhead_cycles: int = 0,
    max_instances: int | None = DEFAULT_MAX_INSTANCES,
) -> Timeline:
    """The software pipeline of one group on one tile (see the module docstring).

    Args:
        inp: the init pipeline and its buffers.
        retract: overlay the next iteration's head on the previous tail (getRetract);
            off, every task instance gets a step of its own.
        multi_buffer: buffers per looping value (2 = double buffering).
        step_overhead_cycles: cycles added to every step (a per-frame join).
        max_instances: refuse an input that unrolls to more task instances (None: no
            bound; module docstring, **Budget**).

    Examples:
        >>> from tx8lab.core.schedule.tasks import Buffer, Repeat, ScheduleInput, Task
        >>> body = (Task("ld:x", 0, "ld", 10, writes=("x",)),
        ...         Task("ct:y", 1, "ct", 20, reads=("x",), writes=("y",)),
        ...         Task("st:y", 1, "st", 10, reads=("y",)))
        >>> bufs = {b: Buffer(b, 0, 64) for b in ("x", "y")}
        >>> t = sw_pipeline(ScheduleInput(0, (Repeat(4, body),), bufs))
        >>> t.steps, t.retracted, t.makespan
        (6, 6, 100)
    """
    if step_overhead_cycles < 0:
        raise Tx8labError(f"step_overhead_cycles={step_overhead_cycles}: use 0 or more")
    tasks = check_input(inp)
    check_instances(inp, max_instances)
    instances = expand(inp, multi_buffer)
    it = iter(instances)
    part = _pipeline(inp.nodes, it, retract)
    steps = engines_pipeline(part.frames)
    slots: list[Slot] = []
    t = 0
    for index, step in enumerate(steps):
        for engine in ENGINES:
            inst = step.get(engine)
            if inst is not None:
                slots.append(
                    _new_slot(inst.task.id, inst.iteration, engine, index, t, t + inst.task.cycles)
                )
        t += max(i.task.cycles for i in step.values()) + step_overhead_cycles
    return Timeline(
        group_id=inp.group_id,
        slots=tuple(slots),
        steps=len(steps),
        makespan=t,
        retracted=part.retracted,
        tasks=tasks,
        multi_buffer=multi_buffer,
    )


def step_bounds(timeline: Timeline) -> list[tuple[int, int]]:
    """``(start, end)`` cycles of every step: from its first start to its last slot's end."""
    bounds: list[tuple[int, int]] = [(0, 0)] * timeline.steps
    seen = [False] * timeline.steps
    for s in timeline.slots:
        lo, hi = bounds[s.step]
        bounds[s.step] = (
            (s.start, s.end) if not seen[s.step] else (min(lo, s.start), max(hi, s.end))
        )
        seen[s.step] = True
    return bounds


def _iteration_text(iteration: tuple[int, ...]) -> str:
    return "[" + ",".join(str(i) for i in iteration) + "]" if iteration else ""


def format_timeline(timeline: Timeline) -> str:
    """The timeline as a text table: one row per step, one column per engine used.

    Examples:
        >>> from tx8lab.core.schedule.tasks import Buffer, ScheduleInput, Task
        >>> inp = ScheduleInput(3, (Task("ld:x", 0, "ld", 10, writes=("x",)),
        ...                         Task("st:x", 0, "st", 4, reads=("x",))),
        ...                     {"x": Buffer("x", 0, 64)})
        >>> print(format_timeline(sw_pipeline(inp)))
        group 3: 2 steps, makespan 14 cycles, 0 retracted, multi_buffer=2
        step  start    end  ld    st
           0      0     10  ld:x  .
           1     10     14  .     st:x
    """
    used = [e for e in ENGINES if any(s.engine == e for s in timeline.slots)]
    rows: list[list[str]] = [["." for _ in used] for _ in range(timeline.steps)]
    starts = [0] * timeline.steps
    ends = [0] * timeline.steps
    for index, (lo, hi) in enumerate(step_bounds(timeline)):
        starts[index], ends[index] = lo, hi
    for s in timeline.slots:
        rows[s.step][used.index(s.engine)] = s.task + _iteration_text(s.iteration)
    widths = [max([len(e), *(len(r[c]) for r in rows)]) for c, e in enumerate(used)]
    head = (
        f"group {timeline.group_id}: {timeline.steps} steps, makespan {timeline.makespan} "
        f"cycles, {timeline.retracted} retracted, multi_buffer={timeline.multi_buffer}"
    )

    def line(prefix: str, cells: Sequence[str]) -> str:
        return (
            prefix + "  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))
        ).rstrip()

    lines = [head, line(f"{'step':>4}  {'start':>5}  {'end':>5}", used)]
    for index, row in enumerate(rows):
        lines.append(line(f"{index:>4}  {starts[index]:>5}  {ends[index]:>5}", row))
    return "\n".join(lines)


__all__ = [
    "DEFAULT_MAX_INSTANCES",
    "Instance",
    "Memory",
    "Use",
    "check_input",
    "check_instances",
    "engines_pipeline",
    "expand",
    "format_timeline",
    "instance_count",
    "step_bounds",
    "sw_pipeline",
]
