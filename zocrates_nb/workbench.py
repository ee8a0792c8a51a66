"""The one place that wires concrete objects together for one data directory.

Everything else receives its collaborators as arguments; only this module
decides *which* library source, index, tools, agents and diagnostics a user
gets. That keeps every other module testable on its own and makes the
defaults explicit: the embedded demo library, a persistent ChromaDB, and
evidence-only answers when no language model is configured.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .config import ConfigStore
from .diagnostics.events import EventLog
from .errors import LibraryReadOnlyError, NotFoundError, ZocratesError
from .library.base import Collection, LibrarySource, Paper
from .paths import DataPaths

if TYPE_CHECKING:
    from .explain import Explanation
    from .render import BundleView


@dataclass(frozen=True)
class SavedNote:
    """Where a Save as Note went, in words a user understands."""

    key: str
    title: str
    parent_key: str | None
    collection_key: str | None
    where: str
    #: demo | zotero-local | zotero-web | outbox, and why a note is in the outbox
    destination: str = "demo"
    reason: str | None = None

    def to_dict(self) -> dict:
        """The ``"saved"`` record of ``ask --save --json``."""
        return {"key": self.key, "where": self.destination, "parent_key": self.parent_key,
                "collection_keys": [self.collection_key] if self.collection_key else [], "reason": self.reason}

    def _repr_html_(self) -> str:
        # HTML with escaped text, not Markdown: JupyterLab renders trusted Markdown output's raw
        # HTML unsanitized, and a title can come from a model's answer.
        from .render import escape

        waiting = (f" Not yet in Zotero: {escape(self.reason or '')}" if self.destination == "outbox" else "")
        return f"Saved <strong>{escape(self.title)}</strong> — {escape(self.where)}.{waiting}"


class Workbench:
    """A research workbench over one library and one data directory.

    ``Workbench()`` opens the embedded demo library in the default data
    directory (``ZOCRATES_HOME`` honoured). ``zotero_sqlite=`` / ``zotero_dir=``
    read a Zotero desktop database through a snapshot; a Web API library is
    chosen in the config (``library.source = "zotero-web"``).
    """

    def __init__(self, data_dir: str | Path | None = None, *,
                 zotero_sqlite: str | Path | None = None,
                 zotero_dir: str | Path | None = None,
                 source: LibrarySource | None = None,
                 auto_sync: bool = True,
                 progress: bool | None = None,
                 dense_in_background: bool = False) -> None:
        self.paths = DataPaths.resolve(data_dir, zotero_data_dir=zotero_dir).ensure()
        self.config = ConfigStore.for_paths(self.paths)
        self.events = EventLog(self.paths.diagnostics)
        self.source = self._with_pending(source or self._open_source(zotero_sqlite, zotero_dir))
        self._lock = threading.RLock()
        self._heal_meta_db()
        if auto_sync and self._needs_first_sync():
            # in the background mode the first sync commits the lexical index only; the warm-up
            # thread embeds the chunks behind it (searches answer lexically, with a notice, until then)
            self.sync(progress=progress, vectors=not dense_in_background)
        if dense_in_background:
            self.index.start_warmup()

    # -- wiring ---------------------------------------------------------
    def _open_source(self, zotero_sqlite, zotero_dir) -> LibrarySource:
        if zotero_sqlite or zotero_dir:
            from .library.zotero_desktop import ZoteroDesktopLibrary

            return ZoteroDesktopLibrary(sqlite_path=Path(zotero_sqlite) if zotero_sqlite else None,
                                        zotero_dir=Path(zotero_dir) if zotero_dir else None)
        from .library import open_source

        return open_source(self.paths, self.config.read())

    def _with_pending(self, source: LibrarySource) -> LibrarySource:
        """Zotero sources are read through the outbox overlay (saved notes stay visible until Zotero has them)."""
        from .library.pending import PendingOverlay, is_zotero_source
        from .outbox import Outbox

        if is_zotero_source(source) and not isinstance(source, PendingOverlay):
            return PendingOverlay(source, Outbox.for_paths(self.paths))
        return source

    @cached_property
    def index(self):
        from .index.hybrid import HybridIndex

        return HybridIndex(self.paths, self.config.read())

    @cached_property
    def corpus(self):
        from .corpus.sync import Corpus

        return Corpus(self.paths, self.source, indexer=self.index, events=self.events)

    @cached_property
    def tools(self):
        from .tools import LibraryTools

        return LibraryTools(self.corpus, self.index, self.events)

    @cached_property
    def coordinator(self):
        from .agents.coordinator import Coordinator
        from .agents.online_clients import ScholarlySearch

        online = ScholarlySearch.from_config(self.config.read())
        return Coordinator(self.tools, self.config, self._llm_factory, self.events, online=online)

    def _llm_factory(self):
        """A fresh LLM client from the config as it is *now* (edits apply on the next turn)."""
        from .agents.llm import LLMClient
        from .credentials import get_api_key

        settings = self.config.llm()
        if not settings.configured:
            return None
        return LLMClient(settings, get_api_key(self.paths, settings), self.events)

    @cached_property
    def diagnostics(self):
        from .diagnostics.views import Diagnostics

        return Diagnostics(self.paths.diagnostics)

    def _needs_first_sync(self) -> bool:
        return not self.paths.meta_db.exists() or self.corpus.meta.count() == 0

    def _heal_meta_db(self) -> bool:
        """A damaged conversion_meta.db is moved aside and re-made from the bundles (corpus/repair.py)."""
        from .corpus.repair import heal_meta_db, meta_db_problem, restore_from_bundles

        if meta_db_problem(self.paths.meta_db) is None:
            return False
        for name in ("tools", "coordinator", "corpus", "index"):    # close before the file moves
            obj = self.__dict__.pop(name, None)
            if obj is not None and hasattr(obj, "close"):
                obj.close()
        heal_meta_db(self.paths, self.events)
        restore_from_bundles(self.corpus, self.index)
        return True

    # -- the main verbs -------------------------------------------------
    def sync(self, progress: bool | None = None, verify: bool = False, *, vectors: bool = True):
        """Bring the corpus and indexes in line with the library; returns a SyncReport.

        ``verify=True`` also checks every bundle's content hash. A database error met on
        the way is checked with ``PRAGMA quick_check``; real damage is repaired and the
        sync run once more. ``vectors=False`` commits the lexical index only (a background
        warm-up embeds behind it)."""
        import sqlite3

        from .errors import IndexCorruptError

        with self._lock:
            self._push_outbox_quietly()
            try:
                return self.corpus.sync(progress=progress, verify=verify, vectors=vectors)
            except (sqlite3.DatabaseError, IndexCorruptError):
                if not self._heal_meta_db():
                    raise
                return self.corpus.sync(progress=progress, verify=verify, vectors=vectors)

    def _push_outbox_quietly(self) -> None:
        """On sync, send what waits in the outbox (a closed door only leaves it there, with the reason)."""
        from .library.pending import is_zotero_source
        from .outbox import Outbox
        from .saving import push_outbox

        if is_zotero_source(self.source) and Outbox.for_paths(self.paths).counts()["outbox"]:
            try:
                report = push_outbox(self.paths, self.config.read())
                self.events.emit("outbox_push", written=len(report.written), kept=len(report.kept))
            except ZocratesError as exc:
                self.events.emit("outbox_push", error=exc.message)

    def search(self, query: str, k: int = 10, filters: dict | None = None, mode: str | None = None):
        from .tools import MAX_PUBLIC_K

        return self.tools.search_corpus(query, k=k, filters=filters, mode=mode, max_k=MAX_PUBLIC_K)

    def explain(self, query: str, key: str) -> Explanation:
        """Why ``key`` ranks where it does for ``query``: ranks per retriever, chunks, cuts (CLI: ``explain``)."""
        from .explain import explain
        from .index.embed import token_counter

        return explain(self.index, query, key, count_tokens=token_counter())

    def read_document(self, key: str, section: str | None = None) -> str:
        return self.tools.read_document(key, section=section)

    def get_document_toc(self, key: str) -> list[dict]:
        return self.tools.get_document_toc(key)

    def bundle(self, key: str) -> BundleView:
        """A note or paper as a notebook shows it: title, provenance, sanitized content (``BundleView``).

        The Markdown is read first (one ``read`` event; a stale bundle is re-materialised), then
        the manifest of that same fresh bundle is looked up (a ``lookup``, so one display counts
        as one read in the hit rates).
        """
        from .render import BundleView

        markdown = self.read_document(key)
        return BundleView(self.corpus.manifest(key), markdown)

    def new_session(self):
        return self.coordinator.new_session()

    def ask(self, question: str, session=None, on_token: Callable[[str], None] | None = None):
        """Answer a question from the library (and online sources when asked for)."""
        return self.coordinator.ask(question, session=session, on_token=on_token)

    # -- Save as Note ----------------------------------------------------
    def save_note(self, title: str, markdown: str, *, sources: Sequence[str] = (),
                  collection_key: str | None = None, parent_key: str | None = None) -> SavedNote:
        """Write a Zotero note (HTML) and make it searchable at once."""
        from .convert.note_html import render_note_html

        if collection_key and parent_key:
            raise ZocratesError("A note is either a child of a paper or standalone in a collection, not both.",
                                "Pass parent_key= for a child note, or collection_key= for a standalone note.")
        from .library.pending import is_zotero_source

        if is_zotero_source(self.source):
            return self._save_to_zotero(title, render_note_html(title, markdown, sources), parent_key, collection_key)
        if not getattr(self.source, "writable", False):
            raise LibraryReadOnlyError(f"The library source ({self.source.describe()}) cannot write notes.",
                                       "Use the demo library or a Zotero Web/local API source to save notes.")
        names = {c.key: c.name for c in self.collections()}
        if collection_key and collection_key not in names:
            raise NotFoundError(f"No collection with key {collection_key!r}.",
                                "Pick one of wb.collections().")
        html = render_note_html(title, markdown, sources)
        started = time.perf_counter()
        with self._lock:
            note = self.source.create_note(html, parent_key=parent_key,
                                           collection_keys=(collection_key,) if collection_key else ())
            self.corpus.materialize_note(note)
        if parent_key:
            paper = self.source.get_paper(parent_key)
            where = f"attached to ‘{paper.title if paper else parent_key}’"
        elif collection_key:
            where = f"in collection ‘{names[collection_key]}’"
        else:
            where = "as a standalone note"
        self.events.emit("save", key=note.key, parent_key=parent_key, collection=collection_key,
                         latency_ms=round((time.perf_counter() - started) * 1000, 3))
        return SavedNote(note.key, title, parent_key, collection_key, where)

    def _save_to_zotero(self, title: str, html: str, parent_key: str | None,
                        collection_key: str | None) -> SavedNote:
        """Desktop / Web API libraries: outbox, index at once, then the writers (see ``saving``)."""
        from .saving import save_to_zotero

        if parent_key and self.source.get_paper(parent_key) is None:
            raise NotFoundError(f"No paper with key {parent_key!r}.", "Pick one of wb.papers().")
        names = {c.key: c.name for c in self.collections()}
        if collection_key and collection_key not in names:
            raise NotFoundError(f"No collection with key {collection_key!r}.", "Pick one of wb.collections().")
        started = time.perf_counter()
        with self._lock:
            record = save_to_zotero(self.paths, self.config.read(), self.corpus, html, title=title,
                                    parent_key=parent_key, collection_keys=(collection_key,) if collection_key else ())
        where = (f"attached to ‘{self.source.get_paper(parent_key).title}’" if parent_key else
                 f"in collection ‘{names[collection_key]}’" if collection_key else "as a standalone note")
        where += " (not yet in Zotero)" if record.where == "outbox" else ""
        self.events.emit("save", key=record.key, parent_key=parent_key, collection=collection_key,
                         destination=record.where, latency_ms=round((time.perf_counter() - started) * 1000, 3))
        return SavedNote(record.key, title, parent_key, collection_key, where, record.where, record.reason)

    def save_answer(self, answer, *, collection_key: str | None = None,
                    parent_key: str | None = None, title: str | None = None) -> SavedNote:
        question = getattr(answer, "question", "") or "Answer"
        sources = [c.title if hasattr(c, "title") else str(c) for c in getattr(answer, "citations", [])]
        return self.save_note(title or _title_from(question), answer.text, sources=sources,
                              collection_key=collection_key, parent_key=parent_key)

    def save_session(self, session, *, collection_key: str | None = None,
                     parent_key: str | None = None, title: str | None = None) -> SavedNote:
        turns = list(getattr(session, "turns", []))
        if not turns:
            raise ZocratesError("This chat session has no answers yet.", "Ask a question first, then save the session.")
        parts, sources = [], []
        for turn in turns:
            answer = turn.answer
            parts.append(f"## {turn.question.strip()}\n\n{answer.text.strip()}\n")
            sources += [c.title if hasattr(c, "title") else str(c) for c in getattr(answer, "citations", [])]
        first = turns[0].question
        return self.save_note(title or f"Chat session: {_title_from(first)}", "\n".join(parts),
                              sources=list(dict.fromkeys(sources)),
                              collection_key=collection_key, parent_key=parent_key)

    # -- your own Zotero ---------------------------------------------------
    def zotero_offer(self):
        """On the demo library, the first Zotero library found on this computer (an offer; nothing switches)."""
        from .library.detect import detect

        if (self.config.read().get("library") or {}).get("source", "demo") != "demo":
            return None
        found = detect(probe=False)
        return found[0] if found else None

    def use_zotero(self, path: str | Path | None = None):
        """Switch this data directory to a Zotero data directory (the detected one by default) and sync it."""
        from .library import open_source

        if path is None:
            offer = self.zotero_offer()
            if offer is None:
                raise NotFoundError("No Zotero data directory was found.",
                                    "Pass its folder: wb.use_zotero('~/Zotero'), or run `zocrates-nb library detect`.")
            path = offer.path
        folder = Path(path).expanduser().resolve()
        if not (folder / "zotero.sqlite").is_file():
            raise NotFoundError(f"No zotero.sqlite inside {folder}.", "Give Zotero's data directory.")
        self.config.update(lambda cfg: {**cfg, "library": {**cfg.get("library", {}), "source": "zotero-dir",
                                                           "zotero_dir": str(folder)}})
        with self._lock:
            old_corpus = self.__dict__.pop("corpus", None)
            if old_corpus is not None:
                old_corpus.close()
            for name in ("tools", "coordinator"):
                self.__dict__.pop(name, None)
            self.source.close()
            self.source = self._with_pending(open_source(self.paths, self.config.read()))
        return self.sync(progress=False)

    # -- library views ----------------------------------------------------
    def collections(self) -> list[Collection]:
        return sorted(self.source.snapshot().collections, key=lambda c: c.name.lower())

    def papers(self) -> list[Paper]:
        return sorted(self.source.snapshot().papers, key=lambda p: (p.first_author, p.year or 0))

    def library_label(self) -> str:
        """The library's name for a header ("Demo library", "Zotero desktop"), without its file path."""
        return self.source.describe().split(" (")[0]

    def llm_configured(self) -> bool:
        """Whether a language model is configured (else answers are evidence-only)."""
        return bool(self.config.llm().configured)

    # -- profile -------------------------------------------------------------
    @property
    def profile(self) -> str:
        """The User Research Profile sent with every question ('' when none is set)."""
        return self.config.profile()

    @property
    def profile_limit(self) -> int:
        """The most characters the profile may hold (``max_research_profile_chars``, 1,000 by default)."""
        return int(self.config.profile_limit())

    def set_profile(self, text: str) -> None:
        """Validate and save the profile (refused past ``profile_limit``; the file is then left as it was)."""
        self.config.set_profile(text)

    def clear_profile(self) -> None:
        """Remove the profile: no profile section is sent with questions."""
        self.config.clear_profile()

    def status(self) -> dict[str, Any]:
        from .status import collect_status

        status = collect_status(self.paths)
        status.setdefault("library", {})["label"] = self.source.describe()
        return status

    def rebuild_index(self) -> dict:
        """Re-create FTS rows and vectors from the bundles; a bundle that does not verify is skipped,
        reported, and re-made from the library (``zocrates-nb index rebuild``)."""
        from .corpus.repair import rebuild_and_repair

        with self._lock:
            return rebuild_and_repair(self.corpus, self.index)

    def close(self) -> None:
        for name in ("index", "corpus"):
            obj = self.__dict__.get(name)
            if obj is not None and hasattr(obj, "close"):
                obj.close()
        if hasattr(self.source, "close"):
            self.source.close()

    def __repr__(self) -> str:
        return f"<Workbench {self.paths.root} · {self.source.describe()}>"


def _title_from(question: str, limit: int = 100) -> str:
    text = " ".join(question.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


_OPEN: dict[Path, Workbench] = {}
_OPEN_LOCK = threading.Lock()


def open_workbench(data_dir: str | Path | None = None, **kwargs) -> Workbench:
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
