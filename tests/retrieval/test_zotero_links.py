"""Every result from a Zotero library links back into Zotero (issue 22, item 3): ``zotero://select/…``."""

from __future__ import annotations

import json

from tests.fakes.zotero_sqlite import ZoteroDB
from tests.fakes.zotero_web_api import FakeZoteroAPI
from zocrates_nb.cli import main
from zocrates_nb.display.pages import select_url
from zocrates_nb.display.render import render_search_results
from zocrates_nb.library.pending import zotero_library_path
from zocrates_nb.library.web.source import ZoteroWebLibrary


def test_select_links_only_for_zotero_keys_and_library_paths():
    assert select_url("ABCD2345", "library") == "zotero://select/library/items/ABCD2345"
    assert select_url("ABCD2345", "groups/4711") == "zotero://select/groups/4711/items/ABCD2345"
    assert select_url("ABCD2345", None) is None  # the demo library is not in Zotero
    assert select_url("../../x", "library") is None and select_url("ABCD2345", "groups/x") is None


def test_web_libraries_link_into_the_user_or_the_group_library(tmp_path):
    with FakeZoteroAPI(library_id=4711, api_key="k") as api:
        group = ZoteroWebLibrary(4711, "group", api_key="k", cache_path=tmp_path / "g.sqlite", base_url=api.base_url)
        user = ZoteroWebLibrary(12, "user", api_key="k", cache_path=tmp_path / "u.sqlite", base_url=api.base_url)
        try:
            assert zotero_library_path(group) == "groups/4711" and zotero_library_path(user) == "library"
        finally:
            group.close()
            user.close()


