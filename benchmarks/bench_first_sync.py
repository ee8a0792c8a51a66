"""The first sync of a 5,183-paper Zotero 9 library, against the peer's figures (issue 13 §2).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_first_sync.py [--papers N] [--keep DIR] [--skip-embed-only]
        [--zotero-dir DIR] [--peer-cmd 'COMMAND {zotero_dir} {work}'] [--rounds N] [--in-process-too]

Builds a Zotero 9 ``zotero.sqlite`` holding SciFact's abstracts as journal articles (title, abstract,
one author, a year; ../shared/data/scifact, evaluation data only; synthetic abstracts without it, said
in the output), then runs the real command a user runs, ``zocrates-nb sync --zotero-sqlite DB --json``,
in a fresh data directory as a child process, and reads its wall time, CPU time (user + system) and
peak RSS from the kernel (``wait4``). Then it embeds exactly the texts that sync embedded, with a warm
embedder and nothing else, so the pipeline's overhead over the embedder is its own figure. The embedder
alone moves by several per cent between runs on one machine, so ``--rounds N`` runs the pair N times in
turn, each sync in a fresh data directory, and prints the medians beside each round.
``--in-process-too`` adds, to each round, the same sync with its embedding process turned off (the
sync embeds in its own process, as it does below 500 documents): what index/embed/worker.py is worth.

The peer (zotero-mcp 0.15.1, ``update-db --fulltext`` on the same 5,183 papers and the same model) was
measured at 8 min 22 s wall and 718 s CPU near idle in issue 13, on another machine of this kind. CPUs
differ between machines (an int8 embedder runs 2.4x faster on one with AVX-512 VNNI), so ``--peer-cmd``
times the peer's own build in the same run, on the same ``zotero.sqlite``, the same way (``wait4``),
before our sync: ``{zotero_dir}`` is replaced by the Zotero data directory and ``{work}`` by a fresh
folder for its output. The peer is not part of this repository; install it yourself and pass the
command that runs its first full index build. Without ``--peer-cmd`` the ratios are against the
issue's figures. The load average is printed beside each figure because all of them move with it.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shlex
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
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


def _tree_rss_mb(root: int) -> float:
    """The resident memory of ``root`` and all its descendants now (Linux /proc), in MiB."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                    parent = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/statm", encoding="ascii") as fh:
                total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    return total / 2**20


