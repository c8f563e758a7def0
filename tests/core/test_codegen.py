"""codegen: main.c per group and for the module (op library genOpCode, the pass, the header).

Golden C files are in ``tests/golden_c/`` and compared exactly. After a deliberate change
of the emitted C, regenerate them with::

    .venv/bin/python -m tests.core.test_codegen --regen

and review the diff.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.strategies import modules
from tx8lab.core import zoo
from tx8lab.core.c_header import header_text
from tx8lab.core.codegen import CodegenCache, _rotation, group_c, groups_c, main_c
from tx8lab.core.codegen_c import CCall, c_function
from tx8lab.core.execute import execute_module
from tx8lab.core.ir import Module, Op
from tx8lab.core.ops import OPS
from tx8lab.core.ops.registry import SliceShape
from tx8lab.core.passes import DEFAULT_PIPELINE, build_pipeline
from tx8lab.core.passes.base import Step
from tx8lab.core.passes.codegen import Codegen, header_path
from tx8lab.core.program import build_program
from tx8lab.core.runner import run_pipeline
from tx8lab.errors import Tx8labError
from tx8lab.hw import get_preset
from tx8lab.hw.config import ChipConfig

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden_c"
HW = get_preset("tx81")
#: SPM small enough that the transformer block's groups loop (80 KiB of 3 MiB).
SMALL_SPM = HW.with_overrides({"tile.spm_bytes": "80Ki"})

#: Every zoo model at a size that runs the whole pipeline in seconds.
ZOO_SMALL: dict[str, dict[str, int]] = {
    "resnet50": {"size": 64},
    "mobilenet_v2": {"size": 64},
    "bert_base": {"layers": 1, "seq": 32},
    "llama_decoder": {"layers": 1, "hidden": 1024, "heads": 8, "ffn": 2048, "vocab": 1000},
    "vit_tiny": {"layers": 2, "size": 64},
    "tiny_cnn": {},
    "tiny_transformer_block": {},
    "layout_align_demo": {},
    "batchnorm_demo": {},
}


@functools.cache
def _steps(name: str, hw: ChipConfig = HW, **params: Any) -> tuple[Step, ...]:
    return tuple(run_pipeline(zoo.build(name, **params), build_pipeline(), hw))


@functools.cache
def _pinned(name: str, hw: ChipConfig = HW, **params: Any) -> tuple[Step, ...]:
    """The pipeline with group-cost's documented default strategy.

    No time-budgeted search, so a golden file changes only when codegen or that strategy does.
    """
    passes = build_pipeline(overrides={"group-cost.search": "default"})
    return tuple(run_pipeline(zoo.build(name, **params), passes, hw))


def _zoo_steps(name: str) -> tuple[Step, ...]:
    return _steps(name, HW, **ZOO_SMALL[name])


def _groups(module: Module) -> list[Op]:
    return [op for op in module.main.ops if op.kind == "tx8be.Group"]


# ------------------------------------------------------------------ golden cases


def golden_cases() -> dict[str, str]:
    """File name -> the C text it must hold."""
    cnn = _pinned("tiny_cnn")[-1]
    cnn_group = next(g for g in _groups(cnn.after) if "Conv2d" in g.attrs.get("group_pattern", ""))
    block = _pinned("tiny_transformer_block", SMALL_SPM, seq=64, hidden=64)[-1]
    texts = block.result.artifacts["c"]
    attention = next(g for g in _groups(block.after) if "Softmax" in texts[g.id])
    psum = next(g for g in _groups(block.after) if "psum_init = (i0 == 0)" in texts[g.id])
    return {
        "tiny_cnn_conv_group.c": cnn.result.artifacts["c"][cnn_group.id],
        "transformer_attention_group.c": texts[attention.id],
        "transformer_matmul_psum_group.c": texts[psum.id],
        "tiny_cnn_main.c": cnn.result.artifacts["main_c"],
    }


def golden_modules() -> dict[str, tuple[Module, ChipConfig]]:
    """File name -> the scheduled module (and hardware) whose main.c holds that text."""
    cnn = _pinned("tiny_cnn")[-1].after
    block = _pinned("tiny_transformer_block", SMALL_SPM, seq=64, hidden=64)[-1].after
    return {
        "tiny_cnn_conv_group.c": (cnn, HW),
        "transformer_attention_group.c": (block, SMALL_SPM),
        "transformer_matmul_psum_group.c": (block, SMALL_SPM),
        "tiny_cnn_main.c": (cnn, HW),
    }


@pytest.mark.parametrize("name", sorted(golden_cases()))
def test_golden_c_executes_like_the_interpreter(name: str) -> None:
    # the golden text itself is what runs: main.c holds it verbatim
    module, hw = golden_modules()[name]
    text = main_c(module, hw, groups_c(module, hw))
    assert (GOLDEN / name).read_text(encoding="utf-8") in text
    ex = execute_module(module, hw, main_c=text)
    assert ex.ok, ex.summary()
    assert len(ex.trace) == ex.program.num_commands


@pytest.mark.parametrize("name", sorted(golden_cases()))
def test_golden_c(name: str) -> None:
    path = GOLDEN / name
    assert path.is_file(), (
        f"{path} is missing; run: .venv/bin/python -m tests.core.test_codegen --regen"
    )
    assert golden_cases()[name] == path.read_text(encoding="utf-8")


def test_the_golden_groups_show_what_they_are_for() -> None:
    cases = golden_cases()
    cnn = cases["tiny_cnn_conv_group.c"]
    assert "op_conv2d(&(CONV2D_PARAM){" in cnn
    assert "op_batchnorm_inference(" in cnn
    assert cnn.index("op_dma_load(") < cnn.index("op_conv2d(") < cnn.index("op_dma_store(")
    attention = cases["transformer_attention_group.c"]
    assert "for (int32_t i0 = 0; i0 < 4; ++i0) {  /* Repeat x4 STAGEOC2NH */" in attention
    assert "for (int32_t i1 = 0; i1 < 2; ++i1) {  /* Repeat x2 STAGEIC2IC */" in attention
    assert ".psum_init = (i1 == 0), .psum_last = (i1 == 1)" in attention
    assert re.search(r"t_(\d+)\.addr = spm_\1\[n_\1\+\+ % 2\];", attention)
    assert "op_softmax(" in attention
    assert "op_matmul(" in attention
    psum = cases["transformer_matmul_psum_group.c"]
    assert ".psum_init = (i0 == 0), .psum_last = (i0 == 3)" in psum


# ------------------------------------------------------------------ the header


def test_the_shipped_header_is_the_generated_one() -> None:
    assert header_path() == REPO / "tx8lab" / "kernels" / "include" / "tx8_oplib.h"
    assert header_path().read_text(encoding="utf-8") == header_text()


def test_the_header_declares_the_seed_structs_and_every_op_function() -> None:
    text = header_text()
    for struct in ("L_SHAPE", "G_SHAPE", "TSR", "BATCHNORM_INFER_PARAM"):
        assert f"}} {struct};" in text
    assert "typedef enum OP_INSTR_TYPE {" in text
    for kind, entry in OPS.items():
        if entry.c_param and entry.family != "memory":
            assert f" {c_function(kind)}(" in text, kind


def test_pyproject_ships_the_header() -> None:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"tx8lab.kernels" = ["include/*.h"]' in text


# ------------------------------------------------------------------ op library


def test_every_op_kind_but_group_and_constant_has_codegen() -> None:
    missing = sorted(k for k, e in OPS.items() if not e.c_param)
    assert missing == ["tx8be.Constant", "tx8be.Group"]


def test_a_kind_without_codegen_names_the_op_and_what_to_add() -> None:
    group = _groups(_steps("tiny_cnn")[-1].after)[0]
    call = CCall(SliceShape((), (), ()))
    with pytest.raises(Tx8labError, match=rf"%{group.id} .*tx8be\.Group has no codegen.*c_param"):
        OPS["tx8be.Group"].codegen(group, call)


def test_the_pass_fails_on_a_body_op_without_codegen(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _steps("tiny_cnn")[-1].after
    relu = next(o for g in _groups(module) for o in g.regions[0].ops if o.kind == "tx8be.Relu")
    monkeypatch.setattr(type(OPS["tx8be.Relu"]), "c_param", "")
    with pytest.raises(Tx8labError, match=rf"%{relu.id} tx8be\.Relu: tx8be\.Relu has no codegen"):
        Codegen().run(module, HW)


def test_function_names_keep_the_seed_spellings() -> None:
    assert c_function("tx8be.BatchNorm_Inference") == "op_batchnorm_inference"
    assert c_function("tx8be.MatMul") == "op_matmul"
    assert c_function("tx8be.GlobalAvgPool") == "op_global_avg_pool"


def test_conv_fields_come_from_the_op() -> None:
    text = golden_cases()["tiny_cnn_conv_group.c"]
    assert ".kernel = {3, 3}, .strides = {1, 1}, .pads = {1, 1, 1, 1}" in text


# ------------------------------------------------------------------ the pass


def test_codegen_is_last_in_the_default_pipeline_and_keeps_the_module() -> None:
    assert DEFAULT_PIPELINE[-1] == "codegen"
    before, step = _steps("tiny_cnn")[-2:]
    assert step.name == "codegen"
    assert step.after is before.after
    assert not step.changed


def test_artifacts_and_stats() -> None:
    step = _steps("tiny_cnn")[-1]
    groups = _groups(step.after)
    c = step.result.artifacts["c"]
    main = step.result.artifacts["main_c"]
    assert list(c) == [g.id for g in groups]
    for g in groups:
        assert c[g.id] in main
        assert main.count(f"cycles += group_{g.id}(tile_id);") == 1
    assert step.stats["groups"] == len(groups)
    assert step.stats["bytes"] == len(main.encode())
    assert step.stats["lines"] == main.count("\n")
    assert [d.op_id for d in step.decisions] == [g.id for g in groups]
    assert {d.choice for d in step.decisions} <= {"emitted", "reused"}


def test_main_c_header_comment_ddr_table_and_barriers() -> None:
    step = _steps("tiny_cnn")[-1]
    main = step.result.artifacts["main_c"]
    groups = _groups(step.after)
    assert main.startswith("/* main.c of tiny_cnn, generated by tx8lab codegen")
    assert " * hardware preset: tx81\n" in main
    total = sum(g.attrs["cycles"] for g in groups)
    assert f" * estimated cycles: {total} " in main
    for g in groups:
        for op in g.regions[0].ops:
            if "ddr_addr" in op.attrs:
                assert f"#define DDR_{op.id} 0x{op.attrs['ddr_addr']:010x}ULL" in main
    barriers = sum(bool(g.attrs["need_barrier"]) for g in groups)
    assert main.count("cycles += tsm_barrier();") == barriers
    # the barrier follows its group's call
    for g in groups:
        call = f"cycles += group_{g.id}(tile_id);\n"
        after = main[main.index(call) + len(call) :]
        assert after.startswith("    cycles += tsm_barrier();") == bool(g.attrs["need_barrier"])


def test_output_is_deterministic() -> None:
    module = _steps("tiny_transformer_block")[-1].after
    first = Codegen().run(module, HW).artifacts["main_c"]
    assert Codegen().run(module, HW).artifacts["main_c"] == first


def _task_ids(nodes: Any) -> list[str]:
    from tx8lab.core.schedule.tasks import Task

    out: list[str] = []
    for n in nodes:
        out += [n.id] if isinstance(n, Task) else _task_ids(n.body)
    return out


def test_one_call_per_task_in_program_order() -> None:
    from tx8lab.core.codegen import group_schedule

    block = _pinned("tiny_transformer_block", SMALL_SPM, seq=64, hidden=64)[-1]
    for group in _groups(block.after):
        _, si, _ = group_schedule(group, SMALL_SPM)
        tasks = _task_ids(si.nodes)
        text = block.result.artifacts["c"][group.id]
        called = re.findall(r"cycles \+= op_\w+\(.*\);  /\* (\S+) ", text)
        assert called == tasks


def _unroll(nodes: Any, at: tuple[int, ...] = ()) -> Any:
    for node in nodes:
        if hasattr(node, "times"):
            for i in range(node.times):
                yield from _unroll(node.body, (*at, i))
        else:
            yield node.id, at


def test_main_c_is_printed_from_the_program_it_unrolls() -> None:
    # the Program keeps each group's loop nest (GroupCode); main.c prints its call sites in
    # order, and each tile's commands are those sites run through the loops by hand
    block = _pinned("tiny_transformer_block", SMALL_SPM, seq=64, hidden=64)[-1]
    program = build_program(block.after, SMALL_SPM)
    printed = groups_c(block.after, SMALL_SPM, program=program)
    assert [g.text for g in printed] == [block.result.artifacts["c"][g.group_id] for g in printed]
    looped = 0
    for g in printed:
        code = program.code[g.group_id]
        called = re.findall(r"cycles \+= op_\w+\(.*\);  /\* (\S+) ", g.text)
        assert called == code.sites
        unrolled = list(_unroll(code.schedule.nodes))
        looped += any(at for _, at in unrolled)
        for tile in program.tiles:
            commands = [c for c in program.group_commands(g.group_id, tile) if c.what != "barrier"]
            if commands:
                assert [(c.task, c.iteration) for c in commands] == unrolled
    assert looped


def test_loops_follow_the_repeat_nodes_and_psum_restarts() -> None:
    text = golden_cases()["transformer_matmul_psum_group.c"]
    assert "for (int32_t i0 = 0; i0 < 4; ++i0) {  /* Repeat x4 STAGEIC2IC */" in text
    # the accumulator is f32 and passed to the matmul inside the reduction loop
    psum = re.search(r"TSR (t_\d+_psum) = \{Fmt_FP32, ", text)
    assert psum is not None
    call = re.search(
        r"\n        cycles \+= op_matmul\(.*, NULL, &" + psum.group(1) + r", &t_\d+\);", text
    )
    assert call is not None


def loop_lines(text: str) -> tuple[list[str], int, int]:
    """The C's lines and the indices of its (one) ``for`` line and of the brace closing it."""
    lines = text.splitlines()
    (start,) = [i for i, line in enumerate(lines) if line.lstrip().startswith("for (")]
    indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
    end = next(i for i in range(start + 1, len(lines)) if lines[i] == indent + "}")
    return lines, start, end


