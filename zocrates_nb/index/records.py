"""From an OKF bundle (manifest + Markdown) to index rows — pure functions, no I/O.

The chunking policy lives here so the corpus's ``stage`` call, ``rebuild`` and the
evaluation harness all index a document the same way:

- notes under ``NOTE_WHOLE_WORDS`` words are indexed whole (one chunk): a short note
  is one thought, and splitting it would only dilute both retrievers;
- longer notes and papers are cut by ``convert.chunk.chunk_markdown`` (paragraph-aware,
  ~256 tokens with overlap), so a match points at a passage, not a 30-page paper.

With a ``count_tokens`` function (the embedder's tokenizer, passed in by the index) the rule
is exact instead: a document is one chunk when its context line, title and text fit the
model's window (``WINDOW_TOKENS``), and otherwise it is cut so that every chunk does
(``convert.window.chunk_to_window``). Every chunk also carries its document's context line
(:mod:`zocrates_nb.index.context`), and a paper chunk read from its PDF the pages it covers
(``convert.pages.page_spans``, from the manifest's ``pages``: so a rebuild from bundles keeps them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from zocrates_nb.convert.pages import page_spans, pages_from_manifest
from zocrates_nb.index.context import MAX_CONTEXT_TOKENS, clip_to_tokens, context_line
from zocrates_nb.index.lexical.fts import ChunkRow, FtsDocument
from zocrates_nb.records import PageSpan, is_valid_key, kind_of_content_type

__all__ = [
    "NOTE_WHOLE_WORDS",
    "WINDOW_TOKENS",
    "document_rows",
    "embedding_text",
    "embedding_windows",
    "vector_metadata",
    "annotation_facts",
    "annotation_span",
    "first_author_of",
    "kind_of",
    "body_budget",
]

NOTE_WHOLE_WORDS = 300
#: Word pieces the embedder reads besides [CLS] and [SEP] (all-MiniLM-L6-v2: 256 in all).
WINDOW_TOKENS = 254
#: Overlap between consecutive chunks, in word pieces.
OVERLAP_TOKENS = 32


def kind_of(manifest: Mapping[str, Any]) -> str:
    """``note``, ``paper`` or ``annotation``, from the manifest's ``content_type``."""
    return kind_of_content_type(manifest.get("content_type"))


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


def body_budget(title: str, context: str, count_tokens: Callable[[str], int]) -> int:
    """Word pieces left for a chunk's own text once its context and title prefix are counted."""
    prefix = count_tokens(f"{context}\n{title}") if (context or title) else 0
    return max(64, WINDOW_TOKENS - prefix)


def _pieces(
    kind: str, word_count: int, body: str, title: str, context: str, count_tokens: Callable[[str], int] | None
) -> list[tuple[str, str | None]]:
    from zocrates_nb.convert.chunk import chunk_markdown
    from zocrates_nb.convert.window import chunk_to_window

    if count_tokens is not None:
        chunks = chunk_to_window(
            body, body_budget(title, context, count_tokens), count_tokens, overlap_tokens=OVERLAP_TOKENS
        )
        return [(c.text, c.section) for c in chunks if c.text.strip()] or [(body, None)]
    if kind in ("note", "annotation") and word_count < NOTE_WHOLE_WORDS:
        return [(body, None)]
    return [(c.text, c.section) for c in chunk_markdown(body) if c.text.strip()] or [(body, None)]


def document_rows(
    manifest: Mapping[str, Any], markdown: str, count_tokens: Callable[[str], int] | None = None
) -> tuple[FtsDocument, list[ChunkRow]]:
    """The provenance row and the chunk rows for one bundle (deterministic ids ``KEY:index``).

    ``count_tokens``: the embedder's token counter; without it chunk sizes are estimated.
    """
    key = str(manifest["key"])
    kind = kind_of(manifest)
    title = str(manifest.get("title") or "")
    collections = tuple(
        dict.fromkeys(
            [str(c) for c in (manifest.get("collection_keys") or [])]
            + [str(c) for c in (manifest.get("collections") or [])]
        )
    )
    word_count = manifest.get("word_count")
    if word_count is None:
        word_count = len(markdown.split())
    item_type = manifest.get("item_type") or kind
    parent_key = manifest.get("parent_key") or None
    doc = FtsDocument(
        key=key,
        kind=kind,
        title=title,
        item_type=item_type,
        parent_key=parent_key,
        parent_title=manifest.get("parent_title") or None,
        collections=collections,
        citation=manifest.get("citation") or None,
        first_author=first_author_of(manifest.get("creators")),
        year=_year(manifest.get("year")),
        word_count=int(word_count),
        abstract=manifest.get("abstract") or None,
        source_hash=manifest.get("source_hash"),
        text_source=manifest.get("text_source") or (None if kind != "paper" else _legacy_source(markdown)),
        page_count=len(manifest.get("pages") or ()),
        pdf_failures=len(manifest.get("pdf_failures") or ()),
        extra=_extra(kind, manifest),
    )
    body = (markdown or "").strip()
    context = clip_to_tokens(context_line(manifest), MAX_CONTEXT_TOKENS, count_tokens)
    pieces = _pieces(kind, int(word_count), body, title, context, count_tokens)
    if kind == "annotation":  # every chunk of an annotation is on the annotation's page
        spans: list[PageSpan | None] = [annotation_span(manifest)] * len(pieces)
    else:
        spans = page_spans(markdown or "", pages_from_manifest(manifest), [text for text, _ in pieces])
    rows = [
        ChunkRow(
            chunk_id=f"{key}:{i}",
            key=key,
            kind=kind,
            text=text,
            title=title,
            parent_key=parent_key,
            item_type=item_type,
            collections=collections,
            section=section,
            chunk_index=i,
            context=context,
            pages=span,
        )
        for i, ((text, section), span) in enumerate(zip(pieces, spans, strict=True))
    ]
    return doc, rows


