"""Dense vectors in ChromaDB — the only module that imports ``chromadb``.

Why this module is shaped the way it is
---------------------------------------
Users open several notebooks on one data directory, and Chroma's ``PersistentClient`` is
thread-safe but *not process-safe*: a second process keeps serving its in-memory HNSW
segment (stale reads), two writers overwrite each other's persisted segment files, and two
clients opening the directory at once can hang on SQLite's busy timeout. So in the default
``persistent`` mode every Chroma call in every process runs under one cross-process file lock
(``<data-dir>/locks/chroma.lock``), and each write bumps a generation counter
(``<data-dir>/locks/chroma.generation``). Before any call, a process whose client was opened
at an older generation drops its cached Chroma system for that path and reopens it, which
reloads the persisted segment and replays Chroma's write-ahead log — so it sees the other
kernel's writes and never writes from a stale in-memory index. The lock is held only for
the Chroma call itself (embedding happens before), so queries from other kernels wait
milliseconds, never minutes; a lock not obtained within ``lock_timeout`` raises
``IndexBusyError`` instead of hanging.

We chose this over a managed ``chroma run`` server per data directory because it needs no
long-lived child process (orphans, port clashes, a 2–4 s start in every first kernel) and keeps
the data directory self-contained. A lab that outgrows one machine sets
``config["vectors"] = {"mode": "http", "host": ..., "port": ...}`` and talks to a real
``chroma run`` server through ``HttpClient``; there the server owns concurrency.

Vectors are always passed in explicitly (``embedding_function=None``): Chroma's default
embedding function would try to download a model.
"""

from __future__ import annotations

import shutil
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from zocrates_nb.errors import IndexCorruptError, StorageUnavailableError, ZocratesError
from zocrates_nb.index.vectors import handles as vector_handles
from zocrates_nb.index.vectors.handles import IndexBusyError, acquire_handle, drop_client, exclusive, release_handle
from zocrates_nb.index.vectors.meta import chunk_metadata, is_chroma_folder, is_locked_error, user_error, where_for
from zocrates_nb.index.vectors.reads import VectorReads
from zocrates_nb.paths import DataPaths

__all__ = ["COLLECTION_NAME", "REBUILD_COMMAND", "IndexBusyError", "VectorStore", "chunk_metadata", "where_for"]

COLLECTION_NAME = "zocrates_chunks"
REBUILD_COMMAND = "zocrates-nb index rebuild"
_SCHEMA_VERSION = 1
#: HNSW beam width at query time. Chroma's default (100) found on average 90% of the true top-10 (one
#: query in fifty: none of it) at 60,000 clustered MiniLM vectors; 400 found 99.4% (worst query 80%)
#: for +0.7 ms a query (benchmarks/bench_search_scale.py setup; recall checked against exact search).
HNSW_EF_SEARCH = 400
_WRITE_BATCH = 500  # rows per locked upsert: keeps other kernels' waits short
_REBUILD_HINT = f"Run `{REBUILD_COMMAND}` — it re-embeds everything from the corpus folder (no Zotero access needed)."


