"""ZoteroWebLibrary through pyzotero against a loopback Zotero Web API (tests/fakes/zotero_web_api.py)."""

from __future__ import annotations

import pytest

from tests.fakes.zotero_web_api import FakeZoteroAPI
from zocrates_nb.errors import LibraryError, NotFoundError, ZocratesError
from zocrates_nb.library import open_source
from zocrates_nb.library.base import LibrarySource
from zocrates_nb.library.web.source import NoteConflictError, ZoteroWebLibrary
from zocrates_nb.paths import DataPaths

KEY = "s3cr3t-key-XYZ"


@pytest.fixture
def api():
    server = FakeZoteroAPI(api_key=KEY).start()
    server.add_collection("SPATIAL2", "Spatial")
    server.add_collection("MTHDS222", "Methods", parent="SPATIAL2")
    server.add_item(
        {
            "key": "PAPER222",
            "itemType": "journalArticle",
            "title": "Visualization and analysis of gene expression in tissue sections",
            "creators": [
                {"creatorType": "author", "firstName": "Patrik L.", "lastName": "Ståhl"},
                {"creatorType": "editor", "firstName": "Ann", "lastName": "Editor"},
                {"creatorType": "author", "name": "The Consortium"},
            ],
            "date": "2016-07-01",
            "DOI": "10.1126/science.aaf2403",
            "abstractNote": "ST.",
            "publicationTitle": "Science",
            "collections": ["SPATIAL2"],
        }
    )
    server.add_item({"key": "PAPER333", "itemType": "book", "title": "Trashed book", "creators": []})
    server.add_note(
        '<div data-schema-version="9"><p>Standalone</p></div>', key="STAND222", collections=["SPATIAL2", "MTHDS222"]
    )
    server.add_note("<p>Child</p>", key="CHILD222", parent="PAPER222")
    server.add_note("<p>Child of trashed</p>", key="CHILD333", parent="PAPER333")
    server.add_note("<p>Trashed note</p>", key="TRASH222", parent="PAPER222")
    server.add_item(
        {
            "key": "ATTACH22",
            "itemType": "attachment",
            "parentItem": "PAPER222",
            "linkMode": "imported_file",
            "title": "PDF",
        }
    )
    server.trash("PAPER333")
    server.trash("TRASH222")
    yield server
    server.stop()


@pytest.fixture
def lib(api, tmp_path):
    source = ZoteroWebLibrary(
        api.library_id, "user", api_key=KEY, cache_path=tmp_path / "cache.sqlite", base_url=api.base_url, page_size=2
    )
    yield source
    source.close()


def test_full_sync_reads_notes_papers_collections_and_skips_trash(lib, api):
    assert isinstance(lib, LibrarySource)
    snap = lib.snapshot()
    notes = {n.key: n for n in snap.notes}
    assert set(notes) == {"STAND222", "CHILD222"}  # trashed note and child of trashed paper gone
    assert notes["STAND222"].collections == ("SPATIAL2", "MTHDS222") and notes["STAND222"].parent_key is None
    assert notes["CHILD222"].parent_key == "PAPER222" and notes["CHILD222"].html == "<p>Child</p>"
    assert [p.key for p in snap.papers] == ["PAPER222"]  # attachments are not papers; trashed book gone
    paper = snap.papers[0]
    assert paper.creators == ("Ståhl, Patrik L.", "The Consortium") and paper.year == 2016
    assert (paper.doi, paper.publication, paper.collections) == ("10.1126/science.aaf2403", "Science", ("SPATIAL2",))
    assert {c.key: c.parent_key for c in snap.collections} == {"SPATIAL2": None, "MTHDS222": "SPATIAL2"}
    assert snap.version == api.version
    # page_size=2 → pagination was followed via Link rel=next
    assert sum(1 for m, p, _ in api.requests if m == "GET" and "/items" in p and "start=" in p) >= 3
    assert lib.get_note("CHILD333") is None and lib.get_note("TRASH222") is None
    assert lib.get_paper("PAPER222") == paper and lib.get_paper("CHILD222") is None


