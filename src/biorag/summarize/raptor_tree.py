"""RAPTOR (Sarthi et al., 2024): a recursive tree of cluster summaries over text chunks.

Building (:func:`build_tree`), layer by layer from the leaves (layer 0, the chunks):

1. embed the layer's nodes;
2. reduce the vectors' dimension (:func:`reduce_dimensions`): UMAP to ``dim`` dimensions when
   the ``umap`` package is importable (the original), else PCA to ``min(dim, n - 2)``;
3. soft-cluster them (:func:`cluster_vectors`; a layer of at most ``dim + 1`` nodes is one
   cluster, as RAPTOR treats small groups) with :func:`gmm_soft_clusters`: a Gaussian mixture
   for every number of components from 1 to ``min(max_clusters, n - 1)``, the lowest BIC wins
   (diagonal covariances regularized relative to the data's variance by default - see
   :func:`gmm_soft_clusters` for why not RAPTOR's full ones); a node joins every cluster whose
   posterior probability exceeds ``threshold`` (0.1), so it may join several (a node above the
   threshold nowhere joins its most probable cluster, so none is lost);
   a cluster whose texts exceed ``cluster_max_tokens`` is clustered again on its own;
4. summarize each cluster (:class:`LLMClusterSummarizer`, or :class:`ExtractiveClusterSummarizer`
   without an LLM: MMR over the cluster's sentences); the summaries are the next layer, each
   node listing its children;
5. repeat until a layer forms a single cluster (its summary is the root), clustering stops
   making fewer nodes, or ``max_depth`` summary layers exist.

Retrieval: RAPTOR's collapsed tree - :func:`rank_nodes` ranks every node of every layer by cosine
similarity to the query vector; the method adds them in that order until the token limit.
Everything is deterministic (``random_state`` for PCA, UMAP and the mixtures).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from biorag.corpus.tokens import TokenCounter, default_counter
from biorag.errors import BioragError
from biorag.llm.base import ChatModel
from biorag.llm.evidence import numbered_passages
from biorag.llm.prompts import PromptTemplate
from biorag.summarize import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.summarize.base import take_within_budget
from biorag.summarize.extractive import mmr_extract

PROMPTS = "biorag.summarize.prompts"
STAGE_RAPTOR = "raptor_summary"
REDUCTIONS = ("auto", "umap", "pca", "none")


# -- the tree --------------------------------------------------------------------------------
@dataclass
class TreeNode:
    """A node: a leaf chunk (layer 0) or the summary of a cluster of the layer below."""

    id: str
    layer: int
    text: str
    children: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    vector: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "layer": self.layer,
            "text": self.text,
            "children": list(self.children),
            "chunk_ids": list(self.chunk_ids),
        }


@dataclass
class RaptorTree:
    """Nodes by id, and the node ids of each layer (``layers[0]`` are the leaves)."""

    nodes: dict[str, TreeNode] = field(default_factory=dict)
    layers: list[list[str]] = field(default_factory=list)
    reduction: str = "none"
    summarizer: str = ""
    stop_reason: str = ""

    def add(self, node: TreeNode) -> None:
        self.nodes[node.id] = node
        while len(self.layers) <= node.layer:
            self.layers.append([])
        self.layers[node.layer].append(node.id)

    def all_nodes(self) -> list[TreeNode]:
        """Every node, layer by layer."""
        return [self.nodes[i] for layer in self.layers for i in layer]

    def to_dict(self) -> dict[str, Any]:
        return {
            "layers": [list(layer) for layer in self.layers],
            "layer_sizes": [len(layer) for layer in self.layers],
            "nodes": [n.to_dict() for n in self.all_nodes()],
            "reduction": self.reduction,
            "summarizer": self.summarizer,
            "stop_reason": self.stop_reason,
        }


# -- dimensionality reduction and clustering -------------------------------------------------
def umap_available() -> bool:
    try:
        import umap  # noqa: F401
    except Exception:  # ImportError, or a broken numba install
        return False
    return True


def reduce_dimensions(
    x: np.ndarray, dim: int = 10, *, method: str = "auto", random_state: int = 0
) -> tuple[np.ndarray, str]:
    """``x`` (n x d) in at most ``dim`` dimensions, and the method used (``umap``, ``pca`` or
    ``none``). ``auto`` is UMAP when importable, else PCA to ``min(dim, n - 2)`` dimensions;
    with fewer than 3 rows (or ``method='none'``) ``x`` is returned as it is."""
    if method not in REDUCTIONS:
        raise BioragError(f"RAPTOR reduction must be one of {REDUCTIONS}, got {method!r}")
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    target = min(dim, n - 2, d)
    if method == "none" or target < 1:
        return x, "none"
    if method == "umap" and not umap_available():
        raise BioragError("RAPTOR reduction 'umap' needs the umap-learn package; use 'pca'")
    if method in ("auto", "umap") and umap_available():
        try:
            import umap

            reducer = umap.UMAP(
                n_neighbors=max(2, int((n - 1) ** 0.5)),
                n_components=target,
                metric="cosine",
                random_state=random_state,
            )
            return np.asarray(reducer.fit_transform(x), dtype=np.float64), "umap"
        except Exception:  # UMAP's spectral init can fail on very small sets: fall back to PCA
            if method == "umap":
                raise
    from sklearn.decomposition import PCA

    return PCA(n_components=target, random_state=random_state).fit_transform(x), "pca"


def gmm_soft_clusters(
    x: np.ndarray,
    max_clusters: int = 50,
    threshold: float = 0.1,
    random_state: int = 0,
    *,
    covariance_type: str = "diag",
    reg_covar: float = 0.05,
) -> list[list[int]]:
    """Soft clusters of the rows of ``x``: row indices per cluster (ascending), clusters
    ordered by their first row. The number of Gaussian components is the BIC minimum over
    ``1 .. min(max_clusters, n - 1)``; a row joins every component with posterior probability
    above ``threshold``, or its most probable one when none is.

    ``reg_covar`` is relative: the fraction of the mean per-dimension variance of ``x`` added
    to every covariance (at least sklearn's 1e-6). RAPTOR's own setting (``full`` covariances,
    absolute 1e-6) lets components of a few points get near-singular covariances whose
    likelihood outweighs the BIC penalty: on 10-dimensional PCA vectors of Gaussian noise it
    found 9-15 clusters, and 30 in two blobs of 60 points. ``diag`` with 0.05 found one and two,
    and the right number of clusters in synthetic embedding clusters of 5 to 12 points.
    """
    from sklearn.mixture import GaussianMixture

    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    upper = min(max_clusters, n - 1)
    if n <= 2 or upper < 2:
        return [list(range(n))] if n else []
    reg = max(1e-6, float(reg_covar) * float(x.var(axis=0).mean()))
    best, best_bic = None, np.inf
    for k in range(1, upper + 1):
        gm = GaussianMixture(
            n_components=k,
            covariance_type=covariance_type,
            reg_covar=reg,
            random_state=random_state,
        ).fit(x)
        bic = gm.bic(x)
        if bic < best_bic:
            best, best_bic = gm, bic
    assert best is not None
    probs = best.predict_proba(x)
    members: dict[int, list[int]] = {}
    for i, row in enumerate(probs):
        comps = np.flatnonzero(row > threshold)
        if comps.size == 0:
            comps = np.array([int(np.argmax(row))])
        for c in comps:
            members.setdefault(int(c), []).append(i)
    unique: dict[tuple[int, ...], None] = {}
    for rows in sorted(members.values()):
        unique.setdefault(tuple(rows), None)
    return [list(c) for c in unique]


def cluster_vectors(
    x: np.ndarray,
    *,
    dim: int = 10,
    reduction: str = "auto",
    max_clusters: int = 50,
    threshold: float = 0.1,
    random_state: int = 0,
    covariance_type: str = "diag",
    reg_covar: float = 0.05,
) -> tuple[list[list[int]], str]:
    """:func:`reduce_dimensions` then :func:`gmm_soft_clusters`; also the reduction used.

    At most ``dim + 1`` rows are one cluster, without reduction (RAPTOR's rule)."""
    from threadpoolctl import threadpool_limits

    if len(x) <= max(dim + 1, 2):
        # RAPTOR's rule for small groups: a mixture of full-covariance Gaussians cannot be
        # fitted to so few points in ``dim`` dimensions (singular covariances win the BIC),
        # so they form one cluster.
        return ([list(range(len(x)))] if len(x) else []), "none"
    # Many tiny fits: BLAS/OpenMP thread pools cost far more than they save (about 25x here).
    with threadpool_limits(limits=1):
        y, used = reduce_dimensions(x, dim, method=reduction, random_state=random_state)
        clusters = gmm_soft_clusters(
            y,
            max_clusters,
            threshold,
            random_state,
            covariance_type=covariance_type,
            reg_covar=reg_covar,
        )
        return clusters, used


# -- cluster summarizers ---------------------------------------------------------------------
class ClusterSummarizer(Protocol):
    name: str

    async def summarize(self, texts: list[str]) -> str: ...


class LLMClusterSummarizer:
    """One LLM call per cluster (stage ``raptor_summary``), at most ``words`` words."""

    name = "llm"

    def __init__(self, llm: ChatModel, *, max_tokens: int = 200):
        self.llm = llm
        self.max_tokens = max_tokens

    async def summarize(self, texts: list[str]) -> str:

        tpl = PromptTemplate.load(PROMPTS, "raptor_summary")
        values = {
            "texts": numbered_passages(texts),
            "words": max(20, int(self.max_tokens * 0.7)),
        }
        resp = await self.llm.chat(
            tpl.request(values, stage=STAGE_RAPTOR, max_tokens=self.max_tokens)
        )
        text = resp.text.strip()
        return text or " ".join(texts)[: 4 * self.max_tokens]


class ExtractiveClusterSummarizer:
    """The no-LLM floor: the cluster's most central, mutually different sentences (MMR, no
    query: the tree does not depend on the question) within ``max_tokens`` tokens."""

    name = "extractive"

    def __init__(
        self, embedder: Any, *, max_tokens: int = 200, counter: TokenCounter | None = None
    ):
        self.embedder = embedder
        self.max_tokens = max_tokens
        self.counter = counter or default_counter()

    async def summarize(self, texts: list[str]) -> str:

        return await asyncio.to_thread(
            mmr_extract, "", texts, self.embedder, self.max_tokens, counter=self.counter
        )


# -- building --------------------------------------------------------------------------------
def _normalize(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(norms == 0, 1.0, norms)


def _node_vectors(nodes: Sequence[TreeNode]) -> np.ndarray:
    """The nodes' vectors stacked (every node :func:`build_tree` makes has one)."""
    vecs: list[np.ndarray] = []
    for n in nodes:
        if n.vector is None:
            raise ValueError(f"RAPTOR node {n.id!r} has no vector")
        vecs.append(n.vector)
    return np.stack(vecs)


def _split_oversized(
    rows: list[int], x: np.ndarray, sizes: list[int], limit: int | None, kwargs: dict[str, Any]
) -> list[list[int]]:
    """``rows`` as clusters of at most ``limit`` tokens where clustering can split them."""
    if limit is None or len(rows) <= 1 or sum(sizes[r] for r in rows) <= limit:
        return [rows]
    sub, _ = cluster_vectors(x[rows], **kwargs)
    if len(sub) <= 1:
        return [rows]  # cannot split: the summarizer's input is cut to the limit instead
    out: list[list[int]] = []
    for c in sub:
        part = [rows[i] for i in c]
        out.extend(
            _split_oversized(part, x, sizes, limit, kwargs) if len(part) < len(rows) else [part]
        )
    return out


async def _layer_clusters(
    current: list[TreeNode],
    kwargs: dict[str, Any],
    counter: TokenCounter,
    cluster_max_tokens: int | None,
) -> tuple[list[list[int]], str]:
    """The clusters of a layer's nodes (oversized ones split), and the reduction used."""
    x = _node_vectors(current)
    clusters, used = await asyncio.to_thread(cluster_vectors, x, **kwargs)
    sizes = counter.count_many([n.text for n in current])
    clusters = [
        part for c in clusters for part in _split_oversized(c, x, sizes, cluster_max_tokens, kwargs)
    ]
    return clusters, used


async def _add_summary_layer(
    tree: RaptorTree,
    depth: int,
    current: list[TreeNode],
    clusters: list[list[int]],
    summarizer: ClusterSummarizer,
    embedder: Any,
    cluster_max_tokens: int | None,
    counter: TokenCounter,
) -> None:
    """Summarize and embed each cluster of ``current``; add the summaries as layer ``depth``."""

    inputs = [[current[i].text for i in c] for c in clusters]
    if cluster_max_tokens is not None:
        inputs = [take_within_budget(t, cluster_max_tokens, counter) or t[:1] for t in inputs]
    summaries = await asyncio.gather(*(summarizer.summarize(t) for t in inputs))
    sum_vecs = _normalize(await asyncio.to_thread(embedder.embed, list(summaries)))
    for j, (c, text, v) in enumerate(zip(clusters, summaries, sum_vecs, strict=True)):
        chunk_ids = list(dict.fromkeys(cid for i in c for cid in current[i].chunk_ids))
        tree.add(
            TreeNode(
                id=f"s{depth}.{j}",
                layer=depth,
                text=text,
                children=[current[i].id for i in c],
                chunk_ids=chunk_ids,
                vector=v,
            )
        )


async def build_tree(
    leaves: Sequence[tuple[str, str, list[str]]],
    embedder: Any,
    summarizer: ClusterSummarizer,
    *,
    max_depth: int = 3,
    max_clusters: int = 50,
    threshold: float = 0.1,
    reduction: str = "auto",
    reduction_dim: int = 10,
    cluster_max_tokens: int | None = 3500,
    random_state: int = 0,
    covariance_type: str = "diag",
    reg_covar: float = 0.05,
    counter: TokenCounter | None = None,
    vectors: np.ndarray | None = None,
) -> RaptorTree:
    """The RAPTOR tree over ``leaves`` (``(id, text, chunk_ids)``); see the module docstring.

    ``vectors`` (one row per leaf) replaces embedding the leaves; summaries are always embedded
    with ``embedder``. Summary node ids are ``s<layer>.<i>``.
    """
    counter = counter or default_counter()
    tree = RaptorTree(summarizer=getattr(summarizer, "name", type(summarizer).__name__))
    if not leaves:
        tree.stop_reason = "no leaves"
        return tree
    if vectors is None:
        vecs = _normalize(await asyncio.to_thread(embedder.embed, [t for _, t, _ in leaves]))
    else:
        vecs = _normalize(vectors)
    for (nid, text, chunk_ids), v in zip(leaves, vecs, strict=True):
        tree.add(TreeNode(id=nid, layer=0, text=text, chunk_ids=list(chunk_ids), vector=v))
    kwargs: dict[str, Any] = {
        "dim": reduction_dim,
        "reduction": reduction,
        "max_clusters": max_clusters,
        "threshold": threshold,
        "random_state": random_state,
        "covariance_type": covariance_type,
        "reg_covar": reg_covar,
    }
    reductions: list[str] = []
    tree.stop_reason = f"max depth {max_depth}"
    for depth in range(1, max_depth + 1):
        current = [tree.nodes[i] for i in tree.layers[depth - 1]]
        if len(current) <= 1:
            tree.stop_reason = "one node"
            break
        clusters, used = await _layer_clusters(current, kwargs, counter, cluster_max_tokens)
        reductions.append(used)
        if len(clusters) >= len(current):
            tree.stop_reason = "clustering no longer reduces the layer"
            break
        await _add_summary_layer(
            tree, depth, current, clusters, summarizer, embedder, cluster_max_tokens, counter
        )
        if len(clusters) == 1:
            tree.stop_reason = "one cluster"
            break
    real = [r for r in reductions if r != "none"]
    tree.reduction = real[0] if real else "none"
    return tree


# -- retrieval -------------------------------------------------------------------------------
def rank_nodes(tree: RaptorTree, query_vector: np.ndarray) -> list[tuple[TreeNode, float]]:
    """Every node of every layer with its cosine to ``query_vector``, best first (ties: the
    lower layer, then the tree order)."""
    nodes = tree.all_nodes()
    if not nodes:
        return []
    q = _normalize(query_vector)
    sims = _node_vectors(nodes) @ q
    order = np.argsort(-sims, kind="stable")
    return [(nodes[i], float(sims[i])) for i in order]
