"""Figures of the sharding search for ``make bench`` (candidates, wall time, best cycles).

Three tables, printed by :func:`print_tables` (``tx8lab.bench`` calls it):

1. **Per zoo model**, the default pipeline (group-cost ``search=search``): group-cost time,
   the search's own time, candidates evaluated of the candidates in the searched groups'
   spaces, template-cache hit rate, total cycles (simulated), the same total under
   ``search=default`` (the one documented strategy) for comparison, the plan's own
   total, and how often the simulator overruled the plan's ranking (the plan ranks, the
   simulator plays its best few: issue 19's "how often the bound's ranking and the
   simulator's disagree") with the simulated cycles the plan's choice would have cost.
2. **Search vs exhaustive** on every distinct group (by
   :func:`~tx8lab.core.schedule.template_cache.template_key`) of the models whose spaces are small
   enough to enumerate: the share of groups where the search finds the exhaustive optimum
   and the share of the space it evaluates (targets: >= 95 % found, <= 10 % evaluated).
3. **Whole-pipeline wall time** (build + every default pass) for resnet50 and
   llama_decoder with 32 layers (targets: <= 2 s and <= 15 s).

Times are wall clock on the machine at hand; the search stops on a time budget, so a
loaded machine can change a count. Nothing here fails on time.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from tx8lab.core.ir import Module, Op
from tx8lab.hw.config import ChipConfig

#: Models whose distinct groups are searched exhaustively in table 2 (vit_tiny takes about
#: 4 minutes on a 2-core machine; mobilenet_v2, resnet50 and llama_decoder have 2-3 times
#: its candidates, and larger groups, so they are left out).
AGREEMENT_MODELS: tuple[str, ...] = (
    "tiny_cnn",
    "tiny_transformer_block",
    "layout_align_demo",
    "batchnorm_demo",
    "bert_base",
    "vit_tiny",
)


def _run(module: Module, hw: ChipConfig, *settings: str) -> tuple[list[Any], float]:
    from tx8lab.core.passes import build_pipeline
    from tx8lab.core.runner import run_pipeline

    start = time.perf_counter()
    steps = list(run_pipeline(module, build_pipeline(None, list(settings)), hw))
    return steps, time.perf_counter() - start


def search_figures(module: Module, hw: ChipConfig | None = None) -> dict[str, Any]:
    """Table 1's row for ``module``: search time, candidates, hit rate, cycles, times."""
    from tx8lab.hw import TX81

    chip = hw or TX81
    steps, wall = _run(module, chip)
    cost = next(s for s in steps if s.name == "group-cost")
    entries = cost.result.artifacts["groups"]
    searched = [e for e in entries if not e["template_hit"]]
    default_steps, _ = _run(module, chip, "group-cost.search=default")
    default_cost = next(s for s in default_steps if s.name == "group-cost")
    found = list(cost.result.artifacts["searches"].values())
    overruled = [f for f in found if not f.plan_agrees]
    return {
        "overruled": len(overruled),
        "simulated": sum(f.simulated for f in found),
        # simulated cycles the plan's own choice would have cost over the simulator's best
        "regret_cycles": sum(
            (f.plan_best.cycles or 0) - (f.best.cycles or 0)
            for f in overruled
            if f.plan_best is not None and f.best is not None
        ),
        "plan_cycles": int(cost.stats["plan_total_cycles"]),
        "groups": len(entries),
        "searched": len(searched),
        "evaluated": int(cost.stats.get("candidates_evaluated", 0)),
        "space": sum(e["search_space_size"] for e in searched),
        "hit_rate": float(cost.stats["template_hit_rate"]),
        "search_s": float(cost.stats.get("search_time_s", 0.0)),
        "cost_s": cost.elapsed_s,
        "pipeline_s": wall,
        "total_cycles": int(cost.stats["total_cycles"]),
        "default_cycles": int(default_cost.stats["total_cycles"]),
    }


