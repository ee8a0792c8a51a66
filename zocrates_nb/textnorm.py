"""Make user-typed text safe for every store and library that must encode it.

Why: a query or question can carry lone surrogates (``"\\ud800"`` from a JavaScript
front-end, or ``surrogateescape``-decoded non-UTF-8 bytes from a shell argument) and
NULs. The tokenizer, SQLite and the HTTP client all refuse such text with a
traceback; replacing the invalid code points keeps everything else searchable.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def without_surrogates(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (a valid pair becomes its character)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def clean_text(text: str) -> str:
    """``text`` with lone surrogates → U+FFFD (pairs → their character) and control characters → spaces."""
    if text.isascii():
        return _CONTROL.sub(" ", text)
    fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return _CONTROL.sub(" ", fixed)


def normalize_doi(doi: str | None) -> str | None:
    """Lower-case DOI without the https://doi.org/ prefix (how OpenAlex and Zotero differ)."""
    if not doi:
        return None
    doi = re.sub(r"^(?:https?://(?:dx\.)?doi\.org/|doi:)", "", doi.strip(), flags=re.IGNORECASE)
    return doi.lower() or None
