"""``make bench``: figures for the IR on every zoo model and on synthetic large modules.

Prints, per model: ops, build, print, parse, verify, interpret and copy times, then for a
synthetic 10k-op module the same, and the ratio time(40k ops) / time(10k ops) for build,
print, parse and verify (linear scaling gives about 4). Then, per zoo model and for
synthetic 10k/40k-op layout modules: the ChannelNorms layout-align-npu inserts with the
greedy and the optimal strategy (and how many layout-align-opt leaves), with pass times.
Prints figures, never fails on time. Above core, with the tables it prints:
:mod:`tx8lab.bench.search` (sharding search), :mod:`tx8lab.bench.cost` (cost model vs the
board) and :mod:`tx8lab.bench.alloc` (MiniMalloc's set); ``python -m tx8lab.bench`` runs all.
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tx8lab.core.builder import Builder
from tx8lab.core.interpret import interpret, random_inputs
from tx8lab.core.ir import Module
from tx8lab.core.text import parse_module, print_module
from tx8lab.core.verify import verify

#: Zoo models benchmarked, with the arguments used; interpret only where weights fit.
ZOO_CASES: tuple[tuple[str, dict[str, Any], bool], ...] = (
    ("resnet50", {}, True),
    ("mobilenet_v2", {}, True),
    ("bert_base", {}, True),
    ("vit_tiny", {}, True),
    ("llama_decoder", {"layers": 1}, False),
    ("llama_decoder", {"layers": 32}, False),
    ("layout_align_demo", {}, True),
    ("batchnorm_demo", {}, True),
)


def synthetic_module(num_ops: int, seed: int = 0) -> Module:
    """A module of ``num_ops`` elementwise ops with fan-out and small constants.

    Each op reads one or two of the last 16 values, so the graph is a wide DAG rather than
    a chain; a value nobody reads becomes an output.
    """
    rng = np.random.default_rng(seed)
    b = Builder(model=f"synthetic_{num_ops}")
    values = [b.input((1, 8, 8, 16), "f16")]
    kinds = ("Add", "Mul", "Relu", "Sub", "Max")
    used: set[int] = set()
    made = 0
    while made < num_ops:
        kind = kinds[int(rng.integers(len(kinds)))]
        a = int(rng.integers(max(0, len(values) - 16), len(values)))
        used.add(a)
        if kind == "Relu":
            values.append(b.op(kind, values[a]))
            made += 1
            continue
        if rng.random() < 0.1:
            other = b.constant(rng.standard_normal(16).astype(np.float16), "f16")
            made += 1
        else:
            c = int(rng.integers(max(0, len(values) - 16), len(values)))
            used.add(c)
            other = values[c]
        values.append(b.op(kind, values[a], other))
        made += 1
    outputs = [v for i, v in enumerate(values) if i not in used and i > 0]
    b.output(*(outputs or values[-1:]))
    return b.finish()


def synthetic_layout_module(num_ops: int, seed: int = 0) -> Module:
    """A module of ``num_ops`` ops that mixes every kind of layout rule, for layout-align.

    1x1 Conv2d (ALIGN only, with a weight constant), rank-3 Reshapes (odd rank: NALIGN),
    Reshapes back to rank 4, Relu and Add (BOTH) and Mul by a [16] constant (broadcast),
    each reading one or two of the last 16 values.
    """
    rng = np.random.default_rng(seed)
    b = Builder(model=f"synthetic_layout_{num_ops}")
    values = [b.input((1, 8, 8, 16), "f16")]
    used: set[int] = set()
    made = 0
    while made < num_ops:
        pick = float(rng.random())
        a = int(rng.integers(max(0, len(values) - 16), len(values)))
        used.add(a)
        if pick < 0.15:
            weight = b.weight((16, 1, 1, 16), "f16", scale=0.25)
            values.append(b.op("Conv2d", values[a], weight))
            made += 2
        elif pick < 0.3:
            flat = b.op("Reshape", values[a], shape=(1, 64, 16))
            values.append(b.op("Reshape", b.op("Relu", flat), shape=(1, 8, 8, 16)))
            made += 3
        elif pick < 0.4:
            values.append(b.op("Mul", values[a], b.weight((16,), "f16")))
            made += 2
        elif pick < 0.7:
            values.append(b.op("Relu", values[a]))
            made += 1
        else:
            c = int(rng.integers(max(0, len(values) - 16), len(values)))
            used.add(c)
            values.append(b.op("Add", values[a], values[c]))
            made += 1
    outputs = [v for i, v in enumerate(values) if i not in used and i > 0]
    b.output(*(outputs or values[-1:]))
    return b.finish()


def layout_figures(module: Module) -> dict[str, Any]:
    """ChannelNorms inserted by each layout-align-npu strategy, and each one's time.

    Also layout-init + layout-transmit: their time and how many ops no Gemm/Conv layout
    reached (defaulted to Tensor/NTensor by shape).
    """
    from tx8lab.core.passes.layout_align_npu import LayoutAlignNPU
    from tx8lab.core.passes.layout_align_opt import LayoutAlignOpt
    from tx8lab.core.passes.layout_init import LayoutInit
    from tx8lab.core.passes.layout_transmit import LayoutTransmit
    from tx8lab.hw import TX81

    row: dict[str, Any] = {"ops": module.num_ops}
    init_s, init = _time(functools.partial(LayoutInit().run, module, TX81))
    transmit_s, transmit = _time(functools.partial(LayoutTransmit().run, init.module, TX81))
    row["transmit_s"] = init_s + transmit_s
    row["defaulted_ops"] = transmit.stats["defaulted_ops"]
    for strategy in ("greedy", "optimal"):
        seconds, result = _time(
            functools.partial(LayoutAlignNPU(strategy=strategy, compare=False).run, module, TX81)
        )
        row[f"{strategy}_s"] = seconds
        row[strategy] = result.stats["channel_norms"]
        opt_s, cleaned = _time(functools.partial(LayoutAlignOpt().run, result.module, TX81))
        row[f"{strategy}_after_opt"] = cleaned.stats["channel_norms"]
        row["opt_s"] = opt_s
    return row


def _time(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def measure(build: Callable[[], Module], run_interpret: bool) -> dict[str, Any]:
    """Seconds for each IR operation on the module ``build`` returns."""
    build_s, module = _time(build)
    print_s, text = _time(lambda: print_module(module))
    parse_s, _ = _time(lambda: parse_module(text))
    verify_s, _ = _time(lambda: verify(module))
    copy_s, _ = _time(lambda: module.with_function(module.main.with_ops(list(module.main.ops))))
    row: dict[str, Any] = {
        "ops": module.num_ops,
        "build_s": build_s,
        "print_s": print_s,
        "parse_s": parse_s,
        "verify_s": verify_s,
        "copy_s": copy_s,
        "interpret_s": None,
        "text_bytes": len(text),
    }
    if run_interpret:
        inputs = random_inputs(module, seed=0)
        row["interpret_s"], _ = _time(lambda: interpret(module, inputs))
    return row


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value * 1000:9.1f}"
    return f"{value:>9}"


def main(argv: list[str] | None = None) -> int:
    """Print the benchmark table."""
    parser = argparse.ArgumentParser(prog="tx8lab.bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="skip the 40k-op module")
    args = parser.parse_args(argv)
    from tx8lab.core import zoo

    header = f"{'case':34} {'ops':>9} " + " ".join(
        f"{h:>9}" for h in ("build ms", "print ms", "parse ms", "verify ms", "interp ms", "copy ms")
    )
    print(header)
    print("-" * len(header))
    from tx8lab.bench.program import case_label, program_table, stream_table

    rows: dict[str, dict[str, Any]] = {}
    for name, kwargs, run in ZOO_CASES:
        label = case_label(name, kwargs)
        row = measure(functools.partial(zoo.build, name, **kwargs), run)
        rows[label] = row
        _print_row(label, row)
    sizes = (10_000,) if args.quick else (10_000, 40_000)
    for size in sizes:
        row = measure(functools.partial(synthetic_module, size), size == 10_000)
        rows[f"synthetic {size}"] = row
        _print_row(f"synthetic {size} ops", row)
    if not args.quick:
        small, large = rows["synthetic 10000"], rows["synthetic 40000"]
        ratios = "  ".join(
            f"{key[:-2]} {large[key] / small[key]:.2f}"
            for key in ("build_s", "print_s", "parse_s", "verify_s")
        )
        print(f"\ntime(40k ops) / time(10k ops), linear = 4: {ratios}")
    _layout_table(zoo, args.quick)
    _group_table(zoo)
    _schedule_table(zoo)
    _search_tables(args.quick)
    _cost_calibration()
    _minimalloc(quick=args.quick)
    program_table(args.quick)
    stream_table(args.quick)
    return 0


def schedule_figures(module: Module) -> dict[str, Any]:
    """The default pipeline through group-cost: groups, cycles, latency, SPM peak, times."""
    from tx8lab.core.passes import build_pipeline
    from tx8lab.core.runner import run_pipeline
    from tx8lab.hw import TX81

    steps = list(run_pipeline(module, build_pipeline(), TX81))
    cost = next(s for s in steps if s.name == "group-cost")
    entries = cost.result.artifacts["groups"]
    looping = sum(1 for e in entries if any(n > 1 for n in e["loops"].values()))
    return {
        "ops": module.num_ops,
        "groups": len(entries),
        "looping": looping,
        "total_cycles": cost.stats["total_cycles"],
        "latency_ms": float(cost.stats["latency_s"]) * 1e3,
        "spm_peak": max((e["spm_peak_bytes"] for e in entries), default=0),
        "limiting": ",".join(
            f"{k.removeprefix('limited_by_')} {v}"
            for k, v in cost.stats.items()
            if k.startswith("limited_by_")
        ),
        "cost_s": cost.elapsed_s,
        "pipeline_s": sum(s.elapsed_s for s in steps),
    }


def _start_zoo_table(zoo: Any, header: str) -> list[tuple[str, Callable[[], Module]]]:
    """Print a table's header and rule; every zoo model at its default size, as cases."""
    print(header)
    print("-" * len(header))
    return [(name, functools.partial(zoo.build, name)) for name in zoo.MODELS]


