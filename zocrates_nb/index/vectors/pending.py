"""A durable queue of chunk ids whose vectors must be (re)computed: ``vector_pending``.

Why durable: FTS rows change inside the corpus's transaction, vectors only after its
COMMIT. A process killed in between used to leave the vector of an *edited* chunk
stale for good: its id still exists in both stores, so the id-set reconcile saw
nothing to do and dense search kept ranking the old text. Writing the ids into this
table in the same transaction as the FTS rows, and deleting them only once the
vectors are stored, makes "vectors follow FTS" survive any crash.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

_TABLE = "vector_pending"
_BATCH = 500


def ready(conn: sqlite3.Connection) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_TABLE,)).fetchone()
    return found is not None


def ensure(conn: sqlite3.Connection) -> None:
    """Create the table (inside the caller's write transaction)."""
    conn.execute(f"CREATE TABLE IF NOT EXISTS {_TABLE}(chunk_id TEXT PRIMARY KEY)")


def add(conn: sqlite3.Connection, ids: Iterable[str]) -> None:
    """Queue ids inside the caller's transaction (the one that changes their FTS rows)."""
    conn.executemany(f"INSERT OR IGNORE INTO {_TABLE}(chunk_id) VALUES (?)", ((i,) for i in ids))


def all_ids(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute(f"SELECT chunk_id FROM {_TABLE}")}


def remove(conn: sqlite3.Connection, ids: Iterable[str]) -> None:
    ids = list(ids)
    for start in range(0, len(ids), _BATCH):
        batch = ids[start : start + _BATCH]
        conn.execute(f"DELETE FROM {_TABLE} WHERE chunk_id IN ({', '.join('?' * len(batch))})", batch)


def clear(conn: sqlite3.Connection) -> None:
    conn.execute(f"DELETE FROM {_TABLE}")
