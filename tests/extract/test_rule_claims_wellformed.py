"""The rule extractor emits only claims: no questions, enumeration items, verbless fragments,
section labels, or subjects that name no entity; and its triples' entities are noun phrases.
The sentences are the demo abstract's (PubMedQA 10340286) that became bad claims before."""

from __future__ import annotations

import pytest

from biorag.extract.patterns import is_entity, pattern_triple
from biorag.extract.rule_claims import RuleClaimExtractor, claim_problem, without_expletive

ABSTRACT = (
    "BACKGROUND: The diagnosis of acute appendicitis is still difficult. In particular, are "
    "there patients with acute appendicitis but unelevated leukocyte count and CRP? The four "
    "subgroups were: (1) both values elevated; (2) only leukocyte count elevated. We studied "
    "83 consecutive elderly patients. There was no statistically significant difference in "
    "leukocyte counts between the groups. Our study shows that CRP is useful. Mean age 83.7 "
    "years. Eighty-three consecutive elderly patients underwent appendectomy."
)


def test_the_demo_abstracts_bad_claims_are_gone():
    claims = [t for t, _ in RuleClaimExtractor().claim_texts(ABSTRACT)]
    assert claims == [
        "The diagnosis of acute appendicitis is still difficult.",
        "No statistically significant difference in leukocyte counts between the groups was "
        "observed.",
        "Eighty-three consecutive elderly patients underwent appendectomy.",
    ]


@pytest.mark.parametrize(
    ("clause", "problem"),
    [
        ("In particular, are there patients with acute appendicitis.", "question"),
        ("Does CRP rise in the elderly?", "question"),
        ("(2) only leukocyte count elevated.", "enumeration"),
        ("Mean age 83.7 years.", "no finite verb"),
        ("We studied 83 patients.", "subject names no entity"),
        ("Our study shows that CRP is useful.", "subject names no entity"),
        ("It is the first-line therapy.", "subject names no entity"),
        ("Too short.", "too short"),
        ("Metformin lowers blood glucose.", ""),
        ("Serum IL-6 was measured 12 hours after ERCP.", ""),
    ],
)
def test_what_is_no_claim(clause, problem):
    assert claim_problem(clause) == problem


def test_an_expletive_becomes_its_noun_phrase():
    assert without_expletive("There were fewer deaths in the treated group.") == (
        "Fewer deaths in the treated group were observed."
    )
    assert without_expletive("Metformin lowers glucose.") == "Metformin lowers glucose."


def test_entities_are_noun_phrases():
    assert is_entity("C-reactive protein") and is_entity("IL-6")
    for name in ("There", "We", "Our study", "18.0%", "83.7", "it", "the present study"):
        assert not is_entity(name), name
    t = pattern_triple("Our study increased awareness of appendicitis.")
    assert t is None or is_entity(t.subject)


@pytest.mark.parametrize(
    "clause",
    [
        "E. coli strains were resistant to ampicillin.",
        "H. pylori infection increases gastric cancer risk.",
        "When compared with placebo, metformin reduced HbA1c.",
        "May-Thurner syndrome is rare in young adults.",
        "US adults consumed more sugar than Europeans.",
        "One-year survival was 80% in both groups.",
        "I.v. ketamine reduced pain scores after surgery.",
        "Patients in group (3) improved after treatment.",
        "These patients improved after surgery.",
    ],
)
def test_claims_the_rules_must_not_drop(clause):
    assert claim_problem(clause) == "", clause


def test_a_hedge_is_not_made_a_fact_and_names_keep_their_case():
    assert without_expletive("It is well known that mRNA levels rise.") == "mRNA levels rise."
    assert without_expletive("It is possible that X causes Y.") == "It is possible that X causes Y."
    assert without_expletive("There was p53 loss in 12 tumours.") == (
        "p53 loss in 12 tumours was observed."
    )


def test_an_indirect_question_is_no_claim_but_an_unknown_is():
    assert claim_problem("Whether there is an association between CRP and sepsis.") == "question"
    assert claim_problem("Whether patients benefit from surgery remains unclear.") == ""
