"""The everyday words' cached bm25 shares and the split lexical ranking (real SQLite FTS5, real threads)."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from zocrates_nb.errors import ConfigError
from zocrates_nb.index.hybrid import HybridIndex
from zocrates_nb.index.lexical import fts, impacts
from zocrates_nb.index.lexical import split as lexical
from zocrates_nb.index.lexical.fts import ChunkRow, FtsDocument
from zocrates_nb.index.lexical.side_reads import SideReader
from zocrates_nb.index.rank import ranking
from zocrates_nb.paths import DataPaths

QUERY = "cell study tissue barcode visium"


def _put(conn, key, text):
    fts.replace_document(
        conn,
        FtsDocument(key=key, kind="note", title=key),
        [ChunkRow(chunk_id=f"{key}:0", key=key, kind="note", text=text)],
    )


def _library(conn, n=60):
    """cell in every chunk, study in 25, tissue in 12, barcode in 3, visium in 1, in varied lengths."""
    for i in range(n):
        words = (
            ["cell"] * (1 + i % 4)
            + ["study"] * (i < 25) * (1 + i % 2)
            + ["tissue"] * (i % 5 == 0)
            + ["barcode"] * (i in (7, 19, 33, 40))
            + ["visium"] * (i == 19)
            + ["filler"] * (i % 7)
        )
        _put(conn, f"DOC{i:05d}", " ".join(words))


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.setattr(ranking, "CANDIDATE_FLOOR", 0)  # 60 rows: the default floor would make all candidates
    path = tmp_path / "meta.db"
    conn = sqlite3.connect(path, isolation_level=None)
    fts.ensure_schema(conn)
    _library(conn)
    yield path, conn
    conn.close()


def _plain(conn, limit):
    return fts.search(conn, fts.natural_query(QUERY), limit)


# ------------------------------------------------------------------ pure pieces


def test_add_shares_adds_a_word_only_where_it_occurs():
    rowids = np.array([2, 5, 9, 12])
    scores = np.array([-1.0, -2.0, -3.0, -4.0])
    shares = [(np.array([1, 5, 12, 40], dtype=np.int32), np.array([-0.5, -0.25, -0.125, -9.0]))]
    assert impacts.add_shares(rowids, scores, shares).tolist() == [-1.0, -2.25, -3.0, -4.125]
    assert impacts.add_shares(rowids, scores, []).tolist() == scores.tolist()
    assert impacts.add_shares(rowids, scores, [(np.array([], dtype=np.int64), np.array([]))]).tolist() == [
        -1.0,
        -2.0,
        -3.0,
        -4.0,
    ]


def test_replace_scores_overlays_a_subset():
    rowids = np.array([2, 5, 9])
    got = impacts.replace_scores(rowids, np.array([-1.0, -2.0, -3.0]), np.array([5, 9]), np.array([-7.0, -8.0]))
    assert got.tolist() == [-1.0, -7.0, -8.0]


def test_best_rows_keeps_every_row_tied_with_the_last():
    rowids = np.array([1, 2, 3, 4, 5])
    scores = np.array([-3.0, -1.0, -2.0, -2.0, -5.0])
    assert sorted(impacts.best_rows(rowids, scores, 2)) == [(1, -3.0), (5, -5.0)]
    assert sorted(impacts.best_rows(rowids, scores, 3)) == [(1, -3.0), (3, -2.0), (4, -2.0), (5, -5.0)]
    assert impacts.best_rows(rowids, scores, 0) == []
    assert len(impacts.best_rows(rowids, scores, 9)) == 5


# ------------------------------------------------------------------ against FTS5


def test_split_ranking_equals_the_plain_or_query_with_and_without_cached_shares(db):
    path, conn = db
    plain = _plain(conn, 3)
    cold = lexical.lexical_search(conn, QUERY, 3)
    cache = impacts.TermImpacts(path, background=False)
    missed = lexical.lexical_search(conn, QUERY, 3, impacts=cache)
    assert cache.stats()["misses"] == 3 and cache.stats()["words"] == 0  # nothing taken without the thread
    for word in ("cell", "study", "tissue"):
        assert cache.take(conn, word)
    assert not cache.take(conn, "cell")  # already there
    sent = []
    conn.set_trace_callback(sent.append)
    warm = lexical.lexical_search(conn, QUERY, 3, impacts=cache)
    conn.set_trace_callback(None)
    assert not any(" AND " in s for s in sent if "MATCH" in s)  # every everyday word came from the cache
    assert cache.stats()["hits"] == 3
    for found in (cold, missed, warm):
        assert [r[:2] for r in found] == [r[:2] for r in plain]
        assert [r[2] for r in found] == pytest.approx([r[2] for r in plain], rel=1e-6)


def test_a_partly_cached_query_lets_fts5_score_only_the_missing_words(db):
    path, conn = db
    cache = impacts.TermImpacts(path, background=False)
    lexical.lexical_search(conn, QUERY, 3, impacts=cache)  # sets the version
    assert cache.take(conn, "study")
    sent = []
    conn.set_trace_callback(sent.append)
    found = lexical.lexical_search(conn, QUERY, 3, impacts=cache)
    conn.set_trace_callback(None)
    assert any('AND ("cell" OR "tissue")' in s for s in sent)
    plain = _plain(conn, 3)
    assert [r[:2] for r in found] == [r[:2] for r in plain]
    assert [r[2] for r in found] == pytest.approx([r[2] for r in plain], rel=1e-6)


def test_shares_are_exactly_fts5s_one_word_ranks(db):
    path, conn = db
    cache = impacts.TermImpacts(path, background=False)
    version = impacts.index_version(conn)
    cache.cached(version, ["study"])
    assert cache.take(conn, "study")
    (rowids, scores) = cache.cached(version, ["study"])["study"]
    sql = "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH 'study' ORDER BY rowid"
    expected = conn.execute(sql).fetchall()
    assert rowids.tolist() == [r for r, _ in expected]
    assert scores.dtype == np.float32  # half the memory, seven digits
    assert scores.tolist() == pytest.approx([s for _, s in expected], rel=1e-6)


def test_a_committed_write_is_a_new_version_and_empties_the_cache(db):
    path, conn = db
    cache = impacts.TermImpacts(path, background=False)
    before = impacts.index_version(conn)
    assert impacts.index_version(conn) == before  # reading changes nothing
    cache.cached(before, ["study"])
    assert cache.take(conn, "study")
    _put(conn, "DOC09999", "study visium barcode cell")
    after = impacts.index_version(conn)
    assert after != before
    assert cache.cached(after, ["study"]) == {}
    assert cache.stats()["words"] == 0
    # and the search at the new version still equals the plain query, new row included
    found = lexical.lexical_search(conn, QUERY, 2, impacts=cache)
    plain = _plain(conn, 2)
    assert "DOC09999" in [k for _, k, _ in plain]
    assert [r[:2] for r in found] == [r[:2] for r in plain]


def test_shares_taken_at_an_older_version_are_not_kept(db):
    path, conn = db
    cache = impacts.TermImpacts(path, background=False)
    cache.cached(impacts.index_version(conn), ["study"])
    _put(conn, "DOC09999", "study")  # the cache has not seen this version yet
    assert not cache.take(conn, "study")
    assert cache.stats()["words"] == 0


def test_least_recently_used_words_are_evicted_past_the_budget(db):
    path, conn = db
    cache = impacts.TermImpacts(path, max_postings=70, background=False)
    version = impacts.index_version(conn)
    cache.cached(version, ["cell", "study", "tissue"])
    assert cache.take(conn, "cell")  # 60 rows
    assert cache.take(conn, "tissue")  # 12 rows: 72 > 70, so "cell" goes
    assert set(cache.cached(version, ["cell", "tissue"])) == {"tissue"}
    small = impacts.TermImpacts(path, max_postings=10, background=False)
    small.cached(version, ["cell"])
    assert not small.take(conn, "cell")  # one word over the whole budget is never kept


def test_the_background_thread_takes_words_missed_twice_and_stops_on_close(db):
    path, conn = db
    cache = impacts.TermImpacts(path)
    version = impacts.index_version(conn)
    assert cache.cached(version, ["study", "tissue"]) == {}
    assert cache.wait_idle(30) and cache.stats()["taken"] == 0  # a word seen once may be a one-off
    assert cache.cached(version, ["study", "tissue"]) == {}
    assert cache.wait_idle(30)
    assert set(cache.cached(version, ["study", "tissue"])) == {"study", "tissue"}
    assert cache.stats()["taken"] == 2
    thread = cache._thread
    cache.close()
    assert thread is not None and not thread.is_alive()
    assert cache.cached(version, ["cell"]) == {}  # closed: nothing more is queued
    assert cache.stats()["queued"] == 0


def test_a_failing_background_read_is_logged_and_leaves_searches_on_fts5(tmp_path, caplog):
    missing = tmp_path / "gone.db"
    cache = impacts.TermImpacts(missing)
    with caplog.at_level("WARNING", logger="zocrates_nb.index.lexical.impacts"):
        for _ in range(impacts.ADMIT_AFTER):
            assert cache.cached(("v", "r"), ["study"]) == {}
        assert cache.wait_idle(30)
    assert "Could not cache the bm25 shares of 'study'" in caplog.text
    assert cache.stats()["words"] == 0
    cache.close()


# ------------------------------------------------------------------ through the index


def test_the_index_uses_the_cache_and_config_can_turn_it_off(tmp_path):
    paths = DataPaths(tmp_path / "data").ensure()
    index = HybridIndex(paths)
    assert isinstance(index._impacts, impacts.TermImpacts)
    index.close()
    off = HybridIndex(paths, {"search": {"impact_postings": 0}})
    assert off._impacts is None
    off.close()
    one_shot = HybridIndex(paths, one_shot=True)
    assert one_shot._impacts is None  # a command that searches once never pays for the thread
    one_shot.close()
    with pytest.raises(ConfigError, match="must not be negative"):
        HybridIndex(paths, {"search": {"impact_postings": -1}})


def test_the_second_list_read_beside_on_another_connection_gives_the_same_ranking(db):
    path, conn = db
    side = SideReader(path)
    try:
        found = lexical.lexical_search(conn, QUERY, 3, side=side)
        assert side._conn is not None  # the (S) AND (U) list was read on the side connection
        plain = _plain(conn, 3)
        assert [r[:2] for r in found] == [r[:2] for r in plain]
        assert [r[2] for r in found] == pytest.approx([r[2] for r in plain], rel=1e-9)
    finally:
        side.close()


def test_a_side_list_from_another_snapshot_is_read_again(db, monkeypatch):
    path, conn = db
    side = SideReader(path)
    real = lexical._versioned
    # as if a write committed between the two reads: the side list belongs to another version
    monkeypatch.setattr(
        lexical, "_versioned", lambda match: lambda c: (("old", None), (np.array([1]), np.array([0.0])))
    )
    sent = []
    conn.set_trace_callback(sent.append)
    try:
        found = lexical.lexical_search(conn, QUERY, 3, side=side)
    finally:
        conn.set_trace_callback(None)
        side.close()
    assert any(" AND " in s for s in sent if "MATCH" in s)  # read again on the search's own snapshot
    monkeypatch.setattr(lexical, "_versioned", real)
    plain = _plain(conn, 3)
    assert [r[:2] for r in found] == [r[:2] for r in plain]


def test_a_failing_side_connection_is_logged_and_the_list_read_on_the_search_connection(tmp_path, db, caplog):
    path, conn = db
    side = SideReader(tmp_path / "no-such.db")  # the read-only open fails on the side thread
    try:
        with caplog.at_level("WARNING", logger="zocrates_nb.index.lexical.split"):
            found = lexical.lexical_search(conn, QUERY, 3, side=side)
    finally:
        side.close()
    assert "The second read connection failed" in caplog.text
    plain = _plain(conn, 3)
    assert [r[:2] for r in found] == [r[:2] for r in plain]
