"""The library-source protocol and the plain records every source returns.

One small protocol, three implementations: the embedded demo library
(``local.py``, the default), a read-only snapshot of Zotero desktop's
``zotero.sqlite`` (``zotero_desktop.py``) and the Zotero Web / local API
(``zotero_web.py``). Everything downstream (conversion, corpus, index, agents)
sees only these records, never a source's own format.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

# the records and key helpers live at the bottom of the package; re-exported for the sources and old imports
from zocrates_nb.records import (
    KEY_ALPHABET,
    KEY_RE,
    Annotation,
    Collection,
    LibraryInfo,
    Note,
    Paper,
    is_valid_key,
    new_key,
)

__all__ = [
    "Annotation",
    "KEY_ALPHABET",
    "KEY_RE",
    "Collection",
    "LibraryInfo",
    "LibrarySnapshot",
    "LibrarySource",
    "Note",
    "Paper",
    "check_note_html",
    "unique_across_libraries",
    "is_valid_key",
    "new_key",
]


def check_note_html(html: str) -> None:
    """What every writable source refuses before talking to its store: non-text or empty notes."""
    from zocrates_nb.errors import LibraryError

    if not isinstance(html, str):
        raise LibraryError(
            f"Note HTML must be a string, not {type(html).__name__}.",
            "Render the note with convert.note_html.render_note_html first.",
        )
    if not html.strip():
        raise LibraryError("Refusing to save an empty note.", "Write some text into the note first.")


@dataclass(frozen=True)
class LibrarySnapshot:
    """One consistent read of a library: what sync compares against the corpus."""

    papers: tuple[Paper, ...] = ()
    notes: tuple[Note, ...] = ()
    collections: tuple[Collection, ...] = ()
    version: int | None = None
    #: PDF annotations (Zotero 6+), indexable or provenance only (``Annotation.indexable``)
    annotations: tuple[Annotation, ...] = ()
    #: keys the source could not read, with the reason (reported by sync, never fatal)
    failures: tuple[tuple[str, str], ...] = field(default=())
    #: the libraries read, the first one first: a record whose ``library_id`` is None lives there
    libraries: tuple[LibraryInfo, ...] = ()

    def collection_names(self) -> dict[str, str]:
        return {c.key: c.name for c in self.collections}

    def write_path(self, parent_key: str | None, collection_key: str | None) -> str | None:
        """Where Zotero's API takes a note saved under ``parent_key`` or into ``collection_key``:
        ``groups/<groupID>`` when that paper or collection is a group library's, else None (the
        writer's own library). Refused for a desktop group whose zotero.org id the database lacks."""
        from zocrates_nb.errors import LibraryError

        owners = {**{c.key: c.library_id for c in self.collections}, **{p.key: p.library_id for p in self.papers}}
        library_id = owners.get(parent_key or collection_key or "")
        library = next((lib for lib in self.libraries if lib.library_id == library_id), None)
        if library is None or library.kind != "group" or library is self.libraries[0]:
            return None
        if library.group_id is None:
            raise LibraryError(
                f"Cannot save into {library.name}: Zotero's database does not say which zotero.org group it is.",
                "Let Zotero sync that group once (Edit → Settings → Sync), then save again.",
            )
        return f"groups/{library.group_id}"

    def library_of_keys(self) -> dict[str, int]:
        """Every document key (note, paper, annotation) -> the ``library_id`` it lives in."""
        if not self.libraries:
            return {}
        first = self.libraries[0].library_id
        records: list[Note | Paper | Annotation] = [*self.notes, *self.papers, *self.annotations]
        return {r.key: (r.library_id if r.library_id is not None else first) for r in records}


