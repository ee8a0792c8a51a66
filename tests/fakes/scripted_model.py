"""A deterministic stand-in for the language model behind every agent role.

The fake OpenAI server (``openai_server.FakeOpenAI``) speaks the wire format; ``ScriptedModel`` decides
what it says. It knows which agent is asking from the request's ``model`` field: the LLM settings give each
role its own model name (``ROLE_MODELS``, set by ``scripted_llm_settings``), exactly the per-role models
a user can configure, so no test depends on the wording of a system prompt.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fakes.openai_server import call, reply
from zocrates_nb.agents.llm import ROLES

ROLE_MODELS = {role: f"scripted-{role}" for role in ROLES}
_ROLE_OF_MODEL = {model: role for role, model in ROLE_MODELS.items()}
PRICE = {"prompt": 1.0, "completion": 4.0}  # USD per million tokens, the same for every role's model

NOTE_HEADER = re.compile(r"\[Note Key: ([23456789A-NP-Z]{8})(?:, Parent Paper Key: ([23456789A-NP-Z]{8}))?\]")


def scripted_llm_settings(base_url: str, **fields: Any) -> dict[str, Any]:
    """Keyword arguments for ``ConfigStore.set_llm`` that give every role its own scripted model name.

    Query rewriting is off unless asked for (``rewrite_queries=True``), so the scripted turns stay the same."""
    return {
        "base_url": base_url,
        "model": ROLE_MODELS["library_synthesizer"],
        "models": dict(ROLE_MODELS),
        "rewrite_queries": False,
        **fields,
    }


def role_of(body: dict) -> str:
    """The agent role that sent a chat-completions request body (read from its model name)."""
    model = body.get("model")
    if model not in _ROLE_OF_MODEL:
        raise AssertionError(
            f"request for model {model!r}: configure the LLM with scripted_llm_settings() "
            "so that each role has its own model name"
        )
    return _ROLE_OF_MODEL[model]


class ScriptedModel:
    """Plays every agent role: search → read the first note found → answer citing it by its key.

    The answer deliberately writes keys the way real models do (provenance header, code span,
    link, the parent paper's header) so the tests prove the cleaning.
    """

    #: what the query rewriter answers (agents/rewrite.py)
    REWRITES = {
        "keywords": "cell type deconvolution Visium",
        "hypothetical_answer": "Spots are deconvolved into cell types with a single-cell reference.",
        "methods": ["cell2location", "RCTD"],
    }

    def __init__(self, route: str = "library") -> None:
        self.route = route
        self.read_key: str | None = None
        self.parent_key: str | None = None
        self.roles: list[str] = []

    def __call__(self, body: dict) -> dict:
        role = role_of(body)
        self.roles.append(role)
        if role == "coordinator":
            decision = {
                "route": self.route,
                "online_query": "spatial transcriptomics deconvolution",
                "reason": "scripted",
            }
            return reply(json.dumps(decision))
        if role == "library_search":
            return self._search_step(body)
        if role == "query_rewriter":
            return reply(json.dumps(self.REWRITES))
        if role == "library_synthesizer":
            k = self.read_key or "NOKEY000"
            paper = f" The method itself is described in [Paper Key: {self.parent_key}]." if self.parent_key else ""
            return reply(
                f"## What {k} says\n\nAccording to [Note Key: {k}], full mode is the one for Visium "
                f"spots (see `{k}` and [the note]({k})).{paper} SCRNASEQ2 data were used."
            )
        candidates = re.findall(r"Title: (.+)", body["messages"][-1]["content"])
        return reply("\n".join(f"- **{t}** — relevant to your deconvolution work." for t in candidates))

    def _search_step(self, body: dict) -> dict:
        tool_results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if not tool_results:
            question = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
            query = question.split("question:", 1)[-1].split("Every tool result")[0].strip()
            return reply("", [call("search_corpus", query=query, k=5)])
        if self.read_key is None:
            notes = NOTE_HEADER.findall(tool_results[-1])
            if notes:
                self.read_key, self.parent_key = notes[0][0], notes[0][1] or None
                return reply("", [call("read_document", key=self.read_key)])
        return reply("I have the evidence I need.")
