"""PDF annotations through sync: one retrieval unit each, with its paper's context and its page; edits
and deletions in Zotero followed on the next sync (SHA-256 staleness); ``index.annotations = false``."""

from __future__ import annotations

import pytest

from tests.fakes.zotero_sqlite import ZoteroDB
from tests.library.test_desktop_annotations import build_annotated
from zocrates_nb.corpus.bundle import read_bundle
from zocrates_nb.workbench.core import Workbench

HIGHLIGHT_WORDS = "platform effects single-cell reference"


@pytest.fixture
def annotated(tmp_path):
    build_annotated(tmp_path / "zotero", "9")
    wb = Workbench(tmp_path / "data", zotero_dir=tmp_path / "zotero", auto_sync=False)
    report = wb.sync(vectors=False)
    yield wb, tmp_path / "zotero"
    wb.close()
    assert report.counts["failed"] == 0


def test_each_annotation_with_words_is_a_document(annotated):
    wb, _ = annotated
    kept = set(wb.corpus.keys("annotation"))
    # the image mark has no words: provenance only, never indexed
    assert kept == {"HILITE22", "STICKY22", "UNDERL22", "INK22222", "GRPANN22"}  # the group library's too
    manifest, markdown = read_bundle(wb.paths.corpus / "HILITE22")
    assert manifest["content_type"] == "text/annotation" and manifest["item_type"] == "annotation"
    assert (manifest["parent_key"], manifest["attachment_key"], manifest["page_label"]) == (
        "PAPER222",
        "PDFATT22",
        "12",
    )
    assert manifest["parent_title"] == "Robust decomposition of cell type mixtures" and manifest["library_id"] == 1
    assert markdown.startswith("> RCTD learns platform effects") and "the key trick for Visium" in markdown
    assert "Highlight · p. 12 · yellow · tags: key finding, method" in markdown


def test_search_finds_the_highlight_with_its_page(annotated):
    wb, _ = annotated
    hits = wb.search(HIGHLIGHT_WORDS, mode="lexical").hits
    top = hits[0]
    assert (top.kind, top.key, top.parent_key) == ("annotation", "HILITE22", "PAPER222")
    assert top.pages is not None and (top.pages.attachment_key, top.pages.start, top.pages.cite()) == (
        "PDFATT22",
        11,
        "p. 12",
    )
    assert top.annotation["comment"] == "the key trick for Visium" and top.annotation["library_id"] == 1
    # the paper's words reach the annotation through its context line
    assert "HILITE22" in {h.key for h in wb.search("Robust decomposition Visium", mode="lexical")}
    only = wb.search("Visium", filters={"item_type": "annotation"}, mode="lexical").hits
    assert only and {h.kind for h in only} == {"annotation"}


def test_an_edit_and_a_deletion_in_zotero_are_followed(annotated):
    wb, zotero = annotated
    db = ZoteroDB.reopen(zotero / "zotero.sqlite", "9")
    db.update_annotation("STICKY22", comment="compare with Tangram instead")
    db.delete_item("UNDERL22")
    db.close()
    report = wb.sync(vectors=False)
    assert report.counts["changed"] == 1 and report.counts["removed"] == 1 and report.changed_keys == ["STICKY22"]
    assert "UNDERL22" not in wb.corpus.keys("annotation")
    assert wb.search("Tangram instead", mode="lexical").hits[0].key == "STICKY22"
    assert not wb.search("doublet mode", filters={"item_type": "annotation"}, mode="lexical").hits
    assert wb.sync(vectors=False).counts["unchanged"] >= 1 and "compare with Tangram" in wb.read_document("STICKY22")


def test_annotations_can_be_left_out(annotated):
    wb, _ = annotated
    wb.config.update({"index": {"annotations": False}})
    wb.close()
    again = Workbench(wb.paths.root, zotero_dir=annotated[1], auto_sync=False)
    try:
        report = again.sync(vectors=False)
        assert report.counts["removed"] == 5 and again.corpus.keys("annotation") == []
        assert not [h for h in again.search(HIGHLIGHT_WORDS, mode="lexical") if h.kind == "annotation"]
    finally:
        again.close()


def test_a_schema_1_meta_database_learns_the_annotation_kind(tmp_path):
    import sqlite3

    from zocrates_nb.corpus.meta import MetaDB, MetaRow

    path = tmp_path / "conversion_meta.db"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE documents (id INTEGER PRIMARY KEY, key TEXT UNIQUE NOT NULL, "
        "kind TEXT NOT NULL CHECK (kind IN ('note', 'paper')), source_hash TEXT NOT NULL, "
        "converter_version TEXT NOT NULL, bundle_path TEXT NOT NULL, title TEXT, parent_key TEXT, updated_at TEXT, "
        "context_hash TEXT, collections TEXT NOT NULL DEFAULT '[]');"
        "CREATE INDEX documents_kind ON documents(kind);"
        "INSERT INTO documents (key, kind, source_hash, converter_version, bundle_path) "
        "VALUES ('NOTE2222', 'note', 'h', 'v', 'corpus/NOTE2222');"
        "PRAGMA user_version = 1;"
    )
    old.close()
    db = MetaDB(path)
    with db.write() as conn:
        db.upsert(conn, MetaRow("HILITE22", "annotation", "h2", "v", "corpus/HILITE22", parent_key="PAPER222"))
    assert db.keys() == ["HILITE22", "NOTE2222"] and db.keys("annotation") == ["HILITE22"]
    indexes = {r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"documents_kind", "documents_parent"} <= indexes
    assert db.conn.execute("PRAGMA user_version").fetchone()[0] == 2
    db.close()
