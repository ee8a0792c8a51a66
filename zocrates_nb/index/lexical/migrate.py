"""Upgrades of an existing FTS5 index in place (kept apart so schema.py stays about the current schema)."""

from __future__ import annotations

import sqlite3

from zocrates_nb.index.lexical.ddl import SCHEMA, split_sql

__all__ = ["add_collection_index", "add_context_column", "add_document_text"]


def add_context_column(conn: sqlite3.Connection) -> None:
    """An index from before the context column: add it and re-create the FTS table and triggers.

    The FTS table is rebuilt from ``chunks`` (contexts empty until the documents are staged
    again, which the converter-version bump makes the next sync do).
    """
    columns = [r[1] for r in conn.execute("PRAGMA table_info(chunks)")]
    if not columns or "context" in columns:
        return
    conn.execute("ALTER TABLE chunks ADD COLUMN context TEXT NOT NULL DEFAULT ''")
    for trigger in ("chunks_ai", "chunks_ad", "chunks_au"):
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    conn.execute("DROP TABLE IF EXISTS chunks_fts")
    for statement in split_sql(SCHEMA):
        conn.execute(statement)
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")


def add_collection_index(conn: sqlite3.Connection) -> None:
    """An index from before ``chunk_collections``: create it and fill it from the stored JSON.

    Why the table: a collection filter used to parse every matching chunk's ``collections``
    JSON (``json_each``), which cost most of a filtered search; the table makes it an indexed
    id set. Later writes keep it in step through the ``chunks_cc_*`` triggers.
    """
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "chunks" not in tables or "chunk_collections" in tables:
        return
    (create,) = [sql for sql in split_sql(SCHEMA) if sql.startswith("CREATE TABLE IF NOT EXISTS chunk_collections")]
    conn.execute(create)  # the schema's own statement; its index and triggers follow in ensure_schema
    conn.execute(
        "INSERT OR IGNORE INTO chunk_collections(collection, chunk) "
        "SELECT j.value, c.id FROM chunks AS c, json_each(c.collections) AS j"
    )


def add_document_text(conn: sqlite3.Connection) -> None:
    """An index from before page numbers: create ``document_text`` and say where each paper's text came from.

    Every paper indexed before it had its text from the library's full text, with no pages: one
    with a chunk under (or holding) "## Full text" is ``fulltext``, one without is ``metadata``. So ``status``
    counts an old index right at once; a paper whose PDF is at hand is re-made by the next sync
    (its source hash now covers the PDF) and then reads ``pdf``. ``chunk_pages`` starts empty.
    """
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "index_documents" not in tables or "document_text" in tables:
        return
    (create,) = [sql for sql in split_sql(SCHEMA) if sql.startswith("CREATE TABLE IF NOT EXISTS document_text")]
    conn.execute(create)
    conn.execute(
        "INSERT INTO document_text(key, source) SELECT d.key, CASE WHEN EXISTS (SELECT 1 FROM chunks c "
        "WHERE c.key = d.key AND (c.section = 'Full text' OR instr(c.text, '## Full text') > 0)) "
        "THEN 'fulltext' ELSE 'metadata' END "
        "FROM index_documents AS d WHERE d.kind = 'paper'"
    )
