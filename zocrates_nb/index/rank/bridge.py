"""Papers as a bridge to the user's notes: a note inherits a share of the papers it links to — pure.

A paraphrase asks in other words for what a note names ("the padlock-and-rolling-circle
platform" for a note that says Xenium). The paper the note is about uses those words in its
abstract, so the paper is found and the note is not. A child note already rides with its paper
(fusion.inherit_from_parents); a note that *cites* or *names* papers (corpus/links.py, stored at
sync in index/lexical/note_links.py) rides with them the same way:

    score(note) += link_share · max over its linked papers p found for the query of score(p) / n(note)

where n(note) is the number of papers the note links to. The best linked paper counts, not the sum,
and it counts less the more papers the note links: a note citing eight papers is about each of them
less than a note citing one, and on the dev split an undivided share lifted those hub notes above the
answer for most questions (docs/retrieval.md §7). Papers' scores never change, so papers keep their
order among themselves (a paper-only corpus, e.g. SciFact, is untouched).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["LINK_SHARE", "REASON_WEIGHTS", "inherit_from_links", "bridges", "weighted"]

#: Share of its best linked paper's fused score a note inherits (tuned on the dev split:
#: docs/retrieval.md §7 "Papers as a bridge").
LINK_SHARE = 0.2
#: How much each kind of link counts (corpus/links.py's reasons). A name can be a passing mention
#: ("Chromium gel beads and Slide-seq beads come from…"), but weighing names 0.5 or 0 lost on dev
#: (MRR@10 0.852 / 0.850 against 0.856), so every reason counts fully.
REASON_WEIGHTS = {"citation": 1.0, "doi": 1.0, "author-year": 1.0, "title": 1.0, "name": 1.0}


def weighted(rows: Sequence[tuple[str, str]], weights: Mapping[str, float] | None = None) -> list[tuple[str, float]]:
    """``[(paper key, reason), …]`` → ``[(paper key, weight), …]`` without the links that weigh nothing."""
    weights = REASON_WEIGHTS if weights is None else weights
    return [(paper, weights.get(reason, 0.0)) for paper, reason in rows if weights.get(reason, 0.0) > 0]


def inherit_from_links(
    fused: Sequence[tuple[str, float]],
    links: Mapping[str, Sequence[tuple[str, float]]],
    share: float = LINK_SHARE,
) -> list[tuple[str, float]]:
    """Add ``share`` × its best linked paper's score ÷ its number of links to each note in ``links``
    (note key → ``[(paper key, weight), …]``; a link's score and its count are both weighted).

    Only papers in ``fused`` (found for this query) count; units not in ``links`` keep their scores.
    """
    if not share or not links:
        return list(fused)
    scores = dict(fused)
    boosted = []
    for unit, score in fused:
        linked = links.get(unit, ())
        found = [w * scores[p] for p, w in linked if p in scores and p != unit and p not in links]
        boosted.append((unit, score + share * max(found) / sum(w for _, w in linked) if found else score))
    order = {unit: i for i, (unit, _) in enumerate(fused)}
    return sorted(boosted, key=lambda item: (-item[1], order[item[0]]))


def bridges(fused_keys: Sequence[str], linked: Sequence[str]) -> dict[str, int]:
    """The linked papers that were found for a query, with their rank in the results (for ``explain``)."""
    rank = {unit: i for i, unit in enumerate(fused_keys, start=1)}
    return {p: rank[p] for p in linked if p in rank}