def line_of(lines: list[str], needle: str) -> int:
    (index,) = [i for i, line in enumerate(lines) if needle in line]
    return index


def big_batchnorm_c() -> tuple[Op, str]:
    """The issue's group: BatchNorm 8x112x112x64 f16, split in time by the pinned default."""
    step = _pinned("batchnorm_demo", batch=8, height=112, width=112, channels=64, dtype="f16")[-1]
    (group,) = [
        g
        for g in _groups(step.after)
        if any(op.kind == "tx8be.BatchNorm_Inference" for op in g.regions[0].ops)
    ]
    return group, step.result.artifacts["c"][group.id]


def test_batchnorm_split_in_time_loads_the_variance_inside_the_loop() -> None:
    """Seed 001 main.c: the variance is loaded again in every iteration (steps 4-5 overwrite it)."""
    group, text = big_batchnorm_c()
    (bn,) = [op for op in group.regions[0].ops if op.kind == "tx8be.BatchNorm_Inference"]
    x, scale, offset, mean, var = (v.owner for v in bn.operands)
    lines, start, end = loop_lines(text)
    assert "STAGEOC2NH" in lines[start]  # split on N, H or W (BN's C is never split)

    def load(op_id: int) -> int:
        return line_of(lines, f", &t_{op_id}, DDR_{op_id}, &gs_{op_id});")

    call = line_of(lines, "op_batchnorm_inference(")
    # scale, offset and mean once before the loop; the slice and the variance in it
    assert max(load(scale), load(offset), load(mean)) < start
    assert start < load(x) < load(var) < call < end
    assert f"%{bn.id} (BatchNorm_Inference) overwrites it" in lines[load(var)]
    assert "overwrites" not in lines[load(x)]
    # the op reads the variance from the address this iteration's load wrote
    assert lines[load(var) - 1].strip().startswith(f"t_{var}.addr = spm_{var}[")
    assert f"&t_{mean}, &t_{var}, &t_{bn.id}_imm" in lines[call]


