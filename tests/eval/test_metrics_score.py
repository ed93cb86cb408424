"""score_dataset: measures picked by dataset and question type; answered/unparseable counts."""

from __future__ import annotations

import pytest

from biorag.corpus.datasets.base import QAItem
from biorag.eval.metrics import dataset_family, score_dataset
from biorag.eval.metrics.bioasq import split_answers

ABCD = {"A": "aspirin", "B": "heparin", "C": "warfarin", "D": "insulin"}
YNM = {"A": "yes", "B": "no", "C": "maybe"}


def _mc(i: int, gold: str, subset: str = "") -> QAItem:
    return QAItem(id=f"q{i}", dataset="medqa", question="?", options=ABCD, gold=gold, subset=subset)


def test_dataset_family() -> None:
    assert dataset_family("PubMedQA") == "pubmedqa"
    assert dataset_family("bioasq-11b") == "bioasq"
    assert dataset_family("MASH-QA") == "mashqa"
    assert dataset_family("BioCDQA") == "biocdqa"
    assert dataset_family("medqa") == "generic"


def test_multiple_choice_counts_and_accuracy() -> None:
    items = [_mc(1, "A", "s1"), _mc(2, "B", "s1"), _mc(3, "C", "s2"), _mc(4, "D", "s2")]
    preds = {
        "q1": {"prediction": "A"},
        "q2": {"prediction": "B", "parse_failed": True},  # a parse failure is wrong
        "q3": "warfarin",  # a bare value; an option text resolves to its letter
    }  # q4 missing
    out = score_dataset("medqa", items, preds)
    assert (out["n"], out["answered"], out["unparseable"], out["missing"]) == (4, 2, 1, 1)
    assert out["accuracy"] == 0.5
    assert "macro_f1" not in out
    assert out["per_subset"] == {
        "s1": {"n": 2, "accuracy": 0.5},
        "s2": {"n": 2, "accuracy": 0.5},
    }


def test_pubmedqa_macro_f1_over_option_texts() -> None:
    golds = ["A", "A", "B", "C", "C"]  # yes yes no maybe maybe
    preds = ["A", "B", "b", "maybe", "A"]  # yes no no maybe yes
    items = [
        QAItem(
            id=f"p{i}", dataset="pubmedqa", question="?", options=YNM, gold=g, question_type="yesno"
        )
        for i, g in enumerate(golds)
    ]
    out = score_dataset(
        "pubmedqa", items, {f"p{i}": {"prediction": p} for i, p in enumerate(preds)}
    )
    assert out["accuracy"] == pytest.approx(3 / 5)
    # as in test_metrics_qa: (1/2 + 2/3 + 2/3) / 3
    assert out["macro_f1"] == pytest.approx((0.5 + 2 / 3 + 2 / 3) / 3)
    assert "yesno" not in out


def test_mirage_yesno_with_options_is_a_choice_question() -> None:
    items = [
        QAItem(
            id="m1",
            dataset="mirage",
            question="?",
            options=YNM,
            gold="C",
            question_type="yesno",
            subset="pubmedqa",
        ),
        QAItem(id="m2", dataset="mirage", question="?", options=ABCD, gold="B", subset="medqa"),
    ]
    out = score_dataset("mirage", items, {"m1": {"prediction": "C"}, "m2": {"prediction": "A"}})
    assert out["accuracy"] == 0.5
    assert out["per_subset"]["pubmedqa"]["accuracy"] == 1.0
    assert "yesno" not in out


def test_bioasq_by_type_and_documents() -> None:
    yn = {"A": "yes", "B": "no"}
    items = [
        QAItem(
            id="y1",
            dataset="bioasq",
            question="?",
            options=yn,
            gold="A",
            question_type="yesno",
            gold_docs=["1", "2"],
        ),
        QAItem(
            id="y2",
            dataset="bioasq",
            question="?",
            options=yn,
            gold="B",
            question_type="yesno",
            gold_docs=["3"],
        ),
        QAItem(
            id="f1",
            dataset="bioasq",
            question="?",
            gold=[["IL-6", "interleukin 6"]],
            question_type="factoid",
            gold_docs=["4"],
        ),
        QAItem(
            id="l1",
            dataset="bioasq",
            question="?",
            gold=[["BRCA1"], ["BRCA2"]],
            question_type="list",
        ),
        QAItem(id="s1", dataset="bioasq", question="?", gold="ideal", question_type="summary"),
    ]
    preds = {
        "y1": {"prediction": "yes", "documents": ["2", "9"]},
        "y2": {"prediction": "A", "documents": ["3"]},
        "f1": {"prediction": "TNF\ninterleukin 6"},
        "l1": {"prediction": ["brca1", "egfr"]},
        "s1": {"prediction": "some summary"},
    }
    out = score_dataset("bioasq", items, preds, scoring="biorag")
    assert out["yesno"]["accuracy"] == 0.5
    assert out["factoid"] == pytest.approx(  # biorag splits free text into candidates
        {"strict_accuracy": 0.0, "lenient_accuracy": 1.0, "mrr": 0.5, "n": 1}
    )
    assert out["list"] == pytest.approx({"precision": 0.5, "recall": 0.5, "f1": 0.5, "n": 1})
    assert out["summary"] == {"n": 1}
    docs = out["documents"]
    # y1: P 1/2, R 1/2, AP = P@1 / min(2, 10) = 1/2; y2: 1, 1, AP 1; f1: nothing -> 0.
    # l1 and s1 have no gold documents and are skipped.
    assert docs["n"] == 3
    assert docs["precision"] == pytest.approx(0.5)
    assert docs["map"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert "accuracy" not in out


def test_mashqa_and_biocdqa() -> None:
    items = [
        QAItem(id="m1", dataset="mashqa", question="?", gold=["S1.", "S2."], question_type="span"),
        QAItem(id="m2", dataset="mashqa", question="?", gold=["S3."], question_type="span"),
    ]
    preds = {"m1": {"prediction": "S1. S2.", "sentences": ["s1.", "s2."]}, "m2": {"prediction": ""}}
    out = score_dataset("mashqa", items, preds)
    assert out["sentences"] == pytest.approx(
        {"precision": 0.5, "recall": 0.5, "f1": 0.5, "exact_match": 0.5, "n": 2}
    )
    assert out["answered"] == 1

    items = [
        QAItem(
            id="c1",
            dataset="biocdqa",
            question="?",
            gold="ideal",
            question_type="summary",
            gold_docs=["10", "11"],
        ),
        QAItem(
            id="c2",
            dataset="biocdqa",
            question="?",
            gold="ideal",
            question_type="summary",
            gold_docs=["12"],
        ),
    ]
    out = score_dataset("biocdqa", items, {"c1": {"prediction": "x", "documents": ["10", "13"]}})
    # c1: P 1/2, R 1/2, F1 1/2; c2 missing: 0
    assert out["documents"] == pytest.approx(
        {"precision": 0.25, "recall": 0.25, "f1": 0.25, "n": 2}
    )
    assert "summary" not in out and out["missing"] == 1


def test_answer_alias_and_split_answers() -> None:
    items = [_mc(1, "B")]
    assert score_dataset("medqa", items, {"q1": {"answer": "b"}})["accuracy"] == 1.0
    assert split_answers('["IL-6", "TNF"]') == ["IL-6", "TNF"]
    assert split_answers("- BRCA1\n- BRCA2; TP53") == ["BRCA1", "BRCA2", "TP53"]
    assert split_answers("1. 2,4-D\n2. 5.2 mg") == ["2,4-D", "5.2 mg"]
    assert split_answers(["x"]) == ["x"]
