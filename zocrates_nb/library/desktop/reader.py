"""The queries that read one opened copy of ``zotero.sqlite`` into a ``LibrarySnapshot``.

Why its own module: ``ZoteroDesktopLibrary`` (library/desktop/snapshot.py) decides *when* to read and
*what* to open — the change stamp, the copy of the database with its ``-wal``, the attachment
full-text files; this module only knows Zotero's schema: item types and fields looked up by name,
columns selected by name, stored notes unwrapped the way Zotero's API serves them. It opens no file
and copies nothing; it is given a connection.
"""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from html import escape
from pathlib import Path
from typing import NamedTuple, cast

from zocrates_nb.errors import LibraryError
from zocrates_nb.library.base import (
    Collection,
    LibraryInfo,
    LibrarySnapshot,
    Note,
    Paper,
    unique_across_libraries,
    with_valid_keys,
)
from zocrates_nb.library.desktop.annotations import read_annotations, sql_to_iso
from zocrates_nb.library.desktop.bbt import better_bibtex_keys
from zocrates_nb.records import PdfFile, pinned_citation_key

__all__ = ["AttachmentRow", "FileText", "SnapshotReader", "parse_zotero_date", "strip_note_wrapper"]


class AttachmentRow(NamedTuple):
    """A child attachment as ``itemAttachments`` stores it (``path``: ``storage:NAME``, ``attachments:REL``
    or an absolute path; ``link_mode`` 0 imported file, 1 imported URL, 2 linked file, 3 linked URL)."""

    key: str
    link_mode: int | None
    content_type: str | None
    path: str | None


#: what the source makes of a paper's attachments: (full text with no PDF at hand, the PDFs at hand)
FileText = tuple[str | None, tuple[PdfFile, ...]]

_WRAPPER_RE = re.compile(r'^<div class="zotero-note znv[0-9]+">')
_MULTIPART_DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (.*)$", re.S)
_YEAR_RE = re.compile(r"\b(\d{4})\b")
_DOI_IN_EXTRA_RE = re.compile(r"^\s*DOI:\s*(10\.\S+)", re.I | re.M)
_NON_PAPER_TYPES = ("note", "attachment", "annotation")
#: the type-specific fields Zotero maps onto ``title`` / ``date`` / ``publicationTitle``
_TITLE_FIELDS = ("title", "caseName", "nameOfAct", "subject")
_DATE_FIELDS = ("date", "dateDecided", "dateEnacted", "issueDate")
_PUBLICATION_FIELDS = (
    "publicationTitle",
    "bookTitle",
    "proceedingsTitle",
    "websiteTitle",
    "blogTitle",
    "forumTitle",
    "encyclopediaTitle",
    "dictionaryTitle",
    "programTitle",
    "seriesTitle",
    "publisher",
    "university",
    "institution",
)
_WANTED_FIELDS = _TITLE_FIELDS + _DATE_FIELDS + _PUBLICATION_FIELDS + ("DOI", "abstractNote", "extra", "citationKey")


def strip_note_wrapper(raw: str | bytes | None) -> str | bytes:
    """The API form of a stored note: drop ``<div class="zotero-note znvN">…</div>``.

    Mirrors Zotero's ``Items._loadNotes``: a legacy plain-text note (no wrapper)
    is escaped and turned into ``<p>`` paragraphs instead. A note whose bytes are
    not UTF-8 stays bytes (stripped byte-exactly through Latin-1), so conversion
    decodes it with replacement and reports it, instead of the whole read failing.
    """
    if isinstance(raw, (bytes, bytearray)):
        return _strip_text(bytes(raw).decode("latin-1")).encode("latin-1")
    return _strip_text(raw or "")


def _strip_text(raw: str) -> str:
    if not raw:
        return ""
    match = _WRAPPER_RE.match(raw[:36])
    if match:
        body = raw[match.end() :]
        return body[:-6] if body.endswith("</div>") else body
    text = escape(raw, quote=False).replace("\n", "</p><p>").replace("\t", "&nbsp;" * 4).replace("  ", "&nbsp;&nbsp;")
    return re.sub(r"<p>\s*</p>", "<p>&nbsp;</p>", f"<p>{text}</p>")


def _utf8_or_bytes(raw: bytes | None) -> str | bytes | None:
    """A stored note body as text; bytes that are not UTF-8 stay bytes (reported at conversion)."""
    if raw is None:
        return None
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return bytes(raw)


