"""Blocking for large UPGMA runs: FAISS candidate pairs, connected components, block splitting.

Why blocking is exact. Let ``G`` be the graph joining every pair with cosine similarity
``>= threshold`` and ``H`` any supergraph of ``G`` on the same vertices (here: FAISS range
search with a slightly lower radius). Claim: global UPGMA cut at ``threshold`` and UPGMA run
separately inside each connected component of ``H`` give the same partition.

1. A UPGMA merge of clusters A and B needs ``avg_sim(A, B) >= threshold``; an average is at
   most its maximum, so some ``a in A, b in B`` has ``sim(a, b) >= threshold``: an edge of
   ``G`` (hence of ``H``) joins A and B. By induction every cluster is connected in ``H``, so
   no cluster spans two components and no merge across components ever happens.
2. The average linkage between two clusters depends only on their members. The global run's
   merges inside one component therefore see exactly the distances the component's own run
   sees, and happen in the same relative order (each is the best remaining pair inside the
   component while it is the best pair overall, and merges elsewhere do not change it).
   Up to ties between equal distances, the two runs make the same merges.

The argument needs ``H ⊇ G``: a *missed* pair could split a true component. Flat (exact)
range search guarantees it; IVF range search (``nprobe`` of ``nlist`` cells) may miss pairs
whose vectors fall in unprobed cells, so its result is marked approximate. A k-nearest-neighbour
graph would also miss pairs when a vector has more than k neighbours above the threshold, which
is why range search is used instead.

A component larger than ``max_block`` is split by raising the threshold used for blocking on
its own edges (``t <- t + (1 - t) / 4``) until every piece fits. That can separate members that
global UPGMA would merge, so the result is then flagged approximate and a warning is logged.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

log = logging.getLogger(__name__)

RADIUS_SLACK = 1e-4  # range-search radius below the threshold: a superset of pairs is safe
QUERY_CHUNK = 8192


def _range_pairs(
    index: Any, x: np.ndarray, radius: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs ``i < j`` with inner product > ``radius``, and their similarities."""
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    sims: list[np.ndarray] = []
    for q0 in range(0, len(x), QUERY_CHUNK):
        q1 = min(len(x), q0 + QUERY_CHUNK)
        lims, dist, idx = index.range_search(x[q0:q1], radius)
        query = np.repeat(np.arange(q0, q1, dtype=np.int64), np.diff(lims).astype(np.int64))
        keep = idx > query
        rows.append(query[keep])
        cols.append(idx[keep].astype(np.int64))
        sims.append(dist[keep].astype(np.float32))
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(sims)


def candidate_pairs(
    x: np.ndarray, threshold: float, *, index: Literal["flat", "ivf"] = "flat", nprobe: int = 32
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(i, j, sim)`` for pairs ``i < j`` of unit rows with ``sim >= threshold - 1e-4``.

    ``flat`` finds every such pair; ``ivf`` (``4 sqrt(n)`` cells, ``nprobe`` probed) may miss
    some pairs whose vectors lie in cells that are not probed.
    ``4 sqrt(n)`` is capped at ``n / 39`` so FAISS has enough training points per cell.
    """
    import faiss

    x = np.ascontiguousarray(x, dtype=np.float32)
    n, d = x.shape
    if index == "flat":
        idx: Any = faiss.IndexFlatIP(d)
    elif index == "ivf":
        nlist = int(max(1, min(65536, 4 * np.sqrt(n), n // 39)))
        quantizer = faiss.IndexFlatIP(d)
        idx = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(0)
        sample = x[rng.choice(n, size=min(n, 40 * nlist), replace=False)]
        idx.train(sample)
        idx.nprobe = min(nprobe, nlist)
    else:
        raise ValueError(f"unknown candidate index {index!r}; use 'flat' or 'ivf'")
    idx.add(x)
    return _range_pairs(idx, x, threshold - RADIUS_SLACK)


def _components(n: int, rows: np.ndarray, cols: np.ndarray) -> list[np.ndarray]:
    """Connected components as index arrays, ordered by their smallest member."""
    graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    order = np.argsort(labels, kind="stable")
    splits = np.flatnonzero(np.diff(labels[order])) + 1
    comps = np.split(order, splits)
    comps.sort(key=lambda c: int(c[0]))
    return comps


def _split_block(
    members: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    sims: np.ndarray,
    threshold: float,
    max_block: int,
) -> list[np.ndarray]:
    """Split an oversized component with stricter thresholds until every piece fits."""
    out: list[np.ndarray] = []
    stack: list[tuple[np.ndarray, float]] = [(members, threshold)]
    while stack:
        block, t = stack.pop()
        if len(block) <= max_block:
            out.append(block)
            continue
        if t >= 1.0 - 1e-6:  # (near-)identical vectors beyond max_block: cut in slices
            out.extend(np.array_split(block, -(-len(block) // max_block)))
            continue
        t += (1.0 - t) / 4.0
        size = max(int(block.max()), int(rows.max(initial=0)), int(cols.max(initial=0))) + 1
        local = np.full(size, -1, dtype=np.int64)
        local[block] = np.arange(len(block))
        inside = (local[rows] >= 0) & (local[cols] >= 0) & (sims >= t - RADIUS_SLACK)
        sub = _components(len(block), local[rows[inside]], local[cols[inside]])
        stack.extend((block[s], t) for s in sub)
    out.sort(key=lambda b: int(b.min()))
    return out


def find_blocks(
    x: np.ndarray,
    threshold: float,
    *,
    index: Literal["flat", "ivf"] = "flat",
    max_block: int = 20000,
    nprobe: int = 32,
) -> tuple[list[np.ndarray], dict[str, Any]]:
    """Blocks of row indices to cluster separately, and statistics about them."""
    rows, cols, sims = candidate_pairs(x, threshold, index=index, nprobe=nprobe)
    comps = _components(len(x), rows, cols)
    blocks: list[np.ndarray] = []
    split = 0
    for comp in comps:
        if len(comp) > max_block:
            split += 1
            pieces = _split_block(comp, rows, cols, sims, threshold, max_block)
            log.warning(
                "dedup: a block of %d entities exceeds max_block=%d; split into %d pieces "
                "with a stricter blocking threshold (clusters may differ from exact UPGMA)",
                len(comp),
                max_block,
                len(pieces),
            )
            blocks.extend(pieces)
        else:
            blocks.append(comp)
    sizes = [len(b) for b in blocks]
    stats = {
        "candidate_pairs": len(rows),
        "blocks": len(blocks),
        "largest_block": max(sizes, default=0),
        "multi_blocks": sum(1 for s in sizes if s > 1),
        "split_blocks": split,
    }
    return blocks, stats
