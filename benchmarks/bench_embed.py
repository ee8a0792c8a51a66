"""Embedder throughput and cold start (issue 4 §6: ~20 chunks of 80 words per second on 2 cores).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_embed.py [--n 200] [--batch 32]

Chunks are the first 80 words of SciFact abstracts (../shared/data/scifact, evaluation data only);
without that file, synthetic 80-word chunks are used (said in the output). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl.gz"

COLD = (
    "import time; t=time.perf_counter(); from zocrates_nb.index.embed import MiniLMEmbedder; "
    "e=MiniLMEmbedder(); e.embed(['hello world']); print(time.perf_counter()-t)"
)


def chunks_80_words(n: int) -> tuple[list[str], str]:
    if SCIFACT.exists():
        out = []
        with gzip.open(SCIFACT, "rt", encoding="utf-8") as fh:
            for line in fh:
                words = (json.loads(line)["text"]).split()
                if len(words) >= 80:
                    out.append(" ".join(words[:80]))
                if len(out) == n:
                    break
        return out, "SciFact abstracts, first 80 words"
    vocab = "retrieval note paper model token graph index search agent query vector fusion".split()
    return [" ".join(vocab[(i * 7 + j) % len(vocab)] for j in range(80)) for i in range(n)], "synthetic"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from zocrates_nb.index.embed import MiniLMEmbedder, ensure_model

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        ensure_model(Path(tmp) / "m")
        build_s = time.perf_counter() - started

    ensure_model()  # the real cache, so the cold-start run does not build
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cold = [
        float(
            subprocess.run(
                [sys.executable, "-c", COLD], capture_output=True, text=True, env=env, check=True
            ).stdout.strip()
        )
        for _ in range(2)
    ]

    texts, source = chunks_80_words(args.n)
    embedder = MiniLMEmbedder(batch_size=args.batch)
    tokens = sum(len(t) for t in embedder.tokenize(texts)) / len(texts)
    embedder.embed(texts[:8])  # warm-up
    started, cpu_started = time.perf_counter(), time.process_time()
    embedder.embed(texts)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    threads = len(os.sched_getaffinity(0))
    started = time.perf_counter()
    for q in ["hybrid retrieval with reciprocal rank fusion"] * 20:
        embedder.embed([q])
    query_ms = (time.perf_counter() - started) / 20 * 1000
    print(
        json.dumps(
            {
                "chunks": len(texts),
                "source": source,
                "mean_tokens": round(tokens, 1),
                "batch": args.batch,
                "threads": threads,
                "chunks_per_s": round(len(texts) / seconds, 1),
                "cpu_s": round(cpu_seconds, 1),  # with load_avg: tells a contended run from a slow one
                "load_avg_1m": round(os.getloadavg()[0], 1),
                "ms_per_chunk": round(seconds / len(texts) * 1000, 1),
                "query_embed_ms": round(query_ms, 1),
                "cold_start_s": [round(c, 2) for c in cold],
                "build_onnx_s": round(build_s, 1),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
