"""Dependencies point one way (DESIGN.md §1, STYLE.md "Layering").

``widgets -> core, hw, kernels``; ``core -> hw.config``; nothing but widgets and notebooks
imports ``tx8lab.widgets``, and ``import tx8lab.core`` works without the ``[widgets]`` extra.
Checked twice: statically over the source (every ``import``, including ones inside
functions) and by importing in a subprocess where the widget packages cannot be found.
Every module also has a layer (:data:`LAYERS`): no import points to a higher layer and the
import graph has no cycle.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "tx8lab"

#: The [widgets] extra and what it drags in; none may be imported below the widget layer.
UI_MODULES = (
    "tx8lab.widgets",
    "ipywidgets",
    "anywidget",
    "plotly",
    "jupyter",
    "jupyterlab",
    "jupyter_client",
    "jupyter_core",
    "IPython",
    "traitlets",
    "graphviz",
)

#: Layers that must work without the widget stack.
HEADLESS_LAYERS = ("core", "hw", "kernels")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import statement in ``path``."""
    return _imports_of(
        path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py"
    )


_Import = tuple[int, str, tuple[str, ...]]


def _scan(source: str, module_name: str, is_package: bool) -> list[_Import]:
    """``(line, module, names taken from it)`` of every import in ``source``.

    ``import a.b`` and ``importlib.import_module("a.b")`` take no names; relative imports
    are made absolute; imports inside functions count like the others.
    """
    tree = ast.parse(source)
    package = module_name.split(".")
    if not is_package:
        package.pop()
    found: list[_Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module, tuple(alias.name for alias in node.names)))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value, ()))
    return found


def _imports_of(source: str, module_name: str, is_package: bool) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for line, module, names in _scan(source, module_name, is_package):
        found.append((line, module))
        # `from tx8lab import widgets` imports a submodule; `from x import name` may not
        found.extend((line, _resolve(f"{module}.{name}")) for name in names)
    return found


def _resolve(name: str) -> str:
    """For a ``tx8lab`` name, the longest prefix that is a module or package of the repo."""
    parts = name.split(".")
    if parts[0] != "tx8lab":
        return name
    while len(parts) > 1:
        path = REPO.joinpath(*parts)
        if path.with_suffix(".py").is_file() or path.is_dir():
            break
        parts.pop()
    if parts[:2] == ["tx8lab", "widgets"]:
        return name  # keep `tx8lab.widgets.view` whether or not view.py exists yet
    return ".".join(parts)


def _is_under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _sources(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


def test_the_ast_scan_sees_relative_and_nested_imports() -> None:
    source = (
        "from ..widgets import view\n"
        "from .. import widgets\n"
        "from tx8lab.hw import ChipConfig\n"
        "def f():\n"
        "    import plotly.express\n"
        "    importlib.import_module('anywidget')\n"
    )
    names = [name for _, name in _imports_of(source, "tx8lab.core.probe", is_package=False)]
    assert "tx8lab.widgets" in names
    assert "tx8lab.widgets.view" in names
    assert "plotly.express" in names
    assert "anywidget" in names
    assert "tx8lab.hw" in names  # a name imported from a package is not a module
    assert "tx8lab.hw.ChipConfig" not in names


@pytest.mark.parametrize("layer", HEADLESS_LAYERS)
def test_headless_layers_never_import_the_widget_stack(layer: str) -> None:
    sources = _sources(layer)
    if layer in ("core", "hw"):
        assert sources, (
            f"tx8lab/{layer} has no source files: is the test looking in the right place?"
        )
    bad = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for path in sources
        for line, module in _imports(path)
        if any(_is_under(module, banned) for banned in UI_MODULES)
    ]
    assert not bad, "\n".join(bad)


def test_core_depends_only_on_hw_config() -> None:
    """``core -> hw.config`` (and the presets and the cost model built on it); never kernels, cli.

    ``hw.cost`` is allowed because it sits on ``hw.config`` alone (next test): the op library
    hands it plain numbers (MACs, elements, bytes) and it never sees an op. The mesh
    (``hw.noc``) and the reductions over it (``hw.collectives``) sit on the simulator and
    its laws and import nothing from core either (tested below).
    """
    allowed = (
        "tx8lab.core",
        "tx8lab.errors",
        "tx8lab._bulk",
        "tx8lab._tools",
        "tx8lab.hw.config",
        "tx8lab.hw.presets",
        "tx8lab.hw.cost",
        "tx8lab.hw.laws",
        "tx8lab.hw.sim",
        "tx8lab.hw.noc",
        "tx8lab.hw.collectives",
    )
    bad = []
    for path in _sources("core"):
        for line, module in _imports(path):
            if not _is_under(module, "tx8lab") or module in ("tx8lab", "tx8lab.hw"):
                continue
            if not any(_is_under(module, ok) for ok in allowed):
                bad.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    assert not bad, "\n".join(bad)


def test_hw_cost_imports_only_hw_config() -> None:
    """``hw/cost.py`` takes plain numbers: nothing from core, so core may call it."""
    modules = {m for _, m in _imports(PACKAGE / "hw" / "cost.py") if _is_under(m, "tx8lab")}
    assert modules <= {"tx8lab.errors", "tx8lab.hw.config"}


