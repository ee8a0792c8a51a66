"""Markdown → Zotero note HTML (Save as Note), and the round trip back to Markdown."""

from __future__ import annotations

import re

from zocrates_nb.convert.convert import convert_note
from zocrates_nb.convert.note_html import render_note_html
from zocrates_nb.convert.summary import block_plain_text, iter_blocks

BODY = """Tumour-infiltrating T cells are excluded from the stroma in **cold** tumours [1].

## Evidence

- Jerby-Arnon et al. found an exclusion *program*
  - nested detail with `code_span`
- Second point

| Method | Resolution |
| --- | --- |
| Visium | 55 µm |
| Xenium | subcellular |

The score is $s_i = \\sum_j w_j x_{ij}$ per cell, and prices like $5 and $10 stay text.

$$
\\hat{y} = X\\beta
$$

```
score = adata.obs["exclusion"]
```

> a quoted sentence
"""


def plain(markdown: str) -> list[str]:
    """Block texts without markup; display math compared without the line breaks inside $$…$$."""
    return [
        re.sub(r"\$\$\s*(.*?)\s*\$\$", r"$$\1$$", block_plain_text(kind, text))
        for kind, text in iter_blocks(markdown)
        if kind != "heading"
    ]


def test_render_has_zotero_wrapper_title_and_sources():
    html = render_note_html("T cell exclusion", BODY, ["Jerby-Arnon et al., 2018", "Sade-Feldman et al., 2018"])
    assert html.startswith('<div data-schema-version="9"><h1>T cell exclusion</h1>')
    assert html.endswith("</div>")
    assert (
        "<h2>Sources</h2>\n<ul>\n<li>Jerby-Arnon et al., 2018</li>\n<li>Sade-Feldman et al., 2018</li>\n</ul>" in html
    )
    assert '<span class="math">$s_i = \\sum_j w_j x_{ij}$</span>' in html
    assert '<pre class="math">$$\\hat{y} = X\\beta$$</pre>' in html
    assert "<table>" in html and "<code>code_span</code>" in html
    assert "$5 and $10" in html  # prices are not math


def test_round_trip_keeps_title_and_body_text():
    title = "T cell exclusion: what the single-cell papers say"
    html = render_note_html(title, BODY, ["Jerby-Arnon et al., 2018"])
    back = convert_note(html)
    assert back.title == title
    assert back.markdown.startswith(f"# {title}\n\n")
    body_back = back.markdown.split("\n", 2)[2].split("## Sources")[0]
    assert plain(body_back) == plain(BODY)
    assert "- Jerby-Arnon et al., 2018" in back.markdown
    assert "$s_i = \\sum_j w_j x_{ij}$" in back.markdown and "$$\\hat{y} = X\\beta$$" in back.markdown


def test_leading_title_heading_is_not_repeated():
    html = render_note_html("Plan", "# Plan\n\nDo it.\n")
    assert html.count("<h1>") == 1 and "<p>Do it.</p>" in html


def test_raw_html_and_scripts_in_markdown_are_neutralised():
    html = render_note_html(
        "<img src=x onerror=alert(1)>",
        "<script>alert('x')</script>\n\n[link](javascript:alert(1)) ![t](https://track.example/p.gif)",
    )
    assert "<script" not in html and not re.search(r"<[^>]*onerror", html)
    assert 'href="javascript' not in html and "&lt;script&gt;" in html  # shown as text, never run
    assert "track.example" not in html and "[image: t]" in html
    assert re.search(r"<h1>&lt;img src=x onerror=alert\(1\)&gt;</h1>", html)
    back = convert_note(html)
    assert back.title == "<img src=x onerror=alert(1)>"


def test_empty_body_and_no_sources():
    html = render_note_html("Only a title", "")
    assert html == '<div data-schema-version="9"><h1>Only a title</h1>\n</div>'
    assert convert_note(html).markdown == "# Only a title\n"
