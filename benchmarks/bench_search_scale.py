"""Search latency at 10,000 notes + 50,000 paper chunks, through the product path (issue 4 §6).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_search_scale.py [--queries 200] [--cache /tmp/zc-scale]
        [--notes 10000 --papers 5000 --chunks-per-paper 10] [--server]

The sizes are flags: ``--notes 0 --papers 20000 --chunks-per-paper 15`` is the 20,000-paper full-text
library (300,000 chunks; the build takes about 15 min on 2 cores, most of it vector inserts).
``--server`` repeats the end-to-end searches through Chroma's own server (``chroma run --path`` on the
same store, ``config["vectors"] = {"mode": "http", ...}``), the lab's scale-out path, and counts how
many queries return the same top-10 documents as the in-process store.

Target: hybrid search p50 < 30 ms *with* query embedding. What is timed, per query (p50/p95 in ms):

- ``query_embed``: ``MiniLMEmbedder.embed([q])`` alone;
- ``fts_top100``: ``lexical.lexical_search`` (the lexical retriever, depth 100) alone, on one connection and
  without the share cache (the split ranking, index/lexical/split.py), and the rows it ranked; ``fts_plan_top100``:
  the earlier one-query plan that scores every word twice; ``fts_plain_or_top100``: the plain OR query every
  row of every word is ranked in (the oldest path), for comparison;
- ``vector_top100``: ``VectorStore.query`` (depth 100) alone, with the lock and generation check;
- ``lexical`` / ``dense``: ``HybridIndex.search`` in that mode (dense with a precomputed vector);
- ``hybrid_given_vector``: ``HybridIndex.search`` with a precomputed query vector;
- ``hybrid_total``: ``HybridIndex.search(q)`` — embedding, both retrievers, RRF, collapse, provenance
  (FTS on a worker thread beside the embedding; ``hybrid_total_serial`` with ``{"parallel": false}``), the
  first search of each measured query, back to back; ``hybrid_total_paced``: other claims, each asked when the
  share cache's thread is idle (a user reading the answers). ``--warm-up N`` first asks N other claims (a kernel
  that has answered questions before); ``--impact-postings 0`` turns the share cache off; ``impacts`` reports how
  many everyday words searches found cached;
- ``search_corpus``: ``LibraryTools.search_corpus(q)`` (hybrid_total + evidence text + diagnostics event);
- ``hybrid_filtered_notes`` / ``hybrid_filtered_collection``: ``HybridIndex.search`` with ``item_type=note``
  (10,000 chunks) / plus ``collection=Reading`` (1,429 chunks), and ``vector_top100_filtered`` for the latter
  (Chroma's own ``where`` filter, which the search no longer uses: see index/filtered.py);
  ``dense_filtered_*`` / ``lexical_filtered_*``: the two sides of those searches alone (dense with a given
  vector); ``hybrid_filtered_parent``: ``parent_key`` of one paper (the synthetic notes have no parent, so
  this times a filter that passes nothing: the empty-set shortcut);
- ``reopen_after_foreign_write``: the first query after another process wrote (the store reloads from disk).

What is real and what is synthetic (embedding 60,000 chunks would take about an hour on 2 cores):

- text: real SciFact abstracts (5,183), reused round-robin under distinct Zotero-style keys: 10,000 short notes
  (the first 40–120 words of an abstract, one chunk each) and 5,000 papers of 10 chunks each, written through
  ``HybridIndex.index_records`` (the product's FTS5 schema, provenance rows and chunk ids);
- vectors: ``--real`` (400) real MiniLM embeddings of SciFact passages; each stored vector is one of them plus
  Gaussian noise (sigma 0.03 per dimension), re-normalised, so the collection has realistic neighbourhoods.
  They go in through ``VectorStore.upsert`` (persistent mode, with its lock) under the product's ids/metadata;
- queries: ``--queries`` real SciFact claims (every 4th line of queries.jsonl, so train and test mix), embedded
  by the real model.

The built index is cached in ``--cache`` (keyed by the sizes) and reused, so only the first run pays the build
(a few minutes). Peak RSS is the search process's own (the build runs in a child process). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
sys.path.insert(0, str(REPO))


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values) * 1000, q)), 2)


def rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0)


def scifact_corpus() -> list[dict]:
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def zotero_key(prefix: str, number: int) -> str:
    """A valid 8-character Zotero key, deterministic in ``number``."""
    from zocrates_nb.library.base import KEY_ALPHABET

    digits = []
    for _ in range(7):
        number, rest = divmod(number, len(KEY_ALPHABET))
        digits.append(KEY_ALPHABET[rest])
    return prefix + "".join(reversed(digits))


# ---------------------------------------------------------------------------- build (child process)


def build(cache: Path, notes: int, papers: int, per_paper: int, real: int) -> dict:
    from zocrates_nb.index.consistency import _metadata
    from zocrates_nb.index.embed.model import MiniLMEmbedder
    from zocrates_nb.index.hybrid import HybridIndex
    from zocrates_nb.index.lexical import fts
    from zocrates_nb.paths import DataPaths

    out: dict = {}
    corpus = scifact_corpus()
    embedder = MiniLMEmbedder()
    started = time.perf_counter()
    real_vectors = embedder.embed([" ".join(d["text"].split()[:80]) for d in corpus[:real]])
    out["embed_real_s"] = round(time.perf_counter() - started, 1)
    np.save(cache / "real_vectors.npy", real_vectors)

    paths = DataPaths(cache / "data").ensure()
    index = HybridIndex(paths, embedder=embedder)
    records = []
    for i in range(notes):
        doc = corpus[i % len(corpus)]
        words = doc["text"].split()[: 40 + (i * 37) % 81]
        key = zotero_key("N", i)
        colls = ("CCCCCCC2", "Reading") if i % 7 == 0 else ()
        records.append(
            (
                fts.FtsDocument(
                    key=key, kind="note", title=doc["title"], item_type="note", collections=colls, word_count=len(words)
                ),
                [
                    fts.ChunkRow(
                        chunk_id=f"{key}:0",
                        key=key,
                        kind="note",
                        text=" ".join(words),
                        title=doc["title"],
                        item_type="note",
                        collections=colls,
                    )
                ],
            )
        )
    for p in range(papers):
        key = zotero_key("P", p)
        title = corpus[(notes + p * per_paper) % len(corpus)]["title"]
        rows = [
            fts.ChunkRow(
                chunk_id=f"{key}:{c}",
                key=key,
                kind="paper",
                text=corpus[(notes + p * per_paper + c) % len(corpus)]["text"],
                title=title,
                item_type="journalArticle",
                chunk_index=c,
            )
            for c in range(per_paper)
        ]
        records.append(
            (
                fts.FtsDocument(
                    key=key,
                    kind="paper",
                    title=title,
                    item_type="journalArticle",
                    first_author="Author",
                    year=2000 + p % 25,
                ),
                rows,
            )
        )
    started = time.perf_counter()
    index.index_records(records, vectors=False)
    index._write(lambda conn: conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')"))
    out["fts_insert_s"] = round(time.perf_counter() - started, 1)

    rng = np.random.default_rng(7)
    rows = [r for _, chunk_rows in records for r in chunk_rows]
    store = index.vector_store()
    started = time.perf_counter()
    for start in range(0, len(rows), 1000):
        part = rows[start : start + 1000]
        base = real_vectors[np.arange(start, start + len(part)) % real]
        vectors = base + rng.normal(scale=0.03, size=base.shape).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.upsert([r.chunk_id for r in part], vectors, [_metadata(r) for r in part])
    out["vector_insert_s"] = round(time.perf_counter() - started, 1)
    out["vector_insert_per_s"] = round(len(rows) / (time.perf_counter() - started), 0)
    index.close()
    out["build_peak_rss_mb"] = rss_mb()
    return out


# ---------------------------------------------------------------------------- measure


def measure(
    cache: Path, n_queries: int, embed_threads: int | None, warm_up: int = 0, impact_postings: int | None = None
) -> dict:
    from zocrates_nb.diagnostics.events import EventLog
    from zocrates_nb.index.embed.model import MiniLMEmbedder
    from zocrates_nb.index.hybrid import HybridIndex
    from zocrates_nb.index.lexical import fts
    from zocrates_nb.index.lexical import split as lexical
    from zocrates_nb.index.rank.ranking import plan_terms
    from zocrates_nb.index.vectors.store import where_for
    from zocrates_nb.paths import DataPaths
    from zocrates_nb.retrieval.tools import LibraryTools

    lines = [json.loads(line)["text"] for line in open(SCIFACT / "queries.jsonl", encoding="utf-8")]
    queries = lines[::4][:n_queries]
    paths = DataPaths(cache / "data")
    out: dict = {"queries": len(queries)}
    embedder = MiniLMEmbedder(threads=embed_threads) if embed_threads else MiniLMEmbedder()
    started = time.perf_counter()
    search_config = {} if impact_postings is None else {"search": {"impact_postings": impact_postings}}
    index = HybridIndex(paths, search_config, embedder=embedder)
    impacts = index._impacts or _NoImpacts()
    index.search("warm up the vector store", k=10)  # opens Chroma, reconciles (id sets), loads HNSW
    out["first_search_s"] = round(time.perf_counter() - started, 2)
    if warm_up:
        # a kernel that has answered other questions before: other claims (never the measured ones)
        out["warm_up"] = _search_each(index, impacts, lines[1::4][:warm_up], paced=False)
    impacts_before = impacts.stats()
    out.update(
        {name: value for name, value in index.stats().items() if name in ("chunks", "notes", "papers", "vectors")}
    )
    events_dir = cache / "events"
    shutil.rmtree(events_dir, ignore_errors=True)
    # one index per end-to-end timing, so each meets a query's new words with a cold frequency cache
    tools_index = HybridIndex(paths, embedder=embedder)
    tools = LibraryTools(None, tools_index, EventLog(events_dir))
    store = index.vectors
    conn = index._conn

    serial = HybridIndex(paths, {"search": {"parallel": False}}, embedder=embedder)
    for other in (tools_index, serial):  # one share cache per process, as in one kernel
        if other._impacts is not None:
            other._impacts.close()
        other._impacts = index._impacts
    timings: dict[str, list[float]] = {
        name: []
        for name in (
            "query_embed",
            "fts_top100",
            "fts_plan_top100",
            "fts_plain_or_top100",
            "vector_top100",
            "lexical",
            "dense",
            "hybrid_given_vector",
            "hybrid_total",
            "hybrid_total_serial",
            "search_corpus",
            "vector_top100_filtered",
            "hybrid_filtered_notes",
            "hybrid_filtered_collection",
            "dense_filtered_notes",
            "dense_filtered_collection",
            "lexical_filtered_notes",
            "lexical_filtered_collection",
            "hybrid_filtered_parent",
        )
    }
    notes_in = {"item_type": "note", "collection": "Reading"}
    parent = zotero_key("P", 7)  # no child notes: times a filter that passes nothing
    matched: list[int] = []
    ranked: list[int] = []
    frequencies = lexical.DocumentFrequencies()
    vecs = []
    for q in queries:
        t0 = time.perf_counter()
        qv = embedder.embed([q])[0]
        timings["query_embed"].append(time.perf_counter() - t0)
        vecs.append(qv)

    def timed(name: str, call, *args, **kwargs):
        t0 = time.perf_counter()
        result = call(*args, **kwargs)
        timings[name].append(time.perf_counter() - t0)
        return result

    for q, qv in zip(queries, vecs, strict=True):
        hits = timed("hybrid_total", index.search, q, k=10)
        assert hits, f"no hits for {q!r}"
        timed("hybrid_total_serial", serial.search, q, k=10)
        timed("search_corpus", tools.search_corpus, q, k=10)
        text = " ".join(q.split())
        timed("fts_top100", lexical.lexical_search, conn, text, 100, None, frequencies)
        timed("fts_plan_top100", _plan_search, conn, text, frequencies)
        timed("fts_plain_or_top100", lambda text=text: fts.search(conn, fts.natural_query(text), 100))
        terms = fts.query_terms(text)
        total, counts = frequencies.lookup(conn, terms)
        plan_match, _ = lexical.plan_match(plan_terms(terms, counts, total))
        for match, sink in ((fts.natural_query(text), matched), (plan_match, ranked)):
            sink.append(
                conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)).fetchone()[0]
                if match
                else 0
            )
        timed("vector_top100", store.query, qv, 100)
        timed("lexical", index.search, q, k=10, mode="lexical")
        timed("dense", index.search, q, k=10, mode="dense", query_embedding=qv)
        timed("hybrid_given_vector", index.search, q, k=10, query_embedding=qv)
        timed("vector_top100_filtered", lambda qv=qv: store.query(qv, 100, where=where_for(notes_in)))
        timed("hybrid_filtered_notes", index.search, q, k=10, filters={"item_type": "note"})
        timed("hybrid_filtered_collection", index.search, q, k=10, filters=notes_in)
        # the two sides of a filtered search apart (the dense side no longer uses Chroma's where)
        timed(
            "dense_filtered_notes",
            index.search,
            q,
            k=10,
            mode="dense",
            query_embedding=qv,
            filters={"item_type": "note"},
        )
        timed("dense_filtered_collection", index.search, q, k=10, mode="dense", query_embedding=qv, filters=notes_in)
        timed("lexical_filtered_notes", index.search, q, k=10, mode="lexical", filters={"item_type": "note"})
        timed("lexical_filtered_collection", index.search, q, k=10, mode="lexical", filters=notes_in)
        timed("hybrid_filtered_parent", index.search, q, k=10, filters={"parent_key": parent})
    # another kernel's write makes the next query here reload the store from disk
    reopen = []
    for i in range(3):
        (paths.locks / "chroma.generation").write_text(f"bench-{time.time_ns()}")
        t0 = time.perf_counter()
        store.query(vecs[i], 100)
        reopen.append(time.perf_counter() - t0)
    out["reopen_after_foreign_write_ms"] = {"p50": pct(reopen, 50), "max": pct(reopen, 100)}
    for name, values in timings.items():
        out[f"{name}_ms"] = {"p50": pct(values, 50), "p95": pct(values, 95)}
    out["fts_rows_ranked"] = {"median": int(statistics.median(ranked)), "max": max(ranked)}
    out["fts_plain_or_rows_ranked"] = {"median": int(statistics.median(matched)), "max": max(matched)}
    impacts_back_to_back = impacts.stats()
    # a user reads each answer before asking the next question, so the cache's thread has caught up
    # (other claims again: lines[2::4], none of them warm-up or measured queries above)
    paced = _search_each(index, impacts, lines[2::4][:n_queries], paced=True)
    after = impacts.stats()

    def hit_rate(before: dict, then: dict) -> str:
        asked = then["hits"] + then["misses"] - before["hits"] - before["misses"]
        return f"{then['hits'] - before['hits']} of {asked}"

    out["hybrid_total_paced_ms"] = paced
    out["impacts"] = {
        "cached_words": after["words"],
        "cached_postings": after["postings"],
        "words_taken": after["taken"],
        "everyday_words_cached_back_to_back": hit_rate(impacts_before, impacts_back_to_back),
        "everyday_words_cached_paced": hit_rate(impacts_back_to_back, after),
    }
    out["events_logged"] = sum(1 for f in events_dir.glob("*.jsonl") for _ in open(f, encoding="utf-8"))
    for idx in (serial, tools_index):
        idx._impacts = None  # closed with the index that made it
        idx.close()
    index.close()
    out["peak_rss_mb"] = rss_mb()
    return out


def _search_each(index, impacts, queries: list[str], *, paced: bool) -> dict:
    """Hybrid searches one after another; ``paced``: the share cache's thread idle before each (not timed)."""
    took = []
    started = time.perf_counter()
    for q in queries:
        if paced:
            impacts.wait_idle(600)
        t0 = time.perf_counter()
        index.search(q, k=10)
        took.append(time.perf_counter() - t0)
    impacts.wait_idle(600)
    if paced:
        return {"p50": pct(took, 50), "p95": pct(took, 95)}
    return {"queries": len(queries), "seconds": round(time.perf_counter() - started, 1)}


