"""Detect and repair damage to the derived stores: ``conversion_meta.db``, bundles, index rows.

Why repair and not just report: everything below the library is derived data. The
bundles can be re-made from the library, the meta rows and FTS rows from the bundles,
the vectors from the FTS rows. So a damaged ``conversion_meta.db`` is moved aside
(kept for a post-mortem, never deleted) and re-created from the bundles; a damaged
bundle is re-materialised from the library; index rows that disagree with the meta
rows are re-staged. Each repair is said (sync warnings, ``status``, ``doctor``), never
silent, and each hint names a command that really performs it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zocrates_nb.corpus.bundle import CONTENT, MANIFEST, read_bundle, remove_bundle
from zocrates_nb.errors import IndexCorruptError, NotFoundError, ZocratesError
from zocrates_nb.protocols import EventSink, NullEventSink
from zocrates_nb.records import kind_of_content_type
from zocrates_nb.storage.locks import corpus_lock
from zocrates_nb.storage.space import write_problem
from zocrates_nb.storage.sqlite_tx import connect_reading, has_unapplied_wal

log = logging.getLogger(__name__)
_NO_EVENTS = NullEventSink()

DAMAGED_SUFFIX = ".damaged-"
_SIDE_FILES = ("-wal", "-shm")


# ----------------------------------------------------------------------------- meta db


def meta_db_problem(path: Path) -> str | None:
    """``None`` when ``path`` is absent or passes ``PRAGMA quick_check``; else what is wrong."""
    path = Path(path)
    if not path.exists():
        return None
    if write_problem(path) and has_unapplied_wal(path):
        return None  # its last commits wait in the -wal, which cannot be read here: never judged damaged
    try:
        conn = connect_reading(path, timeout=10)
    except sqlite3.Error as exc:
        return f"cannot be opened: {exc}"
    try:
        rows = [r[0] for r in conn.execute("PRAGMA quick_check(5)").fetchall()]
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc).lower() or "busy" in str(exc).lower():
            return None  # another process is writing: not damage
        return f"is damaged: {exc}"
    except sqlite3.DatabaseError as exc:
        return f"is damaged: {exc}"
    finally:
        conn.close()
    return None if rows == ["ok"] else "is damaged: " + "; ".join(str(r) for r in rows)[:300]


def move_aside(path: Path) -> Path:
    """Rename a damaged SQLite file (and its -wal/-shm) to ``<name>.damaged-<timestamp>``."""
    path = Path(path)
    target = path.with_name(f"{path.name}{DAMAGED_SUFFIX}{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    os.replace(path, target)
    for suffix in _SIDE_FILES:
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))
    return target


def damaged_copies(path: Path) -> list[Path]:
    """Damaged files moved aside earlier (newest last)."""
    path = Path(path)
    return sorted(p for p in path.parent.glob(f"{path.name}{DAMAGED_SUFFIX}*") if not p.name.endswith(_SIDE_FILES))


def heal_meta_db(paths: Any, events: EventSink = _NO_EVENTS) -> str | None:
    """Move a damaged ``conversion_meta.db`` aside (the caller then restores it). Returns the problem."""
    with corpus_lock(paths.locks):
        problem = meta_db_problem(paths.meta_db)
        if problem is None:
            return None
        aside = move_aside(paths.meta_db)
    log.warning("%s %s; moved aside to %s and rebuilt from the bundles", paths.meta_db.name, problem, aside.name)
    events.emit("repair", store="meta_db", problem=problem, moved_to=aside.name)
    return problem


def restore_from_bundles(corpus: Any, indexer: Any = None) -> dict[str, int]:
    """Re-create meta rows (and FTS rows through ``indexer``) from the bundles on disk.

    No conversion and no library access. The chunks are queued for re-embedding (the
    damage may have hidden a half-finished vector update), which is the slow part:
    about 8 s for the 89 demo documents on 2 cores. A bundle that does not verify is
    skipped; the sync that follows re-materialises it from the library.
    """
    restored, skipped = 0, 0
    with corpus_lock(corpus.paths.locks), corpus.meta.write() as conn:
        for bundle_dir in sorted(p for p in corpus.corpus_dir.iterdir() if not p.name.startswith(".")):
            try:
                manifest, markdown = read_bundle(bundle_dir)
                row = _row_from_manifest(corpus, manifest)
            except (ZocratesError, KeyError, TypeError, ValueError):
                skipped += 1
                continue
            corpus.meta.upsert(conn, row)
            if indexer is not None:
                indexer.stage(conn, manifest, markdown)
            restored += 1
    if indexer is not None:
        corpus.commit_vectors()
    return {"restored": restored, "skipped": skipped}


def _row_from_manifest(corpus: Any, manifest: dict) -> Any:
    from zocrates_nb.corpus.meta import MetaRow

    key = manifest["key"]
    kind = kind_of_content_type(manifest.get("content_type"))
    collections: dict[str, Any] = {
        "collection_keys": list(manifest.get("collection_keys") or []),
        "collections": list(manifest.get("collections") or []),
    }
    if kind == "note":  # the same dict CorpusWriter.note_context makes, so a restored note counts as current
        context = {
            "parent_key": manifest.get("parent_key"),
            "parent_title": manifest.get("parent_title"),
            **collections,
        }
        if "parent_creators" in manifest or "parent_year" in manifest:
            context.update(
                parent_creators=list(manifest.get("parent_creators") or []), parent_year=manifest.get("parent_year")
            )
        if manifest.get("links"):
            context["links"] = [dict(link) for link in manifest["links"]]
    elif kind == "annotation":  # the same dict CorpusWriter.annotation_context makes
        context = {
            "parent_key": manifest.get("parent_key"),
            "parent_title": manifest.get("parent_title"),
            "parent_creators": list(manifest.get("parent_creators") or []),
            "parent_year": manifest.get("parent_year"),
            "color_meaning": manifest.get("color_meaning"),
            **collections,
        }
    else:
        context = collections
    return MetaRow(
        key=key,
        kind=kind,
        source_hash=str(manifest["source_hash"]),
        converter_version=str(manifest.get("converter_version") or ""),
        bundle_path=f"{corpus.corpus_dir.name}/{key}",
        title=manifest.get("title"),
        parent_key=manifest.get("parent_key"),
        updated_at=manifest.get("converted_at"),
        context_hash=hash_context(context),
        collections=tuple(manifest.get("collections") or ()),
    )


def hash_context(context: dict) -> str:
    """The same digest ``sync`` stores as ``context_hash`` (so restored rows count as current)."""
    return hashlib.sha256(json.dumps(context, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------- bundles


def bundle_problem(bundle_dir: Path, key: str, *, verify: bool) -> str | None:
    """Why a bundle cannot be trusted, or None. Without ``verify`` only ``stat`` calls (cheap)."""
    try:
        manifest_size = os.stat(os.path.join(bundle_dir, MANIFEST)).st_size
        os.stat(os.path.join(bundle_dir, CONTENT))
    except OSError:
        return "bundle missing"
    if manifest_size == 0:
        return "okf.json is empty"
    if not verify:
        return None
    try:
        manifest, _ = read_bundle(Path(bundle_dir))
    except ZocratesError as exc:
        return exc.message
    if manifest.get("key") != key:
        return f"okf.json names another key ({str(manifest.get('key'))[:40]!r})"
    return None


def damaged_bundles(corpus_dir: Path, keys: Iterable[str], *, verify: bool) -> dict[str, str]:
    """key → problem for every listed key whose bundle is missing or damaged."""
    found = {}
    for key in keys:
        problem = bundle_problem(Path(corpus_dir) / key, key, verify=verify)
        if problem:
            found[key] = problem
    return found


# ----------------------------------------------------------------------------- index consistency


@dataclass
class Consistency:
    """What disagrees between meta rows, bundles, FTS documents and vectors."""

    missing_in_index: set[str] = field(default_factory=set)  # meta row, no FTS document
    extra_in_index: set[str] = field(default_factory=set)  # FTS document, no meta row
    extra_bundles: set[str] = field(default_factory=set)  # bundle dir, no meta row
    damaged_bundles: dict[str, str] = field(default_factory=dict)
    chunks: int = 0
    vectors: int | None = None  # None: not checked (or not readable: see vector_problem)
    vector_problem: str | None = None  # the vector store could not be read (doctor asked for its count)

    @property
    def vectors_differ(self) -> bool:
        return self.vectors is not None and self.vectors != self.chunks

    @property
    def ok(self) -> bool:
        return not (
            self.missing_in_index
            or self.extra_in_index
            or self.extra_bundles
            or self.damaged_bundles
            or self.vectors_differ
            or self.vector_problem
        )

    def to_dict(self) -> dict:
        return {
            "missing_in_index": sorted(self.missing_in_index),
            "extra_in_index": sorted(self.extra_in_index),
            "extra_bundles": sorted(self.extra_bundles),
            "damaged_bundles": dict(self.damaged_bundles),
            "chunks": self.chunks,
            "vectors": self.vectors,
            "vector_problem": self.vector_problem,
            "ok": self.ok,
        }


def check_consistency(corpus: Any, indexer: Any, *, verify: bool = False, vectors: bool = False) -> Consistency:
    """Compare bundle keys, meta keys, FTS document keys (and the vector count with ``vectors``).

    A damaged vector store is a finding when ``vectors`` asked for it (doctor reports and repairs
    it); otherwise (sync, store merely open) its IndexCorruptError propagates with the rebuild hint,
    because re-embedding a large library needs the user's go-ahead.
    """
    meta_keys = set(corpus.meta.keys())
    result = Consistency()
    if indexer is not None and hasattr(indexer, "document_keys"):  # the index owns its tables: ask it
        index_keys = set(indexer.document_keys())
        result.chunks = indexer.chunk_count()
        result.missing_in_index = meta_keys - index_keys
        result.extra_in_index = index_keys - meta_keys
        if vectors or getattr(indexer, "_vectors", None) is not None:
            try:
                result.vectors = indexer.vector_store().count()
            except IndexCorruptError as exc:
                if not vectors:
                    raise
                result.vector_problem = exc.message
    on_disk = {p.name for p in corpus.corpus_dir.iterdir() if p.is_dir() and not p.name.startswith(".")}
    result.extra_bundles = on_disk - meta_keys
    result.damaged_bundles = damaged_bundles(corpus.corpus_dir, sorted(meta_keys), verify=verify)
    return result


def keys_to_rematerialize(found: Consistency) -> dict[str, str]:
    """key → why, for the documents a sync must re-make although their source did not change."""
    why = {key: f"repaired: {problem}" for key, problem in found.damaged_bundles.items()}
    for key in found.missing_in_index:
        why.setdefault(key, "repaired: its index rows were missing")
    return why


def drop_orphans(corpus: Any, indexer: Any, found: Consistency) -> list[str]:
    """Remove FTS documents and bundle folders that no meta row claims; reconcile differing vectors."""
    done = []
    if found.extra_in_index and indexer is not None:
        with corpus.meta.write() as conn:
            for key in sorted(found.extra_in_index):
                indexer.unstage(conn, key)
        done += [f"removed index rows of {key} (not in the corpus)" for key in sorted(found.extra_in_index)]
    for key in sorted(found.extra_bundles):
        try:
            remove_bundle(corpus.corpus_dir, key)
        except ValueError:  # not a key-shaped folder: leave the user's folder alone
            continue
        done.append(f"removed bundle {key} (not in the corpus)")
    resuming = bool(getattr(indexer, "fill_interrupted", lambda: False)())  # the resumed fill embeds them
    if indexer is not None and (found.extra_in_index or (found.vectors_differ and not resuming)):
        result = indexer.reconcile()
        if result.get("embedded") or result.get("deleted"):
            done.append(f"vectors reconciled: {result['embedded']} embedded, {result['deleted']} deleted")
    return done


def rebuild_and_repair(corpus: Any, indexer: Any, progress: Any = None) -> dict[str, Any]:
    """``index rebuild``: FTS and vectors from the bundles, then re-make the bundles it had to skip."""
    with corpus_lock(corpus.paths.locks):
        stats = indexer.rebuild(corpus, progress)
        repaired, failed = [], {}
        for key in stats.get("skipped", []):
            try:
                corpus.rematerialize_now(key)
                repaired.append(key)
            except NotFoundError:  # no longer in the library: the bundle goes
                remove_bundle(corpus.corpus_dir, key)
                with corpus.meta.write() as conn:
                    indexer.unstage(conn, key)
                    corpus.meta.delete(conn, key)
                repaired.append(key)
            except ZocratesError as exc:
                failed[key] = exc.message
        stats["repaired"] = repaired
        if failed:
            stats["failed"] = failed
    return stats
