"""Long texts embedded whole: windows of what the encoder reads, averaged (the real MiniLM)."""

from __future__ import annotations

import numpy as np
import pytest

from biorag.embed.st_embedder import SentenceTransformerEmbedder
from biorag.embed.windows import (
    count_over_window,
    long_chunk_policy,
    mismatch_hint,
    over_window,
    pool,
    split_windows,
)

pytestmark = pytest.mark.slow

HEART = "Atrial fibrillation raises the risk of stroke in older adults with hypertension. " * 25
BONE = "Bisphosphonates reduce vertebral fracture rates in postmenopausal osteoporosis. " * 25


@pytest.fixture(scope="module")
def pooled() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(long_texts="pool")


@pytest.fixture(scope="module")
def truncated() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(long_texts="truncate")


def test_a_long_chunk_is_found_by_what_its_end_says(pooled, truncated):
    chunk = HEART + BONE  # ~700 word pieces: MiniLM alone reads the first 256 (heart only)
    assert over_window(pooled._load(), [chunk]) == 1
    query = pooled.embed_query("Do bisphosphonates prevent fractures in osteoporosis?")
    whole = pooled.embed([chunk])[0]
    cut = truncated.embed([chunk])[0]
    assert float(np.dot(query, whole)) > float(np.dot(query, cut)) + 0.1
    assert abs(float(np.linalg.norm(whole)) - 1.0) < 1e-5


def test_texts_that_fit_get_the_same_vectors_and_the_ids_differ(pooled, truncated):
    texts = ["Metformin lowers HbA1c.", "Statins lower LDL cholesterol."]
    assert np.allclose(pooled.embed(texts), truncated.embed(texts), atol=1e-6)
    assert pooled.model_id == truncated.model_id + "#pool"
    mixed = pooled.embed([texts[0], HEART + BONE, texts[1]])
    assert np.allclose(mixed[[0, 2]], truncated.embed(texts), atol=1e-6)


def test_windows_cover_the_text_with_overlap():
    text = " ".join(f"w{i}" for i in range(10))
    spans = [[(3 * i, 3 * i + 2) for i in range(10)]]
    pieces, owner = split_windows([text], spans, window=4, overlap=1)
    assert pieces == ["w0 w1 w2 w3", "w3 w4 w5 w6", "w6 w7 w8 w9"] and owner == [0, 0, 0]
    short, owner = split_windows(["a b"], [[(0, 1), (2, 3)]], window=4, overlap=1)
    assert short == ["a b"] and owner == [0]
    v = pool(np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 4.0]]), [0, 0, 1], 2)
    assert np.allclose(v, [[2**-0.5, 2**-0.5], [0.6, 0.8]])


def test_indexes_say_how_their_long_chunks_were_embedded(pooled, truncated):
    base = "sentence-transformers:all-MiniLM-L6-v2"
    assert 'long_texts = "truncate"' in mismatch_hint(base, base + "#pool")
    assert 'long_texts = "pool"' in mismatch_hint(base + "#pool", base)
    assert mismatch_hint(base, "openai:x") == ""
    assert long_chunk_policy(base + "#pool").startswith("pooled")
    assert long_chunk_policy(base).startswith("truncated")
    counted = count_over_window(truncated, ["short", HEART + BONE])
    assert counted == {"window": 250, "over_window": 1}
    assert count_over_window(object(), ["x"]) is None  # a server decides for itself
