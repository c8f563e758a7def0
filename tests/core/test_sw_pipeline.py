"""sw-pipeline (tx8lab.core.schedule.sw_pipeline): Repeat expansion, retraction, engine slots.

Golden timelines are in ``tests/golden_schedule/<case>.txt`` (``format_timeline`` output);
rewrite them after a deliberate change with ``python -m tests.core.test_sw_pipeline``.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tx8lab.core.schedule.sw_pipeline import (
    engines_pipeline,
    expand,
    format_timeline,
    sw_pipeline,
)
from tx8lab.core.schedule.tasks import (
    ENGINES,
    Buffer,
    Node,
    Repeat,
    ScheduleInput,
    Task,
    Timeline,
)
from tx8lab.errors import Tx8labError

GOLDEN = Path(__file__).resolve().parent.parent / "golden_schedule"


# ----------------------------------------------------------------------------- cases


def load_compute_store() -> ScheduleInput:
    """A flat chain: two loads, a matmul, a store (one segment: nothing to retract)."""
    nodes = (
        Task("ld:%0", 0, "ld", 40, writes=("%0",)),
        Task("ld:%1", 1, "ld", 20, writes=("%1",)),
        Task("ne:%2", 2, "ne", 100, reads=("%0", "%1"), writes=("%2",)),
        Task("st:%2", 2, "st", 30, reads=("%2",)),
    )
    bufs = {"%0": Buffer("%0", 0, 4096), "%1": Buffer("%1", 1, 2048), "%2": Buffer("%2", 2, 1024)}
    return ScheduleInput(1, nodes, bufs)


def batchnorm_loop() -> ScheduleInput:
    """A BatchNorm loop with its parameter hoisted: params once, then load -> compute -> store x 4.

    Not seed 001's loop as written (that is :func:`batchnorm_seed_loop`): the seed's main.c
    loads Input, scale, shift, mean and varience inside ``while (!input_done)``, every
    iteration. This case loads its one parameter (scale) once before the Repeat, as
    tx8lab's group schedule does for the parameters the kernel only reads (scale, shift,
    mean; it reloads the variance, which the kernel's steps 4-5 overwrite), so that the
    Repeat has a segment before it to retract into. After the loop a CT op on the params
    and its store (a segment boundary to retract at).
    """
    nodes: tuple[Node, ...] = (
        Task("ld:scale", 1, "ld", 10, writes=("scale",)),
        Repeat(
            4,
            (
                Task("ld:in", 0, "ld", 40, writes=("in",)),
                Task(
                    "ct:bn",
                    2,
                    "ct",
                    60,
                    reads=("in", "scale", "bn.imm"),
                    writes=("out", "bn.imm"),
                ),
                Task("st:out", 2, "st", 30, reads=("out",)),
            ),
            stage="STAGEOC2NH",
        ),
        Task("ct:post", 3, "ct", 5, reads=("scale",), writes=("post",)),
        Task("st:post", 3, "st", 5, reads=("post",)),
    )
    bufs = {
        "in": Buffer("in", 0, 4096),
        "scale": Buffer("scale", 1, 256),
        "out": Buffer("out", 2, 4096),
        "bn.imm": Buffer("bn.imm", 2, 8192, kind="imm"),
        "post": Buffer("post", 3, 256),
    }
    return ScheduleInput(2, nodes, bufs)


#: The parameters of seed 001's BatchNorm, in its main.c load order.
BN_PARAMS = ("scale", "shift", "mean", "var")


def batchnorm_seed_loop() -> ScheduleInput:
    """Seed 001's BatchNorm main.c loop as written, 4 iterations.

    ``while (!input_done) { op_dma_load Input; op_dma_load scale, shift, mean, varience;
    op_batchnorm_inference; op_store_var_ncx out; }``: the slice and all four parameters
    are loaded in every iteration, and the kernel overwrites the variance in place (seed
    "BatchNorm Design" steps 4-5: ``addVS`` and ``rsqrt`` on ``varAddr``), so ``ct:bn``
    reads and writes ``var``. Nothing follows the loop.
    """
    body = (
        Task("ld:in", 0, "ld", 40, writes=("in",)),
        *(Task(f"ld:{p}", 1 + i, "ld", 10, writes=(p,)) for i, p in enumerate(BN_PARAMS)),
        Task(
            "ct:bn",
            5,
            "ct",
            60,
            reads=("in", *BN_PARAMS, "bn.imm"),
            writes=("out", "var", "bn.imm"),
        ),
        Task("st:out", 5, "st", 30, reads=("out",)),
    )
    bufs = {
        "in": Buffer("in", 0, 4096),
        **{p: Buffer(p, 1 + i, 256) for i, p in enumerate(BN_PARAMS)},
        "out": Buffer("out", 5, 4096),
        "bn.imm": Buffer("bn.imm", 5, 8192, kind="imm"),
    }
    return ScheduleInput(2, (Repeat(4, body, stage="STAGEOC2NH"),), bufs)


def nested_psum() -> ScheduleInput:
    """A matmul split in K (inner Repeat 3, accumulating a psum) over 2 output slices."""
    inner = Repeat(
        3,
        (
            Task("ld:a", 0, "ld", 20, writes=("a",)),
            Task("ld:b", 1, "ld", 20, writes=("b",)),
            Task("ne:mm", 2, "ne", 50, reads=("a", "b", "acc"), writes=("acc",)),
        ),
        stage="STAGEIC2IC",
    )
    nodes: tuple[Node, ...] = (
        Repeat(2, (inner, Task("st:acc", 2, "st", 30, reads=("acc",))), stage="STAGEOC2NH"),
    )
    bufs = {
        "a": Buffer("a", 0, 1024),
        "b": Buffer("b", 1, 1024),
        "acc": Buffer("acc", 2, 2048, kind="psum"),
    }
    return ScheduleInput(3, nodes, bufs)


def in_place_loop() -> ScheduleInput:
    """Load -> Relu in place of the load -> store, twice."""
    nodes: tuple[Node, ...] = (
        Repeat(
            2,
            (
                Task("ld:x", 0, "ld", 10, writes=("x",)),
                Task("ct:relu", 1, "ct", 10, reads=("x",), writes=("r",)),
                Task("st:r", 1, "st", 10, reads=("r",)),
            ),
        ),
    )
    bufs = {"x": Buffer("x", 0, 512), "r": Buffer("r", 1, 512, in_place_of="x")}
    return ScheduleInput(4, nodes, bufs)


#: golden case -> timeline
CASES: dict[str, Callable[[], Timeline]] = {
    "load_compute_store": lambda: sw_pipeline(load_compute_store()),
    "batchnorm_loop": lambda: sw_pipeline(batchnorm_loop()),
    "batchnorm_loop_mb1": lambda: sw_pipeline(batchnorm_loop(), multi_buffer=1),
    "batchnorm_loop_no_retract": lambda: sw_pipeline(batchnorm_loop(), retract=False),
    "batchnorm_seed_loop": lambda: sw_pipeline(batchnorm_seed_loop()),
    "batchnorm_seed_loop_mb1": lambda: sw_pipeline(batchnorm_seed_loop(), multi_buffer=1),
    "nested_psum": lambda: sw_pipeline(nested_psum()),
    "nested_psum_mb1": lambda: sw_pipeline(nested_psum(), multi_buffer=1),
}


# ----------------------------------------------------------------------------- random inputs


@st.composite
def schedule_inputs(draw: st.DrawFn, max_nodes: int = 4, max_depth: int = 2) -> ScheduleInput:
    """Random well-formed inputs: tasks read only buffers written earlier in program text.

    Covers nested Repeats, psum accumulation, in-place results and imm scratch buffers.
    """
    buffers: dict[str, Buffer] = {}
    written: list[str] = []
    count = [0]

    def task() -> Task:
        n = count[0]
        count[0] += 1
        engine = draw(st.sampled_from(ENGINES))
        cycles = draw(st.integers(0, 50))
        reads = list(
            draw(st.lists(st.sampled_from(written), max_size=2, unique=True)) if written else []
        )
        flavour = draw(
            st.sampled_from(["value", "value", "value", "in_place", "psum", "imm", "none"])
        )
        out = f"b{n}"
        writes: list[str] = []
        if flavour == "in_place" and reads:
            buffers[out] = Buffer(out, n, draw(st.integers(1, 64)), in_place_of=reads[0])
            writes.append(out)
        elif flavour == "psum":
            buffers[out] = Buffer(out, n, draw(st.integers(1, 64)), kind="psum")
            reads.append(out)
            writes.append(out)
        elif flavour != "none":
            buffers[out] = Buffer(out, n, draw(st.integers(1, 64)))
            writes.append(out)
        if flavour == "imm":
            imm = f"b{n}.imm"
            buffers[imm] = Buffer(imm, n, 16, kind="imm")
            reads.append(imm)
        written.extend(w for w in writes)
        return Task(f"t{n}", n, engine, cycles, reads=tuple(reads), writes=tuple(writes))

    def body(depth: int) -> tuple[Node, ...]:
        nodes: list[Node] = []
        for _ in range(draw(st.integers(1, max_nodes))):
            if depth < max_depth and draw(st.integers(0, 3)) == 0:
                nodes.append(Repeat(draw(st.integers(1, 4)), body(depth + 1)))
            else:
                nodes.append(task())
        return tuple(nodes)

    return ScheduleInput(0, body(0), buffers)


def instances(
    nodes: Sequence[Node], iteration: tuple[int, ...] = ()
) -> list[tuple[Task, tuple[int, ...]]]:
    """Program-order task instances, enumerated independently of the module under test."""
    out: list[tuple[Task, tuple[int, ...]]] = []
    for node in nodes:
        if isinstance(node, Task):
            out.append((node, iteration))
        else:
            for i in range(node.times):
                out.extend(instances(node.body, (*iteration, i)))
    return out


# ----------------------------------------------------------------------------- tests


def _golden(name: str) -> Path:
    return GOLDEN / f"{name}.txt"


def _split_golden(name: str) -> tuple[str, str]:
    """``(comment, timeline)`` of a golden: its leading ``#`` lines say what it shows."""
    lines = _golden(name).read_text().splitlines(keepends=True)
    head = 0
    while head < len(lines) and lines[head].startswith("#"):
        head += 1
    return "".join(lines[:head]), "".join(lines[head:])


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_timeline(name: str) -> None:
    assert format_timeline(CASES[name]()) + "\n" == _split_golden(name)[1]


