"""Zotero note HTML → Markdown: every construct the note-editor writes (HTML written for these tests)."""

from __future__ import annotations

import hashlib
import json
from urllib.parse import quote

import pytest

from zocrates_nb.convert.chunk import chunk_markdown, estimate_tokens
from zocrates_nb.convert.convert import CONVERTER_VERSION, ConvertedNote, convert_note, convert_paper
from zocrates_nb.convert.html import format_citation, note_html_to_markdown, note_title
from zocrates_nb.convert.summary import count_words, extractive_summary
from zocrates_nb.convert.toc import build_toc
from zocrates_nb.library.base import Paper

USER = "http://zotero.org/users/12345/items"


def enc(obj) -> str:
    """encodeURIComponent(JSON.stringify(obj)) as Zotero's note-editor writes it."""
    return quote(json.dumps(obj, separators=(",", ":")), safe="~()*!.'")


ITEM_DATA = {
    "id": f"{USER}/ABCD2345",
    "type": "article-journal",
    "title": "Spatial transcriptomics",
    "author": [
        {"family": "Ståhl", "given": "Patrik"},
        {"family": "Salmén", "given": "Fredrik"},
        {"family": "Vickovic", "given": "Sanja"},
    ],
    "issued": {"date-parts": [["2016", 7, 1]]},
}
TWO_AUTHORS = {
    "id": f"{USER}/WXYZ6789",
    "type": "article-journal",
    "title": "Tangram",
    "author": [{"family": "Biancalani"}, {"family": "Scalia"}],
    "issued": {"date-parts": [[2021]]},
}


def citation(key: str, locator: str | None = None, visible: str | None = None, item_data=None) -> str:
    item = {"uris": [f"{USER}/{key}"]}
    if locator:
        item["locator"] = locator
    if item_data:
        item["itemData"] = item_data
    inner = f'(<span class="citation-item">{visible}</span>)' if visible is not None else ""
    return f'<span class="citation" data-citation="{enc({"citationItems": [item], "properties": {}})}">{inner}</span>'


def annotation(kind: str, text: str, page: str | None) -> str:
    data = {
        "attachmentURI": f"{USER}/PDF23456",
        "annotationKey": "ANN23456",
        "color": "#ffd400",
        "position": {"pageIndex": 11, "rects": [[1, 2, 3, 4]]},
        "citationItem": {"uris": [f"{USER}/ABCD2345"], "locator": page or ""},
    }
    if page:
        data["pageLabel"] = page
    return f'<span class="{kind}" data-annotation="{enc(data)}">{text}</span>'


def wrap(body: str, items=(ITEM_DATA, TWO_AUTHORS), version: int = 9) -> str:
    citation_items = [{"uris": [d["id"]], "itemData": d} for d in items]
    attr = f' data-citation-items="{enc(citation_items)}"' if items else ""
    return f'<div{attr} data-schema-version="{version}">{body}</div>'


# ---------------------------------------------------------------- structure
def test_wrapper_div_is_removed_and_headings_become_atx():
    md = note_html_to_markdown(wrap("<h1>Deconvolution</h1>\n<h2>Methods</h2>\n<p>Text.</p>\n"))
    assert md == "# Deconvolution\n\n## Methods\n\nText.\n"
    assert "data-schema-version" not in md and "<div" not in md


def test_zotero_desktop_znv1_wrapper_is_removed():
    html = '<div class="zotero-note znv1"><div data-schema-version="8"><p>Stored note</p></div></div>'
    assert note_html_to_markdown(html) == "Stored note\n"


def test_citation_with_visible_item_text_uses_it():
    html = wrap(f"<p>Spots are 100 µm {citation('ABCD2345', '3', visible='Ståhl et al., 2016, p. 3')}.</p>")
    assert note_html_to_markdown(html) == "Spots are 100 µm (Ståhl et al., 2016, p. 3).\n"


def test_citation_without_visible_text_is_built_from_wrapper_item_data():
    html = wrap(f"<p>Claim {citation('ABCD2345', '12')} and {citation('WXYZ6789')}.</p>")
    assert note_html_to_markdown(html) == "Claim (Ståhl et al., 2016, p. 12) and (Biancalani & Scalia, 2021).\n"


def test_citation_item_data_inline_and_unknown_items():
    inline = citation("QQQQ2345", "5", item_data={"author": [{"family": "Moses"}], "issued": {"raw": "March 2022"}})
    unknown = citation("NOPE2345")
    md = note_html_to_markdown(wrap(f"<p>{inline} {unknown}</p>", items=()))
    assert md == "(Moses, 2022, p. 5) (item NOPE2345)\n"


def test_format_citation_survives_garbage_attribute():
    assert format_citation("%7Bnot json", {}) == "(citation)"


