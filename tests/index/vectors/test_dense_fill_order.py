"""index/dense_fill.embed_rows: batches follow the embedder's own token count when it offers one, a part is
stored while the next is embedded, and a failed write leaves only stored vectors counted."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pytest

from zocrates_nb.index.vectors.fill import embed_rows


@dataclass(frozen=True)
class Row:
    chunk_id: str
    text: str


class RecordingEmbedder:
    """Counts one token per character of 'x' only, so character length and token length disagree."""

    def __init__(self, with_lengths: bool) -> None:
        self.calls: list[list[str]] = []
        if with_lengths:
            self.token_lengths = lambda texts: [t.count("x") for t in texts]

    def embed(self, texts):
        self.calls.append(list(texts))
        return np.ones((len(texts), 3), dtype=np.float32)


class Store:
    def __init__(self) -> None:
        self.ids: list[str] = []

    def upsert(self, ids, vectors, metadatas) -> None:
        self.ids.extend(ids)


ROWS = [Row("a:0", "xxxx"), Row("b:0", "x....."), Row("c:0", "xx"), Row("d:0", "x.........."), Row("e:0", "xx")]


def test_batches_follow_the_token_count_when_the_embedder_gives_one():
    embedder, store = RecordingEmbedder(with_lengths=True), Store()
    embedded = embed_rows(ROWS, lambda r: r.text, embedder, store, lambda r: {}, batch=2)
    assert embedded == 4  # "xx" twice is embedded once
    flat = [t for call in embedder.calls for t in call]
    assert [t.count("x") for t in flat] == sorted(t.count("x") for t in flat)
    assert flat[:2] == ["x.....", "x.........."]  # one token each, although the longest in characters
    assert sorted(store.ids) == ["a:0", "b:0", "c:0", "d:0", "e:0"]


def test_an_embedder_that_does_not_pad_gets_the_texts_unsorted_and_untokenized():
    embedder, store = RecordingEmbedder(with_lengths=True), Store()
    embedder.pads = False  # int8: each text runs alone, so sorting saves nothing
    embedder.token_lengths = lambda texts: pytest.fail("tokenized only to sort")
    embed_rows(ROWS, lambda r: r.text, embedder, store, lambda r: {}, batch=2)
    assert [t for call in embedder.calls for t in call] == ["xxxx", "x.....", "xx", "x.........."]
    assert sorted(store.ids) == ["a:0", "b:0", "c:0", "d:0", "e:0"]


def test_without_a_token_count_the_character_length_orders_the_batches():
    embedder, store = RecordingEmbedder(with_lengths=False), Store()
    embed_rows(ROWS, lambda r: r.text, embedder, store, lambda r: {}, batch=2)
    flat = [t for call in embedder.calls for t in call]
    assert [len(t) for t in flat] == sorted(len(t) for t in flat)


class GatedEmbedder:
    """Signals when it starts on a second part, so a store can wait for that."""

    def __init__(self) -> None:
        self.parts = 0
        self.second_part_started = threading.Event()

    def embed(self, texts):
        self.parts += 1
        if self.parts == 2:
            self.second_part_started.set()
        return np.ones((len(texts), 3), dtype=np.float32)


def test_the_next_part_is_embedded_while_the_last_one_is_stored():
    embedder = GatedEmbedder()
    stored: list[list[str]] = []

    class WaitingStore(Store):
        def upsert(self, ids, vectors, metadatas) -> None:
            if not self.ids:  # a loop that stores before it embeds again never sets the event
                assert embedder.second_part_started.wait(10), "the store's write held up the embedder"
            super().upsert(ids, vectors, metadatas)

    store = WaitingStore()
    embed_rows(ROWS, lambda r: r.text, embedder, store, lambda r: {}, batch=2, stored=stored.append)
    assert sorted(store.ids) == ["a:0", "b:0", "c:0", "d:0", "e:0"]
    assert all(stored) and sorted(sum(stored, [])) == sorted(store.ids)  # every write acknowledged, none empty


def test_a_failed_write_stops_the_fill_and_only_stored_vectors_count(tmp_path):
    from zocrates_nb.index.vectors.fill import read_progress

    class FailingStore(Store):
        def upsert(self, ids, vectors, metadatas) -> None:
            if self.ids:
                raise OSError("disk full")
            super().upsert(ids, vectors, metadatas)

    store, stored = FailingStore(), []
    with pytest.raises(OSError, match="disk full"):
        embed_rows(
            ROWS,
            lambda r: r.text,
            RecordingEmbedder(True),
            store,
            lambda r: {},
            root=tmp_path,
            batch=2,
            stored=stored.extend,
        )
    assert stored == store.ids and len(stored) == 2  # the durable queue drops only what was stored
    progress = read_progress(tmp_path)
    assert progress is not None and progress["done"] == 2 and progress["total"] == 5  # a resume embeds the rest
