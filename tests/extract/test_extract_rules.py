"""The no-LLM floor: clause splitting, reference resolution, pattern triples, entities."""

from __future__ import annotations

import pytest

from biorag.extract import (
    PatternTripleExtractor,
    RuleClaimExtractor,
    count_references,
    pattern_triple,
    rule_based_entities,
    rule_based_triple,
    split_clauses,
)
from biorag.extract.models import Claim


def texts(text: str) -> list[tuple[str, int]]:
    return RuleClaimExtractor().claim_texts(text)


@pytest.mark.parametrize(
    ("sentence", "parts"),
    [
        (
            "Metformin increased insulin sensitivity and decreased hepatic glucose output.",
            [
                "Metformin increased insulin sensitivity.",
                "Metformin decreased hepatic glucose output.",
            ],
        ),
        (
            "In adults with heart failure, dapagliflozin reduced hospitalization and improved "
            "quality of life.",
            [
                "In adults with heart failure, dapagliflozin reduced hospitalization.",
                "In adults with heart failure, dapagliflozin improved quality of life.",
            ],
        ),
        (
            "Statins lower LDL cholesterol, whereas niacin raises HDL cholesterol.",
            ["Statins lower LDL cholesterol.", "Niacin raises HDL cholesterol."],
        ),
        (
            "IL-6 was elevated; however, TNF-α did not change.",
            ["IL-6 was elevated.", "TNF-α did not change."],
        ),
        (
            "Metformin lowered glucose and insulin increased body weight.",
            ["Metformin lowered glucose.", "Insulin increased body weight."],
        ),
        (
            "Patients treated with metformin lost weight and gained muscle.",
            [
                "Patients treated with metformin lost weight.",
                "Patients treated with metformin gained muscle.",
            ],
        ),
        # no split: coordinated noun phrases, a verbless half
        ("Aspirin reduced the risk of stroke and myocardial infarction.", None),
        ("Levels of IL-6 and TNF-α were higher in patients with sepsis.", None),
        ("Metformin and insulin lower glucose.", None),
        ("Hypertension; diabetes; obesity.", None),
    ],
)
def test_split_clauses(sentence: str, parts: list[str] | None) -> None:
    assert split_clauses(sentence) == (parts or [sentence])


def test_pronoun_resolved_to_previous_subject() -> None:
    assert texts("Metformin lowers glucose. It also reduces weight.") == [
        ("Metformin lowers glucose.", 0),
        ("Metformin also reduces weight.", 0),
    ]


def test_unresolved_reference_is_counted() -> None:
    # a pronoun left as the subject names nothing: no claim (claim_problem)
    assert texts("It reduces inflammation.") == []
    assert texts("These patients improved after surgery.") == [
        ("These patients improved after surgery.", 1)
    ]


def test_demonstratives_prefer_matching_head_or_class() -> None:
    got = texts(
        "Adults with type 2 diabetes were randomized to empagliflozin or placebo. "
        "This drug lowered HbA1c. These patients also lost weight."
    )
    assert [t for t, _ in got] == [
        "Adults with type 2 diabetes were randomized to empagliflozin or placebo.",
        "Empagliflozin lowered HbA1c.",
        "Adults with type 2 diabetes also lost weight.",
    ]
    assert all(n == 0 for _, n in got)


def test_possessives_plural_and_within_sentence() -> None:
    got = texts(
        "Statins reduce LDL cholesterol. Their benefit is largest in older adults. "
        "Warfarin is effective because it inhibits vitamin K epoxide reductase."
    )
    assert [t for t, _ in got] == [
        "Statins reduce LDL cholesterol.",
        "Statins' benefit is largest in older adults.",
        "Warfarin is effective because warfarin inhibits vitamin K epoxide reductase.",
    ]


def test_number_agreement_and_expletive_it() -> None:
    got = texts(
        "It is well known that BRCA1 mutations increase the risk of ovarian cancer. "
        "They also increase breast cancer risk."
    )
    assert got == [  # "It is well known that X" is the claim X
        ("BRCA1 mutations increase the risk of ovarian cancer.", 0),
        ("BRCA1 mutations also increase breast cancer risk.", 0),
    ]


def test_person_pronouns_and_split_after_resolution() -> None:
    got = texts(
        "A 45-year-old woman presented with fever. "
        "She had elevated CRP and her white cell count was high."
    )
    assert [t for t, _ in got] == [
        "A 45-year-old woman presented with fever.",
        "A 45-year-old woman had elevated CRP.",
        "A 45-year-old woman's white cell count was high.",
    ]


def test_count_references() -> None:
    assert count_references("Metformin lowers glucose.") == 0
    assert count_references("It lowers glucose in these patients.") == 2
    assert count_references("Trials showed that metformin lowers glucose.") == 0
    assert count_references("Diseases such as asthma are common.") == 0


