"""The three agent tools — search_corpus, read_document, get_document_toc — and their evidence text.

The evidence text is a contract the agents (and their prompts) read:

- a note under ``INLINE_WORDS`` words is *inlined* as a multiline blockquote
  (``> `` on every line, plain text), so the agent needs no ``read_document`` call;
- a longer note is *referenced*: title, extractive abstract and
  ``call read_document("KEY")``;
- provenance headers carry both keys where there are two: ``[Note Key: K, Parent
  Paper Key: P]`` for child notes, ``[Note Key: K]`` for standalone notes,
  ``[Paper Key: P]`` for paper chunks (title, first author, year, text; ``[Paper Key: P, p. 12]`` from its PDF),
  ``[Annotation on Paper Key: P, p. 12]`` for a PDF annotation (the paper, the highlighted words, the comment).

Untrusted text (notes, papers) can never forge a header: inlined lines are all
prefixed with ``> `` and other passages are folded onto one line. The tools hand back
data; in notebooks ``SearchResults`` renders through the one renderer, ``zocrates_nb.display.render``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from zocrates_nb.display.annotations import annotation_fields, annotation_label
from zocrates_nb.display.pages import hit_library, library_fields, page_fields, select_url
from zocrates_nb.errors import QueryError, ZocratesError
from zocrates_nb.index.rank.ranking import SearchHit, prepare_query
from zocrates_nb.protocols import EventSink, NullEventSink, SearchIndex
from zocrates_nb.records import INLINE_WORDS

# re-exported: the tools' JSON schemas for the model live in retrieval/tool_specs.py
from zocrates_nb.retrieval.tool_specs import MAX_AGENT_K, TOOL_SPECS

__all__ = [
    "LibraryTools",
    "SearchResults",
    "TOOL_SPECS",
    "INLINE_WORDS",
    "format_hit",
    "format_evidence",
    "markdown_to_plain",
]

_EXCERPT_WORDS = 80
_MAX_K = MAX_AGENT_K
MAX_PUBLIC_K = 1000  # wb.search / `zocrates-nb search`: people page through long result lists


# ---------------------------------------------------------------------------- evidence text (pure)


def markdown_to_plain(markdown: str) -> str:
    """Strip Markdown syntax so an inlined note reads as plain text (line breaks kept)."""
    lines = []
    for line in (markdown or "").splitlines():
        line = re.sub(r"^\s{0,3}#{1,6}\s+", "", line)  # headings
        line = re.sub(r"^\s*>\s?", "", line)  # the note's own quotes
        line = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", line)  # images → alt text
        line = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", line)  # links → link text
        line = re.sub(r"(\*\*|__|`)", "", line)  # bold, code ticks
        line = line.rstrip()
        if line.strip():
            lines.append(line)
    return "\n".join(lines)


def _one_line(text: str, max_words: int | None = None) -> str:
    words = markdown_to_plain(text).split()
    if max_words is not None and len(words) > max_words:
        return " ".join(words[:max_words]) + " …"
    return " ".join(words)


def _without_title(text: str, title: str) -> str:
    """The note's opening without its first line when that line is the title (Zotero's note title)."""
    plain = markdown_to_plain(text)
    first, _, rest = plain.partition("\n")
    return rest if title and first.strip() == title.strip() and rest.strip() else plain


def _word_count(hit: SearchHit) -> int:
    return hit.word_count if hit.word_count is not None else len(hit.text.split())


def note_header(hit: SearchHit) -> str:
    if hit.parent_key:
        return f"[Note Key: {hit.key}, Parent Paper Key: {hit.parent_key}]"
    return f"[Note Key: {hit.key}]"


def is_inlined(hit: SearchHit) -> bool:
    return hit.kind == "note" and _word_count(hit) < INLINE_WORDS


def annotation_block(hit: SearchHit) -> str:
    """``[Annotation on Paper Key: P, p. 12]``, the paper, the highlighted words and the comment (one line each)."""
    facts = hit.annotation or {}
    where = f"Paper Key: {hit.parent_key}" if hit.parent_key else f"PDF Key: {facts.get('attachment_key') or '?'}"
    page = _one_line(str(facts.get("page_label") or ""))
    lines = [f"[Annotation on {where}{', p. ' + page if page else ''}]"]
    if hit.parent_title:
        lines.append(f"Paper: {_one_line(hit.parent_title)}")
    label = annotation_label(facts)
    if facts.get("color_meaning"):
        label += f", {facts.get('color_name') or facts.get('color')} = {facts['color_meaning']}"
    if facts.get("text"):
        lines.append(f"Highlighted ({_one_line(label)}): {_one_line(str(facts['text']))}")
    if facts.get("comment"):
        lines.append(
            f"Comment{'' if facts.get('text') else ' (' + _one_line(label) + ')'}: {_one_line(str(facts['comment']))}"
        )
    if len(lines) == (2 if hit.parent_title else 1):  # no facts (an index from before): the indexed text
        lines.append(f"Text: {_one_line(hit.text)}")
    return "\n".join(lines)


def format_hit(hit: SearchHit, pending_reason: str | None = None) -> str:
    """The evidence block for one hit (module docstring); ``pending_reason``: the note waits in the outbox."""
    if hit.kind == "annotation":
        return annotation_block(hit)
    if hit.kind == "note":
        lines = [note_header(hit)]
        if pending_reason is not None:
            lines.append(f"Not yet in Zotero (waiting in the outbox): {_one_line(pending_reason, 30)}")
        if hit.parent_key and hit.parent_title:
            lines.append(f"Parent paper: {_one_line(hit.parent_title)}")
        if is_inlined(hit):
            lines.extend(f"> {line}" for line in markdown_to_plain(hit.text).splitlines())
            return "\n".join(lines)
        lines.append(f"Title: {_one_line(hit.title) or '(untitled)'}")
        abstract = hit.abstract or _without_title(hit.text, hit.title)
        lines.append(f"Abstract: {_one_line(abstract, _EXCERPT_WORDS)}")
        if not hit.chunk_id.endswith(":0"):  # the first passage is what the abstract summarises
            show_section = hit.section and hit.section.strip() != hit.title.strip()
            where = f' (section "{_one_line(hit.section or "")}")' if show_section else ""
            lines.append(f"Matching passage{where}: {_one_line(hit.text, _EXCERPT_WORDS)}")
        lines.append(f'Full note ({_word_count(hit)} words): call read_document("{hit.key}")')
        return "\n".join(lines)
    lines = [
        f"[Paper Key: {hit.key}{', ' + _one_line(hit.pages.cite()) if hit.pages is not None else ''}]",
        f"Title: {_one_line(hit.title) or '(untitled)'}",
        f"First author: {hit.first_author or 'unknown'}; Year: {hit.year or 'n.d.'}",
    ]
    if hit.section:
        lines.append(f"Section: {_one_line(hit.section)}")
    lines.append(f"Text: {_one_line(hit.text)}")
    return "\n".join(lines)


def format_evidence(
    query: str, hits: list[SearchHit], notices: Sequence[str] = (), pending: Mapping[str, str] | None = None
) -> str:
    """What an agent reads: notices, a summary, one block per hit (``pending``: outbox keys → why)."""
    pending = pending or {}
    head = [f"Notice: {n}" for n in notices]
    if not hits:
        head.append(f'No results for "{_one_line(query, 30)}". Try other words or fewer filters.')
        return "\n".join(head)
    head.append(f'{len(hits)} result{"s" if len(hits) != 1 else ""} for "{_one_line(query, 30)}":')
    return "\n".join(head) + "\n\n" + "\n\n".join(with_library(format_hit(h, pending.get(h.key)), h) for h in hits)


def with_library(block: str, hit: SearchHit) -> str:
    """A group library's item says so under its header (``Library: Lab reading (group)``), so an answer
    can tell the lab's shared reading from the user's own; the user's own library goes unsaid."""
    library = hit.library
    if library is None or getattr(library, "kind", "user") != "group":
        return block
    header, _, rest = block.partition("\n")
    line = f"Library: {_one_line(library.name)} (group)"
    return f"{header}\n{line}\n{rest}" if rest else f"{header}\n{line}"


