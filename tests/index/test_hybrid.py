"""Hybrid index: RRF math, query validation, staging through the corpus transaction, reconcile,
rebuild, and the bad-input paths — real FTS5, real Chroma, real MiniLM embedder."""

from __future__ import annotations

import shutil

import pytest

from zocrates_nb.corpus.bundle import write_bundle
from zocrates_nb.corpus.meta import MetaDB
from zocrates_nb.errors import IndexCorruptError, QueryError, ZocratesError
from zocrates_nb.index import hybrid
from zocrates_nb.index.hybrid import HybridIndex, check_filters, prepare_query, rrf
from zocrates_nb.index.rank.ranking import unknown_collection_error, unknown_parent_error
from zocrates_nb.paths import DataPaths

# ---------------------------------------------------------------------------- pure parts


def test_rrf_exact_scores_and_order():
    fused = rrf({"lexical": ["x", "y", "z"], "dense": ["y", "w"]}, k=60)
    assert [d for d, _ in fused] == ["y", "x", "w", "z"]
    scores = dict(fused)
    assert scores["y"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["x"] == pytest.approx(1 / 61)
    assert scores["w"] == pytest.approx(1 / 62)
    assert scores["z"] == pytest.approx(1 / 63)


def test_rrf_ties_duplicates_and_k():
    # x and y tie (1/1 + 1/2 each): first appearance wins, deterministically
    assert rrf({"a": ["x", "y"], "b": ["y", "x"]}, k=0) == [("x", 1.5), ("y", 1.5)]
    assert rrf({"a": ["x", "x", "y"]}, k=0) == [
        ("x", 1.0),
        ("y", 1 / 3),
    ]  # a duplicate counts once, ranks are positions
    assert rrf({}, k=60) == [] and rrf({"a": []}) == []
    with pytest.raises(ValueError):
        rrf({"a": ["x"]}, k=-1)


def test_prepare_query_rejects_empty_and_truncates_huge():
    for bad in ("", "   \n\t", None, 42):
        with pytest.raises(QueryError) as err:
            prepare_query(bad)
        assert err.value.hint
    text, notice = prepare_query("  spatial   transcriptomics ")
    assert (text, notice) == ("spatial transcriptomics", None)
    huge = "deconvolution of spots " * 5000  # ~115 KB
    text, notice = prepare_query(huge)
    assert len(text) <= hybrid.MAX_QUERY_CHARS and text.startswith("deconvolution of spots")
    assert not text.endswith(" ") and "114,999" in notice and "first" in notice


def test_check_filters():
    assert check_filters({"item_type": "note", "collection": None, "parent_key": ""}) == {"item_type": "note"}
    with pytest.raises(QueryError, match="Unknown search filter 'colection'"):
        check_filters({"colection": "X"})
    with pytest.raises(QueryError):
        check_filters({"item_type": ["note"]})


def test_unknown_collection_and_parent_errors_name_the_value_and_the_choices():
    known = ["CLNX2222", "Spatial", "CLNX3333", "Misc"]  # Zotero-shaped keys and names
    assert unknown_collection_error("Spatial", known) is None and unknown_collection_error("CLNX3333", known) is None
    error = unknown_collection_error("nonexistent", known)
    assert "'nonexistent'" in error.message
    assert "'Misc'" in error.hint and "'Spatial'" in error.hint and "CLNX2222" not in error.hint
    assert "wb.collections()" in error.hint
    assert "Did you mean 'Spatial'" in unknown_collection_error("spatial", known).hint
    many = [f"Topic {i:02d}" for i in range(20)]
    assert "and 8 more" in unknown_collection_error("x", many).hint
    assert "No indexed document is filed" in unknown_collection_error("x", []).hint
    assert unknown_parent_error("PAPR2222", True) is None
    error = unknown_parent_error("ZZZZ9999", False)
    assert "'ZZZZ9999'" in error.message and "parent_key" in error.hint


# ---------------------------------------------------------------------------- a small indexed library


@pytest.fixture(scope="module")
def embedder():
    from zocrates_nb.index.embed.model import MiniLMEmbedder

    return MiniLMEmbedder()


SECTION = (
    "Spatial barcoding captures messenger RNA from thin tissue sections on a glass slide. "
    "Each spot records the expression of thousands of genes, and the positions are kept. "
)


def manifests():
    """(manifest, markdown) pairs in the shapes the corpus writes."""
    paper_md = (
        "# Visualization of gene expression in tissue sections\n\n"
        + "## Methods\n\n"
        + SECTION * 8
        + "\n\n## Results\n\n"
        + "Hippocampus and olfactory bulb regions were resolved by clustering. " * 20
    )
    return [
        (
            {
                "key": "PAPR2222",
                "content_type": "text/paper",
                "item_type": "journalArticle",
                "title": "Visualization of gene expression in tissue sections",
                "creators": ["Ståhl, Patrik"],
                "year": 2016,
                "citation": "Ståhl et al., 2016",
                "collections": ["Spatial"],
                "collection_keys": ["COLL2222"],
                "word_count": len(paper_md.split()),
            },
            paper_md,
        ),
        (
            {
                "key": "NOTE2222",
                "content_type": "text/note",
                "item_type": "note",
                "title": "Deconvolution idea",
                "parent_key": "PAPR2222",
                "parent_title": "Visualization of gene expression in tissue sections",
                "collections": [],
                "collection_keys": [],
                "word_count": 12,
            },
            "Deconvolution idea\n\nUse single-cell references to deconvolve Visium spots.",
        ),
        (
            {
                "key": "NOTE3333",
                "content_type": "text/note",
                "item_type": "note",
                "title": "Coffee grinders",
                "collections": ["Misc"],
                "collection_keys": ["COLL3333"],
                "word_count": 9,
            },
            "Coffee grinders\n\nBurr grinders give a more even espresso.",
        ),
    ]


def stage_all(index: HybridIndex, paths: DataPaths, docs=None) -> None:
    meta = MetaDB(paths.meta_db)
    with meta.write() as conn:
        for manifest, markdown in docs or manifests():
            index.stage(conn, manifest, markdown)
    meta.close()
    index.commit_vectors()


@pytest.fixture
def index(data_dir, embedder):
    paths = DataPaths(data_dir)
    idx = HybridIndex(paths, {}, embedder=embedder)
    stage_all(idx, paths)
    yield idx
    idx.close()


def test_modes_ranks_and_collapse(index):
    lexical = index.search("deconvolve Visium spots", mode="lexical")
    assert lexical[0].key == "NOTE2222" and lexical[0].ranks == {"lexical": 1, "dense": None}
    dense = index.search("how to split mixed spots into cell types", mode="dense")
    assert dense[0].ranks["lexical"] is None and dense[0].ranks["dense"] == 1
    assert 0 < dense[0].score <= 1  # cosine similarity
    fused = index.search("deconvolve Visium spots", k=3)
    assert fused[0].key == "NOTE2222"
    assert fused[0].ranks["lexical"] == 1 and fused[0].ranks["dense"] is not None
    kr = index.rrf_k
    assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)
    # without the note lane (index/rank/fusion.py) the fused score is plain RRF; the lane only adds to notes
    plain_index = HybridIndex(index.paths, {"search": {"note_lane": 0, "note_intent": 0}}, embedder=index.embedder)
    plain = plain_index.search("deconvolve Visium spots", k=3)
    plain_index.close()
    assert plain[0].score == pytest.approx(1 / (kr + 1) + 1 / (kr + plain[0].ranks["dense"]))
    assert fused[0].score > plain[0].score
    # the paper has several chunks: collapsed to one hit per document, chunk text kept
    keys = [h.key for h in index.search("tissue sections gene expression", k=10)]
    assert keys.count("PAPR2222") == 1
    chunks = index.search("tissue sections gene expression", k=10, collapse=False, mode="lexical")
    assert len([h for h in chunks if h.key == "PAPR2222"]) >= 2
    paper = next(h for h in index.search("hippocampus olfactory bulb clustering") if h.key == "PAPR2222")
    assert "Hippocampus" in paper.text and paper.section == "Results"
    assert (paper.first_author, paper.year, paper.citation) == ("Ståhl", 2016, "Ståhl et al., 2016")


