"""The collection filter's id table (``chunk_collections``): it always says what the stored JSON says.

A collection filter used to parse each matching chunk's ``collections`` JSON; it now reads an indexed
table kept by triggers. These tests hold the table to the JSON it replaces: after random writes,
updates and deletes, on an index upgraded from before the table, and through ``clear``.
"""

from __future__ import annotations

import json
import random
import sqlite3

import pytest

from zocrates_nb.index.lexical import fts
from zocrates_nb.index.lexical.ddl import SCHEMA, split_sql
from zocrates_nb.index.lexical.fts import ChunkRow, FtsDocument

COLLECTIONS = ["COLL2222", "Spatial", "COLL3333", "Methods", "COLL4444", "Ideas / 2024"]
WORDS = "spatial kinase burrow ledger atlas spot deconvolution".split()


def _put(conn, key: str, texts: list[str], collections: tuple[str, ...], kind: str = "note") -> None:
    rows = [
        ChunkRow(chunk_id=f"{key}:{i}", key=key, kind=kind, text=t, chunk_index=i, collections=collections)
        for i, t in enumerate(texts)
    ]
    conn.execute("BEGIN IMMEDIATE")
    fts.replace_document(conn, FtsDocument(key=key, kind=kind, title=key, collections=collections), rows)
    conn.execute("COMMIT")


def _by_json(conn, collection: str) -> set[int]:
    """The reference: what the stored JSON says, parsed the old way."""
    sql = "SELECT c.id FROM chunks AS c WHERE EXISTS (SELECT 1 FROM json_each(c.collections) WHERE value = ?)"
    return {r[0] for r in conn.execute(sql, (collection,))}


def _by_table(conn, collection: str) -> set[int]:
    return {r[0] for r in conn.execute("SELECT chunk FROM chunk_collections WHERE collection = ?", (collection,))}


def _assert_table_matches_json(conn) -> None:
    for collection in COLLECTIONS:
        assert _by_table(conn, collection) == _by_json(conn, collection), collection
    orphans = conn.execute("SELECT count(*) FROM chunk_collections WHERE chunk NOT IN (SELECT id FROM chunks)")
    assert orphans.fetchone()[0] == 0


def _reference_search(conn, query: str, collection: str, limit: int) -> list[tuple[str, str, float]]:
    sql = """SELECT c.chunk_id, c.key, chunks_fts.rank FROM chunks_fts
             CROSS JOIN chunks AS c ON c.id = chunks_fts.rowid
             WHERE chunks_fts MATCH ? AND EXISTS (SELECT 1 FROM json_each(c.collections) WHERE value = ?)
             ORDER BY chunks_fts.rank, c.chunk_id LIMIT ?"""
    return [tuple(r) for r in conn.execute(sql, (query, collection, limit))]


@pytest.mark.parametrize("seed", [3, 17, 2024])
def test_random_writes_keep_the_table_equal_to_the_json_and_searches_equal_the_old_filter(seed):
    rng = random.Random(seed)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    fts.ensure_schema(conn)
    keys = [f"K{i:07d}" for i in range(40)]
    for _ in range(160):
        key = rng.choice(keys)
        if rng.random() < 0.15:
            conn.execute("BEGIN IMMEDIATE")
            fts.delete_document(conn, key)
            conn.execute("COMMIT")
            continue
        texts = [" ".join(rng.choices(WORDS, k=6)) for _ in range(rng.randint(1, 3))]
        _put(conn, key, texts, tuple(rng.sample(COLLECTIONS, rng.randint(0, 3))), rng.choice(["note", "paper"]))
    _assert_table_matches_json(conn)
    for collection in COLLECTIONS:
        for word in WORDS[:3]:
            match = fts.natural_query(word)
            got = fts.search(conn, match, 10, {"collection": collection})
            assert got == _reference_search(conn, match, collection, 10)
        assert fts.count_filtered(conn, {"collection": collection}) == len(_by_json(conn, collection))
    conn.close()


def test_a_collection_change_alone_moves_the_chunk():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    fts.ensure_schema(conn)
    _put(conn, "NOTE2222", ["spatial atlas"], ("COLL2222", "Spatial"))
    _put(conn, "NOTE2222", ["spatial atlas"], ("COLL3333", "Methods"))  # same text, moved in Zotero
    assert [k for _, k, _ in fts.search(conn, fts.natural_query("spatial"), 5, {"collection": "Methods"})] == [
        "NOTE2222"
    ]
    assert fts.search(conn, fts.natural_query("spatial"), 5, {"collection": "Spatial"}) == []
    fts.clear(conn)
    assert conn.execute("SELECT count(*) FROM chunk_collections").fetchone()[0] == 0


def _old_schema(conn) -> None:
    """The index as it was before ``chunk_collections``: today's schema less the table and its triggers."""
    for statement in split_sql(SCHEMA):
        if "chunk_collections" not in statement:
            conn.execute(statement)


def test_an_older_index_gains_the_table_filled_from_its_rows(tmp_path):
    path = tmp_path / "conversion_meta.db"
    conn = sqlite3.connect(path, isolation_level=None)
    _old_schema(conn)
    for i, colls in enumerate([["COLL2222", "Spatial"], ["Methods"], []]):
        conn.execute(
            "INSERT INTO chunks(chunk_id, key, kind, collections, title, text) VALUES (?, ?, 'note', ?, 't', ?)",
            (f"K{i:07d}:0", f"K{i:07d}", json.dumps(colls), "spatial atlas"),
        )
    assert not fts.schema_ready(conn)  # so opening it runs the upgrade
    fts.ensure_schema(conn)
    assert fts.schema_ready(conn)
    _assert_table_matches_json(conn)
    assert fts.count_filtered(conn, {"collection": "Spatial"}) == 1
    _put(conn, "NEWN2222", ["spatial atlas"], ("Methods",))  # and the triggers keep it from then on
    _assert_table_matches_json(conn)
    conn.close()
