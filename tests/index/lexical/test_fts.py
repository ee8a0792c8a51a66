"""FTS5 store: query quoting, external-content consistency, filters (real SQLite FTS5)."""

from __future__ import annotations

import sqlite3

import pytest

from zocrates_nb.index.lexical import fts
from zocrates_nb.index.lexical.fts import ChunkRow, FtsDocument

NASTY = [
    "multi-agent",
    "who's",
    "title:x",
    "NOT",
    "a AND",
    '"unbalanced',
    'unbalanced"',
    "😀🔬",
    '"multi-agent" NOT title:x',
    "AND OR NOT",
    "col:*",
    "x*",
    "(a OR b",
    "NEAR(a b)",
    "^start",
    "a + b - c",
    'say ""hi""',
    "'; DROP TABLE chunks; --",
    "ünïcödé café",
    "-",
    "   ",
    "",
    "a" * 500,
    "foo:bar:baz",
    "{title text}: x",
    "wh\u200bo",
]


@pytest.fixture
def conn():
    c = sqlite3.connect(":memory:", isolation_level=None)
    fts.ensure_schema(c)
    yield c
    c.close()


def _doc(key, kind="note", **kw):
    return FtsDocument(key=key, kind=kind, title=kw.pop("title", key), **kw)


def _rows(key, texts, kind="note", **kw):
    return [
        ChunkRow(chunk_id=f"{key}:{i}", key=key, kind=kind, text=t, chunk_index=i, **kw) for i, t in enumerate(texts)
    ]


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
    assert _keys(conn, "NOT") == []  # a literal word, not an operator
    assert _keys(conn, "title:x") == []


def test_natural_query_is_or_of_content_words(conn):
    assert fts.natural_query("What is the role of T-cells in cancer?") == '"role" OR "t" OR "cells" OR "cancer"'
    assert fts.natural_query("the of") == '"the" OR "of"'  # only stopwords: keep them
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
    stale = _put(conn, "AAAA2222", ["alpha changed"])  # text changes, chunks 1-2 disappear
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
    conn.execute(
        "INSERT OR REPLACE INTO chunks(chunk_id, key, kind, text) VALUES ('AAAA2222:0', 'AAAA2222', "
        "'note', 'replacement')"
    )
    with pytest.raises(sqlite3.DatabaseError):
        fts.integrity_check(conn)


def test_rollback_leaves_nothing(conn):
    conn.execute("BEGIN IMMEDIATE")
    fts.replace_document(conn, _doc("AAAA2222"), _rows("AAAA2222", ["rolled back text"]))
    conn.execute("ROLLBACK")
    assert _keys(conn, "rolled") == []
    fts.integrity_check(conn)


def test_filters(conn):
    _put(
        conn,
        "NOTE2222",
        ["spatial transcriptomics notes"],
        collections=("COLL2222", "Spatial"),
        parent_key="PAPR2222",
        item_type="note",
    )
    _put(conn, "NOTE3333", ["spatial notes standalone"], collections=("COLL3333", "Methods"), item_type="note")
    _put(
        conn,
        "PAPR2222",
        ["spatial transcriptomics paper"],
        kind="paper",
        item_type="journalArticle",
        collections=("COLL2222", "Spatial"),
    )
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


@pytest.mark.parametrize("tied", [20, 40])  # within the doubled window, and past it
def test_a_tie_across_the_cut_is_settled_by_chunk_id_whatever_the_insertion_order(tied):
    """Found by the SIGKILL-during-sync fault case: 20 equal notes, a top 8 chosen by rowid.

    A sync resumed after a kill (or a rebuild) inserts rows in another order than a clean
    run, so the kept tied rows must not depend on rowids.
    """
    keys = [f"K{i:07d}" for i in range(tied)]
    results = []
    for order in (keys, keys[::-1], keys[7:] + keys[:7]):
        c = sqlite3.connect(":memory:", isolation_level=None)
        fts.ensure_schema(c)
        _put(c, "BEST0000", ["platypus burrow ledger platypus"])
        for key in order:
            _put(c, key, ["platypus burrow ledger note"])
        _put(c, "WORSE000", ["platypus among other words here in a longer note about burrows"])
        results.append(_keys(c, "platypus burrow ledger", limit=8))
        c.close()
    assert results[0] == results[1] == results[2] == ["BEST0000", *keys[:7]]


def test_title_weight_is_persisted_as_rank(conn):
    fts.set_title_weight(conn, 5.0)
    assert conn.execute("SELECT v FROM chunks_fts_config WHERE k='rank'").fetchone()[0] == "bm25(5.0, 1.0, 0.5)"
    _put(conn, "AAAA2222", ["other words entirely and deconvolution"], doc_kw={}, title="unrelated")
    _put(conn, "BBBB3333", ["other words entirely and stuff"], title="deconvolution")
    assert _keys(conn, "deconvolution")[0] == "BBBB3333"


