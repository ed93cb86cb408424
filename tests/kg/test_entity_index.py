"""The entity index: saved once, extended incrementally, checked against the embedding model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from biorag.errors import IndexMismatchError
from biorag.kg.entity_index import EntityIndex

NAMES = ["Malaria", "Chloroquine", "Vitamin C", "Scurvy"]


class OtherModel:
    """The hash embedder under another model id (or dimension)."""

    def __init__(self, inner, model_id="test:other", dim=None):
        self.inner, self.model_id, self.dim = inner, model_id, dim or inner.dim

    def embed(self, texts, **kw):
        return self.inner.embed(texts, **kw)


def test_saved_reopened_extended_without_re_embedding(tmp_path, hash_embedder):
    idx = EntityIndex.open(tmp_path, hash_embedder)
    assert idx.sync([*NAMES, "malaria"]) == 4  # same normalized key as "Malaria": once
    assert {p.name for p in tmp_path.iterdir()} >= {
        "entities.npy",
        "entities.json",
        "entities.faiss",
    }
    meta = json.loads((tmp_path / "entities.json").read_text())
    assert meta["model_id"] == "test:hash-64" and meta["dim"] == 64 and meta["names"] == NAMES
    assert np.load(tmp_path / "entities.npy").shape == (4, 64)

    hash_embedder.calls.clear()
    again = EntityIndex.open(tmp_path, hash_embedder)
    assert again.names == NAMES and again.index.ntotal == 4
    assert again.sync(NAMES) == 0 and hash_embedder.calls == []  # nothing re-embedded
    assert again.sync(["Plasmodium"]) == 1 and hash_embedder.calls == [1]  # only the new name
    assert (
        again.index.ntotal == 5
        and EntityIndex.open(tmp_path, hash_embedder).names[-1] == "Plasmodium"
    )
    assert again.lookup("  MALARIA ") == "Malaria" and again.lookup("fever") is None


def test_search_k_and_cutoff(tmp_path, hash_embedder):
    idx = EntityIndex.open(tmp_path, hash_embedder)
    idx.sync(NAMES)
    hits = idx.search(["vitamin c", "unrelated words"], k=10, min_sim=0.9)
    assert hits[0][0][0] == "Vitamin C" and hits[0][0][1] == pytest.approx(1.0, abs=1e-3)
    assert all(s > 0.9 for _, s in hits[0]) and hits[1] == []
    loose = idx.search(["vitamin c"], k=2, min_sim=-1.0)[0]
    assert len(loose) == 2 and loose[0][1] >= loose[1][1]
    assert EntityIndex.open(tmp_path / "empty", hash_embedder).search(["x"]) == [[]]


def test_another_model_is_a_mismatch(tmp_path, hash_embedder):
    EntityIndex.open(tmp_path, hash_embedder).sync(NAMES)
    with pytest.raises(IndexMismatchError, match="test:hash-64"):
        EntityIndex.open(tmp_path, OtherModel(hash_embedder))
    with pytest.raises(IndexMismatchError, match="dim"):
        EntityIndex.open(tmp_path, OtherModel(hash_embedder, "test:hash-64", dim=32))


def test_stale_faiss_file_is_rebuilt_from_the_vectors(tmp_path, hash_embedder):
    EntityIndex.open(tmp_path, hash_embedder).sync(NAMES)
    (tmp_path / "entities.faiss").unlink()
    hash_embedder.calls.clear()
    idx = EntityIndex.open(tmp_path, hash_embedder)
    assert (
        idx.index.ntotal == 4
        and hash_embedder.calls == []
        and (tmp_path / "entities.faiss").exists()
    )
