"""Extractive summary and word counts (no LLM, no I/O).

Why extractive and why the first paragraph: a research note's opening
paragraph is almost always its point, and search results need a one-glance
abstract for every long note without paying for a model call. Short notes
(< 100 words) need no abstract: the tools inline them whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from zocrates_nb.convert.toc import strip_inline_markup

MIN_WORDS_FOR_ABSTRACT = 100
MAX_ABSTRACT_CHARS = 300

_WORD = re.compile(r"\w")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+")
_HR = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_IMAGE_ONLY = re.compile(r"^(?:\s*\[image(?::[^\]]*)?\]\s*)+$")


def count_words(markdown: str) -> int:
    """Whitespace-separated tokens that contain a letter or digit (so ``#``, ``-``, ``|`` are not words)."""
    return sum(1 for token in markdown.split() if _WORD.search(token))


def has_at_least_words(markdown: str, minimum: int) -> bool:
    """``count_words(markdown) >= minimum``, stopping as soon as the answer is known."""
    seen = 0
    for match in re.finditer(r"\S+", markdown):
        if _WORD.search(match.group(0)):
            seen += 1
            if seen >= minimum:
                return True
    return False


def iter_blocks(markdown: str) -> Iterator[tuple[str, str]]:
    """Yield (kind, text) for each blank-line-separated block; fenced code stays one block.

    kind is one of heading, code, math, list, quote, table, rule, image, prose.
    """
    lines = markdown.split("\n")
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            i += 1
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            j = i + 1
            while j < n and not lines[j].strip().startswith(fence):
                j += 1
            yield "code", "\n".join(lines[i + 1 : j])
            i = j + 1
            continue
        if line.startswith("#") and re.match(r"#{1,6}\s", line):
            yield "heading", line
            i += 1
            continue
        j = i
        while j < n and lines[j].strip() and not (j > i and lines[j].startswith("#")):
            j += 1
        block = "\n".join(lines[i:j])
        i = j
        yield _block_kind(line, block), block


def _block_kind(first_line: str, block: str) -> str:
    """The kind of a non-heading, non-code block from its first line (and, for images, the whole block)."""
    stripped = first_line.strip()
    if stripped.startswith("$$"):
        return "math"
    if stripped.startswith(">"):
        return "quote"
    if stripped.startswith("|"):
        return "table"
    if _HR.match(stripped):
        return "rule"
    if _LIST_ITEM.match(first_line):
        return "list"
    return "image" if _IMAGE_ONLY.match(block) else "prose"


def block_plain_text(kind: str, block: str) -> str:
    """A block's Markdown → one line of plain text (markup and structure markers removed)."""
    lines = []
    for line in block.split("\n"):
        if kind == "quote":
            line = re.sub(r"^\s*(?:>\s?)+", "", line)
        elif kind == "list":
            line = _LIST_ITEM.sub("", line)
        elif kind == "table":
            if _TABLE_RULE.match(line):
                continue
            line = line.replace("|", " ")
        lines.append(line)
    text = " ".join(lines) if kind == "code" else strip_inline_markup(" ".join(lines))
    return " ".join(text.split())


def cut_at_word(text: str, limit: int = MAX_ABSTRACT_CHARS) -> str:
    """``text`` if it fits, else cut at the last word boundary so that text + "…" ≤ limit."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:-–—") + "…"


def extractive_summary(markdown: str) -> tuple[str | None, str | None]:
    """(abstract, "extractive") for notes of ≥ 100 words, else (None, None).

    The abstract is the first prose paragraph that is not a heading; lists,
    tables, quotes and code are used only when the note has no prose paragraph.
    """
    if not has_at_least_words(markdown, MIN_WORDS_FOR_ABSTRACT):
        return None, None
    fallback: str | None = None
    for kind, block in iter_blocks(markdown):
        if kind in ("heading", "rule", "image"):
            continue
        if kind == "prose":
            text = block_plain_text(kind, block)
            if text:
                return cut_at_word(text), "extractive"
        elif fallback is None:
            text = block_plain_text(kind, block)
            fallback = text or None
    if fallback:
        return cut_at_word(fallback), "extractive"
    return None, None
