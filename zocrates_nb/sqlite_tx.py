"""One SQLite write transaction, the way every store here needs it.

``BEGIN IMMEDIATE`` takes the write lock up front, so two processes queue on
``busy_timeout`` instead of failing with ``SQLITE_BUSY_SNAPSHOT`` when a deferred
transaction tries to upgrade from read to write (reliability-perf-anchors §2.1).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def immediate_transaction(
    conn: sqlite3.Connection, lock: threading.Lock | threading.RLock
) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` on ``conn`` (autocommit mode), ``ROLLBACK`` on any error.

    ``lock`` serialises threads sharing the connection within this process.
    """
    with lock:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
