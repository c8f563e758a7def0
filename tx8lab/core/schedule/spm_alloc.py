"""spm-alloc: give every SPM buffer an offset so no two live buffers share bytes.

Spec: seed 001 "SPMAllocPass" (ValueBuffer sorted by ``start`` with ``operator<``, then an
allocation of each buffer's ``offset``), the ``tx8lab alloc`` command, and MiniMalloc's
problem format (``bench/minimalloc/README.md``). Input:
:class:`~tx8lab.core.schedule.tasks.Lifetime` rows (half-open ``[lower, upper)`` in time
steps, bytes); output: an :class:`Allocation` (offset per id, peak, lower bound, status). Two
strategies:

- ``seed``: first fit in the seed's ValueBuffer order (by start time): each buffer goes to
  the lowest offset that clears every already placed buffer live at the same time.
- ``best``: an exact branch and bound over *canonical* packings, after MiniMalloc (Moffitt,
  ASPLOS 2023): the next buffer always goes to the lowest offset it can take (so only
  placements in non-decreasing (offset, preorder) order are explored), candidates are
  ordered by that offset; pruning by dominance (never leave a gap below the smallest
  height a remaining buffer could reach), "hatless" buffers (nothing unplaced above them),
  and section inference (per cross section of simultaneously live buffers: floor + sum of
  the unplaced sizes must fit under the capacity; the floor is raised to the lowest offset
  any unplaced member can still take); the problem splits into independent sub-problems
  whenever no unplaced buffer crosses a section boundary. Three static preorders (width,
  area, total) run round robin with doubling node limits. The search is an explicit-stack
  loop compiled with numba (``numba.njit``, cached on disk, compiled on first use; the
  kernel is ``spm_bb._bb_solve``, this module drives it).
  Peak minimisation is anytime: after a fit under the capacity it searches again under
  ``peak - step`` and keeps the best packing, with doubling node budgets per try; a try
  that runs out of nodes is skipped (these problems are easy at most capacities and very
  hard at a few), one proven infeasible ends the descent (the peak is then optimal, or
  within ``step``). :func:`iter_allocations` yields every improvement.

Readings chosen where the seed is vague:

- The seed's ``operator<`` (``start <= other.start``) is not a strict weak order; the
  ``seed`` strategy sorts by start and keeps the input order among equal starts (a stable
  sort), which is what the seed's sort gives for distinct starts.
- Lifetimes are half-open ``[lower, upper)`` (MiniMalloc, ``tasks.Lifetime``); the
  seed's inclusive ``[start, end]`` is ``[start, end + 1)``. A buffer ending at t and one
  starting at t may share bytes.
- "First fit" (the seed shows the order, not the allocator) is the lowest offset, rounded
  up to the buffer's alignment, whose ``[offset, offset + size)`` clears all placed buffers
  that are live at a common instant.
- A buffer never live (``lower == upper``) or of size 0 gets offset 0 and takes part in no
  conflict; it still counts in the peak (``offset + size``), as ``check_solution.py``
  counts it.
- A packing that does not fit raises :class:`~tx8lab.errors.SpmOverflow` naming the
  capacity, the packing's peak moment (the instant, within the life of the buffer that
  reaches the peak, with the most live bytes) and the buffers live then with their sizes.
  For ``best`` the packing is the lowest-peak greedy one; when even the live bytes at some
  instant exceed the capacity, that instant is named as the proof.
- MiniMalloc CSV: ``id,lower,upper,size`` plus ``alignment`` (honoured); the old names
  ``start``/``begin`` (for ``lower``), ``buffer``/``buffer_id`` (for ``id``) and ``end``
  (an inclusive end, read as ``upper = end + 1``) are accepted as MiniMalloc does;
  ``hint`` is ignored (it constrains nothing); a non-empty ``gaps`` or ``offset`` cell is
  rejected with the file, line and column (holes in lifetimes and fixed placements are
  not modelled). The file is UTF-8 (a byte-order mark is dropped); cells are whole
  decimal numbers; a problem with more than :data:`MAX_BUFFERS` rows is refused before
  any allocation (``read_problem(path, max_buffers=N)`` raises the limit).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import itertools
import math
import re
import time
from bisect import insort
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from tx8lab.core.schedule.spm_bb import (
    _FOUND,
    _HEURISTICS,
    _INF,
    _INFEASIBLE,
    _MAX_STALLS,
    _bb_solve,
)
from tx8lab.core.schedule.tasks import Buffer, Lifetime
from tx8lab.errors import SpmOverflow, Tx8labError

if TYPE_CHECKING:
    import pandas as pd

Strategy = Literal["seed", "best"]
Status = Literal["optimal", "feasible"]
STRATEGIES: tuple[Strategy, ...] = ("seed", "best")
#: Default search time of ``strategy="best"`` (seconds); it stops earlier once optimal.
DEFAULT_TIME_LIMIT_S = 5.0

IntArray = npt.NDArray[np.int64]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Allocation:
    """Offsets for a set of lifetimes, with the figures that judge them."""

    offsets: Mapping[str, int]
    """Byte offset of each lifetime id."""
    lifetimes: tuple[Lifetime, ...]
    """The problem, in input order."""
    capacity_bytes: int
    peak_bytes: int
    """``max(offset + size)``: the SPM bytes the packing needs."""
    lower_bound_bytes: int
    """The most bytes live at one instant; no packing can peak lower."""
    strategy: Strategy
    status: Status
    """``optimal`` when the peak is proven minimal, else ``feasible``."""
    time_s: float
    """Wall time from the call to this result."""
    proven_bound_bytes: int = 0
    """Best proven lower bound on the peak: the live-bytes bound, raised when the search
    proves a smaller capacity infeasible (equals ``peak_bytes`` when optimal)."""
    nodes: int = 0
    """Branch-and-bound nodes visited (0 for ``seed``)."""
    alignments: Mapping[str, int] = field(default_factory=dict)

    @property
    def peak(self) -> int:
        """Same as :attr:`peak_bytes`."""
        return self.peak_bytes

    @property
    def lower_bound(self) -> int:
        """Same as :attr:`lower_bound_bytes`."""
        return self.lower_bound_bytes

    def to_dataframe(self, buffers: Mapping[str, Buffer] | None = None) -> pd.DataFrame:
        """One row per lifetime, in input order, for the SPM Gantt views.

        Columns ``id, buffer, op, kind, start, end, offset, size`` (time steps with ``end``
        exclusive; bytes). ``op`` (the IR op id) and ``kind`` (value/imm/psum) come from
        ``buffers`` (a ``ScheduleInput.buffers``); without it they are None.
        """
        import pandas as pd

        rows = []
        for lt in self.lifetimes:
            name = lt.buffer or lt.id
            buf = (buffers or {}).get(name)
            rows.append(
                (
                    lt.id,
                    name,
                    None if buf is None else buf.op_id,
                    None if buf is None else buf.kind,
                    lt.lower,
                    lt.upper,
                    self.offsets[lt.id],
                    lt.size,
                )
            )
        columns = ["id", "buffer", "op", "kind", "start", "end", "offset", "size"]
        return pd.DataFrame(rows, columns=columns)


@dataclass(frozen=True)
class Problem:
    """A MiniMalloc CSV file read back: lifetimes, alignments, capacity from the name."""

    lifetimes: tuple[Lifetime, ...]
    alignments: Mapping[str, int]
    """Ids whose ``alignment`` column is above 1."""
    capacity_bytes: int | None = None
    """From a file named ``NAME.<capacity>.csv`` (MiniMalloc's convention), else None."""


# --------------------------------------------------------------------------- CSV


_ALIASES = {"start": "lower", "begin": "lower", "buffer": "id", "buffer_id": "id"}
_REJECTED = {"gaps": "holes in lifetimes", "offset": "fixed placements"}


def capacity_from_name(path: str | Path) -> int | None:
    """The capacity in a MiniMalloc file name ``NAME.<capacity>.csv``, else None.

    Examples:
        >>> capacity_from_name("bench/A.1048576.csv"), capacity_from_name("input.csv")
        (1048576, None)
    """
    match = re.search(r"\.(\d+)\.csv$", Path(path).name)
    return int(match.group(1)) if match else None


#: Most buffers (rows) :func:`read_problem` accepts: the ``best`` search spends seconds per
#: ten thousand buffers before its time limit applies.
MAX_BUFFERS = 20_000

_WHOLE = re.compile(r"[+-]?[0-9]+")


def _cell_int(path: Path, line: int, column: str, text: str) -> int:
    cell = text.strip()
    if not _WHOLE.fullmatch(cell) or len(cell) > 40:
        raise Tx8labError(
            f"{path}:{line}: column {column!r}: {cell[:40]!r} is not an integer; write whole "
            "time steps and bytes"
        )
    return int(cell)


def _read_csv_rows(path: Path, what: str) -> list[tuple[int, list[str]]]:
    """``(line, cells)`` of every row of the CSV file ``path``; bad files are errors.

    A missing or unreadable file, bytes that are not UTF-8 and malformed CSV (a NUL byte,
    a cell over the csv module's field limit) each name the file and line.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise Tx8labError(f"{path}: no such file; give {what}") from None
    except OSError as err:
        raise Tx8labError(f"{path}: cannot read it ({err.strerror or err}); give {what}") from None
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise Tx8labError(
            f"{path}:{line}: byte 0x{data[err.start]:02X} is not UTF-8 text; save the CSV as UTF-8"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[tuple[int, list[str]]] = []
    try:
        for row in reader:
            rows.append((reader.line_num, row))
    except csv.Error as err:
        raise Tx8labError(f"{path}:{reader.line_num}: not valid CSV ({err})") from None
    return rows


def read_problem(path: str | Path, *, max_buffers: int = MAX_BUFFERS) -> Problem:
    """Read a MiniMalloc problem CSV (see the module docstring for the columns).

    Raises:
        Tx8labError: a missing, unreadable or non-UTF-8 file, malformed CSV, a missing
            column, a bad cell, a duplicate id, an empty or reversed lifetime, a column
            this allocator does not model, or more than ``max_buffers`` rows.
    """
    path = Path(path)
    all_rows = _read_csv_rows(path, "a MiniMalloc CSV")
    if not all_rows:
        raise Tx8labError(f"{path}: empty file; a header id,lower,upper,size is needed")
    header_raw = all_rows[0][1]
    body = [(line, row) for line, row in all_rows[1:] if any(cell.strip() for cell in row)]
    if len(body) > max_buffers:
        raise Tx8labError(
            f"{path}: {len(body)} buffers, more than the {max_buffers} the allocator takes "
            "(its search grows with the buffer count); split the problem, or raise the "
            "limit (tx8lab alloc --max-buffers N; read_problem(path, max_buffers=N))"
        )
    header = [name.strip().lower() for name in header_raw]
    inclusive_end = "end" in header and "upper" not in header
    names = [_ALIASES.get(n, "upper" if n == "end" and inclusive_end else n) for n in header]
    missing = [c for c in ("id", "lower", "upper", "size") if c not in names]
    if missing:
        raise Tx8labError(
            f"{path}:1: missing column(s) {', '.join(missing)}; the header must name "
            "id,lower,upper,size (optional alignment)"
        )
    col = {name: i for i, name in enumerate(names)}
    lifetimes: list[Lifetime] = []
    alignments: dict[str, int] = {}
    seen: set[str] = set()
    for line, row in body:
        if len(row) < len(names):
            raise Tx8labError(f"{path}:{line}: {len(row)} cells, the header has {len(names)}")
        for name, what in _REJECTED.items():
            if name in col and row[col[name]].strip():
                raise Tx8labError(
                    f"{path}:{line}: column {name!r} is set ({row[col[name]].strip()!r}); "
                    f"{what} are not modelled: remove the column or split the buffer"
                )
        bid = row[col["id"]].strip()
        if not bid:
            raise Tx8labError(f"{path}:{line}: column 'id' is empty")
        if bid in seen:
            raise Tx8labError(f"{path}:{line}: duplicate id {bid!r}; ids must be unique")
        seen.add(bid)
        lower = _cell_int(path, line, "lower", row[col["lower"]])
        upper = _cell_int(path, line, "upper", row[col["upper"]]) + int(inclusive_end)
        size = _cell_int(path, line, "size", row[col["size"]])
        if upper < lower or size < 0:
            raise Tx8labError(
                f"{path}:{line}: buffer {bid!r} has lower={lower}, upper={upper}, "
                f"size={size}; need lower <= upper and size >= 0"
            )
        if "alignment" in col and row[col["alignment"]].strip():
            align = _cell_int(path, line, "alignment", row[col["alignment"]])
            if align < 1:
                raise Tx8labError(f"{path}:{line}: column 'alignment' must be >= 1, not {align}")
            if align > 1:
                alignments[bid] = align
        lifetimes.append(Lifetime(bid, lower, upper, size))
    return Problem(tuple(lifetimes), alignments, capacity_from_name(path))


def write_problem(
    path: str | Path, lifetimes: Iterable[Lifetime], alignments: Mapping[str, int] | None = None
) -> None:
    """Write lifetimes as a MiniMalloc problem CSV (an ``alignment`` column if any)."""
    aligned = dict(alignments or {})
    with Path(path).open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["id", "lower", "upper", "size"] + (["alignment"] if aligned else []))
        for lt in lifetimes:
            extra = [aligned.get(lt.id, 1)] if aligned else []
            writer.writerow([lt.id, lt.lower, lt.upper, lt.size, *extra])


def write_solution(path: str | Path, allocation: Allocation) -> None:
    """Write ``id,offset`` rows in input order (what ``check_solution.py`` reads)."""
    with Path(path).open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["id", "offset"])
        for lt in allocation.lifetimes:
            writer.writerow([lt.id, allocation.offsets[lt.id]])


def read_solution(path: str | Path) -> dict[str, int]:
    """Read an ``id,offset`` CSV (extra columns ignored)."""
    path = Path(path)
    rows = _read_csv_rows(path, "a solution CSV (id,offset)")
    fields = [name.strip() for name in rows[0][1]] if rows else []
    if not {"id", "offset"} <= set(fields):
        raise Tx8labError(f"{path}:1: a solution needs the columns id,offset")
    id_col, offset_col = fields.index("id"), fields.index("offset")
    offsets: dict[str, int] = {}
    for line, row in rows[1:]:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) <= max(id_col, offset_col):
            raise Tx8labError(f"{path}:{line}: {len(row)} cells, the header has {len(fields)}")
        bid = row[id_col].strip()
        if bid in offsets:
            raise Tx8labError(f"{path}:{line}: duplicate id {bid!r}")
        offsets[bid] = _cell_int(path, line, "offset", row[offset_col])
    return offsets


# --------------------------------------------------------------------------- checks


def _is_live(lt: Lifetime) -> bool:
    return lt.upper > lt.lower and lt.size > 0


def peak_live_bytes(lifetimes: Iterable[Lifetime]) -> tuple[int, int]:
    """``(bytes, instant)``: the most bytes live at one instant, and the first such instant.

    Examples:
        >>> lts = [Lifetime("a", 0, 3, 4), Lifetime("b", 3, 9, 4), Lifetime("c", 0, 9, 4)]
        >>> peak_live_bytes(lts)
        (8, 0)
    """
    events: dict[int, int] = {}
    for lt in lifetimes:
        if _is_live(lt):
            events[lt.lower] = events.get(lt.lower, 0) + lt.size
            events[lt.upper] = events.get(lt.upper, 0) - lt.size
    current = best = 0
    best_t = min(events, default=0)
    for t in sorted(events):  # at equal t, frees and allocations net out (half-open)
        current += events[t]
        if current > best:
            best, best_t = current, t
    return best, best_t


def lower_bound(lifetimes: Iterable[Lifetime]) -> int:
    """The most bytes live at one instant (MiniMalloc's LB)."""
    return peak_live_bytes(lifetimes)[0]


def find_conflicts(
    lifetimes: Sequence[Lifetime],
    offsets: Mapping[str, int],
    capacity: int | None = None,
    alignments: Mapping[str, int] | None = None,
) -> list[str]:
    """Every way ``offsets`` is not a valid packing (empty list: valid).

    Checks what ``check_solution.py`` checks: an offset per id, non-negative and aligned,
    ``offset + size <= capacity``, and no two buffers live at a common instant with
    intersecting ``[offset, offset + size)``.
    """
    aligned = alignments or {}
    errors: list[str] = []
    ids = {lt.id for lt in lifetimes}
    errors += [f"unknown id {bid!r}" for bid in offsets.keys() - ids]
    for lt in lifetimes:
        if lt.id not in offsets:
            errors.append(f"buffer {lt.id!r} has no offset")
            continue
        off = offsets[lt.id]
        if off < 0:
            errors.append(f"buffer {lt.id!r}: negative offset {off}")
        if off % aligned.get(lt.id, 1):
            errors.append(f"buffer {lt.id!r}: offset {off} is not a multiple of {aligned[lt.id]}")
        if capacity is not None and off + lt.size > capacity:
            errors.append(f"buffer {lt.id!r}: {off} + {lt.size} > capacity {capacity}")
    placed = sorted((lt for lt in lifetimes if lt.id in offsets and _is_live(lt)), key=_by_start)
    active: list[Lifetime] = []
    for lt in placed:
        active = [a for a in active if a.upper > lt.lower]
        off = offsets[lt.id]
        for a in active:
            if offsets[a.id] < off + lt.size and off < offsets[a.id] + a.size:
                errors.append(
                    f"overlap: {a.id!r} [{a.lower},{a.upper}) @ [{offsets[a.id]},"
                    f"{offsets[a.id] + a.size}) and {lt.id!r} [{lt.lower},{lt.upper}) @ "
                    f"[{off},{off + lt.size})"
                )
        active.append(lt)
    return errors


def _by_start(lt: Lifetime) -> tuple[int, int]:
    return (lt.lower, lt.upper)


def peak_moment(lifetimes: Sequence[Lifetime], offsets: Mapping[str, int]) -> tuple[int, int]:
    """``(peak, instant)``: the packing's peak and the instant it is reached.

    The instant lies in the life of the buffer with the highest ``offset + size`` and has
    the most live bytes among such instants.
    """
    live = [lt for lt in lifetimes if _is_live(lt)]
    peak = max((offsets[lt.id] + lt.size for lt in lifetimes), default=0)
    tops = [lt for lt in live if offsets[lt.id] + lt.size == peak]
    if not tops:
        return peak, 0
    top = max(tops, key=lambda lt: lt.size)
    instants = sorted({top.lower} | {lt.lower for lt in live if top.lower < lt.lower < top.upper})
    best_t = max(instants, key=lambda t: sum(lt.size for lt in live if lt.lower <= t < lt.upper))
    return peak, best_t


def _does_not_fit(
    lifetimes: Sequence[Lifetime],
    capacity: int,
    instant: int,
    why: str,
    needed: int,
    offsets: Mapping[str, int] | None = None,
) -> SpmOverflow:
    live = sorted(
        (lt for lt in lifetimes if _is_live(lt) and lt.lower <= instant < lt.upper),
        key=lambda lt: (-lt.size, lt.id),
    )
    total = sum(lt.size for lt in live)
    shown = [
        f"{lt.id} {lt.size} B" + (f" @ {offsets[lt.id]}" if offsets is not None else "")
        for lt in live[:24]
    ]
    more = f", ... and {len(live) - 24} more" if len(live) > 24 else ""
    return SpmOverflow(
        f"SPM allocation does not fit in {capacity} bytes: {why}. At time step {instant}, "
        f"{len(live)} buffers are live ({total} bytes): {', '.join(shown)}{more}. "
        "Split the group further in time (smaller slices), use single buffering, or raise "
        "the capacity",
        needed_bytes=needed,
        available_bytes=capacity,
    )


# --------------------------------------------------------------------------- seed


def _alignment(alignments: Mapping[str, int], lt: Lifetime) -> int:
    return alignments.get(lt.id, 1)


def first_fit(
    lifetimes: Sequence[Lifetime],
    order: Sequence[int],
    alignments: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Place ``lifetimes[i]`` for i in ``order`` at the lowest offset that fits (first fit).

    Examples:
        >>> lts = [Lifetime("a", 0, 4, 8), Lifetime("b", 2, 6, 4), Lifetime("c", 4, 8, 8)]
        >>> first_fit(lts, [0, 1, 2])
        {'a': 0, 'b': 8, 'c': 0}
    """
    offsets = _first_fit(lifetimes, order, alignments or {})
    assert offsets is not None  # no deadline
    return offsets


def _first_fit(
    lifetimes: Sequence[Lifetime],
    order: Sequence[int],
    aligned: Mapping[str, int],
    deadline: float | None = None,
) -> dict[str, int] | None:
    """:func:`first_fit`, or None once ``deadline`` (a ``time.perf_counter()``) passed.

    A problem of up to :data:`_SMALL` lifetimes never reads the clock.
    """
    if len(lifetimes) <= _SMALL:
        deadline = None
    starts = [lifetimes[i].lower for i in order if _is_live(lifetimes[i])]
    if all(a <= b for a, b in itertools.pairwise(starts)):
        return _first_fit_by_start(lifetimes, order, aligned, deadline)
    if len(lifetimes) <= _SMALL:
        return _first_fit_small(lifetimes, order, aligned)
    return _first_fit_arrays(lifetimes, order, aligned, deadline)


def _first_fit_by_start(
    lifetimes: Sequence[Lifetime],
    order: Sequence[int],
    aligned: Mapping[str, int],
    deadline: float | None = None,
) -> dict[str, int] | None:
    """:func:`first_fit` of an order by start time (the seed's): a sweep over time.

    A placed lifetime that ended by the current one's start ends before every later one
    starts too, so only the ones still live are walked (kept sorted by offset). With a
    ``deadline`` the clock is read every :data:`_CLOCK_EVERY` placements and None
    returned once it passed.
    """
    offsets = {lt.id: 0 for lt in lifetimes if not _is_live(lt)}
    live: list[tuple[int, int, int, int]] = []
    """(offset, placement, end offset, upper) of the placed lifetimes still live."""
    for placed, i in enumerate(order):
        lt = lifetimes[i]
        if not _is_live(lt):
            continue
        if deadline is not None and placed % _CLOCK_EVERY == 0 and time.perf_counter() >= deadline:
            return None
        lower, size = lt.lower, lt.size
        if live and min(p[3] for p in live) <= lower:
            live = [p for p in live if p[3] > lower]
        candidate = _lowest_fit(((p[0], p[2]) for p in live), size, _alignment(aligned, lt))
        offsets[lt.id] = candidate
        insort(live, (candidate, placed, candidate + size, lt.upper))
    return {lt.id: offsets[lt.id] for lt in lifetimes}


def _first_fit_arrays(
    lifetimes: Sequence[Lifetime],
    order: Sequence[int],
    aligned: Mapping[str, int],
    deadline: float | None = None,
) -> dict[str, int] | None:
    """:func:`first_fit` on numpy arrays (many lifetimes).

    Quadratic in the lifetimes: with a ``deadline`` (a ``time.perf_counter()`` value) the
    clock is read every :data:`_CLOCK_EVERY` placements and None returned once it passed.
    """
    offsets = {lt.id: 0 for lt in lifetimes if not _is_live(lt)}
    # placed intervals as arrays: one vectorised overlap test per placement (numpy)
    n = len(lifetimes)
    p_lower = np.empty(n, np.int64)
    p_upper = np.empty(n, np.int64)
    p_lo = np.empty(n, np.int64)
    p_hi = np.empty(n, np.int64)
    m = 0
    for i in order:
        lt = lifetimes[i]
        if not _is_live(lt):
            continue
        if deadline is not None and m % _CLOCK_EVERY == 0 and time.perf_counter() >= deadline:
            return None
        align = _alignment(aligned, lt)
        hit = (p_lower[:m] < lt.upper) & (lt.lower < p_upper[:m])
        lo, hi = p_lo[:m][hit], p_hi[:m][hit]
        candidate = 0
        if lo.size:
            # the seed's walk over the busy intervals by offset, vectorised: the candidate
            # before interval k is the running max of the aligned ends before it; the
            # first interval that leaves room below it stops the walk
            by = np.argsort(lo, kind="stable")
            lo, ends = lo[by], -(-hi[by] // align) * align
            before = np.maximum.accumulate(np.concatenate(([0], ends)))
            room = np.flatnonzero(before[:-1] + lt.size <= lo)
            candidate = int(before[room[0]] if room.size else before[-1])
        offsets[lt.id] = candidate
        p_lower[m], p_upper[m] = lt.lower, lt.upper
        p_lo[m], p_hi[m] = candidate, candidate + lt.size
        m += 1
    return {lt.id: offsets[lt.id] for lt in lifetimes}


#: Placements between two reads of the clock in a first fit that has a deadline.
_CLOCK_EVERY = 256

#: Up to this many lifetimes :func:`first_fit` walks plain lists: numpy's per-call cost is
#: more than the whole walk for the few buffers of most groups (the same offsets).
_SMALL = 48


def _first_fit_small(
    lifetimes: Sequence[Lifetime], order: Sequence[int], aligned: Mapping[str, int]
) -> dict[str, int]:
    """:func:`first_fit` without numpy: the same walk over the busy intervals by offset."""
    offsets = {lt.id: 0 for lt in lifetimes if not _is_live(lt)}
    placed: list[tuple[int, int, int, int]] = []
    """(lower, upper, lo, hi) of each placed lifetime, in placement order."""
    for i in order:
        lt = lifetimes[i]
        if not _is_live(lt):
            continue
        lower, upper, size = lt.lower, lt.upper, lt.size
        busy = sorted(
            [
                (lo, hi)
                for p_lower, p_upper, lo, hi in placed
                if p_lower < upper and lower < p_upper
            ],
            key=_lo,
        )
        candidate = _lowest_fit(busy, size, _alignment(aligned, lt))
        offsets[lt.id] = candidate
        placed.append((lower, upper, candidate, candidate + size))
    return {lt.id: offsets[lt.id] for lt in lifetimes}


_lo = itemgetter(0)


def _lowest_fit(busy: Iterable[tuple[int, int]], size: int, align: int) -> int:
    """The seed's walk: the lowest aligned offset below, between or above ``busy``.

    ``busy`` are the ``[lo, hi)`` byte ranges live at once, by ``lo``; the candidate before
    range ``k`` is the running max of the aligned ends before it, and the first range
    that leaves ``size`` bytes below it stops the walk.
    """
    candidate = 0
    for lo, hi in busy:
        if candidate + size <= lo:
            break
        end = -(-hi // align) * align
        if end > candidate:
            candidate = end
    return candidate


def seed_order(lifetimes: Sequence[Lifetime]) -> list[int]:
    """The seed's ValueBuffer order: by start time, input order among equal starts."""
    return sorted(range(len(lifetimes)), key=lambda i: lifetimes[i].lower)


# --------------------------------------------------------------------------- best: kernel


@functools.cache
def _kernel() -> Callable[..., tuple[int, int]]:
    """The compiled search (numba is imported and the kernel loaded on first use)."""
    import numba

    solver: Callable[..., tuple[int, int]] = numba.njit(cache=True, nogil=True)(_bb_solve)
    # Compile (or load from numba's disk cache) now, outside any caller's time limit.
    warm = _instance([Lifetime("a", 0, 2, 1), Lifetime("b", 1, 3, 1)], {})
    solver(2, *warm.arrays, np.array(_HEURISTICS[0], np.int64), 8, np.zeros(2, np.int64))
    return solver


def warm_up() -> float:
    """Compile (first use after an install or an edit) or load the search kernel now.

    Returns the seconds it took: about 7 s to compile on this project's 2-core machine,
    well under 1 s to load from numba's disk cache. ``best`` calls it itself; the time
    limit and :attr:`Allocation.time_s` never include it.
    """
    start = time.perf_counter()
    _kernel()
    return time.perf_counter() - start


# --------------------------------------------------------------------------- best: driver


@dataclass(frozen=True)
class _Instance:
    """The live buffers of a problem as the kernel's arrays, sizes in ``unit`` bytes."""

    live: tuple[int, ...]
    """Index into the lifetimes of each kernel buffer."""
    unit: int
    """GCD of the sizes and alignments: every canonical offset is a multiple of it."""
    arrays: tuple[IntArray, ...]
    """lower, upper, size, align, ov_ptr, ov_idx, bs_lo, bs_hi, sec_ptr, sec_buf, total0,
    cuts0, part_cps (the kernel's arguments after ``cap``)."""


def _instance(lifetimes: Sequence[Lifetime], alignments: Mapping[str, int]) -> _Instance:
    live = tuple(i for i, lt in enumerate(lifetimes) if _is_live(lt))
    lts = [lifetimes[i] for i in live]
    lower = np.array([lt.lower for lt in lts], np.int64)
    upper = np.array([lt.upper for lt in lts], np.int64)
    align_bytes = [_alignment(alignments, lt) for lt in lts]
    unit = functools.reduce(math.gcd, [lt.size for lt in lts] + align_bytes, 0) or 1
    size = np.array([lt.size // unit for lt in lts], np.int64)
    align = np.array([a // unit for a in align_bytes], np.int64)
    n = len(lts)
    # Sections: the buffers live just before each distinct end time; buffer b lives in
    # the contiguous range [bs_lo[b], bs_hi[b]).
    ends = np.unique(upper)
    bs_lo = np.searchsorted(ends, lower, side="right").astype(np.int64)
    bs_hi = (np.searchsorted(ends, upper, side="left") + 1).astype(np.int64)
    n_sec = len(ends)
    counts = bs_hi - bs_lo
    sec_of = np.concatenate([np.arange(lo, hi) for lo, hi in zip(bs_lo, bs_hi, strict=True)])
    buf_of = np.repeat(np.arange(n, dtype=np.int64), counts)
    order = np.lexsort((buf_of, sec_of))
    sec_buf = buf_of[order].astype(np.int64)
    sec_ptr = np.zeros(n_sec + 1, np.int64)
    sec_ptr[1:] = np.cumsum(np.bincount(sec_of, minlength=n_sec))
    total0 = np.zeros(n_sec, np.int64)
    np.add.at(total0, sec_of, size[buf_of])
    overlap = (lower[:, None] < upper[None, :]) & (lower[None, :] < upper[:, None])
    np.fill_diagonal(overlap, False)
    ov_ptr = np.zeros(n + 1, np.int64)
    ov_ptr[1:] = np.cumsum(overlap.sum(axis=1))
    ov_idx = np.nonzero(overlap)[1].astype(np.int64)
    # Cuts: buffers live on both sides of each section boundary (0 = independent halves).
    diff = np.zeros(n_sec + 1, np.int64)
    np.add.at(diff, bs_lo, 1)
    np.add.at(diff, bs_hi - 1, -1)
    cuts0 = np.cumsum(diff)[: max(n_sec - 1, 0)].astype(np.int64)
    part_cps = np.array([0] + [s + 1 for s in np.nonzero(cuts0 == 0)[0]] + [n_sec], np.int64)
    arrays = (lower, upper, size, align, ov_ptr, ov_idx, bs_lo, bs_hi, sec_ptr, sec_buf)
    return _Instance(live, unit, (*arrays, total0, cuts0, part_cps))


class _Searcher:
    """Runs the kernel under a capacity with node and time budgets.

    MiniMalloc's round robin: each static preorder in turn, the node limit doubling after
    each round, until one finds a packing or proves there is none.
    """

    def __init__(self, inst: _Instance) -> None:
        self.inst = inst
        self.kernel = _kernel()
        self.nodes = 0
        self.kernel_s = 0.0
        self.heuristics = [np.array(h, np.int64) for h in _HEURISTICS]
        self.answers: dict[tuple[int, int, int], tuple[int, int, IntArray | None]] = {}
        """(capacity, preorder, node limit) -> the kernel's (status, nodes visited, packing
        if found). The kernel is a function of these (the instance is fixed), and the
        descent asks the same ones again each time it restarts with a doubled budget."""

    def attempt(
        self, cap_units: int, node_budget: int, deadline: float
    ) -> tuple[Literal["found", "infeasible", "timeout"], IntArray | None]:
        n = len(self.inst.live)
        sol = np.full(n, -1, np.int64)
        limit = 2 * n
        used = 0
        while True:
            for h, heur in enumerate(self.heuristics):
                remaining = deadline - time.perf_counter()
                if remaining <= 0 or used >= node_budget:
                    return "timeout", None
                nodes = min(limit, node_budget - used)
                if self.kernel_s > 0.05:  # keep inside the deadline at the measured rate
                    nodes = min(nodes, max(64, int(self.nodes / self.kernel_s * remaining)))
                answer = self.answers.get((cap_units, h, nodes))
                if answer is None:
                    start = time.perf_counter()
                    status, visited = self.kernel(cap_units, *self.inst.arrays, heur, nodes, sol)
                    self.kernel_s += time.perf_counter() - start
                    # a found packing is all in ``sol`` (the kernel writes every buffer's)
                    answer = (status, visited, sol.copy() if status == _FOUND else None)
                    self.answers[(cap_units, h, nodes)] = answer
                status, visited, packing = answer
                used += visited
                self.nodes += visited
                if status == _FOUND:
                    assert packing is not None
                    return "found", packing.copy()
                if status == _INFEASIBLE:
                    return "infeasible", None
            limit *= 2


def _check_inputs(
    lifetimes: Sequence[Lifetime], capacity: int, alignments: Mapping[str, int] | None
) -> dict[str, int]:
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
        raise Tx8labError(f"capacity must be a whole number of bytes >= 0, not {capacity!r}")
    seen: set[str] = set()
    for lt in lifetimes:
        if lt.id in seen:
            raise Tx8labError(f"lifetime id {lt.id!r} appears twice; ids must be unique")
        seen.add(lt.id)
        if lt.upper < lt.lower or lt.size < 0:
            raise Tx8labError(
                f"lifetime {lt.id!r}: [{lt.lower}, {lt.upper}) size {lt.size}; need "
                "lower <= upper and size >= 0"
            )
    aligned = {k: v for k, v in (alignments or {}).items() if v != 1}
    for bid, align in aligned.items():
        if bid not in seen:
            raise Tx8labError(f"alignment given for unknown lifetime id {bid!r}")
        if isinstance(align, bool) or not isinstance(align, int) or align < 1:
            raise Tx8labError(f"alignment of {bid!r} must be a whole number >= 1, not {align!r}")
    return aligned


def _greedy(
    lifetimes: Sequence[Lifetime],
    aligned: Mapping[str, int],
    deadline: float | None = None,
    time_limit_s: float = 0.0,
) -> tuple[dict[str, int], int]:
    """The lowest-peak first fit over a few classic orders (start, size, area).

    With a ``deadline`` the clock is read inside each first fit: the orders by size and
    area are left out once it passed, and when even the first (by start, a sweep over
    time) cannot finish by then the problem is refused, naming its size.
    """
    idx = range(len(lifetimes))
    orders: tuple[Callable[[], Sequence[int]], ...] = (
        lambda: seed_order(lifetimes),
        lambda: sorted(idx, key=lambda i: (-lifetimes[i].size, lifetimes[i].lower)),
        lambda: sorted(
            idx, key=lambda i: -lifetimes[i].size * (lifetimes[i].upper - lifetimes[i].lower)
        ),
    )  # made one by one: the later sorts are skipped once the deadline passed
    best: tuple[dict[str, int], int] | None = None
    for k, make_order in enumerate(orders):
        if k and deadline is not None and time.perf_counter() >= deadline:
            break
        offsets = _first_fit(lifetimes, make_order(), aligned, deadline)
        if offsets is None:
            if best is None:
                raise Tx8labError(
                    f"SPM allocation (best): the first greedy packing of {len(lifetimes):,} "
                    f"buffers did not finish within the time limit of {time_limit_s:g} s; "
                    "raise the time limit (tx8lab alloc --time-limit S) or use strategy seed"
                )
            break
        peak = max((offsets[lt.id] + lt.size for lt in lifetimes), default=0)
        if best is None or peak < best[1]:
            best = (offsets, peak)
    assert best is not None
    return best


@dataclass
class _Incumbent:
    """The search's best packing so far and what is proven about the optimum."""

    proven: int
    """No packing peaks below this many bytes."""
    offsets: dict[str, int] = field(default_factory=dict)
    peak: int = _INF
    """Peak of ``offsets`` (``_INF`` while there is none)."""

    def offer(self, offsets: dict[str, int], peak: int) -> bool:
        """Keep ``offsets`` if it peaks lower; return whether it did."""
        if peak >= self.peak:
            return False
        self.offsets, self.peak = offsets, peak
        return True


def iter_allocations(
    lifetimes: Iterable[Lifetime],
    capacity: int,
    *,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    alignments: Mapping[str, int] | None = None,
    node_limit: int | None = None,
) -> Iterator[Allocation]:
    """The ``best`` search, yielding each better packing as soon as it is found.

    The first result is the lowest-peak greedy packing when it fits, then each packing
    with a lower peak; a last result repeats the best one when the search proved more
    about it (``status`` or ``proven_bound_bytes`` changed). Stops when the peak is proven
    minimal, ``node_limit`` branch-and-bound nodes have been visited (a work budget: the
    same problem and limit give the same packing on any machine) or ``time_limit_s`` is
    spent (a wall-clock cap; the one-time numba compile is not counted).

    Raises:
        Tx8labError: bad input, or no packing within ``capacity`` (proven, or none found
            in time); the message lists the buffers live at the peak moment.
    """
    lts = tuple(lifetimes)
    aligned = _check_inputs(lts, capacity, alignments)
    if not time_limit_s > 0:
        raise Tx8labError(f"time_limit_s must be > 0, not {time_limit_s}")
    if node_limit is not None and node_limit < 1:
        raise Tx8labError(f"node_limit must be >= 1 (or None for no limit), not {node_limit}")
    node_cap = _INF if node_limit is None else node_limit
    if any(_is_live(lt) for lt in lts):
        _kernel()
    start = time.perf_counter()
    deadline = start + time_limit_s
    lb, lb_instant = peak_live_bytes(lts)
    if lb > capacity:
        raise _does_not_fit(lts, capacity, lb_instant, f"{lb} bytes are live at once", lb)
    dead = [lt for lt in lts if not _is_live(lt)]
    big = max(dead, key=lambda lt: lt.size, default=None)
    if big is not None and big.size > capacity:
        raise SpmOverflow(
            f"SPM allocation does not fit in {capacity} bytes: buffer {big.id!r} alone has "
            f"{big.size} bytes; split it or raise the capacity",
            needed_bytes=big.size,
            available_bytes=capacity,
        )
    inc = _Incumbent(proven=max(lb, big.size if big else 0))
    searcher: _Searcher | None = None

    def result() -> Allocation:
        return Allocation(
            offsets=inc.offsets,
            lifetimes=lts,
            capacity_bytes=capacity,
            peak_bytes=inc.peak,
            lower_bound_bytes=lb,
            strategy="best",
            status="optimal" if inc.peak <= inc.proven else "feasible",
            time_s=time.perf_counter() - start,
            proven_bound_bytes=min(inc.proven, inc.peak),
            nodes=searcher.nodes if searcher else 0,
            alignments=aligned,
        )

    greedy_offsets, greedy_peak = _greedy(lts, aligned, deadline, time_limit_s)
    last: Allocation | None = None
    if greedy_peak <= capacity:
        inc.offer(greedy_offsets, greedy_peak)
        last = result()
        yield last
        if inc.peak <= inc.proven or time.perf_counter() >= deadline:
            return
    inst = _instance(lts, aligned)
    unit = inst.unit
    searcher = _Searcher(inst)
    n = len(inst.live)

    def spent() -> bool:
        assert searcher is not None
        return time.perf_counter() >= deadline or searcher.nodes >= node_cap

    def attempt(cap_bytes: int, budget: int) -> str:
        assert searcher is not None
        budget = min(budget, node_cap - searcher.nodes)
        status, sol = searcher.attempt(cap_bytes // unit, budget, deadline)
        if status == "found":
            assert sol is not None
            offsets = {lt.id: 0 for lt in lts}
            for k, i in enumerate(inst.live):
                offsets[lts[i].id] = int(sol[k]) * unit
            inc.offer(offsets, max(offsets[lt.id] + lt.size for lt in lts))
        elif status == "infeasible":
            inc.proven = max(inc.proven, (cap_bytes // unit + 1) * unit)
        return status

    # A cheap try at the bound first: on many problems the bound is reached at once
    # (when the bound is the capacity, the search under the capacity below is that try).
    if inc.proven < capacity and attempt(inc.proven, 64 * n) == "found":
        yield result()
        return
    if inc.peak > capacity:
        # Nothing fits yet: search under the capacity with the whole time left.
        status = attempt(capacity, _INF)
        if status != "found":
            why = (
                "the search proved that no packing fits"
                if status == "infeasible"
                else f"no packing found in {time_limit_s:g} s"
                if searcher.nodes < node_cap
                else f"no packing found in {node_limit:,} nodes"
            )
            peak, instant = peak_moment(lts, greedy_offsets)
            raise _does_not_fit(
                lts,
                capacity,
                instant,
                f"{why} (live-bytes bound {lb} B; the best greedy packing peaks at {peak} B, "
                f"reached at time step {instant})",
                peak,
                greedy_offsets,
            )
        last = result()
        yield last
    # Descend: search again under a smaller capacity; skip capacities that stall.
    budget = 64 * n
    while inc.peak > inc.proven and not spent():
        stalls = 0
        cap_bytes = inc.peak
        while inc.peak > inc.proven and not spent() and stalls < _MAX_STALLS:
            step = max(unit, (inc.peak - inc.proven) // 64 // unit * unit)
            cap_bytes = min(cap_bytes, inc.peak) - step
            if cap_bytes < inc.proven:
                break
            status = attempt(cap_bytes, budget)
            if status == "found":
                stalls = 0
                last = result()
                yield last
            elif status == "infeasible":
                break
            else:
                stalls += 1
        budget *= 2
    final = result()
    if last is None or (final.status, final.proven_bound_bytes) != (
        last.status,
        last.proven_bound_bytes,
    ):
        yield final


def allocate(
    lifetimes: Iterable[Lifetime],
    capacity: int,
    strategy: Strategy | str = "seed",
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    *,
    alignments: Mapping[str, int] | None = None,
    on_improve: Callable[[Allocation], None] | None = None,
    node_limit: int | None = None,
) -> Allocation:
    """Offsets for ``lifetimes`` within ``capacity`` bytes.

    Args:
        lifetimes: the buffers (half-open ``[lower, upper)`` in time steps, bytes).
        capacity: SPM bytes available (e.g. ``hw.tile.spm_usable_bytes``).
        strategy: ``seed`` (first fit by start time) or ``best`` (branch and bound).
        time_limit_s: search time for ``best`` (it stops earlier once optimal).
        alignments: offset alignment per lifetime id (default 1).
        on_improve: called with each better packing ``best`` finds (anytime view).
        node_limit: work budget of ``best`` in branch-and-bound nodes (None: no limit;
            the time limit decides). With it, the packing does not depend on the
            machine's speed unless ``time_limit_s`` runs out first, so ``best`` keeps
            its last answers: the same problem and budget asked again (another run of
            a pipeline, a view) get the same packing at once (``time_s`` is the call's).

    Raises:
        Tx8labError: bad input, or the buffers do not fit; the message lists the buffers
            live at the packing's peak moment with their sizes.

    Examples:
        >>> lts = [Lifetime("a", 0, 4, 8), Lifetime("b", 2, 6, 4), Lifetime("c", 4, 8, 8)]
        >>> alloc = allocate(lts, 16)
        >>> dict(alloc.offsets), alloc.peak_bytes, alloc.lower_bound_bytes, alloc.status
        ({'a': 0, 'b': 8, 'c': 0}, 12, 12, 'optimal')
    """
    if strategy not in STRATEGIES:
        raise Tx8labError(f"unknown allocation strategy {strategy!r}; use one of {STRATEGIES}")
    if strategy == "best":
        start = time.perf_counter()
        lifetimes = tuple(lifetimes)
        key = _best_key(lifetimes, capacity, alignments, time_limit_s, node_limit)
        if on_improve is None and key is not None and key in _BEST:
            _BEST.move_to_end(key)
            kept = _BEST[key]
            return dataclasses.replace(
                kept,
                offsets=dict(kept.offsets),
                lifetimes=lifetimes,
                alignments=dict(kept.alignments),
                time_s=time.perf_counter() - start,
            )
        last: Allocation | None = None
        for last in iter_allocations(
            lifetimes,
            capacity,
            time_limit_s=time_limit_s,
            alignments=alignments,
            node_limit=node_limit,
        ):
            if on_improve is not None:
                on_improve(last)
        assert last is not None
        if key is not None:
            _BEST[key] = dataclasses.replace(
                last, offsets=dict(last.offsets), alignments=dict(last.alignments)
            )
            if len(_BEST) > _BEST_KEPT:
                _BEST.popitem(last=False)
        return last
    start = time.perf_counter()
    lts = tuple(lifetimes)
    aligned = _check_inputs(lts, capacity, alignments)
    offsets = first_fit(lts, seed_order(lts), aligned)
    lb = lower_bound(lts)
    bound = max([lb] + [lt.size for lt in lts if not _is_live(lt)])
    peak, instant = peak_moment(lts, offsets)
    if peak > capacity:
        raise _does_not_fit(
            lts, capacity, instant, f"first fit by start time peaks at {peak} B", peak, offsets
        )
    return Allocation(
        offsets=offsets,
        lifetimes=lts,
        capacity_bytes=capacity,
        peak_bytes=peak,
        lower_bound_bytes=lb,
        strategy="seed",
        status="optimal" if peak <= bound else "feasible",
        time_s=time.perf_counter() - start,
        proven_bound_bytes=min(bound, peak),
        alignments=aligned,
    )


#: ``best``'s answers by problem and work budget, the latest last (a pipeline run after
#: another on the same model, or a view, packs the same groups again).
_BEST: OrderedDict[tuple[Any, ...], Allocation] = OrderedDict()
_BEST_KEPT = 256


def _best_key(
    lifetimes: tuple[Lifetime, ...],
    capacity: int,
    alignments: Mapping[str, int] | None,
    time_limit_s: float,
    node_limit: int | None,
) -> tuple[Any, ...] | None:
    """What ``best`` answers to, when its answer may be kept (else None).

    Only with a node budget (the packing is then a function of the problem, not of the
    machine's speed) and plain int figures (a bool or float that only equals one is the
    input check's to refuse).
    """
    if node_limit is None or type(node_limit) is not int or type(capacity) is not int:
        return None
    for lt in lifetimes:
        if not (type(lt.lower) is int and type(lt.upper) is int and type(lt.size) is int):
            return None
    aligned = tuple(sorted((alignments or {}).items()))
    if not all(type(a) is int for _, a in aligned):
        return None
    return (lifetimes, capacity, aligned, time_limit_s, node_limit)


__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "STRATEGIES",
    "Allocation",
    "Problem",
    "Status",
    "Strategy",
    "allocate",
    "capacity_from_name",
    "find_conflicts",
    "first_fit",
    "iter_allocations",
    "lower_bound",
    "peak_live_bytes",
    "peak_moment",
    "read_problem",
    "read_solution",
    "seed_order",
    "warm_up",
    "write_problem",
    "write_solution",
]
