"""The rules verifier (claim alignment) on sentences whose verdict is plain, with MiniLM."""

from __future__ import annotations

import pytest

from biorag.verify.agreement import direction, disagreement, negated, numbers
from biorag.verify.align import locate, verify_pairs

PASSAGE = (
    "Metformin is the first-line oral therapy for type 2 diabetes. In a trial of 420 "
    "patients, metformin reduced HbA1c by 1.2% over 24 weeks. Weight did not change."
)


def _one(minilm, sentence: str, passage: str = PASSAGE):
    (v,) = verify_pairs([(sentence, "c1", passage)], minilm)
    return v


def test_a_sentence_the_passage_states_is_supported_with_its_span(minilm):
    v = _one(minilm, "In a trial of 420 patients, metformin reduced HbA1c by 1.2% over 24 weeks.")
    assert v.label == "supported"
    assert v.span is not None and PASSAGE[v.span.start : v.span.end] == v.span.text
    assert "420 patients" in v.span.text


def test_a_sentence_about_something_else_is_not_supported(minilm):
    v = _one(minilm, "Atorvastatin lowers LDL cholesterol in adults with hypercholesterolemia.")
    assert v.label == "not_supported"


@pytest.mark.parametrize(
    ("sentence", "why"),
    [
        ("Metformin did not reduce HbA1c in a trial of 420 patients over 24 weeks.", "negation"),
        ("In a trial of 420 patients, metformin reduced HbA1c by 3.5% over 24 weeks.", "numbers"),
        ("In a trial of 420 patients, metformin increased HbA1c by 1.2% over 24 weeks.",
         "direction"),
    ],
)  # fmt: skip
def test_a_changed_negation_number_or_direction_contradicts(minilm, sentence, why):
    v = _one(minilm, sentence)
    assert v.label == "contradicted", v
    assert v.reason.startswith(why)


def test_half_a_sentence_backed_is_partly_supported(minilm):
    half = ("Metformin is the first-line oral therapy for type 2 diabetes and it also prevents "
            "migraine attacks in adolescents and cures alopecia.")  # fmt: skip
    assert _one(minilm, half).label == "partly_supported"


def test_an_empty_passage_is_not_supported_not_an_error(minilm):
    v = _one(minilm, "Metformin lowers glucose.", "   ")
    assert v.label == "not_supported" and v.span is None and v.reason == "empty passage"


def test_the_agreement_checks():
    assert negated("X did not reduce Y") and not negated("X reduced Y")
    assert not negated("no patient was not treated")  # two cues cancel
    assert numbers("12.5 mg in 1,200 patients, 30 %") == {("12.5", "mg"), ("1200", "patient"),
                                                          ("30", "%")}  # fmt: skip
    assert numbers("published in 2019") == set()
    assert direction("levels increased") == 1 and direction("levels decreased") == -1
    assert direction("increased then decreased") == 0
    assert disagreement("dose of 5 mg", "dose of 10 mg").startswith("numbers")
    assert disagreement("dose of 5 mg", "dose of 5 mg") == ""
    assert disagreement("5 mg given to 10 patients", "given to 12 patients").startswith("numbers")


def test_a_span_is_located_as_the_model_copied_it():
    assert locate("reduced  HBA1C by", PASSAGE) is not None
    start, end = locate("reduced  HBA1C by", PASSAGE)
    assert PASSAGE[start:end] == "reduced HbA1c by"
    assert locate("not in there", PASSAGE) is None and locate("", PASSAGE) is None
