"""The corpus: library records → OKF bundles, kept current by SHA-256 staleness.

Why hashes and not modification dates: Zotero's ``dateModified`` changes when
nothing in the text did (sync, tags), and a desktop snapshot may reorder rows;
the note's own HTML is what the Markdown is made from, so its SHA-256 decides.
An unchanged note therefore costs one hash and one dict lookup during sync,
and one hash and one indexed SELECT on the read path (``_resolve_bundle_dir``).

Consistency: a document's meta row and its FTS rows (``indexer.stage``) change
in one SQLite transaction, and its bundle is renamed into place inside that
transaction, last; vectors follow after COMMIT (``indexer.commit_vectors``). If
anything fails the transaction rolls back and the old bundle stays. If the
COMMIT itself fails after the rename, the bundle is newer than its meta row;
the next read or sync sees a hash mismatch and re-materialises it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence

from ..convert.convert import CONVERTER_VERSION, ConvertedNote, convert_note, convert_paper, paper_source_hash, sha256_text
from ..errors import ConversionError, NotFoundError
from ..locks import corpus_lock
from ..progress import ProgressReporter
from .bundle import (MANIFEST, BundleError, PreparedBundle, note_manifest, paper_manifest, prepare_bundle,
                     read_bundle, read_manifest, remove_bundle, sweep_temporary)
from . import held_papers
from .meta import DocumentRow, MetaDB

log = logging.getLogger(__name__)

BATCH = 64  # documents per write transaction during sync (one COMMIT each, a savepoint per document)


class DocumentIndexer(Protocol):
    """The seam the search index plugs into. ``stage`` replaces whatever the index held for the key."""

    def stage(self, conn, manifest: dict, markdown: str) -> None: ...

    def unstage(self, conn, key: str) -> None: ...

    def commit_vectors(self) -> Any: ...


@dataclass
class SyncReport:
    """What one sync did: counts, per-key failures and warnings, and how long it took."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("new", "changed", "unchanged", "removed", "failed"), 0))
    failures: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    changed_keys: list[str] = field(default_factory=list)   # re-materialised because their hash changed

    def to_dict(self) -> dict:
        return {"counts": dict(self.counts), "failures": [list(f) for f in self.failures],
                "warnings": [list(w) for w in self.warnings], "seconds": round(self.seconds, 3)}

    def summary(self) -> str:
        c = self.counts
        text = (f"{c['new']} new, {c['changed']} changed, {c['unchanged']} unchanged, "
                f"{c['removed']} removed, {c['failed']} failed in {self.seconds:.2f} s")
        lines = [text] + [f"  failed {key}: {why}" for key, why in self.failures]
        return "\n".join(lines + [f"  warning {key}: {why}" for key, why in self.warnings])

    __str__ = summary


