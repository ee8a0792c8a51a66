"""Note recall (issue 11): chunks fit the model window, contextual indexing, the note lane,
query intent, explain and the findability check. Real SQLite FTS5 and the real tokenizer."""

from __future__ import annotations

import sqlite3

import pytest

from zocrates_nb.convert.window import chunk_to_window, split_to_window
from zocrates_nb.index.context import context_line
from zocrates_nb.index.lexical import fts
from zocrates_nb.index.lexical.fts import ChunkRow, FtsDocument
from zocrates_nb.index.rank.fusion import fuse, inherit_from_parents, lane_weight_for
from zocrates_nb.index.rank.note_lane import note_intent
from zocrates_nb.index.rank.ranking import rrf
from zocrates_nb.index.records import WINDOW_TOKENS, document_rows, embedding_text
from zocrates_nb.quality.findability import known_item_query

LONG_NOTE = "# Plan\n\n" + "\n\n".join(
    f"Paragraph {i}: the germinal centre light zone B cells cycle to the dark zone where somatic "
    f"hypermutation diversifies immunoglobulin genes, measured on slide LN-0{i % 4} with Xenium."
    for i in range(40)
)


def test_no_chunk_is_longer_than_the_model_reads(count_tokens):
    manifest = {
        "key": "NOTE1111",
        "content_type": "text/note",
        "title": "Plan",
        "word_count": 900,
        "parent_title": "A paper about germinal centres",
        "parent_creators": ["Victora, Gabriel"],
        "parent_year": 2012,
    }
    _, rows = document_rows(manifest, LONG_NOTE, count_tokens)
    assert len(rows) > 3
    for row in rows:
        assert count_tokens(embedding_text(row.title, row.text, row.context)) <= WINDOW_TOKENS
    # consecutive chunks overlap, so a sentence across the cut is findable from both sides
    assert any(rows[i - 1].text.split()[-1] in rows[i].text.split() for i in range(1, len(rows)))


def test_a_note_that_fits_is_one_chunk_and_the_old_300_word_rule_is_gone(count_tokens):
    short = "Use Leiden, never Louvain. Lab default resolution 0.8."
    assert len(chunk_to_window(short, WINDOW_TOKENS, count_tokens)) == 1
    # 250 words of dense technical text are > 254 word pieces: no longer one cut-off chunk
    dense = " ".join(["scRNA-seq", "CXCL13+", "Tfh/Tfr", "n_latent=30"] * 63)
    assert count_tokens(dense) > WINDOW_TOKENS
    _, rows = document_rows(
        {"key": "NOTE2222", "content_type": "text/note", "title": "t", "word_count": 252}, dense, count_tokens
    )
    assert len(rows) >= 2 and all(count_tokens(r.text) <= WINDOW_TOKENS for r in rows)


def test_split_to_window_balances_and_overlaps(count_tokens):
    text = " ".join(f"word{i}" for i in range(400))
    pieces = split_to_window(text, 200, count_tokens, overlap_tokens=20)
    sizes = [count_tokens(p) for p in pieces]
    assert max(sizes) <= 200 and min(sizes) > 0.5 * max(sizes)  # no scrap at the end
    assert pieces[0].split()[-1] in pieces[1].split()  # overlap


def test_context_lines():
    child = {
        "content_type": "text/note",
        "parent_title": "Fast integration with Harmony",
        "parent_creators": ["Korsunsky, Ilya", "Millard, Nghia", "Fan, Jean"],
        "parent_year": 2019,
    }
    assert context_line(child) == "Note on the paper: Fast integration with Harmony (Korsunsky, Millard et al., 2019)"
    standalone = {"content_type": "text/note", "collections": ["Lymph node project"]}
    assert context_line(standalone) == "Note in: Lymph node project"
    assert context_line({"content_type": "text/paper", "title": "x"}) == ""


def test_context_column_finds_a_child_note_through_its_paper_but_weighs_less():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    fts.ensure_schema(conn, 3.0)
    conn.execute("BEGIN")
    fts.replace_document(
        conn,
        FtsDocument("CHILD111", "note", "Theta lesson"),
        [
            ChunkRow(
                "CHILD111:0",
                "CHILD111",
                "note",
                "Keep theta at two for the samples.",
                "Theta lesson",
                context="Note on the paper: Harmony integration (Korsunsky, 2019)",
            )
        ],
    )
    fts.replace_document(
        conn,
        FtsDocument("OTHER111", "note", "Harmony notes"),
        [ChunkRow("OTHER111:0", "OTHER111", "note", "Harmony integration pushes donors together.", "Harmony notes")],
    )
    conn.execute("COMMIT")
    found = [key for _, key, _ in fts.search(conn, fts.natural_query("Harmony integration"), 10)]
    assert found == ["OTHER111", "CHILD111"]  # found through its context, below the note that says it


