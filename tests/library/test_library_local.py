"""DemoLibrary: seeding, reads, writes, trash rules, and several processes at once."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest

from zocrates_nb.errors import ConfigError, LibraryError, NotFoundError
from zocrates_nb.library import open_source
from zocrates_nb.library.base import LibrarySource, is_valid_key
from zocrates_nb.library.desktop.snapshot import ZoteroDesktopLibrary
from zocrates_nb.library.local import DemoLibrary
from zocrates_nb.paths import DataPaths

NOTE = '<div data-schema-version="9"><h1>{title}</h1>\n<p>{body}</p>\n</div>'


def write_content(root: Path, *, extra_note: bool = False) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "notes").mkdir(exist_ok=True)
    (root / "collections.json").write_text(
        json.dumps(
            [
                {"key": "SPATIAL2", "name": "Spatial", "parent_key": None},
                {"key": "MTHDS222", "name": "Methods", "parent_key": "SPATIAL2"},
            ]
        )
    )
    (root / "papers.json").write_text(
        json.dumps(
            [
                {
                    "key": "PAPER222",
                    "item_type": "journalArticle",
                    "title": "Spatial transcriptomics",
                    "creators": ["Ståhl, Patrik L.", "Salmén, Fredrik", "Lundeberg, Joakim"],
                    "year": 2016,
                    "date": "2016-07-01",
                    "doi": "10.1126/science.aaf2403",
                    "publication": "Science",
                    "abstract": "We present ST.",
                    "fulltext": "Para one.\n\nPara two.",
                    "collections": ["SPATIAL2"],
                },
                {
                    "key": "PAPER333",
                    "item_type": "preprint",
                    "title": "A second paper",
                    "creators": ["Doe, Jane"],
                    "year": 2021,
                    "date": "2021",
                    "doi": None,
                    "publication": "",
                    "abstract": None,
                    "fulltext": None,
                    "collections": [],
                },
            ]
        )
    )
    notes = [
        {"key": "STAND222", "parent_key": None, "collections": ["SPATIAL2", "MTHDS222"], "file": "STAND222.html"},
        {"key": "CHILD222", "parent_key": "PAPER222", "collections": [], "file": "CHILD222.html"},
        {"key": "CHILD333", "parent_key": "PAPER333", "collections": [], "file": "CHILD333.html"},
    ]
    if extra_note:
        notes.append({"key": "EXTRA222", "parent_key": None, "collections": [], "file": "EXTRA222.html"})
    for n in notes:
        (root / "notes" / n["file"]).write_text(
            NOTE.format(title=n["key"], body="Body of " + n["key"]), encoding="utf-8"
        )
    (root / "notes.json").write_text(json.dumps(notes))
    return root


@pytest.fixture
def content(tmp_path) -> Path:
    return write_content(tmp_path / "content")


@pytest.fixture
def lib(tmp_path, content):
    library = DemoLibrary(tmp_path / "demo.sqlite", content)
    yield library
    library.close()


def test_seeded_snapshot_and_lookups(lib):
    assert isinstance(lib, LibrarySource) and lib.writable
    snap = lib.snapshot()
    assert {n.key for n in snap.notes} == {"STAND222", "CHILD222", "CHILD333"}
    assert {c.key: c.parent_key for c in snap.collections} == {"SPATIAL2": None, "MTHDS222": "SPATIAL2"}
    note = lib.get_note("STAND222")
    assert note.html == NOTE.format(title="STAND222", body="Body of STAND222")
    assert note.collections == ("SPATIAL2", "MTHDS222") and note.parent_key is None and note.version == 1
    assert lib.get_note("CHILD222").parent_key == "PAPER222"
    paper = lib.get_paper("PAPER222")
    assert paper.creators == ("Ståhl, Patrik L.", "Salmén, Fredrik", "Lundeberg, Joakim")
    assert (paper.year, paper.doi, paper.fulltext, paper.citation) == (
        2016,
        "10.1126/science.aaf2403",
        "Para one.\n\nPara two.",
        "Ståhl et al., 2016",
    )
    assert lib.get_note("NOPE2222") is None and lib.get_paper("STAND222") is None


def test_create_child_and_standalone_notes(lib):
    v0 = lib.snapshot().version
    child = lib.create_note("<p>child</p>", parent_key="PAPER333")
    assert is_valid_key(child.key) and child.parent_key == "PAPER333" and child.collections == ()
    standalone = lib.create_note("<p>filed</p>", collection_keys=["MTHDS222"])
    assert standalone.collections == ("MTHDS222",) and standalone.parent_key is None
    assert lib.get_note(child.key) == child and lib.get_note(standalone.key) == standalone
    assert lib.snapshot().version == v0 + 2
    with pytest.raises(LibraryError, match="not both") as err:
        lib.create_note("<p>x</p>", parent_key="PAPER222", collection_keys=["SPATIAL2"])
    assert err.value.hint
    with pytest.raises(NotFoundError):
        lib.create_note("<p>x</p>", parent_key="NOPAPER2")
    with pytest.raises(NotFoundError):
        lib.create_note("<p>x</p>", collection_keys=["NOCOLL22"])
    with pytest.raises(LibraryError, match="empty"):
        lib.create_note("  \n", parent_key="PAPER222")
    assert len(lib.snapshot().notes) == 5  # refused notes were not half-written


def test_update_bumps_version_and_date(lib):
    before = lib.get_note("CHILD222")
    after = lib.update_note("CHILD222", "<p>edited</p>")
    assert after.html == "<p>edited</p>" and after.version == before.version + 1
    assert after.date_modified >= before.date_modified and lib.get_note("CHILD222") == after
    with pytest.raises(NotFoundError):
        lib.update_note("NOPE2222", "<p>x</p>")


def test_trash_rules_self_and_parent(lib):
    lib.trash_note("STAND222")
    assert lib.get_note("STAND222") is None
    lib.trash_paper("PAPER222")
    assert lib.get_note("CHILD222") is None and lib.get_paper("PAPER222") is None
    snap = lib.snapshot()
    assert {n.key for n in snap.notes} == {"CHILD333"} and {p.key for p in snap.papers} == {"PAPER333"}
    with pytest.raises(NotFoundError):
        lib.update_note("CHILD222", "<p>x</p>")  # a note under a trashed paper is in the trash
    with pytest.raises(NotFoundError):
        lib.trash_note("STAND222")
    with pytest.raises(NotFoundError):
        lib.create_note("<p>x</p>", parent_key="PAPER222")


def test_reseed_is_idempotent_and_keeps_user_changes(tmp_path, content):
    db = tmp_path / "demo.sqlite"
    lib = DemoLibrary(db, content)
    lib.update_note("CHILD222", "<p>mine</p>")
    lib.trash_note("STAND222")
    mine = lib.create_note("<p>new</p>", parent_key="PAPER222")
    lib.close()
    lib = DemoLibrary(db, content)  # same content: nothing re-inserted
    assert lib.get_note("CHILD222").html == "<p>mine</p>" and lib.get_note("STAND222") is None
    lib.close()
    write_content(content, extra_note=True)  # newer package content: only the new note arrives
    lib = DemoLibrary(db, content)
    assert lib.get_note("EXTRA222") is not None and lib.get_note(mine.key) is not None
    assert lib.get_note("CHILD222").html == "<p>mine</p>" and lib.get_note("STAND222") is None
    lib.close()


def test_bad_content_is_refused_with_file_and_key(tmp_path):
    content = write_content(tmp_path / "c")
    notes = json.loads((content / "notes.json").read_text())
    notes[1]["collections"] = ["SPATIAL2"]  # a child note with collections
    (content / "notes.json").write_text(json.dumps(notes))
    with pytest.raises(LibraryError, match="CHILD222"):
        DemoLibrary(tmp_path / "a.sqlite", content)
    (content / "papers.json").write_text("{not json")
    with pytest.raises(LibraryError, match="papers.json"):
        DemoLibrary(tmp_path / "b.sqlite", content)
    with pytest.raises(LibraryError, match="missing"):
        DemoLibrary(tmp_path / "c.sqlite", tmp_path / "empty")


def _worker(db: str, content: str, n: int, out, name: str = "") -> None:
    lib = DemoLibrary(Path(db), Path(content))
    keys = [lib.create_note(f"<p>process {name} note {i}</p>", parent_key="PAPER222").key for i in range(n)]
    lib.close()
    out.put(keys)


def test_several_processes_seed_and_write_safely(tmp_path, content):
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(str(tmp_path / "demo.sqlite"), str(content), 5, out, name)) for name in "ab"
    ]
    for p in procs:
        p.start()
    keys = [k for _ in procs for k in out.get(timeout=120)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    lib = DemoLibrary(tmp_path / "demo.sqlite", content)
    snap = lib.snapshot()
    assert len(keys) == len(set(keys)) == 10
    assert {n.key for n in snap.notes} >= set(keys) and len(snap.notes) == 13  # seeded once, no duplicates
    conn = sqlite3.connect(str(tmp_path / "demo.sqlite"))
    assert conn.execute("SELECT count(*) FROM papers").fetchone()[0] == 2
    conn.close()
    lib.close()


def test_threads_share_one_library(lib):
    errors = []

    def work(i):
        try:
            for j in range(5):
                note = lib.create_note(f"<p>{i}-{j}</p>", collection_keys=["SPATIAL2"])
                assert lib.get_note(note.key).html == f"<p>{i}-{j}</p>"
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(lib.snapshot().notes) == 23


def test_packaged_demo_content_seeds(tmp_path):
    lib = DemoLibrary(tmp_path / "demo.sqlite")
    snap = lib.snapshot()
    papers = {p.key for p in snap.papers}
    assert snap.papers and snap.notes and snap.collections
    assert all(n.parent_key in papers for n in snap.notes if n.parent_key)
    assert all(n.html.lstrip().startswith("<div") for n in snap.notes)
    lib.close()


def test_open_source_picks_from_config(tmp_path, content):
    paths = DataPaths(tmp_path / "data")
    demo = open_source(paths, {"library": {"source": "demo", "content_dir": str(content)}})
    assert isinstance(demo, DemoLibrary) and demo.db_path == paths.demo_library
    demo.close()
    assert isinstance(
        open_source(paths, {"library": {"source": "zotero-dir", "zotero_dir": str(tmp_path)}}), ZoteroDesktopLibrary
    )
    with pytest.raises(ConfigError, match="sqlite_path"):
        open_source(paths, {"library": {"source": "zotero-sqlite"}})
    with pytest.raises(ConfigError, match="library_id"):
        open_source(paths, {"library": {"source": "zotero-web"}})
    with pytest.raises(ConfigError, match="Unknown library source"):
        open_source(paths, {"library": {"source": "endnote"}})


# ----------------------------------------------------------------------------- the local API read source's key


def _local_source_sends(
    tmp_path, monkeypatch, library: dict, *, approved: str | None, env: dict, expected: str
) -> set[str]:
    """Every key value the local read source sent to the (fake) local API while syncing and writing.

    The fake accepts writes with ``expected`` only (a 403 otherwise), as Zotero 10 checks its local key."""
    from tests.fakes.zotero_web_api import FakeZoteroAPI
    from zocrates_nb.library.writing.choice import read_local_key, store_local_key
    from zocrates_nb.settings.config import ConfigStore

    for name in ("ZOTERO_API_KEY", "ZOTERO_LOCAL_API_KEY", "MY_LOCAL_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    paths = DataPaths(tmp_path / "data")
    paths.root.mkdir(parents=True, exist_ok=True)
    paths.locks.mkdir(parents=True, exist_ok=True)
    if approved:
        store_local_key(paths, approved)
    with FakeZoteroAPI(library_id=0, api_key=expected, local=True) as api:
        api.add_item({"key": "PAPER222", "itemType": "journalArticle", "title": "Spatial"})
        store = ConfigStore(paths.config)
        store.update({"library": {"source": "zotero-web", "local": True, "base_url": api.base_url, **library}})
        config = store.read()  # defaults merged: library.api_key_env is ZOTERO_API_KEY unless set
        source = open_source(paths, config, local_key=lambda: read_local_key(paths))
        source.snapshot()
        source.create_note("<p>local write</p>", parent_key="PAPER222")
        source.close()
        sent = set()
        for _method, _path, headers in api.requests:
            for name, value in headers.items():
                if name.lower() in ("zotero-api-key", "authorization"):
                    sent.add(value.removeprefix("Bearer "))
        return sent


def test_a_local_api_source_sends_the_approved_local_key_never_the_web_key(tmp_path, monkeypatch):
    env = {"ZOTERO_API_KEY": "web-secret"}
    sent = _local_source_sends(tmp_path, monkeypatch, {}, approved="local-approved", env=env, expected="local-approved")
    assert sent == {"local-approved"}


def test_a_local_api_source_takes_zotero_local_api_key(tmp_path, monkeypatch):
    env = {"ZOTERO_API_KEY": "web-secret", "ZOTERO_LOCAL_API_KEY": "from-env"}
    assert _local_source_sends(tmp_path, monkeypatch, {}, approved=None, env=env, expected="from-env") == {"from-env"}
    # `library use web --local` writes api_key_env = ZOTERO_API_KEY: still never sent to localhost
    named = {"api_key_env": "ZOTERO_API_KEY"}
    sent = _local_source_sends(tmp_path / "b", monkeypatch, named, approved=None, env=env, expected="from-env")
    assert sent == {"from-env"}


def test_a_local_api_source_uses_an_explicitly_named_variable(tmp_path, monkeypatch):
    env = {"ZOTERO_API_KEY": "web-secret", "MY_LOCAL_KEY": "mine"}
    named = {"api_key_env": "MY_LOCAL_KEY"}
    assert _local_source_sends(tmp_path, monkeypatch, named, approved="approved", env=env, expected="mine") == {"mine"}


def test_the_local_writer_never_takes_the_web_key(tmp_path, monkeypatch):
    """The writer for a local-API source follows the read source's rule: the web key stays off localhost."""
    from zocrates_nb.library.writing.choice import choose_writers, store_local_key

    monkeypatch.setenv("ZOTERO_API_KEY", "web-secret")
    monkeypatch.delenv("ZOTERO_LOCAL_API_KEY", raising=False)
    paths = DataPaths(tmp_path / "data")
    paths.root.mkdir(parents=True, exist_ok=True)
    config = {"library": {"source": "zotero-web", "local": True, "api_key_env": "ZOTERO_API_KEY"}}
    writers, reason = choose_writers(paths, config)
    assert writers == [] and "library writer local" in reason
    store_local_key(paths, "local-approved")
    writers, _ = choose_writers(paths, config)
    assert [w.api_key for w in writers] == ["local-approved"]


