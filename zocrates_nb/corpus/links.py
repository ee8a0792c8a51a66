"""Note -> paper links, found deterministically from what a note already says (issue 24, item 1).

A note is about papers in more ways than being their child: it cites them with Zotero's citation
markup (``data-citation`` item URIs; a quoted annotation's ``citationItem`` carries its paper's URI
the same way), relates them in Zotero's "Related" list (``dc:relation``), names them as "Author et
al., Year", gives their DOI, writes out their title, or names the tool a paper's title or abstract
introduces ("Cell2location", "SPOTlight: …", "… with Harmony", "scVI models…"). These links are the
bridge a paraphrased question crosses: the paper's words match the question, and the note that links
to the paper inherits a share of that match (index/rank/bridge.py). Everything here is pure (text
and paper records in, links out). :class:`PaperCatalogue` is built once per sync, so finding a
note's links costs a pass over its words, not a pass over the library. No LLM, no guessing: a link
needs an exact key, DOI, surname-and-year, full title or a name that exactly one paper's title
gives.
"""

from __future__ import annotations

import html as html_lib
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["PaperLink", "PaperCatalogue", "abstract_name", "find_paper_links", "plain_text", "title_name", "REASONS"]

#: a Zotero item URI inside data-citation JSON: .../items/ABCD2345, URL-encoded in note HTML (%2Fitems%2F)
_ITEM_URI = re.compile(r"(?:/|%2[Ff])items(?:/|%2[Ff])([A-Z0-9]{8})\b")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_COMBINING = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>]+", re.IGNORECASE)
#: "Kleshchevnikov et al., 2022", "Luecken and Theis, 2019", "Ståhl 2016", "Biancalani 2021"
_AUTHOR_YEAR = re.compile(
    r"([^\W\d_][\w'\-]+)(?:\s+et al\.?|\s+(?:and|&)\s+[^\W\d_][\w'\-]+)?,?\s+\(?((?:19|20)\d\d)\b"
)
#: shorter titles are too often ordinary phrases to count as a mention
_MIN_TITLE_WORDS = 4
#: a tool's name as a title gives it: "SPOTlight: seeded NMF…", "… single-cell data with Harmony"
_LEADING_NAME = re.compile(r"^\s*([^\W_][\w\-]*[\w])\s*:")
_TRAILING_NAME = re.compile(r"\b(?:with|using|by)\s+([^\W_][\w\-]*[\w])\W*$")
_NAME_TOKEN = re.compile(r"[^\W_][\w\-]*[\w]|[^\W_]")
_TAG = re.compile(r"<[^>]+>")
_MIN_NAME_CHARS = 4

#: the reasons, strongest first (an explicit citation outranks a name found in the text)
REASONS = ("citation", "related", "doi", "author-year", "title", "name")


@dataclass(frozen=True)
class PaperLink:
    """One note -> paper link and why it exists (shown by ``explain``)."""

    paper_key: str
    reason: str


def _fold(text: str) -> str:
    """Lower case without accents, so "Ståhl" in a note matches "Stahl" in metadata and back."""
    if text.isascii():
        return text.lower()
    return _COMBINING.sub("", unicodedata.normalize("NFKD", text)).lower()


def _surname(creator: str) -> str:
    """Zotero's "Last, First" (or a single-field name) -> folded last name."""
    return _fold(creator.split(",", 1)[0].strip().split()[-1]) if creator.strip() else ""


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", _fold(text)))


def _author_years(text: str) -> set[tuple[str, str]]:
    """("Biancalani", "2021") for each "Surname [et al.], Year" in ``text``.

    The pattern runs only just before each year it finds: over a whole note it cost most of the
    time of finding a note's links (benchmarks/bench_note_links.py)."""
    found: set[tuple[str, str]] = set()
    for year in _YEAR.finditer(text):
        start = text.rfind(" ", 0, max(0, year.start() - 80)) + 1  # from a word's start, never mid-name
        window = text[start : year.end()]
        found.update(_AUTHOR_YEAR.findall(window))
    return found


def _field(paper: Any, name: str) -> Any:
    return paper.get(name) if isinstance(paper, Mapping) else getattr(paper, name, None)


