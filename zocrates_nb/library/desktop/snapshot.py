"""Read-only access to Zotero desktop's ``zotero.sqlite`` through a private snapshot.

Why a copy: Zotero keeps ``PRAGMA locking_mode=EXCLUSIVE`` on its live database,
so other connections get "database is locked"; from Zotero 10 it also runs in
WAL mode, where ``?immutable=1`` silently misses every write still in the
``-wal`` file. Copying ``zotero.sqlite`` plus its ``-wal`` (and a hot
``-journal``) to a temporary folder and opening the *copy* makes SQLite replay
the log, so we see what Zotero sees — and the original is never opened, let
alone written (docs: ../shared/docs/zotero-formats.md §1, §1b).

Schema facts the reader (``zotero_desktop_reader.py``) relies on: item types and fields are looked up by
name (ids differ per database); columns are selected by name (Zotero 10 added
``clientVersion`` and more); stored notes carry a ``<div class="zotero-note
znv1">`` wrapper the API does not; ``itemNotes`` also holds attachment notes;
a note is trashed when it or its parent is in ``deletedItems``.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from zocrates_nb.errors import LibraryError, LibraryLockedError, LibraryReadOnlyError, StorageUnavailableError
from zocrates_nb.library.base import Annotation, LibrarySnapshot, Note, Paper, is_safe_key
from zocrates_nb.library.desktop.detect import attachment_base_dir as find_attachment_base_dir
from zocrates_nb.library.desktop.detect import zotero_account
from zocrates_nb.library.desktop.files import attachment_path, is_pdf, needs_base_dir
from zocrates_nb.library.desktop.reader import AttachmentRow, FileText, SnapshotReader

# the schema queries moved to zotero_desktop_reader.py; these stay importable from here
from zocrates_nb.library.desktop.reader import parse_zotero_date as parse_zotero_date
from zocrates_nb.library.desktop.reader import strip_note_wrapper as strip_note_wrapper
from zocrates_nb.records import PdfFile
from zocrates_nb.storage.space import why_unwritable, write_problem

_COPY_ATTEMPTS = 3


class ZoteroDesktopLibrary:
    """A read-only snapshot of a Zotero desktop library (Zotero 5 – 10)."""

    writable = False

    def __init__(
        self,
        sqlite_path: Path | None = None,
        zotero_dir: Path | None = None,
        *,
        library_id: int | None = None,
        read_pdfs: bool = True,
        attachment_base_dir: Path | None = None,
    ) -> None:
        """``read_pdfs``: offer the PDFs at hand for per-page text (False: Zotero's full-text cache only).
        ``attachment_base_dir``: the base of linked files' relative paths (default: from Zotero's prefs)."""
        if sqlite_path is None and zotero_dir is None:
            raise LibraryError(
                "No Zotero database given.",
                "Pass --zotero-sqlite PATH or --zotero-dir DIR (the folder holding zotero.sqlite).",
            )
        self.zotero_dir = Path(zotero_dir).expanduser() if zotero_dir else None
        self.sqlite_path = (
            Path(sqlite_path).expanduser() if sqlite_path else Path(zotero_dir or "").expanduser() / "zotero.sqlite"
        )
        self.storage_dir = (self.zotero_dir or self.sqlite_path.parent) / "storage"
        #: which library to read; None → the user's own library ("My Library")
        self.library_id = library_id
        self._lock = threading.RLock()
        self._stamp: tuple | None = None
        self._snapshot: LibrarySnapshot | None = None
        self._notes: dict[str, Note] = {}
        self._papers: dict[str, Paper] = {}
        self._annotations: dict[str, Annotation] = {}
        self._fulltext_cache: dict[Path, tuple[tuple[int, int], str]] = {}
        self.read_pdfs = read_pdfs
        self._base_dir = Path(attachment_base_dir).expanduser() if attachment_base_dir else None
        self._base_dir_looked_up = False

    @property
    def group_id(self) -> int | None:
        """The zotero.org groupID of the library read (None for My Library): Zotero's links name a
        group's items by it (``zotero://select/groups/<groupID>/…``), not by the desktop libraryID."""
        if self.library_id is None:
            return None
        if not hasattr(self, "_group_id"):
            self._group_id = zotero_account(self.sqlite_path).get("groups", {}).get(self.library_id)
        return self._group_id

    # -- protocol -------------------------------------------------------
    def describe(self) -> str:
        return f"zotero.sqlite snapshot of {self.sqlite_path}"

    def snapshot(self) -> LibrarySnapshot:
        """The library as of now; re-reads only when the database (or its WAL) changed."""
        with self._lock:
            stamp = self._source_stamp()
            if self._snapshot is None or stamp != self._stamp:
                snap = self._load()
                self._snapshot, self._stamp = snap, stamp
                self._notes = {n.key: n for n in snap.notes}
                self._papers = {p.key: p for p in snap.papers}
                self._annotations = {a.key: a for a in snap.annotations}
            elif any(p.pdfs for p in self._snapshot.papers):
                self._refresh_pdfs()
            return self._snapshot

    def _refresh_pdfs(self) -> None:
        """A PDF replaced or removed while the database stayed the same: its papers get the new stamps.

        Why: a PDF is its own file, outside ``zotero.sqlite``; without this a changed PDF would wait
        for the next database write before its pages were read again. One ``stat`` per PDF.
        """
        assert self._snapshot is not None
        changed = {}
        for paper in self._snapshot.papers:
            if not paper.pdfs:
                continue
            kept, gone = [], []
            for pdf in paper.pdfs:
                try:
                    st = os.stat(pdf.path)
                except OSError:
                    gone.append(pdf.cached_text or "")
                    continue
                kept.append(replace(pdf, size=st.st_size, mtime_ns=st.st_mtime_ns))
            if gone or any(a != b for a, b in zip(kept, paper.pdfs, strict=False)):
                fulltext = "\n\n".join(t.strip() for t in [paper.fulltext or "", *gone] if t.strip()) or None
                changed[paper.key] = replace(paper, pdfs=tuple(kept), fulltext=fulltext)
        if changed:
            papers = tuple(changed.get(p.key, p) for p in self._snapshot.papers)
            self._snapshot = replace(self._snapshot, papers=papers)
            self._papers.update(changed)

    def get_note(self, key: str) -> Note | None:
        """Served from the loaded snapshot (a dict hit); loads one if none is loaded yet."""
        if self._snapshot is None:
            self.snapshot()
        return self._notes.get(key)

    def get_paper(self, key: str) -> Paper | None:
        if self._snapshot is None:
            self.snapshot()
        return self._papers.get(key)

    def get_annotation(self, key: str) -> Annotation | None:
        if self._snapshot is None:
            self.snapshot()
        return self._annotations.get(key)

    def create_note(self, html: str, *, parent_key: str | None = None, collection_keys: Sequence[str] = ()) -> Note:
        raise LibraryReadOnlyError(*_READ_ONLY)

    def update_note(self, key: str, html: str) -> Note:
        raise LibraryReadOnlyError(*_READ_ONLY)

    def close(self) -> None:
        with self._lock:
            self._snapshot, self._stamp, self._notes, self._papers = None, None, {}, {}
            self._annotations = {}
            self._fulltext_cache.clear()

    def __repr__(self) -> str:
        return f"<ZoteroDesktopLibrary {self.sqlite_path}>"

    # -- snapshot copy --------------------------------------------------
    def _source_stamp(self) -> tuple:
        try:
            st = self.sqlite_path.stat()
        except FileNotFoundError:
            raise LibraryError(
                f"Zotero database {self.sqlite_path} does not exist.",
                "Check the path: Zotero's data directory (Settings → Advanced → Files and "
                "Folders) holds zotero.sqlite.",
            ) from None
        except OSError as exc:
            raise LibraryLockedError(
                f"Zotero database {self.sqlite_path} cannot be read: {exc}",
                "Check the file's permissions, or close Zotero and retry.",
            ) from exc
        parts: list[tuple] = [(st.st_mtime_ns, st.st_size)]
        for suffix in ("-wal", "-journal"):
            side = self.sqlite_path.with_name(self.sqlite_path.name + suffix)
            try:
                s = side.stat()
                parts.append((suffix, s.st_mtime_ns, s.st_size))
            except FileNotFoundError:
                pass
        return tuple(parts)

    def _copy_to(self, folder: Path) -> Path:
        """Copy the database with its ``-wal``/``-journal``; retry if Zotero wrote during the copy."""
        target = folder / "zotero.sqlite"
        for _attempt in range(_COPY_ATTEMPTS):
            before = self._source_stamp()
            try:
                shutil.copyfile(self.sqlite_path, target)
                for suffix in ("-wal", "-journal"):
                    side = self.sqlite_path.with_name(self.sqlite_path.name + suffix)
                    dest = target.with_name(target.name + suffix)
                    dest.unlink(missing_ok=True)
                    if side.exists():
                        shutil.copyfile(side, dest)
            except FileNotFoundError:
                continue  # a -wal checkpointed away mid-copy: take it again
            except OSError as exc:
                if problem := write_problem(folder, exc):  # the temporary folder is full: not a lock
                    raise StorageUnavailableError(
                        f"Could not copy Zotero's database {self.sqlite_path} to read it: "
                        f"{why_unwritable(folder.parent, problem)} ({exc}). Nothing was changed or lost.",
                        f"Free some space on the disk holding {folder.parent} (about the size of zotero.sqlite), "
                        "or point TMPDIR at a folder on a disk with room, then run the command again.",
                    ) from exc
                raise LibraryLockedError(
                    f"Could not copy Zotero's database {self.sqlite_path}: {exc}",
                    "Zotero may hold the file locked on this system: close Zotero and retry, "
                    "or use the Web API source (library.source = 'zotero-web').",
                ) from exc
            if self._source_stamp() == before:
                return target
        return target  # still changing: the copy is a best effort, SQLite validates it

    def _load(self) -> LibrarySnapshot:
        with tempfile.TemporaryDirectory(prefix="zocrates-zotero-") as tmp:
            copy = self._copy_to(Path(tmp))
            try:
                conn = sqlite3.connect(str(copy), isolation_level=None)
                # A damaged value must not fail the whole read: metadata decodes with replacement;
                # note bodies are read as bytes (CAST … AS BLOB) and checked one by one in _notes.
                conn.text_factory = lambda b: b.decode("utf-8", "replace")
            except sqlite3.Error as exc:
                raise LibraryLockedError(
                    f"Could not open the snapshot of {self.sqlite_path}: {exc}",
                    "Close Zotero and retry, or check that the path is zotero.sqlite.",
                ) from exc
            try:
                return SnapshotReader(
                    conn, sqlite_path=self.sqlite_path, library_id=self.library_id, fulltext_for=self._fulltext_for
                ).read()
            except sqlite3.DatabaseError as exc:
                raise LibraryLockedError(
                    f"Could not read the snapshot of {self.sqlite_path}: {exc}",
                    "Is this Zotero's zotero.sqlite? If Zotero was writing, retry; otherwise close Zotero and retry.",
                ) from exc
            finally:
                conn.close()

    def _fulltext_for(self, rows: Sequence[AttachmentRow], failures: list) -> FileText:
        """(Zotero's full text of the attachments with no PDF at hand, the PDFs at hand).

        A PDF whose file is here (``storage/<key>/`` or a linked file) is read per page at conversion
        time; its own ``.zotero-ft-cache`` travels with it as the fallback. Everything else keeps the
        cache text as before. Only a ``stat`` per PDF here: a snapshot stays cheap.
        """
        texts: list[str] = []
        pdfs: list[PdfFile] = []
        for row in rows:
            if not is_safe_key(row.key):  # a crafted key must not name a path outside storage/
                failures.append((repr(row.key)[:40], "attachment refused: not a valid Zotero key"))
                continue
            cached = self._cache_text(row.key, failures)
            found = self._pdf_at_hand(row, cached) if self.read_pdfs and is_pdf(row) else None
            if found is not None:
                pdfs.append(found)
            elif cached and cached.strip():
                texts.append(cached)
        joined = "\n\n".join(t.strip() for t in texts if t.strip())
        return joined or None, tuple(pdfs)

    def _cache_text(self, att_key: str, failures: list) -> str | None:
        """The attachment's ``.zotero-ft-cache`` (kept in memory by the file's stamp), or None."""
        path = self.storage_dir / att_key / ".zotero-ft-cache"
        try:
            st = path.stat()
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        cached = self._fulltext_cache.get(path)
        if cached and cached[0] == stamp:
            return cached[1]
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            failures.append((att_key, f"full text unreadable: {exc}"))
            return None
        self._fulltext_cache[path] = (stamp, text)
        return text

    def _pdf_at_hand(self, row: AttachmentRow, cached_text: str | None) -> PdfFile | None:
        """The attachment's PDF file when it exists here (its size and mtime are its identity)."""
        if needs_base_dir(row) and self._base_dir is None and not self._base_dir_looked_up:
            self._base_dir_looked_up = True
            self._base_dir = find_attachment_base_dir(self.zotero_dir or self.sqlite_path.parent)
        path = attachment_path(row, self.storage_dir, self._base_dir)
        if path is None:
            return None
        try:
            st = path.stat()
        except OSError:
            return None  # not synced to this machine, or moved: Zotero's full-text cache stands in
        if not stat.S_ISREG(st.st_mode):
            return None
        return PdfFile(row.key, str(path), st.st_size, st.st_mtime_ns, cached_text)


_READ_ONLY = (
    "The Zotero desktop database is read-only here (Zotero must not be written behind its back).",
    "To save notes, configure the Zotero Web API (library.source = 'zotero-web') or, with Zotero 10, "
    "its local API (library.local = true), or use the demo library.",
)
