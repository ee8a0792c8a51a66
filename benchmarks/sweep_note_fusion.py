"""Sweep the note-lane fusion settings on the demo questions, on one synced index.

Every setting is a ``config["search"]`` override given to a fresh ``HybridIndex`` over the
same data directory and the same embedder; the questions are embedded once, so nothing is
re-embedded per setting and one setting costs only its searches (about 2 s for the dev split).
Tune on dev; look at test once per candidate, at the end (``--split test --only NAME``).

    zocrates-nb --data-dir DIR sync
    PYTHONPATH=. python benchmarks/sweep_note_fusion.py --data-dir DIR                 # one-at-a-time sweep on dev
    PYTHONPATH=. python benchmarks/sweep_note_fusion.py --data-dir DIR --grid          # small grid on dev
    PYTHONPATH=. python benchmarks/sweep_note_fusion.py --data-dir DIR --split test --setting '{"note_lane": 0.5}'
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Iterable, Mapping
from typing import Any

from zocrates_nb.index.hybrid import HybridIndex
from zocrates_nb.quality.evaluate import load_note_questions
from zocrates_nb.quality.metrics import mrr_at_k, recall_at_k
from zocrates_nb.workbench.core import Workbench

#: one-at-a-time values around the defaults (each line changes one setting)
ONE_AT_A_TIME: dict[str, tuple[Any, ...]] = {
    "note_lane": (0.0, 0.1, 0.5, 1.0, 2.0),
    "note_intent": (0.0, 0.25, 1.0, 2.0),
    "lane_depth": (1, 2, 5, 10),
    "parent_share": (0.0, 0.05, 0.2),
    "link_share": (0.0, 0.1, 0.3, 0.5),
    "paper_window": (0, 3),
    "rrf_k": (5, 10, 40, 60),
    "prf_notes": (2, 3, 5),
}

GRID: dict[str, tuple[Any, ...]] = {
    "note_lane": (0.25, 0.5, 1.0),
    "note_intent": (0.25, 0.5),
    "lane_depth": (3, 5),
    "parent_share": (0.1, 0.2),
    "rrf_k": (20, 40),
}


def score(index: HybridIndex, questions: list[dict], vectors: Mapping[str, Any]) -> dict[str, Any]:
    """R@5, R@10, MRR@10 overall and per kind; papers compete (as the agents see them)."""
    rows: dict[str, list[tuple[float, float, float]]] = {}
    for q in questions:
        ranking = [h.key for h in index.search(q["query"], k=10, query_embedding=vectors[q["id"]])]
        relevant = {key: 1 for key in q["note_keys"]}
        row = (recall_at_k(ranking, relevant, 5), recall_at_k(ranking, relevant, 10), mrr_at_k(ranking, relevant, 10))
        for group in ("all", q.get("kind") or "keyword"):
            rows.setdefault(group, []).append(row)
    return {
        group: tuple(round(sum(r[i] for r in got) / len(got), 3) for i in range(3)) + (len(got),)
        for group, got in rows.items()
    }


def settings(args: argparse.Namespace) -> Iterable[tuple[str, dict[str, Any]]]:
    if args.setting:
        yield "given", json.loads(args.setting)
        return
    yield "defaults", {}
    if args.grid:
        names = list(GRID)
        for values in itertools.product(*(GRID[n] for n in names)):
            setting = dict(zip(names, values, strict=True))
            yield " ".join(f"{n}={v}" for n, v in setting.items()), setting
        return
    for name, values in ONE_AT_A_TIME.items():
        for value in values:
            yield f"{name}={value}", {name: value}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, help="a data directory synced with the demo library")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--grid", action="store_true", help="a small grid instead of one setting at a time")
    parser.add_argument("--setting", help="one JSON object of search settings, e.g. '{\"note_lane\": 0.5}'")
    args = parser.parse_args()
    wb = Workbench(args.data_dir, auto_sync=False)
    questions = load_note_questions(split=args.split)
    embedder = wb.index.embedder
    vectors = dict(zip((q["id"] for q in questions), embedder.embed([q["query"] for q in questions]), strict=True))
    base = wb.config.read()
    kinds = sorted({q.get("kind") or "keyword" for q in questions})
    print(f"{args.split}: {len(questions)} questions; R@5 / MRR@10 overall, then per kind: {', '.join(kinds)}")
    for name, setting in settings(args):
        config = {**base, "search": {**(base.get("search") or {}), **setting}}
        index = HybridIndex(wb.paths, config, embedder=embedder)
        try:
            got = score(index, questions, vectors)
        finally:
            index.close()
        cells = "  ".join(f"{got[kind][0]:.3f}/{got[kind][2]:.3f}" for kind in kinds)
        print(f"{name:58s} {got['all'][0]:.3f} {got['all'][1]:.3f} {got['all'][2]:.3f}   {cells}", flush=True)
    wb.close()


if __name__ == "__main__":
    main()
