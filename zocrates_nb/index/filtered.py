"""Filtered dense retrieval without Chroma's metadata filter on the hot path.

Why: a Chroma ``where`` (kind, collection ``$contains``, parent key) cost 30–50 ms per query at
60,000 vectors (most of a filtered search's 70–140 ms), while an unfiltered top-1,200 costs about
6 ms. The chunk ids a filter allows come from SQLite (the truth for filters anyway), are cached
per filter until the index changes, and the vector side then takes the cheapest exact-enough plan:

- a few thousand allowed ids or fewer: their stored vectors, cached per store generation and searched
  exactly with numpy (``SmallSetVectors``); on a Chroma server, a query restricted to them (``ids=``);
- a broad filter: an unfiltered query for enough neighbours that ``depth`` of them are expected to
  pass (twice the inverse of the filter's share), filtered here; if fewer pass, the ``where``
  query runs as before, so a result list is never shorter than the old path's.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zocrates_nb.errors import IndexCorruptError
from zocrates_nb.index.lexical import fts
from zocrates_nb.storage.sqlite_tx import connect_read_only

__all__ = ["IDS_QUERY_MAX", "OVERFETCH_MAX", "AllowedIds", "SmallSetVectors", "dense_with_filter"]

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
        self.small_sets = SmallSetVectors()  # vectors of small filter sets (dense side)

    def get(self, filters: Mapping[str, str]) -> frozenset[str]:
        with self._lock:
            try:
                return self._get(filters)
            except sqlite3.DatabaseError as exc:
                raise IndexCorruptError(
                    f"The search index in {self.db_path} cannot be read: {exc}", hint="Run `zocrates-nb index rebuild`."
                ) from exc

    def _get(self, filters: Mapping[str, str]) -> frozenset[str]:
        if self._conn is None:
            # read-only (``immutable`` where not even a ``-shm`` can be made: a read-only directory)
            self._conn = connect_read_only(self.db_path, check_same_thread=False, timeout=30.0)
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


class SmallSetVectors:
    """The stored vectors of a few small filter sets, searched exactly with numpy.

    Why: Chroma's ``ids=`` restriction costs more as the collection grows (about 290 ms for 286 ids
    at 302,000 vectors), while a dot product over a few thousand cached vectors costs well under a
    millisecond. An entry is valid for one store generation (every write bumps it), so a note
    saved a moment ago is never missing; on a Chroma server (no generation) nothing is cached.
    """

    def __init__(self, max_sets: int = 8) -> None:
        self.max_sets = max_sets
        self._entries: dict[frozenset[str], tuple[str, list[str], Any]] = {}
        self._lock = threading.Lock()

    def search(self, store: Any, vector: Any, depth: int, allowed: frozenset[str]) -> list[tuple[str, float]] | None:
        import numpy as np

        generation = store.generation()
        if generation is None:
            return None
        with self._lock:
            entry = self._entries.get(allowed)
        if entry is None or entry[0] != generation:
            ids, matrix = store.embeddings(sorted(allowed))  # generation read first: never stale
            norms = np.linalg.norm(matrix, axis=1)
            matrix = matrix / np.where(norms == 0, 1.0, norms)[:, None]
            entry = (generation, ids, matrix)
            with self._lock:
                if len(self._entries) >= self.max_sets:
                    self._entries.pop(next(iter(self._entries)))
                self._entries[allowed] = entry
        _, ids, matrix = entry
        if not ids:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        scores = matrix @ (query / (np.linalg.norm(query) or 1.0))
        top = np.argsort(-scores)[:depth]
        return [(ids[i], float(1.0 - scores[i])) for i in top]


def dense_with_filter(
    store: Any,
    vector: Any,
    depth: int,
    allowed: frozenset[str],
    total: int,
    where: Mapping[str, Any] | None,
    small: SmallSetVectors | None = None,
) -> list[tuple[str, float]]:
    """The ``depth`` nearest allowed chunks of ``store`` (a ``VectorStore``)."""
    query = store.query
    if not allowed:
        return []
    if len(allowed) <= IDS_QUERY_MAX:
        found = small.search(store, vector, depth, allowed) if small is not None else None
        return found if found is not None else query(vector, min(depth, len(allowed)), ids=sorted(allowed))
    fetch = min(total, depth + int(2 * depth * total / len(allowed)))
    if fetch <= OVERFETCH_MAX:
        kept = [hit for hit in query(vector, fetch) if hit[0] in allowed]
        if len(kept) >= min(depth, len(allowed)) or fetch >= total:
            return kept[:depth]
    return query(vector, depth, where=where)