def test_chunk_and_document_rows_round_trip(conn):
    _put(
        conn,
        "AAAA2222",
        ["x one"],
        collections=("C1", "Name"),
        parent_key="PPPP2222",
        section="Intro",
        item_type="note",
        doc_kw={"first_author": "Ståhl", "year": 2016, "abstract": "abs"},
    )
    row = fts.chunk_rows(conn, ["AAAA2222:0", "missing"])
    assert list(row) == ["AAAA2222:0"]
    assert row["AAAA2222:0"].collections == ("C1", "Name") and row["AAAA2222:0"].section == "Intro"
    doc = fts.documents(conn, ["AAAA2222"])["AAAA2222"]
    assert (doc.first_author, doc.year, doc.abstract) == ("Ståhl", 2016, "abs")


def test_schema_ready_lets_an_open_skip_the_write_lock(conn):
    assert fts.schema_ready(conn)
    assert not fts.schema_ready(conn, 2.0)
    fts.set_title_weight(conn, 2.0)
    assert fts.schema_ready(conn, 2.0)
    fresh = sqlite3.connect(":memory:")
    assert not fts.schema_ready(fresh)


# ---------------------------------------------------------------------------- selective candidates

from zocrates_nb.index.lexical import split as lexical  # noqa: E402
from zocrates_nb.index.rank import ranking  # noqa: E402


def test_plan_terms_takes_the_rarest_words_within_the_budget():
    df = {"visium": 1, "barcode": 3, "tissue": 12, "study": 25, "cell": 60}
    plan = ranking.plan_terms(["cell", "visium", "tissue", "study", "barcode"], df, 60, share=0.1, floor=0)
    assert plan.select == ("visium", "barcode")  # 1 + 3 <= 6 rows; tissue would exceed
    assert plan.score_only == ("tissue", "study")  # still scored, in query order
    assert plan.dropped == ("cell",) and plan.restricted  # in half the rows or more: bm25 IDF is 1e-6
    everyday = ranking.plan_terms(["cell", "study"], df, 60, share=0.1, floor=0)
    assert everyday.select == ("study",) and everyday.dropped == ("cell",)  # the rarest word always selects
    roomy = ranking.plan_terms(["visium", "tissue"], df, 60, share=0.1, floor=100)
    assert roomy.select == ("visium", "tissue") and not roomy.restricted
    assert ranking.plan_terms([], df, 60) == ranking.TermPlan(())


def test_candidate_budget_grows_with_the_index_up_to_a_cap():
    assert ranking.candidate_budget(5_000) == ranking.CANDIDATE_FLOOR  # small: the floor
    assert ranking.candidate_budget(60_000) == 6_000  # the share
    assert ranking.candidate_budget(302_000) == ranking.CANDIDATE_CAP  # big: ranking cost stops growing
    assert ranking.candidate_budget(302_000, floor=10_000) == 10_000  # an explicit floor above the cap wins


def test_plan_match_doubles_every_word_so_bm25_order_is_exact():
    plan = ranking.TermPlan(select=("visium",), score_only=("tissue",), dropped=("cell",))
    assert lexical.plan_match(plan) == ('("visium") AND ("visium" OR "tissue" OR "tissue")', 2.0)
    assert lexical.plan_match(ranking.TermPlan(("a", "b"))) == ('"a" OR "b"', 1.0)
    assert lexical.plan_match(ranking.TermPlan(())) == (None, 1.0)


def _library(conn, n=60):
    """cell in every chunk, study in 25, tissue in 12, barcode in 3, visium in 1."""
    for i in range(n):
        words = (
            ["cell"]
            + ["study"] * (i < 25)
            + ["tissue"] * (i % 5 == 0)
            + ["barcode"] * (i in (7, 19, 33))
            + ["visium"] * (i == 19)
            + ["filler"] * (i % 3)
        )
        _put(conn, f"DOC{i:05d}", [" ".join(words)])


@pytest.fixture
def selective(conn, monkeypatch):
    monkeypatch.setattr(ranking, "CANDIDATE_FLOOR", 0)  # the default floor would make 60 rows all candidates
    _library(conn)
    sent = []
    real_search = fts.search
    monkeypatch.setattr(fts, "search", lambda c, match, *a, **kw: sent.append(match) or real_search(c, match, *a, **kw))
    return sent


def _matches(conn, match):
    return conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)).fetchone()[0]


