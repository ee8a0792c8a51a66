"""A paper chunk's (or an annotation's) pages as the faces show them: "p. 12", the JSON fields, the link
that opens the PDF there.

Why one module: the agents' evidence, ``search --json``, the notebook's result table and the answer's
sources all say where in a PDF a passage is; they take it from here so they say it the same way.
Pure functions over ``records.PageSpan`` (or a hit from ``search --json``, which carries the flat fields).

The link is ``zotero://open-pdf/library/items/<attachment key>?page=N`` (``groups/<id>`` for a group
library's attachment): Zotero's protocol handler
(``components/zotero-protocol-handler.js``, ``OpenPDFExtension``) opens the attachment in its reader
at page N, counted from 1 (the physical page, not the printed label: "p. 289" may be ``page=303``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from zocrates_nb.records import LibraryInfo, PageSpan, is_valid_key

__all__ = ["hit_library", "library_fields", "open_pdf_url", "page_fields", "page_span", "select_url"]

_LIBRARY_PATH = re.compile(r"library|groups/\d+")


def _library_of(hit: Any) -> Any:
    return hit.get("library") if isinstance(hit, Mapping) else getattr(hit, "library", None)


def hit_library(hit: Any, default: str | None) -> str | None:
    """Where a hit's item is in Zotero's links: its own library's path when the index knows the library
    (``library``, ``groups/<groupID>``, None for the demo library), else ``default`` (the source's).

    Why per hit: one corpus holds the user's library and every group library, and a group's key
    opens nothing under ``library``."""
    found = _library_of(hit)
    if isinstance(found, Mapping):  # SearchHit.to_dict's form of a LibraryInfo
        found = LibraryInfo(
            int(found.get("library_id") or 0),
            str(found.get("name") or ""),
            str(found.get("kind") or "user"),
            found.get("group_id"),
        )
    return found.link_path if isinstance(found, LibraryInfo) else default


def library_fields(hit: Any) -> dict[str, Any]:
    """The ``search --json`` fields that say which library a hit lives in ({} when the index does not know)."""
    found = _library_of(hit)
    if found is None:
        return {}
    get = found.get if isinstance(found, Mapping) else (lambda name: getattr(found, name, None))
    return {
        "library_id": get("library_id"),
        "library_name": get("name"),
        "library_kind": get("kind"),
        "group_id": get("group_id"),
    }


def select_url(key: str | None, library: str | None) -> str | None:
    """``zotero://select/library/items/KEY`` (or ``groups/<id>/…``): Zotero shows the item in its
    library pane (``ZoteroProtocolHandler``'s ``select`` extension). None for the demo library (its
    items are not in Zotero), an unknown library path or a key that is not Zotero's."""
    if not key or not library or not is_valid_key(key) or not _LIBRARY_PATH.fullmatch(library):
        return None
    return f"zotero://select/{library}/items/{key}"


def open_pdf_url(span: PageSpan, annotation_key: str | None = None, library: str | None = None) -> str | None:
    """The ``zotero://open-pdf`` link to the first page of ``span`` (None for a key that is not Zotero's);
    with ``annotation_key`` it also selects that annotation (``&annotation=KEY``, the reader scrolls to it).
    ``library``: the library path of the attachment (``groups/<id>``: Zotero looks the key up in that
    group, and a group's key opens nothing under ``library``); ``library`` by default.

    The one place the link is made for page spans and annotations.
    """
    if not is_valid_key(span.attachment_key):
        return None
    where = library if library and _LIBRARY_PATH.fullmatch(library) else "library"
    url = f"zotero://open-pdf/{where}/items/{span.attachment_key}?page={int(span.start) + 1}"
    return f"{url}&annotation={annotation_key}" if annotation_key and is_valid_key(annotation_key) else url


def page_fields(span: PageSpan | None, annotation_key: str | None = None, library: str | None = None) -> dict[str, Any]:
    """The flat fields a ``search --json`` hit carries: pages counted from 1, their labels, the link
    (which selects the annotation, for an annotation's hit; into ``library``, see ``open_pdf_url``)."""
    if span is None:
        return {}
    return {
        "page_start": span.start + 1,
        "page_end": span.end + 1,
        "page_label_start": span.start_label,
        "page_label_end": span.end_label,
        "pages": span.cite(),
        "attachment_key": span.attachment_key,
        "open_pdf": open_pdf_url(span, annotation_key, library),
    }


def page_span(hit: Any) -> PageSpan | None:
    """The span of a ``SearchHit`` or an evidence record, or rebuilt from a JSON hit's flat fields."""
    found = hit.get("pages") if isinstance(hit, Mapping) else getattr(hit, "pages", None)
    if isinstance(found, PageSpan):
        return found
    if not isinstance(hit, Mapping) or hit.get("page_start") is None or not hit.get("attachment_key"):
        return None
    try:
        start, end = int(hit["page_start"]) - 1, int(hit.get("page_end") or hit["page_start"]) - 1
    except (TypeError, ValueError):
        return None
    return PageSpan(
        str(hit["attachment_key"]),
        start,
        end,
        str(hit.get("page_label_start") or start + 1),
        str(hit.get("page_label_end") or end + 1),
    )
