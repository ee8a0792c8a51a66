"""Retrieval-quality harness: BEIR datasets and the demo library's note questions.

Why here and not a notebook: the numbers in the README must be reproducible with
one command (``zocrates-nb eval``), and every run is recorded as an ``eval`` event
so the diagnostics can plot quality over time.

BEIR (``--dataset DIR --split NAME``): ``corpus.jsonl[.gz]``, ``queries.jsonl`` and
``qrels/NAME.tsv``; as in BEIR only queries that appear in the split's qrels are
evaluated. The evaluation index (FTS + vectors, built by the product's own
``HybridIndex``, one chunk per BEIR document) lives under ``<data-dir>/eval/`` keyed
by the corpus file's SHA-256, so embedding SciFact's 5,183 abstracts (~7 minutes on
2 cores) happens once; an interrupted build resumes where it stopped, because the
vector side is reconciled against the FTS rows.

Notes (``--notes``): questions whose answers live in the user's notes, labelled by
note key; Recall@5 and MRR over the full (unfiltered) search, so notes must win
against papers too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from zocrates_nb.errors import ZocratesError
from zocrates_nb.paths import DataPaths
from zocrates_nb.protocols import EventSink, NullEventSink
from zocrates_nb.quality.beir import BeirDataset, EvalDataError, load_beir, read_jsonl
from zocrates_nb.quality.beir_index import beir_records, open_eval_index
from zocrates_nb.quality.metrics import evaluate_run, mrr_at_k, recall_at_k

__all__ = [
    "BeirDataset",
    "load_beir",
    "beir_records",
    "open_eval_index",
    "run_rankings",
    "run_beir_eval",
    "load_note_questions",
    "run_notes_eval",
    "DEMO_QUESTIONS",
]

DEMO_QUESTIONS = Path(__file__).resolve().parents[1] / "library" / "demo" / "note_questions.jsonl"
_MODES = ("lexical", "dense", "hybrid")


def run_rankings(index: Any, queries: Mapping[str, str], mode: str, depth: int = 100) -> dict[str, list[str]]:
    """qid → ranked doc ids. Query vectors are computed in one batch (much faster than one by one)."""
    if mode not in _MODES:
        raise ZocratesError(f"Unknown mode {mode!r}.", hint=f"Use one of: {', '.join(_MODES)}.")
    qids = list(queries)
    vectors = index.embedder.embed([queries[q] for q in qids]) if mode != "lexical" else [None] * len(qids)
    return {
        qid: [h.key for h in index.search(queries[qid], k=depth, mode=mode, query_embedding=vec)]
        for qid, vec in zip(qids, vectors, strict=True)
    }


def run_beir_eval(
    dataset_dir: str | Path,
    split: str = "test",
    mode: str = "hybrid",
    *,
    paths: DataPaths | None = None,
    events: EventSink | None = None,
    search: Mapping[str, Any] | None = None,
    embedder: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """nDCG@10, Recall@100 and MRR@10 of one mode on one split (index cached per corpus hash)."""
    if mode not in _MODES:
        raise ZocratesError(f"Unknown mode {mode!r}.", hint=f"Use one of: {', '.join(_MODES)}.")
    started = time.perf_counter()
    paths = paths or DataPaths.resolve()
    dataset = load_beir(dataset_dir, split)
    index, built = open_eval_index(
        paths, dataset, vectors=mode != "lexical", search=search, embedder=embedder, progress=progress
    )
    try:
        run = run_rankings(index, dataset.queries, mode)
    finally:
        index.close()
    metrics = evaluate_run(run, dataset.qrels)
    seconds = round(time.perf_counter() - started, 2)
    result: dict[str, Any] = {
        **{name: round(value, 4) for name, value in metrics.items()},
        "mode": mode,
        "split": split,
        "queries": len(dataset.qrels),
        "seconds": seconds,
        "dataset": dataset.name,
        "index_built": built,
    }
    sink: EventSink = events if events is not None else NullEventSink()
    sink.emit("eval", **{k: v for k, v in result.items() if k != "index_built"}, latency_ms=round(seconds * 1000, 1))
    return result


# ---------------------------------------------------------------------------- note questions


def load_note_questions(path: str | Path | None = None, split: str | None = None) -> list[dict]:
    """``{"id", "query", "note_keys"[, "kind", "split"]}`` per line (the demo set by default).

    ``split`` ("dev" / "test") keeps only that part: tune on dev, report test. A question
    without a ``kind`` counts as "keyword"; one without a ``split`` belongs to both.
    """
    path = Path(path) if path else DEMO_QUESTIONS
    if not path.is_file():
        raise EvalDataError(
            f"No note-question file at {path}.",
            hint='Write one JSON object per line: {"id", "query", "note_keys": [KEY, ...]}.',
        )
    questions = list(read_jsonl(path))
    for q in questions:
        if not q.get("query") or not q.get("note_keys"):
            raise EvalDataError(
                f"Question {q.get('id')!r} in {path} lacks a query or note_keys.",
                hint="Every line needs a non-empty query and at least one note key.",
            )
    if split not in (None, "", "all"):
        splits = {q.get("split") for q in questions} - {None}
        if split not in splits:
            raise EvalDataError(
                f"No question in {path} belongs to split {split!r}.",
                hint=f"Use --split with one of: {', '.join(sorted(splits)) or '(none: drop --split)'}.",
            )
        questions = [q for q in questions if q.get("split") in (None, split)]
    return questions


def _summary(rows: list[tuple[float, float, float]]) -> dict:
    """(R@5, R@10, MRR@10) per question → their means, rounded, and the count."""
    n = len(rows)
    if not n:
        return {"recall@5": 0.0, "recall@10": 0.0, "mrr@10": 0.0, "queries": 0}
    return {
        "recall@5": round(sum(r[0] for r in rows) / n, 4),
        "recall@10": round(sum(r[1] for r in rows) / n, 4),
        "mrr@10": round(sum(r[2] for r in rows) / n, 4),
        "queries": n,
    }


def run_notes_eval(
    index: Any,
    questions: list[dict] | None = None,
    *,
    k: int = 5,
    mode: str = "hybrid",
    events: EventSink | None = None,
    notes_only: bool = False,
    split: str | None = None,
) -> dict:
    """Note Recall@k, Recall@10 and MRR@10, overall and per question kind.

    By default the search is unfiltered, so papers compete for the same slots as the agents
    see them; ``notes_only`` restricts it to notes (a diagnostic: is the note reachable at all?).
    """
    started = time.perf_counter()
    questions = questions if questions is not None else load_note_questions(split=split)
    filters = {"item_type": "note"} if notes_only else None
    per_question: list[tuple[float, float, float]] = []
    by_kind: dict[str, list[tuple[float, float, float]]] = {}
    misses = []
    for q in questions:
        ranking = [h.key for h in index.search(q["query"], k=max(k, 10), mode=mode, filters=filters)]
        relevance = {key: 1 for key in q["note_keys"]}
        row = (
            recall_at_k(ranking, relevance, k),
            recall_at_k(ranking, relevance, 10),
            mrr_at_k(ranking, relevance, 10),
        )
        per_question.append(row)
        by_kind.setdefault(str(q.get("kind") or "keyword"), []).append(row)
        if row[0] < 1.0:
            misses.append(
                {
                    "id": q.get("id"),
                    "kind": q.get("kind"),
                    "query": q["query"],
                    "expected": list(q["note_keys"]),
                    "got": ranking[:k],
                }
            )
    overall = _summary(per_question)
    n = len(questions)
    result = {
        f"recall@{k}": round(sum(r[0] for r in per_question) / n, 4) if n else 0.0,
        "recall@10": overall["recall@10"],
        "mrr": overall["mrr@10"],
        "queries": n,
        "mode": mode,
        "split": split or "all",
        "notes_only": notes_only,
        "per_kind": {kind: _summary(rows) for kind, rows in sorted(by_kind.items())},
        "misses": misses,
        "seconds": round(time.perf_counter() - started, 2),
        "dataset": "notes",
    }
    sink: EventSink = events if events is not None else NullEventSink()
    sink.emit(
        "eval",
        dataset="notes",
        split=result["split"],
        mode=mode,
        queries=n,
        **{f"recall@{k}": result[f"recall@{k}"], "mrr@10": result["mrr"]},
        seconds=result["seconds"],
        latency_ms=round(result["seconds"] * 1000, 1),
    )
    return result