def test_child_note_provenance(index):
    hit = index.search("single-cell references", k=1)[0]
    assert (hit.key, hit.kind, hit.parent_key) == ("NOTE2222", "note", "PAPR2222")
    assert hit.parent_title.startswith("Visualization") and hit.word_count == 12


def test_filters_apply_to_both_retrievers(index):
    for mode in ("lexical", "dense", "hybrid"):
        assert {
            h.kind for h in index.search("espresso gene expression spots", mode=mode, filters={"item_type": "note"})
        } == {"note"}
        assert [
            h.key for h in index.search("espresso gene expression", mode=mode, filters={"collection": "Spatial"})
        ] == ["PAPR2222"]
        assert [
            h.key for h in index.search("espresso gene expression", mode=mode, filters={"collection": "COLL3333"})
        ] == ["NOTE3333"]
        assert [
            h.key for h in index.search("Visium gene expression", mode=mode, filters={"parent_key": "PAPR2222"})
        ] == ["NOTE2222"]
        assert [h.key for h in index.search("gene anything", mode=mode, filters={"item_type": "journalArticle"})] == [
            "PAPR2222"
        ]


def test_filters_naming_nothing_indexed_are_errors_not_empty_results(index):
    for mode in ("lexical", "dense", "hybrid"):
        with pytest.raises(QueryError, match="No collection 'nonexistent'") as info:
            index.search("gene expression", mode=mode, filters={"collection": "nonexistent"})
        assert "'Spatial'" in info.value.hint and "'Misc'" in info.value.hint
        with pytest.raises(QueryError, match="'ZZZZ9999'"):
            index.search("gene expression", mode=mode, filters={"parent_key": "ZZZZ9999"})
    # known targets that simply match nothing still give an empty result
    assert index.search("zebrafish", mode="lexical", filters={"collection": "Misc"}) == []
    assert index.search("gene expression", mode="lexical", filters={"parent_key": "NOTE3333"}) == []
    assert index.search("gene expression", mode="lexical", filters={"parent_key": "NOTE2222"}) == []