# ---------------------------------------------------------------------------- results object


@dataclass
class SearchResults:
    """What ``search_corpus`` returns: structured hits, the agents' evidence text, and an HTML view."""

    query: str
    hits: list[SearchHit]
    evidence_text: str
    notice: str | None = None
    mode: str = "hybrid"
    filters: dict = field(default_factory=dict)
    latency_ms: float = 0.0
    #: hits saved here that wait in the outbox, key → why: they are not in Zotero yet
    pending: dict[str, str] = field(default_factory=dict)
    #: "library" or "groups/<id>" for a Zotero library (hits link into it), None for the demo library
    zotero_library: str | None = None

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[SearchHit]:
        return iter(self.hits)

    def __getitem__(self, i: int) -> SearchHit:
        return self.hits[i]

    def keys(self) -> list[str]:
        return [h.key for h in self.hits]

    def to_dict(self) -> dict:
        """JSON-ready (the CLI's ``search --json``): keys, kind, ranks, evidence text."""
        return {
            "query": self.query,
            "mode": self.mode,
            "filters": self.filters,
            "notice": self.notice,
            "latency_ms": self.latency_ms,
            "evidence_text": self.evidence_text,
            "hits": [
                {
                    "key": h.key,
                    "kind": h.kind,
                    "parent_key": h.parent_key,
                    "title": h.title,
                    "chunk_id": h.chunk_id,
                    "score": h.score,
                    "ranks": dict(h.ranks),
                    "inlined": is_inlined(h),
                    "citation": h.citation,
                    "pending": h.key in self.pending,  # true: saved here, not yet in Zotero (outbox)
                    "pending_reason": self.pending.get(h.key),
                    # shows the item in Zotero (an annotation: its paper; the reader link selects the annotation)
                    "zotero_select": select_url(h.parent_key if h.kind == "annotation" else h.key, where),
                    # page_start/page_end (from 1), their labels, the open-pdf link (into this library)
                    **page_fields(h.pages, library=where),
                    # an annotation's: type, highlighted text, comment, colour, page label, attachment, library
                    **annotation_fields(h, library=where),
                    # the library it lives in: library_id, its name, kind and zotero.org group id
                    **library_fields(h),
                }
                for h, where in ((h, hit_library(h, self.zotero_library)) for h in self.hits)
            ],
        }

    def __repr__(self) -> str:
        return f"<SearchResults {self.query!r}: {len(self.hits)} hits, {self.mode}>"

    def __str__(self) -> str:
        return self.evidence_text

    def _repr_html_(self) -> str:
        from zocrates_nb.display.render import render_search_results  # the one renderer (sanitized, escaped)

        return render_search_results(
            self.hits,
            query=self.query,
            mode=self.mode,
            latency_ms=self.latency_ms,
            notice=self.notice,
            pending=self.pending,
            zotero_library=self.zotero_library,
        )


