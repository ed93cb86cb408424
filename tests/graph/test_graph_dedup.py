"""Entity deduplication: exact collapse, numeric rule, UPGMA semantics and blocking."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist
from sklearn.metrics import adjusted_rand_score
from tests.graph.graph_helpers import VecEmbedder, clustered_vectors, gram_vectors

from biorag.graph import cluster_vectors, deduplicate_entities, is_numeric_entity, normalize_name
from biorag.graph.upgma import condensed_cosine_distances, relabel_by_first_occurrence, upgma_labels


def naive_upgma(x: np.ndarray, threshold: float) -> np.ndarray:
    """Reference: merge the pair of highest average similarity while it is >= threshold."""
    sims = x.astype(np.float64) @ x.astype(np.float64).T
    clusters = [[i] for i in range(len(x))]
    while True:
        best: tuple[float, int, int] | None = None
        for a in range(len(clusters)):
            for b in range(a + 1, len(clusters)):
                avg = sims[np.ix_(clusters[a], clusters[b])].mean()
                if avg >= threshold and (best is None or avg > best[0]):
                    best = (avg, a, b)
        if best is None:
            break
        _, a, b = best
        clusters[a] += clusters.pop(b)
    labels = np.empty(len(x), dtype=np.int64)
    for k, members in enumerate(clusters):
        labels[members] = k
    return relabel_by_first_occurrence(labels)


def test_numeric_entity_rule() -> None:
    assert is_numeric_entity("2019")
    assert is_numeric_entity("12.5%")  # 3 of 5 characters are digits
    assert is_numeric_entity("1 2 3")  # spaces do not count
    assert not is_numeric_entity("IL-6")
    assert not is_numeric_entity("5 mg")  # 1 of 3
    assert not is_numeric_entity("10mg")  # exactly half is not over half
    assert not is_numeric_entity("")


def test_numeric_entities_never_merge() -> None:
    same = np.array([1.0, 0.0, 0.0])
    emb = VecEmbedder({"2019": same, "2020": same, "120 mg/dl": same, "glucose": same})
    clusters = deduplicate_entities(["2019", "2020", "120 mg/dl", "glucose"], emb)
    assert clusters.canonical("2019") != clusters.canonical("2020")
    # "120 mg/dl": 3 digits of 8 characters is not numeric, so it may merge with glucose
    assert clusters.canonical("120 mg/dl") == clusters.canonical("glucose")
    assert clusters.canonical("2019") != clusters.canonical("glucose")
    assert clusters.stats["numeric_entities"] == 2
    # numeric entities are not even embedded
    assert all("2019" not in call for call in emb.calls)


def test_synonyms_merge_and_dissimilar_names_do_not() -> None:
    emb = VecEmbedder(
        {
            "tumor necrosis factor alpha": [1.0, 0.0, 0.0],
            "TNF-alpha": [0.85, np.sqrt(1 - 0.85**2), 0.0],  # cosine 0.85 >= 0.8
            "BRCA1": [0.0, 0.0, 1.0],
            "BRCA2": [0.0, np.sqrt(1 - 0.75**2), 0.75],  # cosine 0.75 < 0.8
        }
    )
    names = ["tumor necrosis factor alpha", "TNF-alpha", "TNF-alpha", "BRCA1", "BRCA2"]
    clusters = deduplicate_entities(names, emb, threshold=0.8)
    tnf = clusters.canonical("TNF-alpha")
    assert clusters.canonical("tumor necrosis factor alpha") == tnf
    assert clusters.canonical("BRCA1") != clusters.canonical("BRCA2")
    assert clusters.name(tnf) == "TNF-alpha"  # the most frequent member represents the cluster
    assert clusters.members(tnf) == ["TNF-alpha", "tumor necrosis factor alpha"]
    assert clusters.merged == {tnf: ["TNF-alpha", "tumor necrosis factor alpha"]}
    assert clusters.cluster_ids == ["e0", "e1", "e2"]  # numbered by first appearance
    # a stricter threshold keeps the synonyms apart
    strict = deduplicate_entities(names, emb, threshold=0.9)
    assert strict.canonical("TNF-alpha") != strict.canonical("tumor necrosis factor alpha")


def test_exact_names_collapse_before_clustering() -> None:
    emb = VecEmbedder({"TNF-alpha": [1.0, 0.0], "Insulin": [0.0, 1.0]})
    clusters = deduplicate_entities(["TNF-alpha", " tnf-ALPHA", "Insulin", "INSULIN", ""], emb)
    assert len(clusters) == 2
    assert clusters.canonical("TNF-ALPHA  ") == clusters.canonical("TNF-alpha")
    assert emb.calls == [["TNF-alpha", "Insulin"]]  # one embedding per distinct entity
    assert clusters.merged == {}  # case variants are not merges
    assert normalize_name("  Tumor\tNecrosis  ") == "tumor necrosis"
    assert "insulin" in clusters and "glucagon" not in clusters
    with pytest.raises(KeyError, match="glucagon"):
        clusters.canonical("glucagon")


def test_representative_prefers_frequent_then_shortest() -> None:
    v = [1.0, 0.0]
    emb = VecEmbedder({"interleukin 6": v, "IL-6": v, "IL6": v})
    clusters = deduplicate_entities(["interleukin 6", "IL-6", "IL6"], emb)
    assert clusters.name(clusters.canonical("IL6")) == "IL6"  # all once: shortest, then a-z
    clusters = deduplicate_entities(["interleukin 6", "interleukin 6", "IL-6", "IL6"], emb)
    assert clusters.name(clusters.canonical("IL6")) == "interleukin 6"


def test_average_linkage_not_single_linkage() -> None:
    # a~b 0.9, b~c 0.85, a~c 0.6: after a+b merge, avg(ab, c) = 0.725 < 0.8
    x = gram_vectors([[1, 0.9, 0.6], [0.9, 1, 0.85], [0.6, 0.85, 1]])
    emb = VecEmbedder(dict(zip(["a", "b", "c"], x, strict=True)))
    clusters = deduplicate_entities(["a", "b", "c"], emb)
    assert clusters.canonical("a") == clusters.canonical("b") != clusters.canonical("c")
    # at 0.7 the average 0.725 passes and all three merge
    assert len(deduplicate_entities(["a", "b", "c"], emb, threshold=0.7)) == 1


def test_threshold_is_inclusive() -> None:
    emb = VecEmbedder({"x": [1.0, 0.0], "y": [0.8, 0.6]})  # cosine exactly 0.8
    assert len(deduplicate_entities(["x", "y"], emb)) == 1
    emb3 = VecEmbedder({"x": [1.0, 0.0, 0.0], "y": [0.8, 0.6, 0.0], "z": [0.0, 0.0, 1.0]})
    assert len(deduplicate_entities(["x", "y", "z"], emb3)) == 2


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.8])
def test_fcluster_cut_equals_merge_while_average_similarity_reaches_threshold(
    threshold: float,
) -> None:
    x = clustered_vectors(40, dim=8, seed=3, per_cluster=4)
    expected = naive_upgma(x, threshold)
    assert np.array_equal(upgma_labels(x, threshold), expected)
    z = linkage(x.astype(np.float64), method="average", metric="cosine")
    scipy_labels = fcluster(z, t=1 - threshold + 1e-6, criterion="distance")
    assert np.array_equal(relabel_by_first_occurrence(scipy_labels), expected)


def test_condensed_distances_match_pdist() -> None:
    x = clustered_vectors(101, dim=16, seed=1)
    ours = condensed_cosine_distances(x, block=17)
    assert np.allclose(ours, pdist(x.astype(np.float64), "cosine"), atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_blocked_equals_exact_on_clustered_data(seed: int) -> None:
    x = clustered_vectors(1500, dim=32, seed=seed)
    exact = cluster_vectors(x, 0.8, block_above=10_000)
    blocked = cluster_vectors(x, 0.8, block_above=0, index="flat")
    assert exact.method == "exact" and blocked.method == "blocked"
    assert blocked.exact and blocked.stats["blocks"] > 100
    assert np.array_equal(blocked.labels, exact.labels)
    # the test data really exercises UPGMA: components of the >=0.8 graph get split
    assert blocked.n_clusters > blocked.stats["blocks"]
    assert 100 < exact.n_clusters < 1500


def test_blocked_equals_exact_when_components_chain() -> None:
    # low-dimensional random data at a low threshold: long chains, UPGMA splits them
    rng = np.random.default_rng(7)
    x = rng.standard_normal((400, 6)).astype(np.float32)
    for threshold in (0.6, 0.8):
        exact = cluster_vectors(x, threshold, block_above=10_000)
        blocked = cluster_vectors(x, threshold, block_above=0)
        assert np.array_equal(blocked.labels, exact.labels)


def test_ivf_blocking_is_marked_approximate() -> None:
    x = clustered_vectors(1500, dim=32, seed=4)
    exact = cluster_vectors(x, 0.8, block_above=10_000)
    ivf = cluster_vectors(x, 0.8, block_above=0, index="ivf")
    assert not ivf.exact and ivf.stats["index"] == "ivf"
    assert adjusted_rand_score(exact.labels, ivf.labels) > 0.99


def test_oversized_blocks_are_split_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    x = np.random.default_rng(0).standard_normal((300, 4)).astype(np.float32)
    with caplog.at_level(logging.WARNING, logger="biorag.graph.blocking"):
        res = cluster_vectors(x, 0.5, block_above=0, max_block=40)
    assert not res.exact and res.stats["split_blocks"] >= 1
    assert res.stats["largest_block"] <= 40
    assert "exceeds max_block" in caplog.text


def test_deduplicate_blocked_path_and_hash_embedder(hash_embedder) -> None:
    names = [f"protein kinase {i}" for i in range(30)] + ["2019", "2020"]
    exact = deduplicate_entities(names, hash_embedder, threshold=0.8)
    blocked = deduplicate_entities(names, hash_embedder, threshold=0.8, block_above=5)
    assert blocked.method == "blocked" and exact.method == "exact"
    assert {n: exact.canonical(n) for n in names} == {n: blocked.canonical(n) for n in names}
    assert blocked.to_dict()["entities"] == 32


def test_vectors_argument_and_empty_input() -> None:
    clusters = deduplicate_entities(["a", "b", "A"], vectors=np.array([[1.0, 0.0], [1.0, 0.01]]))
    assert len(clusters) == 1
    assert len(deduplicate_entities([], VecEmbedder(dim=4))) == 0
    with pytest.raises(ValueError, match="embedder or vectors"):
        deduplicate_entities(["a"])


def test_names_with_different_numbers_never_merge():
    import numpy as np

    from biorag.graph.dedup import deduplicate_entities

    names = ["BRCA1", "BRCA2", "BRCA", "type 2 diabetes", "type 2 diabetes mellitus"]
    v = np.zeros((5, 4), dtype=np.float32)
    v[:3, 0] = 1.0  # the three BRCA names embed identically
    v[3:, 1] = 1.0
    c = deduplicate_entities(names, vectors=v)
    assert c.canonical("BRCA1") != c.canonical("BRCA2")
    assert c.canonical("BRCA") in {c.canonical("BRCA1"), c.canonical("BRCA2")}
    assert c.canonical("type 2 diabetes") == c.canonical("type 2 diabetes mellitus")
    paper = deduplicate_entities(names, vectors=v, split_on_digits=False)
    assert paper.canonical("BRCA1") == paper.canonical("BRCA2")