def test_bad_queries(index):
    with pytest.raises(QueryError):
        index.search("   ")
    with pytest.raises(QueryError, match="Unknown search mode"):
        index.search("x", mode="semantic")
    hits, notices = index.search_with_notices("espresso grinders " * 8000)
    assert hits[0].key == "NOTE3333" and "only its first" in notices[0]
    for nasty in ('"multi-agent" NOT title:x', "who's", "😀", "a AND", "NEAR(", "*"):
        index.search(nasty)  # never an FTS syntax error


def test_unstage_update_and_rollback_keep_vectors_in_line(index, data_dir):
    paths = DataPaths(data_dir)
    meta = MetaDB(paths.meta_db)
    with meta.write() as conn:
        index.unstage(conn, "NOTE3333")
    index.commit_vectors()
    assert "NOTE3333:0" not in index.vectors.all_ids()
    assert all(h.key != "NOTE3333" for h in index.search("espresso grinders", mode="dense"))
    # the paper shrinks to one chunk: its tail chunks' vectors go too
    paper_manifest = dict(manifests()[0][0], word_count=5)
    with meta.write() as conn:
        index.stage(conn, paper_manifest, "# Visualization\n\nShort now.")
    index.commit_vectors()
    assert [i for i in index.vectors.all_ids() if i.startswith("PAPR2222")] == ["PAPR2222:0"]
    # a transaction the corpus rolls back leaves neither rows nor vectors behind
    with pytest.raises(RuntimeError):
        with meta.write() as conn:
            index.stage(
                conn, {"key": "GONE2222", "content_type": "text/note", "title": "gone", "word_count": 2}, "rolled back"
            )
            raise RuntimeError("conversion failed later in the transaction")
    index.commit_vectors()
    assert "GONE2222:0" not in index.vectors.all_ids()
    assert set(index.vectors.all_ids()) == {"PAPR2222:0", "NOTE2222:0"}
    index.integrity_check()
    meta.close()