def test_incremental_sync_fetches_only_changes(lib, api):
    first = lib.snapshot()
    version = first.version
    api.modify("CHILD222", note="<p>Child, edited</p>")
    api.delete("STAND222")
    api.add_note("<p>Brand new</p>", key="NEWNOTE2", parent="PAPER222")
    api.requests.clear()
    report = lib.sync()
    assert report["since"] == version and report["items"] == 2 and report["deleted"] == 1
    item_gets = [p for m, p, _ in api.requests if m == "GET" and "/items" in p]
    assert item_gets and all(f"since={version}" in p for p in item_gets)
    assert any("/deleted" in p and f"since={version}" in p for _, p, _ in api.requests)
    snap = lib.snapshot()
    notes = {n.key: n for n in snap.notes}
    assert set(notes) == {"CHILD222", "NEWNOTE2"}
    assert notes["CHILD222"].html == "<p>Child, edited</p>" and notes["CHILD222"].version > first.version
    # trashing later is seen through includeTrashed, not as a deletion
    api.trash("NEWNOTE2")
    assert "NEWNOTE2" not in {n.key for n in lib.snapshot().notes}
    assert lib.sync()["items"] == 0  # nothing new: nothing fetched


def test_cache_survives_reopen_and_works_offline(lib, api, tmp_path):
    lib.snapshot()
    lib.close()
    api.stop()
    again = ZoteroWebLibrary(
        api.library_id, "user", api_key=KEY, cache_path=tmp_path / "cache.sqlite", base_url=api.base_url
    )
    snap = again.snapshot()  # server gone: cached library + a failure entry
    assert {n.key for n in snap.notes} == {"STAND222", "CHILD222"}
    assert snap.failures and snap.failures[0][0] == "sync" and KEY not in snap.failures[0][1]
    assert again.get_note("CHILD222").html == "<p>Child</p>"
    again.close()
    fresh = ZoteroWebLibrary(1, "user", api_key=KEY, cache_path=tmp_path / "other.sqlite", base_url=api.base_url)
    with pytest.raises(LibraryError) as err:  # no cache and no server: a clear error
        fresh.snapshot()
    assert "Could not reach Zotero" in err.value.message and err.value.hint and KEY not in str(err.value)
    fresh.close()


def test_create_child_and_standalone_notes_as_html(lib, api):
    lib.snapshot()
    child = lib.create_note('<div data-schema-version="9"><h1>Answer</h1><p>x</p></div>', parent_key="PAPER222")
    assert child.parent_key == "PAPER222" and child.collections == ()
    stored = api.items[child.key]
    assert stored["parentItem"] == "PAPER222" and "collections" not in stored
    assert stored["note"].startswith('<div data-schema-version="9"><h1>Answer</h1>')
    standalone = lib.create_note("<p>filed</p>", collection_keys=["MTHDS222"])
    assert standalone.parent_key is None and api.items[standalone.key]["collections"] == ["MTHDS222"]
    assert lib.get_note(child.key) == child  # visible locally at once
    assert {child.key, standalone.key} <= {n.key for n in lib.snapshot().notes}
    posts = [h for m, _, h in api.requests if m == "POST"]
    assert all(h.get("Zotero-Write-Token") for h in posts)


def test_child_with_collections_is_refused_before_and_by_the_server(lib, api):
    with pytest.raises(LibraryError, match="not both"):
        lib.create_note("<p>x</p>", parent_key="PAPER222", collection_keys=["SPATIAL2"])
    assert not [m for m, _, _ in api.requests if m == "POST"]
    with pytest.raises(NotFoundError, match="doesn't exist"):
        lib.create_note("<p>x</p>", parent_key="NOPARENT")
    with pytest.raises(LibraryError, match="empty"):
        lib.create_note("   ", parent_key="PAPER222")


def test_update_sends_version_and_bumps_it(lib, api):
    lib.snapshot()
    before = lib.get_note("CHILD222")
    after = lib.update_note("CHILD222", "<p>Child v2</p>")
    assert after.html == "<p>Child v2</p>" and after.version > before.version
    patch = [h for m, _, h in api.requests if m == "PATCH"][-1]
    assert patch["If-Unmodified-Since-Version"] == str(before.version)
    assert api.items["CHILD222"]["note"] == "<p>Child v2</p>"


