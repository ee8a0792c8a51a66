"""Bad input never crashes conversion: best effort + warnings; ConversionError only for non-text."""

from __future__ import annotations

import hashlib
import time

import pytest

from zocrates_nb.convert.convert import UNTITLED, convert_note
from zocrates_nb.convert.html import LARGE_NOTE_CHARS
from zocrates_nb.errors import ConversionError, ZocratesError


@pytest.mark.parametrize("html", ["", "   \n\t  ", '<div data-schema-version="9"></div>', "<p></p><p> </p>"])
def test_empty_and_whitespace_notes(html):
    note = convert_note(html)
    assert note.markdown == "" and note.title == UNTITLED and note.word_count == 0
    assert note.abstract is None and note.toc == []
    assert note.warnings  # "the note is empty" / "has no text"


def test_unclosed_and_malformed_html_keeps_the_text():
    html = (
        '<div data-schema-version="9"><h1>Unclosed <b>heading<p>para one <i>italic<p>para two'
        "<table><tr><td>cell<li>stray item</ul></span></div></div><p>after"
    )
    note = convert_note(html)
    for text in ("heading", "para one", "italic", "para two", "cell", "stray item", "after"):
        assert text in note.markdown
    assert note.title.startswith("Unclosed")


def test_non_utf8_bytes_are_decoded_with_replacement_and_a_warning():
    raw = "<p>Résumé of the café ".encode("latin-1") + b"\xff\xfe bytes</p>"
    note = convert_note(raw)
    assert "R\ufffdsum\ufffd" in note.markdown and "bytes" in note.markdown
    assert any("UTF-8" in w for w in note.warnings)
    assert note.source_hash == hashlib.sha256(raw).hexdigest()


def test_valid_utf8_bytes_convert_silently():
    note = convert_note("<p>Ståhl</p>".encode())
    assert note.markdown == "Ståhl\n" and note.warnings == ()


def test_note_of_only_images():
    note = convert_note(
        '<div data-schema-version="9"><p><img data-attachment-key="ABCD2345"></p>'
        '<p><img alt="figure 2" src="x.png"></p></div>'
    )
    assert note.markdown == "[image]\n\n[image: figure 2]\n"
    assert any("only images" in w for w in note.warnings)


def test_note_with_script_only():
    note = convert_note("<script>document.cookie</script><style>*{}</style>")
    assert "cookie" not in note.markdown and note.markdown == ""
    assert any("<script>" in w for w in note.warnings)


def test_ten_megabyte_note_converts_quickly_as_plain_paragraphs():
    para = "<p>Spatial transcriptomics <b>maps</b> gene expression in tissue sections.</p>\n"
    html = '<div data-schema-version="9"><h1>Huge</h1>' + para * (10_000_000 // len(para)) + "</div>"
    assert len(html) > max(LARGE_NOTE_CHARS, 9_900_000)
    started = time.perf_counter()
    note = convert_note(html)
    assert time.perf_counter() - started < 60  # a generous bound; the benchmark measures speed
    assert note.title == "Huge"
    assert note.markdown.count("Spatial transcriptomics maps gene expression") == 10_000_000 // len(para)
    assert any("very large" in w for w in note.warnings)


def test_deeply_nested_html_does_not_crash():
    html = "<div>" * 3000 + "<p>deep text</p>" + "</div>" * 3000
    note = convert_note(html)
    assert "deep text" in note.markdown


@pytest.mark.parametrize("bad", [None, 42, 3.5, {"html": "<p>x</p>"}, ["<p>"]])
def test_non_text_raises_conversion_error_with_hint(bad):
    with pytest.raises(ConversionError) as info:
        convert_note(bad)
    assert isinstance(info.value, ZocratesError) and info.value.hint


def test_binary_bytes_raise_conversion_error():
    with pytest.raises(ConversionError):
        convert_note(b"%PDF-1.7\x00\x00\x01binary")