def test_reconcile_repairs_a_deleted_vector_folder(index, data_dir, embedder):
    paths = DataPaths(data_dir)
    expected = set(index.vectors.all_ids())
    index.close()
    shutil.rmtree(paths.chroma)
    reopened = HybridIndex(paths, {}, embedder=embedder)
    assert reopened.search("Visium deconvolution", mode="dense")[0].key == "NOTE2222"
    assert set(reopened.vectors.all_ids()) == expected
    reopened.close()


def test_too_many_missing_vectors_need_an_explicit_repair(index, data_dir, embedder):
    paths = DataPaths(data_dir)
    index.close()
    shutil.rmtree(paths.chroma)
    reopened = HybridIndex(paths, {}, embedder=embedder, auto_repair_limit=1)
    with pytest.raises(IndexCorruptError) as err:
        reopened.search("Visium", mode="dense")
    assert "missing" in err.value.message and "rebuild" in err.value.hint
    hits, notices = reopened.search_with_notices("Visium deconvolution")  # hybrid degrades to lexical
    assert hits[0].key == "NOTE2222" and hits[0].ranks["dense"] is None
    assert "Dense retrieval is unavailable" in notices[0]
    assert reopened.reconcile() == {"embedded": reopened.stats()["chunks"], "deleted": 0}
    assert reopened.search("Visium deconvolution", mode="dense")[0].key == "NOTE2222"
    reopened.close()


def test_a_first_sync_bigger_than_the_repair_limit_embeds_everything(data_dir, embedder):
    """New chunks are not 'missing vectors': a big first sync must not trip the auto-repair limit."""
    paths = DataPaths(data_dir)
    fresh = HybridIndex(paths, {}, embedder=embedder, auto_repair_limit=1)
    stage_all(fresh, paths)  # several chunks in one commit_vectors
    chunks = fresh.stats()["chunks"]
    assert chunks > 1 and fresh.vectors.count() == chunks
    assert fresh.search("Visium deconvolution", mode="dense")[0].key == "NOTE2222"
    fresh.close()


def test_lost_vectors_of_a_big_index_are_reported_not_silently_reembedded(index, data_dir, embedder):
    """Some vectors lost (e.g. a crash before commit_vectors): over the limit → error, then repair."""
    index.vectors.delete_ids(["NOTE2222:0", "NOTE3333:0"])
    paths = DataPaths(data_dir)
    reopened = HybridIndex(paths, {}, embedder=embedder, auto_repair_limit=1)
    with pytest.raises(IndexCorruptError, match="lacks 2 of"):
        reopened.search("Visium", mode="dense")
    assert reopened.reconcile() == {"embedded": 2, "deleted": 0}
    reopened.close()


def test_extra_vectors_are_deleted_by_reconcile(index, data_dir, embedder):
    index.vectors.upsert(["ORPH2222:0"], embedder.embed(["orphan"]), [{"key": "ORPH2222"}])
    assert index.reconcile() == {"embedded": 0, "deleted": 1}
    assert "ORPH2222:0" not in index.vectors.all_ids()


def test_rebuild_from_bundles_alone(data_dir, embedder):
    paths = DataPaths(data_dir).ensure()
    for manifest, markdown in manifests():
        write_bundle(paths.corpus, manifest["key"], {**manifest, "okf_version": "0.2"}, markdown)
    idx = HybridIndex(paths, {}, embedder=embedder)
    with pytest.raises(IndexCorruptError, match="empty although the corpus"):
        idx.search("Visium")  # FTS lost, bundles present → detected
    assert idx.rebuild() == {"documents": 3, "chunks": idx.stats()["chunks"], "skipped": []}
    assert idx.search("Visium deconvolution")[0].key == "NOTE2222"
    assert idx.stats()["vectors"] == idx.stats()["chunks"]
    idx.integrity_check()
    idx.close()


def test_corrupted_meta_db_is_reported_with_the_rebuild_hint(data_dir):
    paths = DataPaths(data_dir)
    paths.meta_db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(IndexCorruptError) as err:
        HybridIndex(paths, {})
    assert "rebuild" in err.value.hint