def test_repeat_retraction_counts() -> None:
    # mb=2: after the first iteration each iteration adds one step (ld | ct | st overlap)
    t = sw_pipeline(batchnorm_loop())
    assert (t.steps, t.retracted) == (8, 7)
    # mb=1: ld of i+1 waits for ct of i (WAR on the one `in` buffer): two steps each
    t1 = sw_pipeline(batchnorm_loop(), multi_buffer=1)
    assert (t1.steps, t1.retracted) == (11, 4)
    off = sw_pipeline(batchnorm_loop(), retract=False)
    assert (off.steps, off.retracted) == (15, 0)
    assert (
        t.makespan
        < t1.makespan
        < off.makespan
        == sum(task.cycles for task, _ in instances(batchnorm_loop().nodes))
    )


def test_the_seeds_batchnorm_loop_by_hand() -> None:
    # seed 001's loop: ld:in (40), ld:scale, ld:shift, ld:mean, ld:var (10 each), ct:bn
    # (60), st:out (30), 7 tasks x 4 iterations, one ld engine for the five loads.
    # mb=2: iteration i+1 joins with k=2: ld:in[i+1] beside ct:bn[i] and ld:scale[i+1]
    # beside st:out[i] (other copies of in and scale); k=3 puts ld:in[i+1] on ld:var[i]'s
    # ld slot. 7 + 3 x 5 = 22 steps, 3 x 2 = 6 retracted. Time: 80 for the first five
    # loads, then per later iteration 60 (ct | ld:in) + 30 (st | ld:scale) + 3 x 10; then
    # ct:bn[3] 60 and st:out[3] 30: 80 + 3 x 120 + 90 = 530.
    t = sw_pipeline(batchnorm_seed_loop())
    assert (t.steps, t.retracted, t.makespan) == (22, 6, 530)
    # mb=1: ld:in[i+1] overwrites the `in` that ct:bn[i] reads, so it waits (k=1, beside
    # st:out[i]): 7 + 3 x 6 = 25 steps; 80 + 3 x (60 + 40 + 40) + 90 = 590
    t1 = sw_pipeline(batchnorm_seed_loop(), multi_buffer=1)
    assert (t1.steps, t1.retracted, t1.makespan) == (25, 3, 590)
    off = sw_pipeline(batchnorm_seed_loop(), retract=False)
    assert (off.steps, off.retracted, off.makespan) == (28, 0, 4 * (80 + 60 + 30))
    # every iteration loads all four parameters again, as the seed's main.c does
    loads = [s.task for s in t.slots if s.engine == "ld"]
    assert all(loads.count(f"ld:{p}") == 4 for p in BN_PARAMS)


