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
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fakes.zotero_sqlite import ZoteroDB
from tests.fakes.zotero_web_api import FakeZoteroAPI
from zocrates_nb.errors import LibraryError
from zocrates_nb.library.writing.note_writers import KeyInfo, NoteWriter, WriterUnavailable, check_web_key, key_info
from zocrates_nb.library.writing.outbox import Outbox
from zocrates_nb.paths import DataPaths
from zocrates_nb.settings.config import ConfigStore
from zocrates_nb.workbench.core import Workbench

USER_ID = 475425
KEY = "s3cr3t-key-XYZ"
PAPER = "PAPER333"


@pytest.fixture
def zotero_dir(tmp_path) -> Path:
    folder = tmp_path / "Zotero"
    folder.mkdir()
    with ZoteroDB(folder / "zotero.sqlite", "9") as db:
        db.add_collection("COLL3333", "Spatial")
        db.add_paper(
            PAPER,
            "Spatially resolved transcriptomics of the mouse brain",
            creators=[("Ana", "Lee", "author")],
            date="2020-01-01 2020-01-01",
        )
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


def _counts(paths) -> dict:
    counts = Outbox.for_paths(paths).counts()
    return {"outbox": counts["outbox"], "waiting": counts["waiting"]}


def _notes_in(api: FakeZoteroAPI) -> list[dict]:
    return [d for d in api.items.values() if d.get("itemType") == "note"]


def _note_posts(api: FakeZoteroAPI) -> list[dict[str, str]]:
    """The headers of every POST to the items endpoint (note creations and their retries), in order."""
    return [
        {k.lower(): v for k, v in headers.items()}
        for method, path, headers in api.requests
        if method == "POST" and path.split("?")[0].endswith("/items")
    ]


def _assert_created_once_and_retry_was_a_no_op(api: FakeZoteroAPI, key: str, write_token: str) -> None:
    """Zotero accepted exactly one note-creating POST; the retry with the same write token created nothing.

    Why ``created_by_post``: ``api.items`` is keyed by note key, so a duplicate POST of the same key
    would overwrite, not add; the fake lists every key a POST created, duplicates included.
    """
    assert api.created_by_post == [key], f"not exactly once: {api.created_by_post}"
    posts = _note_posts(api)
    assert [p.get("zotero-write-token") for p in posts] == [write_token, write_token]  # the write, then the retry
    assert write_token in api.used_write_tokens


def test_save_without_a_writer_goes_to_the_outbox_and_is_searchable_at_once(tmp_path, zotero_dir):
    wb = _workbench(tmp_path, zotero_dir)
    saved = wb.save_note("Batch effects", "Slides from run two had *lower UMI counts*.", parent_key=PAPER)
    assert saved.destination == "outbox" and "library writer" in saved.reason
    assert "not yet in Zotero" in saved.where and "Not yet in Zotero" in saved._repr_html_()
    hits = wb.search("lower UMI counts run two", k=3)
    assert hits.to_dict()["hits"][0]["key"] == saved.key
    report = wb.sync(progress=False)  # the snapshot lacks it: kept, not "removed"
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
    api.stop()  # then unreachable
    from zocrates_nb.workbench.saving import push_outbox

    report = push_outbox(wb.paths, wb.config.read())
    assert report.written == [] and "Cannot reach" in report.kept[0][1]
    api.start()
    wb.config.update({"writer": {"base_url": api.base_url}})  # the fake came back on a new port
    wb.sync(progress=False)  # sync pushes the outbox
    assert [n["key"] for n in _notes_in(api)] == [saved.key]  # exactly once, with our key
    assert _counts(wb.paths) == {"outbox": 0, "waiting": 1}
    assert wb.status()["outbox"]["waiting"] == 1
    # Zotero syncs the note down: same key, same HTML → same bundle, nothing re-embedded
    html = api.items[saved.key]["note"]
    with ZoteroDB.reopen(zotero_dir / "zotero.sqlite", "9") as db:
        db.add_note(saved.key, html, parent=PAPER)
    report = wb.sync(progress=False)
    assert report.counts["new"] == 0 and report.counts["changed"] == 0 and report.counts["removed"] == 0
    assert _counts(wb.paths) == {"outbox": 0, "waiting": 0}
    # later edits and trash in Zotero are followed
    with ZoteroDB.reopen(zotero_dir / "zotero.sqlite", "9") as db:
        db.trash(saved.key)
    assert wb.sync(progress=False).counts["removed"] == 1
    assert saved.key not in wb.corpus.keys("note")
    wb.close()