def test_highlight_annotation_becomes_quote_with_page_label():
    html = wrap(
        f"<p>{annotation('highlight', '“spots capture about 10 cells”', '12')} "
        f"{citation('ABCD2345', '12', visible='Ståhl et al., 2016, p. 12')}</p>"
    )
    md = note_html_to_markdown(html)
    # the citation right after the highlight already names the page: it is not repeated
    assert md == "> “spots capture about 10 cells” (Ståhl et al., 2016, p. 12)\n"
    alone = note_html_to_markdown(wrap(f"<p>{annotation('highlight', 'spots', '12')}</p>"))
    assert alone == "> “spots” (p. 12)\n"


def test_identifiers_keep_their_underscores():
    assert (
        note_html_to_markdown(wrap("<p>set <code>n_latent</code> and adata.obs_names</p>"))
        == "set `n_latent` and adata.obs_names\n"
    )


def test_underline_annotation_and_annotation_already_in_blockquote():
    html = wrap(
        f"<blockquote>{annotation('underline', '<u>barcoded arrays</u>', 'iv')}</blockquote>"
        f"<p>{annotation('highlight', 'no page label', None)}</p>"
    )
    md = note_html_to_markdown(html)
    assert md == "> “barcoded arrays” (p. iv)\n\n> “no page label”\n"
    assert "> >" not in md


def test_a_highlight_quoted_inside_a_sentence_stays_in_its_sentence():
    """Zotero gives a dragged-in highlight its own paragraph (a quote); a saved answer quotes it mid-sentence."""
    html = wrap(f"<p>You highlighted {annotation('highlight', '“barcoded arrays”', '12')} here.</p>")
    assert note_html_to_markdown(html) == "You highlighted “barcoded arrays” (p. 12) here.\n"


def test_inline_and_block_math_are_kept_verbatim():
    html = wrap(
        '<p>Loss <span class="math">$\\mathcal{L} = \\sum_i x_i^2$</span> is convex.</p>\n'
        '<pre class="math">$$\\hat{\\beta}_{k} = \\arg\\min_\\beta \\|y - X\\beta\\|_2^2$$</pre>\n'
        "<p>After.</p>"
    )
    md = note_html_to_markdown(html)
    assert "Loss $\\mathcal{L} = \\sum_i x_i^2$ is convex." in md
    assert "\n\n$$\\hat{\\beta}_{k} = \\arg\\min_\\beta \\|y - X\\beta\\|_2^2$$\n\n" in md
    assert "\\_" not in md  # Markdown escaping never touches math


def test_math_inside_list_item_stays_on_its_own_line():
    html = wrap('<ol><li><p>Model</p><pre class="math">$$y=x_1$$</pre></li></ol>')
    assert note_html_to_markdown(html) == "1. Model\n\n   $$y=x_1$$\n"


def test_images_become_placeholders_with_alt_text():
    html = wrap(
        '<p><img alt="UMAP of T cells" data-attachment-key="IMG23456" width="600"></p>'
        '<p><img src="https://example.org/x.png"></p>'
        f'<p><img data-annotation="{enc({"pageLabel": "5"})}"></p>'
    )
    md = note_html_to_markdown(html)
    assert md == "[image: UMAP of T cells]\n\n[image]\n\n[image: image annotation, p. 5]\n"
    assert "example.org" not in md


def test_table_becomes_gfm_even_without_header_cells():
    html = wrap(
        "<table><tbody><tr><td><p>Method</p></td><td><p>Spots</p></td></tr>"
        "<tr><td><p>RCTD</p></td><td><p>9,000</p></td></tr></tbody></table>"
    )
    assert note_html_to_markdown(html) == "| Method | Spots |\n| --- | --- |\n| RCTD | 9,000 |\n"


def test_nested_lists_and_code_blocks_survive():
    html = wrap(
        "<ul>\n<li>\n<p>Integration</p>\n<ul>\n<li>\nHarmony\n</li>\n<li>\nscVI\n</li>\n</ul>\n"
        "</li>\n</ul>\n<pre>adata = sc.read('x.h5ad')\nsc.pp.neighbors(adata)</pre>\n"
        '<ol start="3"><li>third</li></ol>'
    )
    md = note_html_to_markdown(html)
    assert "- Integration\n\n  - Harmony\n  - scVI" in md
    assert "```\nadata = sc.read('x.h5ad')\nsc.pp.neighbors(adata)\n```" in md
    assert "3. third" in md


