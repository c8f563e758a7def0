"""The BatchNorm walkthrough timed by the tile simulator: each step's engine, start and end.

Oracle: the engine laws worked by hand on tiny slices (the law formulas of
``tx8lab.hw.laws`` with the preset's constants, the vendor's fp32 vector rate and lanes,
the kernel core's issue cost), structural facts of the seed's example, and the op
library's step-by-step cost of the op (a second implementation of the seed's flow).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from tx8lab.core.builder import make_op
from tx8lab.core.ir import TensorType, Value
from tx8lab.core.ops import get_op_def
from tx8lab.core.ops.norm import batchnorm_steps
from tx8lab.core.schedule.tasks import OpStrategy
from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81
from tx8lab.kernels.batchnorm import Instr, batchnorm_flow, timing

CLOCK = TX81.clock_hz
TILE = TX81.tile


def _cycles(seconds: float) -> int:
    return math.ceil(seconds * CLOCK - 1e-9)


def _ct(elements: int, ops: float) -> int:
    # CT law: command + pad(elements, 32 fp32 lanes) x ops / 32 GOPS (vendor fp32 rate)
    padded = -(-elements // 32) * 32
    return _cycles(TILE.ct_command_s + padded * ops / 32e9)


def _tdma(iterations: int, inner_bytes: int) -> int:
    # TDMA law: command + iterations x per-iteration + bytes / stream
    return _cycles(
        TILE.tdma_command_s
        + iterations * TILE.tdma_iteration_s
        + iterations * inner_bytes / TILE.tdma_stream_bytes_per_s
    )


def _params(c: int) -> list[np.ndarray]:
    return [np.full(c, v, np.float32) for v in (1.5, 0.25, 0.5, 2.0)]


def test_an_fp32_slice_by_hand() -> None:
    # f32 1x1x1x4: steps 3-8, one CGRA instruction each on 4 elements (padded to 32);
    # vector work per element as the op library counts it: Sub, Add, Rsqrt 3, Mul, Mul, Add
    t = timing(batchnorm_flow(np.arange(4.0).reshape(1, 1, 1, 4), *_params(4), "f32"), TX81)
    issue = _cycles(TILE.kcore_issue_s)
    ops = [1, 1, 3, 1, 1, 1]
    work = [_ct(4, o) for o in ops]
    assert max(work) < issue  # each command ends before the next is issued
    ran = [s for s in t.steps if s.engine != "-"]
    assert [s.index for s in ran] == [3, 4, 5, 6, 7, 8]
    for j, (step, cycles) in enumerate(zip(ran, work, strict=True)):
        assert step.engine == "ct"
        assert step.start_cycles == issue * (j + 1)
        assert step.end_cycles == issue * (j + 1) + cycles
        assert step.busy_cycles == cycles
    assert t.total_cycles == 6 * issue + work[-1]
    # the steps an fp32 input skips take no time
    skipped = [s for s in t.steps if s.index in (1, 2, 9, 10)]
    assert all(s.engine == "-" and s.end_cycles == 0 and not s.formulas for s in skipped)


def test_an_fp16_slice_waits_on_its_gather_scatters() -> None:
    # f16 1x1x64x64: 4096 elements, each one 2-byte inner transfer into a 32-bit slot
    run = batchnorm_flow(np.ones((1, 1, 64, 64)), *_params(64), "f16")
    args = dict(run.steps[0].instructions[0].args)
    assert (args["inner_num"], args["inner_bytes"]) == (4096, 2)
    t = timing(run, TX81)
    issue = _cycles(TILE.kcore_issue_s)
    gs = _tdma(4096, 2)
    s1, s2, s9, s10 = (t.steps[i] for i in (0, 1, 8, 9))
    assert (s1.engine, s1.start_cycles, s1.end_cycles) == ("tdma", issue, issue + gs)
    # the conversion reads imm, which the GatherScatter writes: it starts when that ends
    assert s2.engine == "ct"
    assert s2.start_cycles == s1.end_cycles
    assert s2.busy_cycles == _ct(4096, 1)
    # and the last GatherScatter reads what the last conversion wrote
    assert s10.start_cycles == s9.end_cycles
    assert s10.end_cycles - s10.start_cycles == gs
    assert t.total_cycles == s10.end_cycles


def test_the_seed_example_every_instruction_one_command() -> None:
    rng = np.random.default_rng(0)
    run = batchnorm_flow(rng.uniform(-4, 4, (4, 112, 2, 129)), *_params(129), "f16")
    t = timing(run, TX81)
    assert len(t.result.tiles[0].timings) == len(run.instructions)
    assert [s.engine for s in t.steps] == ["tdma", *["ct"] * 8, "tdma"]
    # one chain: each step starts when the one before it has ended, the last ends the op
    for before, after in zip(t.steps, t.steps[1:], strict=False):
        assert after.start_cycles >= before.end_cycles
    assert t.total_cycles == t.steps[-1].end_cycles
    # 4 x 112 x 2 x 129 elements, one 2-byte inner transfer each, both ways
    assert t.steps[0].busy_cycles == _tdma(4 * 112 * 2 * 129, 2)
    assert sum(len(s.formulas) for s in t.steps) == len(run.instructions)
    rows = t.table()
    assert [r["step"] for r in rows] == list(range(1, 11))
    assert rows[-1]["end us"] == pytest.approx(t.total_cycles / CLOCK * 1e6, abs=1e-3)


def test_an_instruction_without_a_law_is_named() -> None:
    run = batchnorm_flow(np.ones((1, 1, 1, 4)), *_params(4), "f32")
    odd = Instr("CGRA", "VuV_div", (("src", 0), ("dst", 0), ("elem_num", 4)))
    steps = list(run.steps)
    steps[2] = dataclasses.replace(steps[2], instructions=(odd,))
    with pytest.raises(Tx8labError, match="no engine law for CGRA instruction 'VuV_div'"):
        timing(dataclasses.replace(run, steps=tuple(steps)), TX81)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "tf32"])
@pytest.mark.parametrize("shape", [(2, 1, 2, 70), (3, 2, 129), (2, 30), (2, 3, 3, 200)])
def test_the_op_librarys_cost_is_the_walkthroughs_steps(shape: tuple[int, ...], dtype: str) -> None:
    # two implementations of the seed's flow: the walkthrough issues real instructions on
    # SPM bytes and times each; the op library counts them without running (its cost hook)
    c = shape[-1]
    t = timing(batchnorm_flow(np.ones(shape), *_params(c), dtype), TX81)
    ran = [(s.index, s.engine, s.busy_cycles) for s in t.steps if s.engine != "-"]
    costed = batchnorm_steps(shape, dtype, TX81)
    assert [(s.index, s.engine, s.cycles) for s in costed] == ran
    # the op's cost is the steps' busy time; the span adds the kernel core's issue gaps
    p = TensorType((c,), "f32")
    x = TensorType(shape, dtype)
    args = [Value(-1, i, v, is_arg=True) for i, v in enumerate([x, p, p, p, p])]
    op = make_op("BatchNorm_Inference", args, {}, op_id=0)
    bn = get_op_def(op.kind)
    whole = bn.temporal_slice_shape(op, OpStrategy((1,) * len(shape), (1,) * len(shape)))
    assert bn.cost(op, whole, TX81).work_cycles == sum(b for _, _, b in ran) <= t.total_cycles