def test_model_load_failure_says_what_to_install(data_dir, monkeypatch):
    import zocrates_nb.index.embed.model as embed

    def broken(*args, **kwargs):
        raise ImportError("No module named 'onnxruntime'")

    monkeypatch.setattr(embed, "MiniLMEmbedder", broken)
    idx = HybridIndex(DataPaths(data_dir), {})
    with pytest.raises(ZocratesError) as err:
        idx.search("anything", mode="dense")
    assert "onnxruntime" in err.value.message and "pip install" in err.value.hint
    idx.close()


def test_invalid_search_config_is_a_clear_error(data_dir):
    from zocrates_nb.errors import ConfigError

    for bad in (
        {"rrf_k": "many"},
        {"depth": 0},
        {"title_weight": -1},
        {"paper_fusion": "votes"},
        {"lexical_weight": 2},
        {"note_fusion": "votes"},
        {"note_lexical_weight": -0.1},
    ):
        with pytest.raises(ConfigError) as err:
            HybridIndex(DataPaths(data_dir), {"search": bad})
        assert "search" in err.value.message and "rrf_k" in err.value.hint
    idx = HybridIndex(DataPaths(data_dir), {"search": {"rrf_k": 5, "title_weight": 2}})
    assert idx.rrf_k == 5 and idx.stats()["rrf_k"] == 5
    idx.close()


def test_hybrid_orders_papers_by_blended_scores_and_leaves_notes_in_place(data_dir, embedder):
    """search.paper_fusion "blend" (default) re-orders papers among their places; "rrf" is ranks only."""
    paths = DataPaths(data_dir)
    papers = [
        (
            {**manifests()[0][0], "key": f"PAPR{n}{n}{n}{n}", "title": title, "word_count": 40},
            f"# {title}\n\n{body}",
        )
        for n, (title, body) in enumerate(
            [
                ("Spot deconvolution", "Cell types in Visium spots are deconvolved with single-cell references."),
                ("Visium spots", "Visium Visium Visium spots spots spots: a price list of slides."),
                ("Capture locations", "How to deconvolve each capture location into the cell types of an atlas."),
            ],
            start=4,
        )
    ]
    indexes = {
        name: HybridIndex(paths, {"search": setting}, embedder=embedder)
        for name, setting in (
            ("default", {}),
            ("rrf", {"paper_fusion": "rrf"}),
            ("lexical only", {"lexical_weight": 1.0}),
            ("dense only", {"lexical_weight": 0.0}),
        )
    }
    stage_all(indexes["default"], paths, manifests()[1:] + papers)
    query = "deconvolve cell types in Visium spots"
    got = {name: idx.search(query, k=10) for name, idx in indexes.items()}
    for name, hits in got.items():  # notes keep their places and every place its score
        assert [(h.kind, h.score) for h in hits] == [(h.kind, h.score) for h in got["rrf"]], name
        assert [h.key for h in hits if h.kind == "note"] == [h.key for h in got["rrf"] if h.kind == "note"], name
    by_score = {
        mode: [h.key for h in sorted(indexes["rrf"].search(query, k=10, mode=mode), key=lambda h: -h.score)]
        for mode in ("lexical", "dense")
    }
    placed = {name: [h.key for h in hits if h.kind == "paper"] for name, hits in got.items()}
    for name, mode in (("lexical only", "lexical"), ("dense only", "dense")):  # every paper is in both lists
        assert placed[name] == [key for key in by_score[mode] if key.startswith("PAPR")], name
    assert placed["lexical only"] != placed["dense only"]  # the two orders differ, so the weight decides
    for idx in indexes.values():
        idx.close()


