"""Checks every citation of an answer against what the agents retrieved in that turn, and marks failures.

A citation passes when it resolves to a retrieved item (by key, title, author-year, note title or
DOI), its quoted words occur in one of that item's passages (whitespace, quotes and case folded,
ellipses allowed), and its page is one those passages span. Anything else is marked in the text,
right where it stands, with the reason, and counted: "Citations verified k/n". A paper the answer
names only because a retrieved note or passage names it ("your note cites Smith et al., 2019")
resolves to that passage, since the answer reports what was read.

Pure: the evidence records and, optionally, a DOI resolver (the online client) come in; a
``Verification`` comes out. Used by the coordinator on every answer, with or without a model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field

from zocrates_nb.agents.citecheck.mentions import Mention, find_mentions, paragraph_of
from zocrates_nb.agents.citecheck.sources import Source, normalize_text, sources_from_evidence, title_key

__all__ = ["CitationCheck", "REASONS", "Verification", "mark", "summary_line", "verify"]

#: reason → what the reader is told next to the failed citation
REASONS = {
    "not_in_evidence": "not among the sources retrieved for this answer",
    "quote_not_found": "the quoted words are not in the cited source",
    "quote_not_in_evidence": "the quoted words are in none of the retrieved sources",
    "page_out_of_span": "that page is not one the retrieved passages span",
    "page_not_in_evidence": "no page of this source was retrieved",
    "doi_not_in_evidence": "this DOI is not one of the retrieved sources",
    "doi_unresolved": "this DOI does not resolve",
    "citation_mismatch": "the title and the author-year name different sources",
}
_MIN_TITLE_WORDS = 3


@dataclass
class CitationCheck:
    """One citation as written and what the check found (``key`` is internal: for provenance only)."""

    text: str
    kind: str
    resolved: bool
    title: str | None = None
    key: str | None = None
    page: str | None = None
    quote: str | None = None
    quote_found: bool | None = None
    page_ok: bool | None = None
    reason: str | None = None
    start: int = field(default=0, repr=False)
    end: int = field(default=0, repr=False)
    #: resolved only because a retrieved passage names it ("your note cites Smith et al., 2019")
    secondhand: bool = False
    #: where its "(Author, Year, p. N)" stands in the text (Save as Note makes it a Zotero citation)
    paren: tuple[int, int] | None = field(default=None, repr=False)

    @property
    def verified(self) -> bool:
        return self.reason is None

    def to_json(self) -> dict:
        record = asdict(self)
        del record["start"], record["end"], record["paren"]
        return record


@dataclass
class Verification:
    checks: list[CitationCheck]

    @property
    def cited(self) -> int:
        return len(self.checks)

    @property
    def verified(self) -> int:
        return sum(check.verified for check in self.checks)

    @property
    def failures(self) -> list[CitationCheck]:
        return [check for check in self.checks if not check.verified]

    def failures_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for check in self.failures:
            counts[str(check.reason)] = counts.get(str(check.reason), 0) + 1
        return counts

    def to_json(self) -> dict:
        return {
            "cited": self.cited,
            "verified": self.verified,
            "failures_by_reason": self.failures_by_reason(),
            "checks": [check.to_json() for check in self.checks],
        }


def verify(
    text: str,
    evidence: Iterable[Mapping],
    parents: Mapping[str, Mapping] | None = None,
    *,
    question: str = "",
    doi_resolves: Callable[[str], bool | None] | None = None,
) -> Verification:
    """Check every citation in ``text`` against ``evidence`` (this turn's records).

    ``parents``: title and citation of the parent papers the evidence names. ``question``: quoting
    the question back is not a quote from a source. ``doi_resolves(doi)``: True / False when the
    online client could tell whether a DOI exists, None when it could not ask.
    """
    index = _Index(sources_from_evidence(evidence, parents))
    asked = normalize_text(question)
    checks: list[CitationCheck] = []
    resolved_at: list[tuple[Mention, Source]] = []
    quotes: list[Mention] = []
    for mention in find_mentions(text):
        if mention.kind == "quote" or _is_quote(mention, index):
            quotes.append(mention)
            continue
        check = _check_citation(mention, index, doi_resolves)
        if check is not None:
            checks.append(check)
            if check.resolved and (source := index.by_key.get(check.key or "")) is not None:
                resolved_at.append((mention, source))
    for mention in quotes:  # after the citations: a quote may stand before the citation it belongs to
        if normalize_text(mention.quote) != asked:
            checks.append(_check_quote(text, mention, resolved_at, index))
    _vouch_for_secondhand(text, checks)
    return Verification(sorted(checks, key=lambda check: check.start))


class _Index:
    """The retrieved sources, looked up by key, title, author-year and DOI."""

    def __init__(self, sources: list[Source]) -> None:
        self.sources = sources
        self.by_key = {source.key: source for source in sources}
        self.by_doi = {source.doi: source for source in sources if source.doi}
        # each source's keys once, not once per mention
        self._titles = {s.key: (title_key(s.title), title_key(_annotated(s.title))) for s in sources}
        self._passages = {s.key: title_key(" ".join(s.passages)) for s in sources}

    def by_title(self, title: str | None, kind: str | None = None) -> Source | None:
        wanted = title_key(title)
        if not wanted:
            return None
        pool = [s for s in self.sources if kind is None or s.kind == kind]
        exact = [s for s in pool if wanted in self._titles[s.key]]
        if exact:
            return exact[0]
        return next((s for s in pool if _same_title(wanted, self._titles[s.key][0])), None)

    def by_author_year(self, cited: tuple[str, str] | None) -> list[Source]:
        return [s for s in self.sources if cited is not None and s.author_year == cited]

    def mentioned_in_passage(self, mention: Mention) -> Source | None:
        """The source whose passage itself names this citation (the answer reports what was read)."""
        wanted = title_key(mention.title) if mention.title else ""
        if mention.author_year is not None:
            surname, year = mention.author_year
            needles = [f"{surname} et al {year}", f"{surname} {year}"]
        else:
            needles = [wanted] if len(wanted.split()) >= _MIN_TITLE_WORDS else []
        for source in self.sources:
            if any(needle and needle in self._passages[source.key] for needle in needles):
                return source
        return None


def _check_citation(
    mention: Mention, index: _Index, doi_resolves: Callable[[str], bool | None] | None
) -> CitationCheck | None:
    if mention.kind == "key":
        return _resolved_check(mention, index.by_key.get(mention.key or ""), "key")
    if mention.kind == "doi":
        return _check_doi(mention, index, doi_resolves)
    if mention.kind == "author_year":
        found = index.by_author_year(mention.author_year)
        source = _best_for_page(found, mention.page)
        if source is None and (named_by := index.mentioned_in_passage(mention)) is not None:
            return _secondhand(_resolved_check(mention, named_by, "author_year"))
        return _resolved_check(mention, source, "author_year")
    return _check_title(mention, index)


def _check_title(mention: Mention, index: _Index) -> CitationCheck | None:
    source = index.by_title(mention.title, "note" if mention.kind == "note" else None)
    if source is None and mention.kind == "note":
        source = index.by_title(mention.title)
    if source is None and not mention.explicit:
        return None  # *emphasis* that names no source is not a citation
    if source is None:
        named = index.by_author_year(mention.author_year)
        named_by = index.mentioned_in_passage(mention)
        check = _resolved_check(mention, named_by, mention.kind)
        if named_by is not None:
            return _secondhand(check)
        if named and not check.resolved:
            check.reason = "citation_mismatch"
        return check
    check = _resolved_check(mention, source, mention.kind)
    if mention.author_year and source.author_year and mention.author_year != source.author_year:
        check.reason = "citation_mismatch"
    return check


def _secondhand(check: CitationCheck) -> CitationCheck:
    check.secondhand = True
    return check


def _vouch_for_secondhand(text: str, checks: list[CitationCheck]) -> None:
    """A paper that only a retrieved passage names is cited honestly where the answer says whose words
    it reports ("your note cites …", or that passage's own citation in the same paragraph); elsewhere it
    is presented as read, and it was not."""
    for check in checks:
        if not check.secondhand:
            continue
        start, end = paragraph_of(text, check.start)
        paragraph = text[start:end]
        vouched = any(
            other.key == check.key and not other.secondhand and other.resolved and start <= other.start < end
            for other in checks
        ) or (check.kind == "note" and re.search(r"\bnotes?\b", paragraph, re.IGNORECASE) is not None)
        if not vouched:
            check.resolved, check.key, check.reason = False, None, "not_in_evidence"


def _resolved_check(mention: Mention, source: Source | None, kind: str) -> CitationCheck:
    check = CitationCheck(
        mention.text,
        source.kind if source is not None else kind,
        source is not None,
        title=(source.title if source is not None else mention.title),
        key=source.key if source is not None else None,
        page=mention.page,
        start=mention.start,
        end=mention.mark_at or mention.end,
        paren=mention.paren,
    )
    if source is None:
        check.reason = "not_in_evidence"
    elif mention.page:
        check.page_ok = source.spans_page(mention.page)
        if not check.page_ok:
            check.reason = "page_out_of_span" if source.pages else "page_not_in_evidence"
    return check


def _check_doi(mention: Mention, index: _Index, doi_resolves: Callable[[str], bool | None] | None) -> CitationCheck:
    source = index.by_doi.get(mention.doi or "")
    check = _resolved_check(mention, source, "doi")
    if source is None:
        exists = doi_resolves(mention.doi or "") if doi_resolves is not None else None
        check.reason = "doi_unresolved" if exists is False else "doi_not_in_evidence"
    return check


def _is_quote(mention: Mention, index: _Index) -> bool:
    """“Four or more words” in curly quotes that name no retrieved item are a quote, not a title."""
    if mention.kind != "title" or mention.explicit or not mention.text.startswith("“"):
        return False
    if index.by_title(mention.title) is not None:
        return False
    mention.quote = mention.title
    return len((mention.title or "").split()) >= 4


def _check_quote(
    text: str, mention: Mention, resolved_at: list[tuple[Mention, Source]], index: _Index
) -> CitationCheck:
    """A quote belongs to the citations of its paragraph (a block quote: of the paragraph before it)."""
    quote = mention.quote or ""
    cited = _citations_near(text, mention, resolved_at)
    holder = next((source for source in cited if source.has_quote(quote)), None)
    found = holder or next((source for source in index.sources if source.has_quote(quote)), None)
    named = holder or (cited[0] if cited else found)
    check = CitationCheck(
        mention.text,
        "quote",
        found is not None,
        title=named.title if named is not None else None,
        key=found.key if found is not None else None,
        quote=quote,
        quote_found=holder is not None if cited else found is not None,
        start=mention.start,
        end=mention.end,
    )
    if not check.quote_found:
        check.reason = "quote_not_found" if cited else "quote_not_in_evidence"
    return check


def _citations_near(text: str, mention: Mention, resolved_at: list[tuple[Mention, Source]]) -> list[Source]:
    start, end = paragraph_of(text, mention.start)
    if mention.text.lstrip().startswith(">") and start >= 2:
        start, _ = paragraph_of(text, start - 2)  # the heading paragraph the block quote belongs to
    return [source for m, source in resolved_at if start <= m.start < end]


def _best_for_page(found: list[Source], page: str | None) -> Source | None:
    if not found:
        return None
    if page:
        return next((s for s in found if s.spans_page(page)), found[0])
    return found[0]


def _same_title(wanted: str, known: str) -> bool:
    """A shortened title (subtitle dropped) or one with a word changed still names its source."""
    if not known or len(wanted.split()) < _MIN_TITLE_WORDS:
        return False
    if known.startswith(wanted) or wanted.startswith(known):
        return True
    a, b = set(wanted.split()), set(known.split())
    return len(a & b) / max(len(a), len(b)) >= 0.85


def _annotated(title: str) -> str:
    """An annotation's title ("Highlight on “Paper”, p. 12") without its page: how answers name it."""
    return title.rsplit(", p.", 1)[0]


def mark(text: str, verification: Verification) -> str:
    """``text`` with `` ⚠️ *(citation not verified: …)*`` after each failed citation (one per place)."""
    at_place: dict[int, list[str]] = {}
    for check in verification.failures:
        reasons = at_place.setdefault(check.end, [])
        if REASONS[str(check.reason)] not in reasons:
            reasons.append(REASONS[str(check.reason)])
    out, at = [], 0
    for end in sorted(at_place):
        out += [text[at:end], f" ⚠️ *(citation not verified: {'; '.join(at_place[end])})*"]
        at = end
    return "".join(out) + text[at:]


def summary_line(verification: Verification) -> str:
    """ "Citations verified 4/5 (1 not among the sources retrieved for this answer)." ("" with none)."""
    if not verification.cited:
        return ""
    line = f"Citations verified {verification.verified}/{verification.cited}"
    counted = sorted(verification.failures_by_reason().items(), key=lambda item: -item[1])
    reasons = "; ".join(f"{n} {REASONS[reason]}" for reason, n in counted)
    return f"{line} ({reasons})." if reasons else f"{line}."
