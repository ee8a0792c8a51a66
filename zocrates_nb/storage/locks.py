"""Cross-process locks for everything except the config (which ``config.py`` locks itself).

A thin wrapper so that ``filelock`` stays owned by few modules and every lock
file lives under ``<data-dir>/locks/``.

``corpus_lock`` is THE writer lock of a data directory: sync, Save as Note (and
any re-materialisation) and ``index rebuild`` all hold it, so a rebuild can never
list the bundles, let a save land, and then clear the index and re-insert a stale
list (issue 10, failure 1). One ``FileLock`` object per lock file and process is
kept, so the lock is re-entrant within a thread (a sync that re-materialises, a
rebuild that repairs a bundle) and still excludes other threads and processes.
"""

from __future__ import annotations

import threading
from pathlib import Path

from filelock import FileLock, Timeout

__all__ = ["file_lock", "corpus_lock", "CORPUS_LOCK_NAME", "Timeout"]

#: the lock file (under ``<data-dir>/locks/``) shared by sync, save and rebuild
CORPUS_LOCK_NAME = "corpus-sync.lock"

_SHARED: dict[str, FileLock] = {}
_SHARED_GUARD = threading.Lock()


def file_lock(path: Path, timeout: float = 60.0) -> FileLock:
    """A re-entrant (per thread) inter-process lock on ``path`` (created if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(path), timeout=timeout)


def corpus_lock(locks_dir: Path, timeout: float = 600.0) -> FileLock:
    """The data directory's writer lock (one object per process, re-entrant per thread)."""
    path = Path(locks_dir) / CORPUS_LOCK_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    with _SHARED_GUARD:
        lock = _SHARED.get(str(path))
        if lock is None:
            lock = _SHARED[str(path)] = FileLock(str(path), timeout=timeout)
        return lock