def test_largest_valid_retraction_not_the_first_failing_one() -> None:
    # tail [ld][ct], head [ct][ld]: k=1 clashes on ct, k=2 fits ct beside ld, ld beside ct
    nodes = (
        Task("ld:a", 0, "ld", 5, writes=("a",)),
        Task("ct:b", 1, "ct", 5, writes=("b",)),
        Repeat(
            1, (Task("ct:c", 2, "ct", 5, writes=("c",)), Task("ld:d", 3, "ld", 5, writes=("d",)))
        ),
    )
    bufs = {x: Buffer(x, i, 8) for i, x in enumerate("abcd")}
    t = sw_pipeline(ScheduleInput(0, nodes, bufs))
    assert (t.steps, t.retracted) == (2, 2)
    assert [(s.task, s.step) for s in t.slots] == [
        ("ld:a", 0),
        ("ct:c", 0),
        ("ld:d", 1),
        ("ct:b", 1),
    ]


def test_dependence_blocks_retraction() -> None:
    # the head reads what the tail writes: no overlay even though engines differ
    nodes = (
        Task("ld:a", 0, "ld", 5, writes=("a",)),
        Repeat(2, (Task("ct:b", 1, "ct", 5, reads=("a",), writes=("b",)),)),
    )
    bufs = {"a": Buffer("a", 0, 8), "b": Buffer("b", 1, 8)}
    t = sw_pipeline(ScheduleInput(0, nodes, bufs))
    assert (t.steps, t.retracted) == (3, 0)


