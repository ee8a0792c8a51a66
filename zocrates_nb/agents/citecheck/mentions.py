"""Where an answer cites something: every title, author-year, note, key, DOI and quote, with its span.

The synthesizers are told to cite papers as *Title* (Author et al., Year, p. N), notes as the note
“Title”, and to quote in quotation marks; models also echo provenance headers and keys, write
"Author et al. (Year)" in running text, and paste DOIs. Each of those shapes is a ``Mention`` with
its place in the text, so the verifier can check it and mark it where it stands.

Text inside block quotes and code blocks is someone else's words (a passage quoted whole), not a
claim of the answer: nothing there is a mention except the block quote itself, which is a quote.
Pure functions over the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zocrates_nb.agents.citecheck.sources import author_year

__all__ = ["Mention", "find_mentions", "paragraph_of"]

_K = r"[23456789ABCDEFGHIJKLMNPQRSTUVWXYZ]{8}"
_PAGE = r"pp?\.\s*[\w]+(?:\s*[-–—]\s*[\w]+)?"
_PAGE_RE = re.compile(rf"(?:,|;)?\s*(?P<page>{_PAGE})\s*$")
_TRAILING_PAGE = re.compile(rf",\s*(?P<page>{_PAGE})")
# [Note Key: K, …], [Annotation on Paper Key: K, p. 12], `K`, read_document("K"), [text](K), key: K
_KEY_CONTEXTS = (
    re.compile(rf"\[[^\]\n]*?Key\s*:\s*(?P<key>{_K})[^\]\n]*?(?:,\s*(?P<page>{_PAGE}))?[^\]\n]*\]"),
    re.compile(rf"`[^`\n]*?(?<![A-Za-z0-9])(?P<key>{_K})(?![A-Za-z0-9])[^`\n]*`"),
    re.compile(rf"\[[^\]\n]*\]\(\s*(?:zotero://select/(?:library|groups/\d+)/items/)?(?P<key>{_K})\s*\)"),
    re.compile(rf"(?<![A-Za-z0-9_])[Kk]ey(?:\s*[:=]\s*|\s+)(?P<key>{_K})(?![A-Za-z0-9_])"),
)
_EMPHASIS = re.compile(r"(?<![*\w])(?P<mark>\*\*|\*|__|_)(?P<inner>[^*_\n]{3,300}?)(?P=mark)(?![*\w])")
_CURLY = re.compile(r"“(?P<inner>[^”\n]{2,400})”")
_STRAIGHT = re.compile(r'(?<![\w"])"(?P<inner>[^"\n]{8,400})"(?![\w"])')
_PAREN = re.compile(r"\((?P<inner>[^()\n]{4,240})\)")
# [Cable et al., 2022] — square brackets, but not a Markdown link's text or a provenance header
_BRACKETS = re.compile(r"\[(?P<inner>[^\[\]\n]{4,240})\](?![(\[])")
_SURNAME = r"[^\W\d_][^\W\d_'’\-]*(?:[-'’][^\W\d_]+)*"
_NARRATIVE = re.compile(
    rf"(?P<who>{_SURNAME}(?:\s+et\s+al\.?|\s+(?:&|and)\s+{_SURNAME})?)\s+\((?P<year>(?:1[5-9]|20)\d\d[a-z]?)"
    rf"(?:,\s*(?P<page>{_PAGE}))?\)"
)
_NOTE_WORD = re.compile(r"\bnotes?\s*(?:\*\*|\*|_)?$", re.IGNORECASE)
_DOI = re.compile(r"(?<![\w.])10\.\d{4,9}/[^\s\"<>]+")
_LEADING_WORDS = re.compile(r"^(?:see|e\.g\.|cf\.|i\.e\.|also|and)\s+", re.IGNORECASE)
_TAIL_SEPARATOR = re.compile(r"\s*(?:[,—–]|\s-)?\s*")
_QUOTE_WORDS = 4
#: a run of ``>`` lines: a passage shown as it was read
_BLOCK_QUOTE = re.compile(r"(?:^[ \t]*>[^\n]*(?:\n|$))+", re.MULTILINE)


@dataclass
class Mention:
    """One place the answer cites or quotes: ``kind`` is key, title, note, author_year, doi or quote."""

    kind: str
    start: int
    end: int
    text: str
    title: str | None = None
    author_year: tuple[str, str] | None = None
    page: str | None = None
    key: str | None = None
    doi: str | None = None
    quote: str | None = None
    #: a title followed by its author-year: surely a citation (a bare *emphasis* only if it names a source)
    explicit: bool = False
    #: where a failure is marked: after the whole "(A, 2020; B, 2021)" for a part of one
    mark_at: int | None = None
    #: the "(Author et al., Year, p. N)" it stands in, parentheses included: what a Zotero citation replaces
    paren: tuple[int, int] | None = None


def find_mentions(text: str) -> list[Mention]:
    """Every mention in ``text``, in order of position; none inside block quotes or code blocks."""
    text = text or ""
    hidden = _quoted_blocks(text)
    taken: list[tuple[int, int]] = list(hidden)
    found: list[Mention] = []
    for finder in (_keys, _titles, _narrative, _parenthetical, _dois, _quotes):
        for mention in finder(text):
            if not _overlaps(mention.start, mention.end, taken):
                found.append(mention)
                taken.append((mention.start, mention.end))
    found += _block_quotes(text)
    return sorted(found, key=lambda m: m.start)


def paragraph_of(text: str, position: int) -> tuple[int, int]:
    """(start, end) of the paragraph (text between blank lines) that holds ``position``."""
    before = text.rfind("\n\n", 0, position)
    start = 0 if before < 0 else before + 2
    end = text.find("\n\n", position)
    return start, len(text) if end < 0 else end


# -- finders -----------------------------------------------------------------------------------------
def _keys(text: str) -> list[Mention]:
    out = []
    for pattern in _KEY_CONTEXTS:
        for match in pattern.finditer(text):
            page = match.groupdict().get("page")
            out.append(
                Mention("key", match.start(), match.end(), match.group(0), key=match.group("key"), page=_page(page))
            )
    return out


def _titles(text: str) -> list[Mention]:
    """*Title* or “Title”, optionally with its (Author, Year[, p. N]) and a trailing ", p. N"."""
    out = []
    for pattern in (_EMPHASIS, _CURLY):
        for match in pattern.finditer(text):
            inner = match.group("inner").strip()
            if inner.endswith(":") or not any(c.isalpha() for c in inner):
                continue  # a label ("**Short answer:**"), not a title
            mention = Mention("title", match.start(), match.end(), match.group(0), title=_unquoted(inner))
            if _NOTE_WORD.search(text[max(0, match.start() - 12) : match.start()]):
                mention.kind, mention.explicit = "note", True
            if pattern is _EMPHASIS:
                _attach_tail(text, mention)
            else:  # “words” (Author, Year) is mostly a quote and its citation: the parenthesis stands alone
                _attach_page(text, mention)
            out.append(mention)
    return out


def _attach_tail(text: str, mention: Mention) -> None:
    """Extend a title over the author-year and page that follow it on the line."""
    rest = text[mention.end :]
    separator = _TAIL_SEPARATOR.match(rest)
    at = separator.end() if separator else 0
    cited = _PAREN.match(rest, at)
    if cited is not None and (parsed := _citation_part(cited.group("inner").split(";")[0])) is not None:
        mention.author_year, page = parsed
        mention.page = mention.page or page
        if ";" not in cited.group("inner"):  # a lone citation; a group "(A, 2020; B, 2021)" stays text
            mention.paren = (mention.end + cited.start(), mention.end + cited.end())
        mention.explicit, mention.end = True, mention.end + cited.end()
    elif (narrative := _NARRATIVE.match(rest, at)) is not None:
        mention.author_year = author_year(f"{narrative.group('who')}, {narrative.group('year')}")
        mention.page = _page(narrative.group("page"))
        mention.explicit, mention.end = True, mention.end + narrative.end()
    _attach_page(text, mention)


def _attach_page(text: str, mention: Mention) -> None:
    """Extend a citation over a ", p. 12" that follows it."""
    trailing = _TRAILING_PAGE.match(text, mention.end)
    if trailing is not None and not mention.page:
        mention.page, mention.end = _page(trailing.group("page")), trailing.end()
    mention.text = text[mention.start : mention.end]


def _narrative(text: str) -> list[Mention]:
    out = []
    for match in _NARRATIVE.finditer(text):
        cited = author_year(f"{match.group('who')}, {match.group('year')}")
        if cited is not None:
            out.append(
                Mention(
                    "author_year",
                    match.start(),
                    match.end(),
                    match.group(0),
                    author_year=cited,
                    page=_page(match.group("page")),
                )
            )
    return out


def _parenthetical(text: str) -> list[Mention]:
    """(Cable et al., 2022; Ståhl et al., 2016, p. 3) or [Cable et al., 2022]: one mention per part."""
    out = []
    for match in [*_PAREN.finditer(text), *_BRACKETS.finditer(text)]:
        offset = match.start("inner")
        for part in match.group("inner").split(";"):
            parsed = _citation_part(part)
            if parsed is not None:
                start = offset + len(part) - len(part.lstrip())
                out.append(
                    Mention(
                        "author_year",
                        start,
                        offset + len(part.rstrip()),
                        part.strip(),
                        author_year=parsed[0],
                        page=parsed[1],
                        mark_at=match.end(),
                        paren=(match.start(), match.end()),
                    )
                )
            offset += len(part) + 1
    return out


def _dois(text: str) -> list[Mention]:
    out = []
    for match in _DOI.finditer(text):
        doi = match.group(0).rstrip(".,;:")
        while doi.endswith(")") and doi.count(")") > doi.count("(") or doi.endswith("]"):
            doi = doi[:-1]
        out.append(Mention("doi", match.start(), match.start() + len(doi), doi, doi=doi.lower()))
    return out


def _quotes(text: str) -> list[Mention]:
    out = []
    for pattern in (_CURLY, _STRAIGHT):
        for match in pattern.finditer(text):
            inner = match.group("inner").strip()
            if len(inner.split()) >= _QUOTE_WORDS:
                out.append(Mention("quote", match.start(), match.end(), match.group(0), quote=inner))
    return out


def _block_quotes(text: str) -> list[Mention]:
    """Each run of ``>`` lines is one quote (a passage the answer shows as it was read)."""
    out = []
    for match in _BLOCK_QUOTE.finditer(text):
        body = re.sub(r"^[ \t]*>[ \t]?", "", match.group(0), flags=re.MULTILINE).strip()
        if len(body.split()) >= _QUOTE_WORDS:
            end = match.end() - (1 if match.group(0).endswith("\n") else 0)
            out.append(Mention("quote", match.start(), end, match.group(0), quote=body))
    return out


# -- helpers -----------------------------------------------------------------------------------------
def _citation_part(part: str) -> tuple[tuple[str, str], str | None] | None:
    """(("cable", "2022"), "3") from "see Cable et al., 2022, p. 3"; None when it is not a citation."""
    part = _LEADING_WORDS.sub("", part.strip())
    page = None
    if (found := _PAGE_RE.search(part)) is not None:
        page, part = _page(found.group("page")), part[: found.start()].strip()
    cited = author_year(part)
    return (cited, page) if cited is not None else None


def _page(raw: str | None) -> str | None:
    """ "12" or "12-14" from "p. 12" / "pp. 12–14"."""
    if not raw:
        return None
    return re.sub(r"\s*[-–—]\s*", "-", re.sub(r"^pp?\.\s*", "", raw.strip()))


def _unquoted(title: str) -> str:
    return title.strip().strip("“”\"'").strip()


def _quoted_blocks(text: str) -> list[tuple[int, int]]:
    """Spans of block quotes and fenced code: what the answer shows verbatim, not what it claims."""
    spans = [(m.start(), m.end()) for m in _BLOCK_QUOTE.finditer(text)]
    spans += [(m.start(), m.end()) for m in re.finditer(r"^```[^\n]*\n.*?^```", text, re.MULTILINE | re.DOTALL)]
    return spans


def _overlaps(start: int, end: int, taken: list[tuple[int, int]]) -> bool:
    return any(start < other_end and other_start < end for other_start, other_end in taken)
