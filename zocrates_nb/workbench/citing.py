"""Save as Note with live Zotero citations: each verified "(Author, Year, p. N)" becomes a citation of
the library item it names.

Why here: it needs the corpus (each cited paper's manifest for its CSL-JSON, a cited annotation's
paper) and the answer's evidence; the pure parts are ``agents.citecheck`` (which citation is backed
by what) and ``export.zotero_note`` (the note editor's HTML). Only citations that verified against
the turn's evidence and resolve to a paper of the library are made live; a parenthesis that mixes in
anything else stays the text it was.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from zocrates_nb.agents.citecheck import CitationCheck, verify
from zocrates_nb.agents.citecheck.sources import Source
from zocrates_nb.errors import NotFoundError
from zocrates_nb.export.csl import reference_from_manifest
from zocrates_nb.export.zotero_note import CitedItem, Highlight, NoteCitations
from zocrates_nb.library.item_uris import item_uri, library_uri
from zocrates_nb.workbench.saving import answer_note, session_note

__all__ = ["hold_citations", "note_with_citations"]

_log = logging.getLogger(__name__)


def note_with_citations(
    wb: Any, content: Any, title: str | None, *, session: bool = False
) -> tuple[str, str, list[str], NoteCitations]:
    """(title, Markdown, sources, citations) of the note that saves an answer (or a whole session)."""
    citations = NoteCitations()
    base = library_uri(wb.source)
    make = session_note if session else answer_note
    title, markdown, sources = make(content, title, text_of=lambda a: hold_citations(wb.corpus, a, base, citations))
    return title, markdown, sources, citations


def hold_citations(corpus: Any, answer: Any, library_uri: str, citations: NoteCitations) -> str:
    """``answer.text`` with its verified library citations held for ``citations.fill``."""
    text = getattr(answer, "text", "") or ""
    evidence = list(getattr(answer, "evidence", []) or [])
    parents = {key: _describe(corpus, key) for key in {e["parent_key"] for e in evidence if e.get("parent_key")}}
    groups: dict[tuple[int, int], list[CitationCheck]] = {}
    verification = verify(text, evidence, parents, question=getattr(answer, "question", ""))
    for check in verification.checks:
        if check.paren is not None:
            groups.setdefault(check.paren, []).append(check)
    spans: list = []
    for paren, checks in groups.items():
        items = _items(corpus, text[paren[0] + 1 : paren[1] - 1], checks, library_uri)
        if items:
            spans.append((paren, items))
    for check in verification.checks:
        if check.kind == "quote" and check.verified and check.text.startswith("“"):
            highlight = _highlight(corpus, check, evidence, library_uri)
            if highlight is not None:
                spans.append(((check.start, check.end), highlight))
    return citations.hold(text, spans)


def _highlight(corpus: Any, check: CitationCheck, evidence: list[dict], library_uri: str) -> Highlight | None:
    """The PDF annotation whose highlighted words the quote is, as Zotero's highlight (None: not one)."""
    for item in evidence:
        facts = item.get("annotation") or {}
        if item.get("kind") != "annotation" or not facts.get("attachment_key") or not item.get("parent_key"):
            continue
        if not Source(str(item["key"]), "annotation", passages=[str(facts.get("text") or "")]).has_quote(
            str(check.quote)
        ):
            continue
        paper = _paper_manifest(corpus, str(item["parent_key"]))
        if paper is None:
            return None
        page = str(facts["page_label"]) if facts.get("page_label") else None
        cited = CitedItem(item_uri(library_uri, str(paper["key"])), "", dict(reference_from_manifest(paper).csl), page)
        return Highlight(
            check.text,
            str(item["key"]),
            item_uri(library_uri, str(facts["attachment_key"])),
            cited,
            color=facts.get("color"),
            page_label=page,
            page_index=facts.get("page_index"),
        )
    return None


def _items(corpus: Any, inner: str, checks: Sequence[CitationCheck], library_uri: str) -> list[CitedItem]:
    """One item per part of "(A, 2020; B, 2021, p. 3)", or none when any part is not a verified paper."""
    parts = [part.strip() for part in inner.split(";")]
    if len(parts) != len(checks) or any(not check.verified or not check.key for check in checks):
        return []
    items = []
    for part, check in zip(parts, sorted(checks, key=lambda c: c.start), strict=True):
        paper = _paper_manifest(corpus, str(check.key))
        if paper is None:
            return []
        item_data = dict(reference_from_manifest(paper).csl)
        items.append(CitedItem(item_uri(library_uri, str(paper["key"])), part, item_data, check.page))
    return items


def _paper_manifest(corpus: Any, key: str) -> dict | None:
    """The paper a citation names: the item itself, or the paper of a cited annotation."""
    try:
        manifest = corpus.manifest(key, event="export")
        if manifest.get("content_type") == "text/annotation" and manifest.get("parent_key"):
            manifest = corpus.manifest(manifest["parent_key"], event="export")
    except NotFoundError as err:  # gone since the answer: that citation stays text
        _log.warning("citation of %s stays text: %s", key, err.message)
        return None
    return manifest if manifest.get("content_type") == "text/paper" else None


def _describe(corpus: Any, key: str) -> dict:
    try:
        manifest = corpus.manifest(key, event="export")
    except NotFoundError:
        return {}
    return {"title": manifest.get("title"), "citation": manifest.get("citation")}
