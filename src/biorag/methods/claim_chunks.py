"""Claim: the CLAIMS ablation without the graph - claims as the chunks of the context (app. J).

"We use the HyDE query generation method, and chunk the documents into propositional claims.
The claims are reranked and added to the model's context window up to the context limit."
Steps:

1. query: question + options + candidate answer (``build_query(rewrite=False, hyde=True)``; no
   LLM: question + options);
2. retrieval: the top ``k`` chunks per index (or the question's given passages), cleaned of
   special characters as CLAIMS does; pieces of at most ``max_chunk_tokens`` tokens;
3. claims: ``build_extraction(llm, mode)`` (default batched: claims with their triples, one call
   per piece); no LLM: the rule-based claims;
4. rerank: ``rt.reranker`` scores the claims against ``rerank_query`` (default the question);
5. context: claims in reranked order until ``token_limit`` tokens; 6. answer: the reader (no
   LLM: the option-scoring floor over the claims).
"""

from __future__ import annotations

from typing import Any

from biorag.corpus.models import Chunk
from biorag.corpus.text import clean_text
from biorag.errors import BioragError
from biorag.extract import build_extraction
from biorag.methods.base import Answer, QAMethod, Question
from biorag.methods.context import (
    DEFAULT_TOKEN_LIMIT,
    ContextItem,
    Fit,
    hyde_retrieve,
    merge_options,
    read_ranked,
    rerank,
)
from biorag.methods.details import ClaimChunksDetails, QueryParts, RankedClaim
from biorag.methods.rewrite import RERANK_QUERIES, rerank_text
from biorag.runtime import Runtime

#: ``k`` / ``retriever`` None: the ``[retrieval]`` settings. ``mode``: the extraction mode
#: (batched | faithful). ``rerank_query``: question | question+options | query.
DEFAULTS: dict[str, Any] = {
    "k": None,
    "retriever": None,
    "token_limit": DEFAULT_TOKEN_LIMIT,
    "mode": "batched",
    "max_chunk_tokens": 1024,
    "rerank_query": "question",
    "reader": "two-call",
}


class ClaimChunks(QAMethod):
    """The Claim ablation. Options: ``DEFAULTS``."""

    name = "claim"
    needs_index = True

    def __init__(self, runtime: Runtime, **options: Any):
        merged = merge_options(self.name, options, DEFAULTS)
        if merged["mode"] not in ("batched", "faithful"):
            raise BioragError(f"claim mode must be batched or faithful, got {merged['mode']!r}")
        if merged["rerank_query"] not in RERANK_QUERIES:
            raise BioragError(f"claim rerank_query must be one of {RERANK_QUERIES}")
        super().__init__(runtime, **merged)

    async def answer(self, question: Question) -> Answer:

        o = self.options
        # the query is used beyond the search only when the claims are reranked against it
        query_used = o["rerank_query"] == "query"
        query, passages = await hyde_retrieve(self.rt, question, o, query_used=query_used)
        chunks = []
        for i, p in enumerate(passages):
            text = clean_text(p.text)
            if text.strip():
                chunks.append(
                    Chunk(
                        id=p.chunk_id, doc_id=p.doc_id, index=i, start=p.start, end=p.end, text=text
                    )
                )
        extraction = build_extraction(
            self.rt.llm, mode=o["mode"], max_chunk_tokens=int(o["max_chunk_tokens"])
        )
        claims = await extraction.run(chunks) if chunks else []
        against = rerank_text(o["rerank_query"], question, query.text)
        ranked = await rerank(self.rt, against, claims, key=lambda c: c.text)
        notes = ["rule-based claims (no LLM)"] if self.rt.llm is None else []

        def details(items: list[ContextItem], fit: Fit) -> ClaimChunksDetails:
            return ClaimChunksDetails(
                query=QueryParts.model_validate(query.__dict__),
                claims=[
                    RankedClaim(
                        id=c.id, text=c.text, chunk_id=c.chunk_id, doc_id=c.doc_id, score=sc
                    )
                    for c, sc in ranked
                ],
                context_claim_ids=[str(it.key) for it in items],
                extraction=dict(getattr(extraction, "stats", {}) or {}),
                **fit,
            )

        candidates = [ContextItem(c.text, [c.chunk_id], sc, c.id) for c, sc in ranked]
        return await read_ranked(self, question, candidates, passages, details, notes=notes)
