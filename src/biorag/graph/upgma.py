"""UPGMA (average-linkage) clustering of unit vectors, exact or blocked.

Exact UPGMA: :func:`upgma_labels` builds the condensed cosine-distance matrix (``1 - cos``,
computed blockwise with float32 matrix products, stored as float64) and cuts
``scipy.cluster.hierarchy.linkage(method="average")`` with
``fcluster(t=1 - threshold, criterion="distance")``. This equals "keep merging the two clusters
of highest average similarity while that average is >= threshold":

* average linkage between clusters A and B is ``mean_{a,b} (1 - cos(a, b)) = 1 - avg_sim(A, B)``,
  so a merge at distance ``<= 1 - threshold`` is a merge at average similarity ``>= threshold``;
* average linkage is reducible and monotone (merge heights never decrease), so cutting the
  dendrogram at height ``t`` keeps exactly the merges made before the first one above ``t``.

The cut uses ``t = 1 - threshold + 1e-6`` so a pair at exactly the threshold merges despite
float32 rounding of the dot products. Passing the precomputed matrix is equivalent to
``linkage(X, "average", metric="cosine")`` (checked in the tests) but avoids ``pdist``'s slow
non-BLAS loop.
Memory: ``n (n - 1) / 2`` float64 twice (scipy copies it): about 3.2 GB at 20,000 vectors.

Blocked UPGMA (:func:`cluster_vectors` above ``block_above`` vectors): see
:mod:`biorag.graph.blocking` for why clustering each connected component of the
``sim >= threshold`` graph separately gives the same partition as the global run.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

from biorag.embed.base import l2_normalize

log = logging.getLogger(__name__)

CUT_EPS = 1e-6  # float32 dot products are accurate to ~1e-7
IndexKind = Literal["auto", "flat", "ivf"]


@dataclass
class ClusterResult:
    """Flat cluster labels ``0..k-1`` (numbered by first member) and how they were found.

    ``exact`` is True when the partition is guaranteed to be the global UPGMA partition (exact
    run, or blocking on an exact candidate graph with no block split); approximate candidate
    search (IVF) or splitting an oversized block makes it False.
    """

    labels: np.ndarray
    method: Literal["exact", "blocked"]
    exact: bool
    stats: dict[str, float | int | str] = field(default_factory=dict)

    @property
    def n_clusters(self) -> int:
        return int(self.labels.max()) + 1 if len(self.labels) else 0


def condensed_cosine_distances(x: np.ndarray, block: int = 2048) -> np.ndarray:
    """``1 - x_i . x_j`` for ``i < j`` in scipy's condensed order (float64, clipped at 0).

    ``x`` must hold unit rows. Computed ``block`` rows at a time against the rows after them.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = len(x)
    out = np.empty(n * (n - 1) // 2, dtype=np.float64)
    for i0 in range(0, n, block):
        i1 = min(n, i0 + block)
        sims = x[i0:i1] @ x[i0:].T  # rows i0..i1-1 against columns i0..n-1
        for i in range(i0, i1):
            start = n * i - i * (i + 1) // 2
            row = sims[i - i0, i - i0 + 1 :]
            out[start : start + len(row)] = 1.0 - row
    np.maximum(out, 0.0, out=out)
    return out


def relabel_by_first_occurrence(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered ``0, 1, ...`` in order of first appearance (a canonical partition)."""
    labels = np.asarray(labels)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inverse].astype(np.int64)


def upgma_labels(x: np.ndarray, threshold: float = 0.8) -> np.ndarray:
    """Exact UPGMA of unit rows ``x``: merge while average cosine similarity >= ``threshold``.

    Returns labels numbered by first occurrence.
    """
    n = len(x)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    if n == 2:
        sim = float(np.dot(x[0].astype(np.float64), x[1].astype(np.float64)))
        return np.array([0, 0 if 1.0 - sim <= 1.0 - threshold + CUT_EPS else 1], dtype=np.int64)
    z = linkage(condensed_cosine_distances(x), method="average")
    labels = fcluster(z, t=1.0 - threshold + CUT_EPS, criterion="distance")
    return relabel_by_first_occurrence(labels)


def cluster_vectors(
    vectors: np.ndarray,
    threshold: float = 0.8,
    *,
    block_above: int = 5000,
    max_block: int = 20000,
    index: IndexKind = "auto",
    flat_limit: int = 30000,
    nprobe: int = 32,
) -> ClusterResult:
    """UPGMA labels for ``vectors`` (normalized here), exact up to ``block_above`` rows.

    Above ``block_above`` the rows are split into blocks (connected components of the
    ``sim >= threshold`` candidate graph found with FAISS range search) and each block is
    clustered exactly. ``index``: ``flat`` (exact candidate graph, O(n^2 d)), ``ivf``
    (approximate, fast), ``auto`` (flat up to ``flat_limit`` rows, else ivf with ``nprobe``).
    Blocks larger than ``max_block`` are split with a stricter threshold (approximate; logged).
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    t0 = time.perf_counter()
    x = l2_normalize(vectors) if len(vectors) else np.zeros((0, 1), dtype=np.float32)
    n = len(x)
    if n <= block_above:
        labels = upgma_labels(x, threshold)
        stats: dict[str, float | int | str] = {
            "n": n,
            "seconds": round(time.perf_counter() - t0, 4),
        }
        return ClusterResult(labels, "exact", True, stats)

    from biorag.graph.blocking import find_blocks  # lazy: blocking loads scipy.sparse.csgraph

    kind = index if index != "auto" else ("flat" if n <= flat_limit else "ivf")
    blocks, bstats = find_blocks(x, threshold, index=kind, max_block=max_block, nprobe=nprobe)
    raw = np.empty(n, dtype=np.int64)
    next_label = 0
    for members in blocks:
        if len(members) == 1:
            raw[members[0]] = next_label
            next_label += 1
            continue
        sub = upgma_labels(x[members], threshold)
        raw[members] = sub + next_label
        next_label += int(sub.max()) + 1
    exact = kind == "flat" and not bstats["split_blocks"]
    stats = {"n": n, "index": kind, **bstats, "seconds": round(time.perf_counter() - t0, 4)}
    return ClusterResult(relabel_by_first_occurrence(raw), "blocked", exact, stats)
