"""Embed a sync's chunks while the sync is still converting: the dense phase behind each commit.

Why: a first sync used to run its lexical phase (conversion, chunking, FTS writes: one core) to
the end before the dense phase (model load, ``import chromadb``, then embedding on both cores)
began, so every second of the lexical phase was a second the embedder waited. Now the sync hands
the chunk ids of each committed batch to this feed, whose thread embeds batch after batch while the
next ones are converted. Lexical search still covers a batch the moment it commits; the vectors follow.

- The feed hands its slices to the fill as one stream (``_jobs``; index/vectors/fill.py ``embed_jobs``):
  the embedder goes on from one slice to the next while the last is stored, so neither a slice's
  end nor a slow write (the first one opens Chroma) leaves it idle.
- A big sync (``WORKER_MIN_DOCUMENTS``, index/consistency.py) embeds in a child process started
  with the feed, so the model loads while the first batch is converted, and Chroma's upserts, which
  hold this process's GIL, no longer stall the embedding (index/embed/worker.py says why).
- Chroma opens on a thread of its own once the first parts are with the embedder.

What stays as it was (index/vectors/fill.py, index/consistency.py):

- only committed ids are fed: the sync takes them from the index right after each COMMIT, so a
  rolled-back batch never reaches the vector store;
- ``dense_progress.json`` counts stored vectors against the ids fed so far, with this process's
  id, and is removed when the feed ends: a killed sync leaves it behind, and the next sync
  resumes the fill. A fill that a dead process left is not fed at all (``IndexConsistency.feed``
  returns None): the sync's final ``commit_vectors`` resumes it the old way;
- the id-set reconcile runs once, after the last batch, when every synced chunk has its vector
  (before, it ran before the first; during the feed the FTS rows move under it);
- a failure stops the feed, puts its ids back in the index's queue and is returned by ``close``;
  the sync's final ``commit_vectors`` then tries them once more and reports what fails again.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

from zocrates_nb.index.vectors.fill import clear_progress, progress_line, write_progress

__all__ = ["DenseFeed", "SLICE"]

#: Most ids embedded in one step: a stop (a failed or interrupted sync) waits for one step at most.
SLICE = 1024


class DenseFeed:
    """One background fill of the vectors for the ids a sync commits (``committed``), ended by ``close``."""

    def __init__(self, index: Any, *, worker: bool = False) -> None:
        self._index = index
        self._use_worker = worker  # a big sync: embed in a child process (index/embed/worker.py)
        self._queue: queue.SimpleQueue[list[str] | None] = queue.SimpleQueue()
        self._counts = threading.Lock()
        self.done = 0
        self.total = 0
        self.error: BaseException | None = None
        self._taken: set[str] = set()  # ids handed to the fill, and of those the ids it finished
        self._done_ids: set[str] = set()
        self._ended = False  # the end of the feed (None) was taken from the queue
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="zocrates-dense-feed", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """The sync has just committed a batch: queue the ids the index staged for it."""
        ids = self._index.take_staged()
        if not ids:
            return
        with self._counts:
            self.total += len(ids)
            write_progress(self._index.paths.root, self.done, self.total)
        self._queue.put(sorted(ids))

    def progress(self) -> tuple[int, int]:
        """``(stored, fed)`` so far, for the sync's progress bar."""
        with self._counts:
            return self.done, self.total

    def progress_line(self) -> str | None:
        """``dense: 38 % (1,970 / 5,183)`` of what was fed so far (the lexical bar shows it)."""
        done, total = self.progress()
        return progress_line({"done": done, "total": total, "running": True}) if total else None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait (at most ``timeout`` seconds) for the feed to finish; True once it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def end(self) -> None:
        """No more batches: the feed finishes the queued ones, reconciles once and ends (``wait``)."""
        self._queue.put(None)

    def close(self) -> BaseException | None:
        """``end``, wait for the feed to finish, and return its error if any."""
        self.end()
        self._thread.join()
        if self.error is None and not self._stop.is_set():
            clear_progress(self._index.paths.root)
        return self.error

    def stop(self) -> None:
        """Stop soon (the sync failed or was interrupted): what is not embedded yet goes back to the
        index's queue, and the progress file stays behind, so the next sync resumes the fill."""
        if self._thread.is_alive():
            self._stop.set()
            self._queue.put(None)
            self._thread.join()

    def _stored(self, ids: list[str]) -> None:
        with self._counts:
            self.done += len(ids)
            self._done_ids.update(ids)
            write_progress(self._index.paths.root, self.done, self.total)

    def _run(self) -> None:
        # the embedding process loads its model while the sync converts its first batch
        worker = self._index.worker_embedder() if self._use_worker else None
        try:
            self._index.embed_committed(self._jobs(), self._stored, worker)
        except BaseException as exc:  # noqa: BLE001 - returned by close(); the sync's commit_vectors retries
            self.error = exc
            with self._counts:
                self._index.requeue(self._taken - self._done_ids)
            while not self._ended:  # what the sync goes on feeding goes back to the index's queue too
                item = self._queue.get()
                self._ended = item is None
                self._index.requeue(item or ())
        finally:
            if worker is not None:
                worker.close()
        if self.error is None and not self._stop.is_set():
            try:
                self._index.finish_feed()
            except BaseException as exc:  # noqa: BLE001 - returned by close() and reported by the sync
                self.error = exc

    def _open_store(self) -> None:
        try:
            self._index.prepare_feed()
        except Exception:  # noqa: BLE001 - the first write opens it again and that failure is reported
            return

    def _jobs(self) -> Iterator[set[str]]:
        """What was fed, a slice at a time, as the fill wants more; until the end, or a stop (what is
        not taken yet goes back to the index's queue)."""
        waiting: list[str] = []  # fed, not taken yet
        opening: threading.Thread | None = None
        while waiting or not self._ended:
            if not waiting:
                item = self._queue.get()
                self._ended = item is None
                waiting.extend(item or ())
            while not self._ended:  # all that is queued now
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                self._ended = item is None
                waiting.extend(item or ())
            if self._stop.is_set():
                self._index.requeue(waiting)
                return
            # a slice at a time, so a stop waits for one slice at most
            job, waiting = waiting[:SLICE], waiting[SLICE:]
            with self._counts:
                self._taken.update(job)
            yield set(job)
            if opening is None:
                # Chroma opens (``import chromadb``: seconds of Python) on a thread of its own once the
                # first parts are with the embedder, so it holds up neither them nor the first write
                opening = threading.Thread(target=self._open_store, name="zocrates-open-vectors", daemon=True)
                opening.start()
