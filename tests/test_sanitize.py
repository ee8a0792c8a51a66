"""sanitize_html (display) and sanitize_note_html (notes we write): allowlists, nothing active survives."""

from __future__ import annotations

import pytest

from zocrates_nb.sanitize import escape_text, sanitize_html, sanitize_note_html

ATTACKS = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    '<a href="javascript:alert(1)">x</a>',
    '<a href="JaVaScRiPt:alert(1)">x</a>',
    '<a href="data:text/html;base64,PHNjcmlwdD4=">x</a>',
    '<svg onload="alert(1)"><circle/></svg>',
    '<iframe src="https://evil.example"></iframe>',
    '<p style="background:url(javascript:alert(1))">styled</p>',
    '<div onclick="alert(1)" onmouseover="alert(2)">hover</div>',
    "<style>body{display:none}</style>",
    '<object data="x.swf"></object><embed src="x.swf">',
    '<form action="https://evil.example"><input name="q"></form>',
    "<math><mtext><script>alert(1)</script></mtext></math>",
]


@pytest.mark.parametrize("attack", ATTACKS)
@pytest.mark.parametrize("sanitize", [sanitize_html, sanitize_note_html])
def test_nothing_active_survives(sanitize, attack):
    out = sanitize(attack).lower()
    for bad in (
        "<script",
        "onerror",
        "onload",
        "onclick",
        "onmouseover",
        "javascript:",
        "data:text",
        "<iframe",
        "<svg",
        "<style",
        "style=",
        "<object",
        "<embed",
        "<form",
        "<input",
        "alert(1)",
    ):
        assert bad not in out, (attack, out)


def test_display_keeps_structure_and_adds_rel():
    html = (
        '<h2 id="x">Title</h2><p>Text <strong>bold</strong> <a href="https://doi.org/10.1/x">doi</a></p>'
        "<table><tr><td colspan=2>c</td></tr></table><ul><li>i</li></ul>"
    )
    out = sanitize_html(html)
    assert "<h2>Title</h2>" in out and "<strong>bold</strong>" in out
    assert '<a href="https://doi.org/10.1/x" rel="noopener noreferrer">doi</a>' in out
    assert '<td colspan="2">c</td>' in out and "<li>i</li>" in out


def test_remote_and_data_images_become_alt_text_local_images_stay():
    out = sanitize_html(
        '<img src="https://tracker.example/p.gif" alt="chart">'
        '<img src="//cdn.example/x.png">'
        '<img src="data:image/png;base64,AAAA" alt="inline">'
        '<img src="files/figure.png" alt="local">'
    )
    assert "tracker.example" not in out and "cdn.example" not in out and "base64" not in out
    assert "[image: chart]" in out and "[image]" in out and "[image: inline]" in out
    assert '<img src="files/figure.png" alt="local">' in out


def test_note_sanitizer_keeps_zotero_data_attributes_and_math_classes():
    html = (
        '<div data-schema-version="9"><p><span class="citation" data-citation="%7B%7D">(A, 2020)</span> '
        '<span class="math">$x$</span></p><pre class="math">$$y$$</pre>'
        '<p><img data-attachment-key="ABCD2345" alt="fig"></p>'
        '<p><a href="https://x.example" rel="opener">l</a></p></div>'
    )
    out = sanitize_note_html(html)
    assert '<div data-schema-version="9">' in out
    assert 'data-citation="%7B%7D"' in out and '<span class="math">$x$</span>' in out
    assert '<pre class="math">$$y$$</pre>' in out
    assert 'data-attachment-key="ABCD2345"' in out  # Zotero deletes attachments whose <img> vanishes
    assert 'rel="noopener noreferrer nofollow"' in out


def test_unknown_tags_are_unwrapped_text_kept():
    assert sanitize_html("<blink>hello</blink> <custom-el>world</custom-el>") == "hello world"


def test_escape_text():
    assert escape_text('<b>"x"</b> & y') == "&lt;b&gt;&quot;x&quot;&lt;/b&gt; &amp; y"
    assert sanitize_html("") == "" and sanitize_note_html("") == ""