def test_a_crash_between_zoteros_200_and_the_outbox_update_is_a_no_op_on_retry(tmp_path, zotero_dir, api, monkeypatch):
    wb = _workbench(tmp_path, zotero_dir)
    saved = wb.save_note("Crash", "Written once only.", parent_key=PAPER)  # no writer yet: outbox
    entry = Outbox.for_paths(wb.paths).entries()[0]
    writer = NoteWriter("zotero-web", api.base_url, f"users/{USER_ID}", KEY)
    writer.create_note(entry.key, entry.html, write_token=entry.write_token, parent_key=PAPER)  # reached Zotero…
    # …and the process died before the outbox was updated. The retry:
    _use_web_writer(wb, api, monkeypatch)
    from zocrates_nb.workbench.saving import push_outbox

    report = push_outbox(wb.paths, wb.config.read())
    assert report.written == [(saved.key, "zotero-web")]
    assert [n["key"] for n in _notes_in(api)] == [saved.key]
    _assert_created_once_and_retry_was_a_no_op(api, saved.key, entry.write_token)
    wb.close()


def test_two_processes_pushing_the_same_outbox_write_each_note_once(tmp_path, zotero_dir, api, monkeypatch):
    wb = _workbench(tmp_path, zotero_dir)
    keys = [wb.save_note(f"Note {i}", f"Body number {i}.", parent_key=PAPER).key for i in range(4)]
    _use_web_writer(wb, api, monkeypatch)
    wb.close()
    script = textwrap.dedent(f"""
        from zocrates_nb.settings.config import ConfigStore
        from zocrates_nb.paths import DataPaths
        from zocrates_nb.workbench.saving import push_outbox
        paths = DataPaths.resolve({str(tmp_path / "data")!r})
        print(len(push_outbox(paths, ConfigStore.for_paths(paths).read()).written))
    """)
    env = {**os.environ, "ZOTERO_API_KEY": KEY}
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)
    ]
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
        assert [p["zotero-server-id"] for p in posts] == ["stale", "srv-A"]  # 412 on the stale id, then the fresh
        wb.close()


def test_web_api_source_outage_puts_the_note_in_the_outbox(tmp_path, api, monkeypatch):
    monkeypatch.setenv("ZOTERO_API_KEY", KEY)
    data = tmp_path / "data"
    ConfigStore.for_paths(DataPaths.resolve(data)).update(
        {"library": {"source": "zotero-web", "library_id": str(USER_ID), "base_url": api.base_url}}
    )
    wb = Workbench(data)
    api.inject(503, methods=("POST",))
    saved = wb.save_note("Outage", "Kept safe during the outage.", parent_key=PAPER)
    assert saved.destination == "outbox" and "503" in saved.reason
    assert wb.search("kept safe during the outage", k=1).to_dict()["hits"][0]["key"] == saved.key
    saved_again = wb.save_note("Later", "Written at once.", parent_key=PAPER)  # also pushes the first one
    assert saved_again.destination == "zotero-web"
    assert {saved.key, saved_again.key} <= set(api.items)
    wb.close()


# ----------------------------------------------------------------------------- the Web API key checks


