"""Temporal slicing: ``temporal_slice_shape`` for every op kind, and the init pipeline.

``tx8lab.core.schedule.slicing`` turns a group plus a strategy into the seed's init pipeline
(getInitPipelineOps): load/compute/store Tasks in program order, Repeat nodes for the
stages that loop (STAGEOC2NH > OCSPLIT > STAGEIC2IC), and the SPM buffers (value, imm,
psum, in place). The default strategy must fit SPM on every group of every zoo model.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from tests.core.ops.ophelpers import build
from tests.core.ops.test_op_registry import SAMPLES
from tx8lab.core import Builder, zoo
from tx8lab.core.grouping import is_compute, outline
from tx8lab.core.ir import IdCounter, Module, Op, TensorType
from tx8lab.core.ops import OPS
from tx8lab.core.passes import build_pipeline
from tx8lab.core.runner import run_pipeline
from tx8lab.core.schedule.slicing import (
    STAGE_IC,
    STAGE_NH,
    STAGE_OC,
    STAGES,
    SliceCache,
    default_strategy,
    engine_busy_cycles,
    groups_of,
    loop_counts,
    plan_group,
    schedule_input,
    schedule_live_bytes,
    strategy_table,
)
from tx8lab.core.schedule.tasks import Node, OpStrategy, Repeat, ScheduleInput, Strategy, Task
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81

# ---------------------------------------------------------------- temporal_slice_shape


def _sample(kind: str) -> Op:
    types, attrs = SAMPLES[kind]
    return build(kind, *types, **attrs)


def test_samples_cover_every_kind() -> None:
    assert {f"tx8be.{k}" for k in SAMPLES} | {"tx8be.Group"} == set(OPS)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_temporal_slice_shape_for_every_kind(kind: str) -> None:
    op = _sample(kind)
    entry = OPS[op.kind]
    dims = entry.iter_dims(op)
    assert dims, kind
    # no strategy: one step holds everything
    whole = entry.temporal_slice_shape(op)
    assert whole.iteration == tuple(d.size for d in dims)
    assert whole.results == tuple(r.type.shape for r in op.results)
    for got, value in zip(whole.operands, op.operands, strict=True):
        assert all(g <= d for g, d in zip(got, value.type.shape, strict=True)), kind
    # splitting a dim in time halves it in the iteration and in every result that follows it
    n = len(dims)
    cuttable = [i for i, d in enumerate(dims) if d.splittable and d.size >= 2]
    for i in cuttable:
        split = tuple(2 if j == i else 1 for j in range(n))
        half = entry.temporal_slice_shape(op, OpStrategy((1,) * n, split))
        assert half.iteration[i] == -(-dims[i].size // 2)
        for r, dim_map in enumerate(entry.result_dims(op)):
            for e, at in enumerate(dim_map):
                if at == i:
                    assert half.results[r][e] == half.iteration[i]
        assert entry.imm_bytes(op, half) >= 0
        assert entry.cost(op, half, TX81).cycles >= entry.cost(op, half, TX81).issue_cycles
    # a dim that may not be cut says so, naming the op and the dim
    for i, d in enumerate(dims):
        if not d.splittable and d.size >= 2:
            split = tuple(2 if j == i else 1 for j in range(n))
            message = rf"{kind}: .*dim {d.name} \(size {d.size}\) cannot be split in time"
            with pytest.raises(Tx8labError, match=message):
                entry.temporal_slice_shape(op, OpStrategy((1,) * n, split))
    with pytest.raises(Tx8labError, match="iteration dims"):
        entry.temporal_slice_shape(op, OpStrategy((1,) * (n + 1), (1,) * (n + 1)))


def test_group_is_sliced_through_its_body() -> None:
    b = Builder()
    b.output(b.op("Relu", b.input((4, 4), "f16")))
    module = b.finish()
    _, (group,) = outline(module.main, [[0]], IdCounter(module.next_id))
    with pytest.raises(Tx8labError, match="slice its body op by op"):
        OPS["tx8be.Group"].temporal_slice_shape(group)


def test_batchnorm_follows_the_seed_rule() -> None:
    """Seed 001: input sharded on C only, split on N, H, W only; params follow the C shard."""
    x = TensorType((2, 8, 8, 64), "f16")
    p = TensorType((1, 1, 1, 64), "f32")
    op = build("BatchNorm_Inference", x, p, p, p, p)
    entry = OPS[op.kind]
    got = entry.temporal_slice_shape(op, OpStrategy((1, 1, 1, 16), (2, 2, 1, 1)))
    assert got.operands[0] == (1, 4, 8, 4)
    assert got.operands[1:] == ((1, 1, 1, 4),) * 4
    assert got.results == ((1, 4, 8, 4),)
    with pytest.raises(Tx8labError, match=r"d1 .* cannot be sharded across tiles"):
        entry.temporal_slice_shape(op, OpStrategy((1, 2, 1, 1), (1, 1, 1, 1)))
    with pytest.raises(Tx8labError, match=r"d3 .* cannot be split in time"):
        entry.temporal_slice_shape(op, OpStrategy((1, 1, 1, 1), (1, 1, 1, 2)))
    # seed getImmSpSize for op_batchnorm_inference: 2 x sizeof(input) bytes
    assert entry.imm_bytes(op, got) == 2 * 1 * 4 * 8 * 4 * 2


def test_conv_slice_reads_its_halo() -> None:
    x = TensorType((1, 16, 16, 8), "f16")
    op = build("Conv2d", x, TensorType((32, 3, 3, 8), "f16"), pads=(1, 1, 1, 1), strides=(2, 2))
    got = OPS[op.kind].temporal_slice_shape(op, OpStrategy((1, 1, 1, 4, 1), (1, 4, 1, 1, 2)))
    # OH 8 split 4 -> 2 rows: windows cover (2 - 1) * 2 + 3 = 5 input rows; IC 8 split 2
    assert got.iteration == (1, 2, 8, 8, 4)
    assert got.operands == ((1, 5, 16, 4), (8, 3, 3, 4))
    # IC across tiles: each tile reads its half of the input channels and of the weight
    # (its partial sum is added to the other's over the NoC)
    halves = OPS[op.kind].temporal_slice_shape(op, OpStrategy((1, 1, 1, 1, 2), (1,) * 5))
    assert halves.operands == ((1, 16, 16, 4), (32, 3, 3, 4))
    grouped = build("Conv2d", x, TensorType((8, 3, 3, 4), "f16"), pads=(1, 1, 1, 1), group=2)
    with pytest.raises(Tx8labError, match=r"IC .* cannot be sharded"):
        OPS[grouped.kind].temporal_slice_shape(grouped, OpStrategy((1, 1, 1, 1, 2), (1,) * 5))


def test_gather_brings_only_the_selected_rows() -> None:
    table, idx = TensorType((1000, 64), "f16"), TensorType((1, 32), "i32")
    op = build("Gather", table, idx)
    got = OPS[op.kind].temporal_slice_shape(op, OpStrategy((1, 4, 1), (1, 2, 1)))
    assert got.operands == ((4, 64), (1, 4))  # 32 indices / 8 -> 4 rows of the table
    emb = build("Embedding", table, idx)
    assert OPS[emb.kind].temporal_slice_shape(emb).operands[0] == (32, 64)


def test_reshape_cuts_only_dims_it_keeps() -> None:
    op = build("Reshape", TensorType((1, 128, 768), "f16"), shape=(1, 128, 12, 64))
    dims = OPS[op.kind].iter_dims(op)
    assert [(d.name, d.splittable) for d in dims] == [
        ("d0", True),
        ("d1", True),
        ("d2", False),
        ("d3", False),
    ]
    got = OPS[op.kind].temporal_slice_shape(op, OpStrategy((1, 16, 1, 1), (1, 2, 1, 1)))
    assert got.operands == ((1, 4, 768),)


def test_reduce_and_matmul_add_their_reduction_dims() -> None:
    op = build("ReduceSum", TensorType((4, 6, 8), "f16"), axes=(1,), keepdims=False)
    dims = OPS[op.kind].iter_dims(op)
    assert [(d.name, d.size, d.loop) for d in dims] == [
        ("d0", 4, "nh"),
        ("d1", 8, "oc"),
        ("R1", 6, "ic"),
    ]
    assert OPS[op.kind].operand_dims(op) == ((0, 2, 1),)
    mm = build("MatMul", TensorType((2, 1, 32, 16), "f16"), TensorType((3, 16, 8), "f16"))
    assert [d.name for d in OPS[mm.kind].iter_dims(mm)] == ["B0", "B1", "M", "N", "K"]
    assert OPS[mm.kind].operand_dims(mm) == ((0, None, 2, 4), (1, 4, 3))


# ---------------------------------------------------------------- helpers for groups


def grouped(module: Module) -> Op:
    """All compute ops of ``module`` in one group, with its loads and stores."""
    ids = IdCounter(module.next_id)
    compute = [op.id for op in module.main.ops if is_compute(op)]
    func, _ = outline(module.main, [compute], ids)
    out = module.with_function(func, ids.next_id)
    for step in run_pipeline(out, ["move-constant", "group-optimization", "group-ldst"], TX81):
        out = step.after
    return next(op for op in out.main.ops if op.kind == "tx8be.Group")


def body_id(group: Op, kind: str, nth: int = 0) -> int:
    return [op.id for op in group.regions[0].ops if op.kind == f"tx8be.{kind}"][nth]


def flat(nodes: tuple[Node, ...]) -> list[Task]:
    out: list[Task] = []
    for node in nodes:
        out.extend(flat(node.body) if isinstance(node, Repeat) else [node])
    return out


def shape_of(nodes: tuple[Node, ...]) -> list[Any]:
    """Nested list of task ids and (stage, times, [...]) for Repeats."""
    return [(n.stage, n.times, shape_of(n.body)) if isinstance(n, Repeat) else n.id for n in nodes]


@functools.cache
def matmul_relu() -> Op:
    b = Builder()
    x = b.input((256, 512), "f16")
    w = b.weight((512, 1024), "f16")
    b.output(b.op("Relu", b.op("MatMul", x, w)))
    return grouped(b.finish())


def mm_strategy(group: Op, split: tuple[int, int, int], shard: tuple[int, int, int] = (1, 1, 1)):
    mm, relu = body_id(group, "MatMul"), body_id(group, "Relu")
    return Strategy({mm: OpStrategy(shard, split), relu: OpStrategy(shard[:2], split[:2])})


# ---------------------------------------------------------------- the init pipeline


def test_a_slice_cache_gives_what_slicing_without_it_gives() -> None:
    g = matmul_relu()
    cache = SliceCache(g)
    strategies = [
        mm_strategy(g, split, shard)
        for split in ((1, 1, 1), (4, 1, 1), (2, 2, 1), (1, 1, 4))
        for shard in ((1, 1, 1), (4, 1, 1), (2, 1, 2), (1, 1, 4))
    ]
    for st in [*strategies, *strategies]:  # the second time from what the cache kept
        assert schedule_input(g, st, TX81, cache=cache) == schedule_input(g, st, TX81)
    # a factor that only equals an int is refused every time, as without the cache
    mm, relu = body_id(g, "MatMul"), body_id(g, "Relu")
    odd = Strategy({mm: OpStrategy((1, 1, 1), (True, 1, 1)), relu: OpStrategy((1, 1), (1, 1))})
    for _ in range(2):
        with pytest.raises(Tx8labError, match="split of dim M must be an int >= 1, got True"):
            schedule_input(g, odd, TX81, cache=cache)
    with pytest.raises(Tx8labError, match=r"a slice cache of group %\d+ was given for %\d+"):
        schedule_input(g.with_attrs(note="a copy"), strategies[0], TX81, cache=cache)


def test_no_split_is_load_compute_store_in_program_order() -> None:
    g = matmul_relu()
    si = schedule_input(g, mm_strategy(g, (1, 1, 1)), TX81)
    ld_x, ld_w = (f"ld:%{op.id}" for op in g.regions[0].ops[:2])
    mm, relu = body_id(g, "MatMul"), body_id(g, "Relu")
    st = f"st:%{body_id(g, 'StoreVar')}"
    assert shape_of(si.nodes) == [ld_x, ld_w, f"ne:%{mm}", f"ct:%{relu}", st]
    assert si.group_id == g.id
    assert si.tiles == 1
    tasks = {t.id: t for t in flat(si.nodes)}
    assert tasks[f"ne:%{mm}"].reads == (f"%{g.regions[0].ops[0].id}", f"%{g.regions[0].ops[1].id}")
    assert tasks[f"ne:%{mm}"].writes == (f"%{mm}",)
    assert tasks[st].reads == (f"%{relu}",)
    assert all(t.stage == "" for t in tasks.values())
    assert "NE f16" in tasks[f"ne:%{mm}"].explain
    assert loop_counts(g, mm_strategy(g, (1, 1, 1)), TX81) == dict.fromkeys(STAGES, 1)


def test_split_m_repeats_the_nh_stage_and_hoists_the_weight() -> None:
    g = matmul_relu()
    si = schedule_input(g, mm_strategy(g, (4, 1, 1)), TX81)
    ld_x, ld_w = (f"ld:%{op.id}" for op in g.regions[0].ops[:2])
    mm, relu = body_id(g, "MatMul"), body_id(g, "Relu")
    st = f"st:%{body_id(g, 'StoreVar')}"
    # the weight does not change with M: loaded once, before the loop
    assert shape_of(si.nodes) == [ld_w, (STAGE_NH, 4, [ld_x, f"ne:%{mm}", f"ct:%{relu}", st])]
    tasks = {t.id: t for t in flat(si.nodes)}
    assert tasks[ld_x].stage == STAGE_NH
    assert tasks[ld_w].stage == ""
    # slices: x [64, 512] f16, w whole [512, 1024]
    assert si.buffers[tasks[ld_x].writes[0]].bytes == 64 * 512 * 2
    assert si.buffers[tasks[ld_w].writes[0]].bytes == 512 * 1024 * 2
    plan = plan_group(g, mm_strategy(g, (4, 1, 1)), TX81)
    assert plan.ops[mm].slice.iteration == (64, 1024, 512)
    assert plan.ops[mm].stage == STAGE_NH
    assert plan.loop_counts[STAGE_NH] == 4


def test_split_m_and_n_nests_oc_inside_nh() -> None:
    g = matmul_relu()
    si = schedule_input(g, mm_strategy(g, (2, 2, 1)), TX81)
    ld_x, ld_w = (f"ld:%{op.id}" for op in g.regions[0].ops[:2])
    mm, relu = body_id(g, "MatMul"), body_id(g, "Relu")
    st = f"st:%{body_id(g, 'StoreVar')}"
    # x changes with M only: loaded once per NH step and reused across the OC loop
    assert shape_of(si.nodes) == [
        (STAGE_NH, 2, [ld_x, (STAGE_OC, 2, [ld_w, f"ne:%{mm}", f"ct:%{relu}", st])])
    ]
    assert loop_counts(g, mm_strategy(g, (2, 2, 1)), TX81) == {
        STAGE_IC: 1,
        STAGE_OC: 2,
        STAGE_NH: 2,
    }


def test_split_k_adds_a_psum_buffer_and_an_ic_loop() -> None:
    g = matmul_relu()
    si = schedule_input(g, mm_strategy(g, (1, 1, 2)), TX81)
    ld_x, ld_w = (f"ld:%{op.id}" for op in g.regions[0].ops[:2])
    mm, relu = body_id(g, "MatMul"), body_id(g, "Relu")
    st = f"st:%{body_id(g, 'StoreVar')}"
    assert shape_of(si.nodes) == [(STAGE_IC, 2, [ld_x, ld_w, f"ne:%{mm}"]), f"ct:%{relu}", st]
    psum = si.buffers[f"%{mm}.psum"]
    assert psum.kind == "psum"
    assert psum.bytes == 256 * 1024 * TX81.tile.psum_elem_bytes
    ne = next(t for t in flat(si.nodes) if t.id == f"ne:%{mm}")
    assert psum.id in ne.reads
    assert psum.id in ne.writes
    # the relu runs after the K loop: it may not reuse the matmul's buffer then
    assert si.buffers[f"%{relu}"].in_place_of is None
    # no K split, no psum
    assert not any(
        b.kind == "psum"
        for b in schedule_input(g, mm_strategy(g, (4, 1, 1)), TX81).buffers.values()
    )


def test_relu_reuses_the_matmul_buffer_in_the_same_loop_body() -> None:
    g = matmul_relu()
    si = schedule_input(g, mm_strategy(g, (4, 1, 1)), TX81)
    mm, relu = body_id(g, "MatMul"), body_id(g, "Relu")
    assert si.buffers[f"%{relu}"].in_place_of == f"%{mm}"
    assert schedule_live_bytes(si, 2) == schedule_live_bytes(si, 1) + sum(
        b.bytes for b in si.buffers.values() if b.id in (f"%{g.regions[0].ops[0].id}", f"%{mm}")
    )


def test_inplace_chain_through_add_and_relu() -> None:
    """ResNet's Conv -> BN -> Add -> Relu: Add reuses BN's buffer, Relu reuses Add's."""
    b = Builder()
    x = b.input((1, 16, 16, 64), "f16")
    skip = b.input((1, 16, 16, 64), "f16")
    w = b.weight((64, 3, 3, 64), "f16")
    p = [b.weight((1, 1, 1, 64), "f32") for _ in range(4)]
    y = b.op("Conv2d", x, w, pads=(1, 1, 1, 1))
    y = b.op("BatchNorm_Inference", y, *p)
    y = b.op("Add", y, skip)
    b.output(b.op("Relu", y))
    g = grouped(b.finish())
    si = schedule_input(g, None, TX81)
    bn, add, relu = (body_id(g, k) for k in ("BatchNorm_Inference", "Add", "Relu"))
    assert si.buffers[f"%{add}"].in_place_of == f"%{bn}"
    assert si.buffers[f"%{relu}"].in_place_of == f"%{add}"
    assert si.buffers[f"%{bn}.imm"].kind == "imm"


