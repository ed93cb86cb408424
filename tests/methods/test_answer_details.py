"""``Answer.details`` is one typed model per method: unknown or mistyped fields fail where the
trace is made, and an answer's JSON reads back as the same model."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from biorag.methods import details as d
from biorag.methods.base import Answer

Q = d.QueryParts(text="q options", rewritten="q")
CHUNKS = {"context_chunk_ids": ["c1"], "context_tokens": 10, "token_limit": 100}
TRACES = [
    d.AnswerDetails(),
    d.RankedChunksDetails(
        query=Q, retrieved=[d.RetrievedChunk(chunk_id="c1", retrieval_rank=1, rerank_score=0.5)],
        **CHUNKS,
    ),
    d.ClaimChunksDetails(
        query=Q, claims=[d.RankedClaim(id="k", text="t", chunk_id="c1", doc_id="d", score=1.0)],
        context_claim_ids=["k"], extraction={"floor": True}, context_tokens=5, token_limit=9,
    ),
    d.RaptorDetails(query=Q, raptor={"nodes": []}, context_tokens=1, token_limit=2),
    d.CragDetails(
        crag=d.CragTrace(action="correct", scores={"c1": 0.9}, keyword_query=None,
                         searched_again=[], strips_kept=2)
    ),
    d.KGTripletDetails(
        search_terms=["malaria"],
        matched_entities=[d.MatchedEntity(term="malaria", entity="Malaria", similarity=1.0)],
        triplets=[d.RankedTriplet(subject="a", predicate="b", object="c", score=0.4)],
        params={"k": 10},
    ),
    d.IPRARDetails(prereasoning={}, levels={"abstract": "proxy"}, same_doc_by="doc_id",
                   lists={"chunk@abstract": [{"chunk_id": "c1"}]}, aggregated=[]),
    d.ClaimsDetails(query=None, claims=[], claims_of_interest=[], summaries=[], graph={},
                    extraction={}, denoise=None, seconds={"answer": 0.1}),
]  # fmt: skip


@pytest.mark.parametrize("trace", TRACES, ids=lambda t: type(t).__name__)
def test_json_reads_back_as_the_same_model(trace: d.AnswerDetails) -> None:
    trace.exact_answer = d.ExactAnswerTrace(value=["KRX1"], method="floor", qtype="factoid")
    ans = Answer(method="m", question_id="q", answer="x", details=trace)
    back = Answer.model_validate_json(ans.model_dump_json())
    assert type(back.details) is type(trace) and back.details == trace
    assert back.model_dump()["details"]["exact_answer"]["value"] == ["KRX1"]


def test_unknown_and_mistyped_fields_are_refused() -> None:
    with pytest.raises(ValidationError, match="extra"):
        d.RaptorDetails(query=Q, raptor={}, context_tokens=1, token_limit=2, tokens=3)
    trace = d.IPRARDetails(
        prereasoning={}, levels={}, same_doc_by="doc_id", lists={}, aggregated=[]
    )
    with pytest.raises(ValidationError):
        trace.final_chunks = "c1"  # type: ignore[assignment]
    with pytest.raises(ValidationError):
        d.IPRARDetails(prereasoning={}, levels={}, same_doc_by="pmid", lists={}, aggregated=[])
    with pytest.raises(ValidationError):
        Answer(method="m", question_id="q", answer="x", details={"crag": {"action": "x"}})


def test_context_fit_is_typed_on_every_answer() -> None:
    ans = Answer(method="m", question_id="q", answer="x")
    ans.details.context_fit = [
        d.ContextFit(stage="answer", window=2048, prompt_tokens=2000, max_tokens=48, dropped=["3"])
    ]
    assert ans.model_dump()["details"]["context_fit"][0]["dropped"] == ["3"]
    schema = Answer.model_json_schema()
    names = {ref["$ref"].rsplit("/", 1)[-1] for ref in schema["properties"]["details"]["anyOf"]}
    assert {"ClaimsDetails", "IPRARDetails", "KGTripletDetails", "AnswerDetails"} <= names
