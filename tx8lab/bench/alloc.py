"""The MiniMalloc A-K table for ``make bench``: both allocation strategies on the 11 cases.

Data: ``bench/minimalloc/`` in the repository, copied with its Apache-2.0 licence and
README (11 "challenging" problems from google/minimalloc, capacity 2^20, and its
``check_solution.py``). The best-known
peaks are the README's. Figures, never pass/fail: the ``seed`` first fit overflows 2^20 on
every case (as the README's naive greedy does), so its row says ``fits: False``.

``python -m tx8lab.bench.alloc [--time-limit S] [CASES]`` prints the table.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tx8lab.core.schedule.spm_alloc import (
    Allocation,
    allocate,
    find_conflicts,
    read_problem,
    warm_up,
    write_solution,
)
from tx8lab.errors import Tx8labError

#: The benchmark folder, in the repository checkout.
BENCH_DIR = Path(__file__).resolve().parents[2] / "bench" / "minimalloc"
CASES = "ABCDEFGHIJK"
CAPACITY = 1 << 20
#: Best-known peaks (``bench/minimalloc/README.md``, "best known peak").
BEST_KNOWN: dict[str, int] = {
    "A": 1048576,
    "B": 1048576,
    "C": 1039360,
    "D": 1038336,
    "E": 1048576,
    "F": 1048576,
    "G": 1048576,
    "H": 1048576,
    "I": 1048576,
    "J": 1041408,
    "K": 1048576,
}


def case_path(case: str, bench_dir: Path | None = None) -> Path:
    """The problem file of ``case`` (``A``..``K``); a clear error when it is missing."""
    folder = bench_dir or BENCH_DIR
    path = folder / f"{case}.{CAPACITY}.csv"
    if not path.is_file():
        raise Tx8labError(
            f"{path}: MiniMalloc benchmark file missing; the bench reads "
            "bench/minimalloc/ in the repository checkout (or pass bench_dir)"
        )
    return path


def run_checker(problem: Path, alloc: Allocation, bench_dir: Path | None = None) -> bool:
    """Whether MiniMalloc's ``check_solution.py`` says VALID for ``alloc`` (a subprocess)."""
    checker = (bench_dir or BENCH_DIR) / "check_solution.py"
    with tempfile.TemporaryDirectory() as tmp:
        solution = Path(tmp) / "solution.csv"
        write_solution(solution, alloc)
        command = [sys.executable, str(checker), str(problem), str(solution)]
        done = subprocess.run(
            [*command, "--capacity", str(CAPACITY)],
            capture_output=True,
            text=True,
            check=False,
        )
    return done.returncode == 0 and done.stdout.rstrip().endswith("VALID")


def minimalloc_table(
    time_limit_s: float = 9.5,
    cases: Sequence[str] = CASES,
    bench_dir: Path | None = None,
    strategies: Sequence[str] = ("seed", "best"),
    official_check: bool = True,
) -> list[dict[str, Any]]:
    """One row per (case, strategy) with the peak, bounds, time and validity.

    Keys: ``case, strategy, n, capacity, peak, lower_bound, best_known, peak_over_lb_pct,
    peak_le_best_known, status, time_s, time_to_best_known_s, fits, valid, checker``.
    ``time_to_best_known_s`` is when ``best`` first reached a peak <= the best-known one
    (None if it did not; None for ``seed``). ``valid`` is our own check
    at capacity 2^20 (:func:`find_conflicts`); ``checker`` is ``check_solution.py``'s
    verdict (None when ``official_check`` is off). ``seed`` runs without a capacity limit
    so its peak shows; ``best`` searches ``time_limit_s`` at most (less once optimal).
    ``time_s`` is the wall time of the ``allocate`` call, with the numba kernel compiled
    or loaded beforehand (:func:`~tx8lab.core.schedule.spm_alloc.warm_up`).
    """
    if "best" in strategies:
        warm_up()
    rows: list[dict[str, Any]] = []
    for case in cases:
        path = case_path(case, bench_dir)
        problem = read_problem(path)
        lts = problem.lifetimes
        for strategy in strategies:
            reached: list[float] = []

            def note(alloc: Allocation, case: str = case, reached: list[float] = reached) -> None:
                if alloc.peak_bytes <= BEST_KNOWN[case] and not reached:
                    reached.append(alloc.time_s)

            start = time.perf_counter()
            if strategy == "seed":
                unbounded = sum(lt.size for lt in lts)
                alloc = allocate(lts, unbounded, "seed", alignments=problem.alignments)
            else:
                alloc = allocate(
                    lts,
                    CAPACITY,
                    "best",
                    time_limit_s,
                    alignments=problem.alignments,
                    on_improve=note,
                )
            wall_s = time.perf_counter() - start
            valid = not find_conflicts(lts, alloc.offsets, CAPACITY, problem.alignments)
            lb = alloc.lower_bound_bytes
            rows.append(
                {
                    "case": case,
                    "strategy": strategy,
                    "n": len(lts),
                    "capacity": CAPACITY,
                    "peak": alloc.peak_bytes,
                    "lower_bound": lb,
                    "best_known": BEST_KNOWN[case],
                    "peak_over_lb_pct": round(100.0 * (alloc.peak_bytes - lb) / lb, 3),
                    "peak_le_best_known": alloc.peak_bytes <= BEST_KNOWN[case],
                    "status": alloc.status,
                    "time_s": round(wall_s, 3),
                    "time_to_best_known_s": round(reached[0], 3) if reached else None,
                    "fits": alloc.peak_bytes <= CAPACITY,
                    "valid": valid,
                    "checker": run_checker(path, alloc, bench_dir) if official_check else None,
                }
            )
    return rows


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a fixed-width text table."""
    head = (
        f"{'case':<4} {'strategy':<8} {'n':>4} {'peak':>8} {'LB':>8} {'best-known':>10} "
        f"{'+LB%':>7} {'<=bk':>5} {'status':<8} {'time_s':>7} {'to_bk_s':>7} {'valid':>5} "
        f"{'checker':>7}"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['case']:<4} {r['strategy']:<8} {r['n']:>4} {r['peak']:>8} "
            f"{r['lower_bound']:>8} {r['best_known']:>10} {r['peak_over_lb_pct']:>7.2f} "
            f"{r['peak_le_best_known']!s:>5} {r['status']:<8} {r['time_s']:>7.2f} "
            f"{_seconds(r['time_to_best_known_s']):>7} {r['valid']!s:>5} {r['checker']!s:>7}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the table (``python -m tx8lab.bench.alloc``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("cases", nargs="?", default=CASES, help="e.g. ABC (default: A-K)")
    parser.add_argument("--time-limit", type=float, default=9.5, metavar="S")
    args = parser.parse_args(argv)
    print(format_table(minimalloc_table(args.time_limit, args.cases)))
    return 0


__all__ = ["BEST_KNOWN", "CASES", "case_path", "format_table", "minimalloc_table", "run_checker"]

if __name__ == "__main__":
    sys.exit(main())
