"""The citation checker on its own (no model, no stores): what counts as a citation, what resolves, and
the property that quotes drawn from real passages always verify while mutated ones never do."""

from __future__ import annotations

import json
import re

import pytest

from zocrates_nb.agents.citecheck import mark, summary_line, verify
from zocrates_nb.agents.citecheck.mentions import find_mentions
from zocrates_nb.agents.citecheck.sources import author_year, normalize_text, sources_from_evidence

TITLE = "Robust decomposition of cell type mixtures in spatial transcriptomics"
PAPER_TEXT = (
    "RCTD learns platform effects between the reference and the spatial data. Full mode fits any number "
    "of cell types per spot, while doublet mode allows at most two: it suits Slide-seq beads."
)
NOTE_TEXT = (
    "Use full mode on Visium: 55 µm spots contain many cell types. It ran in six minutes on eight cores. "
    "Kleshchevnikov et al., 2022 describe cell2location, which we tried next."
)
HIGHLIGHT = "platform effects between scRNA-seq and spatial data are estimated once"
EVIDENCE = [
    {
        "key": "PAPER222",
        "kind": "paper",
        "title": TITLE,
        "citation": "Cable et al., 2022",
        "text": PAPER_TEXT,
        "page_start": 3,
        "page_end": 4,
        "page_label_start": "3",
        "page_label_end": "4",
        "attachment_key": "ATTACH22",
        "doi": "https://doi.org/10.1038/S41587-021-00830-W",
    },
    {
        "key": "NOTE2222",
        "kind": "note",
        "title": "RCTD modes on Visium",
        "parent_key": "PAPER222",
        "parent_title": TITLE,
        "text": NOTE_TEXT,
    },
    {
        "key": "ANNOT222",
        "kind": "annotation",
        "title": f"Highlight on “{TITLE}”, p. 7",
        "parent_key": "PAPER222",
        "text": HIGHLIGHT,
        "annotation": {"text": HIGHLIGHT, "comment": "why it tolerates Chromium", "page_label": "7"},
    },
    {
        "kind": "online",
        "title": "Spatially informed cell-type deconvolution for spatial transcriptomics",
        "citation": "Ma & Zhou, 2022",
        "doi": "10.1038/s41587-022-01273-7",
        "abstract": "CARD uses spatial correlation across spots to deconvolve cell types.",
    },
]
PARENTS = {"PAPER222": {"title": TITLE, "citation": "Cable et al., 2022"}}


def check(text: str, **kw):
    return verify(text, EVIDENCE, PARENTS, **kw)


def reasons(text: str, **kw) -> list[str | None]:
    return [c.reason for c in check(text, **kw).checks]


# ------------------------------------------------------------------ what resolves


@pytest.mark.parametrize(
    "text",
    [
        f"*{TITLE}* (Cable et al., 2022) estimates the platform effect.",
        f"**{TITLE}** (Cable et al., 2022, p. 3)",
        "RCTD fits types per spot (Cable et al., 2022).",
        "As Cable et al. (2022) show, the platform effect matters.",
        "Cable and Maslen, 2022 would be wrong; but (Cable et al., 2022, pp. 3–4) is right.".split(";")[1],
        "Your note “RCTD modes on Visium” says full mode.",
        "the note *“RCTD modes on Visium”* says full mode.",
        f"[annotation on *{TITLE}* (Cable et al., 2022), p. 7]",
        f"Highlight on “{TITLE}”, p. 7",
        "- **Spatially informed cell-type deconvolution for spatial transcriptomics** — Ma & Zhou, 2022, "
        "DOI 10.1038/s41587-022-01273-7",
        "see https://doi.org/10.1038/s41587-021-00830-w.",
        "*Robust decomposition of cell type mixtures* (Cable et al., 2022) drops the subtitle.",
    ],
)
def test_honest_citations_verify(text):
    verification = check(text)
    assert verification.cited >= 1, find_mentions(text)
    assert verification.verified == verification.cited, [c.to_json() for c in verification.failures]


