"""Claims of interest: the entry points of layerwise summarization (CLAIMS 3.3).

1. The ``top_k`` claims by reranker relevance to the question (``Claim.score``; ties keep the
   graph's order) are the candidates.
2. Each candidate gets a *test summary* from its 1-hop neighbour claims (most relevant first),
   emphasizing the candidate itself: one summarizer call each (stage ``coi_test_summary``), all
   candidates concurrently.
3. The candidates are reranked by the reranker relevance of their test summaries to the
   question (ties keep the previous order).
4. Walking that ranking best first, a candidate that is a 1-hop neighbour of a claim already
   kept is merged into the first such kept claim (listed in its ``merged``) and dropped: adjacent
   claims would produce near-identical summaries. A candidate adjacent only to dropped
   candidates stays (the arXiv version's merge-into-higher-ranked reading).
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from biorag.summarize.base import ClaimGraphLike, Summarizer, relevance


@dataclass
class ClaimOfInterest:
    """A kept claim of interest, best first in the returned list.

    ``score``: the claim's reranker score; ``test_summary_score``: the reranker relevance of its
    test summary (the rank key); ``merged``: lower-ranked candidates adjacent to it, dropped.
    """

    claim_id: str
    text: str
    score: float
    test_summary: str
    test_summary_score: float
    merged: list[str] = field(default_factory=list)


async def rerank_scores(reranker: Any, query: str, texts: list[str]) -> np.ndarray:
    """``reranker`` scores for ``texts`` (its async ``ascore`` when it has one)."""
    if not texts:
        return np.zeros(0, dtype=np.float64)
    ascore = getattr(reranker, "ascore", None)
    if ascore is not None and inspect.iscoroutinefunction(ascore):
        scores = await ascore(query, texts)
    else:
        scores = await asyncio.to_thread(reranker.score, query, texts)
    out = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(out) != len(texts):
        raise ValueError(f"the reranker returned {len(out)} scores for {len(texts)} texts")
    return out


def related_texts(graph: ClaimGraphLike, claim_id: str) -> list[str]:
    """Texts of the 1-hop neighbour claims, most relevant first (ties by id)."""
    neighbours = [graph.claims[n] for n in graph.neighbors(claim_id) if n in graph.claims]
    neighbours.sort(key=lambda c: (-c.score, c.id))
    return [c.text for c in neighbours]


def filter_adjacent(graph: ClaimGraphLike, ranked: list[ClaimOfInterest]) -> list[ClaimOfInterest]:
    """``ranked`` without claims adjacent to a higher-ranked kept claim (merged into it)."""
    kept: list[ClaimOfInterest] = []
    for coi in ranked:
        mine = graph.neighbors(coi.claim_id)
        host = next(
            (k for k in kept if k.claim_id in mine or coi.claim_id in graph.neighbors(k.claim_id)),
            None,
        )
        if host is None:
            kept.append(coi)
        else:
            host.merged.append(coi.claim_id)
    return kept


async def select_claims_of_interest(
    graph: ClaimGraphLike,
    question: str,
    options: dict[str, str] | None,
    reranker: Any,
    summarizer: Summarizer,
    top_k: int = 10,
    min_score: float | None = None,
) -> list[ClaimOfInterest]:
    """The claims of interest for ``question``, best first (see the module docstring).

    ``reranker`` needs ``score(query, texts) -> array`` (or an async ``ascore``); the test
    summaries are scored against the question alone, the options enter only the prompts.
    ``min_score``: candidates less relevant than it (:func:`relevance`) are left out (the best
    one always stays); None: the top ``top_k`` whatever their scores, as the paper.
    """
    candidates = sorted(graph.claims.values(), key=lambda c: -c.score)[: max(top_k, 0)]
    if min_score is not None and candidates:
        candidates = [candidates[0], *(c for c in candidates[1:] if relevance(c) >= min_score)]
    if not candidates:
        return []
    summaries = await summarizer.test_summaries(
        question, options, [(c.id, c.text, related_texts(graph, c.id)) for c in candidates]
    )
    scores = await rerank_scores(reranker, question, list(summaries))
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    ranked = [
        ClaimOfInterest(
            claim_id=candidates[i].id,
            text=candidates[i].text,
            score=candidates[i].score,
            test_summary=summaries[i],
            test_summary_score=float(scores[i]),
        )
        for i in order
    ]
    return filter_adjacent(graph, ranked)
