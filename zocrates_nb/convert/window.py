"""Chunks cut to the embedding model's window, counted with its own tokenizer — pure functions.

Why exact counts: the word estimate in ``convert.chunk`` is off by ±30 % on scientific text, a chunk
past the model's window is silently cut by it, and every chunk more than needed is one more text to
embed (the slow part of a first sync). The counter is passed in, so this module stays pure.

1. Count once, then add. The text is cut into units that each end in whitespace
   (sentences and lines; a unit too long for a piece becomes words, a word atoms). BERT's
   normalizer is character-local and its pre-tokenizer splits at whitespace, so a text's
   count is the sum of its units' counts: each unit is counted once, all in one batched
   call when the counter has ``many``, and every size after that is a prefix sum.
   "Whitespace" is what BERT treats as such (``_WS_CHARS``), not what Python does.
2. Fewest balanced pieces. A text of T tokens under budget B with overlap O needs at least
   ceil((T - O) / (B - O)) pieces. The planner knows, for every unit, how many pieces the
   rest needs (filling greedily is optimal at a given grain) and ends each piece at the
   cut nearest the balanced size among those that keep to that number, preferring a
   paragraph end, then a sentence end, then a word. When sentence cuts need more pieces
   than the count does, the sentences are split into words (one more call) and the finer
   plan is kept if it has fewer pieces.
3. Overlap. A piece carries the last whole sentences of the one before (up to O tokens),
   or, after a cut inside a paragraph whose last sentence is longer, its last words; none
   across a heading, and no fragment across a paragraph end.
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections.abc import Callable
from typing import NamedTuple

from zocrates_nb.convert.chunk import Chunk, markdown_blocks

TokenCounter = Callable[[str], int]

#: What BERT's normalizer and pre-tokenizer treat as whitespace: Rust's ``char::is_whitespace`` less the
#: control characters the normalizer deletes. A cut right after one of these adds no word piece on either
#: side, so a text's count is the sum of its units' counts. Python's ``\s`` would not do: it also matches
#: \x0b, \x0c, \x1c-\x1f and \x85, which BERT deletes, gluing the words either side into one.
_WS_CHARS = " \t\n\r\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
_WS = f"[{re.escape(_WS_CHARS)}]"
#: A sentence (to . ! ? before whitespace, or a CJK full stop) or a line, with the whitespace after it.
_SENTENCE = re.compile(rf".+?(?:[.!?](?={_WS})|[。！？]|\n|$){_WS}*", re.DOTALL)
#: A word with the whitespace after it (and, for the first, before it): no character is lost.
_WORD = re.compile(rf"{_WS}*[^{re.escape(_WS_CHARS)}]+{_WS}*")
#: The CJK ideographs BERT's normalizer pads with spaces: each is a word of its own.
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)

# how natural a cut right after a unit is, and what choosing it costs the planner (as a share of the
# piece's target size, so that a paragraph end a little off balance beats a sentence end right on it)
_NO_CUT, _INSIDE_WORD, _WORD_END, _SENTENCE_END, _BLOCK_END = range(5)
_CUT_PENALTY = {_INSIDE_WORD: 0.8, _WORD_END: 0.5, _SENTENCE_END: 0.15, _BLOCK_END: 0.0}


class _Unit(NamedTuple):
    """A piece of text that is never cut inside: it ends in whitespace (or ends its block), so its
    word pieces add up with its neighbours'."""

    text: str
    tokens: int
    cut: int  # how natural a cut right after it is (``_NO_CUT`` after a heading)
    section: str | None
    heading: bool = False


def _counts(texts: list[str], count_tokens: TokenCounter) -> list[int]:
    """Each text's count: in one batched call when the counter has ``many`` (the embedder's does),
    each distinct text once (a document's words repeat: "the ", "of ", "cells ")."""
    distinct = list(dict.fromkeys(texts))
    many = getattr(count_tokens, "many", None)
    counts = [int(n) for n in many(distinct)] if many is not None and distinct else map(count_tokens, distinct)
    known = dict(zip(distinct, counts, strict=True))
    return [known[text] for text in texts]


