"""Cross-process locks for everything except the config (which ``config.py`` locks itself).

A thin wrapper so that ``filelock`` stays owned by few modules and every lock
file lives under ``<data-dir>/locks/``.
"""

from __future__ import annotations

from pathlib import Path

from filelock import FileLock, Timeout

__all__ = ["file_lock", "Timeout"]


def file_lock(path: Path, timeout: float = 60.0) -> FileLock:
    """A re-entrant (per thread) inter-process lock on ``path`` (created if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(path), timeout=timeout)
