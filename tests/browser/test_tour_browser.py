"""The tour in a real browser: JupyterLab 4, headless Debian Chromium, driven by Playwright.

Spec: the tour notebook must run in a real browser, as on Binder. Starts JupyterLab on a free
localhost port with a random token, opens a copy of ``notebooks/00_tour.ipynb``, runs all
cells and checks:

- no cell errored, and every code cell ran;
- the small CNN's graph view shows the expected number of SVG nodes (the same graph
  built in this process: ``GraphView.from_steps`` of the default pipeline);
- moving the pass stepper's slider (the keyboard on its handle, as a user would) changes
  the pass the stepper shows (its header, written back by the kernel);
- picking ``group → strategy = hdfg`` in the knob panel redraws the CNN graph with the
  node count of the HDFG grouping (and setting it back restores it); the time from the
  click to the redrawn graph is printed.

Screenshots go to ``test-output/browser/`` (gitignored; the paths are printed):
``tour.png`` (the graph view), ``tour-stepper.png``, and ``tour-failure.png`` when a check
fails.

Readings chosen:

- Playwright's Python package drives the **system** Chromium (``executable_path``): no
  browser is ever downloaded. ``make test`` installs Debian's ``chromium`` when it runs
  as root (``make sysdeps``); ``TX8LAB_CHROMIUM`` names another binary.
- Missing Chromium or Playwright skips with the reason, except under
  ``TX8LAB_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where it fails: CI must not lose
  this test silently.
- The notebook is a copy in a temporary root, so JupyterLab's autosave never writes
  outputs into the repository; settings and workspaces are temporary too (no news
  pop-up, windowing off so every cell is in the DOM).
- ``window.jupyterapp`` (``LabApp.expose_app_in_browser``) gives the notebook model, so
  "every cell ran" and "no error output" are read from the model, not guessed from
  the DOM; the kernel's ``idle`` status is waited for before and after running.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.ui

REPO = Path(__file__).resolve().parents[2]
TOUR = REPO / "notebooks" / "00_tour.ipynb"
OUTPUT = REPO / "test-output" / "browser"
REQUIRE_ENV = "TX8LAB_REQUIRE_BROWSER"
INSTALL_HINT = (
    "run `make test` as root (it installs Debian's chromium) or `apt-get install chromium`, "
    "and `pip install -e '.[dev]'` for playwright; TX8LAB_CHROMIUM names another binary"
)

# Source prefixes that find the tour's cells (the tour keeps these lines).
CNN_VIEW_CELL = "cnn_view = GraphView"
STEPPER_CELL = "stepper = PassStepper"
PANEL_CELL = "panel = KnobPanel"

SERVER_START_S = 90
PAGE_READY_MS = 90_000
RUN_ALL_MS = 150_000
REDRAW_MS = 30_000

# JupyterLab user settings: no news/update pop-up; every cell stays in the DOM.
SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}

_KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!w || !w.context || !w.context.isReady || !w.sessionContext) return false;
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  return !!kernel && kernel.status === 'idle';
}"""

# Every code cell ran, or one errored (run-all stops there); and the kernel is idle.
_ALL_RAN = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const cells = w.content.model.cells;
  let ran = true;
  let errored = false;
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    if (!c.executionCount) ran = false;
    if (c.outputs.toJSON().some((o) => o.output_type === 'error')) errored = true;
  }
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  return !!kernel && kernel.status === 'idle' && (ran || errored);
}"""

_CELLS = """() => {
  const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
  const out = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    out.push({
      index: i,
      type: c.type,
      source: c.sharedModel.getSource(),
      count: c.type === 'code' ? c.executionCount : null,
      outputs: c.type === 'code' ? c.outputs.toJSON() : [],
    });
  }
  return out;
}"""


@dataclass
class Lab:
    """A running JupyterLab server."""

    url: str
    token: str
    log: Path


def _require(reason: str) -> None:
    """Skip with ``reason``, or fail when CI requires the browser test."""
    message = f"browser test cannot run: {reason}. Fix: {INSTALL_HINT}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_ENV}=1 makes this an error)")
    pytest.skip(message)


def find_chromium() -> str | None:
    """The Chromium binary: ``$TX8LAB_CHROMIUM``, else Debian's ``chromium``."""
    named = os.environ.get("TX8LAB_CHROMIUM")
    if named:
        return named if Path(named).is_file() else None
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    fallback = Path("/usr/lib/chromium/chromium")
    return str(fallback) if fallback.is_file() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _log_tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


