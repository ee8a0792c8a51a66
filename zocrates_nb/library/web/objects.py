"""Zotero Web API objects → records, and the SQL of the Web library's local cache — no network.

``ZoteroWebLibrary`` (library/web/source.py, the only module that imports pyzotero) keeps
the API's JSON objects in a SQLite cache; these pure functions turn them into the
``Note``, ``Paper`` and ``Annotation`` records the rest of the package reads.
"""

from __future__ import annotations

import dataclasses
import json
import re

from zocrates_nb.library.base import Annotation, LibraryInfo, Note, Paper
from zocrates_nb.records import ANNOTATION_TYPES, pinned_citation_key

__all__ = [
    "CACHE_SCHEMA",
    "PAPER_FULLTEXT",
    "VISIBLE_ANNOTATIONS",
    "VISIBLE_NOTES",
    "annotation_from_object",
    "note_from_object",
    "paper_from_object",
    "web_library_info",
    "with_text",
]

_YEAR_RE = re.compile(r"\b(\d{4})\b")
#: the key at the end of a Zotero item URI: http://zotero.org/users/123/items/ABCD2345
_ITEM_KEY = re.compile(r"/items/([A-Z0-9]{8})$")

CACHE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS items (key TEXT PRIMARY KEY, version INTEGER NOT NULL, item_type TEXT NOT NULL,"
    " parent_key TEXT, deleted INTEGER NOT NULL DEFAULT 0, obj TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS items_type ON items(item_type)",
    "CREATE TABLE IF NOT EXISTS collections (key TEXT PRIMARY KEY, version INTEGER NOT NULL, name TEXT NOT NULL,"
    " parent_key TEXT, deleted INTEGER NOT NULL DEFAULT 0)",
    # attachment full text (GET /fulltext?since=V, then /items/KEY/fulltext), as .zotero-ft-cache on desktop
    "CREATE TABLE IF NOT EXISTS fulltext (key TEXT PRIMARY KEY, version INTEGER NOT NULL, content TEXT NOT NULL)",
)
PAPER_FULLTEXT = (
    "SELECT a.parent_key, f.content FROM fulltext f JOIN items a ON a.key = f.key "
    "WHERE a.deleted = 0 AND a.parent_key IS NOT NULL ORDER BY a.parent_key, a.key"
)
VISIBLE_NOTES = (
    "SELECT i.obj FROM items i LEFT JOIN items p ON p.key = i.parent_key "
    "WHERE i.item_type = 'note' AND i.deleted = 0 AND COALESCE(p.deleted, 0) = 0"
)

#: an annotation is visible unless it, its attachment or the attachment's paper is in the trash;
#: its paper is the attachment's parent (``parentItem`` of an annotation is the attachment)
VISIBLE_ANNOTATIONS = (
    "SELECT i.obj, a.parent_key FROM items i JOIN items a ON a.key = i.parent_key "
    "LEFT JOIN items p ON p.key = a.parent_key WHERE i.item_type = 'annotation' AND i.deleted = 0 "
    "AND a.deleted = 0 AND COALESCE(p.deleted, 0) = 0"
)
_ANNOTATION_TYPE_NAMES = frozenset(ANNOTATION_TYPES.values())


def annotation_from_object(obj: dict, paper_key: str | None) -> Annotation:
    """A Web / local API item of ``itemType: annotation`` → ``Annotation`` (``parentItem`` is its PDF;
    ``paper_key`` the PDF's parent). ``annotationPosition`` is a JSON string, as the API sends it."""
    data = obj.get("data", obj)
    kind = str(data.get("annotationType") or "highlight")
    position = data.get("annotationPosition") or ""
    library = obj.get("library") or {}
    return Annotation(
        key=data["key"],
        attachment_key=str(data.get("parentItem") or ""),
        annotation_type=kind if kind in _ANNOTATION_TYPE_NAMES else "highlight",
        parent_key=paper_key or None,
        text=str(data.get("annotationText") or ""),
        comment=str(data.get("annotationComment") or ""),
        color=str(data.get("annotationColor") or ""),
        page_label=str(data.get("annotationPageLabel") or ""),
        position=position if isinstance(position, str) else json.dumps(position),
        sort_index=str(data.get("annotationSortIndex") or ""),
        tags=tuple(sorted(str(t.get("tag", "")) for t in data.get("tags") or () if isinstance(t, dict))),
        library_id=library.get("id") if isinstance(library.get("id"), int) else None,
        version=int(data.get("version", obj.get("version", 0)) or 0),
        date_modified=data.get("dateModified", ""),
    )


