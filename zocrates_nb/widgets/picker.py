"""The Save-as-Note destination picker's logic: pure functions, tested without a browser.

Why not a Dropdown of every paper: with 5,000 papers it is unusable and slow to render.
Instead the panel shows a type-ahead box; each keystroke filters a precomputed index
(title, first author, year) down to the top 20, the collection list is a tree with
nesting, and the paper the answer cites most is offered first as the parent.
Measured by benchmarks/bench_picker.py.
"""

from __future__ import annotations

import heapq
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

TOP_N = 20


def fold(text: str) -> str:
    """Lower case without accents ("Ståhl" matches "stahl")."""
    if text.isascii():  # the common case, ~50x faster than decomposing
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def paper_label(title: str, first_author: str, year: int | None, limit: int = 70) -> str:
    short = title if len(title) <= limit else title[: limit - 1] + "…"
    who = ", ".join(x for x in (first_author, str(year) if year else "") if x)
    return f"{who} — {short}" if who else short


@dataclass(frozen=True)
class PaperIndex:
    """Papers as parallel tuples (key, title, first author, year + folded search text), built once per panel.

    Labels are made only for the rows shown (at most 20), not for every paper.
    """

    keys: tuple[str, ...]
    raw_titles: tuple[str, ...]
    authors: tuple[str, ...]
    years: tuple[int, ...]
    titles: tuple[str, ...]
    others: tuple[str, ...]

    @classmethod
    def build(cls, papers: Iterable[Any]) -> PaperIndex:
        rows = [(p.key, p.title.replace("\n", " "), p.first_author, p.year or 0) for p in papers]
        if not rows:
            return cls((), (), (), (), (), ())
        rows.sort(key=lambda r: -r[3])  # newest first (stable: the caller's order within a year)
        keys, titles, authors, years = zip(*rows, strict=True)
        # fold in one call over one big string, not 20,000 small ones
        folded_titles = fold("\n".join(titles)).split("\n")
        folded_others = fold("\n".join(f"{a} {y or ''}" for a, y in zip(authors, years, strict=True))).split("\n")
        return cls(keys, titles, authors, years, tuple(folded_titles), tuple(folded_others))

    def __len__(self) -> int:
        return len(self.keys)

    def row(self, i: int) -> tuple[str, str]:
        """(label, key) of row ``i``."""
        return paper_label(self.raw_titles[i], self.authors[i], self.years[i] or None), self.keys[i]


def filter_papers(index: PaperIndex, query: str, limit: int = TOP_N) -> list[tuple[str, str]]:
    """The top ``limit`` (label, key) pairs whose title/author/year contain every word of ``query``.

    Ranking: a title that starts with the query, then the earliest match in the title,
    then newest first (the index order). An empty query lists the newest papers.
    """
    words = fold(query).split()
    if not words:
        return [index.row(i) for i in range(min(limit, len(index)))]
    phrase = " ".join(words)
    scored = []
    for i, (title, other) in enumerate(zip(index.titles, index.others, strict=True)):
        if all(w in title or w in other for w in words):
            position = title.find(words[0])
            scored.append((0 if title.startswith(phrase) else 1, position if position >= 0 else 999, i))
    return [index.row(i) for *_, i in heapq.nsmallest(limit, scored)]


def collection_tree(collections: Sequence[Any]) -> list[tuple[str, str]]:
    """(indented name, key) depth-first, siblings by name; orphans (parent not listed) at the top level."""
    keys = {c.key for c in collections}
    children: dict[str | None, list[Any]] = {}
    for c in collections:
        parent = c.parent_key if c.parent_key in keys else None
        children.setdefault(parent, []).append(c)
    out: list[tuple[str, str]] = []
    stack = [(c, 0) for c in sorted(children.get(None, []), key=lambda c: fold(c.name), reverse=True)]
    seen: set[str] = set()
    while stack:
        node, depth = stack.pop()
        if node.key in seen:  # a cycle in a damaged library must not loop forever
            continue
        seen.add(node.key)
        out.append(("\u2003" * depth + ("└ " if depth else "") + node.name, node.key))
        for child in sorted(children.get(node.key, []), key=lambda c: fold(c.name), reverse=True):
            stack.append((child, depth + 1))
    return out


def suggested_parent(answer: Any, paper_keys: set[str] | frozenset[str]) -> str | None:
    """The paper the answer cites most (ties: first cited), if it is a paper of this library."""
    cited = [getattr(c, "key", "") for c in getattr(answer, "citations", []) or []]
    cited += list(getattr(answer, "cited_keys", []) or [])
    counts = Counter(k for k in cited if k in paper_keys)
    if not counts:
        return None
    best = max(counts.values())
    return next(k for k in cited if counts.get(k) == best)


def library_options(libraries: Sequence[Any]) -> list[tuple[str, str]]:
    """The chat panel's "Search in" choices: every library (``""``), then each by name (its id as value).

    ``libraries``: ``Workbench.libraries()`` rows (``name``, ``kind``, ``library_id``)."""
    return [("All libraries", "")] + [
        (f"{lib['name']}{' (group)' if lib.get('kind') == 'group' else ''}", str(lib["library_id"]))
        for lib in libraries
    ]