def test_no_inplace_when_the_operand_is_read_again() -> None:
    b = Builder()
    x = b.input((64, 64), "f16")
    y = b.op("Exp", x)
    b.output(b.op("Add", b.op("Relu", y), y))
    g = grouped(b.finish())
    si = schedule_input(g, None, TX81)
    exp, relu, add = (body_id(g, k) for k in ("Exp", "Relu", "Add"))
    assert si.buffers[f"%{relu}"].in_place_of is None  # y is read by the Add too
    assert si.buffers[f"%{add}"].in_place_of == f"%{relu}"
    # an fp32 copy of the f16 slice (64 x 64 sharded over 16 tiles)
    assert si.buffers[f"%{exp}.imm"].bytes == 64 * 64 * 4 // 16


def test_loop_fission_around_an_op_that_takes_the_dim_whole() -> None:
    """mm1 -> softmax (whole rows) -> mm2: splitting mm2's K (= mm1's N) gives two loops."""
    b = Builder()
    x = b.input((64, 128), "f16")
    w1, w2 = b.weight((128, 256), "f16"), b.weight((256, 32), "f16")
    p = b.op("Softmax", b.op("MatMul", x, w1))
    b.output(b.op("MatMul", p, w2))
    g = grouped(b.finish())
    mm1, mm2 = body_id(g, "MatMul", 0), body_id(g, "MatMul", 1)
    sm = body_id(g, "Softmax")
    st = Strategy(
        {
            mm1: OpStrategy((1, 1, 1), (1, 2, 1)),
            sm: OpStrategy((1, 1), (1, 1)),
            mm2: OpStrategy((1, 1, 1), (1, 1, 2)),
        }
    )
    si = schedule_input(g, st, TX81)
    top = shape_of(si.nodes)
    loops = [n for n in top if isinstance(n, tuple)]
    assert [(stage, times) for stage, times, _ in loops] == [(STAGE_IC, 2), (STAGE_IC, 2)]
    order = [n if isinstance(n, str) else n[2][-1] for n in top]
    assert order.index(f"ct:%{sm}") > order.index(f"ne:%{mm1}")
    assert order.index(f"ne:%{mm2}") > order.index(f"ct:%{sm}")
    # mm1's result is produced in chunks but read whole by the softmax: all chunks live
    assert si.buffers[f"%{mm1}"].bytes == 64 * 256 * 2
    assert si.buffers[f"%{mm2}.psum"].kind == "psum"


