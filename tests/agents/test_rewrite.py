"""Query rewriting in the library search (agents/rewrite.py): with a chat model, the question becomes
a few searches (keywords, a hypothetical answer, the named methods), fused by reciprocal rank; without
a model, or with ``llm.rewrite_queries`` off, nothing changes. Full turns run on the real stack against
the loopback OpenAI fake, the scripted model playing the rewriter."""

from __future__ import annotations

import json
from types import SimpleNamespace

from tests.fakes.agent_stack import NOTE_KEY, QUESTION, Stack
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_model import ScriptedModel, role_of
from zocrates_nb.agents.rewrite import parse_rewrites, rrf_fuse


def test_the_rewrites_follow_the_question_each_once_and_a_bad_reply_searches_the_question_alone():
    reply = json.dumps({"keywords": "RCTD Visium", "hypothetical_answer": "Use doublet mode.", "methods": ["RCTD"]})
    assert parse_rewrites("Which RCTD mode?", reply) == (
        ["Which RCTD mode?", "RCTD Visium", "Use doublet mode.", "RCTD"],
        "ok",
    )
    same = json.dumps({"keywords": "which rctd mode?", "methods": [], "hypothetical_answer": ""})
    assert parse_rewrites("Which RCTD mode?", same) == (["Which RCTD mode?"], "ok")
    assert parse_rewrites("q", "Sure! Here are some searches: ...") == (["q"], "unparsed")
    assert parse_rewrites("q", "[1, 2]") == (["q"], "unparsed")


def test_reciprocal_rank_fusion_prefers_documents_found_by_several_searches():
    a, b, c, d = (SimpleNamespace(key=k) for k in "ABCD")
    fused = rrf_fuse([[a, b, c], [d, c, b], [c]])
    assert [h.key for h in fused] == ["C", "B", "A", "D"]  # C in all three; A and D tie, A was seen first
    assert rrf_fuse([[a, b], [b, a]], limit=1)[0] is a  # a tie keeps the first seen


def test_a_turn_with_rewriting_searches_each_rewrite_and_starts_from_the_fused_hits(demo_workbench):
    model = ScriptedModel()
    with FakeOpenAI(responder=model) as server:
        stack = Stack(demo_workbench, server)
        stack.config.set_llm(rewrite_queries=True)
        answer = stack.coordinator.ask(QUESTION)
        bodies = server.bodies()
    assert model.roles == ["query_rewriter", "library_search", "library_search", "library_synthesizer"]
    rewriter = next(b for b in bodies if role_of(b) == "query_rewriter")
    assert rewriter["response_format"] == {"type": "json_object"} and rewriter["messages"][-1]["content"] == QUESTION
    searched = [e["query"] for e in stack.events_of("search")]
    rewrites = ScriptedModel.REWRITES
    assert searched == [QUESTION, rewrites["keywords"], rewrites["hypothetical_answer"], "cell2location RCTD"]
    first = next(b for b in bodies if role_of(b) == "library_search")["messages"]
    fused_call = first[-2]["tool_calls"][0]["function"]
    assert fused_call["name"] == "search_corpus" and json.loads(fused_call["arguments"]) == {"query": QUESTION}
    assert first[-1]["role"] == "tool" and NOTE_KEY in first[-1]["content"]
    assert model.read_key in first[-1]["content"] and answer.read_keys == [model.read_key]  # read from the fused hits
    assert any(e["role"] == "query_rewriter" for e in stack.events_of("llm"))  # priced like every role


def test_without_rewriting_the_first_search_step_is_the_models_own(demo_workbench):
    model = ScriptedModel()
    with FakeOpenAI(responder=model) as server:
        Stack(demo_workbench, server).coordinator.ask(QUESTION)  # scripted settings: rewrite_queries off
        first = next(b for b in server.bodies() if role_of(b) == "library_search")["messages"]
    assert "query_rewriter" not in model.roles
    assert [m["role"] for m in first] == ["system", "user"]
