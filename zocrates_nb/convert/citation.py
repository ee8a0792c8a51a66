"""Zotero citations as readable text: CSL-JSON in a ``data-citation`` attribute → "(Author et al., Year, p. 3)".

Why its own module: a citation's wording depends only on the decoded CSL-JSON (authors, issued date,
locator), not on the parsed note tree; ``convert/html.py`` (the owner of bs4 and markdownify) finds
the citation nodes and calls in here. Pure: strings and dicts in, a string out.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

__all__ = ["JsonDict", "decode_json_attr", "format_citation"]

#: A decoded JSON object (CSL item data, a citation item).
JsonDict = dict[str, Any]


def decode_json_attr(value: str | None) -> object | None:
    """Zotero stores JSON attributes as encodeURIComponent(JSON.stringify(obj))."""
    if not value:
        return None
    try:
        decoded: object = json.loads(unquote(value))
    except (ValueError, TypeError):
        return None
    return decoded


def _year_of(item_data: JsonDict) -> str:
    issued = item_data.get("issued") or {}
    if isinstance(issued, dict):
        parts = issued.get("date-parts") or []
        if parts and parts[0] and str(parts[0][0]).strip():
            return str(parts[0][0]).strip()
        raw = str(issued.get("raw") or issued.get("literal") or "")
    else:
        raw = str(issued)
    match = re.search(r"\b(1[5-9]\d\d|20\d\d)\b", raw)
    return match.group(1) if match else ""


def _author_of(item_data: JsonDict) -> str:
    names = []
    for person in item_data.get("author") or item_data.get("editor") or []:
        if isinstance(person, dict):
            name = person.get("family") or person.get("literal") or person.get("given") or ""
            if name:
                names.append(str(name))
    if not names:
        return str(item_data.get("title") or "")[:60]
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} & {names[1]}"
    return f"{names[0]} et al."


def _format_citation_item(item: JsonDict, known: dict[str, JsonDict]) -> str:
    """One citation item → "Author et al., Year, p. 3" (CSL itemData inline or from the wrapper)."""
    uris = item.get("uris") or []
    item_data = item.get("itemData") or next((known[u] for u in uris if u in known), None) or {}
    parts = [p for p in (_author_of(item_data), _year_of(item_data)) if p]
    if not parts and uris:
        parts = [f"item {str(uris[0]).rstrip('/').rsplit('/', 1)[-1]}"]
    locator = str(item.get("locator") or "").strip()
    if locator:
        label = str(item.get("label") or "page")
        parts.append(f"p. {locator}" if label == "page" else f"{label} {locator}")
    return ", ".join(parts) or "citation"


def format_citation(data_citation: str | None, known: dict[str, JsonDict]) -> str:
    """A ``data-citation`` attribute → "(Author et al., Year, p. 3; Other, Year)"."""
    data = decode_json_attr(data_citation)
    items = data.get("citationItems") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        return "(citation)"
    return "(" + "; ".join(_format_citation_item(i, known) for i in items if isinstance(i, dict)) + ")"