def distinct_groups(module: Module, hw: ChipConfig) -> list[Op]:
    """The groups of ``module`` after grouping, one per template key, in program order."""
    from tx8lab.core.passes import DEFAULT_PIPELINE
    from tx8lab.core.schedule.template_cache import template_key

    before = list(DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index("group-cost")])
    from tx8lab.core.passes import build_pipeline
    from tx8lab.core.runner import run_pipeline

    steps = list(run_pipeline(module, build_pipeline(before), hw))
    grouped = steps[-1].after if steps else module
    seen: set[Any] = set()
    out = []
    for op in grouped.main.ops:
        if op.kind != "tx8be.Group":
            continue
        key = template_key(op)
        if key not in seen:
            seen.add(key)
            out.append(op)
    return out


def agreement(module: Module, hw: ChipConfig | None = None, *, noc: bool = False) -> dict[str, Any]:
    """Table 2's row: search vs exhaustive on every distinct group of ``module``.

    ``noc``: both spaces include the NoC-reduction candidates (group-cost ``noc``).
    """
    from tx8lab.core.schedule.search import search_group, space_size
    from tx8lab.hw import TX81

    chip = hw or TX81
    groups = distinct_groups(module, chip)
    found = evaluated = space = 0
    misses: list[str] = []
    start = time.perf_counter()
    for group in groups:
        size = space_size(group, chip, noc=noc)
        ex = search_group(group, chip, mode="exhaustive", max_space=max(size, 1), noc=noc)
        got = search_group(group, chip, noc=noc)
        assert ex.best is not None
        assert got.best is not None
        if got.best.cycles == ex.best.cycles:
            found += 1
        else:
            misses.append(f"%{group.id} {got.best.cycles} vs {ex.best.cycles}")
        evaluated += got.evaluated
        space += ex.space_size
    return {
        "groups": len(groups),
        "found": found,
        "evaluated": evaluated,
        "space": space,
        "misses": misses,
        "time_s": time.perf_counter() - start,
    }


def pipeline_wall(
    build: Callable[[], Module], hw: ChipConfig | None = None, *settings: str
) -> dict[str, Any]:
    """Table 3's row: build the model and run the whole default pipeline, seconds.

    ``settings``: knobs (``group-cost.noc=false``); the row adds the total cycles.
    """
    from tx8lab.hw import TX81

    start = time.perf_counter()
    module = build()
    built = time.perf_counter() - start
    steps, wall = _run(module, hw or TX81, *settings)
    cost = next(s for s in steps if s.name == "group-cost")
    entries = cost.result.artifacts["groups"]
    return {
        "cycles": int(cost.stats["total_cycles"]),
        "communicating": sum(e.get("comm", "none") != "none" for e in entries),
        "k_reduce": sum(e.get("comm") == "k-reduce" for e in entries),
        "shared": sum(e.get("comm") == "share" for e in entries),
        "gathered": sum(e.get("comm") == "gather" for e in entries),
        "exchanged": sum(e.get("comm") == "exchange" for e in entries),
        "ops": module.num_ops,
        "build_s": built,
        "passes_s": wall,
        "total_s": built + wall,
        "cost_s": cost.elapsed_s,
        "hit_rate": float(cost.stats["template_hit_rate"]),
    }