@pytest.mark.parametrize("name", ["laws", "sim", "calibrate", "noc", "collectives"])
def test_the_simulator_and_its_laws_import_nothing_from_core(name: str) -> None:
    """Issue 19: the simulator takes command streams, built by core or by hand."""
    modules = {m for _, m in _imports(PACKAGE / "hw" / f"{name}.py") if _is_under(m, "tx8lab")}
    assert modules
    assert all(
        m in ("tx8lab.errors", "tx8lab._bulk") or _is_under(m, "tx8lab.hw") for m in modules
    ), modules


def test_hw_config_imports_nothing_from_tx8lab_but_errors() -> None:
    """STYLE.md: ``hw/config.py`` is the bottom layer (``tx8lab.errors`` is a leaf module)."""
    modules = {m for _, m in _imports(PACKAGE / "hw" / "config.py") if _is_under(m, "tx8lab")}
    assert modules <= {"tx8lab.errors"}


_PROBE = r"""
import importlib, importlib.abc, json, pkgutil, sys

BANNED = {banned!r}

class Blocker(importlib.abc.MetaPathFinder):
    # Behave as if the [widgets] extra were not installed.
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BANNED:
            raise ModuleNotFoundError(f"blocked for the layering test: {{name}}")
        return None

sys.meta_path.insert(0, Blocker())
import tx8lab
imported = []
for layer in {layers!r}:
    package = importlib.import_module("tx8lab." + layer)
    imported.append(package.__name__)
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
        imported.append(info.name)
loaded = sorted(
    m for m in sys.modules if m.split(".")[0] in BANNED or m.startswith("tx8lab.widgets")
)
print(json.dumps({{"imported": imported, "loaded": loaded}}))
"""


def test_headless_layers_import_without_the_widgets_extra() -> None:
    """Import every module of core/hw/kernels with the widget packages made unfindable.

    Prints the result instead of exiting with it (``sys.exit("")`` exits 1; STYLE.md).
    """
    banned = sorted({m.split(".")[0] for m in UI_MODULES if m != "tx8lab.widgets"})
    code = _PROBE.format(banned=banned, layers=list(HEADLESS_LAYERS))
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "tx8lab.core" in report["imported"]
    assert "tx8lab.hw.config" in report["imported"]
    assert report["loaded"] == []


# ------------------------------------------------------------------ layers of the package

#: Bottom to top: a module may import its own layer and the layers below, never above. An
#: entry names a module exactly; ``pkg.*`` names every module below ``pkg`` (not ``pkg``).
#: A package's ``__init__`` sits at or above the submodules it re-exports, and an import of
#: ``a.b.c`` (or ``from a.b import c``, ``c`` a module) is an edge to ``a.b.c`` only: the
#: parent packages Python runs first are not a dependency of the importer. Imports inside
#: functions, under ``if TYPE_CHECKING`` and through ``importlib.import_module`` all count.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("tx8lab.errors", "tx8lab._bulk", "tx8lab._outputs"),
    # the hardware model takes plain numbers and knows no op (DESIGN.md §6)
    ("tx8lab._tools", "tx8lab.hw", "tx8lab.hw.*"),
    # ir: the data every layer above passes around
    (
        "tx8lab.core.dtypes",
        "tx8lab.core.attrs",
        "tx8lab.core.ir",
        "tx8lab.core.layouts",
        "tx8lab.core.layout_str",
        "tx8lab.core.tiling",
    ),
    # ops: the op library, with the C text of its genOpCode
    ("tx8lab.core.codegen_c", "tx8lab.core.ops", "tx8lab.core.ops.*"),
    # text / verify / builder, and the other IR services built on the op library
    (
        "tx8lab.core.text",
        "tx8lab.core.verify",
        "tx8lab.core.builder",
        "tx8lab.core.interpret",
        "tx8lab.core.c_header",
        "tx8lab.core.grouping",
        "tx8lab.core.constants",
        "tx8lab.core.group_automaton",
        "tx8lab.core.group_report",
        "tx8lab.core.hdfg",
        "tx8lab.core.match_inspector",
    ),
    # schedule: one group's data split, pipeline, lifetimes, allocation, estimate
    ("tx8lab.core.schedule", "tx8lab.core.schedule.*"),
    # the program: every tile's command stream, and the host model that executes it
    ("tx8lab.core.program", "tx8lab.core.hostmodel", "tx8lab.core.simulate"),
    # pass base: Pass, Knob, Decision, PassResult, Step
    ("tx8lab.core.passes.base",),
    # the passes, the main.c generator one of them runs, the report of a finished run
    ("tx8lab.core.passes.*", "tx8lab.core.codegen", "tx8lab.core.report", "tx8lab.core.execute"),
    # pass registry: PASSES, DEFAULT_PIPELINE, get_pass, build_pipeline, resolve_passes
    ("tx8lab.core.passes",),
    # runner: run_pipeline, execute, Explorer, and the instruments handed to it
    ("tx8lab.core.runner", "tx8lab.core.instruments"),
    # frontends, and the package's re-exports
    ("tx8lab.core.frontends", "tx8lab.core.frontends.*", "tx8lab.core.zoo", "tx8lab.core"),
    ("tx8lab.kernels", "tx8lab.kernels.*"),
    # figures and the alloc command's files: whole pipelines, no widget
    ("tx8lab.bench", "tx8lab.bench.*", "tx8lab.alloc_cli"),
    ("tx8lab.widgets", "tx8lab.widgets.*"),
    # the command on top: --report is its one (lazy) import of a widget module
    ("tx8lab.cli", "tx8lab.__main__", "tx8lab"),
)


