"""Pure pieces of search: query validation, filter checking, reciprocal rank fusion, the hit record.

Kept apart from :mod:`zocrates_nb.index.hybrid` (which does I/O) so the tools, the
CLI and the tests can use them without opening an index.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

from zocrates_nb.errors import QueryError

__all__ = ["MODES", "MAX_QUERY_CHARS", "FILTER_NAMES", "rrf", "prepare_query", "check_filters", "SearchHit"]

MODES = ("hybrid", "lexical", "dense")
MAX_QUERY_CHARS = 2000
FILTER_NAMES = ("item_type", "collection", "parent_key")


def rrf(rank_lists: Mapping[str, Sequence[str]], k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: ``score(d) = Σ 1 / (k + rank_r(d))`` over the lists containing d.

    Ranks are 1-based; an id appearing twice in one list counts at its best rank.
    Ties keep the order of first appearance (lists in the given order), so the
    result is deterministic.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    scores: dict[str, float] = {}
    for ranking in rank_lists.values():
        seen: set[str] = set()
        for rank, doc in enumerate(ranking, start=1):
            if doc in seen:
                continue
            seen.add(doc)
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    order = {doc: i for i, doc in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


def prepare_query(query: Any) -> tuple[str, str | None]:
    """Validate a query: returns ``(query, notice)``; empty → QueryError, oversized → truncated.

    A pasted 100 KB document is not a query: we keep the first ``MAX_QUERY_CHARS``
    characters (cut at a word boundary) and say so, rather than fail or stall FTS.
    """
    if not isinstance(query, str):
        raise QueryError(f"A search query must be text, not {type(query).__name__}.",
                         hint='Pass a string, e.g. search_corpus("cell-type deconvolution").')
    text = " ".join(query.split())
    if not text:
        raise QueryError("The search query is empty.", hint="Type a few words describing what you look for.")
    if len(text) <= MAX_QUERY_CHARS:
        return text, None
    cut = text[:MAX_QUERY_CHARS]
    if " " in cut[-200:]:
        cut = cut.rsplit(" ", 1)[0]
    notice = (f"The query was {len(text):,} characters long; only its first {len(cut):,} "
              "characters were searched.")
    return cut, notice


def check_filters(filters: Mapping[str, Any] | None) -> dict[str, str]:
    """Drop empty values and refuse unknown names (a typo must never silently widen a search)."""
    clean: dict[str, str] = {}
    for name, value in (filters or {}).items():
        if name not in FILTER_NAMES:
            raise QueryError(f"Unknown search filter {name!r}.",
                             hint=f"Use one of: {', '.join(FILTER_NAMES)}.")
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise QueryError(f"The {name} filter must be a string, got {type(value).__name__}.",
                             hint='For example {"item_type": "note"}.')
        clean[name] = value
    return clean


@dataclass
class SearchHit:
    """One result: the best-matching chunk of a document, with provenance and per-retriever ranks."""

    chunk_id: str
    key: str
    kind: str                                   # "note" | "paper"
    parent_key: str | None
    title: str
    text: str                                   # the matching chunk's text
    score: float                                # fused RRF (hybrid), -bm25 (lexical), cosine (dense)
    ranks: dict[str, int | None] = field(default_factory=lambda: {"lexical": None, "dense": None})
    citation: str | None = None
    word_count: int | None = None
    item_type: str | None = None
    section: str | None = None
    parent_title: str | None = None
    abstract: str | None = None
    first_author: str | None = None
    year: int | None = None
    collections: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        out = asdict(self)
        out["collections"] = list(self.collections)
        return out
