"""layout_mincut: hand cases from seed 000's pictures, brute-force agreement, input errors."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tx8lab.core.passes.layout_mincut import (
    MAX_ENUMERABLE_FREE,
    ColoringProblem,
    bench,
    conflicting_nets,
    cost,
    random_problem,
    solve_brute_force,
    solve_optimal,
)
from tx8lab.errors import Tx8labError

A, N = True, False  # ALIGN, NALIGN


@st.composite
def problems(draw: Any, max_nodes: int = 18, max_free: int = 14) -> ColoringProblem:
    """A random problem with at most ``max_free`` free nodes.

    Nets may repeat a consumer, list the producer among its consumers, share a producer
    (a multi-result op) or have no consumer; nodes may be in no net.
    """
    # half of the draws at the largest sizes, where brute force is slowest to agree
    n = draw(st.just(max_nodes) | st.integers(0, max_nodes))
    if n == 0:
        return ColoringProblem(0, {}, [])
    num_free = draw(st.just(min(n, max_free)) | st.integers(0, min(n, max_free)))
    free = set(draw(st.permutations(range(n)))[:num_free])
    fixed = {v: draw(st.booleans()) for v in range(n) if v not in free}
    node = st.integers(0, n - 1)
    net = st.tuples(node, st.lists(node, max_size=4))
    nets = draw(st.lists(net, min_size=n // 2, max_size=2 * n))
    return ColoringProblem(n, fixed, nets)


def all_nalign(problem: ColoringProblem) -> list[bool]:
    return [problem.fixed.get(v, N) for v in range(problem.num_nodes)]


def follow_parent(problem: ColoringProblem) -> list[bool]:
    """Seed 000's greedy: a free op takes the color of its first (lowest) earlier producer."""
    parents: dict[int, list[int]] = {}
    for producer, consumers in problem.nets:
        for c in consumers:
            if producer < c:
                parents.setdefault(c, []).append(producer)
    colors: list[bool] = []
    for v in range(problem.num_nodes):
        if v in problem.fixed:
            colors.append(problem.fixed[v])
        elif v in parents:
            colors.append(colors[min(parents[v])])
        else:
            colors.append(N)
    return colors


def relabel(problem: ColoringProblem, perm: list[int]) -> ColoringProblem:
    """The same problem with node ``v`` renamed ``perm[v]``."""
    return ColoringProblem(
        problem.num_nodes,
        {perm[v]: c for v, c in problem.fixed.items()},
        [(perm[p], [perm[c] for c in cs]) for p, cs in problem.nets],
    )


# ---------------------------------------------------------------- hand cases


def test_chain_with_align_fixed_middle() -> None:
    # Input(N) -> relu -> Conv(A) -> relu -> output(N): the Conv clashes on both sides
    p = ColoringProblem(5, {0: N, 2: A, 4: N}, [(0, [1]), (1, [2]), (2, [3]), (3, [4])])
    colors = solve_optimal(p)
    assert cost(p, colors) == 2
    # either relu could be ALIGN at the same cost; both stay NALIGN (less memory)
    assert colors == [N, N, A, N, N]
    assert conflicting_nets(p, colors) == [1, 2]


def test_fan_out_shares_one_channel_norm() -> None:
    # Input(N) feeds three BOTH ops, each feeding a Conv(A); the greedy pays 3, the cut 1
    p = ColoringProblem(
        7,
        {0: N, 4: A, 5: A, 6: A},
        [(0, [1, 2, 3]), (1, [4]), (2, [5]), (3, [6])],
    )
    colors = solve_optimal(p)
    assert colors == [N, A, A, A, A, A, A]
    assert cost(p, colors) == 1
    assert cost(p, follow_parent(p)) == 3
    assert cost(p, all_nalign(p)) == 3


def test_fan_out_does_not_pay_when_one_branch_clashes() -> None:
    # Conv(A) feeds a BOTH op and an output(N): ALIGN on the BOTH op is free of charge
    # but not needed, so it stays NALIGN and shares the one ChannelNorm the output forces
    p = ColoringProblem(3, {0: A, 2: N}, [(0, [1, 2])])
    assert solve_optimal(p) == [A, N, N]
    assert cost(p, solve_optimal(p)) == 1


def test_diamond_converts_once_before_the_split() -> None:
    # Conv(A) -> {left, right} (BOTH) -> join output(N): one ChannelNorm after the Conv
    p = ColoringProblem(4, {0: A, 3: N}, [(0, [1, 2]), (1, [3]), (2, [3])])
    colors = solve_optimal(p)
    assert colors == [A, N, N, N]
    assert cost(p, colors) == 1
    assert cost(p, follow_parent(p)) == 2


