"""The lexical half of the index: SQLite FTS5 in the same file as the conversion meta.

Why one file: a note's text, its source hash and its index rows then change in
one ``BEGIN IMMEDIATE`` transaction (the ``DocumentIndexer.stage`` contract), so
a crash can never leave the index describing a different note than the corpus.

Shape (see ../shared/docs/reliability-perf-anchors.md §2):

- ``chunks`` is the content table (``INTEGER PRIMARY KEY`` + a unique text
  ``chunk_id``); ``chunks_fts`` is an *external-content* FTS5 table over its
  ``title`` and ``text`` kept in sync by triggers. Writes use
  ``INSERT … ON CONFLICT(chunk_id) DO UPDATE``: ``INSERT OR REPLACE`` would delete
  without firing the delete trigger and leave stale tokens behind.
- ``index_documents`` holds one row of provenance per document (title, parent,
  first author, year, abstract …) so results can be rendered without touching
  the bundles or the library.
- Every user or LLM string goes through :func:`quote_fts` / :func:`natural_query`
  before ``MATCH``: FTS5 parses the bound string as its own query language.
- Ranking happens inside an FTS-only sub-query (``ORDER BY rank LIMIT n``); with
  filters the FTS table stays the driver through ``CROSS JOIN``.
- bm25 must be computed for every row a query matches, so questions go through
  :func:`zocrates_nb.index.lexical.split.lexical_search`, which ranks only the rows of their
  rarer words (reliability-perf-anchors.md §2.3/§2.6: cost is linear in the rows ranked).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from zocrates_nb.index.lexical import libraries, note_links, pages

# re-exported: callers build their MATCH expressions through this module (index/lexical/query.py)
from zocrates_nb.index.lexical.query import natural_query, query_terms, quote_fts

# re-exported: the schema, its creation and the rank weights live in index/lexical/schema.py
from zocrates_nb.index.lexical.schema import (
    CONTEXT_WEIGHT,
    DEFAULT_TITLE_WEIGHT,
    TOKENIZER,
    ensure_schema,
    schema_ready,
    set_title_weight,
)
from zocrates_nb.records import PageSpan

__all__ = [
    "TOKENIZER",
    "ChunkRow",
    "FtsDocument",
    "ensure_schema",
    "quote_fts",
    "natural_query",
    "query_terms",
    "count_filtered",
    "chunk_keys",
    "replace_document",
    "delete_document",
    "search",
    "chunk_ids",
    "chunk_rows",
    "documents",
    "integrity_check",
    "clear",
    "set_title_weight",
    "schema_ready",
    "DEFAULT_TITLE_WEIGHT",
    "CONTEXT_WEIGHT",
]


@dataclass(frozen=True)
class ChunkRow:
    """One indexed passage. ``collections`` holds collection keys *and* names (filters accept either)."""

    chunk_id: str
    key: str
    kind: str  # "note" | "paper" | "annotation"
    text: str
    title: str = ""
    parent_key: str | None = None
    item_type: str | None = None
    collections: tuple[str, ...] = ()
    section: str | None = None
    chunk_index: int = 0
    context: str = ""  # indexed beside the text, weighted lower (index/context.py)
    #: a paper chunk read from its PDF: the pages it covers; an annotation's: its page (index/lexical/pages.py)
    pages: PageSpan | None = None


@dataclass(frozen=True)
class FtsDocument:
    """Document-level provenance shared by all of a document's chunks."""

    key: str
    kind: str
    title: str = ""
    item_type: str | None = None
    parent_key: str | None = None
    parent_title: str | None = None
    collections: tuple[str, ...] = ()
    citation: str | None = None
    first_author: str | None = None
    year: int | None = None
    word_count: int | None = None
    abstract: str | None = None
    source_hash: str | None = None
    extra: dict = field(default_factory=dict)
    text_source: str | None = None  # a paper's: "pdf", "fulltext" or "metadata" (index/lexical/pages.py)
    page_count: int = 0  # PDF pages with text
    pdf_failures: int = 0  # PDFs at hand that could not be read


