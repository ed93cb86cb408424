"""LLMTripleExtractor: the few-shot prompt and the paper's three fallbacks, in order."""

from __future__ import annotations

from biorag.extract import LLMTripleExtractor
from biorag.extract.models import Claim, Triple
from biorag.llm.evidence import format_passage

# A claim quoted as the passage block of a triples prompt (a regex for mock rules).
CLAIM = 'Claim:\n<passage id="[^"]*">\n'


def claim(text: str) -> Claim:
    return Claim(id=Claim.make_id("d:0-1", text), text=text, chunk_id="d:0-1", doc_id="d")


A = "Metformin lowers fasting glucose in adults with type 2 diabetes."
B = "Aspirin inhibits platelet aggregation."
C = "Statins reduce the risk of myocardial infarction."
D = "Smoking is a risk factor for lung cancer."

RULES = [
    # A: the first answer is fine -> llm
    {"stage": "triples", "match": CLAIM + "Metformin",
     "response": "SUBJECT: metformin\nPREDICATE: lowers\nOBJECT: fasting glucose"},
    # B: no OBJECT line -> the repair shows the answer and gets it right -> llm_repair
    {"stage": "triples", "match": CLAIM + "Aspirin",
     "response": "SUBJECT: aspirin\nPREDICATE: inhibits"},
    {"stage": "triples_repair", "match": CLAIM + "Aspirin",
     "response": "SUBJECT: aspirin\nPREDICATE: inhibits\nOBJECT: platelet aggregation"},
    # C: empty predicate, then a subject not in the claim -> entities + relation
    {"stage": "triples", "match": CLAIM + "Statins",
     "response": "SUBJECT: statins\nPREDICATE:\nOBJECT: myocardial infarction"},
    {"stage": "triples_repair", "match": CLAIM + "Statins",
     "response": "SUBJECT: atorvastatin 80 mg\nPREDICATE: reduces\nOBJECT: infarction"},
    {"stage": "triples_entities", "match": CLAIM + "Statins",
     "response": "ENTITY: statins\nENTITY: myocardial infarction\nENTITY: risk"},
    {"stage": "triples_relation", "match": CLAIM + "Statins",
     "response": "RELATION: reduce the risk of"},
    # D: everything malformed -> rule-based entities, relation "associated"
    {"stage": "triples", "match": CLAIM + "Smoking", "response": "(smoking, risk factor)"},
    {"stage": "triples_repair", "match": CLAIM + "Smoking", "response": "I am not sure."},
    {"stage": "triples_entities", "match": CLAIM + "Smoking", "response": "ENTITY: smoking"},
]  # fmt: skip


async def test_fallbacks_in_order(mock_llm, stage_calls) -> None:
    llm = mock_llm(RULES)
    claims = [claim(x) for x in (A, B, C, D)]
    out = await LLMTripleExtractor(llm).extract_triples(claims)
    assert [c.id for c in out] == [c.id for c in claims]  # same claims, same order
    assert [c.triple_source for c in out] == [
        "llm",
        "llm_repair",
        "llm_entities_relation",
        "rule_based",
    ]
    assert out[0].triple == Triple(
        subject="metformin", predicate="lowers", object="fasting glucose"
    )
    assert out[1].triple.object == "platelet aggregation"
    assert out[2].triple == Triple(
        subject="statins", predicate="reduce the risk of", object="myocardial infarction"
    )
    assert out[3].triple == Triple(subject="Smoking", predicate="associated", object="lung cancer")
    # each fallback ran only for the claims still without a triple
    assert stage_calls(llm) == {
        "triples": 4,
        "triples_repair": 3,
        "triples_entities": 2,
        "triples_relation": 1,
    }
    assert all(c.triple is None for c in claims)  # the inputs are not modified


async def test_repair_prompt_shows_the_malformed_answer_and_the_problem(mock_llm) -> None:
    llm = mock_llm(RULES)
    await LLMTripleExtractor(llm).extract_triples([claim(B)])
    repair = next(r for r in llm.backend.calls if r.stage == "triples_repair")
    text = repair.last_user_message()
    assert "SUBJECT: aspirin\nPREDICATE: inhibits" in text
    assert "did not contain all three lines" in text
    assert format_passage(claim(B).id, B) in text and "Claim:\n<passage id=" in text


async def test_relation_prompt_gets_the_first_two_entities(mock_llm) -> None:
    llm = mock_llm(RULES)
    await LLMTripleExtractor(llm).extract_triples([claim(C)])
    rel = next(r for r in llm.backend.calls if r.stage == "triples_relation")
    assert "First entity: statins" in rel.last_user_message()
    assert "Second entity: myocardial infarction" in rel.last_user_message()


async def test_empty_relation_falls_to_rules(mock_llm, stage_calls) -> None:
    llm = mock_llm(
        [
            {"stage": "triples", "response": "nothing"},
            {"stage": "triples_repair", "response": "still nothing"},
            {"stage": "triples_entities", "response": "ENTITY: aspirin\nENTITY: platelets"},
            {"stage": "triples_relation", "response": "RELATION:"},
        ]
    )
    (out,) = await LLMTripleExtractor(llm).extract_triples([claim(B)])
    assert out.triple_source == "rule_based"
    assert out.triple == Triple(
        subject="Aspirin", predicate="associated", object="platelet aggregation"
    )
    assert stage_calls(llm)["triples_relation"] == 1


async def test_failed_calls_count_as_malformed(mock_llm) -> None:
    llm = mock_llm([{"error": "fatal"}])
    (out,) = await LLMTripleExtractor(llm).extract_triples([claim(A)])
    assert out.triple_source == "rule_based"
    assert out.triple.subject == "Metformin"


async def test_claims_with_a_triple_pass_through(mock_llm, stage_calls) -> None:
    llm = mock_llm(RULES)
    done = claim(B).model_copy(
        update={"triple": Triple(subject="a", predicate="b", object="c"), "triple_source": "llm"}
    )
    out = await LLMTripleExtractor(llm).extract_triples([done, claim(A)])
    assert out[0] is done
    assert stage_calls(llm) == {"triples": 1}


async def test_previous_output_goes_straight_to_repair(mock_llm, stage_calls) -> None:
    llm = mock_llm(RULES)
    c = claim(B)
    (out,) = await LLMTripleExtractor(llm).extract_triples(
        [c], previous_outputs={c.id: "SUBJECT: aspirin\nOBJECT: platelets"}
    )
    assert out.triple_source == "llm_repair"
    assert stage_calls(llm) == {"triples_repair": 1}
