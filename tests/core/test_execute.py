"""The emitted program executes: main.c on the host model equals the interpreter and the Program.

Oracles: the interpreter (``interpret``, the op library's whole-op reference), the Program's
own command streams (the trace must equal them), and hand-made corruptions that must be
caught (a wrong SPM offset, a wrong address in the C, a row read one off).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tx8lab.core import zoo
from tx8lab.core.builder import Builder
from tx8lab.core.codegen import groups_c, main_c
from tx8lab.core.execute import compare_outputs, execute_module, tolerance
from tx8lab.core.ir import Module, Op
from tx8lab.core.passes import build_pipeline
from tx8lab.core.program import build_program, group_schedule, strategy_of
from tx8lab.core.runner import run_pipeline
from tx8lab.core.schedule.slicing import STAGE_IC, loop_slots
from tx8lab.errors import ProgramError
from tx8lab.hw.presets import resolve_hw

HW = resolve_hw([])
#: A small SPM: the tiny CNN then splits in time, accumulates partial sums, multi-buffers.
SMALL = resolve_hw(["tile.spm_bytes=72Ki"])


def scheduled(module: Module, hw: Any = HW, knobs: dict[str, Any] | None = None) -> Module:
    steps = list(run_pipeline(module, build_pipeline(None, knobs or {}), hw))
    return steps[-1].result.module


ZOO_SMALL = {
    "tiny_cnn": {},
    "tiny_transformer_block": {},
    "batchnorm_demo": {},
    "layout_align_demo": {},
    "resnet50": {"size": 32},
    "mobilenet_v2": {"size": 32},
    "vit_tiny": {"size": 32, "layers": 1, "hidden": 32, "heads": 2, "mlp": 64, "classes": 10},
    "llama_decoder": {"hidden": 64, "heads": 2, "ffn": 128, "vocab": 100, "seq": 8},
    "bert_base": {"seq": 16, "layers": 1, "hidden": 64, "heads": 2, "ffn": 128, "vocab": 100},
}


@pytest.mark.parametrize("name", sorted(ZOO_SMALL))
def test_zoo_model_main_c_equals_interpreter(name: str) -> None:
    module = scheduled(zoo.build(name, **ZOO_SMALL[name]))
    ex = execute_module(module, HW)
    assert ex.ok, ex.summary()
    # no partial sums at these sizes: every output is bit-exact
    assert all(d.exact for d in ex.diffs), ex.summary()
    program = ex.program
    assert len(ex.trace) == program.num_commands


def test_bert_gathers_only_the_rows_its_indices_pick() -> None:
    # the scheduler keeps only the rows the indices select (rdmaGather): main.c loads them
    # with op_dma_gather, which reads the indices from SPM
    module = scheduled(zoo.build("bert_base", **ZOO_SMALL["bert_base"]))
    ex = execute_module(module, HW)
    assert ex.ok, ex.summary()
    gathers = [c for cs in ex.program.tiles.values() for c in cs if c.gather is not None]
    assert gathers
    assert {c.function for c in gathers} == {"op_dma_gather"}
    vocab = ZOO_SMALL["bert_base"]["vocab"]
    for c in gathers:
        rows = c.writes[0].window[c.writes[0].gather_axis][1]
        assert rows == math.prod(b - a for a, b in c.gather.window) < vocab


def test_a_gather_split_in_time_loads_each_chunks_rows() -> None:
    b = Builder()
    table = b.weight((512, 64), "f16")
    picked = b.op("Gather", table, b.input((1, 512), "i32"), axis=0)
    b.output(b.op("Relu", picked))
    module = scheduled(b.finish(), SMALL)
    indices = np.random.default_rng(0).integers(-512, 512, (1, 512)).astype(np.int32)
    ex = execute_module(module, SMALL, inputs=[indices])
    assert ex.ok, ex.summary()
    assert all(d.exact for d in ex.diffs)
    loads = [c for c in ex.program.tiles[0] if c.gather is not None]
    assert [c.iteration for c in loads] == [(0,), (1,)]
    assert loads[0].gather.window != loads[1].gather.window


def _counts(module: Module, hw: Any) -> dict[str, int]:
    p = build_program(module, hw)
    cs = [c for cs in p.tiles.values() for c in cs]
    return {
        "psum": sum(c.psum is not None for c in cs),
        "loops": sum(bool(c.iteration) for c in cs),
        "imm": sum(c.imm is not None for c in cs),
        "in_place": sum(
            1
            for c in cs
            if c.what == "compute"
            and any(
                w.lifetime == r.lifetime and w.value != r.value for w in c.writes for r in c.reads
            )
        ),
        "rotating": len({(c.tile, a.lifetime) for c in cs for a in c.writes if "@" in a.lifetime}),
    }


def test_split_psum_multibuffer_in_place_execute_exactly() -> None:
    module = scheduled(zoo.tiny_cnn(size=32, channels=32), SMALL)
    counts = _counts(module, SMALL)
    assert all(v > 0 for v in counts.values()), counts
    ex = execute_module(module, SMALL)
    assert ex.ok, ex.summary()
    assert all(d.exact for d in ex.diffs), ex.summary()


def _slots_and_chunks(module: Module, hw: Any) -> tuple[int, int]:
    """(most IC loops of one group, buffers holding a loop's chunks side by side)."""
    most, chunked = 0, 0
    for group in module.main.ops:
        if group.kind != "tx8be.Group":
            continue
        slots = loop_slots(group, strategy_of(group))
        most = max(most, sum(s.stage == STAGE_IC for s in slots))
        _, si, _ = group_schedule(group, hw)
        chunked += sum(b.chunk_loops > 0 for b in si.buffers.values())
    return most, chunked


def test_llama_ffn_sums_in_two_nested_loops_and_executes() -> None:
    # up-projection K and down-projection K (the up N) both split: one loop each, the
    # down-projection's partial sum restarting with the outer loop only (split in time: with
    # group-cost.noc the search shards these K across tiles instead)
    hw = resolve_hw(["tile.spm_bytes=76Ki"])
    llama = zoo.build("llama_decoder", **ZOO_SMALL["llama_decoder"])
    module = scheduled(llama, hw, {"group-cost.noc": False})
    assert _slots_and_chunks(module, hw)[0] == 2
    ex = execute_module(module, hw)
    assert ex.ok, ex.summary()


def test_chunks_read_whole_after_the_loop_execute() -> None:
    # a projection split over N in time, read whole by the Reshape into heads after the loop
    b = Builder()
    x = b.input((1, 16, 256), "f16")
    heads = b.op("Reshape", b.op("MatMul", x, b.weight((256, 256), "f16")), shape=(1, 16, 4, 64))
    b.output(b.op("Transpose", heads, perm=(0, 2, 1, 3)))
    module = scheduled(b.finish(), SMALL)
    assert _slots_and_chunks(module, SMALL)[1] >= 1
    ex = execute_module(module, SMALL)
    assert ex.ok, ex.summary()


def test_a_split_past_the_dim_leaves_no_empty_chunk() -> None:
    # K = 96 on 2 KiB of usable SPM: the split is 96, not the next power of two, so the
    # last partial sum lands on data
    hw = resolve_hw(["tile.spm_bytes=66Ki"])
    b = Builder()
    b.output(b.op("MatMul", b.input((1, 1, 96), "f16"), b.weight((96, 8), "f16")))
    module = scheduled(b.finish(), hw)
    ex = execute_module(module, hw, via="program")
    assert ex.ok, ex.summary()
    boxes = [c.box for cs in ex.program.tiles.values() for c in cs if c.what == "compute"]
    assert all(hi > lo for box in boxes for lo, hi in box)


def test_reordered_partial_sums_stay_within_the_tolerance() -> None:
    hw = resolve_hw(["tile.spm_bytes=128Ki"])
    module = scheduled(zoo.resnet50(size=32), hw)
    ex = execute_module(module, hw, via="program")
    assert _counts(module, hw)["psum"] > 0
    assert ex.ok, ex.summary()


def test_tolerance_catches_a_row_read_one_off() -> None:
    rng = np.random.default_rng(3)
    want = rng.standard_normal((4, 64)).astype(np.float16)
    got = want.copy()
    got[2] = want[1]  # the row next door: what a one-row-off address reads
    diff = compare_outputs([got], [want], ["f16"], rounding="f16")[0]
    assert not diff.ok
    assert diff.max_abs > 10 * diff.tolerance
    # one ulp at the largest magnitude is inside the bound
    scale = float(np.abs(want.astype(np.float64)).max())
    assert tolerance("f16", want, "f16") == pytest.approx(4 * 2.0**-10 * max(1.0, scale))
    assert tolerance("i32", want, "f16") == 0.0
    assert tolerance("f16", want, None) == 0.0
    # an f32 output of a program that computes in bf16 gets the bf16 ulp, not its own
    assert tolerance("f32", want, "bf16") == pytest.approx(4 * 2.0**-7 * max(1.0, scale))
    assert tolerance("f32", want, "f32") == pytest.approx(4 * 2.0**-23 * max(1.0, scale))


def _replace_group(module: Module, group_id: int, new: Op) -> Module:
    main = module.main
    ops = tuple(new if op.id == group_id else op for op in main.body.ops)
    body = dataclasses.replace(main.body, ops=ops)
    fn = dataclasses.replace(main, body=body)
    functions = tuple(fn if f is main else f for f in module.functions)
    return dataclasses.replace(module, functions=functions)


def _corrupted(module: Module) -> tuple[Module, int]:
    """Move one lifetime onto another that is live at the same time."""
    for group in module.main.ops:
        if group.kind != "tx8be.Group":
            continue
        rows = [tuple(r) for r in group.attrs["spm_offsets"]]
        if len(rows) < 3:
            continue
        first, second = rows[0], rows[1]  # the first two loads are both live at the conv
        bad = [(second[0], first[1], second[2]) if r == second else r for r in rows]
        return _replace_group(module, group.id, group.with_attrs(spm_offsets=bad)), group.id
    raise AssertionError("no group with three lifetimes")


@pytest.mark.parametrize("via", ["program", "c"])
def test_corrupted_offset_is_caught(via: str) -> None:
    module, gid = _corrupted(scheduled(zoo.tiny_cnn()))
    with pytest.raises(ProgramError, match=rf"group %{gid} .*over live") as err:
        execute_module(module, HW, via=via)
    assert err.value.group == gid
    assert err.value.buffer
    assert err.value.step >= 0


def test_wrong_address_in_main_c_breaks_the_trace() -> None:
    module = scheduled(zoo.tiny_cnn())
    text = main_c(module, HW, groups_c(module, HW))
    found = re.search(r"TSR t_37 = \{Fmt_FP16, 0x([0-9a-f]{6})", text)
    assert found is not None
    moved = f"TSR t_37 = {{Fmt_FP16, 0x{int(found.group(1), 16) + 0x40:06x}"
    bad = text.replace(found.group(0), moved, 1)
    with pytest.raises(
        ProgramError, match=r"(?s)trace differs from the Program .*op_dma_load op %37"
    ):
        execute_module(module, HW, main_c=bad)


def test_missing_compiler_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import tx8lab.core.execute as ex

    monkeypatch.setenv("CC", "no-such-cc")
    monkeypatch.setattr(ex.shutil, "which", lambda name: None)
    with pytest.raises(ex.Tx8labError, match="needs a C compiler"):
        ex.c_compiler()


# ---------------------------------------------------------------- random modules

UNARY = ("Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Silu", "Exp")
BINARY = ("Add", "Sub", "Mul", "Max", "Min")


@st.composite
def chains(draw: Any) -> Module:
    """A chain over ``[B, M, K]`` f16/f32 tensors: pointwise ops, matmuls, a softmax."""
    dtype = draw(st.sampled_from(("f16", "f32", "bf16")))
    b = draw(st.integers(1, 3))
    m = draw(st.integers(1, 48))
    k = draw(st.sampled_from((8, 16, 32, 64, 96)))
    builder = Builder()
    x = builder.input((b, m, k), dtype)
    y = builder.input((b, m, k), dtype)
    value = x
    width = k
    for _ in range(draw(st.integers(1, 5))):
        what = draw(st.sampled_from(("unary", "binary", "matmul", "softmax", "heads")))
        if what == "unary":
            value = builder.op(draw(st.sampled_from(UNARY)), value)
        elif what == "binary" and width == k:
            value = builder.op(draw(st.sampled_from(BINARY)), value, y)
        elif what == "matmul":
            n = draw(st.sampled_from((8, 16, 32, 64)))
            w = builder.weight((width, n), dtype)
            value = builder.op("MatMul", value, w)
            width = n
        elif what == "softmax":
            value = builder.op("Softmax", value, axis=-1)
        elif what == "heads" and width % 2 == 0:
            # split the last dim into two heads and merge them back: the first Reshape
            # reads its producer's last dim whole
            heads = builder.op("Reshape", value, shape=(b, m, 2, width // 2))
            value = builder.op("Reshape", builder.op("Relu", heads), shape=(b, m, width))
    builder.output(value)
    return builder.finish()


#: SPMs small enough that most chains split, loop, multi-buffer and sum partially (64 KiB
#: of the SPM is reserved: 68Ki leaves 4 KiB), and the default.
RANDOM_HWS = {
    "4 KiB usable": resolve_hw(["tile.spm_bytes=68Ki"]),
    "8 KiB usable": SMALL,
    "default": HW,
}


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(chains(), st.sampled_from(sorted(RANDOM_HWS)), st.integers(0, 2**16))
def test_random_modules_execute_like_the_interpreter(module: Module, spm: str, seed: int) -> None:
    hw = RANDOM_HWS[spm]
    done = scheduled(module, hw)
    ex = execute_module(done, hw, seed=seed, via="program")
    assert ex.ok, ex.summary()


@settings(max_examples=6, deadline=None, derandomize=True)
@given(chains(), st.sampled_from(sorted(RANDOM_HWS)))
def test_random_modules_main_c_executes(module: Module, spm: str) -> None:
    hw = RANDOM_HWS[spm]
    done = scheduled(module, hw)
    ex = execute_module(done, hw)
    assert ex.ok, ex.summary()


def test_cli_run_execute_prints_the_comparison(tmp_path: Any, capsys: Any) -> None:
    from tx8lab.cli import main as cli_main

    code = cli_main(["run", "tiny_cnn", "--emit-c", str(tmp_path), "--execute"])
    assert code == 0
    assert "outputs match the interpreter" in capsys.readouterr().out
    assert (tmp_path / "libprogram.so").exists()
