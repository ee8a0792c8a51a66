"""Filtered dense retrieval (issue 13): the id-set plans give the results Chroma's metadata filter
gives, and an index change refreshes the cached id sets. Real FTS5, Chroma and MiniLM (the demo)."""

from __future__ import annotations

import pytest

from zocrates_nb.index import filtered
from zocrates_nb.index.vectors import where_for

FILTERS = [{"item_type": "note"}, {"item_type": "paper"}, {"item_type": "journalArticle"}]


@pytest.fixture
def demo_index(demo_workbench):
    index = demo_workbench.index
    index.search("warm up", k=1)
    return index


@pytest.mark.parametrize("plan", ["ids", "overfetch", "where"])
def test_every_plan_matches_the_metadata_filter(demo_index, monkeypatch, plan):
    if plan != "ids":
        monkeypatch.setattr(filtered, "IDS_QUERY_MAX", 0)
    if plan == "where":
        monkeypatch.setattr(filtered, "OVERFETCH_MAX", 0)
    calls = []
    store = demo_index.vectors

    def query(*args, **kwargs):
        calls.append(sorted(kwargs))
        return store.query(*args, **kwargs)

    collection = next(iter(demo_index._read(lambda conn: [v for (v,) in conn.execute(
        "SELECT DISTINCT value FROM chunks, json_each(chunks.collections)")])))
    vector = demo_index.embedder.embed(["cell-type deconvolution of Visium spots"])[0]
    for filters in [*FILTERS, {"collection": collection}]:
        allowed = demo_index._allowed.get(filters)
        assert allowed, filters
        expected = store.query(vector, 20, where=where_for(filters))
        got = filtered.dense_with_filter(query, vector, 20, allowed, demo_index._allowed.total, where_for(filters))
        assert [cid for cid, _ in got] == [cid for cid, _ in expected], (plan, filters)
    used = {tuple(c) for c in calls}
    assert {"ids": ("ids",), "overfetch": (), "where": ("where",)}[plan] in used


def test_the_cached_id_sets_follow_index_changes(demo_workbench):
    index = demo_workbench.index
    before = index._allowed.get({"item_type": "note"})
    saved = demo_workbench.save_note("Filtered cache check", "A note about *zebrafish* fins.")
    after = index._allowed.get({"item_type": "note"})
    assert f"{saved.key}:0" in after and f"{saved.key}:0" not in before
    hits = index.search("zebrafish fins", mode="dense", filters={"item_type": "note"})
    assert hits[0].key == saved.key


def test_an_empty_filter_set_queries_nothing():
    def query(*args, **kwargs):
        raise AssertionError("no query for an empty set")

    assert filtered.dense_with_filter(query, None, 10, frozenset(), 100, {"kind": "note"}) == []
