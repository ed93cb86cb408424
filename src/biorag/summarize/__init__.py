"""Summarize: claims of interest and layerwise summarization of the claim graph around them.

The CLAIMS graph-summarization stage (paper section 3.3 and appendix D)::

    summarizer = LLMSummarizer(llm)                  # or ExtractiveSummarizer(embedder)
    cois = await select_claims_of_interest(graph, question, options, reranker, summarizer)
    roots = await summarize_layerwise(graph, [c.claim_id for c in cois], summarizer, question)
    context = build_context(roots)                   # root summaries in rank order

Stages (``ChatRequest.stage`` for the LLM path; extractive operations are counted the same
way): ``coi_test_summary``, ``layer_summary``, ``layer_summary_batch``, ``compress``.
"""

from biorag.summarize.base import (
    STAGE_COMPRESS,
    STAGE_LAYER,
    STAGE_LAYER_BATCH,
    STAGE_TEST,
    ClaimGraphLike,
    LayerItem,
    LayerOutcome,
    Summarizer,
)
from biorag.summarize.claims_of_interest import ClaimOfInterest, select_claims_of_interest
from biorag.summarize.compress import Compressed, compress_summaries
from biorag.summarize.extractive import ExtractiveSummarizer, mmr_extract
from biorag.summarize.layerwise import (
    RootSummary,
    build_context,
    critical_rounds,
    summarize_layerwise,
    summarize_root,
    total_calls,
)
from biorag.summarize.llm_summarizer import LLMSummarizer

__all__ = [
    "STAGE_COMPRESS",
    "STAGE_LAYER",
    "STAGE_LAYER_BATCH",
    "STAGE_TEST",
    "ClaimGraphLike",
    "ClaimOfInterest",
    "Compressed",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "LayerItem",
    "LayerOutcome",
    "RootSummary",
    "Summarizer",
    "build_context",
    "compress_summaries",
    "critical_rounds",
    "mmr_extract",
    "select_claims_of_interest",
    "summarize_layerwise",
    "summarize_root",
    "total_calls",
]
