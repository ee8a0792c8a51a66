"""The embedded demo library: a small read/write Zotero-like library in one SQLite file.

Why a real database rather than the JSON files it is seeded from: the demo
library is the default source, so it must behave like Zotero for everything
downstream — notes are created, edited and trashed, get new versions and
modification dates, and several processes (a notebook kernel, the CLI) may use
it at once. SQLite in WAL mode with ``BEGIN IMMEDIATE`` writes gives exactly
that; one open connection behind a lock keeps ``get_note`` an indexed lookup.

Seeding happens on first open from ``zocrates_nb/library/demo/`` (formats in
docs/contracts.md). It is idempotent and race-free: it runs inside one
``BEGIN IMMEDIATE`` transaction and only inserts records that are missing, so
user edits, new notes and trashed notes survive a re-seed (e.g. after the
package ships more demo content).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from zocrates_nb.errors import LibraryError, NotFoundError, ZocratesError
from zocrates_nb.library.base import (
    Annotation,
    Collection,
    LibraryInfo,
    LibrarySnapshot,
    Note,
    Paper,
    check_note_html,
    new_key,
)
from zocrates_nb.library.demo_content import DEMO_CONTENT_DIR, load_demo_annotations, load_demo_content
from zocrates_nb.storage.space import unavailable, write_problem
from zocrates_nb.storage.sqlite_tx import connect_read_only, enable_wal, immediate_transaction

__all__ = ["DEMO_CONTENT_DIR", "DEMO_LIBRARY", "DemoLibrary", "load_demo_content"]

#: the demo library is one library that Zotero does not hold (its items have no zotero:// links)
DEMO_LIBRARY = LibraryInfo(library_id=1, name="Demo library", kind="local")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS collections (
    key TEXT PRIMARY KEY, name TEXT NOT NULL, parent_key TEXT);
CREATE TABLE IF NOT EXISTS papers (
    key TEXT PRIMARY KEY, item_type TEXT NOT NULL, title TEXT NOT NULL,
    creators TEXT NOT NULL DEFAULT '[]', year INTEGER, date TEXT NOT NULL DEFAULT '',
    doi TEXT, publication TEXT NOT NULL DEFAULT '', abstract TEXT, fulltext TEXT,
    collections TEXT NOT NULL DEFAULT '[]', version INTEGER NOT NULL DEFAULT 1,
    date_modified TEXT NOT NULL DEFAULT '', deleted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS notes (
    key TEXT PRIMARY KEY, html TEXT NOT NULL, parent_key TEXT,
    collections TEXT NOT NULL DEFAULT '[]', version INTEGER NOT NULL DEFAULT 1,
    date_added TEXT NOT NULL DEFAULT '', date_modified TEXT NOT NULL DEFAULT '',
    deleted INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS notes_parent ON notes(parent_key);
"""

#: a note is visible unless it, or the paper it belongs to, is in the trash (Zotero's isInTrash)
_VISIBLE_NOTE = (
    "SELECT n.key, n.html, n.parent_key, n.collections, n.version, n.date_modified "
    "FROM notes n LEFT JOIN papers p ON p.key = n.parent_key "
    "WHERE n.deleted = 0 AND COALESCE(p.deleted, 0) = 0"
)
_PAPER_COLS = (
    "key, item_type, title, creators, year, date, doi, publication, abstract, "
    "fulltext, collections, version, date_modified"
)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _note_row(row) -> Note:
    return Note(
        key=row[0],
        html=row[1],
        parent_key=row[2],
        collections=tuple(json.loads(row[3])),
        version=row[4],
        date_modified=row[5],
    )


def _paper_row(row) -> Paper:
    return Paper(
        key=row[0],
        item_type=row[1],
        title=row[2],
        creators=tuple(json.loads(row[3])),
        year=row[4],
        date=row[5],
        doi=row[6],
        publication=row[7],
        abstract=row[8],
        fulltext=row[9],
        collections=tuple(json.loads(row[10])),
        version=row[11],
        date_modified=row[12],
    )