def parse_zotero_date(value: str | None) -> tuple[str, int | None]:
    """``"2016-07-01 July 1, 2016"`` → ``("July 1, 2016", 2016)``; plain strings keep their first 4-digit year."""
    if not value:
        return "", None
    match = _MULTIPART_DATE_RE.match(value)
    if match:
        year = int(match.group(1))
        return match.group(4), (year or None)
    found = _YEAR_RE.search(value)
    return value, int(found.group(1)) if found else None


class SnapshotReader:
    """Runs the reading queries against one opened copy; columns and types by name."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        sqlite_path: Path,
        library_id: int | None,
        fulltext_for: Callable[[Sequence[AttachmentRow], list], FileText],
    ) -> None:
        self.conn, self.sqlite_path, self.library_id, self.fulltext_for = conn, sqlite_path, library_id, fulltext_for
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = {"items", "itemNotes", "itemData", "itemDataValues", "collections"} - tables
        if missing or not ({"itemTypes", "itemTypesCombined"} & tables):
            raise LibraryError(
                f"{sqlite_path} is not a Zotero database (missing tables: "
                f"{', '.join(sorted(missing)) or 'itemTypes'}).",
                "Point --zotero-sqlite at the zotero.sqlite in Zotero's data directory.",
            )
        self.tables = tables
        self.types_table = "itemTypesCombined" if "itemTypesCombined" in tables else "itemTypes"
        self.fields_table = "fieldsCombined" if "fieldsCombined" in tables else "fields"

    def columns(self, table: str) -> set[str]:
        return {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}

    def read(self) -> LibrarySnapshot:
        """Every library the reader was asked for (all the user's and group libraries by default), in one
        read transaction; an item whose key an earlier library already holds is reported, not mixed up."""
        conn = self.conn
        failures: list[tuple[str, str]] = []
        conn.execute("BEGIN")
        libraries = self._libraries()
        trashed = (
            {r[0] for r in conn.execute("SELECT itemID FROM deletedItems")} if "deletedItems" in self.tables else set()
        )
        version_col = "clientVersion" if "clientVersion" in self.columns("items") else "version"
        papers: list[Paper] = []
        notes: list[Note] = []
        collections: list[Collection] = []
        annotations: list = []
        filed = conn.execute("SELECT itemID, collectionID FROM collectionItems ORDER BY orderIndex").fetchall()
        for library in libraries:
            lib_id = library.library_id
            keys = dict(conn.execute("SELECT itemID, key FROM items WHERE libraryID = ?", (lib_id,)))
            lib_collections, coll_key_of = self._collections(lib_id)
            item_colls: dict[int, list[str]] = defaultdict(list)
            for item_id, coll_id in filed:
                if coll_id in coll_key_of:
                    item_colls[item_id].append(coll_key_of[coll_id])
            collections += [replace(c, library_id=lib_id) for c in lib_collections]
            notes += [
                replace(n, library_id=lib_id) for n in self._notes(lib_id, version_col, trashed, item_colls, keys)
            ]
            papers += [
                replace(p, library_id=lib_id)
                for p in self._papers(lib_id, version_col, trashed, item_colls, keys, failures)
            ]
            annotations += read_annotations(self.conn, self.tables, lib_id, version_col, trashed)
        version = self._version(libraries[0].library_id)
        conn.execute("COMMIT")
        kept = unique_across_libraries(
            {"papers": papers, "notes": notes, "collections": collections, "annotations": annotations},
            libraries,
            failures,
        )
        return with_valid_keys(
            LibrarySnapshot(
                papers=tuple(kept["papers"]),
                notes=tuple(kept["notes"]),
                collections=tuple(kept["collections"]),
                annotations=tuple(kept["annotations"]),
                version=version,
                failures=tuple(failures),
                libraries=tuple(libraries),
            )
        )

    def _libraries(self) -> list[LibraryInfo]:
        """The libraries to read: the one ``library_id`` names, else the user's and every group library
        (feeds are not libraries of the user's own), the user's first. Zotero 4 has one library, 1."""
        lib_cols = self.columns("libraries") if "libraries" in self.tables else set()
        names = (
            {
                lib: (name, group)
                for group, lib, name in self.conn.execute("SELECT groupID, libraryID, name FROM groups")
            }
            if "groups" in self.tables
            else {}
        )
        if "type" in lib_cols:
            rows = self.conn.execute(
                "SELECT libraryID, type FROM libraries WHERE type IN ('user', 'group') "
                "ORDER BY type = 'group', libraryID"
            ).fetchall()
        else:
            rows = [(1, "user")]
        if self.library_id is not None:
            rows = [r for r in rows if r[0] == self.library_id] or [(self.library_id, "group")]
        out = []
        for lib_id, kind in rows or [(1, "user")]:
            name, group_id = names.get(lib_id, ("My Library" if kind == "user" else f"Group library {lib_id}", None))
            out.append(LibraryInfo(library_id=lib_id, name=name, kind=kind, group_id=group_id))
        return out

    def _version(self, lib_id: int) -> int | None:
        lib_cols = self.columns("libraries") if "libraries" in self.tables else set()
        col = "clientVersion" if "clientVersion" in lib_cols else "version" if "version" in lib_cols else None
        if not col:
            return None
        row = self.conn.execute(f"SELECT {col} FROM libraries WHERE libraryID = ?", (lib_id,)).fetchone()
        return row[0] if row else None

    def _collections(self, lib_id: int) -> tuple[list[Collection], dict[int, str]]:
        rows = self.conn.execute(
            "SELECT collectionID, key, collectionName, parentCollectionID FROM collections "
            "WHERE libraryID = ? ORDER BY collectionName",
            (lib_id,),
        ).fetchall()
        gone = (
            {r[0] for r in self.conn.execute("SELECT collectionID FROM deletedCollections")}
            if "deletedCollections" in self.tables
            else set()
        )
        key_of = {cid: key for cid, key, _, _ in rows if cid not in gone}
        out = [
            Collection(key=key, name=name, parent_key=key_of.get(parent))
            for cid, key, name, parent in rows
            if cid in key_of
        ]
        return out, key_of

    def _notes(self, lib_id, version_col, trashed, item_colls, keys) -> list[Note]:
        rows = self.conn.execute(
            f"SELECT i.itemID, i.key, i.{version_col}, i.dateModified, CAST(n.note AS BLOB), n.parentItemID, p.key "
            f"FROM items i JOIN {self.types_table} t ON t.itemTypeID = i.itemTypeID AND t.typeName = 'note' "
            "JOIN itemNotes n ON n.itemID = i.itemID LEFT JOIN items p ON p.itemID = n.parentItemID "
            "WHERE i.libraryID = ? ORDER BY i.key",
            (lib_id,),
        )
        notes = []
        related = self._related(keys)
        for item_id, key, version, modified, raw, parent_id, parent_key in rows:
            if item_id in trashed or (parent_id is not None and parent_id in trashed):
                continue
            notes.append(
                Note(
                    key=key,
                    # bytes that are not UTF-8 travel on as bytes: conversion decodes and reports them
                    html=cast(str, strip_note_wrapper(_utf8_or_bytes(raw))),
                    parent_key=parent_key,
                    collections=() if parent_key else tuple(item_colls.get(item_id, ())),
                    version=version or 0,
                    date_modified=sql_to_iso(modified),
                    related=tuple(sorted(related.get(item_id, ()))),
                )
            )
        return notes

    def _related(self, key_of: dict[int, str]) -> dict[int, set[str]]:
        """itemID → keys of the items Zotero's "Related" list ties to it (``dc:relation``, either way round).

        Zotero stores a relation on both items (object: the other item's URI); reading both directions
        still finds one whose other half is missing (an item related before a sync brought the other)."""
        if "itemRelations" not in self.tables or "relationPredicates" not in self.tables:
            return {}
        id_of = {key: item_id for item_id, key in key_of.items()}
        out: dict[int, set[str]] = {}
        for item_id, uri in self.conn.execute(
            "SELECT r.itemID, r.object FROM itemRelations r JOIN relationPredicates p ON p.predicateID = r.predicateID "
            "WHERE p.predicate = 'dc:relation'"
        ):
            other = str(uri).rstrip("/").rsplit("/items/", 1)[-1] if "/items/" in str(uri) else ""
            if item_id not in key_of or other not in id_of:
                continue  # another library's item, or one this library no longer has
            out.setdefault(item_id, set()).add(other)
            out.setdefault(id_of[other], set()).add(key_of[item_id])
        return out

    def _papers(self, lib_id, version_col, trashed, item_colls, keys, failures) -> list[Paper]:
        conn = self.conn
        marks = ", ".join("?" * len(_NON_PAPER_TYPES))
        items = [
            r
            for r in conn.execute(
                f"SELECT i.itemID, i.key, t.typeName, i.{version_col}, i.dateModified FROM items i "
                f"JOIN {self.types_table} t ON t.itemTypeID = i.itemTypeID "
                f"WHERE i.libraryID = ? AND t.typeName NOT IN ({marks}) ORDER BY i.key",
                (lib_id, *_NON_PAPER_TYPES),
            )
            if r[0] not in trashed
        ]
        if "feedItems" in self.tables:  # feed entries live in their own libraries; belt and braces
            feed = {r[0] for r in conn.execute("SELECT itemID FROM feedItems")}
            items = [r for r in items if r[0] not in feed]
        fields: dict[int, dict[str, str]] = defaultdict(dict)
        marks = ", ".join("?" * len(_WANTED_FIELDS))
        for item_id, name, value in conn.execute(
            f"SELECT d.itemID, f.fieldName, v.value FROM itemData d "
            f"JOIN {self.fields_table} f ON f.fieldID = d.fieldID "
            f"JOIN itemDataValues v ON v.valueID = d.valueID WHERE f.fieldName IN ({marks})",
            _WANTED_FIELDS,
        ):
            fields[item_id][name] = (
                ""
                if value is None
                else bytes(value).decode("utf-8", "replace")
                if isinstance(value, (bytes, bytearray))
                else str(value)
            )
        creators = self._creators()
        attachments: dict[int, list[AttachmentRow]] = defaultdict(list)
        if "itemAttachments" in self.tables:
            for att_id, parent_id, mode, ctype, path in conn.execute(
                "SELECT itemID, parentItemID, linkMode, contentType, path FROM itemAttachments "
                "WHERE parentItemID IS NOT NULL ORDER BY itemID"
            ):
                if att_id not in trashed and att_id in keys:
                    attachments[parent_id].append(AttachmentRow(keys[att_id], mode, ctype, path))
        bbt_keys = better_bibtex_keys(self.sqlite_path, self.library_id)
        papers = []
        for item_id, key, type_name, version, modified in items:
            f = fields.get(item_id, {})
            date_text, year = parse_zotero_date(next((f[n] for n in _DATE_FIELDS if f.get(n)), ""))
            doi = f.get("DOI") or (m.group(1) if (m := _DOI_IN_EXTRA_RE.search(f.get("extra", ""))) else None)
            fulltext, pdfs = self.fulltext_for(attachments.get(item_id, ()), failures)
            papers.append(
                Paper(
                    key=key,
                    item_type=type_name,
                    title=next((f[n] for n in _TITLE_FIELDS if f.get(n)), ""),
                    creators=creators.get(item_id, ()),
                    year=year,
                    date=date_text,
                    doi=doi or None,
                    abstract=f.get("abstractNote") or None,
                    fulltext=fulltext,
                    publication=next((f[n] for n in _PUBLICATION_FIELDS if f.get(n)), ""),
                    collections=tuple(item_colls.get(item_id, ())),
                    version=version or 0,
                    date_modified=sql_to_iso(modified),
                    pdfs=pdfs,
                    citation_key=pinned_citation_key(f) or bbt_keys.get(key, ""),
                )
            )
        return papers

    def _creators(self) -> dict[int, tuple[str, ...]]:
        """``"Last, First"`` per item in ``orderIndex`` order; authors only when an item has any."""
        if not {"creators", "itemCreators"} <= self.tables or "lastName" not in self.columns("creators"):
            return {}
        type_join = (
            "LEFT JOIN creatorTypes ct ON ct.creatorTypeID = ic.creatorTypeID" if "creatorTypes" in self.tables else ""
        )
        type_col = "ct.creatorType" if type_join else "NULL"
        by_item: dict[int, list[tuple[str, str | None]]] = defaultdict(list)
        for item_id, first, last, mode, ctype in self.conn.execute(
            f"SELECT ic.itemID, c.firstName, c.lastName, c.fieldMode, {type_col} FROM itemCreators ic "
            f"JOIN creators c ON c.creatorID = ic.creatorID {type_join} ORDER BY ic.itemID, ic.orderIndex"
        ):
            name = (last or "").strip() if mode == 1 or not first else f"{(last or '').strip()}, {first.strip()}"
            by_item[item_id].append((name, ctype))
        out = {}
        for item_id, entries in by_item.items():
            authors = [n for n, t in entries if t == "author"]
            out[item_id] = tuple(authors or [n for n, _ in entries])
        return out