def test_tasks_read_only_buffers_written_before_them() -> None:
    g = matmul_relu()
    for split in ((1, 1, 1), (4, 1, 1), (2, 2, 1), (1, 1, 4), (2, 2, 2)):
        si = schedule_input(g, mm_strategy(g, split), TX81)
        written: set[str] = set()
        for task in flat(si.nodes):
            for name in task.reads:
                assert name in si.buffers
                assert name in written or si.buffers[name].kind == "psum"
            written.update(task.writes)


def test_strategy_errors_name_the_op() -> None:
    g = matmul_relu()
    mm, relu = body_id(g, "MatMul"), body_id(g, "Relu")
    with pytest.raises(Tx8labError, match=rf"no OpStrategy for %{relu} \(Relu\)"):
        schedule_input(g, Strategy({mm: OpStrategy((1, 1, 1), (1, 1, 1))}), TX81)
    with pytest.raises(Tx8labError, match=r"names op ids \[999\]"):
        schedule_input(
            g,
            Strategy({**mm_strategy(g, (1, 1, 1)).ops, 999: OpStrategy((1,), (1,))}),
            TX81,
        )
    bad = Strategy({mm: OpStrategy((1, 1, 1), (4, 1, 1)), relu: OpStrategy((1, 1), (2, 1))})
    with pytest.raises(Tx8labError, match=r"splits dim .* by 2 but the linked dim M .* by 4"):
        schedule_input(g, bad, TX81)
    with pytest.raises(Tx8labError, match=r"shards over 32 tiles .* runs on 16"):
        schedule_input(g, mm_strategy(g, (1, 1, 1), shard=(4, 8, 1)), TX81)
    with pytest.raises(Tx8labError, match=r"over 3 tiles, but its 3 tiles .* do not divide"):
        schedule_input(g, mm_strategy(g, (1, 1, 1), shard=(1, 1, 3)), TX81)
    with pytest.raises(Tx8labError, match=r"tx8be\.Group op with a body"):
        schedule_input(g.regions[0].ops[2], None, TX81)


