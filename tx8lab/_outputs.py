"""Command outputs written all or nothing: a temporary name next to each, renamed at the end.

The commands (``tx8lab run --json/--report/--trace/--emit-c``, ``fuse``, ``fa``,
``alloc``, ``calibrate``) open an :class:`Outputs` before their long work. Each
:meth:`Outputs.file` checks the destination at once (its folder exists and is writable,
it is not a folder) and hands back a temporary path in the same folder for the writer;
:meth:`Outputs.directory` does the same for a folder output (``--emit-c DIR``) with a
temporary folder next to it. Only when the whole command succeeded does
:meth:`Outputs.commit` rename every temporary into place (``os.replace``: a reader sees
the old file or the new one, never half of one); on an error every temporary is removed,
so a failed run leaves no truncated file, no empty folder, and an existing output as it
was.
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path
from types import TracebackType

from tx8lab.errors import Tx8labError


def _refuse(flag: str, path: Path, why: str, fix: str) -> Tx8labError:
    """The one-line error of an output that cannot be written: flag, path, why, what to do."""
    return Tx8labError(f"{flag + ': ' if flag else ''}cannot write to {path} ({why}); {fix}")


def check_destination(flag: str, path: str | Path) -> Path:
    """``path`` as a file output: refused (naming ``flag``) when it cannot be written."""
    out = Path(path)
    if not str(path).strip() or out.name in ("", ".", ".."):
        raise _refuse(flag, out, "not a file name", "give a file path such as out.json")
    if out.is_dir():
        raise _refuse(flag, out, "it is a directory", "give a file path")
    parent = out.parent
    if not parent.is_dir():
        raise _refuse(flag, out, f"no folder {parent}", "create the folder first")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _refuse(flag, out, f"the folder {parent} is read-only", "give a writable folder")
    if out.exists() and not os.access(out, os.W_OK):
        raise _refuse(flag, out, "the file is read-only", "give another file or make it writable")
    return out


def _existing_ancestor(path: Path) -> Path:
    current = path.absolute()
    while not current.exists() and current != current.parent:
        current = current.parent
    return current


def check_directory(flag: str, path: str | Path) -> Path:
    """``path`` as a folder output (created when missing, parents too): refused when not."""
    out = Path(path)
    if not str(path).strip():
        raise _refuse(flag, out, "not a folder name", "give a folder path such as out_dir")
    if out.exists() and not out.is_dir():
        raise _refuse(flag, out, "a file is in the way", "give a writable directory")
    base = _existing_ancestor(out)
    if not base.is_dir():
        raise _refuse(flag, out, f"{base} is a file", "give a writable directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise _refuse(flag, out, f"{base} is read-only", "give a writable directory")
    return out


class Outputs:
    """The outputs of one command run; use as a context manager (module docstring)."""

    def __init__(self) -> None:
        self._files: list[tuple[Path, Path]] = []
        """(temporary, final) of each file output."""
        self._dirs: list[tuple[Path, Path, Path]] = []
        """(temporary folder, final folder, where the temporary was made) of each folder."""

    def file(self, flag: str, path: str | Path) -> Path:
        """A temporary path to write ``path``'s content to (checked now, renamed at commit)."""
        final = check_destination(flag, path)
        self._unique(flag, final)
        tmp = final.parent / f".{final.name}.{secrets.token_hex(4)}.tmp"
        try:
            tmp.touch(exist_ok=False)
        except OSError as err:
            raise _refuse(flag, final, str(err.strerror or err), "give a writable folder") from None
        self._files.append((tmp, final))
        return tmp

    def directory(self, flag: str, path: str | Path) -> Path:
        """A temporary folder whose files are moved into ``path`` at commit."""
        final = check_directory(flag, path)
        self._unique(flag, final)
        base = final.parent if final.parent.is_dir() else _existing_ancestor(final)
        tmp = base / f".{final.name or 'out'}.{secrets.token_hex(4)}.tmp"
        try:
            tmp.mkdir()
        except OSError as err:
            raise _refuse(
                flag, final, str(err.strerror or err), "give a writable directory"
            ) from None
        self._dirs.append((tmp, final, base))
        return tmp

    def _unique(self, flag: str, final: Path) -> None:
        taken = {f.absolute(): f for _, f in self._files}
        taken.update({f.absolute(): f for _, f, _ in self._dirs})
        here = final.absolute()
        for other in taken:
            if here == other or other in here.parents or here in other.parents:
                raise _refuse(
                    flag, final, f"another output is {taken[other]}", "give each its own path"
                )

    def commit(self) -> None:
        """Rename every temporary into place (the command succeeded)."""
        for tmp, final in self._files:
            os.replace(tmp, final)
        for tmp, final, _ in self._dirs:
            final.mkdir(parents=True, exist_ok=True)
            for entry in sorted(tmp.iterdir()):
                target = final / entry.name
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                os.replace(entry, target)
            tmp.rmdir()
        self._files.clear()
        self._dirs.clear()

    def discard(self) -> None:
        """Remove every temporary (the command failed); the destinations stay as they were."""
        for tmp, _ in self._files:
            tmp.unlink(missing_ok=True)
        for tmp, _, _ in self._dirs:
            shutil.rmtree(tmp, ignore_errors=True)
        self._files.clear()
        self._dirs.clear()

    def __enter__(self) -> Outputs:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is None:
            try:
                self.commit()
            finally:
                self.discard()
        else:
            self.discard()


def write_text_atomic(path: str | Path, text: str, flag: str = "") -> Path:
    """Write ``text`` to ``path`` all or nothing (a temporary renamed into place)."""
    with Outputs() as outputs:
        outputs.file(flag, path).write_text(text, encoding="utf-8")
    return Path(path)


__all__ = ["Outputs", "check_destination", "check_directory", "write_text_atomic"]
