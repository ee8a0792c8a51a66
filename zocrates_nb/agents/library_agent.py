"""library_search_agent (a ReAct loop over the three tools) and library_synthesizer_agent.

The search agent acts only on the model's ``tool_calls`` field — text that looks
like a call is never parsed — and only the three read-only library tools exist,
so a hijacked model can at worst read more of the user's own library. Repeated
identical calls are refused with a message to the model, and a step limit bounds
the loop. Everything retrieved is recorded as evidence with its provenance.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zocrates_nb.agents.keys import KeyDirectory
from zocrates_nb.agents.prompting import evidence_preamble, system_prompt, wrap_evidence
from zocrates_nb.display.annotations import annotation_title
from zocrates_nb.display.pages import hit_library, library_fields, page_fields, page_span, select_url
from zocrates_nb.errors import ZocratesError
from zocrates_nb.protocols import ChatClient
from zocrates_nb.records import INLINE_WORDS

TOOL_NAMES = ("search_corpus", "read_document", "get_document_toc")
MAX_TOOL_RESULT_CHARS = 12_000
MAX_DOCUMENT_EVIDENCE_CHARS = 6_000
MAX_EVIDENCE_CHARS = 24_000


@dataclass
class SearchOutcome:
    """What the search agent gathered: evidence items in order found, and what it did."""

    evidence: list[dict] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)  # {"name", "arguments", "status"}
    read_keys: list[str] = field(default_factory=list)
    stopped: str = "done"  # "done" | "step-limit" | "fallback"
    #: with a chat model: the searches the question was rewritten into and the fused keys (agents/rewrite.py)
    rewrite: dict | None = None


def tool_specs(tools: Any) -> list[dict]:
    specs = getattr(tools, "TOOL_SPECS", None)
    if specs is None:
        from zocrates_nb.retrieval import tools as tools_module

        specs = tools_module.TOOL_SPECS
    return list(specs)


def hit_evidence(hit: Any, *, query: str, step: int, zotero_library: str | None = None) -> dict:
    """A search hit as an evidence record with provenance; ``zotero_library`` ("library", "groups/<id>")
    gives it the link that shows the item (an annotation: its paper) in Zotero."""
    get = (
        (lambda name, default=None: hit.get(name, default))
        if isinstance(hit, dict)
        else (lambda name, default=None: getattr(hit, name, default))
    )
    word_count = get("word_count")
    annotation = get("annotation") if get("kind") == "annotation" else None
    return {
        "source": "search_corpus",
        "query": query,
        "step": step,
        "key": get("key"),
        "kind": get("kind"),
        "parent_key": get("parent_key"),
        # an annotation is named by what it is and where: "Highlight on “Paper”, p. 12"
        "title": annotation_title(annotation, get("parent_title")) if annotation is not None else get("title"),
        "citation": get("citation"),
        "text": get("text") or "",
        "score": get("score"),
        "ranks": dict(get("ranks") or {}),
        "chunk_id": get("chunk_id"),
        "word_count": word_count,
        "section": get("section"),
        "parent_title": get("parent_title"),
        "abstract": get("abstract"),
        "inlined": get("kind") == "note" and word_count is not None and word_count < INLINE_WORDS,
        # a paper chunk from its PDF: page_start/page_end, their labels, the attachment and its open-pdf link
        **page_fields(page_span(hit), get("key") if annotation is not None else None, zotero_library),
        "zotero_select": select_url(get("parent_key") if annotation is not None else get("key"), zotero_library),
        # a PDF annotation's marks (the highlighted text, the comment, the colour, the library)
        **({"annotation": dict(annotation)} if annotation is not None else {}),
        # the library it lives in (a group's name shows in the provenance table)
        **library_fields(hit),
    }


class LibrarySearchAgent:
    """ReAct over search_corpus / read_document / get_document_toc with a step limit and no repeats."""

    def __init__(
        self,
        tools: Any,
        llm: ChatClient,
        directory: KeyDirectory,
        *,
        boundary: str,
        max_steps: int = 6,
        max_calls: int = 12,
        on_reply: Callable[[Any], None] | None = None,
        rewrite: bool | None = None,
    ) -> None:
        self.tools, self.llm, self.directory = tools, llm, directory
        self.boundary, self.max_steps, self.max_calls = boundary, max_steps, max_calls
        self.on_reply = on_reply or (lambda reply: None)
        # None: as the LLM settings say (``llm.rewrite_queries``, on by default)
        settings = getattr(llm, "settings", None)
        self.rewrite = bool(getattr(settings, "rewrite_queries", False)) if rewrite is None else rewrite

    def run(self, question: str, history: list[dict] | None = None) -> SearchOutcome:
        outcome = SearchOutcome()
        messages = [
            {"role": "system", "content": system_prompt("library_search")},
            *(history or []),
            {
                "role": "user",
                "content": f"Gather evidence from the library for this question:\n\n"
                f"{question}\n\n"
                f"{evidence_preamble(self.boundary, 'Every tool result')}",
            },
        ]
        specs = tool_specs(self.tools)
        seen: set[tuple[str, str]] = set()
        if self.rewrite:
            self._fused_search(question, messages, outcome)
        for step in range(1, self.max_steps + 1):
            reply = self.llm.chat("library_search", messages, tools=specs)
            self.on_reply(reply)
            if not reply.tool_calls:
                if step == 1 and not outcome.calls:  # a model that will not call tools still gets the library searched
                    self._execute("search_corpus", {"query": question}, outcome, step)
                    outcome.stopped = "fallback"
                return outcome
            messages.append(reply.assistant_message())
            for tool_call in reply.tool_calls:
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": tool_call.id,
                        "content": self._answer_call(tool_call, seen, outcome, step),
                    }
                )
            if len(outcome.calls) >= self.max_calls:
                break
        outcome.stopped = "step-limit"
        return outcome

    def _fused_search(self, question: str, messages: list[dict], outcome: SearchOutcome) -> None:
        """The question rewritten into a few searches, run and fused (RRF); the fused hits become the
        first search result in the conversation, and the rewrites are recorded in the trace."""
        from zocrates_nb.agents.rewrite import FUSED_K, rewrite, rrf_fuse
        from zocrates_nb.retrieval.tools import format_evidence

        queries, status = rewrite(self.llm, question, self.on_reply)
        lists: list[list[Any]] = []
        pending: dict[str, str] = {}
        last = None
        for query in queries:
            try:
                results = self.tools.search_corpus(query, k=FUSED_K)
            except ZocratesError as exc:  # e.g. a rewrite with no searchable words: the others still count
                status = f"{status}; search {query[:40]!r} failed: {exc.message}"
                continue
            lists.append(list(getattr(results, "hits", [])))
            pending.update(getattr(results, "pending", None) or {})
            last = results
        fused = rrf_fuse(lists)
        outcome.rewrite = {"queries": queries, "status": status, "fused_keys": [getattr(h, "key", None) for h in fused]}
        arguments = {"query": question, "rewrites": queries[1:], "fusion": "rrf"}
        outcome.calls.append({"name": "search_corpus", "arguments": arguments, "status": "fused"})
        if last is None:
            return
        self._remember_hits(fused, last, question, 1, outcome)
        text = format_evidence(question, fused, (), pending)
        part = {
            "id": "fused_0",
            "type": "function",
            "function": {"name": "search_corpus", "arguments": json.dumps({"query": question})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [part]})
        messages.append(
            {
                "role": "tool",
                "tool_call_id": "fused_0",
                "content": wrap_evidence(text, self.boundary, label="tool=search_corpus"),
            }
        )

    def _remember_hits(self, hits: list[Any], results: Any, query: str, step: int, outcome: SearchOutcome) -> None:
        for hit in hits:
            item = hit_evidence(hit, query=query, step=step, zotero_library=library_of(results, hit))
            self.directory.remember(
                item["key"],
                kind=item["kind"],
                title=item["title"],
                citation=item["citation"],
                parent_key=item["parent_key"],
            )
            if item["parent_key"] and item["parent_title"]:
                self.directory.remember_if_unknown(item["parent_key"], kind="paper", title=item["parent_title"])
            outcome.evidence.append(item)

    def _answer_call(self, tool_call: Any, seen: set, outcome: SearchOutcome, step: int) -> str:
        name = tool_call.name
        try:
            arguments = tool_call.parsed_arguments()
        except ValueError as exc:
            outcome.calls.append({"name": name, "arguments": tool_call.arguments, "status": "bad-arguments"})
            return f"Error: the arguments are not a JSON object ({exc}). Call the tool again with valid JSON."
        if name not in TOOL_NAMES:
            outcome.calls.append({"name": name, "arguments": arguments, "status": "unknown-tool"})
            return f"Error: there is no tool named {name!r}. Available: {', '.join(TOOL_NAMES)}."
        signature = (name, json.dumps(arguments, sort_keys=True))
        if signature in seen:
            outcome.calls.append({"name": name, "arguments": arguments, "status": "repeated"})
            return (
                f"You already called {name} with exactly these arguments; its result is above. "
                "Use a different query or key, or stop if you have enough evidence."
            )
        seen.add(signature)
        if len(outcome.calls) >= self.max_calls:
            outcome.calls.append({"name": name, "arguments": arguments, "status": "over-limit"})
            return "Tool-call limit reached: stop now and summarise what you found."
        return self._execute(name, arguments, outcome, step)

    def _execute(self, name: str, arguments: dict, outcome: SearchOutcome, step: int) -> str:
        record = {"name": name, "arguments": arguments, "status": "ok"}
        outcome.calls.append(record)
        try:
            text = self._run_tool(name, arguments, outcome, step)
        except ZocratesError as exc:  # the model can recover from a bad key or an empty query
            record["status"] = "error"
            return f"Error: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")
        except TypeError as exc:  # wrong argument names from the model
            record["status"] = "error"
            return f"Error: bad arguments for {name}: {exc}"
        if len(text) > MAX_TOOL_RESULT_CHARS:
            text = text[:MAX_TOOL_RESULT_CHARS] + "\n[… truncated; call get_document_toc and read one section]"
        return wrap_evidence(text, self.boundary, label=f"tool={name}")

    def _run_tool(self, name: str, arguments: dict, outcome: SearchOutcome, step: int) -> str:
        if name == "search_corpus":
            query = str(arguments.get("query", ""))
            k = max(1, min(int(arguments.get("k") or 8), 20))
            results = self.tools.search_corpus(query, k=k, filters=arguments.get("filters") or None)
            self._remember_hits(list(getattr(results, "hits", [])), results, query, step, outcome)
            return getattr(results, "evidence_text", "") or "No results."
        key = str(arguments.get("key", ""))
        if name == "get_document_toc":
            return json.dumps(self.tools.get_document_toc(key), ensure_ascii=False, indent=1)
        section = arguments.get("section") or None
        text = self.tools.read_document(key, section=section)
        entry = self.directory.describe(key) or {}
        if key not in outcome.read_keys:
            outcome.read_keys.append(key)
        outcome.evidence.append(
            {
                "source": "read_document",
                "step": step,
                "key": key,
                "section": section,
                "kind": entry.get("kind"),
                "parent_key": entry.get("parent_key"),
                "title": entry.get("title"),
                "citation": entry.get("citation"),
                "text": text,
                "inlined": False,
            }
        )
        return text


def library_of(results: Any, hit: Any) -> str | None:
    """Where the hit's item is in Zotero; None for a note still in the outbox (not in Zotero yet)."""
    pending = getattr(results, "pending", None) or {}
    if getattr(hit, "key", None) in pending:
        return None
    return hit_library(hit, getattr(results, "zotero_library", None))  # a group's item links into the group