def test_multi_buffer_rotation_and_per_generation_tables() -> None:
    assert _rotation([0, 64, 0, 64, 0, 64], 2) == ([0, 64], 2)
    assert _rotation([8, 8, 8], 2) == ([8], 1)
    assert _rotation([0, 64, 128, 64], 2) == ([0, 64, 128, 64], 0)
    assert _rotation([0, 64], 2) == ([0, 64], 0)
    # the transformer block at an 80 KiB SPM double-buffers the V load of its attention
    # group (the schedule the golden C pins); other buffers keep a table per generation
    main = golden_cases()["transformer_attention_group.c"]
    rotating = re.findall(r"t_(\w+)\.addr = spm_\1\[n_\1\+\+ % 2\];", main)
    assert rotating, "the attention group has buffers that rotate over multi_buffer copies"
    assert re.search(r"static const uint32_t spm_\w+\[8\] = ", main)
    for name in rotating[:5]:
        assert re.search(rf"static const uint32_t spm_{name}\[2\] = ", main)


def test_addresses_are_the_allocation() -> None:
    step = _steps("tiny_cnn")[-1]
    for group in _groups(step.after):
        text = step.result.artifacts["c"][group.id]
        offsets = {lid: off for lid, off, _ in group.attrs["spm_offsets"]}
        for name, addr in re.findall(r"TSR t_(\w+) = \{Fmt_\w+, 0x([0-9a-f]+), ", text):
            lid = "%" + name.replace("_imm", ".imm").replace("_psum", ".psum")
            if lid in offsets:
                assert int(addr, 16) == offsets[lid], (group.id, lid)


