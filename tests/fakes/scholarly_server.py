"""OpenAlex (``/works?search=``) and arXiv (``/api/query``) on 127.0.0.1, in their real response shapes.

OpenAlex: ``{"meta": {...}, "results": [work]}`` with ``doi`` as a https://doi.org/ URL,
``publication_year``, ``authorships[].author.display_name`` and the abstract as an
``abstract_inverted_index``. arXiv: an Atom 1.0 feed with ``opensearch`` counts and
``arxiv:doi`` extensions. Requests are recorded for assertions.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlparse
from xml.sax.saxutils import escape

from tests.fakes.loopback import LoopbackServer


def inverted_index(text: str) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    for position, word in enumerate(text.split()):
        index.setdefault(word, []).append(position)
    return index


def openalex_work(n: int, title: str, authors: list[str], year: int, doi: str | None, abstract: str) -> dict:
    return {
        "id": f"https://openalex.org/W{4000000000 + n}",
        "doi": f"https://doi.org/{doi}" if doi else None,
        "title": title,
        "display_name": title,
        "publication_year": year,
        "publication_date": f"{year}-03-01",
        "type": "article",
        "cited_by_count": 10 * n,
        "authorships": [
            {
                "author_position": "first" if i == 0 else "middle",
                "author": {"id": f"https://openalex.org/A{n}{i}", "display_name": name},
                "institutions": [],
            }
            for i, name in enumerate(authors)
        ],
        "primary_location": {
            "is_oa": True,
            "landing_page_url": f"https://doi.org/{doi}" if doi else None,
            "source": {"display_name": "Journal of Tests"},
        },
        "abstract_inverted_index": inverted_index(abstract),
    }


def arxiv_entry(arxiv_id: str, title: str, authors: list[str], year: int, abstract: str, doi: str | None = None) -> str:
    doi_xml = f"<arxiv:doi>{escape(doi)}</arxiv:doi>" if doi else ""
    names = "".join(f"<author><name>{escape(a)}</name></author>" for a in authors)
    return (
        f"<entry><id>http://arxiv.org/abs/{arxiv_id}</id><updated>{year}-01-02T00:00:00Z</updated>"
        f"<published>{year}-01-01T00:00:00Z</published><title>{escape(title)}</title>"
        f"<summary>  {escape(abstract)}\n</summary>{names}{doi_xml}"
        f'<link href="http://arxiv.org/abs/{arxiv_id}" rel="alternate" type="text/html"/>'
        f'<arxiv:primary_category term="q-bio.GN" scheme="http://arxiv.org/schemas/atom"/></entry>'
    )


def arxiv_feed(entries: list[str]) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
        'xmlns:arxiv="http://arxiv.org/schemas/atom">'
        '<title type="html">ArXiv Query</title><id>http://arxiv.org/api/x</id>'
        f"<opensearch:totalResults>{len(entries)}</opensearch:totalResults>"
        "<opensearch:startIndex>0</opensearch:startIndex>"
        f"<opensearch:itemsPerPage>{len(entries)}</opensearch:itemsPerPage>{''.join(entries)}</feed>"
    )


class FakeScholarly(LoopbackServer):
    """``with FakeScholarly(works=[...], arxiv=[...]) as s:`` then use ``s.openalex_url`` / ``s.arxiv_url``."""

    def __init__(
        self, works: list[dict] | None = None, arxiv: list[str] | None = None, fail: set[str] | None = None
    ) -> None:
        self.works = works or []
        self.arxiv = arxiv or []
        self.fail = fail or set()  # {"openalex", "arxiv"} → answer 503
        #: DOIs that /works/doi:<doi> finds besides the search results' own (papers that exist, not returned)
        self.known_dois: set[str] = set()
        self.requests: list[tuple[str, dict]] = []

    @property
    def base(self) -> str:
        return self.origin

    openalex_url = property(lambda self: self.base + "/openalex")
    arxiv_url = property(lambda self: self.base + "/arxiv")


class _Handler(BaseHTTPRequestHandler):
    fake: FakeScholarly

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        url = urlparse(self.path)
        params = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.fake.requests.append((url.path, params))
        if url.path == "/openalex/works":
            if "openalex" in self.fake.fail:
                return self._send(503, "application/json", b'{"error": "unavailable"}')
            limit = int(params.get("per-page", 25))
            body = {
                "meta": {"count": len(self.fake.works), "db_response_time_ms": 12, "page": 1, "per_page": limit},
                "results": self.fake.works[:limit],
                "group_by": [],
            }
            return self._send(200, "application/json", json.dumps(body).encode())
        if url.path.startswith("/openalex/works/doi:"):
            return self._work_by_doi(url.path.split("/works/doi:", 1)[1].lower())
        if url.path == "/arxiv/api/query":
            if "arxiv" in self.fake.fail:
                return self._send(503, "text/plain", b"unavailable")
            limit = int(params.get("max_results", 10))
            return self._send(200, "application/atom+xml", arxiv_feed(self.fake.arxiv[:limit]).encode())
        self._send(404, "application/json", b'{"error": "not found"}')

    def _work_by_doi(self, doi: str) -> None:
        """OpenAlex's single-work endpoint: the work, or its 404 body for a DOI it does not know."""
        if "openalex" in self.fake.fail:
            return self._send(503, "application/json", b'{"error": "unavailable"}')
        found = next((w for w in self.fake.works if (w.get("doi") or "").lower().endswith("/" + doi)), None)
        if found is None and doi in self.fake.known_dois:
            found = openalex_work(99, "A paper that exists", ["Ann Example"], 2020, doi, "Exists.")
        if found is None:
            body = {"error": "NotFoundError", "message": f"https://doi.org/{doi} is not a valid OpenAlex ID"}
            return self._send(404, "application/json", json.dumps(body).encode())
        return self._send(200, "application/json", json.dumps(found).encode())

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


FakeScholarly.handler_class = _Handler