def test_old_index_gains_the_context_column(tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript("""
        CREATE TABLE chunks(id INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, key TEXT NOT NULL,
            kind TEXT NOT NULL, parent_key TEXT, item_type TEXT, collections TEXT NOT NULL DEFAULT '[]',
            title TEXT NOT NULL DEFAULT '', section TEXT, text TEXT NOT NULL DEFAULT '',
            chunk_index INTEGER NOT NULL DEFAULT 0);
        CREATE VIRTUAL TABLE chunks_fts USING fts5(title, text, content='chunks', content_rowid='id');
        INSERT INTO chunks(chunk_id, key, kind, title, text) VALUES ('OLD11111:0', 'OLD11111', 'note', 't', 'zebrafish');
        INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild');""")  # noqa: E501
    assert not fts.schema_ready(conn, 3.0)
    fts.ensure_schema(conn, 3.0)
    assert fts.schema_ready(conn, 3.0)
    assert [k for _, k, _ in fts.search(conn, '"zebrafish"', 5)] == ["OLD11111"]
    fts.integrity_check(conn)


def test_fuse_without_lane_is_rrf_and_lane_lifts_notes_without_reordering_papers():
    lists = {"lexical": ["P1", "P2", "P3", "N1", "P4"], "dense": ["P2", "P1", "N1", "P3", "N2"]}
    assert fuse(lists, 20) == rrf(lists, 20)
    fused = [u for u, _ in fuse(lists, 20, {"N1", "N2"}, 0.5)]
    assert fused[0] == "N1"
    papers = [u for u in fused if u.startswith("P")]
    assert papers == [u for u, _ in rrf(lists, 20) if u.startswith("P")]


def test_children_inherit_a_share_of_their_paper():
    fused = [("PAPER", 0.10), ("NOTEA", 0.05), ("CHILD", 0.04)]
    out = inherit_from_parents(fused, {"NOTEA": None, "CHILD": "PAPER"}, 0.2)
    assert [u for u, _ in out] == ["PAPER", "CHILD", "NOTEA"]
    assert inherit_from_parents(fused, {"CHILD": "PAPER"}, 0.0) == fused


def test_note_intent():
    assert note_intent("What did I decide about Harmony theta?") == 1.0
    assert note_intent("my notes on RCTD") == 1.0
    assert note_intent("we use Leiden at which resolution") == 0.5
    assert note_intent("spatially variable genes in mouse brain") == 0.0
    assert lane_weight_for(1.0, 0.25, 0.5) == pytest.approx(0.75)


def test_known_item_query_drops_title_words_and_skips_code():
    text = (
        "# Harmony theta lesson\n\n```\nharmony(theta=4)\n```\n\nFirst sentence here is fine enough. "
        "With theta four the plasmablast cluster merged into memory B cells. Check iLISI and cLISI scores."
    )
    query = known_item_query("Harmony theta lesson", text)
    assert query is not None and "theta" not in query.lower() and "plasmablast" in query
    assert known_item_query("Use Leiden", "Use Leiden") is None


def test_demo_questions_have_kinds_and_a_stratified_split():
    from zocrates_nb.quality.evaluate import DEMO_QUESTIONS, load_note_questions

    questions = load_note_questions(DEMO_QUESTIONS)
    kinds = {q["kind"] for q in questions}
    assert {"paraphrase", "keyword", "short", "child", "decision"} <= kinds
    assert len(questions) >= 120
    assert sum(q["kind"] == "paraphrase" for q in questions) >= 40
    assert sum(q["kind"] == "child" for q in questions) >= 20
    # q001–q122 alternate dev/test within each kind; q123–q167 are dev only (written after dev
    # saturated, so that tuning can still tell settings apart); q168 on are the harder paraphrases of
    # issue 24 (a method by what it does, an experiment by its place in a sequence), alternating again
    # so that the test split gets harder too; q198 on are a second such round, shorter and with fewer
    # of the note's own words (a platform by its chemistry, an instrument by its capacity).
    number = {q["id"]: int(q["id"][1:]) for q in questions}
    stratified = [q for q in questions if number[q["id"]] <= 122 or number[q["id"]] >= 168]
    for kind in kinds:
        dev = sum(q["kind"] == kind and q["split"] == "dev" for q in stratified)
        test = sum(q["kind"] == kind and q["split"] == "test" for q in stratified)
        assert abs(dev - test) <= 1, kind
    dev_only = [q for q in questions if 122 < number[q["id"]] < 168]
    assert len(dev_only) >= 30 and {q["split"] for q in dev_only} == {"dev"}
    harder = [q for q in questions if number[q["id"]] >= 168]
    assert len(harder) >= 30 and {q["kind"] for q in harder} == {"paraphrase"}
    assert len(load_note_questions(split="dev")) + len(load_note_questions(split="test")) == len(questions)
    with pytest.raises(Exception, match="split"):
        load_note_questions(split="train")


def test_expansion_terms_prefer_words_the_feedback_notes_share_and_the_library_rarely_uses():
    from zocrates_nb.index.lexical.prf import candidate_terms, expansion_terms

    counts = candidate_terms(
        [
            "Scrublet doublet scores per channel, threshold from histogram.",
            "Doublet rate per channel grows with recovered cells; Scrublet again.",
        ],
        {"per", "with"},
    )
    freq = {
        "scrublet": 2,
        "doublet": 3,
        "channel": 40,
        "threshold": 30,
        "histogram": 5,
        "rate": 60,
        "grows": 50,
        "recovered": 20,
        "cells": 900,
        "again": 100,
        "scores": 80,
    }
    terms = expansion_terms(counts, ["droplets", "channel"], freq, 1000, n_terms=3)
    assert terms[:2] == ["scrublet", "doublet"] and "channel" not in terms


def test_negative_note_lane_settings_are_refused(data_dir):
    from zocrates_nb.errors import ConfigError
    from zocrates_nb.index.hybrid import HybridIndex
    from zocrates_nb.paths import DataPaths

    with pytest.raises(ConfigError, match="must not be negative"):
        HybridIndex(DataPaths(data_dir), {"search": {"note_lane": -1}})


def test_keep_best_paper_moves_the_best_paper_into_the_window():
    from zocrates_nb.index.rank.fusion import keep_best_paper

    fused = [("N1", 0.9), ("N2", 0.8), ("N3", 0.7), ("P1", 0.6), ("P2", 0.5)]
    assert [u for u, _ in keep_best_paper(fused, {"P1", "P2"}, 3)] == ["N1", "N2", "P1", "N3", "P2"]
    assert keep_best_paper(fused, {"P1", "P2"}, 5) == fused
    assert keep_best_paper(fused, set(), 3) == fused


def test_reserve_notes_gives_the_best_notes_places_in_the_window():
    from zocrates_nb.index.rank.fusion import reserve_notes

    fused = [("P1", 0.9), ("P2", 0.8), ("N1", 0.7), ("P3", 0.6), ("P4", 0.5), ("P5", 0.4), ("N2", 0.3), ("N3", 0.2)]
    notes = {"N1", "N2", "N3"}
    assert [u for u, _ in reserve_notes(fused, notes, 5, 2)] == ["P1", "P2", "N1", "P3", "N2", "P4", "P5", "N3"]
    assert [u for u, _ in reserve_notes(fused, notes, 5, 3)] == ["P1", "P2", "N1", "N2", "N3", "P3", "P4", "P5"]
    assert reserve_notes(fused, notes, 5, 1) == fused  # N1 is already there
    late = [("P1", 0.9), ("P2", 0.8), ("P3", 0.7), ("P4", 0.6), ("N1", 0.5), ("P5", 0.4), ("N2", 0.3)]
    assert [u for u, _ in reserve_notes(late, notes, 5, 2)] == ["P1", "P2", "P3", "N1", "N2", "P4", "P5"]
    assert reserve_notes(fused, set(), 5, 2) == fused  # papers only (SciFact): unchanged
    assert reserve_notes(fused, notes, 5, 0) == fused


def test_agents_see_the_best_notes_even_when_papers_outscore_them(demo_workbench):
    """Worded like the papers themselves (titles, abstracts' first sentences), a search still shows two
    notes in its first five, and a paper."""
    from zocrates_nb.index.hybrid import HybridIndex

    without_share = HybridIndex(demo_workbench.paths, {"search": {"note_share": 0}})
    papers = demo_workbench.source.snapshot().papers
    titles = [p.title for p in papers] + [p.abstract.split(". ")[0] for p in papers if p.abstract]
    crowded = 0
    try:
        for title in titles:
            plain = without_share.search(title, k=10)[:5]
            crowded += sum(h.kind == "note" for h in plain) < 2
            shown = demo_workbench.index.search(title, k=10)[:5]
            assert sum(h.kind == "note" for h in shown) >= 2, title
            assert any(h.kind == "paper" for h in shown), title
    finally:
        without_share.close()
    assert crowded, "no title crowded the notes out: the test would prove nothing"


def test_default_fusion_holds_the_tuned_dev_figures_with_papers_competing(demo_workbench):
    """The defaults in fusion.py were chosen on the dev split (benchmarks/sweep_note_fusion.py);
    a change that loses the paraphrase or child-note gains fails here, not only in a benchmark."""
    from zocrates_nb.quality.evaluate import run_notes_eval

    result = run_notes_eval(demo_workbench.index, split="dev")
    # Measured with the harder paraphrases of issue 24 (q168 on) in the set: dev R@5 0.9508, MRR@10
    # 0.8571, paraphrases 0.9118 (62 of 68). Before them the set gave 0.97 / 0.88; the floors follow the
    # harder set and a single further loss of a paraphrase fails here.
    assert result["recall@5"] >= 0.95 and result["mrr"] >= 0.85, result["misses"]
    assert result["per_kind"]["paraphrase"]["recall@5"] >= 0.91
    assert result["per_kind"]["child"]["recall@5"] == 1.0


def test_default_lane_and_parent_share_are_the_tuned_values():
    from zocrates_nb.index.rank.fusion import LANE_WEIGHT, PARENT_SHARE

    assert (LANE_WEIGHT, PARENT_SHARE) == (0.5, 0.2)
    assert lane_weight_for(0.0) == pytest.approx(0.5) and lane_weight_for(1.0) == pytest.approx(1.0)
