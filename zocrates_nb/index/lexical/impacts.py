"""Everyday words' shares of bm25, cached, so a big library's lexical search ranks only rare-word rows.

Why: lexical.py ranks only the rows of a question's rarer words, but FTS5 still had to score
every everyday word (``TermPlan.score_only``) in each of those rows, reading its long posting
list row by row. At 302,000 chunks that was two thirds of the lexical side: 61 ms a question,
17 ms of it for the rare words. FTS5's bm25 of an OR query is the sum of its words' shares,
``idf(word) × f(weighted tf, row length)``, and a word's share of a row stays the same until the
index changes. So each everyday word's shares ("impacts") are taken once from FTS5 itself (the
rank of the one-word query) and kept as two numpy arrays, rowids and scores. A search then asks
FTS5 only for the rare words' rows and adds the cached shares (kept as float32: the scores agree
with the FTS5 plan's to about seven digits). The lexical side went from 35 ms (split, nothing
cached) to 21 ms there (docs/performance.md).

Taking a word's impacts ranks every row it occurs in (about 2–4 µs a row: 50–90 ms for a word in
22,000 of 302,000 chunks), so a search never waits for them: FTS5 scores the words not cached yet
in that search (lexical.py's split ranking), and a background thread (niced, on its own read-only
connection) takes a word the second time a search misses it. Everyday words recur from question
to question ("patients", "increased", "associated"), so they are soon cached; on the synthetic
302,000-chunk library, whose everyday vocabulary is wide, about half of them were for new
questions. Any committed write to the index rewrites FTS5's structure
record, and that record (with the rank function) is the cache's version: rows, idf and the
average length all move with a write, so the cache starts empty again at a new version.
"""

from __future__ import annotations

import logging
import os
import queue
import sqlite3
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zocrates_nb.index.lexical import fts

__all__ = [
    "MAX_POSTINGS",
    "ADMIT_AFTER",
    "TermImpacts",
    "index_version",
    "ranked_rows",
    "add_shares",
    "replace_scores",
    "best_rows",
]

_log = logging.getLogger(__name__)

#: Cached (rowid, share) pairs in all, 8 bytes each: 192 MB at most. A word in half of 302,000
#: chunks takes 151,000; an everyday word at that size typically 22,000 to 30,000, so about 800
#: words fit (a SciFact-like library of that size has about 1,000 words above the candidate budget).
MAX_POSTINGS = 24_000_000
#: A word is taken the second time a search misses it: a word seen once is likely to stay a
#: one-off, and taking it costs as much as ranking it in five searches.
ADMIT_AFTER = 2

_VERSION_SQL = (
    "SELECT (SELECT block FROM chunks_fts_data WHERE id = 10), (SELECT v FROM chunks_fts_config WHERE k = 'rank')"
)


#: One row for every match: SQLite steps through the matches without the GIL (a row-by-row fetch
#: would take the GIL for each of 5,000 to 150,000 rows, stalling the query beside it, and is slower).
_RANKED_SQL = "SELECT group_concat(rowid), group_concat(rank) FROM chunks_fts WHERE chunks_fts MATCH ?"


def index_version(conn: sqlite3.Connection) -> tuple[Any, Any]:
    """FTS5's structure record (rowid 10 of ``chunks_fts_data``) and the rank function.

    Every committed insert, delete or merge writes a new structure record, so two equal versions
    mean the same rows, statistics and weights, and so the same shares.
    """
    block, rank = conn.execute(_VERSION_SQL).fetchone()
    return block, rank


def ranked_rows(conn: sqlite3.Connection, match: str) -> tuple[Any, Any]:
    """Every row ``match`` finds and its bm25 (FTS5's rank), sorted by rowid, as numpy arrays."""
    import numpy as np

    rowids_text, scores_text = conn.execute(_RANKED_SQL, (match,)).fetchone()
    rowids = np.fromstring(rowids_text or "", dtype=np.int64, sep=",")
    scores = np.fromstring(scores_text or "", dtype=np.float64, sep=",")
    order = np.argsort(rowids, kind="stable")
    return rowids[order], scores[order]


