"""Board kernel cases: the whole kernels of ``kernels.csv`` compiled, simulated, compared.

Spec: issue 19 ("the FA board case and the GEMM board case are reported with per-engine
ratios (all five engines, TDMA and WDMA included), whatever they turn out to be"), the
board notes of ``tx8lab/hw/board/README.md`` (metrics, engine columns, noise). Each case
builds the board kernel's graph, runs tx8lab's own default pipeline on it, builds the
:class:`~tx8lab.core.program.Program` and plays it through the tile simulator
(:func:`~tx8lab.core.simulate.simulate_program`, under the fitted laws), then sets each
figure beside the board's. Nothing is fitted on these composite figures: they are
predictions, and :func:`kernel_cases` reports them whatever they are.

A case is a :class:`KernelCase` (a name and a function of the board rows, the fitted
chip and the fit that returns :class:`KernelCaseRow` s); :func:`registered_cases` lists
them in table order, and a new case is one more entry there. :func:`engine_rows` turns a
model's per-engine busy time (keys ``ne ct rdma wdma tdma``) and a ``kernels.csv`` row
into the five engine rows, so a case that has a ``latency_ms`` / ``busy_ms`` pair (the
simulator's summary, the FlashAttention model's report) needs only a few lines.

Readings chosen where the board notes are vague:

- **The GEMM graph** is one ``MatMul`` of two bf16 runtime inputs ``[1, M, K] x [1, K, N]``
  (the board's shapes; both operands are kernel inputs, no bias), compiled by the default
  pipeline with its default knobs, except that the sharding search's and the SPM
  allocator's time budgets are raised (:data:`CASE_SEARCH_BUDGET_S`,
  :data:`CASE_ALLOC_LIMIT_S`) so every search runs to its end: the figures then do not
  depend on how loaded the machine is (with the default 2 s budget a loaded machine cut
  the 4096^3 search and changed the table), and a search that runs past its budget is
  an error rather than a silently different table.
- **Layouts.** A function's inputs and outputs are NALIGN (seed 000), so tx8lab's
  program converts both inputs to Cx and the result back with ChannelNorm groups
  around the MatMul group; the board's K = 1024 kernel reads and writes NCx directly
  (its ``layout`` column), the 4096^3 row does not say. The rank-3 operands have no Cx
  (Cx needs rank 2 or 4, seed 000), so the MatMul runs on ``[1, 1, M, K]`` views whose
  Reshapes (compact, no byte moves) ride in those ChannelNorm groups. The whole program is compared;
  the K = 1024 case also gives the MatMul group's own span (first issue to last end on
  its slowest tile).
- **Which board figure is the kernel body.** ``kernel_main_entry_longest_tile_ms`` is the
  kernel body (the longest tile's main entry) and is compared with the simulator's body.
  ``profile_primary_event_ms`` is a stream event that adds launch, dispatch and
  completion: it is compared with the simulated body plus the launch overhead the
  simulator reports apart (``launch_s``, ``micro.csv`` "launch/event overhead floor").
  Memory guards add 0.2-0.4 ms on the board; the model has none, so the guards-OFF row is
  the like-for-like one and the guards-ON row is reported too.
- **Engines.** The board's engine columns are each engine's per-tile maximum activity
  over the 16 tiles; the model's is the busiest tile's busy time of that engine
  (:meth:`~tx8lab.hw.sim.SimResult.busy_ms`). A cell written ``2.680996 (Tile 0)`` is its
  first number.
- **Rows a fit used.** The NE law's fill constant comes partly from ``micro.csv`` "NE
  efficiency, 4096^3 GEMM tiles", which is derived from the same 4096^3 profile's NE
  counters; that case's NE rows are marked fitted (their ratio is partly the fit), as
  the residual table marks its rows.
"""

from __future__ import annotations

import math
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tx8lab.core.builder import Builder
from tx8lab.core.ir import Module
from tx8lab.core.passes import build_pipeline
from tx8lab.core.program import Program, build_program
from tx8lab.core.runner import run_pipeline
from tx8lab.core.simulate import group_ms, simulate_program
from tx8lab.errors import Tx8labError
from tx8lab.hw.calibrate import BoardRow, Fitted, apply, find_row, fit, numbers, read_board
from tx8lab.hw.config import ChipConfig
from tx8lab.hw.sim import SimResult

