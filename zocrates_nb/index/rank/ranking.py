"""Pure pieces of search: query validation, filter checking, reciprocal rank fusion, the hit record.

Kept apart from :mod:`zocrates_nb.index.hybrid` (which does I/O) so the tools, the
CLI and the tests can use them without opening an index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from zocrates_nb.errors import QueryError
from zocrates_nb.records import PageSpan

__all__ = [
    "MODES",
    "MAX_QUERY_CHARS",
    "FILTER_NAMES",
    "CANDIDATE_SHARE",
    "CANDIDATE_FLOOR",
    "TermPlan",
    "candidate_budget",
    "plan_terms",
    "rrf",
    "prepare_query",
    "check_filters",
    "unknown_collection_error",
    "unknown_parent_error",
    "SearchHit",
]

MODES = ("hybrid", "lexical", "dense")
MAX_QUERY_CHARS = 2000
FILTER_NAMES = ("item_type", "collection", "parent_key", "library")
#: Lexical candidates come from a query's rarest words, taken while their document frequencies
#: add up to at most this share of the indexed chunks (never less than ``CANDIDATE_FLOOR`` rows).
#: FTS5 must compute bm25 for every row it ranks (about 2–4 µs each), and an OR of everyday words
#: matches half the index: at 60,000 chunks that was 28,000 rows and ~50–130 ms a query. With 0.10
#: the SciFact-train nDCG@10, Recall@100 and MRR@10 are unchanged (0.7083 / 0.9291 / 0.6807).
CANDIDATE_SHARE = 0.10
CANDIDATE_FLOOR = 2000
#: ...and never more than this many rows, so ranking cost stops growing with the library: at
#: 302,000 chunks the share alone let an everyday question rank a median 21,700 rows (FTS about
#: 2.5x slower than with the cap). Below 80,000 chunks the cap changes nothing. What it costs was
#: simulated on SciFact train by shrinking the budget to the share the cap leaves at 302,000 chunks
#: (2.6 %): lexical nDCG@10 0.7083 -> 0.7061, Recall@100 0.9291 -> 0.9173 (benchmarks/bench_ranked_rows.py).
CANDIDATE_CAP = 8000


@dataclass(frozen=True)
class TermPlan:
    """How a word query is split for FTS5.

    ``select``: words whose rows are ranked (the candidates). ``score_only``: words that still add
    their bm25 share to a candidate's score but do not pull in rows of their own. ``dropped``: words
    in at least half of the rows, which FTS5's bm25 gives an IDF of 1e-6 anyway.
    """

    select: tuple[str, ...]
    score_only: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    @property
    def restricted(self) -> bool:
        """True when some rows the plain OR query would rank are left out of the candidates."""
        return bool(self.score_only or self.dropped)


def candidate_budget(total_rows: int, *, share: float | None = None, floor: int | None = None) -> int:
    """Most rows a query's selecting words may match together (module defaults when None)."""
    share = CANDIDATE_SHARE if share is None else share
    floor = CANDIDATE_FLOOR if floor is None else floor
    return int(min(max(share * total_rows, floor), max(CANDIDATE_CAP, floor)))


