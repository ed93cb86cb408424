"""Lenient parsing of CLAIM lines, triple lines, blocks, entities; triple validation."""

from __future__ import annotations

from biorag.extract.models import Triple
from biorag.extract.parsing import (
    is_no_additional,
    normalize_claim,
    parse_blocks,
    parse_claim_lines,
    parse_entities,
    parse_relation,
    parse_triple,
    parse_triple_fields,
    triple_problem,
)


def test_claim_lines_with_junk_numbering_and_bullets() -> None:
    answer = """Sure! Here are the claims extracted from the text:

1. CLAIM: Metformin lowers fasting glucose in adults with type 2 diabetes.
2) **CLAIM:** Metformin reduces body weight by 2 kg over 12 months.
- CLAIM 3: Metformin is the first-line oral therapy for type 2 diabetes.
* claim: Lactic acidosis is a rare adverse effect of metformin.
CLAIM: "Metformin is contraindicated in severe renal impairment."
Claims:
Note: all claims are decontextualized.
CLAIM: Metformin lowers fasting glucose in adults with type 2 diabetes
```
"""
    assert parse_claim_lines(answer) == [
        "Metformin lowers fasting glucose in adults with type 2 diabetes.",
        "Metformin reduces body weight by 2 kg over 12 months.",
        "Metformin is the first-line oral therapy for type 2 diabetes.",
        "Lactic acidosis is a rare adverse effect of metformin.",
        "Metformin is contraindicated in severe renal impairment.",
    ]


def test_claim_lines_missing_prefix_and_wrapped_lines() -> None:
    answer = (
        "CLAIM: In a trial of 240 adults, empagliflozin lowered HbA1c by 0.6%\n"
        "compared with placebo.\n"
        "Empagliflozin reduced systolic blood pressure by 4 mmHg.\n"
        "• Empagliflozin increased genital infections.\n"
        "ok\n"
    )
    assert parse_claim_lines(answer) == [
        "In a trial of 240 adults, empagliflozin lowered HbA1c by 0.6% compared with placebo.",
        "Empagliflozin reduced systolic blood pressure by 4 mmHg.",
        "Empagliflozin increased genital infections.",
    ]


def test_no_additional_claims_token() -> None:
    for text in ("NO_ADDITIONAL_CLAIMS", "no additional claims.", "  **NO_ADDITIONAL_CLAIMS**"):
        assert is_no_additional(text)
        assert parse_claim_lines(text) == []
    assert not is_no_additional("CLAIM: Aspirin inhibits platelet aggregation.")
    # the token glued to a real claim keeps the claim
    assert parse_claim_lines("CLAIM: Aspirin inhibits COX-1. NO_ADDITIONAL_CLAIMS") == [
        "Aspirin inhibits COX-1."
    ]


def test_normalize_and_dedupe() -> None:
    assert normalize_claim("  Aspirin  inhibits COX‑1. ") == normalize_claim(
        "aspirin inhibits cox-1"
    )
    assert parse_claim_lines("CLAIM: Aspirin inhibits COX-1.\nCLAIM: aspirin  inhibits COX-1") == [
        "Aspirin inhibits COX-1."
    ]


def test_triple_fields_lenient() -> None:
    text = "Here is the triple:\n**SUBJECT:** aspirin\n- Predicate - inhibits\nObject: COX-1\n"
    assert parse_triple(text) == Triple(subject="aspirin", predicate="inhibits", object="COX-1")
    assert parse_triple_fields("SUBJECT: a\nRELATION: binds") == {
        "SUBJECT": "a",
        "PREDICATE": "binds",
    }
    assert parse_triple("SUBJECT: aspirin\nPREDICATE: inhibits") is None


def test_triple_problem() -> None:
    claim = "Early cast-related complaints predicted complex regional pain syndrome."
    good = Triple(subject="cast-related complaints", predicate="predicted", object="syndrome")
    assert triple_problem(good, claim) is None
    assert "all three" in triple_problem(None, claim)
    empty = Triple(subject="complaints", predicate=" ", object="N/A")
    assert "PREDICATE, OBJECT fields were empty" in triple_problem(empty, claim)
    made_up = Triple(subject="aspirin", predicate="predicted", object="syndrome")
    assert "not taken from the claim" in triple_problem(made_up, claim)
    assert triple_problem(made_up, claim, grounded=False) is None
    # soft: a shared 5-letter prefix counts ("predicts" vs "predicted")
    soft = Triple(subject="complaint", predicate="x", object="regional pain")
    assert triple_problem(soft, claim) is None


def test_blocks() -> None:
    text = """1. CLAIM: Aspirin inhibits platelet aggregation.
SUBJECT: aspirin
PREDICATE: inhibits
OBJECT: platelet aggregation

2. CLAIM: Aspirin did not reduce mortality in healthy elderly people.
SUBJECT: aspirin
PREDICATE: did not reduce

CLAIM: Clopidogrel blocks the P2Y12 receptor.
SUBJECT: warfarin
PREDICATE: inhibits
OBJECT: vitamin K epoxide reductase
"""
    blocks = parse_blocks(text)
    assert [b.claim for b in blocks] == [
        "Aspirin inhibits platelet aggregation.",
        "Aspirin did not reduce mortality in healthy elderly people.",
        "Clopidogrel blocks the P2Y12 receptor.",
    ]
    assert blocks[0].triple() == Triple(
        subject="aspirin", predicate="inhibits", object="platelet aggregation"
    )
    assert blocks[1].triple() is None and blocks[1].raw == [
        "SUBJECT: aspirin",
        "PREDICATE: did not reduce",
    ]
    # a repeated field starts an orphan block (no claim)
    orphan = parse_blocks(
        "SUBJECT: a\nPREDICATE: b\nOBJECT: c\nSUBJECT: d\nPREDICATE: e\nOBJECT: f"
    )
    assert [(b.claim, b.triple().subject) for b in orphan] == [("", "a"), ("", "d")]


def test_entities_and_relation() -> None:
    assert parse_entities("ENTITY: metformin\nENTITY: HbA1c\nENTITY: weight") == [
        "metformin",
        "HbA1c",
        "weight",
    ]
    assert parse_entities("The entities are:\n1. metformin\n2. HbA1c") == ["metformin", "HbA1c"]
    assert parse_entities("metformin, HbA1c") == ["metformin", "HbA1c"]
    assert parse_entities("none") == []
    assert parse_relation("RELATION: lowers") == "lowers"
    assert parse_relation("lowers") == "lowers"
    assert parse_relation("RELATION:") is None
    assert parse_relation("I cannot tell which relation the claim states here, sorry.") is None


def test_words_that_start_like_labels_are_not_labels() -> None:
    assert parse_claim_lines("- Subject-level analysis showed lower glucose with metformin.") == [
        "Subject-level analysis showed lower glucose with metformin."
    ]
    assert parse_triple_fields("Object = glucose\nSubject – metformin") == {
        "OBJECT": "glucose",
        "SUBJECT": "metformin",
    }
