"""Whole-document conversion: a note's HTML or a paper record → one ``ConvertedNote``.

Why one record for both: the corpus writes every document the same way (an
OKF bundle: Markdown + manifest), so notes and papers meet here in one shape.
Pure: no I/O, no clock (``converted_at`` is stamped by the corpus).

Bad input never raises for content. Bytes are decoded as UTF-8 with
replacement (and a warning); empty, huge, malformed or image-only notes give
a best-effort result plus warnings. Only something that is not text at all
(None, a number, binary data) raises ``ConversionError``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from zocrates_nb.convert.html_text import (
    note_title,  # bs4/markdownify (convert/html.py) load on the first conversion only
)
from zocrates_nb.convert.pages import PageLines, clean_pages, page_paragraphs
from zocrates_nb.convert.summary import count_words, cut_at_word, extractive_summary
from zocrates_nb.convert.toc import build_toc, heading_text, iter_headings
from zocrates_nb.errors import ConversionError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from zocrates_nb.records import Paper, PdfText

#: bump when the Markdown produced for the same input changes; every bundle then counts as stale
CONVERTER_VERSION = "zocrates-convert/3"
UNTITLED = "Untitled note"


@dataclass(frozen=True)
class ConvertedNote:
    """The converted document. ``source_hash`` is SHA-256 of the source exactly as given."""

    markdown: str
    title: str
    toc: list[dict[str, Any]]
    abstract: str | None
    abstract_source: str | None
    word_count: int
    source_hash: str
    warnings: tuple[str, ...] = field(default=())
    #: a paper's text: "pdf" (per page, from its PDFs), "fulltext" (the source's full text, no pages), None
    text_source: str | None = None
    #: where each PDF page's text sits in ``markdown`` (empty without PDF pages)
    pages: tuple[PageLines, ...] = ()
    #: (attachment key, why) for each PDF at hand that could not be read (its cached text stood in)
    pdf_failures: tuple[tuple[str, str], ...] = ()

    def manifest_fields(self, content_type: str = "text/note") -> dict[str, Any]:
        """The OKF v0.2 manifest fields that conversion alone determines (the corpus adds
        key, parent, collections and ``converted_at``); what ``zocrates-nb convert --json`` prints."""
        return {
            "okf_version": "0.2",
            "content_type": content_type,
            "item_type": "note" if content_type == "text/note" else None,
            "title": self.title,
            "abstract": self.abstract,
            "abstract_source": self.abstract_source,
            "source_hash": self.source_hash,
            "word_count": self.word_count,
            "toc": self.toc,
            "converter_version": CONVERTER_VERSION,
            "warnings": list(self.warnings),
        }


def sha256_text(text: str | bytes) -> str:
    """SHA-256 hex digest of text as UTF-8 (bytes hashed as they are)."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def decode_html(html: str | bytes | bytearray | memoryview) -> tuple[str, list[str]]:
    """Return the note's text and any decoding warnings; raise ConversionError for non-text."""
    if isinstance(html, str):
        from zocrates_nb.textnorm import without_surrogates

        fixed = without_surrogates(html)  # lone surrogates (a JSON "\\ud800") would crash the parser
        return fixed, ([] if fixed is html else ["invalid Unicode (lone surrogates) replaced with U+FFFD"])
    if isinstance(html, (bytearray, memoryview)):
        html = bytes(html)
    if not isinstance(html, bytes):
        raise ConversionError(
            f"A note's HTML must be text, got {type(html).__name__}.",
            "Check the library source: the note body is not a string.",
        )
    if html.startswith((b"\xff\xfe", b"\xfe\xff")):
        return html.decode("utf-16", "replace"), ["the note was UTF-16 encoded; decoded"]
    if b"\x00" in html[:8192]:
        raise ConversionError(
            "The note body is binary data, not HTML text.",
            "Open the note in Zotero and check its content; it was left untouched.",
        )
    try:
        return html.decode("utf-8"), []
    except UnicodeDecodeError as err:
        text = html.decode("utf-8", "replace")
        return text, [
            f"the note is not valid UTF-8 (first bad byte at offset {err.start}); "
            "undecodable bytes were replaced with �"
        ]


def _fallback_title(markdown: str) -> str:
    for _, _, raw in iter_headings(markdown):
        title = heading_text(raw)
        if title:
            return title[:120]
    for line in markdown.split("\n"):
        text = heading_text(line.lstrip("#>-*0123456789.) "))
        if text:
            return text[:120]
    return UNTITLED


def convert_note(html: str | bytes) -> ConvertedNote:
    """A Zotero note's HTML → Markdown, title, TOC, extractive abstract, word count and source hash."""
    source_hash = sha256_text(html) if isinstance(html, (str, bytes)) else None
    text, warnings = decode_html(html)
    if source_hash is None:
        source_hash = sha256_text(text)
    from zocrates_nb.convert.html import html_to_markdown_with_warnings, plain_text_markdown

    try:
        markdown, more = html_to_markdown_with_warnings(text)
    except RecursionError:
        markdown, more = plain_text_markdown(text), ["the note is nested too deeply; converted as plain text"]
    warnings.extend(more)
    title = note_title(text) or _fallback_title(markdown)
    abstract, abstract_source = extractive_summary(markdown)
    return ConvertedNote(
        markdown=markdown,
        title=title,
        toc=build_toc(markdown),
        abstract=abstract,
        abstract_source=abstract_source,
        word_count=count_words(markdown),
        source_hash=source_hash,
        warnings=tuple(warnings),
    )


