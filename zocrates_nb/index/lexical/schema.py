"""The lexical index's SQLite schema: tables, FTS5 table, triggers, and the bm25 rank weights.

Why apart from index/lexical/fts.py: creating and checking the schema (and the persisted ``rank``
expression) is one idea, run once when the index opens; fts.py is about reading and writing
rows. Upgrades of an older schema live in index/lexical/migrate.py.
"""

from __future__ import annotations

import sqlite3

__all__ = [
    "TOKENIZER",
    "DEFAULT_TITLE_WEIGHT",
    "CONTEXT_WEIGHT",
    "ensure_schema",
    "schema_ready",
    "set_title_weight",
]

TOKENIZER = "porter unicode61 remove_diacritics 2"
#: bm25 weight of the title column relative to the body (tuned on SciFact train).
DEFAULT_TITLE_WEIGHT = 3.0
#: bm25 weight of the context column (a child note's paper, a note's collections): below the
#: body's 1.0 so the context helps a note be found through its paper without outranking the
#: notes that say the words themselves (tuned on the demo note questions' dev split).
CONTEXT_WEIGHT = 0.5

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    key TEXT NOT NULL,
    kind TEXT NOT NULL,
    parent_key TEXT,
    item_type TEXT,
    collections TEXT NOT NULL DEFAULT '[]',
    title TEXT NOT NULL DEFAULT '',
    section TEXT,
    text TEXT NOT NULL DEFAULT '',
    chunk_index INTEGER NOT NULL DEFAULT 0,
    context TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunks_by_key ON chunks(key);
CREATE INDEX IF NOT EXISTS chunks_by_parent ON chunks(parent_key);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    title, text, context, content='chunks', content_rowid='id', tokenize='{TOKENIZER}');
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, title, text, context) VALUES (new.id, new.title, new.text, new.context);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, title, text, context)
        VALUES ('delete', old.id, old.title, old.text, old.context);
END;
CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, title, text, context)
        VALUES ('delete', old.id, old.title, old.text, old.context);
    INSERT INTO chunks_fts(rowid, title, text, context) VALUES (new.id, new.title, new.text, new.context);
END;
CREATE TABLE IF NOT EXISTS chunk_collections(
    collection TEXT NOT NULL,
    chunk INTEGER NOT NULL,
    PRIMARY KEY(collection, chunk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunk_collections_by_chunk ON chunk_collections(chunk);
CREATE TRIGGER IF NOT EXISTS chunks_cc_ai AFTER INSERT ON chunks BEGIN
    INSERT OR IGNORE INTO chunk_collections(collection, chunk)
        SELECT value, new.id FROM json_each(new.collections);
END;
CREATE TRIGGER IF NOT EXISTS chunks_cc_ad AFTER DELETE ON chunks BEGIN
    DELETE FROM chunk_collections WHERE chunk = old.id;
END;
CREATE TRIGGER IF NOT EXISTS chunks_cc_au AFTER UPDATE OF collections ON chunks
    WHEN old.collections IS NOT new.collections BEGIN
    DELETE FROM chunk_collections WHERE chunk = old.id;
    INSERT OR IGNORE INTO chunk_collections(collection, chunk)
        SELECT value, new.id FROM json_each(new.collections);
END;
CREATE TABLE IF NOT EXISTS index_documents(
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    item_type TEXT,
    title TEXT NOT NULL DEFAULT '',
    parent_key TEXT,
    parent_title TEXT,
    collections TEXT NOT NULL DEFAULT '[]',
    citation TEXT,
    first_author TEXT,
    year INTEGER,
    word_count INTEGER,
    abstract TEXT,
    source_hash TEXT,
    chunk_count INTEGER NOT NULL DEFAULT 0
);
"""


def ensure_schema(conn: sqlite3.Connection, title_weight: float | None = None) -> None:
    """Create the tables and triggers if missing (idempotent, safe inside a transaction)."""
    from zocrates_nb.index.lexical.migrate import add_collection_index, add_context_column

    add_collection_index(conn)
    add_context_column(conn)
    for statement in _split_sql(_SCHEMA):
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


def _split_sql(script: str) -> list[str]:
    """Statements of a script, one by one (``executescript`` would COMMIT the caller's transaction)."""
    out, buf = [], ""
    for line in script.strip().splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    return out


def set_title_weight(conn: sqlite3.Connection, title_weight: float) -> None:
    """Persist the bm25 column weights as FTS5's ``rank`` so ``ORDER BY rank`` stays the fast path."""
    wanted = _rank_expression(title_weight)
    row = conn.execute("SELECT v FROM chunks_fts_config WHERE k = 'rank'").fetchone()
    if not row or row[0] != wanted:
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('rank', ?)", (wanted,))
