"""DenseIndex: exact search, HNSW recall, IVF, save/load, dimension checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from biorag.errors import IndexMismatchError
from biorag.retrieve.dense import DenseIndex, ivf_params


def unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_flat_matches_brute_force() -> None:
    rng = np.random.default_rng(1)
    x, q = unit(rng, 500, 32), unit(rng, 10, 32)
    ids = [f"v{i}" for i in range(500)]
    index = DenseIndex.build(ids, x, kind="flat")
    assert (index.kind, index.dim, index.n_docs) == ("flat", 32, 500)
    results = index.search(q, k=5)
    sims = q @ x.T
    for row, hits in zip(sims, results, strict=True):
        top = np.argsort(-row)[:5]
        assert [h.id for h in hits] == [ids[i] for i in top]
        np.testing.assert_allclose([h.score for h in hits], row[top], rtol=1e-5, atol=1e-6)
        assert [h.rank for h in hits] == [1, 2, 3, 4, 5]


def test_unnormalized_input_is_normalized_and_single_query_vector() -> None:
    rng = np.random.default_rng(2)
    x = unit(rng, 50, 8)
    index = DenseIndex.build([str(i) for i in range(50)], x * 7.0, kind="flat")
    hits = index.search(x[3] * 0.1, k=1)
    assert hits[0][0].id == "3"
    assert hits[0][0].score == pytest.approx(1.0, abs=1e-5)


def test_auto_kind_threshold() -> None:
    rng = np.random.default_rng(3)
    x = unit(rng, 120, 16)
    ids = [str(i) for i in range(120)]
    assert DenseIndex.build(ids, x, hnsw_min_size=121).kind == "flat"
    assert DenseIndex.build(ids, x, hnsw_min_size=120).kind == "hnsw"


@pytest.mark.slow
def test_hnsw_recall_vs_flat() -> None:
    # 20k random unit vectors. At 384 dimensions random data has no structure for a graph to
    # exploit (recall 0.6 at efSearch 128); real sentence embeddings have a low intrinsic
    # dimension, which 64 random dimensions resemble better.
    rng = np.random.default_rng(4)
    x, q = unit(rng, 20_000, 64), unit(rng, 200, 64)
    ids = [str(i) for i in range(len(x))]
    flat = DenseIndex.build(ids, x, kind="flat")
    hnsw = DenseIndex.build(ids, x, kind="hnsw")
    assert hnsw.kind == "hnsw" and hnsw.ef_search == 128
    exact = flat.search(q, k=10)
    approx = hnsw.search(q, k=10)
    recall = np.mean(
        [
            len({h.id for h in a} & {h.id for h in e}) / 10
            for a, e in zip(approx, exact, strict=True)
        ]
    )
    assert recall >= 0.95


def test_ivf_finds_stored_vectors() -> None:
    rng = np.random.default_rng(5)
    x = unit(rng, 4000, 32)
    ids = [str(i) for i in range(len(x))]
    index = DenseIndex.build(ids, x, kind="ivf")
    nlist, nprobe = ivf_params(4000)
    assert index.params["nlist"] == nlist == 64 and index.nprobe == nprobe == 16
    for i in (0, 17, 3999):
        assert index.search(x[i], k=1)[0][0].id == str(i)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_save_load_round_trip(kind: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    x, q = unit(rng, 2000, 24), unit(rng, 5, 24)
    index = DenseIndex.build([f"c{i}" for i in range(2000)], x, kind=kind)  # type: ignore[arg-type]
    if kind == "hnsw":
        index.ef_search = 77
    index.save(tmp_path / "dense")
    loaded = DenseIndex.load(tmp_path / "dense", expected_dim=24)
    assert (loaded.kind, loaded.dim, loaded.ids) == (kind, 24, index.ids)
    if kind == "hnsw":
        assert loaded.ef_search == 77
    assert loaded.search(q, k=7) == index.search(q, k=7)
    assert sorted(p.name for p in (tmp_path / "dense").iterdir()) == [
        "ids.json",
        "index.faiss",
        "meta.json",
    ]


def test_dim_mismatch(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    index = DenseIndex.build(["a", "b"], unit(rng, 2, 384), kind="flat")
    index.save(tmp_path / "d")
    with pytest.raises(IndexMismatchError, match=r"384.*768"):
        DenseIndex.load(tmp_path / "d", expected_dim=768)
    with pytest.raises(IndexMismatchError, match="dimension 8"):
        index.search(unit(rng, 1, 8), k=1)
    with pytest.raises(IndexMismatchError, match="not a biorag dense index"):
        DenseIndex.load(tmp_path)


def test_k_larger_than_index_and_empty() -> None:
    rng = np.random.default_rng(8)
    x = unit(rng, 3, 4)
    index = DenseIndex.build(["a", "b", "c"], x)
    assert len(index.search(x[:1], k=10)[0]) == 3
    empty = DenseIndex.build([], np.zeros((0, 4), dtype=np.float32), kind="ivf")
    assert empty.search(x[:2], k=3) == [[], []]