def test_square_brackets_cite_like_parentheses_but_links_and_headers_do_not():
    assert reasons("RCTD fits types per spot [Cable et al., 2022, p. 3].") == [None]
    assert reasons("RCTD fits types per spot [Doe et al., 2020].") == ["not_in_evidence"]
    assert check("See [Cable et al., 2022](https://example.org/x).").cited == 0


def test_a_paper_named_by_a_note_but_presented_as_read_is_not_in_evidence():
    """Only where the answer says whose words it reports does a second-hand citation pass."""
    assert reasons("Cell2location is best, as Kleshchevnikov et al. (2022) show.") == ["not_in_evidence"]


def test_a_paper_named_only_inside_a_retrieved_note_resolves_to_that_note():
    """The answer reports what was read: "your note cites Kleshchevnikov et al., 2022" is honest."""
    (only,) = check("Your note points to Kleshchevnikov et al. (2022) for cell2location.").checks
    assert only.resolved and only.key == "NOTE2222" and only.reason is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("According to [Note Key: ZZZZ9999], full mode is best.", "not_in_evidence"),
        ("Full mode is best (see `X7Y8Z9AB`).", "not_in_evidence"),
        ("*A made-up atlas of mouse spleen* (Doe et al., 2021) disagrees.", "not_in_evidence"),
        ("RCTD fits types per spot (Cable et al., 2019).", "not_in_evidence"),
        (f"*{TITLE}* (Ståhl et al., 2016)", "citation_mismatch"),
        ("the note “Meeting minutes of March” says so", "not_in_evidence"),
        ("RCTD fits types per spot (Cable et al., 2022, p. 12).", "page_out_of_span"),
        ("DOI 10.5555/not.retrieved", "doi_not_in_evidence"),
    ],
)
def test_fabrications_are_caught_with_their_reason(text, reason):
    assert reason in reasons(text)


def test_a_page_of_a_source_read_without_pages_is_not_in_evidence():
    evidence = [{**EVIDENCE[0], "page_start": None, "page_label_start": None, "page_label_end": None}]
    (only,) = verify("RCTD fits (Cable et al., 2022, p. 3).", evidence).checks
    assert (only.resolved, only.page_ok, only.reason) == (True, False, "page_not_in_evidence")


def test_a_doi_that_does_not_resolve_is_told_apart_from_one_not_retrieved():
    asked: list[str] = []

    def resolves(doi: str) -> bool | None:
        asked.append(doi)
        return doi == "10.5555/exists"

    found = reasons("See 10.5555/exists and 10.9999/made.up.", doi_resolves=resolves)
    assert found == ["doi_not_in_evidence", "doi_unresolved"] and asked == ["10.5555/exists", "10.9999/made.up"]
    assert reasons("See 10.9999/made.up.", doi_resolves=lambda doi: None) == ["doi_not_in_evidence"]


# ------------------------------------------------------------------ quotes


def test_quotes_belong_to_the_citation_of_their_paragraph():
    honest = f"Cable et al. (2022) say RCTD “learns platform effects between the reference … data”. {'x'}"
    (cited, quote) = check(honest).checks
    assert cited.reason is None and quote.quote_found and quote.key == "PAPER222"
    misattributed = "Cable et al. (2022) write “It ran in six minutes on eight cores”."
    assert reasons(misattributed) == [None, "quote_not_found"]
    invented = "Your notes say “doublet mode is always the best choice on Visium”."
    assert reasons(invented) == ["quote_not_in_evidence"]


def test_a_block_quote_belongs_to_the_heading_above_it():
    text = f"1. **{TITLE}** (Cable et al., 2022, p. 3)\n\n> Full mode fits any number of cell types per spot, …\n"
    assert [c.reason for c in check(text).checks] == [None, None]
    forged = f"1. **{TITLE}** (Cable et al., 2022, p. 3)\n\n> Full mode was abandoned for Visium spots entirely.\n"
    assert [c.reason for c in check(forged).checks] == [None, "quote_not_found"]


