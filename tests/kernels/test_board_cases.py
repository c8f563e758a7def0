"""Board kernel cases: the GEMM kernels compiled, played and set beside the board's figures.

Oracles: the board files read independently with ``csv`` (the measured side), the NE law
worked by hand over a small program's own NE commands (the modelled side), and structural
facts (every engine of both 4096^3 rows, finite ratios, the one fitted engine). The
README must show the table the code prints.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from tx8lab.errors import Tx8labError
from tx8lab.hw.calibrate import BoardRow, apply, board_dir, fit, read_board
from tx8lab.hw.presets import TX81
from tx8lab.kernels.board_cases import (
    BOARD_ENGINES,
    KernelCaseRow,
    board_ms,
    case_rows,
    compile_and_simulate,
    engine_rows,
    find_kernel_row,
    gemm_module,
    registered_cases,
    table,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows() -> list[KernelCaseRow]:
    board = read_board()
    fits = fit(board, TX81)
    return case_rows(board, apply(TX81, fits), fits)


def _kernels_csv() -> list[dict[str, str]]:
    with (board_dir() / "kernels.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_every_engine_of_both_gemm_4096_rows_is_reported(rows: list[KernelCaseRow]) -> None:
    for guards in ("guards OFF", "guards ON"):
        mine = [r for r in rows if r.case == f"single-card-gemm-4096 {guards}"]
        assert [r.quantity for r in mine] == ["event", *BOARD_ENGINES]
        assert all(math.isfinite(r.ratio) and r.modelled_ms >= 0 for r in mine)
        # the whole 4096^3 GEMM takes NE time and moves data both ways
        engines = {r.quantity: r.modelled_ms for r in mine}
        assert min(engines["ne"], engines["rdma"], engines["wdma"]) > 0
    k1024 = [r for r in rows if r.case == "single-card-gemm-m4096-k1024-n4096-ncx"]
    assert [r.quantity for r in k1024] == ["kernel body", "kernel body (MatMul group)"]
    # the MatMul group is part of the body
    assert 0 < k1024[1].modelled_ms < k1024[0].modelled_ms


def test_measured_figures_are_the_board_cells(rows: list[KernelCaseRow]) -> None:
    board = _kernels_csv()
    for r in rows:
        cells = board[int(r.ref.split(":")[1]) - 2]
        column = f"{r.quantity}_ms" if r.quantity in BOARD_ENGINES else "value_ms"
        assert r.measured_ms == float(cells[column].split()[0]), (r.ref, r.quantity)
    # the event rows are the primary events (launch included), the K=1024 row the body
    metrics = {r.quantity: board[int(r.ref.split(":")[1]) - 2]["metric"] for r in rows}
    assert metrics["event"] == "profile_primary_event_ms"
    assert metrics["kernel body"] == "kernel_main_entry_longest_tile_ms"


def test_the_event_adds_the_launch_to_one_simulated_body(rows: list[KernelCaseRow]) -> None:
    off, on = (r for r in rows if r.quantity == "event" and r.case.startswith("single-card"))
    assert off.modelled_ms == on.modelled_ms  # one compiled program, guards are the board's
    launch_ms = apply(TX81, fit(read_board(), TX81)).launch_s * 1e3
    assert off.modelled_ms > launch_ms
    assert f"launch {launch_ms:.3f}" in off.what


def test_only_the_ne_rows_of_the_4096_gemm_and_the_attention_rest_on_a_fit(
    rows: list[KernelCaseRow],
) -> None:
    # micro.csv "NE efficiency, 4096^3 GEMM tiles" and "... 256x256x128 BF16 GEMM pairs"
    # (derived from these two profiles) inform the NE fill constant; nothing else of these
    # kernels was fitted on
    fitted = {(r.case, r.quantity) for r in rows if r.fitted}
    assert fitted == {
        ("single-card-gemm-4096 guards OFF", "ne"),
        ("single-card-gemm-4096 guards ON", "ne"),
        ("attention-prefill-28-heads-2048", "ne"),
    }


def test_the_attention_case_is_the_fa_model_at_the_board_tiling(
    rows: list[KernelCaseRow],
) -> None:
    from tx8lab.kernels.flash_attention.timeline import board_config, model

    mine = {r.quantity: r for r in rows if r.case == "attention-prefill-28-heads-2048"}
    assert set(mine) == {"event", "ne", "ct", "rdma", "wdma", "tdma"}
    # measured: the kernels.csv attention row, read here by hand
    assert (mine["event"].measured_ms, mine["tdma"].measured_ms) == (3.897, 0.885470)
    hw = apply(TX81, fit(read_board(), TX81))
    got = model(board_config(), hw)
    assert mine["event"].modelled_ms == pytest.approx(got.latency_ms + hw.launch_s * 1e3)
    for engine in ("ne", "ct", "rdma", "wdma", "tdma"):
        assert mine[engine].modelled_ms == got.busy_ms[engine]
        assert mine[engine].modelled_ms > 0  # every engine is modelled, TDMA included


def test_the_readme_shows_the_current_kernel_case_table(rows: list[KernelCaseRow]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert table(rows) in readme, "regenerate the README kernel-case table from tx8lab calibrate"


def test_ne_busy_is_the_ne_law_over_the_programs_commands() -> None:
    # by hand: NE law = ne_command_s + 2 * pad(M,8) * pad(N,8) * (pad(K,16) + fill) / 8 TOPS
    done = compile_and_simulate(gemm_module(256, 512, 256), TX81)
    tile = TX81.tile
    per_tile = {}
    for t, commands in done.program.tiles.items():
        cycles = 0
        for c in commands:
            if c.engine != "ne":
                continue
            *_, (m0, m1), (n0, n1), (k0, k1) = c.box  # (batch dims, M, N, K) iteration box
            m, n, k = (
                -(-(hi - lo) // g) * g
                for (lo, hi), g in zip(((m0, m1), (n0, n1), (k0, k1)), (8, 8, 16), strict=True)
            )
            s = tile.ne_command_s + 2 * m * n * (k + tile.ne_fill_k) / 8e12
            cycles += math.ceil(s * TX81.clock_hz - 1e-9)
        per_tile[t] = cycles
    assert max(per_tile.values()) > 0
    busiest = max(per_tile.values()) / TX81.clock_hz * 1e3
    assert done.result.busy_ms()["ne"] == pytest.approx(busiest, rel=1e-9)


def test_engine_rows_take_the_five_engines_of_a_model() -> None:
    board = find_kernel_row(read_board(), "attention-prefill-28-heads-2048")
    busy = {"ne": 0.5, "ct": 1.0, "rdma": 0.25, "wdma": 0.0, "tdma": 2.0, "dte": 9.0}
    got = engine_rows("fa", board, busy, what="FA model", fitted=("ne",))
    assert [r.quantity for r in got] == list(BOARD_ENGINES)
    # attention row: NE 0.363568, CT 1.127309, RDMA 0.387578, WDMA 0.033470, TDMA 0.885470
    assert [round(r.ratio, 4) for r in got] == [
        round(0.5 / 0.363568, 4),
        round(1.0 / 1.127309, 4),
        round(0.25 / 0.387578, 4),
        0.0,
        round(2.0 / 0.885470, 4),
    ]
    assert [r.fitted for r in got] == [True, False, False, False, False]
    assert "no WDMA command" in got[3].what
    with pytest.raises(Tx8labError, match="busy_ms has no tdma"):
        engine_rows("fa", board, {e: 1.0 for e in BOARD_ENGINES[:-1]}, what="")


def test_bad_board_cells_and_lookups_are_clear_errors() -> None:
    row = BoardRow("kernels.csv", 9, {"workload": "w", "ne_ms": "", "metric": "m"})
    with pytest.raises(Tx8labError, match=r"kernels\.csv:9 \(w\) has no number in column 'ne_ms'"):
        board_ms(row, "ne_ms")
    with pytest.raises(Tx8labError, match="has no column 'tdma_ms'"):
        board_ms(row, "tdma_ms")
    with pytest.raises(Tx8labError, match=r"0 kernels\.csv rows have workload 'no-such'"):
        find_kernel_row(read_board(), "no-such")
    with pytest.raises(Tx8labError, match=r"2 kernels\.csv rows have workload"):
        find_kernel_row(read_board(), "single-card-gemm-4096")
    with pytest.raises(Tx8labError, match="GEMM K must be a whole number"):
        gemm_module(64, 0, 64)


def test_a_search_past_its_budget_is_an_error_not_another_table() -> None:
    with pytest.raises(Tx8labError, match="ran past its budget of 0 s"):
        compile_and_simulate(gemm_module(512, 512, 512), TX81, search_budget_s=0.0)


def test_cases_are_registered_in_one_place() -> None:
    names = [c.name for c in registered_cases()]
    assert names == [
        "single-card-gemm-4096",
        "single-card-gemm-m4096-k1024-n4096-ncx",
        "attention-prefill-28-heads-2048",
    ]
    # a case list can be given: none gives no rows
    board = read_board()
    assert case_rows(board, TX81, fit(board, TX81), cases=()) == []
