"""Shared fixtures for the embedding tests: the real bundled MiniLM, loaded once per session,
variants of it with edited configuration files, and a counting fake embedder."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


@pytest.fixture
def minilm_variant(tmp_path: Path) -> Callable[[str, dict[str, dict[str, Any]]], Path]:
    """``minilm_variant(name, edits)``: a copy of the bundled MiniLM in ``tmp_path/name`` (its
    weights symlinked, not copied) whose JSON files are updated: ``edits`` maps a file name
    (``tokenizer_config.json``...) to the keys to set in it."""
    from biorag.embed.st_embedder import bundled_model_path

    def make(name: str, edits: dict[str, dict[str, Any]]) -> Path:
        dst = tmp_path / name

        def place(src: str, target: str) -> None:
            if os.path.getsize(src) > 1_000_000:
                os.symlink(src, target)
            else:
                shutil.copy2(src, target)

        shutil.copytree(bundled_model_path(), dst, copy_function=place)
        for file, keys in edits.items():
            config = json.loads((dst / file).read_text())
            config.update(keys)
            (dst / file).write_text(json.dumps(config))
        return dst

    return make


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
