"""The plain records the pipeline passes along, Zotero key validation, and the inlining threshold.

Why a module at the bottom: conversion (``convert/``) and the index (``index/``) read papers, notes,
annotations and collections and check keys, but must not import the library sources that produce them. Every source in
``library/`` returns these records (``library.base`` re-exports them), and everything downstream sees only
them, never a source's own format. No imports from the package: this module sits below every layer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: A note under this many words is shown whole ("inlined"): in the agents' evidence text, in the
#: evidence records the agents keep, and in the notebook's search results and sources.
INLINE_WORDS = 50

#: Zotero's key alphabet (zotero/utilities ``generateObjectKey``): no 0, 1, O.
KEY_ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"
KEY_RE = re.compile(r"^[23456789ABCDEFGHIJKLMNPQRSTUVWXYZ]{8}$")


_PINNED_KEY_RE = re.compile(r"^\s*(?:Citation Key|bibtex):\s*(\S+)\s*$", re.IGNORECASE | re.MULTILINE)


def pinned_citation_key(fields: Mapping[str, Any]) -> str:
    """The citation key an item's fields pin: Zotero's ``citationKey`` field, else a ``Citation Key: …``
    (or Better BibTeX's older ``bibtex: …``) line in Extra; "" when none. Export keeps pinned keys as they are."""
    if key := str(fields.get("citationKey") or "").strip():
        return key
    match = _PINNED_KEY_RE.search(str(fields.get("extra") or ""))
    return match.group(1) if match else ""


def new_key() -> str:
    """A fresh 8-character Zotero object key."""
    import secrets

    return "".join(secrets.choice(KEY_ALPHABET) for _ in range(8))


def is_valid_key(key: str) -> bool:
    """Whether ``key`` is a well-formed Zotero object key (checked before a key reaches a path or a query)."""
    return bool(KEY_RE.match(key or ""))


@dataclass(frozen=True)
class Collection:
    key: str
    name: str
    parent_key: str | None = None
    #: the library it belongs to (``LibraryInfo.library_id``); None: the source's first library
    library_id: int | None = None


#: what ``LibraryInfo.kind`` may be: the user's own Zotero library, a group library, or one Zotero
#: does not hold (the embedded demo library)
LIBRARY_KINDS = ("user", "group", "local")


@dataclass(frozen=True)
class LibraryInfo:
    """One library a source reads: the user's own, a group's, or the demo library.

    Why a record: a desktop database holds the user's library and every group library the user
    syncs, and the Web API reads the groups a key can access, all into one corpus. Zotero keys are
    unique only within a library, so each item carries its ``library_id``, and search filters and
    links by it. ``library_id`` is the source's own number (the desktop ``libraryID``; the Web API's
    user or group id); ``group_id`` is zotero.org's groupID of a group, which Zotero's links name.
    """

    library_id: int
    name: str
    kind: str = "user"
    group_id: int | None = None

    @property
    def link_path(self) -> str | None:
        """Where ``zotero://select/…`` finds its items: ``library`` (the user's own), ``groups/<groupID>``,
        or None (the demo library, or a desktop group whose groupID the database does not name:
        no link rather than a wrong one)."""
        if self.kind == "user":
            return "library"
        if self.kind == "group" and self.group_id is not None:
            return f"groups/{self.group_id}"
        return None


@dataclass(frozen=True)
class PdfFile:
    """A PDF attachment whose file is at hand (Zotero's ``storage/<key>/`` or a linked file).

    Why size and mtime: they are the file's identity for staleness (a changed PDF changes the
    paper's source hash, so the next sync re-extracts it) and for the per-attachment text cache.
    ``cached_text`` is Zotero's ``.zotero-ft-cache`` of this attachment: what the paper falls back
    to, without pages, when the PDF cannot be read.
    """

    attachment_key: str
    path: str
    size: int
    mtime_ns: int
    cached_text: str | None = None


@dataclass(frozen=True)
class PdfPage:
    """One page's text. ``index`` is 0-based (Zotero's ``pageIndex``); ``label`` is the PDF's own page
    label (``/PageLabels``: "iv", "12", "S3") or, without one, the 1-based page number."""

    index: int
    label: str
    text: str


@dataclass(frozen=True)
class PdfText:
    """What reading one PDF gave: its pages, or the reason there are none (encrypted, damaged, no text)."""

    attachment_key: str
    pages: tuple[PdfPage, ...] = ()
    failure: str | None = None


@dataclass(frozen=True)
class PageSpan:
    """The pages a chunk of a paper covers, in one PDF attachment (first and last, 0-based, with labels)."""

    attachment_key: str
    start: int
    end: int
    start_label: str
    end_label: str

    def cite(self) -> str:
        """``p. 12`` or ``pp. 12–13``, by the PDF's page labels (what the reader sees printed)."""
        if self.start == self.end or self.start_label == self.end_label:
            return f"p. {self.start_label}"
        return f"pp. {self.start_label}–{self.end_label}"


@dataclass(frozen=True)
class Paper:
    """A regular (non-note) Zotero item: metadata, abstract, and full text when the source has it."""

    key: str
    title: str
    item_type: str = "journalArticle"
    creators: tuple[str, ...] = ()  # "Last, First" per creator, in order
    year: int | None = None
    date: str = ""  # as the user typed it ("2021-06", "2016")
    doi: str | None = None
    abstract: str | None = None
    #: plain text with no PDF at hand (.zotero-ft-cache, the Web API's full text, the demo's paragraphs)
    fulltext: str | None = None
    publication: str = ""
    collections: tuple[str, ...] = ()  # collection keys
    version: int = 0
    date_modified: str = ""
    #: the paper's PDF attachments whose files are on this machine, in Zotero's order (read per page)
    pdfs: tuple[PdfFile, ...] = ()
    #: the key the user pinned for citing it (Zotero's Citation Key field or Better BibTeX), else ""
    citation_key: str = ""
    #: the library it lives in (``LibraryInfo.library_id``); None: the source's first library
    library_id: int | None = None

    @property
    def first_author(self) -> str:
        """Last name of the first creator, or "" (used for "Author et al., Year" citations)."""
        return self.creators[0].split(",")[0].strip() if self.creators else ""

    @property
    def citation(self) -> str:
        """Short author-year citation: ``Ståhl et al., 2016``."""
        who = self.first_author or "Anon."
        if len(self.creators) == 2:
            who = f"{who} & {self.creators[1].split(',')[0].strip()}"
        elif len(self.creators) > 2:
            who = f"{who} et al."
        return f"{who}, {self.year}" if self.year else who


@dataclass(frozen=True)
class Note:
    """A Zotero note. ``html`` is the note body as the API returns it (no ``zotero-note znv1`` wrapper)."""

    key: str
    html: str
    parent_key: str | None = None
    collections: tuple[str, ...] = ()  # collection keys; always () for child notes
    version: int = 0
    date_modified: str = ""
    #: keys of the items Zotero's "Related" list ties to this note (``dc:relation``): corpus/links.py
    related: tuple[str, ...] = ()
    #: the library it lives in (``LibraryInfo.library_id``); None: the source's first library
    library_id: int | None = None


#: Zotero's annotation types (``itemAnnotations.type``, chrome/content/zotero/xpcom/annotations.js).
ANNOTATION_TYPES = {1: "highlight", 2: "note", 3: "image", 4: "ink", 5: "underline", 6: "text"}
#: Zotero's annotation palette (the reader's colour picker) → the colour's name.
ANNOTATION_COLORS = {
    "#ffd400": "yellow",
    "#ff6666": "red",
    "#5fb236": "green",
    "#2ea8e5": "blue",
    "#a28ae5": "purple",
    "#e56eee": "magenta",
    "#f19837": "orange",
    "#aaaaaa": "gray",
}


@dataclass(frozen=True)
class Annotation:
    """A PDF annotation (Zotero 6+): a highlight, underline, sticky note, text box, image or ink mark.

    ``attachment_key`` is the PDF it sits on; ``parent_key`` the paper that PDF belongs to (None for a
    standalone PDF). ``position`` is Zotero's JSON (``{"pageIndex": 0, "rects": [...]}``) as stored;
    ``page_label`` what the reader shows ("12", "iv"). Image and ink marks without text or comment are
    provenance only: kept with their page, never indexed as text (``indexable``).
    """

    key: str
    attachment_key: str
    annotation_type: str  # highlight | underline | note | text | image | ink
    parent_key: str | None = None
    text: str = ""
    comment: str = ""
    color: str = ""
    page_label: str = ""
    position: str = ""
    sort_index: str = ""
    tags: tuple[str, ...] = ()
    library_id: int | None = None
    version: int = 0
    date_modified: str = ""

    @property
    def indexable(self) -> bool:
        """Whether the annotation has words of its own (text or comment) to retrieve it by."""
        return bool(self.text.strip() or self.comment.strip())

    @property
    def page_index(self) -> int | None:
        """The 0-based page (``position.pageIndex``), or None when the position does not say."""
        import json

        try:
            value = json.loads(self.position).get("pageIndex") if self.position else None
        except (ValueError, AttributeError):
            return None
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    @property
    def page(self) -> str:
        """The page as the reader sees it: the label, else the 1-based page number, else ""."""
        if self.page_label.strip():
            return self.page_label.strip()
        index = self.page_index
        return str(index + 1) if index is not None else ""

    @property
    def color_name(self) -> str:
        """``#ffd400`` → ``yellow`` (Zotero's palette); another colour stays as written."""
        return ANNOTATION_COLORS.get(self.color.strip().lower(), self.color.strip())


def kind_of_content_type(content_type: object) -> str:
    """A bundle's kind from its manifest's ``content_type``: ``note``, ``annotation`` or ``paper``."""
    if content_type == "text/note":
        return "note"
    if content_type == "text/annotation":
        return "annotation"
    return "paper"
