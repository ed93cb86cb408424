"""Accuracy, macro-F1 (PubMedQA's official definition) and per-subset scores."""

from __future__ import annotations

import random
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score

from biorag.eval.metrics.qa import accuracy, f1_per_label, macro_f1, per_subset


def test_accuracy_unanswered_counts_as_wrong() -> None:
    # A right, "b" == "B" right, None wrong, "" wrong -> 2 / 4
    assert accuracy(["A", "B", "C", "D"], ["A", "b ", None, ""]) == 0.5
    assert accuracy([], []) == 0.0
    with pytest.raises(ValueError):
        accuracy(["A"], [])


def test_macro_f1_hand_computed_matches_sklearn() -> None:
    golds = ["yes", "yes", "no", "maybe", "maybe"]
    preds = ["yes", "no", "no", "maybe", "yes"]
    # yes:   TP=1 (0), FP=1 (4), FN=1 (1) -> 2/(2+1+1) = 1/2
    # no:    TP=1 (2), FP=1 (1), FN=0     -> 2/3
    # maybe: TP=1 (3), FP=0,     FN=1 (4) -> 2/3
    per = f1_per_label(golds, preds)
    assert per == pytest.approx({"yes": 0.5, "no": 2 / 3, "maybe": 2 / 3})
    expected = (0.5 + 2 / 3 + 2 / 3) / 3
    assert macro_f1(golds, preds) == pytest.approx(expected)
    # PubMedQA evaluation.py: f1_score(truth, preds, average='macro')
    assert macro_f1(golds, preds) == pytest.approx(f1_score(golds, preds, average="macro"))


def test_macro_f1_equals_official_on_random_label_lists() -> None:
    rng = random.Random(7)
    labels = ["yes", "no", "maybe"]
    for _ in range(50):
        n = rng.randint(1, 30)
        g = [rng.choice(labels) for _ in range(n)]
        p = [rng.choice(labels) for _ in range(n)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            official = f1_score(g, p, average="macro")
        assert macro_f1(g, p) == pytest.approx(official)


def test_macro_f1_unanswered_is_a_false_negative_not_a_class() -> None:
    # yes: 1; no: TP=0, FP=0, FN=1 -> 0; maybe: 1 -> mean 2/3
    assert macro_f1(["yes", "no", "maybe"], ["yes", None, "maybe"]) == pytest.approx(2 / 3)
    # Explicit labels: an absent label scores 0 (sklearn's zero_division default).
    assert macro_f1(["yes", "no"], ["yes", "no"], labels=["yes", "no", "maybe"]) == pytest.approx(
        2 / 3
    )
    assert macro_f1([], []) == 0.0


def test_per_subset() -> None:
    out = per_subset(["anatomy", "anatomy", "genetics"], ["A", "B", "C"], ["A", "C", "C"])
    assert out == {"anatomy": {"n": 2, "accuracy": 0.5}, "genetics": {"n": 1, "accuracy": 1.0}}
    with pytest.raises(ValueError):
        per_subset(["x"], ["A", "B"], ["A", "B"])


_LABELS = ["yes", "no", "maybe"]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    pairs=st.lists(
        st.tuples(st.sampled_from(_LABELS), st.sampled_from([*_LABELS, None, "B"])), max_size=15
    ),
    labels=st.sampled_from([None, _LABELS, ["yes"]]),
)
def test_f1_per_label_is_the_textbook_formula(pairs, labels):
    golds, preds = [g for g, _ in pairs], [p for _, p in pairs]
    got = f1_per_label(golds, preds, labels)
    names = labels or sorted({*golds, *(p.lower() for p in preds if p is not None)} - {None})
    for name in names:
        tp = sum(g == name and (p or "").lower() == name for g, p in pairs)
        fp = sum(g != name and (p or "").lower() == name for g, p in pairs)
        fn = sum(g == name and (p or "").lower() != name for g, p in pairs)
        want = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 0.0
        assert abs(got[name] - want) < 1e-12, (name, got, want)