def select_evidence(evidence: list[dict], limit_chars: int = MAX_EVIDENCE_CHARS) -> list[dict]:
    """Evidence for the synthesizer: read documents replace their own snippets; duplicates dropped."""
    read = {e["key"] for e in evidence if e["source"] == "read_document"}
    chosen: list[dict] = []
    seen: set = set()
    used = 0
    for item in evidence:
        if item["source"] == "search_corpus" and item["key"] in read:
            continue
        ident = (item["key"], item.get("section"), item["text"][:200])
        if ident in seen:
            continue
        seen.add(ident)
        text = item["text"][:MAX_DOCUMENT_EVIDENCE_CHARS]
        if used + len(text) > limit_chars and chosen:
            break
        used += len(text)
        chosen.append({**item, "text": text})
    return chosen


def cite_as(item: dict, directory: KeyDirectory) -> str:
    """The trusted 'how to cite' line shown above an evidence block."""
    if item.get("kind") == "paper":
        span = page_span(item)
        where = f", {span.cite()} (cite the page too)" if span is not None else ""
        return f"paper — cite as {directory.display(item['key']) or item.get('title')}{where}"
    parent = directory.display(item["parent_key"]) if item.get("parent_key") else None
    note = f"the researcher's note “{item.get('title') or 'untitled'}”"
    return f"{note} (attached to {parent})" if parent else note


