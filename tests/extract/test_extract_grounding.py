"""Made-up claims (words mostly absent from their chunk) are dropped and counted."""

from __future__ import annotations

from biorag.extract import BatchedClaimTripleExtractor
from biorag.extract.claims import LLMClaimExtractor
from biorag.extract.grounding import grounded_share, is_grounded
from biorag.llm.evidence import parse_passages

LACE = (
    "Programmed cell death (PCD) in the lace plant forms perforations in its leaves. "
    "Mitochondria of cells undergoing PCD changed their dynamics, and cyclosporin A reduced "
    "the number of perforations in 12 of 15 leaves."
)
# the few-shot example of the claims prompt, copied by a small model into another chunk's claims
COPIED = (
    "In a 2019 randomized trial of 240 adults with type 2 diabetes, empagliflozin lowered HbA1c "
    "by 0.6% compared with placebo."
)
FAITHFUL = "In the lace plant, cyclosporin A reduces the number of leaf perforations."


def test_faithful_claims_pass_and_copied_or_renumbered_ones_fail():
    assert is_grounded(FAITHFUL, LACE)
    assert is_grounded("Mitochondrial dynamics changed during programmed cell death.", LACE)
    assert grounded_share(COPIED, LACE) == 0.0 and not is_grounded(COPIED, LACE)
    # numbers must occur as they are; only "cyclosporin" of 7 content words is in the text
    assert not is_grounded("Cyclosporin A cured 3 of 99 patients with melanoma in 2011.", LACE)
    assert grounded_share("It is.", LACE) == 1.0  # no content words: nothing to judge


async def test_batched_extraction_drops_a_copied_claim_before_gleaning(mock_llm, chunk) -> None:
    answer = (
        f"CLAIM: {FAITHFUL}\nSUBJECT: cyclosporin A\nPREDICATE: reduces\n"
        "OBJECT: the number of leaf perforations\n\n"
        f"CLAIM: {COPIED}\nSUBJECT: empagliflozin\nPREDICATE: lowered\nOBJECT: HbA1c"
    )
    llm = mock_llm(
        [
            {"stage": "claims_triples", "response": answer},
            {"stage": "claims_gleaning", "response": f"CLAIM: {COPIED}"},
        ]
    )
    ex = BatchedClaimTripleExtractor(llm)
    claims = await ex.extract_claims([chunk(LACE)])
    assert [c.text for c in claims] == [FAITHFUL]
    assert ex.ungrounded == 2  # once in the first answer, once in the gleaning answer
    gleaning = next(r for r in llm.backend.calls if r.stage == "claims_gleaning")
    listed = [t for _, t in parse_passages(gleaning.last_user_message())][1:]
    assert listed == [FAITHFUL]  # the gleaning call never saw the copied claim

    off = BatchedClaimTripleExtractor(mock_llm([{"stage": "claims_triples", "response": answer}]),
                                      gleaning=False, ground_claims=False)  # fmt: skip
    assert len(await off.extract_claims([chunk(LACE)])) == 2 and off.ungrounded == 0


async def test_claim_extractor_drops_made_up_claims(mock_llm, chunk) -> None:
    llm = mock_llm([{"stage": "claims", "response": f"CLAIM: {FAITHFUL}\nCLAIM: {COPIED}"},
                    {"response": "NO_ADDITIONAL_CLAIMS"}])  # fmt: skip
    ex = LLMClaimExtractor(llm)
    claims = await ex.extract_claims([chunk(LACE)])
    assert [c.text for c in claims] == [FAITHFUL] and ex.ungrounded == 1


async def test_a_chunk_whose_claims_are_all_made_up_is_not_extracted_again(
    mock_llm, chunk, stage_calls
) -> None:
    answer = f"CLAIM: {COPIED}\nSUBJECT: empagliflozin\nPREDICATE: lowered\nOBJECT: HbA1c"
    llm = mock_llm(
        [
            {"stage": "claims_triples", "response": answer},
            {"stage": "claims_gleaning", "response": "NO_ADDITIONAL_CLAIMS"},
        ]
    )
    ex = BatchedClaimTripleExtractor(llm)
    assert await ex.extract_claims([chunk(LACE)]) == []
    assert ex.ungrounded == 1 and ex.fallback_chunks == 0
    assert stage_calls(llm) == {"claims_triples": 1, "claims_gleaning": 1}


def test_the_check_can_be_switched_off_for_the_papers_setting(mock_llm) -> None:
    from biorag.config import Settings
    from biorag.extract import build_extraction
    from biorag.methods.registry import build_method
    from biorag.runtime import Runtime

    llm = mock_llm([{"response": ""}])
    assert build_extraction(llm).claim_extractor.ground_claims
    assert not build_extraction(llm, ground_claims=False).claim_extractor.ground_claims
    faithful = build_extraction(llm, mode="faithful", ground_claims=False)
    assert faithful.claim_extractor.grounded is False
    method = build_method("claims", Runtime(Settings()), {"drop_ungrounded_claims": False})
    assert method.options["drop_ungrounded_claims"] is False
