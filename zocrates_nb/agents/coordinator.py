"""coordinator_agent: runs one chat turn from question to key-free answer.

Each turn: read the profile from the config (so an edit between turns applies
to the next turn) into ``state_delta["user_research_profile_str"]``; pick a
route (library, online or both); run the library search agent and the library
synthesizer and/or the online synthesizer; clean keys out of the text; record
usage and an ``answer`` event. With no language model configured, the same
search path produces an evidence-only answer.

Routing: questions that plainly ask for papers outside the library ("new
papers", "not in my library", "what should I read next") go online without a
model call; otherwise, when an online search client is wired in, the
coordinator model replies ``{"route": …}``; without one the route is "library".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from zocrates_nb.agents.answer import Answer, ChatSession, Citation, Turn, TurnUsage
from zocrates_nb.agents.citecheck import Verification, mark, summary_line, verify
from zocrates_nb.agents.clean import StreamCleaner, clean_user_facing_synthesis
from zocrates_nb.agents.evidence_only import citations_for, evidence_only_answer
from zocrates_nb.agents.keys import DirectoryKeyMap, KeyDirectory, note_citation
from zocrates_nb.agents.library_agent import LibrarySearchAgent, LibrarySynthesizer, select_evidence
from zocrates_nb.agents.online import LibraryIdentity, OnlineSynthesizer
from zocrates_nb.agents.online_clients import OnlineSearchError
from zocrates_nb.agents.prompting import new_boundary, system_prompt
from zocrates_nb.errors import QueryError
from zocrates_nb.protocols import ChatClient, EventSink, NullEventSink
from zocrates_nb.settings.profile import format_user_research_profile_context

__all__ = ["Coordinator", "ChatSession", "Answer", "Citation", "deterministic_route"]

MAX_QUESTION_CHARS = 8_000
ROUTES = ("library", "online", "both")
_ONLINE_RE = re.compile(
    r"\b(?:new|newer|recent|latest|more|other|related)\s+(?:papers?|preprints?|articles?|publications?|work)\b"
    r"|\bnot\s+(?:yet\s+)?in\s+my\s+(?:library|zotero|collection)\b|\bmissing\s+from\s+my\s+library\b"
    r"|\bwhat\s+should\s+I\s+read\s+next\b|\bon\s+(?:openalex|arxiv)\b",
    re.IGNORECASE,
)
_LIBRARY_TOO_RE = re.compile(
    r"\b(?:my|our)\s+(?:notes?|library|papers)\s+(?:say|says|said|cover)\b"
    r"|\band\s+(?:what\s+)?(?:in\s+)?my\s+(?:notes|library)\b",
    re.IGNORECASE,
)
NOTHING_FOUND = (
    "I found nothing in your library that addresses this question. Try other words, "
    "or ask for new papers online (e.g. “find new papers on …”)."
)


def deterministic_route(question: str) -> str | None:
    """ "online"/"both" when the wording settles it, else None (ask the coordinator model)."""
    if not _ONLINE_RE.search(question):
        return None
    return "both" if _LIBRARY_TOO_RE.search(question) else "online"


def parse_route(content: str) -> tuple[str, str]:
    """(route, online_query) from the coordinator's JSON reply; "library" when it is unusable."""
    match = re.search(r"\{.*\}", content or "", re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else {}
    except json.JSONDecodeError:
        data = {}
    route = data.get("route") if isinstance(data, dict) else None
    query = data.get("online_query") if isinstance(data, dict) else None
    return (route if route in ROUTES else "library"), (query if isinstance(query, str) else "")


class Coordinator:
    """Answers questions over one library: ``ask(question, session=None, on_token=None) -> Answer``."""

    def __init__(
        self,
        tools: Any,
        config: Any,
        llm_factory: Callable[[], ChatClient | None] | None,
        events: EventSink | None = None,
        online: Any = None,
        *,
        max_search_steps: int = 6,
        history_turns: int = 6,
    ) -> None:
        self.tools = tools
        self.config = config
        self.llm_factory = llm_factory
        self.events: EventSink = events if events is not None else NullEventSink()
        self.online = online
        self.max_search_steps = max_search_steps
        self.history_turns = history_turns

    def new_session(self) -> ChatSession:
        return ChatSession()

    # -- one turn -----------------------------------------------------------------------
    def ask(
        self, question: str, session: ChatSession | None = None, on_token: Callable[[str], None] | None = None
    ) -> Answer:
        """Answer ``question`` in ``session`` (a new one when None); stream text to ``on_token``."""
        question, notices = self._check_question(question)
        session = session if session is not None else ChatSession()
        turn = Turn(question)
        profile_context = self._start_turn(turn, session)
        directory = KeyDirectory(self.tools)
        key_map = DirectoryKeyMap(directory)
        cleaner = StreamCleaner(key_map, on_token) if on_token else None
        llm = self.llm_factory() if self.llm_factory is not None else None
        if llm is None:
            answer = self._evidence_only(question, session, directory, key_map, on_token)
        else:
            if hasattr(llm, "session"):
                llm.session = session.id
            answer = self._with_llm(llm, question, session, profile_context, directory, key_map, cleaner)
        answer.notices[:0] = notices
        turn.answer = answer
        session.turns.append(turn)
        session.history += [{"role": "user", "content": question}, {"role": "assistant", "content": answer.text}]
        # The event log's own session, not the chat's: the diagnostics join an answer's
        # citations to the searches of the same session, and the tools log those with it.
        self.events.emit(
            "answer",
            chat_session=session.id,
            question=question,
            cited_keys=answer.cited_keys,
            read_keys=answer.read_keys,
            mode=answer.mode,
            route=answer.route,
            evidence_keys=sorted({e["key"] for e in answer.evidence if e.get("key")}),
            **_verification_fields(answer.verification),
            **_synthesizer(llm, answer.route),
        )
        return answer

    def _check_question(self, question: str) -> tuple[str, list[str]]:
        if not isinstance(question, str) or not question.strip():
            raise QueryError("The question is empty.", 'type a question, e.g. ask("What do my notes say about …?")')
        from zocrates_nb.textnorm import clean_text

        question = clean_text(question).strip()  # lone surrogates would crash tokenizer and HTTP client
        if len(question) > MAX_QUESTION_CHARS:
            return question[:MAX_QUESTION_CHARS], [
                f"The question was cut to its first {MAX_QUESTION_CHARS} characters."
            ]
        return question, []

    def _start_turn(self, turn: Turn, session: ChatSession) -> str:
        """Read the profile now (edits apply from the next turn on) and record it in the state delta."""
        profile_context = format_user_research_profile_context(self.config.profile())
        turn.state_delta["user_research_profile_str"] = profile_context
        session.state.update(turn.state_delta)
        return profile_context

    # -- evidence-only ------------------------------------------------------------------
    def _evidence_only(
        self,
        question: str,
        session: ChatSession,
        directory: KeyDirectory,
        key_map: DirectoryKeyMap,
        on_token: Callable[[str], None] | None,
    ) -> Answer:
        raw, evidence, read_keys = evidence_only_answer(self.tools, question, directory)
        text, verification = self._checked(clean_user_facing_synthesis(raw, key_map), evidence, directory, question)
        if on_token:
            on_token(text)
        citations = [Citation(**c) for c in citations_for(evidence, directory)]
        return Answer(
            text=text,
            citations=citations,
            evidence=evidence,
            usage=TurnUsage().as_dict(),
            mode="evidence-only",
            session_id=session.id,
            question=question,
            route="library",
            read_keys=read_keys,
            cited_keys=[c.key for c in citations],
            verification=verification,
        )

    # -- with a language model ----------------------------------------------------------
    def _with_llm(
        self,
        llm: ChatClient,
        question: str,
        session: ChatSession,
        profile_context: str,
        directory: KeyDirectory,
        key_map: DirectoryKeyMap,
        cleaner: StreamCleaner | None,
    ) -> Answer:
        from zocrates_nb.tokens import count_tokens

        usage = TurnUsage()
        record = lambda reply: usage.add(reply.role, reply.usage)  # noqa: E731
        profile_tokens = count_tokens(profile_context) if profile_context else 0
        history = session.recent_history(self.history_turns)
        boundary = new_boundary()
        notices: list[str] = []
        route, online_query = self._route(llm, question, history, profile_context, profile_tokens, record)
        if route in ("online", "both") and self.online is None:
            notices.append("Online search is not set up here, so this answer uses your library only.")
            route = "library"
        emit = cleaner.feed if cleaner else None
        raw_parts: list[str] = []
        evidence: list[dict] = []
        read_keys: list[str] = []
        citations: list[Citation] = []
        if route in ("library", "both"):
            agent = LibrarySearchAgent(
                self.tools, llm, directory, boundary=boundary, max_steps=self.max_search_steps, on_reply=record
            )
            outcome = agent.run(question, history)
            read_keys = outcome.read_keys
            evidence = select_evidence(outcome.evidence)
            if evidence:
                reply = LibrarySynthesizer(llm, directory, boundary=boundary).synthesize(
                    question, evidence, history, profile_context, profile_tokens=profile_tokens, stream_cb=emit
                )
                record(reply)
                raw_parts.append(reply.content)
            else:
                raw_parts.append(NOTHING_FOUND)
                if emit:
                    emit(NOTHING_FOUND)
            citations += self._library_citations(raw_parts[-1], evidence, directory)
        if route in ("online", "both"):
            if raw_parts:
                heading = "\n\n## Papers not yet in your library\n\n"
                raw_parts.append(heading)
                if emit:
                    emit(heading)
            online_text, online_evidence, online_citations = self._online(
                llm, question, online_query, evidence, profile_context, profile_tokens, emit, record, notices
            )
            raw_parts.append(online_text)
            evidence += online_evidence
            citations += online_citations
        if cleaner:
            cleaner.flush()
        text, verification = self._checked(
            clean_user_facing_synthesis("".join(raw_parts), key_map), evidence, directory, question
        )
        if cleaner and verification.cited:  # the marks show when the answer is rendered whole
            cleaner.emit(footer_of(verification))
        return Answer(
            text=text,
            citations=citations,
            evidence=evidence,
            usage=usage.as_dict(),
            mode="llm",
            session_id=session.id,
            question=question,
            route=route,
            read_keys=read_keys,
            cited_keys=[c.key for c in citations if c.key],
            notices=notices,
            verification=verification,
        )

    def _checked(
        self, text: str, evidence: list[dict], directory: KeyDirectory, question: str
    ) -> tuple[str, Verification]:
        """The answer with each citation checked against this turn's evidence: failures marked where
        they stand, and the "Citations verified k/n" line after it."""
        parent_keys = sorted({e["parent_key"] for e in evidence if e.get("parent_key")})
        parents = {key: directory.describe(key) or {} for key in parent_keys}
        resolves = getattr(self.online, "resolve_doi", None)
        verification = verify(text, evidence, parents, question=question, doi_resolves=resolves)
        return mark(text, verification) + (footer_of(verification) if verification.cited else ""), verification

    def _route(
        self,
        llm: ChatClient,
        question: str,
        history: list[dict],
        profile_context: str,
        profile_tokens: int,
        record: Callable,
    ) -> tuple[str, str]:
        fixed = deterministic_route(question)
        if fixed is not None or self.online is None:
            return fixed or "library", ""
        messages = [
            {"role": "system", "content": system_prompt("coordinator", profile_context)},
            *history,
            {"role": "user", "content": question},
        ]
        reply = llm.chat("coordinator", messages, profile_tokens=profile_tokens)
        record(reply)
        return parse_route(reply.content)

    def _online(
        self,
        llm: ChatClient,
        question: str,
        online_query: str,
        evidence: list[dict],
        profile_context: str,
        profile_tokens: int,
        emit: Callable | None,
        record: Callable,
        notices: list[str],
    ) -> tuple[str, list[dict], list[Citation]]:
        try:
            identity = LibraryIdentity.from_tools(self.tools, evidence)
            result = OnlineSynthesizer(self.online, llm, boundary=new_boundary()).run(
                question, online_query, identity, profile_context, profile_tokens=profile_tokens, stream_cb=emit
            )
        except OnlineSearchError as exc:  # the library part of the answer still stands
            text = f"Online search failed: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")
            notices.append(text)
            if emit:
                emit(text)
            return text, [], []
        if result.reply is not None:
            record(result.reply)
        elif emit:
            emit(result.text)
        online_evidence = [{"source": c.source, **c.to_json(), "kind": "online"} for c in result.candidates]
        online_citations = [
            Citation(
                title=c.title,
                citation=c.citation,
                kind="online",
                url=c.url or (f"https://doi.org/{c.doi}" if c.doi else None),
            )
            for c in result.candidates
            if _mentions(result.text, c.title, c.citation)
        ]
        return result.text, online_evidence, online_citations

    @staticmethod
    def _library_citations(raw: str, evidence: list[dict], directory: KeyDirectory) -> list[Citation]:
        out: list[Citation] = []
        seen: set[str] = set()
        for item in evidence:
            key = item.get("key")
            if not key or key in seen:
                continue
            entry = directory.describe(key) or {}
            title = entry.get("title") or item.get("title") or "untitled"
            citation = entry.get("citation") or item.get("citation") or ""
            if key in raw or _mentions(raw, title, citation if item.get("kind") == "paper" else None):
                seen.add(key)
                kind = item.get("kind") or "note"
                parent = directory.describe(item["parent_key"]) if item.get("parent_key") else None
                if kind == "note":
                    citation = note_citation(parent)
                out.append(
                    Citation(
                        title=title,
                        citation=citation,
                        kind=kind,
                        key=key,
                        parent_title=(parent or {}).get("title") or item.get("parent_title"),
                    )
                )
        return out


def _mentions(text: str, title: str | None, citation: str | None) -> bool:
    lowered = (text or "").lower()
    if title and len(title) >= 6 and title.lower() in lowered:
        return True
    return bool(citation and citation.lower() in lowered)


def footer_of(verification: Verification) -> str:
    """The line an answer ends with: "*Citations verified 3/3.*" (with the reasons of any failure)."""
    return f"\n\n*{summary_line(verification)}*"


def _verification_fields(verification: Verification | None) -> dict:
    """The answer event's citation figures, for the diagnostics' ``citation_checks`` view."""
    if verification is None:
        return {}
    return {
        "citations_cited": verification.cited,
        "citations_verified": verification.verified,
        "citation_failures": verification.failures_by_reason(),
    }


def _synthesizer(llm: ChatClient | None, route: str) -> dict:
    """Which role and model wrote the answer (none for evidence-only): the diagnostics' per-model rates."""
    if llm is None:
        return {}
    role = "online_synthesizer" if route == "online" else "library_synthesizer"
    model_for = getattr(llm, "model_for", None)
    return {"role": role, "model": model_for(role) if model_for is not None else None}
