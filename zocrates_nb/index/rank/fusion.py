"""Fusion with a note lane: the user's notes are not crowded out by papers — pure functions.

Plain reciprocal rank fusion ranks notes and papers on one scale, and a library holds
many more paper passages than notes, so a paraphrased question about a note often finds
a few papers first (the note sitting at rank 6–15). The note lane adds, for each note, a
second RRF term from its rank *among the notes* of each retriever:

    score(d) = Σ_r 1/(k + rank_r(d)) + w · Σ_r 1/(k + note_rank_r(d))     (d a note)

so the best notes of each retriever move up without ever changing the order of the papers
among themselves (paper retrieval, e.g. SciFact, is untouched: it has no notes). ``w`` is
``lane_weight`` plus ``intent_weight × note_intent(query)`` — a question in the first person
("what did I decide…") leans further to notes. Weights were tuned on the demo questions' dev
split (``zocrates-nb eval --notes --split dev``) with ``benchmarks/sweep_note_fusion.py``;
docs/retrieval.md §7 has the sweep. A length penalty for many-chunk notes was tried there and
lost: the long notes are the answer as often as they are in the way.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

__all__ = [
    "LANE_WEIGHT",
    "INTENT_WEIGHT",
    "PARENT_SHARE",
    "LANE_DEPTH",
    "PAPER_WINDOW",
    "fuse",
    "lane_weight_for",
    "inherit_from_parents",
    "keep_best_paper",
    "NOTE_SHARE",
    "reserve_notes",
]

LANE_WEIGHT = 0.5
INTENT_WEIGHT = 0.5
#: Share of its paper's fused score a child note inherits ("my notes on the MERFISH paper":
#: the paper matches the topic, the note holds what the user wrote about it).
PARENT_SHARE = 0.2
#: Notes per retriever list that get the lane term.
LANE_DEPTH = 3
#: The first results that always include the best paper found (when the lane would push it out).
PAPER_WINDOW = 5
#: Places among those first results kept for the best notes found, however high papers score.
NOTE_SHARE = 2


def lane_weight_for(intent: float, base: float = LANE_WEIGHT, per_intent: float = INTENT_WEIGHT) -> float:
    """The note lane's weight for a query whose note intent is ``intent`` (0…1)."""
    return max(0.0, base + per_intent * max(0.0, min(1.0, intent)))


def fuse(
    rank_lists: Mapping[str, Sequence[str]],
    k: int,
    notes: Collection[str] = frozenset(),
    lane_weight: float = 0.0,
    lane_depth: int = 1000,
    beside: Collection[str] = frozenset(),
) -> list[tuple[str, float]]:
    """RRF over ``rank_lists`` plus the note lane for ids in ``notes`` (best first, deterministic).

    ``beside`` (PDF annotations) are ranked beside the others: each scores by its place in the whole
    list, but takes no place from the rest, whose ranks count only each other. So an annotation comes
    before a note or a paper only where it outscores it, and notes and papers keep exactly the scores
    they had without annotations in the library (the note-recall figures stay as they were).

    Only the ``lane_depth`` best notes of each list get the lane term: the lane lifts *the best*
    notes, it does not push every note above every paper. With ``lane_weight`` 0 or no notes this
    is exactly :func:`zocrates_nb.index.rank.ranking.rrf`.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    scores: dict[str, float] = {}
    for ranking in rank_lists.values():
        seen: set[str] = set()
        note_rank = placed = 0
        for position, unit in enumerate(ranking, start=1):
            if unit in seen:
                continue
            seen.add(unit)
            if unit not in beside:
                placed += 1
            score = 1.0 / (k + (position if unit in beside else placed))
            if lane_weight and unit in notes:
                note_rank += 1
                if note_rank <= lane_depth:
                    score += lane_weight / (k + note_rank)
            scores[unit] = scores.get(unit, 0.0) + score
    order = {unit: i for i, unit in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


def inherit_from_parents(
    fused: Sequence[tuple[str, float]], parent_of: Mapping[str, str | None], share: float = PARENT_SHARE
) -> list[tuple[str, float]]:
    """Add ``share`` × its parent's score to each child note whose parent paper was found.

    A question asked through a paper's topic ("what did I note on the Harmony paper?") finds
    the paper, whose abstract uses those words; its child note, which rarely does, rides along
    just behind or ahead of it. Notes without a found parent and all papers keep their scores.
    """
    if not share or not parent_of:
        return list(fused)
    scores = dict(fused)
    boosted = [(unit, score + share * scores.get(parent_of.get(unit) or "", 0.0)) for unit, score in fused]
    order = {unit: i for i, (unit, _) in enumerate(fused)}
    return sorted(boosted, key=lambda item: (-item[1], order[item[0]]))


def keep_best_paper(
    fused: Sequence[tuple[str, float]], papers: set[str] | frozenset[str], window: int = PAPER_WINDOW
) -> list[tuple[str, float]]:
    """``fused`` with the best paper moved to the last of the first ``window`` places if none is there.

    The lane must not turn an agent's first evidence into notes only: a question about a method
    should still show the paper behind it among the first few results (an agent quotes about five).
    With no paper found, or one already in the window, nothing changes.
    """
    items = list(fused)
    if window < 1 or len(items) <= window or any(unit in papers for unit, _ in items[:window]):
        return items
    at = next((i for i, (unit, _) in enumerate(items) if unit in papers), None)
    if at is None:
        return items
    best = items.pop(at)
    items.insert(window - 1, best)
    return items


def reserve_notes(
    fused: Sequence[tuple[str, float]],
    notes: Collection[str],
    window: int = PAPER_WINDOW,
    share: int = NOTE_SHARE,
) -> list[tuple[str, float]]:
    """``fused`` with the best notes from below the first ``window`` places moved up until ``share``
    notes are among them (or no note is left to move).

    Why: the lane is a score, so a question worded like a paper's abstract can still fill the
    first places with papers, and the note the user wrote about it (the memory the product
    promises back) sits at 6–15, where an agent that quotes about five results never reads it.
    A reserved share guarantees the best notes a place. The moved notes keep their order and take
    the places of the window's last papers, which move down just below it, in their own order.
    Papers-only results (no note found, e.g. SciFact) are unchanged.
    """
    items = list(fused)
    head, tail = items[:window], items[window:]
    missing = min(share, len(head)) - sum(1 for unit, _ in head if unit in notes)
    lifted = [item for item in tail if item[0] in notes][: max(0, missing)]
    if not lifted:
        return items
    papers_in_head = [i for i, (unit, _) in enumerate(head) if unit not in notes]
    leaving = set(papers_in_head[len(papers_in_head) - len(lifted) :])  # the window's last papers
    kept = [item for i, item in enumerate(head) if i not in leaving]
    moved = {unit for unit, _ in lifted}
    return kept + lifted + [head[i] for i in sorted(leaving)] + [item for item in tail if item[0] not in moved]
