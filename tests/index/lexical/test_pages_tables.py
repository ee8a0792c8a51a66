"""The page spans of paper chunks and the papers' text sources in the lexical index, and the upgrade of an old one."""

from __future__ import annotations

import sqlite3

import pytest

from zocrates_nb.index.lexical import fts, pages
from zocrates_nb.index.lexical.fts import ChunkRow, FtsDocument
from zocrates_nb.index.lexical.schema import schema_ready
from zocrates_nb.records import PageSpan

SPAN = PageSpan("ATTK2345", 3, 4, "2", "3")


@pytest.fixture
def conn():
    c = sqlite3.connect(":memory:", isolation_level=None)
    fts.ensure_schema(c)
    yield c
    c.close()


def _paper(conn, key: str, spans: list[PageSpan | None], source: str = "pdf") -> None:
    rows = [ChunkRow(f"{key}:{i}", key, "paper", f"text {i} of {key}", pages=s) for i, s in enumerate(spans)]
    doc = FtsDocument(key, "paper", text_source=source, page_count=sum(s is not None for s in spans))
    fts.replace_document(conn, doc, rows)


def test_spans_are_stored_read_replaced_and_dropped_with_their_chunks(conn):
    _paper(conn, "PAPR2345", [None, SPAN, PageSpan("ATTK2345", 4, 4, "3", "3")])
    rows = fts.chunk_rows(conn, ["PAPR2345:0", "PAPR2345:1", "PAPR2345:2"])
    assert [rows[f"PAPR2345:{i}"].pages for i in range(3)] == [None, SPAN, PageSpan("ATTK2345", 4, 4, "3", "3")]
    _paper(conn, "PAPR2345", [SPAN])  # re-staged with one chunk: the other spans go
    assert conn.execute("SELECT count(*) FROM chunk_pages").fetchone()[0] == 1
    assert fts.chunk_rows(conn, ["PAPR2345:0"])["PAPR2345:0"].pages == SPAN
    fts.delete_document(conn, "PAPR2345")
    assert conn.execute("SELECT count(*) FROM chunk_pages").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM document_text").fetchone()[0] == 0


def test_text_sources_count_the_papers(conn):
    _paper(conn, "PAPRAAAA", [SPAN])
    _paper(conn, "PAPRBBBB", [None], source="fulltext")
    _paper(conn, "PAPRCCCC", [None], source=None)
    fts.replace_document(conn, FtsDocument("NOTEAAAA", "note"), [ChunkRow("NOTEAAAA:0", "NOTEAAAA", "note", "n")])
    assert pages.text_sources(conn) == {"pdf": 1, "fulltext": 1, "metadata": 1, "pdf_failures": 0}
    fts.clear(conn)
    assert pages.text_sources(conn)["pdf"] == 0


def test_an_index_from_before_pages_is_upgraded_in_place():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    fts.ensure_schema(conn)
    _paper(conn, "PAPRFULL", [None], source="fulltext")
    conn.execute("UPDATE chunks SET text = '# T\n\n## Full text\n\nWords.' WHERE key = 'PAPRFULL'")
    _paper(conn, "PAPRMETA", [None], source="metadata")
    conn.execute("UPDATE chunks SET text = '# T\n\n## Abstract\n\nOnly the abstract.' WHERE key = 'PAPRMETA'")
    for name in ("chunks_pages_ad",):
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("DROP TABLE chunk_pages")
    conn.execute("DROP TABLE document_text")  # as an index written before this change
    assert not schema_ready(conn)
    fts.ensure_schema(conn)
    assert schema_ready(conn)
    assert dict(conn.execute("SELECT key, source FROM document_text")) == {
        "PAPRFULL": "fulltext",
        "PAPRMETA": "metadata",
    }
    _paper(conn, "PAPRFULL", [SPAN])  # re-made by the next sync, now from its PDF
    assert fts.chunk_rows(conn, ["PAPRFULL:0"])["PAPRFULL:0"].pages == SPAN