def evidence_blocks(evidence: list[dict], directory: KeyDirectory, boundary: str) -> str:
    parts = []
    for number, item in enumerate(evidence, 1):
        where = f" section “{item['section']}”" if item.get("section") else ""
        parts.append(
            f"Source {number}: {cite_as(item, directory)}{where}\n"
            + wrap_evidence(item["text"], boundary, label=f"source={number}")
        )
    return "\n\n".join(parts)


class LibrarySynthesizer:
    """Writes the answer from the evidence, citing papers by author-year and notes by title."""

    def __init__(self, llm: ChatClient, directory: KeyDirectory, *, boundary: str) -> None:
        self.llm, self.directory, self.boundary = llm, directory, boundary

    def messages(self, question: str, evidence: list[dict], history: list[dict], profile_context: str) -> list[dict]:
        user = (
            f"{evidence_preamble(self.boundary)}\n\n{evidence_blocks(evidence, self.directory, self.boundary)}"
            f"\n\nQuestion: {question}"
        )
        return [
            {"role": "system", "content": system_prompt("library_synthesizer", profile_context)},
            *history,
            {"role": "user", "content": user},
        ]

    def synthesize(
        self,
        question: str,
        evidence: list[dict],
        history: list[dict],
        profile_context: str,
        *,
        profile_tokens: int = 0,
        stream_cb: Callable[[str], None] | None = None,
    ) -> Any:
        return self.llm.chat(
            "library_synthesizer",
            self.messages(question, evidence, history, profile_context),
            stream_cb=stream_cb,
            profile_tokens=profile_tokens,
        )