def _schedule_table(zoo: Any) -> None:
    print(
        "\ngroup-cost (the default pipeline: search, sw-pipeline, best allocator): per model; "
        "barriers after every group here (before opt-barrier)"
    )
    header = (
        f"{'case':26} {'ops':>6} {'groups':>6} {'looping':>7} {'total cycles':>13} "
        f"{'latency ms':>10} {'SPM peak B':>11} {'cost ms':>8} {'pipeline ms':>11}  limited by"
    )
    cases = _start_zoo_table(zoo, header)
    cases.append(("resnet50(batch=8)", functools.partial(zoo.build, "resnet50", batch=8)))
    for label, build in cases:
        row = schedule_figures(build())
        print(
            f"{label:26} {row['ops']:>6} {row['groups']:>6} {row['looping']:>7} "
            f"{row['total_cycles']:>13} {row['latency_ms']:>10.3f} {row['spm_peak']:>11} "
            f"{row['cost_s'] * 1e3:>8.1f} {row['pipeline_s'] * 1e3:>11.1f}  {row['limiting']}",
            flush=True,
        )


def _search_tables(quick: bool) -> None:
    from tx8lab.bench.search import print_tables

    print_tables(quick=quick)


def _cost_calibration() -> None:
    from tx8lab.bench.cost import cost_figures

    print("\ncost model vs the board: BF16 GEMM 4096x1024x4096 on 16 tiles (1.801 ms)")
    for row in cost_figures():
        print(
            f"  {row['case']:<58} {row['modelled_ms']:>8.3f} ms  ratio {row['ratio']:.3f}  "
            f"limited by {row['limiting_engine']}"
        )