def replace_document(conn: sqlite3.Connection, doc: FtsDocument, rows: Sequence[ChunkRow]) -> list[str]:
    """Upsert a document's chunks and provenance; delete its chunks that no longer exist.

    Must run inside the caller's write transaction. Returns the removed chunk ids
    (so the vector store can drop them too).
    """
    keep = {r.chunk_id for r in rows}
    old = [cid for (cid,) in conn.execute("SELECT chunk_id FROM chunks WHERE key = ?", (doc.key,))]
    stale = [cid for cid in old if cid not in keep]
    if stale:
        conn.executemany("DELETE FROM chunks WHERE chunk_id = ?", [(c,) for c in stale])
    conn.executemany(
        """INSERT INTO chunks(chunk_id, key, kind, parent_key, item_type, collections, title,
                              section, text, chunk_index, context)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT(chunk_id) DO UPDATE SET
               key = excluded.key, kind = excluded.kind, parent_key = excluded.parent_key,
               item_type = excluded.item_type, collections = excluded.collections,
               title = excluded.title, section = excluded.section, text = excluded.text,
               chunk_index = excluded.chunk_index, context = excluded.context""",
        [
            (
                r.chunk_id,
                r.key,
                r.kind,
                r.parent_key,
                r.item_type,
                json.dumps(list(r.collections)),
                r.title,
                r.section,
                r.text,
                r.chunk_index,
                r.context,
            )
            for r in rows
        ],
    )
    conn.execute(
        """INSERT INTO index_documents(key, kind, item_type, title, parent_key, parent_title,
                                       collections, citation, first_author, year, word_count,
                                       abstract, source_hash, chunk_count)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT(key) DO UPDATE SET
               kind = excluded.kind, item_type = excluded.item_type, title = excluded.title,
               parent_key = excluded.parent_key, parent_title = excluded.parent_title,
               collections = excluded.collections, citation = excluded.citation,
               first_author = excluded.first_author, year = excluded.year,
               word_count = excluded.word_count, abstract = excluded.abstract,
               source_hash = excluded.source_hash, chunk_count = excluded.chunk_count""",
        (
            doc.key,
            doc.kind,
            doc.item_type,
            doc.title,
            doc.parent_key,
            doc.parent_title,
            json.dumps(list(doc.collections)),
            doc.citation,
            doc.first_author,
            doc.year,
            doc.word_count,
            doc.abstract,
            doc.source_hash,
            len(rows),
        ),
    )
    pages.replace_pages(conn, doc, rows)
    note_links.replace_links(conn, doc.key, (doc.extra or {}).get("links") or ())
    return stale


def delete_document(conn: sqlite3.Connection, key: str) -> list[str]:
    """Remove a document's chunks and provenance (inside the caller's transaction); returns chunk ids."""
    ids = [cid for (cid,) in conn.execute("SELECT chunk_id FROM chunks WHERE key = ?", (key,))]
    conn.execute("DELETE FROM chunks WHERE key = ?", (key,))
    conn.execute("DELETE FROM index_documents WHERE key = ?", (key,))
    pages.forget_document(conn, key)
    note_links.forget_links(conn, key)
    return ids


def clear(conn: sqlite3.Connection) -> None:
    """Empty the lexical index (rebuild starts here)."""
    conn.execute("DELETE FROM chunks")
    conn.execute("DELETE FROM index_documents")
    conn.execute("DELETE FROM document_text")
    conn.execute("DELETE FROM annotation_facts")
    conn.execute("DELETE FROM note_links")
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")


def _filter_sql(filters: Mapping[str, str] | None, row_column: str = "c") -> tuple[str, list]:
    """The WHERE clause for ``filters`` over ``chunks AS c``; ``row_column`` names the table whose
    rowid is the chunk's (the FTS table when it drives the query, so the collection test runs
    before any ``chunks`` row is read)."""
    clauses: list[str] = []
    params: list[str | int] = []
    filters = filters or {}
    item_type = filters.get("item_type")
    if item_type:
        if item_type in ("note", "paper", "annotation"):
            clauses.append("c.kind = ?")
        else:
            clauses.append("c.item_type = ?")
        params.append(item_type)
    if filters.get("collection"):
        # an indexed id set (chunk_collections), not a JSON parse per match; the unary ``+``
        # keeps SQLite from handing the rowid test to FTS5, which would re-run MATCH per id
        clauses.append(f"+{row_column}.rowid IN (SELECT chunk FROM chunk_collections WHERE collection = ?)")
        params.append(filters["collection"])
    if filters.get("parent_key"):
        clauses.append("c.parent_key = ?")
        params.append(filters["parent_key"])
    if filters.get("library"):  # a library_id (the search resolves a name first: libraries.resolve_library)
        clauses.append(libraries.FILTER_SQL)
        params.append(int(filters["library"]))
    return " AND ".join(clauses), params


