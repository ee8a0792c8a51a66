"""Save as Note for Zotero libraries: outbox first, then the writers, then the record the user sees.

The order matters (why this module exists): the note is put in the durable outbox
*before* anything is sent, indexed at once so search finds it, and only then handed
to a writer. Whatever happens next (no writer, Zotero down, a crash), the note is in
the outbox with its key and write token, and ``zocrates-nb outbox push`` finishes it
exactly once. The demo library keeps its direct, synchronous path in ``workbench``.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from zocrates_nb.errors import LibraryReadOnlyError, NotFoundError, StorageUnavailableError, ZocratesError
from zocrates_nb.export.zotero_note import NoteCitations
from zocrates_nb.library.writing.choice import choose_writers, usable_writers, writer_summary
from zocrates_nb.library.writing.note_writers import NoteWriter, WriterUnavailable
from zocrates_nb.library.writing.outbox import Outbox, OutboxEntry
from zocrates_nb.storage.space import why_unwritable, write_problem

__all__ = [
    "SaveRecord",
    "SavedNote",
    "answer_note",
    "index_saved_note",
    "push_outbox",
    "resolve_gone_waiting",
    "save_note",
    "save_to_zotero",
    "session_note",
    "writer_summary",
]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SaveRecord:
    """Where one saved note went: ``where`` is demo | zotero-local | zotero-web | outbox."""

    key: str
    where: str
    parent_key: str | None
    collection_keys: tuple[str, ...]
    reason: str | None = None

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "where": self.where,
            "parent_key": self.parent_key,
            "collection_keys": list(self.collection_keys),
            "reason": self.reason,
        }


# ----------------------------------------------------------------------------- waiting notes Zotero dropped


def resolve_gone_waiting(outbox: Outbox, keys: Sequence[str]) -> list[str]:
    """Of these waiting notes, forget those Zotero says are deleted (404) or in the trash; return them.

    Why: such a note never reaches ``zotero.sqlite``, so without this it would wait forever;
    once forgotten, the next sync removes it like any trashed note. A writer that cannot be
    reached leaves every note waiting (asked again next sync).
    """
    if not keys or outbox.paths is None:
        return []
    from zocrates_nb.settings.config import ConfigStore

    try:
        writers, _ = choose_writers(outbox.paths, ConfigStore.for_paths(outbox.paths).read())
    except ZocratesError as exc:
        _log.warning("cannot ask Zotero about waiting notes: %s", exc.message)
        return []
    by_kind = {writer.kind: writer for writer in writers}
    wanted = set(keys)
    gone = []
    for entry in outbox.waiting():
        writer = by_kind.get(entry.written_to)
        if entry.key not in wanted or writer is None:
            continue
        try:
            state = writer.in_library(entry.library_path).item_state(entry.key)
        except WriterUnavailable as exc:
            _log.info("cannot ask Zotero about waiting notes now: %s", exc.message)
            break
        if state in ("gone", "trashed"):
            gone.append(entry.key)
    outbox.forget_waiting(gone)
    return gone


# ----------------------------------------------------------------------------- pushing and saving


def push_outbox(paths, config: dict, *, wait_for_snapshot: bool = True):
    """Send every outbox entry through the first writer that answers; a PushReport."""
    outbox = Outbox.for_paths(paths)
    chosen: list[tuple[list[NoteWriter], str]] = []  # checked lazily: an empty outbox costs nothing

    def send(entry: OutboxEntry) -> str:
        if not chosen:
            chosen.append(usable_writers(paths, config))
        writers, reason = chosen[0]
        if not writers:
            raise WriterUnavailable(reason, "")
        last: WriterUnavailable | None = None
        for writer in writers:
            try:
                writer.in_library(entry.library_path).create_note(
                    entry.key,
                    entry.html,
                    write_token=entry.write_token,
                    parent_key=entry.parent_key,
                    collection_keys=entry.collection_keys,
                )
                return writer.kind
            except WriterUnavailable as exc:
                last = exc
        raise last  # type: ignore[misc]

    return outbox.push(send, wait_for_snapshot=wait_for_snapshot)


def save_to_zotero(
    paths,
    config: dict,
    corpus,
    html: str,
    *,
    title: str,
    parent_key: str | None,
    collection_keys: Sequence[str],
    library_path: str | None = None,
) -> SaveRecord:
    """Outbox entry → indexed at once → pushed; the record says where the note is now. ``library_path``
    (``groups/<groupID>``): the group library it is saved into; None: the writer's own library."""
    outbox = Outbox.for_paths(paths)
    entry = outbox.add(
        html, title=title, parent_key=parent_key, collection_keys=collection_keys, library_path=library_path
    )
    index_saved_note(corpus, entry.as_note(), paths.root, title, "is in the outbox")
    report = push_outbox(paths, config)
    written = dict(report.written)
    if entry.key in written:
        return SaveRecord(entry.key, written[entry.key], parent_key, tuple(collection_keys))
    reason = dict(report.kept).get(entry.key) or "not sent yet"
    return SaveRecord(entry.key, "outbox", parent_key, tuple(collection_keys), reason)


