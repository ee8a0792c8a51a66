"""The Web API source, completed: attachment full text, group libraries, the local API as a read source."""

from __future__ import annotations

import pytest

from tests.fakes.zotero_web_api import FakeZoteroAPI
from zocrates_nb.library.web.source import ZoteroWebLibrary

KEY = "s3cr3t-key-XYZ"


def _library(api: FakeZoteroAPI) -> None:
    api.add_item(
        {
            "key": "PAPER222",
            "itemType": "journalArticle",
            "title": "Gene expression in tissue sections",
            "creators": [{"creatorType": "author", "firstName": "P", "lastName": "Ståhl"}],
            "date": "2016",
        }
    )
    api.add_item(
        {
            "key": "ATTACH22",
            "itemType": "attachment",
            "parentItem": "PAPER222",
            "linkMode": "imported_file",
            "title": "PDF",
        }
    )
    api.add_note("<p>Child</p>", key="CHILD222", parent="PAPER222")


@pytest.mark.parametrize("library_type", ["user", "group"])
def test_fulltext_goes_into_the_paper_and_follows_changes(tmp_path, library_type):
    with FakeZoteroAPI(library_id=12345, library_type=library_type, api_key=KEY) as api:
        _library(api)
        api.set_fulltext("ATTACH22", "Spatial barcodes capture transcripts on the slide.")
        lib = ZoteroWebLibrary(
            12345, library_type, api_key=KEY, cache_path=tmp_path / "c.sqlite", base_url=api.base_url, page_size=2
        )
        paper = next(p for p in lib.snapshot().papers if p.key == "PAPER222")
        assert "Spatial barcodes" in paper.fulltext
        assert [n.key for n in lib.snapshot().notes] == ["CHILD222"]
        fulltext_gets = [p for m, p, _ in api.requests if "/fulltext" in p]
        assert any("fulltext?since=0" in p or "since=0" in p for p in fulltext_gets)
        api.set_fulltext("ATTACH22", "Re-indexed: now with the supplement.")  # Zotero re-indexed the PDF
        before = len([p for m, p, _ in api.requests if "ATTACH22/fulltext" in p])
        assert "supplement" in next(p for p in lib.snapshot().papers if p.key == "PAPER222").fulltext
        assert lib.get_paper("PAPER222").fulltext == "Re-indexed: now with the supplement."  # same as the snapshot
        assert len([p for m, p, _ in api.requests if "ATTACH22/fulltext" in p]) == before + 1
        lib.snapshot()  # nothing new: no refetch
        assert len([p for m, p, _ in api.requests if "ATTACH22/fulltext" in p]) == before + 1
        api.trash("ATTACH22")
        paper = next(p for p in lib.snapshot().papers if p.key == "PAPER222")
        assert not paper.fulltext  # a trashed attachment: gone
        lib.close()


def test_local_api_is_a_read_source_without_fulltext(tmp_path):
    with FakeZoteroAPI(library_id=0, api_key="local-key", local=True) as api:
        _library(api)
        lib = ZoteroWebLibrary(
            0, "user", api_key=None, cache_path=tmp_path / "c.sqlite", local=True, base_url=api.base_url
        )
        snap = lib.snapshot()
        assert {p.key for p in snap.papers} == {"PAPER222"} and {n.key for n in snap.notes} == {"CHILD222"}
        assert not any("/fulltext" in p for _, p, _ in api.requests)
        lib.close()


CRAFTED = ("../../x", "AB/CDEFG")


def test_crafted_keys_from_the_web_api_are_skipped_and_never_name_a_url(tmp_path):
    """Keys from the Web API follow the note key rule: a crafted one is reported, never requested or served."""
    with FakeZoteroAPI(library_id=12345, api_key=KEY) as api:
        _library(api)
        api.set_fulltext("ATTACH22", "Spatial barcodes capture transcripts on the slide.")
        api.add_item({"key": "AB/CDEFG", "itemType": "journalArticle", "title": "Crafted paper"})
        api.add_note("<p>Crafted note</p>", key="../../x", parent="PAPER222")
        for key in CRAFTED:
            api.set_fulltext(key, "crafted text that must not be fetched")
        lib = ZoteroWebLibrary(12345, "user", api_key=KEY, cache_path=tmp_path / "c.sqlite", base_url=api.base_url)
        snap = lib.snapshot()
        assert {p.key for p in snap.papers} == {"PAPER222"} and {n.key for n in snap.notes} == {"CHILD222"}
        assert "Spatial barcodes" in snap.papers[0].fulltext and "crafted" not in snap.papers[0].fulltext
        refused = [why for key, why in snap.failures if key in {repr(k) for k in CRAFTED}]
        assert sum("full text was skipped" in why for why in refused) == 2, snap.failures
        paths = [path.split("?")[0] for _, path, _ in api.requests]
        fetched = [path for path in paths if "/items/" in path and path.endswith("/fulltext")]
        assert fetched and all("/items/ATTACH22/" in path for path in fetched), fetched
        assert not any("CDEFG" in path or "/x" in path for path in paths), paths

        assert lib.get_note("../../x") is None and lib.get_paper("AB/CDEFG") is None
        assert lib.get_paper("PAPER222") is not None and lib.get_note("CHILD222") is not None
        lib._cache.store(  # a cache row whose object names another, crafted key
            {"key": "GOODKEY2", "version": 1, "data": {"key": "../../x", "itemType": "note", "note": "<p>x</p>"}}
        )
        assert lib.get_note("GOODKEY2") is None
        lib.close()
