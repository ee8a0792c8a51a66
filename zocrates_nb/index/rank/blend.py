"""Score fusion: a weighted sum of each retriever's normalised scores — pure functions.

Why beside RRF: RRF sees only ranks, so a paper that bm25 finds far ahead of the rest (a claim
that repeats the abstract's rare words) counts as much as one that barely leads. A convex
combination of the scores, each retriever's list scaled to 0…1 per query, keeps that margin
(Bruch et al., "An Analysis of Fusion Functions for Hybrid Retrieval", TOIS 2023).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

__all__ = [
    "NORMS",
    "PAPER_FUSIONS",
    "LEXICAL_WEIGHT",
    "NOTE_LEXICAL_WEIGHT",
    "normalise",
    "blend_scores",
    "reslot",
]

NORMS = ("minmax", "zscore", "max")
#: ``search.paper_fusion``: how hybrid search orders papers among themselves ("rrf": by fused rank).
PAPER_FUSIONS = ("blend", "rrf")
#: The lexical list's weight in hybrid search (the dense list gets 1 − this), with ``max`` scaling:
#: SciFact train nDCG@10 0.7449 against 0.7284 with RRF k = 20; 0.35–0.5 is a plateau (0.743–0.745).
LEXICAL_WEIGHT = 0.4
#: The lexical weight when notes are re-ordered among the places notes hold (``search.note_fusion``
#: "blend", ``search.note_lexical_weight``): notes are short and the user's own words, so their exact
#: terms count more than a paper's. Demo dev split MRR@10 0.857 (fused order) → 0.903; 0.4–0.7 all give
#: 0.884–0.903 (docs/retrieval.md, "Notes ordered by the blend too").
NOTE_LEXICAL_WEIGHT = 0.6


def normalise(scores: Sequence[tuple[str, float]], norm: str = "minmax") -> dict[str, float]:
    """One retriever's ``(id, score)`` list scaled per query; an id listed twice keeps its first score.

    ``minmax``: (s − min) / (max − min), so the list spans 0…1 (all 1.0 when the scores are equal);
    ``zscore``: (s − mean) / standard deviation (all 0.0 when equal); ``max``: s / max (scores > 0).
    """
    if norm not in NORMS:
        raise ValueError(f"unknown norm {norm!r}; use one of {', '.join(NORMS)}")
    first: dict[str, float] = {}
    for unit, value in scores:
        first.setdefault(unit, float(value))
    if not first:
        return {}
    values = list(first.values())
    if norm == "max":
        top = max(values)
        return {u: (v / top if top > 0 else 1.0) for u, v in first.items()}
    if norm == "zscore":
        mean = sum(values) / len(values)
        spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        return {u: ((v - mean) / spread if spread > 0 else 0.0) for u, v in first.items()}
    low, high = min(values), max(values)
    return {u: ((v - low) / (high - low) if high > low else 1.0) for u, v in first.items()}


def blend_scores(
    score_lists: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float],
    norm: str = "minmax",
) -> dict[str, float]:
    """Σ_r weight_r · normalised score_r(d) over the lists containing d (absent: the list's floor).

    The floor is the lowest normalised score of that list (0 for ``minmax``), so a unit one retriever
    did not return scores as if it were that retriever's last. Lists without a weight count 0.
    """
    out: dict[str, float] = {}
    scaled = {name: normalise(scores, norm) for name, scores in score_lists.items()}
    units = list(dict.fromkeys(u for s in scaled.values() for u in s))  # first appearance: ties stay put
    for name, values in scaled.items():
        weight = float(weights.get(name, 0.0))
        if not weight or not values:
            continue
        floor = min(values.values())
        for unit in units:
            out[unit] = out.get(unit, 0.0) + weight * values.get(unit, floor)
    for unit in units:
        out.setdefault(unit, 0.0)
    return out


def reslot(
    fused: Sequence[tuple[str, float]], scores: Mapping[str, float], members: Collection[str]
) -> list[tuple[str, float]]:
    """``fused`` with its ``members`` (the papers, or the notes) re-ordered among themselves by ``scores``.

    Every place a member held is again held by a member, and each place keeps its score, so the other
    units stay exactly where the fusion (and its note lane) put them, and the scores still fall down
    the list. Only which member sits in which member place changes; ties (and members without a
    score, which go last) keep their fused order.
    """
    items = list(fused)
    places = [i for i, (unit, _) in enumerate(items) if unit in members]
    if len(places) < 2:
        return items
    order = sorted(
        (items[i][0] for i in places),
        key=lambda unit: -scores.get(unit, float("-inf")),
    )
    for place, unit in zip(places, order, strict=True):
        items[place] = (unit, items[place][1])
    return items
