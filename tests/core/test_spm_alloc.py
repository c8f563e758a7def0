"""spm-alloc: seed first fit, the best branch and bound, CSV I/O, errors, MiniMalloc A-K."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tx8lab.bench.alloc import BENCH_DIR, BEST_KNOWN, CASES, case_path
from tx8lab.core.schedule import spm_alloc
from tx8lab.core.schedule.spm_alloc import (
    Allocation,
    allocate,
    capacity_from_name,
    find_conflicts,
    first_fit,
    iter_allocations,
    lower_bound,
    peak_live_bytes,
    read_problem,
    read_solution,
    seed_order,
    write_problem,
    write_solution,
)
from tx8lab.core.schedule.tasks import Buffer, Lifetime
from tx8lab.errors import Tx8labError

CHECKER = BENCH_DIR / "check_solution.py"
EXAMPLE = BENCH_DIR / "input.12.csv"


def _peak(lts: list[Lifetime], offsets: dict[str, int]) -> int:
    return max((offsets[lt.id] + lt.size for lt in lts), default=0)


def _optimum(lts: list[Lifetime], alignments: dict[str, int] | None = None) -> int:
    """The minimal peak by brute force: first fit over every order.

    Pushing each buffer of any packing down, in order of offset, is a first fit that peaks
    no higher, so the best first fit over all orders is optimal.
    """
    return min(
        _peak(lts, first_fit(lts, order, alignments))
        for order in itertools.permutations(range(len(lts)))
    )


def _official_check(problem: Path, alloc: Allocation, tmp_path: Path, capacity: int) -> str:
    solution = tmp_path / f"{problem.stem}.solution.csv"
    write_solution(solution, alloc)
    done = subprocess.run(
        [sys.executable, str(CHECKER), str(problem), str(solution), "--capacity", str(capacity)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@st.composite
def problems(draw: st.DrawFn, max_buffers: int = 6) -> tuple[list[Lifetime], dict[str, int]]:
    """Small random problems: empty lifetimes, size-0 buffers, equal starts, alignments."""
    n = draw(st.integers(1, max_buffers))
    lts = []
    alignments = {}
    for i in range(n):
        lower = draw(st.integers(0, 12))
        length = draw(st.sampled_from([0, 1, 1, 2, 3, 4, 6, 9]))
        size = draw(st.sampled_from([0, 1, 2, 3, 4, 5, 8, 12]))
        lts.append(Lifetime(f"b{i}", lower, lower + length, size))
        align = draw(st.sampled_from([1, 1, 1, 2, 4]))
        if align > 1:
            alignments[f"b{i}"] = align
    return lts, alignments


# --------------------------------------------------------------------------- small cases


def test_half_open_lifetimes_share_bytes_and_first_fit_takes_the_lowest_gap() -> None:
    lts = [
        Lifetime("a", 0, 4, 8),
        Lifetime("b", 0, 8, 4),
        Lifetime("c", 4, 8, 8),  # starts when a ends: may take a's bytes
        Lifetime("d", 5, 6, 2),
    ]
    offsets = first_fit(lts, seed_order(lts))
    assert offsets == {"a": 0, "b": 8, "c": 0, "d": 12}
    assert peak_live_bytes(lts) == (14, 5)
    assert find_conflicts(lts, offsets, capacity=14) == []


def test_seed_order_is_by_start_and_stable_among_equal_starts() -> None:
    lts = [Lifetime("x", 3, 5, 1), Lifetime("y", 0, 9, 1), Lifetime("z", 3, 4, 1)]
    assert seed_order(lts) == [1, 0, 2]
    alloc = allocate(lts, 8, "seed")
    assert dict(alloc.offsets) == {"y": 0, "x": 1, "z": 2}
    assert (alloc.strategy, alloc.peak_bytes, alloc.lower_bound_bytes) == ("seed", 3, 3)


#: First fit by start puts "short" at 0, so "long" sits at 1 and "big" must go above it.
FRAGMENTING = [Lifetime("short", 0, 1, 1), Lifetime("long", 0, 3, 2), Lifetime("big", 1, 2, 4)]


def test_best_beats_seed_where_start_order_fragments() -> None:
    seed = allocate(FRAGMENTING, 64, "seed")
    best = allocate(FRAGMENTING, 64, "best", time_limit_s=5)
    assert dict(seed.offsets) == {"short": 0, "long": 1, "big": 3}
    assert (seed.peak_bytes, seed.status) == (7, "feasible")
    assert find_conflicts(FRAGMENTING, best.offsets, 64) == []
    assert best.peak_bytes == lower_bound(FRAGMENTING) == 6
    assert best.status == "optimal"


def test_alignment_is_honoured_and_can_force_a_peak_above_the_live_bound() -> None:
    lts = [Lifetime("a", 0, 4, 3), Lifetime("b", 0, 4, 3)]
    align = {"a": 2, "b": 2}
    best = allocate(lts, 16, "best", time_limit_s=5, alignments=align)
    assert sorted(best.offsets.values()) == [0, 4]
    assert (best.peak_bytes, best.lower_bound_bytes, best.status) == (7, 6, "optimal")
    assert best.proven_bound_bytes == 7
    assert find_conflicts(lts, best.offsets, 16, align) == []
    assert find_conflicts(lts, {"a": 0, "b": 3}, 16, align) == [
        "buffer 'b': offset 3 is not a multiple of 2"
    ]


def test_empty_and_zero_size_buffers_get_offset_zero_and_count_in_the_peak() -> None:
    lts = [Lifetime("never", 5, 5, 9), Lifetime("zero", 0, 4, 0), Lifetime("x", 0, 4, 3)]
    for strategy in ("seed", "best"):
        alloc = allocate(lts, 9, strategy, time_limit_s=5)
        assert alloc.offsets["never"] == alloc.offsets["zero"] == 0
        assert (alloc.peak_bytes, alloc.lower_bound_bytes, alloc.status) == (9, 3, "optimal")
    with pytest.raises(Tx8labError, match="'never' alone has 9 bytes"):
        allocate(lts, 8, "best")


def test_the_example_input_12(tmp_path: Path) -> None:
    problem = read_problem(EXAMPLE)
    assert [lt.id for lt in problem.lifetimes] == ["b1", "b2", "b3", "b4", "b5"]
    assert problem.capacity_bytes == 12  # "input.12.csv": MiniMalloc's name convention
    for strategy in ("seed", "best"):
        alloc = allocate(problem.lifetimes, 12, strategy, time_limit_s=5)
        assert (alloc.peak_bytes, alloc.lower_bound_bytes, alloc.status) == (12, 12, "optimal")
        assert find_conflicts(problem.lifetimes, alloc.offsets, 12) == []
        assert _official_check(EXAMPLE, alloc, tmp_path, 12).rstrip().endswith("VALID")


def test_dataframe_has_one_row_per_lifetime() -> None:
    lts = [Lifetime("a", 0, 4, 8, buffer="%3"), Lifetime("b", 2, 6, 4)]
    alloc = allocate(lts, 16)
    frame = alloc.to_dataframe()
    assert list(frame.columns) == ["id", "buffer", "op", "kind", "start", "end", "offset", "size"]
    assert frame.to_dict("records") == [
        {
            "id": "a",
            "buffer": "%3",
            "op": None,
            "kind": None,
            "start": 0,
            "end": 4,
            "offset": 0,
            "size": 8,
        },
        {
            "id": "b",
            "buffer": "b",
            "op": None,
            "kind": None,
            "start": 2,
            "end": 6,
            "offset": 8,
            "size": 4,
        },
    ]
    # with the schedule's buffers each row names its IR op and buffer kind
    named = alloc.to_dataframe({"%3": Buffer("%3", 3, 8, "psum")})
    assert named.loc[0, "op"] == 3
    assert named.loc[0, "kind"] == "psum"


def test_iterator_and_callback_see_strictly_better_packings() -> None:
    problem = read_problem(case_path("D"))
    seen: list[int] = []
    final = allocate(
        problem.lifetimes,
        1 << 20,
        "best",
        time_limit_s=2.0,
        on_improve=lambda a: seen.append(a.peak),
    )
    assert seen[-1] == final.peak_bytes
    distinct = list(dict.fromkeys(seen))
    assert distinct == sorted(distinct, reverse=True)
    assert len(distinct) >= 2
    assert final.nodes > 0
    assert final.status == "feasible"
    assert final.lower_bound_bytes <= final.proven_bound_bytes < final.peak_bytes


# --------------------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None)
@given(problems())
def test_both_strategies_pack_validly_and_best_is_optimal(
    case: tuple[list[Lifetime], dict[str, int]],
) -> None:
    lts, align = case
    roomy = sum(lt.size for lt in lts) + 8 * len(lts)
    seed = allocate(lts, roomy, "seed", alignments=align)
    best = allocate(lts, roomy, "best", time_limit_s=10, alignments=align)
    lb = lower_bound(lts)
    for alloc in (seed, best):
        assert find_conflicts(lts, alloc.offsets, roomy, align) == []
        assert alloc.peak_bytes == _peak(lts, dict(alloc.offsets)) >= lb
        assert alloc.lower_bound_bytes == lb
    assert seed.offsets == first_fit(lts, seed_order(lts), align)
    assert best.peak_bytes <= seed.peak_bytes
    assert best.peak_bytes == _optimum(lts, align)
    assert best.status == "optimal"
    assert best.proven_bound_bytes == best.peak_bytes


@settings(max_examples=80, deadline=None)
@given(problems(max_buffers=6))
def test_the_search_finds_the_optimum_and_proves_nothing_lower(
    case: tuple[list[Lifetime], dict[str, int]],
) -> None:
    lts, align = case
    live = [lt for lt in lts if lt.upper > lt.lower and lt.size > 0]
    if not live:
        return
    opt = _optimum(live, align)
    inst = spm_alloc._instance(live, align)
    assert opt % inst.unit == 0
    searcher = spm_alloc._Searcher(inst)
    status, sol = searcher.attempt(opt // inst.unit, 1 << 40, float("inf"))
    assert status == "found"
    assert sol is not None
    offsets = {live[i].id: int(sol[k]) * inst.unit for k, i in enumerate(inst.live)}
    assert find_conflicts(live, offsets, opt, align) == []
    assert searcher.attempt(opt // inst.unit - 1, 1 << 40, float("inf"))[0] == "infeasible"


@settings(max_examples=25, deadline=None)
@given(problems(max_buffers=16), st.randoms(use_true_random=False))
def test_first_fit_walks_lists_and_arrays_alike(
    case: tuple[list[Lifetime], dict[str, int]], rng: Any
) -> None:
    """Every walk of first fit gives the same offsets.

    Orders by start time take the sweep, other orders of a few lifetimes the plain-list
    walk, of many numpy's.
    """
    lts, align = case
    order = list(range(len(lts)))
    rng.shuffle(order)
    for walk in (order, seed_order(lts)):
        want = spm_alloc._first_fit_arrays(lts, walk, align)
        assert spm_alloc._first_fit_small(lts, walk, align) == want
        assert first_fit(lts, walk, align) == want
    # by start time, ties either way round: the sweep
    for by_start in (seed_order(lts), sorted(order, key=lambda i: (lts[i].lower, -i))):
        want = spm_alloc._first_fit_arrays(lts, by_start, align)
        assert spm_alloc._first_fit_by_start(lts, by_start, align) == want
    many = [
        Lifetime(f"{lt.id}.{k}", lt.lower + 3 * k, lt.upper + 3 * k, lt.size)
        for k in range(spm_alloc._SMALL // len(lts) + 1)
        for lt in lts
    ]
    assert len(many) > spm_alloc._SMALL
    for walk in (seed_order(many), list(reversed(seed_order(many)))):
        assert first_fit(many, walk) == spm_alloc._first_fit_small(many, walk, {})


@given(problems(max_buffers=16))
def test_larger_problems_pack_validly_and_best_never_loses_to_seed(
    case: tuple[list[Lifetime], dict[str, int]],
) -> None:
    lts, align = case
    roomy = sum(lt.size for lt in lts) + 8 * len(lts)
    seed = allocate(lts, roomy, "seed", alignments=align)
    best = allocate(lts, roomy, "best", time_limit_s=1, alignments=align)
    for alloc in (seed, best):
        assert find_conflicts(lts, alloc.offsets, roomy, align) == []
    assert lower_bound(lts) <= best.peak_bytes <= seed.peak_bytes
    assert best.proven_bound_bytes <= best.peak_bytes


@settings(max_examples=60, deadline=None)
@given(problems(max_buffers=5), st.integers(0, 24))
def test_a_strategy_raises_exactly_when_its_packing_cannot_fit(
    case: tuple[list[Lifetime], dict[str, int]], capacity: int
) -> None:
    lts, align = case
    seed_peak = _peak(lts, first_fit(lts, seed_order(lts), align))
    for strategy, needed in (("seed", seed_peak), ("best", _optimum(lts, align))):
        if needed > capacity:
            with pytest.raises(Tx8labError, match=f"does not fit in {capacity} bytes"):
                allocate(lts, capacity, strategy, time_limit_s=10, alignments=align)
        else:
            alloc = allocate(lts, capacity, strategy, time_limit_s=10, alignments=align)
            assert find_conflicts(lts, alloc.offsets, capacity, align) == []


# --------------------------------------------------------------------------- errors


def test_too_many_live_bytes_lists_the_buffers_at_that_moment() -> None:
    lts = [Lifetime("w", 0, 10, 6), Lifetime("x", 2, 5, 5), Lifetime("y", 3, 4, 1)]
    for strategy in ("seed", "best"):
        with pytest.raises(Tx8labError) as err:
            allocate(lts, 10, strategy)
        text = str(err.value)
        assert "does not fit in 10 bytes" in text
        assert "At time step 3, 3 buffers are live (12 bytes): w 6 B" in text
        assert "x 5 B" in text
        assert "y 1 B" in text
        assert "raise the capacity" in text


def test_seed_overflow_names_its_peak_moment_with_offsets() -> None:
    with pytest.raises(Tx8labError) as err:
        allocate(FRAGMENTING, 6, "seed")
    assert "first fit by start time peaks at 7 B. At time step 1, 2 buffers are live" in str(
        err.value
    )
    assert "big 4 B @ 3, long 2 B @ 1" in str(err.value)
    assert allocate(FRAGMENTING, 6, "best", time_limit_s=5).peak_bytes == 6


def test_best_reports_a_proof_or_a_timeout() -> None:
    lts = [Lifetime("a", 0, 4, 3), Lifetime("b", 0, 4, 3)]
    with pytest.raises(Tx8labError, match="the search proved that no packing fits"):
        allocate(lts, 6, "best", alignments={"a": 2, "b": 2})
    hard = read_problem(case_path("D")).lifetimes
    with pytest.raises(Tx8labError, match=r"no packing found in 0\.3 s .*At time step \d+"):
        allocate(hard, 1_000_000, "best", time_limit_s=0.3)


def test_a_node_budget_gives_the_same_packing_whatever_the_clock() -> None:
    """``node_limit`` counts work: the result does not depend on the machine's speed."""
    hard = read_problem(case_path("D")).lifetimes
    runs = []
    for _ in range(2):
        spm_alloc._BEST.clear()  # each run searches (allocate keeps its answer otherwise)
        runs.append(allocate(hard, 1 << 20, "best", time_limit_s=60, node_limit=150_000))
    assert runs[0].offsets == runs[1].offsets
    assert runs[0].nodes == runs[1].nodes
    assert 0 < runs[0].nodes <= 150_000
    assert runs[0].status == "feasible"  # D is not proven in so few nodes
    # a larger budget searches on from the same start and is never worse
    more = allocate(hard, 1 << 20, "best", time_limit_s=60, node_limit=600_000)
    assert runs[0].nodes < more.nodes <= 600_000
    assert more.peak_bytes <= runs[0].peak_bytes
    with pytest.raises(Tx8labError, match=r"no packing found in 1 nodes .*At time step \d+"):
        allocate(hard, 1_000_000, "best", time_limit_s=60, node_limit=1)