def _minimalloc(quick: bool) -> None:
    from tx8lab.bench.alloc import format_table, minimalloc_table
    from tx8lab.core.schedule.spm_alloc import warm_up

    print("\nSPM allocation on MiniMalloc's challenging set (capacity 2^20)")
    print(f"(numba kernel compile or cache load: {warm_up():.2f} s, not counted)")
    rows = minimalloc_table(time_limit_s=2.0 if quick else 9.5)
    print(format_table(rows))


#: The passes after grouping, timed together in the grouping table.
AFTER_GROUPING = ("group-optimization", "group-ldst", "group-mapping", "opt-barrier", "opt-ddr")


def group_figures(module: Module) -> dict[str, Any]:
    """Constants and grouping on ``module``: counts and pass times for both strategies.

    The passes before ``group`` run once (their result is shared); then each strategy runs
    ``group`` and the passes after it (group-optimization ... opt-ddr).
    """
    from tx8lab.core.passes import DEFAULT_PIPELINE, build_pipeline
    from tx8lab.core.runner import run_pipeline
    from tx8lab.hw import TX81

    before = DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index("group")]
    steps = {s.name: s for s in run_pipeline(module, build_pipeline(before), TX81)}
    ready = steps["const-norm"].after
    row: dict[str, Any] = {
        "ops": module.num_ops,
        "move_constant_s": steps["move-constant"].elapsed_s,
        "const_norm_s": steps["const-norm"].elapsed_s,
        "constants": steps["move-constant"].stats.get("constants"),
    }
    for strategy in ("pattern", "hdfg"):
        passes = build_pipeline(["group", *AFTER_GROUPING], [f"group.strategy={strategy}"])
        done = list(run_pipeline(ready, passes, TX81))
        formed = sum(1 for op in done[0].after.main.ops if op.kind == "tx8be.Group")
        total = sum(1 for op in done[-1].after.main.ops if op.kind == "tx8be.Group")
        row[f"{strategy}_groups"] = formed
        row[f"{strategy}_total"] = total
        row[f"{strategy}_s"] = done[0].elapsed_s
        row[f"{strategy}_after_s"] = sum(s.elapsed_s for s in done[1:])
        row[f"{strategy}_barriers"] = done[-2].stats.get("barriers")
    return row


