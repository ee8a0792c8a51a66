"""Score fusion (index/rank/blend.py): normalised scores, weighted per retriever."""

from __future__ import annotations

import pytest

from zocrates_nb.index.rank.blend import blend_scores, normalise, reslot

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

scores = st.lists(
    st.tuples(st.sampled_from("abcdefgh"), st.floats(min_value=-50, max_value=50, allow_nan=False)), max_size=8
)


def test_minmax_spans_zero_to_one_and_keeps_the_first_score_of_a_repeated_id():
    got = normalise([("a", 12.0), ("b", 7.0), ("a", 1.0), ("c", 2.0)])
    assert got == {"a": 1.0, "b": 0.5, "c": 0.0}


def test_equal_scores_and_empty_lists():
    assert normalise([("a", 3.0), ("b", 3.0)]) == {"a": 1.0, "b": 1.0}
    assert normalise([("a", 3.0), ("b", 3.0)], "zscore") == {"a": 0.0, "b": 0.0}
    assert normalise([], "max") == {}


def test_zscore_and_max():
    assert normalise([("a", 3.0), ("b", 1.0)], "zscore") == {"a": 1.0, "b": -1.0}
    assert normalise([("a", 4.0), ("b", 1.0)], "max") == {"a": 1.0, "b": 0.25}


def test_unknown_norm_is_refused():
    with pytest.raises(ValueError, match="unknown norm"):
        normalise([("a", 1.0)], "rank")


def test_blend_weights_each_list_and_scores_a_missing_unit_at_the_lists_floor():
    got = blend_scores(
        {"lexical": [("a", 10.0), ("b", 5.0), ("c", 0.0)], "dense": [("b", 0.9), ("d", 0.5)]},
        {"lexical": 0.6, "dense": 0.4},
    )
    assert got == pytest.approx({"a": 0.6, "b": 0.3 + 0.4, "c": 0.0, "d": 0.0})
    ranked = sorted(got, key=lambda u: -got[u])
    assert ranked[:2] == ["b", "a"]


def test_a_list_without_weight_adds_nothing_but_its_units_are_kept():
    got = blend_scores({"lexical": [("a", 2.0), ("b", 1.0)], "dense": [("c", 0.7)]}, {"lexical": 1.0})
    assert got == {"a": 1.0, "b": 0.0, "c": 0.0}


@given(scores, scores, st.floats(min_value=0, max_value=1))
def test_convex_blend_stays_within_zero_and_one(lexical, dense, weight):
    got = blend_scores({"lexical": lexical, "dense": dense}, {"lexical": weight, "dense": 1 - weight})
    assert set(got) == {u for u, _ in lexical + dense}
    assert all(-1e-9 <= v <= 1 + 1e-9 for v in got.values())


@given(scores, st.floats(min_value=0.01, max_value=5))
def test_one_weighted_list_keeps_that_lists_order(lexical, weight):
    got = blend_scores({"lexical": lexical}, {"lexical": weight})
    first = dict(reversed(lexical))  # the first score of each id
    for a in got:
        for b in got:
            if first[a] > first[b]:
                assert got[a] >= got[b]


def test_reslot_orders_papers_by_their_scores_in_the_places_papers_held():
    fused = [("p1", 0.9), ("n1", 0.8), ("p2", 0.7), ("a1", 0.6), ("p3", 0.5)]
    got = reslot(fused, {"p1": 0.2, "p2": 0.1, "p3": 0.9}, members={"p1", "p2", "p3"})
    assert got == [("p3", 0.9), ("n1", 0.8), ("p1", 0.7), ("a1", 0.6), ("p2", 0.5)]


def test_reslot_keeps_fused_order_for_ties_and_puts_unscored_papers_last():
    fused = [("p1", 3.0), ("p2", 2.0), ("p3", 1.0), ("p4", 0.5)]
    got = reslot(fused, {"p2": 1.0, "p3": 1.0, "p4": 2.0}, members={"p1", "p2", "p3", "p4"})
    assert [u for u, _ in got] == ["p4", "p2", "p3", "p1"]
    assert reslot(fused[:1], {"p1": 1.0}, {"p1"}) == fused[:1]


units = st.lists(st.sampled_from([f"u{i}" for i in range(10)]), unique=True, max_size=10)


@given(units, st.data())
def test_reslot_moves_no_note_and_keeps_every_unit_and_the_scores(order, data):
    papers = set(data.draw(st.lists(st.sampled_from(order), unique=True))) if order else set()
    scores = {u: data.draw(st.floats(min_value=-5, max_value=5)) for u in papers}
    fused = [(u, float(len(order) - i)) for i, u in enumerate(order)]
    got = reslot(fused, scores, papers)
    assert sorted(u for u, _ in got) == sorted(order)
    assert [s for _, s in got] == [s for _, s in fused]  # each place keeps its score
    for (before, _), (after, _) in zip(fused, got, strict=True):
        assert (before in papers) == (after in papers)
        if before not in papers:
            assert after == before
    placed = [u for u, _ in got if u in papers]
    assert all(scores[a] >= scores[b] for a, b in zip(placed, placed[1:], strict=False))