def _content_digest(collections, papers, notes) -> str:
    blob = json.dumps([collections, papers, notes], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class DemoLibrary:
    """The embedded demo library (read/write). See the module docstring for why it is SQLite."""

    writable = True

    def __init__(self, db_path: Path, content_dir: Path | None = None, *, read_only: str | None = None) -> None:
        """``read_only`` (``"read-only"`` or ``"full"``, from ``DataPaths.unwritable``): open for reading
        only, the library as it was last written (no seeding; writes were refused before they got here)."""
        self.db_path = Path(db_path)
        self.content_dir = Path(content_dir) if content_dir else DEMO_CONTENT_DIR
        self._lock = threading.RLock()
        if read_only:
            self._open_read_only(read_only)
            return
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(str(self.db_path), check_same_thread=False, isolation_level=None, timeout=30.0)
            self._conn.execute("PRAGMA busy_timeout = 30000")
            enable_wal(self._conn)
            self._conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc, "could not be opened") from exc
        try:
            self._seed()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc, "could not be prepared") from exc

    def _open_read_only(self, problem: str) -> None:
        if not self.db_path.is_file():
            raise unavailable("The demo library", self.db_path, problem)  # it would have to be created
        try:
            self._conn = connect_read_only(self.db_path, check_same_thread=False, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc, "could not be opened") from exc
        self._load_annotations(*load_demo_content(self.content_dir))

    def _load_annotations(self, collections, papers, notes) -> None:
        taken = {r["key"] for r in (*collections, *papers, *notes)}
        #: read-only, like the PDFs they sit on; shown while their paper is not in the trash
        self._annotations = {
            a.key: a for a in load_demo_annotations(self.content_dir, {p["key"] for p in papers}, taken)
        }

    # -- plumbing -------------------------------------------------------
    def _write(self):
        """One write transaction; BEGIN IMMEDIATE so concurrent processes queue instead of deadlocking."""
        return immediate_transaction(self._conn, self._lock)

    def _bump_library_version(self, conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT value FROM meta WHERE key='library_version'").fetchone()
        version = (int(row[0]) if row else 0) + 1
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('library_version', ?)", (str(version),))
        return version

    def _seed(self) -> None:
        """Insert demo records that are missing; a no-op when this content was already seeded."""
        collections, papers, notes = load_demo_content(self.content_dir)
        self._load_annotations(collections, papers, notes)
        digest = _content_digest(collections, papers, notes)
        with self._write() as conn:
            for statement in filter(str.strip, _SCHEMA.split(";")):  # executescript would COMMIT
                conn.execute(statement)
            row = conn.execute("SELECT value FROM meta WHERE key='seed_digest'").fetchone()
            if row and row[0] == digest:
                return
            now = _now()
            conn.executemany(
                "INSERT OR IGNORE INTO collections(key, name, parent_key) VALUES (?, ?, ?)",
                [(c["key"], c["name"], c.get("parent_key")) for c in collections],
            )
            conn.executemany(
                f"INSERT OR IGNORE INTO papers({_PAPER_COLS}) VALUES ({', '.join('?' * 13)})",
                [
                    (
                        p["key"],
                        p.get("item_type") or "journalArticle",
                        p["title"],
                        json.dumps(list(p.get("creators") or []), ensure_ascii=False),
                        p.get("year"),
                        str(p.get("date") or p.get("year") or ""),
                        p.get("doi"),
                        p.get("publication") or "",
                        p.get("abstract"),
                        p.get("fulltext"),
                        json.dumps(list(p.get("collections") or [])),
                        1,
                        now,
                    )
                    for p in papers
                ],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO notes(key, html, parent_key, collections, version, date_added, date_modified)"
                " VALUES (?, ?, ?, ?, 1, ?, ?)",
                [
                    (n["key"], n["html"], n.get("parent_key"), json.dumps(list(n.get("collections") or [])), now, now)
                    for n in notes
                ],
            )
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('seed_digest', ?)", (digest,))
            self._bump_library_version(conn)

    # -- reads ----------------------------------------------------------
    def describe(self) -> str:
        return f"demo library ({self.db_path})"

    def _damaged(self, exc: sqlite3.DatabaseError, what: str = "is damaged") -> ZocratesError:
        """A damaged demo library is reported (never read as "empty": that would remove every note).

        A directory that is read-only or full is not damage: that error says what to allow or free,
        and never to delete the file (storage/space.py)."""
        if problem := write_problem(self.db_path, exc):
            return unavailable("The demo library", self.db_path, problem, exc)
        return LibraryError(
            f"The demo library {self.db_path} {what}: {exc}",
            "Delete the file to re-create the demo library (your own demo notes are lost), "
            "or choose another data directory.",
        )

    def snapshot(self) -> LibrarySnapshot:
        with self._lock:
            try:
                self._conn.execute("BEGIN")  # one consistent read across the three tables
                try:
                    notes = tuple(_note_row(r) for r in self._conn.execute(_VISIBLE_NOTE + " ORDER BY n.key"))
                    papers = tuple(
                        _paper_row(r)
                        for r in self._conn.execute(f"SELECT {_PAPER_COLS} FROM papers WHERE deleted = 0 ORDER BY key")
                    )
                    collections = tuple(
                        Collection(k, n, p)
                        for k, n, p in self._conn.execute("SELECT key, name, parent_key FROM collections ORDER BY key")
                    )
                    row = self._conn.execute("SELECT value FROM meta WHERE key='library_version'").fetchone()
                finally:
                    self._conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                raise self._damaged(exc) from exc
        shown = {p.key for p in papers}
        return LibrarySnapshot(
            papers=papers,
            notes=notes,
            collections=collections,
            version=int(row[0]) if row else 0,
            annotations=tuple(a for a in self._annotations.values() if a.parent_key in shown),
            libraries=(DEMO_LIBRARY,),
        )

    def get_note(self, key: str) -> Note | None:
        try:
            with self._lock:
                row = self._conn.execute(_VISIBLE_NOTE + " AND n.key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from exc
        return _note_row(row) if row else None

    def get_paper(self, key: str) -> Paper | None:
        try:
            with self._lock:
                row = self._conn.execute(
                    f"SELECT {_PAPER_COLS} FROM papers WHERE key = ? AND deleted = 0", (key,)
                ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from exc
        return _paper_row(row) if row else None

    def get_annotation(self, key: str) -> Annotation | None:
        found = self._annotations.get(key)
        return found if found is not None and self.get_paper(found.parent_key or "") is not None else None

    # -- writes ---------------------------------------------------------
    def create_note(self, html: str, *, parent_key: str | None = None, collection_keys: Sequence[str] = ()) -> Note:
        """Create a child note (``parent_key``) or a standalone note filed in ``collection_keys``.

        Exactly once: the same HTML saved again to the same place returns the note already there
        (a retry after a save that the library accepted but the index could not take, e.g. on a
        full disk, must not leave two copies). The content itself is the write token."""
        check_note_html(html)
        collection_keys = tuple(collection_keys or ())
        if parent_key and collection_keys:
            raise LibraryError(
                "A note can be a child of a paper or filed in collections, not both.",
                "Pass either parent_key or collection_keys (Zotero files child notes through their parent).",
            )
        now = _now()
        with self._write() as conn:
            if (
                parent_key
                and not conn.execute("SELECT 1 FROM papers WHERE key = ? AND deleted = 0", (parent_key,)).fetchone()
            ):
                raise NotFoundError(
                    f"No paper with key {parent_key!r} in the demo library.", "Pick a parent from Workbench.papers()."
                )
            known = {r[0] for r in conn.execute("SELECT key FROM collections")}
            missing = [k for k in collection_keys if k not in known]
            if missing:
                raise NotFoundError(
                    f"Unknown collection key(s): {', '.join(missing)}.",
                    "Pick a collection from Workbench.collections().",
                )
            same = conn.execute(
                "SELECT key, version, date_modified FROM notes "
                "WHERE html = ? AND parent_key IS ? AND collections = ? AND deleted = 0 ORDER BY date_added LIMIT 1",
                (html, parent_key, json.dumps(list(collection_keys))),
            ).fetchone()
            if same:
                return Note(
                    key=same[0],
                    html=html,
                    parent_key=parent_key,
                    collections=collection_keys,
                    version=same[1],
                    date_modified=same[2],
                )
            key = new_key()
            while conn.execute(
                "SELECT 1 FROM notes WHERE key = ? UNION SELECT 1 FROM papers WHERE key = ?", (key, key)
            ).fetchone():
                key = new_key()
            conn.execute(
                "INSERT INTO notes(key, html, parent_key, collections, version, date_added, "
                "date_modified) VALUES (?, ?, ?, ?, 1, ?, ?)",
                (key, html, parent_key, json.dumps(list(collection_keys)), now, now),
            )
            self._bump_library_version(conn)
        return Note(
            key=key, html=html, parent_key=parent_key, collections=collection_keys, version=1, date_modified=now
        )

    def update_note(self, key: str, html: str) -> Note:
        """Replace a note's HTML; bumps its version and modification date like a Zotero save."""
        check_note_html(html)
        with self._write() as conn:
            if not conn.execute(_VISIBLE_NOTE + " AND n.key = ?", (key,)).fetchone():
                raise NotFoundError(
                    f"No note with key {key!r} in the demo library (or it is in the trash).",
                    "Create a new note instead.",
                )
            conn.execute(
                "UPDATE notes SET html = ?, version = version + 1, date_modified = ? WHERE key = ?", (html, _now(), key)
            )
            self._bump_library_version(conn)
            row = conn.execute(_VISIBLE_NOTE + " AND n.key = ?", (key,)).fetchone()
        return _note_row(row)

    def trash_note(self, key: str) -> None:
        """Move a note to the trash (it disappears from snapshots and get_note)."""
        self._trash("notes", key)

    def trash_paper(self, key: str) -> None:
        """Move a paper to the trash; its child notes are then treated as trashed too (as Zotero does)."""
        self._trash("papers", key)

    def _trash(self, table: str, key: str) -> None:
        with self._write() as conn:
            cur = conn.execute(
                f"UPDATE {table} SET deleted = 1, version = version + 1, date_modified = ? "
                "WHERE key = ? AND deleted = 0",
                (_now(), key),
            )
            if cur.rowcount == 0:
                raise NotFoundError(
                    f"No {table[:-1]} with key {key!r} in the demo library (or already trashed).", "Check the key."
                )
            self._bump_library_version(conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"<DemoLibrary {self.db_path}>"