def print_tables(models: tuple[str, ...] | None = None, *, quick: bool = False) -> None:
    """Print the three tables (module docstring); ``quick`` skips vit_tiny in table 2."""
    from tx8lab.core import zoo

    names = models or tuple(zoo.MODELS)
    print("\ngroup-cost search (the default mode) per zoo model; 'default' = search=default;")
    print("cycles simulated; 'plan' = the plan's own total; 'overruled' = searched groups where")
    print("the simulator's best is not the plan's best (of those simulated), 'regret' = the")
    print("simulated cycles the plan's choice would have added, as a share of the total")
    header = (
        f"{'case':24} {'groups':>6} {'searched':>8} {'evaluated':>9} {'of space':>8} "
        f"{'share':>6} {'hit rate':>8} {'search s':>8} {'cost s':>7} {'pipeline s':>10} "
        f"{'cycles':>13} {'default':>13} {'gain':>6} {'plan':>13} {'simulated':>9} "
        f"{'overruled':>9} {'regret':>6}"
    )
    print(header)
    print("-" * len(header))
    for name in names:
        row = search_figures(zoo.build(name))
        share = row["evaluated"] / row["space"] if row["space"] else 0.0
        gain = 1 - row["total_cycles"] / row["default_cycles"] if row["default_cycles"] else 0.0
        print(
            f"{name:24} {row['groups']:>6} {row['searched']:>8} {row['evaluated']:>9} "
            f"{row['space']:>8} {share:>6.1%} {row['hit_rate']:>8.1%} {row['search_s']:>8.2f} "
            f"{row['cost_s']:>7.2f} {row['pipeline_s']:>10.2f} {row['total_cycles']:>13,} "
            f"{row['default_cycles']:>13,} {gain:>6.1%} {row['plan_cycles']:>13,} "
            f"{row['simulated']:>9} {row['overruled']:>4}/{row['searched']:<4} "
            f"{row['regret_cycles'] / max(row['total_cycles'], 1):>6.2%}",
            flush=True,
        )

    print("\nsearch vs exhaustive on each model's distinct groups (targets >= 95 % found, <= 10 %")
    print("of the space evaluated)")
    header = (
        f"{'case':24} {'groups':>6} {'found':>6} {'share':>6} {'evaluated':>9} {'space':>7} "
        f"{'share':>6} {'time s':>7}  misses (search vs exhaustive cycles)"
    )
    print(header)
    print("-" * len(header))
    totals = {"groups": 0, "found": 0, "evaluated": 0, "space": 0}
    rows = [(name, False) for name in AGREEMENT_MODELS]
    # the NoC-reduction space too (group-cost noc=true); vit_tiny's would take ~10 minutes
    rows += [(name, True) for name in AGREEMENT_MODELS if name != "vit_tiny"]
    for name, noc in rows:
        if (models is not None and name not in models) or (quick and name == "vit_tiny"):
            continue
        got = agreement(zoo.build(name), noc=noc)
        name = f"{name} noc" if noc else name
        for key in totals:
            totals[key] += got[key]
        print(
            f"{name:24} {got['groups']:>6} {got['found']:>6} "
            f"{got['found'] / max(got['groups'], 1):>6.1%} {got['evaluated']:>9} "
            f"{got['space']:>7} {got['evaluated'] / max(got['space'], 1):>6.1%} "
            f"{got['time_s']:>7.1f}  {', '.join(got['misses'][:4])}",
            flush=True,
        )
    print(
        f"{'all':24} {totals['groups']:>6} {totals['found']:>6} "
        f"{totals['found'] / max(totals['groups'], 1):>6.1%} {totals['evaluated']:>9} "
        f"{totals['space']:>7} {totals['evaluated'] / max(totals['space'], 1):>6.1%}"
    )

    print("\nwhole pipeline (build + every default pass), seconds; targets resnet50 <= 2 s,")
    print("llama_decoder(layers=32) <= 15 s")
    print(
        "(the default pipeline talks over the NoC: groups that sum partials over it, 'k-red', "
        "that share loads, 'share', that all-gather pieces read whole, 'gath', and that pass "
        "halo pieces, 'exch'; "
        "'noc=false': group-cost.noc=false)"
    )
    header = (
        f"{'case':30} {'ops':>6} {'build s':>8} {'passes s':>9} {'total s':>8} "
        f"{'group-cost s':>12} {'hit rate':>8} {'cycles':>14} {'k-red':>5} {'share':>5} "
        f"{'gath':>5} {'exch':>5}"
    )
    print(header)
    print("-" * len(header))
    for label, build in (
        ("resnet50", functools.partial(zoo.build, "resnet50")),
        ("llama_decoder(layers=32)", functools.partial(zoo.build, "llama_decoder", layers=32)),
    ):
        for noc in (True, False):
            row = pipeline_wall(build, None, *([] if noc else ["group-cost.noc=false"]))
            case = label + ("" if noc else " noc=false")
            print(
                f"{case:30} {row['ops']:>6} {row['build_s']:>8.2f} "
                f"{row['passes_s']:>9.2f} {row['total_s']:>8.2f} {row['cost_s']:>12.2f} "
                f"{row['hit_rate']:>8.1%} {row['cycles']:>14,} {row['k_reduce']:>5} "
                f"{row['shared']:>5} {row['gathered']:>5} {row['exchanged']:>5}",
                flush=True,
            )


if __name__ == "__main__":
    print_tables()