def test_key_info_reads_keys_current(api):
    info = key_info(api.base_url, KEY)
    assert info.user_id == USER_ID and info.can_write_user_notes
    with pytest.raises(LibraryError):
        key_info(api.base_url, "wrong")


@pytest.mark.parametrize(
    ("info", "desktop_user", "match"),
    [
        (KeyInfo(USER_ID, "u", False, ()), USER_ID, "may not write notes"),
        (KeyInfo(USER_ID, "u", True, ()), None, "never synced"),
        (KeyInfo(USER_ID, "u", True, ()), 999, "another library"),
    ],
)
def test_web_key_refusals(info, desktop_user, match):
    with pytest.raises(LibraryError, match=match):
        check_web_key(info, library_type="user", library_id=str(USER_ID), desktop_user_id=desktop_user, desktop=True)


def test_group_keys_need_group_write():
    check_web_key(
        KeyInfo(1, "u", False, ("42",)), library_type="group", library_id="42", desktop_user_id=None, desktop=True
    )
    with pytest.raises(LibraryError, match="group 43"):
        check_web_key(
            KeyInfo(1, "u", False, ("42",)), library_type="group", library_id="43", desktop_user_id=None, desktop=True
        )


def test_unreachable_writer_is_transient():
    writer = NoteWriter("zotero-web", "http://127.0.0.1:9", "users/1", KEY, timeout=0.5)
    with pytest.raises(WriterUnavailable):
        writer.create_note("ABCD2345", "<p>x</p>", write_token="t" * 32)
    assert json.dumps(writer.__repr__()).count(KEY) == 0


class _TruncatingHandler(BaseHTTPRequestHandler):
    """Zotero's answer cut short: ``Content-Length: 1000``, a few bytes of JSON, then the connection closes."""

    def _truncated(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1000")
        self.end_headers()
        self.wfile.write(b'{"successful": {"0": {"key": ')
        self.wfile.flush()
        self.close_connection = True

    do_GET = do_POST = _truncated

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def truncating_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _TruncatingHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}/api"
    server.shutdown()
    server.server_close()


def test_a_truncated_reply_is_a_transient_outage(truncating_url):
    writer = NoteWriter("zotero-local", truncating_url, "users/0", "local-key", server_id="srv-1")
    with pytest.raises(WriterUnavailable, match="broke off.*IncompleteRead") as err:
        writer.create_note("ABCD2345", "<p>x</p>", write_token="t" * 32)
    assert "outbox" in err.value.hint


def test_a_truncated_reply_keeps_the_note_in_the_outbox_with_the_reason(
    tmp_path, zotero_dir, truncating_url, monkeypatch
):
    wb = _workbench(tmp_path, zotero_dir)
    monkeypatch.setenv("ZOTERO_LOCAL_API_KEY", "local-key")
    wb.config.update({"writer": {"kind": "local", "local_base_url": truncating_url, "server_id": "srv-1"}})
    saved = wb.save_note("Cut off", "The answer broke off mid-way.", parent_key=PAPER)
    assert saved.destination == "outbox" and "broke off" in saved.reason, saved.reason
    (entry,) = Outbox.for_paths(wb.paths).entries()
    assert entry.key == saved.key and "broke off" in entry.reason and entry.attempts == 1
    assert saved.key in wb.corpus.keys("note")
    wb.close()


