"""Note HTML read as text without a parser: the plain-paragraph fallback for huge notes, and Zotero's note title.

Why its own module: both work on the raw HTML string with regular expressions (no bs4, no
markdownify), so they are cheap and independent of the tree rewriting in ``convert/html.py``:
``plain_text_markdown`` is what a note too large for markdownify becomes, and ``note_title`` follows
Zotero's ``noteToTitle`` line by line. Pure: a string in, a string out.
"""

from __future__ import annotations

import html as html_lib
import re

__all__ = ["MAX_TITLE_LENGTH", "note_title", "plain_text_markdown"]

MAX_TITLE_LENGTH = 120

_BLOCK_END = re.compile(r"</(?:p|div|h[1-6]|li|tr|blockquote|pre|table|ul|ol)\s*>|<br\s*/?>|<hr\s*/?>", re.I)
_ACTIVE_BLOCK = re.compile(r"<(script|style|noscript|template|iframe|object|svg)\b.*?</\1\s*>", re.I | re.S)
_TAG = re.compile(r"<[^>]*>")
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def plain_text_markdown(html: str) -> str:
    """Fast tag-stripping conversion for very large notes: paragraphs kept, markup dropped."""
    text = _ACTIVE_BLOCK.sub(" ", _COMMENT.sub(" ", html))
    text = _BLOCK_END.sub("\n\n", text)
    text = html_lib.unescape(_TAG.sub("", text))
    paragraphs = (" ".join(p.split()) for p in re.split(r"\n\s*\n", text))
    return "\n\n".join(p for p in paragraphs if p) + "\n"


_TITLE_BLOCK_END = re.compile(r"(</(?:h\d|p|div)+>)")
_TITLE_BR = re.compile(r"<br\s*/?>")
_FIRST_LINE_OPEN_TAG = re.compile(r"^<[^>\n]+[^/]>\n")


def note_title(html: str, *, stop_at_line_break: bool = False) -> str:
    """Zotero's ``noteToTitle``: first line of the note's text, at most 120 characters.

    Follows zotero/utilities ``utilities_item.js`` step by step (block ends become
    line breaks, ``<br>`` a space, tags stripped, entities decoded), after first
    removing script/style blocks so that active content never becomes a title.
    """
    orig = html
    text = _ACTIVE_BLOCK.sub("", _COMMENT.sub("", html)).strip()
    text = _TITLE_BLOCK_END.sub(r"\1\n", text)
    text = _TITLE_BR.sub("\n" if stop_at_line_break else " ", text)
    text = html_lib.unescape(_TAG.sub("", text))
    if _FIRST_LINE_OPEN_TAG.match(orig):
        text = text.strip()
    title = text[:MAX_TITLE_LENGTH]
    newline = title.find("\n")
    if newline > -1:
        title = title[:newline]
    return title.strip()