def _group_table(zoo: Any) -> None:
    print(
        "\nconstants and grouping: groups formed by the strategy (total after "
        "group-optimization), pass times"
    )
    header = (
        f"{'case':26} {'ops':>6} {'consts':>6} {'pattern':>8} {'(total)':>7} {'hdfg':>5} "
        f"{'(total)':>7} {'mv-const ms':>11} {'c-norm ms':>9} {'pattern ms':>10} "
        f"{'hdfg ms':>8} {'rest ms':>8}"
    )
    cases = _start_zoo_table(zoo, header)
    cases.append(("synthetic 10000", functools.partial(synthetic_module, 10_000)))
    for label, build in cases:
        row = group_figures(build())
        print(
            f"{label:26} {row['ops']:>6} {row['constants']:>6} {row['pattern_groups']:>8} "
            f"{row['pattern_total']:>7} {row['hdfg_groups']:>5} {row['hdfg_total']:>7} "
            f"{row['move_constant_s'] * 1e3:>11.1f} {row['const_norm_s'] * 1e3:>9.1f} "
            f"{row['pattern_s'] * 1e3:>10.1f} {row['hdfg_s'] * 1e3:>8.1f} "
            f"{row['pattern_after_s'] * 1e3:>8.1f}",
            flush=True,
        )
    print(f"(rest = {' + '.join(AFTER_GROUPING)}, after pattern grouping)")


def _layout_table(zoo: Any, quick: bool) -> None:
    from tx8lab.core.passes.layout_align_npu import LayoutAlignNPU
    from tx8lab.hw import TX81

    # the first optimal run imports scipy; keep that out of the figures
    LayoutAlignNPU(strategy="optimal").run(zoo.build("tiny_cnn"), TX81)
    print("\nlayout-align-npu: ChannelNorms inserted (and left after layout-align-opt), pass time")
    header = (
        f"{'case':34} {'ops':>7} {'greedy':>7} {'(opt)':>6} {'optimal':>8} {'(opt)':>6} "
        f"{'greedy ms':>10} {'optimal ms':>11} {'init+transmit ms':>17} {'defaulted':>9}"
    )
    cases = _start_zoo_table(zoo, header)
    cases.append(
        ("llama_decoder(layers=32)", functools.partial(zoo.build, "llama_decoder", layers=32))
    )
    cases.append(("synthetic layout 10000", functools.partial(synthetic_layout_module, 10_000)))
    if not quick:
        cases.append(("synthetic layout 40000", functools.partial(synthetic_layout_module, 40_000)))
    for label, build in cases:
        row = layout_figures(build())
        print(
            f"{label:34} {row['ops']:>7} {row['greedy']:>7} {row['greedy_after_opt']:>6} "
            f"{row['optimal']:>8} {row['optimal_after_opt']:>6} "
            f"{row['greedy_s'] * 1e3:>10.1f} {row['optimal_s'] * 1e3:>11.1f} "
            f"{row['transmit_s'] * 1e3:>17.1f} {row['defaulted_ops']:>9}",
            flush=True,
        )


def _print_row(label: str, row: dict[str, Any]) -> None:
    cells = " ".join(
        _fmt(row[key])
        for key in ("build_s", "print_s", "parse_s", "verify_s", "interpret_s", "copy_s")
    )
    print(f"{label:34} {row['ops']:>9} {cells}", flush=True)
