"""OpenAlex and arXiv search clients (httpx), for papers that are not in the library yet.

Both services are free and keyless. OpenAlex returns abstracts as an inverted
index (word → positions), rebuilt here; arXiv returns an Atom feed, parsed with
defusedxml because the XML comes from the network. Base URLs are constructor
arguments so tests point them at a loopback server that replays real shapes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import httpx
from defusedxml import ElementTree

from zocrates_nb.errors import ZocratesError
from zocrates_nb.textnorm import normalize_doi

OPENALEX_URL = "https://api.openalex.org"
ARXIV_URL = "https://export.arxiv.org"
_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"


class OnlineSearchError(ZocratesError):
    """OpenAlex / arXiv could not be searched (offline, blocked, or an unexpected reply)."""


@dataclass(frozen=True)
class Candidate:
    """A paper found online: enough metadata to judge it and to add it to Zotero."""

    title: str
    authors: tuple[str, ...] = ()
    year: int | None = None
    doi: str | None = None
    abstract: str | None = None
    url: str | None = None
    source: str = "openalex"  # "openalex" | "arxiv"
    arxiv_id: str | None = None
    cited_by: int | None = None

    @property
    def citation(self) -> str:
        first = self.authors[0].split()[-1] if self.authors else "Anon."
        who = (
            first
            if len(self.authors) <= 1
            else (f"{first} & {self.authors[1].split()[-1]}" if len(self.authors) == 2 else f"{first} et al.")
        )
        return f"{who}, {self.year}" if self.year else who

    def to_json(self) -> dict:
        return {
            "title": self.title,
            "authors": list(self.authors),
            "year": self.year,
            "doi": self.doi,
            "abstract": self.abstract,
            "url": self.url,
            "source": self.source,
            "arxiv_id": self.arxiv_id,
            "cited_by": self.cited_by,
            "citation": self.citation,
        }


def normalize_title(title: str | None) -> str:
    """Letters and digits only, lower-case: titles match across sources despite punctuation."""
    return re.sub(r"[^0-9a-z]+", " ", (title or "").lower()).strip()


def abstract_from_inverted_index(index: dict[str, list[int]] | None) -> str | None:
    """Rebuild OpenAlex's ``abstract_inverted_index`` into text."""
    if not index:
        return None
    positions = {pos: word for word, where in index.items() for pos in where}
    return " ".join(positions[i] for i in sorted(positions)) or None


