"""Lexical retrieval for questions: which FTS5 rows to rank, so common words stay cheap.

FTS5 computes bm25 for every row a query matches before it can return the top n
(reliability-perf-anchors.md §2.3/§2.6: cost linear in the matches). An OR of a question's
words matches half the index when the question holds everyday words ("patients", "cells",
"results"): 28,000 of 60,000 chunks, 50–130 ms. Here only the rows of the rarer words are
ranked, the everyday words still score them (their exact bm25), and a plan that would leave
too few rows falls back to the plain OR query. At 60,000 chunks that ranks a median 3,900 rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from zocrates_nb.index import fts
from zocrates_nb.index.ranking import TermPlan, candidate_budget, plan_terms

__all__ = ["plan_match", "DocumentFrequencies", "lexical_search"]


def _any(terms: Iterable[str]) -> str:
    return " OR ".join(quoted for t in terms if (quoted := fts.quote_fts(t)))


def plan_match(plan: TermPlan) -> tuple[str | None, float]:
    """The MATCH expression for a :class:`TermPlan`, and the factor its bm25 scores carry.

    ``(S) AND (S OR C OR C)``: only rows with a selecting word are ranked, and every word
    still scores them. FTS5 sums bm25 over the expression's phrases, so S appears twice and C
    is written twice too: each candidate's rank is then exactly 2 × its plain-OR bm25, and the
    order is unchanged (checked in tests/test_fts.py).
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
) -> list[tuple[str, str, float]]:
    """bm25-ranked ``(chunk_id, key, bm25)`` for a natural-language question (best first).

    The scores of ``search(conn, natural_query(query), …)``, but only rows holding one of the
    query's rarer words are ranked (:func:`~zocrates_nb.index.ranking.plan_terms`), so a question
    full of everyday words costs a few thousand rows, not half the index. The price: a row with
    only everyday words can no longer take a place in the top ``limit`` (on SciFact train this
    changed no nDCG@10, Recall@100 or MRR@10 figure). When the candidates give fewer than ``limit``
    results (a tiny index, a selective filter), the plain OR query runs instead, so a result list
    is never shorter than before; a filter expected to leave too few candidates
    (``DocumentFrequencies.filtered_rows``) goes to the plain query directly.
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
    match, scale = plan_match(plan)
    found = fts.search(conn, match, limit, filters)
    if plan.restricted and len(found) < limit:
        return fts.search(conn, _any(terms), limit, filters)
    return [(cid, key, score / scale) for cid, key, score in found] if scale != 1.0 else found
