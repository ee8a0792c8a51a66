"""Corpus: sync, SHA-256 staleness, fast path vs re-materialise, removal, the indexer transaction."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import replace

import pytest

from zocrates_nb.convert.convert import CONVERTER_VERSION
from zocrates_nb.corpus import sync as sync_module
from zocrates_nb.corpus import sync_run, writer
from zocrates_nb.corpus.bundle import read_bundle, read_manifest
from zocrates_nb.corpus.sync import Corpus, SyncReport
from zocrates_nb.errors import NotFoundError
from zocrates_nb.library.base import Collection, LibrarySnapshot, Note, Paper
from zocrates_nb.paths import DataPaths

MANIFEST_FIELDS = {
    "okf_version",
    "key",
    "content_type",
    "item_type",
    "title",
    "parent_key",
    "parent_title",
    "collections",
    "collection_keys",
    "abstract",
    "abstract_source",
    "source_hash",
    "word_count",
    "toc",
    "converted_at",
    "converter_version",
}
PAPER_FIELDS = MANIFEST_FIELDS | {"creators", "year", "doi", "citation"}


class MemoryLibrary:
    """A LibrarySource held in dicts: lets tests put anything (bytes, None) into a note body."""

    writable = True

    def __init__(self) -> None:
        self.notes: dict[str, Note] = {}
        self.papers: dict[str, Paper] = {}
        self.collections = [Collection("COLLAAAA", "Spatial"), Collection("COLLBBBB", "Single cell")]
        self.trashed: set[str] = set()
        self.failures: list[tuple[str, str]] = []
        self.get_note_calls = 0

    def describe(self) -> str:
        return "memory library"

    def _visible(self, note: Note) -> bool:
        return note.key not in self.trashed and (note.parent_key or "") not in self.trashed

    def snapshot(self) -> LibrarySnapshot:
        return LibrarySnapshot(
            papers=tuple(p for k, p in self.papers.items() if k not in self.trashed),
            notes=tuple(n for n in self.notes.values() if self._visible(n)),
            collections=tuple(self.collections),
            failures=tuple(self.failures),
        )

    def get_note(self, key: str) -> Note | None:
        self.get_note_calls += 1
        note = self.notes.get(key)
        return note if note is not None and self._visible(note) else None

    def get_paper(self, key: str) -> Paper | None:
        return None if key in self.trashed else self.papers.get(key)

    def create_note(self, html: str, *, parent_key: str | None = None, collection_keys: Sequence[str] = ()) -> Note:
        key = f"NEW{len(self.notes):05d}"
        self.notes[key] = Note(key, html, parent_key, tuple(collection_keys), 1)
        return self.notes[key]

    def update_note(self, key: str, html: str) -> Note:
        self.notes[key] = replace(self.notes[key], html=html, version=self.notes[key].version + 1)
        return self.notes[key]

    def close(self) -> None:
        pass


class RecordingIndexer:
    """A tiny DocumentIndexer that writes real rows into the caller's transaction."""

    def __init__(self, fail_on: set[str] | None = None) -> None:
        self.fail_on = fail_on or set()
        self.staged: list[str] = []
        self.unstaged: list[str] = []
        self.vector_commits = 0

    def stage(self, conn, manifest: dict, markdown: str) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS test_index (key TEXT PRIMARY KEY, source_hash TEXT, text TEXT)")
        conn.execute(
            "INSERT INTO test_index VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
            "source_hash = excluded.source_hash, text = excluded.text",
            (manifest["key"], manifest["source_hash"], markdown),
        )
        self.staged.append(manifest["key"])
        if manifest["key"] in self.fail_on:
            raise RuntimeError(f"index refused {manifest['key']}")

    def record_libraries(self, conn, libraries, of_keys) -> int:
        self.libraries = (tuple(libraries), dict(of_keys))
        return 0

    def unstage(self, conn, key: str) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS test_index (key TEXT PRIMARY KEY, source_hash TEXT, text TEXT)")
        conn.execute("DELETE FROM test_index WHERE key = ?", (key,))
        self.unstaged.append(key)

    def commit_vectors(self) -> None:
        self.vector_commits += 1


class RecordingEvents:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def emit(self, kind: str, **fields) -> None:
        self.events.append((kind, fields))