def test_parallel_and_serial_hybrid_search_agree(index, data_dir, embedder):
    """FTS on the worker thread beside the embedding gives exactly the serial results, for every query."""
    serial = HybridIndex(DataPaths(data_dir), {"search": {"parallel": False}}, embedder=embedder)
    assert index.parallel and not serial.parallel
    for query in (
        "deconvolve Visium spots",
        "tissue sections gene expression",
        "espresso",
        "hippocampus olfactory bulb clustering",
        "zzzz nothing matches this",
    ):
        for filters in (None, {"item_type": "note"}, {"parent_key": "PAPR2222"}):
            both = [idx.search(query, k=5, filters=filters) for idx in (index, serial)]
            assert [(h.chunk_id, h.score, h.ranks) for h in both[0]] == [
                (h.chunk_id, h.score, h.ranks) for h in both[1]
            ]
    assert index._pool is not None and serial._pool is None  # the worker really ran
    serial.close()
    index.close()
    assert index._pool is None  # close() stops the worker


def test_a_failing_dense_side_does_not_strand_the_fts_worker(index, monkeypatch):
    class Broken:
        model_id, dim = "sentence-transformers/all-MiniLM-L6-v2", 384

        def embed(self, texts):
            raise ZocratesError("The embedder broke.", hint="Reinstall it.")

    index.search("Visium", k=1)  # store open and reconciled
    monkeypatch.setattr(index, "_embedder", Broken())
    with pytest.raises(ZocratesError, match="embedder broke"):
        index.search("deconvolve Visium spots")  # search(): no fallback
    hits, notices = index.search_with_notices("deconvolve Visium spots")
    assert hits[0].key == "NOTE2222" and "Dense retrieval is unavailable" in notices[0]
    assert index.search("deconvolve Visium spots", mode="lexical")[0].key == "NOTE2222"  # lock was released


def test_vector_search_beam_is_widened_for_new_and_old_collections(data_dir, monkeypatch):
    """ef_search=100 (Chroma's default) missed most of the true top-10 for some queries at 60k vectors."""
    import numpy as np

    from zocrates_nb.index.vectors import store as vectors

    paths = DataPaths(data_dir)
    monkeypatch.setattr(vectors, "HNSW_EF_SEARCH", 100)  # a collection made before the change
    old = vectors.VectorStore(paths, model_id="m", dim=3)
    old.upsert(
        ["a:0", "b:0"],
        np.eye(3)[:2],
        [vectors.chunk_metadata(key=k, kind="note", item_type="note", title="", chunk_index=0) for k in "ab"],
    )
    assert old._handle.collection.configuration_json["hnsw"]["ef_search"] == 100
    old.close()
    monkeypatch.setattr(vectors, "HNSW_EF_SEARCH", 400)
    reopened = vectors.VectorStore(paths, model_id="m", dim=3)
    assert [cid for cid, _ in reopened.query([1.0, 0.1, 0.0], 1)] == ["a:0"]
    assert reopened._handle.collection.configuration_json["hnsw"]["ef_search"] == 400
    reopened.close()
    fresh = vectors.VectorStore(DataPaths(data_dir / "fresh"), model_id="m", dim=3)
    assert fresh.count() == 0 and fresh._handle.collection.configuration_json["hnsw"]["ef_search"] == 400
    fresh.close()


def test_the_vector_store_can_be_wired_in_and_is_opened_only_on_dense_use(data_dir, embedder):
    from zocrates_nb.index.vectors.store import VectorStore

    paths = DataPaths(data_dir)
    opened = []

    def open_vectors(model_id, dim):
        opened.append((model_id, dim))
        return VectorStore(paths, {}, model_id=model_id, dim=dim)

    idx = HybridIndex(paths, {}, embedder=embedder, open_vectors=open_vectors)
    meta = MetaDB(paths.meta_db)
    with meta.write() as conn:
        for manifest, markdown in manifests():
            idx.stage(conn, manifest, markdown)
    meta.close()
    assert idx.search("Visium", mode="lexical")[0].key and opened == []  # lexical search opens no store
    idx.commit_vectors()
    assert opened == [(embedder.model_id, embedder.dim)]
    assert idx.search("deconvolve Visium spots", mode="dense")[0].key == "NOTE2222"
    idx.close()
    given = VectorStore(paths, {}, model_id=embedder.model_id, dim=embedder.dim)
    again = HybridIndex(paths, {}, embedder=embedder, vectors=given)
    assert again.vectors is given and again.search("deconvolve Visium spots", mode="dense")[0].key == "NOTE2222"
    again.close()
