"""The lexical index's SQLite schema: tables, FTS5 table, triggers, and the bm25 rank weights.

Why apart from index/lexical/fts.py: creating and checking the schema (and the persisted ``rank``
expression) is one idea, run once when the index opens; fts.py is about reading and writing
rows. Upgrades of an older schema live in index/lexical/migrate.py.
"""

from __future__ import annotations

import sqlite3

from zocrates_nb.index.lexical.ddl import SCHEMA, TOKENIZER, split_sql
from zocrates_nb.index.lexical.migrate import add_collection_index, add_context_column, add_document_text

__all__ = [
    "TOKENIZER",
    "DEFAULT_TITLE_WEIGHT",
    "CONTEXT_WEIGHT",
    "ensure_schema",
    "schema_ready",
    "set_title_weight",
]

#: bm25 weight of the title column relative to the body (tuned on SciFact train).
DEFAULT_TITLE_WEIGHT = 3.0
#: bm25 weight of the context column (a child note's paper, a note's collections): below the
#: body's 1.0 so the context helps a note be found through its paper without outranking the
#: notes that say the words themselves (tuned on the demo note questions' dev split).
CONTEXT_WEIGHT = 0.5


def ensure_schema(conn: sqlite3.Connection, title_weight: float | None = None) -> None:
    """Create the tables and triggers if missing (idempotent, safe inside a transaction)."""
    add_collection_index(conn)
    add_context_column(conn)
    add_document_text(conn)
    for statement in split_sql(SCHEMA):
        conn.execute(statement)
    if title_weight is not None:
        set_title_weight(conn, title_weight)


_OBJECTS = (
    "chunks",
    "chunks_by_key",
    "chunks_by_parent",
    "chunks_fts",
    "chunks_ai",
    "chunks_ad",
    "chunks_au",
    "chunk_collections",
    "chunk_collections_by_chunk",
    "chunks_cc_ai",
    "chunks_cc_ad",
    "chunks_cc_au",
    "index_documents",
    "chunk_pages",
    "chunks_pages_ad",
    "document_text",
    "annotation_facts",
    "note_links",
    "libraries",
    "document_libraries",
    "document_libraries_by_library",
)


def schema_ready(conn: sqlite3.Connection, title_weight: float | None = None) -> bool:
    """True when every table/trigger exists (and the rank weights match): opening needs no write.

    Checked read-only first so that a kernel opening the index never queues behind
    another kernel's long sync transaction just to run ``CREATE … IF NOT EXISTS``.
    """
    marks = ",".join("?" * len(_OBJECTS))
    found = conn.execute(f"SELECT count(*) FROM sqlite_master WHERE name IN ({marks})", _OBJECTS).fetchone()[0]
    if found != len(_OBJECTS):
        return False
    if title_weight is None:
        return True
    row = conn.execute("SELECT v FROM chunks_fts_config WHERE k = 'rank'").fetchone()
    return bool(row) and row[0] == _rank_expression(title_weight)


def _rank_expression(title_weight: float) -> str:
    return f"bm25({float(title_weight)!r}, 1.0, {CONTEXT_WEIGHT!r})"


def set_title_weight(conn: sqlite3.Connection, title_weight: float) -> None:
    """Persist the bm25 column weights as FTS5's ``rank`` so ``ORDER BY rank`` stays the fast path."""
    wanted = _rank_expression(title_weight)
    row = conn.execute("SELECT v FROM chunks_fts_config WHERE k = 'rank'").fetchone()
    if not row or row[0] != wanted:
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('rank', ?)", (wanted,))
