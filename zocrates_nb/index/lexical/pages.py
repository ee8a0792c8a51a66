"""The page spans of paper and annotation chunks (``chunk_pages``), where each paper's text came from
(``document_text``), and what a PDF annotation shows besides its text (``annotation_facts``).

Why tables of their own beside ``chunks``: a page span belongs to a chunk of a paper read from its
PDF, which most rows (notes, papers without a PDF) do not have; a side table keyed by the chunk's
rowid costs nothing for them, keeps the FTS content table and its triggers as they were, and a
LEFT JOIN on an integer key is free when a result is rendered. ``chunks_pages_ad`` drops a chunk's
span with the chunk. ``document_text`` is what ``status`` counts ("812 of 950 papers from their PDF").
``annotation_facts`` holds an annotation's type, highlighted text, comment, colour, page and PDF as one
JSON object per key: a search hit carries them without opening the bundle.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from zocrates_nb.records import PageSpan

__all__ = ["TEXT_SOURCES", "annotation_facts", "replace_pages", "spans_of", "text_sources", "forget_document"]

#: where a paper's text came from: its PDFs (with pages), the library's full text (no pages), or nothing
TEXT_SOURCES = ("pdf", "fulltext", "metadata")
_IN_BATCH = 500


def replace_pages(conn: sqlite3.Connection, doc: Any, rows: Sequence[Any]) -> None:
    """Inside the caller's transaction, after the chunks were upserted: the document's spans and text source."""
    conn.execute(
        "DELETE FROM chunk_pages WHERE chunk IN (SELECT id FROM chunks WHERE key = ?)",
        (doc.key,),
    )
    spans = [(r.chunk_id, r.pages) for r in rows if getattr(r, "pages", None) is not None]
    conn.executemany(
        "INSERT INTO chunk_pages(chunk, attachment_key, page_start, page_end, label_start, label_end) "
        "SELECT id, ?, ?, ?, ?, ? FROM chunks WHERE chunk_id = ?",
        [(s.attachment_key, s.start, s.end, s.start_label, s.end_label, cid) for cid, s in spans],
    )
    facts = (doc.extra or {}).get("annotation") if doc.kind == "annotation" else None
    if facts is not None:
        conn.execute(
            "INSERT INTO annotation_facts(key, facts) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET facts = excluded.facts",
            (doc.key, json.dumps(facts, ensure_ascii=False, sort_keys=True)),
        )
    else:
        conn.execute("DELETE FROM annotation_facts WHERE key = ?", (doc.key,))
    if doc.kind != "paper":
        conn.execute("DELETE FROM document_text WHERE key = ?", (doc.key,))
        return
    source = doc.text_source if doc.text_source in TEXT_SOURCES else "metadata"
    conn.execute(
        "INSERT INTO document_text(key, source, pages, pdf_failures) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(key) DO UPDATE SET source = excluded.source, pages = excluded.pages, "
        "pdf_failures = excluded.pdf_failures",
        (doc.key, source, int(doc.page_count or 0), int(doc.pdf_failures or 0)),
    )


def forget_document(conn: sqlite3.Connection, key: str) -> None:
    """Inside the caller's transaction: the document is gone (its chunks' spans go with them by trigger)."""
    conn.execute("DELETE FROM document_text WHERE key = ?", (key,))
    conn.execute("DELETE FROM annotation_facts WHERE key = ?", (key,))


def annotation_facts(conn: sqlite3.Connection, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``key → facts`` for the annotations among ``keys``."""
    keys = list(keys)
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(keys), _IN_BATCH):
        part = keys[start : start + _IN_BATCH]
        sql = f"SELECT key, facts FROM annotation_facts WHERE key IN ({','.join('?' * len(part))})"
        out.update((key, json.loads(facts)) for key, facts in conn.execute(sql, part))
    return out


def spans_of(conn: sqlite3.Connection, chunk_ids: Iterable[str]) -> dict[str, PageSpan]:
    """``chunk_id → PageSpan`` for the chunks among ``chunk_ids`` that have pages."""
    ids = list(chunk_ids)
    out: dict[str, PageSpan] = {}
    sql = (
        "SELECT c.chunk_id, p.attachment_key, p.page_start, p.page_end, p.label_start, p.label_end "
        "FROM chunk_pages AS p JOIN chunks AS c ON c.id = p.chunk WHERE c.chunk_id IN ({marks})"
    )
    for start in range(0, len(ids), _IN_BATCH):
        part = ids[start : start + _IN_BATCH]
        for cid, attachment, first, last, first_label, last_label in conn.execute(
            sql.format(marks=",".join("?" * len(part))), part
        ):
            out[cid] = PageSpan(attachment, first, last, first_label, last_label)
    return out


def text_sources(conn: sqlite3.Connection) -> dict[str, Any]:
    """Papers by text source, and how many PDFs at hand could not be read (``status``'s pages line)."""
    counts = {source: 0 for source in TEXT_SOURCES}
    for source, n in conn.execute("SELECT source, count(*) FROM document_text GROUP BY source"):
        counts[source] = counts.get(source, 0) + n
    failures = conn.execute("SELECT coalesce(sum(pdf_failures), 0) FROM document_text").fetchone()[0]
    return {**counts, "pdf_failures": int(failures)}
