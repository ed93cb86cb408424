"""Graph construction metric of CLAIMS (paper 4.3): graph vs semantic communities.

Around each claim of interest, :func:`graph_communities` takes its 1-hop neighbours in the
claim graph and :func:`semantic_communities` every claim similar enough by embedding.
:func:`community_comparison` summarizes both around the claim of interest and lets a reranker
judge which set of summaries is more relevant to the question; :func:`share_of_wins` counts
the winners over many questions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from biorag.embed.base import Embedder, l2_normalize
from biorag.summarize.claims_of_interest import rerank_scores


def _text(x: Any) -> str:
    return x if isinstance(x, str) else x.text


def _cid(x: Any) -> str:
    return x if isinstance(x, str) else x.claim_id


def graph_communities(graph: Any, coi_ids: Sequence[str]) -> dict[str, list[str]]:
    """Claim of interest -> its 1-hop neighbour claims, most relevant first (then by id)."""
    out: dict[str, list[str]] = {}
    for c in coi_ids:
        near = [graph.claims[n] for n in graph.neighbors(c) if n in graph.claims]
        out[c] = [x.id for x in sorted(near, key=lambda x: (-x.score, x.id))]
    return out


def semantic_communities(
    graph: Any, coi_ids: Sequence[str], embedder: Embedder, threshold: float = 0.8
) -> dict[str, list[str]]:
    """Claim of interest -> every other claim with cosine >= ``threshold``, most similar first."""
    ids = list(graph.claims)
    if not ids or not coi_ids:
        return {c: [] for c in coi_ids}
    vecs = l2_normalize(embedder.embed([graph.claims[i].text for i in ids]))
    pos = {cid: k for k, cid in enumerate(ids)}
    out: dict[str, list[str]] = {}
    for c in coi_ids:
        sims = vecs @ vecs[pos[c]]
        near = [(-float(sims[k]), i) for k, i in enumerate(ids) if i != c and sims[k] >= threshold]
        out[c] = [i for _, i in sorted(near)]
    return out


async def community_comparison(
    graph: Any,
    claims_of_interest: Sequence[Any],
    question: Any,
    embedder: Embedder,
    summarizer: Any,
    reranker: Any,
    threshold: float = 0.8,
) -> dict[str, Any]:
    """Graph vs semantic communities around the claims of interest (ids or ClaimOfInterest).

    Each community is summarized around its claim of interest (``summarizer.test_summary``:
    the central claim, then its community). A method's score is the reranker relevance to the
    question of all its summaries joined; the higher one wins (``"tie"`` when equal). Returns
    ``{"graph": {"score", "communities", "summaries"}, "semantic": {...}, "winner"}``.
    """
    q = _text(question)
    ids = [_cid(c) for c in claims_of_interest]
    comms = {
        "graph": graph_communities(graph, ids),
        "semantic": semantic_communities(graph, ids, embedder, threshold),
    }
    out: dict[str, Any] = {}
    for method, comm in comms.items():
        texts = await asyncio.gather(
            *(
                summarizer.test_summary(
                    q, None, graph.claims[c].text, [graph.claims[m].text for m in comm[c]]
                )
                for c in ids
            )
        )
        out[method] = {"communities": comm, "summaries": dict(zip(ids, texts, strict=True))}
    joined = ["\n\n".join(out[m]["summaries"].values()) for m in ("graph", "semantic")]
    g, s = (float(x) for x in await rerank_scores(reranker, q, joined)) if ids else (0.0, 0.0)
    out["graph"]["score"], out["semantic"]["score"] = g, s
    out["winner"] = "graph" if g > s else "semantic" if s > g else "tie"
    return out


def share_of_wins(results: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Over many questions' :func:`community_comparison` results: the share of questions each
    method won and the share tied (all over ``n``, the number of results)."""
    winners = [r["winner"] for r in results]
    n = len(winners)
    shares = {k: winners.count(k) / n if n else 0.0 for k in ("graph", "semantic", "tie")}
    return {**shares, "n": n}