def index_saved_note(corpus, note, root, title: str, kept: str) -> None:
    """Index a note the library (or the outbox) already holds; a full or read-only disk says so.

    Why a message of its own: the note is safe by now, and the user must learn that, not see a
    traceback and save again. A retry is harmless anyway (the demo library and the outbox return
    the note they hold for the same note), and the next sync indexes what this could not."""
    try:
        corpus.materialize_note(note)
    except (OSError, sqlite3.Error, StorageUnavailableError) as exc:
        problem = write_problem(root, exc)
        if problem is None:
            raise
        raise StorageUnavailableError(
            f"The note “{title}” {kept} as {note.key}, but could not be indexed: "
            f"{why_unwritable(root, problem)}. It is not lost: the next sync indexes it, and saving it "
            "again finds this note instead of writing a second copy.",
            "Free some space on the disk holding the data directory, then sync."
            if problem == "full"
            else "Make the data directory writable (or copy it somewhere writable), then sync.",
        ) from exc


# ----------------------------------------------------------------------------- what the user sees


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
        return {
            "key": self.key,
            "where": self.destination,
            "parent_key": self.parent_key,
            "collection_keys": [self.collection_key] if self.collection_key else [],
            "reason": self.reason,
        }

    def _repr_html_(self) -> str:
        # HTML with escaped text, not Markdown: JupyterLab renders trusted Markdown output's raw
        # HTML unsanitized, and a title can come from a model's answer.
        from zocrates_nb.display.render import escape

        waiting = f" Not yet in Zotero: {escape(self.reason or '')}" if self.destination == "outbox" else ""
        return f"Saved <strong>{escape(self.title)}</strong> — {escape(self.where)}.{waiting}"