class VectorStore(VectorReads):
    """Chunk vectors of one corpus in one Chroma collection (cosine space), safe across kernels.

    ``config`` is the full workbench config (only ``config["vectors"]`` is read):
    ``{"mode": "persistent"}`` (default, ``<data-dir>/chroma``) or
    ``{"mode": "http", "host": "127.0.0.1", "port": 8000}`` for a ``chroma run`` server.
    ``model_id``/``dim`` are recorded in the collection; opening a collection built by another
    model raises ``IndexCorruptError`` naming that model and the rebuild command — vectors of
    two models are never mixed. Opening is lazy, so ``reset()`` works on a damaged index.
    """

    def __init__(
        self,
        paths: DataPaths,
        config: Mapping[str, Any] | None = None,
        *,
        model_id: str,
        dim: int,
        collection_name: str = COLLECTION_NAME,
        lock_timeout: float = 60.0,
    ) -> None:
        vectors = dict((config or {}).get("vectors") or {})
        self.mode = vectors.get("mode") or "persistent"
        if self.mode not in ("persistent", "http"):
            raise ZocratesError(
                f"Unknown vectors mode {self.mode!r} in the config.",
                hint='Set config["vectors"]["mode"] to "persistent" or "http".',
            )
        self.paths = paths
        self.model_id = model_id
        self.dim = int(dim)
        self.collection_name = collection_name
        self.lock_timeout = lock_timeout
        self.host = vectors.get("host") or "127.0.0.1"
        self.port = int(vectors.get("port") or 8000)
        self.path = Path(paths.chroma).resolve()
        self._lock_path = Path(paths.locks) / "chroma.lock"
        self._generation_path = Path(paths.locks) / "chroma.generation"
        identity = f"persistent:{self.path}" if self.mode == "persistent" else f"http:{self.host}:{self.port}"
        # One handle per location: Chroma caches one System per path, so two handles on one path
        # would evict each other's client. One collection per location is all the workbench uses.
        self._handle = acquire_handle(identity)
        if self._handle.collection_name is None:
            self._handle.collection_name = collection_name
        elif self._handle.collection_name != collection_name:
            release_handle(self._handle, _evict_system)
            raise ValueError(
                f"{identity} is already open with collection {self._handle.collection_name!r} "
                "in this process; use one collection per data directory"
            )
        self._closed = False

    def __repr__(self) -> str:
        where = self.path if self.mode == "persistent" else f"http://{self.host}:{self.port}"
        return f"VectorStore({where}, collection={self.collection_name!r}, model={self.model_id!r})"

    # ------------------------------------------------------------------ public API (reads: index/vectors/reads.py)
    def upsert(
        self,
        ids: Sequence[str],
        embeddings: np.ndarray | Sequence[Sequence[float]],
        metadatas: Sequence[Mapping[str, Any]],
        documents: Sequence[str] | None = None,
    ) -> None:
        """Insert or replace chunk vectors (idempotent; re-indexing never grows the index)."""
        ids = [str(i) for i in ids]
        vectors = np.asarray(embeddings, dtype=np.float32)
        if not ids:
            return
        if vectors.ndim != 2 or vectors.shape != (len(ids), self.dim):
            raise ValueError(f"expected embeddings of shape ({len(ids)}, {self.dim}), got {vectors.shape}")
        if len(metadatas) != len(ids) or (documents is not None and len(documents) != len(ids)):
            raise ValueError("ids, embeddings, metadatas and documents must have the same length")
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate ids in one upsert")
        if not np.all(np.isfinite(vectors)):
            raise ValueError("embeddings contain NaN or infinity")
        for start in range(0, len(ids), _WRITE_BATCH):
            end = start + _WRITE_BATCH
            batch = dict(
                ids=ids[start:end],
                embeddings=vectors[start:end],
                metadatas=[dict(m) for m in metadatas[start:end]],
                documents=list(documents[start:end]) if documents is not None else None,
            )
            self._run(lambda col, b=batch: col.upsert(**b), write=True)

    def delete_keys(self, keys: Iterable[str]) -> None:
        """Delete every chunk of these documents (by the ``key`` metadata)."""
        keys = sorted({str(k) for k in keys})
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            self._run(lambda col, p=part: col.delete(where={"key": {"$in": p}}), write=True)

    def delete_ids(self, ids: Iterable[str]) -> None:
        """Delete chunks by id (e.g. the tail chunks of a document that got shorter)."""
        ids = sorted({str(i) for i in ids})
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            self._run(lambda col, p=part: col.delete(ids=p), write=True)

    def generation(self) -> str | None:
        """A token that changes with every write to this store (persistent mode); None on a server."""
        return self._read_generation() if self.mode == "persistent" else None

    def reset(self) -> None:
        """Empty the store (even a damaged one) and record the current model; for rebuilds."""
        with self._exclusive():
            handle = self._handle
            if self.mode == "persistent":
                drop_client(handle, _evict_system)
                _evict_system(str(self.path))
                self._remove_store_dir()
                self._open_locked(create=True)
                self._bump_generation()
            else:
                client = handle.client or self._new_client()
                try:
                    client.delete_collection(self.collection_name)
                except Exception as exc:  # noqa: BLE001 — only "does not exist" is expected here
                    if "does not exist" not in str(exc).lower() and "not found" not in str(exc).lower():
                        raise
                handle.client, handle.collection = client, None
                self._open_locked(create=True)

    def close(self) -> None:
        """Release this store's share of the process-wide client (idempotent)."""
        if not self._closed:
            self._closed = True
            release_handle(self._handle, _evict_system)

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ locking and generations
    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Thread lock + (persistent mode) the cross-process lock, with a bounded wait."""
        if self._closed:
            raise ZocratesError("This vector store was closed.", hint="Open the workbench again.")
        with exclusive(self._handle, self._lock_path if self.mode == "persistent" else None, self.lock_timeout):
            yield

    def _read_generation(self) -> str:
        return vector_handles.read_generation(self._generation_path)

    def _bump_generation(self) -> None:
        vector_handles.bump_generation(self._generation_path, self._handle)

    def _run(self, operation: Any, *, write: bool = False) -> Any:
        """Run ``operation(collection)`` under the lock on a fresh-enough client, mapping errors."""
        attempts = 3
        for attempt in range(attempts):
            with self._exclusive():
                handle = self._handle
                if (
                    self.mode == "persistent"
                    and handle.client is not None
                    and handle.generation != self._read_generation()
                ):
                    drop_client(handle, _evict_system)
                if handle.collection is None:
                    self._open_locked(create=write)
                self._check_model()
                try:
                    result = operation(handle.collection)
                except Exception as exc:  # noqa: BLE001 — classified below, never swallowed
                    if is_locked_error(exc) and attempt < attempts - 1:
                        drop_client(handle, _evict_system)
                        time.sleep(0.2 * (attempt + 1))
                        continue
                    raise self._translate(exc) from exc
                if write and self.mode == "persistent":
                    self._bump_generation()
                return result
        raise AssertionError("unreachable")

    def _translate(self, exc: Exception) -> Exception:
        error = user_error(
            exc,
            http=self.mode == "http",
            host=self.host,
            port=self.port,
            where=self._where(),
            rebuild_hint=_REBUILD_HINT,
        )
        if error is not exc and isinstance(error, (IndexCorruptError, StorageUnavailableError)):
            # a damaged or full store: stop its system now (its threads would abort the process at exit)
            drop_client(self._handle, _evict_system)
        return error

    def _where(self) -> str:
        return str(self.path) if self.mode == "persistent" else f"http://{self.host}:{self.port}"

    # ------------------------------------------------------------------ opening
    def open(self) -> None:
        """Open (or create) the collection now instead of at the first call: ``import chromadb`` and
        the client take seconds, which a sync spends while its first vectors are embedded."""
        with self._exclusive():
            if self._handle.collection is None:
                self._open_locked(create=True)
            self._check_model()

    def _new_client(self) -> Any:
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        if self.mode == "http":
            try:
                return chromadb.HttpClient(host=self.host, port=self.port, settings=settings)
            except Exception as exc:  # noqa: BLE001 — mapped to a user-facing error
                raise self._translate(exc) from exc
        return chromadb.PersistentClient(path=str(self.path), settings=settings)

    def _open_locked(self, create: bool = False) -> None:
        """Open (or create) the collection and check which model built it. Caller holds the lock."""
        handle = self._handle
        if self.mode == "persistent":
            existed = (self.path / "chroma.sqlite3").exists()
            if not existed and self._read_generation() and not create:
                raise IndexCorruptError(
                    f"The vector index at {self.path} is missing (was the folder deleted?).", hint=_REBUILD_HINT
                )
            generation = self._read_generation()
            self.path.mkdir(parents=True, exist_ok=True)
        try:
            if handle.client is None:
                handle.client = self._new_client()
            collection = handle.client.get_or_create_collection(
                self.collection_name,
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine", "ef_search": HNSW_EF_SEARCH}},
                metadata={
                    "zocrates_model_id": self.model_id,
                    "zocrates_dim": self.dim,
                    "zocrates_schema": _SCHEMA_VERSION,
                },
            )
            _widen_search(collection)
        except ZocratesError:
            drop_client(handle, _evict_system)
            raise
        except Exception as exc:  # noqa: BLE001 — mapped to a user-facing error
            drop_client(handle, _evict_system)
            if self.mode == "persistent":
                _evict_system(str(self.path))
            error = self._translate(exc)
            if error is exc:  # an unclassified failure while opening is still a broken index
                error = IndexCorruptError(
                    f"The vector index at {self._where()} could not be opened: {exc}", hint=_REBUILD_HINT
                )
            raise error from exc
        meta = collection.metadata or {}
        handle.built_by = (meta.get("zocrates_model_id"), meta.get("zocrates_dim"))
        handle.collection = collection
        if self.mode == "persistent":
            if not existed:
                self._bump_generation()  # a store now exists here: a later disappearance is detectable
            else:
                handle.generation = generation

    def _check_model(self) -> None:
        """Refuse to read or write vectors built by another model (never mix them)."""
        built_by, built_dim = self._handle.built_by
        if built_by != self.model_id or built_dim != self.dim:
            raise IndexCorruptError(
                f"The vector index at {self._where()} was built with {built_by or 'an unknown model'} "
                f"({built_dim or '?'}-d vectors), not {self.model_id} ({self.dim}-d), the model the config "
                "names; vectors of two models cannot be mixed.",
                hint=f"Run `zocrates-nb index model reembed` to re-embed every chunk with {self.model_id} "
                f"(resumable), or `zocrates-nb index model show` to see the configured model.",
            )

    def _remove_store_dir(self) -> None:
        """Delete the chroma folder (only if it looks like one: never an arbitrary directory)."""
        if not self.path.exists():
            return
        if not is_chroma_folder({p.name for p in self.path.iterdir()}):
            raise ZocratesError(
                f"Refusing to delete {self.path}: it does not look like a Chroma folder.",
                hint="Move the unexpected files away, then rebuild the index.",
            )
        shutil.rmtree(self.path)


def _widen_search(collection: Any) -> None:
    """Raise ``ef_search`` of a collection created with Chroma's default (before ``HNSW_EF_SEARCH``).

    A persisted setting: it applies when a process loads the HNSW segment, which happens at the
    first query, so calling this right after opening covers this process too. Caller holds the lock.
    """
    hnsw = (getattr(collection, "configuration_json", None) or {}).get("hnsw") or {}
    if int(hnsw.get("ef_search") or 0) < HNSW_EF_SEARCH:
        with warnings.catch_warnings():  # Chroma calls embedding_function=None "legacy"; we pass vectors
            warnings.filterwarnings("ignore", message="legacy embedding function config", category=DeprecationWarning)
            collection.modify(configuration={"hnsw": {"ef_search": HNSW_EF_SEARCH}})


def _evict_system(identifier: str | None) -> None:
    """Stop and forget Chroma's cached System for ``identifier`` (a persist path), if any.

    Also needed after a *failed* open: Chroma leaves the half-started System in its cache, and
    the next client on that path would reuse it.
    """
    if not identifier:
        return
    from chromadb.api.shared_system_client import SharedSystemClient

    system = SharedSystemClient._identifier_to_system.pop(identifier, None)
    SharedSystemClient._identifier_to_refcount.pop(identifier, None)
    if system is not None:
        try:
            system.stop()
        except AttributeError:  # a System whose start failed has no bindings to release
            pass
