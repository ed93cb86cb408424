"""Shared fixtures for the embedding tests: the real bundled MiniLM, loaded once per session,
and a counting fake embedder."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from biorag.embed.base import l2_normalize


@pytest.fixture(scope="session")
def minilm():
    """The bundled all-MiniLM-L6-v2 (one model load for the whole session)."""
    from biorag.embed.st_embedder import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    embedder.embed(["warm up"])
    return embedder


class CountingEmbedder:
    """Deterministic fake: a vector from the text's hash; records every text it embeds."""

    def __init__(self, dim: int = 8, model_id: str = "fake:counting"):
        self.model_id = model_id
        self.dim = dim
        self.calls: list[list[str]] = []
        self.fail_after: int | None = None  # raise on the call with this index

    @property
    def seen(self) -> list[str]:
        return [t for call in self.calls for t in call]

    def vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        return l2_normalize(np.random.default_rng(seed).standard_normal(self.dim))[0]

    def embed(
        self, texts: list[str], *, batch_size: int | None = None, show_progress: bool = False
    ) -> np.ndarray:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.calls.append(list(texts))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


@pytest.fixture
def counting() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def make_counting() -> type[CountingEmbedder]:
    """The fake's class, to make more instances (other ids or dimensions)."""
    return CountingEmbedder