@runtime_checkable
class LibrarySource(Protocol):
    """What the workbench needs from a library.

    ``describe()`` is a short human label ("demo library", "zotero.sqlite snapshot of …").
    ``get_note`` must be cheap (an indexed lookup or a dict hit): ``_resolve_bundle_dir``
    calls it on every read to compare hashes.
    """

    writable: bool

    def describe(self) -> str: ...

    def snapshot(self) -> LibrarySnapshot: ...

    def get_note(self, key: str) -> Note | None: ...

    def get_paper(self, key: str) -> Paper | None: ...

    def get_annotation(self, key: str) -> Annotation | None:
        """A PDF annotation by key (a dict hit, like ``get_note``); None when the source has none."""
        ...

    def create_note(self, html: str, *, parent_key: str | None = None, collection_keys: Sequence[str] = ()) -> Note:
        """Create a note (HTML, never Markdown). Child (``parent_key``) xor standalone in collections."""
        ...

    def update_note(self, key: str, html: str) -> Note: ...

    def close(self) -> None: ...


#: what a key from any source must look like before it names a folder (the bundle key rule)
SAFE_KEY_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def is_safe_key(key: object) -> bool:
    """True for keys that can name a folder (``corpus/<key>``, ``storage/<key>``) without escaping it."""
    return isinstance(key, str) and bool(SAFE_KEY_RE.match(key))


def unique_across_libraries(
    records: dict[str, list], libraries: Sequence[LibraryInfo], failures: list[tuple[str, str]]
) -> dict[str, list]:
    """``records`` (``papers``, ``notes``, ``annotations``, ``collections``) with each key once.

    Why: Zotero keys are unique within one library, and the corpus names documents by key. Two
    libraries holding the same key is rare (one in about 10^12 per pair) but must never mix two
    items up: the first library's item stays (the user's own library comes first), and the later
    one is reported as a failure naming both libraries. Collections have keys of their own.
    """
    names: dict[int | None, str] = {lib.library_id: lib.name for lib in libraries}
    first = libraries[0].library_id if libraries else None
    order: dict[int | None, int] = {lib.library_id: i for i, lib in enumerate(libraries)}
    documents = [
        (order.get(r.library_id if r.library_id is not None else first, 0), kind, r)
        for kind in ("papers", "notes", "annotations")
        for r in records.get(kind, ())
    ]
    kept: dict[str, list] = {kind: [] for kind in records}
    for pool in (
        sorted(documents, key=lambda t: t[0]),
        [(0, "collections", c) for c in records.get("collections", ())],
    ):
        owner: dict[str, int | None] = {}
        for _, kind, record in pool:
            if record.key in owner:
                if owner[record.key] != record.library_id:
                    failures.append(
                        (
                            record.key,
                            f"the key is taken by an item in {names.get(owner[record.key], 'another library')}; "
                            f"this one in {names.get(record.library_id, 'another library')} is left out",
                        )
                    )
                continue
            owner[record.key] = record.library_id
            kept[kind].append(record)
    return kept


def with_valid_keys(snapshot: LibrarySnapshot) -> LibrarySnapshot:
    """The snapshot without items whose key breaks Zotero's key rule; each becomes a failure.

    Why at the boundary: keys name folders (``corpus/<key>``, ``storage/<key>``), so a crafted
    database must not smuggle ``../`` into a path. Every source's snapshot passes through here.
    """
    from dataclasses import replace

    bad: list[tuple[str, str]] = []

    def keep(item) -> bool:
        if is_safe_key(item.key):
            return True
        bad.append((repr(item.key)[:40], "refused: not a valid key (letters, digits, _ and - only)"))
        return False

    papers = tuple(p for p in snapshot.papers if keep(p))
    notes = tuple(n for n in snapshot.notes if keep(n))
    collections = tuple(c for c in snapshot.collections if keep(c))
    annotations = tuple(a for a in snapshot.annotations if keep(a))
    if not bad:
        return snapshot
    return replace(
        snapshot,
        papers=papers,
        notes=notes,
        collections=collections,
        annotations=annotations,
        failures=tuple(snapshot.failures) + tuple(bad),
    )