def _ranked_matches(conn, run):
    """The MATCH values of the ranking statements ``run()`` sends (frequency counts left out)."""
    statements = []
    conn.set_trace_callback(statements.append)  # the SQL as run, values bound
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    return [s.split("MATCH ", 1)[1] for s in statements if "MATCH" in s and "count(*)" not in s]


def test_common_words_no_longer_rank_half_the_index(conn, selective):
    query = "cell study tissue barcode visium"
    plain = fts.search(conn, fts.natural_query(query), 3)
    selective.clear()
    found = []
    sent = _ranked_matches(conn, lambda: found.extend(lexical.lexical_search(conn, query, 3)))
    assert selective == []  # neither the one-query plan nor the plain OR fallback ran
    # the rare words' rows, then those of them with an everyday word: each word scored once
    assert sent == [
        """'"barcode" OR "visium"'""",
        """'("barcode" OR "visium") AND ("cell" OR "study" OR "tissue")'""",
    ]
    assert _matches(conn, '"barcode" OR "visium"') == 3 and _matches(conn, fts.natural_query(query)) == 60
    # word counts stop just above the budget (6 rows of 60): a common word costs 7 rows to count
    assert lexical.DocumentFrequencies().lookup(conn, ["cell", "tissue", "visium"]) == (
        60,
        {"cell": 7, "tissue": 7, "visium": 1},
    )
    assert [r[:2] for r in found] == [r[:2] for r in plain]  # same rows, same order
    assert [r[2] for r in found] == pytest.approx([r[2] for r in plain])  # and plain bm25 scores


def test_fewer_candidates_than_the_limit_fall_back_to_the_plain_query(conn, selective):
    query = "cell study tissue barcode visium"
    found = lexical.lexical_search(conn, query, 10)
    assert selective == [fts.natural_query(query)]  # 3 candidates for 10 places
    assert found == fts.search(conn, fts.natural_query(query), 10)
    # a selective filter never loses rows to the candidate budget: DOC00100 has none of the rare words
    _put(conn, "DOC00100", ["cell study"], parent_key="PAR")
    selective.clear()
    assert [k for _, k, _ in lexical.lexical_search(conn, query, 10, {"parent_key": "PAR"})] == ["DOC00100"]
    assert selective == [fts.natural_query(query)]  # expected too few candidates: plain query at once


def test_a_broad_filter_keeps_the_restricted_plan(conn, selective):
    freq = lexical.DocumentFrequencies()
    query = "cell study tissue barcode visium"
    found = lexical.lexical_search(conn, query, 2, {"item_type": "note"}, freq)
    assert freq.filtered_rows(conn, {"item_type": "note"}) == 60
    assert len(selective) == 1 and " AND " in selective[0]
    plain = fts.search(conn, fts.natural_query(query), 2, {"item_type": "note"})
    assert [r[:2] for r in found] == [r[:2] for r in plain]
    assert [r[2] for r in found] == pytest.approx([r[2] for r in plain])
    assert freq.filtered_rows(conn, {"item_type": "paper"}) == 0


def test_restricted_filtered_query_keeps_fts_as_the_driving_table(conn, selective):
    statements = []
    conn.set_trace_callback(statements.append)  # the SQL as run, values bound
    lexical.lexical_search(conn, "cell study tissue barcode visium", 3, {"item_type": "note"})
    conn.set_trace_callback(None)
    ranked = [s for s in statements if "ORDER BY" in s and "barcode" in s]
    assert len(ranked) == 1
    plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + ranked[0])]
    scans = [p for p in plan if p.startswith(("SCAN ", "SEARCH "))]
    assert scans[0].startswith("SCAN chunks_fts VIRTUAL TABLE")  # FTS5 drives, ranks, limits
    assert "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)" in scans  # chunks only by rowid
    assert not [p for p in scans if p.split()[1] == "c" and p.startswith("SCAN")]


def test_document_frequencies_follow_writes_of_any_connection(tmp_path):
    path = tmp_path / "meta.db"
    mine, other = (sqlite3.connect(path, isolation_level=None) for _ in range(2))
    fts.ensure_schema(mine)
    _put(mine, "AAAA2222", ["visium spots"])
    freq = lexical.DocumentFrequencies()
    assert freq.lookup(mine, ["visium", "absent"]) == (1, {"visium": 1, "absent": 0})
    _put(mine, "BBBB3333", ["visium again"])  # our own write
    assert freq.lookup(mine, ["visium"]) == (2, {"visium": 2})
    _put(other, "CCCC4444", ["visium and absent"])  # another kernel's write
    assert freq.lookup(mine, ["visium", "absent"]) == (3, {"visium": 3, "absent": 1})
    mine.close(), other.close()
