"""VectorStore on a real persistent ChromaDB folder: round trips, filters, model checks, damage."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.fakes.embeddings import vec
from zocrates_nb.errors import IndexCorruptError, ZocratesError
from zocrates_nb.index.vectors.store import VectorStore, chunk_metadata, where_for
from zocrates_nb.paths import DataPaths

DIM = 8


def meta(chunk_id: str, **kw) -> dict:
    key = chunk_id.split("#")[0]
    fields = dict(key=key, kind="note", item_type="note", title=f"title {key}", chunk_index=0)
    fields.update(kw)
    return chunk_metadata(**fields)


@pytest.fixture
def paths(data_dir) -> DataPaths:
    return DataPaths(data_dir).ensure()


@pytest.fixture
def store(paths):
    s = VectorStore(paths, model_id="test-model", dim=DIM)
    yield s
    s.close()


def put(store: VectorStore, ids, **kw) -> None:
    store.upsert(ids, np.stack([vec(i) for i in ids]), [meta(i, **kw) for i in ids], [f"text {i}" for i in ids])


def test_upsert_query_count_and_ids(store, paths):
    put(store, ["A#0", "A#1", "B#0"])
    assert store.count() == 3
    hits = store.query(vec("A#1"), 2)
    assert hits[0][0] == "A#1" and abs(hits[0][1]) < 1e-5  # cosine distance 0 for itself
    assert len(hits) == 2 and hits[1][1] > hits[0][1]
    assert store.query(vec("B#0"), 50)[0][0] == "B#0"  # k larger than the store is fine
    assert store.ids_for_key("A") == ["A#0", "A#1"]
    assert store.all_ids() == ["A#0", "A#1", "B#0"]
    assert (paths.chroma / "chroma.sqlite3").exists()


def test_upsert_is_idempotent_and_replaces_vectors(store):
    put(store, ["A#0", "B#0"])
    store.upsert(["A#0"], vec("Z#9")[None, :], [meta("A#0", title="new")], ["changed"])
    assert store.count() == 2
    assert store.query(vec("Z#9"), 1)[0][0] == "A#0"
    assert store.get_metadata(["A#0"])["A#0"]["title"] == "new"


def test_delete_keys_removes_all_chunks_of_a_document(store):
    put(store, ["A#0", "A#1", "A#2", "B#0", "C#0"])
    store.delete_keys(["A", "C", "NOT-THERE"])
    assert store.all_ids() == ["B#0"]
    store.delete_ids(["B#0"])
    assert store.count() == 0
    assert store.query(vec("B#0"), 5) == []


def test_filters_by_kind_item_type_collection_and_parent(store):
    put(
        store,
        ["N1#0"],
        kind="note",
        item_type="note",
        parent_key="P1",
        collection_keys=["C1"],
        collection_names=["Reading group"],
    )
    put(store, ["N2#0"], kind="note", item_type="note")
    put(
        store,
        ["P1#0", "P1#1"],
        kind="paper",
        item_type="journalArticle",
        collection_keys=["C1", "C2"],
        collection_names=["Reading group", "Thesis"],
    )
    q = vec("N2#0")
    ids = lambda f: sorted(i for i, _ in store.query(q, 10, where_for(f)))  # noqa: E731
    assert ids({"item_type": "note"}) == ["N1#0", "N2#0"]
    assert ids({"item_type": "paper"}) == ["P1#0", "P1#1"]
    assert ids({"item_type": "journalArticle"}) == ["P1#0", "P1#1"]
    assert ids({"collection": "C1"}) == ["N1#0", "P1#0", "P1#1"]
    assert ids({"collection": "Thesis"}) == ["P1#0", "P1#1"]
    assert ids({"parent_key": "P1"}) == ["N1#0"]
    assert ids({"parent_key": "P1", "collection": "C2"}) == []
    assert ids({"item_type": "note", "collection": "C1"}) == ["N1#0"]
    assert where_for({}) is None and where_for({"collection": None}) is None
    with pytest.raises(ZocratesError, match="Unknown search filter"):
        where_for({"colection": "C1"})


def test_bad_vectors_are_refused_and_nothing_is_written(store):
    with pytest.raises(ValueError, match="shape"):
        store.upsert(["A#0"], np.ones((1, DIM + 1), np.float32), [meta("A#0")], ["x"])
    with pytest.raises(ValueError, match="NaN"):
        store.upsert(["A#0"], np.full((1, DIM), np.nan, np.float32), [meta("A#0")], ["x"])
    with pytest.raises(ValueError, match="duplicate"):
        store.upsert(["A#0", "A#0"], np.ones((2, DIM), np.float32), [meta("A#0")] * 2, ["x", "y"])
    with pytest.raises(ValueError, match="same length"):
        store.upsert(["A#0", "B#0"], np.ones((2, DIM), np.float32), [meta("A#0")], ["x", "y"])
    with pytest.raises(ValueError, match="query vector"):
        store.query(np.ones(DIM + 2), 3)
    assert store.count() == 0


def test_another_model_is_refused_naming_both_and_the_reembed_command_then_reset_switches(paths, store):
    put(store, ["A#0"])
    other = VectorStore(paths, model_id="other-model", dim=DIM)
    with pytest.raises(IndexCorruptError) as err:
        other.query(vec("A#0"), 1)
    assert "test-model" in str(err.value) and "other-model" in str(err.value)
    assert "zocrates-nb index model reembed" in str(err.value)
    with pytest.raises(IndexCorruptError):
        other.upsert(["B#0"], vec("B#0")[None, :], [meta("B#0")], ["b"])  # never mixed vectors
    other.reset()
    assert other.count() == 0
    other.upsert(["B#0"], vec("B#0")[None, :], [meta("B#0")], ["b"])
    with pytest.raises(IndexCorruptError, match="other-model"):
        store.count()  # the old model's store now refuses too
    other.close()


def test_a_deleted_chroma_folder_is_detected_and_reset_rebuilds(paths):
    store = VectorStore(paths, model_id="test-model", dim=DIM)
    put(store, ["A#0", "B#0"])
    store.close()
    shutil.rmtree(paths.chroma)

    reopened = VectorStore(paths, model_id="test-model", dim=DIM)
    with pytest.raises(IndexCorruptError, match="missing") as err:
        reopened.count()
    assert "zocrates-nb index rebuild" in str(err.value)
    reopened.reset()
    assert reopened.count() == 0
    put(reopened, ["A#0"])
    assert reopened.query(vec("A#0"), 1)[0][0] == "A#0"
    reopened.close()


def test_a_corrupted_chroma_database_is_detected_and_reset_rebuilds(paths):
    store = VectorStore(paths, model_id="test-model", dim=DIM)
    put(store, ["A#0"])
    store.close()
    (paths.chroma / "chroma.sqlite3").write_bytes(b"this is not a sqlite database" * 100)

    reopened = VectorStore(paths, model_id="test-model", dim=DIM)
    with pytest.raises(IndexCorruptError) as err:
        reopened.count()
    assert "zocrates-nb index rebuild" in str(err.value)
    reopened.reset()
    put(reopened, ["B#0"])
    assert reopened.all_ids() == ["B#0"]
    reopened.close()


def test_reset_refuses_to_delete_a_folder_that_is_not_chroma(paths):
    paths.chroma.mkdir(parents=True)
    (paths.chroma / "my-thesis.docx").write_text("precious")
    store = VectorStore(paths, model_id="test-model", dim=DIM)
    with pytest.raises(ZocratesError, match="Refusing"):
        store.reset()
    assert (paths.chroma / "my-thesis.docx").read_text() == "precious"
    store.close()


def test_two_stores_in_one_process_share_a_client_and_see_each_other(paths):
    first = VectorStore(paths, model_id="test-model", dim=DIM)
    second = VectorStore(paths, model_id="test-model", dim=DIM)
    put(first, ["A#0"])
    assert second.query(vec("A#0"), 1)[0][0] == "A#0"
    first.close()
    put(second, ["B#0"])  # closing one does not break the other
    assert second.count() == 2
    second.close()
    with pytest.raises(ZocratesError, match="closed"):
        second.count()


def test_unknown_mode_and_unreachable_server_give_clear_errors(paths):
    with pytest.raises(ZocratesError, match="Unknown vectors mode"):
        VectorStore(paths, {"vectors": {"mode": "cloud"}}, model_id="m", dim=DIM)
    from tests.fakes.loopback import free_port

    port = free_port()  # nothing listens there
    store = VectorStore(paths, {"vectors": {"mode": "http", "host": "127.0.0.1", "port": port}}, model_id="m", dim=DIM)
    with pytest.raises(ZocratesError, match="not reachable") as err:
        store.count()
    assert "chroma run" in str(err.value)
    store.close()


def test_real_embeddings_end_to_end(paths):
    from zocrates_nb.index.embed.model import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    texts = {
        "cats#0": "Cats are small domesticated felines that like to sleep.",
        "rrf#0": "Reciprocal rank fusion combines lexical and dense retrieval rankings.",
        "soup#0": "Add the chopped onions to the soup and simmer for ten minutes.",
    }
    store = VectorStore(paths, model_id=embedder.model_id, dim=embedder.dim)
    store.upsert(
        list(texts),
        embedder.embed(list(texts.values())),
        [chunk_metadata(key=k.split("#")[0], kind="note", item_type="note", title="", chunk_index=0) for k in texts],
        list(texts.values()),
    )
    hits = store.query(embedder.embed(["merging BM25 and embedding search results"])[0], 3)
    assert hits[0][0] == "rrf#0"
    hits = store.query(embedder.embed(["kitten napping"])[0], 1)
    assert hits[0][0] == "cats#0"
    store.close()
