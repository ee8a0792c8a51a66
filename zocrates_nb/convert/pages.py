"""A PDF's page texts → paragraphs, and which pages each chunk of a paper covers — pure functions.

Why paragraphs: PDFium gives a page as its printed lines, so a paragraph is cut at every line end
and words hyphenated at a line end arrive in two pieces. Lines are joined back into paragraphs
(a short line that ends a sentence ends its paragraph; a blank line or a bullet starts one), the
soft hyphens PDFium marks (U+FFFE, U+0002) are removed with the line break they sit on, and a
running head or foot — the same line at the top or bottom of most pages, page numbers aside — is
dropped, so a chunk is prose and not "Journal of X 12 (2021)" a dozen times over.

Why spans by words: the chunkers (``convert.chunk``, ``convert.window``) cut the Markdown into
passages and keep only their text. Each passage is a run of the document's words in order, so it
is found again by its first words, searching on from where the previous one started; the words'
lines say their pages (``PageLines``, recorded when the Markdown was written). This keeps the
chunkers unaware of pages, and the same spans come back when an index is rebuilt from bundles.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zocrates_nb.records import PageSpan

__all__ = ["PageLines", "clean_pages", "page_paragraphs", "page_spans", "pages_from_manifest"]

_SOFT_HYPHENS = ("\ufffe", "\x02", "\u00ad")
_SENTENCE_END = re.compile(r"[.!?:;\"”’)\]]$")
_BULLET = re.compile(r"^(?:[•▪◦●∙·\-–—*]|\(?\d{1,2}[.)]|\[\d{1,3}\])\s")
_PAGE_NUMBER = re.compile(r"^(?:page\s+)?(?:\d{1,4}|[ivxlcdm]{1,7})(?:\s*(?:/|of)\s*\d{1,4})?$", re.I)
_DIGITS = re.compile(r"\d+")
#: a paragraph ends at a sentence end on a line shorter than this share of the page's usual line
_SHORT_LINE = 0.85
#: words compared to find a chunk again: no run this long recurs in real prose
_PROBE_WORDS = 24
#: how many lines at each end of a page may be a running head or foot
_EDGE_LINES = 2


@dataclass(frozen=True)
class PageLines:
    """Where one PDF page's text sits in a paper's Markdown: lines ``line_start``..``line_end`` (1-based)."""

    attachment_key: str
    index: int
    label: str
    line_start: int
    line_end: int

    def to_json(self) -> dict[str, Any]:
        return {
            "attachment_key": self.attachment_key,
            "index": self.index,
            "label": self.label,
            "line_start": self.line_start,
            "line_end": self.line_end,
        }


def pages_from_manifest(manifest: Mapping[str, Any]) -> list[PageLines]:
    """The manifest's ``pages`` list back as ``PageLines`` (malformed entries skipped: a hand-edited bundle)."""
    out = []
    for entry in manifest.get("pages") or ():
        try:
            out.append(
                PageLines(
                    str(entry["attachment_key"]),
                    int(entry["index"]),
                    str(entry["label"]),
                    int(entry["line_start"]),
                    int(entry["line_end"]),
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return out


def _lines(text: str) -> list[str]:
    """The page's lines with soft hyphens joined back and whitespace tidied (empty lines kept)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    for mark in _SOFT_HYPHENS[:2]:
        text = re.sub(re.escape(mark) + r"[ \t]*\n[ \t]*", "", text)
    for mark in _SOFT_HYPHENS:
        text = text.replace(mark, "")
    return [" ".join(line.split()) for line in text.split("\n")]


def _running_key(line: str) -> str:
    return _DIGITS.sub("#", line.casefold())


def _edges(lines: Sequence[str]) -> set[int]:
    """The positions of a page's first and last lines with text, when the page has a body between them."""
    filled = [i for i, line in enumerate(lines) if line]
    if len(filled) <= 2 * _EDGE_LINES:
        return set()  # a page this short is all body: nothing on it can be told apart as a running head
    return set(filled[:_EDGE_LINES] + filled[-_EDGE_LINES:])


def clean_pages(texts: Sequence[str]) -> list[list[str]]:
    """Each page's lines, without the running heads and feet and the bare page numbers at its edges.

    A line counts as running when (digits aside) it opens or closes at least half of the pages of a
    document of three pages or more; a bare page number at either edge always goes.
    """
    pages = [[line for line in _lines(text)] for text in texts]
    edges: Counter[str] = Counter()
    for lines in pages:
        edges.update({_running_key(lines[i]) for i in _edges(lines)})
    running = {key for key, n in edges.items() if len(pages) >= 3 and n * 2 >= len(pages)}
    cleaned = []
    for lines in pages:
        edge = _edges(lines)
        filled = [i for i, line in enumerate(lines) if line]
        ends = {filled[0], filled[-1]} if filled else set()
        cleaned.append(
            [
                line
                for i, line in enumerate(lines)
                if not ((i in edge and _running_key(line) in running) or (i in ends and _PAGE_NUMBER.match(line)))
            ]
        )
    return cleaned


def page_paragraphs(lines: Sequence[str]) -> list[str]:
    """One page's lines (``clean_pages``) joined into paragraphs."""
    lengths = sorted(len(line) for line in lines if len(line) >= 20)
    usual = lengths[int(len(lengths) * 0.8)] if lengths else 0
    paragraphs: list[str] = []
    current: list[str] = []

    def close() -> None:
        if current:
            paragraphs.append(" ".join(current))
            current.clear()

    for line in lines:
        if not line:
            close()
            continue
        if _BULLET.match(line):
            close()
        if current and current[-1].endswith("-") and line[:1].islower():
            current[-1] += line  # "state-of-the-" + "art": a hyphen that stays, with no space
        else:
            current.append(line)
        if usual and len(line) < _SHORT_LINE * usual and _SENTENCE_END.search(line):
            close()
    close()
    return paragraphs


def _locate(words: list[str], at: Mapping[str, list[int]], chunk: list[str], cursor: int) -> int | None:
    """Where ``chunk`` starts among ``words``: its first words matched, searching on from ``cursor``
    (then from the start). The second word is tried too: a chunk cut inside a long word starts
    with a piece of it."""
    for floor in (cursor, 0):
        for skip in (0, 1):
            probe = chunk[skip : skip + _PROBE_WORDS]
            candidates = at.get(probe[0], []) if probe else []
            for q in candidates[bisect.bisect_left(candidates, floor + skip) :]:
                if words[q : q + len(probe)] == probe:
                    return q - skip
    return None


def page_spans(markdown: str, pages: Sequence[PageLines], chunks: Sequence[str]) -> list[PageSpan | None]:
    """For each chunk text (in order), the pages it covers: the first and last page of its words that
    lie on a page, in the PDF of its first such word; None for a chunk off every page (the title,
    the metadata, the abstract, text from Zotero's full-text cache)."""
    if not pages:
        return [None] * len(chunks)
    page_of_line: dict[int, PageLines] = {}
    for page in pages:
        for number in range(page.line_start, page.line_end + 1):
            page_of_line[number] = page
    words: list[str] = []
    owners: list[PageLines | None] = []
    for number, line in enumerate(markdown.split("\n"), start=1):
        owner = page_of_line.get(number)
        for word in line.split():
            words.append(word)
            owners.append(owner)
    at: dict[str, list[int]] = defaultdict(list)
    for i, word in enumerate(words):
        at[word].append(i)
    spans: list[PageSpan | None] = []
    cursor = 0
    for text in chunks:
        chunk = text.split()
        start = _locate(words, at, chunk, cursor)
        if start is None:
            spans.append(None)
            continue
        cursor = start + 1
        covered = [p for p in owners[start : start + len(chunk)] if p is not None]
        if not covered:
            spans.append(None)
            continue
        first = covered[0]
        last = [p for p in covered if p.attachment_key == first.attachment_key][-1]
        spans.append(PageSpan(first.attachment_key, first.index, last.index, first.label, last.label))
    return spans
