"""``tx8lab calibrate``: fit the engine laws' unknown constants on the board measurements.

Spec: issue 19 (engine laws fitted on ``shared/board``, a residual table for every row the
model can time), ``tx8lab/hw/board/README.md`` (the rows, their sources and kinds). The
rows are read from the copy shipped in ``tx8lab/hw/board/`` and found by their
``quantity`` and ``condition`` text (never by position), so a changed file is an error that
names the row, not a silent shift.

Each constant comes from named rows by a stated method (closed form where the law is
linear in it, ``numpy.linalg.lstsq`` on relative residuals where several rows inform
several constants); nothing is fitted to a whole kernel's time. The fit is written, with
its rows and method, to ``tx8lab/hw/calibration.json``, which the ``tx81`` preset reads.
The residual table then times every row it can model through the laws and the simulator
(:mod:`tx8lab.hw.sim`: a row that is a sequence of commands is played as one) and gives
measured, modelled and their ratio.

Readings chosen where the rows are vague (each is also in the row's ``how``):

- The board's counters count 1 ns per cycle (rows "PMU engine counter time base" and
  "rdcycle rate vs StreamEvents"), so cycles and ns are used as one.
- "Short" commands whose sizes the rows do not state (the D-command queue probes) are
  timed as one granule of work (NE 8x16x8, CT the 4 KiB FP16 Add the same study times,
  DMA 0 bytes, TDMA one 4-byte iteration); their engine delta then gives the fixed cost.
- A value written as two runs (``~1.73 / 1.85``) is their mean; a range (``8-13``) its
  middle; a list of samples, the median of the warm ones (the first is a cold start).
"""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from tx8lab.errors import Tx8labError
from tx8lab.hw import laws
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.sim import SimCommand, simulate

#: Where the fitted constants live (the ``tx81`` preset reads it).
CALIBRATION_FILE = "calibration.json"
NS = 1e-9


@dataclass(frozen=True)
class BoardRow:
    """One row of ``micro.csv`` or ``kernels.csv``."""

    file: str
    line: int
    """Line number in the file (header is line 1)."""
    fields: dict[str, str]

    @property
    def ref(self) -> str:
        """``micro.csv:64``."""
        return f"{self.file}:{self.line}"

    @property
    def text(self) -> str:
        """What the row measures."""
        f = self.fields
        return f.get("quantity") or f"{f.get('workload')} {f.get('metric')}"


def board_dir() -> Path:
    """The shipped copy of the board measurements."""
    return Path(str(resources.files("tx8lab.hw") / "board"))


#: The board files and the columns the fit and the kernel cases read from each.
BOARD_COLUMNS = {
    "micro.csv": ("quantity", "condition", "value"),
    "kernels.csv": ("workload", "schedule", "metric"),
}


def read_board(directory: Path | None = None) -> list[BoardRow]:
    """Every row of ``micro.csv`` and ``kernels.csv``.

    Raises:
        Tx8labError: a file is missing, unreadable, not UTF-8 or not CSV, or its header
            lacks a column of :data:`BOARD_COLUMNS`.
    """
    where = directory or board_dir()
    rows: list[BoardRow] = []
    for name, needed in BOARD_COLUMNS.items():
        path = where / name
        if not path.is_file():
            raise Tx8labError(f"calibrate: {path} is missing; the board data ships with tx8lab")
        try:
            text = path.read_bytes().decode("utf-8").removeprefix("\ufeff")
        except OSError as err:
            raise Tx8labError(f"calibrate: cannot read {path} ({err.strerror or err})") from None
        except UnicodeDecodeError as err:
            raise Tx8labError(
                f"calibrate: {path}: byte {err.start} is not UTF-8 text; save the CSV as UTF-8"
            ) from None
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        try:
            header = next(reader, None)
            if not header:
                raise Tx8labError(f"calibrate: {path} has no header row")
            missing = [c for c in needed if c not in header]
            if missing:
                raise Tx8labError(
                    f"calibrate: {path}:1: missing column(s) {', '.join(missing)}; the header "
                    f"needs {', '.join(needed)}"
                )
            for i, cells in enumerate(reader):
                fields = {k: (cells[j] if j < len(cells) else "") for j, k in enumerate(header)}
                rows.append(BoardRow(name, i + 2, fields))
        except csv.Error as err:
            raise Tx8labError(
                f"calibrate: {path}:{reader.line_num}: not valid CSV ({err})"
            ) from None
    return rows


