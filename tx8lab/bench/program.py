"""The executed program's table: per zoo model, emit + compile + execute time and commands.

Also the time to play the program through the tile simulator and the kernel body it gives,
and (:func:`stream_table`) what a candidate's timing by the simulator costs on the large
models: ``build_program``, ``program_streams`` and ``simulate`` apart.

Each model runs the default pipeline, then ``tx8lab.core.execute.execute_module``
compiles its main.c and runs it on the host model of the chip (outputs compared with the
interpreter). Models at the sizes the tests execute, plus resnet50 at 224 and
llama_decoder with two layers when not ``--quick``.
"""

from __future__ import annotations

import time
from typing import Any

#: (model, keyword arguments) of the table.
PROGRAM_CASES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("tiny_cnn", {}),
    ("tiny_transformer_block", {}),
    ("batchnorm_demo", {}),
    ("layout_align_demo", {}),
    ("mobilenet_v2", {"size": 32}),
    ("vit_tiny", {"size": 32, "layers": 1, "hidden": 32, "heads": 2, "mlp": 64, "classes": 10}),
    ("resnet50", {"size": 32}),
    ("llama_decoder", {"hidden": 64, "heads": 2, "ffn": 128, "vocab": 100, "seq": 8}),
    ("bert_base", {"seq": 16, "layers": 1, "hidden": 64, "heads": 2, "ffn": 128, "vocab": 100}),
)
#: The large cases of the issue's figures (skipped with --quick).
LARGE_CASES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("resnet50", {}),
    ("llama_decoder", {"layers": 2}),
)


def case_label(name: str, kwargs: dict[str, Any]) -> str:
    """A bench row's model: ``llama_decoder(layers=2)``, or the name alone without keywords."""
    return name + ("(" + ",".join(f"{k}={v}" for k, v in kwargs.items()) + ")" if kwargs else "")


def program_table(quick: bool) -> None:
    """Print one row per case: pipeline, emit, compile, execute seconds, commands per tile."""
    from tx8lab.core import zoo
    from tx8lab.core.execute import execute_module
    from tx8lab.core.passes import build_pipeline
    from tx8lab.core.runner import run_pipeline
    from tx8lab.core.simulate import simulate_program
    from tx8lab.errors import Tx8labError
    from tx8lab.hw import resolve_hw

    hw = resolve_hw([])
    print("\nexecuted program (main.c compiled and run on the host model, vs the interpreter)")
    head = (
        f"{'model':44} {'pipeline s':>10} {'emit s':>7} {'compile s':>9} {'execute s':>9} "
        f"{'cmds/tile':>9} {'result':>8} {'simulate s':>10} {'sim body ms':>11}"
    )
    print(head)
    print("-" * len(head))
    cases = PROGRAM_CASES if quick else (*PROGRAM_CASES, *LARGE_CASES)
    for name, kwargs in cases:
        label = case_label(name, kwargs)
        start = time.perf_counter()
        module = zoo.build(name, **kwargs)
        steps = list(run_pipeline(module, build_pipeline(None, {}), hw))
        pipeline = time.perf_counter() - start
        try:
            ex = execute_module(steps[-1].result.module, hw)
        except Tx8labError as err:
            print(f"{label:44} {pipeline:>10.2f} failed: {str(err).splitlines()[0][:90]}")
            continue
        counts = ex.program.commands_per_tile()
        per_tile = max(counts.values(), default=0)
        s = ex.seconds
        result = "exact" if all(d.exact for d in ex.diffs) else ("ok" if ex.ok else "DIFFERS")
        start = time.perf_counter()
        sim = simulate_program(ex.program, steps[-1].result.module, hw)
        sim_s = time.perf_counter() - start
        print(
            f"{label:44} {pipeline:>10.2f} {s.get('emit', 0):>7.2f} {s.get('compile', 0):>9.2f} "
            f"{s.get('execute', 0):>9.2f} {per_tile:>9} {result:>8} {sim_s:>10.2f} "
            f"{sim.ms(sim.body_cycles):>11.4f}"
        )


#: The models of the stream table: (model, keyword arguments, skipped with --quick).
STREAM_CASES: tuple[tuple[str, dict[str, Any], bool], ...] = (
    ("resnet50", {}, False),
    ("llama_decoder", {"layers": 2}, False),
    ("llama_decoder", {"layers": 32}, True),
)


def stream_table(quick: bool) -> None:
    """Print per model: pipeline, build_program, program_streams, simulate seconds.

    Each is one run in this process (after the pipeline), so the figures include what a
    first call pays; ``us/cmd`` is the three together per command of the program.
    """
    from tx8lab.core import zoo
    from tx8lab.core.passes import build_pipeline
    from tx8lab.core.program import build_program
    from tx8lab.core.runner import run_pipeline
    from tx8lab.core.simulate import program_streams
    from tx8lab.hw import resolve_hw
    from tx8lab.hw.sim import simulate

    hw = resolve_hw([])
    print("\nprogram -> simulator streams -> simulated run (one run each, seconds)")
    head = (
        f"{'model':34} {'pipeline':>9} {'build':>7} {'streams':>8} {'simulate':>9} "
        f"{'3 steps':>8} {'total':>7} {'commands':>9} {'us/cmd':>7}"
    )
    print(head)
    print("-" * len(head))
    for name, kwargs, large in STREAM_CASES:
        if quick and large:
            continue
        label = case_label(name, kwargs)
        module = zoo.build(name, **kwargs)
        start = time.perf_counter()
        steps = list(run_pipeline(module, build_pipeline(None, {}), hw))
        scheduled = steps[-1].result.module
        pipeline_s = time.perf_counter() - start
        start = time.perf_counter()
        program = build_program(scheduled, hw)
        build_s = time.perf_counter() - start
        start = time.perf_counter()
        streams = program_streams(program, scheduled, hw)
        streams_s = time.perf_counter() - start
        start = time.perf_counter()
        simulate(streams, hw)
        sim_s = time.perf_counter() - start
        three = build_s + streams_s + sim_s
        commands = program.num_commands
        print(
            f"{label:34} {pipeline_s:>9.2f} {build_s:>7.2f} {streams_s:>8.2f} {sim_s:>9.2f} "
            f"{three:>8.2f} {pipeline_s + three:>7.2f} {commands:>9} "
            f"{three / max(1, commands) * 1e6:>7.1f}"
        )


__all__ = ["LARGE_CASES", "PROGRAM_CASES", "STREAM_CASES", "program_table", "stream_table"]