async def test_rule_claim_extractor_dedupes_and_totals(chunk) -> None:
    ex = RuleClaimExtractor()
    c1 = chunk("RESULTS: Metformin lowers glucose. It is cheap.", "d1")
    c2 = chunk("Metformin lowers glucose. They were excluded.", "d2", 1)
    claims = await ex.extract_claims([c1, c2])
    c3 = chunk("These patients were excluded.", "d3", 2)
    claims = await ex.extract_claims([c1, c2, c3])
    assert [(c.text, c.chunk_id, c.unresolved_references) for c in claims] == [
        ("Metformin lowers glucose.", c1.id, 0),
        ("Metformin is cheap.", c1.id, 0),
        # "They were excluded." (an unresolved pronoun as the subject) is no claim
        ("These patients were excluded.", c3.id, 1),
    ]
    assert claims[0].id == Claim.make_id(c1.id, "Metformin lowers glucose.")
    assert ex.unresolved_total == 1


@pytest.mark.parametrize(
    ("claim", "triple"),
    [
        ("Metformin lowers fasting glucose.", ("Metformin", "lowers", "fasting glucose")),
        ("TNF-α is inhibited by IL-10.", ("IL-10", "inhibits", "TNF-α")),
        (
            "Tumor growth was not suppressed by the vaccine.",
            ("vaccine", "does not suppress", "Tumor growth"),
        ),
        (
            "Aspirin did not reduce mortality in healthy elderly people.",
            ("Aspirin", "did not reduce", "mortality in healthy elderly people"),
        ),
        (
            "Obesity is associated with insulin resistance.",
            ("Obesity", "is associated with", "insulin resistance"),
        ),
        (
            "IL-6 levels are higher in patients with sepsis.",
            ("IL-6 levels", "are higher in", "patients with sepsis"),
        ),
        (
            "Smoking is a risk factor for lung cancer.",
            ("Smoking", "is a risk factor for", "lung cancer"),
        ),
        ("Trastuzumab binds to HER2.", ("Trastuzumab", "binds to", "HER2")),
        ("CRP correlates with disease activity.", ("CRP", "correlates with", "disease activity")),
        (
            "In adults with hypertension, lisinopril may prevent stroke.",
            ("lisinopril", "may prevent", "stroke"),
        ),
        (
            "Trials showed that vitamin D supplementation failed to reduce fractures.",
            ("vitamin D supplementation", "failed to reduce", "fractures"),
        ),
        (
            "Patients with diabetes received metformin.",
            ("Patients with diabetes", "received", "metformin"),
        ),
        (
            "Metformin is the first-line oral therapy.",
            ("Metformin", "is", "first-line oral therapy"),
        ),
        # nouns that look like verbs ("results", "increase"), nouns ending like adjectives
        ("The treatment improves survival.", ("treatment", "improves", "survival")),
        ("Analyses yielded similar results.", ("Analyses", "yielded", "similar results")),
        # "There" names no entity; the extractor rewrites the claim "No increase in mortality
        # was observed." (test_rule_claims_wellformed)
        ("There was no increase in mortality.", None),
    ],
)
def test_pattern_triples(claim: str, triple: tuple[str, str, str] | None) -> None:
    t = pattern_triple(claim)
    if triple is None:
        assert t is None
        return
    assert t is not None and (t.subject, t.predicate, t.object) == triple


def test_rule_based_entities() -> None:
    assert rule_based_entities("Serum TNF-α and IL-6 levels predicted mortality.") == [
        "Serum TNF-α",
        "IL-6 levels",
        "mortality",
    ]
    assert rule_based_entities("BRCA1 carriers received olaparib 300 mg twice daily.") == [
        "BRCA1 carriers",
        "olaparib 300 mg",
    ]
    assert rule_based_entities("Patients taking lisinopril or metoprolol had fewer strokes.")[
        :3
    ] == [
        "Patients",
        "lisinopril",
        "metoprolol",
    ]
    assert rule_based_entities("Smoking is a risk factor for lung cancer.") == [
        "Smoking",
        "lung cancer",
    ]
    # two content phrases without biomedical cues still give two entities
    assert rule_based_entities("Exercise improves mood.") == ["Exercise", "mood"]
    assert rule_based_entities("Hypertension.") == ["Hypertension"]
    assert rule_based_entities("") == []


def test_rule_based_triple_never_fails() -> None:
    t = rule_based_triple("Exercise improves mood.")
    assert (t.subject, t.predicate, t.object) == ("Exercise", "associated", "mood")
    assert rule_based_triple("Unknown.").is_complete()


async def test_pattern_extractor_sources() -> None:
    claims = [
        Claim(id=f"c{i}", text=t, chunk_id="k", doc_id="d")
        for i, t in enumerate(["Aspirin inhibits COX-1.", "Very rare in children, sadly"])
    ]
    out = await PatternTripleExtractor().extract_triples(claims)
    assert [c.triple_source for c in out] == ["pattern", "rule_based"]
    assert all(c.triple and c.triple.is_complete() for c in out)