def find_row(rows: Sequence[BoardRow], quantity: str, condition: str = "") -> BoardRow:
    """The one micro row whose quantity starts with ``quantity`` and condition holds ``condition``.

    Raises:
        Tx8labError: none or several match; the message names what was looked for.
    """
    got = [
        r
        for r in rows
        if r.file == "micro.csv"
        and r.fields["quantity"].startswith(quantity)
        and condition in r.fields["condition"]
    ]
    if len(got) != 1:
        raise Tx8labError(
            f"calibrate: {len(got)} board rows match quantity {quantity!r} with condition "
            f"{condition!r} (want one); the shipped board data changed"
        )
    return got[0]


_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e-?\d+)?")


def numbers(text: str) -> list[float]:
    """The numbers in a value cell (thousands commas allowed).

    Examples:
        >>> numbers("~1.73 / 1.85"), numbers("[3558, 322]"), numbers("33,358")
        ([1.73, 1.85], [3558.0, 322.0], [33358.0])
    """
    return [float(m.group(0).replace(",", "")) for m in _NUMBER.finditer(text)]


def value_of(row: BoardRow, how: str = "mean", index: int | None = None) -> float:
    """A row's value: ``mean`` of its runs, ``middle`` of a range, ``warm median``, one item.

    Raises:
        Tx8labError: the value holds fewer numbers than the reading needs (none; item
            ``index``; a cold run and a warm one for ``warm median``), naming the row.
    """
    need = 1 if index is None else index + 1
    if how == "warm median":
        need = 2
    got = numbers_of(row, need)
    if index is not None:
        return got[index]
    if how == "warm median":
        return float(statistics.median(got[1:]))
    if how == "middle":
        return (min(got) + max(got)) / 2
    return float(statistics.fmean(got))


def numbers_of(row: BoardRow, count: int, cell: str = "value") -> list[float]:
    """The numbers of a row's ``cell``, at least ``count`` of them.

    Raises:
        Tx8labError: fewer numbers; the message names the row and what the fit reads.
    """
    got = numbers(row.fields.get(cell, ""))
    if len(got) < count:
        raise Tx8labError(
            f"calibrate: {row.ref} ({row.text}) has {len(got)} number(s) in its {cell} "
            f"{row.fields.get(cell, '')!r}; the fit reads {count}: restore the row from the "
            "board data that ships with tx8lab"
        )
    return got


# ---------------------------------------------------------------------- the fit


@dataclass(frozen=True)
class Fitted:
    """One constant and where it came from."""

    field: str
    """``tile.ct_command_s`` or ``launch_s``."""
    value: float
    unit: str
    rows: tuple[str, ...]
    method: str


#: Idle NCC joins: (quantity, index of the combined value in the cell, participants).
_JOINS = (
    ("idle NCC join, worker0", None, 1),
    ("idle NCC join, 2 participants", 0, 2),
    ("idle NCC join, 3 participants", 0, 3),
)
#: Single CT commands of FP16 Add: (quantity, elements).
_CT_SINGLE = (
    ("CT execution, 4 KiB FP16 Add on worker1", 2048),
    ("SPM phase: CT execution for 256 B CT+RDMA", 128),
)
#: The TDMA counter study: (condition, commands, iterations each, inner bytes).
_TDMA_STUDY = (
    ("one GS, 1,024 iterations, inner=4 B", 1, 1024, 4),
    ("one GS, 4,096 iterations, inner=4 B", 1, 4096, 4),
    ("one GS, 16,384 iterations, inner=4 B", 1, 16384, 4),
    ("16 GS x 4,096 iterations", 16, 4096, 4),
    ("one GS, 256 KiB total, inner=1024 B", 1, 256, 1024),
)
_TDMA_ROWS = "TDMA execution counter increment (GatherScatter)"
#: Later Direct-DTE sends: (condition, bytes).
_DTE_SENDS = (("2 KiB", 2048), ("8 KiB", 8192))
_DTE_ROWS = "Direct-DTE sender prepare->issue->send-wait"
#: 8 KiB DMA then a join: (quantity, engine).
_DMA_JOINS = (("8 KiB RDMA then matching join", "rdma"), ("8 KiB WDMA then", "wdma"))
_SHORT_ROWS = ("engine execution delta for exactly D short commands", "NE x6")


