"""Save as Note into a group library (issue 22, item 4): from a desktop database through the same outbox
and writers as the user's own library, to the group's zotero.org id, exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.zotero_sqlite import ZoteroDB
from tests.fakes.zotero_web_api import FakeZoteroAPI
from zocrates_nb.errors import LibraryError
from zocrates_nb.library.writing.outbox import Outbox
from zocrates_nb.workbench.core import Workbench

USER_ID = 475425
KEY = "s3cr3t-key-XYZ"
LAB = 4711


def _desktop(folder: Path, *, named_group: bool = True) -> Path:
    folder.mkdir()
    with ZoteroDB(folder / "zotero.sqlite", "9") as db:
        db.add_paper("MYPAPER2", "Slide-seq measures whole tissue", creators=[("Sam", "Rodriques", "author")])
        if named_group:
            db.add_group(LAB, "Lab reading")
        db.add_collection("LABCLL22", "Journal club", library_id=2)
        db.add_paper("LABPAPR2", "Stereo-seq maps the mouse embryo", library_id=2, collections=["LABCLL22"])
        db.set_setting("account", "userID", USER_ID)
        db.set_setting("client", "lastVersion", "9.0.4")
    return folder


@pytest.fixture
def api():
    with FakeZoteroAPI(library_id=USER_ID, api_key=KEY) as fake:
        fake.add_item({"key": "MYPAPER2", "itemType": "journalArticle", "title": "Slide-seq"})
        lab = fake.add_group(LAB, "Lab reading")
        lab.add_collection("LABCLL22", "Journal club")
        lab.add_item({"key": "LABPAPR2", "itemType": "journalArticle", "title": "Stereo-seq"})
        yield fake


def _workbench(tmp_path, zotero_dir, api, monkeypatch) -> Workbench:
    monkeypatch.setenv("ZOTERO_API_KEY", KEY)
    wb = Workbench(tmp_path / "data", zotero_dir=zotero_dir, auto_sync=False)
    wb.config.update({"writer": {"kind": "web", "library_id": str(USER_ID), "base_url": api.base_url}})
    wb.sync(progress=False)
    return wb


def test_a_note_saved_into_a_group_collection_goes_to_the_group(tmp_path, api, monkeypatch):
    zotero_dir = _desktop(tmp_path / "Zotero")
    wb = _workbench(tmp_path, zotero_dir, api, monkeypatch)
    try:
        saved = wb.save_note("Journal club", "Stereo-seq uses DNA nanoball arrays.", collection_key="LABCLL22")
        child = wb.save_note("On the embryo map", "Bin 50 is the usual resolution.", parent_key="LABPAPR2")
        mine = wb.save_note("Mine", "Beads of 10 micrometres.", parent_key="MYPAPER2")
        group_items, user_items = api.groups[LAB].items, api.items
        assert saved.destination == "zotero-web" and saved.key in group_items and saved.key not in user_items
        assert group_items[saved.key]["collections"] == ["LABCLL22"]
        assert group_items[child.key]["parentItem"] == "LABPAPR2" and child.key not in user_items
        assert mine.key in user_items and mine.key not in group_items
        assert api.groups[LAB].created_by_post == [saved.key, child.key]  # once each
        # waiting for Zotero to sync them down: asked about in the group, so never taken for deleted
        wb.sync(progress=False)
        waiting = {e.key: e.library_path for e in Outbox.for_paths(wb.paths).waiting()}
        assert waiting == {saved.key: f"groups/{LAB}", child.key: f"groups/{LAB}", mine.key: ""}
        assert saved.key in wb.corpus.keys("note")
        # Zotero syncs them down into the group library: same keys, nothing waits any more
        with ZoteroDB.reopen(zotero_dir / "zotero.sqlite", "9") as db:
            db.add_note(saved.key, group_items[saved.key]["note"], collections=["LABCLL22"], library_id=2)
            db.add_note(child.key, group_items[child.key]["note"], parent="LABPAPR2", library_id=2)
            db.add_note(mine.key, user_items[mine.key]["note"], parent="MYPAPER2")
        wb.sync(progress=False)
        assert Outbox.for_paths(wb.paths).counts()["waiting"] == 0
        hits = wb.search("nanoball arrays", filters={"library": "Lab reading", "item_type": "note"}).hits
        assert [h.key for h in hits] == [saved.key] and hits[0].library.group_id == LAB
    finally:
        wb.close()


def test_a_group_without_its_zotero_org_id_is_refused_before_anything_is_queued(tmp_path, api, monkeypatch):
    wb = _workbench(tmp_path, _desktop(tmp_path / "Zotero", named_group=False), api, monkeypatch)
    try:
        with pytest.raises(LibraryError, match="does not say which zotero.org group") as err:
            wb.save_note("Journal club", "Nanoballs.", collection_key="LABCLL22")
        assert "sync that group" in (err.value.hint or "")
        assert Outbox.for_paths(wb.paths).counts()["outbox"] == 0 and not api.groups[LAB].created_by_post
    finally:
        wb.close()