# ---------------------------------------------------------------------------- the tools


class LibraryTools:
    """The agent-facing tools over one corpus and index; every search emits a ``search`` event."""

    #: keys of notes waiting in the outbox → why; set by the wiring (the tools never open the outbox),
    #: asked once per search and only when a note was found
    pending: Callable[[], Mapping[str, str]] | None = None
    #: "library" / "groups/<id>" when the source is a Zotero library (set by the wiring), else None
    zotero_library: str | None = None
    #: filters every search keeps to (``scoped``); None: none
    scope: Mapping[str, str] | None = None

    def __init__(
        self, corpus: Any, index: SearchIndex, events: EventSink | None = None, *, mode: str = "hybrid"
    ) -> None:
        self.corpus = corpus
        self.index = index
        self.events: EventSink = events if events is not None else NullEventSink()
        self.mode = mode

    @contextmanager
    def scoped(self, library: str | None) -> Iterator[None]:
        """Every search inside keeps to ``library`` (a name or id; None: all libraries): ``ask --library``.

        The name is checked first, so a typo is refused before any agent runs instead of answering
        from nothing."""
        if not library:
            yield
            return
        found = self.index.resolve_library(library)  # raises a QueryError that lists the libraries
        previous, self.scope = self.scope, {"library": str(found.library_id)}
        try:
            yield
        finally:
            self.scope = previous

    def _pending_among(self, hits: Sequence[SearchHit]) -> dict[str, str]:
        if self.pending is None or not any(h.kind == "note" for h in hits):
            return {}
        waiting = self.pending()
        return {h.key: waiting[h.key] for h in hits if h.kind == "note" and h.key in waiting}

    def search_corpus(
        self,
        query: str,
        k: int = 10,
        filters: Mapping[str, Any] | None = None,
        mode: str | None = None,
        *,
        max_k: int = _MAX_K,
    ) -> SearchResults:
        """Hybrid search over notes and papers; one result per document, best passage first.

        ``k`` is capped at ``max_k`` (50 for the agents; the workbench and CLI pass MAX_PUBLIC_K).
        """
        started = time.perf_counter()
        mode = mode or self.mode
        text, _ = prepare_query(query)  # raises QueryError on empty input
        try:
            asked = int(k)
        except (TypeError, ValueError):
            raise QueryError(f"k must be a whole number, got {k!r}.", hint="For example k=10.") from None
        k = max(1, min(asked, max_k))
        if self.scope:  # ask --library: the agents' own filters never widen it
            filters = {**(filters or {}), **self.scope}
        hits, notices = self.index.search_with_notices(query, k=k, filters=filters, mode=mode)
        if asked > max_k:
            notices.append(f"k={asked} was capped at {max_k} results.")
        pending = self._pending_among(hits)
        latency_ms = round((time.perf_counter() - started) * 1000, 2)
        results = SearchResults(
            query=text,
            hits=hits,
            evidence_text=format_evidence(text, hits, notices, pending),
            pending=pending,
            notice=" ".join(notices) or None,
            mode=mode,
            filters=dict(filters or {}),
            latency_ms=latency_ms,
            zotero_library=self.zotero_library,
        )
        self.events.emit(
            "search",
            query=text,
            k=k,
            mode=mode,
            filters=dict(filters or {}),
            latency_ms=latency_ms,
            results=[
                {
                    "key": h.key,
                    "kind": h.kind,
                    "lexical_rank": h.ranks.get("lexical"),
                    "dense_rank": h.ranks.get("dense"),
                    "score": h.score,
                }
                for h in hits
            ],
        )
        return results

    def read_document(self, key: str, section: str | None = None) -> str:
        """The document's Markdown (or one section of it); the corpus records the ``read`` event."""
        return self.corpus.read_document(key, section=section)

    def get_document_toc(self, key: str) -> list[dict]:
        return self.corpus.get_document_toc(key)

    def call_tool(self, name: str, arguments: str | Mapping[str, Any] | None) -> str:
        """Run a tool call from an LLM and return the text it reads back.

        Errors the model can act on (unknown key, empty query, bad filter) come back as
        text with the hint, so the agent can correct itself instead of the turn failing.
        """
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
        except json.JSONDecodeError as exc:
            return f"Error: the arguments were not valid JSON ({exc.msg})."
        try:
            if name == "search_corpus":
                return self.search_corpus(
                    args.get("query", ""), k=args.get("k", 10), filters=args.get("filters")
                ).evidence_text
            if name == "read_document":
                return self.read_document(str(args.get("key", "")), section=args.get("section"))
            if name == "get_document_toc":
                return json.dumps(self.get_document_toc(str(args.get("key", ""))), ensure_ascii=False, indent=1)
        except ZocratesError as exc:
            return f"Error: {exc.message}" + (f"\nHint: {exc.hint}" if exc.hint else "")
        return f"Error: unknown tool {name!r}; use search_corpus, read_document or get_document_toc."
