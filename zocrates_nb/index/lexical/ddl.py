"""The lexical index's tables, FTS5 table and triggers as SQL, and the splitter that runs them one by one.

Why a module of its own: the schema check (``schema``) creates these objects and the upgrades of an
older index (``migrate``) re-create some of them; both read the one declaration here.
"""

from __future__ import annotations

import sqlite3

__all__ = ["TOKENIZER", "SCHEMA", "split_sql"]

TOKENIZER = "porter unicode61 remove_diacritics 2"
SCHEMA = f"""
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
CREATE TABLE IF NOT EXISTS chunk_pages(
    chunk INTEGER PRIMARY KEY,
    attachment_key TEXT NOT NULL,
    page_start INTEGER NOT NULL,
    page_end INTEGER NOT NULL,
    label_start TEXT NOT NULL,
    label_end TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS chunks_pages_ad AFTER DELETE ON chunks BEGIN
    DELETE FROM chunk_pages WHERE chunk = old.id;
END;
CREATE TABLE IF NOT EXISTS annotation_facts(
    key TEXT PRIMARY KEY,
    facts TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS note_links(
    note_key TEXT NOT NULL,
    paper_key TEXT NOT NULL,
    reason TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    PRIMARY KEY(note_key, paper_key)
);
CREATE TABLE IF NOT EXISTS libraries(
    library_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    group_id INTEGER
);
CREATE TABLE IF NOT EXISTS document_libraries(
    key TEXT PRIMARY KEY,
    library_id INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS document_libraries_by_library ON document_libraries(library_id);
CREATE TABLE IF NOT EXISTS document_text(
    key TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    pages INTEGER NOT NULL DEFAULT 0,
    pdf_failures INTEGER NOT NULL DEFAULT 0
);
"""


def split_sql(script: str) -> list[str]:
    """Statements of a script, one by one (``executescript`` would COMMIT the caller's transaction)."""
    out, buf = [], ""
    for line in script.strip().splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    return out
