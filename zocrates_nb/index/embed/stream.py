"""Embedding as a stream of parts: one single-threaded session per core, no pause between parts.

Why: the int8 embedder runs each text alone (index/embed/model.py says why), spread over one session per
core. Embedding a big job one part at a time used to stop both cores at the end of every part
until the slower of the two finished its share, and again while the caller stored the part. Here
every text of every submitted part goes into one queue that the sessions drain in order, so a
session that finishes early takes the next part's first text, and the caller stores part N while
parts N+1.. are being embedded (``stream`` keeps ``ahead`` parts submitted).

The same two pieces serve the process worker (index/embed/worker.py): its child feeds parts read
from a pipe into a :class:`PartPool`, and its parent streams with :func:`stream` over handles whose
``result`` reads the child's reply.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

__all__ = ["Part", "PartPool", "stream"]


class Handle(Protocol):
    """A submitted part: its vectors once embedded (``result``), or dropped (``cancel``)."""

    def result(self) -> np.ndarray: ...

    def cancel(self) -> None: ...


def stream(
    parts: Iterable[Sequence[str]], submit: Callable[[list[str]], Handle], *, ahead: int = 2
) -> Iterator[np.ndarray]:
    """Each part's vectors, in order, with up to ``ahead`` parts submitted at a time.

    The next part is submitted before a finished one is handed over, so the embedder is never
    idle while the caller stores what it got. A caller that stops early (an exception, ``close``)
    cancels what is still submitted.
    """
    submitted: deque[Handle] = deque()
    source = iter(parts)

    def submit_next() -> bool:
        texts = next(source, None)
        if texts is None:
            return False
        submitted.append(submit(list(texts)))
        return True

    try:
        while len(submitted) < max(1, ahead) and submit_next():
            pass
        while submitted:
            vectors = submitted[0].result()
            submitted.popleft()
            submit_next()
            yield vectors
    finally:
        for handle in submitted:
            handle.cancel()


class Part:
    """One submitted part: ``out`` fills row by row; ``result`` waits for the last row."""

    __slots__ = ("out", "_left", "_lock", "_done", "error", "cancelled")

    def __init__(self, rows: int, dim: int) -> None:
        self.out = np.zeros((rows, dim), dtype=np.float32)
        self._left = rows
        self._lock = threading.Lock()
        self._done = threading.Event()
        self.error: BaseException | None = None
        self.cancelled = False
        if rows == 0:
            self._done.set()

    @classmethod
    def finished(cls, vectors: np.ndarray) -> Part:
        """A part embedded already (an embedder that does not queue)."""
        part = cls(0, vectors.shape[1])
        part.out = vectors
        return part

    def result(self) -> np.ndarray:
        self._done.wait()
        if self.error is not None:
            raise self.error
        return self.out

    def cancel(self) -> None:
        """The rows not embedded yet are skipped (the sessions move on to the next part)."""
        self.cancelled = True

    def _row_done(self) -> None:
        with self._lock:
            self._left -= 1
            if self._left == 0:
                self._done.set()


class PartPool:
    """Sessions that drain one queue of texts; ``submit(token_ids)`` returns a :class:`Part` at once.

    ``run(session, ids)`` embeds one text (one row of float32). The threads start on the first
    ``submit`` and wait on the queue until ``close``; several callers may submit at the same time.
    """

    def __init__(self, sessions: Sequence[Any], run: Callable[[Any, list[int]], np.ndarray], dim: int) -> None:
        self._sessions, self._run, self.dim = list(sessions), run, dim
        self._tasks: queue.SimpleQueue[tuple[Part, int, list[int]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def submit(self, token_ids: Sequence[list[int]]) -> Part:
        """Queue one part (its texts' token ids), longest text first so the part ends evenly."""
        part = Part(len(token_ids), self.dim)
        self._start()
        for row in sorted(range(len(token_ids)), key=lambda i: -len(token_ids[i])):
            self._tasks.put((part, row, token_ids[row]))
        return part

    def close(self, *, wait: bool = True) -> None:
        """Stop the threads once the queued texts are done (or skipped); ``wait=False`` returns at once
        (a garbage collector's finalizer must not block on them)."""
        with self._lock:
            threads, self._threads = self._threads, []
        for _ in threads:
            self._tasks.put(None)
        for thread in threads if wait else ():
            thread.join()

    @property
    def threads(self) -> list[threading.Thread]:
        """The sessions' threads now running (none before the first ``submit`` or after ``close``)."""
        with self._lock:
            return list(self._threads)

    def _start(self) -> None:
        with self._lock:
            if self._threads:
                return
            for number, session in enumerate(self._sessions):
                thread = threading.Thread(
                    target=self._work, args=(session,), name=f"zocrates-embed-{number}", daemon=True
                )
                thread.start()
                self._threads.append(thread)

    def _work(self, session: Any) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            part, row, ids = task
            if part.error is None and not part.cancelled:
                try:
                    part.out[row] = self._run(session, ids)
                except BaseException as exc:  # noqa: BLE001 - raised to the part's caller by result()
                    part.error = exc
            part._row_done()
