"""Embedder throughput and cold start, int8 (the default) against the float32 reference graph.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_embed.py [--n 200] [--batch 32] [--full] [--per-core-rounds 3]

Chunks are the first 80 words of SciFact abstracts (../shared/data/scifact, evaluation data only),
or with ``--full`` whole abstracts with their titles (truncated to 256 tokens, like a sync's chunks);
without that file, synthetic chunks are used (said in the output). The int8 and float32 figures
come from the same run and texts, with their ratio and the mean cosine between their vectors.
``per_core`` compares the two graphs' kernels on their own: each text alone on one single-threaded
session (no padding for either), rounds interleaved, best round kept. On AVX2 without VNNI they
run at the same speed (13.0 against 13.3 texts/s on Zen 3), on AVX-512 VNNI int8 is far ahead: the
figure that says whether a CPU can make a first sync faster than its float32 arithmetic allows.
Prints one JSON object.
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
    "import time; t=time.perf_counter(); from zocrates_nb.index.embed.model import MiniLMEmbedder; "
    "e=MiniLMEmbedder(); e.embed(['hello world']); print(time.perf_counter()-t)"
)


def chunks_80_words(n: int, full: bool = False) -> tuple[list[str], str]:
    if SCIFACT.exists():
        out = []
        with gzip.open(SCIFACT, "rt", encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                if full:
                    out.append(f"{row['title']}\n{row['text']}")
                    if len(out) == n:
                        return out, "SciFact titles and abstracts"
                    continue
                words = row["text"].split()
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
    parser.add_argument("--batch", type=int, default=32, help="float32 batch size (int8 runs each text alone)")
    parser.add_argument("--full", action="store_true", help="whole abstracts with titles instead of 80 words")
    parser.add_argument("--per-core-rounds", type=int, default=3, help="rounds of the one-core comparison (0: skip)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from zocrates_nb.index.embed.model import MiniLMEmbedder, ensure_model

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

    texts, source = chunks_80_words(args.n, args.full)
    runs, vectors = {}, {}
    for precision in ("int8", "float32"):
        embedder = MiniLMEmbedder(batch_size=args.batch, precision=precision)
        embedder.embed(texts[:8])  # warm-up (int8: makes its per-core sessions)
        started, cpu_started = time.perf_counter(), time.process_time()
        vectors[precision] = embedder.embed(texts)
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
        started = time.perf_counter()
        for q in ["hybrid retrieval with reciprocal rank fusion"] * 20:
            embedder.embed([q])
        runs[precision] = {
            "chunks_per_s": round(len(texts) / seconds, 1),
            "seconds": round(seconds, 2),
            "cpu_s": round(cpu_seconds, 1),  # with load_avg: tells a contended run from a slow one
            "ms_per_chunk": round(seconds / len(texts) * 1000, 1),
            "query_embed_ms": round((time.perf_counter() - started) / 20 * 1000, 1),
        }
    tokens = sum(len(t) for t in embedder.tokenize(texts)) / len(texts)
    per_core = one_core_kernels(MiniLMEmbedder, texts, args.per_core_rounds) if args.per_core_rounds > 0 else None
    threads = len(os.sched_getaffinity(0))
    agreement = (vectors["int8"] * vectors["float32"]).sum(axis=1)
    print(
        json.dumps(
            {
                "chunks": len(texts),
                "source": source,
                "mean_tokens": round(tokens, 1),
                "float32_batch": args.batch,
                "threads": threads,
                "load_avg_1m": round(os.getloadavg()[0], 1),
                **{f"{p}": r for p, r in runs.items()},
                "int8_speedup_wall": round(runs["float32"]["seconds"] / runs["int8"]["seconds"], 2),
                "int8_speedup_cpu": round(runs["float32"]["cpu_s"] / max(runs["int8"]["cpu_s"], 1e-9), 2),
                "cosine_int8_vs_float32": {
                    "mean": round(float(agreement.mean()), 4),
                    "min": round(float(agreement.min()), 4),
                },
                "per_core": per_core,
                "cold_start_s": [round(c, 2) for c in cold],
                "build_onnx_s": round(build_s, 1),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0),
            },
            indent=1,
        )
    )


def one_core_kernels(embedder_class, texts: list[str], rounds: int) -> dict:
    """Texts per second on one core for each graph, each text alone (float32 in batches of one),
    the rounds interleaved so a change in the machine's load touches both alike."""
    embedders = {
        "int8": embedder_class(threads=1),
        "float32": embedder_class(threads=1, batch_size=1, precision="float32"),
    }
    best = dict.fromkeys(embedders, float("inf"))
    for _ in range(rounds):
        for precision, embedder in embedders.items():
            started = time.perf_counter()
            embedder.embed(texts)
            best[precision] = min(best[precision], time.perf_counter() - started)
    return {
        "texts_per_s_int8": round(len(texts) / best["int8"], 1),
        "texts_per_s_float32": round(len(texts) / best["float32"], 1),
        "int8_speedup": round(best["float32"] / best["int8"], 2),
        "rounds": rounds,
    }


if __name__ == "__main__":
    main()