#: The board's engine columns, in table order (``<engine>_ms`` in ``kernels.csv``).
BOARD_ENGINES: tuple[str, ...] = ("ne", "ct", "rdma", "wdma", "tdma")

#: The sharding search's time budget per group in a compiled case: far above what the
#: board cases' searches take (about 1 s), so each runs to its end (module docstring).
CASE_SEARCH_BUDGET_S = 300.0
#: The SPM allocator's time limit per group in a compiled case, likewise raised.
CASE_ALLOC_LIMIT_S = 60.0


@dataclass(frozen=True)
class KernelCaseRow:
    """One figure of a board kernel case: measured on the board, modelled by tx8lab."""

    case: str
    """The case (``single-card-gemm-4096 guards OFF``)."""
    quantity: str
    """``event``, ``kernel body``, ``kernel body (MatMul group)`` or an engine of
    :data:`BOARD_ENGINES`."""
    measured_ms: float
    modelled_ms: float
    ref: str
    """The board row: ``kernels.csv:3``."""
    what: str
    """How the modelled figure was obtained and what the board's means."""
    fitted: bool = False
    """A fitted constant came from a row derived from this measurement."""

    @property
    def ratio(self) -> float:
        """Modelled / measured (NaN when nothing was measured)."""
        return self.modelled_ms / self.measured_ms if self.measured_ms else float("nan")

    def to_json(self) -> dict[str, Any]:
        """The row as the ``calibrate --json`` report writes it."""
        return {
            "case": self.case,
            "quantity": self.quantity,
            "row": self.ref,
            "measured_ms": self.measured_ms,
            "modelled_ms": self.modelled_ms,
            "ratio": self.ratio,
            "fitted": self.fitted,
            "what": self.what,
        }


#: A case's rows from the board rows, the fitted chip and the fit.
CaseRows = Callable[[Sequence[BoardRow], ChipConfig, Sequence[Fitted]], list[KernelCaseRow]]


@dataclass(frozen=True)
class KernelCase:
    """A board kernel the model times: its name and the function that gives its rows."""

    name: str
    rows: CaseRows


# ---------------------------------------------------------------------- board cells


def find_kernel_row(rows: Sequence[BoardRow], workload: str, schedule: str = "") -> BoardRow:
    """The one ``kernels.csv`` row of ``workload`` whose schedule holds ``schedule``.

    Raises:
        Tx8labError: none or several match; the message names what was looked for.
    """
    got = [
        r
        for r in rows
        if r.file == "kernels.csv"
        and r.fields.get("workload") == workload
        and schedule in r.fields.get("schedule", "")
    ]
    if len(got) != 1:
        raise Tx8labError(
            f"board cases: {len(got)} kernels.csv rows have workload {workload!r} and a "
            f"schedule holding {schedule!r} (want one); the shipped board data changed"
        )
    return got[0]


def board_ms(row: BoardRow, column: str) -> float:
    """The first number of a ``kernels.csv`` cell, in ms (``2.680996 (Tile 0)`` -> 2.680996).

    Raises:
        Tx8labError: the column is missing or holds no number (names the row and column).
    """
    if column not in row.fields:
        raise Tx8labError(f"board cases: {row.file} has no column {column!r} ({row.ref})")
    got = numbers(row.fields[column])
    if not got:
        raise Tx8labError(
            f"board cases: {row.ref} ({row.fields.get('workload')}) has no number in column "
            f"{column!r}: {row.fields[column]!r}"
        )
    return got[0]


def _metric(row: BoardRow, metric: str) -> float:
    """The row's ``value_ms``, checked to be ``metric`` (the body/event choice rests on it)."""
    if row.fields.get("metric") != metric:
        raise Tx8labError(
            f"board cases: {row.ref} measures {row.fields.get('metric')!r}, expected {metric!r}"
        )
    return board_ms(row, "value_ms")


def informed_fit(rows: Sequence[BoardRow], fits: Sequence[Fitted], quantity: str) -> bool:
    """Whether the ``micro.csv`` row ``quantity`` informed one of the fitted constants."""
    ref = find_row(rows, quantity).ref
    return any(ref in f.rows for f in fits)