class _NoImpacts:
    """Stands in for the share cache when ``--impact-postings 0`` turns it off."""

    def wait_idle(self, timeout: float | None = None) -> bool:
        return True

    def stats(self) -> dict:
        return {"words": 0, "postings": 0, "taken": 0, "hits": 0, "misses": 0}


def _plan_search(conn, text: str, frequencies) -> list:
    """The FTS5 plan that scores every word twice in one query (the path before the split ranking)."""
    from zocrates_nb.index.lexical import fts
    from zocrates_nb.index.lexical import split as lexical
    from zocrates_nb.index.rank.ranking import plan_terms

    terms = fts.query_terms(text)
    total, counts = frequencies.lookup(conn, terms)
    match, _ = lexical.plan_match(plan_terms(terms, counts, total))
    return fts.search(conn, match, 100)


def measure_server(cache: Path, n_queries: int) -> dict:
    """The same searches through Chroma's own server (`chroma run` on the built store), the lab path.

    Reports p50/p95 and how many queries return the same top-10 documents as the in-process store.
    """
    import socket
    import urllib.request

    from zocrates_nb.index.embed.model import MiniLMEmbedder
    from zocrates_nb.index.hybrid import HybridIndex
    from zocrates_nb.paths import DataPaths

    chroma = Path(sys.executable).parent / "chroma"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    paths = DataPaths(cache / "data")
    lines = [json.loads(line)["text"] for line in open(SCIFACT / "queries.jsonl", encoding="utf-8")]
    queries = lines[::4][:n_queries]
    embedder = MiniLMEmbedder()
    local = HybridIndex(paths, embedder=embedder)
    expected = [[h.key for h in local.search(q, k=10)] for q in queries]
    local.close()
    log = open(cache / "chroma-server.log", "w")
    server = subprocess.Popen(
        [str(chroma), "run", "--path", str(paths.chroma), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, ANONYMIZED_TELEMETRY="False"),
    )
    try:
        started = time.perf_counter()
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2):
                    break
            except OSError as err:
                if server.poll() is not None or time.perf_counter() - started > 120:
                    raise SystemExit("chroma run did not start; see " + str(cache / "chroma-server.log")) from err
                time.sleep(0.3)
        out: dict = {"server_start_s": round(time.perf_counter() - started, 2)}
        remote = HybridIndex(paths, {"vectors": {"mode": "http", "host": "127.0.0.1", "port": port}}, embedder=embedder)
        started = time.perf_counter()
        remote.search("warm up the vector store", k=10)
        out["server_first_search_s"] = round(time.perf_counter() - started, 2)
        timings: dict[str, list[float]] = {
            "server_hybrid_total": [],
            "server_dense": [],
            "server_hybrid_filtered_notes": [],
        }
        same = 0
        for q, keys in zip(queries, expected, strict=True):
            qv = embedder.embed([q])[0]
            t0 = time.perf_counter()
            hits = remote.search(q, k=10)
            timings["server_hybrid_total"].append(time.perf_counter() - t0)
            same += [h.key for h in hits] == keys
            t0 = time.perf_counter()
            remote.search(q, k=10, mode="dense", query_embedding=qv)
            timings["server_dense"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            remote.search(q, k=10, filters={"item_type": "note"}, query_embedding=qv)
            timings["server_hybrid_filtered_notes"].append(time.perf_counter() - t0)
        remote.close()
        for name, values in timings.items():
            out[f"{name}_ms"] = {"p50": pct(values, 50), "p95": pct(values, 95)}
        out["server_same_top10_as_in_process"] = f"{same}/{len(queries)}"
        return out
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--papers", type=int, default=5_000)
    parser.add_argument("--chunks-per-paper", type=int, default=10)
    parser.add_argument("--real", type=int, default=400, help="real embeddings the stored vectors derive from")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embed-threads", type=int, default=None, help="onnxruntime intra-op threads")
    parser.add_argument(
        "--impact-postings", type=int, default=None, help="config search.impact_postings (0: no share cache)"
    )
    parser.add_argument(
        "--warm-up",
        type=int,
        default=0,
        help="hybrid searches of other claims before measuring (a kernel that has answered questions before)",
    )
    parser.add_argument("--cache", type=Path, default=Path("/tmp/zc-scale"))
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--server",
        action="store_true",
        help="also measure through Chroma's own server (`chroma run`) on the same store",
    )
    args = parser.parse_args()
    cache = args.cache / f"n{args.notes}-p{args.papers}x{args.chunks_per_paper}-r{args.real}"
    if args.build_only:
        print(json.dumps(build(cache, args.notes, args.papers, args.chunks_per_paper, args.real)))
        return
    out: dict = {
        "notes": args.notes,
        "paper_chunks": args.papers * args.chunks_per_paper,
        "cache": str(cache),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    marker = cache / "built.json"
    if not marker.is_file():
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        child = subprocess.run(
            [
                sys.executable,
                __file__,
                "--build-only",
                "--notes",
                str(args.notes),
                "--papers",
                str(args.papers),
                "--chunks-per-paper",
                str(args.chunks_per_paper),
                "--real",
                str(args.real),
                "--cache",
                str(args.cache),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        marker.write_text(child.stdout.strip().splitlines()[-1])
    out["build"] = json.loads(marker.read_text())
    out.update(measure(cache, args.queries, args.embed_threads, args.warm_up, args.impact_postings))
    if args.server:
        out.update(measure_server(cache, args.queries))
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
