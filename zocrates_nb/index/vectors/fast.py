"""Read-only dense queries straight through ``chromadb_rust_bindings`` — for one-shot processes.

Why: ``import chromadb`` costs about 2.4 s (1.5 s of it a URI-grammar compile pulled in through
jsonschema by Chroma's embedding-function schemas), while its Rust core — which is all that a
local ``PersistentClient`` calls — imports in well under 0.1 s. A notebook or the engine pays the
import once in the background; ``zocrates-nb search`` without an engine paid it on every command,
more than everything else it does together. So a one-shot search reads the persistent store
through the bindings directly, the same calls ``chromadb.api.rust.RustBindingsAPI`` makes
(``Bindings(...)``, ``get_collection``, ``query``/``get``/``count`` on the default tenant and
database), and the full client (index/vectors/store.py) stays for everything else.

Rules that keep the two paths the same store:

- **No writes of ours**: the bindings open with ``MigrationMode.Validate`` (a store that needs a
  migration fails to open here, and the full client migrates it) and with the hash algorithm and
  ``allow_reset`` our ``PersistentClient`` uses (Chroma's defaults: md5, no reset). Writes
  (``upsert``/``delete_*``/``reset``) always go to the full ``VectorStore``. (Chroma's Rust core
  itself adds a row to its ``acquire_write`` table when it opens, under either client.)
- **Same lock, same generations**: each read runs under ``<data-dir>/locks/chroma.lock`` and
  reopens the bindings when ``chroma.generation`` moved since they opened, exactly as
  ``VectorStore._run`` does — so a write by another process (or by our own full store) is seen.
- **Never silently different**: anything the fast path cannot vouch for — no store yet, a
  collection built by another model, an ``ef_search`` below ``HNSW_EF_SEARCH`` (the full client
  widens it), a bindings API that does not match (``AttributeError``/``TypeError``), any error
  from Chroma — switches this object to the full client for good (logged at debug level), and
  the full client answers the same call or raises its own, user-facing, error.

The reads themselves are ``VectorReads``' (shared with the full store), run against a small
adapter that answers ``query``/``get``/``count`` like a Chroma collection.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from zocrates_nb.errors import ZocratesError
from zocrates_nb.index.vectors import handles as vector_handles
from zocrates_nb.index.vectors.handles import Handle, exclusive
from zocrates_nb.index.vectors.reads import VectorReads
from zocrates_nb.paths import DataPaths

__all__ = ["FastPathUnavailable", "ReadFirstVectors", "open_bindings"]

_log = logging.getLogger(__name__)

#: Chroma's defaults, which ``VectorStore._new_client`` does not change (``Settings(...)`` there
#: sets only telemetry and ``allow_reset=False``).
DEFAULT_TENANT = "default_tenant"
DEFAULT_DATABASE = "default_database"


class FastPathUnavailable(Exception):
    """The bindings cannot serve this store as the full client would; the reason is the message."""


class _BindingsCollection:
    """The three reads of a Chroma collection that ``VectorReads`` uses, answered by the bindings.

    Results are the plain dicts ``Collection.query``/``get`` return (only the keys asked for).
    """

    def __init__(self, bindings: Any, collection_id: str) -> None:
        self._bindings = bindings
        self._id = collection_id

    def query(
        self,
        *,
        n_results: int,
        query_embeddings: Sequence[Any],
        where: Mapping[str, Any] | None = None,
        include: Sequence[str] = ("distances",),
        ids: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        import json

        response = self._bindings.query(
            collection_id=self._id,
            ids=list(ids) if ids is not None else None,
            query_embeddings=[np.asarray(v, dtype=np.float32) for v in query_embeddings],
            n_results=int(n_results),
            where=json.dumps(where) if where else None,
            where_document=None,
            include=list(include),
            tenant=DEFAULT_TENANT,
            database=DEFAULT_DATABASE,
        )
        return {"ids": response.ids, "distances": response.distances}

    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        include: Sequence[str] = (),
        limit: int | None = None,
        offset: int | None = None,
    ) -> dict[str, Any]:
        import json

        response = self._bindings.get(
            collection_id=self._id,
            ids=list(ids) if ids is not None else None,
            where=json.dumps(where) if where else None,
            limit=limit,
            offset=offset or 0,
            where_document=None,
            include=list(include),
            tenant=DEFAULT_TENANT,
            database=DEFAULT_DATABASE,
        )
        return {"ids": response.ids, "embeddings": response.embeddings, "metadatas": response.metadatas}

    def count(self) -> int:
        return int(self._bindings.count(collection_id=self._id, tenant=DEFAULT_TENANT, database=DEFAULT_DATABASE))


def open_bindings(path: Path, collection_name: str, model_id: str, dim: int, ef_search: int) -> _BindingsCollection:
    """Open the persistent store at ``path`` read-only and return its collection, or raise
    ``FastPathUnavailable`` saying why the full client must handle it. Caller holds the lock."""
    if not (path / "chroma.sqlite3").exists():
        raise FastPathUnavailable(f"no store at {path} yet")
    try:
        import resource  # what RustBindingsAPI sizes the HNSW cache by; absent on Windows
    except ImportError as exc:
        raise FastPathUnavailable("no resource module on this platform") from exc
    import chromadb_rust_bindings as rb

    config = rb.SqliteDBConfig(
        hash_type=rb.MigrationHash.MD5,
        migration_mode=rb.MigrationMode.Validate,
        url=str(path / "chroma.sqlite3"),
    )
    bindings = rb.Bindings(
        allow_reset=False,
        sqlite_db_config=config,
        persist_path=str(path),
        # as RustBindingsAPI sizes it: each HNSW index keeps 5 files open
        hnsw_cache_size=resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 5,
    )
    collection = bindings.get_collection(collection_name, DEFAULT_TENANT, DEFAULT_DATABASE)
    meta = collection.metadata or {}
    if (meta.get("zocrates_model_id"), meta.get("zocrates_dim")) != (model_id, dim):
        raise FastPathUnavailable(f"collection built by {meta.get('zocrates_model_id')!r}, not {model_id!r}")
    hnsw = (collection.configuration or {}).get("hnsw") or {}
    if int(hnsw.get("ef_search") or 0) < ef_search:
        raise FastPathUnavailable(f"ef_search {hnsw.get('ef_search')} < {ef_search}: the full client widens it")
    return _BindingsCollection(bindings, str(collection.id))


class ReadFirstVectors(VectorReads):
    """A ``VectorStore`` for one-shot processes: reads through the bindings, the rest through the full store.

    Same constructor arguments as ``VectorStore`` (persistent mode only; index/core.py picks the
    plain store for a Chroma server). ``opener`` replaces ``open_bindings`` (tests simulate a
    broken bindings API with it); ``fast_reason`` is None while the fast path serves reads, else
    why it stopped.
    """

    def __init__(
        self,
        paths: DataPaths,
        config: Mapping[str, Any] | None = None,
        *,
        model_id: str,
        dim: int,
        lock_timeout: float = 60.0,
        opener: Callable[..., Any] | None = None,
    ) -> None:
        from zocrates_nb.index.vectors.store import COLLECTION_NAME, HNSW_EF_SEARCH

        self.paths, self.config = paths, dict(config or {})
        self.model_id, self.dim = model_id, int(dim)
        self.collection_name, self.ef_search = COLLECTION_NAME, HNSW_EF_SEARCH
        self.lock_timeout = lock_timeout
        self.mode = "persistent"
        self.path = Path(paths.chroma).resolve()
        self._lock_path = Path(paths.locks) / "chroma.lock"
        self._generation_path = Path(paths.locks) / "chroma.generation"
        self._opener = opener or open_bindings
        self._handle = Handle(f"bindings:{self.path}")  # private: never shared with a full client
        self._full: Any = None
        self.fast_reason: str | None = None

    def __repr__(self) -> str:
        how = "bindings" if self.fast_reason is None else f"full client ({self.fast_reason})"
        return f"ReadFirstVectors({self.path}, reads={how})"

    # ------------------------------------------------------------------ reads (VectorReads' queries)
    def _run(self, operation: Any, *, write: bool = False) -> Any:
        if self.fast_reason is None and not write:
            try:
                return self._run_fast(operation)
            except ZocratesError:
                raise  # IndexBusyError: the full client would wait for the same lock
            except FastPathUnavailable as exc:
                self._give_up(str(exc))
            except Exception as exc:  # noqa: BLE001 — not swallowed: the full client runs the call and decides
                self._give_up(f"{type(exc).__name__}: {exc}")
        return self._full_store()._run(operation, write=write)

    def _run_fast(self, operation: Any) -> Any:
        with exclusive(self._handle, self._lock_path, self.lock_timeout):
            handle = self._handle
            current = vector_handles.read_generation(self._generation_path)
            if handle.collection is not None and handle.generation != current:
                handle.collection = None  # another process wrote: reopen, as VectorStore._run does
            if handle.collection is None:
                handle.collection = self._opener(
                    self.path, self.collection_name, self.model_id, self.dim, self.ef_search
                )
                handle.generation = current
            return operation(handle.collection)

    def _give_up(self, reason: str) -> None:
        _log.debug("dense reads of %s use the full Chroma client: %s", self.path, reason)
        self.fast_reason = reason
        self._handle.collection = None

    def _full_store(self) -> Any:
        if self._full is None:
            from zocrates_nb.index.vectors.store import VectorStore

            self._full = VectorStore(
                self.paths, self.config, model_id=self.model_id, dim=self.dim, lock_timeout=self.lock_timeout
            )
        return self._full

    def generation(self) -> str | None:
        return vector_handles.read_generation(self._generation_path)

    # ------------------------------------------------------------------ writes: the full store's
    def upsert(
        self,
        ids: Sequence[str],
        embeddings: np.ndarray | Sequence[Sequence[float]],
        metadatas: Sequence[Mapping[str, Any]],
        documents: Sequence[str] | None = None,
    ) -> None:
        self._full_store().upsert(ids, embeddings, metadatas, documents)

    def delete_keys(self, keys: Iterable[str]) -> None:
        self._full_store().delete_keys(keys)

    def delete_ids(self, ids: Iterable[str]) -> None:
        self._full_store().delete_ids(ids)

    def reset(self) -> None:
        self._full_store().reset()

    def close(self) -> None:
        self._handle.collection = None
        if self._full is not None:
            self._full.close()

    def __enter__(self) -> ReadFirstVectors:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
