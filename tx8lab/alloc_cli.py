"""``tx8lab alloc``: the SPM allocator on a MiniMalloc problem file.

Spec: DESIGN.md §7 (the SPM allocator as a command). ``tx8lab alloc PROBLEM.csv --capacity BYTES
--strategy seed|best --out SOLUTION.csv [--time-limit S]`` writes ``id,offset`` rows
(``check_solution.py`` reads them) and prints the peak, the lower bound and the time.

Readings chosen:

- ``--capacity`` takes sizes as the hardware overrides do (``1048576``, ``1Mi``,
  ``0x100000``); without it the capacity comes from a file named ``NAME.<capacity>.csv``
  (MiniMalloc's convention), else it is an error.
- ``--strategy`` defaults to ``best``; ``--time-limit`` (seconds, default
  :data:`~tx8lab.core.schedule.spm_alloc.DEFAULT_TIME_LIMIT_S`) bounds its search.
- Without ``--out`` nothing is written (the figures are still printed). ``--out`` is
  checked before the problem is read (its folder exists and is writable) and written
  all or nothing (:mod:`tx8lab._outputs`): a failed run leaves no file and an existing
  one as it was.
- ``--time-limit`` must be > 0; it bounds the ``best`` search from its first greedy pass
  on (a problem whose first packing cannot finish in time is refused, naming its size).
- Errors print one line ``tx8lab alloc: error: ...`` on stderr and exit 2, as ``tx8lab``
  does; ``tx8lab/cli.py`` mounts :func:`add_arguments` and :func:`cmd_alloc` as its
  ``alloc`` sub-command (the CSV side lives here, above core; the allocator in
  ``tx8lab.core.schedule.spm_alloc``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn, TextIO

from tx8lab._outputs import Outputs
from tx8lab.core.schedule.spm_alloc import (
    DEFAULT_TIME_LIMIT_S,
    MAX_BUFFERS,
    STRATEGIES,
    allocate,
    read_problem,
    write_solution,
)
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import parse_number

PROG = "tx8lab alloc"


class _UsageError(Exception):
    """A command-line mistake found by argparse."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see `{self.prog} --help`)")


def parse_bytes(text: str) -> int:
    """A byte count written as ``1048576``, ``1Mi``, ``0x100000`` or ``3MiB``.

    Examples:
        >>> parse_bytes("1Mi"), parse_bytes("0x400"), parse_bytes("3MiB")
        (1048576, 1024, 3145728)
    """
    try:
        value = parse_number(text)
    except Tx8labError as err:
        raise Tx8labError(f"--capacity {text!r}: {err}") from None
    if isinstance(value, float) or value < 0:
        raise Tx8labError(f"--capacity {text!r}: need a whole number of bytes >= 0, e.g. 1Mi")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``alloc`` arguments to ``parser`` (a sub-command parser or a fresh one)."""
    parser.add_argument("problem", help="MiniMalloc CSV: id,lower,upper,size[,alignment]")
    parser.add_argument(
        "--capacity",
        metavar="BYTES",
        help="SPM bytes (1048576, 1Mi, 0x100000); default: NAME.<capacity>.csv",
    )
    parser.add_argument("--strategy", choices=STRATEGIES, default="best", help="default: best")
    parser.add_argument("--out", metavar="SOLUTION.csv", help="write id,offset rows here")
    parser.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT_S,
        metavar="S",
        help=f"search time of --strategy best in seconds (default {DEFAULT_TIME_LIMIT_S:g})",
    )
    parser.add_argument(
        "--max-buffers",
        type=int,
        default=MAX_BUFFERS,
        metavar="N",
        help=f"refuse problems with more buffers than this (default {MAX_BUFFERS:,})",
    )


def cmd_alloc(args: argparse.Namespace, out: TextIO) -> int:
    """Run the allocation ``args`` describe; print the figures on ``out``; return 0."""
    if not args.time_limit > 0 or args.time_limit == float("inf"):
        raise Tx8labError(f"--time-limit {args.time_limit}: give seconds > 0, e.g. 10")
    if args.max_buffers < 1:
        raise Tx8labError(f"--max-buffers {args.max_buffers}: give a count >= 1")
    with Outputs() as outputs:
        out_tmp = outputs.file("--out", args.out) if args.out is not None else None
        return _alloc(args, out, out_tmp)


def _alloc(args: argparse.Namespace, out: TextIO, out_tmp: Path | None) -> int:
    problem = read_problem(args.problem, max_buffers=args.max_buffers)
    if args.capacity is not None:
        capacity = parse_bytes(args.capacity)
    elif problem.capacity_bytes is not None:
        capacity = problem.capacity_bytes
    else:
        raise Tx8labError(
            f"{args.problem}: give --capacity BYTES (the file name has no NAME.<capacity>.csv)"
        )
    alloc = allocate(
        problem.lifetimes,
        capacity,
        args.strategy,
        time_limit_s=args.time_limit,
        alignments=problem.alignments,
    )
    if out_tmp is not None:
        write_solution(out_tmp, alloc)
    gap = alloc.peak_bytes - alloc.lower_bound_bytes
    pct = 100.0 * gap / alloc.lower_bound_bytes if alloc.lower_bound_bytes else 0.0
    print(f"buffers:     {len(alloc.lifetimes)}", file=out)
    print(f"capacity:    {capacity}", file=out)
    print(f"strategy:    {alloc.strategy}", file=out)
    print(f"peak:        {alloc.peak_bytes}  ({alloc.status})", file=out)
    print(f"lower bound: {alloc.lower_bound_bytes}  (max live bytes; gap {pct:.3f}%)", file=out)
    print(f"time:        {alloc.time_s:.3f} s", file=out)
    if args.out:
        print(f"solution:    {args.out}", file=out)
    return 0


def alloc_main(argv: list[str] | None = None) -> int:
    """``tx8lab alloc`` as a function: returns the exit code (0 ok, 2 user error)."""
    parser = _Parser(prog=PROG, description=__doc__.splitlines()[0] if __doc__ else None)
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
        return cmd_alloc(args, sys.stdout)
    except _UsageError as err:
        message = str(err)
    except Tx8labError as err:
        message = str(err)
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        message = f"{where}{err.strerror or err}"
    except SystemExit as err:  # --help
        return err.code if isinstance(err.code, int) else 0
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


__all__ = ["add_arguments", "alloc_main", "cmd_alloc", "parse_bytes"]

if __name__ == "__main__":
    sys.exit(alloc_main())
