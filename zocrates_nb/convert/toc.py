"""Table of contents from Markdown headings.

Why line ranges: ``read_document(key, section=…)`` returns one section's lines,
so each entry records where its section starts and ends (1-based, inclusive,
covering its subsections). Ids are slugs, unique within the document, so an
agent can name a section without quoting a long heading.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~<>$])")
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|~~|`)")


def strip_inline_markup(raw: str) -> str:
    """Inline Markdown → plain text: links to their text, emphasis markers dropped, escapes undone."""
    escaped: list[str] = []

    def hold(match: re.Match[str]) -> str:
        escaped.append(match.group(1))
        return f"\ue010{len(escaped) - 1}\ue011"

    text = _ESCAPE.sub(hold, raw)
    text = _LINK.sub(r"\1", text)
    text = _EMPHASIS.sub("", text)
    return re.sub("\ue010(\\d+)\ue011", lambda m: escaped[int(m.group(1))], text)


def heading_text(raw: str) -> str:
    """A heading's Markdown → its plain-text title."""
    return " ".join(strip_inline_markup(raw).split())


def slugify(title: str) -> str:
    """GitHub-style slug: lower case, word characters and hyphens, spaces → hyphens."""
    slug = re.sub(r"[^\w\- ]", "", title.lower()).strip()
    slug = re.sub(r"[ \-]+", "-", slug).strip("-")
    return slug or "section"


def iter_headings(markdown: str) -> Iterator[tuple[int, int, str]]:
    """Yield (line_number, level, raw_title) for ATX headings outside fenced code."""
    in_fence: str | None = None
    for number, line in enumerate(markdown.split("\n"), start=1):
        fence = _FENCE.match(line)
        if fence:
            if in_fence is None:
                in_fence = fence.group(1)
            elif fence.group(1) == in_fence:
                in_fence = None
            continue
        if in_fence is None and line.startswith("#"):
            match = _HEADING.match(line)
            if match:
                yield number, len(match.group(1)), match.group(2)


def build_toc(markdown: str) -> list[dict[str, Any]]:
    """Headings → ``[{"id", "level", "title", "line_start", "line_end"}]`` in document order."""
    lines = markdown.split("\n")
    last_line = len(lines)
    while last_line > 1 and not lines[last_line - 1].strip():
        last_line -= 1
    entries: list[dict[str, Any]] = []
    used: dict[str, int] = {}
    for number, level, raw in iter_headings(markdown):
        title = heading_text(raw)
        base = slugify(title)
        slug = base
        while slug in used:
            used[base] += 1
            slug = f"{base}-{used[base]}"
        used.setdefault(slug, 0)
        entries.append({"id": slug, "level": level, "title": title, "line_start": number, "line_end": last_line})
    for i, entry in enumerate(entries):
        for later in entries[i + 1 :]:
            if later["level"] <= entry["level"]:
                entry["line_end"] = max(entry["line_start"], later["line_start"] - 1)
                break
    for entry in entries:  # do not end a section on the blank lines before the next heading
        end = entry["line_end"]
        while end > entry["line_start"] and not lines[end - 1].strip():
            end -= 1
        entry["line_end"] = end
    return entries


def section_lines(markdown: str, entry: dict[str, Any]) -> str:
    """The text of one TOC entry's section (heading line included)."""
    lines = markdown.split("\n")
    return "\n".join(lines[entry["line_start"] - 1 : entry["line_end"]]) + "\n"
