"""The one place that wires concrete objects together for one data directory.

Everything else receives its collaborators as arguments; only this module
decides *which* library source, index, tools, agents and diagnostics a user
gets. That keeps every other module testable on its own and makes the
defaults explicit: the embedded demo library, a persistent ChromaDB, and
evidence-only answers when no language model is configured.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zocrates_nb.diagnostics.events import EventLog, NullEventLog
from zocrates_nb.errors import IndexCorruptError
from zocrates_nb.export.zotero_note import NoteCitations
from zocrates_nb.library.base import LibrarySource
from zocrates_nb.library.pending import zotero_library_path
from zocrates_nb.paths import DataPaths
from zocrates_nb.settings.config import ConfigStore
from zocrates_nb.storage.space import write_problem
from zocrates_nb.workbench.citing import note_with_citations
from zocrates_nb.workbench.exporting import Export, export_answer
from zocrates_nb.workbench.read_only import open_paths, require_writable
from zocrates_nb.workbench.saving import SavedNote, push_outbox_on_sync, save_note
from zocrates_nb.workbench.views import WorkbenchViews

if TYPE_CHECKING:
    from zocrates_nb.agents.answer import Answer, ChatSession
    from zocrates_nb.agents.coordinator import Coordinator
    from zocrates_nb.corpus.sync import Corpus, SyncReport
    from zocrates_nb.diagnostics.views import Diagnostics
    from zocrates_nb.index.hybrid import HybridIndex
    from zocrates_nb.protocols import ChatClient
    from zocrates_nb.retrieval.explain import Explanation
    from zocrates_nb.retrieval.tools import LibraryTools, SearchResults

__all__ = ["SavedNote", "Workbench", "default_workbench", "open_workbench"]


class Workbench(WorkbenchViews):
    """A research workbench over one library and one data directory.

    ``Workbench()`` opens the embedded demo library in the default data
    directory (``ZOCRATES_HOME`` honoured). ``zotero_sqlite=`` / ``zotero_dir=``
    read a Zotero desktop database through a snapshot; a Web API library is
    chosen in the config (``library.source = "zotero-web"``). The first open of
    an empty data directory syncs the library (``auto_sync=False`` skips that).
    ``one_shot=True`` (the CLI's ``search``): dense reads skip ``import chromadb`` and the
    vectors are not reconciled on first use.

    Verbs: ``sync``, ``search``, ``ask``, ``read_document``, ``explain``, ``save_answer`` /
    ``save_session`` / ``save_note``; views (read-only, from ``workbench_views``): ``bundle``,
    ``get_document_toc``, ``collections``, ``papers``, ``status``, ``profile``, ``pending_notes``;
    ``diagnostics``. ``close()`` when done. Attributes: ``paths`` (``DataPaths``), ``config``
    (``ConfigStore``), ``source`` (``LibrarySource``), ``events`` (``EventLog``).
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        zotero_sqlite: str | Path | None = None,
        zotero_dir: str | Path | None = None,
        source: LibrarySource | None = None,
        auto_sync: bool = True,
        progress: bool | None = None,
        dense_in_background: bool = False,
        one_shot: bool = False,
    ) -> None:
        self._one_shot = one_shot  # a command that searches once and exits (index/core.py says what changes)
        # a directory that cannot be written (read-only, full) is opened for reading: read_only.py
        self.paths = open_paths(DataPaths.resolve(data_dir, zotero_data_dir=zotero_dir))
        self.config = ConfigStore.for_paths(self.paths)
        self.events = NullEventLog() if self.paths.unwritable else EventLog(self.paths.diagnostics)
        self.source = self._with_pending(source or self._open_source(zotero_sqlite, zotero_dir))
        self._lock = threading.RLock()
        if self.paths.unwritable:
            return  # no healing, first sync or warm-up: each would write
        self._heal_meta_db()
        if auto_sync and (not self.paths.meta_db.exists() or self.corpus.meta.count() == 0):  # a first sync
            # in the background mode the first sync commits the lexical index only; the warm-up
            # thread embeds the chunks behind it (searches answer lexically, with a notice, until then)
            self.sync(progress=progress, vectors=not dense_in_background)
        if dense_in_background:
            self.index.start_warmup()

    # -- wiring ---------------------------------------------------------
    def _open_source(self, zotero_sqlite: str | Path | None, zotero_dir: str | Path | None) -> LibrarySource:
        if zotero_sqlite or zotero_dir:
            from zocrates_nb.library.desktop.snapshot import ZoteroDesktopLibrary

            lib = self.config.read()["library"]
            return ZoteroDesktopLibrary(
                sqlite_path=Path(zotero_sqlite) if zotero_sqlite else None,
                zotero_dir=Path(zotero_dir) if zotero_dir else None,
                read_pdfs=bool(lib.get("pdf_pages", True)),
                attachment_base_dir=Path(lib["attachment_base_dir"]) if lib.get("attachment_base_dir") else None,
            )
        from zocrates_nb.library import open_source
        from zocrates_nb.library.writing.choice import read_local_key

        # a local API source sends the approved local key (the local writer's), never $ZOTERO_API_KEY
        return open_source(self.paths, self.config.read(), local_key=lambda: read_local_key(self.paths))

    def _with_pending(self, source: LibrarySource) -> LibrarySource:
        """Zotero sources are read through the outbox overlay (saved notes stay visible until Zotero has them)."""
        from zocrates_nb.library.pending import PendingOverlay, is_zotero_source
        from zocrates_nb.library.writing.outbox import Outbox
        from zocrates_nb.workbench.saving import resolve_gone_waiting

        if is_zotero_source(source) and not isinstance(source, PendingOverlay):
            return PendingOverlay(source, Outbox.for_paths(self.paths), resolve_gone=resolve_gone_waiting)
        return source

    @cached_property
    def index(self) -> HybridIndex:
        """The search index (SQLite FTS5 + ChromaDB vectors, fused); opened on first use.

        The embedder (workbench/embedding.py) and the vector store are made on first dense use.
        """
        from functools import partial

        from zocrates_nb.index.core import open_vector_store
        from zocrates_nb.index.hybrid import HybridIndex
        from zocrates_nb.workbench.embedding import embedder_wiring

        config = self.config.read()
        return HybridIndex(
            self.paths,
            config,
            **embedder_wiring(self.paths, config, self.events),  # offline MiniLM, or config["embedding"]
            open_vectors=partial(open_vector_store, self.paths, config, one_shot=self._one_shot),
            has_documents=lambda: next(iter(self.corpus.documents()), None) is not None,
            one_shot=self._one_shot,
        )

    @cached_property
    def corpus(self) -> Corpus:
        """The OKF bundles converted from the library, and the sync that keeps them current."""
        from zocrates_nb.corpus.sync import Corpus
        from zocrates_nb.library.pdf_text import PdfPageReader

        # a paper's PDFs are read per page as it is converted (cached per attachment in the data directory)
        pages, index = PdfPageReader(self.paths.pdf_text), self.config.read().get("index")  # index.annotations …
        return Corpus(self.paths, self.source, indexer=self.index, events=self.events, pages=pages, settings=index)

    @cached_property
    def tools(self) -> LibraryTools:
        """The agents' tools (search_corpus, read_document, get_document_toc) over this corpus; their
        searches mark the hits still in the outbox ("not yet in Zotero"): ``pending_notes``."""
        from zocrates_nb.retrieval.tools import LibraryTools

        tools = LibraryTools(self.corpus, self.index, self.events)
        tools.pending = self.pending_notes
        tools.zotero_library = zotero_library_path(self.source)
        return tools

    @cached_property
    def coordinator(self) -> Coordinator:
        """The agents that answer ``ask`` (evidence-only when no language model is configured)."""
        from zocrates_nb.agents.coordinator import Coordinator
        from zocrates_nb.agents.online_clients import ScholarlySearch

        online = ScholarlySearch.from_config(self.config.read())
        return Coordinator(self.tools, self.config, self._llm_factory, self.events, online=online)

    def _llm_factory(self) -> ChatClient | None:
        """A fresh LLM client from the config as it is *now* (edits apply on the next turn)."""
        from zocrates_nb.agents.llm import LLMClient
        from zocrates_nb.settings.credentials import get_api_key

        settings = self.config.llm()
        return LLMClient(settings, get_api_key(self.paths, settings), self.events) if settings.configured else None

    @cached_property
    def diagnostics(self) -> Diagnostics:
        """Searches, reads, answers and evaluations of every session, as DataFrames (DuckDB over the event log)."""
        from zocrates_nb.diagnostics.views import Diagnostics

        return Diagnostics(self.paths.diagnostics)

    def _writable(self, doing: str) -> None:
        """Refuse ``doing`` while the directory cannot be written; re-open for writing once it can."""
        if require_writable(self.paths, doing):
            with self._lock:
                self.paths = open_paths(self.paths)
                self.events = EventLog(self.paths.diagnostics)
                self._reopen(("tools", "coordinator", "corpus", "index"))

    def _reopen(self, names: Sequence[str]) -> None:
        """Close the named parts and the library source; the source opens afresh, the parts on next use."""
        self._close_opened(names)
        self.source.close()
        self.source = self._with_pending(self._open_source(None, None))

    def _close_opened(self, names: Sequence[str]) -> None:
        """Close (and forget) the named parts that were opened; the next use re-opens them."""
        for name in names:
            obj = self.__dict__.pop(name, None)
            if obj is not None and hasattr(obj, "close"):
                obj.close()

    def _heal_meta_db(self) -> bool:
        """A damaged conversion_meta.db is moved aside and re-made from the bundles (corpus/repair.py)."""
        from zocrates_nb.corpus.repair import heal_meta_db, meta_db_problem, restore_from_bundles

        if meta_db_problem(self.paths.meta_db) is None:
            return False
        self._close_opened(("tools", "coordinator", "corpus", "index"))  # close before the file moves
        heal_meta_db(self.paths, self.events)
        restore_from_bundles(self.corpus, self.index)
        return True

    # -- the main verbs -------------------------------------------------
    def sync(self, progress: bool | None = None, verify: bool = False, *, vectors: bool = True) -> SyncReport:
        """Bring the corpus and indexes in line with the library; returns a ``SyncReport`` (counts, failures).
        ``verify=True`` also checks every bundle's content hash. A database error met on
        the way is checked with ``PRAGMA quick_check``; real damage is repaired and the
        sync run once more. ``vectors=False`` commits the lexical index only (a background
        warm-up embeds behind it)."""
        self._writable("sync the library")
        with self._lock:
            push_outbox_on_sync(self.source, self.paths, self.config, self.events)
            try:
                return self.corpus.sync(progress=progress, verify=verify, vectors=vectors)
            except (sqlite3.DatabaseError, IndexCorruptError):
                if not self._heal_meta_db():
                    raise
                return self.corpus.sync(progress=progress, verify=verify, vectors=vectors)

    def search(
        self, query: str, k: int = 10, filters: dict[str, Any] | None = None, mode: str | None = None
    ) -> SearchResults:
        """Notes and papers ranked for ``query``, one result per document, with provenance (``SearchResults``).
        ``filters``: ``item_type``, ``collection``, ``parent_key``, ``library``; ``mode``: hybrid (default),
        lexical (no model, fastest) or dense."""
        from zocrates_nb.retrieval.tools import MAX_PUBLIC_K

        if self.paths.unwritable and not write_problem(self.paths.root):
            self._writable("search")  # space freed or write access back: the vectors can be opened again
        return self.tools.search_corpus(query, k=k, filters=filters, mode=mode, max_k=MAX_PUBLIC_K)

    def explain(self, query: str, key: str) -> Explanation:
        """Why ``key`` ranks where it does for ``query``: ranks per retriever, chunks, cuts (CLI: ``explain``)."""
        from zocrates_nb.index.embed.model import token_counter
        from zocrates_nb.retrieval.explain import explain

        return explain(self.index, query, key, count_tokens=token_counter(), lexical_only=bool(self.paths.unwritable))

    def read_document(self, key: str, section: str | None = None) -> str:
        """The Markdown of a note or paper (or of one section of it, by heading)."""
        return self.tools.read_document(key, section=section)

    def new_session(self) -> ChatSession:
        """A fresh chat session: ``ask(..., session=s)`` keeps the conversation's history in ``s``."""
        return self.coordinator.new_session()

    def ask(
        self,
        question: str,
        session: ChatSession | None = None,
        on_token: Callable[[str], None] | None = None,
        *,
        library: str | None = None,
    ) -> Answer:
        """Answer a question from the library (and online sources when asked for); returns an ``Answer``.
        ``on_token`` receives the answer as it streams; without a language model the answer is the
        evidence itself (evidence-only). ``library`` (a name or id): search only that library."""
        with self.tools.scoped(library):
            return self.coordinator.ask(question, session=session, on_token=on_token)

    # -- Save as Note ----------------------------------------------------
    def save_note(
        self,
        title: str,
        markdown: str,
        *,
        sources: Sequence[str] = (),
        collection_key: str | None = None,
        parent_key: str | None = None,
        citations: NoteCitations | None = None,
    ) -> SavedNote:
        """Write a Zotero note (HTML) and make it searchable at once; returns where it went (``SavedNote``).

        A note is a child of a paper (``parent_key``) or standalone, optionally in a collection. The demo
        library writes at once; a Zotero library goes through the outbox first (see ``saving.py``)."""
        where = {"collection_key": collection_key, "parent_key": parent_key}
        self._writable("save the note")
        return save_note(self, title, markdown, sources=sources, lock=self._lock, citations=citations, **where)

    def save_answer(
        self,
        answer: Answer,
        *,
        collection_key: str | None = None,
        parent_key: str | None = None,
        title: str | None = None,
    ) -> SavedNote:
        """Save one answer as a note (title: the question, unless given; sources: its citations), each
        verified citation of a library paper as a live Zotero citation."""
        title, markdown, sources, cited = note_with_citations(self, answer, title)
        return self.save_note(
            title, markdown, sources=sources, collection_key=collection_key, parent_key=parent_key, citations=cited
        )

    def save_session(
        self,
        session: ChatSession,
        *,
        collection_key: str | None = None,
        parent_key: str | None = None,
        title: str | None = None,
    ) -> SavedNote:
        """Save a whole chat session as one note, a section per question (refused while it has no answer)."""
        title, markdown, sources, cited = note_with_citations(self, session, title, session=True)
        return self.save_note(
            title, markdown, sources=sources, collection_key=collection_key, parent_key=parent_key, citations=cited
        )

    def export(self, answer: Answer, fmt: str = "markdown", path: str | Path | None = None) -> Export:
        """``answer`` for writing: ``markdown`` (Pandoc/Quarto, ``[@citekey]``, a ``.bib`` beside it),
        ``bibtex`` or ``csl-json``; written to ``path`` when given (``Export.write``)."""
        return export_answer(self.corpus, answer, fmt).written_to(path)

    # -- your own Zotero ---------------------------------------------------
    def use_zotero(self, path: str | Path | None = None) -> SyncReport:
        """Switch this data directory to a Zotero data directory (the detected one by default) and sync it."""
        folder = self.zotero_folder(path)
        self._writable("switch to your Zotero library")
        self.config.update(
            lambda cfg: {
                **cfg,
                "library": {**cfg.get("library", {}), "source": "zotero-dir", "zotero_dir": str(folder)},
            }
        )
        with self._lock:
            self._reopen(("corpus", "tools", "coordinator"))
        return self.sync(progress=False)

    def rebuild_index(self) -> dict[str, Any]:
        """Re-create FTS rows and vectors from the bundles; a bundle that does not verify is skipped,
        reported, and re-made from the library (``zocrates-nb index rebuild``)."""
        from zocrates_nb.corpus.repair import rebuild_and_repair

        self._writable("rebuild the index")
        with self._lock:
            return rebuild_and_repair(self.corpus, self.index)

    def close(self) -> None:
        """Close what this workbench opened: the agents' online client, the diagnostics database, the index
        (after its warm-up thread finishes), the corpus (meta db) and the library source."""
        coordinator = self.__dict__.get("coordinator")
        online = getattr(coordinator, "online", None)
        if online is not None and hasattr(online, "close"):
            online.close()
        for name in ("diagnostics", "index", "corpus"):
            obj = self.__dict__.get(name)
            if obj is not None and hasattr(obj, "close"):
                obj.close()
        if hasattr(self.source, "close"):
            self.source.close()
        with _OPEN_LOCK:  # so open_workbench() never hands out a closed workbench
            if _OPEN.get(self.paths.root) is self:
                del _OPEN[self.paths.root]

    def __repr__(self) -> str:
        return f"<Workbench {self.paths.root} · {self.source.describe()}>"


_OPEN: dict[Path, Workbench] = {}
_OPEN_LOCK = threading.Lock()


def open_workbench(data_dir: str | Path | None = None, **kwargs: Any) -> Workbench:
    """The workbench for a data directory, one instance per directory per process.

    It returns without waiting for the embedding model or the vector store: those load on a
    background thread, and searches answer lexically (with a notice) until they are ready.
    """
    root = DataPaths.resolve(data_dir, kwargs.get("zotero_dir")).root
    with _OPEN_LOCK:
        wb = _OPEN.get(root)
        if wb is None:
            kwargs.setdefault("dense_in_background", True)
            wb = _OPEN[root] = Workbench(data_dir=root, **kwargs)
        return wb


def default_workbench() -> Workbench:
    """The workbench a widget opened without one uses: ``open_workbench()`` (``ZOCRATES_HOME`` honoured).

    The one place that decides the default; widgets reach it through ``zocrates_nb.default_workbench``.
    """
    return open_workbench()
