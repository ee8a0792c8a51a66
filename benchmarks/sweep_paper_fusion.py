"""Sweep the paper-side fusion on a BEIR split (SciFact train) from one set of cached rankings.

Each query's lexical and dense top-``depth`` lists, with their raw scores (bm25, cosine), are read
once from the evaluation index ``zocrates-nb eval`` builds (under ``<data-dir>/eval/``; run one dense
or hybrid eval first) and kept in a JSON file beside it, so nothing is re-embedded and a setting
costs only its fusion (pure Python, well under a second). Tune on train; the test split is looked at
once, for the chosen setting, through ``zocrates-nb eval``.

    PYTHONPATH=. python benchmarks/sweep_paper_fusion.py --dataset PATH/TO/scifact --split train --data-dir DIR
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from zocrates_nb.index.rank.blend import blend_scores
from zocrates_nb.index.rank.ranking import rrf
from zocrates_nb.paths import DataPaths
from zocrates_nb.quality.evaluate import load_beir, open_eval_index
from zocrates_nb.quality.metrics import evaluate_run

Lists = dict[str, dict[str, list[tuple[str, float]]]]  # qid -> retriever -> [(doc, raw score)]


def read_lists(dataset_dir: str, split: str, data_dir: str, depth: int) -> Lists:
    """Per query, each retriever's ranked documents with raw scores (cached in the eval folder)."""
    dataset = load_beir(dataset_dir, split)
    paths = DataPaths(Path(data_dir))
    cache = Path(paths.eval_cache) / f"{dataset.name}-{split}-lists-{depth}.json"
    if cache.is_file():
        return json.loads(cache.read_text(encoding="utf-8"))
    index, _ = open_eval_index(paths, dataset, vectors=True)
    try:
        qids = list(dataset.queries)
        vectors = index.embedder.embed([dataset.queries[q] for q in qids])
        out: Lists = {}
        for qid, vec in zip(qids, vectors, strict=True):
            text = dataset.queries[qid]
            out[qid] = {
                "lexical": [(h.key, h.score) for h in index.search(text, k=depth, mode="lexical")],
                "dense": [(h.key, h.score) for h in index.search(text, k=depth, mode="dense", query_embedding=vec)],
            }
    finally:
        index.close()
    cache.write_text(json.dumps(out), encoding="utf-8")
    return out


Fusion = Callable[[Mapping[str, list[tuple[str, float]]]], list[str]]


def rrf_fusion(k: int) -> Fusion:
    return lambda lists: [d for d, _ in rrf({n: [d for d, _ in got] for n, got in lists.items()}, k)]


def blend_fusion(weight: float, norm: str) -> Fusion:
    def fuse(lists: Mapping[str, list[tuple[str, float]]]) -> list[str]:
        scores = blend_scores(lists, {"lexical": weight, "dense": 1.0 - weight}, norm=norm)
        return [d for d, _ in sorted(scores.items(), key=lambda item: -item[1])]

    return fuse


#: the lexical list's weight per normalisation (the dense list gets 1 - weight)
GRID = {
    "minmax": (0.5, 0.55, 0.6, 0.65),
    "zscore": (0.5, 0.55, 0.6),
    "max": (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
}


def settings() -> Iterable[tuple[str, Fusion]]:
    for k in (5, 10, 20, 40, 60):
        yield f"rrf k={k}", rrf_fusion(k)
    for norm, weights in GRID.items():
        for weight in weights:
            yield f"blend {norm} lexical={weight}", blend_fusion(weight, norm)


def score(lists: Lists, qrels: Mapping[str, Mapping[str, int]], fusion: Fusion, qids: Iterable[str]) -> dict:
    run = {q: fusion(lists[q])[:100] for q in qids}
    return evaluate_run(run, {q: qrels[q] for q in run})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--split", default="train")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()
    lists = read_lists(args.dataset, args.split, args.data_dir, args.depth)
    qrels = load_beir(args.dataset, args.split).qrels
    qids = sorted(lists)
    halves = random.Random(0).sample(qids, len(qids))
    first, second = halves[: len(qids) // 2], halves[len(qids) // 2 :]
    print(f"{args.split}: {len(qids)} queries; nDCG@10 R@100 MRR@10 (all), nDCG@10 on two random halves")
    for name, fusion in settings():
        m = score(lists, qrels, fusion, qids)
        a, b = (score(lists, qrels, fusion, half)["ndcg@10"] for half in (first, second))
        print(f"{name:48s} {m['ndcg@10']:.4f} {m['recall@100']:.4f} {m['mrr@10']:.4f}   {a:.4f} {b:.4f}", flush=True)


if __name__ == "__main__":
    main()