def test_the_cache_renames_ids_exactly() -> None:
    module = _zoo_steps("resnet50")[-1].after
    cache = CodegenCache()
    out = groups_c(module, HW, cache)
    assert cache.hits > 0
    for g, op in zip(out, _groups(module), strict=True):
        if g.template is not None:
            assert g.text == group_c(op, HW).text


def test_missing_schedule_is_a_clear_error() -> None:
    steps = _steps("tiny_cnn")
    grouped = next(s for s in steps if s.name == "group-mapping").after
    with pytest.raises(Tx8labError, match=r"group %\d+ has no multi_buffer.*run group-cost"):
        Codegen().run(grouped, HW)


def test_missing_ddr_address_is_a_clear_error() -> None:
    steps = _steps("tiny_cnn")
    barrier = next(s for s in steps if s.name == "opt-barrier").after
    with pytest.raises(Tx8labError, match=r"has no ddr_addr; run opt-ddr"):
        Codegen().run(barrier, HW)


def test_an_op_outside_groups_is_a_clear_error() -> None:
    step = _steps("tiny_cnn")[-1]
    module = step.after
    group = _groups(module)[0]
    inner = next(o for o in group.regions[0].ops if o.kind == "tx8be.ChannelNorm")
    outside = inner.replace(operands=(group.results[0],))
    ops = (*module.main.ops[:-1], outside, module.main.ops[-1])
    bad = dataclasses.replace(module, functions=(module.main.with_ops(ops),))
    with pytest.raises(Tx8labError, match=r"tx8be\.ChannelNorm is outside every group"):
        groups_c(bad, HW)


