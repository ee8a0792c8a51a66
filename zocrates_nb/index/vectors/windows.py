"""Vector ids for the dense windows of a chunk longer than the model reads (``vectors.windows``).

Why windows: the embedder reads 256 word pieces; of a longer chunk it sees only the head. A
product chunk is cut to fit (index/records.py), so it has one vector. An index of whole
documents (the BEIR evaluation index: one chunk per abstract, so that bm25 reads the whole
document) can ask for windows instead: each window of the chunk gets its own vector and the
chunk's cosine is its best window's (MaxP). The first window keeps the chunk id, so an index
without windows has exactly the ids it always had; window n > 0 is ``<chunk id>#w<n>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["WINDOW_DEPTH", "best_per_chunk", "chunk_of", "is_window", "window_id", "windows_of"]

#: A windowed search asks the store for this many times its depth, so that the best window of
#: each of the first ``depth`` chunks is among them (an abstract has 1 to 3 windows).
WINDOW_DEPTH = 4
_WINDOW = re.compile(r"#w[1-9][0-9]*$")


def window_id(chunk_id: str, n: int) -> str:
    """The vector id of window ``n`` of ``chunk_id`` (window 0 is the chunk id itself)."""
    return chunk_id if n == 0 else f"{chunk_id}#w{n}"


def is_window(vector_id: str) -> bool:
    """True for the vector of a second or later window."""
    return "#w" in vector_id and _WINDOW.search(vector_id) is not None


def chunk_of(vector_id: str) -> str:
    """The chunk a vector belongs to."""
    return _WINDOW.sub("", vector_id) if "#w" in vector_id else vector_id


def best_per_chunk(results: Iterable[tuple[str, float]], depth: int | None = None) -> list[tuple[str, float]]:
    """``(vector id, distance)`` nearest first → each chunk once, at its nearest window (MaxP)."""
    seen: set[str] = set()
    out: list[tuple[str, float]] = []
    for vector_id, distance in results:
        chunk = chunk_of(vector_id)
        if chunk not in seen:
            seen.add(chunk)
            out.append((chunk, distance))
            if depth is not None and len(out) >= depth:
                break
    return out


def windows_of(vector_ids: Sequence[str], chunk_ids: Iterable[str]) -> list[str]:
    """The second and later windows, among ``vector_ids``, of the chunks in ``chunk_ids``."""
    chunks = set(chunk_ids)
    return [v for v in vector_ids if is_window(v) and chunk_of(v) in chunks]
