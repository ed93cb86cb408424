"""Claims and triples: what the extract stage produces and the graph and summarize stages read.

A claim keeps where it came from (chunk and document), so every summary sentence can be traced
back to its sources. ``triple_source`` records which extraction path produced the triple.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from biorag.corpus.models import content_id

TripleSource = Literal[
    "llm",  # the few-shot triple prompt (or the batched claims+triples call) answered well
    "llm_repair",  # fallback 1: re-prompt showing the malformed output
    "llm_entities_relation",  # fallback 2: two-entity prompt + relation prompt
    "rule_based",  # fallback 3: two entities found by rules, relation "associated"
    "pattern",  # no-LLM: biomedical predicate lexicon pattern
    "direct",  # component study: triples extracted directly from the chunk
    "entity_pairs",  # component study: entity pairs first, then their relation
]


class Triple(BaseModel):
    subject: str
    predicate: str
    object: str

    def is_complete(self) -> bool:
        return all(x.strip() for x in (self.subject, self.predicate, self.object))


class Claim(BaseModel):
    """One atomic, decontextualized statement taken from a chunk."""

    id: str
    text: str
    chunk_id: str
    doc_id: str
    triple: Triple | None = None
    triple_source: TripleSource | None = None
    score: float = Field(default=0.0, description="reranker relevance to the question")
    relevance: float | None = Field(
        default=None,
        description="the embedder's cosine of claim and question: the scale-free relevance "
        "CLAIMS' summary_min_relevance reads, whatever rerank.backend (None: not scored)",
    )
    relevant: bool | None = Field(default=None, description="denoising verdict, None = not judged")
    weight: float = Field(default=1.0, description="down-weighting factor from denoising")
    unresolved_references: int = Field(
        default=0, description="pronouns/demonstratives the no-LLM extractor could not resolve"
    )

    @staticmethod
    def make_id(chunk_id: str, text: str) -> str:
        return content_id(chunk_id, text.strip().lower(), prefix="c", length=12)