def test_default_strategy_shards_then_splits_until_it_fits() -> None:
    g = matmul_relu()
    st = default_strategy(g, TX81)
    mm = body_id(g, "MatMul")
    # N (1024) is the largest dim that may be sharded (K is a reduction): 16 tiles
    assert st.ops[mm].shard == (1, 16, 1)
    si = schedule_input(g, None, TX81)
    assert si.tiles == 16
    assert schedule_live_bytes(si) <= TX81.tile.spm_usable_bytes
    assert any("shard N=1024" in note for note in si.notes)
    # a small SPM forces splits: Repeat nodes appear and the live bytes still fit
    small = TX81.replace(tile={"spm_bytes": 64 * 1024 + 96 * 1024})
    tight = schedule_input(g, None, small)
    assert any(isinstance(n, Repeat) for n in tight.nodes)
    assert schedule_live_bytes(tight) <= small.tile.spm_usable_bytes
    assert any(note.startswith("split") for note in tight.notes)
    assert schedule_input(g, None, small) == tight  # deterministic


def test_default_strategy_reports_what_cannot_fit() -> None:
    b = Builder()
    b.output(b.op("Softmax", b.input((1, 65536), "f32")))
    g = grouped(b.finish())
    tiny = TX81.replace(tile={"spm_bytes": 64 * 1024 + 64 * 1024})
    with pytest.raises(Tx8labError, match=r"does not fit in SPM: .* largest buffers: %\d+"):
        default_strategy(g, tiny)


