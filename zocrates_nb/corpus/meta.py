"""conversion_meta.db: which bundle is current for which source (SHA-256 staleness).

Why SQLite and one shared connection: the index keeps its FTS5 rows in this
same file, so the meta row and the FTS rows of a document change in ONE
transaction (``write()``). WAL lets readers (other kernels, the CLI) read while
one process writes; ``BEGIN IMMEDIATE`` takes the write lock up front so a
writer never fails half-way with ``SQLITE_BUSY_SNAPSHOT``; ``busy_timeout``
makes a second writer wait instead of erroring.

The read path (``lookup``) is a single indexed SELECT on a cached connection
and a cached prepared statement: a few microseconds.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from zocrates_nb.errors import IndexCorruptError
from zocrates_nb.storage.space import unavailable, write_problem
from zocrates_nb.storage.sqlite_tx import connect_read_only, enable_wal

SCHEMA_VERSION = 2  # 2: kind may be 'annotation'

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY,
    key TEXT UNIQUE NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('note', 'paper', 'annotation')),
    source_hash TEXT NOT NULL,
    converter_version TEXT NOT NULL,
    bundle_path TEXT NOT NULL,
    title TEXT,
    parent_key TEXT,
    updated_at TEXT,
    context_hash TEXT,
    collections TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS documents_kind ON documents(kind);
CREATE INDEX IF NOT EXISTS documents_parent ON documents(parent_key);
"""

_LOOKUP = "SELECT kind, source_hash, converter_version, bundle_path FROM documents WHERE key = ?"
_UPSERT = """
INSERT INTO documents (key, kind, source_hash, converter_version, bundle_path, title, parent_key,
                       updated_at, context_hash, collections)
VALUES (:key, :kind, :source_hash, :converter_version, :bundle_path, :title, :parent_key,
        :updated_at, :context_hash, :collections)
ON CONFLICT(key) DO UPDATE SET
    kind = excluded.kind, source_hash = excluded.source_hash,
    converter_version = excluded.converter_version, bundle_path = excluded.bundle_path,
    title = excluded.title, parent_key = excluded.parent_key, updated_at = excluded.updated_at,
    context_hash = excluded.context_hash, collections = excluded.collections
"""


@dataclass(frozen=True)
class MetaRow:
    """One row of ``documents``: what the corpus believes is current for a key."""

    key: str
    kind: str
    source_hash: str
    converter_version: str
    bundle_path: str
    title: str | None = None
    parent_key: str | None = None
    updated_at: str | None = None
    context_hash: str | None = None
    collections: tuple[str, ...] = ()