@dataclass
class _Work:
    kind: str                 # "note" | "paper"
    record: Any               # Note | Paper
    source_hash: str
    context: dict
    context_hash: str
    is_new: bool


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hash_json(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()


def note_source_hash(html: Any) -> str:
    """SHA-256 of the note HTML as the source gives it (str as UTF-8, bytes as they are)."""
    if not isinstance(html, (str, bytes)):
        raise ConversionError(f"the note body is {type(html).__name__}, not HTML text",
                              "Check the note in Zotero; it was left untouched.")
    return sha256_text(html)


class Corpus:
    """OKF bundles for every note and paper of one library source, plus the read path over them."""

    def __init__(self, paths, source, indexer: DocumentIndexer | None = None, events=None, *,
                 durable: bool = False) -> None:
        """``durable=True`` fsyncs every bundle (≈3 fsyncs, 5–20 ms each on a busy disk). The default
        relies on self-healing instead: a bundle damaged by a crash fails its ``content_sha256``
        check or its JSON parse on read and is re-materialised from the library."""
        self.durable = durable
        self.paths = paths
        self.source = source
        self.indexer = indexer
        self.events = events
        self.corpus_dir = Path(paths.corpus)
        self.corpus_dir.mkdir(parents=True, exist_ok=True)
        self.meta = MetaDB(paths.meta_db)
        self._collection_names: dict[str, str] = {}
        self._names_refreshed = float("-inf")
        self._last_error: str | None = None
        sweep_temporary(self.corpus_dir)

    # ------------------------------------------------------------------ sync
    def sync(self, progress: bool | None = None, verify: bool = False, *, vectors: bool = True) -> SyncReport:
        """Bring bundles, meta rows and index rows in line with the source; never stops at one bad note.

        Every sync also checks (cheaply) that bundles, meta rows and index rows agree and re-makes
        what disagrees (``corpus/repair.py``); ``verify=True`` also checks every bundle's hash.
        ``vectors=False`` leaves the dense phase to the caller (``indexer.commit_vectors()``; the
        notebook runs it on the warm-up thread, so lexical search is ready first).
        """
        from .repair import check_consistency, drop_orphans, keys_to_rematerialise

        started = time.perf_counter()
        report = SyncReport()
        with corpus_lock(self.paths.locks):
            snapshot = self.source.snapshot()
            self._collection_names = snapshot.collection_names()
            paper_titles = {p.key: p.title for p in snapshot.papers}
            papers_by_key = {p.key: p for p in snapshot.papers}
            state = self.meta.state()
            found = check_consistency(self, self.indexer, verify=verify)
            report.warnings += [("(consistency)", done) for done in drop_orphans(self, self.indexer, found)]
            for key, why in keys_to_rematerialise(found).items():
                if key in state:
                    state[key] = ("repair",) + state[key][1:]     # never equal: re-made as "changed"
                    report.warnings.append((key, why))
            work: list[_Work] = []
            seen: set[str] = set()
            for key, reason in snapshot.failures:
                seen.add(key)
                self._fail(report, key, f"the library could not read it: {reason}")
            for note in snapshot.notes:
                seen.add(note.key)
                try:
                    digest = note_source_hash(note.html)
                except ConversionError as err:
                    self._fail(report, note.key, err.message)
                    continue
                context = self._note_context(note, paper_titles.get(note.parent_key or ""),
                                             papers_by_key.get(note.parent_key or ""))
                self._classify(report, work, state, "note", note, digest, context)
            for paper in snapshot.papers:
                seen.add(paper.key)
                self._classify(report, work, state, "paper", paper, paper_source_hash(paper),
                               self._paper_context(paper))
            removed = [key for key in state if key not in seen]
            with self.meta.write() as conn:      # once, for a data directory synced before the table existed
                held_papers.ensure_complete(conn, [k for k, row in state.items() if row[0] == "paper"],
                                            self._stored_manifest)
            with ProgressReporter(len(work) + len(removed), "Syncing corpus", enabled=progress) as bar:
                if removed:
                    self._remove(removed, report)
                    report.counts["removed"] += len(removed)
                    bar.update(len(removed))
                for start in range(0, len(work), BATCH):
                    self._apply(work[start:start + BATCH], report)
                    bar.update(len(work[start:start + BATCH]))
            # one dense pass after every FTS batch is committed: lexical search covers the whole
            # library within seconds of a big first sync, and the vectors fill in behind it
            from .dense_phase import fill_vectors

            if vectors:
                fill_vectors(self.indexer, report, progress)
        report.seconds = time.perf_counter() - started
        if self.events is not None:
            self.events.emit("sync", **report.counts, changed_keys=report.changed_keys[:1000],
                             seconds=round(report.seconds, 3),
                             latency_ms=round(report.seconds * 1000, 3))
        return report

    def _classify(self, report: SyncReport, work: list[_Work], state: dict, kind: str, record: Any,
                  digest: str, context: dict) -> None:
        context_hash = _hash_json(context)
        row = state.get(record.key)
        if row is not None and row == (kind, digest, CONVERTER_VERSION, context_hash):
            report.counts["unchanged"] += 1
        else:
            work.append(_Work(kind, record, digest, context, context_hash, row is None))

    @staticmethod
    def _fail(report: SyncReport, key: str, reason: str) -> None:
        report.counts["failed"] += 1
        report.failures.append((key, reason))

    def _apply(self, batch: Sequence[_Work], report: SyncReport) -> None:
        """Convert a batch outside the transaction, then install each one in its own savepoint."""
        prepared: list[tuple[_Work, ConvertedNote, dict, PreparedBundle]] = []
        for item in batch:
            try:
                converted, manifest, bundle = self._prepare(item)
            except Exception as err:  # noqa: BLE001 - one bad document never stops the others
                self._fail(report, item.record.key, _reason(err))
                continue
            prepared.append((item, converted, manifest, bundle))
        if not prepared:
            return
        try:
            with self.meta.write() as conn:
                for item, converted, manifest, bundle in prepared:
                    try:
                        with self.meta.write():
                            self._commit_one(conn, item, manifest, converted.markdown, bundle)
                    except Exception as err:  # noqa: BLE001
                        bundle.discard()
                        self._fail(report, item.record.key, _reason(err))
                        continue
                    report.counts["new" if item.is_new else "changed"] += 1
                    if not item.is_new:
                        report.changed_keys.append(item.record.key)
                    report.warnings.extend((item.record.key, w) for w in converted.warnings)
        finally:
            for *_, bundle in prepared:
                bundle.discard()  # no-op for installed bundles (their temp dir is gone)

    def _commit_vectors(self, report: SyncReport | None = None) -> None:
        if self.indexer is None:
            return
        try:
            self.indexer.commit_vectors()
        except Exception as err:  # noqa: BLE001 - lexical search still works; vectors reconcile later
            if report is None:
                raise
            report.warnings.append(("(vectors)", f"dense vectors not updated: {_reason(err)}"))

    # ------------------------------------------------------------------ one document
    def _names_for(self, keys: list[str]) -> list[str]:
        """Collection names for keys; a key not seen yet (a save before any sync) refreshes the map once."""
        now = time.monotonic()
        if any(k not in self._collection_names for k in keys) and now - self._names_refreshed > 5.0:
            self._names_refreshed = now          # at most one snapshot per few seconds (dangling keys)
            self._collection_names.update(self.source.snapshot().collection_names())
        return [self._collection_names.get(k, k) for k in keys]

    def _note_context(self, note, parent_title: str | None, parent=None) -> dict:
        keys = list(note.collections)
        context = {"parent_key": note.parent_key, "parent_title": parent_title, "collection_keys": keys,
                   "collections": self._names_for(keys)}
        if parent is not None:     # a child note is indexed with its paper's authors and year too
            context.update(parent_creators=list(parent.creators)[:3], parent_year=parent.year)
        return context

    def _paper_context(self, paper) -> dict:
        keys = list(paper.collections)
        return {"collection_keys": keys, "collections": self._names_for(keys)}

    def _prepare(self, item: _Work) -> tuple[ConvertedNote, dict, PreparedBundle]:
        if item.kind == "note":
            converted = convert_note(item.record.html)
            manifest = note_manifest(item.record, converted, item.context, _now())
        else:
            converted = convert_paper(item.record)
            manifest = paper_manifest(item.record, converted, item.context, _now())
        manifest["source_hash"] = item.source_hash
        bundle = prepare_bundle(self.corpus_dir, item.record.key, manifest, converted.markdown,
                                durable=self.durable)
        return converted, manifest, bundle

    def _stored_manifest(self, key: str) -> dict:
        try:
            return read_manifest(self.corpus_dir / key)
        except (BundleError, OSError, ValueError):
            return {}                           # a missing bundle: its title comes back with its next sync

    def _commit_one(self, conn, item: _Work, manifest: dict, markdown: str, bundle: PreparedBundle) -> None:
        """Inside a transaction: meta row, index rows, then the bundle rename (last, so a failure
        before it leaves the old bundle in place)."""
        record = item.record
        self.meta.upsert(conn, DocumentRow(
            key=record.key, kind=item.kind, source_hash=item.source_hash,
            converter_version=CONVERTER_VERSION, bundle_path=f"{self.corpus_dir.name}/{record.key}",
            title=manifest["title"], parent_key=manifest.get("parent_key"), updated_at=manifest["converted_at"],
            context_hash=item.context_hash, collections=tuple(manifest.get("collections") or ())))
        if item.kind == "paper":               # the online turns' "already held?" lookup (held_papers.py)
            held_papers.record(conn, record.key, manifest.get("doi"), manifest["title"])
        if self.indexer is not None:
            self.indexer.stage(conn, manifest, markdown)
        bundle.install()

    def _materialise(self, kind: str, record: Any, previous: dict | None = None) -> Path:
        """Convert + bundle + meta + index for one record now, in one transaction."""
        if previous:  # remember collection names we learnt from the old bundle
            for k, name in zip(previous.get("collection_keys") or [], previous.get("collections") or []):
                self._collection_names.setdefault(k, name)
        if kind == "note":
            parent = self.source.get_paper(record.parent_key) if record.parent_key else None
            context = self._note_context(record, parent.title if parent else None, parent)
            digest = note_source_hash(record.html)
        else:
            context, digest = self._paper_context(record), paper_source_hash(record)
        item = _Work(kind, record, digest, context, _hash_json(context), previous is None)
        converted, manifest, bundle = self._prepare(item)
        try:
            with corpus_lock(self.paths.locks), self.meta.write() as conn:   # excludes a concurrent rebuild
                self._commit_one(conn, item, manifest, converted.markdown, bundle)
        finally:
            bundle.discard()
        self._commit_vectors()
        return self.corpus_dir / record.key

    def _remove(self, keys: Sequence[str], report: SyncReport | None = None) -> None:
        with self.meta.write() as conn:
            for key in keys:
                if self.indexer is not None:
                    self.indexer.unstage(conn, key)
                self.meta.delete(conn, key)
                held_papers.forget(conn, key)
        for key in keys:
            remove_bundle(self.corpus_dir, key)
        self._commit_vectors(report)   # in a sync, a vector-store error is a warning (as in _apply)

    # ------------------------------------------------------------------ read path
    def _resolve(self, key: str) -> tuple[Path, bool, bool]:
        """(bundle dir, fast_path, rematerialised) for a key, re-materialising a stale bundle."""
        row = self.meta.lookup(key)
        if row is not None:
            kind, stored_hash, version, _ = row
            record = self.source.get_note(key) if kind == "note" else self.source.get_paper(key)
            if record is None:
                self._remove([key])
                raise NotFoundError(f"The {kind} {key} is no longer in the library (deleted or trashed).",
                                    "Search again; it has been removed from the corpus and the index.")
            try:
                current = note_source_hash(record.html) if kind == "note" else paper_source_hash(record)
            except ConversionError:
                current = None  # a body that is not text: keep the last good bundle (below)
            bundle_dir = self.corpus_dir / key
            if (current == stored_hash and version == CONVERTER_VERSION
                    and os.path.exists(os.path.join(bundle_dir, MANIFEST))):
                return bundle_dir, True, False
            previous = _try_manifest(bundle_dir)
            try:
                return self._materialise(kind, record, previous), False, True
            except Exception as err:
                if previous is None:
                    raise
                # keep serving the last good bundle (nothing lost); say so in the log and the event
                log.warning("serving the previous bundle of %s: re-materialising failed: %s", key, _reason(err))
                self._last_error = _reason(err)
                return bundle_dir, False, False
        note = self.source.get_note(key)
        if note is not None:
            return self._materialise("note", note), False, True
        paper = self.source.get_paper(key)
        if paper is not None:
            return self._materialise("paper", paper), False, True
        raise NotFoundError(f"No note or paper with key {key!r} in the library.",
                            "Use search_corpus to find keys, or run sync if the item is new.")

    def _rematerialise_now(self, key: str) -> Path:
        row = self.meta.lookup(key)
        kind = row[0] if row else "note"
        record = self.source.get_note(key) if kind == "note" else self.source.get_paper(key)
        if record is None:
            raise NotFoundError(f"The {kind} {key} is no longer in the library.", "Run sync.")
        return self._materialise(kind, record, _try_manifest(self.corpus_dir / key))

    def _resolve_bundle_dir(self, key: str, *, event: str = "read") -> Path:
        """The current bundle for ``key``: fast path if its hash is unchanged, else re-materialised.

        ``event`` names the diagnostics event: ``read`` when an agent or user reads the
        document (it counts towards hit rates), ``lookup`` for internal manifest look-ups
        such as resolving a title (staleness is still recorded, hit rates are not inflated).
        """
        started = time.perf_counter()
        self._last_error = None
        path, fast, rematerialised = self._resolve(key)
        if self.events is not None:
            extra = {"error": self._last_error} if self._last_error else {}
            self.events.emit(event, key=key, fast_path=fast, rematerialised=rematerialised,
                             latency_ms=round((time.perf_counter() - started) * 1000, 3), **extra)
        return path

    def read_document(self, key: str, section: str | None = None) -> str:
        """The document's Markdown, or one section of it (a TOC id or heading title)."""
        bundle_dir = self._resolve_bundle_dir(key)
        try:
            manifest, markdown = read_bundle(bundle_dir)
        except (BundleError, NotFoundError) as err:  # damaged or half-deleted on disk: rebuild it once
            log.warning("bundle %s unreadable (%s); re-materialising", key, err)
            manifest, markdown = read_bundle(self._rematerialise_now(key))
        if section is None:
            return markdown
        entry = find_section(manifest.get("toc") or [], section)
        if entry is None:
            available = ", ".join(f"{e['id']} ({e['title']})" for e in manifest.get("toc") or []) or "none"
            raise NotFoundError(f"No section {section!r} in {key}.", f"Available sections: {available}.")
        lines = markdown.split("\n")
        return "\n".join(lines[entry["line_start"] - 1: entry["line_end"]]) + "\n"

    def get_document_toc(self, key: str) -> list[dict]:
        return list(self.manifest(key, event="read").get("toc") or [])

    def manifest(self, key: str, *, event: str = "lookup") -> dict:
        bundle_dir = self._resolve_bundle_dir(key, event=event)
        try:
            return read_manifest(bundle_dir)
        except NotFoundError as err:  # unreadable okf.json (e.g. truncated by a crash): rebuild it once
            log.warning("manifest of %s unreadable (%s); re-materialising", key, err)
            return read_manifest(self._rematerialise_now(key))

    def materialize_note(self, note) -> Path:
        """Convert, bundle and index a note now (right after Save as Note)."""
        return self._materialise("note", note, _try_manifest(self.corpus_dir / note.key))

    def keys(self, kind: str | None = None) -> list[str]:
        return self.meta.keys(kind)

    def listing(self, kind: str = "note") -> list[dict]:
        """``[{"key", "title", "parent_key", "collections"}]`` for every document of ``kind`` held now."""
        return [{"key": r.key, "title": r.title, "parent_key": r.parent_key, "collections": list(r.collections)}
                for r in self.meta.rows(kind)]

    def documents(self, kind: str | None = None) -> Iterator[tuple[dict, str]]:
        """(manifest, markdown) for every bundle in the corpus, as stored (no staleness check)."""
        for key in self.meta.keys(kind):
            try:
                yield read_bundle(self.corpus_dir / key)
            except NotFoundError:
                continue

    def close(self) -> None:
        self.meta.close()

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


def _try_manifest(bundle_dir: Path) -> dict | None:
    try:
        return read_manifest(bundle_dir) if os.path.exists(os.path.join(bundle_dir, MANIFEST)) else None
    except (NotFoundError, OSError):
        return None


def _reason(err: BaseException) -> str:
    message = getattr(err, "message", None) or str(err) or type(err).__name__
    return message if isinstance(err, ConversionError) else f"{type(err).__name__}: {message}"
