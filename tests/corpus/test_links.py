"""Note -> paper links on the demo library's real note HTML and paper records."""

from __future__ import annotations

import json
import re
from pathlib import Path

from zocrates_nb.corpus.links import PaperLink, find_paper_links

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
