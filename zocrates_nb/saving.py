"""Save as Note for Zotero libraries: outbox first, then the writers, then the record the user sees.

The order matters (why this module exists): the note is put in the durable outbox
*before* anything is sent, indexed at once so search finds it, and only then handed
to a writer. Whatever happens next (no writer, Zotero down, a crash), the note is in
the outbox with its key and write token, and ``zocrates-nb outbox push`` finishes it
exactly once. The demo library keeps its direct, synchronous path in ``workbench``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .atomic import write_atomically
from .errors import ConfigError, LibraryError, LibraryReadOnlyError, NotFoundError, ZocratesError
from .library.note_writer import LOCAL_API, WEB_API, NoteWriter, WriterUnavailable, check_web_key, key_info
from .locks import file_lock
from .outbox import Outbox, OutboxEntry

LOCAL_KEY_ENV = "ZOTERO_LOCAL_API_KEY"
_log = logging.getLogger(__name__)
NO_WRITER = (
    "no writer is set up for this Zotero library: run `zocrates-nb library writer local` (Zotero 10) or "
    "`zocrates-nb library writer web --api-key-env ENV` (zotero.org account)"
)


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


# ----------------------------------------------------------------------------- the local API key


def local_key_path(paths) -> Any:
    return paths.root / "zotero_local_key.json"


def read_local_key(paths) -> str | None:
    """The Zotero 10 local API key: ``$ZOTERO_LOCAL_API_KEY``, else the 0600 file, else None."""
    from_env = os.environ.get(LOCAL_KEY_ENV, "").strip()
    if from_env:
        return from_env
    try:
        data = json.loads(local_key_path(paths).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"{local_key_path(paths)} is damaged.", "Delete it and run `zocrates-nb library writer local` again."
        ) from exc
    return data.get("key") if isinstance(data, dict) and isinstance(data.get("key"), str) else None


def store_local_key(paths, key: str) -> None:
    """Keep the approved local key owner-only (mode 0600 from the first byte), never in the config."""
    with file_lock(paths.locks / "secrets.lock"):
        write_atomically(local_key_path(paths), json.dumps({"key": key}).encode("utf-8"))


# ----------------------------------------------------------------------------- choosing writers


def _library_path(library_type: str, library_id: Any) -> str:
    return f"{'groups' if library_type == 'group' else 'users'}/{library_id}"


def choose_writers(paths, config: dict) -> tuple[list[NoteWriter], str]:
    """The writers to try, in order, for this config; with the reason when there is none."""
    library, writer = config.get("library") or {}, config.get("writer") or {}
    if library.get("source") == "zotero-web":
        key = os.environ.get(library.get("api_key_env") or "ZOTERO_API_KEY", "").strip()
        if library.get("local"):  # the approved local key (`library writer local`), else the named variable
            local_key = read_local_key(paths) or key
            if not local_key:
                return [], "no local API key: run `zocrates-nb library writer local` (Zotero 10)"
            return [
                NoteWriter(
                    "zotero-local", library.get("base_url") or LOCAL_API, "users/0", local_key, library.get("server_id")
                )
            ], ""
        if not key:
            return [], f"the Zotero API key is not set (${library.get('api_key_env')})"
        return [
            NoteWriter(
                "zotero-web",
                library.get("base_url") or WEB_API,
                _library_path(library.get("library_type") or "user", library.get("library_id")),
                key,
            )
        ], ""
    kind = writer.get("kind") or "auto"
    writers: list[NoteWriter] = []
    if kind in ("auto", "local"):
        approved_key = read_local_key(paths)
        if approved_key:
            writers.append(
                NoteWriter(
                    "zotero-local",
                    writer.get("local_base_url") or LOCAL_API,
                    "users/0",
                    approved_key,
                    writer.get("server_id"),
                )
            )
    if kind in ("auto", "web") and writer.get("library_id") not in (None, ""):
        key = os.environ.get(writer.get("api_key_env") or "ZOTERO_API_KEY", "").strip()
        if key:
            writers.append(
                NoteWriter(
                    "zotero-web",
                    writer.get("base_url") or WEB_API,
                    _library_path(writer.get("library_type") or "user", writer["library_id"]),
                    key,
                )
            )
        elif kind == "web":
            return [], f"the Web API key is not set (${writer.get('api_key_env')})"
    if not writers:
        return [], "writer.kind is none" if kind == "none" else NO_WRITER
    return writers, ""


def writer_summary(paths, config: dict) -> dict:
    """``library show --json``'s "writer": the kind that would write now, never a key."""
    try:
        writers, reason = choose_writers(paths, config)
    except ConfigError as exc:
        return {"kind": "none", "reason": exc.message}
    if not writers:
        return {"kind": "none", "reason": reason}
    first = writers[0]
    return {"kind": first.kind.removeprefix("zotero-"), "base_url": first.base_url, "library": first.library_path}


