"""CLAIMS' component metrics over one run (paper 4.3, appendix L): :func:`evaluate_components`
runs every metric that applies to a :class:`~biorag.methods.claims.ClaimsRun`.

The metrics are defined in :mod:`biorag.eval.components.metrics` (relation extraction, graph
summarization; see its docstring for each definition) and :mod:`biorag.eval.components.communities`
(graph vs semantic communities); both are re-exported here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from biorag.embed.base import Embedder
from biorag.errors import LLMError, LLMUnavailableError
from biorag.eval.components.communities import (
    community_comparison,
    graph_communities,
    semantic_communities,
    share_of_wins,
)
from biorag.eval.components.metrics import (
    CLAIMS_SCHEMA,
    PROMPTS,
    SPACY_MODELS,
    Score,
    _text,
    entity_detector,
    explicit_mentions,
    extract_summary_claims,
    faithfulness,
    judge_yes,
    judged_source_docs,
    key_claim_retention,
    key_claims,
    reference_score,
    relevancy,
    semantic_similarity,
    source_diversity,
)
from biorag.llm.base import ChatModel
from biorag.summarize import ExtractiveSummarizer, LLMSummarizer

__all__ = [
    "CLAIMS_SCHEMA",
    "PROMPTS",
    "SPACY_MODELS",
    "Score",
    "community_comparison",
    "entity_detector",
    "evaluate_components",
    "explicit_mentions",
    "extract_summary_claims",
    "faithfulness",
    "graph_communities",
    "judge_yes",
    "judged_source_docs",
    "key_claim_retention",
    "key_claims",
    "reference_score",
    "relevancy",
    "semantic_communities",
    "semantic_similarity",
    "share_of_wins",
    "source_diversity",
]


# ------------------------------------------------------------------ one CLAIMS run
def _pooled(scores: Sequence[Score]) -> float | None:
    n = sum(s.details["n"] for s in scores)
    return sum(s.details["yes"] for s in scores) / n if n else None


def _claims_by_chunk(run: Any) -> tuple[dict[str, str], dict[str, list[Any]]]:
    """The run's chunk texts by chunk id, and its claims grouped by chunk id."""
    chunks = {p.chunk_id: p.text for p in run.passages}
    by_chunk: dict[str, list[Any]] = {cid: [] for cid in chunks}
    for c in run.claims:
        by_chunk.setdefault(c.chunk_id, []).append(c)
    return chunks, by_chunk


async def _add_communities(
    out: dict[str, Any],
    sets: dict[str, list[tuple[str, list[str]]]],
    run: Any,
    q: str,
    llm: ChatModel | None,
    embedder: Embedder,
    reranker: Any,
    summarizer: Any,
    threshold: float,
) -> None:
    """Compare graph and semantic communities; add their summary sets (or say why not)."""
    if run.graph is not None and run.coi:
        if summarizer is None:
            summarizer = (
                LLMSummarizer(llm, embedder=embedder) if llm else ExtractiveSummarizer(embedder)
            )
        comp = await community_comparison(
            run.graph, run.coi, q, embedder, summarizer, reranker, threshold
        )
        out["community"] = {m: comp[m]["score"] for m in ("graph", "semantic")}
        out["community"]["winner"] = comp["winner"]
        for m in ("graph", "semantic"):
            sets[m] = [
                (t, [c, *comp[m]["communities"][c]]) for c, t in comp[m]["summaries"].items()
            ]
    else:
        out["skipped"]["community"] = "no claim graph or no claims of interest"


def _add_source_diversity(
    out: dict[str, Any],
    sets: dict[str, list[tuple[str, list[str]]]],
    claims: Mapping[str, Any],
    docs: set[str],
) -> None:
    """Source diversity of each summary set that has summaries; the empty ones are skipped."""
    out["source_diversity"] = {
        name: float(
            source_diversity(
                [[claims[c].doc_id for c in ids if c in claims] for _, ids in items], docs
            )
        )
        for name, items in sets.items()
        if items
    }
    for name in (n for n, items in sets.items() if not items):
        out["skipped"][f"source_diversity.{name}"] = f"no {name} summaries (no claims kept)"


