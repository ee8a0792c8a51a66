"""A PDF annotation → one small Markdown document: the highlighted words, the reader's comment, the page.

Why each annotation is its own document (not a paper's annotations grouped): an annotation is one act of
judgement on one passage, asked for as such ("what did I highlight about the platform effect?"), and it
must come back with its own page and a link that opens the PDF at it. Grouped per paper, one long
document would answer for every highlight at once and lose the page of each (docs/retrieval.md has the
measurement). Pure: no I/O, no clock.

The Markdown: the highlighted (or underlined) text as a quote, the comment as a paragraph, then a line
with the type, page, colour (and its meaning, when the user gave one) and tags. Image and ink marks
without words are provenance only and never reach this module (``Annotation.indexable``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from zocrates_nb.convert.convert import ConvertedNote
from zocrates_nb.convert.summary import count_words

if TYPE_CHECKING:
    from zocrates_nb.records import Annotation

__all__ = ["annotation_source_hash", "color_meaning", "convert_annotation"]

_LABELS = {
    "highlight": "Highlight",
    "underline": "Underline",
    "note": "Sticky note",
    "text": "Text box",
    "image": "Image",
    "ink": "Ink",
}


def annotation_source_hash(annotation: Annotation) -> str:
    """SHA-256 over every field that reaches the annotation's bundle: an edit in Zotero makes it stale."""
    record = [
        annotation.key,
        annotation.annotation_type,
        annotation.text,
        annotation.comment,
        annotation.color,
        annotation.page_label,
        annotation.position,
        annotation.sort_index,
        list(annotation.tags),
        annotation.attachment_key,
        annotation.parent_key,
        annotation.library_id,
    ]
    return hashlib.sha256(json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


def color_meaning(color: str, color_name: str, meanings: Mapping[str, str] | None) -> str | None:
    """What the user said a colour means (``index.annotation_colors``: by hex code or by name), or None."""
    for wanted in (color.strip().lower(), color_name.strip().lower()):
        for name, meaning in (meanings or {}).items():
            if wanted and str(name).strip().lower() == wanted and str(meaning).strip():
                return str(meaning).strip()
    return None


def type_label(annotation_type: str) -> str:
    """``highlight`` → ``Highlight``, ``note`` → ``Sticky note``."""
    return _LABELS.get(annotation_type, annotation_type.capitalize() or "Annotation")


def convert_annotation(annotation: Annotation, meaning: str | None = None) -> ConvertedNote:
    """The annotation's Markdown and title (``meaning``: what its colour stands for, if the user said)."""
    text = " ".join(annotation.text.split())
    comment = annotation.comment.strip()
    parts = []
    if text:
        parts.append(f"> {text}")
    if comment:
        parts.append(comment)
    facts = [type_label(annotation.annotation_type)]
    if annotation.page:
        facts.append(f"p. {annotation.page}")
    if annotation.color_name:
        facts.append(f"{annotation.color_name} ({meaning})" if meaning else annotation.color_name)
    if annotation.tags:
        facts.append("tags: " + ", ".join(annotation.tags))
    parts.append(" · ".join(facts))
    markdown = "\n\n".join(parts) + "\n"
    label = type_label(annotation.annotation_type)
    return ConvertedNote(
        markdown=markdown,
        title=f"{label}, p. {annotation.page}" if annotation.page else label,
        toc=[],
        abstract=None,
        abstract_source=None,
        word_count=count_words(f"{text} {comment}"),
        source_hash=annotation_source_hash(annotation),
    )
