"""Tell "cannot write here" (a read-only directory, a full disk) from damage before choosing a hint.

Why: SQLite says "unable to open database file" or "database or disk is full" for a read-only mount,
a permission problem and a full disk alike, and a hint written for damage ("delete the file",
"run doctor --repair") destroys the user's notes or sends them in a circle when the real cause is
space or permissions. Every store asks ``write_problem`` first and, when there is one, raises
``unavailable`` (a ``StorageUnavailableError`` whose hint frees space or allows writing) instead of
its damage error.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from pathlib import Path

from zocrates_nb.errors import StorageUnavailableError

__all__ = [
    "FULL_BELOW_BYTES",
    "free_bytes",
    "elsewhere_hint",
    "human_bytes",
    "reading_only_notice",
    "refused",
    "unavailable",
    "why_unwritable",
    "write_problem",
]

#: below this many free bytes a store counts as full (SQLite needs room for its journal and a page or two)
FULL_BELOW_BYTES = 1 << 20
_FULL_WORDS = ("disk is full", "no space left", "database or disk is full")
_READ_ONLY_WORDS = ("readonly database", "read-only file system", "read-only database")


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (a store may not exist yet)."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_bytes(path: Path) -> int:
    """Free bytes for an unprivileged writer on the file system holding ``path``."""
    return shutil.disk_usage(_existing(path)).free


def human_bytes(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def _read_only(path: Path) -> bool:
    where = _existing(path)
    if os.statvfs(where).f_flag & os.ST_RDONLY:
        return True
    folder = where if where.is_dir() else where.parent
    # root passes os.access on any mode bits; for everyone else they decide
    return not os.access(folder, os.W_OK) or (where.is_file() and not os.access(where, os.W_OK))


def write_problem(path: Path, exc: BaseException | None = None) -> str | None:
    """``"read-only"``, ``"full"`` or None (nothing stops writing ``path``: an error there is something else)."""
    text = str(exc).lower() if exc is not None else ""
    code = getattr(exc, "errno", None)
    if code == errno.EROFS or any(w in text for w in _READ_ONLY_WORDS) or _read_only(path):
        return "read-only"
    if code == errno.ENOSPC or any(w in text for w in _FULL_WORDS) or free_bytes(path) < FULL_BELOW_BYTES:
        return "full"
    if isinstance(exc, sqlite3.OperationalError) and getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return "full"
    return None


def why_unwritable(folder: Path, problem: str) -> str:
    """``"<folder> is read-only"`` or ``"the disk is full (N MiB free on <folder>)"``."""
    if problem == "read-only":
        return f"{folder} is read-only"
    return f"the disk is full ({human_bytes(free_bytes(folder))} free on {folder})"


def _hint(folder: Path, problem: str) -> str:
    if problem == "read-only":
        return (
            f"Make {folder} writable (remount it read-write, or fix its permissions), or copy the data "
            "directory somewhere writable and use the copy (--data-dir DIR, or Workbench(DIR) in a notebook)."
        )
    return f"Free some space on the disk holding {folder}, then run the command again."


def _lost(problem: str) -> str:
    return "Nothing was changed or lost." if problem == "read-only" else "Nothing was lost."


def elsewhere_hint(problem: str) -> str:
    """The hint for a target outside the data directory (an export, a log): that folder is the one to fix."""
    return "Choose a folder that can be written (on a disk with room), or " + (
        "free some space on that disk." if problem == "full" else "make that one writable."
    )


def unavailable(what: str, path: Path, problem: str, exc: BaseException | None = None) -> StorageUnavailableError:
    """The error for ``what`` (e.g. "The demo library") at ``path`` that cannot be written, with a true hint."""
    folder = _existing(Path(path).parent)
    cause = f" ({exc})" if exc is not None else ""
    return StorageUnavailableError(
        f"{what} {path} cannot be written: {why_unwritable(folder, problem)}{cause}. {_lost(problem)}",
        _hint(folder, problem),
    )


def refused(doing: str, folder: Path, problem: str) -> StorageUnavailableError:
    """The error for a command that would write (``doing``: "save the note") into ``folder``, refused
    before it started: the user learns why, and that nothing happened."""
    folder = _existing(Path(folder))
    return StorageUnavailableError(
        f"Cannot {doing}: {why_unwritable(folder, problem)}. Nothing was written or lost; searching and "
        "reading still work.",
        _hint(folder, problem),
    )


def reading_only_notice(folder: Path, problem: str) -> str:
    """Said with every search (and once per ``ask``) while the data directory cannot be written:
    what still works, and what waits."""
    return (
        f"Reading only: {why_unwritable(folder, problem)}. These are lexical results from the index as last "
        "written (the vector store cannot be opened without writing); nothing is recorded in diagnostics, "
        "and saving, syncing and editing the profile wait until the directory can be written."
    )
