"""The first sync of a 5,183-paper Zotero 9 library, against the peer's figures (issue 13 §2).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_first_sync.py [--papers N] [--keep DIR] [--skip-embed-only]

Builds a Zotero 9 ``zotero.sqlite`` holding SciFact's abstracts as journal articles (title, abstract,
one author, a year; ../shared/data/scifact, evaluation data only; synthetic abstracts without it, said
in the output), then runs the real command a user runs, ``zocrates-nb sync --zotero-sqlite DB --json``,
in a fresh data directory as a child process, and reads its wall time, CPU time (user + system) and
peak RSS from the kernel (``wait4``). Then it embeds exactly the texts that sync embedded, with a warm
embedder and nothing else, so the pipeline's overhead over the embedder is its own figure.

The peer (zotero-mcp 0.15.1, ``update-db --fulltext`` on the same 5,183 papers and the same model) was
measured at 8 min 22 s wall and 718 s CPU near idle on this kind of machine (issue 13); the ratios
printed are against those figures, and the load average is printed beside them because both move
with it. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl.gz"
PEER_WALL_S = 8 * 60 + 22
PEER_CPU_S = 718.0


def papers(limit: int) -> tuple[list[tuple[str, str]], str]:
    if SCIFACT.exists():
        out = []
        with gzip.open(SCIFACT, "rt", encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                out.append((row["title"] or row["_id"], row["text"]))
                if len(out) == limit:
                    break
        return out, "SciFact abstracts"
    vocab = "retrieval note paper model token graph index search agent query vector fusion cell".split()
    return [
        (f"Paper {i}", " ".join(vocab[(i * 7 + j * 3) % len(vocab)] for j in range(200))) for i in range(limit)
    ], "synthetic abstracts (SciFact not found)"


def build_library(path: Path, rows: list[tuple[str, str]]) -> None:
    sys.path.insert(0, str(REPO))
    from bench_corpus import key_for as zotero_key  # a valid 8-character Zotero key per number

    from tests.fakes.zotero_sqlite import ZoteroDB

    with ZoteroDB(path, "9") as db:
        db.conn.execute("BEGIN")
        for i, (title, abstract) in enumerate(rows):
            db.add_paper(
                zotero_key(1000 + i),
                title,
                creators=[("A.", f"Author{i % 997}", "author")],
                date=str(1990 + i % 35),
                abstract=abstract,
            )
        db.conn.execute("COMMIT")


def timed_sync(db: Path, data_dir: Path) -> dict:
    cli = Path(sys.executable).with_name("zocrates-nb")
    argv = [str(cli), "--data-dir", str(data_dir), "sync", "--zotero-sqlite", str(db), "--json"]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    out, err = proc.stdout.read(), proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"sync failed ({status}): {err.decode()[-2000:]}")
    report = json.loads(out)
    return {
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "counts": report.get("counts"),
        "load_1min": [round(load, 2), round(os.getloadavg()[0], 2)],
    }


def embedded_texts(data_dir: Path) -> list[str]:
    """The texts the dense phase embedded: each chunk as the index builds its embedding input."""
    from zocrates_nb.index.records import embedding_text

    with sqlite3.connect(data_dir / "conversion_meta.db") as conn:
        rows = conn.execute("SELECT title, text, context FROM chunks ORDER BY id").fetchall()
    return [embedding_text(title or "", text or "", context or "") for title, text, context in rows]


def embed_only(texts: list[str]) -> dict:
    from zocrates_nb.index.embed import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])
    unique = sorted(set(texts))
    cpu0, started = time.process_time(), time.perf_counter()
    embedder.embed(unique)
    seconds = time.perf_counter() - started
    return {
        "texts": len(texts),
        "unique_texts": len(unique),
        "seconds": round(seconds, 1),
        "cpu_s": round(time.process_time() - cpu0, 1),
        "texts_per_s": round(len(unique) / seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=5183)
    parser.add_argument("--keep", metavar="DIR", help="build in DIR (must not exist) and keep it")
    parser.add_argument("--skip-embed-only", action="store_true", help="time only the sync")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zc-bench-first-sync-"))
    root.mkdir(parents=True, exist_ok=bool(not args.keep))
    rows, source = papers(args.papers)
    db = root / "zotero.sqlite"
    build_library(db, rows)
    data_dir = root / "data"
    sync = timed_sync(db, data_dir)
    print(json.dumps({"sync": sync}), file=sys.stderr, flush=True)  # before the long embedder-alone pass
    result = {
        "library": f"{len(rows)} papers ({source}), Zotero 9 schema",
        "sync": sync,
        "peer": {"wall_s": PEER_WALL_S, "cpu_s": PEER_CPU_S},
        "ratio_wall_vs_peer": round(sync["wall_s"] / PEER_WALL_S, 2),
        "ratio_cpu_vs_peer": round(sync["cpu_s"] / PEER_CPU_S, 2),
        "data_dir": str(data_dir),
    }
    if not args.skip_embed_only:
        sys.path.insert(0, str(REPO))
        alone = embed_only(embedded_texts(data_dir))
        result["embedder_alone"] = alone
        result["pipeline_overhead_pct"] = round(100 * (sync["wall_s"] - alone["seconds"]) / alone["seconds"], 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