def _ne_kernels(
    rows: Sequence[BoardRow],
) -> list[tuple[BoardRow, float, list[tuple[int, int, int]]]]:
    """The two kernels' NE activity: (row, NE ns per tile, (M, K, N) of each command).

    The 4096^3 GEMM's tiles compute M256/K512/N512 (64 per tile: 2 x 4096^3 / 16 tiles
    over 2 x 256 x 512 x 512); the attention's busiest tile 72 block pairs of QK
    256x128x256 and PV 256x256x128.
    """
    gemm = find_row(rows, "NE efficiency, 4096^3 GEMM tiles")
    attn = find_row(rows, "NE efficiency while active, 256x256x128 BF16 GEMM pairs")
    per_tile = round(2 * 4096**3 / 16 / (2 * 256 * 512 * 512))
    return [
        (gemm, numbers_of(gemm, 1, "condition")[-1], [(256, 512, 512)] * per_tile),
        (attn, _ne_pmu_ns(attn), [(256, 128, 256), (256, 256, 128)] * 72),
    ]


def _ne_pmu_ns(row: BoardRow) -> float:
    """The NE counter time a derived efficiency row quotes (``NE PMU 0.363456 ms``)."""
    got = re.search(r"NE PMU ([\d.]+) ms", row.fields["condition"])
    if got is None:
        raise Tx8labError(f"calibrate: {row.ref} no longer quotes 'NE PMU <ms> ms'")
    return float(got.group(1)) * 1e6


def _weighted_lstsq(a: Sequence[Sequence[float]], t: Sequence[float]) -> list[float]:
    """Least squares of ``a x = t`` on relative residuals (each row divided by its ``t``)."""
    am = np.asarray(a, dtype=float)
    tv = np.asarray(t, dtype=float)
    x, *_ = np.linalg.lstsq(am / tv[:, None], np.ones_like(tv), rcond=None)
    return [float(v) for v in x]


