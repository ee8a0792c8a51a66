"""online_synthesizer_agent: papers not yet in the library, each with a rationale for this researcher.

Candidates come from OpenAlex and arXiv (``online_clients``); those already in the
library (same DOI or same normalised title) are dropped before the model sees
them, so the model cannot "recommend" what the researcher already has. The
model writes the rationale; candidate metadata is quoted evidence, not
instructions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from zocrates_nb.agents.online_clients import Candidate, normalize_title
from zocrates_nb.agents.prompting import evidence_preamble, system_prompt, wrap_evidence
from zocrates_nb.protocols import ChatClient
from zocrates_nb.textnorm import normalize_doi

MAX_ABSTRACT_CHARS = 1_200


@dataclass
class LibraryIdentity:
    """DOIs and normalised titles of what the library already holds."""

    dois: set[str] = field(default_factory=set)
    titles: set[str] = field(default_factory=set)

    @classmethod
    def from_tools(cls, tools: Any, extra: Iterable[dict] = ()) -> LibraryIdentity:
        """The held papers kept by sync (corpus/held_papers.py) plus this turn's evidence.

        A data directory not synced since that table existed falls back to reading every paper manifest.
        """
        from zocrates_nb.corpus import held_papers

        identity = cls()
        corpus = getattr(tools, "corpus", None)
        paths = getattr(corpus, "paths", None)
        held = held_papers.load(paths.meta_db) if paths is not None else None
        if held is not None:
            for doi, title in held:
                identity.add(doi, title)
        elif corpus is not None and hasattr(corpus, "keys"):
            for key in corpus.keys(kind="paper"):
                manifest = corpus.manifest(key)
                identity.add(manifest.get("doi"), manifest.get("title"))
        for item in extra:
            if item.get("kind") == "paper":
                identity.add(item.get("doi"), item.get("title"))
        return identity

    def add(self, doi: str | None, title: str | None) -> None:
        if doi_key := normalize_doi(doi):
            self.dois.add(doi_key)
        if title_key := normalize_title(title):
            self.titles.add(title_key)

    def holds(self, candidate: Candidate) -> bool:
        return (candidate.doi is not None and candidate.doi in self.dois) or normalize_title(
            candidate.title
        ) in self.titles


@dataclass
class OnlineResult:
    text: str
    candidates: list[Candidate]
    skipped_in_library: int
    reply: Any = None


def candidate_block(number: int, candidate: Candidate, boundary: str) -> str:
    ident = f"DOI {candidate.doi}" if candidate.doi else (f"arXiv {candidate.arxiv_id}" if candidate.arxiv_id else "")
    meta = "; ".join(
        x
        for x in (", ".join(candidate.authors[:4]), str(candidate.year or "n.d."), ident, f"source {candidate.source}")
        if x
    )
    body = f"Title: {candidate.title}\n{meta}\nAbstract: {(candidate.abstract or 'none given')[:MAX_ABSTRACT_CHARS]}"
    return f"Candidate {number}:\n" + wrap_evidence(body, boundary, label=f"candidate={number}")


class OnlineSynthesizer:
    """Finds candidates online, drops those already in the library, asks the model for rationales."""

    def __init__(self, search: Any, llm: ChatClient, *, boundary: str, limit: int = 8) -> None:
        self.search, self.llm, self.boundary, self.limit = search, llm, boundary, limit

    def messages(self, question: str, candidates: list[Candidate], profile_context: str) -> list[dict]:
        blocks = "\n\n".join(candidate_block(i, c, self.boundary) for i, c in enumerate(candidates, 1))
        user = f"{evidence_preamble(self.boundary)}\n\n{blocks}\n\nThe researcher asked: {question}"
        return [
            {"role": "system", "content": system_prompt("online_synthesizer", profile_context)},
            {"role": "user", "content": user},
        ]

    def run(
        self,
        question: str,
        query: str,
        identity: LibraryIdentity,
        profile_context: str,
        *,
        profile_tokens: int = 0,
        stream_cb: Callable[[str], None] | None = None,
    ) -> OnlineResult:
        found = self.search.search(query or question, limit=self.limit * 2)
        fresh = [_checked_doi(self.search, c) for c in found if not identity.holds(c)][: self.limit]
        skipped = len(found) - len([c for c in found if not identity.holds(c)])
        if not fresh:
            text = f"No new papers found online for “{query or question}”" + (
                f" ({skipped} matches are already in your library)." if skipped else "."
            )
            return OnlineResult(text, [], skipped)
        reply = self.llm.chat(
            "online_synthesizer",
            self.messages(question, fresh, profile_context),
            stream_cb=stream_cb,
            profile_tokens=profile_tokens,
        )
        return OnlineResult(reply.content, fresh, skipped, reply)


def _checked_doi(search: Any, candidate: Candidate) -> Candidate:
    """An arXiv entry's DOI is the authors' word; OpenAlex is asked whether it exists before the DOI is
    offered (OpenAlex's own results carry DOIs it resolved). A DOI it does not know is dropped, the
    arXiv id stays; when OpenAlex cannot be asked the DOI is kept."""
    if candidate.source == "openalex" or not candidate.doi or not hasattr(search, "resolve_doi"):
        return candidate
    return replace(candidate, doi=None) if search.resolve_doi(candidate.doi) is False else candidate
