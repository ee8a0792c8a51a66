"""ZoteroDesktopLibrary against small zotero.sqlite files built from the schema facts (Zotero 5–10)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from tests.fakes.zotero_sqlite import ZoteroDB
from zocrates_nb.errors import LibraryError, LibraryLockedError, LibraryReadOnlyError
from zocrates_nb.library.base import LibrarySource
from zocrates_nb.library.desktop.snapshot import ZoteroDesktopLibrary, parse_zotero_date, strip_note_wrapper

NOTE_HTML = '<div data-schema-version="9"><h1>Niche signals</h1>\n<p>Hypoxia &amp; TAMs.</p>\n</div>'


def build_library(zotero_dir: Path, variant: str) -> ZoteroDB:
    zotero_dir.mkdir(parents=True, exist_ok=True)
    db = ZoteroDB(zotero_dir / "zotero.sqlite", variant)
    db.add_collection("SPATIAL2", "Spatial")
    db.add_collection("MTHDS222", "Methods", parent="SPATIAL2")
    db.add_collection("XTRASTF2", "Old stuff")
    db.add_paper(
        "PAPER222",
        "Visualization and analysis of gene expression in tissue sections",
        creators=[
            ("Patrik L.", "Ståhl", "author"),
            ("Fredrik", "Salmén", "author"),
            ("Ann", "Editor", "editor"),
            ("Joakim", "Lundeberg", "author"),
        ],
        date="2016-07-01 July 1, 2016",
        doi="10.1126/science.aaf2403",
        abstract="Spatial transcriptomics.",
        publication="Science",
        collections=["SPATIAL2"],
    )
    db.add_paper("PAPER333", "A trashed paper", creators=[("", "Consortium", "author")], date="2019-00-00 2019")
    db.add_paper(
        "PAPER444",
        "Only editors",
        creators=[("Eve", "Ed", "editor")],
        date="spring 2021",
        extra="DOI: 10.1000/xyz123\nPMID: 1",
    )
    db.add_note("STAND222", NOTE_HTML, collections=["SPATIAL2", "MTHDS222"])
    db.add_note("CHILD222", "<p>Child of Ståhl.</p>", parent="PAPER222")
    db.add_note("CHILD333", "<p>Child of a trashed paper.</p>", parent="PAPER333")
    db.add_note("TRASH222", "<p>Trashed directly.</p>", parent="PAPER222")
    db.add_note("LEGACY22", "plain <text>\nsecond line", wrap=False)
    db.add_note("GROUP222", "<p>Lives in a group library.</p>", library_id=2)
    db.add_attachment("ATTACH22", "PAPER222", note="<p>attachment note, not a note item</p>")
    db.trash("PAPER333")
    db.trash("TRASH222")
    storage = zotero_dir / "storage" / "ATTACH22"
    storage.mkdir(parents=True)
    (storage / ".zotero-ft-cache").write_text("Full text of the PDF.\n\nSecond paragraph.\n", encoding="utf-8")
    return db


@pytest.fixture(params=["5", "7", "9", "10"])
def zotero_dir(request, tmp_path) -> Path:
    d = tmp_path / f"zotero{request.param}"
    build_library(d, request.param).close()
    return d


def test_reads_notes_papers_collections_on_every_schema(zotero_dir):
    lib = ZoteroDesktopLibrary(zotero_dir=zotero_dir)
    assert isinstance(lib, LibrarySource) and lib.writable is False
    snap = lib.snapshot()
    notes = {n.key: n for n in snap.notes}
    # trashed directly, trashed through the parent, attachment notes: absent; the group library's is read too
    assert set(notes) == {"STAND222", "CHILD222", "LEGACY22", "GROUP222"}
    assert notes["GROUP222"].library_id == 2 and notes["STAND222"].library_id == 1
    assert [lib.kind for lib in snap.libraries] == ["user", "group"]
    assert notes["STAND222"].html == NOTE_HTML  # znv1 wrapper stripped
    assert notes["STAND222"].collections == ("SPATIAL2", "MTHDS222")
    assert notes["STAND222"].parent_key is None
    assert notes["CHILD222"].parent_key == "PAPER222" and notes["CHILD222"].collections == ()
    assert notes["CHILD222"].date_modified == "2023-01-17T15:44:41Z"
    assert notes["LEGACY22"].html == "<p>plain &lt;text&gt;</p><p>second line</p>"
    colls = {c.key: c for c in snap.collections}
    assert colls["MTHDS222"].parent_key == "SPATIAL2" and colls["SPATIAL2"].name == "Spatial"
    papers = {p.key: p for p in snap.papers}
    assert set(papers) == {"PAPER222", "PAPER444"}  # trashed paper excluded
    p = papers["PAPER222"]
    assert p.creators == ("Ståhl, Patrik L.", "Salmén, Fredrik", "Lundeberg, Joakim")  # order, authors only
    assert (p.year, p.date, p.doi, p.publication) == (2016, "July 1, 2016", "10.1126/science.aaf2403", "Science")
    assert p.abstract == "Spatial transcriptomics." and p.collections == ("SPATIAL2",)
    assert p.fulltext == "Full text of the PDF.\n\nSecond paragraph."
    assert p.citation == "Ståhl et al., 2016"
    q = papers["PAPER444"]
    assert q.creators == ("Ed, Eve",) and q.year == 2021 and q.doi == "10.1000/xyz123" and q.fulltext is None
    assert lib.get_note("CHILD222") == notes["CHILD222"] and lib.get_note("TRASH222") is None
    assert lib.get_paper("PAPER222") == p and lib.get_paper("PAPER333") is None


def test_versions_use_client_version_on_zotero_10(tmp_path):
    build_library(tmp_path / "z", "10").close()
    snap = ZoteroDesktopLibrary(zotero_dir=tmp_path / "z").snapshot()
    assert snap.version == 77 and {n.version for n in snap.notes} == {105}


def test_related_items_are_read_either_way_round(tmp_path):
    db = build_library(tmp_path / "z", "9")
    db.relate("STAND222", "PAPER222")  # Zotero's "Related": stored on both items
    db.relate("PAPER444", "LEGACY22", both=False)  # only the paper's half (the other not synced yet)
    db.relate("GROUP222", "PAPER222", both=False)  # another library's item is not this library's relation
    db.close()
    notes = {n.key: n for n in ZoteroDesktopLibrary(zotero_dir=tmp_path / "z").snapshot().notes}
    assert notes["STAND222"].related == ("PAPER222",)
    assert notes["LEGACY22"].related == ("PAPER444",)
    assert notes["CHILD222"].related == ()


def test_group_library_can_be_chosen(tmp_path):
    build_library(tmp_path / "z", "9").close()
    snap = ZoteroDesktopLibrary(zotero_dir=tmp_path / "z", library_id=2).snapshot()
    assert [n.key for n in snap.notes] == ["GROUP222"]


def test_trashed_collection_is_dropped(tmp_path):
    db = build_library(tmp_path / "z", "7")
    db.trash_collection("MTHDS222")
    db.close()
    snap = ZoteroDesktopLibrary(zotero_dir=tmp_path / "z").snapshot()
    assert "MTHDS222" not in snap.collection_names()
    assert {n.key: n for n in snap.notes}["STAND222"].collections == ("SPATIAL2",)


def test_live_zotero10_exclusive_wal_is_read_through_a_snapshot(tmp_path):
    """Zotero 10 holds an exclusive lock in WAL mode: direct reads fail, the snapshot sees the WAL."""
    zdir = tmp_path / "z"
    build_library(zdir, "10").close()
    db_path = zdir / "zotero.sqlite"
    live = sqlite3.connect(str(db_path), isolation_level=None)
    live.execute("PRAGMA locking_mode=EXCLUSIVE")
    live.execute("PRAGMA wal_autocheckpoint=0")  # keep the new note in the -wal file
    (note_type,) = live.execute("SELECT itemTypeID FROM itemTypes WHERE typeName='note'").fetchone()
    live.execute("BEGIN IMMEDIATE")
    cur = live.execute("INSERT INTO items(itemTypeID, libraryID, key) VALUES (?, 1, 'WALNOTE2')", (note_type,))
    live.execute(
        "INSERT INTO itemNotes VALUES (?, NULL, ?, '')",
        (cur.lastrowid, '<div class="zotero-note znv1"><p>only in the WAL</p></div>'),
    )
    live.execute("COMMIT")
    live.execute("BEGIN IMMEDIATE")  # and a write still open, as Zotero mid-save
    cur = live.execute("INSERT INTO items(itemTypeID, libraryID, key) VALUES (?, 1, 'UNCOMMIT')", (note_type,))
    live.execute("INSERT INTO itemNotes VALUES (?, NULL, '<p>x</p>', '')", (cur.lastrowid,))
    try:
        wal = db_path.with_name("zotero.sqlite-wal")
        assert wal.exists() and wal.stat().st_size > 0
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            sqlite3.connect(str(db_path), timeout=0.1).execute("SELECT count(*) FROM items").fetchone()
        before = hashlib.sha256(db_path.read_bytes()).hexdigest()
        lib = ZoteroDesktopLibrary(sqlite_path=db_path)
        note = lib.get_note("WALNOTE2")
        assert note is not None and note.html == "<p>only in the WAL</p>"
        assert lib.get_note("UNCOMMIT") is None
        assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before  # original untouched
    finally:
        live.execute("ROLLBACK")
        live.close()


def test_snapshot_refreshes_only_when_the_file_changes(tmp_path):
    db = build_library(tmp_path / "z", "9")
    lib = ZoteroDesktopLibrary(sqlite_path=tmp_path / "z" / "zotero.sqlite")
    first = lib.snapshot()
    assert lib.snapshot() is first  # unchanged file → same snapshot, no copy
    db.add_note("NEWNOTE2", "<p>added later</p>")
    db.close()
    st = (tmp_path / "z" / "zotero.sqlite").stat()
    os.utime(tmp_path / "z" / "zotero.sqlite", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    second = lib.snapshot()
    assert second is not first and lib.get_note("NEWNOTE2").html == "<p>added later</p>"


def test_writes_are_refused_with_a_hint(zotero_dir):
    lib = ZoteroDesktopLibrary(zotero_dir=zotero_dir)
    with pytest.raises(LibraryReadOnlyError) as err:
        lib.create_note("<p>x</p>", parent_key="PAPER222")
    assert "Web API" in err.value.hint
    with pytest.raises(LibraryReadOnlyError):
        lib.update_note("CHILD222", "<p>y</p>")


def test_missing_and_bogus_files_give_clear_errors(tmp_path):
    with pytest.raises(LibraryError) as err:
        ZoteroDesktopLibrary(sqlite_path=tmp_path / "nope.sqlite").snapshot()
    assert "does not exist" in err.value.message and err.value.hint
    bogus = tmp_path / "zotero.sqlite"
    bogus.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(LibraryLockedError) as err:
        ZoteroDesktopLibrary(sqlite_path=bogus).snapshot()
    assert err.value.hint
    other = tmp_path / "other.sqlite"
    sqlite3.connect(str(other)).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(LibraryError, match="not a Zotero database"):
        ZoteroDesktopLibrary(sqlite_path=other).snapshot()
    with pytest.raises(LibraryError):
        ZoteroDesktopLibrary()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of permissions")
def test_unreadable_file_is_reported_as_locked(tmp_path):
    build_library(tmp_path / "z", "7").close()
    path = tmp_path / "z" / "zotero.sqlite"
    path.chmod(0)
    try:
        with pytest.raises(LibraryLockedError) as err:
            ZoteroDesktopLibrary(sqlite_path=path).snapshot()
        assert "close Zotero" in err.value.hint
    finally:
        path.chmod(0o644)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2005-00-00 2005", ("2005", 2005)),
        ("2012-00-04 04 2012", ("04 2012", 2012)),
        ("0000-00-00 n.d.", ("n.d.", None)),
        ("circa 1999", ("circa 1999", 1999)),
        ("", ("", None)),
    ],
)
def test_parse_zotero_date(value, expected):
    assert parse_zotero_date(value) == expected


def test_strip_note_wrapper_variants():
    assert strip_note_wrapper('<div class="zotero-note znv1"><p>a</p></div>') == "<p>a</p>"
    assert strip_note_wrapper('<div class="zotero-note znv2"></div>') == ""
    assert strip_note_wrapper(None) == ""
    assert strip_note_wrapper("a\n\nb") == "<p>a</p><p>&nbsp;</p><p>b</p>"


@pytest.mark.parametrize("storage", ["blob", "text"])
def test_note_with_non_utf8_bytes_does_not_fail_the_read_or_the_sync(tmp_path, storage):
    """Bytes that are not UTF-8 (stored as BLOB, or as TEXT SQLite cannot decode) reach conversion as
    bytes: that note is decoded with replacement and reported; the other notes and metadata are read."""
    from zocrates_nb.corpus.sync import Corpus
    from zocrates_nb.paths import DataPaths

    db_path = tmp_path / "zotero.sqlite"
    raw = b'<div class="zotero-note znv1"><p>Caf\xe9 \xff bytes</p></div>'
    with ZoteroDB(db_path, "9") as db:
        db.add_paper("PAPERAAA", "placeholder", abstract="An abstract.")
        db.add_note("GOODNOTE", "<p>a good note</p>")
        item_id = db.add_note("BYTENOTE", "x")
        cast = "?" if storage == "blob" else "CAST(? AS TEXT)"
        db.conn.execute(f"UPDATE itemNotes SET note = {cast} WHERE itemID = ?", (raw, item_id))
        db.conn.execute(f"UPDATE itemDataValues SET value = {cast} WHERE value = 'placeholder'", (b"Title \xff",))
    library = ZoteroDesktopLibrary(sqlite_path=db_path)
    snap = library.snapshot()
    notes = {n.key: n.html for n in snap.notes}
    assert notes["GOODNOTE"] == "<p>a good note</p>"
    assert notes["BYTENOTE"] == b"<p>Caf\xe9 \xff bytes</p>"  # wrapper stripped, bytes kept
    assert snap.papers[0].title == "Title \ufffd"
    assert strip_note_wrapper(raw) == b"<p>Caf\xe9 \xff bytes</p>"
    corpus = Corpus(DataPaths(tmp_path / "data").ensure(), library)
    report = corpus.sync()
    assert report.counts["new"] == 3 and report.counts["failed"] == 0
    assert any(key == "BYTENOTE" and "UTF-8" in reason for key, reason in report.warnings)
    assert "bytes" in corpus.read_document("BYTENOTE") and "a good note" in corpus.read_document("GOODNOTE")


def test_copy_failure_is_reported_as_locked_with_a_hint(tmp_path):
    """A path that cannot be copied (here a folder, as a held lock would on Windows) → LibraryLockedError."""
    folder = tmp_path / "zotero.sqlite"
    folder.mkdir()
    with pytest.raises(LibraryLockedError) as err:
        ZoteroDesktopLibrary(sqlite_path=folder).snapshot()
    assert "close Zotero" in err.value.hint
