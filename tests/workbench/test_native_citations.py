"""Save as Note writes live Zotero citations: each verified "(Author, Year, p. N)" of a library paper becomes
``span.citation[data-citation]`` with the item's URI and page, the wrapper lists the items' CSL-JSON in
``data-citation-items``, no key shows in the visible text, and our own converter reads the note back with the
same citations. Run on the demo library through the real stack, with Zotero's library URIs checked on the
desktop and Web API sources."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from tests.fakes.agent_stack import PAPER_KEY, PAPER_TITLE, Stack, assert_key_free
from tests.fakes.openai_server import FakeOpenAI, reply
from tests.fakes.scripted_model import ScriptedModel, role_of
from tests.fakes.zotero_sqlite import ZoteroDB
from zocrates_nb.agents.citecheck import verify
from zocrates_nb.convert.citation import decode_json_attr
from zocrates_nb.export.zotero_note import CitedItem, NoteCitations, encode_attr
from zocrates_nb.library.desktop.snapshot import ZoteroDesktopLibrary
from zocrates_nb.library.item_uris import DEMO_LIBRARY_URI, library_uri
from zocrates_nb.library.web.source import ZoteroWebLibrary
from zocrates_nb.sanitize import NOTE_TAGS

HIGHLIGHT = "Each gene's count at a pixel is modelled as Poisson"  # a demo annotation on Cable et al., p. 518
QUESTION = "RCTD Poisson pixel UMIs mixture of cell type mean profiles"  # found lexically and hybrid
REAL_DB = Path(__file__).resolve().parents[3] / "shared" / "data" / "zotero" / "zotero9-profile.sqlite"


class CitingModel(ScriptedModel):
    """Searches like ScriptedModel; answers with a verified page citation, a plain one and a fabricated one."""

    def __call__(self, body: dict) -> dict:
        if role_of(body) != "library_synthesizer":
            return super().__call__(body)
        self.roles.append("library_synthesizer")
        return reply(
            f"Your highlight says “{HIGHLIGHT}” (Cable et al., 2022, p. 518). RCTD is described in "
            f"*{PAPER_TITLE}* (Cable et al., 2022). Others disagree (Doe et al., 2020)."
        )


@pytest.fixture
def saved(demo_workbench):
    with FakeOpenAI(responder=CitingModel()) as server:
        answer = Stack(demo_workbench, server).coordinator.ask(QUESTION)
    record = demo_workbench.save_answer(answer)
    html = demo_workbench.source.get_note(record.key).html
    return answer, record, html


def test_verified_citations_become_zotero_citations_with_uri_and_page(saved, demo_workbench):
    answer, record, html = saved
    assert any(e.get("kind") == "annotation" and HIGHLIGHT in (e["annotation"]["text"]) for e in answer.evidence)
    soup = BeautifulSoup(html, "html.parser")
    wrapper = soup.find("div")
    assert list(wrapper.attrs) == ["data-citation-items", "data-schema-version"]  # sorted, as the editor writes
    uri = f"{DEMO_LIBRARY_URI}/items/{PAPER_KEY}"
    (item,) = decode_json_attr(wrapper["data-citation-items"])
    assert item["uris"] == [uri] and item["itemData"]["title"] == PAPER_TITLE and item["itemData"]["id"] == uri
    assert item["itemData"]["author"][0]["family"] == "Cable" and item["itemData"]["type"] == "article-journal"
    spans = soup.select("span.citation")
    cited = [decode_json_attr(span["data-citation"]) for span in spans]
    assert cited == [
        {"citationItems": [{"uris": [uri], "locator": "518"}], "properties": {}},
        {"citationItems": [{"uris": [uri]}], "properties": {}},
    ]
    assert [span.get_text() for span in spans] == ["(Cable et al., 2022, p. 518)", "(Cable et al., 2022)"]
    shown = [s.get_text() for s in soup.select("span.citation-item")]
    assert shown == ["Cable et al., 2022, p. 518", "Cable et al., 2022"]
    # the quoted highlight is Zotero's highlight of that annotation, on its PDF and page
    (highlight,) = soup.select("span.highlight")
    annotation = decode_json_attr(highlight["data-annotation"])
    assert highlight.get_text() == f"“{HIGHLIGHT}”" and annotation["annotationKey"] == "RA7HQ2KM"
    assert annotation["attachmentURI"] == f"{DEMO_LIBRARY_URI}/items/RCTDPDF2" and annotation["pageLabel"] == "518"
    assert annotation["citationItem"] == {"uris": [uri], "locator": "518"} and annotation["color"] == "#ffd400"
    # the fabricated one stays text, marked
    assert "(Doe et al., 2020) ⚠️" in soup.get_text() and "Doe" not in "".join(map(str, spans))
    # only the note editor's elements, and no key in what a reader sees
    assert {tag.name for tag in soup.find_all(True)} <= NOTE_TAGS
    assert_key_free(soup.get_text(), demo_workbench)
    assert PAPER_KEY not in re.sub(r'data-(?:citation|citation-items|annotation)="[^"]*"', "", html)


def test_the_saved_note_converts_back_to_the_same_citations(saved, demo_workbench):
    answer, record, _ = saved
    markdown = demo_workbench.corpus.read_document(record.key)
    assert f"“{HIGHLIGHT}” (Cable et al., 2022, p. 518)" in markdown and "(Cable et al., 2022)" in markdown
    assert "\n> " not in markdown  # a highlight quoted in a sentence stays in it
    parents = {PAPER_KEY: {"title": PAPER_TITLE, "citation": "Cable et al., 2022"}}

    def citations(text: str) -> list[tuple]:
        return [(c.kind, c.key, c.page, c.reason) for c in verify(text, answer.evidence, parents).checks]

    assert citations(markdown.split("\n", 1)[1]) == citations(answer.text)


def test_a_session_note_cites_every_turn(demo_workbench):
    with FakeOpenAI(responder=CitingModel()) as server:
        stack = Stack(demo_workbench, server)
        session = stack.coordinator.new_session()
        stack.coordinator.ask(QUESTION, session=session)
        stack.coordinator.ask(QUESTION, session=session)
    html = demo_workbench.source.get_note(demo_workbench.save_session(session).key).html
    assert html.count('class="citation"') == 4 and html.count("data-citation-items") == 1


def test_hold_and_fill_keep_other_text_and_encode_like_the_note_editor():
    citations = NoteCitations()
    item = CitedItem("http://zotero.org/groups/42/items/ABCD2345", "Ma & Zhou, 2022", {"title": "CARD <x>"}, "3")
    held = citations.hold("See (Ma & Zhou, 2022) and (Ma & Zhou, 2022).", [((4, 21), [item])])
    assert held.startswith("See \ue0200\ue021 and (Ma & Zhou, 2022)")
    html = citations.fill('<div data-schema-version="9"><p>' + held + "</p>\n</div>")
    assert html.startswith('<div data-citation-items="%5B%7B%22uris%22') and 'data-schema-version="9">' in html
    assert '<span class="citation-item">Ma &amp; Zhou, 2022</span>' in html
    assert encode_attr({"a": "é (x)"}) == "%7B%22a%22%3A%22%C3%A9%20(x)%22%7D"  # encodeURIComponent's set
    assert NoteCitations().fill("<div>x</div>") == "<div>x</div>"


def test_library_uris_follow_zoteros_uri_scheme(tmp_path):
    group = ZoteroWebLibrary(42, "group", api_key="k" * 24, cache_path=tmp_path / "g.sqlite")
    user = ZoteroWebLibrary(475425, "user", api_key="k" * 24, cache_path=tmp_path / "u.sqlite")
    assert library_uri(group) == "http://zotero.org/groups/42"
    assert library_uri(user) == "http://zotero.org/users/475425"
    zdir = tmp_path / "zotero"
    zdir.mkdir()
    with ZoteroDB(zdir / "zotero.sqlite", "9") as db:
        db.set_setting("account", "localUserKey", "6z7M0kXV")
    assert library_uri(ZoteroDesktopLibrary(zotero_dir=zdir)) == "http://zotero.org/users/local/6z7M0kXV"
    with ZoteroDB(tmp_path / "synced.sqlite", "9") as db:
        db.set_setting("account", "userID", 8230813)
        db.conn.execute("INSERT INTO groups VALUES (99, 2, 'Lab', '', 1)")
    assert library_uri(ZoteroDesktopLibrary(tmp_path / "synced.sqlite")) == "http://zotero.org/users/8230813"
    assert library_uri(ZoteroDesktopLibrary(tmp_path / "synced.sqlite", library_id=2)) == "http://zotero.org/groups/99"


@pytest.mark.skipif(not REAL_DB.exists(), reason="the real Zotero 9 database is not on this machine")
def test_the_real_zotero_9_database_gives_its_accounts_uri():
    assert library_uri(ZoteroDesktopLibrary(REAL_DB)) == "http://zotero.org/users/8230813"


def test_the_account_is_read_from_a_copy_while_zotero_holds_its_lock(tmp_path):
    """Zotero keeps zotero.sqlite under an exclusive lock while it runs: the settings come from a copy."""
    import sqlite3

    with ZoteroDB(tmp_path / "zotero.sqlite", "9") as db:
        db.set_setting("account", "userID", 475425)
    zotero = sqlite3.connect(tmp_path / "zotero.sqlite")
    zotero.execute("PRAGMA locking_mode = EXCLUSIVE")
    zotero.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError):
            sqlite3.connect(f"{(tmp_path / 'zotero.sqlite').as_uri()}?mode=ro", uri=True).execute(
                "SELECT * FROM settings"
            )
        assert library_uri(ZoteroDesktopLibrary(tmp_path / "zotero.sqlite")) == "http://zotero.org/users/475425"
    finally:
        zotero.close()
