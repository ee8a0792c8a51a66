"""FTS5 store: query quoting, external-content consistency, filters (real SQLite FTS5)."""

from __future__ import annotations

import sqlite3

import pytest

from zocrates_nb.index import fts
from zocrates_nb.index.fts import ChunkRow, DocumentRow

NASTY = ["multi-agent", "who's", "title:x", "NOT", "a AND", '"unbalanced', 'unbalanced"', "😀🔬",
         '"multi-agent" NOT title:x', "AND OR NOT", "col:*", "x*", "(a OR b", "NEAR(a b)", "^start",
         "a + b - c", 'say ""hi""', "'; DROP TABLE chunks; --", "ünïcödé café", "-", "   ", "",
         "a" * 500, "foo:bar:baz", "{title text}: x", "wh\u200bo"]


@pytest.fixture
def conn():
    c = sqlite3.connect(":memory:", isolation_level=None)
    fts.ensure_schema(c)
    yield c
    c.close()


def _doc(key, kind="note", **kw):
    return DocumentRow(key=key, kind=kind, title=kw.pop("title", key), **kw)


def _rows(key, texts, kind="note", **kw):
    return [ChunkRow(chunk_id=f"{key}:{i}", key=key, kind=kind, text=t, chunk_index=i, **kw)
            for i, t in enumerate(texts)]


def _put(conn, key, texts, kind="note", doc_kw=None, **kw):
    conn.execute("BEGIN IMMEDIATE")
    stale = fts.replace_document(conn, _doc(key, kind, **(doc_kw or {})), _rows(key, texts, kind, **kw))
    conn.execute("COMMIT")
    return stale


def _keys(conn, query, filters=None, limit=50):
    return [key for _, key, _ in fts.search(conn, fts.natural_query(query), limit, filters)]


@pytest.mark.parametrize("query", NASTY)
def test_every_nasty_query_is_valid_fts5(conn, query):
    """Raw, each of these raises OperationalError in FTS5; quoted, each runs (AND and OR)."""
    _put(conn, "AAAA2222", ["Multi-agent systems: who's there? title x café"])
    for quoted in (fts.quote_fts(query), fts.quote_fts(query, "OR"), fts.natural_query(query)):
        if quoted is not None:
            conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (quoted,)).fetchone()


def test_raw_inputs_really_are_invalid(conn):
    """Guards the test above: without quoting these are FTS5 syntax errors."""
    for raw in ("multi-agent", "who's", "author:x", "NOT", "a AND", '"unbalanced'):
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (raw,)).fetchone()


def test_quote_fts_exact_forms():
    assert fts.quote_fts("multi-agent") == '"multi-agent"'
    assert fts.quote_fts("who's") == '"who\'s"'
    assert fts.quote_fts('say "hi"') == '"say" """hi"""'
    assert fts.quote_fts('"multi-agent" NOT title:x') == '"""multi-agent""" "NOT" "title:x"'
    assert fts.quote_fts("a b", "OR") == '"a" OR "b"'
    assert fts.quote_fts("😀 -") is None
    assert fts.quote_fts("") is None
    with pytest.raises(ValueError):
        fts.quote_fts("a", "NEAR")


def test_quoted_queries_match_literally(conn):
    _put(conn, "AAAA2222", ["Multi-agent systems coordinate; who's responsible?"])
    _put(conn, "BBBB3333", ["A single agent works alone."])
    match = fts.quote_fts("multi-agent")
    assert [k for _, k, _ in fts.search(conn, match, 10)] == ["AAAA2222"]
    assert _keys(conn, "who's") == ["AAAA2222"]
    assert _keys(conn, "NOT") == []                       # a literal word, not an operator
    assert _keys(conn, "title:x") == []


def test_natural_query_is_or_of_content_words(conn):
    assert fts.natural_query("What is the role of T-cells in cancer?") == '"role" OR "t" OR "cells" OR "cancer"'
    assert fts.natural_query("the of") == '"the" OR "of"'    # only stopwords: keep them
    assert fts.natural_query("cancer cancer CANCER") == '"cancer"'
    _put(conn, "AAAA2222", ["T cells infiltrate tumours."])
    _put(conn, "BBBB3333", ["Cancer cells and T cells in the tumour microenvironment."])
    # all-AND would find nothing for the question; OR ranks the doc sharing more terms first
    assert _keys(conn, "What is the role of T-cells in cancer?") == ["BBBB3333", "AAAA2222"]


def test_porter_stemming_and_diacritics(conn):
    _put(conn, "AAAA2222", ["Deconvolving spots in the café"])
    assert _keys(conn, "deconvolve") == ["AAAA2222"]
    assert _keys(conn, "cafe") == ["AAAA2222"]


