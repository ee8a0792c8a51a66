"""The DOIs and titles of the papers the library holds, kept by sync in ``conversion_meta.db``.

Why: an online turn drops candidates the library already holds (same DOI or same normalised
title). Reading every paper manifest for that took one file read per paper per turn (5,000 JSON
files for a 5,000-paper library). Sync already writes each paper in a transaction, so it records
``(key, doi, title)`` in the same transaction, and an online turn reads one small table.

The values are stored as the manifest has them; the agents normalise them (``normalize_doi``,
``normalize_title`` in agents/online_clients.py), so the corpus does not depend on the agents.
A data directory synced before this table existed is backfilled from its manifests once, at the
next sync; until then ``load`` returns None and the caller reads the manifests as before.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["ensure_complete", "forget", "load", "record"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS held_papers (key TEXT PRIMARY KEY, doi TEXT, title TEXT);
CREATE TABLE IF NOT EXISTS held_papers_state (complete INTEGER NOT NULL);
"""


def _ensure(conn: sqlite3.Connection) -> None:
    for statement in filter(str.strip, _SCHEMA.split(";")):
        conn.execute(statement)


def record(conn: sqlite3.Connection, key: str, doi: str | None, title: str | None) -> None:
    """Inside the corpus's write transaction: this paper is held (insert or update)."""
    _ensure(conn)
    conn.execute(
        "INSERT INTO held_papers (key, doi, title) VALUES (?, ?, ?) "
        "ON CONFLICT(key) DO UPDATE SET doi = excluded.doi, title = excluded.title",
        (key, doi, title),
    )


def forget(conn: sqlite3.Connection, key: str) -> None:
    """Inside the corpus's write transaction: this document is gone."""
    _ensure(conn)
    conn.execute("DELETE FROM held_papers WHERE key = ?", (key,))


def ensure_complete(conn: sqlite3.Connection, paper_keys: Iterable[str], manifest_of: Callable[[str], dict]) -> int:
    """Backfill the table from the manifests once (a data directory older than the table).

    Returns how many papers were backfilled (0 when the table was already complete).
    """
    _ensure(conn)
    if conn.execute("SELECT complete FROM held_papers_state").fetchone():
        return 0
    count = 0
    for key in paper_keys:
        manifest = manifest_of(key)
        record(conn, key, manifest.get("doi"), manifest.get("title"))
        count += 1
    conn.execute("INSERT INTO held_papers_state (complete) VALUES (1)")
    return count


def load(db_path: Path) -> list[tuple[str | None, str | None]] | None:
    """``[(doi, title), …]`` of every held paper, or None when the table is not complete yet."""
    if not Path(db_path).is_file():
        return None
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30.0)
    try:
        if not conn.execute("SELECT complete FROM held_papers_state").fetchone():
            return None
        return [(doi, title) for doi, title in conn.execute("SELECT doi, title FROM held_papers")]
    except sqlite3.OperationalError:  # no such table: a data directory not synced since
        return None
    finally:
        conn.close()