def test_sigkill_after_zoteros_200_before_the_outbox_update(tmp_path, zotero_dir, api, monkeypatch):
    """A real process is killed (SIGKILL) right after Zotero confirmed, before ``confirm``: the retry is a no-op."""
    wb = _workbench(tmp_path, zotero_dir)
    saved = wb.save_note("Killed", "Exactly once even if killed.", parent_key=PAPER)  # no writer yet: outbox
    token = Outbox.for_paths(wb.paths).entries()[0].write_token
    _use_web_writer(wb, api, monkeypatch)
    wb.close()
    script = textwrap.dedent(f"""
        import os, signal
        from zocrates_nb.library.writing import outbox
        from zocrates_nb.settings.config import ConfigStore
        from zocrates_nb.paths import DataPaths
        from zocrates_nb.workbench.saving import push_outbox
        outbox.Outbox.confirm = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
        paths = DataPaths.resolve({str(tmp_path / "data")!r})
        push_outbox(paths, ConfigStore.for_paths(paths).read())
    """)
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ, "ZOTERO_API_KEY": KEY}, timeout=120)
    assert proc.returncode == -9
    assert api.created_by_post == [saved.key]  # Zotero has it…
    assert Outbox.for_paths(DataPaths.resolve(tmp_path / "data")).counts()["outbox"] == 1  # …the outbox too
    from zocrates_nb.workbench.saving import push_outbox

    paths = DataPaths.resolve(tmp_path / "data")
    report = push_outbox(paths, ConfigStore.for_paths(paths).read())
    assert report.written == [(saved.key, "zotero-web")]
    assert [n["key"] for n in _notes_in(api)] == [saved.key]  # still exactly one
    _assert_created_once_and_retry_was_a_no_op(api, saved.key, token)
    assert _counts(DataPaths.resolve(tmp_path / "data")) == {"outbox": 0, "waiting": 1}


# ----------------------------------------------------------------------------- waiting notes Zotero dropped


@pytest.mark.parametrize("how", ["trash", "delete"])
def test_a_waiting_note_trashed_or_deleted_in_zotero_before_it_synced_down_leaves_on_the_next_sync(
    tmp_path, zotero_dir, api, monkeypatch, how
):
    wb = _workbench(tmp_path, zotero_dir)
    _use_web_writer(wb, api, monkeypatch)
    saved = wb.save_note("Dropped", "The axolotl gill note, trashed in Zotero at once.", parent_key=PAPER)
    kept = wb.save_note("Kept", "The okapi stripe note stays.", parent_key=PAPER)
    assert saved.destination == kept.destination == "zotero-web"
    assert wb.sync(progress=False).counts["removed"] == 0  # Zotero still has both: both keep waiting
    assert _counts(wb.paths) == {"outbox": 0, "waiting": 2}
    getattr(api, how)(saved.key)  # the user drops it in Zotero (web library)
    report = wb.sync(progress=False)
    assert report.counts["removed"] == 1
    assert saved.key not in wb.corpus.keys("note") and kept.key in wb.corpus.keys("note")
    assert [w.key for w in Outbox.for_paths(wb.paths).waiting()] == [kept.key]
    assert saved.key not in [h["key"] for h in wb.search("axolotl gill note", k=5).to_dict()["hits"]]
    wb.close()


def test_an_unreachable_writer_keeps_waiting_notes_waiting(tmp_path, zotero_dir, api, monkeypatch):
    wb = _workbench(tmp_path, zotero_dir)
    _use_web_writer(wb, api, monkeypatch)
    saved = wb.save_note("Waits", "The quokka smile note.", parent_key=PAPER)
    api.stop()
    assert wb.sync(progress=False).counts["removed"] == 0
    assert saved.key in wb.corpus.keys("note") and _counts(wb.paths)["waiting"] == 1
    wb.close()