def _sentence_units(blocks: list[tuple[str | None, bool, str]], count_tokens: TokenCounter) -> list[_Unit]:
    """The blocks as sentences and lines (headings whole), counted in one call; blocks are joined by a
    blank line, as ``chunk_markdown`` joins them."""
    raw: list[tuple[str, int, str | None, bool]] = []
    for section, is_heading, text in blocks:
        if not text.strip():
            continue
        if is_heading:
            raw.append((text + "\n\n", _NO_CUT, section, True))
            continue
        sentences = _SENTENCE.findall(text)
        raw.extend((sentence, _SENTENCE_END, section, False) for sentence in sentences[:-1])
        raw.append((sentences[-1] + "\n\n", _BLOCK_END, section, False))
    counts = _counts([text for text, _, _, _ in raw], count_tokens)
    return [_Unit(text, n, cut, section, heading) for (text, cut, section, heading), n in zip(raw, counts, strict=True)]


def _splits_a_word(char: str) -> bool:
    """BERT's pre-tokenizer cuts around punctuation and CJK ideographs even without whitespace."""
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P") or any(low <= code <= high for low, high in _CJK)


def _atoms(word: str) -> list[str]:
    """A word cut after each punctuation mark and CJK ideograph (a long URL, formula or run of Chinese
    has no whitespace to cut at); a run of letters stays whole, as BERT reads it as one word."""
    atoms, start = [], 0
    last = len(word.rstrip(_WS_CHARS)) - 1  # no cut after the last character: its whitespace stays on
    for i, char in enumerate(word[:last]):
        if _splits_a_word(char):
            atoms.append(word[start : i + 1])
            start = i + 1
    atoms.append(word[start:])
    return atoms


def _refine(
    units: list[_Unit], should_split: Callable[[_Unit], bool], count_tokens: TokenCounter, *, into_atoms: bool
) -> list[_Unit]:
    """The units ``should_split`` picks replaced by their words (a one-word unit by its atoms, if
    ``into_atoms``), all counted in one call; a part keeps its unit's section, the last part the cut
    after the unit. The same list when nothing was split."""
    parts: dict[int, tuple[list[str], int]] = {}
    for i, unit in enumerate(units):
        if should_split(unit):
            words = _WORD.findall(unit.text)
            if len(words) > 1:
                parts[i] = (words, _WORD_END)
            elif into_atoms and len(atoms := _atoms(unit.text)) > 1:
                parts[i] = (atoms, _INSIDE_WORD)
    if not parts:
        return units
    counts = iter(_counts([text for texts, _ in parts.values() for text in texts], count_tokens))
    out: list[_Unit] = []
    for i, unit in enumerate(units):
        if i not in parts:
            out.append(unit)
            continue
        texts, inner_cut = parts[i]
        for j, text in enumerate(texts):
            cut = unit.cut if j == len(texts) - 1 else inner_cut
            out.append(_Unit(text, next(counts), cut, unit.section, unit.heading and j == 0))
    return out


def _segments(units: list[_Unit], substance: int) -> list[list[_Unit]]:
    """The units cut apart at the headings that open a new chunk: those after at least ``substance``
    tokens of text (headings not counted), so a title and its byline stay with the first section."""
    segments: list[list[_Unit]] = [[]]
    tokens = 0
    for unit in units:
        if unit.heading and segments[-1] and tokens >= substance:
            segments.append([])
            tokens = 0
        segments[-1].append(unit)
        tokens += 0 if unit.heading else unit.tokens
    return segments


def _prefix_sums(units: list[_Unit]) -> list[int]:
    prefix = [0]
    for unit in units:
        prefix.append(prefix[-1] + unit.tokens)
    return prefix


def _pieces_needed(content: int, first_room: int, room: int) -> int:
    """The fewest pieces that hold ``content`` tokens: ``first_room`` in the first, ``room`` in each next."""
    return 1 + max(0, math.ceil((content - first_room) / room))


def _furthest_cut(units: list[_Unit], prefix: list[int], start: int, room: int) -> int:
    """The furthest allowed cut after ``start`` that keeps the piece within ``room`` (the next unit when
    none does: a unit longer than the room goes alone)."""
    end = bisect.bisect_right(prefix, prefix[start] + room) - 1
    while start + 1 < end < len(units) and units[end - 1].cut == _NO_CUT:
        end -= 1
    return max(end, start + 1)


def _pieces_after(units: list[_Unit], prefix: list[int], room: int) -> list[int]:
    """For each unit, the fewest pieces of at most ``room`` tokens the text from it on needs: filling
    each piece as far as it goes is optimal for a cut-up line, so the count is exact at this grain."""
    after = [0] * (len(units) + 1)
    for start in range(len(units) - 1, -1, -1):
        after[start] = 1 + after[_furthest_cut(units, prefix, start, room)]
    return after


