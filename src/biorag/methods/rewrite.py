"""Rewrite: the rewritten question retrieves chunks; reranked, they fill the context (section 4.2).

The Rewrite baseline of the CLAIMS paper: "Question rewriting is used to retrieve unstructured
documents, added with reranking to the model's context window until the context limit is
reached." Steps:

1. query: the LLM's rewrite of the question (``build_query(rewrite=True, hyde=False)``; no LLM:
   the question itself);
2. retrieval: the top ``k`` chunks per index (or the question's given passages);
3. rerank: ``rt.reranker`` scores the chunks against ``rerank_query`` (default the question);
4. context: chunks in reranked order until ``token_limit`` tokens (:func:`fill_context`);
5. answer: the reader over that context (no LLM: the option-scoring floor).

:class:`RerankedChunks` holds steps 2-5; :class:`~biorag.methods.hyde.HyDE` only changes the query.
"""

from __future__ import annotations

from typing import Any

from biorag.errors import BioragError
from biorag.methods.base import Answer, QAMethod, Question, retrieve_passages
from biorag.methods.context import (
    DEFAULT_TOKEN_LIMIT,
    ContextItem,
    Fit,
    merge_options,
    read_ranked,
    rerank,
)
from biorag.methods.details import QueryParts, RankedChunksDetails, RetrievedChunk
from biorag.retrieve.query import build_query
from biorag.runtime import Runtime

#: Options of Rewrite and HyDE. ``k`` / ``retriever`` None: ``[retrieval] k`` (10) and
#: ``retriever`` (hybrid). ``rerank_query``: what the chunks are reranked against -
#: ``question``, ``question+options`` or ``query`` (the retrieval query). ``rerank`` False keeps
#: the retrieval order. ``reader``: ``two-call`` (reason, then the letter) or ``one-call`` (JSON).
CHUNK_DEFAULTS: dict[str, Any] = {
    "k": None,
    "retriever": None,
    "token_limit": DEFAULT_TOKEN_LIMIT,
    "rerank": True,
    "rerank_query": "question",
    "reader": "two-call",
}
RERANK_QUERIES = ("question", "question+options", "query")


def rerank_text(kind: str, question: Question, query: str) -> str:
    """The text chunks (or claims) are reranked against."""
    if kind == "query":
        return query
    if kind == "question+options" and question.options:
        return " ".join([question.text, *question.options.values()])
    return question.text


class RerankedChunks(QAMethod):
    """Retrieve with :meth:`make_query`, rerank, fill the context, read (see module doc)."""

    needs_index = True
    defaults: dict[str, Any] = CHUNK_DEFAULTS
    rewrite = False
    hyde = False

    def __init__(self, runtime: Runtime, **options: Any):
        merged = merge_options(self.name, options, self.defaults)
        if merged.get("rerank_query", "question") not in RERANK_QUERIES:
            raise BioragError(
                f"{self.name} rerank_query must be one of {RERANK_QUERIES}, "
                f"got {merged['rerank_query']!r}"
            )
        super().__init__(runtime, **merged)

    async def make_query(self, question: Question) -> tuple[str, dict[str, Any]]:
        """The retrieval query text and its parts (for ``details['query']``)."""

        q = await build_query(
            self.rt.llm, question.text, question.options, rewrite=self.rewrite, hyde=self.hyde
        )
        return q.text, dict(q.__dict__)

    def _k_retriever(self) -> tuple[int, str]:
        s = self.rt.settings.retrieval
        k = int(self.options["k"] if self.options["k"] is not None else s.k)
        return k, str(self.options["retriever"] or s.retriever)

    async def answer(self, question: Question) -> Answer:
        query, parts = await self.make_query(question)
        k, retriever = self._k_retriever()
        passages = await retrieve_passages(self.rt, question, query, k, retriever)
        if self.options["rerank"]:
            against = rerank_text(self.options["rerank_query"], question, query)
            ranked = await rerank(self.rt, against, passages, key=lambda p: p.text)
        else:
            ranked = [(p, float(p.score)) for p in passages]

        def details(items: list[ContextItem], fit: Fit) -> RankedChunksDetails:
            return RankedChunksDetails(
                query=QueryParts.model_validate(parts),
                retrieved=[
                    RetrievedChunk(chunk_id=p.chunk_id, retrieval_rank=p.rank, rerank_score=s)
                    for p, s in ranked
                ],
                context_chunk_ids=[str(it.key) for it in items],
                **fit,
            )

        candidates = [ContextItem(p.text, [p.chunk_id], s, p.chunk_id) for p, s in ranked]
        return await read_ranked(self, question, candidates, passages, details)


class Rewrite(RerankedChunks):
    """The Rewrite baseline. Options: ``CHUNK_DEFAULTS``."""

    name = "rewrite"
    rewrite = True

    async def make_query(self, question: Question) -> tuple[str, dict[str, Any]]:
        # Retrieval uses the rewritten question alone (build_query's text would add the
        # options): "question rewriting is used to retrieve".
        _, parts = await super().make_query(question)
        return parts["rewritten"] or question.text, parts