def test_waiting_entries_carry_their_age(tmp_path, zotero_dir, api, monkeypatch, capsys):
    from zocrates_nb.cli import main
    from zocrates_nb.health.status import format_status
    from zocrates_nb.library.writing.outbox import format_age

    wb = _workbench(tmp_path, zotero_dir)
    _use_web_writer(wb, api, monkeypatch)
    saved = wb.save_note("Aged", "The tapir snout note.", parent_key=PAPER)
    import sqlite3

    with sqlite3.connect(wb.paths.root / "outbox.sqlite") as conn:  # Zotero confirmed it 3 hours ago
        conn.execute("UPDATE waiting SET written = written - 3 * 3600")
    counts = Outbox.for_paths(wb.paths).counts()
    assert 3 * 3600 <= counts["oldest_waiting_s"] < 3 * 3600 + 60
    assert "waiting for Zotero to sync (the oldest for 3 h)" in format_status(wb.status())
    wb.close()
    assert main(["--data-dir", str(tmp_path / "data"), "outbox", "list", "--json"]) == 0
    waiting = json.loads(capsys.readouterr().out)["waiting_for_zotero_sync"]
    assert waiting[0]["key"] == saved.key and 3 * 3600 <= waiting[0]["waiting_s"] < 3 * 3600 + 60
    assert waiting[0]["written_at"].endswith("Z")
    assert main(["--data-dir", str(tmp_path / "data"), "outbox", "list"]) == 0
    assert "waiting for Zotero to sync for 3 h" in capsys.readouterr().out
    assert [format_age(s) for s in (5, 600, 7200, 3 * 86400)] == ["5 s", "10 min", "2 h", "3 days"]


# ----------------------------------------------------------------------------- a hand-edited writer is checked once


def _desktop_config(wb: Workbench, zotero_dir: Path, api: FakeZoteroAPI, monkeypatch) -> None:
    """A writer written straight into zocrates_config.json: `library writer web` never checked it."""
    monkeypatch.setenv("ZOTERO_API_KEY", KEY)
    wb.config.update(
        {
            "library": {"source": "zotero-dir", "zotero_dir": str(zotero_dir)},
            "writer": {"kind": "web", "library_id": str(USER_ID), "base_url": api.base_url},
        }
    )


def _key_checks(api: FakeZoteroAPI) -> int:
    return sum(1 for method, path, _ in api.requests if method == "GET" and path.startswith("/keys/"))


@pytest.mark.parametrize(
    ("problem", "match"),
    [
        ("read_only_key", "may not write notes"),
        ("other_account", "belongs to user 999"),
        ("desktop_of_another_account", "notes would go to another library"),
    ],
)
def test_a_hand_configured_writer_is_checked_before_its_first_write(
    tmp_path, zotero_dir, api, monkeypatch, problem, match
):
    wb = _workbench(tmp_path, zotero_dir)
    _desktop_config(wb, zotero_dir, api, monkeypatch)
    if problem == "read_only_key":
        api.key_access = {"user": {"library": True, "notes": True, "write": False}, "groups": {}}
    elif problem == "other_account":
        api.key_user_id = 999
    else:  # the key is fine for its library, but Zotero desktop syncs elsewhere
        with ZoteroDB.reopen(zotero_dir / "zotero.sqlite", "9") as db:
            db.set_setting("account", "userID", 999)
    saved = wb.save_note("Refused", "The pangolin scale note.", parent_key=PAPER)
    assert saved.destination == "outbox" and match in saved.reason, saved.reason
    assert _notes_in(api) == []  # nothing written to the wrong library
    assert saved.key in wb.corpus.keys("note")  # kept, searchable
    entry = Outbox.for_paths(wb.paths).entries()[0]
    assert match in entry.reason
    wb.close()


def test_a_passed_check_is_cached_per_writer_configuration(tmp_path, zotero_dir, api, monkeypatch):
    wb = _workbench(tmp_path, zotero_dir)
    _desktop_config(wb, zotero_dir, api, monkeypatch)
    api.key_access = {"user": {"library": True, "notes": True, "write": False}, "groups": {}}
    assert wb.save_note("First", "The numbat note.", parent_key=PAPER).destination == "outbox"
    api.key_access = {"user": {"library": True, "notes": True, "write": True}, "groups": {}}  # fixed on zotero.org
    second = wb.save_note("Second", "The bilby note.", parent_key=PAPER)  # also pushes the first
    assert second.destination == "zotero-web"
    assert len(_notes_in(api)) == 2 and Outbox.for_paths(wb.paths).counts()["outbox"] == 0
    checks = _key_checks(api)
    assert checks == 2  # refused once, passed once
    assert wb.save_note("Third", "The quoll note.", parent_key=PAPER).destination == "zotero-web"
    assert _key_checks(api) == checks  # cached: not asked again
    assert KEY not in (wb.paths.root / "writer_checks.json").read_text()
    monkeypatch.setenv("ZOTERO_API_KEY", "another-key")  # another configuration: checked again
    assert wb.save_note("Fourth", "The dunnart note.", parent_key=PAPER).destination == "outbox"
    assert _key_checks(api) == checks + 1
    wb.close()


