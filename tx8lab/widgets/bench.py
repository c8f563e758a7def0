"""Measured figures of the graph view: DOT build, headless layout, re-colour (``figures()``).

For the lead's ``tx8lab.bench`` (``from tx8lab.widgets.bench import figures``) and
``python -m tx8lab.widgets.bench``. Prints, never fails on time. Cases:

- ``tiny_cnn`` after the default pipeline (groups as clusters);
- ``resnet50`` as built (the full ~440-op graph) and after the default pipeline, drawn in
  full (``collapse_above`` lifted) and as the view opens it (groups collapsed);
- a 5k-op transformer stack (``llama_decoder`` with small dims, 96 layers: a long chain with
  residual edges, as real models are) drawn in full, edge labels off (the graph view's 3 s goal),
  and after the default pipeline (~13.5k ops with LoadVar/StoreVar, ~1.9k groups) as the
  view opens it, groups collapsed;
- with ``adversarial=True``, ``tx8lab.bench.synthetic_layout_module(3800)`` through the
  layout passes (~5.1k ops, every op reading one of the last 16 values: a random wide DAG,
  the worst case for dot's crossing minimisation), and the pipelined stack drawn in full.

Each layout is run on every engine present (``dot``, ``wasm``). Re-colour figures: the
Python side of an overlay switch on the widget (overlay computed + colour map), and
:func:`~tx8lab.widgets.render.restyle_svg` on the whole SVG (what a static report does).

One-group update figures (``tuner_figures()``, the tuner's goal, "<= 100 ms for a
one-group re-estimate"): a :class:`~tx8lab.widgets.group_tuner.GroupTuner` on the costliest group of
resnet50 and of llama_decoder (layers=1) after the default pipeline, a few knob changes
(:data:`TUNER_CHANGES`, each a new state: no tuner cache hit) on the default-strategy path
(``search=default``), the search path (``search=search``) and a forced candidate; median
and max of ``total_ms`` (re-estimate + redraw of the timeline, SPM Gantt and factor space)
with the compute and view parts.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from tx8lab.core.ir import Module
from tx8lab.widgets.graph_dot import module_to_dot
from tx8lab.widgets.overlays import group_overlay
from tx8lab.widgets.render import available_engines, render_svg, restyle_svg, svg_node_ids

#: The 5k-op transformer stack: zoo llama_decoder with these parameters.
STACK_5K: dict[str, Any] = {
    "layers": 96,
    "hidden": 256,
    "heads": 4,
    "ffn": 512,
    "vocab": 1000,
    "seq": 16,
}


def _pipelined(module: Module, passes: list[str] | None = None) -> Module:
    from tx8lab.core.passes import build_pipeline
    from tx8lab.core.runner import run_pipeline
    from tx8lab.hw import TX81

    steps = list(run_pipeline(module, build_pipeline(passes), TX81))
    return steps[-1].after if steps else module


def _cases(adversarial: bool) -> list[tuple[str, Callable[[], Module], dict[str, Any]]]:
    from tx8lab.core import zoo

    cases: list[tuple[str, Callable[[], Module], dict[str, Any]]] = [
        ("tiny_cnn (pipeline)", lambda: _pipelined(zoo.tiny_cnn()), {}),
        ("resnet50 (as built)", lambda: zoo.resnet50(), {"collapse_above": 10**9}),
        (
            "resnet50 (pipeline, full)",
            lambda: _pipelined(zoo.resnet50()),
            {"collapse_above": 10**9},
        ),
        (
            "transformer stack 5k (as built)",
            lambda: zoo.llama_decoder(**STACK_5K),
            {"collapse_above": 10**9},
        ),
        (
            "stack 5k (pipeline, collapsed)",
            lambda: _pipelined(zoo.llama_decoder(**STACK_5K)),
            {},
        ),
    ]
    if adversarial:
        from tx8lab.bench import synthetic_layout_module

        layout = ["layout-init", "layout-transmit", "layout-align-npu", "layout-align-opt"]
        cases.append(
            (
                "random DAG 5k (layout passes)",
                lambda: _pipelined(synthetic_layout_module(3800), layout),
                {"collapse_above": 10**9},
            )
        )
        cases.append(
            (
                "stack 5k (pipeline, full)",
                lambda: _pipelined(zoo.llama_decoder(**STACK_5K)),
                {"collapse_above": 10**9},
            )
        )
    return cases


def figures(adversarial: bool = False, engines: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per (case, engine): ops, drawn nodes, DOT build and layout seconds, SVG size.

    Then one row per recolour measurement (``case`` starts with ``recolour``). Render
    failures are rows with an ``error`` text, never exceptions.
    """
    rows: list[dict[str, Any]] = []
    chosen = engines or available_engines()
    recolor: dict[str, tuple[Module, str]] = {}
    for label, build, options in _cases(adversarial):
        module = build()
        start = time.perf_counter()
        dot = module_to_dot(module, **options)
        dot_s = time.perf_counter() - start
        for engine in chosen:
            row: dict[str, Any] = {
                "case": label,
                "ops": module.num_ops,
                "engine": engine,
                "dot_build_s": dot_s,
            }
            try:
                rendered = render_svg(dot, engine)  # type: ignore[arg-type]
            except Exception as err:  # a figure, not a test: report the failure
                row["error"] = str(err).splitlines()[0]
                rows.append(row)
                continue
            ids = svg_node_ids(rendered.svg)
            row.update(
                nodes=sum(1 for i in ids if i.startswith("op")),
                render_s=rendered.seconds,
                svg_bytes=len(rendered.svg),
            )
            rows.append(row)
            if label in RECOLOR_CASES:
                recolor[label] = (module, rendered.svg)
    for label, (module, svg) in recolor.items():
        rows += _recolor_rows(label, module, svg)
    return rows


