"""BatchedClaimTripleExtractor: one call per chunk + gleaning; lost items recovered per item."""

from __future__ import annotations

from biorag.extract import BatchedClaimTripleExtractor
from biorag.extract.models import Triple
from biorag.llm.evidence import parse_passages

# A claim quoted as the passage block of a triples prompt (a regex for mock rules).
CLAIM = 'Claim:\n<passage id="[^"]*">\n'

T1 = (
    "Metformin lowers fasting glucose and reduces body weight. It can cause lactic acidosis. "
    "It is the first-line therapy for type 2 diabetes and is contraindicated in severe renal "
    "impairment."
)
T2 = "Aspirin inhibits platelet aggregation. It did not reduce mortality in healthy elderly people."

BATCHED_1 = """CLAIM: Metformin lowers fasting glucose.
SUBJECT: metformin
PREDICATE: lowers
OBJECT: fasting glucose

CLAIM: Metformin reduces body weight.
SUBJECT: metformin
PREDICATE: reduces

SUBJECT: metformin
PREDICATE: can cause
OBJECT: lactic acidosis

CLAIM: Metformin is the first-line therapy for type 2 diabetes.
"""

RULES = [
    {"stage": "claims_triples", "match": "Metformin lowers", "response": BATCHED_1},
    {"stage": "claims_triples", "match": "Aspirin", "response": "I found nothing to report."},
    {"stage": "claims_gleaning", "match": "Metformin lowers", "response": (
        "CLAIM: Metformin is contraindicated in severe renal impairment.\n"
        "SUBJECT: metformin\nPREDICATE: is contraindicated in\nOBJECT: severe renal impairment\n"
        "\nCLAIM: Metformin lowers fasting glucose.\nSUBJECT: metformin\nPREDICATE: lowers\n"
        "OBJECT: fasting glucose"
    )},
    {"stage": "claims_gleaning", "match": "Aspirin", "response": "NO_ADDITIONAL_CLAIMS"},
    {"stage": "claims", "match": "Aspirin", "response": (
        "CLAIM: Aspirin inhibits platelet aggregation.\n"
        "CLAIM: Aspirin did not reduce mortality in healthy elderly people."
    )},
    {"stage": "triples_repair", "match": CLAIM + "Metformin reduces body weight",
     "response": "SUBJECT: metformin\nPREDICATE: reduces\nOBJECT: body weight"},
    {"stage": "triples", "match": CLAIM + "Metformin is the first-line",
     "response": "SUBJECT: metformin\nPREDICATE: is\nOBJECT: first-line therapy"},
    {"stage": "triples", "match": CLAIM + "Aspirin inhibits",
     "response": "SUBJECT: aspirin\nPREDICATE: inhibits\nOBJECT: platelet aggregation"},
    {"stage": "triples", "match": CLAIM + "Aspirin did not",
     "response": "SUBJECT: aspirin\nPREDICATE: did not reduce\nOBJECT: mortality"},
]  # fmt: skip


async def test_partly_malformed_output_is_recovered(mock_llm, chunk, stage_calls) -> None:
    llm = mock_llm(RULES)
    c1, c2 = chunk(T1, "d1"), chunk(T2, "d2", 1)
    ex = BatchedClaimTripleExtractor(llm)
    claims = await ex.extract_claims([c1, c2])
    got = [(c.text, c.triple_source, c.chunk_id) for c in claims]
    assert got == [
        ("Metformin lowers fasting glucose.", "llm", c1.id),
        ("Metformin reduces body weight.", "llm_repair", c1.id),
        ("metformin can cause lactic acidosis", "llm", c1.id),
        ("Metformin is the first-line therapy for type 2 diabetes.", "llm", c1.id),
        ("Metformin is contraindicated in severe renal impairment.", "llm", c1.id),
        ("Aspirin inhibits platelet aggregation.", "llm", c2.id),
        ("Aspirin did not reduce mortality in healthy elderly people.", "llm", c2.id),
    ]
    assert claims[1].triple == Triple(
        subject="metformin", predicate="reduces", object="body weight"
    )
    assert ex.fallback_chunks == 1
    assert stage_calls(llm) == {
        "claims_triples": 2,
        "claims_gleaning": 2,  # chunk 1's batched gleaning + chunk 2's fallback gleaning
        "claims": 1,  # chunk 2 had no parsable claim: LLMClaimExtractor
        "triples": 3,  # the claim without triple lines + chunk 2's two claims
        "triples_repair": 1,  # the claim whose triple had no OBJECT
    }
    # the repair saw the batched lines of the broken triple
    repair = next(r for r in llm.backend.calls if r.stage == "triples_repair")
    assert "SUBJECT: metformin\nPREDICATE: reduces" in repair.last_user_message()
    # the batched gleaning listed the claims found, the orphan triple's words included
    gleaning = next(
        r
        for r in llm.backend.calls
        if r.stage == "claims_gleaning" and "Metformin" in r.messages[-1]["content"]
    )
    quoted = [t for _, t in parse_passages(gleaning.last_user_message())]
    assert "metformin can cause lactic acidosis" in quoted[1:]  # after the chunk's block


async def test_good_output_needs_two_calls_per_chunk(mock_llm, chunk, stage_calls) -> None:
    good = (
        "CLAIM: Aspirin inhibits platelet aggregation.\n"
        "SUBJECT: aspirin\nPREDICATE: inhibits\nOBJECT: platelet aggregation"
    )
    llm = mock_llm(
        [
            {"stage": "claims_triples", "response": good},
            {"stage": "claims_gleaning", "response": "NO_ADDITIONAL_CLAIMS"},
        ]
    )
    claims = await BatchedClaimTripleExtractor(llm).extract_claims([chunk(T2)])
    assert [(c.text, c.triple_source) for c in claims] == [
        ("Aspirin inhibits platelet aggregation.", "llm")
    ]
    assert stage_calls(llm) == {"claims_triples": 1, "claims_gleaning": 1}


async def test_without_gleaning(mock_llm, chunk, stage_calls) -> None:
    llm = mock_llm([{"stage": "claims_triples", "response": BATCHED_1}, {"response": "junk"}])
    claims = await BatchedClaimTripleExtractor(llm, gleaning=False).extract_claims([chunk(T1)])
    assert len(claims) == 4 and all(c.triple is not None for c in claims)
    assert "claims_gleaning" not in stage_calls(llm)


async def test_block_cut_off_at_max_tokens_is_dropped(chunk) -> None:
    from biorag.llm import LLM, ChatResponse

    class Cut:
        name, model = "cut", "cut"

        async def chat(self, req):
            if req.stage == "claims_triples":
                text = BATCHED_1.split("\n\nSUBJECT: metformin\nPREDICATE: can")[0]
                text += "\n\nCLAIM: Metformin is the first-line"
                return ChatResponse(text=text, finish_reason="length")
            if req.stage == "triples_repair":
                return ChatResponse(text="SUBJECT: metformin\nPREDICATE: reduces\nOBJECT: weight")
            return ChatResponse(text="NO_ADDITIONAL_CLAIMS")

    llm = LLM(Cut(), max_retries=0)
    claims = await BatchedClaimTripleExtractor(llm).extract_claims([chunk(T1)])
    assert [c.text for c in claims] == [
        "Metformin lowers fasting glucose.",
        "Metformin reduces body weight.",
    ]