def note_html(title: str, body: str = "Body text.") -> str:
    return f'<div data-schema-version="9"><h1>{title}</h1>\n<p>{body}</p>\n</div>'


LONG = " ".join(f"word{i}" for i in range(130))


@pytest.fixture
def library() -> MemoryLibrary:
    lib = MemoryLibrary()
    lib.papers["PAPER222"] = Paper(
        "PAPER222",
        "Spatially resolved transcriptomics",
        creators=("Ståhl, P", "Lundeberg, J"),
        year=2016,
        doi="10.1/st",
        abstract="Arrays of barcoded spots.",
        fulltext="Para one.\n\nPara two.",
        collections=("COLLAAAA",),
    )
    lib.notes["CHILD222"] = Note("CHILD222", note_html("Child note", LONG), parent_key="PAPER222")
    lib.notes["STAND222"] = Note("STAND222", note_html("Standalone", "short"), collections=("COLLAAAA", "COLLBBBB"))
    lib.notes["OTHER222"] = Note("OTHER222", note_html("Other", "<b>bold</b> words"))
    return lib


@pytest.fixture
def paths(data_dir) -> DataPaths:
    return DataPaths(data_dir).ensure()


def index_rows(corpus: Corpus) -> dict[str, str]:
    try:
        return dict(corpus.meta.conn.execute("SELECT key, source_hash FROM test_index"))
    except Exception:  # noqa: BLE001 - table not created yet
        return {}


def test_first_sync_writes_bundles_meta_and_index_rows(paths, library):
    indexer, events = RecordingIndexer(), RecordingEvents()
    corpus = Corpus(paths, library, indexer=indexer, events=events)
    report = corpus.sync()
    assert isinstance(report, SyncReport)
    assert report.counts == {"new": 4, "changed": 0, "unchanged": 0, "removed": 0, "failed": 0}
    assert report.failures == [] and report.seconds > 0
    child = read_manifest(paths.corpus / "CHILD222")
    assert MANIFEST_FIELDS <= child.keys()
    assert child["okf_version"] == "0.2" and child["content_type"] == "text/note" and child["item_type"] == "note"
    assert child["parent_key"] == "PAPER222" and child["parent_title"] == "Spatially resolved transcriptomics"
    assert child["abstract_source"] == "extractive" and child["word_count"] == 132
    assert child["source_hash"] == hashlib.sha256(library.notes["CHILD222"].html.encode()).hexdigest()
    assert child["converter_version"] == CONVERTER_VERSION
    stand = read_manifest(paths.corpus / "STAND222")
    assert stand["collections"] == ["Spatial", "Single cell"] and stand["collection_keys"] == ["COLLAAAA", "COLLBBBB"]
    assert stand["abstract"] is None and stand["abstract_source"] is None
    paper = read_manifest(paths.corpus / "PAPER222")
    assert PAPER_FIELDS <= paper.keys() and paper["content_type"] == "text/paper"
    assert paper["citation"] == "Ståhl & Lundeberg, 2016" and paper["creators"] == ["Ståhl, P", "Lundeberg, J"]
    assert (paths.corpus / "PAPER222" / "content.md").read_text().count("Para ") == 2
    assert sorted(corpus.keys()) == ["CHILD222", "OTHER222", "PAPER222", "STAND222"]
    assert corpus.keys("paper") == ["PAPER222"]
    assert index_rows(corpus) == {k: read_manifest(paths.corpus / k)["source_hash"] for k in corpus.keys()}
    assert indexer.vector_commits >= 1
    assert [k for k, _ in events.events] == ["sync"] and events.events[0][1]["new"] == 4
    assert {
        "key": "STAND222",
        "title": "Standalone",
        "parent_key": None,
        "collections": ["Spatial", "Single cell"],
    } in corpus.listing("note")


def test_unchanged_sync_touches_nothing(paths, library):
    indexer = RecordingIndexer()
    corpus = Corpus(paths, library, indexer=indexer)
    corpus.sync()
    mtimes = {p.name: os.stat(p / "okf.json").st_mtime_ns for p in paths.corpus.iterdir()}
    inodes = {p.name: os.stat(p).st_ino for p in paths.corpus.iterdir()}
    staged = len(indexer.staged)
    report = corpus.sync()
    assert report.counts == {"new": 0, "changed": 0, "unchanged": 4, "removed": 0, "failed": 0}
    assert len(indexer.staged) == staged
    assert {p.name: os.stat(p / "okf.json").st_mtime_ns for p in paths.corpus.iterdir()} == mtimes
    assert {p.name: os.stat(p).st_ino for p in paths.corpus.iterdir()} == inodes


