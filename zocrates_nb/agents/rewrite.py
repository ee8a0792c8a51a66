"""Query rewriting for the library search: one question, a few searches, one fused list.

Why: a researcher's question is rarely the best query. With a chat model configured, the library
search agent first asks it (role ``query_rewriter``, JSON mode) for keywords, a hypothetical answer
passage and the methods the question names; each is searched like the question itself and the
lists are fused by reciprocal rank (RRF, k = 60: no list's scores need to be comparable). The fused
hits are the agent's first search result, so it starts from them. Without a model none of this runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from zocrates_nb.agents.prompting import system_prompt
from zocrates_nb.protocols import ChatClient

ROLE = "query_rewriter"
MAX_QUERIES = 4  # the question and at most three rewrites
MAX_QUERY_CHARS = 400
RRF_K = 60
FUSED_K = 8


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        value = " ".join(str(v) for v in value if isinstance(v, (str, int, float)))
    return " ".join(str(value).split())[:MAX_QUERY_CHARS] if isinstance(value, (str, list, tuple)) else ""


def parse_rewrites(question: str, content: str) -> tuple[list[str], str]:
    """The searches to run: the question, then keywords, hypothetical answer and methods, each once.

    The status is "ok", or "unparsed" when the model's reply was not the JSON object asked for
    (then only the question is searched)."""
    try:
        data = json.loads(content or "")
    except ValueError:
        return [question], "unparsed"
    if not isinstance(data, dict):
        return [question], "unparsed"
    queries = [question]
    for name in ("keywords", "hypothetical_answer", "methods"):
        query = _text(data.get(name, ""))
        if query and query.casefold() not in {q.casefold() for q in queries}:
            queries.append(query)
    return queries[:MAX_QUERIES], "ok"


def rewrite(llm: ChatClient, question: str, on_reply: Callable[[Any], None]) -> tuple[list[str], str]:
    """Ask the model for the rewrites of ``question`` (one JSON-mode call of role ``query_rewriter``)."""
    messages = [{"role": "system", "content": system_prompt(ROLE)}, {"role": "user", "content": question}]
    reply = llm.chat(ROLE, messages, json_mode=True)
    on_reply(reply)
    return parse_rewrites(question, reply.content)


def rrf_fuse(lists: Sequence[Sequence[Any]], *, k: int = RRF_K, limit: int = FUSED_K) -> list[Any]:
    """Reciprocal-rank fusion of hit lists, one hit per document (its first passage seen); ties keep
    the order in which documents first appeared."""
    scores: dict[Any, float] = {}
    first: dict[Any, Any] = {}
    for hits in lists:
        for rank, hit in enumerate(hits, 1):
            ident = getattr(hit, "key", None) or getattr(hit, "chunk_id", None) or id(hit)
            scores[ident] = scores.get(ident, 0.0) + 1.0 / (k + rank)
            first.setdefault(ident, hit)
    order = {ident: i for i, ident in enumerate(first)}
    ranked = sorted(scores, key=lambda ident: (-scores[ident], order[ident]))
    return [first[ident] for ident in ranked[:limit]]
