"""Note -> paper links, found deterministically from what a note already says (issue 24, item 1).

A note is about papers in more ways than being their child: it cites them with Zotero's
citation markup (``data-citation`` item URIs), names them as "Author et al., Year", gives their
DOI, or writes out their title. These links are the bridge a paraphrased question crosses: the
paper's words match the question, and the note that links to the paper can inherit that match.
Everything here is pure (text and paper records in, links out), so sync can compute the links
at no cost worth measuring and tests can check them without an index. No LLM, no guessing: a
link needs an exact key, DOI, surname-and-year or full title.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

__all__ = ["PaperLink", "find_paper_links"]

#: a Zotero item URI inside data-citation JSON: .../items/ABCD2345
_ITEM_URI = re.compile(r"/items/([A-Z0-9]{8})\b")
_DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>]+", re.IGNORECASE)
#: "Kleshchevnikov et al., 2022", "Luecken and Theis, 2019", "Ståhl 2016", "Biancalani 2021"
_AUTHOR_YEAR = re.compile(
    r"([^\W\d_][\w'\-]+)(?:\s+et al\.?|\s+(?:and|&)\s+[^\W\d_][\w'\-]+)?,?\s+\(?((?:19|20)\d\d)\b"
)
#: shorter titles are too often ordinary phrases to count as a mention
_MIN_TITLE_WORDS = 4

#: the reasons, strongest first (an explicit citation outranks a name found in the text)
REASONS = ("citation", "doi", "author-year", "title")


@dataclass(frozen=True)
class PaperLink:
    """One note -> paper link and why it exists (shown by ``explain``)."""

    paper_key: str
    reason: str


def _fold(text: str) -> str:
    """Lower case without accents, so "Ståhl" in a note matches "Stahl" in metadata and back."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def _surname(creator: str) -> str:
    """Zotero's "Last, First" (or a single-field name) -> folded last name."""
    return _fold(creator.split(",", 1)[0].strip().split()[-1]) if creator.strip() else ""


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", _fold(text)))


def find_paper_links(html: str, text: str, papers: Iterable[Mapping]) -> list[PaperLink]:
    """Links from one note (its raw HTML and its plain text) to the known ``papers``.

    ``papers`` are records with ``key``, ``title``, ``doi``, ``creators`` ("Last, First") and
    ``year``. Each paper is linked once, with its strongest reason; the order is stable (reason,
    then key) so a re-sync stores the same rows.
    """
    catalogue = [p for p in papers if p.get("key")]
    cited = set(_ITEM_URI.findall(unquote(html)))  # data-citation JSON is URL-encoded in note HTML
    dois = {d.rstrip(".,;)").lower() for d in _DOI.findall(html + " " + text)}
    named = {(_fold(name), year) for name, year in _AUTHOR_YEAR.findall(text)}
    body = f" {_words(text)} "
    found: dict[str, str] = {}
    for paper in catalogue:
        key = str(paper["key"])
        first = _surname(str((paper.get("creators") or [""])[0]))
        title = _words(str(paper.get("title") or ""))
        if key in cited:
            found[key] = "citation"
        elif paper.get("doi") and str(paper["doi"]).lower() in dois:
            found[key] = "doi"
        elif first and (first, str(paper.get("year") or "")) in named:
            found[key] = "author-year"
        elif len(title.split()) >= _MIN_TITLE_WORDS and f" {title} " in body:
            found[key] = "title"
    return sorted(
        (PaperLink(k, r) for k, r in found.items()), key=lambda link: (REASONS.index(link.reason), link.paper_key)
    )
