"""Dense windows (``vectors.windows``): every window of an over-long chunk has a vector, and the chunk
scores at its best window. Pure ids, the fill's bookkeeping, and a real index (FTS5, Chroma, MiniLM)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest

from zocrates_nb.index.vectors.fill import embed_jobs
from zocrates_nb.index.vectors.windows import best_per_chunk, chunk_of, is_window, window_id, windows_of


def test_window_ids_keep_the_chunk_id_for_the_first_window_and_map_back():
    assert window_id("ABCD2345:0", 0) == "ABCD2345:0"
    assert window_id("ABCD2345:0", 2) == "ABCD2345:0#w2"
    assert chunk_of("ABCD2345:0#w2") == "ABCD2345:0" and is_window("ABCD2345:0#w2")
    for plain in ("ABCD2345:0", "doc#wiki:0", "doc#w:0", "doc#w0"):  # ids that only look alike stay as they are
        assert chunk_of(plain) == plain and not is_window(plain)
    assert windows_of(["a:0", "a:0#w1", "a:0#w2", "b:0#w1", "c:0"], ["a:0", "c:0"]) == ["a:0#w1", "a:0#w2"]


def test_best_per_chunk_keeps_each_chunk_once_at_its_nearest_window():
    results = [("a:0#w1", 0.10), ("b:0", 0.20), ("a:0", 0.30), ("c:0#w2", 0.40), ("b:0#w1", 0.5), ("d:0", 0.6)]
    assert best_per_chunk(results) == [("a:0", 0.10), ("b:0", 0.20), ("c:0", 0.40), ("d:0", 0.6)]
    assert best_per_chunk(results, 2) == [("a:0", 0.10), ("b:0", 0.20)]


@dataclass(frozen=True)
class Row:
    chunk_id: str
    windows: tuple[str, ...]


class Embedder:
    pads = False

    def embed(self, texts):
        return np.ones((len(texts), 2), dtype=np.float32)


class Store:
    def __init__(self, fail_on_call: int | None = None) -> None:
        self.ids: list[str] = []
        self.calls, self.fail_on_call = 0, fail_on_call

    def upsert(self, ids, vectors, metadatas) -> None:
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise OSError("disk full")
        self.ids.extend(ids)


ROWS = [Row("a:0", ("a1", "a2", "a3")), Row("b:0", ("b1",)), Row("c:0", ("c1", "c2"))]


def _fill(store, stored, batch=2):
    return embed_jobs(
        [ROWS], lambda r: list(r.windows), Embedder(), store, lambda r: {}, batch=batch, stored=stored.extend
    )


def test_every_window_is_stored_and_a_chunk_counts_once_its_last_window_is():
    store, stored = Store(), []
    assert _fill(store, stored) == 6
    assert sorted(store.ids) == ["a:0", "a:0#w1", "a:0#w2", "b:0", "c:0", "c:0#w1"]
    assert sorted(stored) == ["a:0", "b:0", "c:0"]  # chunk ids only, each once
    assert store.ids.index("a:0") > store.ids.index("a:0#w2")  # the chunk's own id comes with its last window


def test_a_fill_that_stops_midway_leaves_no_chunk_half_stored():
    store, stored = Store(fail_on_call=2), []
    with pytest.raises(OSError):
        _fill(store, stored)
    # a:0's first two windows went in the first write, its last did not: a:0 itself is not there, so the
    # next reconcile finds the chunk missing and embeds it whole
    assert store.ids == ["a:0#w1"] and stored == []


# ----------------------------------------------------------------------------- a real index

TIDES = " ".join(
    f"Tidal range number {i} depends on the moon, the sun and the shape of the coastline near harbour {i}."
    for i in range(30)
)
PENGUINS = "Emperor penguin colony census: we counted breeding pairs on the sea ice from aerial photographs."


def _records(tail: str):
    from zocrates_nb.index.lexical.fts import ChunkRow, FtsDocument

    docs = {
        "LONGDOC2": ("Coastal observations", f"{TIDES} {tail}"),
        "SEABIRD3": ("Seabird surveys", "Counting gulls and terns on cliffs along the northern shore each summer."),
        "VOLCANO4": ("Rock dating", "Argon dating of volcanic basalt samples from the island's old lava flows."),
    }
    return [
        (
            FtsDocument(key=k, kind="paper", title=t, item_type="beir", word_count=len(x.split())),
            [ChunkRow(chunk_id=f"{k}:0", key=k, kind="paper", text=x, title=t, item_type="beir")],
        )
        for k, (t, x) in docs.items()
    ]


@pytest.fixture(scope="module")
def embedder():
    from zocrates_nb.index.embed.model import MiniLMEmbedder

    return MiniLMEmbedder()


def _index(tmp_path, embedder, windows: bool):
    from zocrates_nb.index.hybrid import HybridIndex
    from zocrates_nb.paths import DataPaths

    config = {"vectors": {"mode": "persistent", "windows": windows}}
    return HybridIndex(DataPaths(tmp_path / ("on" if windows else "off")), config, embedder=embedder)


def _dense(index, query):
    return [h.key for h in index.search(query, k=3, mode="dense")]


def test_the_tail_of_a_long_chunk_is_found_through_its_window(tmp_path, embedder):
    query = "emperor penguin breeding pairs counted on sea ice"
    off, on = _index(tmp_path, embedder, False), _index(tmp_path, embedder, True)
    try:
        off.index_records(_records(PENGUINS))
        on.index_records(_records(PENGUINS))
        assert _dense(off, query)[0] != "LONGDOC2"  # past the first 256 word pieces: invisible
        assert _dense(on, query)[0] == "LONGDOC2"
        ids = on.vectors.all_ids()
        assert "LONGDOC2:0#w1" in ids and not any(is_window(v) for v in off.vectors.all_ids())
        assert on.reconcile() == {"embedded": 0, "deleted": 0}  # windows are not extra vectors
        assert [h.key for h in on.search(query, k=3, mode="hybrid")][0] == "LONGDOC2"

        short = _records("")
        short[0] = (short[0][0], [replace(short[0][1][0], text="Tides and harbours.")])
        on.index_records(short)  # the chunk now fits one window: its old windows go
        assert not any(is_window(v) for v in on.vectors.all_ids())
        assert _dense(on, query)[0] != "LONGDOC2"
    finally:
        off.close()
        on.close()
