"""The workbench end to end on the demo library: save → find, edit → re-materialise → diagnostics."""

from __future__ import annotations

import json
import re

import pytest

from zocrates_nb.errors import NotFoundError, ZocratesError
from zocrates_nb.workbench.core import Workbench, open_workbench


def test_open_workbench_is_one_instance_per_data_dir(demo_home):
    assert open_workbench() is open_workbench(demo_home)


def test_save_answer_as_child_note_is_searchable_at_once(demo_workbench):
    wb = demo_workbench
    answer = wb.ask("What did I note about RCTD modes on Visium?")
    paper = next(p for p in wb.papers() if p.key == "589T2R6T")
    saved = wb.save_answer(answer, parent_key=paper.key, title="RCTD full mode rationale (saved answer)")
    assert saved.parent_key == paper.key and paper.title in saved.where
    manifest = wb.corpus.manifest(saved.key)
    assert manifest["parent_key"] == paper.key and manifest["title"] == "RCTD full mode rationale (saved answer)"
    note = wb.source.get_note(saved.key)
    # Zotero note HTML: the wrapper lists the cited papers first (attributes sorted, as the note editor writes)
    assert re.match(r'<div data-citation-items="[^"]+" data-schema-version="\d+">', note.html) and "<h1>" in note.html
    assert 'class="citation"' in note.html  # the evidence-only answer's paper citations are live
    hits = wb.search("RCTD full mode rationale saved answer", k=5)
    assert saved.key in hits.keys()
    assert f"[Note Key: {saved.key}, Parent Paper Key: {paper.key}]" in hits.evidence_text


def test_save_session_standalone_in_collection(demo_workbench):
    wb = demo_workbench
    session = wb.new_session()
    wb.ask("How did Harmony behave with a higher diversity penalty?", session=session)
    wb.ask("And which integration method did we pick in the end?", session=session)
    collection = next(c for c in wb.collections() if c.name == "Reading group")
    saved = wb.save_session(session, collection_key=collection.key)
    assert "Reading group" in saved.where
    md = wb.read_document(saved.key)
    assert "Harmony" in md and "integration method" in md
    assert wb.corpus.manifest(saved.key)["collections"] == ["Reading group"]


def test_save_note_refuses_both_parent_and_collection_and_unknown_collection(demo_workbench):
    wb = demo_workbench
    with pytest.raises(ZocratesError, match="not both"):
        wb.save_note("x", "y", parent_key="589T2R6T", collection_key=wb.collections()[0].key)
    with pytest.raises(NotFoundError):
        wb.save_note("x", "y", collection_key="ZZZZZZZZ")


def test_edited_note_is_rematerialised_on_read_and_visible_in_diagnostics(demo_workbench):
    wb = demo_workbench
    key = "FK7CX7VJ"
    before = wb.read_document(key)
    html = wb.source.get_note(key).html.replace("six minutes", "nine minutes")
    wb.source.update_note(key, html)
    after = wb.read_document(key)  # stale hash → re-materialised on the fly
    assert "nine minutes" in after and "nine minutes" not in before
    assert key in wb.search("RCTD nine minutes eight cores", k=5).keys()  # re-indexed too
    wb.read_document(key)  # now the fast path
    staleness = wb.diagnostics.staleness().set_index("key")
    row = staleness.loc[key]
    assert row["rematerialisations"] >= 1 and row["fast_path_reads"] >= 1 and row["hash_changes"] >= 1


def test_sync_records_changed_keys(demo_workbench):
    wb = demo_workbench
    key = "DR9EFQIE"
    wb.source.update_note(key, wb.source.get_note(key).html.replace("</div>", "<p>Edited.</p></div>"))
    report = wb.sync(progress=False)
    assert report.counts["changed"] == 1 and report.changed_keys == [key]
    assert wb.diagnostics.staleness().set_index("key").loc[key]["hash_changes"] >= 1


def test_manifest_lookups_are_not_counted_as_reads(demo_workbench):
    wb = demo_workbench
    wb.corpus.manifest("FK7CX7VJ")
    kinds = wb.diagnostics.events()["kind"].tolist()
    assert "lookup" in kinds and "read" not in kinds


