"""What a turn retrieved, as the verifier checks citations against it: one ``Source`` per item.

A source is an item the agents saw this turn (a paper, a note, an annotation, an online
candidate) with every passage of it they read and the pages those passages span. A paper
also owns the passages of its annotations (a highlight is the paper's own words) and is a
source when only its child note or annotation was retrieved (the evidence header names it),
but then without passages or pages of its own: a quote or a page cited from it must be in
what was read. Pure functions; the evidence records come from ``library_agent.hit_evidence``
and the online synthesizer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from zocrates_nb.textnorm import normalize_doi

__all__ = ["Source", "author_year", "normalize_text", "sources_from_evidence", "title_key"]

_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "«": '"', "»": '"', "‘": "'", "’": "'", "‚": "'"})
_DASHES = re.compile(r"[‐‑‒–—―−]")
_ELLIPSIS = re.compile(r"\s*(?:…|\.\s?\.\s?\.|\[\s*(?:…|\.\.\.)\s*\])\s*")
_MARKUP = re.compile(r"[*_`]+|^>\s?", re.MULTILINE)
_SURNAME = r"[^\W\d_][^\W\d_'’\-]*(?:[-'’][^\W\d_]+)*"
_AUTHOR_YEAR = re.compile(
    rf"^(?:(?:van|von|de|der|den|da|di|du|la|le)\s+)*(?P<surname>{_SURNAME})"
    rf"(?:\s+et\s+al\.?|\s+(?:&|and)\s+(?:(?:van|von|de|der|den|da|di|du|la|le)\s+)*{_SURNAME})?"
    r",?\s+(?P<year>(?:1[5-9]|20)\d\d)[a-z]?$",
    re.IGNORECASE,
)


def normalize_text(text: str | None) -> str:
    """Case, quotes, dashes, Markdown emphasis and whitespace folded, so a quote matches its passage."""
    text = unicodedata.normalize("NFKC", text or "").translate(_QUOTES)
    text = _MARKUP.sub("", _DASHES.sub("-", text))
    text = re.sub(r"-\s*\n\s*", "", text)  # a word hyphenated across a line break in a PDF
    return " ".join(text.casefold().split())


def title_key(title: str | None) -> str:
    """Letters and digits only, accents dropped, lower-case: *Title* matches its item's title."""
    plain = unicodedata.normalize("NFKD", title or "").encode("ascii", "ignore").decode()
    return re.sub(r"[^0-9a-z]+", " ", plain.lower()).strip()


def author_year(citation: str | None) -> tuple[str, str] | None:
    """("stahl", "2016") from "Ståhl et al., 2016" (also "A & B, 2016", "A and B 2016"); None otherwise."""
    match = _AUTHOR_YEAR.match((citation or "").strip())
    if not match:
        return None
    return title_key(match.group("surname")).replace(" ", ""), match.group("year")


@dataclass
class Source:
    """One retrieved item: what identifies it and what of it was read."""

    key: str
    kind: str
    title: str = ""
    citation: str = ""
    doi: str | None = None
    passages: list[str] = field(default_factory=list)
    #: (first, last) page spans the passages cover, each page as (label, physical page counted from 1)
    pages: list[tuple[tuple[str, int | None], tuple[str, int | None]]] = field(default_factory=list)

    @property
    def author_year(self) -> tuple[str, str] | None:
        return author_year(self.citation)

    def has_quote(self, quote: str) -> bool:
        """The quoted words occur in one passage, in order (an ellipsis may stand for any words between)."""
        pieces = [normalize_text(p).strip(" .,;:!?'\"") for p in _ELLIPSIS.split(quote)]
        pieces = [p for p in pieces if p]
        if not pieces:
            return False
        return any(_in_order(pieces, normalize_text(passage)) for passage in self.passages)

    def spans_page(self, page: str) -> bool:
        """``page`` ("12", "xii", "12-14") lies within the pages a read passage spans."""
        wanted = [p.strip() for p in re.split(r"\s*-\s*", _DASHES.sub("-", page)) if p.strip()]
        return bool(wanted) and all(any(_within(p, span) for span in self.pages) for p in wanted)


def _in_order(pieces: list[str], passage: str) -> bool:
    at = 0
    for piece in pieces:
        found = passage.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def _within(page: str, span: tuple[tuple[str, int | None], tuple[str, int | None]]) -> bool:
    (first_label, first_n), (last_label, last_n) = span
    if page.casefold() in (first_label.casefold(), last_label.casefold()):
        return True
    if not page.isdigit():
        return False
    number = int(page)
    if first_label.isdigit() and last_label.isdigit() and int(first_label) <= number <= int(last_label):
        return True
    # a PDF without printed labels counts pages from 1, and then its labels are those numbers
    return first_n is not None and last_n is not None and not first_label.isdigit() and first_n <= number <= last_n


def _page_span(item: Mapping) -> tuple[tuple[str, int | None], tuple[str, int | None]] | None:
    facts = item.get("annotation") or {}
    if facts.get("page_label"):
        label = str(facts["page_label"])
        return (label, None), (label, None)
    if item.get("page_start") is None:
        return None
    start, end = int(item["page_start"]), int(item.get("page_end") or item["page_start"])
    first = str(item.get("page_label_start") or start)
    last = str(item.get("page_label_end") or (first if end == start else end))
    return (first, start), (last, end)


def _passages(item: Mapping) -> list[str]:
    facts = item.get("annotation") or {}
    texts = [item.get("text"), facts.get("text"), facts.get("comment"), item.get("abstract")]
    return [str(t) for t in texts if t]


def sources_from_evidence(evidence: Iterable[Mapping], parents: Mapping[str, Mapping] | None = None) -> list[Source]:
    """One ``Source`` per retrieved key (online candidates by DOI or title), passages and pages merged.

    ``parents``: what is known of the parent papers the evidence names (title, citation), so that
    citing the paper of a retrieved note or annotation resolves.
    """
    by_key: dict[str, Source] = {}
    for item in evidence:
        key = item.get("key") or (f"online:{item.get('doi') or title_key(item.get('title'))}")
        source = by_key.get(key)
        if source is None:
            citation = item.get("citation") if item.get("kind") in ("paper", "online") else ""
            source = by_key[key] = Source(
                key, item.get("kind") or "note", item.get("title") or "", citation or "", normalize_doi(item.get("doi"))
            )
        elif item.get("kind") == "paper":  # the paper itself, after its annotation named it
            source.title = source.title or item.get("title") or ""
            source.citation = source.citation or item.get("citation") or ""
            source.doi = source.doi or normalize_doi(item.get("doi"))
        source.passages += [p for p in _passages(item) if p not in source.passages]
        if (span := _page_span(item)) is not None:
            source.pages.append(span)
        parent_key = item.get("parent_key")
        if parent_key:
            parent = by_key.get(parent_key)
            if parent is None:
                known = (parents or {}).get(parent_key) or {}
                title = known.get("title") or item.get("parent_title") or ""
                parent = by_key[parent_key] = Source(parent_key, "paper", title, known.get("citation") or "")
            if item.get("kind") == "annotation":  # a highlight is the paper's own words, on its page
                parent.passages += [p for p in _passages(item) if p not in parent.passages]
                if span is not None:
                    parent.pages.append(span)
    return list(by_key.values())