def test_fast_path_then_edit_rematerialises_in_the_read_call(paths, library):
    indexer, events = RecordingIndexer(), RecordingEvents()
    corpus = Corpus(paths, library, indexer=indexer, events=events)
    corpus.sync()
    other_mtime = os.stat(paths.corpus / "STAND222" / "okf.json").st_mtime_ns
    assert corpus._resolve_bundle_dir("CHILD222") == paths.corpus / "CHILD222"
    assert events.events[-1] == (
        "read",
        {
            "key": "CHILD222",
            "fast_path": True,
            "rematerialised": False,
            "latency_ms": events.events[-1][1]["latency_ms"],
        },
    )

    library.update_note("CHILD222", note_html("Child note", "Edited: deconvolution with RCTD."))
    text = corpus.read_document("CHILD222")
    assert "Edited: deconvolution with RCTD." in text
    kind, fields = events.events[-1]
    assert kind == "read" and fields["fast_path"] is False and fields["rematerialised"] is True
    new_hash = hashlib.sha256(library.notes["CHILD222"].html.encode()).hexdigest()
    assert corpus.meta.get("CHILD222").source_hash == new_hash
    assert read_manifest(paths.corpus / "CHILD222")["source_hash"] == new_hash
    assert read_manifest(paths.corpus / "CHILD222")["abstract"] is None  # now short
    assert index_rows(corpus)["CHILD222"] == new_hash
    assert os.stat(paths.corpus / "STAND222" / "okf.json").st_mtime_ns == other_mtime
    corpus.read_document("CHILD222")
    assert events.events[-1][1]["fast_path"] is True
    assert corpus.sync().counts["unchanged"] == 4  # the read already brought it up to date


def test_sync_picks_up_edits_moves_and_converter_version(paths, library, monkeypatch):
    corpus = Corpus(paths, library)
    corpus.sync()
    library.update_note("OTHER222", note_html("Other", "changed"))
    library.notes["STAND222"] = replace(library.notes["STAND222"], collections=("COLLBBBB",))
    report = corpus.sync()
    assert report.counts == {"new": 0, "changed": 2, "unchanged": 2, "removed": 0, "failed": 0}
    assert read_manifest(paths.corpus / "STAND222")["collections"] == ["Single cell"]
    import zocrates_nb.convert.convert as convert_module

    monkeypatch.setattr(convert_module, "CONVERTER_VERSION", "zocrates-convert/next")
    for module in (sync_module, sync_run, writer):  # each binds the version it compares or records
        monkeypatch.setattr(module, "CONVERTER_VERSION", "zocrates-convert/next")
    assert corpus.sync().counts["changed"] == 4
    assert read_manifest(paths.corpus / "OTHER222")["converter_version"] == "zocrates-convert/next"


def test_trash_and_delete_remove_bundle_meta_and_index_rows(paths, library):
    indexer = RecordingIndexer()
    corpus = Corpus(paths, library, indexer=indexer)
    corpus.sync()
    library.trashed.add("PAPER222")  # trashing the parent trashes its child note too
    del library.notes["OTHER222"]  # deleted outright
    report = corpus.sync()
    assert report.counts["removed"] == 3 and report.counts["unchanged"] == 1
    for key in ("PAPER222", "CHILD222", "OTHER222"):
        assert not (paths.corpus / key).exists()
        assert corpus.meta.get(key) is None
        assert key in indexer.unstaged
    assert set(index_rows(corpus)) == {"STAND222"}
    assert corpus.keys() == ["STAND222"]
    with pytest.raises(NotFoundError):
        corpus.read_document("OTHER222")


def test_read_of_a_note_trashed_since_sync_removes_it(paths, library):
    indexer = RecordingIndexer()
    corpus = Corpus(paths, library, indexer=indexer)
    corpus.sync()
    library.trashed.add("STAND222")
    with pytest.raises(NotFoundError) as info:
        corpus.read_document("STAND222")
    assert "trashed" in info.value.message
    assert corpus.meta.get("STAND222") is None and not (paths.corpus / "STAND222").exists()
    assert "STAND222" not in index_rows(corpus)