def test_diamond_of_align_ops_stays_align() -> None:
    # Conv(A) -> two BOTH ops -> Pool(A): ALIGN throughout, no ChannelNorm
    p = ColoringProblem(4, {0: A, 3: A}, [(0, [1, 2]), (1, [3]), (2, [3])])
    assert solve_optimal(p) == [A, A, A, A]


def test_multi_result_producer_pays_per_result() -> None:
    # node 0 has two results: one read by an ALIGN op, one by a NALIGN op
    p = ColoringProblem(3, {1: A, 2: N}, [(0, [1]), (0, [2])])
    colors = solve_optimal(p)
    assert cost(p, colors) == 1
    assert colors == [N, A, N]


def test_degenerate_nets() -> None:
    # a net without consumers, a self-read and a repeated consumer cost as sets
    p = ColoringProblem(3, {0: A}, [(0, []), (1, [1]), (0, [2, 2, 0])])
    assert solve_optimal(p) == [A, N, A]
    assert cost(p, solve_optimal(p)) == 0


def test_all_fixed_nets_are_a_constant() -> None:
    p = ColoringProblem(4, {0: A, 1: N, 2: A}, [(0, [1]), (1, [2]), (2, [3])])
    colors = solve_optimal(p)
    assert colors == [A, N, A, A]
    assert cost(p, colors) == 2


def test_numpy_indices_are_accepted() -> None:
    p = ColoringProblem(np.int64(3), {np.int64(0): A}, [(np.int64(0), np.array([1, 2]))])
    assert p.nets == ((0, (1, 2)),)
    assert solve_optimal(p) == [A, A, A]


def test_free_nodes_outside_nets_are_nalign() -> None:
    assert solve_optimal(ColoringProblem(3, {}, [])) == [N, N, N]
    assert solve_optimal(ColoringProblem(3, {1: A}, [])) == [N, A, N]
    assert solve_optimal(ColoringProblem(0, {}, [])) == []


def test_problem_is_copied_and_frozen() -> None:
    fixed = {0: A}
    nets: list[tuple[int, list[int]]] = [(0, [1])]
    p = ColoringProblem(2, fixed, nets)
    fixed[1] = N
    nets[0][1].append(0)
    nets.append((1, [0]))
    assert dict(p.fixed) == {0: A}
    assert p.nets == ((0, (1,)),)
    with pytest.raises(TypeError):
        p.fixed[1] = N  # type: ignore[index]
    assert solve_optimal(p) == [A, A]
    assert p.free_nodes == [1]


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((-1, {}, []), "num_nodes must be an int >= 0"),
        ((True, {}, []), "num_nodes must be an int >= 0"),
        ((2, [0], []), "fixed must map node -> bool"),
        ((2, {2: A}, []), "fixed: node 2 is out of range"),
        ((2, {"0": A}, []), "fixed: node index must be an int"),
        ((2, {1: 1}, []), "fixed node 1: color must be True (ALIGN) or False (NALIGN)"),
        ((2, {1: "ALIGN"}, []), "fixed node 1: color must be True"),
        ((2, {}, "ab"), "nets must be a sequence"),
        ((2, {}, [(0,)]), "net 0: expected (producer, consumers)"),
        ((2, {}, [(0, [1]), (5, [1])]), "net 1: producer: node 5 is out of range (valid: 0..1)"),
        ((2, {}, [(0, [1, -1])]), "net 0: consumer: node -1 is out of range"),
        ((2, {}, [(0, 1)]), "net 0: consumers must be a sequence"),
        ((2, {}, [(0, [1.0])]), "net 0: consumer: node index must be an int"),
        ((0, {}, [(0, [])]), "valid: none: num_nodes is 0"),
    ],
)
def test_bad_problem_names_the_culprit(args: tuple[Any, Any, Any], message: str) -> None:
    with pytest.raises(Tx8labError) as info:
        ColoringProblem(*args)
    assert message in str(info.value)


def test_bad_coloring_is_reported() -> None:
    p = ColoringProblem(2, {0: A}, [(0, [1])])
    with pytest.raises(Tx8labError, match="1 colors for 2 nodes"):
        cost(p, [A])
    with pytest.raises(Tx8labError, match="node 1: color must be a bool"):
        cost(p, [A, 1])
    with pytest.raises(Tx8labError, match="node 0 is fixed ALIGN"):
        cost(p, [N, N])


