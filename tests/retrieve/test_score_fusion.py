"""Convex score fusion against hand-computed scores."""

from __future__ import annotations

import pytest

from biorag.retrieve.fusion import convex_score_fusion
from biorag.retrieve.hits import Hit, ranked


def test_hand_computed_scores() -> None:
    bm25 = ranked([("a", 12.0), ("b", 8.0), ("c", 2.0)])  # a 1.0, b 0.6, c 0.0
    dense = ranked([("b", 0.9), ("d", 0.7), ("a", 0.4)])  # b 1.0, d 0.6, a 0.0
    fused = convex_score_fusion([bm25, dense], weights=[0.5, 0.5])
    expected = {"b": 0.8, "a": 0.5, "d": 0.3, "c": 0.0}
    assert [h.id for h in fused] == ["b", "a", "d", "c"]
    for h in fused:
        assert h.score == pytest.approx(expected[h.id])
    assert [h.rank for h in fused] == [1, 2, 3, 4]


def test_score_gaps_matter_unlike_rrf() -> None:
    # BM25 is sure about "x" (far ahead), dense barely prefers "y": the sure one wins.
    bm25 = ranked([("x", 30.0), ("y", 5.0), ("z", 4.0)])
    dense = ranked([("y", 0.61), ("x", 0.60), ("z", 0.2)])
    assert convex_score_fusion([bm25, dense])[0].id == "x"


def test_weights_limit_and_equal_scores() -> None:
    one = ranked([("a", 3.0), ("b", 3.0)])  # all equal: every hit counts 1
    other = ranked([("b", 2.0), ("c", 1.0)])
    fused = convex_score_fusion([one, other], weights=[1.0, 2.0], limit=2)
    assert [(h.id, h.score) for h in fused] == [("b", 3.0), ("a", 1.0)]


def test_ties_duplicates_and_empty() -> None:
    # equal fused scores: best rank, then earlier ranking, then id
    fused = convex_score_fusion([ranked([("v", 2.0), ("u", 1.0)]), ranked([("w", 2.0)])])
    assert [h.id for h in fused] == ["v", "w", "u"]
    dup = [Hit("a", 1.0, 2), Hit("a", 5.0, 1), Hit("b", 3.0, 3)]
    assert [(h.id, h.score) for h in convex_score_fusion([dup])] == [("a", 1.0), ("b", 0.0)]
    assert convex_score_fusion([[], []]) == []
    assert convex_score_fusion([]) == []
    with pytest.raises(ValueError):
        convex_score_fusion([ranked([("a", 1.0)])], weights=[1.0, 2.0])
