"""Writing documents into the corpus: convert, bundle, meta row, index rows — one document at a time.

``CorpusWriter`` holds the corpus's state (paths, source, indexer, meta database) and the steps
a sync run (corpus/sync_run.py) and the read path (``Corpus`` in corpus/sync.py) share: making
a document's context and bundle, committing it in a transaction, and removing documents.

Consistency: a document's meta row and its FTS rows (``indexer.stage``) change
in one SQLite transaction, and its bundle is renamed into place inside that
transaction, last; vectors follow after COMMIT (``indexer.commit_vectors``). If
anything fails the transaction rolls back and the old bundle stays. If the
COMMIT itself fails after the rename, the bundle is newer than its meta row;
the next read or sync sees a hash mismatch and re-materializes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from zocrates_nb.convert.annotation import annotation_source_hash, color_meaning, convert_annotation
from zocrates_nb.convert.convert import (
    CONVERTER_VERSION,
    ConvertedNote,
    convert_note,
    convert_paper,
    paper_source_hash,
    sha256_text,
)
from zocrates_nb.corpus import held_papers
from zocrates_nb.corpus.bundle import (
    MANIFEST,
    BundleError,
    PreparedBundle,
    annotation_manifest,
    note_manifest,
    paper_manifest,
    prepare_bundle,
    read_manifest,
    remove_bundle,
    sweep_temporary,
)
from zocrates_nb.corpus.links import PaperCatalogue, plain_text
from zocrates_nb.corpus.meta import MetaDB, MetaRow
from zocrates_nb.corpus.report import SyncReport, failure_reason
from zocrates_nb.errors import ConversionError, NotFoundError
from zocrates_nb.protocols import NullEventSink
from zocrates_nb.records import PdfFile, PdfText
from zocrates_nb.storage.locks import corpus_lock


class PageReader(Protocol):
    """What reads a paper's PDF files per page (``library.pdf_text.PdfPageReader``: PDFium, cached).

    Why here and not in the source's snapshot: reading a PDF costs milliseconds a page, and a
    snapshot must stay cheap (it is taken on every sync and read). Conversion happens on the sync's
    thread while the dense feed embeds the previous batch on the other core, so the pages are read
    in the shadow of the embedder."""

    def read(self, pdf: PdfFile) -> PdfText: ...


class DocumentIndexer(Protocol):
    """The seam the search index plugs into. ``stage`` replaces whatever the index held for the key."""

    def stage(self, conn, manifest: dict, markdown: str) -> None: ...

    def unstage(self, conn, key: str) -> None: ...

    def record_libraries(self, conn, libraries, of_keys) -> int:
        """The libraries a sync read and each document's (``library_id``), in the sync's transaction."""
        ...

    def commit_vectors(self) -> Any: ...


@dataclass
class WorkItem:
    """One document a sync (or a read) is about to convert and install."""

    kind: str  # "note" | "paper" | "annotation"
    record: Any  # Note | Paper | Annotation
    source_hash: str
    context: dict
    context_hash: str
    is_new: bool


def now_iso() -> str:
    """UTC now, to the second, as stored in manifests."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def hash_json(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()


def source_hash_of(kind: str, record: Any) -> str:
    """The SHA-256 that decides whether a document of ``kind`` is stale (raises ConversionError for a
    note body that is not text)."""
    if kind == "note":
        return note_source_hash(record.html)
    if kind == "annotation":
        return annotation_source_hash(record)
    return paper_source_hash(record)


def note_source_hash(html: Any) -> str:
    """SHA-256 of the note HTML as the source gives it (str as UTF-8, bytes as they are)."""
    if not isinstance(html, (str, bytes)):
        raise ConversionError(
            f"the note body is {type(html).__name__}, not HTML text", "Check the note in Zotero; it was left untouched."
        )
    return sha256_text(html)


