"""The outbox: saved notes that Zotero has not confirmed yet, kept durably in the data directory.

Why it exists: a desktop library is read from a snapshot, and the doors into Zotero
(the local API, the Web API) may be closed, down or slow. A note the user saved must
never be lost and never be written twice, so:

* every note first gets an entry here (``outbox.sqlite``, committed before anything is
  sent): its future Zotero key, a ``Zotero-Write-Token``, the HTML and where it goes;
* the entry leaves the outbox only when Zotero has confirmed that key (``confirm``);
  it then waits in ``waiting`` until the library snapshot shows it (Zotero synced it
  down), so sync never reports it "removed" in between;
* ``push`` runs under one file lock, so two kernels pushing at once still send each
  note once; a crash between Zotero's 200 and ``confirm`` is a no-op on retry (same
  token → "already used" → confirmed by key).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from zocrates_nb.records import Note, new_key
from zocrates_nb.storage.locks import file_lock
from zocrates_nb.storage.sqlite_tx import connect_read_only, enable_wal

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, write_token TEXT NOT NULL, html TEXT NOT NULL,
       parent_key TEXT, collection_keys TEXT NOT NULL, title TEXT NOT NULL, created REAL NOT NULL,
       reason TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0)""",
    """CREATE TABLE IF NOT EXISTS waiting (key TEXT PRIMARY KEY, html TEXT NOT NULL, parent_key TEXT,
       collection_keys TEXT NOT NULL, title TEXT NOT NULL, written_to TEXT NOT NULL, written REAL NOT NULL)""",
    # a note saved into a group library: where the writers send it (``groups/<groupID>``); none: their own
    "CREATE TABLE IF NOT EXISTS entry_libraries (key TEXT PRIMARY KEY, library_path TEXT NOT NULL)",
)


@dataclass(frozen=True)
class OutboxEntry:
    key: str
    html: str
    parent_key: str | None
    collection_keys: tuple[str, ...]
    title: str
    reason: str = ""
    write_token: str = ""
    attempts: int = 0
    written_to: str = ""  # for waiting notes: "zotero-local" | "zotero-web"
    written: float = 0.0  # for waiting notes: when Zotero confirmed it (epoch seconds)
    library_path: str = ""  # a group library's note: "groups/<groupID>"; "": the writer's own library

    def as_note(self) -> Note:
        return Note(self.key, self.html, self.parent_key, () if self.parent_key else self.collection_keys)

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "title": self.title,
            "parent_key": self.parent_key,
            "collection_keys": list(self.collection_keys),
            "reason": self.reason,
            "attempts": self.attempts,
        }

    def waiting_dict(self, now: float | None = None) -> dict:
        """A waiting note as ``outbox list --json`` shows it: where it went and how long it has waited."""
        return {
            "key": self.key,
            "title": self.title,
            "written_to": self.written_to,
            "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.written)),
            "waiting_s": round(waited_s(self.written, now), 1),
        }


def waited_s(since: float, now: float | None = None) -> float:
    """Seconds from ``since`` to ``now`` (never negative: a clock step back reads as 0)."""
    return max(0.0, (time.time() if now is None else now) - since)


