"""The one loop that embeds chunks and upserts their vectors: fast, visible and resumable.

Why each part:

- **identical texts are embedded once** (a note copied into two collections, boiler-plate chunks):
  their vectors are shared;
- **texts are sorted by length across the whole job** before batching, so each batch of the
  embedder is padded to a similar length (the embedder already sorts within one call; this
  spreads the sort over the whole sync). The length is the embedder's own token count when it
  offers one (``token_lengths``): sorting by characters padded 6–8 % more tokens on SciFact,
  and the embedder's time is linear in padded tokens. An embedder that does not pad (``pads``
  False: the int8 one runs each text alone) gets them unsorted, and they are not tokenized twice;
- **progress is written to ``dense_progress.json``** in the data directory after each batch
  (``{"done", "total", "pid"}``), so ``zocrates-nb status`` in another shell shows
  "dense: 38 % (1,970 / 5,183)" while a big first sync fills in the vectors behind the lexical
  index (a batch's FTS rows are committed before its chunks are embedded, so lexical search covers
  it first; a sync's feed, index/vectors/feed.py, keeps this file itself);
- **a part is stored while the next one is embedded** (one writer thread, one write at a time, in
  order): Chroma's inserts and the durable queue's bookkeeping no longer leave the embedder's cores
  idle between parts;
- **a killed fill is resumed**: the file outlives a killed process (its pid is gone), and the next
  ``commit_vectors`` reconciles the id sets without a limit, embedding only what is missing.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

from zocrates_nb.index.vectors.windows import window_id

__all__ = [
    "PROGRESS_NAME",
    "clear_progress",
    "embed_jobs",
    "embed_rows",
    "interrupted",
    "mark_pending",
    "progress_line",
    "read_progress",
    "write_progress",
]

PROGRESS_NAME = "dense_progress.json"


def _path(root: Path) -> Path:
    return Path(root) / PROGRESS_NAME


def write_progress(root: Path, done: int, total: int) -> None:
    """Replace the progress file (advisory, so no fsync: a torn write only loses a progress figure)."""
    path = _path(root)
    tmp = path.with_name(f".{PROGRESS_NAME}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"done": done, "total": total, "pid": os.getpid()}), encoding="utf-8")
    os.replace(tmp, path)


def read_progress(root: Path) -> dict | None:
    """``{"done", "total", "pid", "running"}`` of the current or last interrupted fill, else None."""
    try:
        data = json.loads(_path(root).read_text(encoding="utf-8"))
        done, total, pid = int(data["done"]), int(data["total"]), int(data["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {"done": done, "total": total, "pid": pid, "running": _alive(pid)}


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def interrupted(root: Path) -> bool:
    """A fill started by a process that is gone (killed, crashed) left vectors to embed."""
    progress = read_progress(root)
    return progress is not None and not progress["running"]


def mark_pending(root: Path) -> None:
    """Vectors are now owed (FTS rows staged, not embedded yet): leave a file a kill would leave behind.

    A file left by a dead process is kept as it is, so its fill is still resumed.
    """
    if read_progress(root) is None:
        write_progress(root, 0, 0)


def clear_progress(root: Path) -> None:
    _path(root).unlink(missing_ok=True)


def progress_line(progress: dict | None) -> str | None:
    """``dense: 38 % (1,970 / 5,183)`` (plus "interrupted" for a fill whose process is gone)."""
    if not progress:
        return None
    if progress["total"] <= 0:
        return (
            "dense: waiting for the lexical index"
            if progress["running"]
            else "dense: interrupted before it started; the next `zocrates-nb sync` resumes it"
        )
    share = int(100 * progress["done"] / progress["total"])
    tail = "" if progress["running"] else " — interrupted; the next `zocrates-nb sync` resumes it"
    return f"dense: {share} % ({progress['done']:,} / {progress['total']:,}){tail}"


def _by_length(texts: list[str], embedder: Any) -> list[str]:
    """``texts`` shortest first, by the embedder's own token count when it offers one; as they are when
    the embedder does not pad (int8 runs each text alone: sorting would only tokenize them twice)."""
    if not getattr(embedder, "pads", True):
        return texts
    token_lengths = getattr(embedder, "token_lengths", None)
    if callable(token_lengths) and texts:
        lengths = dict(zip(texts, token_lengths(texts), strict=True))
        return sorted(texts, key=lambda t: (lengths[t], t))
    return sorted(texts, key=lambda t: (len(t), t))


def embed_rows(
    rows: Sequence[Any],
    text_of: Callable[[Any], str],
    embedder: Any,
    store: Any,
    metadata_of: Callable[[Any], dict],
    *,
    root: Path | None = None,
    batch: int = 128,
    progress: Callable[[int, int], None] | None = None,
    stored: Callable[[list[str]], None] | None = None,
) -> int:
    """Embed ``rows`` (``.chunk_id``) and upsert them; returns how many texts were embedded.

    ``stored(ids)`` is called after each batch is upserted (the caller clears its durable queue)."""
    return embed_jobs(
        [rows],
        lambda row: [text_of(row)],
        embedder,
        store,
        metadata_of,
        total=len(rows),
        root=root,
        batch=batch,
        progress=progress,
        stored=stored,
    )


def embed_jobs(
    jobs: Iterable[Sequence[Any]],
    texts_of: Callable[[Any], list[str]],
    embedder: Any,
    store: Any,
    metadata_of: Callable[[Any], dict],
    *,
    total: int = 0,
    root: Path | None = None,
    batch: int = 128,
    progress: Callable[[int, int], None] | None = None,
    stored: Callable[[list[str]], None] | None = None,
) -> int:
    """``embed_rows`` over a stream of jobs (lists of rows), taken one at a time as the embedder needs
    more: a sync's feed (index/vectors/feed.py) hands over each slice of committed chunks this way, so
    the embedder goes on from one slice to the next while the last one is stored. Identical texts
    are embedded once within a job. ``total`` (when known) is what the progress figures count to.
    ``texts_of(row)``: what the model reads of a row, one text, or its windows (index/vectors/windows.py),
    each stored as a vector of its own; a row counts as stored once its last window is."""
    writes = _Writes(store, metadata_of, total, root, progress, stored)
    rows_of_parts: deque[list[list[tuple[Any, int]]]] = deque()  # parts taken by the embedder, not stored yet

    def parts() -> Iterator[list[str]]:
        for rows in jobs:
            by_text: dict[str, list[tuple[Any, int]]] = {}
            for row in rows:
                texts = texts_of(row)
                writes.owe(row.chunk_id, len(texts))
                for n, text in enumerate(texts):
                    by_text.setdefault(text, []).append((row, n))
            texts = _by_length(list(by_text), embedder)
            for start in range(0, len(texts), batch):
                part = texts[start : start + batch]
                rows_of_parts.append([by_text[text] for text in part])
                writes.texts += len(part)
                yield part

    # the next parts are embedded while one is stored: the store's writes (Chroma's HNSW inserts,
    # the durable queue) no longer leave the embedder's cores idle. One write at a time, in order,
    # so the progress file and the durable queue only ever count stored vectors.
    stream = getattr(embedder, "embed_stream", None)
    embedded = stream(parts()) if callable(stream) else (embedder.embed(part) for part in parts())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="zocrates-store") as writer, closing(embedded):
        writing: Future[None] | None = None
        for vectors in embedded:
            rows = rows_of_parts.popleft()
            if writing is not None:
                writing.result()
            writing = writer.submit(writes.store_part, rows, vectors)
        if writing is not None:
            writing.result()
    if root is not None:
        clear_progress(root)
    return writes.texts


class _Writes:
    """Stores embedded parts (every row of a text gets its vector) and counts what is stored: the
    progress file, the progress callback and the caller's ``stored`` hook see stored vectors only."""

    def __init__(
        self,
        store: Any,
        metadata_of: Callable[[Any], dict],
        total: int,
        root: Path | None,
        progress: Callable[[int, int], None] | None,
        stored: Callable[[list[str]], None] | None,
    ) -> None:
        self.vector_store, self.metadata_of = store, metadata_of
        self.total, self.done, self.texts = total, 0, 0
        self.root, self.progress, self.stored = root, progress, stored
        self.owed: dict[str, int] = {}  # chunk id → its windows not stored yet
        self.held: dict[str, Any] = {}  # chunk id → its first window's vector, stored with its last
        if root is not None and total:
            write_progress(root, 0, total)

    def owe(self, chunk_id: str, windows: int) -> None:
        self.owed[chunk_id] = self.owed.get(chunk_id, 0) + windows

    def store_part(self, rows_of_texts: list[list[tuple[Any, int]]], vectors: Any) -> None:
        ids, vecs, metas, finished = [], [], [], []
        for rows, vector in zip(rows_of_texts, vectors, strict=True):
            for row, n in rows:
                chunk = row.chunk_id
                self.owed[chunk] -= 1
                if n == 0 and self.owed[chunk]:
                    # the chunk's own id waits for its other windows: a fill killed in between leaves the
                    # chunk missing, so the next reconcile embeds it again, never half of it
                    self.held[chunk] = vector
                else:
                    ids.append(window_id(chunk, n))
                    vecs.append(vector)
                    metas.append(self.metadata_of(row))
                if not self.owed[chunk]:
                    del self.owed[chunk]
                    finished.append(chunk)
                    if chunk in self.held:
                        ids.append(chunk)
                        vecs.append(self.held.pop(chunk))
                        metas.append(self.metadata_of(row))
        self.vector_store.upsert(ids, vecs, metas)
        if self.stored is not None:
            self.stored(finished)
        self.done += len(finished)
        if self.root is not None:
            write_progress(self.root, self.done, self.total)
        if self.progress:
            self.progress(self.done, self.total)
