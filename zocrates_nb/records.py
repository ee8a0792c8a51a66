"""The plain records the pipeline passes along, Zotero key validation, and the inlining threshold.

Why a module at the bottom: conversion (``convert/``) and the index (``index/``) read papers, notes and
collections and check keys, but must not import the library sources that produce them. Every source in
``library/`` returns these records (``library.base`` re-exports them), and everything downstream sees only
them, never a source's own format. No imports from the package: this module sits below every layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A note under this many words is shown whole ("inlined"): in the agents' evidence text, in the
#: evidence records the agents keep, and in the notebook's search results and sources.
INLINE_WORDS = 50

#: Zotero's key alphabet (zotero/utilities ``generateObjectKey``): no 0, 1, O.
KEY_ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"
KEY_RE = re.compile(r"^[23456789ABCDEFGHIJKLMNPQRSTUVWXYZ]{8}$")


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
    fulltext: str | None = None  # plain text (.zotero-ft-cache or the demo's paragraphs)
    publication: str = ""
    collections: tuple[str, ...] = ()  # collection keys
    version: int = 0
    date_modified: str = ""

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