# ----------------------------------------------------------------------------- checking a Web API writer once


def desktop_account(library: dict) -> tuple[bool, int | None]:
    """(is the library a desktop ``zotero.sqlite``, the zotero.org account it syncs with or None)."""
    from .zotero_setup import desktop_account as desktop_account_and_group

    is_desktop, user_id, _group_id = desktop_account_and_group(library)
    return is_desktop, user_id


def _checks_path(paths) -> Path:
    return paths.root / "writer_checks.json"


def _check_id(writer: NoteWriter, desktop_user_id: int | None) -> str:
    """One id per writer configuration (URL, library, key, desktop account); the key only as a hash."""
    key_hash = hashlib.sha256(writer.api_key.encode("utf-8")).hexdigest()
    return hashlib.sha256(
        json.dumps([writer.base_url, writer.library_path, key_hash, desktop_user_id]).encode("utf-8")
    ).hexdigest()[:32]


def _checked_ids(paths) -> list[str]:
    try:
        data = json.loads(_checks_path(paths).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:  # derived data: a damaged cache only means "check again"
        _log.warning("ignoring damaged %s (%s): the writer is checked again", _checks_path(paths), exc)
        return []
    return [str(x) for x in data.get("checked", [])] if isinstance(data, dict) else []


def _remember_checked(paths, check_id: str) -> None:
    with file_lock(paths.locks / "writer_checks.lock"):
        ids = [i for i in _checked_ids(paths) if i != check_id][-15:] + [check_id]
        write_atomically(_checks_path(paths), json.dumps({"checked": ids}).encode("utf-8"))


def verify_web_writer(paths, config: dict, writer: NoteWriter) -> None:
    """Before the first write through a desktop library's Web API writer: may this key write notes, and
    into the library Zotero desktop syncs with? Done by ``library writer web``; done here once for a
    writer configured by editing ``zocrates_config.json``. Success is cached per writer configuration
    in the data directory. Raises ``LibraryError`` (refused: why) or ``WriterUnavailable`` (ask later).
    """
    library, section = config.get("library") or {}, config.get("writer") or {}
    if writer.kind != "zotero-web" or library.get("source") == "zotero-web":
        return  # the local API and the Web API source write into the library they read
    desktop, desktop_user_id = desktop_account(library)
    check_id = _check_id(writer, desktop_user_id)
    if check_id in _checked_ids(paths):
        return
    library_type = section.get("library_type") or "user"
    check_web_key(
        key_info(writer.base_url, writer.api_key, timeout=writer.timeout),
        library_type=library_type,
        library_id=str(section.get("library_id")),
        desktop_user_id=desktop_user_id,
        desktop=desktop and library_type == "user",
    )
    _remember_checked(paths, check_id)


def _usable_writers(paths, config: dict) -> tuple[list[NoteWriter], str]:
    """``choose_writers`` minus the Web API writers whose key check refuses them (with the reason)."""
    writers, reason = choose_writers(paths, config)
    usable = []
    for writer in writers:
        try:
            verify_web_writer(paths, config, writer)
        except WriterUnavailable as exc:
            reason = exc.message
        except LibraryError as exc:
            reason = f"{exc.message} {exc.hint}".strip()
        else:
            usable.append(writer)
    return usable, reason


# ----------------------------------------------------------------------------- waiting notes Zotero dropped


def resolve_gone_waiting(outbox: Outbox, keys: Sequence[str]) -> list[str]:
    """Of these waiting notes, forget those Zotero says are deleted (404) or in the trash; return them.

    Why: such a note never reaches ``zotero.sqlite``, so without this it would wait forever;
    once forgotten, the next sync removes it like any trashed note. A writer that cannot be
    reached leaves every note waiting (asked again next sync).
    """
    if not keys or outbox.paths is None:
        return []
    from .config import ConfigStore

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
            state = writer.item_state(entry.key)
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
            chosen.append(_usable_writers(paths, config))
        writers, reason = chosen[0]
        if not writers:
            raise WriterUnavailable(reason, "")
        last: WriterUnavailable | None = None
        for writer in writers:
            try:
                writer.create_note(
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
    paths, config: dict, corpus, html: str, *, title: str, parent_key: str | None, collection_keys: Sequence[str]
) -> SaveRecord:
    """Outbox entry → indexed at once → pushed; the record says where the note is now."""
    outbox = Outbox.for_paths(paths)
    entry = outbox.add(html, title=title, parent_key=parent_key, collection_keys=collection_keys)
    corpus.materialize_note(entry.as_note())
    report = push_outbox(paths, config)
    written = dict(report.written)
    if entry.key in written:
        return SaveRecord(entry.key, written[entry.key], parent_key, tuple(collection_keys))
    reason = dict(report.kept).get(entry.key) or "not sent yet"
    return SaveRecord(entry.key, "outbox", parent_key, tuple(collection_keys), reason)


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
        from .render import escape

        waiting = f" Not yet in Zotero: {escape(self.reason or '')}" if self.destination == "outbox" else ""
        return f"Saved <strong>{escape(self.title)}</strong> — {escape(self.where)}.{waiting}"


def _title_from(question: str, limit: int = 100) -> str:
    text = " ".join(question.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def answer_note(answer: Any, title: str | None = None) -> tuple[str, str, list[str]]:
    """(title, Markdown, sources) of the note that saves one answer: the question is the default title."""
    question = getattr(answer, "question", "") or "Answer"
    sources = [c.title if hasattr(c, "title") else str(c) for c in getattr(answer, "citations", [])]
    return title or _title_from(question), answer.text, sources


def session_note(session: Any, title: str | None = None) -> tuple[str, str, list[str]]:
    """(title, Markdown, sources) of the note that saves a chat session: one section per question."""
    turns = list(getattr(session, "turns", []))
    if not turns:
        raise ZocratesError("This chat session has no answers yet.", "Ask a question first, then save the session.")
    parts, sources = [], []
    for turn in turns:
        answer = turn.answer
        parts.append(f"## {turn.question.strip()}\n\n{answer.text.strip()}\n")
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
) -> SavedNote:
    """``Workbench.save_note``: the demo library writes at once; a Zotero library goes outbox-first.

    ``wb`` gives the source, corpus, paths, config and events; ``lock`` is held while the library and
    the corpus change (the workbench's sync lock)."""
    from .convert.note_html import render_note_html
    from .library.pending import is_zotero_source

    if collection_key and parent_key:
        raise ZocratesError(
            "A note is either a child of a paper or standalone in a collection, not both.",
            "Pass parent_key= for a child note, or collection_key= for a standalone note.",
        )
    if is_zotero_source(wb.source):
        html = render_note_html(title, markdown, sources)
        return _save_to_zotero(wb, title, html, parent_key, collection_key, lock)
    if not getattr(wb.source, "writable", False):
        raise LibraryReadOnlyError(
            f"The library source ({wb.source.describe()}) cannot write notes.",
            "Use the demo library or a Zotero Web/local API source to save notes.",
        )
    names = _collection_names(wb, collection_key)
    html = render_note_html(title, markdown, sources)
    started = time.perf_counter()
    with lock:
        note = wb.source.create_note(
            html, parent_key=parent_key, collection_keys=(collection_key,) if collection_key else ()
        )
        wb.corpus.materialize_note(note)
    where = _where(wb, parent_key, collection_key, names)
    wb.events.emit(
        "save",
        key=note.key,
        parent_key=parent_key,
        collection=collection_key,
        latency_ms=round((time.perf_counter() - started) * 1000, 3),
    )
    return SavedNote(note.key, title, parent_key, collection_key, where)


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
    names = _collection_names(wb, collection_key)
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


def _collection_names(wb: Any, collection_key: str | None) -> dict[str, str]:
    """Collection names by key; refuses a ``collection_key`` that names none."""
    names = {c.key: c.name for c in wb.collections()}
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