@pytest.fixture(scope="module")
def chromium() -> str:
    """Path of the system Chromium (skip/fail as :func:`_require` says when missing)."""
    path = find_chromium()
    if path is None:
        named = os.environ.get("TX8LAB_CHROMIUM")
        _require(
            f"TX8LAB_CHROMIUM={named} is not a file"
            if named
            else "Debian's chromium is not installed"
        )
    assert path is not None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _require("the playwright package is not installed (the [dev] extra)")
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, chromium: str) -> Iterator[Lab]:
    """JupyterLab on a free port, serving a temporary copy of the tour."""
    del chromium  # only checked first, so a missing browser does not start a server
    base = tmp_path_factory.mktemp("lab")
    root = base / "root"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(TOUR, root / "notebooks" / TOUR.name)
    settings = base / "settings"
    for name, values in SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values), encoding="utf-8")
    token = secrets.token_hex(16)
    port = _free_port()
    log = base / "server.log"
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        PYTHONUNBUFFERED="1",
    )
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.allow_root=True",
        "--LabApp.expose_app_in_browser=True",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={base / 'workspaces'}",
    ]
    with log.open("w") as out:
        server = subprocess.Popen(
            command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited with {server.returncode}:\n{_log_tail(log)}")
            try:
                request = urllib.request.Request(
                    f"{url}/api/status", headers={"Authorization": f"token {token}"}
                )
                with urllib.request.urlopen(request, timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(
                        f"JupyterLab did not answer on {url} in {SERVER_START_S} s:\n"
                        f"{_log_tail(log)}"
                    )
                time.sleep(0.3)
        yield Lab(url, token, log)
    finally:
        _stop(server)


def _stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server (it shuts its kernels down), then its process group if needed."""
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=5)


def _expected_nodes() -> dict[str, int]:
    """SVG nodes of the tour's CNN graph, for each group strategy, built here."""
    from tx8lab.core import zoo
    from tx8lab.core.runner import Explorer
    from tx8lab.hw import get_preset
    from tx8lab.widgets import GraphView
    from tx8lab.widgets.render import svg_node_ids

    explorer = Explorer(zoo.tiny_cnn(), hw=get_preset("tx81"))
    out = {}
    for strategy in ("pattern", "hdfg"):
        explorer.set_knob("group.strategy", strategy)
        out[strategy] = len(svg_node_ids(GraphView.from_steps(explorer.steps).svg))
    return out


def _cell_index(cells: list[dict[str, Any]], prefix: str) -> int:
    for cell in cells:
        if cell["type"] == "code" and cell["source"].lstrip().startswith(prefix):
            return int(cell["index"])
    raise AssertionError(f"the tour has no code cell starting with {prefix!r}")


def _shown_pass(cell: Any) -> str:
    """The pass named in the stepper header (``step 9/14: group``)."""
    text = cell.locator(".widget-html-content").first.inner_text()
    match = re.search(r"step \d+/\d+: (\S+)", text)
    assert match, f"no 'step n/N: pass' header in the stepper: {text[:200]!r}"
    return match.group(1)


@pytest.mark.timeout(300)
def test_tour_runs_in_jupyterlab(
    lab: Lab, chromium: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from playwright.sync_api import sync_playwright

    started = time.perf_counter()
    expected = _expected_nodes()
    OUTPUT.mkdir(parents=True, exist_ok=True)
    shot = OUTPUT / "tour.png"
    stepper_shot = OUTPUT / "tour-stepper.png"
    figures: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        console_errors: list[str] = []
        page.on("pageerror", lambda error: console_errors.append(str(error)))
        try:
            page.goto(
                f"{lab.url}/lab/tree/notebooks/{TOUR.name}?token={lab.token}",
                timeout=PAGE_READY_MS,
            )
            page.wait_for_function(_KERNEL_IDLE, timeout=PAGE_READY_MS, polling=250)
            figures["page and kernel ready s"] = time.perf_counter() - started

            # run all cells; wait until each code cell has run and the kernel is idle
            run_start = time.perf_counter()
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            page.wait_for_function(_ALL_RAN, timeout=RUN_ALL_MS, polling=250)
            figures["run all cells s"] = time.perf_counter() - run_start
            cells = page.evaluate(_CELLS)
            errors = [
                f"cell {c['index']}: {o.get('ename')}: {o.get('evalue')}"
                for c in cells
                for o in c["outputs"]
                if o.get("output_type") == "error"
            ]
            assert not errors, "cells errored in the browser:\n" + "\n".join(errors)
            assert all(c["count"] for c in cells if c["type"] == "code")
            dom = page.locator(".jp-Notebook .jp-Cell")
            assert dom.count() == len(cells)

            # the CNN graph view: node count as built in Python
            graph_cell = dom.nth(_cell_index(cells, CNN_VIEW_CELL))
            nodes = graph_cell.locator(".tx8-graph svg g.node")
            _wait_count(page, nodes, expected["pattern"])
            assert nodes.count() == expected["pattern"]

            # the pass stepper: the keyboard moves the slider, the kernel answers
            stepper_cell = dom.nth(_cell_index(cells, STEPPER_CELL))
            first = _shown_pass(stepper_cell)
            readout = stepper_cell.locator(".widget-readout").first
            label = readout.inner_text()
            stepper_cell.locator(".noUi-handle").first.focus()
            page.keyboard.press("ArrowRight")
            page.wait_for_function(
                "([el, old]) => el.innerText !== old",
                arg=[readout.element_handle(), label],
                timeout=REDRAW_MS,
            )
            deadline = time.monotonic() + REDRAW_MS / 1e3
            while _shown_pass(stepper_cell) == first and time.monotonic() < deadline:
                time.sleep(0.1)
            moved = _shown_pass(stepper_cell)
            assert moved != first, f"the stepper still shows {first} after moving the slider"
            assert moved in readout.inner_text()

            # the knob panel: group.strategy = hdfg redraws the CNN graph
            panel_cell = dom.nth(_cell_index(cells, PANEL_CELL))
            header = panel_cell.locator(".jupyter-widget-Collapse-header", has_text="group")
            header.filter(has_text=re.compile(r"^\s*group\s*$")).first.click()
            menu = panel_cell.locator(".widget-dropdown", has_text="strategy").filter(
                has=page.locator("option", has_text="hdfg")
            )
            click = time.perf_counter()
            menu.locator("select").select_option(label="hdfg")
            _wait_count(page, nodes, expected["hdfg"])
            status = panel_cell.locator(".widget-html-content").first
            page.wait_for_function(
                "el => el.innerText.includes('group.strategy = hdfg')",
                arg=status.element_handle(),
                timeout=REDRAW_MS,
            )
            figures["knob change to redrawn graph ms"] = (time.perf_counter() - click) * 1e3
            # the tour already ran hdfg once, so now every pass comes from the cache
            assert re.search(r"re-ran \d+ pass(es)?.*from the cache", status.inner_text())
            menu.locator("select").select_option(label="pattern")
            _wait_count(page, nodes, expected["pattern"])

            # screenshots: the CNN graph view, then the stepper, each at the top
            graph_cell.locator(".tx8-graph").evaluate("el => el.scrollIntoView()")
            page.screenshot(path=str(shot))
            stepper_cell.evaluate("el => el.scrollIntoView()")
            page.screenshot(path=str(stepper_shot))
            assert not console_errors, f"page errors: {console_errors}"
        except BaseException:
            page.screenshot(path=str(OUTPUT / "tour-failure.png"))
            raise
        finally:
            browser.close()
    figures["total s"] = time.perf_counter() - started
    with capsys.disabled():
        print(f"\nbrowser test: screenshots {shot} {stepper_shot}")
        print("browser test: " + ", ".join(f"{k} {v:.2f}" for k, v in figures.items()))


def _wait_count(page: Any, locator: Any, count: int) -> None:
    """Wait until ``locator`` matches ``count`` elements (the kernel redraws async)."""
    deadline = time.monotonic() + REDRAW_MS / 1e3
    while locator.count() != count:
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {count} graph nodes, the page shows {locator.count()}")
        page.wait_for_timeout(100)
