"""A library source plus the notes saved from here that its snapshot does not show yet.

Why a wrapper: a note saved from a desktop library lives first in the outbox (not
sent yet) or in Zotero only (sent, but Zotero has not synced it down into
``zotero.sqlite``). Sync, search and ``read_document`` must keep seeing it, so the
corpus reads the library through this overlay: the real snapshot, plus those notes
whose keys it lacks. As soon as the snapshot shows a key, Zotero's version wins (same
key, same bundle; no re-embedding when the HTML is unchanged), the note is forgotten
here, and later edits or trash in Zotero are followed like any other note's. A
waiting note that Zotero says is deleted or trashed before it ever synced down is
forgotten too (``saving.resolve_gone_waiting``), so it leaves the corpus like any
trashed note instead of waiting forever.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from zocrates_nb.library.base import LibrarySnapshot, Note


def is_zotero_source(source: Any) -> bool:
    """True for the desktop and Web/local API sources (those that save through writers and the outbox)."""
    module = type(source).__module__
    return module.startswith(("zocrates_nb.library.desktop.", "zocrates_nb.library.web.")) or isinstance(
        source, PendingOverlay
    )


def zotero_library_path(source: Any) -> str | None:
    """Where a source's items live in Zotero's links: ``library`` (the user's library, desktop or Web API)
    or ``groups/<groupID>`` (a group library: the Web API's, or a desktop database's chosen with
    ``library.desktop_library_id``); None for the demo library, which Zotero does not hold."""
    inner = getattr(source, "source", source) if isinstance(source, PendingOverlay) else source
    if not is_zotero_source(inner):
        return None
    if getattr(inner, "library_type", "user") == "group":
        return f"groups/{inner.library_id}"
    if getattr(inner, "library_id", None) is not None and hasattr(inner, "group_id"):  # a desktop group
        return f"groups/{inner.group_id}" if inner.group_id else None  # an unknown group: no link, not a wrong one
    return "library"


class PendingOverlay:
    """Delegates to ``source``; adds outbox and waiting notes to ``snapshot`` and ``get_note``."""

    def __init__(self, source: Any, outbox, resolve_gone: Any = None) -> None:
        """``resolve_gone(outbox, keys)`` → the waiting keys Zotero says are trashed or deleted (the wiring
        passes ``saving.resolve_gone_waiting``; the library layer does not reach up into the writers)."""
        self.source = source
        self.outbox = outbox
        self.resolve_gone = resolve_gone

    def __getattr__(self, name: str) -> Any:  # describe, get_paper, close, writable, sync, …
        return getattr(self.source, name)

    @property
    def base(self) -> Any:
        return self.source

    def _pending(self) -> dict[str, Note]:
        return {e.key: e.as_note() for e in [*self.outbox.waiting(), *self.outbox.entries()]}

    def snapshot(self) -> LibrarySnapshot:
        snap = self.source.snapshot()
        pending = self._pending()
        if not pending:
            return snap
        shown = {note.key for note in snap.notes}
        arrived = [key for key in pending if key in shown]
        if arrived:
            self.outbox.forget_waiting(arrived)
        unseen = [entry.key for entry in self.outbox.waiting() if entry.key not in shown]
        if unseen and self.resolve_gone is not None:
            for key in self.resolve_gone(self.outbox, unseen):
                pending.pop(key, None)
        extra = tuple(note for key, note in pending.items() if key not in shown)
        return dataclasses.replace(snap, notes=(*snap.notes, *extra)) if extra else snap

    def get_note(self, key: str) -> Note | None:
        note = self.source.get_note(key)
        return note if note is not None else self._pending().get(key)

    def __repr__(self) -> str:
        return f"PendingOverlay({self.source!r})"