def search(
    conn: sqlite3.Connection, match: str | None, limit: int, filters: Mapping[str, str] | None = None
) -> list[tuple[str, str, float]]:
    """Ranked ``(chunk_id, key, bm25)`` for an already-quoted MATCH expression (best first).

    Without filters the ranking runs in an FTS-only sub-query with its own LIMIT, so
    the cost is the FTS5 top-n and nothing else. With filters, ``CROSS JOIN`` keeps
    the FTS table as the driving loop and the filter is applied to every match before
    the LIMIT, so a selective filter never loses recall to a top-n window. Equal scores are ordered
    by chunk id, so a rebuilt index (rows inserted in another order) ranks exactly as before.
    """
    if not match or limit <= 0:
        return []
    where, params = _filter_sql(filters, row_column="chunks_fts")
    if not where:
        return _top_ranked(conn, match, limit)
    sql = f"""SELECT c.chunk_id, c.key, chunks_fts.rank FROM chunks_fts
              CROSS JOIN chunks AS c ON c.id = chunks_fts.rowid
              WHERE chunks_fts MATCH ? AND {where} ORDER BY chunks_fts.rank, c.chunk_id LIMIT ?"""
    return [tuple(r) for r in conn.execute(sql, (match, *params, limit))]


def _top_ranked(conn: sqlite3.Connection, match: str, limit: int) -> list[tuple[str, str, float]]:
    """The best ``limit`` matches, with a tie across the cut settled by chunk id, not by rowid.

    Why: the FTS-only sub-query's ``LIMIT`` keeps whichever tied rows FTS5 meets first, in
    rowid order, and rowids depend on the order rows were inserted (a rebuild, or a sync
    resumed after a kill, inserts in another order). So the window is twice the cut; only
    when it still ends inside the tie (dozens of identical chunks) is the match ranked again
    without a limit. Each try ranks every matching row, so the common case costs one.
    """
    sql = """SELECT c.chunk_id, c.key, f.rank FROM
               (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?) AS f
             CROSS JOIN chunks AS c ON c.id = f.rowid ORDER BY f.rank, c.chunk_id"""
    window = 2 * limit + 8
    rows = [tuple(r) for r in conn.execute(sql, (match, window))]
    if len(rows) == window and rows[-1][2] == rows[limit - 1][2]:
        rows = [tuple(r) for r in conn.execute(sql, (match, -1))]  # LIMIT -1: no limit
    return rows[:limit]


def count_filtered(conn: sqlite3.Connection, filters: Mapping[str, str] | None) -> int:
    """How many chunks pass ``filters`` (all of them without filters)."""
    where, params = _filter_sql(filters)
    return conn.execute(f"SELECT count(*) FROM chunks AS c WHERE {where or '1'}", params).fetchone()[0]


def filtered_chunk_ids(
    conn: sqlite3.Connection, filters: Mapping[str, str] | None, among: Iterable[str] | None = None
) -> set[str]:
    """Chunk ids passing ``filters`` (optionally only among ``among``): the dense side's filter."""
    where, params = _filter_sql(filters)
    sql = "SELECT c.chunk_id FROM chunks AS c"
    if where:
        sql += f" WHERE {where}"
    ids = {cid for (cid,) in conn.execute(sql, params)}
    return ids if among is None else ids.intersection(among)


#: Values bound per ``IN (…)`` query: well under SQLite's limit on bound parameters.
_IN_BATCH = 500


