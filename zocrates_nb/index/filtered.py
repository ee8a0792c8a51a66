"""Filtered dense retrieval without Chroma's metadata filter on the hot path.

Why: a Chroma ``where`` (kind, collection ``$contains``, parent key) cost 30–50 ms per query at
60,000 vectors (most of a filtered search's 70–140 ms), while an unfiltered top-1,200 costs about
6 ms. The chunk ids a filter allows come from SQLite (the truth for filters anyway), are cached
per filter until the index changes, and the vector side then takes the cheapest exact-enough plan:

- a few thousand allowed ids or fewer: a query restricted to those ids (``ids=``);
- a broad filter: an unfiltered query for enough neighbours that ``depth`` of them are expected to
  pass (twice the inverse of the filter's share), filtered here; if fewer pass, the ``where``
  query runs as before, so a result list is never shorter than the old path's.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from zocrates_nb.errors import IndexCorruptError
from zocrates_nb.index import fts

__all__ = ["IDS_QUERY_MAX", "OVERFETCH_MAX", "AllowedIds", "dense_with_filter"]

#: At most this many allowed ids go to Chroma as an ``ids=`` restriction.
IDS_QUERY_MAX = 3000
#: An unfiltered over-fetch larger than this is not worth it; the ``where`` query runs instead.
OVERFETCH_MAX = 3000


class AllowedIds:
    """Chunk ids passing each filter, cached until the index changes.

    It reads through its own read-only connection, so a filtered dense query never waits for the
    FTS query running beside it on the index's connection. ``PRAGMA data_version`` on this
    connection moves whenever any other connection (the index's own included) commits.
    """

    def __init__(self, db_path: Path, max_filters: int = 32) -> None:
        self.db_path = Path(db_path)
        self.max_filters = max_filters
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._version: int | None = None
        self._sets: dict[tuple, frozenset[str]] = {}
        self.total = 0

    def get(self, filters: Mapping[str, str]) -> frozenset[str]:
        with self._lock:
            try:
                return self._get(filters)
            except sqlite3.DatabaseError as exc:
                raise IndexCorruptError(f"The search index in {self.db_path} cannot be read: {exc}",
                                        hint="Run `zocrates-nb index rebuild`.") from exc

    def _get(self, filters: Mapping[str, str]) -> frozenset[str]:
        if self._conn is None:
            self._conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, check_same_thread=False,
                                         timeout=30.0)
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version or len(self._sets) >= self.max_filters:
            self._sets.clear()
            self.total = self._conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            self._version = version
        key = tuple(sorted(filters.items()))
        if key not in self._sets:
            self._sets[key] = frozenset(fts.filtered_chunk_ids(self._conn, filters))
        return self._sets[key]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def dense_with_filter(query: Callable[..., list[tuple[str, float]]], vector: Any, depth: int,
                      allowed: frozenset[str], total: int, where: Mapping[str, Any] | None) -> list[tuple[str, float]]:
    """The ``depth`` nearest allowed chunks; ``query`` is ``VectorStore.query``."""
    if not allowed:
        return []
    if len(allowed) <= IDS_QUERY_MAX:
        return query(vector, min(depth, len(allowed)), ids=sorted(allowed))
    fetch = min(total, depth + int(2 * depth * total / len(allowed)))
    if fetch <= OVERFETCH_MAX:
        kept = [hit for hit in query(vector, fetch) if hit[0] in allowed]
        if len(kept) >= min(depth, len(allowed)) or fetch >= total:
            return kept[:depth]
    return query(vector, depth, where=where)