def plain_text(html: str) -> str:
    """A note's words without its markup (enough to find names in; conversion makes the real Markdown)."""
    return html_lib.unescape(_TAG.sub(" ", html or ""))


#: a capitalised abstract opening that is a sentence's start, not a tool's name
_NOT_NAMES = frozenset({"the", "this", "these", "a", "an", "we", "our", "here", "in", "using", "each", "both"})


def _distinctive(word: str) -> bool:
    """A word shaped like a tool's name whatever its case: a capital after the first letter or a digit
    ("SpaGCN", "Cell2location", "PAGA"; not "Cross-Species"), a lowercase start ("scVI", "sctransform"),
    or a platform's "-seq" ("Drop-seq")."""
    inner = re.sub(r"-[A-Z]", "-", word[1:])
    return (
        any(c.isupper() or c.isdigit() for c in inner)
        or word[0].islower()
        or word.endswith("+")
        or word.lower().endswith("-seq")
    )


def _is_name(word: str) -> bool:
    """A tool's name, not an everyday word: :func:`_distinctive`, or capitalised and at least
    ``_MIN_NAME_CHARS`` long (a title's "… with Harmony" or "Giotto: …" says it is a name)."""
    return len(word) >= _MIN_NAME_CHARS and (word[0].isupper() or _distinctive(word))


def title_name(title: str) -> str | None:
    """The name a paper's title gives a tool or method, if it gives one (see the module docstring)."""
    for pattern in (_LEADING_NAME, _TRAILING_NAME):
        match = pattern.search(title)
        if match and _is_name(match.group(1)):
            return match.group(1)
    first = title.split()[0].strip(",.;:") if title.split() else ""
    return first if len(first) >= _MIN_NAME_CHARS and first[0].isupper() and _distinctive(first) else None


def abstract_name(abstract: str) -> str | None:
    """The name an abstract opens with: "scVI models…", "Stereoscope models…", "RCTD (robust…) fits".

    A distinctive word (:func:`_distinctive`) or, capitalised, one followed by a verb ("Tangram
    learns", "Scanpy is"); "The authors…", "Profiling several…" and "Single-cell RNA-seq of…" are not names.
    """
    words = abstract.split()[:2]
    if len(words) < 2:
        return None
    first = words[0].rstrip(",.;:")
    if len(first) < 3 or first.lower() in _NOT_NAMES or not first[0].isalpha():
        return None
    if _distinctive(first) and not first.islower() or first.isupper():
        return first
    verb = words[1].rstrip(",.;:")
    if first[0].isupper() and len(first) >= _MIN_NAME_CHARS and verb.islower() and verb.endswith("s"):
        return first
    if first.islower() and verb.islower() and verb.endswith("s"):  # "sctransform models", "scvi-tools packages"
        return first
    return None


#: "The paper introduces the Xenium in situ platform", "commercialised as CosMx"
_INTRODUCED = re.compile(
    r"\b(?:introduces|presents|describes|commerciali[sz]ed as|called|named)\s+(?:the\s+)?([A-Z][\w\-+]*)"
)


def introduced_name(abstract: str) -> str | None:
    """The name an abstract's first sentence introduces ("introduces the Xenium …", "commercialised as CosMx")."""
    match = _INTRODUCED.search(abstract.split(". ")[0])
    return match.group(1) if match and _is_name(match.group(1)) else None


def _name_key(name: str) -> str:
    """How a name is matched: distinctive names in any case ("scanpy" names Scanpy), others exactly."""
    return name.casefold() if _distinctive(name) or name.isupper() else name


