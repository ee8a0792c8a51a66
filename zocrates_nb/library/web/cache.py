"""The SQLite cache of a Zotero Web / local API library (``zotero_web_cache.sqlite``) — no network.

Why its own module: ``ZoteroWebLibrary`` (library/web/source.py, the only module that imports
pyzotero) talks to Zotero; everything it keeps between calls lives here. A sync's listings are
applied in one transaction together with the new library version, so an interrupted sync leaves
the previous consistent cache; ``snapshot()``, ``get_note()`` and ``get_paper()`` are local reads.
The cache remembers which library (and server) it holds and starts afresh when pointed at another.
The SQL and the object → record functions are in ``zotero_web_objects.py``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import AbstractContextManager
from pathlib import Path

from zocrates_nb.library.base import Annotation, Collection, Note, Paper
from zocrates_nb.library.web.objects import (
    CACHE_SCHEMA,
    PAPER_FULLTEXT,
    VISIBLE_ANNOTATIONS,
    VISIBLE_NOTES,
    annotation_from_object,
    note_from_object,
    paper_from_object,
    with_text,
)
from zocrates_nb.storage.sqlite_tx import enable_wal, immediate_transaction

__all__ = ["SKIP_TYPES", "WebCache"]

#: item types that are not papers (they hang under one, or are the notes themselves)
SKIP_TYPES = ("note", "attachment", "annotation")


class WebCache:
    """The cached API objects of one library: items, collections, attachment full text, and the library version."""

    def __init__(self, cache_path: Path | None, identity: str, lock: threading.RLock) -> None:
        self.cache_path = Path(cache_path) if cache_path else None
        if self.cache_path:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = lock
        self._db = sqlite3.connect(
            str(self.cache_path) if self.cache_path else ":memory:",
            check_same_thread=False,
            isolation_level=None,
            timeout=30.0,
        )
        self._db.execute("PRAGMA busy_timeout = 30000")
        if self.cache_path:
            enable_wal(self._db)
        with self.txn() as db:
            for statement in CACHE_SCHEMA:
                db.execute(statement)
            row = db.execute("SELECT value FROM meta WHERE key = 'library'").fetchone()
            if row and row[0] != identity:  # another library: start the cache afresh
                for table in ("items", "collections", "meta"):
                    db.execute(f"DELETE FROM {table}")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('library', ?)", (identity,))

    def txn(self) -> AbstractContextManager[sqlite3.Connection]:
        return immediate_transaction(self._db, self._lock)

    def version(self) -> int | None:
        """The library version the cache is synced to; None before the first sync."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        return int(row[0]) if row else None

    def apply_sync(
        self,
        items: list,
        collections: list,
        deleted: dict,
        texts: list[tuple[str, int, str]],
        version: int,
    ) -> int:
        """One sync's listings in one transaction with the new library ``version``; returns how many were deleted."""
        with self.txn() as db:
            for obj in items:
                _insert_item(db, obj)
            for obj in collections:
                data = obj["data"]
                db.execute(
                    "INSERT OR REPLACE INTO collections VALUES (?, ?, ?, ?, ?)",
                    (
                        obj["key"],
                        int(obj.get("version", 0)),
                        data.get("name", ""),
                        data.get("parentCollection") or None,
                        1 if data.get("deleted") else 0,
                    ),
                )
            gone_items, gone_colls = deleted.get("items") or [], deleted.get("collections") or []
            db.executemany("DELETE FROM items WHERE key = ?", [(k,) for k in gone_items])
            db.executemany("DELETE FROM collections WHERE key = ?", [(k,) for k in gone_colls])
            db.executemany("INSERT OR REPLACE INTO fulltext VALUES (?, ?, ?)", texts)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (str(version),))
        return len(gone_items) + len(gone_colls)

    def store(self, obj: dict) -> None:
        """One item object as the API returned it (after a write, or a fetch of one item)."""
        with self.txn() as db:
            _insert_item(db, obj)

    def read(self) -> tuple[tuple[Paper, ...], tuple[Note, ...], tuple[Collection, ...], int | None]:
        """Papers (with their attachments' text), visible notes, collections and the version, in one read."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                notes = tuple(
                    note_from_object(json.loads(r[0])) for r in self._db.execute(VISIBLE_NOTES + " ORDER BY i.key")
                )
                placeholders = ", ".join("?" * len(SKIP_TYPES))
                texts: dict[str, list[str]] = {}
                for parent, content in self._db.execute(PAPER_FULLTEXT):
                    texts.setdefault(parent, []).append(content)
                papers = tuple(
                    with_text(paper_from_object(json.loads(r[0])), texts)
                    for r in self._db.execute(
                        f"SELECT obj FROM items WHERE deleted = 0 AND item_type NOT IN ({placeholders}) ORDER BY key",
                        SKIP_TYPES,
                    )
                )
                collections = tuple(
                    Collection(k, n, p)
                    for k, n, p in self._db.execute(
                        "SELECT key, name, parent_key FROM collections WHERE deleted = 0 ORDER BY name"
                    )
                )
                version = self.version()
            finally:
                self._db.execute("COMMIT")
        return papers, notes, collections, version

    def annotations(self) -> tuple[Annotation, ...]:
        """The visible PDF annotations, with their paper (the attachment's parent), in reading order."""
        with self._lock:
            rows = self._db.execute(VISIBLE_ANNOTATIONS + " ORDER BY i.parent_key, i.key").fetchall()
        found = [annotation_from_object(json.loads(obj), paper) for obj, paper in rows]
        return tuple(sorted(found, key=lambda a: (a.attachment_key, a.sort_index, a.key)))

    def get_annotation(self, key: str) -> Annotation | None:
        with self._lock:
            row = self._db.execute(VISIBLE_ANNOTATIONS + " AND i.key = ?", (key,)).fetchone()
        return annotation_from_object(json.loads(row[0]), row[1]) if row else None

    def get_note(self, key: str) -> Note | None:
        with self._lock:
            row = self._db.execute(VISIBLE_NOTES + " AND i.key = ?", (key,)).fetchone()
        return note_from_object(json.loads(row[0])) if row else None

    def get_paper(self, key: str) -> Paper | None:
        with self._lock:
            row = self._db.execute("SELECT obj, item_type FROM items WHERE key = ? AND deleted = 0", (key,)).fetchone()
        if not row or row[1] in SKIP_TYPES:
            return None
        with self._lock:
            one_paper = PAPER_FULLTEXT.replace("ORDER BY", "AND a.parent_key = ? ORDER BY")
            texts = [c for _, c in self._db.execute(one_paper, (key,))]
        return with_text(paper_from_object(json.loads(row[0])), {key: texts})

    def library_name(self) -> str | None:
        """The library's name as the API gives it on every object (``library.name``); None before a sync."""
        with self._lock:
            row = self._db.execute("SELECT json_extract(obj, '$.library.name') FROM items LIMIT 1").fetchone()
        return str(row[0]) if row and row[0] else None

    def version_and_type(self, key: str) -> tuple[int, str] | None:
        """The cached version and item type of one item (deleted or not); None when it is not cached."""
        row = self._db.execute("SELECT version, item_type FROM items WHERE key = ?", (key,)).fetchone()
        return (row[0], row[1]) if row else None

    def close(self) -> None:
        self._db.close()


def _insert_item(db: sqlite3.Connection, obj: dict) -> None:
    data = obj["data"]
    db.execute(
        "INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?, ?, ?)",
        (
            obj["key"],
            int(obj.get("version", 0)),
            data.get("itemType", ""),
            data.get("parentItem") or None,
            1 if data.get("deleted") else 0,
            json.dumps(obj, ensure_ascii=False),
        ),
    )
