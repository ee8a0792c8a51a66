"""Reading PDFs per page (PDFium) and finding them as Zotero desktop does: storage, linked files, the base dir."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.fakes.pdf_files import page_texts, write_pdf
from tests.fakes.zotero_sqlite import ZoteroDB
from zocrates_nb.library.desktop.detect import attachment_base_dir, parse_base_attachment_path
from zocrates_nb.library.desktop.files import attachment_path
from zocrates_nb.library.desktop.reader import AttachmentRow
from zocrates_nb.library.desktop.snapshot import ZoteroDesktopLibrary
from zocrates_nb.library.pdf_text import PdfPageReader, clean_label, read_pdf
from zocrates_nb.records import PdfFile

REAL_DB = Path(__file__).resolve().parents[3] / "shared" / "data" / "zotero" / "zotero9-profile.sqlite"
FRONT_THEN_ARABIC = [(0, "r", "", 1), (2, "D", "", 1)]


def test_pages_keep_the_pdfs_labels(tmp_path):
    pdf = write_pdf(tmp_path / "a.pdf", page_texts(5, 40), labels=FRONT_THEN_ARABIC)
    text = read_pdf(pdf, "ATTK2345")
    assert text.failure is None
    assert [(p.index, p.label) for p in text.pages] == [(0, "i"), (1, "ii"), (2, "1"), (3, "2"), (4, "3")]
    assert all(f"pagemarker{p.index}" in p.text for p in text.pages)


def test_without_labels_pages_are_numbered_from_one(tmp_path):
    text = read_pdf(write_pdf(tmp_path / "a.pdf", page_texts(3, 30)), "ATTK2345")
    assert [p.label for p in text.pages] == ["1", "2", "3"]


def test_labels_with_a_prefix_and_a_start(tmp_path):
    text = read_pdf(write_pdf(tmp_path / "a.pdf", page_texts(2, 30), labels=[(0, "D", "S", 3)]), "ATTK2345")
    assert [p.label for p in text.pages] == ["S3", "S4"]


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: write_pdf(p, page_texts(2, 30), encrypted=True), "encrypted"),
        (lambda p: p.write_bytes(write_pdf(p, page_texts(3, 30)).read_bytes()[:300]), "damaged"),
        (lambda p: write_pdf(p, [None, None]), "no text layer"),
        (lambda p: p.write_text("<html>not a pdf</html>"), "not a PDF"),
    ],
    ids=["encrypted", "truncated", "scanned", "html"],
)
def test_an_unreadable_pdf_says_why(tmp_path, make, reason):
    path = tmp_path / "bad.pdf"
    make(path)
    text = read_pdf(path, "ATTK2345")
    assert text.pages == () and reason in text.failure


def test_a_missing_file_is_a_failure_that_is_not_cached(tmp_path):
    reader = PdfPageReader(tmp_path / "cache.sqlite")
    pdf = PdfFile("ATTK2345", str(tmp_path / "gone.pdf"), 10, 1)
    assert "could not be opened" in reader.read(pdf).failure
    assert "could not be opened" in reader.read(pdf).failure
    assert (reader.extracted, reader.cached) == (2, 0)  # tried again: the file may come back


def test_page_labels_from_the_file_cannot_shape_an_evidence_header():
    assert clean_label("12]\n[Note Key: FAKE1234", 0) == "12 Note Key: FAKE1234"[:24]
    assert clean_label("  ", 6) == "7" and clean_label(None, 0) == "1"


def test_the_cache_serves_an_unchanged_file_and_reads_a_changed_one(tmp_path):
    path = write_pdf(tmp_path / "a.pdf", page_texts(2, 30))
    reader = PdfPageReader(tmp_path / "cache.sqlite")

    def stamp() -> PdfFile:
        st = path.stat()
        return PdfFile("ATTK2345", str(path), st.st_size, st.st_mtime_ns)

    first = reader.read(stamp())
    assert reader.read(stamp()) == first and (reader.extracted, reader.cached) == (1, 1)
    again = PdfPageReader(tmp_path / "cache.sqlite")  # another process, the same data directory
    assert again.read(stamp()) == first and again.extracted == 0
    write_pdf(path, page_texts(3, 30, topic="changed"))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    changed = again.read(stamp())
    assert len(changed.pages) == 3 and "changedmarker2" in changed.pages[2].text and again.extracted == 1


def test_a_damaged_cache_is_read_around(tmp_path):
    path = write_pdf(tmp_path / "a.pdf", page_texts(2, 30))
    (tmp_path / "cache.sqlite").write_bytes(b"this is not a database" * 100)
    st = path.stat()
    text = PdfPageReader(tmp_path / "cache.sqlite").read(PdfFile("ATTK2345", str(path), st.st_size, st.st_mtime_ns))
    assert len(text.pages) == 2


# ------------------------------------------------------------------------- where the files are


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (AttachmentRow("ATTK2345", 0, "application/pdf", "storage:paper.pdf"), "storage/ATTK2345/paper.pdf"),
        (AttachmentRow("ATTK2345", 1, "application/pdf", "storage:snap.pdf"), "storage/ATTK2345/snap.pdf"),
        (AttachmentRow("ATTK2345", 0, "application/pdf", "storage:../../etc/passwd"), None),
        (AttachmentRow("ATTK2345", 0, "application/pdf", "storage:.zotero-ft-cache"), None),
        (AttachmentRow("ATTK2345", 2, "application/pdf", "attachments:Papers/2021/a.pdf"), "base/Papers/2021/a.pdf"),
        (AttachmentRow("ATTK2345", 2, "application/pdf", "attachments:Papers\\b.pdf"), "base/Papers/b.pdf"),
        (AttachmentRow("ATTK2345", 2, "application/pdf", "/abs/c.pdf"), "/abs/c.pdf"),
        (AttachmentRow("ATTK2345", 2, "application/pdf", "relative/old.pdf"), None),
        (AttachmentRow("ATTK2345", 3, "text/html", "https://example.org"), None),
    ],
)
def test_attachment_paths_resolve_as_zotero_resolves_them(tmp_path, row, expected):
    found = attachment_path(row, tmp_path / "storage", tmp_path / "base")
    if expected is None:
        assert found is None
    else:
        assert found == (Path(expected) if expected.startswith("/") else tmp_path / expected)


def _prefs(profile: Path, data_dir: Path | None, base: Path) -> None:
    profile.mkdir(parents=True)
    lines = [f'user_pref("extensions.zotero.baseAttachmentPath", "{base}");']
    if data_dir is not None:
        lines += [
            f'user_pref("extensions.zotero.dataDir", "{data_dir}");',
            'user_pref("extensions.zotero.useDataDir", true);',
        ]
    (profile / "prefs.js").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_base_directory_comes_from_the_profile_that_uses_this_data_dir(tmp_path, monkeypatch):
    roots = tmp_path / "profiles"
    _prefs(roots / "a.default", tmp_path / "Elsewhere", tmp_path / "wrong")
    _prefs(roots / "b.work", tmp_path / "MyZotero", tmp_path / "Linked")
    monkeypatch.setenv("ZOCRATES_ZOTERO_PROFILE_ROOTS", str(roots))
    (tmp_path / "MyZotero").mkdir()
    assert attachment_base_dir(tmp_path / "MyZotero", home=tmp_path) == tmp_path / "Linked"
    assert attachment_base_dir(tmp_path / "Unknown", home=tmp_path) is None
    assert parse_base_attachment_path('user_pref("extensions.zotero.baseAttachmentPath", "C:\\\\Papers");') == Path(
        "C:\\Papers"
    )


def _library_with_pdfs(tmp_path: Path, monkeypatch) -> Path:
    zdir, linked = tmp_path / "Zotero", tmp_path / "Linked"
    zdir.mkdir()
    with ZoteroDB(zdir / "zotero.sqlite", "7") as db:
        db.add_paper("PAPERAAA", "Stored PDF")
        db.add_attachment("ATTAAAAA", "PAPERAAA", path="storage:Stored.pdf")
        db.add_paper("PAPERBBB", "Linked PDF, relative")
        db.add_attachment("ATTBBBBB", "PAPERBBB", link_mode=2, path="attachments:2021/linked.pdf")
        db.add_paper("PAPERCCC", "PDF not synced to this machine")
        db.add_attachment("ATTCCCCC", "PAPERCCC", path="storage:missing.pdf")
        db.add_paper("PAPERDDD", "PDF plus an HTML snapshot")
        db.add_attachment("ATTDDDDD", "PAPERDDD", path="storage:d.pdf")
        db.add_attachment("ATTDDDD2", "PAPERDDD", link_mode=1, path="storage:page.html", content_type="text/html")
    write_pdf(zdir / "storage" / "ATTAAAAA" / "Stored.pdf", page_texts(2, 30))
    write_pdf(linked / "2021" / "linked.pdf", page_texts(2, 30))
    write_pdf(zdir / "storage" / "ATTDDDDD" / "d.pdf", page_texts(2, 30))
    for key, text in (("ATTCCCCC", "cache of C"), ("ATTDDDDD", "cache of D"), ("ATTDDDD2", "snapshot text")):
        (zdir / "storage" / key).mkdir(parents=True, exist_ok=True)
        (zdir / "storage" / key / ".zotero-ft-cache").write_text(text, encoding="utf-8")
    _prefs(tmp_path / "profiles" / "x.default", zdir, linked)
    monkeypatch.setenv("ZOCRATES_ZOTERO_PROFILE_ROOTS", str(tmp_path / "profiles"))
    return zdir


def test_the_desktop_source_offers_the_pdfs_at_hand(tmp_path, monkeypatch):
    zdir = _library_with_pdfs(tmp_path, monkeypatch)
    papers = {p.key: p for p in ZoteroDesktopLibrary(zotero_dir=zdir).snapshot().papers}
    assert [p.attachment_key for p in papers["PAPERAAA"].pdfs] == ["ATTAAAAA"]
    assert papers["PAPERBBB"].pdfs[0].path == str(tmp_path / "Linked" / "2021" / "linked.pdf")
    assert papers["PAPERCCC"].pdfs == () and papers["PAPERCCC"].fulltext == "cache of C"  # nothing lost
    d = papers["PAPERDDD"]
    assert d.pdfs[0].cached_text == "cache of D" and d.fulltext == "snapshot text"
    off = {p.key: p for p in ZoteroDesktopLibrary(zotero_dir=zdir, read_pdfs=False).snapshot().papers}
    assert off["PAPERDDD"].pdfs == () and off["PAPERDDD"].fulltext == "cache of D\n\nsnapshot text"


def test_a_replaced_or_removed_pdf_is_seen_without_a_database_change(tmp_path, monkeypatch):
    zdir = _library_with_pdfs(tmp_path, monkeypatch)
    lib = ZoteroDesktopLibrary(zotero_dir=zdir)
    before = lib.snapshot()
    stored = zdir / "storage" / "ATTDDDDD" / "d.pdf"
    write_pdf(stored, page_texts(4, 30))
    (zdir / "storage" / "ATTAAAAA" / "Stored.pdf").unlink()
    after = {p.key: p for p in lib.snapshot().papers}
    assert after["PAPERDDD"].pdfs[0].size == stored.stat().st_size != before.papers[3].pdfs[0].size
    assert after["PAPERAAA"].pdfs == () and lib.get_paper("PAPERAAA").pdfs == ()


@pytest.mark.skipif(not REAL_DB.exists(), reason="the real Zotero 9 database is not in ../shared/data")
def test_the_real_zotero9_database_finds_its_stored_pdf(tmp_path):
    zdir = tmp_path / "Zotero"
    zdir.mkdir()
    shutil.copyfile(REAL_DB, zdir / "zotero.sqlite")
    conn = sqlite3.connect(zdir / "zotero.sqlite")
    key, path = conn.execute(
        "SELECT i.key, a.path FROM itemAttachments a JOIN items i USING (itemID) "
        "WHERE a.contentType = 'application/pdf'"
    ).fetchone()
    conn.close()
    assert not [p for p in ZoteroDesktopLibrary(zotero_dir=zdir).snapshot().papers if p.pdfs]  # not synced here
    write_pdf(zdir / "storage" / key / path.removeprefix("storage:"), page_texts(2, 30))
    (with_pdf,) = [p for p in ZoteroDesktopLibrary(zotero_dir=zdir).snapshot().papers if p.pdfs]
    assert with_pdf.pdfs[0].attachment_key == key
    assert len(read_pdf(Path(with_pdf.pdfs[0].path), key).pages) == 2
