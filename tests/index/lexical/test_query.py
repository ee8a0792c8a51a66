"""Question → FTS5 terms: a place in a sequence asked for in either spelling (real SQLite FTS5)."""

from __future__ import annotations

import sqlite3

import pytest

from zocrates_nb.index.lexical import fts
from zocrates_nb.index.lexical import split as lexical
from zocrates_nb.index.lexical.fts import ChunkRow, FtsDocument
from zocrates_nb.index.lexical.query import ORDINAL_NUMBERS, query_terms, with_ordinal_numbers


@pytest.mark.parametrize(
    ("word", "number"),
    [("first", 1), ("second", 2), ("third", 3), ("twelfth", 12), ("1st", 1), ("2nd", 2), ("3rd", 3), ("11th", 11)],
)
def test_ordinals_know_their_number(word, number):
    assert ORDINAL_NUMBERS[word] == number


def test_an_ordinal_also_asks_for_its_number_and_its_other_spelling():
    assert with_ordinal_numbers(["our", "third", "run"]) == ["our", "third", "3", "third", "run"]
    assert with_ordinal_numbers(["2nd", "batch"]) == ["2nd", "2", "second", "batch"]
    # plain numbers and other words are left alone: "55 µm" is not a fifty-fifth anything
    assert with_ordinal_numbers(["55", "spots", "2"]) == ["55", "spots", "2"]


def test_query_terms_keep_each_term_once_and_drop_stopwords():
    terms = query_terms("What did our third attempt and the 3rd run show?")
    assert terms == ["third", "3", "attempt", "3rd", "run", "show"]


@pytest.fixture
def conn():
    c = sqlite3.connect(":memory:", isolation_level=None)
    fts.ensure_schema(c)
    notes = {
        "RUNTWO22": "Embedding run 2 of the lymph node cells: what the zones did.",
        "RUNTHR33": "Embedding run 3 of the lymph node cells: what the zones did.",
        "BATCHXY4": "Cells of batch 4 were filtered on mitochondrial reads.",
        "BATCHXY2": "Cells of batch 2 were filtered on mitochondrial reads.",
    }
    c.execute("BEGIN IMMEDIATE")
    for key, text in notes.items():
        doc = FtsDocument(key=key, kind="note", title=key)
        fts.replace_document(c, doc, [ChunkRow(chunk_id=f"{key}:0", key=key, kind="note", text=text, chunk_index=0)])
    c.execute("COMMIT")
    yield c
    c.close()


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What did the zones do in the third embedding run?", "RUNTHR33"),
        ("What did the zones do in our second embedding run?", "RUNTWO22"),
        ("What did we filter the 2nd batch on?", "BATCHXY2"),
        ("Which reads was the fourth batch filtered on?", "BATCHXY4"),
    ],
)
def test_a_question_in_words_finds_the_note_in_numbers(conn, question, expected):
    assert lexical.lexical_search(conn, question, 3)[0][1] == expected
    assert fts.search(conn, fts.natural_query(question), 3)[0][1] == expected
