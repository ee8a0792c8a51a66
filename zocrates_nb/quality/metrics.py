"""Information-retrieval metrics: nDCG@k, Recall@k, MRR@k (pure functions).

Why our own: the harness must run offline with nothing but the standard library,
and these three metrics are a few lines each. Definitions follow trec_eval /
pytrec_eval as BEIR uses them (linear gains, ideal DCG over *all* judged relevant
documents), so our numbers are comparable with published SciFact baselines; the
tests check them against ``ranx`` on random runs.

A *ranking* is an ordered sequence of document ids (best first, no duplicates);
*relevance* maps document id → graded relevance (> 0 means relevant).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["ndcg_at_k", "recall_at_k", "mrr_at_k", "evaluate_run", "parse_metric"]


def _dedupe(ranking: Sequence[str]) -> list[str]:
    """Keep the first occurrence of each id: a document counts once, at its best rank."""
    seen: set[str] = set()
    out: list[str] = []
    for doc in ranking:
        if doc not in seen:
            seen.add(doc)
            out.append(doc)
    return out


def ndcg_at_k(ranking: Sequence[str], relevance: Mapping[str, int], k: int = 10) -> float:
    """Normalised discounted cumulative gain with linear gains (trec_eval ``ndcg_cut``)."""
    gains = sorted((g for g in relevance.values() if g > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    if ideal == 0:
        return 0.0
    dcg = sum(max(relevance.get(doc, 0), 0) / math.log2(i + 2) for i, doc in enumerate(_dedupe(ranking)[:k]))
    return dcg / ideal


def recall_at_k(ranking: Sequence[str], relevance: Mapping[str, int], k: int = 100) -> float:
    """Share of the relevant documents that appear in the top ``k``."""
    relevant = {doc for doc, g in relevance.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(_dedupe(ranking)[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], relevance: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document within the top ``k`` (0 when none)."""
    for i, doc in enumerate(_dedupe(ranking)[:k]):
        if relevance.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


_METRICS = {"ndcg": ndcg_at_k, "recall": recall_at_k, "mrr": mrr_at_k}


def parse_metric(name: str) -> tuple[str, int]:
    """``"ndcg@10"`` → ``("ndcg", 10)``; raises ValueError on an unknown metric."""
    base, _, cutoff = name.partition("@")
    if base not in _METRICS or not cutoff.isdigit() or int(cutoff) < 1:
        raise ValueError(f"unknown metric {name!r}; use ndcg@K, recall@K or mrr@K")
    return base, int(cutoff)


def evaluate_run(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    metrics: Sequence[str] = ("ndcg@10", "recall@100", "mrr@10"),
) -> dict[str, float]:
    """Mean of each metric over the queries in ``qrels``.

    Every judged query counts: a query missing from ``run`` scores 0, so a
    retriever cannot look better by failing to answer hard queries.
    """
    parsed = [(m, *parse_metric(m)) for m in metrics]
    totals = {m: 0.0 for m in metrics}
    queries = [q for q, rel in qrels.items() if any(g > 0 for g in rel.values())]
    for qid in queries:
        ranking = run.get(qid, ())
        for name, base, cutoff in parsed:
            totals[name] += _METRICS[base](ranking, qrels[qid], cutoff)
    n = len(queries)
    return {m: (totals[m] / n if n else 0.0) for m in metrics}