def test_index_failure_rolls_back_meta_and_index_and_keeps_old_bundle(paths, library):
    indexer = RecordingIndexer()
    corpus = Corpus(paths, library, indexer=indexer)
    corpus.sync()
    old_hash = corpus.meta.get("OTHER222").source_hash
    old_text = (paths.corpus / "OTHER222" / "content.md").read_text()
    library.update_note("OTHER222", note_html("Other", "new text"))
    library.update_note("STAND222", note_html("Standalone", "also new"))
    indexer.fail_on = {"OTHER222"}
    report = corpus.sync()
    assert report.counts["failed"] == 1 and report.counts["changed"] == 1
    assert report.failures == [("OTHER222", "RuntimeError: index refused OTHER222")]
    assert corpus.meta.get("OTHER222").source_hash == old_hash  # meta row rolled back
    assert index_rows(corpus)["OTHER222"] == old_hash  # index row rolled back
    assert (paths.corpus / "OTHER222" / "content.md").read_text() == old_text  # old bundle kept
    assert "also new" in corpus.read_document("STAND222")
    assert not [p for p in paths.corpus.iterdir() if p.name.startswith(".")]  # no temp dirs left
    indexer.fail_on = set()
    assert corpus.sync().counts["changed"] == 1


def test_vector_store_error_while_removing_is_a_warning_not_a_failed_sync(paths, library):
    """Removal commits vectors too; a vector-store error there must not abort the sync (as in _apply)."""
    indexer = RecordingIndexer()
    corpus = Corpus(paths, library, indexer=indexer)
    corpus.sync()

    def broken() -> None:
        raise RuntimeError("vector store unavailable")

    indexer.commit_vectors = broken
    del library.notes["OTHER222"]
    library.notes["STAND222"] = replace(library.notes["STAND222"], html="<p>edited standalone</p>")
    report = corpus.sync()
    assert report.counts["removed"] == 1 and report.counts["changed"] == 1
    assert ("(vectors)", "dense vectors not updated: RuntimeError: vector store unavailable") in report.warnings
    assert "OTHER222" not in corpus.keys() and "edited standalone" in corpus.read_document("STAND222")


def test_bad_inputs_each_get_a_clear_report_entry_and_nothing_is_lost(paths, library):
    corpus = Corpus(paths, library)
    corpus.sync()
    before = read_bundle(paths.corpus / "OTHER222")
    bad = {
        "EMPTY222": "",
        "BLANK222": "   \n ",
        "MALFO222": "<p>unclosed <b>bold<table><td>cell",
        "LATIN222": "<p>café ".encode("latin-1") + b"\xff</p>",
        "IMAGE222": '<p><img alt="gel photo"></p>',
        "SCRIP222": "<p>ok</p><script>steal()</script>",
        "NONE2222": None,
    }
    for key, html in bad.items():
        library.notes[key] = Note(key, html)
    library.notes["OTHER222"] = replace(library.notes["OTHER222"], html=12345)  # a broken edit
    library.failures = [("UNREAD22", "database row could not be decoded")]
    report = corpus.sync()
    assert dict(report.failures) == {
        "NONE2222": "the note body is NoneType, not HTML text",
        "OTHER222": "the note body is int, not HTML text",
        "UNREAD22": "the library could not read it: database row could not be decoded",
    }
    assert report.counts["failed"] == 3 and report.counts["new"] == 6
    warned = dict(report.warnings)
    assert "empty" in warned["EMPTY222"] and "empty" in warned["BLANK222"]
    assert "UTF-8" in warned["LATIN222"] and "only images" in warned["IMAGE222"] and "<script>" in warned["SCRIP222"]
    assert "MALFO222" not in warned and "cell" in corpus.read_document("MALFO222")
    assert "steal" not in corpus.read_document("SCRIP222")
    assert read_bundle(paths.corpus / "OTHER222") == before  # the last good bundle is kept
    assert "OTHER222" in corpus.keys()  # and not counted as removed
    assert library.notes["LATIN222"].html.endswith(b"\xff</p>")  # the source is never modified