def test_ddr_values_have_no_buffer() -> None:
    """An embedding table stays in DDR (bypasscodegen LoadConst): no load task, no buffer."""
    b = Builder()
    ids = b.input((1, 32), "i32")
    table = b.weight((1000, 64), "f16")
    b.output(b.op("Relu", b.op("Embedding", table, ids)))
    g = grouped(b.finish())
    si = schedule_input(g, None, TX81)
    table_op = next(op for op in g.regions[0].ops if op.kind == "tx8be.LoadConst")
    assert table_op.attrs.get("bypasscodegen") is True
    assert f"%{table_op.id}" not in si.buffers
    assert f"ld:%{table_op.id}" not in {t.id for t in flat(si.nodes)}


# ---------------------------------------------------------------- every zoo model


@functools.cache
def pipelined(name: str) -> Module:
    out = zoo.build(name)
    for step in run_pipeline(out, build_pipeline(), TX81):
        out = step.after
    return out


def _check_schedule(si: ScheduleInput, group: Op) -> None:
    tasks = flat(si.nodes)
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids))
    compute = [op for op in group.regions[0].ops if is_compute(op)]
    assert {t.op_id for t in tasks} >= {op.id for op in compute}
    align = TX81.tile.spm_align_bytes
    for buf in si.buffers.values():
        assert buf.bytes % align == 0
        if buf.in_place_of is not None:
            assert si.buffers[buf.in_place_of].bytes == buf.bytes
    written: set[str] = set()
    for task in tasks:
        assert task.cycles >= 1000  # at least the issue overhead
        assert set(task.reads) <= written | {b for b in task.reads if b.endswith(".psum")}
        written.update(task.writes)


@pytest.mark.parametrize("name", sorted(zoo.MODELS))
def test_default_strategy_fits_spm_on_every_zoo_group(name: str) -> None:
    module = pipelined(name)
    groups = groups_of(module)
    assert groups
    for group in groups:
        si = schedule_input(group, None, TX81)
        assert schedule_live_bytes(si) <= TX81.tile.spm_usable_bytes, (name, group.id, si.notes)
        _check_schedule(si, group)


def test_strategy_table_on_resnet50() -> None:
    rows = strategy_table(pipelined("resnet50"), TX81)
    assert len(rows) == len(groups_of(pipelined("resnet50")))
    assert {row["limiting_engine"] for row in rows} <= {"ld", "st", "ne", "ct", "tdma"}
    assert all(row["bound_cycles"] <= row["serial_cycles"] for row in rows)
    assert all(row["live_bytes"] <= TX81.tile.spm_usable_bytes for row in rows)


def test_llama_groups_loop_when_weights_do_not_fit() -> None:
    """LLaMA-7B weights are far larger than SPM: the default splits K (IC loop, psum)."""
    module = pipelined("llama_decoder")
    looping = 0
    for group in groups_of(module):
        si = schedule_input(group, None, TX81)
        if any(isinstance(n, Repeat) for n in si.nodes):
            looping += 1
            busy = engine_busy_cycles(si)
            assert busy["ld"] >= max(busy.values()) // 2
    assert looping >= 3


# ---------------------------------------------------------------- inputs a kernel overwrites


def _bn_inputs(group: Op) -> list[int]:
    """Op ids of the loads feeding the group's BatchNorm_Inference: x, scale, offset, mean, var."""
    bn = next(op for op in group.regions[0].ops if op.kind == "tx8be.BatchNorm_Inference")
    return [v.owner for v in bn.operands]


@functools.cache
def big_batchnorm() -> Op:
    """The issue's case: 8x112x112x64 f16, 1x1x1x64 f32 parameters."""
    return grouped(zoo.batchnorm_demo(batch=8, height=112, width=112, channels=64, dtype="f16"))


