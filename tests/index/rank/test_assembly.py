"""rank_units: the lane places notes, the notes' own blend decides which note goes first (pure)."""

from __future__ import annotations

import random

from zocrates_nb.index.rank.assembly import rank_units

SETTINGS = dict(collapse=True, k=10, rrf_k=20, lane_depth=3, parent_share=0.2, paper_window=0)


def _setup():
    lists = {"lexical": ["NOTEA", "PAPER1", "NOTEB", "PAPER2"], "dense": ["NOTEA", "PAPER1", "PAPER2", "NOTEB"]}
    units = {u: f"{u}:0" for u in ("NOTEA", "NOTEB", "PAPER1", "PAPER2")}
    return lists, units


def test_notes_are_reordered_among_the_places_notes_hold():
    lists, units = _setup()
    notes = {"NOTEA:0": None, "NOTEB:0": None}
    fused = rank_units(lists, units, notes, 0.5, **SETTINGS)
    assert [u for u, _ in fused if u.startswith("NOTE")] == ["NOTEA", "NOTEB"]
    blended = rank_units(lists, units, notes, 0.5, **SETTINGS, note_scores={"NOTEA": 0.4, "NOTEB": 0.9, "PAPER1": 1.0})
    swap = {"NOTEA": "NOTEB", "NOTEB": "NOTEA"}
    assert [u for u, _ in blended] == [swap.get(u, u) for u, _ in fused]
    assert [s for _, s in blended] == [s for _, s in fused]  # every place keeps its score


def test_a_child_note_takes_its_share_of_its_papers_blended_score():
    lists, units = _setup()
    notes = {"NOTEA:0": None, "NOTEB:0": "PAPER1"}  # NOTEB is a child note of PAPER1
    scores = {"NOTEA": 0.60, "NOTEB": 0.45, "PAPER1": 1.0, "PAPER2": 0.2}
    got = rank_units(lists, units, notes, 0.5, **SETTINGS, note_scores=scores)
    assert [u for u, _ in got][0] == "NOTEB"  # 0.45 + 0.2 × 1.0 > 0.60
    unshared = rank_units(lists, units, notes, 0.5, **{**SETTINGS, "parent_share": 0.0}, note_scores=scores)
    assert [u for u, _ in unshared][0] == "NOTEA"


def test_with_the_lane_off_a_note_takes_no_share_of_its_papers_score():
    """Plain RRF (``note_lane`` and ``note_intent`` 0, weight 0) carries no shares, in the blend too."""
    lists, units = _setup()
    notes = {"NOTEA:0": None, "NOTEB:0": "PAPER1"}
    scores = {"NOTEA": 0.60, "NOTEB": 0.45, "PAPER1": 1.0, "PAPER2": 0.2}
    links = {"NOTEB": [("PAPER1", 1.0)]}
    got = rank_units(lists, units, notes, 0.0, **SETTINGS, note_scores=scores, links=links, link_share=0.2)
    assert [u for u, _ in got if u.startswith("NOTE")] == ["NOTEA", "NOTEB"]


def test_a_linked_note_takes_its_share_of_its_linked_papers_blended_score():
    lists, units = _setup()
    notes = {"NOTEA:0": None, "NOTEB:0": None}
    scores = {"NOTEA": 0.60, "NOTEB": 0.45, "PAPER1": 1.0, "PAPER2": 0.2}
    links = {"NOTEB": [("PAPER1", 1.0)]}
    got = rank_units(lists, units, notes, 0.5, **SETTINGS, note_scores=scores, links=links, link_share=0.2)
    assert [u for u, _ in got if u.startswith("NOTE")] == ["NOTEB", "NOTEA"]


def test_papers_and_places_never_change_whatever_the_note_scores():
    rng = random.Random(7)
    for _ in range(200):
        docs = [f"P{i}" for i in range(6)] + [f"N{i}" for i in range(4)]  # all within k
        lists = {name: rng.sample(docs, len(docs)) for name in ("lexical", "dense")}
        units = {u: f"{u}:0" for u in docs}
        notes = {f"N{i}:0": (f"P{rng.randrange(6)}" if rng.random() < 0.4 else None) for i in range(4)}
        plain = rank_units(lists, units, notes, 0.5, **SETTINGS)
        scores = {u: rng.random() for u in docs}
        got = rank_units(lists, units, notes, 0.5, **SETTINGS, note_scores=scores)
        assert [u for u, _ in got if u.startswith("P")] == [u for u, _ in plain if u.startswith("P")]
        assert [(u[0], s) for u, s in got] == [(u[0], s) for u, s in plain]
        assert sorted(u for u, _ in got) == sorted(u for u, _ in plain)
