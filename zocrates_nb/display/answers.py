"""An answer and the sources it rests on, as HTML: the chat panel's bubbles and ``Answer._repr_html_``.

Why apart from ``render``: the sources list grew links back into Zotero (the item in its library pane,
the PDF at the passage's page) and keeps the rule that keys are never shown; the search table and the
bundle views stay in ``render``, whose helpers (escaping, Markdown, snippets) this module uses. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zocrates_nb.display.pages import open_pdf_url, page_span
from zocrates_nb.display.render import escape, field, is_inlined, kind_label, markdown_to_html, muted, snippet

__all__ = ["answer_sources", "render_answer", "render_answer_body", "render_source", "render_sources"]

# fmt: off
_SOURCE_FIELDS = (
    "title", "citation", "kind", "parent_title", "parent_key", "text", "inlined", "word_count",
    "page_start", "page_end", "page_label_start", "page_label_end", "attachment_key", "zotero_select",
    "open_pdf", "library_name", "library_kind",
)
# fmt: on


def _as_source(item: Any) -> dict[str, Any]:
    return {name: field(item, name) for name in _SOURCE_FIELDS if field(item, name) is not None}


def answer_sources(answer: Any) -> list[dict[str, Any]]:
    """What an answer rests on: its citations (with the evidence text behind each, so inlined notes
    show), else the evidence it read — one entry per document, in order."""
    evidence: dict[str, dict[str, Any]] = {}
    for item in field(answer, "evidence") or []:
        key = field(item, "key") or field(item, "title")
        if not key:
            continue
        entry = evidence.setdefault(key, {})
        for name, value in _as_source(item).items():
            if name != "text":
                entry.setdefault(name, value)
            elif not entry.get("inlined"):
                entry["text"] = value  # a later read_document passage beats a search excerpt
    citations = list(field(answer, "citations") or [])
    if not citations:
        return list(evidence.values())
    merged = []
    for citation in citations:
        source = dict(evidence.get(field(citation, "key") or "", {}))
        source.update(_as_source(citation))
        merged.append(source)
    return merged


def render_source(item: Any) -> str:
    """One source: title, kind, citation / parent paper, and the note text when it was inlined.

    Keys are never shown: in the chat the researcher sees titles, not Zotero internals.
    """
    kind = field(item, "kind")
    parent_title = field(item, "parent_title")
    title = field(item, "title") or field(item, "label") or "(untitled)"
    label = kind_label(kind, parent_title or field(item, "parent_key"))
    citation = str(field(item, "citation") or "")
    # a note's citation already says "note" / "note on Cable et al., 2022": do not repeat the kind
    meta = [citation] if citation.lower().startswith("note") else [label] + ([citation] if citation else [])
    if parent_title and not citation.lower().startswith("note on"):
        meta.append(f"on “{parent_title}”")
    if is_inlined(item):
        meta.append("inlined")
    if field(item, "library_kind") == "group":  # the lab's shared reading, told apart from the user's own
        meta.append(f"in {field(item, 'library_name')}")
    span = page_span(item)
    pages = ""
    if span is not None:
        url = field(item, "open_pdf") or open_pdf_url(span)
        link = f' · <a class="zc-open-pdf" href="{escape(url)}">open in Zotero</a>' if url else ""
        pages = f" {muted(span.cite())}{link}"
    text = field(item, "text") or field(item, "excerpt") or field(item, "snippet")
    body = ""
    if text:
        inner = markdown_to_html(text if is_inlined(item) else snippet(text))
        body = f'<blockquote class="zc-source-text">{inner}</blockquote>'
    shown = escape(title)
    if field(item, "zotero_select"):  # the item in Zotero's library pane (none for the demo library)
        href = escape(field(item, "zotero_select"))
        shown = f'<a class="zc-zotero-select" href="{href}" title="Show in Zotero">{shown}</a>'
    return f'<li class="zc-source"><strong>{shown}</strong> {muted(" · ".join(meta))}{pages}{body}</li>'


def render_sources(items: Iterable[Any], *, open_: bool = False) -> str:
    """An expandable ``<details>`` list of sources (empty string when there are none)."""
    items = list(items)
    if not items:
        return ""
    rows = "".join(render_source(item) for item in items)
    noun = "source" if len(items) == 1 else "sources"
    return (
        f'<details class="zc-sources"{" open" if open_ else ""}>'
        f"<summary>{len(items)} {noun}</summary><ul>{rows}</ul></details>"
    )


def render_answer_body(text: str | None) -> str:
    """The answer text: Markdown → sanitized HTML (an evidence-only answer carries its own label)."""
    return markdown_to_html(text or "")


def render_answer(answer: Any) -> str:
    """A whole answer for ``Answer._repr_html_``: body and expandable sources."""
    mode = escape(field(answer, "mode") or "")
    body = render_answer_body(field(answer, "text"))
    return f'<div class="zc-answer" data-mode="{mode}">{body}{render_sources(answer_sources(answer))}</div>'
