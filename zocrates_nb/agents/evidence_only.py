"""Evidence-only answers: the default when no language model is configured.

Same search path as the agents (``search_corpus``, then ``read_document`` for the
top long notes), no model call: the answer is the strongest evidence, quoted,
with titles and author-year citations, labelled so nobody mistakes it for a
synthesis. This is what ``zocrates-nb demo`` shows out of the box.
"""

from __future__ import annotations

import re
from typing import Any

from zocrates_nb.agents.keys import KeyDirectory, note_citation
from zocrates_nb.agents.library_agent import hit_evidence, library_of
from zocrates_nb.display.annotations import annotation_label
from zocrates_nb.display.pages import page_span

LABEL = "Evidence from your library (no language model configured)"
CONFIGURE_HINT = "For a written answer, configure a model: `zocrates-nb llm set --base-url URL --model NAME`."
MAX_SOURCES = 5
READ_LONG_NOTES = 2
QUOTE_WORDS = 120
_WORD_RE = re.compile(r"[A-Za-z0-9]{3,}")


def _terms(text: str) -> set[str]:
    return {w.lower() for w in _WORD_RE.findall(text or "")}


def best_passage(markdown: str, question: str, max_words: int = QUOTE_WORDS) -> str:
    """The paragraph of a document that shares most words with the question (headings skipped)."""
    wanted = _terms(question)
    paragraphs = [
        p.strip() for p in re.split(r"\n\s*\n", markdown or "") if p.strip() and not p.lstrip().startswith("#")
    ]
    if not paragraphs:
        return ""
    best = max(paragraphs, key=lambda p: (len(wanted & _terms(p)), -paragraphs.index(p)))
    return _trim(best, max_words)


def _trim(text: str, max_words: int) -> str:
    """At most ``max_words`` words, keeping line breaks (lists stay lists)."""
    lines, used = [], 0
    for line in (text or "").strip().splitlines():
        words = line.split()
        if used + len(words) > max_words:
            lines.append(" ".join(words[: max_words - used]) + " …")
            break
        lines.append(line.rstrip())
        used += len(words)
    return "\n".join(lines)


def _quote(text: str, max_words: int = QUOTE_WORDS) -> str:
    lines = [line for line in _trim(text, max_words).splitlines() if line.strip()]
    return "\n".join(f"> {line}" for line in lines) or "> (empty)"


def paper_citation(item: dict) -> str:
    """ "Ståhl et al., 2016, p. 12": the author-year citation with the pages of a passage from the PDF."""
    span = page_span(item)
    return ", ".join(part for part in (item.get("citation"), span.cite() if span else None) if part)


def _heading(item: dict, directory: KeyDirectory) -> str:
    if item["kind"] == "paper":
        cited = paper_citation(item)
        return f"**{item['title'] or 'Untitled paper'}**" + (f" ({cited})" if cited else "")
    parent = directory.display(item["parent_key"]) if item.get("parent_key") else None
    if item["kind"] == "annotation":  # "Your highlight on *Paper* (Cable et al., 2022), p. 12"
        facts = item.get("annotation") or {}
        page = f", p. {facts['page_label']}" if facts.get("page_label") else ""
        return f"Your {annotation_label(facts)} on {parent or 'a PDF'}{page}"
    return f"Your note **“{item['title'] or 'untitled'}”**" + (f", on {parent}" if parent else "")


def _body(item: dict) -> str:
    """The quoted passage; an annotation's highlighted words quoted, then the reader's comment."""
    facts = item.get("annotation") if item["kind"] == "annotation" else None
    if not facts:
        return _quote(item["text"])
    quoted = _quote(facts["text"]) if facts.get("text") else ""
    comment = f"Your comment: {_trim(str(facts['comment']), QUOTE_WORDS)}" if facts.get("comment") else ""
    return "\n\n".join(part for part in (quoted, comment) if part) or _quote(item["text"])


def evidence_only_answer(
    tools: Any, question: str, directory: KeyDirectory, *, k: int = 8
) -> tuple[str, list[dict], list[str]]:
    """(Markdown answer, evidence with provenance, keys read). The text may still contain keys
    that came from note text; the coordinator cleans it like any other answer."""
    results = tools.search_corpus(question, k=k)
    evidence: list[dict] = []
    read_keys: list[str] = []
    seen: set[str] = set()
    for hit in getattr(results, "hits", []):
        item = hit_evidence(hit, query=question, step=1, zotero_library=library_of(results, hit))
        directory.remember(
            item["key"],
            kind=item["kind"],
            title=item["title"],
            citation=item["citation"],
            parent_key=item["parent_key"],
        )
        if item["parent_key"] and item.get("parent_title"):
            directory.remember_if_unknown(item["parent_key"], kind="paper", title=item["parent_title"])
        if item["key"] in seen:
            continue
        seen.add(item["key"])
        if item["kind"] == "note" and not item["inlined"] and len(read_keys) < READ_LONG_NOTES:
            full = tools.read_document(item["key"])
            read_keys.append(item["key"])
            item = {**item, "source": "read_document", "text": best_passage(full, question) or item["text"]}
        elif not item["inlined"]:  # a paper chunk: its best paragraph, not its metadata header
            item = {**item, "text": best_passage(item["text"], question) or item.get("abstract") or item["text"]}
        evidence.append(item)
        if len(evidence) >= MAX_SOURCES:
            break
    if not evidence:
        text = (
            f"**{LABEL}**\n\nNothing in your library matches this question. "
            f"Try other words, or check that the library is synced (`zocrates-nb sync`).\n\n_{CONFIGURE_HINT}_"
        )
        return text, [], []
    parts = [f"**{LABEL}**", f"The passages that best match “{question.strip()}”:"]
    for number, item in enumerate(evidence, 1):
        parts.append(f"{number}. {_heading(item, directory)}\n\n{_body(item)}")
    parts.append(f"_{CONFIGURE_HINT}_")
    return "\n\n".join(parts), evidence, read_keys


def citations_for(evidence: list[dict], directory: KeyDirectory) -> list[dict]:
    """Citation fields for each evidence item (all of them are shown, so all are cited)."""
    out = []
    for item in evidence:
        parent = directory.describe(item["parent_key"]) if item.get("parent_key") else None
        citation = paper_citation(item) if item["kind"] == "paper" else item.get("citation") or ""
        if item["kind"] == "note":
            citation = note_citation(parent)
        elif item["kind"] == "annotation":  # "highlight on Cable et al., 2022, p. 12"
            facts = item.get("annotation") or {}
            page = f", p. {facts['page_label']}" if facts.get("page_label") else ""
            paper = (parent or {}).get("citation") or (parent or {}).get("title") or "a PDF"
            citation = f"{annotation_label(facts)} on {paper}{page}"
        out.append(
            {
                "key": item["key"],
                "kind": item["kind"],
                "title": item["title"] or "untitled",
                "citation": citation,
                "parent_title": (parent or {}).get("title") or item.get("parent_title"),
            }
        )
    return out