def test_the_variance_is_reloaded_inside_the_loop_of_the_batchnorm() -> None:
    """Seed 001: steps 4-5 overwrite var, so main.c loads it inside its while loop."""
    g = big_batchnorm()
    bn = body_id(g, "BatchNorm_Inference")
    x, scale, offset, mean, var = _bn_inputs(g)
    st = f"st:%{body_id(g, 'StoreVar')}"
    si = schedule_input(g, Strategy({bn: OpStrategy((1, 1, 1, 16), (2, 1, 1, 1))}), TX81)
    # scale, offset and mean are only read: loaded once before the loop; var every iteration,
    # after the slice of x and just before the op
    assert shape_of(si.nodes) == [
        f"ld:%{scale}",
        f"ld:%{offset}",
        f"ld:%{mean}",
        (STAGE_NH, 2, [f"ld:%{x}", f"ld:%{var}", f"ct:%{bn}", st]),
    ]
    tasks = {t.id: t for t in flat(si.nodes)}
    assert tasks[f"ld:%{var}"].stage == STAGE_NH
    assert tasks[f"ld:%{mean}"].stage == ""
    # the op writes the variance buffer in place (it reads it too)
    assert f"%{var}" in tasks[f"ct:%{bn}"].reads
    assert f"%{var}" in tasks[f"ct:%{bn}"].writes
    assert f"%{mean}" not in tasks[f"ct:%{bn}"].writes
    # ... which the software pipeline reads as the same version, not a third one
    from tx8lab.core.schedule.sw_pipeline import expand

    versions = {
        (u.root, u.generation) for inst in expand(si) for u in inst.writes if u.buffer == f"%{var}"
    }
    assert versions == {(f"%{var}", 0), (f"%{var}", 1)}


def test_without_a_loop_the_variance_load_stays_where_it_was() -> None:
    g = big_batchnorm()
    bn = body_id(g, "BatchNorm_Inference")
    si = schedule_input(g, Strategy({bn: OpStrategy((1, 1, 1, 16), (1, 1, 1, 1))}), TX81)
    order = [t.id for t in flat(si.nodes)]
    loads = [op.id for op in g.regions[0].ops if op.kind in ("tx8be.LoadConst", "tx8be.LoadVar")]
    assert order[: len(loads)] == [f"ld:%{i}" for i in loads]  # the body's order


def test_a_load_only_read_keeps_being_hoisted_next_to_an_overwritten_one() -> None:
    """BN then Mul by a 1x1x1xC weight: the weight and BN's scale/offset/mean stay hoisted."""
    b = Builder()
    x = b.input((8, 56, 56, 64), "f16")
    p = [b.weight((1, 1, 1, 64), "f32") for _ in range(4)]
    w = b.weight((1, 1, 1, 64), "f16")
    b.output(b.op("Mul", b.op("BatchNorm_Inference", x, *p), w))
    g = grouped(b.finish())
    bn, mul = body_id(g, "BatchNorm_Inference"), body_id(g, "Mul")
    _, scale, offset, mean, var = _bn_inputs(g)
    (weight,) = [v.owner for v in _body_op_of(g, mul).operands if v.owner != bn]
    split = OpStrategy((1, 1, 1, 16), (4, 1, 1, 1))
    si = schedule_input(g, Strategy({bn: split, mul: split}), TX81)
    top = shape_of(si.nodes)
    hoisted = [n for n in top if isinstance(n, str)]
    (loop,) = [n for n in top if isinstance(n, tuple)]
    assert set(hoisted) == {f"ld:%{i}" for i in (scale, offset, mean, weight)}
    assert loop[:2] == (STAGE_NH, 4)
    assert f"ld:%{var}" in loop[2]
    assert loop[2].index(f"ld:%{var}") + 1 == loop[2].index(f"ct:%{bn}")
    # the Mul overwrites nothing: it writes its own result (in place of BN's), not the weight
    mul_task = next(t for t in flat(si.nodes) if t.id == f"ct:%{mul}")
    assert mul_task.writes == (f"%{mul}",)
    assert si.buffers[f"%{mul}"].in_place_of == f"%{bn}"


def _body_op_of(group: Op, op_id: int) -> Op:
    return next(op for op in group.regions[0].ops if op.id == op_id)


def _two_batchnorms(shared_variance: str) -> Op:
    """Two BNs in one group sharing one variance: a graph input, or a constant.

    The constant goes through move-constant before grouping, as in the default pipeline
    (one LoadConst per use, each moved into the group of its user).
    """
    b = Builder()
    xs = [b.input((2, 8, 8, 64), "f16") for _ in range(2)]
    if shared_variance == "input":
        var = b.input((1, 1, 1, 64), "f32")
    else:
        var = b.weight((1, 1, 1, 64), "f32", scale=0.1, offset=1.0)
    outs = [
        b.op("BatchNorm_Inference", x, *[b.weight((1, 1, 1, 64), "f32") for _ in range(3)], var)
        for x in xs
    ]
    b.output(*outs)
    module = b.finish()
    if shared_variance != "input":
        (step,) = run_pipeline(module, ["move-constant"], TX81)
        module = step.after
    return grouped(module)


def test_a_variance_read_after_the_op_that_overwrites_it_is_an_error() -> None:
    """One LoadVar (group-ldst) feeds both BNs: the second would read rsqrt(var + eps)."""
    g = _two_batchnorms("input")
    bn1, bn2 = body_id(g, "BatchNorm_Inference", 0), body_id(g, "BatchNorm_Inference", 1)
    assert _bn_inputs(g)[4] == _body_op_of(g, bn2).operands[4].owner  # one load
    with pytest.raises(
        Tx8labError,
        match=rf"%{bn1} \(BatchNorm_Inference\) overwrites its operand 4 .*, and "
        rf"%{bn2} \(BatchNorm_Inference\) reads it afterwards",
    ):
        schedule_input(g, None, TX81)


