"""The writing formats, pure: citation keys, CSL-JSON, BibTeX (checked by real parsers) and Pandoc Markdown."""

from __future__ import annotations

import json
import shutil
import subprocess
import unicodedata

import bibtexparser
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zocrates_nb.export.bibtex import bibtex
from zocrates_nb.export.citekeys import assign_citation_keys, generated_citation_key
from zocrates_nb.export.csl import citation_keys, csl_items, reference_from_manifest, reference_from_online
from zocrates_nb.export.pandoc import pandoc_markdown
from zocrates_nb.records import pinned_citation_key

STAHL = {
    "key": "PAPER222",
    "content_type": "text/paper",
    "item_type": "journalArticle",
    "title": "Visualization and analysis of gene expression in tissue sections by spatial transcriptomics",
    "creators": ["Ståhl, Patrik L.", "Salmén, Fredrik", "Lundeberg, Joakim"],
    "year": 2016,
    "date": "2016-07-01",
    "doi": "10.1126/science.aaf2403",
    "publication": "Science",
    "citation": "Ståhl et al., 2016",
}
CONSORTIUM = {
    "key": "HCAPAPER",
    "item_type": "report",
    "title": "The Human Cell Atlas white paper",
    "creators": ["Human Cell Atlas Consortium"],
    "year": 2017,
    "date": "2017",
    "publication": "HCA",
    "citation": "Human Cell Atlas Consortium, 2017",
}


def test_generated_keys_are_folded_and_skip_function_words():
    assert generated_citation_key("Ståhl", 2016, "The visualization of gene expression") == "stahl2016visualization"
    assert generated_citation_key("", None, "") == "anonnd"
    assert generated_citation_key("O'Brien-Smith", 2020, "A 3D atlas") == "obriensmith2020atlas"


def test_colliding_keys_get_suffixes_by_zotero_key_whatever_the_citation_order():
    items = [
        {"id": "ZZZZ2222", "pinned": "", "generated": "smith2020atlas"},
        {"id": "AAAA2222", "pinned": "", "generated": "smith2020atlas"},
        {"id": "MMMM2222", "pinned": "smith2020atlas", "generated": "x"},
    ]
    keys = assign_citation_keys(items)
    assert keys == {"MMMM2222": "smith2020atlas", "AAAA2222": "smith2020atlasa", "ZZZZ2222": "smith2020atlasb"}
    assert assign_citation_keys(list(reversed(items))) == keys


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"citationKey": "stahl2016"}, "stahl2016"),
        ({"extra": "PMID: 1\nCitation Key: Stahl_2016-visium\n"}, "Stahl_2016-visium"),
        ({"extra": "bibtex: legacy2016"}, "legacy2016"),
        ({"extra": "tex.citation key: nope"}, ""),
        ({}, ""),
    ],
)
def test_pinned_citation_keys_from_zotero_fields(fields, expected):
    assert pinned_citation_key(fields) == expected


def test_csl_items_from_manifests_and_online_candidates():
    stahl, hca = reference_from_manifest(STAHL), reference_from_manifest({**CONSORTIUM, "citation_key": "hca2017"})
    online = reference_from_online(
        {"title": "A new atlas", "authors": ["Jane Q. Doe", "Li Wei"], "year": 2024, "doi": "10.1/new_atlas"},
        "Doe & Wei, 2024",
    )
    keys = citation_keys([stahl, hca, online])
    items = csl_items([stahl, hca, online], keys)
    assert [i["id"] for i in items] == ["stahl2016visualization", "hca2017", "doe2024new"]
    assert items[0]["author"][0] == {"family": "Ståhl", "given": "Patrik L."}
    assert items[0]["issued"] == {"date-parts": [[2016, 7, 1]]} and items[0]["container-title"] == "Science"
    assert items[1]["author"] == [{"literal": "Human Cell Atlas Consortium"}] and items[1]["type"] == "report"
    assert items[1]["publisher"] == "HCA" and "container-title" not in items[1]
    assert items[2]["author"][0] == {"family": "Doe", "given": "Jane Q."} and items[2]["DOI"] == "10.1/new_atlas"


