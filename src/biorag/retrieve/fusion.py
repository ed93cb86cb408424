"""Reciprocal rank fusion (Cormack et al., 2009) of several rankings into one."""

from __future__ import annotations

from biorag.retrieve.hits import Hit


def reciprocal_rank_fusion(
    rankings: list[list[Hit]],
    k: int = 60,
    weights: list[float] | None = None,
    limit: int | None = None,
) -> list[Hit]:
    """Fuse rankings: an id scores ``sum_r weights[r] / (k + rank_r(id))`` over the rankings that
    contain it (ranks are the hits' 1-based ``rank``).

    Ties are broken deterministically: by the best (smallest) rank the id reached in any ranking,
    then by the earliest ranking in which it reached that rank, then by id. Returns new hits
    ranked 1.. with the fused score, at most ``limit`` of them (all when None). An id that
    appears twice in one ranking counts once, at its best rank.
    """
    if k < 0:
        raise ValueError(f"rrf k must be >= 0, got {k}")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"got {len(weights)} weights for {len(rankings)} rankings")
    scores: dict[str, float] = {}
    best: dict[str, tuple[int, int]] = {}
    for r_idx, (ranking, w) in enumerate(zip(rankings, weights, strict=True)):
        seen: dict[str, int] = {}
        for hit in ranking:
            if hit.id not in seen or hit.rank < seen[hit.id]:
                seen[hit.id] = hit.rank
        for doc_id, rank in seen.items():
            scores[doc_id] = scores.get(doc_id, 0.0) + w / (k + rank)
            key = (rank, r_idx)
            if doc_id not in best or key < best[doc_id]:
                best[doc_id] = key
    order = sorted(scores, key=lambda d: (-scores[d], best[d][0], best[d][1], d))
    if limit is not None:
        order = order[: max(limit, 0)]
    return [Hit(id=d, score=scores[d], rank=i) for i, d in enumerate(order, start=1)]
