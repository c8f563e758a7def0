"""External tools tx8lab can use when installed: the real ``mlir-opt``.

``make test`` installs Debian's ``mlir-*-tools`` when it can (the Makefile's ``sysdeps``
target); tests that need the tool are marked ``mlir`` and skip without it. Lookup order:

1. the ``TX8LAB_MLIR_OPT`` environment variable (a path or a command name), so a local LLVM
   build can be used. This names a tool, not a modelling knob (STYLE.md forbids those);
2. ``mlir-opt`` then the versioned Debian names ``mlir-opt-22`` ... ``mlir-opt-16`` on PATH;
3. ``/usr/lib/llvm-*/bin/mlir-opt``, newest LLVM first.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess

from tx8lab.errors import Tx8labError

#: Environment variable that names the mlir-opt to use.
MLIR_OPT_ENV = "TX8LAB_MLIR_OPT"

#: Command names tried on PATH, in order.
MLIR_OPT_NAMES: tuple[str, ...] = (
    "mlir-opt",
    "mlir-opt-22",
    "mlir-opt-21",
    "mlir-opt-20",
    "mlir-opt-19",
    "mlir-opt-18",
    "mlir-opt-17",
    "mlir-opt-16",
)

#: Where Debian's versioned LLVM packages put their tools.
LLVM_GLOB = "/usr/lib/llvm-*/bin/mlir-opt"


def find_mlir_opt() -> str | None:
    """Path of an ``mlir-opt`` executable, or ``None`` when none is installed.

    Raises:
        Tx8labError: ``TX8LAB_MLIR_OPT`` is set but names no executable.
    """
    override = os.environ.get(MLIR_OPT_ENV, "").strip()
    if override:
        path = shutil.which(override)
        if path is None:
            raise Tx8labError(
                f"{MLIR_OPT_ENV}={override!r} is not an executable: point it at an mlir-opt "
                "binary or unset it to search PATH and /usr/lib/llvm-*/bin"
            )
        return path
    for name in MLIR_OPT_NAMES:
        path = shutil.which(name)
        if path is not None:
            return path
    for candidate in sorted(glob.glob(LLVM_GLOB), key=_llvm_version, reverse=True):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def _llvm_version(path: str) -> int:
    match = re.search(r"llvm-(\d+)", path)
    return int(match.group(1)) if match else -1


def run_mlir_opt(
    text: str, *args: str, mlir_opt: str | None = None, timeout_s: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run ``mlir-opt --allow-unregistered-dialect ARGS`` with ``text`` on stdin.

    The result is returned as is (``returncode``, ``stdout``, ``stderr``); a non-zero exit
    is not raised, so a caller can show mlir-opt's own diagnostic.

    Raises:
        Tx8labError: no mlir-opt is installed (and ``mlir_opt`` is not given).
    """
    tool = mlir_opt or find_mlir_opt()
    if tool is None:
        raise Tx8labError(
            "mlir-opt is not installed: `make sysdeps` installs Debian's mlir-22-tools "
            f"(as root), or set {MLIR_OPT_ENV} to an mlir-opt binary"
        )
    return subprocess.run(
        [tool, "--allow-unregistered-dialect", *args],
        input=text,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