def test_brute_force_limits() -> None:
    p = ColoringProblem(4, {}, [(0, [1, 2, 3])])
    with pytest.raises(Tx8labError, match="4 free nodes in nets, more than max_free=3"):
        solve_brute_force(p, max_free=3)
    with pytest.raises(Tx8labError, match="is above"):
        solve_brute_force(p, max_free=MAX_ENUMERABLE_FREE + 1)
    with pytest.raises(Tx8labError, match="max_free must be an int"):
        solve_brute_force(p, max_free=-1)
    # free nodes in no net are not enumerated
    assert solve_brute_force(ColoringProblem(40, {}, []), max_free=0) == [N] * 40


# ---------------------------------------------------------------- properties


@given(problems())
def test_optimal_equals_brute_force(p: ColoringProblem) -> None:
    optimal = solve_optimal(p)
    brute = solve_brute_force(p, max_free=14)
    assert cost(p, optimal) == cost(p, brute)
    # the fewest-ALIGN optimum is unique (module docstring, step 4): same coloring
    assert optimal == brute


@given(problems(max_nodes=12, max_free=8))
def test_brute_force_against_plain_enumeration(p: ColoringProblem) -> None:
    # the vectorised brute force, checked by cost() over every coloring
    free = p.free_nodes
    best = None
    for bits in itertools.product((N, A), repeat=len(free)):
        colors = all_nalign(p)
        for v, c in zip(free, bits, strict=True):
            colors[v] = c
        key = (cost(p, colors), sum(bits))
        best = key if best is None else min(best, key)
    brute = solve_brute_force(p)
    assert best == (cost(p, brute), sum(brute[v] for v in free))


@given(problems(max_nodes=40, max_free=40))
def test_optimal_beats_baselines_and_respects_fixed(p: ColoringProblem) -> None:
    colors = solve_optimal(p)
    assert len(colors) == p.num_nodes
    assert all(type(c) is bool for c in colors)
    assert all(colors[v] == c for v, c in p.fixed.items())
    best = cost(p, colors)
    assert best <= cost(p, all_nalign(p))
    assert best <= cost(p, follow_parent(p))
    assert len(conflicting_nets(p, colors)) == best


@given(problems(max_nodes=40, max_free=40), st.randoms(use_true_random=False))
def test_relabelling_permutes_the_answer(p: ColoringProblem, rnd: Any) -> None:
    # the tie-break is a property of the problem, not of node numbering
    perm = list(range(p.num_nodes))
    rnd.shuffle(perm)
    colors = solve_optimal(p)
    relabelled = solve_optimal(relabel(p, perm))
    assert [relabelled[perm[v]] for v in range(p.num_nodes)] == colors


@given(problems(max_nodes=40, max_free=40))
def test_swapping_colors_keeps_the_cost(p: ColoringProblem) -> None:
    swapped = ColoringProblem(p.num_nodes, {v: not c for v, c in p.fixed.items()}, p.nets)
    assert cost(swapped, solve_optimal(swapped)) == cost(p, solve_optimal(p))


@pytest.mark.parametrize("seed", range(10))
def test_dag_problems_equal_brute_force(seed: int) -> None:
    # the benchmark's shape (fan-out from a sliding window), small enough to enumerate
    p = random_problem(18, seed=seed, fixed_fraction=0.25)
    assert solve_optimal(p) == solve_brute_force(p)


# ---------------------------------------------------------------- size


def test_ten_thousand_nodes_solve() -> None:
    p = random_problem(10_000, seed=1)
    assert len(p.nets) > 8_000
    colors = solve_optimal(p)
    assert all(colors[v] == c for v, c in p.fixed.items())
    best = cost(p, colors)
    assert best < cost(p, all_nalign(p))
    assert best <= cost(p, follow_parent(p))
    # flipping any one free node never helps
    for v in p.free_nodes[:200]:
        flipped = list(colors)
        flipped[v] = not flipped[v]
        assert cost(p, flipped) >= best


def test_bench_reports_the_figures_of_its_problem() -> None:
    # small enough to enumerate: the bench's cost is the brute-force optimum of the
    # same problem, its NALIGN cost the one of every free node NALIGN, counted here
    figures = bench(num_nodes=18, seed=3)
    p = random_problem(18, seed=3)
    best = solve_brute_force(p)
    nalign = [p.fixed.get(v, False) for v in range(p.num_nodes)]
    assert figures["num_nodes"] == 18
    assert figures["num_nets"] == len(p.nets)
    assert figures["num_fixed"] == len(p.fixed)
    assert figures["cost"] == cost(p, best)
    assert figures["nalign_cost"] == cost(p, nalign)
    assert figures["aligned_free"] == sum(best[v] for v in p.free_nodes)
    assert set(figures) >= {"problem_s", "network_s", "flow_s", "solve_s"}
