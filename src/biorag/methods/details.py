"""``Answer.details``: what a method records about how it answered, one typed model per method.

Every model is an :class:`AnswerDetails`. The base holds what any answer can carry:
- the context fitting of its LLM requests (``context_fit``);
- the BioASQ exact-answer step (``exact_answer``).

Each method's subclass declares its own trace: the query, what was retrieved and ranked, the
claims, the graph, the levels. Unknown fields are refused and assignments are validated, so a
misspelt or mistyped trace fails where it is made, not in a reader of the JSON. The JSON is one
flat object per answer, as ``biorag ask --json`` and the service print it.

Nested structures that another module defines and serializes are typed as JSON objects here:
- the claim graph (:meth:`ClaimGraph.to_dict`);
- the RAPTOR tree;
- IP-RAR's per-list rows.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from biorag.answer.exact_result import ExactAnswer


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ContextFit(_Strict):
    """One LLM request whose passages were fitted to the model's context window."""

    stage: str
    window: int
    prompt_tokens: int
    max_tokens: int
    dropped: list[str] = Field(default_factory=list, description="passage ids left out")
    trimmed: list[str] = Field(
        default_factory=list,
        description="passage ids cut to their first sentences (one passage left, still too long)",
    )


class ExactAnswerTrace(_Strict, ExactAnswer):
    """The BioASQ exact-answer step (:class:`biorag.answer.exact.ExactAnswer`'s fields), with
    the error that sent it to the no-LLM floor, if any."""


class QueryParts(_Strict):
    """The query a method retrieved with (:class:`biorag.retrieve.query.Query`)."""

    text: str
    rewritten: str
    candidate_answer: str = ""


class AnswerDetails(_Strict):
    """What every answer can carry; a method without a trace of its own gives this."""

    context_fit: list[ContextFit] = Field(default_factory=list)
    exact_answer: ExactAnswerTrace | None = None


# -- retrieve-read, rewrite, HyDE ---------------------------------------------------------------
class RetrievedChunk(_Strict):
    chunk_id: str
    retrieval_rank: int
    rerank_score: float


class RankedChunksDetails(AnswerDetails):
    query: QueryParts
    retrieved: list[RetrievedChunk]
    context_chunk_ids: list[str]
    context_tokens: int
    token_limit: int


# -- claim chunks -------------------------------------------------------------------------------
class RankedClaim(_Strict):
    id: str
    text: str
    chunk_id: str
    doc_id: str
    score: float


class ClaimChunksDetails(AnswerDetails):
    query: QueryParts
    claims: list[RankedClaim]
    context_claim_ids: list[str]
    extraction: dict[str, Any]
    context_tokens: int
    token_limit: int


# -- CLAIMS -------------------------------------------------------------------------------------
class ClaimRow(_Strict):
    id: str
    text: str
    triple: dict[str, Any] | None
    triple_source: str | None
    chunk_id: str
    doc_id: str
    score: float
    relevance: float | None = None  # the embedder's cosine with the question
    relevant: bool | None


class ClaimOfInterest(_Strict):
    id: str
    text: str
    score: float
    test_summary: str
    test_summary_score: float


class SummaryRow(_Strict):
    root_claim_id: str
    text: str
    claim_ids: list[str]
    layer_sizes: list[int]
    rounds: int


class ClaimsDetails(AnswerDetails):
    query: QueryParts | None
    claims: list[ClaimRow]
    claims_of_interest: list[ClaimOfInterest]
    summaries: list[SummaryRow]
    graph: dict[str, Any] = Field(description="the claim graph, with layer_sizes per key claim")
    extraction: dict[str, Any]
    denoise: dict[str, Any] | None
    seconds: dict[str, float] = Field(default_factory=dict)


# -- CRAG ---------------------------------------------------------------------------------------
class CragTrace(_Strict):
    action: str
    scores: dict[str, float] = Field(description="each retrieved chunk's relevance score")
    keyword_query: str | None
    searched_again: list[str]
    strips_kept: int


class CragDetails(AnswerDetails):
    crag: CragTrace


# -- RAPTOR -------------------------------------------------------------------------------------
class RaptorDetails(AnswerDetails):
    query: QueryParts
    raptor: dict[str, Any] = Field(description="the tree: layers, nodes, children, selected")
    context_tokens: int
    token_limit: int


# -- VectorGraphRAG -----------------------------------------------------------------------------
class MatchedEntity(_Strict):
    term: str
    entity: str
    similarity: float


class RankedTriplet(_Strict):
    subject: str
    predicate: str
    object: str
    score: float


class KGTripletDetails(AnswerDetails):
    search_terms: list[str]
    matched_entities: list[MatchedEntity]
    triplets: list[RankedTriplet]
    params: dict[str, Any]


# -- IP-RAR -------------------------------------------------------------------------------------
class IPRARDetails(AnswerDetails):
    """Retrieval (set first) and progressive generation (set after: empty until then)."""

    prereasoning: dict[str, Any]
    levels: dict[str, str] = Field(description="where each enabled level searched")
    same_doc_by: Literal["doc_id", "source_id"]
    lists: dict[str, list[dict[str, Any]]] = Field(description="each ranked list's rows")
    aggregated: list[dict[str, Any]]
    relevance: list[dict[str, Any]] = Field(default_factory=list)
    selected: list[str] = Field(default_factory=list)
    draft_answer: str = ""
    support: list[dict[str, Any]] = Field(default_factory=list)
    final_chunks: list[str] = Field(default_factory=list)


# -- SELF-RAG -----------------------------------------------------------------------------------
class SelfRAGSegment(_Strict):
    """One passage's segment: the model's answer from it and its reflection on that answer."""

    chunk_id: str
    relevance: Literal["relevant", "irrelevant"]
    support: Literal["fully", "partially", "no"]
    utility: int = Field(ge=1, le=5)
    answer: str
    letter: str = Field(default="", description="the option chosen (multiple choice)")
    score: float = Field(default=0.0, description="the critique score")


class SelfRAGDetails(AnswerDetails):
    retrieved: bool = Field(description="whether passages were used (retrieval on demand)")
    mode: Literal["adaptive", "always"]
    segments: list[SelfRAGSegment] = Field(
        default_factory=list, description="usable segments, best critique score first"
    )
    unusable: int = Field(default=0, description="passages whose segment was not usable")


#: ``Answer.details``: one of the above. Validating a JSON object gives the model whose fields it
#: has (unknown fields are refused by every one); the JSON schema lists them all.
MethodDetails = Union[  # noqa: UP007 - a runtime alias pydantic reads
    ClaimsDetails,
    ClaimChunksDetails,
    RankedChunksDetails,
    CragDetails,
    RaptorDetails,
    KGTripletDetails,
    IPRARDetails,
    SelfRAGDetails,
    AnswerDetails,
]