def _title_from(question: str, limit: int = 100) -> str:
    text = " ".join(question.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _as_written(answer: Any) -> str:
    return str(answer.text)


def answer_note(
    answer: Any, title: str | None = None, *, text_of: Callable[[Any], str] = _as_written
) -> tuple[str, str, list[str]]:
    """(title, Markdown, sources) of the note that saves one answer: the question is the default title.

    ``text_of(answer)``: the answer's Markdown as it goes into the note (``citing.hold_citations``
    holds its citations for Zotero's citation spans)."""
    question = getattr(answer, "question", "") or "Answer"
    sources = [c.title if hasattr(c, "title") else str(c) for c in getattr(answer, "citations", [])]
    return title or _title_from(question), text_of(answer), sources


def session_note(
    session: Any, title: str | None = None, *, text_of: Callable[[Any], str] = _as_written
) -> tuple[str, str, list[str]]:
    """(title, Markdown, sources) of the note that saves a chat session: one section per question."""
    turns = list(getattr(session, "turns", []))
    if not turns:
        raise ZocratesError("This chat session has no answers yet.", "Ask a question first, then save the session.")
    parts, sources = [], []
    for turn in turns:
        answer = turn.answer
        parts.append(f"## {turn.question.strip()}\n\n{text_of(answer).strip()}\n")
        sources += [c.title if hasattr(c, "title") else str(c) for c in getattr(answer, "citations", [])]
    first = turns[0].question
    return title or f"Chat session: {_title_from(first)}", "\n".join(parts), list(dict.fromkeys(sources))


# ----------------------------------------------------------------------------- Save as Note, for a workbench


def save_note(
    wb: Any,
    title: str,
    markdown: str,
    *,
    sources: Sequence[str] = (),
    collection_key: str | None = None,
    parent_key: str | None = None,
    lock: AbstractContextManager[Any],
    citations: NoteCitations | None = None,
) -> SavedNote:
    """``Workbench.save_note``: the demo library writes at once; a Zotero library goes outbox-first.

    ``wb`` gives the source, corpus, paths, config and events; ``lock`` is held while the library and
    the corpus change (the workbench's sync lock); ``citations``: the Zotero citations held in
    ``markdown`` (``citing.hold_citations``), written as the note editor writes them."""
    from zocrates_nb.library.pending import is_zotero_source

    if collection_key and parent_key:
        raise ZocratesError(
            "A note is either a child of a paper or standalone in a collection, not both.",
            "Pass parent_key= for a child note, or collection_key= for a standalone note.",
        )
    html = _note_html(title, markdown, sources, citations)
    if is_zotero_source(wb.source):
        return _save_to_zotero(wb, title, html, parent_key, collection_key, lock)
    if not getattr(wb.source, "writable", False):
        raise LibraryReadOnlyError(
            f"The library source ({wb.source.describe()}) cannot write notes.",
            "Use the demo library or a Zotero Web/local API source to save notes.",
        )
    names = _collection_names(wb.collections(), collection_key)
    started = time.perf_counter()
    with lock:
        note = wb.source.create_note(
            html, parent_key=parent_key, collection_keys=(collection_key,) if collection_key else ()
        )
        index_saved_note(wb.corpus, note, wb.paths.root, title, "was saved to the library")
    where = _where(wb, parent_key, collection_key, names)
    wb.events.emit(
        "save",
        key=note.key,
        parent_key=parent_key,
        collection=collection_key,
        latency_ms=round((time.perf_counter() - started) * 1000, 3),
    )
    return SavedNote(note.key, title, parent_key, collection_key, where)


def _note_html(title: str, markdown: str, sources: Sequence[str], citations: NoteCitations | None) -> str:
    from zocrates_nb.convert.note_html import render_note_html
    from zocrates_nb.sanitize import sanitize_note_html

    html = render_note_html(title, markdown, sources)
    return sanitize_note_html(citations.fill(html)) if citations is not None else html


def _save_to_zotero(
    wb: Any,
    title: str,
    html: str,
    parent_key: str | None,
    collection_key: str | None,
    lock: AbstractContextManager[Any],
) -> SavedNote:
    """Desktop / Web API libraries: outbox, index at once, then the writers (``save_to_zotero``)."""
    if parent_key and wb.source.get_paper(parent_key) is None:
        raise NotFoundError(f"No paper with key {parent_key!r}.", "Pick one of wb.papers().")
    snapshot = wb.source.snapshot()  # one read: the collection names and the library the note goes to
    names = _collection_names(snapshot.collections, collection_key)
    library_path = snapshot.write_path(parent_key, collection_key)  # a group's paper or collection
    started = time.perf_counter()
    with lock:
        record = save_to_zotero(
            wb.paths,
            wb.config.read(),
            wb.corpus,
            html,
            title=title,
            parent_key=parent_key,
            collection_keys=(collection_key,) if collection_key else (),
            library_path=library_path,
        )
    where = _where(wb, parent_key, collection_key, names)
    where += " (not yet in Zotero)" if record.where == "outbox" else ""
    wb.events.emit(
        "save",
        key=record.key,
        parent_key=parent_key,
        collection=collection_key,
        destination=record.where,
        latency_ms=round((time.perf_counter() - started) * 1000, 3),
    )
    return SavedNote(record.key, title, parent_key, collection_key, where, record.where, record.reason)


def _collection_names(collections: Sequence[Any], collection_key: str | None) -> dict[str, str]:
    """Collection names by key; refuses a ``collection_key`` that names none."""
    names = {c.key: c.name for c in collections}
    if collection_key and collection_key not in names:
        raise NotFoundError(f"No collection with key {collection_key!r}.", "Pick one of wb.collections().")
    return names


def _where(wb: Any, parent_key: str | None, collection_key: str | None, names: dict[str, str]) -> str:
    """Where a saved note is, in words: attached to a paper, in a collection, or standalone."""
    if parent_key:
        paper = wb.source.get_paper(parent_key)
        return f"attached to ‘{paper.title if paper else parent_key}’"
    if collection_key:
        return f"in collection ‘{names[collection_key]}’"
    return "as a standalone note"


def push_outbox_on_sync(source: Any, paths: Any, config: Any, events: Any) -> None:
    """On sync, send what waits in the outbox (a closed door only leaves it there, with the reason)."""
    from zocrates_nb.library.pending import is_zotero_source

    if is_zotero_source(source) and Outbox.for_paths(paths).counts()["outbox"]:
        try:
            report = push_outbox(paths, config.read())
            events.emit("outbox_push", written=len(report.written), kept=len(report.kept))
        except ZocratesError as exc:
            events.emit("outbox_push", error=exc.message)