def plan_terms(
    terms: Sequence[str],
    doc_freq: Mapping[str, int],
    total_rows: int,
    *,
    share: float | None = None,
    floor: int | None = None,
) -> TermPlan:
    """Choose the candidate-selecting words of a query from their document frequencies.

    Rarest first, a word joins ``select`` while the selected frequencies sum to at most
    ``max(share * total_rows, floor)`` (module defaults when None); the rarest word always does, so a
    query of everyday words still finds rows. The cost of ranking is then bounded by the budget, not by
    the commonest word, and because every other word still scores the candidates, they keep their exact bm25 scores.
    Stale or approximate frequencies only change which rows are candidates, never their scores;
    a frequency capped just above the budget (what :class:`~zocrates_nb.index.lexical.split.DocumentFrequencies`
    counts) gives the same plan, except that words sharing the cap keep query order.
    """
    terms = list(dict.fromkeys(terms))
    if not terms:
        return TermPlan(())
    budget = candidate_budget(total_rows, share=share, floor=floor)
    chosen: set[str] = set()
    spent = 0
    for term in sorted(terms, key=lambda t: doc_freq.get(t, 0)):  # stable: ties keep query order
        df = doc_freq.get(term, 0)
        if chosen and spent + df > budget:
            break
        chosen.add(term)
        spent += df
    rest = [t for t in terms if t not in chosen]
    half = total_rows / 2
    return TermPlan(
        select=tuple(t for t in terms if t in chosen),
        score_only=tuple(t for t in rest if doc_freq.get(t, 0) < half),
        dropped=tuple(t for t in rest if doc_freq.get(t, 0) >= half),
    )


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
        raise QueryError(
            f"A search query must be text, not {type(query).__name__}.",
            hint='Pass a string, e.g. search_corpus("cell-type deconvolution").',
        )
    from zocrates_nb.textnorm import clean_text

    text = " ".join(clean_text(query).split())  # invalid code points would crash the retrievers
    if not text:
        raise QueryError("The search query is empty.", hint="Type a few words describing what you look for.")
    if len(text) <= MAX_QUERY_CHARS:
        return text, None
    cut = text[:MAX_QUERY_CHARS]
    if " " in cut[-200:]:
        cut = cut.rsplit(" ", 1)[0]
    notice = f"The query was {len(text):,} characters long; only its first {len(cut):,} characters were searched."
    return cut, notice


def check_filters(filters: Mapping[str, Any] | None) -> dict[str, str]:
    """Drop empty values and refuse unknown names (a typo must never silently widen a search)."""
    clean: dict[str, str] = {}
    for name, value in (filters or {}).items():
        if name not in FILTER_NAMES:
            raise QueryError(f"Unknown search filter {name!r}.", hint=f"Use one of: {', '.join(FILTER_NAMES)}.")
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise QueryError(
                f"The {name} filter must be a string, got {type(value).__name__}.",
                hint='For example {"item_type": "note"}.',
            )
        clean[name] = value
    return clean


def unknown_collection_error(value: str, known: Sequence[str]) -> QueryError | None:
    """The error for a ``collection`` filter naming no collection in the index, else None.

    ``known``: every collection key and name the index holds. Without this a typo'd
    collection silently returned zero hits, which reads as "the library has nothing".
    The hint lists the names (not the 8-character keys, which nobody types) and points
    out a near miss in letter case, since names match exactly.
    """
    if value in known:
        return None
    from zocrates_nb.records import is_valid_key

    names = sorted({k for k in known if not is_valid_key(k)}, key=str.casefold)
    same_but_case = [n for n in names if n.casefold() == value.casefold()]
    if same_but_case:
        hint = f"Did you mean {same_but_case[0]!r}? Collection names match exactly."
    elif names:
        shown = ", ".join(repr(n) for n in names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        hint = f"Use a collection key or one of these names: {shown} (wb.collections() lists them with their keys)."
    else:
        hint = "No indexed document is filed in a collection; drop the collection filter."
    return QueryError(f"No collection {value!r} in the index.", hint=hint)


def unknown_parent_error(key: str, known: bool) -> QueryError | None:
    """The error for a ``parent_key`` filter naming a key that no indexed document has or points to."""
    if known:
        return None
    return QueryError(
        f"No document in the index has the key {key!r}, and no note is attached to it.",
        hint="Use a paper key shown in search results ([Paper Key: P] / Parent Paper Key), "
        "or drop the parent_key filter.",
    )


@dataclass
class SearchHit:
    """One result: the best-matching chunk of a document, with provenance and per-retriever ranks."""

    chunk_id: str
    key: str
    kind: str  # "note" | "paper" | "annotation"
    parent_key: str | None
    title: str
    text: str  # the matching chunk's text
    score: float  # fused RRF (hybrid), -bm25 (lexical), cosine (dense)
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
    pages: PageSpan | None = None  # a paper chunk read from its PDF: the pages it covers; an annotation's page
    #: a PDF annotation's marks: type, text, comment, colour (and meaning), page label, attachment, library
    annotation: dict[str, Any] | None = None
    #: the library it lives in when the index knows it (a ``records.LibraryInfo``; None: the source's first)
    library: Any = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["collections"] = list(self.collections)
        return out