#: Cases whose widget and SVG are re-coloured for the recolour figures.
RECOLOR_CASES = ("resnet50 (pipeline, full)", "transformer stack 5k (as built)")


def _recolor_rows(label: str, module: Module, svg: str) -> list[dict[str, Any]]:
    from tx8lab.widgets.graph_view import GraphView

    view = GraphView(module, collapse_above=10**9)
    out: list[dict[str, Any]] = []
    for name in ("group", "created_by", "engine", "alignment"):
        view.overlay = name
        out.append(
            {
                "case": f"recolour {label.split(' (')[0]} -> {name}",
                "ops": module.num_ops,
                "ms": view.recolor_ms,
            }
        )
    colors = group_overlay(module).to_json()["colors"]
    start = time.perf_counter()
    restyle_svg(svg, colors)
    out.append(
        {
            "case": f"recolour {label.split(' (')[0]} SVG (restyle_svg)",
            "ops": module.num_ops,
            "ms": (time.perf_counter() - start) * 1e3,
        }
    )
    return out


#: Models of the one-group update figures: zoo name and parameters.
TUNER_MODELS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("resnet50", {}),
    ("llama_decoder", {"layers": 1}),
)

#: Knob changes timed on each path, in order (each one a state not seen before).
TUNER_CHANGES: tuple[tuple[str, Any], ...] = (
    ("group-cost.multi_buffer", 1),
    ("group-cost.retract", False),
    ("group-cost.multi_buffer", 3),
    ("hw.ddr_bytes_per_s", "400GB/s"),
    ("hw.tile.spm_bytes", "1536KiB"),
)


