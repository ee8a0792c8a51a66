"""What each corpus key should look like to a reader: titles and author-year citations.

The agents see keys; people see titles. ``KeyDirectory`` remembers what the
tools returned about each key and falls back to the corpus manifest for keys the
model mentions that this turn never retrieved (a parent paper, a key from an
earlier turn), so ``clean_user_facing_synthesis`` can replace all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from zocrates_nb.agents.clean import candidate_keys
from zocrates_nb.display.annotations import annotation_title
from zocrates_nb.errors import ZocratesError
from zocrates_nb.records import kind_of_content_type


def display_for(kind: str | None, title: str | None, citation: str | None) -> str:
    """Reader-facing name: papers as *Title* (Author et al., Year), notes as “Title”, annotations as
    Highlight on “Paper”, p. 12."""
    title = (title or "untitled").strip()
    if kind == "paper":
        return f"*{title}* ({citation})" if citation else f"*{title}*"
    if kind == "annotation":
        return title
    return f"“{title}”"


def note_citation(parent: dict | None) -> str:
    """How a note is cited: "note", or "note on Ståhl et al., 2016" when attached to a paper."""
    if not parent:
        return "note"
    return f"note on {parent.get('citation') or parent.get('title') or 'a paper'}"


class KeyDirectory:
    """Key → {kind, title, citation, parent_key} for one turn, backed by the corpus manifests."""

    def __init__(self, tools: Any) -> None:
        self._corpus = getattr(tools, "corpus", None)
        self._entries: dict[str, dict] = {}
        self._missing: set[str] = set()

    def remember(
        self,
        key: str | None,
        *,
        kind: str | None,
        title: str | None,
        citation: str | None = None,
        parent_key: str | None = None,
    ) -> None:
        if key and key not in self._entries:
            self._entries[key] = {"kind": kind, "title": title, "citation": citation, "parent_key": parent_key}

    def remember_if_unknown(self, key: str, *, kind: str | None, title: str | None) -> None:
        """A fallback description (e.g. a parent paper's title from a hit) when the corpus has none."""
        if self.describe(key) is None:
            self._missing.discard(key)
            self.remember(key, kind=kind, title=title)

    def describe(self, key: str) -> dict | None:
        """What we know about ``key`` (looked up in the corpus manifest when not seen this turn)."""
        if key in self._entries:
            return self._entries[key]
        if key in self._missing or self._corpus is None:
            return None
        try:
            manifest = self._corpus.manifest(key)
        except (ZocratesError, KeyError, OSError):
            self._missing.add(key)  # not a corpus key: leave it in the text as written
            return None
        kind = kind_of_content_type(manifest.get("content_type"))
        title = manifest.get("title")
        if kind == "annotation":  # "Highlight on “Paper”, p. 12", never the bare key
            title = annotation_title(manifest, manifest.get("parent_title"))
        self.remember(
            key,
            kind=kind,
            title=title,
            citation=manifest.get("citation"),
            parent_key=manifest.get("parent_key"),
        )
        return self._entries[key]

    def title(self, key: str) -> str | None:
        entry = self.describe(key)
        return entry["title"] if entry else None

    def display(self, key: str) -> str | None:
        entry = self.describe(key)
        return display_for(entry["kind"], entry["title"], entry["citation"]) if entry else None

    def key_map(self, texts: Iterable[str] = ()) -> dict[str, str]:
        """Displays for every remembered key, their parents, and corpus keys found in ``texts``."""
        wanted = set(self._entries)
        wanted |= {e["parent_key"] for e in list(self._entries.values()) if e.get("parent_key")}
        for text in texts:
            wanted |= candidate_keys(text)
        out = {}
        for key in sorted(wanted):
            shown = self.display(key)
            if shown is not None:
                out[key] = shown
        return out


class DirectoryKeyMap(Mapping[str, str]):
    """A live ``key_map`` for ``clean_user_facing_synthesis``: any corpus key resolves, even
    one the model mentions that this turn never retrieved (looked up in its manifest)."""

    def __init__(self, directory: KeyDirectory) -> None:
        self.directory = directory

    def __getitem__(self, key: str) -> str:
        shown = self.directory.display(key)
        if shown is None:
            raise KeyError(key)
        return shown

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.directory._entries))

    def __len__(self) -> int:
        return len(self.directory._entries)