def web_library_info(library_type: str, library_id: str, name: str | None) -> LibraryInfo:
    """The library a Web or local API source reads (``users/<id>`` or ``groups/<id>``) as a record."""
    number = int(library_id) if str(library_id).isdigit() else 0
    if library_type == "group":
        return LibraryInfo(number, name or f"Group {number}", "group", group_id=number)
    return LibraryInfo(number, "My Library", "user")


def note_from_object(obj: dict) -> Note:
    """A Web API item object (``{key, version, data: {...}}``) of type note → ``Note``."""
    data = obj.get("data", obj)
    parent = data.get("parentItem") or None
    return Note(
        key=data["key"],
        html=data.get("note") or "",
        parent_key=parent,
        collections=() if parent else tuple(data.get("collections") or ()),
        version=int(data.get("version", obj.get("version", 0)) or 0),
        date_modified=data.get("dateModified", ""),
        related=related_keys(data.get("relations")),
    )


def related_keys(relations: object) -> tuple[str, ...]:
    """``data.relations["dc:relation"]`` (one item URI or a list of them) → the related items' keys."""
    value = relations.get("dc:relation") if isinstance(relations, dict) else None
    uris = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return tuple(dict.fromkeys(m.group(1) for uri in uris if isinstance(uri, str) and (m := _ITEM_KEY.search(uri))))


def paper_from_object(obj: dict) -> Paper:
    """A regular Web API item → ``Paper`` (authors preferred over other creator types, as cited)."""
    data, meta = obj.get("data", obj), obj.get("meta") or {}
    names = []
    for c in data.get("creators") or ():
        last_first = (c.get("lastName", "").strip(), c.get("firstName", "").strip())
        name = c.get("name") or ", ".join(x for x in last_first if x)
        names.append((name, c.get("creatorType")))
    authors = [n for n, t in names if t == "author"]
    date = data.get("date") or ""
    year_src = (meta.get("parsedDate") or "")[:4] if meta.get("parsedDate") else ""
    year = int(year_src) if year_src.isdigit() and int(year_src) else None
    if year is None and (m := _YEAR_RE.search(date)):
        year = int(m.group(1))
    title = next((data[f] for f in ("title", "caseName", "nameOfAct", "subject") if data.get(f)), "")
    publication = next(
        (
            data[f]
            for f in (
                "publicationTitle",
                "bookTitle",
                "proceedingsTitle",
                "websiteTitle",
                "blogTitle",
                "publisher",
                "university",
            )
            if data.get(f)
        ),
        "",
    )
    return Paper(
        key=data["key"],
        title=title,
        item_type=data.get("itemType", "journalArticle"),
        creators=tuple(authors or [n for n, _ in names]),
        year=year,
        date=date,
        doi=data.get("DOI") or None,
        abstract=data.get("abstractNote") or None,
        fulltext=None,
        publication=publication,
        collections=tuple(data.get("collections") or ()),
        version=int(data.get("version", obj.get("version", 0)) or 0),
        date_modified=data.get("dateModified", ""),
        citation_key=pinned_citation_key(data),
    )


def with_text(paper: Paper, texts: dict[str, list[str]]) -> Paper:
    """The paper with its attachments' full text (as the desktop's ``.zotero-ft-cache`` gives it)."""
    parts = texts.get(paper.key)
    return dataclasses.replace(paper, fulltext="\n\n".join(parts)) if parts else paper
