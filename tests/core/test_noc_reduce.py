"""Partial sums over the NoC: a reduction dim sharded across tiles, all-reduced.

Oracles: a replay of each all-reduce plan on numbers (numpy's sum), the interpreter for
the executed program, and hand counts of the commands.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from tx8lab.core.builder import Builder
from tx8lab.core.execute import compare_outputs, execute_module
from tx8lab.core.hostmodel import run_program
from tx8lab.core.interpret import interpret, random_inputs
from tx8lab.core.ir import Module
from tx8lab.core.passes import build_pipeline
from tx8lab.core.program import Program, build_program, strategy_of
from tx8lab.core.runner import run_pipeline
from tx8lab.core.schedule.slicing import groups_of
from tx8lab.core.simulate import simulate_program, simulate_schedule
from tx8lab.errors import ProgramError
from tx8lab.hw.collectives import PATTERNS, allreduce_plan
from tx8lab.hw.presets import resolve_hw

HW = resolve_hw([])


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 16])
def test_every_position_ends_with_the_same_sum(pattern: Any, n: int) -> None:
    plan = allreduce_plan(n, pattern)
    rng = np.random.default_rng(n)
    parts = rng.standard_normal((n, plan.chunks, 7))
    held = parts.copy()
    slots: dict[int, set[int]] = {}
    for r in sorted({t.round for t in plan.transfers}):
        now = [t for t in plan.transfers if t.round == r]
        sent = {id(t): held[t.src, t.chunk].copy() for t in now}  # sends read first
        for t in now:
            if t.add:
                assert t.slot not in slots.setdefault(t.dst, set()), "a staging slot reused"
                slots[t.dst].add(t.slot)
                held[t.dst, t.chunk] += sent[id(t)]
            else:
                held[t.dst, t.chunk] = sent[id(t)]
    want = parts.sum(axis=0)
    for p in range(n):
        np.testing.assert_allclose(held[p], want, rtol=1e-12)
        assert np.array_equal(held[p], held[0]), "one sum, copied: every tile the same bits"
    assert plan.slots == max((len(s) for s in slots.values()), default=0)


def test_plans_by_hand() -> None:
    tree = allreduce_plan(4, "tree")
    # up the binomial tree (1->0, 3->2, then 2->0), back down (0->2, then 0->1, 2->3)
    assert [(t.src, t.dst, t.add) for t in tree.transfers] == [
        (1, 0, True), (3, 2, True), (2, 0, True), (0, 2, False), (0, 1, False), (2, 3, False),
    ]  # fmt: skip
    ring = allreduce_plan(3, "ring")
    assert ring.chunks == 3
    assert len(ring.transfers) == 2 * 2 * 3
    assert [t.chunk for _, t in ring.steps(0)][:2] == [0, 2]  # sends its own chunk, gets chunk 2


def _matmul() -> Module:
    b = Builder()
    x = b.input((1, 1, 1024), "f16")
    b.output(b.op("MatMul", x, b.weight((1024, 64), "f16")))
    return b.finish()


def _scheduled(noc: bool, hw: Any = HW) -> Module:
    knobs = {"group-cost.noc": noc}
    return list(run_pipeline(_matmul(), build_pipeline(None, knobs), hw))[-1].result.module


def _matmul_strategy(module: Module) -> Any:
    for g in groups_of(module):
        for op in g.regions[0].ops:
            if op.kind == "tx8be.MatMul":
                return strategy_of(g).ops[op.id]
    raise AssertionError("no MatMul group")


@pytest.fixture(scope="module")
def k_sharded() -> tuple[Module, Program]:
    module = _scheduled(True)
    return module, build_program(module, HW)


def test_noc_off_keeps_every_reduction_dim_whole() -> None:
    st = _matmul_strategy(_scheduled(False))
    assert st.shard[-1] == 1  # K


def test_the_search_shards_k_and_the_program_sums_over_the_noc(
    k_sharded: tuple[Module, Program],
) -> None:
    module, program = k_sharded
    st = _matmul_strategy(module)
    ways = st.shard[-1]
    assert ways > 1  # the decode product: each tile reads 1/ways of the weight
    sends = [c for cs in program.tiles.values() for c in cs if c.what == "send"]
    recvs = [c for cs in program.tiles.values() for c in cs if c.what == "recv"]
    assert sends
    assert len(sends) == len(recvs)
    assert sorted(c.tag for c in sends) == sorted(c.tag for c in recvs)
    assert all(c.peer != c.tile for c in sends)
    ex = execute_module(module, HW, via="program")
    assert ex.ok, ex.summary()
    sim = simulate_program(program, module, HW)
    assert sum(sim.link_bytes().values()) > 0


def test_a_lost_add_gives_a_wrong_answer(k_sharded: tuple[Module, Program]) -> None:
    module, program = k_sharded
    # every tile drops its first add (the tiles past the K shard's product repeat the
    # same reduction groups and store the same bytes: one good group would hide it)
    tiles = {}
    for tile, cs in program.tiles.items():
        commands = list(cs)
        commands.remove(next(c for c in commands if c.what == "reduce"))
        tiles[tile] = tuple(commands)
    broken = dataclasses.replace(program, tiles=tiles)
    args = random_inputs(module, 0)
    got = run_program(broken, module, args, HW.tile.spm_bytes).outputs
    diffs = compare_outputs(got, interpret(module, args), ["f16"], "f16")
    assert not all(d.ok for d in diffs)


def test_a_receive_with_no_send_deadlocks(k_sharded: tuple[Module, Program]) -> None:
    module, program = k_sharded
    tile = next(t for t, cs in program.tiles.items() if any(c.what == "send" for c in cs))
    commands = [c for c in program.tiles[tile] if c.what != "send"]
    broken = dataclasses.replace(program, tiles={**program.tiles, tile: tuple(commands)})
    with pytest.raises(ProgramError, match="deadlocks: every tile left waits in a receive"):
        run_program(broken, module, random_inputs(module, 0), HW.tile.spm_bytes)


def test_the_search_and_its_view_keep_the_communicating_candidates_apart() -> None:
    from tx8lab.core.schedule.search import search_group, space_size
    from tx8lab.widgets.factor_space import factor_space_figure

    module = _scheduled(False)
    group = next(
        g for g in groups_of(module) if any(o.kind == "tx8be.MatMul" for o in g.regions[0].ops)
    )
    # K = 1024 over 2, 4, 8, 16 tiles: four more walks over the levels of 8, 4, 2, 1 tiles
    assert space_size(group, HW, noc=True) > space_size(group, HW)
    got = search_group(group, HW, noc=True, timer=simulate_schedule)  # as group-cost ranks
    comm = {c.comm for c in got.candidates}
    assert comm == {"none", "k-reduce"}
    assert all(("K/" in c.sharding) == (c.comm == "k-reduce") for c in got.candidates)
    assert got.best is not None
    assert got.best.comm == "k-reduce"
    fig = factor_space_figure(got)
    triangles = [t for t in fig.data if (t.meta or {}).get("comm") == "k-reduce"]
    assert triangles
    assert all(t.marker.symbol == "triangle-up" for t in triangles)


def test_one_all_reduce_is_simulated_once_whatever_the_piece_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two pieces of the same bytes on the same tiles are one all-reduce: one simulation."""
    from tx8lab.core.schedule import slicing

    calls: list[int] = []
    real = slicing.collectives.allreduce_over_noc

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(slicing.collectives, "allreduce_over_noc", counting)
    slicing._noc_choice.cache_clear()
    slicing._allreduce_ranking.cache_clear()
    groups = ((0, 1, 2, 3), (4, 5, 6, 7))
    tiles = tuple(range(8))
    flat = slicing._noc_choice((1, 1, 4096), "f16", "Tensor", 4, groups, tiles, HW)
    square = slicing._noc_choice((1, 64, 64), "f16", "Tensor", 4, groups, tiles, HW)
    assert calls == [8192]
    assert (flat.pattern, flat.cycles, flat.noc_bytes, flat.alternatives) == (
        square.pattern,
        square.cycles,
        square.noc_bytes,
        square.alternatives,
    )
    ranked = real([list(g) for g in groups], 8192, "f16", HW)
    assert flat.alternatives == tuple((r.pattern, r.cycles) for r in ranked)
    assert flat.noc_bytes == ranked[0].noc_bytes
    # other tiles are another all-reduce
    slicing._noc_choice((1, 64, 64), "f16", "Tensor", 4, groups, tuple(range(8, 16)), HW)
    assert calls == [8192, 8192]