def engine_rows(
    case: str,
    board: BoardRow,
    busy_ms: Mapping[str, float],
    *,
    what: str,
    fitted: Sequence[str] = (),
) -> list[KernelCaseRow]:
    """The five engine rows of a case: ``busy_ms[engine]`` against the board's engine column.

    ``busy_ms`` holds the model's busiest-tile busy time per engine (keys
    :data:`BOARD_ENGINES`; more keys are ignored), ``fitted`` the engines whose
    measurement informed a fitted constant.

    Raises:
        Tx8labError: an engine missing from ``busy_ms`` or from the board row.
    """
    missing = [e for e in BOARD_ENGINES if e not in busy_ms]
    if missing:
        raise Tx8labError(
            f"board cases: {case}: the model's busy_ms has no {', '.join(missing)} "
            f"(keys {', '.join(BOARD_ENGINES)} are needed)"
        )
    return [
        KernelCaseRow(
            case,
            e,
            board_ms(board, f"{e}_ms"),
            float(busy_ms[e]),
            board.ref,
            f"{what}; board: per-tile maximum"
            + ("" if busy_ms[e] else f"; the model issues no {e.upper()} command here"),
            e in fitted,
        )
        for e in BOARD_ENGINES
    ]


# ---------------------------------------------------------------------- compiling a case


@dataclass(frozen=True)
class Compiled:
    """A graph through the default pipeline, its program and the simulator's run."""

    module: Module
    """The module after the last pass."""
    program: Program
    result: SimResult
    compile_s: float
    """Wall time of the pipeline, the program and the simulation (reported, not compared)."""

    def group_ms(self) -> Mapping[int, float]:
        """Group id -> its span on its slowest tile, ms."""
        return group_ms(self.program, self.result)

    def group_kinds(self) -> dict[int, tuple[str, ...]]:
        """Group id -> the kinds of its compute ops (``tx8be.`` dropped)."""
        out: dict[int, tuple[str, ...]] = {}
        for op in self.module.main.ops:
            if op.kind == "tx8be.Group":
                out[op.id] = tuple(
                    o.kind.removeprefix("tx8be.")
                    for o in op.regions[0].ops
                    if o.kind not in ("tx8be.LoadVar", "tx8be.StoreVar", "tx8be.Return")
                )
        return out


