"""Paragraph-aware chunking for the search index, by word estimate.

Why paragraphs and ~256 tokens: all-MiniLM-L6-v2 reads at most 256 word pieces,
and a chunk that ends mid-paragraph loses the context a reader needs. A heading
starts a new chunk once the text before it has some substance, and consecutive
chunks of a section overlap so a passage near a cut is findable from both sides.

``chunk_markdown`` estimates tokens from words (~0.75 words per token) and packs whole
blocks (paragraphs, list items, tables, code) greedily; it serves when no tokenizer is
installed. The index uses ``convert.window.chunk_to_window`` with the embedder's own
counter, which cuts to the exact window (and reuses ``markdown_blocks`` and ``Chunk`` from here).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from zocrates_nb.convert.summary import count_words
from zocrates_nb.convert.toc import heading_text

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


def markdown_blocks(markdown: str) -> list[tuple[str | None, bool, str]]:
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
        pieces.append(" ".join(words[start : start + target_words]))
        if start + target_words >= len(words):
            break
    return pieces


def _tail(text: str, overlap_words: int) -> str:
    """The end of ``text`` carried into the next chunk: whole sentences when they fit, else words."""
    words = text.split()
    if not overlap_words or len(words) <= overlap_words:
        return ""
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(words))
    kept: list[str] = []
    for sentence in reversed(sentences):
        if count_words(" ".join([sentence, *kept])) > overlap_words:
            break
        kept.insert(0, sentence)
    return " ".join(kept) if kept else " ".join(words[-overlap_words:])


def chunk_markdown(markdown: str, *, target_tokens: int = 256, overlap_tokens: int = 40) -> list[Chunk]:
    """Markdown → chunks of about ``target_tokens`` (estimated), each knowing its section heading.

    A document that fits the budget (with 25% slack) is one chunk; an empty one is none.
    """
    if not markdown.strip():
        return []
    target_words = max(8, int(target_tokens * WORDS_PER_TOKEN))
    overlap_words = max(0, min(int(overlap_tokens * WORDS_PER_TOKEN), target_words // 2))
    blocks = markdown_blocks(markdown)
    if count_words(markdown) <= target_words * 1.25:
        first_section = next((s for s, _, _ in blocks if s), None)
        return [Chunk(0, markdown.strip(), first_section, estimate_tokens(markdown))]

    packer = _Packer(target_words, overlap_words)
    for section, is_heading, text in blocks:
        add = packer.add_heading if is_heading else packer.add_block
        add(section, text, count_words(text))
    packer.emit()
    return packer.chunks


class _Packer:
    """Packs whole blocks into chunks of about ``target_words``: the state ``chunk_markdown`` carries from
    block to block (the chunks so far, the open chunk's parts and word count, and its section)."""

    def __init__(self, target_words: int, overlap_words: int) -> None:
        self.target_words, self.overlap_words = target_words, overlap_words
        self.chunks: list[Chunk] = []
        self.parts: list[str] = []
        self.part_words = 0
        self.section: str | None = None

    def emit(self) -> None:
        """Close the open chunk (if it has any words) and start an empty one in the same section."""
        text = "\n\n".join(self.parts).strip()
        if text and count_words(text):
            tokens = math.ceil(self.part_words / WORDS_PER_TOKEN)
            self.chunks.append(Chunk(len(self.chunks), text, self.section, tokens))
        self.parts, self.part_words = [], 0

    def _append(self, section: str | None, text: str, words: int) -> None:
        if not self.parts:
            self.section = section
        self.parts.append(text)
        self.part_words += words

    def add_heading(self, section: str | None, text: str, words: int) -> None:
        """A heading starts a new chunk once the open one has some substance."""
        if self.part_words >= self.target_words // 4:
            self.emit()
        self._append(section, text, words)

    def add_block(self, section: str | None, text: str, words: int) -> None:
        """A block joins the open chunk if it fits; else it starts the next one (split if it is too long)."""
        if not self.parts:
            self.section = section
        if self.part_words + words <= self.target_words:
            self._append(section, text, words)
            return
        if words > self.target_words:
            budget = self.target_words - min(self.part_words, self.target_words // 2)
            pieces = _split_long(text, budget, self.overlap_words)
        else:
            pieces = [text]
        for i, piece in enumerate(pieces):
            # a split block's later pieces already begin with their overlap: a carry on top of
            # it would repeat those words (and make the chunk too long for the window)
            self._add_piece(section, piece, carry=i == 0)

    def _add_piece(self, section: str | None, piece: str, *, carry: bool = True) -> None:
        """One piece of a block: a full chunk is closed first, carrying its last sentences within a section."""
        piece_words = count_words(piece)
        if self.parts and self.part_words + piece_words > self.target_words:
            carry_text = _tail(self.parts[-1], self.overlap_words) if carry and section == self.section else ""
            self.emit()
            self.section = section
            if carry_text and count_words(carry_text) + piece_words <= self.target_words:
                self.parts, self.part_words = [carry_text], count_words(carry_text)
        self._append(section, piece, piece_words)
