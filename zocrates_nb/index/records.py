"""From an OKF bundle (manifest + Markdown) to index rows — pure functions, no I/O.

The chunking policy lives here so the corpus's ``stage`` call, ``rebuild`` and the
evaluation harness all index a document the same way:

- notes under ``NOTE_WHOLE_WORDS`` words are indexed whole (one chunk): a short note
  is one thought, and splitting it would only dilute both retrievers;
- longer notes and papers are cut by ``convert.chunk.chunk_markdown`` (paragraph-aware,
  ~256 tokens with overlap), so a match points at a passage, not a 30-page paper.
"""

from __future__ import annotations

from typing import Any, Mapping

from zocrates_nb.index.fts import ChunkRow, DocumentRow

__all__ = ["NOTE_WHOLE_WORDS", "document_rows", "embedding_text", "first_author_of", "kind_of"]

NOTE_WHOLE_WORDS = 300


def kind_of(manifest: Mapping[str, Any]) -> str:
    return "note" if manifest.get("content_type") == "text/note" else "paper"


def first_author_of(creators: Any) -> str | None:
    """Last name of the first creator: ``"Ståhl, Patrik"`` or ``{"lastName": "Ståhl"}`` → ``Ståhl``."""
    if not creators:
        return None
    first = creators[0]
    if isinstance(first, Mapping):
        name = first.get("lastName") or first.get("name") or ""
    else:
        name = str(first).split(",")[0]
    return name.strip() or None


def _year(value: Any) -> int | None:
    try:
        return int(str(value)[:4]) if value not in (None, "") else None
    except ValueError:
        return None


def document_rows(manifest: Mapping[str, Any], markdown: str) -> tuple[DocumentRow, list[ChunkRow]]:
    """The provenance row and the chunk rows for one bundle (deterministic ids ``KEY:index``)."""
    key = str(manifest["key"])
    kind = kind_of(manifest)
    title = str(manifest.get("title") or "")
    collections = tuple(dict.fromkeys(
        [str(c) for c in (manifest.get("collection_keys") or [])]
        + [str(c) for c in (manifest.get("collections") or [])]))
    word_count = manifest.get("word_count")
    if word_count is None:
        word_count = len(markdown.split())
    item_type = manifest.get("item_type") or kind
    parent_key = manifest.get("parent_key") or None
    doc = DocumentRow(
        key=key, kind=kind, title=title, item_type=item_type, parent_key=parent_key,
        parent_title=manifest.get("parent_title") or None, collections=collections,
        citation=manifest.get("citation") or None, first_author=first_author_of(manifest.get("creators")),
        year=_year(manifest.get("year")), word_count=int(word_count),
        abstract=manifest.get("abstract") or None, source_hash=manifest.get("source_hash"))
    body = (markdown or "").strip()
    if kind == "note" and word_count < NOTE_WHOLE_WORDS:
        pieces: list[tuple[str, str | None]] = [(body, None)]
    else:
        from zocrates_nb.convert.chunk import chunk_markdown

        pieces = [(c.text, c.section) for c in chunk_markdown(body) if c.text.strip()] or [(body, None)]
    rows = [ChunkRow(chunk_id=f"{key}:{i}", key=key, kind=kind, text=text, title=title,
                     parent_key=parent_key, item_type=item_type, collections=collections,
                     section=section, chunk_index=i)
            for i, (text, section) in enumerate(pieces)]
    return doc, rows


def embedding_text(title: str, text: str) -> str:
    """What the dense model sees: the title, then the passage (unless it already starts with it).

    A chunk from the middle of a paper says little on its own; its title puts it in
    context (this is also how MiniLM reached its published SciFact score).
    """
    head = text.lstrip("# \n")[: len(title) + 2]
    if title and not head.startswith(title):
        return f"{title}\n{text}"
    return text