@dataclass
class ScholarlySearch:
    """Searches OpenAlex then arXiv and merges the results (duplicates by DOI/title dropped)."""

    openalex_url: str = OPENALEX_URL
    arxiv_url: str | None = ARXIV_URL
    mailto: str | None = None  # OpenAlex's "polite pool" contact, if the user gives one
    timeout_s: float = 15.0
    _client: httpx.Client | None = field(default=None, repr=False)

    @classmethod
    def from_config(cls, config: dict) -> ScholarlySearch:
        online = config.get("online") or {}
        return cls(
            openalex_url=online.get("openalex_url") or OPENALEX_URL,
            arxiv_url=online.get("arxiv_url", ARXIV_URL),
            mailto=online.get("mailto"),
        )

    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(
                timeout=self.timeout_s,
                follow_redirects=True,
                headers={"User-Agent": "zocrates-nb (research workbench)"},
            )
        return self._client

    def _get(self, service: str, url: str, params: dict) -> httpx.Response:
        try:
            response = self.client().get(url, params=params)
        except httpx.HTTPError as exc:
            raise OnlineSearchError(
                f"Cannot reach {service} at {url} ({type(exc).__name__}).",
                "check the network connection; library answers still work offline",
            ) from exc
        if response.status_code != 200:
            raise OnlineSearchError(
                f"{service} answered {response.status_code} for {response.url}.",
                "try again later; if it persists the service may have changed its API",
            )
        return response

    def search_openalex(self, query: str, limit: int = 10) -> list[Candidate]:
        params: dict[str, Any] = {"search": query, "per-page": limit}
        if self.mailto:
            params["mailto"] = self.mailto
        response = self._get("OpenAlex", f"{self.openalex_url.rstrip('/')}/works", params)
        try:
            results = response.json().get("results", [])
        except ValueError as exc:
            raise OnlineSearchError("OpenAlex returned something that is not JSON.", "try again later") from exc
        out = []
        for work in results:
            title = work.get("title") or work.get("display_name")
            if not title:
                continue
            authors = tuple(a.get("author", {}).get("display_name") or "" for a in work.get("authorships") or [])
            location = work.get("primary_location") or {}
            out.append(
                Candidate(
                    title=title.strip(),
                    authors=tuple(a for a in authors if a),
                    year=work.get("publication_year"),
                    doi=normalize_doi(work.get("doi")),
                    abstract=abstract_from_inverted_index(work.get("abstract_inverted_index")),
                    url=location.get("landing_page_url") or work.get("doi") or work.get("id"),
                    source="openalex",
                    cited_by=work.get("cited_by_count"),
                )
            )
        return out

    def search_arxiv(self, query: str, limit: int = 10) -> list[Candidate]:
        if not self.arxiv_url:
            return []
        params = {"search_query": f"all:{query}", "start": 0, "max_results": limit}
        response = self._get("arXiv", f"{self.arxiv_url.rstrip('/')}/api/query", params)
        try:
            feed = ElementTree.fromstring(response.content)
        except ElementTree.ParseError as exc:
            raise OnlineSearchError("arXiv returned malformed XML.", "try again later") from exc
        out = []
        for entry in feed.findall(f"{_ATOM}entry"):
            title = " ".join((entry.findtext(f"{_ATOM}title") or "").split())
            if not title:
                continue
            entry_id = (entry.findtext(f"{_ATOM}id") or "").strip()
            published = entry.findtext(f"{_ATOM}published") or ""
            out.append(
                Candidate(
                    title=title,
                    authors=tuple(
                        " ".join((a.findtext(f"{_ATOM}name") or "").split()) for a in entry.findall(f"{_ATOM}author")
                    ),
                    year=int(published[:4]) if published[:4].isdigit() else None,
                    doi=normalize_doi(entry.findtext(f"{_ARXIV}doi")),
                    abstract=" ".join((entry.findtext(f"{_ATOM}summary") or "").split()) or None,
                    url=entry_id or None,
                    source="arxiv",
                    arxiv_id=entry_id.rsplit("/abs/", 1)[-1] if "/abs/" in entry_id else None,
                )
            )
        return out

    def resolve_doi(self, doi: str) -> bool | None:
        """Whether OpenAlex knows ``doi`` (``/works/doi:<doi>``): True, False on its 404, None when it
        could not be asked (offline, an error): the citation checker then says "not retrieved", not
        "does not exist"."""
        doi_key = normalize_doi(doi)
        if not doi_key:
            return False
        params = {"mailto": self.mailto} if self.mailto else {}
        try:
            response = self.client().get(f"{self.openalex_url.rstrip('/')}/works/doi:{doi_key}", params=params)
        except httpx.HTTPError:
            return None
        if response.status_code == 404:
            return False
        return True if response.status_code == 200 else None

    def search(self, query: str, limit: int = 10) -> list[Candidate]:
        """OpenAlex first, then arXiv; one entry per paper. Raises only when every service failed."""
        merged: list[Candidate] = []
        errors: list[OnlineSearchError] = []
        for search in (self.search_openalex, self.search_arxiv):
            try:
                merged.extend(search(query, limit))
            except OnlineSearchError as exc:
                errors.append(exc)
        if errors and not merged:
            raise errors[0]
        return dedupe_candidates(merged)[:limit]

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def dedupe_candidates(candidates: list[Candidate]) -> list[Candidate]:
    seen: set[str] = set()
    out = []
    for candidate in candidates:
        marks = {
            m for m in (candidate.doi and f"doi:{candidate.doi}", f"title:{normalize_title(candidate.title)}") if m
        }
        if marks & seen:
            continue
        seen |= marks
        out.append(candidate)
    return out