def test_a_shared_variance_constant_gets_one_load_per_use() -> None:
    """move-constant's per_use: each BN has its own LoadConst, so each is reloaded alone."""
    g = _two_batchnorms("constant")
    bn1, bn2 = body_id(g, "BatchNorm_Inference", 0), body_id(g, "BatchNorm_Inference", 1)
    v1, v2 = (_body_op_of(g, bn).operands[4].owner for bn in (bn1, bn2))
    assert v1 != v2
    split = OpStrategy((1, 1, 1, 16), (2, 1, 1, 1))
    si = schedule_input(g, Strategy({bn1: split, bn2: split}), TX81)
    tasks = {t.id: t for t in flat(si.nodes)}
    assert tasks[f"ld:%{v1}"].stage == tasks[f"ld:%{v2}"].stage == STAGE_NH
    assert tasks[f"ct:%{bn1}"].writes == (f"%{bn1}", f"%{v1}", f"%{bn1}.imm")


def test_a_reader_before_the_op_shares_the_reloaded_value() -> None:
    """Add reads the variance, then BN overwrites it, both in the same loop body: allowed."""
    b = Builder()
    x, y = b.input((2, 8, 8, 64), "f16"), b.input((2, 8, 8, 64), "f32")
    var = b.input((1, 1, 1, 64), "f32")
    first = b.op("Add", y, var)
    out = b.op("BatchNorm_Inference", x, *[b.weight((1, 1, 1, 64), "f32") for _ in range(3)], var)
    b.output(first, out)
    g = grouped(b.finish())
    add, bn = body_id(g, "Add"), body_id(g, "BatchNorm_Inference")
    load = _bn_inputs(g)[4]
    split = OpStrategy((1, 1, 1, 16), (2, 1, 1, 1))
    si = schedule_input(g, Strategy({add: split, bn: split}), TX81)
    (loop,) = [n for n in shape_of(si.nodes) if isinstance(n, tuple)]
    body = loop[2]
    assert body.index(f"ld:%{load}") < body.index(f"ct:%{add}") < body.index(f"ct:%{bn}")


def _relu_overwrites_its_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """A made-up kernel: Relu using its operand as scratch (no seed shows one)."""
    relu = OPS["tx8be.Relu"]
    monkeypatch.setattr(relu, "clobbered_operands", lambda op: (0,))