class PaperCatalogue:
    """The known papers, indexed by everything a note can name them by (built once per sync).

    ``papers``: records (mappings or objects) with ``key``, ``title``, ``doi``, ``creators``
    ("Last, First") and ``year``.
    """

    def __init__(self, papers: Iterable[Any]) -> None:
        self.keys: set[str] = set()
        self.titles: dict[str, str] = {}
        self.by_doi: dict[str, str] = {}
        self.by_author_year: dict[tuple[str, str], list[str]] = {}
        self.by_opening: dict[str, list[tuple[str, str]]] = {}  # a title's first 4 words -> (title, key)
        names: dict[str, list[str]] = {}
        for paper in papers:
            key = str(_field(paper, "key") or "")
            if not key:
                continue
            title = str(_field(paper, "title") or "")
            self.keys.add(key)
            self.titles[key] = title
            if _field(paper, "doi"):
                self.by_doi[str(_field(paper, "doi")).lower()] = key
            creators = list(_field(paper, "creators") or [])
            first = _surname(str(creators[0])) if creators else ""
            if first:
                self.by_author_year.setdefault((first, str(_field(paper, "year") or "")), []).append(key)
            words = _words(title)
            if len(words.split()) >= _MIN_TITLE_WORDS:
                self.by_opening.setdefault(" ".join(words.split()[:_MIN_TITLE_WORDS]), []).append((words, key))
            abstract = str(_field(paper, "abstract") or "")
            for name in {title_name(title), abstract_name(abstract), introduced_name(abstract)} - {None}:
                names.setdefault(_name_key(str(name)), []).append(key)
        self.openers = {opening.split(" ", 1)[0] for opening in self.by_opening}
        in_titles: dict[str, set[str]] = {}
        for key, title in self.titles.items():
            for word in _NAME_TOKEN.findall(title):
                in_titles.setdefault(_name_key(word), set()).add(key)
        #: a name links only when exactly one paper gives it and no other paper's title holds it
        #: (so "Seurat", which two abstracts open with, and "RNA", in many titles, link nothing)
        self.by_name = {
            name: keys[0]
            for name, keys in names.items()
            if len(set(keys)) == 1 and in_titles.get(name, set()) <= {keys[0]}
        }

    def links(self, html: str, text: str, exclude: Iterable[str] = (), related: Iterable[str] = ()) -> list[PaperLink]:
        """Links from one note (its raw HTML and its plain text), strongest reason per paper.

        ``exclude``: keys not to link (a child note's own parent, which it already rides with).
        ``related``: the keys Zotero's "Related" list ties to the note (``dc:relation``). The order is
        stable (reason, then key) so a re-sync stores the same rows.
        """
        found: dict[str, str] = {}
        for key, reason in self._mentions(html, text, related):
            if key in self.keys and (key not in found or REASONS.index(reason) < REASONS.index(found[key])):
                found[key] = reason
        skip = set(exclude)
        return sorted(
            (PaperLink(k, r) for k, r in found.items() if k not in skip),
            key=lambda link: (REASONS.index(link.reason), link.paper_key),
        )

    def _mentions(self, html: str, text: str, related: Iterable[str]) -> Iterator[tuple[str, str]]:
        """Every (paper key, reason) the note gives, weakest and strongest alike (``links`` keeps the strongest)."""
        yield from ((key, "citation") for key in _ITEM_URI.findall(html))  # URL-encoded in note HTML
        yield from ((str(key), "related") for key in related)
        for doi in _DOI.findall(html + " " + text):
            if doi.rstrip(".,;)").lower() in self.by_doi:
                yield self.by_doi[doi.rstrip(".,;)").lower()], "doi"
        for name, year in _author_years(text):
            yield from ((key, "author-year") for key in self.by_author_year.get((_fold(name), year), ()))
        yield from ((key, "title") for key in self._titled(_words(text).split()))
        for token in set(_NAME_TOKEN.findall(text)):
            for form in {token, token.casefold()}:
                if form in self.by_name and (form == token or _name_key(token) == form):
                    yield self.by_name[form], "name"

    def _titled(self, words: list[str]) -> Iterator[str]:
        """The papers whose whole title (at least ``_MIN_TITLE_WORDS`` words) the note writes out."""
        body = f" {' '.join(words)} "
        for i in range(max(0, len(words) - _MIN_TITLE_WORDS + 1)):
            if words[i] in self.openers:
                for title, key in self.by_opening.get(" ".join(words[i : i + _MIN_TITLE_WORDS]), ()):
                    if f" {title} " in body:
                        yield key


def find_paper_links(html: str, text: str, papers: Iterable[Mapping]) -> list[PaperLink]:
    """Links from one note (its raw HTML and its plain text) to the known ``papers`` (see :class:`PaperCatalogue`)."""
    return PaperCatalogue(papers).links(html, text)