def test_bad_input_is_named() -> None:
    with pytest.raises(Tx8labError, match="'a' appears twice"):
        allocate([Lifetime("a", 0, 1, 1), Lifetime("a", 1, 2, 1)], 8)
    with pytest.raises(Tx8labError, match=r"lifetime 'r': \[3, 1\)"):
        allocate([Lifetime("r", 3, 1, 1)], 8)
    with pytest.raises(Tx8labError, match="unknown allocation strategy 'fast'"):
        allocate([], 8, "fast")
    with pytest.raises(Tx8labError, match="capacity must be"):
        allocate([], -1)
    with pytest.raises(Tx8labError, match="unknown lifetime id 'q'"):
        allocate([Lifetime("a", 0, 1, 1)], 8, alignments={"q": 4})
    with pytest.raises(Tx8labError, match="time_limit_s must be > 0"):
        allocate([Lifetime("a", 0, 1, 1)], 8, "best", time_limit_s=0)
    with pytest.raises(Tx8labError, match="node_limit must be >= 1"):
        allocate([Lifetime("a", 0, 1, 1)], 8, "best", node_limit=0)


# --------------------------------------------------------------------------- CSV


@settings(max_examples=30, deadline=None)
@given(case=problems())
def test_csv_round_trip(
    case: tuple[list[Lifetime], dict[str, int]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    lts, align = case
    folder = tmp_path_factory.mktemp("csv")
    path = folder / "p.4096.csv"
    write_problem(path, lts, align)
    back = read_problem(path)
    assert list(back.lifetimes) == lts
    assert dict(back.alignments) == align
    assert back.capacity_bytes == 4096
    alloc = allocate(lts, 10**6, "seed", alignments=align)
    write_solution(folder / "s.csv", alloc)
    assert read_solution(folder / "s.csv") == dict(alloc.offsets)


def test_csv_reads_minimalloc_aliases(tmp_path: Path) -> None:
    path = tmp_path / "old.csv"
    path.write_text("buffer_id,start,end,size,hint\nx,0,2,8,0\ny,3,3,4,\n")
    problem = read_problem(path)
    assert list(problem.lifetimes) == [Lifetime("x", 0, 3, 8), Lifetime("y", 3, 4, 4)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,lower,upper\n", "old.csv:1: missing column.s. size"),
        ("id,lower,upper,size,gaps\na,0,4,8,1-2\n", "old.csv:2: column 'gaps' is set"),
        ("id,lower,upper,size,offset\na,0,4,8,\nb,0,4,8,16\n", "old.csv:3: column 'offset'"),
        ("id,lower,upper,size\na,0,4,8\na,4,5,8\n", "old.csv:3: duplicate id 'a'"),
        ("id,lower,upper,size\na,0,4,eight\n", "old.csv:2: column 'size': 'eight'"),
        ("id,lower,upper,size\na,5,4,8\n", "old.csv:2: buffer 'a' has lower=5, upper=4"),
        ("id,lower,upper,size,alignment\na,0,4,8,0\n", "old.csv:2: column 'alignment'"),
        ("", "old.csv: empty file"),
    ],
)
def test_csv_errors_name_file_line_and_column(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "old.csv"
    path.write_text(text)
    with pytest.raises(Tx8labError, match=message):
        read_problem(path)


def test_csv_missing_file_and_capacity_from_name(tmp_path: Path) -> None:
    with pytest.raises(Tx8labError, match="no such file"):
        read_problem(tmp_path / "nope.csv")
    assert capacity_from_name("A.1048576.csv") == 1 << 20
    assert capacity_from_name("A.csv") is None


# --------------------------------------------------------------------------- MiniMalloc


@pytest.mark.parametrize("case", list(CASES))
def test_minimalloc_case_reaches_the_best_known_peak(case: str, tmp_path: Path) -> None:
    """Within capacity 2^20, valid by our checker and check_solution.py, peak <= best known.

    The search stops as soon as the best-known peak is reached (the full 10 s budget
    would only lower D and J further); no time is asserted.
    """
    path = case_path(case)
    problem = read_problem(path)
    assert problem.capacity_bytes == 1 << 20
    alloc = None
    for alloc in iter_allocations(problem.lifetimes, 1 << 20, time_limit_s=10):
        if alloc.peak_bytes <= BEST_KNOWN[case]:
            break
    assert alloc is not None
    assert alloc.peak_bytes <= BEST_KNOWN[case]
    assert alloc.lower_bound_bytes == lower_bound(problem.lifetimes)
    assert alloc.peak_bytes >= alloc.lower_bound_bytes
    assert find_conflicts(problem.lifetimes, alloc.offsets, 1 << 20) == []
    report = _official_check(path, alloc, tmp_path, 1 << 20)
    assert f"peak:        {alloc.peak_bytes}" in report


def test_minimalloc_seed_overflows_as_the_readme_greedy_does() -> None:
    problem = read_problem(case_path("A"))
    with pytest.raises(Tx8labError, match="first fit by start time peaks at"):
        allocate(problem.lifetimes, 1 << 20, "seed")


def test_the_search_proves_infeasibility_below_the_live_bound() -> None:
    lts = read_problem(case_path("C")).lifetimes
    inst = spm_alloc._instance(lts, {})
    searcher = spm_alloc._Searcher(inst)
    lb_units = lower_bound(lts) // inst.unit
    status, _ = searcher.attempt(lb_units - 1, 1 << 40, float("inf"))
    assert status == "infeasible"
    status, sol = searcher.attempt(lb_units, 1 << 40, float("inf"))
    assert status == "found"
    assert sol is not None
    assert int((sol + inst.arrays[2]).max()) == lb_units


def test_bench_table_rows_for_both_strategies() -> None:
    from tx8lab.bench.alloc import format_table, minimalloc_table

    rows = minimalloc_table(time_limit_s=5, cases="C")
    assert [(r["case"], r["strategy"]) for r in rows] == [("C", "seed"), ("C", "best")]
    seed, best = rows
    assert (seed["fits"], seed["valid"], seed["checker"]) == (False, False, False)
    assert seed["peak"] > best["peak"] == best["lower_bound"] == best["best_known"] == 1039360
    assert (best["status"], best["valid"], best["checker"]) == ("optimal", True, True)
    assert best["time_to_best_known_s"] is not None
    assert seed["time_to_best_known_s"] is None
    table = format_table(rows)
    assert table.splitlines()[2].split()[:4] == ["C", "best", "203", "1039360"]


def test_best_with_a_node_budget_keeps_its_answer_for_the_same_problem() -> None:
    lts = [Lifetime(f"b{i}", i % 5, i % 5 + 3 + i % 4, 8 * (1 + (i * 7) % 5)) for i in range(24)]
    spm_alloc._BEST.clear()
    first = allocate(lts, 1 << 12, "best", node_limit=5000)
    again = allocate(list(lts), 1 << 12, "best", node_limit=5000)
    assert len(spm_alloc._BEST) == 1
    for field in ("offsets", "lifetimes", "peak_bytes", "status", "nodes", "proven_bound_bytes"):
        assert getattr(again, field) == getattr(first, field), field
    assert again.offsets is not first.offsets  # the caller's own
    # what it answers does not hang on the node budget's wall clock: without one, or with an
    # on_improve view, the search runs again
    seen: list[Allocation] = []
    allocate(lts, 1 << 12, "best", node_limit=5000, on_improve=seen.append)
    assert seen
    allocate(lts, 1 << 12, "best")
    assert len(spm_alloc._BEST) == 1
    # a figure that only equals an int is the input check's to refuse, kept answer or not
    with pytest.raises(Tx8labError, match="capacity must be a whole number"):
        allocate(lts, True, "best", node_limit=5000)  # type: ignore[arg-type]
