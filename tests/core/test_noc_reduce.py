"""Partial sums over the NoC: a reduction dim sharded across tiles, all-reduced.

Oracles: a replay of each all-reduce plan on numbers (numpy's sum), the interpreter for
the executed program, and hand counts of the commands.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np
import pytest

from tx8lab.core.builder import Builder
from tx8lab.core.execute import compare_outputs, execute_module
from tx8lab.core.hostmodel import run_program
from tx8lab.core.interpret import interpret, random_inputs
from tx8lab.core.ir import Module, Op
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


def _matmul(m: int = 1, k: int = 1024, n: int = 64) -> Module:
    b = Builder()
    x = b.input((1, m, k), "f16")
    b.output(b.op("MatMul", x, b.weight((k, n), "f16")))
    return b.finish()


def _scheduled(noc: bool, hw: Any = HW, module: Module | None = None) -> Module:
    knobs = {"group-cost.noc": noc}
    module = module if module is not None else _matmul()
    return list(run_pipeline(module, build_pipeline(None, knobs), hw))[-1].result.module


def _matmul_group(module: Module) -> Op:
    return next(
        g for g in groups_of(module) if any(o.kind == "tx8be.MatMul" for o in g.regions[0].ops)
    )


def _matmul_strategy(module: Module) -> Any:
    group = _matmul_group(module)
    mm = next(op for op in group.regions[0].ops if op.kind == "tx8be.MatMul")
    return strategy_of(group).ops[mm.id]


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
    # tile to tile is the DTE's (seed 001): the TDMA only moves data within its tile
    assert {c.engine for c in sends + recvs} == {"dte"}
    ex = execute_module(module, HW, via="program")
    assert ex.ok, ex.summary()
    sim = simulate_program(program, module, HW)
    assert sum(sim.link_bytes().values()) > 0


def test_main_c_carries_the_transfers_and_its_tiles_wait_on_each_other(
    k_sharded: tuple[Module, Program],
) -> None:
    module, program = k_sharded
    ex = execute_module(module, HW, via="c")
    assert ex.ok, ex.summary()
    # every command ran once, as the Program's own walk runs them (the same order)
    assert len(ex.trace) == program.num_commands
    walked = run_program(program, module, random_inputs(module, 0), HW.tile.spm_bytes)
    assert ex.trace == walked.trace
    functions = {e.function for e in ex.trace}
    assert {"dte_send", "dte_recv", "op_noc_add"} <= functions


def test_a_transfer_to_the_wrong_tile_in_main_c_is_named(
    k_sharded: tuple[Module, Program],
) -> None:
    from tx8lab.core.codegen import groups_c, main_c

    module, program = k_sharded
    text = main_c(module, HW, groups_c(module, HW, program=program))
    good = "[st->peer]};"
    assert good in text
    # every tile sends to and receives from itself instead of its peer
    bad = text.replace(good, "[pos]};")
    with pytest.raises(ProgramError, match=r"main.c's transfer: .* #0 0->0"):
        execute_module(module, HW, main_c=bad)


def test_empty_chunks_move_nothing_and_main_c_skips_them() -> None:
    # 3 rows x 5 columns over a 4-way ring: a tile's 5 columns (or its ragged last piece)
    # cut in 4 chunks along the columns leaves empty ones (ceil shares: 2, 2, 1, 0)
    module = _scheduled(True, module=_matmul(3, 2048, 5))
    program = build_program(module, HW)
    reds = [r for c in program.code.values() for r in c.schedule.reductions.values()]
    assert [r.pattern for r in reds] == ["ring"]
    assert program.idle
    tags = {c.tag for cs in program.tiles.values() for c in cs if c.tag}
    assert not tags & program.idle
    ex = execute_module(module, HW, via="c")
    assert ex.ok, ex.summary()
    assert len(ex.trace) == program.num_commands


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
    group = _matmul_group(module)
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


# ---------------------------------------------------------------- shared loads


@pytest.mark.parametrize("pattern", ["direct", "ring"])
@pytest.mark.parametrize("n", [2, 3, 4, 16])
def test_every_position_ends_with_every_chunk(pattern: Any, n: int) -> None:
    from tx8lab.hw.collectives import allgather_plan

    plan = allgather_plan(n, pattern)
    held = [{p} for p in range(n)]  # position p loaded chunk p
    for r in sorted({t.round for t in plan.transfers}):
        now = [t for t in plan.transfers if t.round == r]
        for t in now:
            assert t.chunk in held[t.src], "a tile sends a chunk it does not hold yet"
            assert not t.add
        for t in now:
            held[t.dst].add(t.chunk)
    assert all(h == set(range(n)) for h in held)
    assert len(plan.transfers) == n * (n - 1)  # each tile receives each other chunk once


def _shared_matmul() -> Module:
    # M = 64 rows over the tiles: every tile of a column of the mesh reads the same
    # 1024 x 64 slice of the weight
    return _scheduled(True, module=_matmul(64, 1024, 256))


@pytest.fixture(scope="module")
def shared() -> tuple[Module, Program]:
    module = _shared_matmul()
    return module, build_program(module, HW)


def test_a_weight_read_alike_is_loaded_once_and_all_gathered(
    shared: tuple[Module, Program],
) -> None:
    module, program = shared
    weight = next(
        op for g in groups_of(module) for op in g.regions[0].ops if op.kind == "tx8be.LoadConst"
    )
    loads = [
        c for cs in program.tiles.values() for c in cs if c.op_id == weight.id and c.what != "send"
    ]
    loaded = [c for c in loads if c.what == "load_const"]
    # every byte of the 1024 x 256 f16 weight comes from DDR once (replicated reads
    # would move it 16 / 4 = 4 times: each of 4 tiles per column reads its slice)
    moved = sum(int(np.prod([b - a for a, b in c.reads[0].window])) * 2 for c in loaded)
    assert moved == 1024 * 256 * 2
    recvs = [c for c in loads if c.what == "recv"]
    assert recvs
    assert all(c.tag for c in recvs)
    ex = execute_module(module, HW, via="c")
    assert ex.ok, ex.summary()
    assert (
        ex.trace == run_program(program, module, random_inputs(module, 0), HW.tile.spm_bytes).trace
    )


def test_the_report_names_the_shared_group_and_what_it_saved() -> None:
    knobs = {"group-cost.noc": True}
    steps = list(run_pipeline(_matmul(64, 1024, 256), build_pipeline(None, knobs), HW))
    entries = next(s for s in steps if s.name == "group-cost").result.artifacts["groups"]
    (entry,) = [e for e in entries if e["comm"] != "none"]
    assert entry["comm"] == "share"
    # every tile receives the 3 chunks of its 128 KiB slice it did not load: 16 x 3 x 32 KiB
    assert entry["noc_bytes"] >= 16 * 3 * 32 * 1024
    assert entry["noc_saved_cycles"] > 0


def test_main_c_loading_the_whole_weight_instead_of_its_chunk_is_named(
    shared: tuple[Module, Program],
) -> None:
    from tx8lab.core.codegen import groups_c, main_c

    module, program = shared
    text = main_c(module, HW, groups_c(module, HW, program=program))
    assert ", .chunks = 4}" in text
    bad = re.sub(r", \.chunk = noc_pos_\d+\[tile_id\], \.chunks = 4", "", text)
    with pytest.raises(ProgramError, match=r"loads %\d+ as chunk 0 of 0, but the Program's load"):
        execute_module(module, HW, main_c=bad)


def test_the_view_draws_shared_candidates_as_squares() -> None:
    from tx8lab.core.schedule.search import search_group
    from tx8lab.widgets.factor_space import factor_space_figure

    module = _scheduled(False, module=_matmul(64, 1024, 256))
    group = _matmul_group(module)
    got = search_group(group, HW, noc=True, timer=simulate_schedule)
    shared = [c for c in got.candidates if c.comm == "share"]
    assert shared
    assert all(c.strategy is not None and c.strategy.share for c in shared)
    assert got.best is not None
    assert got.best.comm == "share"
    fig = factor_space_figure(got)
    squares = [t for t in fig.data if (t.meta or {}).get("comm") == "share"]
    assert squares
    assert all(t.marker.symbol == "square" for t in squares)


def test_a_two_way_reduction_equals_the_f16_partial_sums_bit_for_bit() -> None:
    # oracle: numpy, each tile's half of K rounded to f16, then one f16 add (two partials:
    # the add's order does not matter); against one rounding of the whole sum it is off
    rng = np.random.default_rng(1)
    w = rng.standard_normal((1024, 64)).astype(np.float16)
    x = rng.standard_normal((1, 1, 1024)).astype(np.float16)
    b = Builder()
    arg = b.input((1, 1, 1024), "f16")
    b.output(b.op("MatMul", arg, b.constant(w, "f16")))
    module = _scheduled(True, module=b.finish())
    reds = [
        r for c in build_program(module, HW).code.values() for r in c.schedule.reductions.values()
    ]
    assert [r.ways for r in reds] == [2]
    ex = execute_module(module, HW, inputs=[x])
    got = ex.outputs[0].astype(np.float64).reshape(64)
    x64, w64 = x.astype(np.float64).reshape(1024), w.astype(np.float64)
    halves = [
        np.float16(x64[k * 512 : (k + 1) * 512] @ w64[k * 512 : (k + 1) * 512]) for k in (0, 1)
    ]
    assert np.array_equal(got, (halves[0] + halves[1]).astype(np.float64))
    assert not np.array_equal(got, np.float16(x64 @ w64).astype(np.float64))
    assert ex.ok, ex.summary()  # the tolerance counts the 2 partial roundings


def test_a_lost_chunk_of_a_shared_load_is_named(shared: tuple[Module, Program]) -> None:
    module, program = shared
    recv = next(c for cs in program.tiles.values() for c in cs if c.what == "recv")
    # the transfer never happens: neither its send nor its receive
    tiles = {t: tuple(c for c in cs if c.tag != recv.tag) for t, cs in program.tiles.items()}
    broken = dataclasses.replace(program, tiles=tiles)
    with pytest.raises(ProgramError, match=r"elements no command wrote"):
        run_program(broken, module, random_inputs(module, 0), HW.tile.spm_bytes)


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


def test_only_strategies_that_read_a_load_alike_get_a_shared_twin() -> None:
    from tx8lab.core.schedule.slicing import replicates_a_load
    from tx8lab.core.schedule.tasks import OpStrategy, Strategy

    module = _scheduled(False, module=_matmul(64, 1024, 256))
    group = _matmul_group(module)
    mm = next(o for o in group.regions[0].ops if o.kind == "tx8be.MatMul")
    # (B, M, N, K): rows over 4 tiles -> the weight (K, N) is read alike by 4 tiles
    rows = Strategy({mm.id: OpStrategy((1, 4, 4, 1), (1, 1, 1, 1))})
    # columns over 16 tiles: each reads its own weight columns, but x (B, M, K) does not
    # depend on N, so all 16 read x alike
    cols = Strategy({mm.id: OpStrategy((1, 1, 16, 1), (1, 1, 1, 1))})
    whole = Strategy({mm.id: OpStrategy((1, 1, 1, 1), (1, 1, 1, 1))})
    assert replicates_a_load(group, rows)
    assert replicates_a_load(group, cols)
    assert not replicates_a_load(group, whole)


def test_the_html_report_names_the_groups_that_talk() -> None:
    from tx8lab.widgets.report_html import group_table

    knobs = {"group-cost.noc": True}
    steps = list(run_pipeline(_matmul(64, 1024, 256), build_pipeline(None, knobs), HW))
    entries = next(s for s in steps if s.name == "group-cost").result.artifacts["groups"]
    df = group_table({"groups": entries})
    talking = [t for t in df["NoC"] if t]
    (entry,) = [e for e in entries if e["comm"] != "none"]
    assert talking == [f"share, {entry['noc_saved_cycles']:,} saved"]


# ---------------------------------------------------------------- gathers


def _projection_into_heads() -> Module:
    # a 256 -> 1024 projection of 16 rows split into 4 heads: the Reshape reads N whole
    b = Builder()
    x = b.input((1, 16, 256), "f16")
    heads = b.op("Reshape", b.op("MatMul", x, b.weight((256, 1024), "f16")), shape=(1, 16, 4, 256))
    b.output(b.op("Transpose", heads, perm=(0, 2, 1, 3)))
    return b.finish()


@pytest.fixture(scope="module")
def gathered() -> tuple[Module, Program]:
    module = _scheduled(True, module=_projection_into_heads())
    return module, build_program(module, HW)


def test_a_projection_read_whole_is_sharded_and_its_pieces_all_gathered(
    gathered: tuple[Module, Program],
) -> None:
    module, program = gathered
    st = _matmul_strategy(module)
    # iteration dims (B0, B1, M, N, K): the [1, 16, 256] @ [256, 1024] MatMul runs on the
    # rank-4 view [1, 1, 16, 256] (layout-align-npu: Cx needs rank 2 or 4)
    ways = st.shard[-2]  # N
    assert ways > 1
    assert st.shard[-1] == 1  # no partial sums: a gather, not a k-reduce
    mm = next(op for op in _matmul_group(module).regions[0].ops if op.kind == "tx8be.MatMul")
    recvs = [c for cs in program.tiles.values() for c in cs if c.what == "recv"]
    assert {c.op_id for c in recvs} == {mm.id}
    # each of the 16 tiles holds its 16 x 1024 / ways piece and receives the others
    got = sum(int(np.prod([b - a for a, b in c.writes[0].window])) * 2 for c in recvs)
    assert got == 16 * (16 * 1024 * 2) * (ways - 1) // ways
    # every payload crosses the links of its XY route: bytes times the Manhattan hops
    sends = [c for cs in program.tiles.values() for c in cs if c.what == "send"]
    cols = HW.mesh_cols

    def hops(a: int, b: int) -> int:
        return abs(a // cols - b // cols) + abs(a % cols - b % cols)

    routed = sum(
        int(np.prod([b - a for a, b in c.reads[0].window])) * 2 * hops(c.tile, c.peer)
        for c in sends
    )
    sim = simulate_program(program, module, HW)
    assert sum(sim.link_bytes().values()) == routed
    ex = execute_module(module, HW, via="c")
    assert ex.ok, ex.summary()
    assert (
        ex.trace == run_program(program, module, random_inputs(module, 0), HW.tile.spm_bytes).trace
    )


def test_a_lost_piece_of_a_gather_is_named(gathered: tuple[Module, Program]) -> None:
    module, program = gathered
    # one transfer (its send and its receive) left out: the Reshape reads the piece that
    # never landed, which the host model names (SPM bytes no command wrote)
    lost = next(c.tag for c in program.tiles[3] if c.what == "recv")
    tiles = {t: tuple(c for c in cs if c.tag != lost) for t, cs in program.tiles.items()}
    broken = dataclasses.replace(program, tiles=tiles)
    with pytest.raises(ProgramError, match=r"tile 3 .*Reshape.* of which \d+ elements no command"):
        run_program(broken, module, random_inputs(module, 0), HW.tile.spm_bytes)


def test_the_report_names_the_gathering_group_and_noc_off_keeps_n_whole() -> None:
    steps = list(
        run_pipeline(_projection_into_heads(), build_pipeline(None, {"group-cost.noc": True}), HW)
    )
    entries = next(s for s in steps if s.name == "group-cost").result.artifacts["groups"]
    (entry,) = [e for e in entries if e["comm"] != "none"]
    assert entry["comm"] == "gather"
    assert entry["noc_saved_cycles"] > 0
    off = _matmul_strategy(_scheduled(False, module=_projection_into_heads()))
    assert off.shard[-2] == 1  # N


def test_the_view_draws_gathering_candidates_as_pentagons() -> None:
    from tx8lab.core.schedule.search import search_group
    from tx8lab.widgets.factor_space import factor_space_figure, propagation_frame

    group = _matmul_group(_scheduled(False, module=_projection_into_heads()))
    got = search_group(group, HW, noc=True, timer=simulate_schedule)
    rows = [c for c in got.candidates if c.comm == "gather"]
    assert rows
    assert all(" G/" in c.sharding for c in rows)
    fig = factor_space_figure(got)
    marks = [t for t in fig.data if (t.meta or {}).get("comm") == "gather"]
    assert marks
    assert all(t.marker.symbol == "pentagon" for t in marks)
    best = next(c for c in rows if c.status == "OK")
    frame = propagation_frame(group, got, best.index)
    mm = next(op for op in group.regions[0].ops if op.kind == "tx8be.MatMul")
    row = frame[frame["op"].str.startswith(f"%{mm.id} ")].iloc[0]
    assert row["source"] == "gather"
    assert best.strategy is not None
    assert tuple(row["shard (iter dims)"]) == best.strategy.ops[mm.id].shard


def test_a_group_summed_to_a_scalar_uses_the_tiles_only_by_talking(tmp_path: Any) -> None:
    # MatMul then ReduceSum over rows and columns, one group by a pattern file of our own
    # (group.patterns_file): every dim of the group is a reduction, which no tile may
    # shard without talking, so without the NoC each op runs unsharded (its copies on the
    # other tiles repeat it); with it the search shards K and all-reduces the partials
    patterns = tmp_path / "patterns.txt"
    patterns.write_text("matmul_sum 10: MatMul ReduceSum\n")
    b = Builder()
    x = b.input((1, 64, 1024), "f16")
    b.output(b.op("ReduceSum", b.op("MatMul", x, b.weight((1024, 256), "f16")), axes=(1, 2)))
    module = b.finish()
    got = {}
    for noc in (False, True):
        knobs = {"group-cost.noc": noc, "group.patterns_file": str(patterns)}
        out = list(run_pipeline(module, build_pipeline(None, knobs), HW))[-1].result.module
        group = _matmul_group(out)
        kinds = [op.kind for op in group.regions[0].ops if op.kind.startswith("tx8be.R")]
        assert kinds == ["tx8be.ReduceSum", "tx8be.Return"]
        shards = {k: st.shard for k, st in strategy_of(group).ops.items()}
        got[noc] = (shards, int(group.attrs["cycles"]), out)
    assert all(math.prod(s) == 1 for s in got[False][0].values())
    mm = _matmul_strategy(got[True][2])
    assert mm.shard[-1] > 1  # K
    assert got[True][1] < got[False][1]
    ex = execute_module(got[True][2], HW, via="c")
    assert ex.ok, ex.summary()


# ---------------------------------------------------------------- only K-sharding fits


def _contracted_pool(tmp_path: Any) -> tuple[Module, dict[str, Any], Any]:
    # x[1, 1, 8192, 16] -> 1x1 Conv2d -> Relu -> MaxPool2d 1x3 along the 8192 columns ->
    # MatMul contracting those columns with a[1, 1, 16, 8192]: one group (a pattern file of
    # our own), SPM cut to 256 KiB (192 KiB usable). By hand, without the NoC every tile
    # holds all of x (8192 x 16 f16 = 256 KiB): its columns are the MatMul's K, so cutting
    # them across tiles leaves partial sums to add, and in time the pool's halo would cross
    # the loop (refused); its 16 channels are the conv's reduction at its smallest slice
    # (the seed's sliceShapeMin, one f16 alignment base), so they split only across tiles,
    # again as partial sums. With the NoC a plan shards a reduction dim and adds over it.
    patterns = tmp_path / "patterns.txt"
    patterns.write_text("conv_pool_matmul 10: Conv2d Relu MaxPool2d MatMul\n")
    b = Builder()
    x = b.input((1, 1, 8192, 16), "f16")
    y = b.op("Relu", b.op("Conv2d", x, b.weight((16, 1, 1, 16), "f16")))
    p = b.op("MaxPool2d", y, kernel=(1, 3), strides=(1, 1), pads=(0, 1, 0, 1))
    b.output(b.op("MatMul", b.input((1, 1, 16, 8192), "f16"), p))
    return b.finish(), {"group.patterns_file": str(patterns)}, resolve_hw(["tile.spm_bytes=256Ki"])


def test_a_group_only_a_k_sharded_plan_fits_is_found_and_computes_right(tmp_path: Any) -> None:
    from tx8lab.core.ops import get_op_def
    from tx8lab.core.passes import DEFAULT_PIPELINE
    from tx8lab.core.schedule.search import search_group, space_size
    from tx8lab.errors import Tx8labError
    from tx8lab.widgets.report_html import group_table

    module, knobs, hw = _contracted_pool(tmp_path)
    before = DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index("group-cost")]
    grouped = list(run_pipeline(module, build_pipeline(before, knobs), hw))[-1].after
    group = _matmul_group(grouped)
    assert len([o for o in group.regions[0].ops if o.kind.startswith("tx8be.")]) >= 4
    # the whole non-communicating space, brute force: nothing fits
    plain = space_size(group, hw, noc=False)
    with pytest.raises(Tx8labError, match=rf"%{group.id}: no candidate of {plain} fits"):
        search_group(group, hw, mode="exhaustive", noc=False)
    # the whole space with the NoC: what fits shards a reduction dim across tiles
    ex = search_group(group, hw, mode="exhaustive", noc=True)
    fits = [c for c in ex.candidates if c.status == "OK"]
    assert fits
    body = {o.id: o for o in group.regions[0].ops}
    for c in fits:
        assert c.comm == "k-reduce"
        assert c.strategy is not None
        sharded = [
            d.name
            for k, st in c.strategy.ops.items()
            for d, ways in zip(get_op_def(body[k].kind).iter_dims(body[k]), st.shard, strict=True)
            if d.loop == "ic" and ways > 1
        ]
        assert sharded, c.sharding
    # the pipeline finds one, says nothing without the NoC fits, and its program is right
    knobs_on = {**knobs, "group-cost.noc": True}
    steps = list(run_pipeline(module, build_pipeline(None, knobs_on), hw))
    out = steps[-1].result.module
    entries = next(s for s in steps if s.name == "group-cost").result.artifacts["groups"]
    entry = next(e for e in entries if e["id"] == _matmul_group(out).id)
    assert entry["comm"] == "k-reduce"
    assert entry["noc_saved_cycles"] is None
    assert entry["noc_bytes"] > 0
    assert "k-reduce, none without NoC fits" in list(group_table({"groups": entries})["NoC"])
    ex_c = execute_module(out, hw, via="c")
    assert ex_c.ok, ex_c.summary()
    with pytest.raises(Tx8labError, match=rf"group %{group.id}: no candidate of \d+ fits"):
        list(run_pipeline(module, build_pipeline(None, {**knobs, "group-cost.noc": False}), hw))


# ---------------------------------------------------------------- exchanges (halos)


def _conv_relu_pool() -> Module:
    # a 3 x 3 max pool, stride 2, over a Relu of 64 rows: with rows sharded over the 16
    # tiles, the pool's first row on each tile reads the last row of its neighbour's Relu
    b = Builder()
    x = b.input((1, 64, 64, 8), "f16")
    y = b.op("Relu", b.op("Conv2d", x, b.weight((8, 3, 3, 8), "f16"), pads=(1, 1, 1, 1)))
    b.output(b.op("MaxPool2d", y, kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)))
    return b.finish()


def _pool_group(module: Module) -> Op:
    return next(
        g for g in groups_of(module) if any(o.kind == "tx8be.MaxPool2d" for o in g.regions[0].ops)
    )


def test_a_pool_over_rows_of_other_tiles_gets_its_halo_over_the_noc() -> None:
    steps = list(
        run_pipeline(_conv_relu_pool(), build_pipeline(None, {"group-cost.noc": True}), HW)
    )
    module = steps[-1].result.module
    group = _pool_group(module)
    entry = next(
        e
        for e in next(s for s in steps if s.name == "group-cost").result.artifacts["groups"]
        if e["id"] == group.id
    )
    assert entry["comm"] == "exchange"
    relu = next(o for o in group.regions[0].ops if o.kind == "tx8be.Relu")
    assert strategy_of(group).ops[relu.id].shard == (1, 16, 1, 1)
    program = build_program(module, HW)
    recvs = [c for cs in program.tiles.values() for c in cs if c.what == "recv"]
    # by hand: the Relu's rows [4t, 4t + 4) on tile t, the pool's rows [2t, 2t + 2) read
    # Relu rows [4t - 1, 4t + 4): tiles 1..15 each get row 4t - 1 (64 x 8 f16) from t - 1
    got = sorted((c.peer, c.tile, c.writes[0].window[1]) for c in recvs if c.op_id == relu.id)
    assert got == [(t - 1, t, (4 * t - 1, 4 * t)) for t in range(1, 16)]
    assert all(c.writes[0].window[2:] == ((0, 64), (0, 8)) for c in recvs)
    ex = execute_module(module, HW, via="c")
    assert ex.ok, ex.summary()


def test_noc_off_refuses_the_halo_and_still_computes_right() -> None:
    module = _scheduled(False, module=_conv_relu_pool())
    program = build_program(module, HW)
    assert not any(c.what == "recv" for cs in program.tiles.values() for c in cs)
    ex = execute_module(module, HW, via="program")
    assert ex.ok, ex.summary()


def test_a_halo_across_a_loop_is_refused() -> None:
    from tx8lab.core.schedule.sharding import param_for, propagate
    from tx8lab.core.schedule.slicing import schedule_input
    from tx8lab.core.schedule.tasks import OpStrategy
    from tx8lab.errors import Tx8labError

    group = _pool_group(_scheduled(False, module=_conv_relu_pool()))
    pool = next(o for o in group.regions[0].ops if o.kind == "tx8be.MaxPool2d")
    # the pool's columns in two chunks: chunk 1's first window reaches into chunk 0's
    # last Relu column, which the loop's previous iteration computed
    split = propagate(group, {pool.id: param_for(pool, OpStrategy((1, 1, 1, 1), (1, 1, 2, 1)))})
    with pytest.raises(Tx8labError, match=r"MaxPool2d.*reads, in chunk \d of the loop"):
        schedule_input(group, split.strategy, HW)


def test_a_halo_with_the_batch_split_in_time_moves_each_chunks_rows(monkeypatch: Any) -> None:
    from tx8lab.core.schedule import search
    from tx8lab.core.schedule.sharding import param_for, propagate
    from tx8lab.core.schedule.tasks import OpStrategy

    b = Builder()
    x = b.input((2, 32, 16, 8), "f16")
    y = b.op("Relu", b.op("Conv2d", x, b.weight((8, 3, 3, 8), "f16"), pads=(1, 1, 1, 1)))
    b.output(b.op("MaxPool2d", y, kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)))
    from tx8lab.core.schedule.slicing import schedule_input

    plain = search.default_schedule

    def rows_over_tiles_batch_in_time(group: Op, hw: Any, **kw: Any) -> Any:
        pool = next((o for o in group.regions[0].ops if o.kind == "tx8be.MaxPool2d"), None)
        if pool is None:
            return plain(group, hw, **kw)
        # the pool's 16 rows over 16 tiles, its 2 images one after the other
        st = OpStrategy((1, 16, 1, 1), (2, 1, 1, 1))
        strategy = propagate(group, {pool.id: param_for(pool, st)}).strategy
        return strategy, schedule_input(group, strategy, hw)

    monkeypatch.setattr(search, "default_schedule", rows_over_tiles_batch_in_time)
    knobs = {"group-cost.search": "default", "group-cost.noc": True}
    module = list(run_pipeline(b.finish(), build_pipeline(None, knobs), HW))[-1].result.module
    group = _pool_group(module)
    relu = next(o for o in group.regions[0].ops if o.kind == "tx8be.Relu")
    assert strategy_of(group).ops[relu.id].split[0] == 2
    program = build_program(module, HW)
    recvs = [c for cs in program.tiles.values() for c in cs if c.what == "recv"]
    # by hand: Relu rows [2t, 2t + 2) on tile t, pool row t reads [2t - 1, 2t + 2): tiles
    # 1..15 get row 2t - 1 of image n in the n-th run
    got = sorted((c.writes[0].window[0], c.peer, c.tile, c.writes[0].window[1]) for c in recvs)
    want = [((n, n + 1), t - 1, t, (2 * t - 1, 2 * t)) for n in range(2) for t in range(1, 16)]
    assert got == want
    ex = execute_module(module, HW, via="program")
    assert ex.ok, ex.summary()


def test_the_walk_keeps_whole_the_dims_whose_chunks_share_a_halo() -> None:
    from tx8lab.core.schedule.search import halo_dims

    group = _pool_group(_scheduled(False, module=_conv_relu_pool()))
    pool = next(o for o in group.regions[0].ops if o.kind == "tx8be.MaxPool2d")
    conv = next(o for o in group.regions[0].ops if o.kind == "tx8be.Conv2d")
    # pool (N, OH, OW, C), 3 x 3 windows at stride 2: rows 2r - 1 .. 2r + 1, so output
    # rows 1 and 2 both read Relu row 3 (a halo); the conv reads a load, not a compute op
    assert halo_dims(group, pool) == (1, 2)
    assert halo_dims(group, conv) == ()
    b = Builder()
    x = b.input((1, 16, 16, 8), "f16")
    y = b.op("Relu", b.op("Conv2d", x, b.weight((8, 3, 3, 8), "f16"), pads=(1, 1, 1, 1)))
    b.output(b.op("MaxPool2d", y, kernel=(2, 2), strides=(2, 2)))
    tiled = _pool_group(_scheduled(False, module=b.finish()))
    kinds = [o.kind for o in tiled.regions[0].ops]
    assert "tx8be.Relu" in kinds  # the pool reads a compute op of its group
    pool2 = next(o for o in tiled.regions[0].ops if o.kind == "tx8be.MaxPool2d")
    assert halo_dims(tiled, pool2) == ()  # 2 x 2 at stride 2: the windows tile the rows