def test_bibtex_parses_with_a_real_parser_and_keeps_identifiers_verbatim():
    refs = [reference_from_manifest({**STAHL, "doi": "10.1000/a_b%c", "title": "Cells & {genes}: 50% of {it"})]
    refs.append(reference_from_manifest(CONSORTIUM))
    text = bibtex(csl_items(refs, citation_keys(refs)))
    entries = {e["ID"]: e for e in bibtexparser.loads(text).entries}
    assert set(entries) == {"stahl2016cells", "humancellatlasconsortium2017human"}
    stahl = entries["stahl2016cells"]
    assert stahl["ENTRYTYPE"] == "article" and stahl["doi"] == "10.1000/a_b%c" and stahl["journal"] == "Science"
    assert stahl["title"] == r"Cells \& genes: 50\% of it"  # the unpaired brace is dropped, specials escaped
    assert stahl["author"] == "Ståhl, Patrik L. and Salmén, Fredrik and Lundeberg, Joakim"
    hca = entries["humancellatlasconsortium2017human"]
    assert hca["ENTRYTYPE"] == "techreport" and hca["author"] == "{Human Cell Atlas Consortium}"


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(
    lambda s: s.strip()
)


needs_pandoc = pytest.mark.skipif(
    shutil.which("pandoc") is None, reason="pandoc (Debian package) is not installed: make test installs it"
)


@needs_pandoc
@settings(max_examples=40, deadline=None)
@given(title=_text, family=_text, given_name=_text)
def test_any_title_and_name_round_trip_through_pandocs_bibtex_reader(title, family, given_name):
    """Whatever the metadata holds (braces, %, &, quotes, accents), pandoc reads our .bib back to the same words."""
    family = family.replace(",", " ").strip() or "X"  # records keep "Last, First": a family name has no comma
    manifest = {**STAHL, "title": title, "creators": [f"{family}, {given_name}"]}
    refs = [reference_from_manifest(manifest)]
    text = bibtex(csl_items(refs, citation_keys(refs)))
    out = subprocess.run(["pandoc", "-f", "bibtex", "-t", "csljson"], input=text, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (item,) = json.loads(out.stdout)

    def words(text: str) -> str:  # pandoc may re-case a title and drop markup: compare letters and digits
        return "".join(ch for ch in unicodedata.normalize("NFKD", text).upper() if ch.isalnum())

    assert words(item["title"]) == words(title.replace("{", "").replace("}", ""))
    # one author ("and" or a comma would split it), and no word of the name lost: Pandoc may move a word
    # between the parts ("Jan van", "van der Berg" -> a particle), never drop one
    written = sorted(words(w) for w in f"{given_name} {family}".replace("{", " ").replace("}", " ").split() if words(w))
    if not written:  # a name of braces and punctuation only: nothing to keep
        return
    (author,) = item["author"]
    parts = ("given", "dropping-particle", "non-dropping-particle", "family", "literal")
    read_back = sorted(words(w) for p in parts for w in author.get(p, "").split() if words(w))
    assert sorted("".join(read_back)) == sorted("".join(written))


def _refs():
    stahl, hca = reference_from_manifest(STAHL), reference_from_manifest(CONSORTIUM)
    return [stahl, hca], citation_keys([stahl, hca])


def test_pandoc_citations_parenthetical_narrative_locators_prefixes_and_untouched_text():
    refs, keys = _refs()
    text = (
        "Spots are 100 µm apart (Ståhl et al., 2016, p. 12). Ståhl et al. (2016) first showed it; "
        "compare (see Ståhl et al., 2016; Human Cell Atlas Consortium, 2017). "
        "Unknown (Doe et al., 2020) and a [link](https://example.org/(x)) stay; (not a citation) too."
    )
    markdown, cited = pandoc_markdown(text, refs, keys, title='Spots: "how far"?', bibliography="a.bib")
    assert "[@stahl2016visualization, p. 12]" in markdown
    assert "@stahl2016visualization first showed it" in markdown
    assert "[see @stahl2016visualization; @humancellatlasconsortium2017human]" in markdown
    assert "(Doe et al., 2020)" in markdown and "[link](https://example.org/(x))" in markdown
    assert "(not a citation)" in markdown
    assert markdown.startswith('---\ntitle: "Spots: \\"how far\\"?"\nbibliography: "a.bib"\n---\n')
    assert "nocite" not in markdown and markdown.rstrip().endswith("::: {#refs}\n:::")
    assert cited == ["stahl2016visualization", "humancellatlasconsortium2017human"]


def test_references_the_text_never_names_go_to_nocite():
    refs, keys = _refs()
    markdown, cited = pandoc_markdown("Only (Ståhl et al., 2016).", refs, keys, title="t", bibliography="b.bib")
    assert cited == ["stahl2016visualization"]
    assert "nocite: |\n  @humancellatlasconsortium2017human" in markdown
