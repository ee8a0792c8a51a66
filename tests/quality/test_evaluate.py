"""IR metrics against ranx, the BEIR loader, the cached evaluation index and the notes evaluation."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from zocrates_nb.diagnostics.events import EventLog
from zocrates_nb.errors import ZocratesError
from zocrates_nb.paths import DataPaths
from zocrates_nb.quality.evaluate import load_beir, load_note_questions, run_beir_eval, run_notes_eval
from zocrates_nb.quality.metrics import evaluate_run, mrr_at_k, ndcg_at_k, parse_metric, recall_at_k

# ---------------------------------------------------------------------------- metrics


def _random_case(seed: int):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(60)]
    qrels, run = {}, {}
    for q in range(25):
        qid = f"q{q}"
        qrels[qid] = {d: rng.randint(1, 3) for d in rng.sample(docs, rng.randint(1, 6))}
        ranked = rng.sample(docs, rng.randint(0, 40))
        run[qid] = {d: 100.0 - i for i, d in enumerate(ranked)}  # distinct scores: no tie rules involved
    return qrels, run


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_metrics_match_ranx(seed):
    ranx = pytest.importorskip("ranx")
    qrels, run = _random_case(seed)
    ranked = {q: sorted(scores, key=scores.get, reverse=True) for q, scores in run.items()}
    ours = evaluate_run(ranked, qrels, ["ndcg@10", "recall@100", "mrr@10", "ndcg@3", "recall@5"])
    run_for_ranx = {q: (scores or {"__none__": 0.0}) for q, scores in run.items()}
    theirs = ranx.evaluate(
        ranx.Qrels(qrels), ranx.Run(run_for_ranx), ["ndcg@10", "recall@100", "mrr@10", "ndcg@3", "recall@5"]
    )
    for name, value in ours.items():
        assert value == pytest.approx(theirs[name], abs=1e-9), name


def test_metric_edge_cases():
    rel = {"a": 1, "b": 2, "z": 0}
    assert ndcg_at_k([], rel) == 0.0
    assert ndcg_at_k(["b", "a"], rel) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "b"], {"b": 1}, 10) == pytest.approx(1 / 1.584962500721156)
    assert recall_at_k(["a", "a", "x"], rel, 2) == 0.5  # duplicates count once
    assert mrr_at_k(["z", "x", "a"], rel, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["x", "a"], rel, 1) == 0.0
    assert evaluate_run({}, {"q": {"a": 1}}) == {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    with pytest.raises(ValueError):
        parse_metric("map@10")


# ---------------------------------------------------------------------------- a tiny BEIR dataset

CORPUS = {
    "d1": ("Zebrafish fin regeneration", "Blastema cells drive regrowth of amputated fins in zebrafish."),
    "d2": ("Statins and cholesterol", "Statin therapy lowers LDL cholesterol and cardiovascular events."),
    "d3": ("Malaria vaccines", "The RTS,S vaccine reduces clinical malaria episodes in children."),
    "d4": ("Gut microbiome", "Intestinal bacteria shape immune development in early life."),
    "d5": ("Telomeres and ageing", "Telomere shortening limits the replicative lifespan of cells."),
    "d6": ("Sleep and memory", "Slow-wave sleep consolidates declarative memories."),
}
QUERIES = {
    "q1": "zebrafish fin regrowth",
    "q2": "does statin therapy reduce cholesterol",
    "q3": "which vaccine protects children against malaria",
    "q9": "not judged in this split",
}
QRELS = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1, "d4": 1}}


def write_beir(root: Path, gz: bool = True) -> Path:
    root.mkdir(parents=True)
    lines = "".join(json.dumps({"_id": d, "title": t, "text": x}) + "\n" for d, (t, x) in CORPUS.items())
    if gz:
        with gzip.open(root / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.write(lines)
    else:
        (root / "corpus.jsonl").write_text(lines, encoding="utf-8")
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t, "metadata": {}}) + "\n" for q, t in QUERIES.items())
    )
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, r in QRELS.items() for d, s in r.items())
    )
    return root


def test_load_beir_keeps_only_judged_queries(tmp_path):
    ds = load_beir(write_beir(tmp_path / "tiny"), "test")
    assert set(ds.queries) == {"q1", "q2", "q3"} and ds.qrels == QRELS
    assert ds.corpus()["d3"][0] == "Malaria vaccines"
    plain = load_beir(write_beir(tmp_path / "plain", gz=False), "test")
    assert plain.corpus() == ds.corpus()


def test_load_beir_errors_say_what_is_missing(tmp_path):
    root = write_beir(tmp_path / "tiny")
    with pytest.raises(ZocratesError) as err:
        load_beir(root, "dev")
    assert "qrels/dev.tsv" in err.value.message and "test" in err.value.hint
    (root / "queries.jsonl").unlink()
    with pytest.raises(ZocratesError, match="queries.jsonl"):
        load_beir(root, "test")


def test_beir_eval_builds_once_and_reuses_the_index(tmp_path, data_dir):
    root = write_beir(tmp_path / "tiny")
    paths = DataPaths(data_dir)
    events = EventLog(paths.diagnostics)
    first = run_beir_eval(root, "test", "lexical", paths=paths, events=events)
    assert first["index_built"] is True
    assert first["queries"] == 3 and first["dataset"] == "tiny" and first["split"] == "test"
    # q1 and q2 are lexically unambiguous → rank 1; q3 has two relevant docs of which d3 matches
    assert first["mrr@10"] == pytest.approx(1.0)
    assert first["recall@100"] == pytest.approx((1 + 1 + 0.5) / 3, abs=1e-4)
    second = run_beir_eval(root, "test", "lexical", paths=paths, events=events)
    assert second["index_built"] is False
    assert {k: second[k] for k in ("ndcg@10", "recall@100", "mrr@10")} == {
        k: first[k] for k in ("ndcg@10", "recall@100", "mrr@10")
    }
    cached = list(paths.eval_cache.iterdir())
    assert len(cached) == 1 and cached[0].name.startswith("tiny-")
    hybrid = run_beir_eval(root, "test", "hybrid", paths=paths, events=events)
    assert hybrid["index_built"] is True  # vectors added to the same cached index
    assert hybrid["mrr@10"] == pytest.approx(1.0)
    dense = run_beir_eval(root, "test", "dense", paths=paths, events=events)
    assert dense["index_built"] is False and dense["mode"] == "dense"
    assert list(paths.eval_cache.iterdir()) == cached
    recorded = [json.loads(line) for f in paths.diagnostics.glob("*.jsonl") for line in f.read_text().splitlines()]
    evals = [e for e in recorded if e["kind"] == "eval"]
    assert [e["mode"] for e in evals] == ["lexical", "lexical", "hybrid", "dense"]
    assert evals[0]["ndcg@10"] == first["ndcg@10"] and evals[0]["dataset"] == "tiny"


def test_changed_corpus_gets_a_new_index(tmp_path, data_dir):
    root = write_beir(tmp_path / "tiny", gz=False)
    paths = DataPaths(data_dir)
    run_beir_eval(root, "test", "lexical", paths=paths)
    with open(root / "corpus.jsonl", "a") as fh:
        fh.write(json.dumps({"_id": "d7", "title": "Zebrafish", "text": "zebrafish fin"}) + "\n")
    again = run_beir_eval(root, "test", "lexical", paths=paths)
    assert again["index_built"] is True
    assert len(list(paths.eval_cache.iterdir())) == 2


def test_an_index_cached_before_windows_is_embedded_again_once_with_every_window(tmp_path, data_dir):
    from zocrates_nb.quality.beir_index import open_eval_index

    root = write_beir(tmp_path / "tiny")
    with open(root / "corpus.jsonl.gz", "ab") as raw, gzip.open(raw, "wt", encoding="utf-8") as fh:
        long_text = " ".join(f"Sentence {i} on coral reef bleaching and warm water." for i in range(60))
        fh.write(json.dumps({"_id": "d7", "title": "Coral reefs", "text": long_text}) + "\n")
    paths = DataPaths(data_dir)
    run_beir_eval(root, "test", "dense", paths=paths)
    marker_file = next(paths.eval_cache.iterdir()) / "eval_index.json"
    marker = json.loads(marker_file.read_text())
    assert marker["windows"] == 1 and marker["vectors"]
    dataset = load_beir(root, "test")
    index, built = open_eval_index(paths, dataset, vectors=True)
    try:
        assert not built and "d7:0#w1" in index.vectors.all_ids()  # the long abstract has windows
        index.vectors.delete_ids(["d7:0#w1"])  # as an index cached before windows were cut would lack them
    finally:
        index.close()
    del marker["windows"]
    marker_file.write_text(json.dumps(marker))
    index, built = open_eval_index(paths, dataset, vectors=True)
    try:
        assert built and "d7:0#w1" in index.vectors.all_ids()
    finally:
        index.close()
    assert json.loads(marker_file.read_text())["windows"] == 1


# ---------------------------------------------------------------------------- notes evaluation


def test_notes_eval_reports_recall_mrr_and_misses(tmp_path, data_dir):
    from zocrates_nb.corpus.meta import MetaDB
    from zocrates_nb.index.hybrid import HybridIndex

    paths = DataPaths(data_dir)
    index = HybridIndex(paths, {})
    meta = MetaDB(paths.meta_db)
    notes = {
        "NOTE2222": "Zebrafish fins regrow from a blastema after amputation.",
        "NOTE3333": "Statins lower LDL cholesterol; check adherence in older patients.",
        "NOTE4444": "Telomeres shorten with each cell division.",
    }
    with meta.write() as conn:
        for key, text in notes.items():
            index.stage(
                conn,
                {"key": key, "content_type": "text/note", "title": text[:20], "word_count": len(text.split())},
                text,
            )
    index.commit_vectors()
    qfile = tmp_path / "questions.jsonl"
    qs = [
        {"id": "n1", "query": "how do zebrafish regrow fins", "note_keys": ["NOTE2222"]},
        {"id": "n2", "query": "statin adherence in the elderly", "note_keys": ["NOTE3333"]},
        {"id": "n3", "query": "quantum chromodynamics lattice", "note_keys": ["NOTE9999"]},
    ]
    qfile.write_text("".join(json.dumps(q) + "\n" for q in qs))
    result = run_notes_eval(index, load_note_questions(qfile), k=5, events=EventLog(paths.diagnostics))
    assert result["queries"] == 3
    assert result["recall@5"] == pytest.approx(2 / 3, abs=1e-4)
    assert result["mrr"] == pytest.approx(2 / 3, abs=1e-4)
    assert [m["id"] for m in result["misses"]] == ["n3"]
    assert result["misses"][0]["expected"] == ["NOTE9999"]
    index.close()


def test_note_questions_validation(tmp_path):
    bad = tmp_path / "q.jsonl"
    bad.write_text(json.dumps({"id": "x", "query": "", "note_keys": ["A"]}) + "\n")
    with pytest.raises(ZocratesError, match="lacks a query"):
        load_note_questions(bad)
    with pytest.raises(ZocratesError, match="No note-question file"):
        load_note_questions(tmp_path / "missing.jsonl")
