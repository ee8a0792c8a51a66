"""A note's links to papers (``note_links``): which papers it cites or names, and why (corpus/links.py).

Why a table beside ``chunks``: search needs, for the ~30 candidate notes of a query, the papers
each links to (a linked note inherits a share of its papers' scores: index/rank/bridge.py), and
``explain`` shows them. One indexed read by note key does that without opening bundles. The rows
are written with the note's chunks, in the same transaction, and deleted with them, so an edit
that removes a citation removes its link at the next sync.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["replace_links", "forget_links", "links_of", "LinkRow"]

_IN_BATCH = 500

LinkRow = tuple[str, str, str]  # (paper key, reason, paper title)


def replace_links(conn: sqlite3.Connection, key: str, links: Iterable[Mapping[str, Any]]) -> None:
    """Inside the caller's transaction: ``key``'s links are exactly ``links`` (none for a paper)."""
    conn.execute("DELETE FROM note_links WHERE note_key = ?", (key,))
    conn.executemany(
        "INSERT OR REPLACE INTO note_links(note_key, paper_key, reason, title) VALUES (?, ?, ?, ?)",
        [
            (key, str(link["key"]), str(link.get("reason") or ""), str(link.get("title") or ""))
            for link in links
            if link.get("key")
        ],
    )


def forget_links(conn: sqlite3.Connection, key: str) -> None:
    conn.execute("DELETE FROM note_links WHERE note_key = ?", (key,))


def links_of(conn: sqlite3.Connection, keys: Iterable[str]) -> dict[str, list[LinkRow]]:
    """``note key → [(paper key, reason, title), …]`` for the notes among ``keys`` that link any paper."""
    wanted = list(dict.fromkeys(keys))
    out: dict[str, list[LinkRow]] = {}
    for start in range(0, len(wanted), _IN_BATCH):
        part = wanted[start : start + _IN_BATCH]
        sql = (
            "SELECT note_key, paper_key, reason, title FROM note_links "
            f"WHERE note_key IN ({','.join('?' * len(part))}) ORDER BY note_key, rowid"
        )
        for note_key, paper_key, reason, title in conn.execute(sql, part):
            out.setdefault(note_key, []).append((paper_key, reason, title))
    return out