def _layer_of(module: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> int | None:
    """Index of ``module``'s layer: an exact entry first, else the longest ``pkg.*`` above it."""
    best: tuple[int, int] | None = None  # (specificity, layer)
    for index, entries in enumerate(layers):
        for entry in entries:
            if entry == module:
                return index
            wildcard = entry.endswith(".*") and module.startswith(entry[:-1])
            if wildcard and (best is None or len(entry) > best[0]):
                best = (len(entry), index)
    return None if best is None else best[1]


def _edges_of(source: str, module_name: str, is_package: bool) -> list[tuple[int, str]]:
    """``(line, module)`` each import of ``source`` needs, by the rule of :data:`LAYERS`."""
    found: list[tuple[int, str]] = []
    for line, module, names in _scan(source, module_name, is_package):
        if not names:
            found.append((line, _resolve(module)))
        # `from pkg import sub` needs pkg.sub; `from pkg import name` needs pkg
        found.extend((line, _resolve(f"{module}.{name}")) for name in names)
    return [(line, name) for line, name in found if _is_under(name, "tx8lab")]


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _graph() -> dict[str, list[tuple[int, str]]]:
    """Module -> ``(line, module)`` of every ``tx8lab`` module it imports (itself left out)."""
    modules = _modules()
    graph: dict[str, list[tuple[int, str]]] = {}
    for name, path in modules.items():
        edges = _edges_of(path.read_text(encoding="utf-8"), name, path.name == "__init__.py")
        graph[name] = [(line, dep) for line, dep in edges if dep in modules and dep != name]
    return graph


def _upward(
    graph: Mapping[str, Iterable[tuple[int, str]]],
    layers: tuple[tuple[str, ...], ...] = LAYERS,
) -> list[str]:
    """Every import of a module from a higher layer, as ``module:line imports module``."""
    bad = []
    for name, edges in graph.items():
        own = _layer_of(name, layers)
        for line, dep in edges:
            theirs = _layer_of(dep, layers)
            if own is not None and theirs is not None and theirs > own:
                bad.append(f"{name}:{line} (layer {own}) imports {dep} (layer {theirs})")
    return bad


def _cycles(graph: Mapping[str, Iterable[tuple[int, str]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    succ = {
        name: sorted({dep for _, dep in edges if dep in graph}) for name, edges in graph.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(succ):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if child < len(succ[node]):
                work.append((node, child + 1))
                nxt = succ[node][child]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def test_every_module_has_a_layer() -> None:
    missing = sorted(name for name in _modules() if _layer_of(name) is None)
    assert not missing, "add these modules to LAYERS: " + ", ".join(missing)


def test_the_layer_table_names_no_module_twice() -> None:
    entries = [entry for layer in LAYERS for entry in layer]
    assert len(entries) == len(set(entries))


def test_no_import_points_to_a_higher_layer() -> None:
    bad = _upward(_graph())
    assert not bad, "\n".join(bad)


def test_the_import_graph_has_no_cycle() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_layer_check_rejects_an_upward_import_inside_a_function() -> None:
    source = (
        "from tx8lab.core.dtypes import check_dtype\n"
        "def op_def(kind):\n"
        "    from tx8lab.core.ops import get_op_def\n"
        "    return get_op_def(kind)\n"
        "def runner():\n"
        "    return importlib.import_module('tx8lab.core.runner')\n"
    )
    graph = {"tx8lab.core.ir": _edges_of(source, "tx8lab.core.ir", is_package=False)}
    bad = _upward(graph)
    assert [b.split(" imports ")[1].split()[0] for b in bad] == [
        "tx8lab.core.ops",
        "tx8lab.core.runner",
    ]
    assert bad[0].startswith("tx8lab.core.ir:3 ")


def test_an_import_from_a_package_is_an_edge_to_the_submodule_only() -> None:
    source = "from tx8lab.core import attrs as A\nfrom tx8lab.core.ops import OPS\n"
    edges = {name for _, name in _edges_of(source, "tx8lab.core.text", is_package=False)}
    assert edges == {"tx8lab.core.attrs", "tx8lab.core.ops"}


def test_the_cycle_check_names_the_modules_of_a_cycle() -> None:
    graph = {
        "a": [(1, "b")],
        "b": [(1, "c")],
        "c": [(1, "a"), (2, "d")],
        "d": [],
    }
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": [(1, "b")], "b": []}) == []
