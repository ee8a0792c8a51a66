"""Warm search latency with the note lane on (default) and off (plain RRF), interleaved query by query.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_note_lane.py --cache /tmp/zc-scale-small/n2000-p1000x10-r400

``--cache`` is an index folder built by ``bench_search_scale.py`` (e.g. ``--notes 2000 --papers 1000
--queries 100 --cache /tmp/zc-scale-small``): its ``data`` directory is searched with 100 SciFact
claims, twice, alternating the order of the two configurations each round so load drifts hit both.
Prints p50/p95 in ms for ``HybridIndex.search`` with a precomputed query vector and in total.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
sys.path.insert(0, str(REPO))


def main() -> int:
    from zocrates_nb.index.embed.model import MiniLMEmbedder
    from zocrates_nb.index.hybrid import HybridIndex
    from zocrates_nb.paths import DataPaths

    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    lines = [json.loads(line)["text"] for line in open(SCIFACT / "queries.jsonl", encoding="utf-8")]
    queries = lines[::4][: args.queries]
    embedder = MiniLMEmbedder()
    paths = DataPaths(args.cache / "data")
    on = HybridIndex(paths, {}, embedder=embedder)
    off = HybridIndex(paths, {"search": {"note_lane": 0, "note_intent": 0, "parent_share": 0}}, embedder=embedder)
    vectors = embedder.embed(queries)
    for index in (on, off):  # warm both
        for query, vector in zip(queries[:10], vectors[:10], strict=True):
            index.search(query, k=10, query_embedding=vector)
    times: dict[str, list[float]] = {f"{n}_{w}": [] for n in ("on", "off") for w in ("given_vector", "total")}
    for round_ in range(2):
        order = [("on", on), ("off", off)] if round_ % 2 == 0 else [("off", off), ("on", on)]
        for query, vector in zip(queries, vectors, strict=True):
            for name, index in order:
                start = time.perf_counter()
                index.search(query, k=10, query_embedding=vector)
                times[f"{name}_given_vector"].append(time.perf_counter() - start)
                start = time.perf_counter()
                index.search(query, k=10)
                times[f"{name}_total"].append(time.perf_counter() - start)
    figures = {
        k: {"p50_ms": round(statistics.median(v) * 1000, 2), "p95_ms": round(sorted(v)[int(0.95 * len(v))] * 1000, 2)}
        for k, v in times.items()
    }
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