def test_sections_toc_and_unknown_section(paths, library):
    library.notes["SECTS222"] = Note(
        "SECTS222",
        '<div data-schema-version="9"><h1>Plan</h1><p>intro</p>'
        "<h2>Data</h2><p>the data part</p><h2>Methods</h2><p>method text</p></div>",
    )
    corpus = Corpus(paths, library)
    corpus.sync()
    toc = corpus.get_document_toc("SECTS222")
    assert [e["id"] for e in toc] == ["plan", "data", "methods"]
    assert corpus.read_document("SECTS222", section="data") == "## Data\n\nthe data part\n"
    assert corpus.read_document("SECTS222", section="  methods ") == "## Methods\n\nmethod text\n"
    with pytest.raises(NotFoundError) as info:
        corpus.read_document("SECTS222", section="Results")
    assert "data (Data)" in info.value.hint and "methods (Methods)" in info.value.hint
    assert corpus.manifest("SECTS222")["toc"] == toc
    with pytest.raises(NotFoundError):
        corpus.read_document("NOSUCH22")


def test_materialize_note_and_unknown_key_materialised_on_read(paths, library):
    indexer = RecordingIndexer()
    corpus = Corpus(paths, library, indexer=indexer)
    corpus.sync()
    note = library.create_note(note_html("Saved answer", "From the chat."), collection_keys=["COLLBBBB"])
    path = corpus.materialize_note(note)
    assert path == paths.corpus / note.key and "From the chat." in (path / "content.md").read_text()
    assert read_manifest(path)["collections"] == ["Single cell"]
    assert note.key in index_rows(corpus) and corpus.meta.get(note.key) is not None
    late = library.create_note(note_html("Late", "added after sync"))
    assert "added after sync" in corpus.read_document(late.key)  # not yet synced: materialised on read
    assert corpus.sync().counts == {"new": 0, "changed": 0, "unchanged": 6, "removed": 0, "failed": 0}


def test_paper_changes_are_stale_too(paths, library):
    corpus = Corpus(paths, library)
    corpus.sync()
    library.papers["PAPER222"] = replace(library.papers["PAPER222"], fulltext="Para one.\n\nNew results.")
    assert "New results." in corpus.read_document("PAPER222")
    assert corpus.sync().counts["unchanged"] == 4


def test_damaged_bundle_is_rebuilt_on_read(paths, library):
    corpus = Corpus(paths, library)
    corpus.sync()
    (paths.corpus / "OTHER222" / "content.md").write_text("tampered")
    assert "tampered" not in corpus.read_document("OTHER222")
    assert "words" in corpus.read_document("OTHER222")
    (paths.corpus / "STAND222" / "okf.json").unlink()
    assert "short" in corpus.read_document("STAND222")  # missing manifest → not fast path → rebuilt


def test_progress_is_shown_when_asked_and_silent_by_default(paths, library, capsys):
    Corpus(paths, library).sync(progress=True)
    assert "Syncing corpus" in capsys.readouterr().err
    library.update_note("OTHER222", note_html("Other", "x"))
    Corpus(paths, library).sync()
    assert capsys.readouterr().err == ""


def test_report_serialises(paths, library):
    report = Corpus(paths, library).sync()
    data = json.loads(json.dumps(report.to_dict()))
    assert data["counts"]["new"] == 4 and "4 new" in str(report)


