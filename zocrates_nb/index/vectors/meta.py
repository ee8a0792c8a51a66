"""Pure helpers of the vector store: chunk metadata, tool filters → Chroma ``where``, error classes.

No Chroma here (index/vectors/store.py owns ``chromadb``): these functions build plain dicts and
read exception texts, so they are tested without opening a store.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from zocrates_nb.errors import IndexCorruptError, ZocratesError
from zocrates_nb.index.vectors.handles import IndexBusyError
from zocrates_nb.storage.space import unavailable, write_problem

__all__ = [
    "NO_COLLECTION",
    "chunk_metadata",
    "where_for",
    "is_locked_error",
    "looks_corrupt",
    "is_uuid",
    "is_connection_error",
    "is_chroma_folder",
    "user_error",
]

NO_COLLECTION = "-"  # Chroma refuses empty list metadata; notes outside any collection get this


def chunk_metadata(
    *,
    key: str,
    kind: str,
    item_type: str,
    title: str,
    chunk_index: int,
    parent_key: str | None = None,
    collection_keys: Sequence[str] = (),
    collection_names: Sequence[str] = (),
    **extra: str | int | float | bool,
) -> dict:
    """The metadata stored with each chunk vector, in a shape Chroma's where-filters can use.

    Collections are stored as non-empty string lists (``$contains`` filters work on them);
    ``parent_key`` is ``""`` for top-level items. ``extra`` values must be scalars.
    """
    meta: dict[str, Any] = {
        "key": key,
        "kind": kind,
        "item_type": item_type,
        "title": title or "",
        "chunk_index": int(chunk_index),
        "parent_key": parent_key or "",
        "collection_keys": [str(c) for c in collection_keys] or [NO_COLLECTION],
        "collection_names": [str(c) for c in collection_names] or [NO_COLLECTION],
    }
    for name, value in extra.items():
        if value is not None:
            meta[name] = value
    return meta


def where_for(filters: Mapping[str, Any] | None) -> dict | None:
    """Translate the tool filters (``item_type``, ``collection``, ``parent_key``) to a Chroma where.

    ``item_type`` "note"/"paper"/"annotation" matches the chunk kind, any other value the Zotero item type;
    ``collection`` matches a collection key or name. Unknown filter names are refused, so a typo
    never silently widens a search.
    """
    if not filters:
        return None
    clauses = [_clause(name, value) for name, value in filters.items() if value is not None and value != ""]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _clause(name: str, value: Any) -> dict:
    if name == "item_type":
        field_name = "kind" if value in ("note", "paper", "annotation") else "item_type"
        return {field_name: str(value)}
    if name == "collection":
        return {
            "$or": [{"collection_keys": {"$contains": str(value)}}, {"collection_names": {"$contains": str(value)}}]
        }
    if name == "parent_key":
        return {"parent_key": str(value)}
    if name in ("key", "kind"):
        return {name: str(value)}
    raise ZocratesError(f"Unknown search filter {name!r}.", hint="Use item_type, collection or parent_key.")


# --------------------------------------------------------------------------- classifying Chroma's errors

_CORRUPT_MARKERS = (
    "hnsw",
    "segment",
    "not a database",
    "malformed",
    "no such table",
    "disk image",
    "unable to open database",
    "error loading",
    "corrupt",
    "no such file",
    "migration",
    "log store",
    "compactor",
)


def is_locked_error(exc: BaseException) -> bool:
    """SQLite under Chroma said another connection holds the database (worth a retry)."""
    return "database is locked" in str(exc).lower() or "database table is locked" in str(exc).lower()


def looks_corrupt(exc: BaseException) -> bool:
    """The error reads like a damaged store (the index is then rebuilt, not retried)."""
    text = str(exc).lower()
    return any(marker in text for marker in _CORRUPT_MARKERS)


def user_error(exc: Exception, *, http: bool, host: str, port: int, where: str, rebuild_hint: str) -> Exception:
    """The error to show for a failed Chroma call: ``exc`` itself when it is not recognised."""
    if isinstance(exc, ZocratesError):
        return exc
    if is_locked_error(exc):
        return IndexBusyError(
            "The vector index stayed locked by another program.",
            hint="Close other programs using this data directory's chroma folder and retry.",
        )
    if http and is_connection_error(exc):
        return ZocratesError(
            f"The Chroma server at http://{host}:{port} is not reachable ({exc}).",
            hint=f"Start it with `chroma run --path DIR --host {host} --port {port}`, "
            'or set config["vectors"]["mode"] to "persistent".',
        )
    if not http and (problem := write_problem(Path(where), exc)):  # a full or read-only disk is not damage
        return unavailable("The vector index", Path(where) / "chroma.sqlite3", problem, exc)
    if looks_corrupt(exc):
        return IndexCorruptError(f"The vector index at {where} is damaged: {exc}", hint=rebuild_hint)
    return exc


def is_chroma_folder(entries: set[str]) -> bool:
    """Whether a folder's entry names look like Chroma's own (it is deleted only then, on reset)."""
    return (
        "chroma.sqlite3" in entries
        or not entries
        or all(is_uuid(name) or name.startswith("chroma.sqlite3") for name in entries)
    )


def is_uuid(name: str) -> bool:
    try:
        uuid.UUID(name)
        return True
    except ValueError:
        return False


def is_connection_error(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return any(word in text for word in ("connect", "connection refused", "could not connect", "timed out"))
