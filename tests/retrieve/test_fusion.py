"""Reciprocal rank fusion against hand-computed scores."""

from __future__ import annotations

import pytest

from biorag.retrieve.fusion import reciprocal_rank_fusion
from biorag.retrieve.hits import Hit, ranked


def hits(*ids: str) -> list[Hit]:
    return ranked([(i, 10.0 - n) for n, i in enumerate(ids)])


def test_hand_computed_scores() -> None:
    fused = reciprocal_rank_fusion([hits("a", "b", "c"), hits("b", "d")], k=60)
    assert [h.id for h in fused] == ["b", "a", "d", "c"]
    expected = {"b": 1 / 62 + 1 / 61, "a": 1 / 61, "d": 1 / 62, "c": 1 / 63}
    for h in fused:
        assert h.score == pytest.approx(expected[h.id])
    assert [h.rank for h in fused] == [1, 2, 3, 4]


def test_weights_and_limit() -> None:
    fused = reciprocal_rank_fusion(
        [hits("a", "b", "c"), hits("b", "d")], k=60, weights=[2.0, 1.0], limit=3
    )
    assert [h.id for h in fused] == ["b", "a", "c"]
    assert fused[0].score == pytest.approx(2 / 62 + 1 / 61)
    assert fused[2].score == pytest.approx(2 / 63)


def test_ties_are_deterministic() -> None:
    # Equal score: the id that reached the better rank wins (k=0: 1/1 == 1/2 + 1/2) ...
    fused = reciprocal_rank_fusion([hits("v", "u"), hits("w", "u")], k=0)
    assert [(h.id, h.score) for h in fused] == [("v", 1.0), ("w", 1.0), ("u", 1.0)]
    # ... then the earlier ranking, then the id.
    assert [h.id for h in reciprocal_rank_fusion([hits("y"), hits("x")])] == ["y", "x"]
    assert [h.id for h in reciprocal_rank_fusion([hits("y", "x")], k=0, weights=[0.0])] == [
        "y",
        "x",
    ]


def test_duplicates_count_once_and_validation() -> None:
    dup = [Hit("a", 1.0, 1), Hit("a", 0.5, 2)]
    assert reciprocal_rank_fusion([dup])[0].score == pytest.approx(1 / 61)
    assert reciprocal_rank_fusion([]) == []
    with pytest.raises(ValueError, match="weights"):
        reciprocal_rank_fusion([hits("a")], weights=[1.0, 2.0])
