"""The collection filter's lexical side: the indexed id set against the JSON parse it replaced (issue 13 §4).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_collection_filter.py [--cache DIR] [--queries 30] [--rounds 3]

Runs on the index that ``benchmarks/bench_search_scale.py`` builds and caches (10,000 notes + 50,000
paper chunks; run that first, with the same ``--cache``). For each SciFact train query it times
``lexical.lexical_search`` with the filter ``item_type=note, collection=Reading`` (1,429 chunks) twice,
interleaved: through today's clause (``chunk_collections``) and through the clause it replaced (a
``json_each`` over every matching chunk's stored collections). Both must return the same rows. The
ratio of the two medians is the figure to read: both run in one process at the same moment, so it
holds whatever else the machine is doing; the absolute times and the load average are printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
FILTERS = {"item_type": "note", "collection": "Reading"}


def json_each_clause(filters, row_column: str = "c") -> tuple[str, list]:
    """The filter clause as it was before ``chunk_collections`` (the reference)."""
    clauses, params = [], []
    if filters.get("item_type"):
        clauses.append("c.kind = ?" if filters["item_type"] in ("note", "paper") else "c.item_type = ?")
        params.append(filters["item_type"])
    if filters.get("collection"):
        clauses.append("EXISTS (SELECT 1 FROM json_each(c.collections) WHERE value = ?)")
        params.append(filters["collection"])
    return " AND ".join(clauses), params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/zc-scale"))
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from zocrates_nb.index.lexical import fts
    from zocrates_nb.index.lexical import split as lexical

    dbs = sorted(args.cache.glob("n*/data/conversion_meta.db"))
    if not dbs:
        raise SystemExit(f"no index under {args.cache}: run benchmarks/bench_search_scale.py --cache {args.cache}")
    conn = sqlite3.connect(f"file:{dbs[0]}?mode=ro", uri=True)
    if not fts.schema_ready(conn):
        raise SystemExit(f"{dbs[0]} predates chunk_collections: delete {args.cache} and run bench_search_scale.py")
    lines = [json.loads(line)["text"] for line in open(SCIFACT / "queries.jsonl", encoding="utf-8")]
    queries = lines[::4][: args.queries]
    today = fts._filter_sql
    timings: dict[str, list[float]] = {"id_set": [], "json_each": []}
    load = os.getloadavg()[0]
    for _ in range(args.rounds):
        for q in queries:
            results = {}
            for name, clause in (("id_set", today), ("json_each", json_each_clause)):
                fts._filter_sql = clause
                frequencies = lexical.DocumentFrequencies()
                frequencies.lookup(conn, fts.query_terms(q))  # warm the frequency cache: time the search
                frequencies.filtered_rows(conn, FILTERS)
                started = time.perf_counter()
                results[name] = lexical.lexical_search(conn, q, 100, FILTERS, frequencies)
                timings[name].append(time.perf_counter() - started)
            fts._filter_sql = today
            assert results["id_set"] == results["json_each"], q
    p50 = {name: statistics.median(values) * 1000 for name, values in timings.items()}
    print(
        json.dumps(
            {
                "index": str(dbs[0].parent),
                "filter": FILTERS,
                "passing_chunks": fts.count_filtered(conn, FILTERS),
                "searches": len(timings["id_set"]),
                "lexical_p50_ms": {name: round(value, 2) for name, value in p50.items()},
                "ratio_id_set_vs_json_each": round(p50["id_set"] / p50["json_each"], 3),
                "same_results": True,
                "load_1min": [round(load, 2), round(os.getloadavg()[0], 2)],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