def tuner_figures(
    models: tuple[tuple[str, dict[str, Any]], ...] = TUNER_MODELS,
) -> list[dict[str, Any]]:
    """One row per (model, path): median/max total, compute and view ms of TUNER_CHANGES.

    Paths: ``default`` (the default strategy through ``run_group``), ``search``
    (``search_group``, then the best's allocation with the ``alloc`` knob) and ``forced``
    (an OK candidate of the stored search other than the chosen one, when there is one,
    forced; then the changes). A
    change the group cannot take (e.g. it no longer fits) is counted in ``errors`` and
    left out of the times.
    """
    import statistics

    from tx8lab.core import zoo
    from tx8lab.core.passes import build_pipeline
    from tx8lab.core.runner import run_pipeline
    from tx8lab.errors import Tx8labError
    from tx8lab.hw import TX81
    from tx8lab.widgets.group_tuner import GroupTuner

    rows: list[dict[str, Any]] = []
    for name, params in models:
        steps = list(run_pipeline(zoo.build(name, **params), build_pipeline(), TX81))
        for path in ("default", "search", "forced"):
            tuner = GroupTuner.from_step(steps)
            if path == "forced":
                # a candidate other than the chosen one when there is one (else the chosen)
                cands = tuner.candidates()
                best = tuner.search_result.best if tuner.search_result is not None else None
                others = [c for c in cands if best is None or c.index != best.index]
                if not cands:
                    continue
                tuner.set("strategy", (others or cands)[0].index)
            else:
                tuner.set("group-cost.search", path)
            records, errors = [], 0
            for key, value in TUNER_CHANGES:
                try:
                    records.append(tuner.set(key, value))
                except Tx8labError:
                    errors += 1
            row: dict[str, Any] = {
                "model": name + "".join(f" {k}={v}" for k, v in params.items()),
                "group": tuner.group.id,
                "slots": len(tuner.scheduled.timeline.slots),
                "path": path,
                "changes": len(records),
                "errors": errors,
                "cached": sum(bool(r["cached"]) for r in records),
            }
            for part in ("total", "compute", "views"):
                times = [float(r[f"{part}_ms"]) for r in records] or [float("nan")]
                row[f"{part}_median_ms"] = statistics.median(times)
                row[f"{part}_max_ms"] = max(times)
            rows.append(row)
    return rows


def print_tuner_figures(rows: list[dict[str, Any]]) -> None:
    """The one-group update figures as a table (target: total <= 100 ms)."""
    print()
    print("one-group update (GroupTuner, costliest group; target total <= 100 ms)")
    print(
        f"{'model':26} {'group':>6} {'slots':>6} {'path':>8} {'n':>3} {'err':>3} "
        f"{'total med':>10} {'total max':>10} {'compute med':>12} {'views med':>10}"
    )
    for r in rows:
        print(
            f"{r['model']:26} {'%' + str(r['group']):>6} {r['slots']:>6} {r['path']:>8} "
            f"{r['changes']:>3} {r['errors']:>3} {r['total_median_ms']:>10.1f} "
            f"{r['total_max_ms']:>10.1f} {r['compute_median_ms']:>12.1f} "
            f"{r['views_median_ms']:>10.1f}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    """Print the figures as a table."""
    parser = argparse.ArgumentParser(prog="tx8lab.widgets.bench", description=__doc__)
    parser.add_argument(
        "--adversarial", action="store_true", help="add the random 5k-op DAG (slow)"
    )
    parser.add_argument(
        "--tuner-only", action="store_true", help="only the one-group update figures"
    )
    args = parser.parse_args(argv)
    if args.tuner_only:
        print_tuner_figures(tuner_figures())
        return 0
    print(
        f"{'case':36} {'ops':>6} {'nodes':>6} {'engine':>6} {'DOT ms':>8} {'layout s':>9} "
        f"{'SVG KB':>8}"
    )
    for row in figures(args.adversarial):
        if "ms" in row:
            print(f"{row['case']:48} {row['ops']:>6} {'':>6} {'':>6} {row['ms']:>8.1f}", flush=True)
        elif "error" in row:
            print(f"{row['case']:48} {row['ops']:>6} {'':>6} {row['engine']:>6}  {row['error']}")
        else:
            print(
                f"{row['case']:48} {row['ops']:>6} {row['nodes']:>6} {row['engine']:>6} "
                f"{row['dot_build_s'] * 1e3:>8.1f} {row['render_s']:>9.2f} "
                f"{row['svg_bytes'] / 1024:>8.0f}",
                flush=True,
            )
    print_tuner_figures(tuner_figures())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