def test_psum_initialises_at_iteration_zero_of_its_reduction_loop() -> None:
    inst = expand(nested_psum())
    mm = [i for i in inst if i.task.id == "ne:mm"]
    assert [i.iteration for i in mm] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    # iteration 0 reads no psum and writes a fresh generation; later ones accumulate
    assert [[u.buffer for u in i.reads] for i in mm] == [["a", "b"]] + [["a", "b", "acc"]] * 2 + [
        ["a", "b"]
    ] + [["a", "b", "acc"]] * 2
    assert [(i.writes[0].generation, i.writes[0].copy) for i in mm] == [(0, 0)] * 3 + [(1, 1)] * 3
    assert [
        (i.writes[0].generation, i.writes[0].copy)
        for i in expand(nested_psum(), 1)
        if i.task.id == "ne:mm"
    ] == [(0, 0)] * 3 + [(1, 0)] * 3


def test_an_input_expanded_again_gives_the_same_instances_in_a_list_of_its_own() -> None:
    inp = nested_psum()
    first = expand(inp)
    again = expand(inp)
    assert again == first
    assert again is not first
    again.clear()  # the caller's own list: the next caller still gets every instance
    assert expand(inp) == first
    assert [i.writes[0].copy for i in expand(inp, 1) if i.task.id == "ne:mm"] == [0] * 6
    # an equal input is another object: expanded on its own, to the same instances
    assert expand(nested_psum()) == first
    with pytest.raises(Tx8labError, match="multi_buffer=0"):
        expand(inp, 0)


def test_in_place_result_lives_in_its_source_memory() -> None:
    relu = [i for i in expand(in_place_loop()) if i.task.id == "ct:relu"]
    assert [(u.buffer, u.root, u.generation, u.copy) for i in relu for u in i.writes] == [
        ("r", "x", 0, 0),
        ("r", "x", 1, 1),
    ]


def test_multi_buffer_1_keeps_war_order() -> None:
    t = sw_pipeline(in_place_loop(), multi_buffer=1)
    step = {(s.task, s.iteration): s.step for s in t.slots}
    # the second load overwrites x (and r, in place): only after st:r of iteration 0
    assert step[("ld:x", (1,))] > step[("st:r", (0,))]
    t2 = sw_pipeline(in_place_loop(), multi_buffer=2)
    step2 = {(s.task, s.iteration): s.step for s in t2.slots}
    assert step2[("ld:x", (1,))] == step2[("ct:relu", (0,))]


def test_engines_pipeline_conflict_opens_a_new_step() -> None:
    inp = load_compute_store()
    a, b, c, d = expand(inp)
    steps = engines_pipeline([[a, c, b, d]])  # ld, ne, ld, st: the second ld clashes
    assert [{e: i.task.id for e, i in s.items()} for s in steps] == [
        {"ld": "ld:%0", "ne": "ne:%2"},
        {"ld": "ld:%1", "st": "st:%2"},
    ]


def test_cycles_step_lasts_its_longest_task_plus_overhead() -> None:
    t = sw_pipeline(batchnorm_loop(), step_overhead_cycles=7)
    base = sw_pipeline(batchnorm_loop())
    assert t.makespan == base.makespan + 7 * base.steps
    starts = sorted({(s.step, s.start) for s in t.slots})
    assert starts[:3] == [(0, 0), (1, 17), (2, 64)]


