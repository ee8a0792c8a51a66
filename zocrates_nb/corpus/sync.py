"""The corpus: library records → OKF bundles, kept current by SHA-256 staleness.

``Corpus`` is the read path: every read checks the source's hash against the meta row
(one hash and one indexed SELECT on the fast path, ``_resolve_bundle_dir``) and
re-materializes a stale or missing bundle first. Writing one document lives in
corpus/writer.py (``CorpusWriter``, the base class), one sync run in corpus/sync_run.py.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from zocrates_nb.convert.convert import CONVERTER_VERSION
from zocrates_nb.corpus.bundle import (
    MANIFEST,
    BundleError,
    StoredDocument,
    read_bundle,
    read_manifest,
    stored_documents,
)
from zocrates_nb.corpus.report import SyncReport, failure_reason
from zocrates_nb.corpus.sync_run import BATCH, SyncRun
from zocrates_nb.corpus.writer import CorpusWriter, DocumentIndexer, note_source_hash, source_hash_of, try_manifest
from zocrates_nb.errors import ConversionError, NotFoundError

__all__ = ["Corpus", "SyncReport", "DocumentIndexer", "BATCH", "find_section", "note_source_hash"]

log = logging.getLogger(__name__)


class _Resolved(NamedTuple):
    """Where a key's bundle is, how it was found, and why a stale one could not be re-made."""

    path: Path
    fast_path: bool
    rematerialized: bool
    error: str | None = None