def test_412_conflict_is_reported_and_nothing_is_overwritten(lib, api):
    lib.snapshot()
    api.modify("CHILD222", note="<p>edited in Zotero meanwhile</p>")
    with pytest.raises(NoteConflictError) as err:
        lib.update_note("CHILD222", "<p>my stale edit</p>")
    assert isinstance(err.value, ZocratesError) and "Sync" in err.value.hint
    assert api.items["CHILD222"]["note"] == "<p>edited in Zotero meanwhile</p>"
    assert lib.get_note("CHILD222").html == "<p>edited in Zotero meanwhile</p>"  # re-fetched into the cache
    assert lib.update_note("CHILD222", "<p>merged</p>").html == "<p>merged</p>"  # now based on the fresh one


def test_428_without_version_is_answered_by_the_fake():
    import httpx2

    with FakeZoteroAPI(api_key=KEY) as api:
        api.add_note("<p>n</p>", key="NOTE2222")
        resp = httpx2.patch(
            f"{api.base_url}/users/{api.library_id}/items/NOTE2222",
            json={"note": "<p>x</p>"},
            headers={"Authorization": f"Bearer {KEY}"},
        )
        assert resp.status_code == 428


def test_429_on_writes_is_retried_after_retry_after(lib, api):
    lib.snapshot()
    api.inject(429, methods=("POST",), Retry_After="0.2")
    note = lib.create_note("<p>after a rate limit</p>", parent_key="PAPER222")
    assert api.items[note.key]["note"] == "<p>after a rate limit</p>"
    assert [m for m, _, _ in api.requests if m == "POST"] == ["POST", "POST"]
    api.inject(429, methods=("PATCH",), times=2, Backoff="0.1")
    assert lib.update_note(note.key, "<p>patched</p>").html == "<p>patched</p>"
    api.inject(429, methods=("PATCH",), times=100, Retry_After="0.02")
    with pytest.raises(LibraryError, match="rate limited") as err:
        lib.update_note(note.key, "<p>never</p>")
    assert "nothing was written" in err.value.hint and api.items[note.key]["note"] == "<p>patched</p>"


def test_backoff_on_a_successful_write_delays_the_next_write(lib, api, monkeypatch):
    import zocrates_nb.library.web.source as web

    lib.snapshot()
    slept = []
    monkeypatch.setattr(web.time, "sleep", lambda s: slept.append(s))
    api.success_headers = {"Backoff": "30"}
    lib.create_note("<p>one</p>", parent_key="PAPER222")
    api.success_headers = {}
    lib.create_note("<p>two</p>", parent_key="PAPER222")
    assert slept and 25 < max(slept) <= 30


def test_write_without_a_valid_key_is_refused_without_leaking_it(api, tmp_path):
    wrong = "wrong-key-0000"
    lib = ZoteroWebLibrary(
        api.library_id, "user", api_key=wrong, cache_path=tmp_path / "c.sqlite", base_url=api.base_url
    )
    with pytest.raises(LibraryError) as err:
        lib.create_note("<p>x</p>", parent_key="PAPER222")
    assert wrong not in str(err.value) and wrong not in repr(lib) and "API key" in err.value.hint
    lib.close()


def test_local_api_writes_send_server_id_and_local_key(tmp_path):
    with FakeZoteroAPI(api_key="local-key", local=True, server_id="abc123") as api:
        api.add_item({"key": "PAPER222", "itemType": "journalArticle", "title": "T"})
        lib = ZoteroWebLibrary(
            0,
            "user",
            api_key="local-key",
            cache_path=tmp_path / "c.sqlite",
            local=True,
            base_url=api.base_url,
            page_size=1,
        )
        api.add_note("<p>a</p>", key="NOTE2222", parent="PAPER222")
        assert [n.key for n in lib.snapshot().notes] == ["NOTE2222"]
        note = lib.create_note("<p>local write</p>", parent_key="PAPER222")
        post = [h for m, _, h in api.requests if m == "POST"][-1]
        assert post["Zotero-Server-ID"] == "abc123" and post["Zotero-API-Key"] == "local-key"
        assert "Authorization" not in post
        assert lib.update_note(note.key, "<p>v2</p>").html == "<p>v2</p>"
        lib.close()


