"""Lexical retrieval for questions: which FTS5 rows to rank, so common words stay cheap.

FTS5 computes bm25 for every row a query matches before it can return the top n
(reliability-perf-anchors.md §2.3/§2.6: cost linear in the matches). An OR of a question's
words matches half the index when the question holds everyday words ("patients", "cells",
"results"): 28,000 of 60,000 chunks, 50–130 ms. Here only the rows of the rarer words are
ranked, the everyday words still score them (their exact bm25), and a plan that would leave
too few rows falls back to the plain OR query. At 60,000 chunks that ranks a median 3,900 rows.
Where the everyday words' shares of bm25 are cached (index/lexical/impacts.py), FTS5 ranks only the rare
words and the shares are added with numpy.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from zocrates_nb.index.lexical import fts
from zocrates_nb.index.rank.ranking import TermPlan, candidate_budget, plan_terms

if TYPE_CHECKING:
    from zocrates_nb.index.lexical.impacts import TermImpacts
    from zocrates_nb.index.lexical.side_reads import SideReader

__all__ = ["plan_match", "DocumentFrequencies", "lexical_search"]

_log = logging.getLogger(__name__)


def _any(terms: Iterable[str]) -> str:
    return " OR ".join(quoted for t in terms if (quoted := fts.quote_fts(t)))


def plan_match(plan: TermPlan) -> tuple[str | None, float]:
    """The MATCH expression for a :class:`TermPlan`, and the factor its bm25 scores carry.

    ``(S) AND (S OR C OR C)``: only rows with a selecting word are ranked, and every word
    still scores them. FTS5 sums bm25 over the expression's phrases, so S appears twice and C
    is written twice too: each candidate's rank is then exactly 2 × its plain-OR bm25, and the
    order is unchanged (checked in tests/index/lexical/test_fts.py).
    """
    if not plan.select:
        return None, 1.0
    if not plan.score_only:
        return _any(plan.select), 1.0
    both = list(plan.select) + list(plan.score_only) * 2
    return f"({_any(plan.select)}) AND ({_any(both)})", 2.0


class DocumentFrequencies:
    """How many chunks each query word matches, cached until the index changes.

    One per connection (not thread-safe: callers hold their connection's lock). The counts
    only decide which words select candidate rows, so the cache is simply dropped whenever
    ``PRAGMA data_version`` (another connection committed) or our own ``total_changes`` moves.
    A cold word costs one ``count(*)`` of its matches, capped — far cheaper than ranking them.
    """

    def __init__(self, max_words: int = 20_000) -> None:
        self.max_words = max_words
        self._version: tuple[int, int] | None = None
        self._rows = 0
        self._counts: dict[str, int] = {}
        self._filtered: dict[tuple[Any, ...], int] = {}

    def _current(self, conn: sqlite3.Connection) -> None:
        version = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
        if version != self._version or len(self._counts) > self.max_words:
            self._counts.clear()
            self._filtered.clear()
            self._rows = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            self._version = version

    def lookup(self, conn: sqlite3.Connection, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """``(indexed rows, {term: matching rows})``; counts stop just above the candidate budget.

        A word matching more rows than the budget can never select candidates, so counting
        its matches further would only cost time (a word in half of 60,000 chunks: 5×).
        """
        self._current(conn)
        cap = candidate_budget(self._rows) + 1
        for term in terms:
            if term not in self._counts:
                self._counts[term] = conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)",
                    (fts.quote_fts(term), cap),
                ).fetchone()[0]
        return self._rows, {t: self._counts[t] for t in terms}

    def filtered_rows(self, conn: sqlite3.Connection, filters: Mapping[str, str]) -> int:
        """How many chunks pass ``filters`` (one count per filter and index version)."""
        self._current(conn)
        key = tuple(sorted(filters.items()))
        if key not in self._filtered:
            self._filtered[key] = fts.count_filtered(conn, filters)
        return self._filtered[key]


def lexical_search(
    conn: sqlite3.Connection,
    query: str,
    limit: int,
    filters: Mapping[str, str] | None = None,
    frequencies: DocumentFrequencies | None = None,
    impacts: TermImpacts | None = None,
    side: SideReader | None = None,
) -> list[tuple[str, str, float]]:
    """bm25-ranked ``(chunk_id, key, bm25)`` for a natural-language question (best first).

    The scores of ``search(conn, natural_query(query), …)``, but only rows holding one of the
    query's rarer words are ranked (:func:`~zocrates_nb.index.rank.ranking.plan_terms`), so a question
    full of everyday words costs a few thousand rows, not half the index. The price: a row with
    only everyday words can no longer take a place in the top ``limit`` (on SciFact train this
    changed no nDCG@10, Recall@100 or MRR@10 figure). When the candidates give fewer than ``limit``
    results (a tiny index, a selective filter), the plain OR query runs instead, so a result list
    is never shorter than before; a filter expected to leave too few candidates
    (``DocumentFrequencies.filtered_rows``) goes to the plain query directly. With ``impacts``, an
    unfiltered restricted plan takes the cached everyday words' shares from there; with ``side``, its
    two FTS5 queries run at once (see :func:`_split_ranking`).
    """
    terms = fts.query_terms(query)
    if not terms or limit <= 0:
        return []
    frequencies = frequencies or DocumentFrequencies()
    total, counts = frequencies.lookup(conn, terms)
    plan = plan_terms(terms, counts, total)
    if plan.restricted and filters:
        # a selective filter keeps few candidates: when they would not fill twice the window,
        # ranking every match at once is cheaper than a restricted try and the fallback after it
        passing = frequencies.filtered_rows(conn, filters) / max(total, 1)
        if passing * sum(counts[t] for t in plan.select) < 2 * limit:
            plan = TermPlan(select=tuple(terms))
    if plan.score_only and not filters and sum(counts[t] for t in plan.select) <= candidate_budget(total):
        found = _split_ranking(conn, plan, limit, impacts, side)
        if found is not None:
            return found if len(found) >= limit else fts.search(conn, _any(terms), limit)
    match, scale = plan_match(plan)
    found = fts.search(conn, match, limit, filters)
    if plan.restricted and len(found) < limit:
        return fts.search(conn, _any(terms), limit, filters)
    return [(cid, key, score / scale) for cid, key, score in found] if scale != 1.0 else found


def _versioned(match: str) -> Callable[[sqlite3.Connection], tuple[Any, tuple[Any, Any]]]:
    from zocrates_nb.index.lexical.impacts import index_version, ranked_rows

    return lambda conn: (index_version(conn), ranked_rows(conn, match))


def _side_result(beside: Future[tuple[Any, tuple[Any, Any]]]) -> tuple[Any, tuple[Any, Any]]:
    """The side connection's list, or ``(None, empty)`` when it failed: the caller reads it itself."""
    try:
        return beside.result()
    except sqlite3.Error as exc:
        _log.warning("The second read connection failed (%s); reading on the search's own connection.", exc)
        return None, ((), ())


def _split_ranking(
    conn: sqlite3.Connection,
    plan: TermPlan,
    limit: int,
    impacts: TermImpacts | None,
    side: SideReader | None = None,
) -> list[tuple[str, str, float]] | None:
    """The restricted plan's ranking without FTS5 scoring any word twice.

    ``plan_match`` makes FTS5 score the selecting words and the everyday words twice in every
    candidate row. Here FTS5 returns two lists instead: the rare words' bm25 of every candidate
    (``S``), and, for the candidates with an everyday word whose shares are not cached, the bm25 of
    the rare words plus those (``(S) AND (U)``); each scores every phrase once. With ``side``, the
    second list is read on another connection at the same time. The cached words' shares
    (index/lexical/impacts.py) are added with numpy. A candidate's score is its plain-OR bm25 to about
    seven digits. At 302,000 chunks: 79 ms for the FTS5 plan, about 50 ms for the split on one
    connection, 35 ms with the second, 21 ms with the everyday words cached (docs/performance.md).
    One read transaction, so the cache's version is the version the rows are read at; a second
    list read at another version (a write between the two) or not read at all (the side connection
    failed, logged) is read again here. None when a write is in progress on ``conn`` (the caller
    runs the FTS5 plan).
    """
    from zocrates_nb.index.lexical.impacts import add_shares, best_rows, index_version, ranked_rows, replace_scores

    if conn.in_transaction:
        return None
    conn.execute("BEGIN")
    try:
        version = index_version(conn)
        cached = impacts.cached(version, plan.score_only) if impacts is not None else {}
        uncached = [w for w in plan.score_only if w not in cached]
        select = _any(plan.select)
        both = f"({select}) AND ({_any(uncached)})" if uncached else None
        beside = side.submit(_versioned(both)) if both and side is not None else None
        rowids, scores = ranked_rows(conn, select)
        if both:
            other_version, other = _side_result(beside) if beside is not None else (version, ranked_rows(conn, both))
            if other_version != version:
                other = ranked_rows(conn, both)
            scores = replace_scores(rowids, scores, *other)
        scores = add_shares(rowids, scores, [cached[w] for w in plan.score_only if w in cached])
        best = best_rows(rowids, scores, limit)
        names = fts.chunk_names(conn, [rowid for rowid, _ in best])
    finally:
        conn.execute("COMMIT")
    ordered = sorted((score, *names[rowid]) for rowid, score in best if rowid in names)
    return [(cid, key, score) for score, cid, key in ordered[:limit]]
