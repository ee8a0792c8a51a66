"""index/dense_fill.embed_rows batches texts by the embedder's own token count when it offers one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zocrates_nb.index.dense_fill import embed_rows


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


def test_without_a_token_count_the_character_length_orders_the_batches():
    embedder, store = RecordingEmbedder(with_lengths=False), Store()
    embed_rows(ROWS, lambda r: r.text, embedder, store, lambda r: {}, batch=2)
    flat = [t for call in embedder.calls for t in call]
    assert [len(t) for t in flat] == sorted(len(t) for t in flat)