# ------------------------------------------------------------------ gcc


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
@pytest.mark.parametrize("name", sorted(ZOO_SMALL))
def test_main_c_compiles_for_every_zoo_model(name: str, tmp_path: Path) -> None:
    main = _zoo_steps(name)[-1].result.artifacts["main_c"]
    source = tmp_path / "main.c"
    source.write_text(main, encoding="utf-8")
    proc = subprocess.run(
        [
            "gcc",
            "-fsyntax-only",
            "-std=c11",
            "-Wall",
            "-Werror",
            "-I",
            str(header_path().parent),
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[:4000]


def test_main_c_of_the_module_matches_its_groups() -> None:
    step = _steps("tiny_cnn")[-1]
    groups = groups_c(step.after, HW)
    assert main_c(step.after, HW, groups) == step.result.artifacts["main_c"]


def _regen() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, text in golden_cases().items():
        (GOLDEN / name).write_text(text, encoding="utf-8")
        print(f"wrote {GOLDEN / name}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--regen"]:
        sys.exit("usage: python -m tests.core.test_codegen --regen")
    _regen()


# ------------------------------------------------------------------ the C's addresses, executed

_FOR = re.compile(r"for \(int32_t (i\d+) = 0; \1 < (\d+); \+\+\1\) \{")
_TABLE = re.compile(r"static const uint32_t spm_(\w+)\[\d+\] = \{([^}]*)\};")
_INIT = re.compile(r"TSR t_(\w+) = \{Fmt_\w+, 0x([0-9a-f]+), ")
_NEXT = re.compile(r"(?:if \((i\d+) == 0\) )?t_(\w+)\.addr = spm_\2\[n_\2\+\+(?: % (\d+))?\];")
_ALIAS = re.compile(r"t_(\w+)\.addr = t_(\w+)\.addr;")
_CALL = re.compile(r"cycles \+= op_\w+\((.*)\);  /\* (\S+) ")
# a NoC task's block: its sends, receives and adds (one call of the task per block)
_NOC_BLOCK = re.compile(r"\{  /\* (noc:%\d+) ")


def _run_c(text: str) -> list[tuple[str, dict[str, int]]]:
    """Execute the address logic of one group's C: (task id, TSR name -> address) per call."""
    tables = {n: [int(v) for v in vals.split(",")] for n, vals in _TABLE.findall(text)}
    addr = {n: int(a, 16) for n, a in _INIT.findall(text)}
    body = text[text.index("tile_id) {") :].splitlines()[1:]
    calls: list[tuple[str, dict[str, int]]] = []
    counters: dict[str, int] = {}

    def run(lines: list[str], env: dict[str, int]) -> None:
        k = 0
        while k < len(lines):
            line = lines[k].strip()
            loop = _FOR.match(line)
            if loop:
                depth, end = 1, k + 1
                while depth:
                    inner = lines[end].strip()
                    depth += (_FOR.match(inner) is not None) - (inner == "}")
                    end += 1
                for i in range(int(loop.group(2))):
                    run(lines[k + 1 : end - 1], {**env, loop.group(1): i})
                k = end
                continue
            noc_block = _NOC_BLOCK.match(line)
            if noc_block:
                depth, end = 1, k + 1
                while depth:
                    depth += lines[end].count("{") - lines[end].count("}")
                    end += 1
                # the TSRs it names: the sum (&t_X) and its staging slots (t_X_noc)
                used = re.findall(r"\bt_(\w+)", "\n".join(lines[k:end]))
                calls.append((noc_block.group(1), {u: addr[u] for u in used}))
                k = end
                continue
            step = _NEXT.match(line)
            alias = _ALIAS.match(line)
            call = _CALL.match(line)
            if step and (step.group(1) is None or env[step.group(1)] == 0):
                name, period = step.group(2), step.group(3)
                n = counters.get(name, 0)
                counters[name] = n + 1
                addr[name] = tables[name][n % int(period) if period else n]
            elif alias:
                addr[alias.group(1)] = addr[alias.group(2)]
            elif call:
                used = re.findall(r"&t_(\w+)", call.group(1))
                calls.append((call.group(2), {u: addr[u] for u in used}))
            k += 1

    run(body, {})
    return calls


def _expected(group: Op, hw: ChipConfig) -> list[tuple[str, dict[str, int]]]:
    """Per task instance in program order: buffer C name -> the offset of its lifetime."""
    from tx8lab.core.codegen import c_name, group_schedule
    from tx8lab.core.schedule.lifetimes import buffer_life
    from tx8lab.core.schedule.sw_pipeline import expand

    _, si, timeline = group_schedule(group, hw)
    offsets = {lid: off for lid, off, _ in group.attrs["spm_offsets"]}
    lives = buffer_life(timeline, si)
    generations: dict[str, set[str]] = {}
    for lt in lives:
        generations.setdefault(lt.buffer, set()).add(lt.id)
    runs: dict[str, int] = {}
    out = []
    for inst in expand(si, group.attrs["multi_buffer"]):
        seen: dict[str, int] = {}
        for u in (*inst.reads, *inst.writes):
            label = u.root if len(generations[u.root]) == 1 else f"{u.root}@{u.generation}"
            seen[c_name(u.buffer)] = offsets[label]
        for b in inst.imm:
            k = runs.get(b, 0)
            runs[b] = k + 1
            seen[c_name(b)] = offsets[b if len(generations[b]) == 1 else f"{b}@{k}"]
        out.append((inst.task.id, seen))
    return out


@pytest.mark.parametrize(
    ("name", "spm"), [("tiny_transformer_block", "80Ki"), ("llama_decoder", "")]
)
def test_every_call_sees_the_addresses_of_its_lifetimes(name: str, spm: str) -> None:
    if spm:
        hw = HW.with_overrides({"tile.spm_bytes": spm})
        step = _pinned(name, hw, seq=64, hidden=64)[-1]
    else:
        hw, step = HW, _zoo_steps(name)[-1]
    checked = 0
    for group in _groups(step.after):
        got = _run_c(step.result.artifacts["c"][group.id])
        want = _expected(group, hw)
        assert [t for t, _ in got] == [t for t, _ in want], group.id
        for (task, addrs), (_, expect) in zip(got, want, strict=True):
            for buffer, offset in expect.items():
                assert addrs[buffer] == offset, (group.id, task, buffer)
                checked += 1
    assert checked > 100


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(max_ops=12, groups=False))
def test_random_modules_get_c_whose_addresses_match_the_allocation(module: Module) -> None:
    steps = list(run_pipeline(module, build_pipeline(), HW))
    final, codegen = steps[-1].after, steps[-1]
    texts = codegen.result.artifacts["c"]
    assert list(texts) == [g.id for g in _groups(final)]
    for group in _groups(final):
        got = _run_c(texts[group.id])
        want = _expected(group, HW)
        assert [t for t, _ in got] == [t for t, _ in want]
        for (_, addrs), (_, expect) in zip(got, want, strict=True):
            assert {b: addrs[b] for b in expect} == expect
    assert Codegen().run(final, HW).artifacts["main_c"] == codegen.result.artifacts["main_c"]


@pytest.mark.parametrize("name", ["resnet50", "llama_decoder", "tiny_transformer_block"])
def test_program_order_is_the_timeline_order_within_an_iteration(name: str) -> None:
    # the reading the C relies on: calls in program order, engines overlap iterations
    from tx8lab.core.codegen import group_schedule
    from tx8lab.core.schedule.sw_pipeline import expand

    step = _zoo_steps(name)[-1]
    pairs = 0
    for group in _groups(step.after):
        _, si, timeline = group_schedule(group, HW)
        at = {(s.task, s.iteration): s.step for s in timeline.slots}
        order = [(i.task.id, i.iteration) for i in expand(si, group.attrs["multi_buffer"])]
        for a, b in itertools.pairwise(order):
            if a[1] == b[1]:
                assert at[a] < at[b], (group.id, a, b)
                pairs += 1
    assert pairs > 10
