"""The vector store's read queries — nearest neighbours, stored vectors, ids, metadata — as a mixin.

Why apart from index/vectors/store.py: these reads are written against the Chroma collection that
``VectorStore._run`` hands them (under the cross-process lock, on a fresh-enough client), so they
need no ``chromadb`` import and none of the locking, opening or error mapping that vectors.py is
about. ``VectorStore`` inherits them; nothing else uses this class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["VectorReads"]


class VectorReads:
    """Reads of a :class:`~zocrates_nb.index.vectors.store.VectorStore`; it supplies ``dim`` and ``_run``."""

    dim: int

    def _run(self, operation: Any, *, write: bool = False) -> Any:  # pragma: no cover — VectorStore's
        raise NotImplementedError

    def query(
        self,
        embedding: np.ndarray | Sequence[float],
        k: int,
        where: Mapping[str, Any] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest chunks as ``(chunk_id, cosine distance)``, nearest first.

        ``ids`` restricts the search to those chunk ids (a pre-computed filter: cheaper than a
        metadata ``where`` for a few thousand ids, see index/filtered.py).
        """
        vector = np.asarray(embedding, dtype=np.float32).reshape(-1)
        if vector.shape != (self.dim,):
            raise ValueError(f"expected a query vector of {self.dim} dimensions, got {vector.shape}")
        if k <= 0:
            return []

        def run(col: Any) -> list[tuple[str, float]]:
            # No count() first: it cost 4 ms of a 6 ms query at 60,000 vectors, and Chroma 1.x
            # answers an oversized n_results (or an empty collection) with what it has. Servers
            # that refuse instead get the count-capped retry.
            query = dict(query_embeddings=[vector], where=dict(where) if where else None, include=["distances"])
            if ids is not None:
                query["ids"] = list(ids)
            try:
                result = col.query(n_results=int(k), **query)
            except Exception as exc:  # noqa: BLE001 — only the "more results than elements" refusal is retried
                text = str(exc).lower()
                if "number of elements" not in text and "greater than" not in text and "empty" not in text:
                    raise
                total = col.count()
                if total == 0:
                    return []
                result = col.query(n_results=min(int(k), total), **query)
            return [(cid, float(dist)) for cid, dist in zip(result["ids"][0], result["distances"][0], strict=False)]

        return self._run(run)

    def embeddings(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The stored vectors of those ``ids`` that exist (for an exact search over a small set)."""
        result = self._run(lambda col: col.get(ids=[str(i) for i in ids], include=["embeddings"]))
        found = list(result["ids"])
        matrix = np.asarray(result["embeddings"], dtype=np.float32).reshape(len(found), self.dim)
        return found, matrix

    def count(self) -> int:
        return int(self._run(lambda col: col.count()))

    def ids_for_key(self, key: str) -> list[str]:
        return sorted(self._run(lambda col: col.get(where={"key": str(key)}, include=[])["ids"]))

    def get_metadata(self, ids: Sequence[str]) -> dict[str, dict]:
        """Metadata of these chunk ids (missing ids are absent from the result)."""
        if not ids:
            return {}
        result = self._run(lambda col: col.get(ids=[str(i) for i in ids], include=["metadatas"]))
        return dict(zip(result["ids"], result["metadatas"], strict=False))

    def all_ids(self) -> list[str]:
        def run(col: Any) -> list[str]:
            ids: list[str] = []
            page = 5000
            while True:
                got = col.get(include=[], limit=page, offset=len(ids))["ids"]
                ids.extend(got)
                if len(got) < page:
                    return ids

        return sorted(self._run(run))
