"""What the lexical candidate cap (``ranking.CANDIDATE_CAP``) costs in quality and saves in time.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_ranked_rows.py [--data-dir DIR]
        [--dataset ../shared/data/scifact --split train] [--scale-cache DIR --queries 40]

Quality: the cap only binds above 80,000 chunks, and no judged collection that size is at hand. So
the SciFact split (one chunk per document, 5,183 rows) is ranked with the budget shrunk to the share
of rows the cap leaves at 302,000 chunks (8,000 / 302,000 = 2.6 %), beside the default budget. The
lexical retriever alone is scored (nDCG@10, Recall@100, MRR@10): hybrid fusion can only soften it.

Time (``--scale-cache``): a lexical-only copy of the 302,000-chunk library of bench_search_scale.py
(2,000 short notes + 20,000 papers x 15 chunks of SciFact text; FTS only, built once, about 4 min),
then ``lexical_search`` top-100 p50/p95 for the same queries with and without the cap.
Prints figures; asserts nothing. Skips with a message when the SciFact data is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from zocrates_nb.index.lexical import fts
from zocrates_nb.index.lexical import split as lexical
from zocrates_nb.index.rank import ranking
from zocrates_nb.paths import DataPaths
from zocrates_nb.quality.beir_index import open_eval_index
from zocrates_nb.quality.evaluate import load_beir
from zocrates_nb.quality.metrics import evaluate_run

SCIFACT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "scifact"
SCALE_ROWS = 302_000


def _budgets(rows: int) -> dict[str, tuple[int, float]]:
    """label -> (floor, share) for ranking's module defaults."""
    simulated = max(1, round(rows * ranking.CANDIDATE_CAP / SCALE_ROWS))
    return {
        "default budget": (ranking.CANDIDATE_FLOOR, ranking.CANDIDATE_SHARE),
        f"cap's share at {SCALE_ROWS:,} chunks ({simulated} of {rows:,} rows)": (simulated, 0.0),
    }


def _rank_all(index, queries: dict[str, str], freq) -> tuple[dict[str, list[str]], list[float]]:
    run, times = {}, []
    for qid, text in queries.items():
        started = time.perf_counter()
        found = index._read(lambda conn, q=text: lexical.lexical_search(conn, q, 100, None, freq))
        times.append((time.perf_counter() - started) * 1000)
        run[qid] = list(dict.fromkeys(key for _, key, _ in found))
    return run, times


def quality(dataset_dir: Path, split: str, data_dir: Path) -> None:
    dataset = load_beir(dataset_dir, split)
    index, _ = open_eval_index(DataPaths(data_dir), dataset, vectors=False)
    rows = index.stats()["chunks"]
    defaults = (ranking.CANDIDATE_FLOOR, ranking.CANDIDATE_SHARE, ranking.CANDIDATE_CAP)
    try:
        for label, (floor, share) in _budgets(rows).items():
            ranking.CANDIDATE_FLOOR, ranking.CANDIDATE_SHARE = floor, share
            ranking.CANDIDATE_CAP = max(defaults[2], floor)
            run, _ = _rank_all(index, dataset.queries, lexical.DocumentFrequencies())
            scores = {k: round(v, 4) for k, v in evaluate_run(run, dataset.qrels).items()}
            print(f"{dataset.name} {split}, lexical, {label}: {scores}", flush=True)
    finally:
        ranking.CANDIDATE_FLOOR, ranking.CANDIDATE_SHARE, ranking.CANDIDATE_CAP = defaults


def _build_scale(index, corpus: list[dict]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_search_scale import zotero_key

    batch: list = []
    for i in range(2000):
        doc, key = corpus[i % len(corpus)], zotero_key("N", i)
        words = doc["text"].split()[: 40 + (i * 37) % 81]
        row = fts.ChunkRow(chunk_id=f"{key}:0", key=key, kind="note", text=" ".join(words), title=doc["title"])
        batch.append((fts.FtsDocument(key=key, kind="note", title=doc["title"], word_count=len(words)), [row]))
    for p in range(20_000):
        key, first = zotero_key("P", p), 2000 + p * 15
        title = corpus[first % len(corpus)]["title"]
        rows = [
            fts.ChunkRow(
                chunk_id=f"{key}:{c}",
                key=key,
                kind="paper",
                text=corpus[(first + c) % len(corpus)]["text"],
                title=title,
            )
            for c in range(15)
        ]
        batch.append((fts.FtsDocument(key=key, kind="paper", title=title, word_count=3000), rows))
        if len(batch) >= 2000:
            index.index_records(batch, vectors=False)
            batch = []
    index.index_records(batch, vectors=False)
    index._write(lambda conn: conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')"))


def timing(cache: Path, n_queries: int) -> None:
    import gzip

    from zocrates_nb.index.hybrid import HybridIndex

    corpus = [json.loads(line) for line in gzip.open(SCIFACT / "corpus.jsonl.gz", "rt")]
    paths = DataPaths(cache / "data").ensure()
    index = HybridIndex(paths, {})
    if not (cache / "built").exists():
        started = time.perf_counter()
        _build_scale(index, corpus)
        (cache / "built").write_text("1")
        print(f"built {index.stats()['chunks']:,} chunks in {time.perf_counter() - started:.0f} s", flush=True)
    lines = (SCIFACT / "queries.jsonl").read_text().splitlines()
    queries = {str(i): json.loads(line)["text"] for i, line in enumerate(lines) if i % 4 == 0}
    queries = dict(list(queries.items())[:n_queries])
    saved = ranking.CANDIDATE_CAP
    try:
        for label, cap in (("without the cap", 10**9), (f"cap {saved:,}", saved)):
            ranking.CANDIDATE_CAP = cap
            freq = lexical.DocumentFrequencies()
            _rank_all(index, queries, freq)  # word counts cached, pages warm
            load = os.getloadavg()[0]
            _, times = _rank_all(index, queries, freq)
            p95 = sorted(times)[int(len(times) * 0.95)]
            figures = f"p50 {statistics.median(times):.1f} ms, p95 {p95:.1f} ms"
            print(
                f"lexical top-100 at {index.stats()['chunks']:,} chunks, {label}: {figures} "
                f"(load {load:.2f} -> {os.getloadavg()[0]:.2f})",
                flush=True,
            )
    finally:
        ranking.CANDIDATE_CAP = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--split", default="train")
    parser.add_argument(
        "--data-dir", type=Path, default=Path("/tmp/zc-ranked-rows"), help="where the evaluation index is cached"
    )
    parser.add_argument("--scale-cache", type=Path, help="also time lexical search at 302,000 chunks (built here)")
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    if not (args.dataset / "queries.jsonl").is_file():
        print(f"skipped: no BEIR dataset at {args.dataset}")
        return
    quality(args.dataset, args.split, args.data_dir)
    if args.scale_cache:
        args.scale_cache.mkdir(parents=True, exist_ok=True)
        timing(args.scale_cache, args.queries)


if __name__ == "__main__":
    main()
