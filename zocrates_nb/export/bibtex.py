"""BibTeX for an answer's references, written through pybtex (this module owns pybtex).

pybtex writes the entries and encodes LaTeX's special characters (``&``, ``%``, ``_`` …) in text
fields; identifiers (DOI, URL) are written verbatim, as BibLaTeX and Pandoc read them, because an
escaped ``\\_`` inside a DOI would no longer resolve.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pybtex.database import BibliographyData, Entry, Person
from pybtex.database.output.bibtex import Writer

__all__ = ["bibtex"]

#: CSL type -> BibTeX entry type, and the field the CSL container goes into for that entry type
_ENTRY_TYPES = {
    "article-journal": ("article", "journal"),
    "article-magazine": ("article", "journal"),
    "article-newspaper": ("article", "journal"),
    "book": ("book", "publisher"),
    "chapter": ("incollection", "booktitle"),
    "paper-conference": ("inproceedings", "booktitle"),
    "thesis": ("phdthesis", "school"),
    "report": ("techreport", "institution"),
}
_VERBATIM = frozenset({"doi", "url"})


class _VerbatimIdWriter(Writer):
    """pybtex's writer, except that DOI and URL fields are written as they are."""

    def _write_field(self, stream: Any, type: str, value: str) -> None:  # noqa: A002 - pybtex's signature
        if type.lower() in _VERBATIM:
            self.check_braces(value)
            stream.write(f",\n    {type} = {{{value}}}")
        else:
            super()._write_field(stream, type, value)


def _safe(text: str) -> str:
    """``text`` fit for a BibTeX field: a literal backslash spelled ``\\textbackslash{}`` (a bare one would
    escape the field's closing delimiter), and braces dropped when they do not pair up (pybtex refuses them)."""
    depth = 0
    for ch in text:
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            break
    paired = text if depth == 0 else text.replace("{", "").replace("}", "")
    return paired.replace("\\", "\\textbackslash{}").replace("$", "\\$")  # a bare $ starts maths


#: a word BibTeX's name parser keeps as it is: letters, with inner apostrophes, hyphens or periods
_PLAIN_WORD = re.compile(r"[^\W\d_]+(?:['’\-.][^\W\d_]+)*\.?")


def _name_part(text: str, *, family: bool = False) -> str:
    """A name part for pybtex, braced where BibTeX's name rules would split or drop it: a LaTeX command
    (Pandoc's reader fails on ``"Doe, \\%"`` and reads ``"Doe, {\\%}"``), an "and" or a comma (they split
    authors), a family name of several words unless it starts with a particle ("van der Berg"), and one
    with a word that is not plain letters (BibTeX's name parser splits or drops such words)."""
    safe = _safe(text if family else text.replace(",", " "))  # a comma in a given name would read as "Jr"
    words = safe.split()
    needs_braces = (
        "\\" in str(codecs.encode(safe, "ulatex+utf8"))
        or re.search(r"\band\b|,", safe, re.IGNORECASE)
        or (family and len(words) > 1 and not words[0][:1].islower())
        or (family and not all(_PLAIN_WORD.fullmatch(word) for word in words))
    )
    return f"{{{safe}}}" if needs_braces else safe


def _person(name: Mapping[str, str]) -> Person:
    if name.get("literal"):
        return Person(f"{{{_safe(name['literal'])}}}")  # a consortium: braces keep it one "last name"
    return Person(last=_name_part(name.get("family", ""), family=True), first=_name_part(name.get("given", "")))


def _entry(item: Mapping[str, Any]) -> Entry:
    entry_type, container_field = _ENTRY_TYPES.get(str(item.get("type")), ("misc", "howpublished"))
    fields: list[tuple[str, str]] = [("title", _safe(str(item.get("title") or "")))]
    container = item.get("container-title") or item.get("publisher")
    if container:
        fields.append((container_field, _safe(str(container))))
    date_parts = ((item.get("issued") or {}).get("date-parts") or [[]])[0]
    if date_parts:
        fields.append(("year", str(date_parts[0])))
    if len(date_parts) > 1:
        fields.append(("month", str(date_parts[1])))
    if item.get("DOI"):
        fields.append(("doi", str(item["DOI"])))
    if item.get("URL"):
        fields.append(("url", str(item["URL"])))
    persons = {"author": [_person(n) for n in item.get("author") or ()]} if item.get("author") else {}
    return Entry(entry_type, fields=fields, persons=persons)


def bibtex(items: Sequence[Mapping[str, Any]]) -> str:
    """A ``.bib`` file's text for CSL-JSON ``items`` (each ``id`` becomes the entry's citation key)."""
    data = BibliographyData(entries={str(item["id"]): _entry(item) for item in items})
    stream = io.StringIO()
    _VerbatimIdWriter(encoding="UTF-8").write_stream(data, stream)
    return stream.getvalue()
