"""ReadFirstVectors (index/vectors/fast.py) on a real persistent ChromaDB folder: its reads through
Chroma's Rust bindings answer exactly what the full client answers, see other processes' writes,
and hand over to the full client whenever the bindings cannot serve."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.fakes.embeddings import vec
from zocrates_nb.errors import IndexCorruptError
from zocrates_nb.index.vectors.fast import FastPathUnavailable, ReadFirstVectors, open_bindings
from zocrates_nb.index.vectors.store import VectorStore, chunk_metadata, where_for
from zocrates_nb.paths import DataPaths

DIM = 8
MODEL = "test-model"


def _meta(i: int) -> dict:
    return chunk_metadata(
        key=f"K{i // 3}",
        kind="note" if i % 4 == 0 else "paper",
        item_type="note" if i % 4 == 0 else "journalArticle",
        title=f"title {i}",
        chunk_index=i % 3,
        collection_keys=["C1"] if i % 5 == 0 else [],
        collection_names=["Reading group"] if i % 5 == 0 else [],
    )


IDS = [f"K{i // 3}#{i % 3}" for i in range(300)]


@pytest.fixture
def paths(data_dir) -> DataPaths:
    return DataPaths(data_dir).ensure()


@pytest.fixture
def full(paths):
    store = VectorStore(paths, model_id=MODEL, dim=DIM)
    store.upsert(IDS, np.stack([vec(i) for i in IDS]), [_meta(i) for i in range(len(IDS))])
    yield store
    store.close()


@pytest.fixture
def fast(paths, full):
    store = ReadFirstVectors(paths, model_id=MODEL, dim=DIM)
    yield store
    store.close()


def _same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [cid for cid, _ in got] == [cid for cid, _ in want]
    assert np.allclose([d for _, d in got], [d for _, d in want], atol=1e-6, rtol=0)


def test_fast_reads_answer_what_the_full_client_answers(fast, full):
    queries = [vec(f"query {n}") for n in range(5)] + [vec(IDS[7])]
    restricted = sorted(IDS[::7])
    for q in queries:
        for k in (1, 10, 100, 500):  # 500: more than the store holds
            _same(fast.query(q, k), full.query(q, k))
        _same(fast.query(q, 20, ids=restricted), full.query(q, 20, ids=restricted))
        for filters in (
            {"item_type": "note"},
            {"collection": "Reading group"},
            {"item_type": "note", "collection": "C1"},
        ):
            where = where_for(filters)
            _same(fast.query(q, 20, where=where), full.query(q, 20, where=where))
    ids, matrix = fast.embeddings(restricted + ["NOT-THERE"])
    want_ids, want = full.embeddings(restricted + ["NOT-THERE"])
    assert ids == want_ids and np.allclose(matrix, want, atol=1e-7)
    assert fast.count() == full.count() == len(IDS)
    assert fast.all_ids() == full.all_ids() == sorted(IDS)
    assert fast.get_metadata(IDS[:4]) == full.get_metadata(IDS[:4])
    assert fast.ids_for_key("K3") == full.ids_for_key("K3") == ["K3#0", "K3#1", "K3#2"]
    assert fast.generation() == full.generation()
    assert fast.fast_reason is None  # every read above went through the bindings


def test_a_write_by_another_process_after_open_is_seen(fast, paths):
    assert fast.query(vec("NEW#0"), 1)[0][0] != "NEW#0"  # the bindings are open now
    writer = textwrap.dedent(
        f"""
        import numpy as np
        from tests.fakes.embeddings import vec
        from zocrates_nb.index.vectors.store import VectorStore, chunk_metadata
        from pathlib import Path
        from zocrates_nb.paths import DataPaths
        with VectorStore(DataPaths(Path({str(paths.root)!r})), model_id={MODEL!r}, dim={DIM}) as store:
            meta = chunk_metadata(key="NEW", kind="note", item_type="note", title="new", chunk_index=0)
            store.upsert(["NEW#0"], vec("NEW#0")[None, :], [meta])
            store.delete_ids(["K0#0"])
        """
    )
    done = subprocess.run([sys.executable, "-c", writer], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    hit = fast.query(vec("NEW#0"), 1)[0]
    assert hit[0] == "NEW#0" and abs(hit[1]) < 1e-5
    assert "K0#0" not in {cid for cid, _ in fast.query(vec("K0#0"), 20)}
    assert fast.fast_reason is None


def test_its_own_writes_go_to_the_full_client_and_are_read_back(fast):
    fast.upsert(
        ["MINE#0"],
        vec("MINE#0")[None, :],
        [chunk_metadata(key="MINE", kind="note", item_type="note", title="", chunk_index=0)],
    )
    assert fast.query(vec("MINE#0"), 1)[0][0] == "MINE#0"
    fast.delete_keys(["MINE"])
    assert fast.query(vec("MINE#0"), 1)[0][0] != "MINE#0"
    assert fast.fast_reason is None


@pytest.mark.parametrize("error", [AttributeError("'Bindings' object has no attribute 'query'"), TypeError("bad args")])
def test_when_the_bindings_do_not_fit_the_full_client_answers(paths, full, error, caplog):
    def broken(*args):
        raise error

    store = ReadFirstVectors(paths, model_id=MODEL, dim=DIM, opener=broken)
    q = vec("query 1")
    with caplog.at_level(logging.DEBUG, logger="zocrates_nb.index.vectors.fast"):
        _same(store.query(q, 10), full.query(q, 10))
    assert store.fast_reason and type(error).__name__ in store.fast_reason
    assert any("full Chroma client" in r.getMessage() for r in caplog.records)
    _same(store.query(q, 10, ids=IDS[:30]), full.query(q, 10, ids=IDS[:30]))  # stays on the full client
    store.close()


def test_a_store_of_another_model_is_refused_by_the_full_clients_error(paths, full):
    with pytest.raises(FastPathUnavailable, match="built by"):
        open_bindings(paths.chroma.resolve(), "zocrates_chunks", "other-model", DIM, 400)
    store = ReadFirstVectors(paths, model_id="other-model", dim=DIM)
    with pytest.raises(IndexCorruptError, match="other-model"):
        store.query(vec("x"), 5)
    store.close()


def test_no_store_yet_is_left_to_the_full_client(paths):
    store = ReadFirstVectors(paths, model_id=MODEL, dim=DIM)
    assert store.query(vec("x"), 5) == []  # the full client creates the empty collection, as before
    assert store.fast_reason and "no store" in store.fast_reason
    store.close()
