"""The same turns through the real stack: Workbench on the demo library (OKF corpus, FTS5 + ChromaDB,
offline embedder, real LibraryTools), the real openai client against the loopback fake."""

from __future__ import annotations

import json

import pytest

from tests.agents_support import ScriptedModel, role_of
from tests.fakes.openai_server import FakeOpenAI

QUESTION = "Which deconvolution methods work for spot-level spatial data?"


@pytest.fixture(scope="module")
def workbench(tmp_path_factory):
    from zocrates_nb.workbench import Workbench

    return Workbench(tmp_path_factory.mktemp("wb-agents"))


@pytest.fixture
def corpus_keys(workbench) -> set[str]:
    return set(workbench.corpus.keys())


def _llm_events(workbench) -> list[dict]:
    return [e for e in map(json.loads, workbench.events.path.read_text().splitlines()) if e["kind"] == "llm"]


def test_evidence_only_on_the_demo_library(workbench, corpus_keys):
    workbench.config.clear_llm()
    answer = workbench.ask(QUESTION)
    assert answer.mode == "evidence-only" and "no language model configured" in answer.text
    assert answer.citations and answer.read_keys
    assert not any(key in answer.text for key in corpus_keys)
    assert any(c.kind == "note" for c in answer.citations)


def test_llm_turn_on_the_demo_library_cites_a_note_by_title(workbench, corpus_keys):
    model = ScriptedModel()
    with FakeOpenAI(responder=model) as server:
        workbench.config.set_llm(base_url=server.base_url, model="gpt-test")
        try:
            answer = workbench.ask(QUESTION)
        finally:
            workbench.config.clear_llm()
        roles = [role_of(b) for b in server.bodies()]
    assert roles[-1] == "library_synthesizer" and "read_document" in json.dumps(server.bodies()[2])
    note_key = model.read_key
    note_title = workbench.corpus.manifest(note_key)["title"]
    assert answer.mode == "llm" and note_title in answer.text
    assert not any(key in answer.text for key in corpus_keys)
    assert any(c.title == note_title and c.kind == "note" for c in answer.citations)
    assert note_key in answer.read_keys
    assert {e["role"] for e in _llm_events(workbench)} >= {"library_search", "library_synthesizer"}
