"""Keeping the index consistent with the corpus: stage, commit, reconcile, rebuild.

Consistency model: the FTS rows are written inside the corpus's transaction
(``stage``/``unstage``), vectors after its COMMIT (``commit_vectors``); there is no
cross-store transaction, so the SQLite ``chunks`` table is the truth and the
vector store is a derived index that :meth:`IndexConsistency.reconcile` brings back in
line (missing ids embedded, extra ids deleted) when the dense side is first used.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from zocrates_nb.errors import IndexCorruptError, ZocratesError
from zocrates_nb.index.core import REBUILD_HINT, IndexCore
from zocrates_nb.index.lexical import fts
from zocrates_nb.index.lexical.libraries import record_library, replace_libraries
from zocrates_nb.index.records import document_rows, embedding_text, embedding_windows, vector_metadata
from zocrates_nb.index.vectors import pending
from zocrates_nb.index.vectors.windows import chunk_of, windows_of
from zocrates_nb.records import LibraryInfo

if TYPE_CHECKING:
    from zocrates_nb.index.vectors.feed import DenseFeed

_EMBED_BATCH = 128
#: A job this big is embedded in a child process (index/embed/worker.py): starting it (Python,
#: onnxruntime, the model: about a second, beside the sync's own work) costs less than the stalls it
#: saves, since Chroma holds the GIL about 1.5 ms per stored vector against the model's 50 ms a text.
WORKER_MIN_TEXTS = 1000
#: A sync of this many new or changed documents (most make one or two chunks) gets a process for its feed.
WORKER_MIN_DOCUMENTS = 500
_log = logging.getLogger(__name__)


class IndexConsistency(IndexCore):
    """The ``DocumentIndexer`` half of HybridIndex: the corpus calls ``stage``/``unstage``
    inside its transaction and ``commit_vectors`` after it; ``reconcile`` and ``rebuild`` repair."""

    # ------------------------------------------------------------------ DocumentIndexer
    def stage(self, conn: sqlite3.Connection, manifest: Mapping[str, Any], markdown: str) -> None:
        """Write a document's FTS rows inside the caller's transaction; queue its vectors."""
        doc, rows = document_rows(manifest, markdown, _count_tokens())
        stale = fts.replace_document(conn, doc, rows)
        record_library(conn, doc.key, manifest.get("library_id"))
        pending.add(conn, [r.chunk_id for r in rows] + list(stale))  # durable: survives a kill before COMMIT
        with self._queue_lock:
            if not self._pending:
                from zocrates_nb.index.vectors.fill import mark_pending

                mark_pending(self.paths.root)  # a kill from here on leaves vectors to resume
            self._pending.update(r.chunk_id for r in rows)
            self._pending.update(stale)

    def record_libraries(
        self, conn: sqlite3.Connection, libraries: Sequence[LibraryInfo], of_keys: Mapping[str, int]
    ) -> int:
        """The libraries a sync read and each document's, inside its transaction (lexical/libraries.py)."""
        return replace_libraries(conn, libraries, of_keys)

    def unstage(self, conn: sqlite3.Connection, key: str) -> None:
        """Delete a document's FTS rows inside the caller's transaction; queue the vector deletes."""
        removed = fts.delete_document(conn, key)
        pending.add(conn, removed)
        with self._queue_lock:
            self._pending.update(removed)

    def commit_vectors(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Bring the vectors of every touched chunk in line with the committed FTS rows.

        The queue holds chunk ids only; what to do is decided from the *committed*
        ``chunks`` table: present → embed and upsert, absent → delete. A transaction
        the corpus rolled back therefore never leaves vectors behind.
        """
        from zocrates_nb.index.vectors.fill import clear_progress, interrupted

        with self._queue_lock:
            pending, self._pending = self._pending, set()
        resume = interrupted(self.paths.root)  # a fill killed before it finished: embed what is missing
        if not pending and not resume:
            return {"upserted": 0, "deleted": 0}
        try:
            if resume:
                fixed = self.reconcile(progress=progress, skip=pending)
                clear_progress(self.paths.root)
            result = self._sync_ids(pending, progress) if pending else {"upserted": 0, "deleted": 0}
            clear_progress(self.paths.root)
            if resume:
                result = {
                    "upserted": result["upserted"] + fixed["embedded"],
                    "deleted": result["deleted"] + fixed["deleted"],
                }
            return result
        except BaseException:
            self.requeue(pending)  # keep them queued; reconcile would find them anyway
            raise

    # ------------------------------------------------------------------ the sync's feed (index/vectors/feed.py)
    def feed(self, documents: int = 0) -> DenseFeed | None:
        """A background fill that a sync hands each committed batch to (``take_staged``), or None when a
        killed fill must be resumed first (the sync's final ``commit_vectors`` does that). A sync of
        ``documents`` >= ``WORKER_MIN_DOCUMENTS`` gets its own embedding process (index/embed/worker.py)."""
        from zocrates_nb.index.vectors.feed import DenseFeed
        from zocrates_nb.index.vectors.fill import interrupted

        if interrupted(self.paths.root):
            return None
        return DenseFeed(self, worker=documents >= WORKER_MIN_DOCUMENTS)

    def take_staged(self) -> set[str]:
        """The ids staged since the last call; the caller has just committed them (one sync batch)."""
        with self._queue_lock:
            ids, self._pending = self._pending, set()
        return ids

    def requeue(self, ids: Iterable[str]) -> None:
        """Put ids back in the queue (a fill that failed): the next ``commit_vectors`` embeds them."""
        with self._queue_lock:
            self._pending.update(ids)

    def embed_committed(
        self, jobs: Iterable[set[str]], stored: Callable[[list[str]], None], embedder: Any = None
    ) -> None:
        """The feed's fill: each job is a set of committed ids, taken when the embedder wants more, so it
        goes on from one job to the next while the last is stored (index/vectors/fill.py ``embed_jobs``).
        Rows are embedded and stored, the vectors of ids without a row deleted; ``stored(ids)`` hears
        of both. No reconcile (FTS rows are still being committed beside it) and no progress file of
        its own (the feed keeps one). ``embedder`` is the feed's embedding process, if it has one."""
        from zocrates_nb.index.embed.worker import WorkerFailed

        def done(ids: list[str]) -> None:
            self._write(lambda conn: pending.remove(conn, ids))
            stored(ids)

        def rows_of(ids: set[str]) -> list[fts.ChunkRow]:
            rows = self._read(lambda conn: fts.chunk_rows(conn, ids))
            gone = sorted(ids - rows.keys())
            if gone:
                self.vector_store().delete_ids(gone)
                done(gone)
            self._drop_windows(ids)
            return [rows[c] for c in sorted(rows)]

        try:
            self._fill((rows_of(ids) for ids in jobs), embedder or self.embedder, done)
        except WorkerFailed:
            self._worker_failed = True  # this process embeds by itself from now on (the sync's final pass)
            raise

    def prepare_feed(self) -> None:
        """Open the vector store (``import chromadb``: seconds) before the feed's first write needs it."""
        opener = getattr(self.vector_store(), "open", None)
        if callable(opener):
            opener()

    def finish_feed(self) -> None:
        """After the feed's last batch: the id-set reconcile a first ``commit_vectors`` would have run."""
        if not self._reconciled:
            self.reconcile(limit=self.auto_repair_limit)

    def fill_interrupted(self) -> bool:
        """True when a dense fill was killed before it finished: the next ``commit_vectors`` resumes it
        (embedding only what is missing), so a sync's consistency check leaves the vectors to it."""
        from zocrates_nb.index.vectors.fill import interrupted

        return interrupted(self.paths.root)

    def _sync_ids(self, ids: Iterable[str], progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Embed and upsert the committed rows of ``ids``, delete the vectors of the others."""
        ids = set(ids)
        rows = self._read(lambda conn: fts.chunk_rows(conn, ids))
        gone = sorted(ids - rows.keys())
        if not self._reconciled:
            # the chunks being synced now are not "missing": a first sync of a big library
            # must embed them here, not trip the auto-repair limit meant for lost vectors
            self.reconcile(limit=self.auto_repair_limit, skip=ids)
        if gone:
            self.vector_store().delete_ids(gone)
        self._drop_windows(ids)
        todo = [rows[c] for c in sorted(rows)]
        if todo:
            self._embed_todo(todo, progress)
        self._write(lambda conn: pending.remove(conn, ids))
        return {"upserted": len(todo), "deleted": len(gone)}

    def _embed_todo(self, todo: list[fts.ChunkRow], progress: Callable[[int, int], None] | None) -> None:
        """Embed and store ``todo``: a big job in an embedding process of its own (index/embed/worker.py),
        a small one, or what a failed process left, in this one."""
        from zocrates_nb.index.embed.worker import WorkerFailed

        stored: set[str] = set()

        def done(ids: list[str]) -> None:
            # each stored batch leaves the durable queue at once: a kill mid-fill then re-embeds
            # only what was not stored yet, never the whole queue
            self._write(lambda conn: pending.remove(conn, ids))
            stored.update(ids)

        worker = self.worker_embedder() if len(todo) >= WORKER_MIN_TEXTS else None
        try:
            self._fill([todo], worker or self.embedder, done, total=len(todo), progress=progress)
        except WorkerFailed as exc:
            self._worker_failed = True  # this process embeds by itself from now on
            left = [r for r in todo if r.chunk_id not in stored]
            _log.warning("%s Embedding the %d chunks left in this process.", exc.message, len(left))
            self._fill([left], self.embedder, done, total=len(left), progress=progress)
        finally:
            if worker is not None:
                worker.close()

    def _fill(
        self,
        jobs: Iterable[Sequence[fts.ChunkRow]],
        model: Any,
        done: Callable[[list[str]], None],
        *,
        total: int = 0,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """The one fill loop (index/vectors/fill.py): identical texts once, sorted by length when the model
        pads, the progress file when the total is known. The store opens at its first write, so the
        model starts on the first part while Chroma loads."""
        from zocrates_nb.index.vectors.fill import embed_jobs

        count = _count_tokens() if self.dense_windows else None

        def texts_of(row: fts.ChunkRow) -> list[str]:  # the chunk's windows (vectors.windows), or its one text
            if count is None:
                return [embedding_text(row.title, row.text, row.context)]
            return embedding_windows(row.title, row.text, row.context, count)

        embed_jobs(
            jobs,
            texts_of,
            model,
            _OpenOnWrite(self.vector_store),
            vector_metadata,
            total=total,
            root=self.paths.root if total else None,
            batch=_EMBED_BATCH,
            progress=progress,
            stored=done,
        )

    def _drop_windows(self, chunk_ids: Iterable[str]) -> None:
        """Delete the second and later windows of these chunks (gone, or about to be embedded again)."""
        chunk_ids = set(chunk_ids)
        if self.dense_windows and chunk_ids:
            store = self.vector_store()
            stale = windows_of(store.all_ids(), chunk_ids)
            if stale:
                store.delete_ids(stale)

    # ------------------------------------------------------------------ consistency
    def reconcile(
        self, limit: int | None = None, progress: Callable[[int, int], None] | None = None, *, skip: Iterable[str] = ()
    ) -> dict[str, int]:
        """Compare the chunk-id sets of FTS and the vector store; embed missing, delete extra.

        With ``limit``, more than ``limit`` missing vectors (a deleted ``chroma/``
        folder, an interrupted first sync) raise IndexCorruptError with the rebuild
        hint instead of stalling a search for minutes. ``skip`` holds chunk ids that the
        caller is about to embed anyway (the batch ``commit_vectors`` is syncing).
        """
        store = self.vector_store()
        self._reconciled = True
        lexical_ids = self._read(fts.chunk_ids)
        try:
            dense_ids = set(store.all_ids())
        except IndexCorruptError:
            # vectors are derived data: a missing or damaged store small enough to re-embed
            # quickly is simply re-created; a large one needs the user's go-ahead
            if limit is not None and len(lexical_ids) > limit:
                self._reconciled = False
                raise
            store.reset()
            dense_ids = set()
        queued = self._read(pending.all_ids)  # changed by a process that died before its vectors
        dense_chunks = {chunk_of(v) for v in dense_ids}
        missing = ((lexical_ids - dense_chunks) | (queued & lexical_ids)) - set(skip)
        extra = {v for v in dense_ids if chunk_of(v) not in lexical_ids}
        if limit is not None and len(missing) > limit:
            self._reconciled = False
            raise IndexCorruptError(
                f"The vector index lacks {len(missing):,} of {len(lexical_ids):,} chunks "
                "(deleted or damaged chroma folder, or an interrupted sync).",
                hint="Run `wb.index.reconcile()` to embed the missing chunks, or " + REBUILD_HINT,
            )
        if extra:
            store.delete_ids(sorted(extra))
        if missing:
            self._sync_ids(missing, progress)
            with self._queue_lock:  # embedded from their committed rows just now: not owed any more
                self._pending -= missing
        if queued:
            self._write(lambda conn: pending.remove(conn, queued - set(skip)))
        return {"embedded": len(missing), "deleted": len(extra)}

    def rebuild(self, corpus: Any = None, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Re-create FTS rows and vectors from the OKF bundles alone (no library access).

        ``corpus.documents()`` lists the bundles (without a corpus: the data directory's corpus folder).

        Holds the data directory's writer lock (``locks.corpus_lock``), so no save or sync lands
        between listing the bundles and swapping the rows in. The FTS rows are replaced in ONE
        transaction (readers see the old index until COMMIT, then the new one); vectors are
        upserted in place and extras deleted, so dense search keeps working while it runs. A
        bundle that does not verify is skipped and named in ``skipped`` (``zocrates-nb index
        rebuild`` then re-makes it from the library) instead of aborting the whole rebuild.
        """
        from zocrates_nb.corpus.bundle import stored_documents
        from zocrates_nb.storage.locks import corpus_lock

        with corpus_lock(self.paths.locks):
            documents = corpus.documents() if corpus is not None else stored_documents(self.paths.corpus)
            records, skipped = _index_rows(documents)
            vectors = self.vector_store()
            self._reconciled = True  # the rebuild below is a full reconcile

            def replace_all(conn: sqlite3.Connection) -> None:
                fts.clear(conn)
                pending.clear(conn)
                for doc, rows in records:
                    fts.replace_document(conn, doc, rows)

            self._write(replace_all)
            with self._queue_lock:
                self._pending = set()
            ids = self._read(fts.chunk_ids)
            try:
                extra = {v for v in vectors.all_ids() if chunk_of(v) not in ids}
            except IndexCorruptError:
                vectors.reset()  # a damaged vector store is derived data: start afresh
                extra = set()
            if extra:
                vectors.delete_ids(sorted(extra))
            self._sync_ids(ids, progress)
        return {"documents": len(records), "chunks": len(ids), "skipped": skipped}

    def index_records(
        self,
        records: Sequence[tuple[fts.FtsDocument, Sequence[fts.ChunkRow]]],
        *,
        vectors: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Bulk-index prepared rows in one transaction (evaluation corpora, benchmarks)."""
        touched: set[str] = set()

        def write(conn: sqlite3.Connection) -> None:
            for doc, rows in records:
                touched.update(fts.replace_document(conn, doc, rows))
                touched.update(r.chunk_id for r in rows)

        self._write(write)
        if vectors:
            self._sync_ids(touched, progress)


class _OpenOnWrite:
    """The vector store, opened by the first ``upsert`` (on the fill's writer thread, index/vectors/fill.py)."""

    def __init__(self, open_store: Callable[[], Any]) -> None:
        self._open = open_store

    def upsert(self, *args: Any, **kwargs: Any) -> None:
        self._open().upsert(*args, **kwargs)


def _count_tokens() -> Callable[[str], int] | None:
    """The embedder's token counter (tokenizer only, no model load), or None to estimate."""
    from zocrates_nb.index.embed.model import token_counter

    return token_counter()


def _index_rows(documents: Iterable[Any]) -> tuple[list[tuple[fts.FtsDocument, list[fts.ChunkRow]]], list[str]]:
    """The index rows of every readable document, and the keys of those skipped (unreadable or malformed)."""
    records, skipped = [], []
    for stored in documents:
        if stored.error is not None:
            skipped.append(stored.key)
            continue
        try:
            records.append(document_rows(stored.manifest, stored.markdown, _count_tokens()))
        except (ZocratesError, KeyError, TypeError, ValueError):
            skipped.append(stored.key)
    return records, skipped
