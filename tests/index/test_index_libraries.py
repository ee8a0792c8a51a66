"""The index's record of each document's library: written as a diff, read for hits, resolved by name or id."""

from __future__ import annotations

import sqlite3

import pytest

from zocrates_nb.errors import QueryError
from zocrates_nb.index.lexical.ddl import SCHEMA, split_sql
from zocrates_nb.index.lexical.libraries import known_libraries, libraries_of, replace_libraries, resolve_library
from zocrates_nb.records import LibraryInfo

MINE, LAB = LibraryInfo(1, "My Library"), LibraryInfo(2, "Lab reading", "group", group_id=4711)


@pytest.fixture
def conn():
    db = sqlite3.connect(":memory:")
    for statement in split_sql(SCHEMA):
        db.execute(statement)
    return db


def test_only_what_differs_is_written_and_gone_documents_leave(conn):
    assert replace_libraries(conn, [MINE, LAB], {"A2345678": 1, "B2345678": 2}) == 2
    assert replace_libraries(conn, [MINE, LAB], {"A2345678": 1, "B2345678": 2}) == 0  # a re-sync: no writes
    assert replace_libraries(conn, [MINE], {"A2345678": 1}) == 1  # the group's document (and the group) left
    assert [lib for lib, _ in known_libraries(conn)] == [MINE]
    assert libraries_of(conn, ["A2345678", "B2345678"]) == {"A2345678": MINE}


def test_a_library_is_named_by_its_name_its_group_id_or_its_id(conn):
    replace_libraries(conn, [MINE, LAB], {"A2345678": 1, "B2345678": 2, "C2345678": 2})
    for value in ("Lab reading", "LAB READING", "4711", "2", " 2 "):
        assert resolve_library(conn, value) == LAB
    assert [(lib.name, count) for lib, count in known_libraries(conn)] == [("My Library", 1), ("Lab reading", 2)]
    with pytest.raises(QueryError, match="No library named 'Nope'") as err:
        resolve_library(conn, "Nope")
    assert "My Library (id 1); Lab reading (id 4711)" in (err.value.hint or "")


def test_an_index_from_before_libraries_reads_as_knowing_none():
    old = sqlite3.connect(":memory:")  # opened read-only, its schema never upgraded: no tables
    assert known_libraries(old) == [] and libraries_of(old, ["A2345678"]) == {}
    with pytest.raises(QueryError, match="zocrates-nb sync"):
        resolve_library(old, "Lab reading")