def test_script_style_event_attributes_and_hidden_elements_never_reach_markdown():
    html = wrap(
        '<p onclick="steal()" onmouseover="alert(1)">Visible <b onerror="x()">bold</b></p>'
        "<script>alert('secret-script')</script><style>p{color:red}</style>"
        '<p hidden>hidden-attr</p><p style="display: none">hidden-style</p>'
        '<p><a href="javascript:alert(1)">click</a> <a href="https://ok.example">fine</a></p>'
        "<iframe src='https://evil.example'>frame-text</iframe>"
    )
    md, converted = note_html_to_markdown(html), convert_note(html)
    for bad in (
        "secret-script",
        "color:red",
        "steal",
        "alert",
        "onclick",
        "hidden-attr",
        "hidden-style",
        "javascript",
        "frame-text",
        "evil.example",
    ):
        assert bad not in md
    assert "Visible **bold**" in md and "click [fine](https://ok.example)" in md
    assert any("<script>" in w for w in converted.warnings)


def test_text_that_looks_like_markup_is_escaped():
    md = note_html_to_markdown("<p>&lt;script&gt;x&lt;/script&gt; and # not a heading; a &lt; b</p>")
    assert md == "\\<script>x\\</script> and \\# not a heading; a < b\n"
    assert build_toc(md) == []


def test_strikethrough_span_and_marks():
    html = wrap(
        '<p><span style="text-decoration: line-through">old</span> <strong>b</strong> '
        "<em>i</em> <code>x_1</code> H<sub>2</sub>O</p>"
    )
    assert note_html_to_markdown(html) == "~~old~~ **b** *i* `x_1` H2O\n"


# ---------------------------------------------------------------- title
@pytest.mark.parametrize(
    "html, title",
    [
        ("<h1>Foo</h1><p>Bar</p>", "Foo"),
        ("<blockquote>\n<p>Foo</p>\n</blockquote>\n<p>Bar</p>", "Foo"),
        ("<h1>Annotations<br/>(2/18/2022, 3:49:43 AM)</h1><p>Foo</p>", "Annotations (2/18/2022, 3:49:43 AM)"),
        (
            '<div data-schema-version="9"><p>Caf&eacute; &amp; <b>bold</b> text</p><p>second</p></div>',
            "Café & bold text",
        ),
        ("<script>evil()</script><p>Real title</p>", "Real title"),
    ],
)
def test_note_title_follows_zotero_note_to_title(html, title):
    assert note_title(html) == title


def test_note_title_stop_at_line_break_and_length_limit():
    assert note_title("<h1>Annotations<br/>(date)</h1>", stop_at_line_break=True) == "Annotations"
    long = "word " * 60
    assert len(note_title(f"<p>{long}</p>")) <= 120


# ---------------------------------------------------------------- toc
def test_toc_ids_unique_and_line_ranges_cover_sections():
    md = "# Plan\n\nintro\n\n## Data\n\ntext\n\n## Data\n\nmore\n\n```\n# not a heading\n```\n\n# Next\n\nend\n"
    toc = build_toc(md)
    assert [(e["id"], e["level"], e["title"]) for e in toc] == [
        ("plan", 1, "Plan"),
        ("data", 2, "Data"),
        ("data-1", 2, "Data"),
        ("next", 1, "Next"),
    ]
    lines = md.split("\n")
    assert (toc[0]["line_start"], toc[0]["line_end"]) == (1, 15)
    assert lines[toc[1]["line_start"] - 1] == "## Data" and lines[toc[1]["line_end"] - 1] == "text"
    assert toc[3]["line_end"] == 19


def test_toc_titles_are_plain_text():
    toc = build_toc("## **Bold** [link](http://x) snake\\_case\n")
    assert toc[0]["title"] == "Bold link snake_case" and toc[0]["id"] == "bold-link-snake_case"


# ---------------------------------------------------------------- summary
def words(n: int, start: str = "w") -> str:
    return " ".join(f"{start}{i}" for i in range(n))


def test_summary_short_note_has_no_abstract():
    assert extractive_summary("# Title\n\n" + words(98)) == (None, None)


def test_summary_takes_first_prose_paragraph_not_list_or_heading():
    md = f"# Heading words here\n\n- list item one\n- two\n\n> a quote\n\nThe *real* point [here](http://x).\n\n{words(120)}\n"
    assert extractive_summary(md) == ("The real point here.", "extractive")


def test_summary_cut_at_word_boundary_to_300_chars():
    md = "# T\n\n" + " ".join(["deconvolution"] * 150) + "\n"
    abstract, source = extractive_summary(md)
    assert source == "extractive" and len(abstract) <= 300 and abstract.endswith("…")
    assert abstract[:-1].split(" ")[-1] == "deconvolution"


def test_summary_falls_back_to_list_when_no_prose():
    md = "# T\n\n" + "\n".join(f"- item {w}" for w in words(110).split()) + "\n"
    abstract, source = extractive_summary(md)
    assert source == "extractive" and abstract.startswith("item w0 item w1")