class CorpusWriter:
    """The corpus's state and the steps that write one document (see the module docstring)."""

    def __init__(
        self,
        paths,
        source,
        indexer: DocumentIndexer | None = None,
        events=None,
        *,
        durable: bool = False,
        pages: PageReader | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        """``durable=True`` fsyncs every bundle (≈3 fsyncs, 5–20 ms each on a busy disk). The default
        relies on self-healing instead: a bundle damaged by a crash fails its ``content_sha256``
        check or its JSON parse on read and is re-materialized from the library. ``events`` receives the
        ``read``/``lookup``/``sync`` diagnostics events (default: a sink that records nothing).
        ``pages`` reads papers' PDFs per page; without it a paper keeps Zotero's full text (no pages).
        ``settings``: the config's ``index`` section, handed in: ``annotations`` (false leaves PDF annotations
        out) and ``annotation_colors`` (what the user's highlight colours mean: hex code or name → meaning)."""
        self.durable = durable
        self.annotations = bool((settings or {}).get("annotations", True))
        self.annotation_colors = dict((settings or {}).get("annotation_colors") or {})
        self.pages = pages
        self.paths = paths
        self.source = source
        self.indexer = indexer
        self.events = events if events is not None else NullEventSink()
        self.corpus_dir = Path(paths.corpus)
        self.meta = MetaDB(paths.meta_db, read_only=paths.unwritable)
        self.collection_names: dict[str, str] = {}
        self._names_refreshed = float("-inf")
        self._catalogue: PaperCatalogue | None = None
        if not paths.unwritable:  # reading only: nothing is created or swept
            self.corpus_dir.mkdir(parents=True, exist_ok=True)
            sweep_temporary(self.corpus_dir)

    def commit_vectors(self, report: SyncReport | None = None) -> None:
        if self.indexer is None:
            return
        try:
            self.indexer.commit_vectors()
        except Exception as err:  # noqa: BLE001 - lexical search still works; vectors reconcile later
            if report is None:
                raise
            report.warnings.append(("(vectors)", f"dense vectors not updated: {failure_reason(err)}"))

    # ------------------------------------------------------------------ one document
    def _names_for(self, keys: list[str]) -> list[str]:
        """Collection names for keys; a key not seen yet (a save before any sync) refreshes the map once."""
        now = time.monotonic()
        if any(k not in self.collection_names for k in keys) and now - self._names_refreshed > 5.0:
            self._names_refreshed = now  # at most one snapshot per few seconds (dangling keys)
            self.collection_names.update(self.source.snapshot().collection_names())
        return [self.collection_names.get(k, k) for k in keys]

    def note_context(
        self, note, parent_title: str | None, parent=None, catalogue: PaperCatalogue | None = None
    ) -> dict:
        """What a note is indexed with besides its words: its paper or collections, and the papers it links to.

        The links (corpus/links.py) are part of the context, so its hash changes, and the note is
        re-indexed, when an edit adds or removes a citation or when the library gains or loses a paper the
        note names. ``catalogue``: the library's papers (a sync builds it once); None: built here."""
        keys = list(note.collections)
        context = {
            "parent_key": note.parent_key,
            "parent_title": parent_title,
            "collection_keys": keys,
            "collections": self._names_for(keys),
        }
        if parent is not None:  # a child note is indexed with its paper's authors and year too
            context.update(parent_creators=list(parent.creators)[:3], parent_year=parent.year)
        catalogue = catalogue if catalogue is not None else self.paper_catalogue()
        html = note.html if isinstance(note.html, str) else bytes(note.html or b"").decode("utf-8", "replace")
        related = getattr(note, "related", ())
        found = catalogue.links(html, plain_text(html), exclude=[note.parent_key or ""], related=related)
        if found:  # only then: a note that links nothing keeps the context (and hash) it had before links
            context["links"] = [
                {"key": link.paper_key, "reason": link.reason, "title": catalogue.titles.get(link.paper_key, "")}
                for link in found
            ]
        return context

    def paper_catalogue(self, papers: Any = None) -> PaperCatalogue:
        """The papers notes link to: built from ``papers`` (a sync's snapshot) or, once, from the source."""
        if papers is not None or self._catalogue is None:
            self._catalogue = PaperCatalogue(papers if papers is not None else self.source.snapshot().papers)
        return self._catalogue

    def annotation_context(self, annotation, parent=None) -> dict:
        """An annotation is indexed with its paper (title, first authors, year) and its colour's meaning."""
        return {
            "parent_key": annotation.parent_key,
            "parent_title": parent.title if parent is not None else None,
            "parent_creators": list(parent.creators)[:3] if parent is not None else [],
            "parent_year": parent.year if parent is not None else None,
            "color_meaning": color_meaning(annotation.color, annotation.color_name, self.annotation_colors),
            "collection_keys": [],
            "collections": [],
        }

    def record_of(self, kind: str, key: str) -> Any:
        """The library's current record of ``kind`` for ``key`` (None: gone, or annotations are off)."""
        if kind == "note":
            return self.source.get_note(key)
        if kind == "annotation":
            get = getattr(self.source, "get_annotation", None)
            found = get(key) if get is not None and self.annotations else None
            return found if found is not None and found.indexable else None
        return self.source.get_paper(key)

    def paper_context(self, paper) -> dict:
        keys = list(paper.collections)
        return {"collection_keys": keys, "collections": self._names_for(keys)}

    def prepare_item(self, item: WorkItem) -> tuple[ConvertedNote, dict, PreparedBundle]:
        if item.kind == "note":
            converted = convert_note(item.record.html)
            manifest = note_manifest(item.record, converted, item.context, now_iso())
        elif item.kind == "annotation":
            converted = convert_annotation(item.record, item.context.get("color_meaning"))
            manifest = annotation_manifest(item.record, converted, item.context, now_iso())
        else:
            converted = convert_paper(item.record, self.pdf_texts(item.record))
            manifest = paper_manifest(item.record, converted, item.context, now_iso())
        manifest["source_hash"] = item.source_hash
        bundle = prepare_bundle(self.corpus_dir, item.record.key, manifest, converted.markdown, durable=self.durable)
        return converted, manifest, bundle

    def pdf_texts(self, paper) -> list[PdfText]:
        """What reading each of the paper's PDFs gave; a reader that fails outright is a failure of that
        PDF (the paper falls back to Zotero's full text), never of the paper."""
        if self.pages is None or not paper.pdfs:
            return []
        texts = []
        for pdf in paper.pdfs:
            try:
                texts.append(self.pages.read(pdf))
            except Exception as err:  # noqa: BLE001 - one unreadable PDF never stops the paper or the sync
                texts.append(PdfText(pdf.attachment_key, failure=f"the PDF could not be read ({failure_reason(err)})"))
        return texts

    def stored_manifest(self, key: str) -> dict:
        try:
            return read_manifest(self.corpus_dir / key)
        except (BundleError, OSError, ValueError):
            return {}  # a missing bundle: its title comes back with its next sync

    def commit_item(self, conn, item: WorkItem, manifest: dict, markdown: str, bundle: PreparedBundle) -> None:
        """Inside a transaction: meta row, index rows, then the bundle rename (last, so a failure
        before it leaves the old bundle in place)."""
        record = item.record
        self.meta.upsert(
            conn,
            MetaRow(
                key=record.key,
                kind=item.kind,
                source_hash=item.source_hash,
                converter_version=CONVERTER_VERSION,
                bundle_path=f"{self.corpus_dir.name}/{record.key}",
                title=manifest["title"],
                parent_key=manifest.get("parent_key"),
                updated_at=manifest["converted_at"],
                context_hash=item.context_hash,
                collections=tuple(manifest.get("collections") or ()),
            ),
        )
        if item.kind == "paper":  # the online turns' "already held?" lookup (held_papers.py)
            held_papers.record(conn, record.key, manifest.get("doi"), manifest["title"])
        if self.indexer is not None:
            self.indexer.stage(conn, manifest, markdown)
        bundle.install()

    def _materialize(self, kind: str, record: Any, previous: dict | None = None) -> Path:
        """Convert + bundle + meta + index for one record now, in one transaction."""
        if previous:  # remember collection names we learnt from the old bundle
            for k, name in zip(previous.get("collection_keys") or [], previous.get("collections") or [], strict=False):
                self.collection_names.setdefault(k, name)
        if kind == "note":
            parent = self.source.get_paper(record.parent_key) if record.parent_key else None
            context = self.note_context(record, parent.title if parent else None, parent)
            digest = note_source_hash(record.html)
        elif kind == "annotation":
            parent = self.source.get_paper(record.parent_key) if record.parent_key else None
            context, digest = self.annotation_context(record, parent), annotation_source_hash(record)
        else:
            context, digest = self.paper_context(record), paper_source_hash(record)
        item = WorkItem(kind, record, digest, context, hash_json(context), previous is None)
        converted, manifest, bundle = self.prepare_item(item)
        try:
            with corpus_lock(self.paths.locks), self.meta.write() as conn:  # excludes a concurrent rebuild
                self.commit_item(conn, item, manifest, converted.markdown, bundle)
        finally:
            bundle.discard()
        self.commit_vectors()
        return self.corpus_dir / record.key

    def remove_documents(self, keys: Sequence[str], report: SyncReport | None = None) -> None:
        with self.meta.write() as conn:
            for key in keys:
                if self.indexer is not None:
                    self.indexer.unstage(conn, key)
                self.meta.delete(conn, key)
                held_papers.forget(conn, key)
        for key in keys:
            remove_bundle(self.corpus_dir, key)
        self.commit_vectors(report)  # in a sync, a vector-store error is a warning (as in _apply)

    def keys(self, kind: str | None = None) -> list[str]:
        return self.meta.keys(kind)

    def listing(self, kind: str = "note") -> list[dict]:
        """``[{"key", "title", "parent_key", "collections"}]`` for every document of ``kind`` held now."""
        return [
            {"key": r.key, "title": r.title, "parent_key": r.parent_key, "collections": list(r.collections)}
            for r in self.meta.rows(kind)
        ]

    def close(self) -> None:
        self.meta.close()
        close_pages = getattr(self.pages, "close", None)
        if close_pages is not None:
            close_pages()


def try_manifest(bundle_dir: Path) -> dict | None:
    """The bundle's manifest, or None when it is missing or unreadable."""
    try:
        return read_manifest(bundle_dir) if os.path.exists(os.path.join(bundle_dir, MANIFEST)) else None
    except (NotFoundError, OSError):
        return None
