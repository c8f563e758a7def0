"""Dependencies point one way (DESIGN.md §1, STYLE.md "Layering").

``widgets -> core, hw, kernels``; ``core -> hw.config``; nothing but widgets and notebooks
imports ``tx8lab.widgets``, and ``import tx8lab.core`` works without the ``[widgets]`` extra.
Checked twice: statically over the source (every ``import``, including ones inside
functions) and by importing in a subprocess where the widget packages cannot be found.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
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


def _imports_of(source: str, module_name: str, is_package: bool) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    package = module_name.split(".")
    if not is_package:
        package.pop()
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            # `from tx8lab import widgets` imports a submodule; `from x import name` may not
            found.extend((node.lineno, _resolve(f"{module}.{alias.name}")) for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
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
    hands it plain numbers (MACs, elements, bytes) and it never sees an op.
    """
    allowed = (
        "tx8lab.core",
        "tx8lab.errors",
        "tx8lab._tools",
        "tx8lab.hw.config",
        "tx8lab.hw.presets",
        "tx8lab.hw.cost",
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
