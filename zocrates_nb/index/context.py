"""What a chunk is indexed *with*, besides its own words — pure functions.

Why: a child note says "Use full mode on Visium", never "RCTD" or "robust decomposition";
a researcher asks "what did I note on the RCTD paper?". So each chunk carries a short
context line, indexed on both retrievers but weighted below the chunk's own text:

- a child note: its parent paper's title, first authors and year;
- a standalone note: its collection path(s);
- a paper chunk: its paper's title (already the chunk's ``title``, so no extra context);
- a PDF annotation: its paper's title, first authors and year, its page, and what its colour means
  when the user said (``index.annotation_colors``).

Lexically the context is a separate FTS5 column with a low bm25 weight
(``CONTEXT_WEIGHT``); densely it is a prefix of the embedded text, clipped to
``MAX_CONTEXT_TOKENS`` so the note's own words keep most of the model's window.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MAX_CONTEXT_TOKENS", "annotation_context_line", "context_line", "clip_to_tokens", "authors_text"]

#: Most word pieces of context in front of a chunk (of the model's 254 content pieces).
MAX_CONTEXT_TOKENS = 48
#: A note is indexed with the titles of the papers it links to (its context).
LINKED_TITLES = False


def authors_text(creators: Any, limit: int = 2) -> str:
    """``["Cable, Dylan", "Murray, Evan", …]`` → ``"Cable, Murray et al."`` (last names)."""
    names = []
    for creator in list(creators or [])[:limit]:
        if isinstance(creator, Mapping):
            name = creator.get("lastName") or creator.get("name") or ""
        else:
            name = str(creator).split(",")[0]
        if name.strip():
            names.append(name.strip())
    more = " et al." if creators and len(list(creators)) > limit else ""
    return ", ".join(names) + more


def context_line(manifest: Mapping[str, Any]) -> str:
    """The context a document's chunks are indexed with ("" for papers and unfiled notes)."""
    if manifest.get("content_type") == "text/annotation":
        return annotation_context_line(manifest)
    if manifest.get("content_type") != "text/note":
        return ""
    place, linked = _note_place(manifest), linked_titles_line(manifest)
    return f"{place}. {linked}" if place and linked else place or linked


def _note_place(manifest: Mapping[str, Any]) -> str:
    parent = manifest.get("parent_title")
    if parent:
        authors = authors_text(manifest.get("parent_creators"))
        year = manifest.get("parent_year")
        tail = ", ".join(str(p) for p in (authors, year) if p)
        return f"Note on the paper: {parent}" + (f" ({tail})" if tail else "")
    collections = [str(c) for c in (manifest.get("collections") or []) if str(c).strip()]
    return f"Note in: {'; '.join(collections)}" if collections else ""


def linked_titles_line(manifest: Mapping[str, Any]) -> str:
    """``About: Title A; Title B`` for the papers a note links to (corpus/links.py), strongest first."""
    if not LINKED_TITLES:
        return ""
    titles = [str(link.get("title") or "").strip() for link in manifest.get("links") or ()]
    titles = [t for t in dict.fromkeys(titles) if t]
    return f"About: {'; '.join(titles)}" if titles else ""


def annotation_context_line(manifest: Mapping[str, Any]) -> str:
    """``Highlight on the paper: Title (Cable, Murray et al., 2022), p. 518; red = key finding``."""
    kind = {"note": "Sticky note", "text": "Text box"}.get(str(manifest.get("annotation_type") or ""))
    kind = kind or str(manifest.get("annotation_type") or "annotation").capitalize()
    parent = manifest.get("parent_title")
    line = f"{kind} on the paper: {parent}" if parent else f"{kind} on a PDF"
    tail = ", ".join(str(p) for p in (authors_text(manifest.get("parent_creators")), manifest.get("parent_year")) if p)
    line += f" ({tail})" if tail and parent else ""
    if manifest.get("page_label"):
        line += f", p. {manifest['page_label']}"
    if manifest.get("color_meaning"):
        line += f"; {manifest.get('color_name') or manifest.get('color')} = {manifest['color_meaning']}"
    return line


def clip_to_tokens(text: str, limit: int, count_tokens: Callable[[str], int] | None) -> str:
    """``text`` cut at a word boundary to at most ``limit`` tokens (word estimate without a counter)."""
    words = text.split()
    if count_tokens is None:
        keep = int(limit * 0.75)
        return " ".join(words[:keep])
    while words and count_tokens(" ".join(words)) > limit:
        words = words[: -max(1, len(words) // 10)]
    return " ".join(words)