def test_no_in_place_result_over_a_buffer_the_kernel_overwrites(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    g = matmul_relu()
    mm, relu = body_id(g, "MatMul"), body_id(g, "Relu")
    assert schedule_input(g, mm_strategy(g, (4, 1, 1)), TX81).buffers[f"%{relu}"].in_place_of
    _relu_overwrites_its_input(monkeypatch)
    si = schedule_input(g, mm_strategy(g, (4, 1, 1)), TX81)
    assert si.buffers[f"%{relu}"].in_place_of is None
    relu_task = next(t for t in flat(si.nodes) if t.id == f"ct:%{relu}")
    assert relu_task.writes == (f"%{relu}", f"%{mm}")


def test_an_overwritten_value_computed_outside_the_loop_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MatMul whole, Relu split: the Relu's second run would read what its first left."""
    g = matmul_relu()
    mm, relu = body_id(g, "MatMul"), body_id(g, "Relu")
    st = Strategy({mm: OpStrategy((1, 1, 1), (1, 1, 1)), relu: OpStrategy((1, 1), (4, 1))})
    schedule_input(g, st, TX81)  # fine while Relu only reads
    _relu_overwrites_its_input(monkeypatch)
    with pytest.raises(
        Tx8labError,
        match=rf"%{relu} \(Relu\) overwrites its operand 0 \(%{mm} of MatMul\) every time it "
        rf"runs \(STAGEOC2NH x4\), but %{mm} \(MatMul\), which computes that value, runs "
        "outside that loop",
    ):
        schedule_input(g, st, TX81)
    # both in the loop: the MatMul recomputes it before every Relu
    schedule_input(g, mm_strategy(g, (4, 1, 1)), TX81)


def test_loop_fission_between_the_reload_and_the_op_moves_the_reload() -> None:
    """An op taking a dim whole between them closes the first loop: var follows the BN."""
    b = Builder()
    y = b.input((4, 8, 8, 64), "f16")
    x = b.input((4, 8, 8, 64), "f16")
    params = [b.weight((1, 1, 1, 64), "f32") for _ in range(4)]
    whole = b.op("Relu", b.op("Relu", y))  # the second Relu takes N whole
    b.output(whole, b.op("BatchNorm_Inference", x, *params))
    g = grouped(b.finish())
    relu1, relu2 = body_id(g, "Relu", 0), body_id(g, "Relu", 1)
    bn = body_id(g, "BatchNorm_Inference")
    *_, var = _bn_inputs(g)
    split = OpStrategy((1, 1, 1, 16), (2, 1, 1, 1))
    st = Strategy({relu1: split, relu2: OpStrategy((1, 1, 1, 16), (1, 1, 1, 1)), bn: split})
    si = schedule_input(g, st, TX81)
    top = shape_of(si.nodes)
    loops = [n for n in top if isinstance(n, tuple)]
    assert len(loops) == 2  # fission around the second Relu
    first, second = (body for _, _, body in loops)
    assert f"ct:%{relu1}" in first
    assert f"ct:%{relu2}" in top
    assert second.index(f"ld:%{var}") + 1 == second.index(f"ct:%{bn}")
    assert f"ld:%{var}" not in first


# ---------------------------------------------------------------- whole reads, empty chunks, loops


@functools.cache
def matmul_into_heads() -> Op:
    """A projection whose N a Reshape splits into heads: the Reshape reads N whole."""
    b = Builder()
    x = b.input((1, 16, 64), "f16")
    w = b.weight((64, 128), "f16")
    b.output(b.op("Reshape", b.op("MatMul", x, w), shape=(1, 16, 2, 64)))
    return grouped(b.finish())


def _with(group: Op, **by_kind: tuple[tuple[int, ...], tuple[int, ...]]) -> Strategy:
    """Strategy of every compute op: (shard, split) by kind, whole otherwise."""
    ops = {}
    for op in group.regions[0].ops:
        if op.kind in ("tx8be.LoadVar", "tx8be.LoadConst", "tx8be.StoreVar", "tx8be.Return"):
            continue
        n = len(OPS[op.kind].iter_dims(op))
        shard, split = by_kind.get(op.kind.split(".")[1], ((1,) * n, (1,) * n))
        ops[op.id] = OpStrategy(shard, split)
    return Strategy(ops, 2)


def test_a_dim_another_op_reads_whole_is_gathered_over_the_noc() -> None:
    group = matmul_into_heads()
    mm = body_id(group, "MatMul")
    # MatMul dims B0 M N K: with N sharded each tile computes 16 x 32 of what the Reshape
    # reads whole (16 x 128): the four tiles all-gather their pieces after the MatMul
    si = schedule_input(group, _with(group, MatMul=((1, 1, 4, 1), (1, 1, 1, 1))), TX81)
    ids = [t.id for t in si.nodes]
    assert ids.index(f"noc:%{mm}") == ids.index(f"ne:%{mm}") + 1
    red = si.reductions[mm]
    assert (red.collective, red.ways, red.chunk_dim) == ("all-gather", 4, 2)
    # 4 tiles shard the MatMul, the other 12 of the 16 repeat them: four groups of four
    assert red.groups == ((0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11), (12, 13, 14, 15))
    assert si.buffers[f"%{mm}"].bytes == 16 * 128 * 2  # the whole N, not the 16 x 32 piece
    assert not any(b.endswith(".noc") for b in si.buffers)  # it lands in place
    # a gathered dim split in time too is refused, naming both
    both = _with(group, MatMul=((1, 1, 4, 1), (1, 1, 2, 1)))
    with pytest.raises(Tx8labError, match=r"shards dim N over 4 tiles.*also splits it in time"):
        plan_group(group, both, TX81)
    # the default strategy talks to no tile: it still keeps N whole
    st = default_strategy(group, TX81)
    assert st.ops[mm].shard[2] == 1, st.ops[mm]


def test_chunks_for_a_reader_outside_the_loop_share_one_version() -> None:
    group = matmul_into_heads()
    # N split in time: the Reshape after the loop reads all four chunks at once
    si = schedule_input(group, _with(group, MatMul=((1, 1, 1, 1), (1, 1, 4, 1))), TX81)
    mm = body_id(group, "MatMul")
    buf = si.buffers[f"%{mm}"]
    assert buf.chunk_loops == 1
    # four chunks of 16 x 32 f16 side by side
    assert buf.bytes >= 4 * 16 * 32 * 2
    from tx8lab.core.schedule.sw_pipeline import expand

    gens = {u.generation for inst in expand(si, 2) for u in inst.writes if u.root == f"%{mm}"}
    assert gens == {0}


def test_a_split_that_leaves_empty_chunks_is_refused() -> None:
    group = matmul_relu()
    mm = body_id(group, "MatMul")
    op = next(o for o in group.regions[0].ops if o.id == mm)
    dims = OPS[op.kind].iter_dims(op)
    k = [d.name for d in dims].index("K")
    split = [1] * len(dims)
    split[k] = 384  # 512 / 384 -> chunks of 2: 256 of them hold data
    with pytest.raises(Tx8labError, match="leaves 128 of its chunks empty; split it by 256"):
        OPS[op.kind].check_strategy(op, OpStrategy((1,) * len(dims), tuple(split)))


@functools.cache
def ffn() -> Op:
    """Up-projection, SiLU, down-projection: the down K is the up N (two sums in IC)."""
    b = Builder()
    x = b.input((8, 64), "f16")
    up = b.op("MatMul", x, b.weight((64, 128), "f16"))
    b.output(b.op("MatMul", b.op("Silu", up), b.weight((128, 64), "f16")))
    return grouped(b.finish())


def test_two_summed_dims_of_one_stage_get_a_loop_each() -> None:
    from tx8lab.core.schedule.slicing import loop_slots

    group = ffn()
    up, down = body_id(group, "MatMul", 0), body_id(group, "MatMul", 1)
    # up: M N K (N split 4, K split 2); silu M N; down: M N K (K = up's N, split 4)
    st = _with(group, MatMul=((1, 1, 1), (1, 1, 1)))
    ops = dict(st.ops)
    ops[up] = OpStrategy((1, 1, 1), (1, 4, 2))
    ops[down] = OpStrategy((1, 1, 1), (1, 1, 4))
    silu = body_id(group, "Silu")
    ops[silu] = OpStrategy((1, 1), (1, 4))
    slots = loop_slots(group, Strategy(ops, 2))
    # the down-projection's K (the up N) outside, the up-projection's K inside it
    assert [(s.stage, s.times) for s in slots] == [(STAGE_IC, 4), (STAGE_IC, 2)]
    si = schedule_input(group, Strategy(ops, 2), TX81)
    nest = shape_of(si.nodes)
    outer = next(n for n in nest if isinstance(n, tuple))
    inner = next(n for n in outer[2] if isinstance(n, tuple))
    assert f"ne:%{down}" in outer[2]
    assert f"ne:%{up}" in inner[2]
