"""build_extraction / Extraction, and the component-study alternatives."""

from __future__ import annotations

import pytest

from biorag.extract import (
    STAGES,
    BatchedClaimTripleExtractor,
    DirectTripleExtractor,
    EntityPairExtractor,
    Extraction,
    LLMClaimExtractor,
    LLMTripleExtractor,
    build_extraction,
)
from biorag.extract.models import Triple

# A claim quoted as the passage block of a triples prompt (a regex for mock rules).
CLAIM = 'Claim:\n<passage id="[^"]*">\n'

TEXT = "Metformin lowers glucose. It also reduces weight. It reduces weight."


async def test_no_llm_floor(chunk) -> None:
    ex = build_extraction(None)
    assert ex.floor and "floor" in repr(ex)
    claims = await ex.run([chunk(TEXT), chunk("It is cheap. Aspirin is inhibited by X.", index=1)])
    assert [(c.text, c.triple_source) for c in claims] == [
        ("Metformin lowers glucose.", "pattern"),
        ("Metformin also reduces weight.", "pattern"),
        ("Metformin reduces weight.", "pattern"),
        ("Aspirin is inhibited by X.", "pattern"),  # "It is cheap." (unresolved) is no claim
    ]
    assert all(c.triple and c.triple.is_complete() for c in claims)
    assert ex.stats == {
        "mode": "rules",
        "strategy": "rules",
        "floor": True,
        "chunks": 2,
        "pieces": 2,
        "claims": 4,
        "unresolved_references": 0,
        "reference_words": 0,
        "triple_sources": {"pattern": 4},
        "ungrounded_claims": 0,
    }


def test_factory_picks_the_operators(mock_llm) -> None:
    llm = mock_llm([{"response": ""}])
    batched = build_extraction(llm)
    assert isinstance(batched.claim_extractor, BatchedClaimTripleExtractor)
    assert batched.triple_extractor is None
    faithful = build_extraction(llm, "faithful", "two_stage")
    assert isinstance(faithful.claim_extractor, LLMClaimExtractor)
    assert faithful.claim_extractor.strategy == "two_stage"
    assert isinstance(faithful.triple_extractor, LLMTripleExtractor)
    assert isinstance(build_extraction(llm, strategy="direct_triples").claim_extractor,
                      DirectTripleExtractor)  # fmt: skip
    assert isinstance(build_extraction(llm, "faithful", "entity_pairs").claim_extractor,
                      EntityPairExtractor)  # fmt: skip
    with pytest.raises(ValueError, match="needs mode='faithful'"):
        build_extraction(llm, "batched", "two_stage")
    with pytest.raises(ValueError, match="unknown extraction mode"):
        build_extraction(llm, "fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown extraction strategy"):
        build_extraction(llm, strategy="triples")  # type: ignore[arg-type]
    assert {"claims", "claims_gleaning", "triples_repair", "claims_triples"} <= set(STAGES)


async def test_faithful_run(mock_llm, chunk, stage_calls) -> None:
    llm = mock_llm(
        [
            {"stage": "claims", "response": "CLAIM: Metformin lowers glucose.\n"
             "CLAIM: Metformin reduces weight."},
            {"stage": "claims_gleaning", "response": "CLAIM: Metformin reduces weight."},
            {"stage": "triples", "match": CLAIM + "Metformin lowers",
             "response": "SUBJECT: metformin\nPREDICATE: lowers\nOBJECT: glucose"},
            {"stage": "triples", "response": "SUBJECT: metformin"},
            {"stage": "triples_repair",
             "response": "SUBJECT: metformin\nPREDICATE: reduces\nOBJECT: weight"},
        ]
    )  # fmt: skip
    ex = build_extraction(llm, "faithful")
    claims = await ex.run([chunk(TEXT)])
    assert [c.triple_source for c in claims] == ["llm", "llm_repair"]
    assert ex.stats["triple_sources"] == {"llm": 1, "llm_repair": 1}
    assert ex.stats["floor"] is False and ex.stats["unresolved_references"] == 0
    assert stage_calls(llm) == {"claims": 1, "claims_gleaning": 1, "triples": 2,
                                "triples_repair": 1}  # fmt: skip