def _rows_where_in(conn: sqlite3.Connection, sql: str, values: Iterable[str | int]) -> Iterator[tuple]:
    """Rows of ``sql`` (whose ``IN ({marks})`` takes the values) for any number of values, in batches."""
    values = list(values)
    for start in range(0, len(values), _IN_BATCH):
        part = values[start : start + _IN_BATCH]
        yield from conn.execute(sql.format(marks=",".join("?" * len(part))), part)


def chunk_ids(conn: sqlite3.Connection) -> set[str]:
    return {cid for (cid,) in conn.execute("SELECT chunk_id FROM chunks")}


def chunk_keys(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, str]:
    """``chunk_id → document key`` (missing ids absent): what collapsing needs, without the texts.

    Ten times cheaper than :func:`chunk_rows` for the ~200 candidates of a hybrid search.
    """
    return dict(_rows_where_in(conn, "SELECT chunk_id, key FROM chunks WHERE chunk_id IN ({marks})", ids))


def chunk_names(conn: sqlite3.Connection, rowids: Iterable[int]) -> dict[int, tuple[str, str]]:
    """``rowid → (chunk_id, document key)`` for rows ranked outside SQL (index/lexical/impacts.py)."""
    sql = "SELECT id, chunk_id, key FROM chunks WHERE id IN ({marks})"
    return {rowid: (cid, key) for rowid, cid, key in _rows_where_in(conn, sql, rowids)}


def chunk_notes(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, str | None]:
    """``chunk_id → parent key (or None)`` for the chunks among ``ids`` that belong to notes."""
    return dict(
        _rows_where_in(
            conn, "SELECT chunk_id, parent_key FROM chunks WHERE kind = 'note' AND chunk_id IN ({marks})", ids
        )
    )


def chunk_annotations(conn: sqlite3.Connection, ids: Iterable[str]) -> set[str]:
    """The chunk ids among ``ids`` that belong to PDF annotations (ranked beside the rest: rank/fusion.py)."""
    sql = "SELECT chunk_id FROM chunks WHERE kind = 'annotation' AND chunk_id IN ({marks})"
    return {cid for (cid,) in _rows_where_in(conn, sql, ids)}


def chunk_rows(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, ChunkRow]:
    """Full rows for the given chunk ids (missing ids are simply absent)."""
    out: dict[str, ChunkRow] = {}
    sql = """SELECT chunk_id, key, kind, text, title, parent_key, item_type, collections,
                    section, chunk_index, context FROM chunks WHERE chunk_id IN ({marks})"""
    for r in _rows_where_in(conn, sql, ids):
        out[r[0]] = ChunkRow(
            r[0], r[1], r[2], r[3], r[4], r[5], r[6], tuple(json.loads(r[7] or "[]")), r[8], r[9], r[10] or ""
        )
    papers = [cid for cid, row in out.items() if row.kind in ("paper", "annotation")]
    for cid, span in (pages.spans_of(conn, papers) if papers else {}).items():
        out[cid] = replace(out[cid], pages=span)
    return out


def documents(conn: sqlite3.Connection, keys: Iterable[str]) -> dict[str, FtsDocument]:
    out: dict[str, FtsDocument] = {}
    for r in _rows_where_in(
        conn,
        """SELECT key, kind, title, item_type, parent_key, parent_title, collections,
                                           citation, first_author, year, word_count, abstract, source_hash
                                    FROM index_documents WHERE key IN ({marks})""",
        keys,
    ):
        out[r[0]] = FtsDocument(
            r[0], r[1], r[2], r[3], r[4], r[5], tuple(json.loads(r[6] or "[]")), r[7], r[8], r[9], r[10], r[11], r[12]
        )
    annotations = [key for key, doc in out.items() if doc.kind == "annotation"]
    for key, facts in (pages.annotation_facts(conn, annotations) if annotations else {}).items():
        out[key] = replace(out[key], extra={"annotation": facts})
    for key, library in libraries.libraries_of(conn, out).items():
        out[key] = replace(out[key], extra={**(out[key].extra or {}), "library": library})
    return out


def integrity_check(conn: sqlite3.Connection) -> None:
    """Raise ``sqlite3.DatabaseError`` when the FTS index disagrees with its content table."""
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
