"""A PDF annotation as the faces show it: the highlighted words, the comment, the page, the paper.

Why one module: ``search --json``, the agents' evidence records, the notebook's result table and the
answer's sources all show an annotation; they take its fields and its cell from here so they agree.
Pure functions over a ``SearchHit`` or an evidence record (both carry ``annotation``: the facts the
index keeps, ``index/lexical/pages.py``) and plain strings; every string is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from zocrates_nb.display.pages import open_pdf_url, page_span

__all__ = ["annotation_cell", "annotation_fields", "annotation_label", "annotation_title"]

_LABELS = {"note": "sticky note", "text": "text box"}


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def annotation_label(facts: Mapping[str, Any] | None) -> str:
    """``highlight``, ``sticky note``, ``underline`` … (what the reader made)."""
    kind = str((facts or {}).get("annotation_type") or "annotation")
    return _LABELS.get(kind, kind)


def annotation_title(facts: Mapping[str, Any] | None, parent_title: str | None) -> str:
    """How a reader names an annotation: ``Highlight on “Robust decomposition …”, p. 518``."""
    label = annotation_label(facts)
    name = label[:1].upper() + label[1:]
    name += f" on “{parent_title}”" if parent_title else " on a PDF"
    page = (facts or {}).get("page_label")
    return f"{name}, p. {page}" if page else name


def annotation_fields(hit: Any, library: str | None = None) -> dict[str, Any]:
    """The fields an annotation's ``search --json`` hit carries besides the common ones ({} for others);
    ``library``: where its attachment lives in Zotero's links (``library``, ``groups/<id>``)."""
    facts = _get(hit, "annotation")
    if _get(hit, "kind") != "annotation" or not isinstance(facts, Mapping):
        return {}
    span = page_span(hit)
    return {
        "annotation_type": facts.get("annotation_type"),
        "highlighted_text": facts.get("text") or "",
        "comment": facts.get("comment") or "",
        "color": facts.get("color") or "",
        "color_meaning": facts.get("color_meaning"),
        "tags": list(facts.get("tags") or []),
        "page_label": facts.get("page_label") or "",
        "attachment_key": facts.get("attachment_key") or "",
        "library_id": facts.get("library_id"),
        "open_pdf": open_pdf_url(span, _get(hit, "key"), library) if span is not None else None,
    }


def annotation_cell(hit: Any) -> str:
    """The notebook's evidence cell: the highlighted text as a quote, the comment, "p. 12 · open in
    Zotero" (the link opens the PDF at the annotation) and the paper it is on."""
    facts = _get(hit, "annotation") or {}
    esc = html.escape
    parts = []
    if facts.get("text"):
        parts.append(
            '<blockquote class="zc-highlight" style="margin:0;border-left:3px solid '
            f'{esc(_safe_color(facts.get("color")))};padding-left:6px">{esc(facts["text"])}</blockquote>'
        )
    if facts.get("comment"):
        parts.append(f'<div class="zc-comment">{esc(facts["comment"])}</div>')
    where = [annotation_label(facts)]
    span = page_span(hit)
    if facts.get("page_label"):
        where.append(f"p. {facts['page_label']}")
    if facts.get("color_meaning"):
        where.append(f"{facts.get('color_name') or facts.get('color')} = {facts['color_meaning']}")
    line = esc(" · ".join(where))
    url = _get(hit, "open_pdf") or (open_pdf_url(span, _get(hit, "key")) if span is not None else None)
    if url:
        line += f' · <a class="zc-open-pdf" href="{esc(url)}">open in Zotero</a>'
    if _get(hit, "parent_title"):
        line += f"<br>on <em>{esc(str(_get(hit, 'parent_title')))}</em>"
    return "".join(parts) + f'<small class="zc-annotation">{line}</small>'


def _safe_color(value: Any) -> str:
    """A ``#rrggbb`` colour for the quote's border, else grey (a colour is data, never CSS to inject)."""
    text = str(value or "")
    ok = len(text) == 7 and text[0] == "#" and all(c in "0123456789abcdefABCDEF" for c in text[1:])
    return text if ok else "#ccc"