async def test_batched_run(mock_llm, chunk, stage_calls) -> None:
    llm = mock_llm(
        [
            {"stage": "claims_triples", "response": (
                "CLAIM: Metformin lowers glucose.\nSUBJECT: metformin\nPREDICATE: lowers\n"
                "OBJECT: glucose\n\nCLAIM: Metformin reduces weight.\nSUBJECT: weight"
            )},
            {"stage": "claims_gleaning", "response": "NO_ADDITIONAL_CLAIMS"},
            {"stage": "triples_repair", "response": "nothing"},
            {"stage": "triples_entities", "response": "ENTITY: metformin\nENTITY: weight"},
            {"stage": "triples_relation", "response": "RELATION: reduces"},
        ]
    )  # fmt: skip
    ex = build_extraction(llm)
    claims = await ex.run([chunk(TEXT)])
    assert [(c.text, c.triple_source) for c in claims] == [
        ("Metformin lowers glucose.", "llm"),
        ("Metformin reduces weight.", "llm_entities_relation"),
    ]
    assert ex.stats["triple_sources"] == {"llm": 1, "llm_entities_relation": 1}
    assert ex.stats["mode"] == "batched" and ex.stats["claims"] == 2
    assert stage_calls(llm) == {"claims_triples": 1, "claims_gleaning": 1, "triples_repair": 1,
                                "triples_entities": 1, "triples_relation": 1}  # fmt: skip


async def test_long_chunks_are_cut_into_pieces(chunk) -> None:
    class Words:
        """A token counter of whitespace words (the real one needs no test here)."""

        def count_many(self, texts):
            return [len(t.split()) for t in texts]

    text = " ".join(f"Drug{i} lowers glucose{i}." for i in range(6))
    ex = build_extraction(None, max_chunk_tokens=7, counter=Words())  # type: ignore[arg-type]
    assert isinstance(ex, Extraction)
    c = chunk(text)
    pieces = ex.pieces([c])
    assert [p.text for p in pieces] == [
        "Drug0 lowers glucose0. Drug1 lowers glucose1.",
        "Drug2 lowers glucose2. Drug3 lowers glucose3.",
        "Drug4 lowers glucose4. Drug5 lowers glucose5.",
    ]
    assert {p.id for p in pieces} == {c.id}
    claims = await ex.run([c])
    assert len(claims) == 6 and {x.chunk_id for x in claims} == {c.id}
    assert ex.stats["pieces"] == 3


async def test_direct_triples(mock_llm, chunk, stage_calls) -> None:
    llm = mock_llm(
        [
            {"stage": "direct_triples", "response": (
                "SUBJECT: metformin\nPREDICATE: lowers\nOBJECT: glucose\n\n"
                "SUBJECT: metformin\nPREDICATE: reduces\nOBJECT: weight\n\n"
                "SUBJECT: insulin\nPREDICATE: causes\nOBJECT: hypoglycemia\n\n"  # not in text
                "SUBJECT: metformin\nPREDICATE:\nOBJECT: weight\n\n"  # empty predicate
                "SUBJECT: metformin\nPREDICATE: lowers\nOBJECT: glucose"  # duplicate
            )},
        ]
    )  # fmt: skip
    c = chunk(TEXT)
    claims = await build_extraction(llm, strategy="direct_triples").run([c])
    assert [(x.text, x.triple_source, x.chunk_id) for x in claims] == [
        ("metformin lowers glucose", "direct", c.id),
        ("metformin reduces weight", "direct", c.id),
    ]
    assert claims[0].triple == Triple(subject="metformin", predicate="lowers", object="glucose")
    assert stage_calls(llm) == {"direct_triples": 1}


async def test_entity_pairs(mock_llm, chunk, stage_calls) -> None:
    llm = mock_llm(
        [
            {"stage": "pair_entities", "match": "Metformin",
             "response": "ENTITY: metformin\nENTITY: glucose\nENTITY: weight"},
            {"stage": "pair_entities", "response": "ENTITY: aspirin"},  # one entity: no pairs
            {"stage": "pair_relations", "response": (
                "SUBJECT: metformin\nPREDICATE: lowers\nOBJECT: glucose\n\n"
                "SUBJECT: Metformin\nPREDICATE: reduces\nOBJECT: body weight\n\n"
                "SUBJECT: metformin\nPREDICATE: treats\nOBJECT: diabetes"  # not a listed entity
            )},
        ]
    )  # fmt: skip
    c1 = chunk(TEXT + " Metformin reduces body weight.")
    c2 = chunk("Aspirin is old.", index=1)
    claims = await EntityPairExtractor(llm).extract_claims([c1, c2])
    assert [(x.text, x.triple_source) for x in claims] == [
        ("metformin lowers glucose", "entity_pairs"),
        ("Metformin reduces body weight", "entity_pairs"),
    ]
    assert stage_calls(llm) == {"pair_entities": 2, "pair_relations": 1}
    rel = next(r for r in llm.backend.calls if r.stage == "pair_relations")
    assert "- metformin\n- glucose\n- weight" in rel.last_user_message()
