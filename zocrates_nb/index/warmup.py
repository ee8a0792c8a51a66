"""Load the dense side (model, vector store, reconcile) on a background thread.

Why: a fresh notebook kernel pays about 3 s for ``import chromadb`` and about 0.7 s for the
ONNX model before the first dense query can run, and the first use of the vector store also
compares its ids with the FTS rows. None of that is needed to answer lexically, so
``open_workbench()`` starts this warm-up and returns at once; searches issued before it is done
answer from FTS5 alone and say so in their notices, and the next search after it is done is
hybrid. On a fresh data directory the first sync commits only the lexical index and this thread
embeds the chunks behind it (progress in ``zocrates-nb status``). The CLI does not start one (a
one-shot command that wants hybrid results waits anyway).
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["LOADING_NOTICE", "DenseWarmup"]

LOADING_NOTICE = (
    "Dense retrieval is still loading (the embedding model and the vector index, a few "
    "seconds after opening), so these are lexical results only; the next search once it "
    "is ready is hybrid."
)


class DenseWarmup:
    """One background load of ``index``'s embedder and vector store.

    ``ready`` is True once the load finished (successfully or not); an error is kept in
    ``error`` and not raised here: the search that next needs the dense side meets it
    through its own path (which degrades hybrid to lexical with a notice).
    """

    def __init__(self, index: Any) -> None:
        self._index = index
        self._done = threading.Event()
        self.error: BaseException | None = None
        self.started = time.monotonic()
        self.seconds: float | None = None
        self._thread = threading.Thread(target=self._run, name="zocrates-dense-warmup", daemon=True)

    def start(self) -> DenseWarmup:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            embedder = self._index.embedder  # model load (onnxruntime session)
            embedder.embed(["warm up"])  # first run allocates the session's buffers
            self._index.commit_vectors()  # chunks a first sync staged (or a killed one left)
            _ = self._index.vectors  # open Chroma and reconcile its ids with FTS once
        except BaseException as exc:  # noqa: BLE001 — kept; the next dense search reports it
            self.error = exc
        finally:
            self.seconds = round(time.monotonic() - self.started, 3)
            self._done.set()

    @property
    def ready(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the load is done (True) or ``timeout`` seconds passed (False)."""
        return self._done.wait(timeout)

    def notice(self) -> str | None:
        """The notice for a search answered before the dense side was ready, else None."""
        return None if self.ready else LOADING_NOTICE

    def __repr__(self) -> str:
        state = "ready" if self.ready else "loading"
        error = type(self.error).__name__ if self.error else None
        return f"DenseWarmup({state}, seconds={self.seconds}, error={error})"
