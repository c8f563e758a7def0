"""The executed program's table: per zoo model, emit + compile + execute time and commands.

Also the time to play the program through the tile simulator and the kernel body it gives.

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
        label = name + (
            "(" + ",".join(f"{k}={v}" for k, v in kwargs.items()) + ")" if kwargs else ""
        )
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


__all__ = ["LARGE_CASES", "PROGRAM_CASES", "program_table"]