def test_status_reports_library_corpus_and_index(demo_workbench, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-9f8e7d")
    demo_workbench.config.set_llm(base_url="http://127.0.0.1:9/v1", model="m")
    status = demo_workbench.status()
    assert status["library"]["label"].startswith("demo library")
    assert status["corpus"]["notes"] >= 25 and status["corpus"]["papers"] >= 40
    assert status["index"]["chunks"] > status["corpus"]["notes"]
    assert status["llm"]["api_key_set"] is True
    assert "SECRET-9f8e7d" not in json.dumps(status) and "SECRET-9f8e7d" not in repr(demo_workbench)


def test_fresh_data_dir_syncs_the_demo_on_first_open(tmp_path, monkeypatch, demo_template):
    """A brand-new data directory opens the demo library with no setup (the Quick start promise)."""
    import shutil

    home = tmp_path / "fresh"
    shutil.copytree(demo_template, home)
    (home / "conversion_meta.db").unlink()  # as if never synced: first open syncs
    for extra in ("conversion_meta.db-wal", "conversion_meta.db-shm"):
        (home / extra).unlink(missing_ok=True)
    wb = Workbench(home, progress=False)
    try:
        assert wb.corpus.meta.count() >= 65
        assert wb.search("MERFISH error-robust barcodes", k=3).hits
    finally:
        wb.close()


def test_bundle_shows_title_provenance_and_sanitized_fresh_content(demo_workbench):
    import re

    wb = demo_workbench
    key = "FK7CX7VJ"
    html = wb.source.get_note(key).html.replace(
        "</div>", "<p>Bundle check <script>alert(1)</script><img src=x onerror=alert(2)></p></div>"
    )
    wb.source.update_note(key, html)  # edited in the library: the bundle is stale
    view = wb.bundle(key)
    manifest = wb.corpus.manifest(key)
    out = view._repr_html_()
    assert "Bundle check" in view.markdown and "Bundle check" in out  # re-materialised first
    assert view.manifest["source_hash"] == manifest["source_hash"]
    assert f"<h3>{manifest['title']}</h3>" in out
    assert f"sha256 {manifest['source_hash'][:12]}" in out and f"key {key}" in out
    assert "<script" not in out.lower() and not re.search(r"<[^>]*onerror", out)
    assert not hasattr(view, "_repr_markdown_")
    reads = wb.diagnostics.events("read")
    assert reads["key"].tolist() == [key]  # one display, one read
    # a note that *shows* markup as text: its Markdown carries the tags, the display must not run them
    wb.source.update_note(
        key,
        html.replace(
            "</div>", "<p>Literal &lt;script&gt;alert(3)&lt;/script&gt; &lt;img src=x onerror=alert(4)&gt;</p></div>"
        ),
    )
    literal = wb.bundle(key)
    assert "<script>alert(3)" in literal.markdown.replace("\\", "")
    out = literal._repr_html_()
    assert "Literal" in out and "<script" not in out.lower() and not re.search(r"<[^>]*onerror", out)
    with pytest.raises(NotFoundError):
        wb.bundle("ZZZZ9999")


def test_saved_note_repr_escapes_its_title(demo_workbench):
    saved = demo_workbench.save_note("Idea <img src=x onerror=alert(1)>", "Body.")
    out = saved._repr_html_()
    assert "Idea &lt;img src=x onerror=alert(1)&gt;" in out and "<img" not in out
    assert not hasattr(saved, "_repr_markdown_")


def test_the_wiring_gives_the_index_its_collaborators(demo_workbench):
    """workbench.py chooses the embedder, the vector store and what counts as corpus documents."""
    import sqlite3

    import pytest

    from zocrates_nb.errors import IndexCorruptError

    index = demo_workbench.index
    assert index._make_embedder is not None and index._has_documents is not None
    assert index._has_documents() is True
    conn = sqlite3.connect(demo_workbench.paths.meta_db)
    with conn:
        conn.execute("DELETE FROM chunks")  # the FTS rows go with them (triggers): the index is lost
    conn.close()
    with pytest.raises(IndexCorruptError, match="empty although the corpus"):
        index.search("Visium deconvolution", mode="lexical")


def test_demo_search_hits_are_never_pending_and_open_no_outbox(demo_workbench):
    wb = demo_workbench
    results = wb.search("cell type deconvolution", k=5, mode="lexical")
    assert results.hits and results.pending == {} and wb.pending_notes() == {}
    assert all(h["pending"] is False and h["pending_reason"] is None for h in results.to_dict()["hits"])
    assert "not yet in Zotero" not in results._repr_html_()
    assert not (wb.paths.root / "outbox.sqlite").exists()


def test_a_closed_workbench_is_never_handed_out_again(tmp_path, demo_template):
    """``open_workbench`` caches one workbench per directory; closing it must drop it from the cache."""
    import shutil

    home = tmp_path / "reopen"
    shutil.copytree(demo_template, home)
    first = open_workbench(home, dense_in_background=False)
    first.close()
    second = open_workbench(home, dense_in_background=False)
    try:
        assert second is not first
        assert second.search("MERFISH error-robust barcodes", k=3, mode="lexical").hits
    finally:
        second.close()
