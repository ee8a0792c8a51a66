"""The red-team failures of issue 10, one test each (each failed before its fix).

Real components throughout: the demo library, SQLite FTS5, ChromaDB, the ONNX embedder.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tests.system.faults import assert_same_ranking
from zocrates_nb.cli import main


def _index_keys(wb) -> set[str]:
    return {k for (k,) in wb.index._conn.execute("SELECT key FROM index_documents")}


def _search_keys(wb, query: str, k: int = 10) -> list[str]:
    return wb.search(query, k=k).keys()


def _lexical_keys(wb, query: str, k: int = 10) -> list[str]:
    return wb.search(query, k=k, mode="lexical").keys()


# ----------------------------------------------------------------------------- 1. rebuild vs save


def test_rebuild_and_save_serialize_so_no_saved_note_is_dropped(demo_home, monkeypatch):
    """A save that lands while rebuild has listed the bundles must not be cleared by the rebuild."""
    import zocrates_nb.corpus.bundle as bundle_module
    from zocrates_nb.workbench.core import Workbench

    rebuilder, saver = Workbench(demo_home, auto_sync=False), Workbench(demo_home, auto_sync=False)
    saved: dict[str, str] = {}
    real_read_bundle = bundle_module.read_bundle
    started = threading.Event()

    def save() -> None:
        saved["key"] = saver.save_note("Wombat ledger protocol", "Wombats keep a ledger of burrows.").key

    def slow_read_bundle(path):
        if not started.is_set():  # first bundle read: a save in another "kernel" now
            started.set()
            thread = threading.Thread(target=save)
            thread.start()
            thread.join(timeout=4)  # with the lock the save waits for us (join times out)
            slow_read_bundle.thread = thread
        return real_read_bundle(path)

    monkeypatch.setattr(bundle_module, "read_bundle", slow_read_bundle)
    try:
        rebuilder.index.rebuild(rebuilder.corpus)
        slow_read_bundle.thread.join(timeout=60)
        assert saved.get("key"), "the save did not complete"
        assert saved["key"] in _index_keys(rebuilder)
        assert saved["key"] in _search_keys(rebuilder, "wombat ledger burrows")
    finally:
        rebuilder.close()
        saver.close()


def test_sync_repairs_an_index_that_lost_rows_instead_of_saying_unchanged(demo_workbench):
    wb = demo_workbench
    key = wb.corpus.keys("note")[0]
    with wb.corpus.meta.write() as conn:
        wb.index.unstage(conn, key)  # the index lost a document the corpus holds
    wb.index.commit_vectors()
    assert key not in _index_keys(wb)
    report = wb.sync(progress=False)
    assert key in _index_keys(wb)
    assert report.counts["unchanged"] < wb.corpus.meta.count()
    assert any(k == key and "repaired" in why for k, why in report.warnings)
    again = wb.sync(progress=False)
    assert again.counts["unchanged"] == wb.corpus.meta.count() and not again.warnings


# ----------------------------------------------------------------------------- 2. damaged meta db


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "header":
        data[0:100] = os.urandom(100)
    elif how == "truncate":
        data = data[: len(data) // 3]
    elif how == "middle":  # a page in use (a freelist page would be no damage)
        import sqlite3

        conn = sqlite3.connect(path)
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'documents'").fetchone()[0]
        conn.close()
        start = (root - 1) * page
        data[start : start + page] = os.urandom(page)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["header", "truncate", "middle"])
def test_damaged_meta_db_is_detected_reported_and_rebuilt(demo_home, capsys, how):
    from zocrates_nb.health.status import collect_status
    from zocrates_nb.workbench.core import Workbench

    query = "cell type deconvolution"
    wb = Workbench(demo_home, auto_sync=False)
    notes, lexical, hybrid = sorted(wb.corpus.keys("note")), _lexical_keys(wb, query), _search_keys(wb, query)
    wb.close()
    _damage(demo_home / "conversion_meta.db", how)
    status = collect_status(type(wb.paths)(demo_home))
    assert status["health"]["problems"], status["health"]
    assert main(["--data-dir", str(demo_home), "sync"]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert " 0 changed," in out + err, out + err  # restored rows carry the links and authors: nothing re-made
    wb = Workbench(demo_home, auto_sync=False)
    try:
        assert sorted(wb.corpus.keys("note")) == notes
        assert _lexical_keys(wb, query) == lexical
        assert_same_ranking(_search_keys(wb, query), hybrid, query)  # every chunk was embedded again
        stats = wb.index.stats()
        assert stats["pending_vectors"] == 0 and stats["vectors"] == stats["chunks"], stats
    finally:
        wb.close()
    assert list(demo_home.glob("conversion_meta.db.damaged-*")), "the damaged file is kept aside"
    assert main(["--data-dir", str(demo_home), "index", "rebuild"]) == 0


# ----------------------------------------------------------------------------- 3. damaged bundles


@pytest.mark.parametrize("damage", ["empty-manifest", "random-content"])
def test_damaged_bundle_is_repaired_by_sync_verify_and_skipped_by_rebuild(demo_home, capsys, damage):
    from zocrates_nb.workbench.core import Workbench

    wb = Workbench(demo_home, auto_sync=False)
    key = wb.corpus.keys("note")[0]
    good = wb.read_document(key)
    wb.close()
    bundle = demo_home / "corpus" / key
    if damage == "empty-manifest":
        (bundle / "okf.json").write_bytes(b"")
    else:
        (bundle / "content.md").write_bytes(os.urandom(2000))
    assert main(["--data-dir", str(demo_home), "index", "rebuild", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert key in out["repaired"]
    assert (bundle / "content.md").read_text(encoding="utf-8") == good
    # damage again: sync --verify repairs it, and a plain sync catches an empty manifest
    (bundle / "content.md").write_bytes(os.urandom(2000))
    assert main(["--data-dir", str(demo_home), "sync", "--verify", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["unchanged"] < sum(report["counts"].values())  # the damaged bundle was re-made
    assert (bundle / "content.md").read_text(encoding="utf-8") == good
    (bundle / "okf.json").write_bytes(b"")
    assert main(["--data-dir", str(demo_home), "sync", "--json"]) == 0
    capsys.readouterr()
    assert json.loads((bundle / "okf.json").read_text())["key"] == key


# ----------------------------------------------------------------------------- 5. queries


@pytest.mark.parametrize(
    "query", ["cell \ud800 types", "\udcff\udcfe deconvolution", "spots \x00 visium", "\ud83d\ude00 spatial"]
)
def test_queries_with_invalid_code_points_are_normalized(demo_workbench, query):
    results = demo_workbench.search(query, k=3)
    assert results.hits is not None
    answer = demo_workbench.ask(query)
    assert answer.text


def test_cli_search_with_non_utf8_argument_does_not_crash(demo_home, capsys):
    query = b"deconvolution \xff\xfe".decode("utf-8", "surrogateescape")
    assert main(["--data-dir", str(demo_home), "search", query]) == 0
    assert "Traceback" not in capsys.readouterr().err


# ----------------------------------------------------------------------------- 6. REST bodies


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 50_000 + b"]" * 50_000,
        b'{"model": "' + b"[" * 0 + b'\\ud800"}',
        b'{"model": {"a": ' * 30_000 + b"1" + b"}" * 30_000,
        b'{"model": "' + b"x" * 2_000_000 + b'"}',
    ],
)
def test_rest_body_parser_refuses_deep_unencodable_and_huge_bodies(body):
    from zocrates_nb.errors import ValidationError
    from zocrates_nb.server.handlers import parse_llm_config_body

    with pytest.raises(ValidationError):
        parse_llm_config_body(body)


# ----------------------------------------------------------------------------- 7. attachment keys


def test_crafted_attachment_key_cannot_read_outside_storage(tmp_path):
    from tests.fakes.zotero_sqlite import ZoteroDB
    from zocrates_nb.library.desktop.snapshot import ZoteroDesktopLibrary

    zdir = tmp_path / "Zotero"
    zdir.mkdir()
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / ".zotero-ft-cache").write_text("TOP SECRET outside storage", encoding="utf-8")
    (zdir / "storage").mkdir()
    with ZoteroDB(zdir / "zotero.sqlite", "9") as db:
        db.add_paper("PAPERAAA", "A paper")
        att = db.add_attachment("ATTACHAA", "PAPERAAA")
        db.conn.execute("UPDATE items SET key = ? WHERE itemID = ?", ("../../secret", att))
    snap = ZoteroDesktopLibrary(zotero_dir=zdir).snapshot()
    paper = next(p for p in snap.papers if p.key == "PAPERAAA")
    assert "TOP SECRET" not in (paper.fulltext or "")


# ----------------------------------------------------------------------------- 8. events


def test_events_lines_that_are_json_but_not_objects_are_skipped_and_counted(tmp_path):
    from zocrates_nb.diagnostics.views import Diagnostics

    (tmp_path / "a.jsonl").write_text(
        '{"ts":"2026-01-01T00:00:00Z","kind":"search","session":"a","latency_ms":1.0}\n[1,2]\n"text"\n42\nnull\n'
        '{"ts":"2026-01-01T00:00:01Z","kind":"read","session":"a","latency_ms":2.0}\n{"ts":',
        encoding="utf-8",
    )
    diagnostics = Diagnostics(tmp_path)
    events = diagnostics.events()
    assert list(events["kind"]) == ["search", "read"]
    assert diagnostics.skipped_lines >= 4
    assert len(diagnostics.latency()) == 2


# ----------------------------------------------------------------------------- 9. markdown repr


def test_answer_markdown_repr_drops_javascript_links():
    from zocrates_nb.agents.answer import Answer, Citation

    answer = Answer(
        text="See [this](javascript:alert(1)) and [that](JaVaScRiPt:alert(2)) and "
        "[ok](https://example.org) and [e](java&#115;cript:alert(4)) [d](data:text/html,x) "
        "[s](< javascript:alert(5)>) [p](javascript:f(a)(b))\n\n[ref]: javascript:alert(6)\n"
        "<a href='javascript:x'>x</a>",
        citations=[Citation(title="[t](javascript:alert(3))", citation="c", kind="note")],
        evidence=[],
        usage={},
        mode="evidence-only",
        session_id="s",
    )
    shown = answer._repr_markdown_()
    assert "<a " not in shown  # raw HTML stays text
    shown = shown.replace("&lt;a href='javascript:x'>", "")
    assert "javascript:" not in shown.lower() and "data:text" not in shown and "cript:" not in shown
    assert "https://example.org" in shown
