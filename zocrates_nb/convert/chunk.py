"""Paragraph-aware chunking for the search index.

Why paragraphs and ~256 tokens: all-MiniLM-L6-v2 reads at most 256 word pieces,
and a chunk that ends mid-paragraph loses the context a reader needs. We pack
whole blocks (paragraphs, list items, tables, code) until the budget is used,
start a new chunk at a heading once the current one has some substance, and
carry the last ~40 tokens of a chunk into the next one within a section so a
sentence that straddles the cut is findable from both sides.

Token counts are estimated from words (~0.75 words per token), which is cheap
and close enough for English prose; the embedder truncates anyway.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .summary import count_words
from .toc import heading_text

WORDS_PER_TOKEN = 0.75


@dataclass(frozen=True)
class Chunk:
    """One piece of a document: its position, its text, and the heading it sits under."""

    index: int
    text: str
    section: str | None
    token_estimate: int = 0


def estimate_tokens(text: str) -> int:
    """Cheap token estimate: words / 0.75."""
    return math.ceil(count_words(text) / WORDS_PER_TOKEN)


def _blocks(markdown: str) -> list[tuple[str | None, bool, str]]:
    """Split into (section, is_heading, text) blocks; fenced code stays whole."""
    blocks: list[tuple[str | None, bool, str]] = []
    section: str | None = None
    current: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if current and any(line.strip() for line in current):
            blocks.append((section, False, "\n".join(current).strip("\n")))
        current.clear()

    for line in markdown.split("\n"):
        stripped = line.strip()
        if fence:
            current.append(line)
            if stripped.startswith(fence):
                fence = None
                flush()
            continue
        if stripped.startswith(("```", "~~~")):
            flush()
            fence = stripped[:3]
            current.append(line)
        elif re.match(r"#{1,6}\s", line):
            flush()
            section = heading_text(line.lstrip("#")) or section
            blocks.append((section, True, line.strip()))
        elif not stripped:
            flush()
        else:
            current.append(line)
    flush()
    return blocks


def _split_long(text: str, target_words: int, overlap_words: int) -> list[str]:
    """A block longer than the budget → word windows of ``target_words`` with overlap."""
    words = text.split()
    step = max(1, target_words - overlap_words)
    pieces = []
    for start in range(0, len(words), step):
        pieces.append(" ".join(words[start:start + target_words]))
        if start + target_words >= len(words):
            break
    return pieces


def _tail(text: str, overlap_words: int) -> str:
    words = text.split()
    return " ".join(words[-overlap_words:]) if overlap_words and len(words) > overlap_words else ""


def chunk_markdown(markdown: str, *, target_tokens: int = 256, overlap_tokens: int = 40) -> list[Chunk]:
    """Markdown → chunks of about ``target_tokens`` (estimated), each knowing its section heading.

    A document that fits the budget (with 25% slack) is one chunk; an empty one is none.
    """
    if not markdown.strip():
        return []
    target_words = max(8, int(target_tokens * WORDS_PER_TOKEN))
    overlap_words = max(0, min(int(overlap_tokens * WORDS_PER_TOKEN), target_words // 2))
    blocks = _blocks(markdown)
    if count_words(markdown) <= target_words * 1.25:
        first_section = next((s for s, _, _ in blocks if s), None)
        return [Chunk(0, markdown.strip(), first_section, estimate_tokens(markdown))]

    chunks: list[Chunk] = []
    parts: list[str] = []
    part_words = 0
    chunk_section: str | None = None

    def emit() -> None:
        nonlocal parts, part_words
        text = "\n\n".join(parts).strip()
        if text and count_words(text):
            chunks.append(Chunk(len(chunks), text, chunk_section, math.ceil(part_words / WORDS_PER_TOKEN)))
        parts, part_words = [], 0

    for section, is_heading, text in blocks:
        words = count_words(text)
        if is_heading:
            if part_words >= target_words // 4:
                emit()
            if not parts:
                chunk_section = section
            parts.append(text)
            part_words += words
            continue
        if not parts:
            chunk_section = section
        if part_words + words <= target_words:
            parts.append(text)
            part_words += words
            continue
        if words > target_words:
            pieces = _split_long(text, target_words - min(part_words, target_words // 2), overlap_words)
        else:
            pieces = [text]
        for piece in pieces:
            piece_words = count_words(piece)
            if parts and part_words + piece_words > target_words:
                carry = _tail(parts[-1], overlap_words) if section == chunk_section else ""
                emit()
                chunk_section = section
                if carry and count_words(carry) + piece_words <= target_words:
                    parts, part_words = [carry], count_words(carry)
            if not parts:
                chunk_section = section
            parts.append(piece)
            part_words += piece_words
    emit()
    return chunks
