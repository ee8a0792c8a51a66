"""Remove internal Zotero keys from text before it reaches the researcher.

The tools show the model keys (``[Note Key: K, Parent Paper Key: P]`` headers,
``read_document("K")`` hints) because it needs them to call tools. Models echo
them back in headings, brackets, code spans and links. A researcher should see
titles and author-year citations instead, so every key *of the corpus* (the
``key_map``) is replaced by its display text; every other character is left
exactly as it was. Ordinary upper-case words that are not corpus keys stay.

All patterns are single-line, so cleaning line by line (while streaming) gives
the same result as cleaning the whole text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

_K = r"[23456789ABCDEFGHIJKLMNPQRSTUVWXYZ]{8}"
_NOT_WORD_BEFORE = r"(?<![A-Za-z0-9_])"
_NOT_WORD_AFTER = r"(?![A-Za-z0-9_])"
_NONE = r"(?:None|null|none|—|-|n/a)"

# [Note Key: K, Parent Paper Key: P] / [Note Key: K] / [Paper Key: K] / [Key: K] (optionally **bold**)
_HEADER_RE = re.compile(
    rf"\[[ \t]*(?:\*\*)?(?:(?:Note|Paper|Item|Document)[ \t]+)?Key[ \t]*:[ \t]*(?P<key>{_K})"
    rf"(?:[ \t]*[,;][ \t]*(?:Parent[ \t]+)?(?:Paper|Item)[ \t]+Key[ \t]*:[ \t]*(?:(?P<parent>{_K})|{_NONE}))?(?:\*\*)?[ \t]*\]"  # noqa: E501
)
# [Annotation on Paper Key: P, p. 12] / [Annotation on PDF Key: A] (the annotations' evidence header)
_ANNOTATION_HEADER_RE = re.compile(
    rf"\[[ \t]*(?:\*\*)?Annotation[ \t]+on[ \t]+(?P<on>Paper|PDF)[ \t]+Key[ \t]*:[ \t]*(?P<key>{_K})"
    r"(?P<page>[ \t]*,[ \t]*pp?\.[ \t]*[^\]\n]{1,20})?(?:\*\*)?[ \t]*\]"
)
# [link text](K) and [link text](zotero://select/library/items/K)
_LINK_RE = re.compile(
    rf"\[(?P<text>[^\]\n]*)\]\([ \t]*(?:zotero://select/(?:library|groups/\d+)/items/)?"
    rf"(?P<key>{_K})[ \t]*\)"
)
# `K`, `read_document("K")`, `read_document(key="K", section=…)`, `get_document_toc("K")`
_CALL = rf"(?:read_document|get_document_toc)\([ \t]*(?:key[ \t]*=[ \t]*)?[\"']?(?P<key>{_K})[\"']?(?:[ \t]*,[^)\n]*)?[ \t]*\)"  # noqa: E501
_CODE_RE = re.compile(rf"`[ \t]*(?:{_CALL}|(?P<bare>{_K}))[ \t]*`")
_CALL_RE = re.compile(_CALL)
# "key K", "key: K", "(key=K)"
_KEYWORD_RE = re.compile(rf"{_NOT_WORD_BEFORE}[Kk]ey(?:[ \t]*[:=][ \t]*|[ \t]+)(?P<key>{_K}){_NOT_WORD_AFTER}")
_BARE_RE = re.compile(rf"{_NOT_WORD_BEFORE}(?P<key>{_K}){_NOT_WORD_AFTER}")


def clean_user_facing_synthesis(text: str, key_map: Mapping[str, str]) -> str:
    """Replace every corpus key (and the provenance syntax around it) with its title / citation.

    ``key_map`` maps each corpus key to what a reader should see instead, e.g.
    ``"*Title* (Ståhl et al., 2016)"`` for a paper and ``"“Note title”"`` for a note.
    Keys missing from ``key_map`` are left alone: they are not ours.
    """
    if not text:
        return text

    def known(match: re.Match[str], group: str = "key") -> bool:
        return match.group(group) in key_map

    def header(match: re.Match[str]) -> str:
        if not known(match):
            return match.group(0)
        key, parent = match.group("key"), match.group("parent")
        if parent is None:
            return f"[{key_map[key]}]"
        if parent in key_map:
            return f"[{key_map[key]}, on {key_map[parent]}]"
        return match.group(0).replace(key, key_map[key])  # a parent that is not ours stays

    def link(match: re.Match[str]) -> str:
        if not known(match):
            return match.group(0)
        label = match.group("text").strip()
        if not label or label.strip("`") in key_map:
            return key_map[match.group("key")]
        return match.group("text")

    def code(match: re.Match[str]) -> str:
        key = match.group("key") or match.group("bare")
        return key_map[key] if key in key_map else match.group(0)

    def replace_key(match: re.Match[str]) -> str:
        return key_map[match.group("key")] if known(match) else match.group(0)

    text = _ANNOTATION_HEADER_RE.sub(lambda match: _annotation_header(match, key_map), text)
    text = _HEADER_RE.sub(header, text)
    text = _CODE_RE.sub(code, text)
    text = _LINK_RE.sub(link, text)
    text = _CALL_RE.sub(replace_key, text)
    text = _KEYWORD_RE.sub(replace_key, text)
    return _BARE_RE.sub(replace_key, text)


def _annotation_header(match: re.Match[str], key_map: Mapping[str, str]) -> str:
    """``[Annotation on Paper Key: P, p. 12]`` → ``[annotation on *Title* (Author, Year), p. 12]``."""
    page = (match.group("page") or "").strip().lstrip(",").strip()
    page = f", {page}" if page else ""
    if match.group("on") == "PDF":  # an attachment key: never the reader's business
        return f"[annotation on a PDF{page}]"
    key = match.group("key")
    return f"[annotation on {key_map[key]}{page}]" if key in key_map else match.group(0)


#: the name the agents and tests used before it became public; kept importable
_clean_user_facing_synthesis = clean_user_facing_synthesis


def contains_corpus_key(text: str, keys: set[str] | Mapping[str, str]) -> bool:
    """True when any corpus key appears anywhere in ``text`` (as a token)."""
    return any(match.group("key") in keys for match in _BARE_RE.finditer(text or ""))


def candidate_keys(text: str) -> set[str]:
    """Tokens of ``text`` shaped like Zotero keys (the caller checks which belong to the corpus)."""
    return {match.group("key") for match in _BARE_RE.finditer(text or "")}


class StreamCleaner:
    """Cleans streamed text in safe pieces so keys never reach the screen, even mid-stream.

    Text is held back from the last unfinished construct (an open ``[``, ``(`` or backtick on
    the current line, or a trailing "key") and otherwise released at whitespace.
    """

    def __init__(self, key_map: Mapping[str, str], emit: Callable[[str], None]) -> None:
        self.key_map = key_map
        self.emit = emit
        self._pending = ""

    def feed(self, piece: str) -> None:
        self._pending += piece
        cut = _safe_cut(self._pending)
        if cut > 0:
            ready, self._pending = self._pending[:cut], self._pending[cut:]
            self.emit(clean_user_facing_synthesis(ready, self.key_map))

    def flush(self) -> None:
        if self._pending:
            ready, self._pending = self._pending, ""
            self.emit(clean_user_facing_synthesis(ready, self.key_map))


_TRAILING_KEYWORD_RE = re.compile(r"(?:[Kk]ey\s*[:=]?\s*|read_document\(|get_document_toc\()$")


def _safe_cut(buffer: str) -> int:
    """Largest prefix length that can be cleaned on its own (0 when nothing is safe yet).

    Every pattern is single-line, so all complete lines are safe; within the last line
    we cut at whitespace where no bracket, parenthesis or code span is still open.
    """
    line_start = buffer.rfind("\n") + 1
    line = buffer[line_start:]
    for index in range(len(line) - 1, -1, -1):
        if line[index].isspace():
            prefix = line[: index + 1]
            if _balanced(prefix) and not _TRAILING_KEYWORD_RE.search(prefix.rstrip()):
                return line_start + index + 1
    return line_start


def _balanced(line: str) -> bool:
    return line.count("`") % 2 == 0 and line.count("[") <= line.count("]") and line.count("(") <= line.count(")")