def timed(argv: list[str]) -> tuple[dict, bytes]:
    """Run ``argv`` to its end; wall, CPU (user + system) and peak RSS from the kernel (``wait4``, which
    on Linux includes the children it waited for, the largest one's RSS), the peak of the whole process
    tree's RSS added up (sampled every 0.25 s: a sync's embedding process runs beside it), the load
    average before and after, and its output."""
    load = os.getloadavg()[0]
    peak_tree = [0.0]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=dict(os.environ))
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.wait(0.25):
                peak_tree[0] = max(peak_tree[0], _tree_rss_mb(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        sampling.set()
        sampler.join()
        out.seek(0), err.seek(0)
        output, errors = out.read(), err.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed ({status}): {errors.decode(errors='replace')[-2000:]}")
    figures = {
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "peak_tree_rss_mb": round(peak_tree[0]),
        "load_1min": [round(load, 2), round(os.getloadavg()[0], 2)],
    }
    return figures, output


#: ``zocrates-nb`` with the embedding process turned off (``--in-process-too``): the same sync, embedding in
#: its own process, to measure what the child process (index/embed/worker.py) is worth
IN_PROCESS = (
    "import sys; from zocrates_nb.index import consistency; "
    "consistency.WORKER_MIN_DOCUMENTS = consistency.WORKER_MIN_TEXTS = 10**12; "
    "from zocrates_nb.cli import main; raise SystemExit(main(sys.argv[1:]))"
)


def timed_sync(db: Path, data_dir: Path, *, in_process: bool = False) -> dict:
    cli = [sys.executable, "-c", IN_PROCESS] if in_process else [str(Path(sys.executable).with_name("zocrates-nb"))]
    figures, out = timed([*cli, "--data-dir", str(data_dir), "sync", "--zotero-sqlite", str(db), "--json"])
    return {**figures, "counts": json.loads(out).get("counts")}


def timed_peer(command: str, zotero_dir: Path, work: Path) -> dict:
    """The peer's first full index build, timed like ours (``--peer-cmd``)."""
    work.mkdir(parents=True, exist_ok=False)
    figures, _ = timed(
        ["/bin/sh", "-c", command.format(zotero_dir=shlex.quote(str(zotero_dir)), work=shlex.quote(str(work)))]
    )
    return {**figures, "command": command}


def embedded_texts(data_dir: Path) -> list[str]:
    """The texts the dense phase embedded: each chunk as the index builds its embedding input."""
    from zocrates_nb.index.records import embedding_text

    with sqlite3.connect(data_dir / "conversion_meta.db") as conn:
        rows = conn.execute("SELECT title, text, context FROM chunks ORDER BY id").fetchall()
    return [embedding_text(title or "", text or "", context or "") for title, text, context in rows]


def embed_only(texts: list[str]) -> dict:
    from zocrates_nb.index.embed.model import MiniLMEmbedder

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
    parser.add_argument(
        "--rounds", type=int, default=1, help="sync then embedder alone, N times in turn (medians; default 1)"
    )
    parser.add_argument(
        "--in-process-too",
        action="store_true",
        help="in each round, also time the sync with its embedding process turned off (embedding in the sync's own)",
    )
    parser.add_argument("--zotero-dir", metavar="DIR", help="use DIR/zotero.sqlite instead of building a library")
    parser.add_argument(
        "--peer-cmd", metavar="COMMAND", help="time the peer's first index build on the same library first"
    )
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zc-bench-first-sync-"))
    root.mkdir(parents=True, exist_ok=bool(not args.keep))
    if args.zotero_dir:
        zotero_dir = Path(args.zotero_dir).resolve()
        with sqlite3.connect(f"file:{zotero_dir / 'zotero.sqlite'}?mode=ro", uri=True) as conn:
            count = conn.execute("SELECT COUNT(*) FROM items").fetchone()[0]
        library = f"{zotero_dir / 'zotero.sqlite'} ({count} items)"
    else:
        rows, source = papers(args.papers)
        zotero_dir = root
        build_library(zotero_dir / "zotero.sqlite", rows)
        library = f"{len(rows)} papers ({source}), Zotero 9 schema"
    peer = {"wall_s": PEER_WALL_S, "cpu_s": PEER_CPU_S, "measured": "in issue 13, on another machine"}
    if args.peer_cmd:
        peer = timed_peer(args.peer_cmd, zotero_dir, root / "peer")
        print(json.dumps({"peer": peer}), file=sys.stderr, flush=True)
    rounds = []
    for number in range(args.rounds):  # sync, then the embedder alone, interleaved: both see the same machine
        data_dir = root / ("data" if number == 0 else f"data-{number + 1}")
        sync = timed_sync(zotero_dir / "zotero.sqlite", data_dir)
        print(json.dumps({"round": number + 1, "sync": sync}), file=sys.stderr, flush=True)
        entry: dict = {"sync": sync, "data_dir": str(data_dir)}
        if args.in_process_too:
            entry["sync_in_process"] = timed_sync(
                zotero_dir / "zotero.sqlite", root / f"data-in-process-{number + 1}", in_process=True
            )
            print(
                json.dumps({"round": number + 1, "sync_in_process": entry["sync_in_process"]}),
                file=sys.stderr,
                flush=True,
            )
        if not args.skip_embed_only:
            sys.path.insert(0, str(REPO))
            alone = embed_only(embedded_texts(data_dir))
            entry["embedder_alone"] = alone
            entry["pipeline_overhead_pct"] = round(100 * (sync["wall_s"] - alone["seconds"]) / alone["seconds"], 1)
            entry["pipeline_overhead_cpu_pct"] = round(100 * (sync["cpu_s"] - alone["cpu_s"]) / alone["cpu_s"], 1)
            print(json.dumps({"round": number + 1, "embedder_alone": alone}), file=sys.stderr, flush=True)
        rounds.append(entry)
    wall = statistics.median(r["sync"]["wall_s"] for r in rounds)
    cpu = statistics.median(r["sync"]["cpu_s"] for r in rounds)
    result = {
        "library": library,
        **rounds[0],
        "peer": peer,
        "ratio_wall_vs_peer": round(wall / peer["wall_s"], 2),
        "ratio_cpu_vs_peer": round(cpu / peer["cpu_s"], 2),
    }
    if args.in_process_too:
        result["median_sync_in_process_wall_s"] = statistics.median(r["sync_in_process"]["wall_s"] for r in rounds)
        result["median_sync_in_process_cpu_s"] = statistics.median(r["sync_in_process"]["cpu_s"] for r in rounds)
    if len(rounds) > 1:
        result["rounds"] = rounds
        result["median_sync_wall_s"], result["median_sync_cpu_s"] = wall, cpu
        if not args.skip_embed_only:
            result["median_overhead_pct"] = statistics.median(r["pipeline_overhead_pct"] for r in rounds)
            result["median_overhead_cpu_pct"] = statistics.median(r["pipeline_overhead_cpu_pct"] for r in rounds)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
