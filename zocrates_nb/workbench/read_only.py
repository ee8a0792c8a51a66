"""Opening a data directory that cannot be written: read what is there, refuse writes up front.

Why here: a backup on a read-only share, or a disk that filled up, must still answer ``search``,
``ask``, ``status``, ``doctor`` and ``explain`` (issue 26), and a command that would write must say
so before it starts rather than fail half-way. The wiring decides once per open which it is
(``DataPaths.unwritable``); every store then opens read-only (storage/sqlite_tx.connect_read_only),
and the write verbs ask ``require_writable`` first, which also notices when space was freed or
writing allowed again, so a long-lived kernel does not have to be restarted.
"""

from __future__ import annotations

from dataclasses import replace

from zocrates_nb.paths import DataPaths
from zocrates_nb.storage.space import refused, unavailable, write_problem

__all__ = ["open_paths", "require_writable"]


def open_paths(paths: DataPaths) -> DataPaths:
    """``paths`` made ready to write, or marked ``unwritable`` (read-only / full) when it cannot be written."""
    problem = write_problem(paths.root) if paths.root.exists() else None
    if problem is None:
        try:
            return replace(paths, unwritable=None).ensure()
        except OSError as exc:
            problem = write_problem(paths.root, exc)
            if problem is None:
                raise
    if not paths.root.is_dir():  # nothing to read either
        raise unavailable("The data directory", paths.root, problem)
    return replace(paths, unwritable=problem)


def require_writable(paths: DataPaths, doing: str) -> bool:
    """Raise (a true hint, nothing written) while ``paths`` cannot be written, or has filled up since it
    was opened; True when it was opened
    for reading only but can be written now (the caller re-opens its stores for writing)."""
    now = write_problem(paths.root)  # a statvfs and an access check: the disk may have filled since
    if now is not None:
        raise refused(doing, paths.root, now)
    return bool(paths.unwritable)
