"""Which library each indexed document lives in: the user's own, a group's, or the demo library.

Why tables of their own, written from every sync's snapshot rather than from the bundles: a desktop
database (and a Web API key) reaches several libraries, and search filters and links by library. The
library is not part of what a document says, so it is kept out of the source hashes: an index from
before libraries needs no re-conversion (and no re-embedding); the next sync fills these rows. A
document without a row lives in the first library the source read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence

from zocrates_nb.errors import QueryError
from zocrates_nb.records import LibraryInfo

__all__ = ["FILTER_SQL", "known_libraries", "libraries_of", "record_library", "replace_libraries", "resolve_library"]

#: the ``library`` search filter over ``chunks AS c`` (its parameter: a ``library_id``)
FILTER_SQL = "c.key IN (SELECT key FROM document_libraries WHERE library_id = ?)"


def _has_tables(conn: sqlite3.Connection) -> bool:
    """False for an index opened read-only from before libraries (its schema was never upgraded)."""
    found = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE name IN ('libraries', 'document_libraries')"
    ).fetchone()[0]
    return found == 2


def replace_libraries(conn: sqlite3.Connection, libraries: Sequence[LibraryInfo], of_keys: Mapping[str, int]) -> int:
    """Make the tables say ``libraries`` and ``of_keys`` (key -> library_id), inside the caller's
    transaction; only the rows that differ are written. Returns how many document rows changed."""
    conn.executemany(
        "INSERT INTO libraries(library_id, name, kind, group_id) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(library_id) DO UPDATE SET "
        "name = excluded.name, kind = excluded.kind, group_id = excluded.group_id",
        [(lib.library_id, lib.name, lib.kind, lib.group_id) for lib in libraries],
    )
    wanted = {lib.library_id for lib in libraries}
    for (gone,) in conn.execute("SELECT library_id FROM libraries").fetchall():
        if gone not in wanted:
            conn.execute("DELETE FROM libraries WHERE library_id = ?", (gone,))
    held = dict(conn.execute("SELECT key, library_id FROM document_libraries"))
    stale = [(key,) for key in held if key not in of_keys]
    changed = [(key, lib) for key, lib in of_keys.items() if held.get(key) != lib]
    conn.executemany("DELETE FROM document_libraries WHERE key = ?", stale)
    conn.executemany(
        "INSERT INTO document_libraries(key, library_id) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET library_id = excluded.library_id",
        changed,
    )
    return len(stale) + len(changed)


def record_library(conn: sqlite3.Connection, key: str, library_id: int | None) -> None:
    """One document's library, written as it is indexed (a note saved into a group, before any sync)."""
    if library_id is not None:
        conn.execute(
            "INSERT INTO document_libraries(key, library_id) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET library_id = excluded.library_id",
            (key, library_id),
        )


def known_libraries(conn: sqlite3.Connection) -> list[tuple[LibraryInfo, int]]:
    """Every library the index knows, the first-read first, with how many documents it holds."""
    if not _has_tables(conn):
        return []
    rows = conn.execute(
        "SELECT l.library_id, l.name, l.kind, l.group_id, count(d.key) FROM libraries AS l "
        "LEFT JOIN document_libraries AS d ON d.library_id = l.library_id "
        "GROUP BY l.library_id ORDER BY l.kind = 'group', l.library_id"
    ).fetchall()
    return [(LibraryInfo(lib, name, kind, group), count) for lib, name, kind, group, count in rows]


def libraries_of(conn: sqlite3.Connection, keys: Iterable[str]) -> dict[str, LibraryInfo]:
    """Key -> its library, for the keys that have a row (the rest live in the first library)."""
    keys = list(keys)
    if not keys or not _has_tables(conn):
        return {}
    out: dict[str, LibraryInfo] = {}
    for start in range(0, len(keys), 500):
        part = keys[start : start + 500]
        marks = ",".join("?" * len(part))
        for key, lib, name, kind, group in conn.execute(
            "SELECT d.key, l.library_id, l.name, l.kind, l.group_id FROM document_libraries AS d "
            f"JOIN libraries AS l ON l.library_id = d.library_id WHERE d.key IN ({marks})",
            part,
        ):
            out[key] = LibraryInfo(lib, name, kind, group)
    return out


def resolve_library(conn: sqlite3.Connection, value: str) -> LibraryInfo:
    """The library a ``--library NAME|ID`` value names: its id, its zotero.org group id, or its name
    (letter case ignored). Raises a QueryError listing the libraries when it names none."""
    known = [lib for lib, _ in known_libraries(conn)]
    wanted = str(value).strip()
    for lib in known:
        if wanted in (str(lib.library_id), str(lib.group_id)) or wanted.casefold() == lib.name.casefold():
            return lib
    listed = "; ".join(f"{lib.name} (id {lib.group_id or lib.library_id})" for lib in known)
    raise QueryError(
        f"No library named {wanted!r} is in the index.",
        hint=f"Use one of: {listed}." if known else "Run `zocrates-nb sync` first: it records each item's library.",
    )