def test_what_is_not_a_citation_is_not_counted():
    text = (
        "**Short answer:** use *full mode*. The question “Which RCTD mode should I use on Visium?” "
        "was asked before. Use it on GSE12345 data.\n\n```\nCable et al. (2022) in code\n```"
    )
    assert check(text, question="Which RCTD mode should I use on Visium?").cited == 0


def test_marks_stand_after_each_failure_and_the_summary_counts_them():
    text = "Full mode (Cable et al., 2022, p. 12; Doe et al., 2020). See [Note Key: ZZZZ9999]."
    verification = check(text)
    marked = mark(text, verification)
    assert marked.count("⚠️") == 2  # one mark after the parenthesis (both of its failures), one after the key
    assert "p. 12; Doe et al., 2020) ⚠️ *(citation not verified: that page is not one" in marked
    assert summary_line(verification).startswith("Citations verified 0/3 (2 not among the sources")
    assert mark(text, verify("", EVIDENCE)) == text and summary_line(verify("no citations", EVIDENCE)) == ""
    records = json.loads(json.dumps(verification.to_json()))
    assert records["cited"] == 3 and records["failures_by_reason"] == {"page_out_of_span": 1, "not_in_evidence": 2}
    assert set(records["checks"][0]) >= {"resolved", "quote_found", "page_ok", "reason", "text", "kind"}


# ------------------------------------------------------------------ the pure helpers


@pytest.mark.parametrize(
    ("citation", "expected"),
    [
        ("Ståhl et al., 2016", ("stahl", "2016")),
        ("Ma & Zhou, 2022", ("ma", "2022")),
        ("van der Maaten and Hinton 2008", ("maaten", "2008")),
        ("O'Brien et al. 2020a", ("o brien".replace(" ", ""), "2020")),
        ("Table 2, 2020 results", None),
    ],
)
def test_author_year(citation, expected):
    assert author_year(citation) == expected


def test_a_parent_paper_owns_its_annotations_passages_and_pages():
    sources = {s.key: s for s in sources_from_evidence(EVIDENCE, PARENTS)}
    assert sources["PAPER222"].has_quote("estimated once") and sources["PAPER222"].spans_page("7")
    assert not sources["NOTE2222"].spans_page("7") and sources["PAPER222"].spans_page("3-4")


# ------------------------------------------------------------------ properties

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PASSAGES = [PAPER_TEXT, NOTE_TEXT, HIGHLIGHT]
_WORDS = [re.findall(r"\S+", normalize_text(p)) for p in PASSAGES]


@st.composite
def real_quote(draw):
    """A run of words from a real passage, maybe with a gap shown as an ellipsis, maybe re-cased."""
    words = draw(st.sampled_from(_WORDS))
    start = draw(st.integers(0, len(words) - 4))
    end = draw(st.integers(start + 4, len(words)))
    picked = words[start:end]
    if len(picked) > 8 and draw(st.booleans()):
        cut = draw(st.integers(3, len(picked) - 4))
        skip = draw(st.integers(1, len(picked) - cut - 3))
        picked = [*picked[:cut], "…", *picked[cut + skip :]]
    text = " ".join(picked)
    return text.upper() if draw(st.booleans()) else text


@given(real_quote())
@settings(max_examples=200, deadline=None)
def test_quotes_drawn_from_real_passages_always_verify(quote):
    verification = check(f"The sources say “{quote}”.")
    assert verification.cited == 1 and verification.verified == 1, quote


@given(real_quote(), st.data())
@settings(max_examples=200, deadline=None)
def test_mutated_quotes_never_verify(quote, data):
    words = [w for w in quote.split() if w != "…"]
    at = data.draw(st.integers(0, len(words) - 1))
    words[at] = data.draw(st.sampled_from(["never", "purple", "zebrafish", "1997", "not-" + words[at]]))
    mutated = " ".join(words)
    if any(normalize_text(mutated) in normalize_text(p) for p in PASSAGES):
        return  # the replacement happened to be the original word
    verification = check(f"The sources say “{mutated}”.")
    assert verification.verified == 0 and verification.checks[0].reason == "quote_not_in_evidence", mutated
