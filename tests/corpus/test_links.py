"""Note -> paper links on the demo library's real note HTML and paper records."""

from __future__ import annotations

import json
import re
from pathlib import Path

from zocrates_nb.corpus.links import PaperCatalogue, PaperLink, abstract_name, find_paper_links, plain_text, title_name

DEMO = Path(__file__).resolve().parents[2] / "zocrates_nb" / "library" / "demo"
PAPERS = json.loads((DEMO / "papers.json").read_text(encoding="utf-8"))


def _links(key: str) -> dict[str, str]:
    html = (DEMO / "notes" / f"{key}.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", " ", html)
    return {link.paper_key: link.reason for link in find_paper_links(html, text, PAPERS)}


def _key_of(surname: str, year: str) -> str:
    return next(
        p["key"] for p in PAPERS if p["creators"] and p["creators"][0].startswith(surname) and str(p["year"]) == year
    )


def test_citations_in_a_note_link_to_the_cited_papers():
    links = _links("BSWXFZAT")
    assert links[_key_of("Kleshchevnikov", "2022")] == "citation"
    assert links[_key_of("Biancalani", "2021")] == "citation"
    assert "citation" in links.values() and len(links) >= 5


def test_author_year_in_plain_text_links_without_citation_markup():
    text = "Next reading group: Tangram (Biancalani 2021), presenter Priya."
    links = find_paper_links("<p>" + text + "</p>", text, PAPERS)
    assert PaperLink(_key_of("Biancalani", "2021"), "author-year") in links


def test_doi_and_title_mentions_link_and_strongest_reason_wins():
    paper = next(p for p in PAPERS if p.get("doi"))
    text = f"See doi {paper['doi']} and also “{paper['title']}”."
    assert find_paper_links(text, text, PAPERS) == [PaperLink(paper["key"], "doi")]
    text = f"I keep rereading {paper['title'].upper()} for the design."
    assert find_paper_links(text, text, PAPERS) == [PaperLink(paper["key"], "title")]


def test_a_surname_with_the_wrong_year_or_a_short_common_title_does_not_link():
    other = _key_of("Biancalani", "2021")
    text = "Biancalani 2019 is a different paper; we also discussed deep learning."
    assert other not in {link.paper_key for link in find_paper_links(text, text, PAPERS)}
    assert find_paper_links("", "", PAPERS) == []


def test_a_tool_name_links_the_one_paper_whose_title_or_abstract_gives_it():
    catalogue = PaperCatalogue(PAPERS)
    by_name = {p["key"]: p for p in PAPERS}

    def linked(text: str) -> dict[str, str]:
        return {link.paper_key: link.reason for link in catalogue.links(text, text)}

    harmony = next(k for k, p in by_name.items() if p["title"].endswith("with Harmony"))
    xenium = next(k for k, p in by_name.items() if "Xenium" in (p.get("abstract") or "").split(". ")[0])
    assert linked("We ran Harmony with theta 2.") == {harmony: "name"}  # "... with Harmony" in its title
    assert linked("cell2location won on the pilot.") == {_key_of("Kleshchevnikov", "2022"): "name"}
    assert linked("The Xenium section is our ground truth.") == {xenium: "name"}  # "introduces the Xenium …"
    assert title_name("SPOTlight: seeded NMF regression") == "SPOTlight"
    assert abstract_name("The authors present a method") is None
    assert abstract_name("Single-cell RNA-seq of immune cells") is None
    # an everyday word, a name two papers give (Seurat v3 and v4 abstracts) and a name shorter than
    # a tool's link nothing
    assert linked("In harmony with the plan, we used Seurat and RNA.") == {}


def test_a_child_note_does_not_link_its_own_parent_and_plain_text_drops_markup():
    parent = _key_of("Biancalani", "2021")
    catalogue = PaperCatalogue(PAPERS)
    html = "<p>Tangram (Biancalani 2021) on &amp; off</p>"
    assert plain_text(html).split() == ["Tangram", "(Biancalani", "2021)", "on", "&", "off"]
    assert catalogue.links(html, plain_text(html), exclude=[parent]) == []
    assert catalogue.links(html, plain_text(html)) == [PaperLink(parent, "author-year")]


def test_zotero_related_items_link_and_a_citation_still_outranks_them():
    catalogue = PaperCatalogue(PAPERS)
    tangram, cell2location = _key_of("Biancalani", "2021"), _key_of("Kleshchevnikov", "2022")
    cited = (
        f'<span data-citation="%7B%22uris%22%3A%5B%22http%3A%2F%2Fzotero.org%2Fusers%2F1%2Fitems%2F{tangram}%22%5D%7D">'
    )
    links = catalogue.links(cited, "", related=[tangram, cell2location, "NOTAPAPR"])
    assert links == [PaperLink(tangram, "citation"), PaperLink(cell2location, "related")]