@pytest.mark.parametrize(
    ("inp", "match"),
    [
        (
            ScheduleInput(0, (Task("a", 0, "ld", 1, reads=("x",)),), {"x": Buffer("x", 0, 8)}),
            "before any task writes",
        ),
        (ScheduleInput(0, (Task("a", 0, "ld", 1, writes=("y",)),), {}), "not in buffers"),
        (ScheduleInput(0, (Task("a", 0, "npu", 1),), {}), "engine 'npu'"),  # type: ignore[arg-type]
        (ScheduleInput(0, (Task("a", 0, "ld", -1),), {}), "negative cycles"),
        (ScheduleInput(0, (Task("a", 0, "ld", 1), Task("a", 0, "st", 1)), {}), "appears twice"),
        (ScheduleInput(0, (Repeat(0, (Task("a", 0, "ld", 1),)),), {}), "times=0"),
        (
            ScheduleInput(
                0,
                (),
                {"x": Buffer("x", 0, 8, in_place_of="y"), "y": Buffer("y", 0, 8, in_place_of="x")},
            ),
            "in-place cycle",
        ),
        (
            ScheduleInput(
                0,
                (Task("a", 0, "ct", 1, writes=("i",)), Task("b", 0, "ne", 1, reads=("i",))),
                {"i": Buffer("i", 0, 8, kind="imm")},
            ),
            "belongs to one task",
        ),
    ],
)
def test_bad_input_is_named(inp: ScheduleInput, match: str) -> None:
    with pytest.raises(Tx8labError, match=match):
        sw_pipeline(inp)


def test_bad_multi_buffer() -> None:
    with pytest.raises(Tx8labError, match="multi_buffer=0"):
        sw_pipeline(load_compute_store(), multi_buffer=0)


@given(schedule_inputs(), st.sampled_from([1, 2, 3]))
def test_pipeline_properties(inp: ScheduleInput, multi_buffer: int) -> None:
    t = sw_pipeline(inp, multi_buffer=multi_buffer)
    program = instances(inp.nodes)
    # every task instance appears exactly once
    assert Counter((s.task, s.iteration) for s in t.slots) == Counter(
        (task.id, it) for task, it in program
    )
    # one task per engine per step, and every step is used
    assert len({(s.step, s.engine) for s in t.slots}) == len(t.slots)
    assert {s.step for s in t.slots} == set(range(t.steps))
    step = {(s.task, s.iteration): s.step for s in t.slots}
    # dependences: a reader runs after the last writer of the buffer (psum initial reads
    # excepted); with one buffer per value, a fresh write runs after the earlier readers
    last_writer: dict[str, tuple[str, tuple[int, ...]]] = {}
    readers: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    for task, it in program:
        here = step[(task.id, it)]
        initial = not it or it[-1] == 0
        for b in task.reads:
            buf = inp.buffers[b]
            if buf.kind == "imm" or (buf.kind == "psum" and b in task.writes and initial):
                continue
            assert step[last_writer[b]] < here, (b, task.id, it)
            readers.setdefault(b, []).append((task.id, it))
        for b in task.writes:
            buf = inp.buffers[b]
            if buf.kind == "imm":
                continue
            if buf.in_place_of is not None:
                assert step[last_writer[buf.in_place_of]] < here
            fresh = buf.in_place_of is None and (
                b not in task.reads or (buf.kind == "psum" and initial)
            )
            if multi_buffer == 1 and fresh:
                assert all(step[r] < here for r in readers.get(b, []) if r != (task.id, it))
            if fresh:
                readers[b] = []
            last_writer[b] = (task.id, it)
    # cycles: each step lasts its longest task; makespan >= every engine's busy time
    busy = Counter[str]()
    for s in t.slots:
        busy[s.engine] += s.end - s.start
        assert s.end - s.start == t.tasks[s.task].cycles
    assert t.makespan >= max(busy.values(), default=0)
    assert t.makespan == sum(
        max(s.end - s.start for s in t.slots if s.step == k) for k in range(t.steps)
    )
    # retraction never adds a step; without it every instance has its own step; each
    # retracted instance joins a step that already existed
    off = sw_pipeline(inp, multi_buffer=multi_buffer, retract=False)
    assert off.steps == len(program)
    assert off.retracted == 0
    assert t.steps == len(program) - t.retracted <= off.steps


def _write_goldens() -> None:
    """Rewrite each golden's timeline, keeping its comment (a new golden needs one by hand)."""
    GOLDEN.mkdir(exist_ok=True)
    for name, make in sorted(CASES.items()):
        comment = _split_golden(name)[0] if _golden(name).exists() else ""
        _golden(name).write_text(comment + format_timeline(make()) + "\n")
        print(f"wrote {_golden(name)}")


if __name__ == "__main__":
    _write_goldens()
    sys.exit(0)
