"""A second read-only connection on its own thread, so one search can run two FTS5 queries at once.

Why: the split lexical ranking (index/lexical/split.py) asks FTS5 for two independent lists, the rare
words' rows and those rows with an uncached everyday word; SQLite releases the GIL while it steps,
so on two cores they take the time of the longer one instead of the sum. Each call runs in one read
transaction and returns the index version it read at, so the caller can tell whether both lists
come from the same snapshot.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

__all__ = ["SideReader"]

T = TypeVar("T")


class SideReader:
    """Runs ``action(conn)`` on a read-only connection to ``database``, on one worker thread."""

    def __init__(self, database: Path | str) -> None:
        self.database = Path(database)
        self._pool: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def submit(self, action: Callable[[sqlite3.Connection], T]) -> Future[T]:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zocrates-fts-side")
            return self._pool.submit(self._run, action)

    def _run(self, action: Callable[[sqlite3.Connection], T]) -> T:
        if self._conn is None:  # made on the worker thread, used only there
            self._conn = sqlite3.connect(
                f"file:{self.database}?mode=ro", uri=True, isolation_level=None, check_same_thread=False, timeout=30.0
            )
        self._conn.execute("BEGIN")
        try:
            return action(self._conn)
        finally:
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