class Corpus(CorpusWriter):
    """OKF bundles for every note, paper and PDF annotation of one library source, plus the read path over them."""

    def sync(self, progress: bool | None = None, verify: bool = False, *, vectors: bool = True) -> SyncReport:
        """Bring bundles, meta rows and index rows in line with the source; never stops at one bad note.

        Every sync also checks (cheaply) that bundles, meta rows and index rows agree and re-makes
        what disagrees (``corpus/repair.py``); ``verify=True`` also checks every bundle's hash.
        ``vectors=False`` leaves the dense phase to the caller (``indexer.commit_vectors()``; the
        notebook runs it on the warm-up thread, so lexical search is ready first).
        """
        return SyncRun(self, progress=progress, verify=verify, vectors=vectors).run()

    # ------------------------------------------------------------------ read path
    def _resolve(self, key: str) -> _Resolved:
        """Where ``key``'s current bundle is, re-materializing a stale one (or a key never seen)."""
        row = self.meta.lookup(key)
        if row is not None:
            return self._resolve_known(key, row)
        note = self.source.get_note(key)
        if note is not None:
            return _Resolved(self._materialize("note", note), False, True)
        paper = self.source.get_paper(key)
        if paper is not None:
            return _Resolved(self._materialize("paper", paper), False, True)
        annotation = self.record_of("annotation", key)
        if annotation is not None:
            return _Resolved(self._materialize("annotation", annotation), False, True)
        raise NotFoundError(
            f"No note, paper or annotation with key {key!r} in the library.",
            "Use search_corpus to find keys, or run sync if the item is new.",
        )

    def _resolve_known(self, key: str, row: tuple) -> _Resolved:
        """A key with a meta row: the fast path when its hash and converter are current."""
        kind, stored_hash, version, _ = row
        record = self.record_of(kind, key)
        if record is None:
            self.remove_documents([key])
            raise NotFoundError(
                f"The {kind} {key} is no longer in the library (deleted or trashed).",
                "Search again; it has been removed from the corpus and the index.",
            )
        try:
            current = source_hash_of(kind, record)
        except ConversionError:
            current = None  # a body that is not text: keep the last good bundle (below)
        bundle_dir = self.corpus_dir / key
        if (
            current == stored_hash
            and version == CONVERTER_VERSION
            and os.path.exists(os.path.join(bundle_dir, MANIFEST))
        ):
            return _Resolved(bundle_dir, True, False)
        previous = try_manifest(bundle_dir)
        try:
            return _Resolved(self._materialize(kind, record, previous), False, True)
        except Exception as err:
            if previous is None:
                raise
            # keep serving the last good bundle (nothing lost); say so in the log and the event
            log.warning("serving the previous bundle of %s: re-materializing failed: %s", key, failure_reason(err))
            return _Resolved(bundle_dir, False, False, failure_reason(err))

    def rematerialize_now(self, key: str) -> Path:
        row = self.meta.lookup(key)
        kind = row[0] if row else "note"
        record = self.record_of(kind, key)
        if record is None:
            raise NotFoundError(f"The {kind} {key} is no longer in the library.", "Run sync.")
        return self._materialize(kind, record, try_manifest(self.corpus_dir / key))

    def _resolve_bundle_dir(self, key: str, *, event: str = "read") -> Path:
        """The current bundle for ``key``: fast path if its hash is unchanged, else re-materialised.

        ``event`` names the diagnostics event: ``read`` when an agent or user reads the
        document (it counts towards hit rates), ``lookup`` for internal manifest look-ups
        such as resolving a title (staleness is still recorded, hit rates are not inflated).
        """
        started = time.perf_counter()
        resolved = self._resolve(key)
        extra = {"error": resolved.error} if resolved.error else {}
        self.events.emit(
            event,
            key=key,
            fast_path=resolved.fast_path,
            rematerialised=resolved.rematerialized,
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
            **extra,
        )
        return resolved.path

    def read_document(self, key: str, section: str | None = None) -> str:
        """The document's Markdown, or one section of it (a TOC id or heading title)."""
        bundle_dir = self._resolve_bundle_dir(key)
        try:
            manifest, markdown = read_bundle(bundle_dir)
        except (BundleError, NotFoundError) as err:  # damaged or half-deleted on disk: rebuild it once
            log.warning("bundle %s unreadable (%s); re-materialising", key, err)
            manifest, markdown = read_bundle(self.rematerialize_now(key))
        if section is None:
            return markdown
        entry = find_section(manifest.get("toc") or [], section)
        if entry is None:
            available = ", ".join(f"{e['id']} ({e['title']})" for e in manifest.get("toc") or []) or "none"
            raise NotFoundError(f"No section {section!r} in {key}.", f"Available sections: {available}.")
        lines = markdown.split("\n")
        return "\n".join(lines[entry["line_start"] - 1 : entry["line_end"]]) + "\n"

    def get_document_toc(self, key: str) -> list[dict]:
        return list(self.manifest(key, event="read").get("toc") or [])

    def manifest(self, key: str, *, event: str = "lookup") -> dict:
        bundle_dir = self._resolve_bundle_dir(key, event=event)
        try:
            return read_manifest(bundle_dir)
        except NotFoundError as err:  # unreadable okf.json (e.g. truncated by a crash): rebuild it once
            log.warning("manifest of %s unreadable (%s); re-materialising", key, err)
            return read_manifest(self.rematerialize_now(key))

    def materialize_note(self, note) -> Path:
        """Convert, bundle and index a note now (right after Save as Note)."""
        return self._materialize("note", note, try_manifest(self.corpus_dir / note.key))

    def documents(self) -> Iterator[StoredDocument]:
        """Every bundle in the corpus folder as stored: no staleness check, no library, no meta rows.

        What ``index rebuild`` reads; a bundle that does not verify comes with ``error`` set.
        """
        return stored_documents(self.corpus_dir)

    def __repr__(self) -> str:
        return f"Corpus({str(self.corpus_dir)!r}, {self.meta.count()} documents)"


def find_section(toc: Sequence[dict], section: str) -> dict | None:
    """A TOC entry by id, else by title (case and spacing ignored)."""
    wanted = " ".join(str(section).split()).casefold()
    for entry in toc:
        if entry["id"] == section:
            return entry
    for entry in toc:
        if " ".join(entry["title"].split()).casefold() == wanted or entry["id"] == wanted:
            return entry
    return None
