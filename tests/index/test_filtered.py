"""Filtered dense retrieval (issue 13): the id-set plans give the results Chroma's metadata filter
gives, and an index change refreshes the cached id sets. Real FTS5, Chroma and MiniLM (the demo)."""

from __future__ import annotations

import pytest

from zocrates_nb.index import filtered
from zocrates_nb.index.vectors.store import where_for

FILTERS = [{"item_type": "note"}, {"item_type": "paper"}, {"item_type": "journalArticle"}]


@pytest.fixture
def demo_index(demo_workbench):
    index = demo_workbench.index
    index.search("warm up", k=1)
    return index


class CountingStore:
    """The real store, recording which keyword arguments each query used."""

    def __init__(self, store, server: bool = False) -> None:
        self.store, self.server, self.calls = store, server, []

    def query(self, *args, **kwargs):
        self.calls.append(tuple(sorted(kwargs)))
        return self.store.query(*args, **kwargs)

    def generation(self):
        return None if self.server else self.store.generation()

    def embeddings(self, ids):
        self.calls.append(("embeddings",))
        return self.store.embeddings(ids)


@pytest.mark.parametrize("plan", ["small-set", "ids", "overfetch", "where"])
def test_every_plan_matches_the_metadata_filter(demo_index, monkeypatch, plan):
    if plan in ("overfetch", "where"):
        monkeypatch.setattr(filtered, "IDS_QUERY_MAX", 0)
    if plan == "where":
        monkeypatch.setattr(filtered, "OVERFETCH_MAX", 0)
    store = demo_index.vectors
    counting = CountingStore(store, server=(plan == "ids"))
    small = filtered.SmallSetVectors()

    collection = next(
        iter(
            demo_index._read(
                lambda conn: [
                    v for (v,) in conn.execute("SELECT DISTINCT value FROM chunks, json_each(chunks.collections)")
                ]
            )
        )
    )
    vector = demo_index.embedder.embed(["cell-type deconvolution of Visium spots"])[0]
    for filters in [*FILTERS, {"collection": collection}]:
        allowed = demo_index._allowed.get(filters)
        assert allowed, filters
        expected = store.query(vector, 20, where=where_for(filters))
        for _ in range(2):  # the second time from the small-set cache
            got = filtered.dense_with_filter(
                counting, vector, 20, allowed, demo_index._allowed.total, where_for(filters), small
            )
            assert [cid for cid, _ in got] == [cid for cid, _ in expected], (plan, filters)
            assert [d for _, d in got] == pytest.approx([d for _, d in expected], abs=1e-4)
    expected_call = {"small-set": ("embeddings",), "ids": ("ids",), "overfetch": (), "where": ("where",)}[plan]
    assert expected_call in set(counting.calls)
    if plan == "small-set":
        distinct = {demo_index._allowed.get(f) for f in [*FILTERS, {"collection": collection}]}
        assert counting.calls.count(("embeddings",)) == len(distinct)  # once per id set, then cached


def test_the_cached_id_sets_follow_index_changes(demo_workbench):
    index = demo_workbench.index
    before = index._allowed.get({"item_type": "note"})
    index.search("zebrafish fins", mode="dense", filters={"item_type": "note"})  # fills the small-set cache
    saved = demo_workbench.save_note("Filtered cache check", "A note about *zebrafish* fins.")
    after = index._allowed.get({"item_type": "note"})
    assert f"{saved.key}:0" in after and f"{saved.key}:0" not in before
    hits = index.search("zebrafish fins", mode="dense", filters={"item_type": "note"})
    assert hits[0].key == saved.key


def test_an_empty_filter_set_queries_nothing():
    class Store:
        def query(self, *args, **kwargs):
            raise AssertionError("no query for an empty set")

    assert filtered.dense_with_filter(Store(), None, 10, frozenset(), 100, {"kind": "note"}) == []