def _balanced_starts(units: list[_Unit], budget: int, overlap: int) -> list[tuple[int, int]]:
    """Where the pieces start (unit indices) and the room each keeps for its overlap: as few pieces as
    the units allow, balanced.

    A piece that continues a section keeps room for the end of the piece before it: ``overlap``
    tokens after a cut inside a paragraph, the whole sentences it will carry after a paragraph end
    (a fragment of the paragraph before helps no one there; see ``_tails``). A piece ends at the
    cut whose size is closest to the balanced target plus the penalty of its kind (paragraph end,
    sentence end, word end), among those that leave no more than the pieces still planned can hold.
    """
    prefix = _prefix_sums(units)
    total = prefix[-1]
    after = _pieces_after(units, prefix, budget - overlap)
    starts = [(0, 0)]
    left = 1 + after[_furthest_cut(units, prefix, 0, budget)]
    while True:
        start, carry = starts[-1]
        remaining = total - prefix[start]
        if carry + remaining <= budget or start + 1 >= len(units):
            return starts
        target = max(1.0, (remaining + carry + (left - 1) * overlap) / left - carry)
        best: tuple[tuple[bool, float], int] | None = None
        for end in range(start + 1, len(units)):
            size = prefix[end] - prefix[start]
            if size > budget - carry:
                break
            if units[end - 1].cut == _NO_CUT:
                continue
            score = (after[end] > left - 1, abs(size - target) / target + _CUT_PENALTY[units[end - 1].cut])
            if best is None or score < best[0]:
                best = (score, end)
        if best is None and carry:  # its first unit leaves no room for an overlap: go without
            starts[-1] = (start, 0)
            continue
        end = best[1] if best is not None else start + 1  # a unit longer than the budget goes alone
        starts.append((end, _overlap_room(units, prefix, start, end, overlap)))
        left = max(left - 1, after[end])


def _plan(
    units: list[_Unit], budget: int, overlap: int, count_tokens: TokenCounter
) -> tuple[list[_Unit], list[tuple[int, int]]]:
    """A segment's units (some split finer) and its pieces' starts (``_balanced_starts``).

    Units longer than a piece's room are split into words (a word into its atoms) first. When cuts
    between sentences need more pieces than the token count does, every sentence is split into words
    (one more call) and the finer plan is kept if it has fewer pieces: a cut inside a sentence is
    cheaper than another chunk to embed.
    """
    room = budget - overlap
    for _ in range(2):  # sentences → words → atoms
        units = _refine(units, lambda unit: unit.tokens > room, count_tokens, into_atoms=True)
    starts = _balanced_starts(units, budget, overlap)
    if len(starts) > _pieces_needed(sum(u.tokens for u in units), budget, room):
        words = _refine(units, lambda unit: True, count_tokens, into_atoms=False)
        finer = _balanced_starts(words, budget, overlap)
        if len(finer) < len(starts):
            return words, finer
    return units, starts


def _tail_start(units: list[_Unit], at: int, floor: int, overlap: int) -> int:
    """The first unit of the overlap carried in front of ``units[at]``: the longest run of whole
    sentences (else of words) within ``overlap`` tokens, in the same section, after ``floor``."""
    section = units[at].section
    sentence_start = word_start = at
    tokens, i = 0, at
    while i > floor and units[i - 1].section == section:
        tokens += units[i - 1].tokens
        if tokens > overlap:
            break
        i -= 1
        before = units[i - 1].cut if i > 0 else _BLOCK_END
        if before >= _SENTENCE_END:
            sentence_start = i
        if before >= _WORD_END:
            word_start = i
    return sentence_start if sentence_start < at else word_start


def _overlap_room(units: list[_Unit], prefix: list[int], previous: int, at: int, overlap: int) -> int:
    """The tokens a piece starting at ``units[at]`` keeps for its overlap (the previous piece starts at
    ``previous``): none at a new section, the whole sentences ``_tails`` will carry after a paragraph
    end, else ``overlap``."""
    if units[at].section != units[at - 1].section:
        return 0
    if units[at - 1].cut == _BLOCK_END:
        return prefix[at] - prefix[_tail_start(units, at, previous + 1, overlap)]
    return overlap


