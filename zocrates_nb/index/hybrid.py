"""Hybrid retrieval: FTS5 bm25 + dense MiniLM vectors, fused by reciprocal rank.

``HybridIndex`` is assembled from three modules, one concern each:

- index/core.py: the SQLite connection, the ``search`` settings, the embedder and the vector store;
- index/consistency.py: keeping the index in line with the corpus (stage, commit, reconcile, rebuild);
- index/searching.py: searching it, with the pure fusion and hit assembly in index/rank/assembly.py.

This module adds the read-only views (document listings, stats) and ``close``.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from zocrates_nb.index.consistency import IndexConsistency
from zocrates_nb.index.core import DEFAULT_RRF_K, REBUILD_HINT
from zocrates_nb.index.lexical import fts
from zocrates_nb.index.lexical.libraries import known_libraries, resolve_library
from zocrates_nb.index.rank.ranking import (
    FILTER_NAMES,
    MAX_QUERY_CHARS,
    MODES,
    SearchHit,
    check_filters,
    prepare_query,
    rrf,
)
from zocrates_nb.index.searching import IndexSearch
from zocrates_nb.records import LibraryInfo

__all__ = [
    "rrf",
    "prepare_query",
    "check_filters",
    "SearchHit",
    "HybridIndex",
    "MODES",
    "MAX_QUERY_CHARS",
    "FILTER_NAMES",
    "REBUILD_HINT",
    "DEFAULT_RRF_K",
]


class HybridIndex(IndexConsistency, IndexSearch):
    """FTS5 + vectors for one data directory; the ``DocumentIndexer`` the corpus calls.

    Constructor: see :class:`zocrates_nb.index.core.IndexCore` (``paths``, ``config``,
    ``embedder``, ``vectors``, ``auto_repair_limit``).
    """

    def document_keys(self, kind: str | None = None) -> list[str]:
        """Keys of the indexed documents ("note" / "paper" / all), sorted."""
        sql = "SELECT key FROM index_documents" + (" WHERE kind = ?" if kind else "") + " ORDER BY key"
        return self._read(lambda conn: [k for (k,) in conn.execute(sql, (kind,) if kind else ())])

    def libraries(self) -> list[tuple[LibraryInfo, int]]:
        """The libraries the index holds documents of (the first-read first), each with its document count."""
        return self._read(known_libraries)

    def resolve_library(self, value: str) -> LibraryInfo:
        """The library a name or id names (a QueryError listing them when none)."""
        return self._read(lambda conn: resolve_library(conn, value))

    def chunk_count(self) -> int:
        """How many chunks the lexical index holds (the count vectors must match)."""
        return self._read(lambda conn: fts.count_filtered(conn, None))

    def document_chunks(self, key: str) -> list[fts.ChunkRow]:
        """All indexed chunks of one document, in order (for ``explain`` and findability checks)."""

        def read(conn: sqlite3.Connection) -> list[fts.ChunkRow]:
            ids = [
                cid for (cid,) in conn.execute("SELECT chunk_id FROM chunks WHERE key = ? ORDER BY chunk_index", (key,))
            ]
            rows = fts.chunk_rows(conn, ids)
            return [rows[c] for c in ids if c in rows]

        return self._read(read)

    # ------------------------------------------------------------------ status
    def stats(self) -> dict[str, Any]:
        """Counts for status displays; opens the vector store only if already open."""

        def counts(conn: sqlite3.Connection) -> dict[str, Any]:
            per_kind = dict(conn.execute("SELECT kind, count(*) FROM index_documents GROUP BY kind"))
            return {
                "chunks": conn.execute("SELECT count(*) FROM chunks").fetchone()[0],
                "documents": sum(per_kind.values()),
                "notes": per_kind.get("note", 0),
                "papers": per_kind.get("paper", 0),
            }

        out = self._read(counts)
        out.update(
            {
                "pending_vectors": len(self._pending),
                "rrf_k": self.rrf_k,
                "vectors": self._vectors.count() if self._vectors is not None else None,
                "model": getattr(self._embedder, "model_id", None),
            }
        )
        return out

    def integrity_check(self) -> None:
        """Raise IndexCorruptError when the FTS index disagrees with its content table."""
        self._read(fts.integrity_check)

    def close(self) -> None:
        if self._warmup is not None:
            self._warmup.wait()  # never close the store under the loading thread
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._allowed_ids is not None:
            self._allowed_ids.close()
        if self._impacts is not None:
            self._impacts.close()
        if self._side is not None:
            self._side.close()
        with self._lock, self._store_lock:
            if self._vectors is not None:
                self._vectors.close()
                self._vectors = None
            self._conn.close()
        self._close_embedder()

    def __repr__(self) -> str:
        return f"HybridIndex({self.paths.meta_db}, rrf_k={self.rrf_k})"