def gemm_module(m: int, k: int, n: int, dtype: str = "bf16") -> Module:
    """``[1, M, K] x [1, K, N]`` as one MatMul of two inputs (the board's GEMM shapes).

    Examples:
        >>> gemm_module(64, 32, 16).main.outputs[0].type
        TensorType(shape=(1, 64, 16), dtype='bf16')
    """
    for name, value in (("M", m), ("K", k), ("N", n)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise Tx8labError(
                f"board cases: GEMM {name} must be a whole number >= 1, got {value!r}"
            )
    b = Builder(**{"tx8.model": f"gemm_{m}x{k}x{n}_{dtype}"})
    a = b.input((1, m, k), dtype)
    w = b.input((1, k, n), dtype)
    b.output(b.op("MatMul", a, w))
    return b.finish()


def compile_and_simulate(
    module: Module, hw: ChipConfig, *, search_budget_s: float = CASE_SEARCH_BUDGET_S
) -> Compiled:
    """The default pipeline (budgets raised, module docstring), the Program, its simulation.

    Raises:
        Tx8labError: a group's search ran past ``search_budget_s`` (so the budget may have
            cut it and the result would depend on the machine's load), or a pipeline error.
    """
    start = time.perf_counter()
    knobs = [
        f"group-cost.search_budget_s={search_budget_s}",
        f"group-cost.alloc_time_limit_s={CASE_ALLOC_LIMIT_S}",
    ]
    steps = list(run_pipeline(module, build_pipeline(None, knobs), hw, instruments=[]))
    final = steps[-1].after
    for step in steps:
        if step.name != "group-cost":
            continue
        cut = {g: s.time_s for g, s in step.result.artifacts["searches"].items()}
        cut = {g: t for g, t in cut.items() if t > search_budget_s}
        if cut:
            raise Tx8labError(
                f"board cases: the sharding search of groups {sorted(cut)} ran past its budget "
                f"of {search_budget_s:g} s (search_budget_s), so it may have been cut and the "
                "figures would depend on the machine's load; raise the budget"
            )
    program = build_program(final, hw)
    result = simulate_program(program, final, hw)
    return Compiled(final, program, result, time.perf_counter() - start)


def _groups_text(done: Compiled) -> str:
    """``group spans ChannelNorm 0.272, MatMul 4.388, ...`` (ms, program order).

    A span runs from the group's first issue to its last end on its slowest tile; spans
    of consecutive groups may overlap, so they need not add up to the body.
    """
    spans = done.group_ms()
    kinds = done.group_kinds()
    return "group spans " + ", ".join(
        f"{'/'.join(kinds.get(g, ('?',)))} {spans[g]:.3f}"
        for g in done.program.groups
        if g in spans
    )


# ---------------------------------------------------------------------- the cases

_GEMM_4096 = "single-card-gemm-4096"
_GEMM_K1024 = "single-card-gemm-m4096-k1024-n4096-ncx"
_NE_GEMM_4096 = "NE efficiency, 4096^3 GEMM tiles"
_ATTENTION = "attention-prefill-28-heads-2048"
_NE_ATTENTION = "NE efficiency while active, 256x256x128 BF16 GEMM pairs"


def _gemm_4096(
    rows: Sequence[BoardRow], hw: ChipConfig, fits: Sequence[Fitted]
) -> list[KernelCaseRow]:
    """BF16 4096^3 GEMM, guards OFF then ON: the event and the five engines each."""
    done = compile_and_simulate(gemm_module(4096, 4096, 4096), hw)
    summary = done.result.summary()
    body, launch = summary["latency_ms"], summary["launch_ms"]
    ne_fitted = ("ne",) if informed_fit(rows, fits, _NE_GEMM_4096) else ()
    launch_ref = find_row(rows, "launch/event overhead floor").ref
    out: list[KernelCaseRow] = []
    for guards in ("guards OFF", "guards ON"):
        board = find_kernel_row(rows, _GEMM_4096, guards)
        case = f"{_GEMM_4096} {guards}"
        out.append(
            KernelCaseRow(
                case,
                "event",
                _metric(board, "profile_primary_event_ms"),
                body + launch,
                board.ref,
                f"body {body:.3f} ({_groups_text(done)}) + launch {launch:.3f} ({launch_ref}); "
                f"board: primary event{'' if guards == 'guards OFF' else ', memory guards on'}",
            )
        )
        out += engine_rows(
            case,
            board,
            summary["busy_ms"],
            what="busiest tile's busy time of the engine in the simulated program",
            fitted=ne_fitted,
        )
    return out


def _gemm_k1024(
    rows: Sequence[BoardRow], hw: ChipConfig, fits: Sequence[Fitted]
) -> list[KernelCaseRow]:
    """BF16 M = N = 4096, K = 1024: the kernel body, whole program and MatMul group."""
    del fits  # no fitted constant comes from this kernel
    board = find_kernel_row(rows, _GEMM_K1024)
    measured = _metric(board, "kernel_main_entry_longest_tile_ms")
    done = compile_and_simulate(gemm_module(4096, 1024, 4096), hw)
    spans = done.group_ms()
    kinds = done.group_kinds()
    matmul = [g for g in done.program.groups if "MatMul" in kinds.get(g, ()) and g in spans]
    if len(matmul) != 1:
        raise Tx8labError(f"board cases: {_GEMM_K1024}: {len(matmul)} MatMul groups (want one)")
    body = done.result.summary()["latency_ms"]
    return [
        KernelCaseRow(
            _GEMM_K1024,
            "kernel body",
            measured,
            body,
            board.ref,
            f"simulated body, Tensor I/O ({_groups_text(done)}); board: main entry, "
            "longest tile, NCx I/O",
        ),
        KernelCaseRow(
            _GEMM_K1024,
            "kernel body (MatMul group)",
            measured,
            spans[matmul[0]],
            board.ref,
            "the MatMul group's span alone (no layout groups); board: main entry, longest tile",
        ),
    ]


def _attention(
    rows: Sequence[BoardRow], hw: ChipConfig, fits: Sequence[Fitted]
) -> list[KernelCaseRow]:
    """BF16 causal FA prefill [1,28,2048,128], the board's tiling: event and five engines.

    The FlashAttention model (``tx8lab.kernels.flash_attention.timeline``) at
    ``board_config()`` (256x256 blocks, whole heads per tile, no cube double issue, the
    accumulator kept NCx), its per-tile command streams played by the simulator.
    """
    from tx8lab.kernels.flash_attention.timeline import board_config, model

    board = find_kernel_row(rows, _ATTENTION)
    got = model(board_config(), hw)
    launch = hw.launch_s * 1e3
    launch_ref = find_row(rows, "launch/event overhead floor").ref
    ne_fitted = ("ne",) if informed_fit(rows, fits, _NE_ATTENTION) else ()
    return [
        KernelCaseRow(
            _ATTENTION,
            "event",
            _metric(board, "profile_primary_event_ms"),
            got.latency_ms + launch,
            board.ref,
            f"FA model body {got.latency_ms:.3f} (slowest tile of {len(got.tile_ms)}) + "
            f"launch {launch:.3f} ({launch_ref}); board: primary event",
        ),
        *engine_rows(
            _ATTENTION,
            board,
            got.busy_ms,
            what="busiest tile's busy time in the FA model's simulated streams",
            fitted=ne_fitted,
        ),
    ]


def registered_cases() -> tuple[KernelCase, ...]:
    """Every board kernel case, in table order.

    A new case is one more entry here: a function of ``(board rows, fitted chip, fit)``
    returning its :class:`KernelCaseRow` s.
    """
    return (
        KernelCase(_GEMM_4096, _gemm_4096),
        KernelCase(_GEMM_K1024, _gemm_k1024),
        KernelCase(_ATTENTION, _attention),
    )


def case_rows(
    rows: Sequence[BoardRow],
    hw: ChipConfig,
    fits: Sequence[Fitted],
    cases: Sequence[KernelCase] | None = None,
) -> list[KernelCaseRow]:
    """Every case's rows; ``hw`` is the chip with the fit applied."""
    out: list[KernelCaseRow] = []
    for case in registered_cases() if cases is None else cases:
        out += case.rows(rows, hw, fits)
    return out


def kernel_cases(hw: ChipConfig, directory: Path | None = None) -> list[KernelCaseRow]:
    """Fit on the board rows (as ``tx8lab calibrate``), then time every registered case."""
    rows = read_board(directory)
    fits = fit(rows, hw)
    return case_rows(rows, apply(hw, fits), fits)


def table(rows: Sequence[KernelCaseRow]) -> str:
    """The printed kernel-case table (``tx8lab calibrate``, the README), then how each was got.

    The notes under the table give each distinct ``what`` once, with the rows it explains.
    """
    lines = [
        "kernel cases (ms; ratio = modelled / measured; * = a fitted constant came from "
        "this measurement)",
        f"{'row':13} {'case':38} {'quantity':26} {'measured':>9} {'modelled':>9} {'ratio':>7}",
    ]
    notes: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        ratio = f"{r.ratio:>7.3f}" if math.isfinite(r.ratio) else f"{'-':>7}"
        lines.append(
            f"{r.ref:13} {r.case:38} {r.quantity:26} {r.measured_ms:>9.3f} "
            f"{r.modelled_ms:>9.3f} {ratio}{'*' if r.fitted else ''}"
        )
        notes.setdefault(r.what, {}).setdefault(r.ref, []).append(r.quantity)
    lines.append("how:")
    for what, where in notes.items():
        text = ", ".join(f"{ref} {'/'.join(quantities)}" for ref, quantities in where.items())
        lines += textwrap.wrap(
            f"{text}: {what}", 100, initial_indent="  ", subsequent_indent="    "
        )
    return "\n".join(lines)


__all__ = [
    "BOARD_ENGINES",
    "CASE_ALLOC_LIMIT_S",
    "CASE_SEARCH_BUDGET_S",
    "CaseRows",
    "Compiled",
    "KernelCase",
    "KernelCaseRow",
    "board_ms",
    "case_rows",
    "compile_and_simulate",
    "engine_rows",
    "find_kernel_row",
    "gemm_module",
    "informed_fit",
    "kernel_cases",
    "registered_cases",
    "table",
]
