"""PDF page texts → paragraphs, page-aware paper Markdown, and the pages each chunk covers (pure functions)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from tests.fakes.pdf_files import page_texts
from zocrates_nb.convert.chunk import chunk_markdown
from zocrates_nb.convert.convert import convert_paper, paper_source_hash
from zocrates_nb.convert.pages import PageLines, clean_pages, page_paragraphs, page_spans, pages_from_manifest
from zocrates_nb.records import PageSpan, Paper, PdfFile, PdfPage, PdfText

ATTACH = "ATTK2345"
#: paper_source_hash(Paper(key="PAPR2345", title="Spatial maps", fulltext="x")) before PDFs were read
PLAIN_HASH = "e7d52fa905fb3cf20d0bd18ad0c01dce00be70b79b927893481eb6938e57c38f"


def _pdf_text(pages: list[list[str]], labels: list[str] | None = None) -> PdfText:
    """What PDFium gives for these paragraphs: printed lines of ~90 characters, CRLF line ends."""
    out = []
    for i, paragraphs in enumerate(pages):
        lines = []
        for paragraph in paragraphs:
            words, line = paragraph.split(), ""
            for word in words:
                if len(line) + len(word) > 88:
                    lines.append(line)
                    line = ""
                line = f"{line} {word}".strip()
            lines.append(line)
        out.append(PdfPage(i, (labels or [])[i] if labels else str(i + 1), "\r\n".join(lines)))
    return PdfText(ATTACH, tuple(out))


def _paper(**kw) -> Paper:
    pdf = PdfFile(ATTACH, "/nowhere/paper.pdf", 1234, 99, cached_text=kw.pop("cached", "Cached text of the PDF."))
    return Paper(key="PAPR2345", title="Spatial maps", abstract="What the paper says.", pdfs=(pdf,), **kw)


def test_soft_hyphens_and_line_breaks_are_joined_into_paragraphs():
    text = (
        "Spatial transcriptomics measures gene expression in its tissue context and the man\ufffe\r\n"
        "agement of the sections matters a great deal for the quality of the measurement here.\r\n"
        "A short closing line.\r\n"
        "\u2022 a bullet item that starts its own paragraph\r\n"
        "state-of-the-\r\nart methods follow."
    )
    (lines,) = clean_pages([text])
    paragraphs = page_paragraphs(lines)
    assert paragraphs[0].startswith("Spatial transcriptomics") and "management of the sections" in paragraphs[0]
    assert paragraphs[0].endswith("A short closing line.")
    assert paragraphs[1].startswith("\u2022 a bullet item")
    assert "state-of-the-art methods follow." in paragraphs[1]


def test_running_heads_and_page_numbers_are_dropped_but_the_text_is_kept():
    words = "cells genes spots tissue maps layers niches borders".split()
    bodies = [
        [f"On this page the {words[(i + n) % 8]} and {words[(i * n) % 8]} speak." for n in range(6)] for i in range(5)
    ]
    pages = ["\n".join([f"Journal of Spatial Biology 12 (2021) {100 + i}", *bodies[i], str(i + 1)]) for i in range(5)]
    assert clean_pages(pages) == bodies
    # two pages are too few to call a line "running": only the bare page numbers go
    assert clean_pages(pages[:2])[0] == [pages[0].split("\n")[0], *bodies[0]]
    # a page with hardly any text is all body, even when its lines recur on every page
    short = [f"Figure {i}: a caption.\nSource: our data." for i in range(4)]
    assert clean_pages(short) == [s.split("\n") for s in short]


def test_convert_paper_places_each_page_and_records_its_lines():
    text = _pdf_text(page_texts(3, 60), ["iv", "1", "2"])
    converted = convert_paper(_paper(), [text])
    lines = converted.markdown.split("\n")
    assert converted.text_source == "pdf" and converted.pdf_failures == ()
    assert [(p.index, p.label) for p in converted.pages] == [(0, "iv"), (1, "1"), (2, "2")]
    for page in converted.pages:
        on_page = "\n".join(lines[page.line_start - 1 : page.line_end])
        assert f"pagemarker{page.index}" in on_page
    assert "Cached text of the PDF." not in converted.markdown  # the PDF's pages replace its cache text
    assert "## Full text" in converted.markdown


def test_an_unreadable_pdf_falls_back_to_its_cached_text_with_the_reason():
    failed = PdfText(ATTACH, failure="the PDF is encrypted (it needs a password)")
    converted = convert_paper(_paper(fulltext="Text of the HTML snapshot."), [failed])
    assert converted.text_source == "fulltext" and converted.pages == ()
    assert "Cached text of the PDF." in converted.markdown and "Text of the HTML snapshot." in converted.markdown
    assert converted.pdf_failures == ((ATTACH, "the PDF is encrypted (it needs a password)"),)
    assert any("encrypted" in w and "no pages" in w for w in converted.warnings)


def test_without_a_pdf_reader_the_paper_keeps_zoteros_text():
    converted = convert_paper(_paper())
    assert converted.text_source == "fulltext" and "Cached text of the PDF." in converted.markdown


def test_a_changed_pdf_changes_the_source_hash_and_a_paper_without_pdfs_hashes_as_before():
    paper = _paper()
    cached = paper.pdfs[0].cached_text
    moved = replace(paper, pdfs=(PdfFile(ATTACH, "/elsewhere/paper.pdf", 1234, 99, cached),))
    touched = replace(paper, pdfs=(PdfFile(ATTACH, "/nowhere/paper.pdf", 1234, 100, cached),))
    assert paper_source_hash(moved) == paper_source_hash(paper)  # where the file lies is not what it says
    assert paper_source_hash(touched) != paper_source_hash(paper)
    # the hash of a paper with no PDF is what it was before PDFs were read: such papers are not re-made
    plain = Paper(key="PAPR2345", title="Spatial maps", fulltext="x")
    assert paper_source_hash(plain) == PLAIN_HASH


def test_page_spans_follow_every_chunk_to_its_pages():
    converted = convert_paper(_paper(), [_pdf_text(page_texts(6, 220), ["i", "ii", "1", "2", "3", "4"])])
    chunks = [c.text for c in chunk_markdown(converted.markdown)]
    spans = page_spans(converted.markdown, converted.pages, chunks)
    assert len(spans) == len(chunks) > 6
    for text, span in zip(chunks, spans, strict=True):
        marks = {int(m) for m in re.findall(r"pagemarker(\d)", text)}
        if span is None:
            assert not marks  # only the title, metadata and abstract are off every page
            continue
        assert span.attachment_key == ATTACH and span.start <= span.end
        assert all(span.start <= m <= span.end for m in marks)
    assert {s.start for s in spans if s} == set(range(6))
    assert spans[0] is None or spans[0].start == 0


def test_page_spans_survive_the_manifest_round_trip():
    converted = convert_paper(_paper(), [_pdf_text(page_texts(2, 60))])
    manifest = {"pages": [p.to_json() for p in converted.pages] + [{"index": "x"}]}
    assert pages_from_manifest(manifest) == list(converted.pages)  # a malformed entry is skipped


def test_a_chunk_that_begins_inside_a_word_is_still_found():
    markdown = "# T\n\n" + " ".join(f"word{i}" for i in range(80)) + "\n"
    pages = [PageLines(ATTACH, 3, "7", 3, 3)]
    (span,) = page_spans(markdown, pages, ["rd40 " + " ".join(f"word{i}" for i in range(41, 70))])
    assert span == PageSpan(ATTACH, 3, 3, "7", "7")


@pytest.mark.parametrize(
    ("start", "end", "labels", "cited"),
    [(4, 4, ("iv", "iv"), "p. iv"), (11, 12, ("12", "13"), "pp. 12–13"), (2, 3, ("S3", "S3"), "p. S3")],
)
def test_page_citations_use_the_labels(start, end, labels, cited):
    assert PageSpan(ATTACH, start, end, *labels).cite() == cited
