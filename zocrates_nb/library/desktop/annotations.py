"""PDF annotations (Zotero 6+) as ``itemAnnotations`` stores them, read from one opened copy of ``zotero.sqlite``.

Why its own module: the reader (library/desktop/reader.py) owns the papers and notes; annotations hang
one level lower (annotation → PDF attachment → paper) and come with their own tags, and Zotero 5
databases have none. Columns are selected by name (Zotero 10 adds ``*Normalized`` columns); annotation
types are Zotero's numbers (``records.ANNOTATION_TYPES``).
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict

from zocrates_nb.records import ANNOTATION_TYPES, Annotation

__all__ = ["read_annotations", "sql_to_iso", "text_of"]


def text_of(value: object) -> str:
    """A stored text column as ``str`` (NULL → "", bytes decoded with replacement)."""
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def sql_to_iso(value: str | None) -> str:
    """Zotero's UTC ``YYYY-MM-DD HH:MM:SS`` → ``YYYY-MM-DDTHH:MM:SSZ`` (as the API reports it)."""
    return f"{value.replace(' ', 'T')}Z" if value and " " in value else (value or "")


def read_annotations(
    conn: sqlite3.Connection, tables: set[str], lib_id: int, version_col: str, trashed: set[int]
) -> list[Annotation]:
    """PDF annotations (Zotero 6+), in reading order per attachment; trashed with their PDF or paper.

    Why the attachment's parent: an annotation sits on a PDF, the PDF under a paper, and a reader
    cites the paper. Columns by name, since Zotero 10 adds ``*Normalized`` ones."""
    if "itemAnnotations" not in tables:  # Zotero 5: no annotations
        return []
    tags = _tags(conn, tables)
    rows = conn.execute(
        f"SELECT i.itemID, i.key, i.{version_col}, i.dateModified, a.type, a.text, a.comment, a.color, "
        "a.pageLabel, a.sortIndex, a.position, a.parentItemID, att.key, ai.parentItemID, p.key "
        "FROM items i JOIN itemAnnotations a ON a.itemID = i.itemID "
        "JOIN items att ON att.itemID = a.parentItemID "
        "LEFT JOIN itemAttachments ai ON ai.itemID = a.parentItemID "
        "LEFT JOIN items p ON p.itemID = ai.parentItemID "
        "WHERE i.libraryID = ? ORDER BY att.key, a.sortIndex, i.key",
        (lib_id,),
    )
    out = []
    for row in rows:
        item_id, key, version, modified, type_id, text, comment, color, label, sort, pos = row[:11]
        att_id, att_key, paper_id, paper_key = row[11:]
        if trashed & {item_id, att_id, paper_id}:
            continue
        out.append(
            Annotation(
                key=key,
                attachment_key=att_key,
                annotation_type=ANNOTATION_TYPES.get(type_id, "highlight"),
                parent_key=paper_key,
                text=text_of(text),
                comment=text_of(comment),
                color=text_of(color),
                page_label=text_of(label),
                position=text_of(pos),
                sort_index=text_of(sort),
                tags=tags.get(item_id, ()),
                library_id=lib_id,
                version=version or 0,
                date_modified=sql_to_iso(modified),
            )
        )
    return out


def _tags(conn: sqlite3.Connection, tables: set[str]) -> dict[int, tuple[str, ...]]:
    """Item → its tag names, sorted (``tags`` + ``itemTags``; empty when the tables are absent)."""
    if not {"tags", "itemTags"} <= tables:
        return {}
    by_item: dict[int, list[str]] = defaultdict(list)
    for item_id, name in conn.execute(
        "SELECT it.itemID, t.name FROM itemTags it JOIN tags t ON t.tagID = it.tagID ORDER BY t.name"
    ):
        by_item[item_id].append(text_of(name))
    return {k: tuple(v) for k, v in by_item.items()}
