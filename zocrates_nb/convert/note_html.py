"""Markdown → Zotero note HTML, for Save as Note.

Why HTML and why this shape: the Zotero Web API escapes Markdown, so a note must
be written as HTML; a leading ``<h1>`` makes Zotero show our title (its
``noteToTitle`` takes the first line), and the ``data-schema-version`` wrapper is
what Zotero's note-editor writes. Math stays in Zotero's own form
(``span.math`` / ``pre.math``) so the editor renders it. The result is
sanitized to Zotero's element set before it leaves this module.

Converting the rendered note back (``convert_note``) gives the same title and
body text: a round trip the tests check.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from markdown_it import MarkdownIt

from zocrates_nb.sanitize import escape_text, sanitize_note_html

SCHEMA_VERSION = "9"

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_md.enable(["table", "strikethrough"])

_INLINE_OPEN, _INLINE_CLOSE = "\ue000", "\ue001"
_BLOCK_OPEN, _BLOCK_CLOSE = "\ue002", "\ue003"
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1", re.S)
_INLINE_MATH = re.compile(r"(?<![\\$\w])\$(?!\s)([^$\n]+?)(?<![\s\\])\$(?![\d$])")
_DISPLAY_INLINE = re.compile(r"(?<!\\)\$\$(.+?)\$\$", re.S)


def _extract_math(markdown: str) -> tuple[str, list[str], list[str]]:
    """Swap math for placeholders (outside code) so Markdown rendering cannot mangle it."""
    inline: list[str] = []
    blocks: list[str] = []
    out: list[str] = []
    lines = markdown.replace("\r\n", "\n").split("\n")
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if fence:
            out.append(line)
            if stripped.startswith(fence):
                fence = None
            i += 1
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            out.append(line)
            i += 1
            continue
        if stripped.startswith("$$"):
            end = _block_math_end(lines, i)
            if end is not None:
                body = "\n".join(row.strip() for row in lines[i : end + 1])[2:-2]
                blocks.append(body.strip())
                indent = line[: len(line) - len(line.lstrip())]
                out.append(f"{indent}{_BLOCK_OPEN}{len(blocks) - 1}{_BLOCK_CLOSE}")
                i = end + 1
                continue
        out.append(_extract_inline(line, inline))
        i += 1
    return "\n".join(out), inline, blocks


def _block_math_end(lines: list[str], start: int) -> int | None:
    """Index of the line closing a ``$$`` block that opens at ``start``, or None if it is not one."""
    rest = lines[start].strip()[2:]
    if rest.endswith("$$") and len(rest) >= 2:
        return start if "$$" not in rest[:-2] else None
    for j in range(start + 1, len(lines)):
        stripped = lines[j].strip()
        if not stripped:
            return None  # a blank line ends the paragraph: this was not display math
        if stripped.endswith("$$"):
            return j if "$$" not in stripped[:-2] else None
    return None


def _extract_inline(line: str, inline: list[str]) -> str:
    def hold(text: str) -> str:
        inline.append(text)
        return f"{_INLINE_OPEN}{len(inline) - 1}{_INLINE_CLOSE}"

    pieces, last = [], 0
    for code in _CODE_SPAN.finditer(line):
        pieces.append(_replace_math(line[last : code.start()], hold))
        pieces.append(code.group(0))
        last = code.end()
    pieces.append(_replace_math(line[last:], hold))
    return "".join(pieces)


def _replace_math(text: str, hold: Callable[[str], str]) -> str:
    text = _DISPLAY_INLINE.sub(lambda m: hold(f"$${m.group(1).strip()}$$"), text)
    return _INLINE_MATH.sub(lambda m: hold(f"${m.group(1)}$"), text)


def markdown_to_note_body(markdown: str) -> str:
    """Markdown → HTML fragment (raw HTML in the Markdown is escaped, not passed through)."""
    text, inline, blocks = _extract_math(markdown)
    body = _md.render(text)
    body = re.sub(
        _BLOCK_OPEN + r"(\d+)" + _BLOCK_CLOSE,
        lambda m: f'\ue004<pre class="math">$${escape_text(blocks[int(m.group(1))])}$$</pre>\ue005',
        body,
    )
    body = re.sub(r"<p>\ue004(.*?)\ue005</p>", r"\1", body, flags=re.S)
    body = body.replace("\ue004", "").replace("\ue005", "")
    return re.sub(
        _INLINE_OPEN + r"(\d+)" + _INLINE_CLOSE,
        lambda m: f'<span class="math">{escape_text(inline[int(m.group(1))])}</span>',
        body,
    )


def _drop_leading_title(markdown: str, title: str) -> str:
    """Do not repeat the title when the body already starts with it as a level-1 heading."""
    match = re.match(r"\s*#\s+(.+?)\s*#*\s*(?:\n|$)", markdown)
    if match and " ".join(match.group(1).split()) == " ".join(title.split()):
        return markdown[match.end() :]
    return markdown


def render_note_html(title: str, markdown_body: str, sources: Sequence[str] = ()) -> str:
    """Title + Markdown body (+ sources) → sanitized Zotero note HTML with the schema wrapper."""
    title = " ".join((title or "").split()) or "Untitled note"
    parts = [f'<div data-schema-version="{SCHEMA_VERSION}">', f"<h1>{escape_text(title)}</h1>\n"]
    body = markdown_to_note_body(_drop_leading_title(markdown_body or "", title)).strip()
    if body:
        parts.append(body + "\n")
    cleaned_sources = [s.strip() for s in sources if s and s.strip()]
    if cleaned_sources:
        items = "".join(f"<li>{_md.renderInline(s)}</li>\n" for s in cleaned_sources)
        parts.append(f"<h2>Sources</h2>\n<ul>\n{items}</ul>\n")
    parts.append("</div>")
    return sanitize_note_html("".join(parts))