def format_age(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3 h``, ``2 days``: how long a note has waited, for people."""
    for limit, unit, size in ((90, "s", 1), (90 * 60, "min", 60), (48 * 3600, "h", 3600)):
        if seconds < limit:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds / 86400:.0f} days"


@dataclass
class PushReport:
    written: list[tuple[str, str]]  # (key, where)
    kept: list[tuple[str, str]]  # (key, reason)

    def to_dict(self) -> dict:
        return {
            "written": [{"key": k, "where": w} for k, w in self.written],
            "kept": [{"key": k, "reason": r} for k, r in self.kept],
        }


class Outbox:
    """``<data-dir>/outbox.sqlite`` plus ``locks/outbox.lock``. Cheap to open; every call is one transaction."""

    def __init__(self, path: Path, lock_path: Path, paths=None) -> None:
        self.path, self.lock_path = Path(path), Path(lock_path)
        self.paths = paths  # the DataPaths it belongs to (to ask the writers about waiting notes)

    @classmethod
    def for_paths(cls, paths) -> Outbox:
        return cls(paths.root / "outbox.sqlite", paths.locks / "outbox.lock", paths)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        enable_wal(conn)
        conn.execute("PRAGMA synchronous = FULL")  # an entry is a user's note: durable before we return
        for statement in _SCHEMA:
            conn.execute(statement)
        return conn

    def _read(self) -> sqlite3.Connection:
        """For the reads: read-only where the data directory cannot be written (no schema, no WAL)."""
        if self.paths is not None and self.paths.unwritable:
            return connect_read_only(self.path, timeout=30.0, isolation_level=None)
        return self._connect()

    # -- adding and reading ----------------------------------------------
    def add(
        self,
        html: str,
        *,
        title: str,
        parent_key: str | None = None,
        collection_keys: Sequence[str] = (),
        reason: str = "not sent yet",
        library_path: str | None = None,
    ) -> OutboxEntry:
        """Queue a note; the same note queued again (a retried save) returns the entry already queued.

        Why idempotent: a save can fail after this entry was written (a full disk while
        indexing it); the user's retry must not send Zotero a second copy."""
        for queued in (*self.entries(), *self.waiting()):  # waiting: Zotero has it, the snapshot not yet
            if (queued.html, queued.parent_key, queued.collection_keys) == (html, parent_key, tuple(collection_keys)):
                return queued
        entry = OutboxEntry(
            new_key(),
            html,
            parent_key,
            tuple(collection_keys),
            title,
            reason,
            secrets.token_hex(16),
            library_path=library_path or "",
        )
        with closing(self._connect()) as conn:
            if library_path:
                conn.execute("INSERT OR REPLACE INTO entry_libraries VALUES (?, ?)", (entry.key, library_path))
            conn.execute(
                "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)",
                (
                    entry.key,
                    entry.write_token,
                    html,
                    parent_key,
                    json.dumps(list(collection_keys)),
                    title,
                    time.time(),
                    reason,
                ),
            )
        return entry

    def entries(self) -> list[OutboxEntry]:
        if not self.path.exists():
            return []
        with closing(self._read()) as conn:
            rows = conn.execute(
                "SELECT key, html, parent_key, collection_keys, title, reason, write_token, attempts "
                "FROM entries ORDER BY created"
            ).fetchall()
            where = _library_paths(conn)
        return [
            OutboxEntry(
                r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6], r[7], library_path=where.get(r[0], "")
            )
            for r in rows
        ]

    def waiting(self) -> list[OutboxEntry]:
        """Notes Zotero confirmed that the library snapshot does not show yet."""
        if not self.path.exists():
            return []
        with closing(self._read()) as conn:
            rows = conn.execute(
                "SELECT key, html, parent_key, collection_keys, title, written_to, written "
                "FROM waiting ORDER BY written"
            ).fetchall()
            where = _library_paths(conn)
        return [
            OutboxEntry(
                r[0],
                r[1],
                r[2],
                tuple(json.loads(r[3])),
                r[4],
                written_to=r[5],
                written=r[6],
                library_path=where.get(r[0], ""),
            )
            for r in rows
        ]

    def unsent(self) -> dict[str, str]:
        """Keys Zotero has not confirmed yet → why: one query, so every search can mark its outbox hits.

        Why not ``entries()``: a search needs the keys only, not every note's HTML. A missing
        ``outbox.sqlite`` (nothing was ever saved) costs a ``stat``, not a database."""
        if not self.path.exists():
            return {}
        with closing(self._read()) as conn:
            return dict(conn.execute("SELECT key, reason FROM entries").fetchall())

    def counts(self) -> dict:
        """``outbox`` and ``waiting`` sizes, and how long the oldest waiting note has waited (s, or None)."""
        if not self.path.exists():
            return {"outbox": 0, "waiting": 0, "oldest_waiting_s": None}
        with closing(self._read()) as conn:
            waiting, oldest = conn.execute("SELECT count(*), min(written) FROM waiting").fetchone()
            return {
                "outbox": conn.execute("SELECT count(*) FROM entries").fetchone()[0],
                "waiting": waiting,
                "oldest_waiting_s": None if oldest is None else round(waited_s(oldest), 1),
            }

    # -- state changes -----------------------------------------------------
    def note_failure(self, key: str, reason: str) -> None:
        with closing(self._connect()) as conn:
            conn.execute("UPDATE entries SET reason = ?, attempts = attempts + 1 WHERE key = ?", (reason, key))

    def confirm(self, key: str, written_to: str, *, wait_for_snapshot: bool = True) -> None:
        """Zotero confirmed ``key``: leave the outbox (into ``waiting`` until the snapshot shows it)."""
        with closing(self._connect()) as conn:
            conn.execute("BEGIN IMMEDIATE")
            row = conn.execute(
                "SELECT html, parent_key, collection_keys, title FROM entries WHERE key = ?", (key,)
            ).fetchone()
            if row and wait_for_snapshot:
                conn.execute(
                    "INSERT OR REPLACE INTO waiting VALUES (?, ?, ?, ?, ?, ?, ?)", (key, *row, written_to, time.time())
                )
            conn.execute("DELETE FROM entries WHERE key = ?", (key,))
            conn.execute("COMMIT")

    def drop(self, key: str) -> bool:
        """Give up on one entry (after ``export``, e.g. when Zotero keeps refusing it); True if it existed."""
        if not self.path.exists():
            return False
        with closing(self._connect()) as conn:
            conn.execute("DELETE FROM entry_libraries WHERE key = ?", (key,))
            return conn.execute("DELETE FROM entries WHERE key = ?", (key,)).rowcount > 0

    def forget_waiting(self, keys: Sequence[str]) -> None:
        """The snapshot now shows these notes: from here on Zotero is the only truth about them."""
        if not keys or not self.path.exists() or (self.paths is not None and self.paths.unwritable):
            return  # reading only: the next writable run forgets them
        with closing(self._connect()) as conn:
            conn.executemany("DELETE FROM waiting WHERE key = ?", [(k,) for k in keys])
            conn.executemany("DELETE FROM entry_libraries WHERE key = ?", [(k,) for k in keys])

    # -- sending -------------------------------------------------------------
    def push(
        self, send: Callable[[OutboxEntry], str], *, wait_for_snapshot: bool = True, lock_timeout: float = 120.0
    ) -> PushReport:
        """Send every entry with ``send(entry) -> where``; one pusher at a time across processes.

        ``send`` raises ``WriterUnavailable`` when Zotero cannot be reached (stop: the rest
        would fail the same way) or ``LibraryError`` when Zotero refused this one note.
        """
        from zocrates_nb.errors import LibraryError
        from zocrates_nb.library.writing.note_writers import WriterUnavailable

        report = PushReport([], [])
        with file_lock(self.lock_path, timeout=lock_timeout):
            pending = self.entries()  # read under the lock: another pusher's confirmations are seen
            for index, entry in enumerate(pending):
                try:
                    where = send(entry)
                except WriterUnavailable as exc:
                    for rest in pending[index:]:
                        self.note_failure(rest.key, exc.message)
                        report.kept.append((rest.key, exc.message))
                    break
                except LibraryError as exc:
                    self.note_failure(entry.key, exc.message)
                    report.kept.append((entry.key, exc.message))
                    continue
                self.confirm(entry.key, where, wait_for_snapshot=wait_for_snapshot)
                report.written.append((entry.key, where))
        return report

    def export(self, folder: Path) -> list[Path]:
        """Write each waiting note as ``KEY.html`` (paste into a Zotero note) and return the files."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for entry in self.entries():
            target = folder / f"{entry.key}.html"
            target.write_text(entry.html, encoding="utf-8")
            written.append(target)
        return written


def _library_paths(conn: sqlite3.Connection) -> dict[str, str]:
    """Key -> ``groups/<id>`` for the notes saved into a group (an outbox from before groups has none)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'entry_libraries'").fetchone():
        return {}
    return dict(conn.execute("SELECT key, library_path FROM entry_libraries").fetchall())
