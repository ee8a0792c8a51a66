"""Tune RRF k, the FTS title weight and stopword handling on a BEIR split, from cached rankings.

Embeds nothing new: it reuses the evaluation index ``zocrates-nb eval`` builds (under
``<data-dir>/eval/``) — run one dense or hybrid eval first. Dense rankings are computed once
per run (query embeddings only); lexical rankings are cheap; fusion is pure.

    python benchmarks/tune_retrieval.py --dataset ../shared/data/scifact --split train --data-dir DIR
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from zocrates_nb.index.hybrid import rrf
from zocrates_nb.index.lexical import fts
from zocrates_nb.paths import DataPaths
from zocrates_nb.quality.evaluate import load_beir, open_eval_index, run_rankings
from zocrates_nb.quality.metrics import evaluate_run


def lexical_rankings(index, queries, drop_stopwords: bool, depth: int = 100) -> dict[str, list[str]]:
    out = {}
    for qid, text in queries.items():
        match = fts.natural_query(text, drop_stopwords=drop_stopwords)
        found = index._read(lambda conn, m=match: fts.search(conn, m, depth))
        out[qid] = list(dict.fromkeys(key for _, key, _ in found))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--split", default="train")
    parser.add_argument("--data-dir", required=True)
    args = parser.parse_args()
    dataset = load_beir(args.dataset, args.split)
    paths = DataPaths(Path(args.data_dir))
    index, built = open_eval_index(paths, dataset, vectors=True)
    if built:
        print("note: the evaluation index had to be (partly) built first")
    started = time.perf_counter()
    dense = run_rankings(index, dataset.queries, "dense")
    print(f"dense rankings: {time.perf_counter() - started:.1f} s")
    print(f"{'run':46s} nDCG@10  R@100   MRR@10")

    def show(name, run):
        m = evaluate_run(run, dataset.qrels)
        print(f"{name:46s} {m['ndcg@10']:.4f}  {m['recall@100']:.4f}  {m['mrr@10']:.4f}")
        return m["ndcg@10"]

    show("dense", dense)
    best = (0.0, None)
    for weight in (1.0, 2.0, 3.0, 5.0):
        index._write(lambda conn, w=weight: fts.set_title_weight(conn, w))
        for stop in (True, False):
            lexical = lexical_rankings(index, dataset.queries, stop)
            show(f"lexical title_weight={weight} stopwords_dropped={stop}", lexical)
            for k in (10, 20, 30, 60, 100):
                fused = {
                    q: [d for d, _ in rrf({"lexical": lexical[q], "dense": dense[q]}, k)][:100] for q in dataset.queries
                }
                score = show(f"  rrf k={k}", fused)
                if score > best[0]:
                    best = (score, (weight, stop, k))
    index._write(lambda conn: fts.set_title_weight(conn, fts.DEFAULT_TITLE_WEIGHT))
    index.close()
    print(f"best hybrid nDCG@10 {best[0]:.4f} with (title_weight, stopwords_dropped, rrf_k) = {best[1]}")


if __name__ == "__main__":
    main()
