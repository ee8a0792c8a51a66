"""Corpus speed with 10,000 notes: first sync, unchanged sync, fast-path resolve, read_document.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_corpus.py [--notes 10000] [--keep DIR]
Builds an embedded demo library of N generated notes in a temporary data directory (no index),
then prints figures. Targets: unchanged sync of 10,000 notes < 1 s; fast path p50 < 0.1 ms.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from zocrates_nb.corpus.sync import Corpus
from zocrates_nb.library.base import KEY_ALPHABET
from zocrates_nb.library.local import DemoLibrary
from zocrates_nb.paths import DataPaths

TOPICS = [
    "spatial transcriptomics",
    "cell2location",
    "tumour microenvironment",
    "Harmony integration",
    "scVI latent space",
    "RNA velocity",
    "Visium HD bins",
    "CAF subtypes",
    "T cell exclusion",
]


def key_for(i: int) -> str:
    digits = []
    for _ in range(8):
        i, r = divmod(i, len(KEY_ALPHABET))
        digits.append(KEY_ALPHABET[r])
    return "".join(reversed(digits))


def note_html(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    paragraphs = "".join(
        f"<p>Note {i} paragraph {p}: what we learnt about <strong>{topic}</strong> on slide {p + i % 13}, "
        f"with thresholds, caveats and the next experiment to run for the lymph node project.</p>\n"
        for p in range(1 + i % 6)
    )
    return f'<div data-schema-version="9"><h1>{topic.title()} note {i}</h1>\n{paragraphs}</div>'


def build_content(folder: Path, n: int) -> None:
    (folder / "notes").mkdir(parents=True)
    (folder / "collections.json").write_text(json.dumps([{"key": "BENCHCLL", "name": "Bench"}]))
    (folder / "papers.json").write_text("[]")
    notes = []
    for i in range(n):
        key = key_for(1_000_000 + i)
        (folder / "notes" / f"{key}.html").write_text(note_html(i))
        notes.append({"key": key, "collections": ["BENCHCLL"] if i % 2 else []})
    (folder / "notes.json").write_text(json.dumps(notes))


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--reads", type=int, default=20_000)
    parser.add_argument("--keep", type=Path, default=None, help="use/keep this data directory")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="zocrates-bench-"))
    paths = DataPaths(root).ensure()

    content = root / "bench-content"
    if not content.exists():
        started = time.perf_counter()
        build_content(content, args.notes)
        print(f"generated {args.notes:,} note files in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    library = DemoLibrary(paths.demo_library, content_dir=content)
    print(f"demo library opened/seeded in {time.perf_counter() - started:.1f} s")

    corpus = Corpus(paths, library)
    report = corpus.sync()
    print(
        f"first sync: {report.summary().splitlines()[0]} "
        f"({report.seconds / max(1, report.counts['new'] + report.counts['changed']) * 1000:.2f} ms/new note)"
    )

    times = []
    for _ in range(5):
        report = corpus.sync()
        times.append(report.seconds)
    print(
        f"unchanged sync of {report.counts['unchanged']:,} notes: median {statistics.median(times):.3f} s, "
        f"best {min(times):.3f} s (target < 1 s)"
    )

    keys = corpus.keys("note")
    rng = random.Random(7)
    sample = [rng.choice(keys) for _ in range(args.reads)]
    for key in sample[:1000]:
        corpus._resolve_bundle_dir(key)  # warm caches
    us = []
    for key in sample:
        t0 = time.perf_counter()
        corpus._resolve_bundle_dir(key)
        us.append((time.perf_counter() - t0) * 1e6)
    print(
        f"fast path _resolve_bundle_dir over {len(keys):,} notes: p50 {pct(us, 0.5):.1f} µs, "
        f"p95 {pct(us, 0.95):.1f} µs, p99 {pct(us, 0.99):.1f} µs (target p50 < 100 µs)"
    )
    us = []
    for key in sample[:5000]:
        t0 = time.perf_counter()
        corpus.read_document(key)
        us.append((time.perf_counter() - t0) * 1e6)
    print(f"read_document (fast path + consistent bundle read): p50 {pct(us, 0.5):.1f} µs, p95 {pct(us, 0.95):.1f} µs")
    key = keys[len(keys) // 2]
    library.update_note(key, note_html(3) + "<p>edited</p>")
    t0 = time.perf_counter()
    corpus.read_document(key)
    print(f"re-materialise on read after an edit: {(time.perf_counter() - t0) * 1000:.2f} ms")
    print(f"data directory: {root}")


if __name__ == "__main__":
    main()
