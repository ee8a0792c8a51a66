"""The user's Web (or local) API library together with every group library the key can read: one source.

Why a wrapper and not a wider ``ZoteroWebLibrary``: each library has its own version counter, its own
``since=`` sync and its own cache, exactly what one ``ZoteroWebLibrary`` keeps. This module only lists
the groups (``GET /users/<id>/groups``), keeps one ``ZoteroWebLibrary`` per group (each with a cache
file of its own), merges their snapshots with each record tagged by its library, and sends a write to
the library that holds the note, its parent paper or its collection. A group the key cannot read is
reported in the snapshot's failures and the rest is read; nothing is dropped silently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from zocrates_nb.errors import LibraryError
from zocrates_nb.library.base import LibrarySnapshot, Note, unique_across_libraries
from zocrates_nb.library.writing.note_writers import WriterUnavailable, http_json

__all__ = ["ZoteroWebLibraries", "group_cache_path", "list_groups"]


def group_cache_path(user_cache: Path | None, group_id: int) -> Path | None:
    """``zotero_web_cache.sqlite`` → ``zotero_web_cache-group-<id>.sqlite`` beside it (None: in memory)."""
    return user_cache.with_name(f"{user_cache.stem}-group-{group_id}{user_cache.suffix}") if user_cache else None


def list_groups(base_url: str, user_id: str, api_key: str | None, *, local: bool = False) -> list[tuple[int, str]]:
    """``(group id, name)`` of every group the user belongs to, as ``GET /users/<id>/groups`` lists them.

    Raises ``LibraryError`` when the API cannot be asked (the user's own library is then read alone)."""
    headers = {"Zotero-API-Key": api_key} if api_key and not local else {}
    url = f"{base_url.rstrip('/')}/users/{0 if local else user_id}/groups"
    try:
        reply = http_json("GET", url, headers)
    except WriterUnavailable as exc:
        raise LibraryError(f"Could not list your Zotero groups: {exc.message}", exc.hint) from exc
    if reply.status != 200 or not isinstance(reply.body, list):
        raise LibraryError(
            f"Zotero did not list your groups (HTTP {reply.status}).",
            'Check that the API key may read your groups, or set library.groups to "none".',
        )
    found = []
    for group in reply.body:
        data = group.get("data") if isinstance(group, dict) else None
        if isinstance(data, dict) and str(data.get("id", "")).isdigit():
            found.append((int(data["id"]), str(data.get("name") or f"Group {data['id']}")))
    return found


class ZoteroWebLibraries:
    """The user's library (``user``) and each group's (``groups``), read and written as one source.

    Everything not defined here (``describe``'s details, ``base_url``, ``local``, ``library_id``) is the
    user library's: links, writers and status see the user's library as the first one.
    """

    writable = True

    def __init__(
        self, user: Any, make_group: Callable[[int], Any], groups: Callable[[], list[tuple[int, str]]]
    ) -> None:
        self.user = user
        self._make_group = make_group
        self._list_groups = groups
        self.groups: dict[int, Any] = {}
        self._names: dict[int, str] = {}
        self._owner: dict[str, Any] = {}  # key → the source whose snapshot holds it (writes go there)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.user, name)

    def describe(self) -> str:
        extra = f" and {len(self.groups)} group librar{'y' if len(self.groups) == 1 else 'ies'}" if self.groups else ""
        return self.user.describe() + extra

    def _refresh_groups(self) -> list[tuple[str, str]]:
        """Open a source for each group listed now; a group the user left is closed. Failures, if any."""
        try:
            listed = dict(self._list_groups())
        except LibraryError as exc:
            return [("groups", f"only your own library was read: {exc.message} {exc.hint or ''}".strip())]
        for gone in set(self.groups) - set(listed):
            self.groups.pop(gone).close()
        for group_id in listed:
            if group_id not in self.groups:
                self.groups[group_id] = self._make_group(group_id)
        self._names = listed
        return []

    def snapshot(self) -> LibrarySnapshot:
        failures = self._refresh_groups()
        first = self.user.snapshot()
        parts: list[tuple[Any, LibrarySnapshot]] = [(self.user, first)]
        for group_id, source in sorted(self.groups.items()):
            try:
                parts.append((source, source.snapshot()))
            except LibraryError as exc:  # one group the key cannot read: the rest is read, this is said
                name = self._names.get(group_id, group_id)
                failures.append((f"group {group_id}", f"{name}: {exc.message} {exc.hint or ''}".strip()))
        records: dict[str, list] = {"papers": [], "notes": [], "collections": [], "annotations": []}
        libraries = []
        for source, snap in parts:
            library = snap.libraries[0]
            if library.kind == "group" and library.group_id in self._names:
                library = dataclasses.replace(library, name=self._names[library.group_id])
            libraries.append(library)
            for kind in records:
                records[kind] += [dataclasses.replace(r, library_id=library.library_id) for r in getattr(snap, kind)]
            for key in [r.key for r in snap.notes] + [r.key for r in snap.papers] + [c.key for c in snap.collections]:
                self._owner.setdefault(key, source)
            failures += list(snap.failures)
        kept = unique_across_libraries(records, libraries, failures)
        return LibrarySnapshot(
            papers=tuple(kept["papers"]),
            notes=tuple(kept["notes"]),
            collections=tuple(kept["collections"]),
            version=first.version,
            annotations=tuple(kept["annotations"]),
            failures=tuple(failures),
            libraries=tuple(libraries),
        )

    def _sources(self) -> list[Any]:
        return [self.user, *self.groups.values()]

    def _first(self, method: str, key: str) -> Any:
        for source in self._sources():
            found = getattr(source, method)(key)
            if found is not None:
                return found, source
        return None, None

    def _library_of(self, source: Any) -> int:
        return int(source.library_id) if str(source.library_id).isdigit() else 0

    def get_note(self, key: str) -> Note | None:
        note, source = self._first("get_note", key)
        return dataclasses.replace(note, library_id=self._library_of(source)) if note is not None else None

    def get_paper(self, key: str) -> Any:
        paper, source = self._first("get_paper", key)
        return dataclasses.replace(paper, library_id=self._library_of(source)) if paper is not None else None

    def get_annotation(self, key: str) -> Any:
        return self._first("get_annotation", key)[0]

    def _target(self, keys: Sequence[str]) -> Any:
        """The library a write belongs to: the one holding the parent paper, collection or note."""
        for key in keys:
            if key in self._owner:
                return self._owner[key]
            for source in self.groups.values():
                if source.get_paper(key) is not None or source.get_note(key) is not None:
                    return source
        return self.user

    def create_note(self, html: str, *, parent_key: str | None = None, collection_keys: Sequence[str] = ()) -> Note:
        """Create the note in the library of its parent paper or collection (a group's goes to the group)."""
        source = self._target([parent_key] if parent_key else list(collection_keys))
        note = source.create_note(html, parent_key=parent_key, collection_keys=collection_keys)
        self._owner[note.key] = source
        return dataclasses.replace(note, library_id=self._library_of(source))

    def update_note(self, key: str, html: str) -> Note:
        source = self._target([key])
        return dataclasses.replace(source.update_note(key, html), library_id=self._library_of(source))

    def sync(self) -> dict:
        """Sync each library; the counts are the sums."""
        total: dict[str, int] = {}
        for source in self._sources():
            for name, value in source.sync().items():
                if isinstance(value, int) and name not in ("since", "version"):
                    total[name] = total.get(name, 0) + value
        return total

    def close(self) -> None:
        for source in self._sources():
            source.close()

    def __repr__(self) -> str:
        return f"<ZoteroWebLibraries {self.user!r} + groups {sorted(self.groups)}>"