def test_open_source_builds_a_web_source_from_config(api, monkeypatch, tmp_path):
    monkeypatch.setenv("MY_ZOTERO_KEY", KEY)
    paths = DataPaths(tmp_path / "data")
    source = open_source(
        paths,
        {
            "library": {
                "source": "zotero-web",
                "library_id": api.library_id,
                "api_key_env": "MY_ZOTERO_KEY",
                "base_url": api.base_url,
            }
        },
    )
    # a user library is read with the groups the key can access (none here); its own cache is the user's
    assert isinstance(source.user, ZoteroWebLibrary) and source.cache_path == paths.web_cache
    assert {n.key for n in source.snapshot().notes} == {"STAND222", "CHILD222"}
    assert KEY not in repr(source) and KEY not in source.describe()
    source.close()


def test_web_api_items_carry_the_citation_key_their_fields_pin():
    from zocrates_nb.library.web.objects import paper_from_object

    pinned = {"key": "ABCD2345", "version": 3, "data": {"key": "ABCD2345", "itemType": "journalArticle", "title": "T"}}
    pinned["data"]["extra"] = "PMID: 12\nCitation Key: doe2020t"
    assert paper_from_object(pinned).citation_key == "doe2020t"
    pinned["data"]["citationKey"] = "fromTheField"
    assert paper_from_object(pinned).citation_key == "fromTheField"
    assert paper_from_object({"key": "EFGH2345", "data": {"key": "EFGH2345", "title": "U"}}).citation_key == ""


def test_annotations_are_read_under_their_pdf_and_paper(lib, api):
    api.add_annotation(
        "ATTACH22",
        key="HILITE22",
        text="barcodes printed on the slide",
        comment="the core idea",
        page_label="79",
        page_index=1,
        tags=["key finding"],
    )
    api.add_annotation(
        "ATTACH22", key="STICKY22", annotation_type="note", comment="check the spot size", page_label="80"
    )
    api.add_annotation("ATTACH22", key="IMAGE222", annotation_type="image", page_label="81", page_index=3)
    api.add_item({"key": "ATTACH33", "itemType": "attachment", "parentItem": "PAPER333", "linkMode": "imported_file"})
    api.add_annotation("ATTACH33", key="ONTRASH3", text="on the trashed book's PDF")
    found = {a.key: a for a in lib.snapshot().annotations}
    assert set(found) == {"HILITE22", "STICKY22", "IMAGE222"}  # the trashed paper's annotations are gone
    hi = found["HILITE22"]
    assert (hi.annotation_type, hi.attachment_key, hi.parent_key, hi.page_label, hi.page_index) == (
        "highlight",
        "ATTACH22",
        "PAPER222",
        "79",
        1,
    )
    assert (hi.text, hi.comment, hi.tags, hi.color_name) == (
        "barcodes printed on the slide",
        "the core idea",
        ("key finding",),
        "yellow",
    )
    assert hi.library_id == int(api.library_id) and hi.sort_index == "00001|000120|00069"
    assert found["STICKY22"].text == "" and not found["IMAGE222"].indexable
    assert lib.get_annotation("HILITE22") == hi and lib.get_annotation("ONTRASH3") is None
    # an edit and a deletion reach the next snapshot through the incremental sync
    api.modify("STICKY22", annotationComment="check the spot size against Visium")
    api.delete("IMAGE222")
    again = {a.key: a for a in lib.snapshot().annotations}
    assert set(again) == {"HILITE22", "STICKY22"} and again["STICKY22"].comment.endswith("against Visium")


def test_a_notes_related_items_come_from_its_dc_relation_uris():
    from zocrates_nb.library.web.objects import note_from_object, related_keys

    one = {"dc:relation": "http://zotero.org/users/1/items/PAPER222"}
    many = {"dc:relation": ["http://zotero.org/groups/9/items/PAPER333", "http://zotero.org/users/1/items/PAPER333"]}
    assert related_keys(one) == ("PAPER222",) and related_keys(many) == ("PAPER333",)
    assert related_keys({"owl:sameAs": "http://zotero.org/users/1/items/PAPER222"}) == ()
    assert related_keys(None) == () and related_keys({"dc:relation": 5}) == ()
    note = note_from_object(
        {"key": "NOTE2222", "version": 3, "data": {"key": "NOTE2222", "note": "<p>x</p>", "relations": one}}
    )
    assert note.related == ("PAPER222",)
