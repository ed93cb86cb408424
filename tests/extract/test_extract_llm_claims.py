"""LLMClaimExtractor: single stage + gleaning, two stage, dedupe, failures."""

from __future__ import annotations

import pytest

from biorag.errors import LLMError
from biorag.extract import LLMClaimExtractor
from biorag.extract.models import Claim
from biorag.llm.evidence import parse_passages

T1 = "Metformin lowers glucose. It also reduces weight."
T2 = "Aspirin inhibits platelet aggregation. Aspirin did not reduce mortality."


async def test_single_stage_with_gleaning(mock_llm, chunk, stage_calls) -> None:
    llm = mock_llm(
        [
            {"stage": "claims", "match": "Metformin lowers", "response": (
                "Here are the claims:\n1. CLAIM: Metformin lowers glucose.\n"
                "2. CLAIM: Metformin lowers glucose\n"
            )},
            {"stage": "claims_gleaning", "match": "Metformin lowers",
             "response": "CLAIM: Metformin also reduces weight.\nCLAIM: metformin lowers glucose."},
            {"stage": "claims", "match": "Aspirin inhibits", "response": (
                "CLAIM: Aspirin inhibits platelet aggregation.\n"
                "CLAIM: Aspirin did not reduce mortality.\n"
                "CLAIM: Metformin lowers glucose."  # also in chunk 1: deduped across chunks
            )},
            {"stage": "claims_gleaning", "match": "Aspirin inhibits",
             "response": "NO_ADDITIONAL_CLAIMS"},
        ]
    )  # fmt: skip
    c1, c2 = chunk(T1, "d1"), chunk(T2, "d2", 1)
    claims = await LLMClaimExtractor(llm).extract_claims([c1, c2])
    assert [(c.text, c.chunk_id, c.doc_id) for c in claims] == [
        ("Metformin lowers glucose.", c1.id, "d1"),
        ("Metformin also reduces weight.", c1.id, "d1"),
        ("Aspirin inhibits platelet aggregation.", c2.id, "d2"),
        ("Aspirin did not reduce mortality.", c2.id, "d2"),
    ]
    assert claims[0].id == Claim.make_id(c1.id, "Metformin lowers glucose.")
    assert all(c.triple is None for c in claims)
    assert stage_calls(llm) == {"claims": 2, "claims_gleaning": 2}
    # the gleaning prompt shows the claims already found and the chunk
    gleaning = [r for r in llm.backend.calls if r.stage == "claims_gleaning"]
    # (the chunk first, as one passage block with its id; then the claims, numbered from 1)
    assert parse_passages(gleaning[0].last_user_message())[:2] == [
        (c1.id, T1),
        ("1", "Metformin lowers glucose."),
    ]
    assert all(r.template_version for r in llm.backend.calls)


async def test_without_gleaning_and_empty_chunks(mock_llm, chunk, stage_calls) -> None:
    llm = mock_llm([{"stage": "claims", "response": "CLAIM: Metformin lowers glucose."}])
    ex = LLMClaimExtractor(llm, gleaning=False)
    claims = await ex.extract_claims([chunk(T1), chunk("   \n", index=1)])
    assert [c.text for c in claims] == ["Metformin lowers glucose."]
    assert stage_calls(llm) == {"claims": 1}


async def test_two_stage_decontextualizes(mock_llm, chunk, stage_calls) -> None:
    llm = mock_llm(
        [
            {"stage": "claims", "response": "CLAIM: Metformin lowers glucose.\n"
             "CLAIM: It also reduces weight."},
            {"stage": "claims_gleaning", "response": "NO_ADDITIONAL_CLAIMS"},
            {"stage": "decontextualize", "response": "CLAIM: Metformin lowers glucose.\n"
             "CLAIM: Metformin also reduces weight."},
        ]
    )  # fmt: skip
    claims = await LLMClaimExtractor(llm, "two_stage").extract_claims([chunk(T1)])
    assert [c.text for c in claims] == [
        "Metformin lowers glucose.",
        "Metformin also reduces weight.",
    ]
    assert stage_calls(llm) == {"claims": 1, "claims_gleaning": 1, "decontextualize": 1}
    first = llm.backend.calls[0].last_user_message()
    assert "atomic statement" in first  # the plain extraction prompt
    decon = llm.backend.calls[-1].last_user_message()
    assert parse_passages(decon)[1:] == [
        ("1", "Metformin lowers glucose."),
        ("2", "It also reduces weight."),
    ]


async def test_two_stage_keeps_originals_when_rewrite_is_empty(mock_llm, chunk) -> None:
    llm = mock_llm(
        [
            {"stage": "claims", "response": "CLAIM: Metformin lowers glucose."},
            {"stage": "decontextualize", "response": "I cannot do that."},
        ]
    )
    ex = LLMClaimExtractor(llm, "two_stage", gleaning=False)
    assert [c.text for c in await ex.extract_claims([chunk(T1)])] == ["Metformin lowers glucose."]


async def test_cut_off_last_claim_is_dropped(mock_llm, chunk) -> None:
    class Cut:
        """A backend answering like a model that ran out of tokens."""

        name, model = "cut", "cut"

        async def chat(self, req):
            from biorag.llm import ChatResponse

            return ChatResponse(
                text="CLAIM: Metformin lowers glucose.\nCLAIM: Metformin also reduces",
                finish_reason="length",
            )

    from biorag.llm import LLM

    llm = LLM(Cut(), max_retries=0)
    ex = LLMClaimExtractor(llm, gleaning=False)
    assert [c.text for c in await ex.extract_claims([chunk(T1)])] == ["Metformin lowers glucose."]


async def test_one_failed_chunk_does_not_sink_the_others(mock_llm, chunk) -> None:
    llm = mock_llm(
        [
            {"stage": "claims", "match": "Aspirin", "error": "fatal"},
            {"stage": "claims", "response": "CLAIM: Metformin lowers glucose."},
            {"stage": "claims_gleaning", "response": "NO_ADDITIONAL_CLAIMS"},
        ]
    )
    claims = await LLMClaimExtractor(llm).extract_claims([chunk(T1), chunk(T2, index=1)])
    assert [c.text for c in claims] == ["Metformin lowers glucose."]
    assert llm.accounting.stage("claims").failures == 1


async def test_all_failed_raises(mock_llm, chunk) -> None:
    llm = mock_llm([{"stage": "claims", "error": "fatal", "message": "server down"}])
    with pytest.raises(LLMError, match="server down"):
        await LLMClaimExtractor(llm).extract_claims([chunk(T1)])


def test_unknown_strategy(mock_llm) -> None:
    with pytest.raises(ValueError, match="single_stage or two_stage"):
        LLMClaimExtractor(mock_llm([{"response": ""}]), "three_stage")  # type: ignore[arg-type]
