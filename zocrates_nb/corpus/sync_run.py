"""One sync run: the library snapshot → new, changed, unchanged, removed and failed documents.

Why hashes and not modification dates: Zotero's ``dateModified`` changes when nothing in the
text did (sync, tags), and a desktop snapshot may reorder rows; the note's own HTML is what the
Markdown is made from, so its SHA-256 decides. An unchanged note therefore costs one hash and
one dict lookup during sync. Documents are converted outside the write transaction and
installed ``BATCH`` at a time, each in its own savepoint, so one bad note never stops the others.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from zocrates_nb.convert.annotation import annotation_source_hash
from zocrates_nb.convert.convert import CONVERTER_VERSION, ConvertedNote, paper_source_hash
from zocrates_nb.corpus import held_papers
from zocrates_nb.corpus.bundle import PreparedBundle
from zocrates_nb.corpus.report import SyncReport, failure_reason
from zocrates_nb.corpus.writer import WorkItem, hash_json, note_source_hash
from zocrates_nb.errors import ConversionError, StorageUnavailableError
from zocrates_nb.progress import ProgressReporter
from zocrates_nb.storage.locks import corpus_lock
from zocrates_nb.storage.space import why_unwritable, write_problem

if TYPE_CHECKING:
    from zocrates_nb.corpus.writer import CorpusWriter

BATCH = 64  # documents per write transaction during sync (one COMMIT each, a savepoint per document)
#: what a store raises when the disk is full or read-only (storage/space.py tells which)
_WRITE_ERRORS = (OSError, sqlite3.Error, StorageUnavailableError)


class SpaceStop(Exception):
    """Raised inside a batch when a write failed for want of space or write access: stop the sync.

    Why not one failure per document: on a full disk every document fails the same way, each
    after its own fsyncs and retries, and the user waits minutes for a report of N identical
    failures (issue 26). The first such failure ends the sync with one clear error instead."""

    def __init__(self, problem: str, cause: BaseException) -> None:
        super().__init__(problem)
        self.problem, self.cause = problem, cause


class SyncRun:
    """One ``Corpus.sync``: classify every library record against the meta state, then apply."""

    def __init__(
        self, corpus: CorpusWriter, *, progress: bool | None = None, verify: bool = False, vectors: bool = True
    ) -> None:
        self.corpus = corpus
        self.progress = progress
        self.verify = verify
        self.vectors = vectors
        self.report = SyncReport()

    def run(self) -> SyncReport:
        """Bring bundles, meta rows and index rows in line with the source (see ``Corpus.sync``).

        A full or read-only disk ends it with one ``StorageUnavailableError`` (``_stopped``)."""
        try:
            return self._run()
        except SpaceStop as stop:
            raise self._stopped(stop.problem, stop.cause, "the corpus") from stop.cause
        except _WRITE_ERRORS as err:
            if isinstance(err, StorageUnavailableError) or not (problem := write_problem(self.corpus.paths.root, err)):
                raise
            raise self._stopped(problem, err, "the corpus") from err

    def _run(self) -> SyncReport:
        corpus, report = self.corpus, self.report
        started = time.perf_counter()
        with corpus_lock(corpus.paths.locks):
            snapshot = corpus.source.snapshot()
            corpus.collection_names = snapshot.collection_names()
            state = self._checked_state()
            work, seen = self._classify_all(snapshot, state)
            removed = [key for key in state if key not in seen]
            with corpus.meta.write() as conn:  # once, for a data directory synced before the table existed
                held_papers.ensure_complete(
                    conn, [k for k, row in state.items() if row[0] == "paper"], corpus.stored_manifest
                )
                if corpus.indexer is not None and snapshot.libraries:  # search filters and links by library
                    corpus.indexer.record_libraries(conn, snapshot.libraries, snapshot.library_of_keys())
            from zocrates_nb.corpus.dense_phase import fill_vectors, finish_feed, start_feed

            # the vectors fill in behind the lexical index: each committed batch goes to a background
            # feed (model load, Chroma and embedding on the other core), so lexical search covers a
            # batch at once and the embedder no longer waits for the whole lexical phase
            feed = start_feed(corpus.indexer, len(work)) if self.vectors and work else None
            try:
                self._lexical_phase(work, removed, feed)
                fed = finish_feed(feed, report, self.progress) if feed is not None else None
            finally:
                if feed is not None:
                    feed.stop()  # a failed or interrupted sync: the next one resumes the fill
            if fed is not None and (problem := write_problem(corpus.paths.root, fed)):
                raise self._stopped(problem, fed, "the dense vectors") from fed  # a retry would fail the same way
            if self.vectors:  # what the feed did not take: a resumed fill, removals, a failed feed's retry
                failed = fill_vectors(corpus.indexer, report, self.progress)
                if failed is not None and (problem := write_problem(corpus.paths.root, failed)):
                    raise self._stopped(problem, failed, "the dense vectors") from failed
        report.seconds = time.perf_counter() - started
        corpus.events.emit(
            "sync",
            **report.counts,
            changed_keys=report.changed_keys[:1000],
            seconds=round(report.seconds, 3),
            latency_ms=round(report.seconds * 1000, 3),
        )
        return report

    def _stopped(self, problem: str, cause: BaseException, what: str) -> StorageUnavailableError:
        """The one error a sync ends with on a full or read-only disk: what was kept, what to do."""
        root, counts = self.corpus.paths.root, self.report.counts
        while isinstance(cause, StorageUnavailableError) and cause.__cause__ is not None:
            cause = cause.__cause__  # the store's own message says the same as this one: show the OS's words
        done = counts["new"] + counts["changed"]
        kept = f"{done:,} new or changed documents were synced before it stopped" if done else "Nothing new was synced"
        return StorageUnavailableError(
            f"The sync stopped while writing {what}: {why_unwritable(root, problem)} ({cause}). "
            f"{kept}; nothing half-written is left, and nothing in the library was changed or lost.",
            f"Free some space on the disk holding {root}, then sync again: it continues where this one stopped."
            if problem == "full"
            else f"Make {root} writable, then sync again: it continues where this one stopped.",
        )

    def _lexical_phase(self, work: list[WorkItem], removed: list[str], feed: Any) -> None:
        """Convert and commit every changed document, batch by batch; the feed gets each committed batch."""
        corpus, report = self.corpus, self.report
        with ProgressReporter(len(work) + len(removed), "Syncing corpus", enabled=self.progress) as bar:
            if removed:
                corpus.remove_documents(removed, report)
                report.counts["removed"] += len(removed)
                bar.update(len(removed))
            for start in range(0, len(work), BATCH):
                self._apply(work[start : start + BATCH])
                bar.update(len(work[start : start + BATCH]))
                if feed is not None:
                    feed.committed()
                    bar.note(feed.progress_line() or "")

    def _checked_state(self) -> dict:
        """The meta state after the cheap consistency check; disagreeing documents are marked to re-make."""
        from zocrates_nb.corpus.repair import check_consistency, drop_orphans, keys_to_rematerialize

        corpus, report = self.corpus, self.report
        state = corpus.meta.state()
        found = check_consistency(corpus, corpus.indexer, verify=self.verify)
        report.warnings += [("(consistency)", done) for done in drop_orphans(corpus, corpus.indexer, found)]
        for key, why in keys_to_rematerialize(found).items():
            if key in state:
                state[key] = ("repair",) + state[key][1:]  # never equal: re-made as "changed"
                report.warnings.append((key, why))
        return state

    def _classify_all(self, snapshot: Any, state: dict) -> tuple[list[WorkItem], set[str]]:
        """The work to do (new or changed documents) and every key the library still has."""
        corpus, report = self.corpus, self.report
        paper_titles = {p.key: p.title for p in snapshot.papers}
        papers_by_key = {p.key: p for p in snapshot.papers}
        catalogue = corpus.paper_catalogue(snapshot.papers)  # once per sync: the papers notes link to
        work: list[WorkItem] = []
        seen: set[str] = set()
        for key, reason in snapshot.failures:
            seen.add(key)
            report.fail(key, f"the library could not read it: {reason}")
        for note in snapshot.notes:
            seen.add(note.key)
            try:
                digest = note_source_hash(note.html)
            except ConversionError as err:
                report.fail(note.key, err.message)
                continue
            context = corpus.note_context(
                note, paper_titles.get(note.parent_key or ""), papers_by_key.get(note.parent_key or ""), catalogue
            )
            self._classify(work, state, "note", note, digest, context)
        for paper in snapshot.papers:
            seen.add(paper.key)
            self._classify(work, state, "paper", paper, paper_source_hash(paper), corpus.paper_context(paper))
        # PDF annotations with words of their own (image and ink marks without any are provenance only)
        for annotation in snapshot.annotations if corpus.annotations else ():
            if annotation.indexable:
                seen.add(annotation.key)
                context = corpus.annotation_context(annotation, papers_by_key.get(annotation.parent_key or ""))
                self._classify(work, state, "annotation", annotation, annotation_source_hash(annotation), context)
        return work, seen

    def _classify(self, work: list[WorkItem], state: dict, kind: str, record: Any, digest: str, context: dict) -> None:
        context_hash = hash_json(context)
        row = state.get(record.key)
        if row is not None and row == (kind, digest, CONVERTER_VERSION, context_hash):
            self.report.counts["unchanged"] += 1
        else:
            work.append(WorkItem(kind, record, digest, context, context_hash, row is None))

    def _apply(self, batch: Sequence[WorkItem]) -> None:
        """Convert a batch outside the transaction, then install each one in its own savepoint."""
        corpus, report = self.corpus, self.report
        prepared: list[tuple[WorkItem, ConvertedNote, dict, PreparedBundle]] = []
        installed: list[tuple[WorkItem, PreparedBundle]] = []
        try:
            for item in batch:
                try:
                    converted, manifest, bundle = corpus.prepare_item(item)
                except Exception as err:  # noqa: BLE001 - one bad document never stops the others
                    self._stop_on_space(err)
                    report.fail(item.record.key, failure_reason(err))
                    continue
                prepared.append((item, converted, manifest, bundle))
            if prepared:
                try:
                    self._commit_batch(prepared, installed)
                except _WRITE_ERRORS as err:  # the COMMIT itself
                    self._stop_on_space(err)
                    raise
        except SpaceStop:
            # the batch's transaction rolled back: take out the bundles it installed for new documents
            # (no meta row points to them), so nothing half-written waits for the next sync to sweep
            for item, bundle in installed:
                if item.is_new:
                    shutil.rmtree(bundle.final_dir, ignore_errors=True)
            self._uncount(installed)
            raise
        finally:
            for *_, bundle in prepared:
                bundle.discard()  # no-op for installed bundles (their temp dir is gone)

    def _commit_batch(self, prepared: list, installed: list[tuple[WorkItem, PreparedBundle]]) -> None:
        corpus, report = self.corpus, self.report
        with corpus.meta.write() as conn:
            for item, converted, manifest, bundle in prepared:
                try:
                    with corpus.meta.write():
                        corpus.commit_item(conn, item, manifest, converted.markdown, bundle)
                except Exception as err:  # noqa: BLE001
                    bundle.discard()
                    self._stop_on_space(err)
                    report.fail(item.record.key, failure_reason(err))
                    continue
                installed.append((item, bundle))
                report.counts["new" if item.is_new else "changed"] += 1
                if not item.is_new:
                    report.changed_keys.append(item.record.key)
                report.warnings.extend((item.record.key, w) for w in converted.warnings)

    def _uncount(self, installed: list[tuple[WorkItem, PreparedBundle]]) -> None:
        """A rolled-back batch was not synced after all."""
        for item, _ in installed:
            self.report.counts["new" if item.is_new else "changed"] -= 1
            if not item.is_new and item.record.key in self.report.changed_keys:
                self.report.changed_keys.remove(item.record.key)

    def _stop_on_space(self, err: BaseException) -> None:
        if isinstance(err, SpaceStop):
            raise err
        if isinstance(err, _WRITE_ERRORS) and (problem := write_problem(self.corpus.paths.root, err)):
            raise SpaceStop(problem, err) from err
