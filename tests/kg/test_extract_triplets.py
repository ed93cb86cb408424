"""Triplet extraction: one LLM call per QA pair, batched calls with fallback, and no LLM."""

from __future__ import annotations

import json

from biorag.corpus.datasets.base import QAItem
from biorag.kg.extract_triplets import (
    QAPair,
    extract_qa_triplets,
    extract_text_triplets,
    parse_triplet_reply,
    qa_pairs_from_items,
    read_explanations,
)
from biorag.llm import LLM, MockBackend
from biorag.llm.evidence import parse_passages

PAIRS = [
    QAPair("q1", "Drug of choice for malaria?", "Chloroquine", "Chloroquine kills the parasite."),
    QAPair("q2", "Which hormone lowers blood glucose?", "Insulin"),
    QAPair("q3", "Which vitamin prevents scurvy?", "Vitamin C"),
    QAPair("q4", "Which ion is low in rickets?", "Phosphate"),
]


def llm(rules):
    return LLM(MockBackend(rules=rules), max_retries=0, retry_base_delay=0.0)


SINGLE = [
    {"match": "malaria", "response": "SUBJECT: Chloroquine\nPREDICATE: treats\nOBJECT: malaria"},
    {"match": "glucose", "response": "(Insulin, lowers, blood glucose)"},
    {"match": "scurvy", "response": "I am not sure."},
    {"match": "rickets", "response": "SUBJECT: Phosphate\nPREDICATE: is low in\nOBJECT: n/a"},
]


def triples(report):
    return [(t.source_id, t.subject, t.predicate, t.object) for t in report.triplets]


async def test_one_call_per_pair_and_dropped_ones_reported():
    client = llm(SINGLE)
    report = await extract_qa_triplets(PAIRS, client)
    assert triples(report) == [
        ("q1", "Chloroquine", "treats", "malaria"),
        ("q2", "Insulin", "lowers", "blood glucose"),
    ]
    assert [sid for sid, _ in report.dropped] == ["q3", "q4"]
    assert "SUBJECT" in report.dropped[0][1] and "placeholder object" in report.dropped[1][1]
    calls = client.backend.calls
    assert len(calls) == 4 and {c.stage for c in calls} == {"kg_triplets"}
    assert calls[0].messages[0]["role"] == "system"
    assert "Explanation: Chloroquine kills the parasite." in calls[0].last_user_message()
    assert "Explanation" not in calls[1].last_user_message()
    assert report.triplets[0].model == client.model
    plain = await extract_qa_triplets(PAIRS[:1], llm(SINGLE), use_explanation=False)
    assert len(plain.triplets) == 1


async def test_batched_with_a_lost_item_and_a_malformed_batch_falls_back_to_single_calls():
    batch_ok = [
        {"id": 1, "subject": "Chloroquine", "predicate": "treats", "object": "malaria"},
        {"id": 3, "subject": "Vitamin C", "predicate": "prevents", "object": "scurvy"},
    ]  # item 2 is lost
    rules = [
        {"stage": "kg_triplets_batch", "match": "malaria", "response": batch_ok},
        {"stage": "kg_triplets_batch", "response": "Sorry, here they are: [{oops"},
        {
            "stage": "kg_triplets",
            "match": "glucose",
            "response": "SUBJECT: Insulin\nPREDICATE: lowers\nOBJECT: glucose",
        },
        {
            "stage": "kg_triplets",
            "match": "rickets",
            "response": "SUBJECT: rickets\nPREDICATE: involves low\nOBJECT: Phosphate",
        },
    ]
    client = llm(rules)
    report = await extract_qa_triplets(PAIRS, client, batch_size=3)
    assert sorted(t.source_id for t in report.triplets) == ["q1", "q2", "q3", "q4"]
    assert report.dropped == []
    assert report.stats["batch_calls"] == 2 and report.stats["batch_fallbacks"] == 2
    stages = [c.stage for c in client.backend.calls]
    assert stages.count("kg_triplets_batch") == 2 and stages.count("kg_triplets") == 2
    first = client.backend.calls[0].last_user_message()
    quoted = parse_passages(first)
    assert [pid for pid, _ in quoted] == ["1", "2", "3"]
    assert quoted[0][1].startswith("Question: Drug of choice for malaria?\nCorrect answer: ")


async def test_batched_item_with_empty_field_is_asked_again_then_dropped():
    rules = [
        {
            "stage": "kg_triplets_batch",
            "response": json.dumps([{"id": 1, "subject": "", "predicate": "x", "object": "y"}]),
        },
        {"stage": "kg_triplets", "response": "SUBJECT: \nPREDICATE: treats\nOBJECT: malaria"},
    ]
    report = await extract_qa_triplets(PAIRS[:1], llm(rules), batch_size=4)
    assert report.triplets == [] and report.dropped == [("q1", "empty subject")]


async def test_no_llm_rules_over_explanation_and_answer_sentence():
    pairs = [
        QAPair(
            "a",
            "Which vitamin deficiency causes scurvy?",
            "Vitamin C",
            "Scurvy is caused by deficiency of vitamin C. It presents with bleeding gums.",
        ),
        QAPair("b", "Drug of choice for falciparum malaria is:", "Artemisinin"),
        QAPair("c", "", ""),
    ]
    report = await extract_qa_triplets(pairs, None)
    assert triples(report) == [
        ("a", "deficiency of vitamin C", "causes", "Scurvy"),
        ("b", "Drug of choice for falciparum malaria", "is", "Artemisinin"),
    ]
    assert {t.model for t in report.triplets} == {"rule-based"}
    assert len(report.dropped) == 1 and report.dropped[0][0] == "c"


async def test_text_triplets_sentences_claims_and_llm():
    text = [
        (
            "d1",
            "Metformin reduces hepatic glucose production. Aspirin inhibits platelet aggregation.",
        )
    ]
    rules = await extract_text_triplets(text, None)
    assert [(t.subject, t.predicate) for t in rules.triplets] == [
        ("Metformin", "reduces"),
        ("Aspirin", "inhibits"),
    ]
    claims = await extract_text_triplets(text, None, mode="claims")
    assert {t.source_id for t in claims.triplets} == {"d1"} and len(claims.triplets) == 2
    client = llm(
        [
            {
                "match": "Metformin",
                "response": "SUBJECT: Metformin\nPREDICATE: reduces\nOBJECT: hepatic glucose",
            },
            {"response": "nothing"},
        ]
    )
    report = await extract_text_triplets(text, client)
    assert len(report.triplets) == 1 and report.dropped[0][0] == "d1"
    assert {c.stage for c in client.backend.calls} == {"kg_triplets_text"}


def test_parsing_helpers_and_dataset_pairs(tmp_path):
    assert parse_triplet_reply("**SUBJECT:** A\n**PREDICATE:** b\n**OBJECT:** C") == ("A", "b", "C")
    assert parse_triplet_reply("The triplet is (A, binds, C).") == ("A", "binds", "C")
    assert isinstance(parse_triplet_reply("A binds C"), str)
    raw = tmp_path / "dev.json"
    raw.write_text(
        json.dumps({"id": "x1", "exp": "Because."}) + "\n" + json.dumps({"id": "x2"}) + "\n"
    )
    exp = read_explanations(raw)
    assert exp == {"x1": "Because."}
    item = QAItem(
        id="x1", dataset="medmcqa", question="Q?", options={"A": "yes", "B": "no"}, gold="B"
    )
    assert qa_pairs_from_items([item], exp) == [QAPair("x1", "Q?", "no", "Because.")]
