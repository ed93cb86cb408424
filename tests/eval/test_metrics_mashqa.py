"""MASH-QA sentence precision, recall, F1 and exact match."""

from __future__ import annotations

import pytest

from biorag.eval.metrics.mashqa import sentence_measures, sentence_scores


def test_sentence_scores_hand_computed() -> None:
    # |P ∩ G| = 2 of |P| = 3 and |G| = 3 -> P = R = F1 = 2/3; sets differ -> EM 0
    p, r, f, em = sentence_scores(["s1", "s2", "s3"], ["s2", "s3", "s4"])
    assert (p, r, f, em) == pytest.approx((2 / 3, 2 / 3, 2 / 3, 0.0))
    # Text is compared stripped, whitespace-collapsed and case-folded; order does not matter.
    assert sentence_scores(["Take it  daily.", "Rest."], ["rest.", " take it daily."]) == (
        1.0,
        1.0,
        1.0,
        1.0,
    )
    # Indices work too; a superset is not an exact match: P = 2/3, R = 1, F1 = 0.8
    assert sentence_scores([0, 2], [0, 2, 5]) == pytest.approx((2 / 3, 1.0, 0.8, 0.0))
    # Empty prediction scores 0 everywhere.
    assert sentence_scores([1, 2], []) == (0.0, 0.0, 0.0, 0.0)
    # AnswerSentence-shaped dicts use their text.
    assert sentence_scores(["A b."], [{"text": "a B.", "chunk_ids": []}])[3] == 1.0


def test_sentence_measures_macro_average() -> None:
    out = sentence_measures([["s1", "s2", "s3"], [1, 2]], [["s2", "s3", "s4"], [2, 1]])
    # rows (2/3, 2/3, 2/3, 0) and (1, 1, 1, 1)
    assert out == pytest.approx(
        {"precision": 5 / 6, "recall": 5 / 6, "f1": 5 / 6, "exact_match": 0.5, "n": 2}
    )
    assert sentence_measures([], [])["n"] == 0
