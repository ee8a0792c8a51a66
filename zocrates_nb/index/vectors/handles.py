"""The vector store's process-wide client cache and its cross-process lock and generation counter.

Chroma's ``PersistentClient`` is not process-safe (index/vectors/store.py says why), so every Chroma
call runs under a file lock, and every write bumps a generation token that tells other processes
their cached client is stale. This module holds that machinery without importing Chroma: the
one function that must touch Chroma's system cache (``evict``) is passed in by index/vectors/store.py.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zocrates_nb.errors import ZocratesError
from zocrates_nb.storage.locks import Timeout, file_lock

__all__ = [
    "Handle",
    "IndexBusyError",
    "acquire_handle",
    "release_handle",
    "drop_client",
    "exclusive",
    "read_generation",
    "bump_generation",
]

#: Forgets Chroma's cached System for a persist path (index/vectors/store.py owns Chroma).
Evict = Callable[[str | None], None]


class IndexBusyError(ZocratesError):
    """Another process held the vector-index lock for longer than the timeout."""


@dataclass
class Handle:
    """One Chroma client per (mode, location) per process, shared by every VectorStore on it."""

    identity: str
    lock: threading.RLock = field(default_factory=threading.RLock)
    client: Any = None
    collection: Any = None
    generation: str | None = None  # the generation our client has seen (persistent mode)
    built_by: tuple[str | None, int | None] = (None, None)  # model id and dim recorded in the collection
    users: int = 0
    collection_name: str | None = None


_HANDLES: dict[str, Handle] = {}
_HANDLES_LOCK = threading.Lock()


def acquire_handle(identity: str) -> Handle:
    with _HANDLES_LOCK:
        handle = _HANDLES.setdefault(identity, Handle(identity))
        handle.users += 1
        return handle


def release_handle(handle: Handle, evict: Evict) -> None:
    with _HANDLES_LOCK:
        handle.users -= 1
        if handle.users > 0:
            return
        _HANDLES.pop(handle.identity, None)
    with handle.lock:
        drop_client(handle, evict)


def drop_client(handle: Handle, evict: Evict) -> None:
    """Forget the cached Chroma system for this location so the next open reads from disk.

    ``SharedSystemClient`` caches one System (with its in-memory HNSW segment) per path; a
    new ``PersistentClient`` on the same path would reuse it and stay stale. We stop and evict
    only our path's system — ``clear_system_cache()`` would break other stores in the process.
    """
    client, handle.client, handle.collection, handle.generation = handle.client, None, None, None
    handle.built_by = (None, None)
    if client is not None:
        evict(getattr(client, "_identifier", None))


@contextmanager
def exclusive(handle: Handle, lock_path: Path | None, timeout: float) -> Iterator[None]:
    """The handle's thread lock + (with ``lock_path``: persistent mode) the cross-process lock, bounded wait."""
    with handle.lock:
        if lock_path is None:
            yield
            return
        lock = file_lock(lock_path, timeout=timeout)
        try:
            lock.acquire()
        except Timeout:
            raise IndexBusyError(
                f"The vector index is busy: another process held {lock_path} for over {timeout:.0f} s.",
                hint="Wait for the other notebook's indexing to finish and retry.",
            ) from None
        try:
            yield
        finally:
            lock.release()


def read_generation(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""


def bump_generation(path: Path, handle: Handle) -> None:
    """Tell other processes their cached client is stale (atomic replace, unique token)."""
    token = f"{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(token, encoding="utf-8")
    os.replace(tmp, path)
    handle.generation = token
