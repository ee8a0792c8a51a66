"""Which of my notes can my assistant not find? A known-item test that needs no labels.

For every indexed note we take one sentence from its middle, remove the words of the note's
title (so the query cannot lean on them), search the whole library with papers competing
for the slots, and record where the note lands. Mean reciprocal rank (MRR@10) and Recall@5
summarise the library; the notes that rank worst are listed, because those are the ones a
researcher would ask about and not get back. ``zocrates-nb explain QUERY KEY`` then says why.

The query builder is pure (:func:`known_item_query`); only :func:`run_findability` searches.
"""

from __future__ import annotations

import re
import time
from typing import Any

__all__ = ["known_item_query", "run_findability", "MIN_QUERY_WORDS"]

MIN_QUERY_WORDS = 5
MAX_QUERY_WORDS = 30
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w[\w'-]*", re.UNICODE)


def _prose_lines(text: str) -> list[str]:
    """Lines that are prose: no headings, table rows, code, quotes' markers or list bullets."""
    out, fence = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fence = not fence
            continue
        if fence or not stripped or stripped.startswith(("#", "|", "$$", "[image")):
            continue
        out.append(re.sub(r"^([-*+>]|\d+\.)\s+", "", stripped))
    return out


def known_item_query(title: str, text: str) -> str | None:
    """A query from the middle sentence of ``text`` with ``title``'s words removed (None if too short)."""
    title_words = {w.lower() for w in _WORD.findall(title or "")}
    sentences = [s for line in _prose_lines(text) for s in _SENTENCE.split(line) if s.strip()]
    candidates = []
    for sentence in sentences:
        words = [w for w in _WORD.findall(sentence) if w.lower() not in title_words]
        if len(words) >= MIN_QUERY_WORDS:
            candidates.append(" ".join(words[:MAX_QUERY_WORDS]))
    if not candidates:
        return None
    return candidates[len(candidates) // 2]


def run_findability(index: Any, *, k: int = 5, worst: int = 10, llm: Any = None) -> dict:
    """Known-item MRR@10 and Recall@k over every note in ``index``, and the ``worst`` notes.

    ``llm`` is accepted for a paraphrase pass but not used yet: the offline check stands alone.
    """
    started = time.perf_counter()
    rows, skipped = [], []
    for key in index.document_keys("note"):
        chunks = index.document_chunks(key)
        title = chunks[0].title if chunks else ""
        query = known_item_query(title, "\n".join(c.text for c in chunks))
        if query is None:
            skipped.append(key)
            continue
        ranking = [h.key for h in index.search(query, k=10)]
        rank = ranking.index(key) + 1 if key in ranking else None
        rows.append({"key": key, "title": title, "query": query, "rank": rank})
    n = len(rows)
    mrr = sum(1.0 / r["rank"] for r in rows if r["rank"]) / n if n else 0.0
    recall = sum(1 for r in rows if r["rank"] and r["rank"] <= k) / n if n else 0.0
    least = sorted(rows, key=lambda r: (-(r["rank"] or 99), r["key"]))[:worst]
    return {
        "notes": n,
        "skipped": skipped,
        "mrr@10": round(mrr, 4),
        f"recall@{k}": round(recall, 4),
        "least_findable": [r for r in least if (r["rank"] or 99) > 1],
        "seconds": round(time.perf_counter() - started, 2),
        "dataset": "my-notes",
    }