def fit(rows: Sequence[BoardRow], hw: ChipConfig) -> list[Fitted]:
    """Every fitted constant (module docstring); ``hw`` gives the vendor rates used."""
    out: list[Fitted] = []
    tile = hw.tile

    # kernel core: consecutive TsmExecute gaps with prebuilt packets
    r = find_row(rows, "host issue-order rdcycle between consecutive TsmExecute")
    out.append(
        Fitted(
            "tile.kcore_issue_s",
            value_of(r, "warm median") * NS,
            "s",
            (r.ref,),
            "median of the warm gaps (the first, 3558, is a cold start)",
        )
    )

    # join: a + b * participants on the idle combined joins
    joined = [(find_row(rows, q), index, p) for q, index, p in _JOINS]
    a, b = _weighted_lstsq(
        [[1.0, p] for _, _, p in joined], [value_of(r, index=i) for r, i, _ in joined]
    )
    join_rows = tuple(r.ref for r, _, _ in joined)
    method = "least squares of join_s + p x join_participant_s on the combined idle joins"
    out.append(Fitted("tile.join_s", a * 1e-6, "s", join_rows, method))
    out.append(Fitted("tile.join_participant_s", b * 1e-6, "s", join_rows, method))

    # CT: fixed cost beside the vendor vector rate, from two single-command sizes
    singles = [(find_row(rows, q), n) for q, n in _CT_SINGLE]
    # the law's time of the elements alone (its fixed term taken off)
    work = {n: laws.ct(n, 1, "f16", hw).seconds - tile.ct_command_s for _, n in singles}
    fixed = [value_of(r) - work[n] / NS for r, n in singles]
    out.append(
        Fitted(
            "tile.ct_command_s",
            statistics.fmean(fixed) * NS,
            "s",
            tuple(r.ref for r, _ in singles),
            "mean of (time - padded elements / vendor 64 GOPS) over a 4 KiB and a 256 B FP16 "
            "command",
        )
    )

    # fixed costs of NE / RDMA / WDMA: the D-command engine deltas of short payloads
    short = find_row(rows, *_SHORT_ROWS)
    ne_d, rd_d, wd_d, _td = numbers_of(short, 4)[:4]
    d = tile.queue_depth
    for name, total in (("ne", ne_d), ("rdma", rd_d), ("wdma", wd_d)):
        out.append(
            Fitted(
                f"tile.{name}_command_s",
                total / d * NS,
                "s",
                (short.ref,),
                f"engine delta of {d} short commands / {d} (payload time taken as ~0)",
            )
        )
    ne_fixed = ne_d / d * NS

    # NE fill per output block: two kernels' NE activity (derived rows); the law's terms
    # fixed + 2 M N K / rate, and 2 M N / rate per K-step of fill (all shapes are whole
    # granules, so no padding)
    kernels = _ne_kernels(rows)
    rate = tile.ne_ops_per_s("bf16")
    coef, rest = [], []
    for _, total, shapes in kernels:
        base = sum(ne_fixed / NS + 2 * m * n * k / rate / NS for m, k, n in shapes)
        per_k = sum(2 * m * n / rate / NS for m, _k, n in shapes)
        coef.append([per_k])
        rest.append(total - base)
    (fill,) = _weighted_lstsq(coef, rest)
    (gemm, gemm_ns, gemm_shapes), (attn, attn_ns, _) = kernels
    out.append(
        Fitted(
            "tile.ne_fill_k",
            fill,
            "K-steps",
            (gemm.ref, attn.ref),
            f"least squares over the 4096^3 GEMM tiles ({len(gemm_shapes)} x M256/K512/N512, "
            f"avg NE {gemm_ns:,.0f} ns) and the attention pairs (72 x QK 256x128x256 + PV "
            f"256x256x128, NE {attn_ns:,.0f} ns)",
        )
    )

    # DMA bandwidth of one tile: 8 KiB then a join, less the issue, fixed and join laws
    so_far = apply(hw, out)
    overhead = laws.issue(so_far).seconds + laws.join(1, so_far).seconds
    for quantity, engine in _DMA_JOINS:
        row = find_row(rows, quantity)
        fixed_s = getattr(so_far.tile, f"{engine}_command_s")
        rest_s = value_of(row) * 1e-6 - overhead - fixed_s
        if rest_s <= 0:
            raise Tx8labError(f"calibrate: {row.ref} leaves no time for the 8 KiB transfer")
        out.append(
            Fitted(
                f"tile.{engine}_alone_bytes_per_s",
                8192 / rest_s,
                "B/s",
                (row.ref, short.ref, *join_rows),
                "8 KiB / (measured - issue - fixed - one-participant join)",
            )
        )

    # TDMA: fixed + per iteration + stream, least squares over the counter study
    a_rows, t_rows, refs = [], [], []
    for condition, cmds, iters, inner in _TDMA_STUDY:
        row = find_row(rows, _TDMA_ROWS, condition)
        a_rows.append([cmds, cmds * iters, cmds * iters * inner])
        t_rows.append(value_of(row))
        refs.append(row.ref)
    f_td, it_td, inv_bw = _weighted_lstsq(a_rows, t_rows)
    method = "least squares of commands x fixed + iterations x per-iteration + bytes / stream"
    out.append(Fitted("tile.tdma_command_s", f_td * NS, "s", tuple(refs), method))
    out.append(Fitted("tile.tdma_iteration_s", it_td * NS, "s", tuple(refs), method))
    out.append(
        Fitted("tile.tdma_stream_bytes_per_s", 1 / (inv_bw * NS), "B/s", tuple(refs), method)
    )

    # DTE: later sends of 2 KiB and 8 KiB, beside the vendor NoC link rate
    sends = [(find_row(rows, _DTE_ROWS, c), n) for c, n in _DTE_SENDS]
    dte_refs = tuple(r.ref for r, _ in sends)
    fixed_dte = statistics.fmean(value_of(r) * 1e-6 - n / hw.noc_link_bytes_per_s for r, n in sends)
    out.append(
        Fitted(
            "dte_send_s",
            fixed_dte,
            "s",
            dte_refs,
            "mean of (time - bytes / vendor 128 GB/s NoC link) over the 2 and 8 KiB sends",
        )
    )

    launch = find_row(rows, "launch/event overhead floor")
    out.append(Fitted("launch_s", value_of(launch) * 1e-3, "s", (launch.ref,), "the row's value"))
    return out


