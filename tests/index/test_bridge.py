"""Papers as a bridge: a note inherits a share of its best linked paper's score (index/rank/bridge.py)."""

from __future__ import annotations

import random

from zocrates_nb.index.rank.assembly import rank_units
from zocrates_nb.index.rank.bridge import LINK_SHARE, bridges, inherit_from_links, weighted


def test_a_linked_note_rises_and_papers_keep_their_order():
    fused = [("PAPER1", 0.10), ("NOTEA", 0.06), ("PAPER2", 0.05), ("NOTEB", 0.05)]
    out = inherit_from_links(fused, {"NOTEB": [("PAPER1", 1.0)]}, 0.2)
    assert [u for u, _ in out] == ["PAPER1", "NOTEB", "NOTEA", "PAPER2"]
    assert dict(out)["NOTEB"] == 0.05 + 0.2 * 0.10 and dict(out)["PAPER1"] == 0.10
    # the share is divided by the links: a note citing four papers is about each of them less
    hub = inherit_from_links(fused, {"NOTEB": [("PAPER1", 1.0), ("P3", 1.0), ("P4", 1.0), ("P5", 1.0)]}, 0.2)
    assert dict(hub)["NOTEB"] == 0.05 + 0.2 * 0.10 / 4
    # a paper not found for this query passes nothing; no share, no change
    assert inherit_from_links(fused, {"NOTEB": [("ABSENT1", 1.0)]}, 0.2) == fused
    assert inherit_from_links(fused, {"NOTEB": [("PAPER1", 1.0)]}, 0.0) == fused


def test_papers_never_reorder_among_themselves_whatever_the_links():
    rng = random.Random(24)
    for _ in range(200):
        units = [f"P{i}" for i in range(8)] + [f"N{i}" for i in range(6)]
        fused = sorted(((u, rng.random()) for u in units), key=lambda item: -item[1])
        links = {f"N{i}": [(f"P{rng.randrange(8)}", 1.0) for _ in range(rng.randrange(1, 4))] for i in range(6)}
        out = inherit_from_links(fused, links, rng.choice([0.1, LINK_SHARE, 1.0]))
        assert [u for u, _ in out if u.startswith("P")] == [u for u, _ in fused if u.startswith("P")]
        assert all(score >= dict(fused)[u] for u, score in out)


def test_rank_units_applies_the_bridge_only_with_the_lane_on():
    lists = {"lexical": ["PAPER1:0", "NOTEA:0", "NOTEB:0"], "dense": ["PAPER1:0", "NOTEA:0", "NOTEB:0"]}
    units = {"PAPER1": "PAPER1:0", "NOTEA": "NOTEA:0", "NOTEB": "NOTEB:0"}
    doc_lists = {name: [c.split(":")[0] for c in ranking] for name, ranking in lists.items()}
    notes = {"NOTEA:0": None, "NOTEB:0": None}
    settings = dict(collapse=True, k=3, rrf_k=20, lane_depth=1, parent_share=0.2, paper_window=0)
    links = {"NOTEB": [("PAPER1", 1.0)]}
    plain = rank_units(doc_lists, units, notes, 0.5, **settings)
    bridged = rank_units(doc_lists, units, notes, 0.5, **settings, links=links, link_share=1.0)
    assert [u for u, _ in plain] == ["NOTEA", "PAPER1", "NOTEB"]
    assert [u for u, _ in bridged] == ["NOTEB", "NOTEA", "PAPER1"]
    off = rank_units(doc_lists, units, notes, 0.0, **settings, links=links, link_share=1.0)
    assert [u for u, _ in off] == ["PAPER1", "NOTEA", "NOTEB"]  # lane off: plain RRF, no bridge


def test_weighted_links_and_the_bridges_explain_shows():
    assert weighted([("P1", "citation"), ("P2", "name"), ("P3", "unknown")]) == [("P1", 1.0), ("P2", 1.0)]
    assert weighted([("P1", "citation"), ("P2", "name")], {"citation": 1.0}) == [("P1", 1.0)]
    assert bridges(["N1", "P2", "P1"], ["P1", "P9"]) == {"P1": 3}
