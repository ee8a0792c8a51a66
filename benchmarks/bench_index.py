"""Index throughput: the whole sync pipeline in chunks/s against the embedder alone (issue 4 §6).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_index.py [--keep DIR]

Syncs the embedded demo library into a fresh data directory (convert → OKF bundles → chunk →
FTS5 rows in one transaction → embed → Chroma upsert under the lock), then embeds the very same
chunk texts with a warm embedder and nothing else. The difference is what the pipeline costs on
top of embedding. Prints one JSON object (and the 1-minute load average: the figures are only
comparable at similar load).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", metavar="DIR", help="build in DIR (must not exist) and keep it")
    args = parser.parse_args()

    from zocrates_nb.index.embed.model import MiniLMEmbedder
    from zocrates_nb.index.records import embedding_text
    from zocrates_nb.workbench.core import Workbench

    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zc-bench-index-")) / "data"
    load_before = os.getloadavg()[0]
    wb = Workbench(root, auto_sync=False)
    wb.index.embedder.embed(["warm up"])  # model load is not indexing,
    wb.index.vectors.count()  # nor importing chromadb and opening the store
    started = time.perf_counter()
    report = wb.sync(progress=False)
    sync_s = time.perf_counter() - started
    stats = wb.index.stats()
    wb.close()

    with sqlite3.connect(root / "conversion_meta.db") as conn:
        texts = [
            embedding_text(title or "", text or "")
            for title, text in conn.execute("SELECT title, text FROM chunks ORDER BY id")
        ]
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])
    started = time.perf_counter()
    embedder.embed(texts)
    embed_s = time.perf_counter() - started

    chunks = len(texts)
    print(
        json.dumps(
            {
                "documents": stats["documents"],
                "chunks": chunks,
                "failed": report.counts.get("failed", 0),
                "sync_seconds": round(sync_s, 2),
                "pipeline_chunks_per_s": round(chunks / sync_s, 2),
                "embed_only_seconds": round(embed_s, 2),
                "embed_only_chunks_per_s": round(chunks / embed_s, 2),
                "pipeline_overhead_pct": round(100 * (sync_s - embed_s) / embed_s, 1),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                "data_dir": str(root),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
