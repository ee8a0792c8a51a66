"""CSL-JSON items for the papers an answer cites, from the corpus's manifests and online candidates.

CSL-JSON is what Zotero, Pandoc's citeproc and Quarto read natively, so it is the one shape the
other formats are made from (``bibtex.py`` writes the same items as BibTeX). A ``Reference`` keeps
beside its CSL item the short citation the answer's text uses ("Ståhl et al., 2016"), which is how
``pandoc.py`` finds the places to put ``[@key]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zocrates_nb.export.citekeys import assign_citation_keys, generated_citation_key

__all__ = ["Reference", "citation_keys", "csl_items", "reference_from_manifest", "reference_from_online"]

#: Zotero item type -> CSL type (Zotero's own mapping for the common types; anything else is "article")
ZOTERO_TO_CSL = {
    "journalArticle": "article-journal",
    "magazineArticle": "article-magazine",
    "newspaperArticle": "article-newspaper",
    "book": "book",
    "bookSection": "chapter",
    "conferencePaper": "paper-conference",
    "preprint": "article",
    "thesis": "thesis",
    "report": "report",
    "webpage": "webpage",
    "blogPost": "post-weblog",
    "manuscript": "manuscript",
    "dataset": "dataset",
    "computerProgram": "software",
    "presentation": "speech",
    "patent": "patent",
    "document": "document",
}
_DATE = re.compile(r"(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?")


@dataclass(frozen=True)
class Reference:
    """One exportable item: its CSL data (without ``id``), the answer's short citation and its keys."""

    item_id: str  # the Zotero key, or "online:<doi or title>"
    short_citation: str  # "Ståhl et al., 2016": how the answer's text cites it
    csl: Mapping[str, Any] = field(repr=False)
    pinned_key: str = ""  # Better BibTeX / Zotero Citation Key, when the library has one

    @property
    def family_name(self) -> str:
        first = (self.csl.get("author") or [{}])[0]
        return str(first.get("family") or first.get("literal") or "")

    @property
    def year(self) -> int | None:
        parts = (self.csl.get("issued") or {}).get("date-parts") or [[None]]
        return parts[0][0] if parts and parts[0] else None


def _zotero_name(creator: str) -> dict[str, str]:
    """Zotero's "Last, First" -> CSL ``family``/``given``; a one-field name (a consortium) stays literal."""
    if "," in creator:
        family, given = (part.strip() for part in creator.split(",", 1))
        return {"family": family, "given": given} if given else {"family": family}
    return {"literal": creator.strip()}


def _display_name(name: str) -> dict[str, str]:
    """OpenAlex/arXiv's "First Last" -> CSL (the last word is the family name)."""
    words = name.split()
    if len(words) < 2:
        return {"literal": name.strip()}
    return {"family": words[-1], "given": " ".join(words[:-1])}


def _issued(date: str, year: int | None) -> dict[str, list[list[int]]] | None:
    if match := _DATE.search(date or ""):
        parts = [int(p) for p in match.groups() if p]
        if len(parts) > 1 and not 1 <= parts[1] <= 12:
            parts = parts[:1]
        return {"date-parts": [parts]}
    return {"date-parts": [[int(year)]]} if year else None


def _without_empty(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if v not in (None, "", [], {})}


def reference_from_manifest(manifest: Mapping[str, Any]) -> Reference:
    """A library paper's reference from its bundle manifest (``corpus.manifest(key)``)."""
    item_type = str(manifest.get("item_type") or "journalArticle")
    csl_type = ZOTERO_TO_CSL.get(item_type, "article")
    container = str(manifest.get("publication") or "")
    csl = _without_empty(
        {
            "type": csl_type,
            "title": manifest.get("title") or "",
            "author": [_zotero_name(c) for c in manifest.get("creators") or () if c.strip()],
            "issued": _issued(str(manifest.get("date") or ""), manifest.get("year")),
            "container-title": container if csl_type not in ("report", "thesis") else "",
            "publisher": container if csl_type in ("report", "thesis") else "",
            "DOI": manifest.get("doi") or "",
        }
    )
    return Reference(
        item_id=str(manifest["key"]),
        short_citation=str(manifest.get("citation") or ""),
        csl=csl,
        pinned_key=str(manifest.get("citation_key") or ""),
    )


def reference_from_online(candidate: Mapping[str, Any], short_citation: str) -> Reference:
    """An online candidate's reference (its evidence entry: title, authors, year, DOI, URL)."""
    doi = str(candidate.get("doi") or "")
    csl = _without_empty(
        {
            "type": "article" if candidate.get("arxiv_id") else "article-journal",
            "title": candidate.get("title") or "",
            "author": [_display_name(a) for a in candidate.get("authors") or () if a.strip()],
            "issued": _issued("", candidate.get("year")),
            "DOI": doi,
            "URL": "" if doi else candidate.get("url") or "",
        }
    )
    return Reference(
        item_id=f"online:{doi.lower() or candidate.get('title', '')}", short_citation=short_citation, csl=csl
    )


def citation_keys(references: Sequence[Reference]) -> dict[str, str]:
    """Item id -> citation key for these references (``citekeys.assign_citation_keys``)."""
    return assign_citation_keys(
        [
            {
                "id": r.item_id,
                "pinned": r.pinned_key,
                "generated": generated_citation_key(r.family_name, r.year, str(r.csl.get("title") or "")),
            }
            for r in references
        ]
    )


def csl_items(references: Sequence[Reference], keys: Mapping[str, str]) -> list[dict[str, Any]]:
    """The CSL-JSON list (each item's ``id`` is its citation key), in the references' order."""
    return [{"id": keys[r.item_id], **r.csl} for r in references]