def paper_source_hash(paper: Paper) -> str:
    """SHA-256 over every paper field that reaches its bundle (staleness for papers)."""
    record = [
        paper.key,
        paper.title,
        paper.item_type,
        list(paper.creators),
        paper.year,
        paper.date,
        paper.doi,
        paper.publication,
        paper.abstract,
        list(paper.collections),
    ]
    digest = hashlib.sha256(json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update((paper.fulltext or "").encode("utf-8", "surrogatepass"))
    for pdf in paper.pdfs:  # a replaced PDF (new size or mtime) makes the paper stale: its pages are read again
        digest.update(b"\x00pdf\x00")
        digest.update(json.dumps([pdf.attachment_key, pdf.size, pdf.mtime_ns]).encode("utf-8"))
        digest.update((pdf.cached_text or "").encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _escape_block_start(paragraph: str) -> str:
    """Plain full text must not turn into Markdown headings, quotes or lists by accident."""
    return "\\" + paragraph if paragraph[:1] in "#>-+*|" else paragraph


def _text_paragraphs(text: str | None) -> list[str]:
    """Plain full text (blank-line separated) → one-line paragraphs."""
    return [p for p in (" ".join(p.split()) for p in (text or "").replace("\r\n", "\n").split("\n\n")) if p]


def _paper_head(paper: Paper) -> list[str]:
    title = " ".join((paper.title or "Untitled paper").split())
    lines = [f"# {title}", ""]
    facts = []
    if paper.creators:
        facts.append("**Authors:** " + "; ".join(paper.creators))
    if paper.year or paper.date:
        facts.append(f"**Year:** {paper.year or paper.date}")
    if paper.publication:
        facts.append(f"**Venue:** {paper.publication}")
    if paper.doi:
        facts.append(f"**DOI:** {paper.doi}")
    if facts:
        lines += [*"  \n".join(facts).split("\n"), ""]
    if paper.abstract and paper.abstract.strip():
        lines += ["## Abstract", "", *paper.abstract.strip().split("\n"), ""]
    return lines


def _paper_markdown(paper: Paper, pdf_texts: Sequence[PdfText] = ()) -> tuple[str, list[PageLines], str]:
    """The paper's Markdown, where each PDF page's paragraphs sit in it, and the plain text it shows
    (the pages' paragraphs, else the full text as given).

    The PDFs' pages come first, in Zotero's order; then, without pages, Zotero's full text of each
    PDF that could not be read and of the attachments with no PDF at hand.
    """
    lines = _paper_head(paper)
    read = {t.attachment_key: t for t in pdf_texts if t.pages and not t.failure}
    unpaged = [pdf.cached_text for pdf in paper.pdfs if pdf.attachment_key not in read] + [paper.fulltext]
    placed: list[PageLines] = []
    body: list[str] = []
    for pdf in paper.pdfs:
        text = read.get(pdf.attachment_key)
        if text is None:
            continue
        for page, page_lines in zip(text.pages, clean_pages([p.text for p in text.pages]), strict=True):
            paragraphs = page_paragraphs(page_lines)
            if not paragraphs:
                continue
            if not body:
                lines += ["## Full text", ""]
            first = len(lines) + 1
            for paragraph in paragraphs:
                lines += [_escape_block_start(paragraph), ""]
                body.append(paragraph)
            placed.append(PageLines(pdf.attachment_key, page.index, page.label, first, len(lines) - 1))
    rest = [p for text in unpaged for p in _text_paragraphs(text)]
    if rest and not body:
        lines += ["## Full text", ""]
    for paragraph in rest:
        lines += [_escape_block_start(paragraph), ""]
    plain = "\n\n".join(body) if body else "\n\n".join(t for t in unpaged if t)
    return "\n".join(lines).rstrip() + "\n", placed, plain


def convert_paper(paper: Paper, pdf_texts: Sequence[PdfText] = ()) -> ConvertedNote:
    """A paper record → Markdown (title, authors, year, venue, DOI, ## Abstract, ## Full text).

    ``pdf_texts``: what reading the paper's PDFs gave (``Paper.pdfs``; the corpus reads them). Their
    pages make the full text, each page's place recorded in ``pages``; a PDF that could not be read
    falls back to its Zotero full-text cache, and the reason is kept in ``pdf_failures``.
    """
    markdown, placed, plain = _paper_markdown(paper, pdf_texts)
    failures = tuple((t.attachment_key, t.failure) for t in pdf_texts if t.failure)
    abstract: str | None
    source: str | None
    if paper.abstract and paper.abstract.strip():
        abstract, source = cut_at_word(" ".join(paper.abstract.split())), "metadata"
    else:  # summarise the full text, not the metadata lines
        abstract, source = extractive_summary(plain)
    warnings: tuple[str, ...] = (
        () if (paper.abstract or paper.fulltext or plain) else ("the paper has no abstract or full text",)
    )
    warnings += tuple(f"PDF {key}: {why}; Zotero's full-text cache was used (no pages)" for key, why in failures)
    return ConvertedNote(
        markdown=markdown,
        title=paper.title or "Untitled paper",
        toc=build_toc(markdown),
        abstract=abstract,
        abstract_source=source,
        word_count=count_words(markdown),
        source_hash=paper_source_hash(paper),
        warnings=warnings,
        text_source="pdf" if placed else ("fulltext" if plain.strip() else None),
        pages=tuple(placed),
        pdf_failures=failures,
    )