def test_word_count_ignores_markup_tokens():
    assert count_words("# Title\n\n- one two\n\n| a | b |\n| --- | --- |\n") == 5


# ---------------------------------------------------------------- chunking
def test_short_note_is_one_chunk_with_its_section():
    chunks = chunk_markdown("# Harmony\n\nshort note text\n")
    assert len(chunks) == 1 and chunks[0].section == "Harmony" and "short note text" in chunks[0].text


def test_long_note_chunks_are_paragraph_aware_sized_and_know_their_section():
    paras = [f"Paragraph {p} " + words(60, f"p{p}w") + "." for p in range(12)]
    md = "# Intro\n\n" + "\n\n".join(paras[:6]) + "\n\n## Methods\n\n" + "\n\n".join(paras[6:]) + "\n"
    chunks = chunk_markdown(md, target_tokens=256, overlap_tokens=40)
    assert len(chunks) >= 4
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert estimate_tokens(c.text) <= 256 + 60
    assert {c.section for c in chunks} == {"Intro", "Methods"}
    methods = [c for c in chunks if "p6w0" in c.text][0]
    assert methods.section == "Methods" and methods.text.startswith("## Methods")
    # overlap within a section: the end of one chunk opens the next
    first, second = chunks[0], chunks[1]
    assert first.section == second.section == "Intro"
    assert first.text.split()[-1] in second.text.split()[:40]
    # every paragraph is in some chunk
    for p in range(12):
        assert any(f"p{p}w59" in c.text for c in chunks)


def test_one_huge_paragraph_is_split_with_overlap():
    chunks = chunk_markdown(words(1000), target_tokens=100, overlap_tokens=20)
    assert len(chunks) > 10
    assert all(count_words(c.text) <= 75 for c in chunks)
    assert chunks[0].text.split()[-1] in chunks[1].text.split()


def test_empty_markdown_has_no_chunks():
    assert chunk_markdown("  \n") == []


# ---------------------------------------------------------------- convert_note / convert_paper
def test_convert_note_bundles_everything_and_hashes_the_html_as_given():
    body = "<h1>Plan</h1>\n<p>" + words(150) + "</p>\n<h2>Next</h2>\n<p>Soon.</p>\n"
    html = wrap(body)
    note = convert_note(html)
    assert isinstance(note, ConvertedNote)
    assert note.title == "Plan" and note.markdown.startswith("# Plan\n\nw0 w1")
    assert [e["id"] for e in note.toc] == ["plan", "next"]
    assert note.abstract_source == "extractive" and note.abstract.startswith("w0 w1")
    assert note.word_count == 153
    assert note.source_hash == hashlib.sha256(html.encode("utf-8")).hexdigest()
    assert CONVERTER_VERSION
    with pytest.raises(AttributeError):
        note.title = "x"  # frozen


def test_convert_paper_has_metadata_abstract_and_full_text():
    paper = Paper(
        key="PAPR2345",
        title="Visualization and analysis of gene expression",
        creators=("Ståhl, Patrik", "Salmén, Fredrik", "Vickovic, Sanja"),
        year=2016,
        doi="10.1126/science.aaf2403",
        publication="Science",
        abstract="We present spatial transcriptomics.",
        fulltext="First para.\n\n# Not heading\n\nThird.",
    )
    converted = convert_paper(paper)
    md = converted.markdown
    assert md.startswith("# Visualization and analysis of gene expression\n")
    for fact in ("Ståhl, Patrik; Salmén, Fredrik; Vickovic, Sanja", "2016", "Science", "10.1126/science.aaf2403"):
        assert fact in md
    assert "## Abstract\n\nWe present spatial transcriptomics." in md
    assert "## Full text\n\nFirst para.\n\n\\# Not heading\n\nThird." in md
    assert [e["title"] for e in converted.toc] == [
        "Visualization and analysis of gene expression",
        "Abstract",
        "Full text",
    ]
    assert converted.abstract == "We present spatial transcriptomics." and converted.abstract_source == "metadata"
    changed = convert_paper(Paper(**{**paper.__dict__, "fulltext": "Other."}))
    assert changed.source_hash != converted.source_hash


def test_manifest_fields_for_the_convert_cli():
    note = convert_note("<h1>T</h1><p>x</p>")
    fields = note.manifest_fields()
    assert fields["okf_version"] == "0.2" and fields["content_type"] == "text/note"
    assert fields["title"] == "T" and fields["word_count"] == 2 and fields["toc"][0]["id"] == "t"
    assert fields["source_hash"] == note.source_hash and fields["converter_version"] == CONVERTER_VERSION
    json.dumps(fields)