def test_the_demo_ships_annotations_on_several_papers(tmp_path):
    from zocrates_nb.library.local import DEMO_CONTENT_DIR

    lib = DemoLibrary(tmp_path / "demo.sqlite", DEMO_CONTENT_DIR)
    annotations = lib.snapshot().annotations
    papers = {p.key for p in lib.snapshot().papers}
    assert len({a.parent_key for a in annotations}) >= 5 and {a.parent_key for a in annotations} <= papers
    kinds = {a.annotation_type for a in annotations}
    assert {"highlight", "underline", "note", "image", "ink"} <= kinds
    assert all(a.page_label and a.page_index is not None for a in annotations)
    assert sum(1 for a in annotations if a.text and a.comment) >= 8  # highlights with comments
    assert any(not a.indexable for a in annotations)  # an image and an ink mark: provenance only
    first = annotations[0]
    assert lib.get_annotation(first.key) == first
    lib.trash_paper(first.parent_key)  # trashed with its paper, as in Zotero
    assert lib.get_annotation(first.key) is None
    assert first.key not in {a.key for a in lib.snapshot().annotations}


def test_demo_annotations_are_checked(tmp_path):
    root = write_content(tmp_path / "content")
    bad = {"key": "ANNQT222", "attachment_key": "ATTACH22", "parent_key": "NOPAPER2", "annotation_type": "highlight"}
    (root / "annotations.json").write_text(json.dumps([{**bad, "page_index": 0}]))
    with pytest.raises(LibraryError, match="ANNQT222"):
        DemoLibrary(tmp_path / "a.sqlite", root)
    (root / "annotations.json").write_text(json.dumps([{**bad, "parent_key": "PAPER222", "annotation_type": "doodle"}]))
    with pytest.raises(LibraryError, match="annotation_type"):
        DemoLibrary(tmp_path / "b.sqlite", root)
    (root / "annotations.json").write_text(json.dumps([{**bad, "parent_key": "PAPER222", "page_index": 2}]))
    (ok,) = DemoLibrary(tmp_path / "c.sqlite", root).snapshot().annotations
    assert (ok.page, ok.parent_key, ok.attachment_key) == ("3", "PAPER222", "ATTACH22")