def test_updates_keep_external_content_consistent(conn):
    """Update, shrink, re-grow and delete; integrity-check (content compared) passes throughout."""
    _put(conn, "AAAA2222", ["alpha one", "beta two", "gamma three"])
    fts.integrity_check(conn)
    stale = _put(conn, "AAAA2222", ["alpha changed"])     # text changes, chunks 1-2 disappear
    assert sorted(stale) == ["AAAA2222:1", "AAAA2222:2"]
    fts.integrity_check(conn)
    assert _keys(conn, "one") == [] and _keys(conn, "gamma") == []
    assert _keys(conn, "changed") == ["AAAA2222"]
    _put(conn, "AAAA2222", ["delta", "epsilon"])
    _put(conn, "BBBB3333", ["delta as well"])
    fts.integrity_check(conn)
    conn.execute("BEGIN IMMEDIATE")
    removed = fts.delete_document(conn, "AAAA2222")
    conn.execute("COMMIT")
    assert sorted(removed) == ["AAAA2222:0", "AAAA2222:1"]
    fts.integrity_check(conn)
    assert _keys(conn, "delta") == ["BBBB3333"]
    assert conn.execute("SELECT count(*) FROM index_documents").fetchone()[0] == 1
    assert conn.execute("SELECT chunk_count FROM index_documents").fetchone()[0] == 1


def test_integrity_check_detects_insert_or_replace_damage(conn):
    """The failure our UPSERT avoids: REPLACE skips the delete trigger and corrupts the index."""
    _put(conn, "AAAA2222", ["original words"])
    conn.execute("INSERT OR REPLACE INTO chunks(chunk_id, key, kind, text) VALUES ('AAAA2222:0', 'AAAA2222', "
                 "'note', 'replacement')")
    with pytest.raises(sqlite3.DatabaseError):
        fts.integrity_check(conn)


def test_rollback_leaves_nothing(conn):
    conn.execute("BEGIN IMMEDIATE")
    fts.replace_document(conn, _doc("AAAA2222"), _rows("AAAA2222", ["rolled back text"]))
    conn.execute("ROLLBACK")
    assert _keys(conn, "rolled") == []
    fts.integrity_check(conn)


def test_filters(conn):
    _put(conn, "NOTE2222", ["spatial transcriptomics notes"], collections=("COLL2222", "Spatial"),
         parent_key="PAPR2222", item_type="note")
    _put(conn, "NOTE3333", ["spatial notes standalone"], collections=("COLL3333", "Methods"), item_type="note")
    _put(conn, "PAPR2222", ["spatial transcriptomics paper"], kind="paper", item_type="journalArticle",
         collections=("COLL2222", "Spatial"))
    _put(conn, "PAPR3333", ["spatial preprint"], kind="paper", item_type="preprint")
    assert set(_keys(conn, "spatial")) == {"NOTE2222", "NOTE3333", "PAPR2222", "PAPR3333"}
    assert set(_keys(conn, "spatial", {"item_type": "note"})) == {"NOTE2222", "NOTE3333"}
    assert set(_keys(conn, "spatial", {"item_type": "paper"})) == {"PAPR2222", "PAPR3333"}
    assert _keys(conn, "spatial", {"item_type": "preprint"}) == ["PAPR3333"]
    assert set(_keys(conn, "spatial", {"collection": "COLL2222"})) == {"NOTE2222", "PAPR2222"}
    assert set(_keys(conn, "spatial", {"collection": "Spatial"})) == {"NOTE2222", "PAPR2222"}
    assert _keys(conn, "spatial", {"parent_key": "PAPR2222"}) == ["NOTE2222"]
    assert _keys(conn, "spatial", {"item_type": "note", "collection": "Methods"}) == ["NOTE3333"]
    assert _keys(conn, "spatial", {"collection": "nope"}) == []
    assert fts.filtered_chunk_ids(conn, {"item_type": "paper"}) == {"PAPR2222:0", "PAPR3333:0"}


def test_filtered_search_does_not_lose_recall_to_a_top_n_window(conn):
    """A note ranked far below 2 papers is still found when filtering to notes with limit 1."""
    for i in range(30):
        _put(conn, f"P{i:07d}", ["kinase kinase kinase signalling"], kind="paper")
    _put(conn, "NOTE2222", ["a long note that mentions kinase once among many other words " * 5])
    assert "NOTE2222" not in _keys(conn, "kinase", limit=5)
    assert _keys(conn, "kinase", {"item_type": "note"}, limit=1) == ["NOTE2222"]


def test_title_weight_is_persisted_as_rank(conn):
    fts.set_title_weight(conn, 5.0)
    assert conn.execute("SELECT v FROM chunks_fts_config WHERE k='rank'").fetchone()[0] == "bm25(5.0, 1.0)"
    _put(conn, "AAAA2222", ["other words entirely and deconvolution"], doc_kw={}, title="unrelated")
    _put(conn, "BBBB3333", ["other words entirely and stuff"], title="deconvolution")
    assert _keys(conn, "deconvolution")[0] == "BBBB3333"


def test_chunk_and_document_rows_round_trip(conn):
    _put(conn, "AAAA2222", ["x one"], collections=("C1", "Name"), parent_key="PPPP2222", section="Intro",
         item_type="note", doc_kw={"first_author": "Ståhl", "year": 2016, "abstract": "abs"})
    row = fts.chunk_rows(conn, ["AAAA2222:0", "missing"])
    assert list(row) == ["AAAA2222:0"]
    assert row["AAAA2222:0"].collections == ("C1", "Name") and row["AAAA2222:0"].section == "Intro"
    doc = fts.documents(conn, ["AAAA2222"])["AAAA2222"]
    assert (doc.first_author, doc.year, doc.abstract) == ("Ståhl", 2016, "abs")