# ----------------------------------------------------------------------------- search says "not yet in Zotero"


def test_search_marks_outbox_notes_not_yet_in_zotero_with_one_outbox_query(
    tmp_path, zotero_dir, api, monkeypatch, capsys
):
    from zocrates_nb.cli import main

    wb = _workbench(tmp_path, zotero_dir)  # no writer: saved notes stay in the outbox
    first = wb.save_note("Batch effects", "The okapi batch had lower UMI counts.", parent_key=PAPER)
    second = wb.save_note("Batch again", "The okapi batch had lower UMI counts twice.", parent_key=PAPER)
    asked = []
    unsent = Outbox.unsent
    monkeypatch.setattr(Outbox, "unsent", lambda self: asked.append(1) or unsent(self))
    results = wb.search("okapi batch lower UMI counts", k=5, mode="lexical")
    assert len(asked) == 1  # once per search, not per hit
    assert {first.key, second.key} <= set(results.keys()) and set(results.pending) == {first.key, second.key}
    assert "library writer" in results.pending[first.key]
    hits = {h["key"]: h for h in results.to_dict()["hits"]}
    assert hits[first.key]["pending"] is True and "library writer" in hits[first.key]["pending_reason"]
    assert "Not yet in Zotero" in results.evidence_text.split(f"[Note Key: {first.key}")[1].split("\n")[1]
    assert results._repr_html_().count("not yet in Zotero") == 2
    in_zotero = wb.search("spot deconvolution matched reference", k=5, mode="lexical").to_dict()["hits"]
    assert [h["pending"] for h in in_zotero if h["key"] == "NOTE3333"] == [False]
    monkeypatch.setattr(Outbox, "unsent", unsent)
    wb.config.update({"library": {"source": "zotero-dir", "zotero_dir": str(zotero_dir)}})  # what the CLI opens
    wb.close()

    data = str(tmp_path / "data")
    argv = ["search", "okapi batch lower UMI counts", "--mode", "lexical", "--no-engine", "--data-dir", data]
    assert main([*argv, "--json"]) == 0
    cli_hits = {h["key"]: h for h in json.loads(capsys.readouterr().out)["hits"]}
    assert cli_hits[first.key]["pending"] is True and cli_hits[first.key]["pending_reason"]
    assert main(argv) == 0
    assert capsys.readouterr().out.count("Not yet in Zotero") == 2

    from zocrates_nb.workbench.saving import push_outbox

    wb = Workbench(tmp_path / "data", auto_sync=False)
    _use_web_writer(wb, api, monkeypatch)
    assert len(push_outbox(wb.paths, wb.config.read()).written) == 2  # now in Zotero
    results = wb.search("okapi batch lower UMI counts", k=5, mode="lexical")
    assert results.pending == {} and "Not yet in Zotero" not in results.evidence_text
    assert all(h["pending"] is False for h in results.to_dict()["hits"])
    wb.close()


def test_a_note_hit_from_json_renders_its_pending_flag():
    from zocrates_nb.display.render import render_search_hit

    row = render_search_hit({"key": "ABCD2345", "kind": "note", "pending": True, "pending_reason": "Zotero 503"}, 1)
    assert "not yet in Zotero" in row and "Zotero 503" in row
    assert "not yet in Zotero" not in render_search_hit({"key": "ABCD2345", "kind": "note", "pending": False}, 1)