def _positions(sorted_rows: Any, wanted: Any) -> tuple[Any, Any]:
    """Where each of ``wanted`` sits in ``sorted_rows``, and whether it is there at all."""
    import numpy as np

    at = np.searchsorted(sorted_rows, wanted)
    inside = at < len(sorted_rows)
    at[~inside] = 0
    return at, inside & (sorted_rows[at] == wanted)


def add_shares(rowids: Any, scores: Any, shares: Sequence[tuple[Any, Any]]) -> Any:
    """``scores`` (bm25 of ``rowids``, sorted ascending) plus each word's share where it occurs.

    Pure: each share is ``(rowids, scores)`` of one word, sorted by rowid; a row without the
    word gains nothing, as in FTS5, where a phrase absent from a row adds 0 to its bm25.
    """
    import numpy as np

    total = np.array(scores, dtype=np.float64, copy=True)
    for word_rows, word_scores in shares:
        if not len(word_rows) or not len(rowids):
            continue
        at, hit = _positions(word_rows, rowids)
        total += np.where(hit, word_scores[at], 0.0)
    return total


def replace_scores(rowids: Any, scores: Any, other_rowids: Any, other_scores: Any) -> Any:
    """``scores`` with the rows of ``other_rowids`` (a subset, both sorted) taking ``other_scores``."""
    import numpy as np

    total = np.array(scores, dtype=np.float64, copy=True)
    if len(other_rowids) and len(rowids):
        at, found = _positions(rowids, other_rowids)
        total[at[found]] = other_scores[found]
    return total


def best_rows(rowids: Any, scores: Any, limit: int) -> list[tuple[int, float]]:
    """The ``limit`` best (lowest: FTS5's rank is minus bm25) ``(rowid, score)``, with every row
    tied with the last one kept, so the caller can settle the tie by chunk id."""
    import numpy as np

    if limit <= 0 or not len(rowids):
        return []
    if len(rowids) > limit:
        cut = np.partition(scores, limit - 1)[limit - 1]
        keep = np.flatnonzero(scores <= cut)
    else:
        keep = np.arange(len(rowids))
    return [(int(rowids[i]), float(scores[i])) for i in keep]


