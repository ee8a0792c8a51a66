"""Turns through ``Workbench.ask`` exactly as a user gets it: the Workbench's own coordinator, LLM
factory (key lookup, config read per turn) and tools on the demo library (OKF corpus, FTS5 + ChromaDB,
offline embedder), the real openai client against the loopback fake."""

from __future__ import annotations

import json

from tests.fakes.agent_stack import NOTE_KEY, NOTE_TITLE, QUESTION, assert_key_free
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_model import ScriptedModel, role_of, scripted_llm_settings


def _events(workbench, kind: str) -> list[dict]:
    return [e for e in map(json.loads, workbench.events.path.read_text().splitlines()) if e["kind"] == kind]


def test_evidence_only_on_the_demo_library(demo_workbench):
    assert not demo_workbench.config.llm().configured  # the default: no model configured
    answer = demo_workbench.ask(QUESTION)
    assert answer.mode == "evidence-only" and "no language model configured" in answer.text
    assert NOTE_KEY in answer.read_keys and f"“{NOTE_TITLE}”" in answer.text
    assert_key_free(answer.text, demo_workbench)
    assert any(c.kind == "note" and c.title == NOTE_TITLE for c in answer.citations)


def test_llm_turn_on_the_demo_library_cites_a_note_by_title(demo_workbench, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment-0123")
    model = ScriptedModel()
    with FakeOpenAI(responder=model, api_key="sk-from-the-environment-0123") as server:
        demo_workbench.config.set_llm(**scripted_llm_settings(server.base_url))
        answer = demo_workbench.ask(QUESTION)
        roles = [role_of(b) for b in server.bodies()]
        demo_workbench.config.clear_llm()  # the next turn reads the config again
        after = demo_workbench.ask(QUESTION)
        assert len(server.requests) == len(roles)
    # the Workbench wires an online client, so the coordinator model routes the question first
    assert roles == ["coordinator", "library_search", "library_search", "library_search", "library_synthesizer"]
    assert model.read_key == NOTE_KEY
    assert answer.mode == "llm" and answer.text.startswith(f"## What “{NOTE_TITLE}” says")
    assert_key_free(answer.text, demo_workbench)
    assert any(c.title == NOTE_TITLE and c.kind == "note" for c in answer.citations)
    assert answer.read_keys == [NOTE_KEY]
    assert {e["role"] for e in _events(demo_workbench, "llm")} == {
        "coordinator",
        "library_search",
        "library_synthesizer",
    }
    assert "sk-from-the-environment-0123" not in demo_workbench.events.path.read_text()
    assert after.mode == "evidence-only"


def test_a_turns_citations_count_in_the_hit_rates(demo_workbench):
    """The answer event must join the turn's own search events (same diagnostics session)."""
    answer = demo_workbench.ask(QUESTION)
    assert answer.cited_keys
    [event] = _events(demo_workbench, "answer")
    assert event["session"] == demo_workbench.events.session and event["chat_session"] == answer.session_id
    searches = demo_workbench.diagnostics.searches()
    assert searches["cited"].all()
    rates = demo_workbench.diagnostics.hit_rates().set_index("mode")
    assert rates.loc["all", "cited_rate"] == 1.0 and rates.loc["all", "hit_rate"] == 1.0
