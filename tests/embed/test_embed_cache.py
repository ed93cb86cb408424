"""CachedEmbedder: identical vectors, only missing texts computed, survives interruption."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from biorag.embed.cache import CachedEmbedder, EmbeddingCache, text_key


def test_cache_hits_are_identical_and_only_missing_texts_are_computed(
    counting, tmp_path: Path
) -> None:
    cached = CachedEmbedder(counting, tmp_path)
    assert cached.model_id == counting.model_id and cached.dim == 8
    first = cached.embed(["a", "b", "a", "c"])
    assert counting.seen == ["a", "b", "c"]  # duplicates computed once
    np.testing.assert_array_equal(first[0], first[2])
    again = cached.embed(["c", "a", "b"])
    assert counting.seen == ["a", "b", "c"]  # nothing new computed
    np.testing.assert_array_equal(again, first[[3, 0, 1]])
    cached.embed(["b", "d", "e"])
    assert counting.calls[-1] == ["d", "e"]
    assert (cached.hits, cached.misses) == (5, 5)
    assert cached.embed_query("d").shape == (8,)  # cached: no new call
    assert cached.embed_query("f").shape == (8,)
    assert len(counting.calls) == 3


def test_cache_persists_and_is_keyed_by_model(counting, make_counting, tmp_path: Path) -> None:
    v = CachedEmbedder(counting, tmp_path).embed(["x", "y"])
    fresh = make_counting()
    np.testing.assert_array_equal(CachedEmbedder(fresh, tmp_path).embed(["y", "x"]), v[::-1])
    assert fresh.calls == []
    other = make_counting(model_id="fake:other", dim=4)
    assert CachedEmbedder(other, tmp_path).embed(["x"]).shape == (1, 4)
    assert other.seen == ["x"]
    assert EmbeddingCache(tmp_path).count() == 3


def test_interrupted_run_keeps_committed_batches(counting, tmp_path: Path) -> None:
    texts = [f"t{i}" for i in range(10)]
    counting.fail_after = 2  # the third batch raises
    with pytest.raises(KeyboardInterrupt):
        CachedEmbedder(counting, tmp_path, commit_every=3).embed(texts)
    assert EmbeddingCache(tmp_path).count("fake:counting") == 6
    counting.fail_after = None
    counting.calls.clear()
    out = CachedEmbedder(counting, tmp_path, commit_every=3).embed(texts)
    assert counting.seen == texts[6:]
    np.testing.assert_array_equal(out[0], counting.vector("t0"))


def test_stale_rows_of_another_dimension_are_recomputed(make_counting, tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    cache.put_many("fake:counting", [text_key("old")], np.ones((1, 3), dtype=np.float32))
    emb = make_counting()
    out = CachedEmbedder(emb, tmp_path).embed(["old", "new"])
    assert out.shape == (2, 8) and sorted(emb.seen) == ["new", "old"]
    assert cache.get_many("fake:counting", [text_key("old")])[text_key("old")].shape == (8,)


def test_empty_input(counting, tmp_path: Path) -> None:
    assert CachedEmbedder(counting, tmp_path).embed([]).shape == (0, 8)