class TermImpacts:
    """Per-word bm25 shares for one index version, filled in the background, evicted least recently used.

    ``cached(version, words)`` answers with the cached words and queues the missing ones;
    a daemon thread takes them through its own read-only connection to ``database`` (with
    ``background=False`` nothing is taken: the one-shot command line never pays for a thread).
    """

    def __init__(self, database: Path | str, max_postings: int = MAX_POSTINGS, *, background: bool = True) -> None:
        self.database = Path(database)
        self.max_postings = max_postings
        self.background = background
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._version: tuple[Any, Any] | None = None
        self._cache: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
        self._postings = 0
        self._wanted: list[str] = []  # queued, not yet taken (deduplicated)
        self._seen: dict[str, int] = {}  # searches that missed each word (across versions)
        self._busy = 0  # words being taken right now
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.taken = 0  # words whose impacts were computed (for benchmarks and tests)
        self.hits = 0  # words a search found cached
        self.misses = 0  # words a search had FTS5 score

    # ------------------------------------------------------------------ the search side
    def cached(self, version: tuple[Any, Any], words: Sequence[str]) -> dict[str, tuple[Any, Any]]:
        """The ``(rowids, scores)`` of those ``words`` cached at ``version``; the others are queued."""
        with self._lock:
            if version != self._version:
                self._cache.clear()
                self._postings = 0
                self._version = version
            found = {}
            for word in words:
                if word in self._cache:
                    self._cache.move_to_end(word)
                    found[word] = self._cache[word]
                elif self.background and not self._closed and word not in self._wanted and self._admit(word):
                    self._wanted.append(word)
                    self._queue.put(word)
            self.hits += len(found)
            self.misses += len(words) - len(found)
            if self._wanted and not self._closed:
                self._start()
            return found

    def _admit(self, word: str) -> bool:
        """Count a miss of ``word`` (under the lock); True once it has been missed ``ADMIT_AFTER`` times."""
        if len(self._seen) > 200_000:
            self._seen.clear()  # a bound on memory; the words in use come back within a few searches
        self._seen[word] = self._seen.get(word, 0) + 1
        return self._seen[word] >= ADMIT_AFTER

    def take(self, conn: sqlite3.Connection, word: str) -> bool:
        """Compute ``word``'s shares on ``conn`` now and cache them if the version still holds.

        Returns whether they were cached: a write since the last search (another version) or a
        word too common for the budget leaves the cache as it was.
        """
        import numpy as np

        own = not conn.in_transaction
        if own:
            conn.execute("BEGIN")  # one snapshot: the version and the shares agree
        try:
            version = index_version(conn)
            with self._lock:
                if version != self._version or word in self._cache:
                    return False
            match = fts.quote_fts(word)
            rowids, scores = ranked_rows(conn, match) if match else (np.zeros(0, np.int64), np.zeros(0))
        finally:
            if own:
                conn.execute("COMMIT")
        # float32: half the memory of float64; a candidate's score then differs from FTS5's by about
        # 1e-7 of it, which reorders only rows whose scores agree to seven digits
        scores = scores.astype(np.float32)
        if len(rowids) and rowids[-1] < 2**31 and rowids[0] >= -(2**31):
            rowids = rowids.astype(np.int32)  # half the memory; searchsorted still compares exactly
        with self._lock:
            self.taken += 1
            if version != self._version or len(rowids) > self.max_postings:
                return False
            self._cache[word] = (rowids, scores)
            self._postings += len(rowids)
            while self._postings > self.max_postings:
                _, (old, _) = self._cache.popitem(last=False)
                self._postings -= len(old)
            return True

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no word is queued or being taken (benchmarks and tests); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._wanted and not self._busy, timeout)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "words": len(self._cache),
                "postings": self._postings,
                "queued": len(self._wanted),
                "taken": self.taken,
                "hits": self.hits,
                "misses": self.misses,
            }

    def close(self) -> None:
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout=30)

    # ------------------------------------------------------------------ the background side
    def _start(self) -> None:
        """Start the taking thread (called under the lock)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="zocrates-impacts", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        _lower_priority()
        conn: sqlite3.Connection | None = None
        try:
            while (word := self._queue.get()) is not None:
                with self._idle:
                    if word in self._wanted:
                        self._wanted.remove(word)
                    if self._closed:
                        self._idle.notify_all()
                        continue  # closing: the rest of the queue is not worth taking
                    self._busy += 1
                try:
                    if conn is None:
                        conn = sqlite3.connect(f"file:{self.database}?mode=ro", uri=True, timeout=30.0)
                        conn.isolation_level = None
                    self.take(conn, word)
                except sqlite3.Error as exc:
                    # a deleted or locked index: searches keep the FTS5 plan; say why the cache stays cold
                    _log.warning("Could not cache the bm25 shares of %r from %s: %s", word, self.database, exc)
                finally:
                    with self._idle:
                        self._busy -= 1
                        self._idle.notify_all()
        finally:
            if conn is not None:
                conn.close()
            with self._idle:
                self._wanted.clear()
                self._idle.notify_all()


def _lower_priority() -> None:
    """Nice this thread (Linux sets niceness per thread), so searches and syncs keep the cores."""
    if sys.platform.startswith("linux"):
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except OSError as exc:
            _log.debug("Could not lower the priority of the impacts thread: %s", exc)
