"""Paragraph-aware chunking for the search index.

Why paragraphs and ~256 tokens: all-MiniLM-L6-v2 reads at most 256 word pieces,
and a chunk that ends mid-paragraph loses the context a reader needs. We pack
whole blocks (paragraphs, list items, tables, code) until the budget is used,
start a new chunk at a heading once the current one has some substance, and
carry the last ~40 tokens of a chunk into the next one within a section so a
sentence that straddles the cut is findable from both sides.

Token counts are estimated from words (~0.75 words per token) by ``chunk_markdown``;
the index uses ``chunk_to_window`` with the embedder's own token counter, so no chunk
is longer than the model reads.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
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
    blocks = _blocks(markdown)
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


# ---------------------------------------------------------------------------- the model's window

TokenCounter = Callable[[str], int]

_PIECE = re.compile(r"\S+\s*")
#: A sentence (up to . ! ? and the spaces after it) or a line: the units a split prefers to keep whole.
_SENTENCE = re.compile(r".+?(?:[.!?](?=\s)|\n|$)\s*", re.DOTALL)


def _units(text: str, budget: int, count_tokens: TokenCounter) -> list[str]:
    """Sentences and lines of ``text`` (whitespace kept); one longer than ``budget`` becomes words."""
    out: list[str] = []
    for sentence in _SENTENCE.findall(text):
        if count_tokens(sentence) > budget // 2:
            out.extend(_PIECE.findall(sentence))
        else:
            out.append(sentence)
    return out


def _fits(pieces: list[str], start: int, budget: int, count_tokens: TokenCounter) -> int:
    """The largest end such that ``pieces[start:end]`` fits ``budget`` tokens (at least one piece)."""
    low, high = start + 1, len(pieces)
    while low < high:  # binary search: log n tokenizer calls
        mid = (low + high + 1) // 2
        if count_tokens("".join(pieces[start:mid])) <= budget:
            low = mid
        else:
            high = mid - 1
    return low


def split_to_window(text: str, budget: int, count_tokens: TokenCounter, overlap_tokens: int = 32) -> list[str]:
    """Cut ``text`` into pieces of at most ``budget`` tokens (the counter's), overlapping by about
    ``overlap_tokens``; cuts fall between sentences or lines where it can (a very long sentence is
    cut between words), and whitespace inside a piece (table rows, code lines) is kept.

    Pieces are balanced (a 300-token text under a 254 budget gives two ~165-token pieces, not
    254 + 46), so no piece is a scrap that matches everything weakly.
    """
    total = count_tokens(text)
    if total <= budget:
        return [text]
    pieces = _units(text.strip(), budget, count_tokens)
    parts = math.ceil(total / max(1, budget - overlap_tokens))
    target = min(budget, math.ceil(total / parts) + overlap_tokens)
    out, start = [], 0
    while start < len(pieces):
        end = _fits(pieces, start, target, count_tokens)
        out.append("".join(pieces[start:end]).strip())
        if end >= len(pieces):
            break
        back = end
        while back > start + 1 and count_tokens("".join(pieces[back - 1 : end])) <= overlap_tokens:
            back -= 1
        start = max(back, start + 1)
    return out


def chunk_to_window(markdown: str, budget: int, count_tokens: TokenCounter, *, overlap_tokens: int = 32) -> list[Chunk]:
    """Markdown → chunks none of which is longer than ``budget`` tokens as ``count_tokens`` counts.

    ``count_tokens`` is the embedder's own tokenizer (passed in, so this module stays pure): the
    word estimate above is off by ±30 % on scientific text, and a chunk past the model's window
    is silently cut by it. A document that fits is one chunk; otherwise the paragraph-aware
    packing runs with its word estimate calibrated on this document, and any chunk still too
    long is split with overlap.
    """
    if not markdown.strip():
        return []
    whole = count_tokens(markdown.strip())
    if whole <= budget:
        blocks = _blocks(markdown)
        return [Chunk(0, markdown.strip(), next((s for s, _, _ in blocks if s), None), whole)]
    # the packer estimates tokens from words; calibrate it on this document's own ratio so the
    # packed chunks nearly fill the window (5 % slack) and few need a further split
    estimate = estimate_tokens(markdown) or 1
    calibrated = budget * estimate / whole * 0.95
    packed = chunk_markdown(
        markdown, target_tokens=max(16, int(calibrated)), overlap_tokens=max(0, int(overlap_tokens * estimate / whole))
    )
    out: list[Chunk] = []
    for chunk in packed:
        for piece in split_to_window(chunk.text, budget, count_tokens, overlap_tokens):
            if piece.strip():
                out.append(Chunk(len(out), piece, chunk.section, count_tokens(piece)))
    return out