def test_meta_write_rolls_back_and_nests(paths):
    from zocrates_nb.corpus.meta import MetaDB, MetaRow

    db = MetaDB(paths.meta_db)
    row = MetaRow("KEYAAAAA", "note", "h1", "v", "corpus/KEYAAAAA")
    with pytest.raises(RuntimeError):
        with db.write() as conn:
            db.upsert(conn, row)
            raise RuntimeError("boom")
    assert db.get("KEYAAAAA") is None
    with db.write() as conn:
        db.upsert(conn, row)
        with pytest.raises(RuntimeError):
            with db.write() as inner:
                db.upsert(inner, replace(row, source_hash="h2"))
                raise RuntimeError("inner")
    assert db.get("KEYAAAAA").source_hash == "h1" and db.count() == 1
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_demo_library_child_note_edit_and_trash(paths, tmp_path):
    """The same behaviour against the real embedded demo library (content written here)."""
    local = pytest.importorskip("zocrates_nb.library.local")
    content = tmp_path / "demo"
    (content / "notes").mkdir(parents=True)
    (content / "collections.json").write_text(json.dumps([{"key": "TMECCCCC", "name": "TME"}]))
    paper = {
        "key": "PAPERDDD",
        "title": "Tumour atlas",
        "creators": ["Ng, A"],
        "year": 2020,
        "collections": ["TMECCCCC"],
    }
    (content / "papers.json").write_text(json.dumps([paper]))
    (content / "notes.json").write_text(
        json.dumps([{"key": "CHILDDDD", "parent_key": "PAPERDDD"}, {"key": "STANDDDD", "collections": ["TMECCCCC"]}])
    )
    (content / "notes" / "CHILDDDD.html").write_text(note_html("Atlas notes", LONG))
    (content / "notes" / "STANDDDD.html").write_text(note_html("TME overview", "myeloid cells"))
    library = local.DemoLibrary(paths.demo_library, content_dir=content)
    indexer = RecordingIndexer()
    corpus = Corpus(paths, library, indexer=indexer)
    assert corpus.sync().counts["new"] == 3
    stand_mtime = os.stat(paths.corpus / "STANDDDD" / "okf.json").st_mtime_ns
    library.update_note("CHILDDDD", note_html("Atlas notes", "Edited child note."))
    assert "Edited child note." in corpus.read_document("CHILDDDD")
    assert index_rows(corpus)["CHILDDDD"] == corpus.meta.get("CHILDDDD").source_hash
    assert os.stat(paths.corpus / "STANDDDD" / "okf.json").st_mtime_ns == stand_mtime
    library.trash_paper("PAPERDDD")
    report = corpus.sync()
    assert report.counts["removed"] == 2 and corpus.keys() == ["STANDDDD"]
    assert set(index_rows(corpus)) == {"STANDDDD"}


def test_truncated_manifest_is_rebuilt_on_toc_read(paths, library):
    corpus = Corpus(paths, library)
    corpus.sync()
    (paths.corpus / "CHILD222" / "okf.json").write_text("")  # as a power loss could leave it
    assert corpus.get_document_toc("CHILD222")[0]["title"] == "Child note"
    assert read_manifest(paths.corpus / "CHILD222")["key"] == "CHILD222"


def test_durable_corpus_writes_the_same_bundles(paths, library):
    report = Corpus(paths, library, durable=True).sync()
    assert report.counts["new"] == 4 and (paths.corpus / "CHILD222" / "okf.json").is_file()


def test_read_serves_last_good_bundle_when_the_source_body_breaks(paths, library):
    events = RecordingEvents()
    corpus = Corpus(paths, library, events=events)
    corpus.sync()
    library.notes["OTHER222"] = replace(library.notes["OTHER222"], html=None)
    assert "bold" in corpus.read_document("OTHER222")
    assert events.events[-1][1]["fast_path"] is False and "not HTML text" in events.events[-1][1]["error"]


def test_progress_reporter_line_and_silence():
    import io

    from zocrates_nb.progress import ProgressReporter

    stream = io.StringIO()
    with ProgressReporter(30, "Indexing", enabled=True, stream=stream) as bar:
        for _ in range(30):
            bar.update()
    assert "Indexing" in stream.getvalue() and "30/30" in stream.getvalue()
    quiet = io.StringIO()
    with ProgressReporter(30, "Indexing", stream=quiet) as bar:  # not a terminal → silent by default
        bar.update(30)
    assert quiet.getvalue() == "" and bar.count == 30


def test_documents_lists_the_bundles_on_disk_and_names_a_damaged_one(paths, library):
    corpus = Corpus(paths, library)
    corpus.sync()
    (paths.corpus / "OTHER222" / "okf.json").write_text("{ truncated", encoding="utf-8")
    (paths.corpus / ".tmp-crashed").mkdir()
    (paths.corpus / ".tmp-crashed" / "okf.json").write_text("{}", encoding="utf-8")
    stored = {d.key: d for d in corpus.documents()}
    assert sorted(stored) == sorted(corpus.keys())  # temporary folders are not bundles
    assert stored["OTHER222"].error and stored["OTHER222"].manifest is None
    good = stored["STAND222"]
    assert good.error is None and good.manifest["key"] == "STAND222" and good.markdown