def _tails(
    pieces: list[tuple[list[_Unit], int, int]], overlap: int, count_tokens: TokenCounter
) -> list[tuple[str, int]]:
    """The overlap (text, tokens) each piece starts with, given (its segment's units, the piece's first
    unit, the previous piece's first unit or -1 where it carries none).

    Whole sentences (or, after a cut inside a long sentence, words) when they fit; when the sentence
    before a cut inside a paragraph is longer than ``overlap``, its last words are carried instead:
    as many as its own tokens per word suggest, checked in one batched call (and shortened, in
    further calls, in the rare case they are over).
    """
    tails: list[tuple[str, int]] = []
    words_wanted: dict[int, tuple[list[str], int]] = {}  # piece → (its sentence's words, how many)
    for piece, (units, at, previous) in enumerate(pieces):
        if previous < 0:
            tails.append(("", 0))
            continue
        first = _tail_start(units, at, previous + 1, overlap)
        tails.append(("".join(u.text for u in units[first:at]), sum(u.tokens for u in units[first:at])))
        sentence = units[at - 1]
        words = _WORD.findall(sentence.text)
        if first == at and len(words) > 1 and sentence.cut != _BLOCK_END:
            words_wanted[piece] = (words, min(len(words) - 1, len(words) * overlap // max(1, sentence.tokens)))
    while words_wanted := {piece: wanted for piece, wanted in words_wanted.items() if wanted[1] > 0}:
        texts = {piece: "".join(words[-n:]) for piece, (words, n) in words_wanted.items()}
        for (piece, text), tokens in zip(texts.items(), _counts(list(texts.values()), count_tokens), strict=True):
            words, n = words_wanted[piece]
            if tokens <= overlap:
                tails[piece] = (text, tokens)
                del words_wanted[piece]
            else:
                words_wanted[piece] = (words, min(n - 1, n * overlap // tokens))
    return tails


def _cut_to_window(units: list[_Unit], budget: int, count_tokens: TokenCounter, overlap: int) -> list[Chunk]:
    """Counted sentence units of a text longer than ``budget`` → chunks, none over ``budget``: each
    segment planned (``_plan``), then the overlaps of all pieces found at once (``_tails``)."""
    overlap = max(0, min(overlap, budget // 2))
    pieces: list[tuple[list[_Unit], int, int]] = []  # (segment's units, start, previous start or -1)
    ends: list[int] = []
    for headed in _segments(units, budget // 4):
        segment, starts = _plan(headed, budget, overlap, count_tokens)
        for k, (start, carry) in enumerate(starts):
            pieces.append((segment, start, starts[k - 1][0] if carry else -1))
        ends.extend([start for start, _ in starts[1:]] + [len(segment)])
    chunks: list[Chunk] = []
    tails = _tails(pieces, overlap, count_tokens)
    for (segment, start, _), end, (tail, tail_tokens) in zip(pieces, ends, tails, strict=True):
        text = (tail + "".join(u.text for u in segment[start:end])).strip()
        tokens = tail_tokens + sum(u.tokens for u in segment[start:end])
        chunks.append(Chunk(len(chunks), text, segment[start].section, tokens))
    return chunks


def split_to_window(text: str, budget: int, count_tokens: TokenCounter, overlap_tokens: int = 32) -> list[str]:
    """Cut plain ``text`` into as few balanced pieces of at most ``budget`` tokens (the counter's) as
    overlapping by about ``overlap_tokens`` allows; cuts fall between sentences or lines where they
    can (a very long sentence is cut between words), and whitespace inside a piece is kept."""
    units = _sentence_units([(None, False, text.strip())], count_tokens)
    if sum(u.tokens for u in units) <= budget:
        return [text]
    return [chunk.text for chunk in _cut_to_window(units, budget, count_tokens, overlap_tokens)]


def chunk_to_window(markdown: str, budget: int, count_tokens: TokenCounter, *, overlap_tokens: int = 32) -> list[Chunk]:
    """Markdown → chunks none of which is longer than ``budget`` tokens as ``count_tokens`` counts.

    ``count_tokens`` is the embedder's own tokenizer (passed in, so this module stays pure; with a
    ``many`` method each level of units is counted in one batched call). A document that fits is one
    chunk; otherwise it is cut into the fewest balanced pieces the budget and overlap allow (see the
    module docstring).
    """
    if not markdown.strip():
        return []
    blocks = markdown_blocks(markdown)
    units = _sentence_units(blocks, count_tokens)
    total = sum(u.tokens for u in units)
    if total <= budget:
        return [Chunk(0, markdown.strip(), next((s for s, _, _ in blocks if s), None), total)]
    return _cut_to_window(units, budget, count_tokens, overlap_tokens)