async def _add_retention(
    out: dict[str, Any], llm: ChatModel, chunks: dict[str, str], by_chunk: dict[str, list[Any]]
) -> None:
    """Key claim retention averaged over the chunks (a judge failure is skipped)."""
    try:
        ret = await asyncio.gather(
            *(key_claim_retention(llm, text, by_chunk[cid]) for cid, text in chunks.items())
        )
        out["key_claim_retention"] = float(np.mean(ret)) if ret else None
    except LLMUnavailableError:
        raise  # no model at all: stop, do not run on without it
    except LLMError as e:
        out["skipped"]["key_claim_retention"] = str(e)


async def _add_faithfulness_relevancy(
    out: dict[str, Any],
    llm: ChatModel,
    sets: dict[str, list[tuple[str, list[str]]]],
    claims: Mapping[str, Any],
    q: str,
) -> None:
    """Faithfulness and relevancy pooled per summary set (a judge failure is skipped)."""
    try:
        out["faithfulness"], out["relevancy"] = {}, {}
        for name, items in sets.items():
            split = await asyncio.gather(*(extract_summary_claims(llm, t) for t, _ in items))
            srcs = [[claims[c] for c in ids if c in claims] for _, ids in items]
            f = await asyncio.gather(
                *(
                    faithfulness(llm, t, src, summary_claims=sc)
                    for (t, _), src, sc in zip(items, srcs, split, strict=True)
                )
            )
            r = await asyncio.gather(
                *(
                    relevancy(llm, t, q, summary_claims=sc)
                    for (t, _), sc in zip(items, split, strict=True)
                )
            )
            out["faithfulness"][name], out["relevancy"][name] = _pooled(f), _pooled(r)
            for k in ("faithfulness", "relevancy"):
                if out[k][name] is None:  # said, not dropped from the means unexplained
                    del out[k][name]
                    out["skipped"][f"{k}.{name}"] = (
                        f"no {name} summary claims to judge"
                        if items
                        else f"no {name} summaries (the method kept no claims)"
                    )
    except LLMUnavailableError:
        raise  # no model at all: stop, do not run on without it
    except LLMError as e:
        for k in ("faithfulness", "relevancy"):
            out.pop(k)
            out["skipped"][k] = str(e)


async def evaluate_components(
    method_run: Any,
    question: Any,
    llm: ChatModel | None,
    embedder: Embedder,
    reranker: Any,
    *,
    summarizer: Any = None,
    threshold: float = 0.8,
    detector: str = "auto",
) -> dict[str, Any]:
    """All metrics that apply to one :class:`~biorag.methods.claims.ClaimsRun`.

    Summary metrics are reported per summary set: ``claims`` (the layerwise summaries),
    ``graph`` and ``semantic`` (the community summaries of :func:`community_comparison`);
    faithfulness and relevancy are pooled over the claims of all summaries of a set,
    key claim retention is averaged over the retrieved chunks. What cannot run (no LLM, no
    graph, a judge failure) is listed under ``skipped`` with the reason.
    """
    run = method_run
    q = _text(question) if question is not None else run.question.text
    out: dict[str, Any] = {"skipped": {}}
    ref = reference_score(run.claims, detector)
    out["reference_score"], out["reference_detector"] = float(ref), ref.details["detector"]
    chunks, by_chunk = _claims_by_chunk(run)
    out["semantic_similarity"] = float(semantic_similarity(chunks, by_chunk, embedder))
    sets = {"claims": [(s.text, list(s.claim_ids)) for s in run.summaries]}
    await _add_communities(out, sets, run, q, llm, embedder, reranker, summarizer, threshold)
    claims = run.graph.claims if run.graph is not None else {c.id: c for c in run.claims}
    docs = {p.doc_id for p in run.passages}
    _add_source_diversity(out, sets, claims, docs)
    if llm is None:
        for k in ("key_claim_retention", "faithfulness", "relevancy"):
            out["skipped"][k] = "needs a judge LLM (llm.backend = 'none')"
        return out
    await _add_retention(out, llm, chunks, by_chunk)
    await _add_faithfulness_relevancy(out, llm, sets, claims, q)
    return out
