"""A data directory on a read-only mount or a full disk (issue 26): reads answer, writes say why, nothing lost.

Real conditions, not mocks (tests/system/tmpfs.py): a tmpfs remounted read-only or filled to the
byte. Every read command must answer (lexically, with one "Reading only" notice), every write
command must refuse up front with a true hint (no traceback, exit 1), each command a hint names
is run in that same state, and once the directory can be written again it equals a clean run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.system.faults import cli, state
from tests.system.tmpfs import fill, no_destructive_advice, remount, tmpfs, walk_hints

QUERY = "Harmony batch integration"
QUESTION = "What did we learn about the Harmony theta parameter?"
NOTE = "DR9EFQIE"  # "Harmony theta lesson" in the demo library
READS = (
    ("search", QUERY),
    ("search", QUERY, "--mode", "lexical"),
    ("ask", QUESTION),
    ("explain", QUERY, NOTE),
    ("status",),
    ("outbox", "list"),
    ("config", "show"),
)
WRITES = (
    ("sync",),
    ("ask", QUESTION, "--save"),
    ("index", "rebuild"),
    ("profile", "set", "--text", "Single-cell immunology."),
    ("llm", "clear"),
)


@pytest.fixture
def mounted(tmp_path, demo_template):
    """A synced demo data directory on its own tmpfs."""
    with tmpfs(tmp_path / "mnt", "150m") as mount:
        shutil.copytree(demo_template, mount / "data")
        yield mount


def _lexical(home: Path) -> dict:
    code, out, err = cli(home, "search", QUERY, "--mode", "lexical", "--json")
    assert code == 0, err
    found = json.loads(out)
    return {"keys": [hit["key"] for hit in found["hits"]]}


def _reads_answer_and_writes_refuse(home: Path, why: str, clean: dict, writes=WRITES) -> list[str]:
    """The contract of a directory that cannot be written; returns every text shown (for the hints)."""
    shown = []
    for argv in READS:
        code, out, err = cli(home, *argv)
        assert code == 0, f"`{' '.join(argv)}` failed: {err}"
        shown.append(out + err)
        no_destructive_advice(out + err)
    search_text, ask_text = shown[0], shown[2]
    assert search_text.count("Reading only") == 1 and why in search_text, search_text  # said once
    assert "Reading only" in ask_text and "Evidence from your library" in ask_text
    assert _lexical(home)["keys"] == clean["keys"]  # the index as last written: the same results
    code, out, err = cli(home, "doctor")
    assert code == 1 and "PROBLEM space" in out and "bundles verify" in out, out  # checked, read-only
    shown.append(out + err)
    for argv in writes:
        code, out, err = cli(home, *argv)
        assert code == 1 and why in err and ("Nothing was" in err or "nothing" in err), f"{argv}: {err}"
        no_destructive_advice(out + err)
        shown.append(out + err)
    return shown


def test_a_read_only_data_directory_reads_refuses_writes_and_loses_nothing(mounted, demo_template, tmp_path):
    home = mounted / "data"
    clean_home = Path(shutil.copytree(demo_template, tmp_path / "clean"))
    clean = _lexical(clean_home)
    remount(mounted, "ro")
    # an empty outbox's push only takes its lock: refused on a read-only mount, a no-op on a full disk
    shown = _reads_answer_and_writes_refuse(home, "is read-only", clean, (*WRITES, ("outbox", "push")))
    assert walk_hints(home, shown, allowed=(0, 1))  # the evidence-only answer names `llm set`: refused, truly
    remount(mounted, "rw")
    assert state(home) == state(clean_home)  # nothing lost, nothing half-written


def test_a_full_disk_reads_refuses_writes_and_comes_back_unchanged(mounted, demo_template, tmp_path):
    home = mounted / "data"
    clean_home = Path(shutil.copytree(demo_template, tmp_path / "clean"))
    clean = _lexical(clean_home)
    filler = fill(mounted, 0)
    assert shutil.disk_usage(mounted).free < 1 << 20
    shown = _reads_answer_and_writes_refuse(home, "the disk is full", clean)
    assert any("free on" in text for text in shown)  # how much is left
    assert walk_hints(home, shown, allowed=(0, 1))  # the evidence-only answer names `llm set`: refused, truly
    filler.unlink()
    code, out, _ = cli(home, "doctor")
    assert code == 0 and "ok      space" in out, out  # ~147 MB free again
    assert state(home) == state(clean_home)


def test_a_read_only_store_whose_last_commits_wait_in_its_wal_is_read_with_them(mounted):
    """A process died before its WAL was checkpointed, then the directory became read-only (a backup
    taken at that moment): ``immutable`` would ignore the log and read a stale, even "malformed" file."""
    import subprocess
    import sys

    from zocrates_nb.storage.sqlite_tx import connect_read_only

    meta = mounted / "data" / "conversion_meta.db"
    commit_then_die = (
        "import os, sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=WAL'); "
        "c.execute('PRAGMA wal_autocheckpoint=0'); c.execute('CREATE TABLE probe_after_crash (x)'); "
        "c.commit(); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", commit_then_die, str(meta)], check=True)
    assert meta.with_name(meta.name + "-wal").stat().st_size > 0
    meta.with_name(meta.name + "-shm").unlink(missing_ok=True)
    remount(mounted, "ro")
    conn = connect_read_only(meta)
    try:
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'probe_after_crash'").fetchone() == (1,)
    finally:
        conn.close()
    code, out, _ = cli(mounted / "data", "status")
    assert code == 0 and "33 notes" in out and "malformed" not in out, out
    code, out, _ = cli(mounted / "data", "doctor")
    assert "damaged" not in out and "ok      meta_db    not checked" in out, out
    remount(mounted, "rw")


def test_a_damaged_config_is_reported_as_damaged_on_a_read_only_or_full_disk(mounted):
    home = mounted / "data"
    (home / "zocrates_config.json").write_text('{"llm": {bad')
    filler = fill(mounted, 0)
    for _ in range(3):
        code, _, err = cli(home, "search", QUERY, "--mode", "lexical")
        assert code == 1 and "is damaged" in err and "No copy of it could be kept" in err, err
    assert not list(home.glob("zocrates_config.json.corrupt-*"))  # no empty copies pile up
    filler.unlink()
    remount(mounted, "ro")
    code, out, err = cli(home, "status")
    assert "is damaged" in out + err and "cannot be written:" not in out + err, out + err
    assert "`zocrates-nb config reset`" not in out + err  # it would fail here: named once it can work
    remount(mounted, "rw")
    code, _, err = cli(home, "search", QUERY, "--mode", "lexical")
    assert code == 1 and "A copy of the damaged file was kept" in err  # writable again: the copy is kept


def test_a_full_temporary_folder_is_not_reported_as_zotero_holding_its_lock(tmp_path, monkeypatch):
    from tests.fakes.zotero_sqlite import ZoteroDB

    zdir = tmp_path / "zotero"
    zdir.mkdir()
    with ZoteroDB(zdir / "zotero.sqlite", "9") as db:
        for i in range(40):
            db.add_paper(f"PAPR{i:04d}", f"Paper {i} " + "long title words " * 40, creators=[("A", "B", "author")])
    with tmpfs(tmp_path / "tmp", "1m") as small:
        fill(small, 8)
        monkeypatch.setenv("TMPDIR", str(small))
        import tempfile

        monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
        code, _, err = cli(tmp_path / "data", "sync", "--zotero-dir", str(zdir))
        assert code == 1 and "disk is full" in err and "TMPDIR" in err and "close Zotero" not in err, err


def test_a_workbench_opened_on_a_full_disk_searches_with_its_vectors_once_space_is_back(mounted):
    """A notebook kernel (or the warm engine) opened while the disk was full must not stay lexical."""
    from zocrates_nb.workbench.core import Workbench

    filler = fill(mounted, 0)
    wb = Workbench(mounted / "data", auto_sync=False)
    try:
        assert "Reading only" in (wb.search(QUERY, k=5).notice or "")
        filler.unlink()
        again = wb.search(QUERY, k=5)
        assert "Reading only" not in (again.notice or "") and wb.paths.unwritable is None
        assert any(hit.ranks.get("dense") for hit in again.hits)
    finally:
        wb.close()


def test_an_event_cut_short_by_a_full_disk_costs_no_later_event(tmp_path):
    from zocrates_nb.diagnostics.events import EventLog
    from zocrates_nb.diagnostics.views import Diagnostics

    with tmpfs(tmp_path / "mnt", "1m") as mount:
        log = EventLog(mount / "diagnostics", session="s1")
        log.emit("search", query="before")
        filler = fill(mount, 0)
        log.emit("search", query="lost " * 4000)  # ENOSPC part-way: a torn line, a warning, no exception
        filler.unlink()
        log.emit("search", query="after")
        queries = Diagnostics(mount / "diagnostics").events()["query"].tolist()
        assert "before" in queries and "after" in queries


def test_an_export_onto_a_full_disk_says_so_and_keeps_an_earlier_export_whole(demo_workbench, tmp_path):
    from zocrates_nb.errors import StorageUnavailableError

    export = demo_workbench.export(demo_workbench.ask(QUESTION), "markdown")
    with tmpfs(tmp_path / "mnt", "1m") as mount:
        earlier = export.write(mount / "harmony.md")
        kept = {p: p.read_bytes() for p in earlier}
        filler = fill(mount, 0)
        with pytest.raises(StorageUnavailableError, match="disk is full") as caught:
            export.write(mount / "harmony.md")
        with pytest.raises(StorageUnavailableError):
            export.write(mount / "new" / "draft.md")
        assert "Choose a folder" in caught.value.hint
        assert {p: p.read_bytes() for p in earlier} == kept  # replaced atomically or not at all
        assert not (mount / "new").exists()  # the folder made for it is gone again
        filler.unlink()
