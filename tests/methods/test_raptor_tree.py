"""The RAPTOR tree on hand-made vectors: clusters, soft membership, layers, summaries, ranking."""

from __future__ import annotations

import re

import numpy as np
import pytest

from biorag.config import Settings
from biorag.corpus.tokens import default_counter
from biorag.errors import BioragError
from biorag.llm import build_llm
from biorag.summarize.raptor_tree import (
    ExtractiveClusterSummarizer,
    LLMClusterSummarizer,
    RaptorTree,
    TreeNode,
    build_tree,
    cluster_vectors,
    gmm_soft_clusters,
    rank_nodes,
    reduce_dimensions,
)

DIM = 32


def grouped_vectors(groups: int = 4, per: int = 12, seed: int = 0) -> dict[str, np.ndarray]:
    """``per`` points around each of ``groups`` centres (two pairs of nearby centres)."""
    rng = np.random.default_rng(seed)
    supers = rng.normal(size=(2, DIM)) * 3
    centres = np.concatenate([s + rng.normal(size=(groups // 2, DIM)) for s in supers])
    return {
        f"g{g}x{j}": c + rng.normal(size=DIM) * 0.1
        for g, c in enumerate(centres)
        for j in range(per)
    }


class NameEmbedder:
    """A text's vector is the mean of the vectors of the leaf names it contains, so a summary
    that lists its leaves lies at its cluster's centre."""

    def __init__(self, vectors: dict[str, np.ndarray]):
        self.vectors = vectors

    def embed(self, texts):
        return np.array(
            [np.mean([self.vectors[n] for n in re.findall(r"g\d+x\d+", t)], axis=0) for t in texts]
        )

    def embed_query(self, text):
        return self.embed([text])[0]


class JoinSummarizer:
    name = "join"

    def __init__(self):
        self.calls: list[list[str]] = []

    async def summarize(self, texts):
        self.calls.append(list(texts))
        return " ".join(texts)


def leaves_of(vectors):
    return [(name, name, [f"chunk-{name[:2]}"]) for name in vectors]


async def test_tree_on_clustered_vectors_forms_the_clusters_and_a_root():
    vectors = grouped_vectors()
    summarizer = JoinSummarizer()
    tree = await build_tree(
        leaves_of(vectors), NameEmbedder(vectors), summarizer, cluster_max_tokens=None
    )
    assert [len(layer) for layer in tree.layers] == [48, 4, 1]
    assert tree.stop_reason == "one cluster" and tree.reduction in ("pca", "umap")
    layer1 = [tree.nodes[i] for i in tree.layers[1]]
    assert [n.children for n in layer1] == [[f"g{g}x{j}" for j in range(12)] for g in range(4)]
    assert [n.chunk_ids for n in layer1] == [[f"chunk-g{g}"] for g in range(4)]
    root = tree.nodes[tree.layers[2][0]]
    assert root.children == tree.layers[1] and root.layer == 2
    assert root.chunk_ids == [f"chunk-g{g}" for g in range(4)]
    assert len(summarizer.calls) == 5
    d = tree.to_dict()
    assert d["layer_sizes"] == [48, 4, 1] and len(d["nodes"]) == 53
    assert all("vector" not in n for n in d["nodes"])


async def test_max_depth_and_small_layers():
    vectors = grouped_vectors()
    tree = await build_tree(
        leaves_of(vectors), NameEmbedder(vectors), JoinSummarizer(), max_depth=1
    )
    assert [len(layer) for layer in tree.layers] == [48, 4] and tree.stop_reason == "max depth 1"
    # At most dim + 1 leaves are one cluster (RAPTOR's rule for small groups): a root at once.
    few = dict(list(vectors.items())[:11])
    tree = await build_tree(leaves_of(few), NameEmbedder(few), JoinSummarizer())
    assert [len(layer) for layer in tree.layers] == [11, 1] and tree.stop_reason == "one cluster"
    one = dict(list(vectors.items())[:1])
    tree = await build_tree(leaves_of(one), NameEmbedder(one), JoinSummarizer())
    assert tree.layers == [["g0x0"]] and tree.stop_reason == "one node"
    empty = await build_tree([], NameEmbedder(vectors), JoinSummarizer())
    assert empty.layers == [] and rank_nodes(empty, np.ones(DIM)) == []


def test_a_point_between_two_clusters_joins_both():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(30, 2)) + np.array([-3.0, 0.0])
    b = rng.normal(size=(30, 2)) + np.array([3.0, 0.0])
    x = np.concatenate([a, b, [[0.0, 0.0]]])
    clusters = gmm_soft_clusters(x)
    assert len(clusters) == 2
    assert all(60 in c for c in clusters)
    assert {frozenset(c) - {60} for c in clusters} == {
        frozenset(range(30)),
        frozenset(range(30, 60)),
    }
    # Above the threshold nowhere (about 0.5 each): its most probable cluster only.
    strict = gmm_soft_clusters(x, threshold=0.6)
    assert sum(60 in c for c in strict) == 1


def test_cluster_vectors_reduces_then_clusters():
    vectors = np.stack(list(grouped_vectors(groups=2, per=10).values()))
    clusters, used = cluster_vectors(vectors)
    assert used in ("pca", "umap")
    assert sorted(map(tuple, clusters)) == [tuple(range(10)), tuple(range(10, 20))]
    small, used = cluster_vectors(vectors[:5])
    assert small == [[0, 1, 2, 3, 4]] and used == "none"


def test_reduce_dimensions():
    x = np.random.default_rng(0).normal(size=(7, 20))
    y, used = reduce_dimensions(x, 10, method="pca")
    assert used == "pca" and y.shape == (7, 5)  # min(10, n - 2)
    y, used = reduce_dimensions(np.random.default_rng(0).normal(size=(30, 20)), 10, method="pca")
    assert y.shape == (30, 10)
    y, used = reduce_dimensions(x[:2], 10)
    assert used == "none" and y.shape == (2, 20)
    with pytest.raises(BioragError, match="reduction must be"):
        reduce_dimensions(x, method="tsne")


def test_collapsed_tree_ranks_all_layers_by_cosine():
    tree = RaptorTree()
    e = np.eye(3)
    tree.add(TreeNode("a", 0, "alpha", vector=e[0]))
    tree.add(TreeNode("b", 0, "beta", vector=e[1]))
    tree.add(TreeNode("s", 1, "summary", children=["a", "b"], vector=(e[0] + e[1]) / np.sqrt(2)))
    ranked = rank_nodes(tree, np.array([1.0, 0.2, 0.0]))
    assert [n.id for n, _ in ranked] == ["a", "s", "b"]
    assert ranked[0][1] > ranked[1][1] > ranked[2][1]


async def test_extractive_summary_is_sentences_of_the_cluster_within_budget(hash_embedder):
    texts = [
        "KRX1 drives fibrosis of the liver. KRX1 expression is increased in cirrhosis.",
        "Zelocitinib inhibits KRX1 in hepatocytes. It was well tolerated.",
    ]
    s = await ExtractiveClusterSummarizer(hash_embedder, max_tokens=20).summarize(texts)
    assert s and default_counter().count(s) <= 20
    assert all(part.strip() in " ".join(texts) for part in re.split(r"(?<=\.) ", s))


async def test_llm_summary_is_one_call_per_cluster(tmp_path):
    settings = Settings.model_validate(
        {
            "home": str(tmp_path),
            "llm": {"backend": "mock", "mock_script": "dry-run", "cache": False},
        }
    )
    llm = build_llm(settings)
    summary = await LLMClusterSummarizer(llm, max_tokens=100).summarize(["First.", "Second."])
    assert summary
    assert llm.accounting.report()["stages"]["raptor_summary"]["calls"] == 1
