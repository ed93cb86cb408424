"""BioASQ Task B measures against hand-computed values (official evaluator definitions)."""

from __future__ import annotations

import math

import pytest

from biorag.eval.metrics.bioasq import (
    EPSILON,
    average_precision,
    document_measures,
    factoid_measures,
    factoid_scores,
    gmap,
    list_measures,
    list_prf,
    yesno_label,
    yesno_measures,
)


def test_average_precision_bioasq8_denominator() -> None:
    # Relevant at ranks 1 and 3: P@1 = 1, P@3 = 2/3 -> sum 5/3, divided by min(|gold| = 3, 10)
    assert average_precision(["d1", "d2", "d3"], ["d1", "d4", "d2", "d5"]) == pytest.approx(5 / 9)
    # 12 gold documents, 10 submitted, all relevant: sum P@r = 10, / min(12, 10) = 1.0
    gold = [f"g{i}" for i in range(12)]
    assert average_precision(gold, gold[:10]) == pytest.approx(1.0)
    # Only the first 10 submitted documents count.
    assert average_precision(["x"], [f"n{i}" for i in range(10)] + ["x"]) == 0.0
    # Duplicates are dropped: [d1, d2] -> (1 + 1) / 2
    assert average_precision(["d1", "d2"], ["d1", "d1", "d2"]) == pytest.approx(1.0)
    assert average_precision([], ["d1"]) == 0.0


def test_gmap_epsilon() -> None:
    assert EPSILON == 0.00001  # EvaluatorTask1b.java: double epsilon = 0.00001
    aps = [1.0, 0.25, 0.0]
    expected = math.exp((math.log(1.00001) + math.log(0.25001) + math.log(0.00001)) / 3)
    assert gmap(aps) == pytest.approx(expected)
    assert gmap(aps) == pytest.approx(0.0135723, abs=1e-7)
    # With epsilon 0.01: exp((ln 1.01 + ln 0.26 + ln 0.01) / 3) = 0.13796
    assert gmap(aps, epsilon=0.01) == pytest.approx(0.13796, abs=1e-5)
    assert gmap([]) == 0.0


def test_document_measures() -> None:
    out = document_measures(
        [["d1", "d2", "d3"], ["d9"], []],
        [["d1", "d4", "d2", "d5"], [], ["d7"]],
    )
    # q1: P = 2/4, R = 2/3, F1 = 2*(1/2)*(2/3)/(7/6) = 4/7, AP = 5/9
    # q2: empty submission -> all 0; q3: no gold documents -> skipped
    assert out["n"] == 2
    assert out["precision"] == pytest.approx(0.25)
    assert out["recall"] == pytest.approx(1 / 3)
    assert out["f1"] == pytest.approx(2 / 7)
    assert out["map"] == pytest.approx(5 / 18)
    assert out["gmap"] == pytest.approx(math.sqrt((5 / 9 + EPSILON) * EPSILON))
    assert document_measures([[]], [["x"]])["n"] == 0


def test_yesno_official_confusion() -> None:
    golds = ["yes", "yes", "no", "no", "yes"]
    preds = ["yes", "no", "no", None, "Yes."]
    # correct: T F T F T -> accuracy 3/5
    # F1 yes: TP = 2 (gold yes, right), FN = 1 (gold yes, wrong), FP = 1 (gold no, wrong)
    #         -> 4 / (4 + 1 + 1) = 2/3
    # F1 no:  TP = 1, FN = 1 (the unanswered one), FP = 1 -> 2 / (2 + 1 + 1) = 1/2
    out = yesno_measures(golds, preds)
    assert out == pytest.approx(
        {"accuracy": 0.6, "f1_yes": 2 / 3, "f1_no": 0.5, "macro_f1": 7 / 12, "n": 5}
    )
    # All gold "yes", all right: F1_no has a zero denominator -> 0 (official), macro = 1/2
    assert yesno_measures(["yes"], ["yes"])["macro_f1"] == 0.5


def test_yesno_label() -> None:
    assert yesno_label(" YES ") == "yes"
    assert yesno_label("No.") == "no"
    assert yesno_label("unknown") is None
    assert yesno_label("yes and no") is None
    assert yesno_label(None) is None


def test_factoid_strict_lenient_mrr_with_synonyms() -> None:
    gold = [["IL-6", "interleukin 6"]]
    assert factoid_scores(gold, ["Interleukin  6", "TNF"]) == (1.0, 1.0, 1.0)
    assert factoid_scores(gold, ["TNF", "il-6"]) == (0.0, 1.0, 0.5)
    # Only the top 5 candidates count.
    assert factoid_scores(gold, ["a", "b", "c", "d", "e", "IL-6"]) == (0.0, 0.0, 0.0)
    # A plain string, a flat synonym list as gold, candidates with their own synonyms.
    assert factoid_scores("IL-6", "il-6") == (1.0, 1.0, 1.0)
    assert factoid_scores(["IL-6", "interleukin 6"], [["x"], ["y", "interleukin 6"]]) == (
        0.0,
        1.0,
        0.5,
    )
    assert factoid_scores(gold, None) == (0.0, 0.0, 0.0)
    out = factoid_measures(
        [gold, gold, gold], [["IL-6"], ["TNF", "IL-6"], ["a", "b", "c", "d", "e", "IL-6"]]
    )
    # strict (1 + 0 + 0)/3, lenient (1 + 1 + 0)/3, MRR (1 + 1/2 + 0)/3
    assert out == pytest.approx(
        {"strict_accuracy": 1 / 3, "lenient_accuracy": 2 / 3, "mrr": 0.5, "n": 3}
    )


def test_list_prf_with_synonyms() -> None:
    gold = [["BRCA1", "breast cancer 1"], ["BRCA2"], ["TP53", "p53"]]
    pred = ["brca1", "p53", "EGFR", "breast cancer 1"]
    # brca1 -> gold 1 (TP), p53 -> gold 3 (TP), EGFR -> FP, "breast cancer 1" -> gold 1 already
    # consumed -> FP. FN: BRCA2 unmatched. P = 2/4, R = 2/3, F1 = 4/7
    assert list_prf(gold, pred) == pytest.approx((0.5, 2 / 3, 4 / 7))
    # A repeated answer is a false positive: P = 1/2, R = 1, F1 = 2/3
    assert list_prf([["a"]], ["a", "A "]) == pytest.approx((0.5, 1.0, 2 / 3))
    assert list_prf(gold, []) == (0.0, 0.0, 0.0)
    # Official quirk reproduced: "y" consumes the first gold entry; the second gold entry
    # ["y"] is then excused (not a FN) because a submitted entry names it -> P = R = 1.
    assert list_prf([["x", "y"], ["y"]], ["y"]) == (1.0, 1.0, 1.0)
    out = list_measures([gold, [["a"]]], [pred, ["a"]])
    assert out == pytest.approx(
        {"precision": 0.75, "recall": (2 / 3 + 1) / 2, "f1": (4 / 7 + 1) / 2, "n": 2}
    )
