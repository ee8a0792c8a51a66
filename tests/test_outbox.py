"""Save from a desktop library: outbox, writers, exactly once, staying in step (issue 9 §3).

Real components throughout (Workbench, corpus, FTS + vectors, the outbox's SQLite file);
only Zotero's HTTP side is faked, by the loopback Web/local API in tests/fakes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.fakes.zotero_sqlite import ZoteroDB
from tests.fakes.zotero_web_api import FakeZoteroAPI
from zocrates_nb.config import ConfigStore
from zocrates_nb.errors import LibraryError
from zocrates_nb.library.note_writer import KeyInfo, NoteWriter, WriterUnavailable, check_web_key, key_info
from zocrates_nb.outbox import Outbox
from zocrates_nb.paths import DataPaths
from zocrates_nb.workbench import Workbench

USER_ID = 475425
KEY = "s3cr3t-key-XYZ"
PAPER = "PAPER333"


@pytest.fixture
def zotero_dir(tmp_path) -> Path:
    folder = tmp_path / "Zotero"
    folder.mkdir()
    with ZoteroDB(folder / "zotero.sqlite", "9") as db:
        db.add_collection("COLL3333", "Spatial")
        db.add_paper(PAPER, "Spatially resolved transcriptomics of the mouse brain",
                     creators=[("Ana", "Lee", "author")], date="2020-01-01 2020-01-01")
        db.add_note("NOTE3333", "<p>Spot deconvolution works best with a matched reference.</p>", parent=PAPER)
        db.set_setting("account", "userID", USER_ID)
        db.set_setting("client", "lastVersion", "9.0.4")
    return folder


@pytest.fixture
def api():
    with FakeZoteroAPI(library_id=USER_ID, api_key=KEY) as fake:
        fake.add_item({"key": PAPER, "itemType": "journalArticle", "title": "Spatially resolved transcriptomics"})
        fake.add_collection("COLL3333", "Spatial")
        yield fake


def _workbench(tmp_path, zotero_dir) -> Workbench:
    wb = Workbench(tmp_path / "data", zotero_dir=zotero_dir, auto_sync=False)
    wb.sync(progress=False)
    return wb


def _use_web_writer(wb: Workbench, api: FakeZoteroAPI, monkeypatch) -> None:
    monkeypatch.setenv("ZOTERO_API_KEY", KEY)
    wb.config.update({"writer": {"kind": "web", "library_id": str(USER_ID), "base_url": api.base_url}})


def _notes_in(api: FakeZoteroAPI) -> list[dict]:
    return [d for d in api.items.values() if d.get("itemType") == "note"]


def test_save_without_a_writer_goes_to_the_outbox_and_is_searchable_at_once(tmp_path, zotero_dir):
    wb = _workbench(tmp_path, zotero_dir)
    saved = wb.save_note("Batch effects", "Slides from run two had *lower UMI counts*.", parent_key=PAPER)
    assert saved.destination == "outbox" and "library writer" in saved.reason
    assert "not yet in Zotero" in saved.where and "Not yet in Zotero" in saved._repr_html_()
    hits = wb.search("lower UMI counts run two", k=3)
    assert hits.to_dict()["hits"][0]["key"] == saved.key
    report = wb.sync(progress=False)                     # the snapshot lacks it: kept, not "removed"
    assert report.counts["removed"] == 0
    assert saved.key in wb.corpus.keys("note")
    assert "lower UMI counts" in wb.read_document(saved.key)
    status = wb.status()
    assert status["outbox"]["outbox"] == 1
    wb.close()


def test_outage_then_push_exactly_once_then_zotero_syncs_it_down(tmp_path, zotero_dir, api, monkeypatch):
    wb = _workbench(tmp_path, zotero_dir)
    _use_web_writer(wb, api, monkeypatch)
    api.inject(500, methods=("POST",))
    saved = wb.save_note("Batch effects", "Slides from run two had *lower UMI counts*.", parent_key=PAPER)
    assert saved.destination == "outbox" and "500" in saved.reason
    api.stop()                                            # then unreachable
    from zocrates_nb.saving import push_outbox

    report = push_outbox(wb.paths, wb.config.read())
    assert report.written == [] and "Cannot reach" in report.kept[0][1]
    api.start()
    wb.config.update({"writer": {"base_url": api.base_url}})   # the fake came back on a new port
    wb.sync(progress=False)                                     # sync pushes the outbox
    assert [n["key"] for n in _notes_in(api)] == [saved.key]    # exactly once, with our key
    assert Outbox.for_paths(wb.paths).counts() == {"outbox": 0, "waiting": 1}
    assert wb.status()["outbox"]["waiting"] == 1
    # Zotero syncs the note down: same key, same HTML → same bundle, nothing re-embedded
    html = api.items[saved.key]["note"]
    with ZoteroDB.reopen(zotero_dir / "zotero.sqlite", "9") as db:
        db.add_note(saved.key, html, parent=PAPER)
    report = wb.sync(progress=False)
    assert report.counts["new"] == 0 and report.counts["changed"] == 0 and report.counts["removed"] == 0
    assert Outbox.for_paths(wb.paths).counts() == {"outbox": 0, "waiting": 0}
    # later edits and trash in Zotero are followed
    with ZoteroDB.reopen(zotero_dir / "zotero.sqlite", "9") as db:
        db.trash(saved.key)
    assert wb.sync(progress=False).counts["removed"] == 1
    assert saved.key not in wb.corpus.keys("note")
    wb.close()


def test_a_crash_between_zoteros_200_and_the_outbox_update_is_a_no_op_on_retry(
        tmp_path, zotero_dir, api, monkeypatch):
    wb = _workbench(tmp_path, zotero_dir)
    saved = wb.save_note("Crash", "Written once only.", parent_key=PAPER)        # no writer yet: outbox
    entry = Outbox.for_paths(wb.paths).entries()[0]
    writer = NoteWriter("zotero-web", api.base_url, f"users/{USER_ID}", KEY)
    writer.create_note(entry.key, entry.html, write_token=entry.write_token, parent_key=PAPER)   # reached Zotero…
    # …and the process died before the outbox was updated. The retry:
    _use_web_writer(wb, api, monkeypatch)
    from zocrates_nb.saving import push_outbox

    report = push_outbox(wb.paths, wb.config.read())
    assert report.written == [(saved.key, "zotero-web")]
    assert [n["key"] for n in _notes_in(api)] == [saved.key]
    assert any(status == "POST" for status, *_ in api.requests)
    wb.close()


def test_two_processes_pushing_the_same_outbox_write_each_note_once(tmp_path, zotero_dir, api, monkeypatch):
    wb = _workbench(tmp_path, zotero_dir)
    keys = [wb.save_note(f"Note {i}", f"Body number {i}.", parent_key=PAPER).key for i in range(4)]
    _use_web_writer(wb, api, monkeypatch)
    wb.close()
    script = textwrap.dedent(f"""
        from zocrates_nb.config import ConfigStore
        from zocrates_nb.paths import DataPaths
        from zocrates_nb.saving import push_outbox
        paths = DataPaths.resolve({str(tmp_path / 'data')!r})
        print(len(push_outbox(paths, ConfigStore.for_paths(paths).read()).written))
    """)
    env = {**os.environ, "ZOTERO_API_KEY": KEY}
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    written = [int(p.communicate(timeout=120)[0].strip()) for p in procs]
    assert sorted(written) == [0, 4]
    assert sorted(n["key"] for n in _notes_in(api)) == sorted(keys)


def test_local_api_writer_handles_server_id(tmp_path, zotero_dir, monkeypatch):
    with FakeZoteroAPI(library_id=0, api_key="local-key", local=True, server_id="srv-A") as local:
        local.add_item({"key": PAPER, "itemType": "journalArticle", "title": "Spatially resolved"})
        wb = _workbench(tmp_path, zotero_dir)
        monkeypatch.setenv("ZOTERO_LOCAL_API_KEY", "local-key")
        wb.config.update({"writer": {"kind": "local", "local_base_url": local.base_url, "server_id": "stale"}})
        saved = wb.save_note("Local", "Through the local API.", parent_key=PAPER)
        assert saved.destination == "zotero-local", saved.reason
        assert saved.key in local.items
        posts = [{k.lower(): v for k, v in h.items()} for m, _, h in local.requests if m == "POST"]
        assert [p["zotero-server-id"] for p in posts] == ["stale", "srv-A"]   # 412 on the stale id, then the fresh
        wb.close()


def test_web_api_source_outage_puts_the_note_in_the_outbox(tmp_path, api, monkeypatch):
    monkeypatch.setenv("ZOTERO_API_KEY", KEY)
    data = tmp_path / "data"
    ConfigStore.for_paths(DataPaths.resolve(data)).update(
        {"library": {"source": "zotero-web", "library_id": str(USER_ID), "base_url": api.base_url}})
    wb = Workbench(data)
    api.inject(503, methods=("POST",))
    saved = wb.save_note("Outage", "Kept safe during the outage.", parent_key=PAPER)
    assert saved.destination == "outbox" and "503" in saved.reason
    assert wb.search("kept safe during the outage", k=1).to_dict()["hits"][0]["key"] == saved.key
    saved_again = wb.save_note("Later", "Written at once.", parent_key=PAPER)   # also pushes the first one
    assert saved_again.destination == "zotero-web"
    assert {saved.key, saved_again.key} <= set(api.items)
    wb.close()


# ----------------------------------------------------------------------------- the Web API key checks

def test_key_info_reads_keys_current(api):
    info = key_info(api.base_url, KEY)
    assert info.user_id == USER_ID and info.can_write_user_notes
    with pytest.raises(LibraryError):
        key_info(api.base_url, "wrong")


@pytest.mark.parametrize(("info", "desktop_user", "match"), [
    (KeyInfo(USER_ID, "u", False, ()), USER_ID, "may not write notes"),
    (KeyInfo(USER_ID, "u", True, ()), None, "never synced"),
    (KeyInfo(USER_ID, "u", True, ()), 999, "another library"),
])
def test_web_key_refusals(info, desktop_user, match):
    with pytest.raises(LibraryError, match=match):
        check_web_key(info, library_type="user", library_id=str(USER_ID), desktop_user_id=desktop_user, desktop=True)


def test_group_keys_need_group_write():
    check_web_key(KeyInfo(1, "u", False, ("42",)), library_type="group", library_id="42", desktop_user_id=None,
                  desktop=True)
    with pytest.raises(LibraryError, match="group 43"):
        check_web_key(KeyInfo(1, "u", False, ("42",)), library_type="group", library_id="43", desktop_user_id=None,
                      desktop=True)


def test_unreachable_writer_is_transient():
    writer = NoteWriter("zotero-web", "http://127.0.0.1:9", "users/1", KEY, timeout=0.5)
    with pytest.raises(WriterUnavailable):
        writer.create_note("ABCD2345", "<p>x</p>", write_token="t" * 32)
    assert json.dumps(writer.__repr__()).count(KEY) == 0


def test_sigkill_after_zoteros_200_before_the_outbox_update(tmp_path, zotero_dir, api, monkeypatch):
    """A real process is killed (SIGKILL) right after Zotero confirmed, before ``confirm``: the retry is a no-op."""
    wb = _workbench(tmp_path, zotero_dir)
    saved = wb.save_note("Killed", "Exactly once even if killed.", parent_key=PAPER)   # no writer yet: outbox
    _use_web_writer(wb, api, monkeypatch)
    wb.close()
    script = textwrap.dedent(f"""
        import os, signal
        from zocrates_nb import outbox
        from zocrates_nb.config import ConfigStore
        from zocrates_nb.paths import DataPaths
        from zocrates_nb.saving import push_outbox
        outbox.Outbox.confirm = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
        paths = DataPaths.resolve({str(tmp_path / 'data')!r})
        push_outbox(paths, ConfigStore.for_paths(paths).read())
    """)
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ, "ZOTERO_API_KEY": KEY}, timeout=120)
    assert proc.returncode == -9
    assert [n["key"] for n in _notes_in(api)] == [saved.key]          # Zotero has it…
    assert Outbox.for_paths(DataPaths.resolve(tmp_path / "data")).counts()["outbox"] == 1   # …the outbox too
    from zocrates_nb.saving import push_outbox

    paths = DataPaths.resolve(tmp_path / "data")
    report = push_outbox(paths, ConfigStore.for_paths(paths).read())
    assert report.written == [(saved.key, "zotero-web")]
    assert [n["key"] for n in _notes_in(api)] == [saved.key]          # still exactly one
    assert Outbox.for_paths(DataPaths.resolve(tmp_path / "data")).counts() == {"outbox": 0, "waiting": 1}