def _extra(kind: str, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What a document keeps besides its row: an annotation's marks, a note's links to papers."""
    if kind == "annotation":
        return {"annotation": annotation_facts(manifest)}
    if kind == "note" and manifest.get("links"):
        return {"links": [dict(link) for link in manifest["links"]]}
    return {}


def annotation_facts(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What a search hit shows of an annotation besides its chunk: the reader's marks and where they are."""
    return {
        "annotation_type": manifest.get("annotation_type") or "highlight",
        "text": manifest.get("text") or "",
        "comment": manifest.get("comment") or "",
        "color": manifest.get("color") or "",
        "color_name": manifest.get("color_name") or "",
        "color_meaning": manifest.get("color_meaning"),
        "page_label": manifest.get("page_label") or "",
        "page_index": manifest.get("page_index"),
        "attachment_key": manifest.get("attachment_key") or "",
        "library_id": manifest.get("library_id"),
        "tags": list(manifest.get("tags") or []),
    }


def annotation_span(manifest: Mapping[str, Any]) -> PageSpan | None:
    """The annotation's page as a one-page span (None without an attachment or a page index)."""
    index, attachment = manifest.get("page_index"), manifest.get("attachment_key")
    if not attachment or not isinstance(index, int) or isinstance(index, bool) or index < 0:
        return None
    label = str(manifest.get("page_label") or index + 1)
    return PageSpan(str(attachment), index, index, label, label)


def _legacy_source(markdown: str) -> str:
    """A paper bundle from before ``text_source``: its text came from the library (no pages), if any."""
    return "fulltext" if "\n## Full text\n" in (markdown or "") else "metadata"


def embedding_text(title: str, text: str, context: str = "") -> str:
    """What the dense model sees: the context line, the title, then the passage (the title only
    when the passage does not already start with it).

    A chunk from the middle of a paper says little on its own; its title puts it in
    context (this is also how MiniLM reached its published SciFact score). A child note's
    context names its paper, so "my notes on the RCTD paper" lands near it.
    """
    head = text.lstrip("# \n")[: len(title) + 2]
    if title and not head.startswith(title):
        text = f"{title}\n{text}"
    return f"{context}\n{text}" if context else text


def embedding_windows(title: str, text: str, context: str, count_tokens: Callable[[str], int]) -> list[str]:
    """What the dense model sees of a chunk, cut into windows it reads whole (``vectors.windows``).

    The same cut as a paper's chunks (``_pieces``): the context and title prefix every window,
    consecutive windows overlap. A chunk that fits is one window, its ``embedding_text``."""
    from zocrates_nb.convert.window import chunk_to_window

    body = (text or "").strip()
    budget = body_budget(title, context, count_tokens)
    pieces = chunk_to_window(body, budget, count_tokens, overlap_tokens=OVERLAP_TOKENS)
    return [embedding_text(title, p, context) for p in [c.text for c in pieces if c.text.strip()] or [text]]


def vector_metadata(row: ChunkRow) -> dict:
    """The metadata a chunk's vectors carry (the dense side's filters: key, kind, collections, parent)."""
    from zocrates_nb.index.vectors.store import chunk_metadata

    keys = [c for c in row.collections if is_valid_key(c)]
    names = [c for c in row.collections if not is_valid_key(c)]
    return chunk_metadata(
        key=row.key,
        kind=row.kind,
        item_type=row.item_type or row.kind,
        title=row.title,
        chunk_index=row.chunk_index,
        parent_key=row.parent_key,
        collection_keys=keys,
        collection_names=names,
    )
