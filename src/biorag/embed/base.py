"""The embedding interface every backend implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 vectors.

    ``model_id`` is stable across runs and machines (it keys caches and is recorded in indexes),
    e.g. ``"sentence-transformers:all-MiniLM-L6-v2"``; ``dim`` is the vector length.
    """

    model_id: str

    @property
    def dim(self) -> int: ...

    def embed(
        self, texts: list[str], *, batch_size: int | None = None, show_progress: bool = False
    ) -> np.ndarray:
        """Vectors for ``texts``: float32, unit L2 norm, shape ``(len(texts), dim)``."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """The vector of one query, shape ``(dim,)``."""
        ...


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm, as contiguous float32 (all-zero rows stay zero)."""
    x = np.asarray(vectors, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.ascontiguousarray(x / np.maximum(norms, 1e-12), dtype=np.float32)


def empty(dim: int) -> np.ndarray:
    """The ``(0, dim)`` float32 result for an empty input."""
    return np.zeros((0, dim), dtype=np.float32)
