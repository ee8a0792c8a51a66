"""The Web API source reads the user's library and every group library the key can access, as one corpus
(issue 22, item 4), against the loopback Zotero Web API (tests/fakes/zotero_web_api.py)."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_cli_library import run
from tests.fakes.zotero_web_api import FakeZoteroAPI
from zocrates_nb.library import open_source
from zocrates_nb.library.web.groups import ZoteroWebLibraries, group_cache_path
from zocrates_nb.paths import DataPaths

KEY = "s3cr3t-key-XYZ"
LAB = 4711


@pytest.fixture
def api():
    server = FakeZoteroAPI(api_key=KEY).start()
    server.add_item({"key": "MYPAPER2", "itemType": "journalArticle", "title": "Slide-seq measures tissue"})
    server.add_note("<p>My own note on bead arrays</p>", key="MYNOTE22", parent="MYPAPER2")
    lab = server.add_group(LAB, "Lab reading")
    lab.add_collection("LABCLL22", "Journal club")
    lab.add_item({"key": "LABPAPR2", "itemType": "journalArticle", "title": "Stereo-seq maps the mouse embryo"})
    lab.add_item({"key": "LABPDF22", "itemType": "attachment", "parentItem": "LABPAPR2", "linkMode": "imported_file"})
    lab.add_annotation("LABPDF22", key="LABANN22", text="nanoball patterned arrays", page_label="4", page_index=3)
    lab.add_note("<p>Journal club: DNA nanoball chips are dense</p>", key="LABNTE22", collections=["LABCLL22"])
    yield server
    server.stop()


def _config(api, **library) -> dict:
    return {"library": {"source": "zotero-web", "library_id": api.library_id, "base_url": api.base_url, **library}}


def test_the_user_library_and_each_group_are_read_as_one(api, monkeypatch, tmp_path):
    monkeypatch.setenv("ZOTERO_API_KEY", KEY)
    paths = DataPaths(tmp_path / "data")
    source = open_source(paths, _config(api))
    try:
        assert isinstance(source, ZoteroWebLibraries)
        snap = source.snapshot()
        assert [(lib.name, lib.kind, lib.group_id) for lib in snap.libraries] == [
            ("My Library", "user", None),
            ("Lab reading", "group", LAB),
        ]
        notes = {n.key: n.library_id for n in snap.notes}
        assert notes == {"MYNOTE22": api.library_id, "LABNTE22": LAB}
        assert {a.key: a.library_id for a in snap.annotations} == {"LABANN22": LAB}
        assert {c.key: c.library_id for c in snap.collections} == {"LABCLL22": LAB}
        assert (
            source.get_note("LABNTE22").library_id == LAB and source.get_paper("MYPAPER2").library_id == api.library_id
        )
        # each group keeps its own cache beside the user's (its versions are its own)
        assert group_cache_path(paths.web_cache, LAB).is_file() and paths.web_cache.is_file()
        assert "1 group library" in source.describe() and KEY not in source.describe() + repr(source)
        # a note saved into the group's collection is written to the group, with the group's id
        saved = source.create_note("<p>Saved into the lab</p>", collection_keys=["LABCLL22"])
        assert saved.library_id == LAB and saved.key in api.groups[LAB].items and saved.key not in api.items
        child = source.create_note("<p>On my paper</p>", parent_key="MYPAPER2")
        assert child.library_id == api.library_id and child.key in api.items
        assert source.update_note(saved.key, "<p>edited</p>").html == "<p>edited</p>"
        assert api.groups[LAB].items[saved.key]["note"] == "<p>edited</p>"
    finally:
        source.close()


def test_groups_none_reads_the_user_library_alone(api, monkeypatch, tmp_path):
    monkeypatch.setenv("ZOTERO_API_KEY", KEY)
    source = open_source(DataPaths(tmp_path / "data"), _config(api, groups="none"))
    try:
        assert not isinstance(source, ZoteroWebLibraries)
        assert {n.key for n in source.snapshot().notes} == {"MYNOTE22"}
    finally:
        source.close()


def test_a_key_that_may_not_list_groups_still_reads_the_users_library(api, monkeypatch, tmp_path):
    monkeypatch.setenv("ZOTERO_API_KEY", KEY)
    api.group_status = 403
    source = open_source(DataPaths(tmp_path / "data"), _config(api))
    try:
        snap = source.snapshot()
        assert {n.key for n in snap.notes} == {"MYNOTE22"}
        reasons = dict(snap.failures)
        assert "only your own library was read" in reasons["groups"] and "library.groups" in reasons["groups"]
    finally:
        source.close()


def test_search_and_library_filter_over_the_web_groups(api, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ZOTERO_API_KEY", KEY)
    data = tmp_path / "data"
    data.mkdir()
    (data / "zocrates_config.json").write_text(json.dumps(_config(api)))
    code, _, err = run(capsys, "--data-dir", str(data), "sync")
    assert code == 0, err
    code, out, _ = run(capsys, "--data-dir", str(data), "search", "nanoball patterned arrays", "--json", "--k", "3")
    top = next(h for h in json.loads(out)["hits"] if h["key"] == "LABANN22")
    assert (top["kind"], top["key"], top["library_id"], top["library_name"]) == (
        "annotation",
        "LABANN22",
        LAB,
        "Lab reading",
    )
    assert top["open_pdf"] == f"zotero://open-pdf/groups/{LAB}/items/LABPDF22?page=4&annotation=LABANN22"
    code, out, _ = run(capsys, "--data-dir", str(data), "search", "arrays", "--json", "--library", "My Library")
    assert {h["library_id"] for h in json.loads(out)["hits"]} == {api.library_id}
    code, out, _ = run(
        capsys, "--data-dir", str(data), "search", "nanoball chips", "--json", "--library", str(LAB), "--type", "note"
    )
    assert [h["key"] for h in json.loads(out)["hits"]] == ["LABNTE22"]