def apply(hw: ChipConfig, fits: Sequence[Fitted]) -> ChipConfig:
    """``hw`` with the fitted constants set."""
    return hw.with_overrides({f.field: f.value for f in fits})


# ---------------------------------------------------------------------- the residual table


@dataclass(frozen=True)
class Residual:
    """One board row timed by the model."""

    ref: str
    what: str
    engine: str
    measured_ns: float
    modelled_ns: float
    how: str
    fitted: bool
    """The row informed a fitted constant (its residual is not a test of the model)."""

    @property
    def ratio(self) -> float:
        """Modelled / measured."""
        return self.modelled_ns / self.measured_ns if self.measured_ns else float("nan")


def _played(hw: ChipConfig, commands: list[SimCommand], what: str = "body") -> float:
    run = simulate({0: commands}, hw)
    if what == "body":
        return run.body_cycles / hw.clock_hz / NS
    return run.tiles[0].busy.get(what, 0) / hw.clock_hz / NS


def residuals(rows: Sequence[BoardRow], hw: ChipConfig, fits: Sequence[Fitted]) -> list[Residual]:
    """Every row the model can time, timed (``hw`` with the fit applied)."""
    used = {ref for f in fits for ref in f.rows}
    out: list[Residual] = []

    def row(r: BoardRow, engine: str, measured: float, modelled: float, how: str) -> None:
        out.append(Residual(r.ref, r.text, engine, measured, modelled, how, r.ref in used))

    def cmd(engine: str, t: laws.Timed) -> SimCommand:
        return SimCommand(engine, t.cycles(hw))

    issue = laws.issue(hw).seconds / NS
    issue_row = find_row(rows, "host issue-order rdcycle between consecutive TsmExecute")
    row(issue_row, "kcore", value_of(issue_row, "warm median"), issue, "one issue")
    envelope = find_row(rows, "short-call envelope in Kcore trace")
    row(
        envelope,
        "kcore",
        value_of(envelope, "middle"),
        issue,
        "one issue; the envelope also holds an observer and queue waits (not claimed)",
    )
    for q, n in _CT_SINGLE:
        r = find_row(rows, q)
        row(r, "ct", value_of(r), laws.ct(n, 1, "f16", hw).seconds / NS, "one CT")
    add = laws.ct(2048, 1, "f16", hw)
    for q, c, count in (
        (_SHORT_ROWS[0], "CT x6", 6),
        ("CT tight D+1 (7 commands)", "", 7),
        ("CT execution, 3 workers each 4 KiB FP16 Add", "", 3),
    ):
        r = find_row(rows, q, c)
        row(
            r,
            "ct",
            value_of(r, index=0),
            _played(hw, [cmd("ct", add)] * count, "ct"),
            f"{count} x 4 KiB FP16 Add played; CT busy",
        )
    short = find_row(rows, *_SHORT_ROWS)
    values = numbers_of(short, 4)[:4]
    shorts = {
        "ne": (laws.ne(8, 16, 8, "bf16", hw), values[0], hw.tile.queue_depth),
        "rdma": (laws.dma("rdma", 0, hw), values[1], hw.tile.queue_depth),
        "wdma": (laws.dma("wdma", 0, hw), values[2], hw.tile.queue_depth),
        "tdma": (laws.tdma(1, 4, hw), values[3], hw.tile.tdma_queue_depth),
    }
    for engine, (t, measured, count) in shorts.items():
        out.append(
            Residual(
                short.ref,
                f"{short.text} ({engine.upper()} x{count})",
                engine,
                measured,
                _played(hw, [cmd(engine, t)] * count, engine),
                f"{count} short commands played; {engine.upper()} busy",
                engine != "tdma",  # the NE / RDMA / WDMA fixed costs come from this row
            )
        )
    for q, engine in _DMA_JOINS:
        r = find_row(rows, q)
        row(
            r,
            engine,
            value_of(r) * 1e3,
            _played(hw, [cmd(engine, laws.dma(engine, 8192, hw)), cmd("join", laws.join(1, hw))]),
            "8 KiB then a one-participant join, played",
        )
    for q, index, p in _JOINS:
        r = find_row(rows, q)
        row(
            r,
            "kcore",
            value_of(r, index=index) * 1e3,
            laws.join(p, hw).seconds / NS,
            "one combined join",
        )
    for condition, cmds, iters, inner in _TDMA_STUDY:
        r = find_row(rows, _TDMA_ROWS, condition)
        row(
            r,
            "tdma",
            value_of(r),
            _played(hw, [cmd("tdma", laws.tdma(iters, inner, hw))] * cmds, "tdma"),
            f"{cmds} GS played; TDMA busy",
        )
    for condition, size in _DTE_SENDS:
        r = find_row(rows, _DTE_ROWS, condition)
        row(r, "dte", value_of(r) * 1e3, laws.dte(size, hw).seconds / NS, "one later send")
    first = find_row(rows, "Direct-DTE first sender per launch")
    row(
        first,
        "dte",
        value_of(first, "middle") * 1e3,
        laws.dte(2048, hw, first=True).seconds / NS,
        "one first send of 2 KiB (the row's range middle; preset value, not fitted)",
    )
    for r, measured, shapes in _ne_kernels(rows):
        kinds = " + ".join(sorted({f"{m}x{k}x{n}" for m, k, n in shapes}))
        row(
            r,
            "ne",
            measured,
            _played(hw, [cmd("ne", laws.ne(m, k, n, "bf16", hw)) for m, k, n in shapes], "ne"),
            f"{len(shapes)} NE commands ({kinds}) played; NE busy",
        )
    return out