def test_desktop_results_link_to_zotero_and_demo_results_do_not(tmp_path, demo_home, capsys):
    zdir = tmp_path / "zotero"
    zdir.mkdir()
    with ZoteroDB(zdir / "zotero.sqlite", "9") as db:
        db.add_paper("PAPER222", "Spatial transcriptomics of tissue sections", creators=[("Ann", "Lee", "author")])
        db.add_note("NTEK2222", "<p>Tissue sections need a matched reference for deconvolution.</p>")
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "sync", "--zotero-dir", str(zdir)]) == 0
    capsys.readouterr()
    assert main(["--data-dir", str(data), "search", "tissue sections", "--mode", "lexical", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert {h["key"]: h["zotero_select"] for h in hits} == {
        "PAPER222": "zotero://select/library/items/PAPER222",
        "NTEK2222": "zotero://select/library/items/NTEK2222",
    }
    html = render_search_results(hits, query="tissue sections")
    assert 'href="zotero://select/library/items/NTEK2222"' in html
    assert main(["--data-dir", str(demo_home), "search", "Harmony", "--mode", "lexical", "--json"]) == 0
    demo_hits = json.loads(capsys.readouterr().out)["hits"]
    assert demo_hits and all(h["zotero_select"] is None for h in demo_hits)
    assert "zotero://select" not in render_search_results(demo_hits)


def test_an_annotation_links_to_its_paper_in_the_library_pane():
    hit = {"key": "ANNT2222", "kind": "annotation", "parent_key": "PAPER222", "title": "Highlight"}
    assert 'href="zotero://select/library/items/PAPER222"' in render_search_results([hit], zotero_library="library")


def test_a_note_waiting_in_the_outbox_is_not_linked():
    hit = {"key": "NTEK2222", "kind": "note", "title": "t", "pending": True, "pending_reason": "Zotero closed"}
    assert "zotero://select" not in render_search_results([hit], zotero_library="library")
    assert "zotero://select" in render_search_results([{**hit, "pending": False}], zotero_library="library")


def test_an_answers_sources_link_into_zotero_in_the_chat_panel(tmp_path):
    """The chat panel's sources (and ``Answer._repr_html_``): each title shows the item in Zotero, and a
    passage read from a PDF opens it at its page; a note still in the outbox and the demo library get none."""
    from zocrates_nb.agents.coordinator import Coordinator
    from zocrates_nb.display.answers import answer_sources, render_sources
    from zocrates_nb.workbench.core import Workbench

    zdir = tmp_path / "zotero"
    zdir.mkdir()
    with ZoteroDB(zdir / "zotero.sqlite", "9") as db:
        db.add_paper("PAPER222", "Spatial transcriptomics of tissue sections", creators=[("Ann", "Lee", "author")])
        db.add_note("NTEK2222", "<p>Tissue sections need a matched reference for deconvolution.</p>")
    wb = Workbench(tmp_path / "data", zotero_dir=zdir, progress=False)
    try:
        wb.sync(progress=False)
        answer = Coordinator(wb.tools, wb.config, None, wb.events).ask("tissue sections reference deconvolution")
    finally:
        wb.close()
    links = {e["key"]: e["zotero_select"] for e in answer.evidence}
    assert links == {k: f"zotero://select/library/items/{k}" for k in ("PAPER222", "NTEK2222")}
    html = render_sources(answer_sources(answer))
    assert html.count('class="zc-zotero-select" href="zotero://select/library/items/') == 2
    assert 'href="zotero://select/library/items/NTEK2222"' in answer._repr_html_()
    page = {"title": "P", "kind": "paper", "page_start": 3, "page_end": 3, "attachment_key": "ATTACH22"}
    assert 'href="zotero://open-pdf/library/items/ATTACH22?page=3"' in render_sources([page])
    assert "zotero://" not in render_sources([{"title": "Demo note", "kind": "note"}])


def test_a_desktop_group_librarys_results_and_pdfs_open_under_its_group(tmp_path, capsys):
    """A group library read from zotero.sqlite (``library.desktop_library_id``) is linked by its zotero.org
    groupID, for the item and for its PDF at the annotated page: under ``library`` Zotero finds nothing."""
    from tests.fakes.pdf_files import write_pdf
    from zocrates_nb.paths import DataPaths
    from zocrates_nb.settings.config import ConfigStore

    zdir = tmp_path / "zotero"
    zdir.mkdir()
    with ZoteroDB(zdir / "zotero.sqlite", "9") as db:
        db.add_group(4711, "Lab reading group")
        db.add_paper("GPAPER22", "Lymph node atlas of the lab", creators=[("Ann", "Lee", "author")], library_id=2)
        db.add_attachment("GATTACH2", "GPAPER22", library_id=2)
        db.add_annotation(
            "GANNTT22",
            "GATTACH2",
            text="germinal centre boundaries drawn by hand",
            page_index=2,
            page_label="3",
            library_id=2,
        )
        db.add_paper("MYPAPER2", "My own library's paper", creators=[("Bo", "Ng", "author")])
    (zdir / "storage" / "GATTACH2").mkdir(parents=True)
    write_pdf(zdir / "storage" / "GATTACH2" / "paper.pdf", [["one"], ["two"], ["germinal centre page"]])
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "sync", "--zotero-dir", str(zdir)]) == 0
    ConfigStore.for_paths(DataPaths(data)).update({"library": {"desktop_library_id": 2}})
    assert main(["--data-dir", str(data), "sync"]) == 0
    capsys.readouterr()
    assert main(["--data-dir", str(data), "search", "germinal centre boundaries", "--mode", "lexical", "--json"]) == 0
    hits = {h["key"]: h for h in json.loads(capsys.readouterr().out)["hits"]}
    assert "MYPAPER2" not in hits  # one library at a time
    assert hits["GPAPER22"]["zotero_select"] == "zotero://select/groups/4711/items/GPAPER22"
    annotation = hits["GANNTT22"]
    assert annotation["zotero_select"] == "zotero://select/groups/4711/items/GPAPER22"
    assert annotation["open_pdf"] == "zotero://open-pdf/groups/4711/items/GATTACH2?page=3&annotation=GANNTT22"
    html = render_search_results(list(hits.values()), query="germinal centre")
    assert "zotero://open-pdf/groups/4711/items/GATTACH2" in html and "open-pdf/library/" not in html
