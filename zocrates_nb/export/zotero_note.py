"""Citations in a saved note the way Zotero's note editor writes them, so Zotero shows them live.

Zotero's note editor (``zotero/note-editor``, ``src/core/schema``) writes an in-text citation as
``<span class="citation" data-citation="…">(<span class="citation-item">Author, Year, p. 3</span>)</span>``
where ``data-citation`` is ``encodeURIComponent(JSON.stringify({citationItems: [{uris, locator}],
properties: {}}))``, and lists each cited item's CSL-JSON once, on the wrapper ``div`` as
``data-citation-items`` (``[{uris, itemData}]``). The URIs are the library's item URIs
(``http://zotero.org/users/<id>/items/<KEY>``, ``…/groups/<id>/…``, or ``…/users/local/<key>/…``).
Zotero's Word plugin reads exactly these when a note is added to a document ("Add Note").

How: the answer's Markdown gets a placeholder where each verified "(Author, Year, p. N)" stands;
after the Markdown has become note HTML, ``fill`` puts the citation spans there and the items on
the wrapper. Keys appear only inside the attributes, never in the visible text. Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any
from urllib.parse import quote

__all__ = ["CitedItem", "Highlight", "NoteCitations", "encode_attr", "highlight_span"]

_HOLD_OPEN, _HOLD_CLOSE = "\ue020", "\ue021"
_HOLDER = re.compile(_HOLD_OPEN + r"(\d+)" + _HOLD_CLOSE)
_WRAPPER = re.compile(r'^<div data-schema-version="(\d+)">')


def encode_attr(value: Any) -> str:
    """``encodeURIComponent(JSON.stringify(value))``, as the note editor stores JSON attributes."""
    return quote(json.dumps(value, ensure_ascii=False, separators=(",", ":")), safe="-_.!~*'()")


@dataclass(frozen=True)
class CitedItem:
    """One item of one in-text citation: its library URI, page, CSL-JSON data and the words shown."""

    uri: str
    text: str  # "Cable et al., 2022, p. 3"
    item_data: Mapping[str, Any] = field(repr=False)
    locator: str | None = None


@dataclass(frozen=True)
class Highlight:
    """A PDF annotation the answer quotes: Zotero shows it as a highlight that opens the PDF at it."""

    text: str  # as the answer quotes it, quotation marks included
    annotation_key: str
    attachment_uri: str
    item: CitedItem  # the paper, at the annotation's page
    color: str | None = None
    page_label: str | None = None
    page_index: int | None = None


@dataclass
class NoteCitations:
    """Collects the citations of one note: ``hold`` marks them in Markdown, ``fill`` writes the HTML."""

    citations: list[list[CitedItem]] = field(default_factory=list)
    fragments: list[str] = field(default_factory=list)

    def hold(self, markdown: str, spans: Sequence[tuple[tuple[int, int], Sequence[CitedItem] | Highlight]]) -> str:
        """``markdown`` with each ``(start, end)`` span (a "(…)" citation, a quoted highlight) held by a
        placeholder."""
        out, at = [], 0
        for (start, end), held in sorted(spans, key=lambda span: span[0][0]):
            if start < at or not held:
                continue
            out += [markdown[at:start], f"{_HOLD_OPEN}{len(self.fragments)}{_HOLD_CLOSE}"]
            if isinstance(held, Highlight):
                self.citations.append([held.item])
                self.fragments.append(highlight_span(held))
            else:
                self.citations.append(list(held))
                self.fragments.append(citation_span(held))
            at = end
        return "".join(out) + markdown[at:]

    def fill(self, html: str) -> str:
        """Note HTML with the citation spans in place of the placeholders and the items on the wrapper."""
        if not self.citations:
            return html
        html = _HOLDER.sub(lambda match: self.fragments[int(match.group(1))], html)
        items = self.items()
        wrapper = f'<div data-citation-items="{escape(encode_attr(items))}" data-schema-version="\\1">'
        return _WRAPPER.sub(wrapper, html, count=1)

    def items(self) -> list[dict[str, Any]]:
        """``data-citation-items``: every cited item once, in order of first citation."""
        seen: dict[str, dict[str, Any]] = {}
        for citation in self.citations:
            for item in citation:
                seen.setdefault(item.uri, {"uris": [item.uri], "itemData": {"id": item.uri, **item.item_data}})
        return list(seen.values())


def citation_span(items: Sequence[CitedItem]) -> str:
    """``<span class="citation" data-citation="…">(<span class="citation-item">…</span>; …)</span>``."""
    data = {
        "citationItems": [
            {"uris": [item.uri], **({"locator": item.locator} if item.locator else {})} for item in items
        ],
        "properties": {},
    }
    shown = "; ".join(f'<span class="citation-item">{escape(item.text, quote=False)}</span>' for item in items)
    return f'<span class="citation" data-citation="{escape(encode_attr(data))}">({shown})</span>'


def highlight_span(highlight: Highlight) -> str:
    """``<span class="highlight" data-annotation="…">“quoted words”</span>``, as the note editor writes a
    highlight dragged in from the PDF reader (``data-annotation``: the attachment, the annotation's key,
    colour, page and the citation of its paper)."""
    data: dict[str, Any] = {
        "attachmentURI": highlight.attachment_uri,
        "annotationKey": highlight.annotation_key,
        "color": highlight.color,
        "pageLabel": highlight.page_label,
        "position": {"pageIndex": highlight.page_index, "rects": []},
        "citationItem": {
            "uris": [highlight.item.uri],
            **({"locator": highlight.item.locator} if highlight.item.locator else {}),
        },
    }
    data = {name: value for name, value in data.items() if value is not None}
    shown = escape(highlight.text, quote=False)
    return f'<span class="highlight" data-annotation="{escape(encode_attr(data))}">{shown}</span>'