def calibrate(hw: ChipConfig, directory: Path | None = None) -> tuple[list[Fitted], list[Residual]]:
    """The fit on the board rows and the residual table under it."""
    rows = read_board(directory)
    fits = fit(rows, hw)
    return fits, residuals(rows, apply(hw, fits), fits)


def to_json(fits: Sequence[Fitted]) -> dict[str, Any]:
    """The calibration file's content."""
    return {
        "about": "engine-law constants fitted by `tx8lab calibrate` on tx8lab/hw/board; "
        "regenerate with `tx8lab calibrate --write`",
        "constants": {
            f.field: {"value": f.value, "unit": f.unit, "rows": list(f.rows), "method": f.method}
            for f in fits
        },
    }


def calibration_path() -> Path:
    """The shipped calibration file."""
    return Path(str(resources.files("tx8lab.hw") / CALIBRATION_FILE))


def write_calibration(fits: Sequence[Fitted], path: Path | None = None) -> Path:
    """Write the fit (all or nothing: a temporary file renamed into place)."""
    out = path or calibration_path()
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(to_json(fits), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(out)
    return out


def table(fits: Sequence[Fitted], res: Sequence[Residual]) -> str:
    """The printed constants and residual tables."""
    lines = ["fitted constants", f"{'field':34} {'value':>14} {'unit':8} rows"]
    for f in fits:
        lines.append(f"{f.field:34} {f.value:>14.6g} {f.unit:8} {', '.join(f.rows)}")
    lines += [
        "",
        "residuals (ns; ratio = modelled / measured; * = the row informed a fit)",
        f"{'row':15} {'engine':6} {'measured':>12} {'modelled':>12} {'ratio':>7}  what",
    ]
    for r in res:
        mark = "*" if r.fitted else " "
        lines.append(
            f"{r.ref:15} {r.engine:6} {r.measured_ns:>12,.0f} {r.modelled_ns:>12,.0f} "
            f"{r.ratio:>7.3f}{mark} {r.what[:60]}"
        )
    return "\n".join(lines)


__all__ = [
    "BoardRow",
    "Fitted",
    "Residual",
    "apply",
    "board_dir",
    "calibrate",
    "calibration_path",
    "find_row",
    "fit",
    "numbers",
    "read_board",
    "residuals",
    "table",
    "to_json",
    "value_of",
    "write_calibration",
]