class MetaDB:
    """The ``documents`` table on one cached, thread-safe connection."""

    def __init__(self, path: Path, *, busy_timeout_ms: int = 10_000, read_only: str | None = None) -> None:
        """``read_only`` (``DataPaths.unwritable``): one read-only connection serves both roles, and
        any write raises (the write verbs refuse before they get here)."""
        self.path = Path(path)
        self._lock = threading.RLock()  # guards the writer connection (and its transaction)
        self._read_lock = threading.Lock()  # guards the reader connection
        self._depth = 0
        if read_only:
            self._open_read_only(read_only)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = self._connect(busy_timeout_ms)
            enable_wal(self.conn)
            self.conn.execute("PRAGMA synchronous = NORMAL")
            if not _schema_current(self.conn):  # a write: skipped when there is nothing to add (a full disk)
                with self.write() as conn:
                    _allow_annotations(conn)
                    for statement in _statements(_SCHEMA):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            # reads use their own connection: in WAL they see the last commit and never wait
            # for (or see the uncommitted half of) a sync running on the writer connection
            self._reader = self._connect(busy_timeout_ms)
        except sqlite3.DatabaseError as err:
            if problem := write_problem(self.path, err):  # read-only or full: not damage, nothing to repair
                raise unavailable("The conversion database", self.path, problem, err) from err
            raise IndexCorruptError(
                f"{self.path.name} could not be opened: {err}",
                "Run `zocrates-nb doctor --repair`: it moves the damaged file aside and "
                "re-creates it from the bundles (your Zotero library is not touched).",
            ) from err

    def _open_read_only(self, problem: str) -> None:
        if not self.path.is_file():
            raise unavailable("The conversion database", self.path, problem)
        try:
            self.conn = self._reader = connect_read_only(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.DatabaseError as err:
            raise unavailable("The conversion database", self.path, problem, err) from err

    def _connect(self, busy_timeout_ms: int) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(self.path),
            isolation_level=None,
            check_same_thread=False,
            timeout=busy_timeout_ms / 1000,
            cached_statements=256,
        )
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        return conn

    # -- transactions ----------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on error); nested calls become savepoints."""
        with self._lock:
            depth = self._depth
            if depth == 0:
                self.conn.execute("BEGIN IMMEDIATE")
            else:
                self.conn.execute(f"SAVEPOINT w{depth}")
            self._depth = depth + 1
            try:
                yield self.conn
            except BaseException:
                self._depth = depth
                if depth == 0:
                    self.conn.execute("ROLLBACK")
                else:
                    self.conn.execute(f"ROLLBACK TO w{depth}")
                    self.conn.execute(f"RELEASE w{depth}")
                raise
            self._depth = depth
            if depth == 0:
                self.conn.execute("COMMIT")
            else:
                self.conn.execute(f"RELEASE w{depth}")

    # -- reads -----------------------------------------------------------
    def lookup(self, key: str) -> tuple[str, str, str, str] | None:
        """(kind, source_hash, converter_version, bundle_path) or None: the fast-path query."""
        with self._read_lock:
            return self._reader.execute(_LOOKUP, (key,)).fetchone()

    def get(self, key: str) -> MetaRow | None:
        with self._read_lock:
            row = self._reader.execute(
                "SELECT key, kind, source_hash, converter_version, bundle_path, title, parent_key, "
                "updated_at, context_hash, collections FROM documents WHERE key = ?",
                (key,),
            ).fetchone()
        return _row(row) if row else None

    def rows(self, kind: str | None = None) -> list[MetaRow]:
        sql = (
            "SELECT key, kind, source_hash, converter_version, bundle_path, title, parent_key, "
            "updated_at, context_hash, collections FROM documents"
        )
        with self._read_lock:
            if kind:
                found = self._reader.execute(sql + " WHERE kind = ? ORDER BY key", (kind,)).fetchall()
            else:
                found = self._reader.execute(sql + " ORDER BY key").fetchall()
        return [_row(r) for r in found]

    def state(self) -> dict[str, tuple[str, str, str, str | None]]:
        """key → (kind, source_hash, converter_version, context_hash) for every document (sync's diff)."""
        with self._read_lock:
            found = self._reader.execute(
                "SELECT key, kind, source_hash, converter_version, context_hash FROM documents"
            ).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in found}

    def keys(self, kind: str | None = None) -> list[str]:
        with self._read_lock:
            if kind:
                found = self._reader.execute("SELECT key FROM documents WHERE kind = ? ORDER BY key", (kind,))
            else:
                found = self._reader.execute("SELECT key FROM documents ORDER BY key")
            return [r[0] for r in found.fetchall()]

    def count(self, kind: str | None = None) -> int:
        with self._read_lock:
            if kind:
                return self._reader.execute("SELECT count(*) FROM documents WHERE kind = ?", (kind,)).fetchone()[0]
            return self._reader.execute("SELECT count(*) FROM documents").fetchone()[0]

    # -- writes (call inside write()) -------------------------------------
    def upsert(self, conn: sqlite3.Connection, row: MetaRow) -> None:
        """Insert or update (UPSERT, never INSERT OR REPLACE: that skips FTS delete triggers)."""
        conn.execute(_UPSERT, {**row.__dict__, "collections": json.dumps(list(row.collections), ensure_ascii=False)})

    def delete(self, conn: sqlite3.Connection, key: str) -> None:
        conn.execute("DELETE FROM documents WHERE key = ?", (key,))

    def close(self) -> None:
        with self._lock, self._read_lock:
            for conn in {id(c): c for c in (getattr(self, "_reader", None), self.conn)}.values():
                if conn is not None:
                    conn.close()

    def __repr__(self) -> str:
        return f"MetaDB({str(self.path)!r})"


def _allow_annotations(conn: sqlite3.Connection) -> None:
    """A ``documents`` table from schema 1 (kind note or paper only) gets the wider CHECK, rows kept.

    Why a copy: SQLite cannot change a CHECK in place. Runs once, inside the opening transaction."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'documents'").fetchone()
    if row is None or "'annotation'" in (row[0] or ""):
        return
    conn.execute("ALTER TABLE documents RENAME TO documents_v1")
    for statement in _statements(_SCHEMA):
        if statement.startswith("CREATE TABLE"):
            conn.execute(statement)
    conn.execute(
        "INSERT INTO documents (id, key, kind, source_hash, converter_version, bundle_path, title, parent_key, "
        "updated_at, context_hash, collections) SELECT id, key, kind, source_hash, converter_version, bundle_path, "
        "title, parent_key, updated_at, context_hash, collections FROM documents_v1"
    )
    conn.execute("DROP TABLE documents_v1")  # its indexes go with it; _SCHEMA re-creates them


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _row(row: tuple) -> MetaRow:
    return MetaRow(
        key=row[0],
        kind=row[1],
        source_hash=row[2],
        converter_version=row[3],
        bundle_path=row[4],
        title=row[5],
        parent_key=row[6],
        updated_at=row[7],
        context_hash=row[8],
        collections=tuple(json.loads(row[9] or "[]")),
    )


def _schema_current(conn: sqlite3.Connection) -> bool:
    """Whether the file already holds this version's tables (``user_version`` is set after them)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    return (
        version == SCHEMA_VERSION
        and conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'documents'").fetchone()
        is not None
    )
