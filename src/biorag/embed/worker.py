"""Embedding as a batch worker (:mod:`biorag.executor`): the configured embedder built once in
a worker process or Ray actor, then called on batches of texts."""

from __future__ import annotations

from typing import Any

import numpy as np

from biorag.config import EmbedSettings
from biorag.embed.factory import build_embedder
from biorag.errors import IndexMismatchError


class EmbedWorker:
    """Builds the embedder ``settings`` (an ``EmbedSettings`` dump) describe, without a cache,
    with ``threads`` torch threads; refuses one that is not ``model_id``."""

    def __init__(self, settings: dict[str, Any], model_id: str, threads: int = 1):

        if threads:
            import torch

            torch.set_num_threads(threads)
        self.embedder = build_embedder(EmbedSettings.model_validate(settings), cache_dir=None)
        if self.embedder.model_id != model_id:
            raise IndexMismatchError(
                f"the worker's embedding model is {self.embedder.model_id}, the index's "
                f"{model_id}; give the workers the same embed settings"
            )

    def __call__(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.embedder.embed([str(t) for t in texts]), dtype=np.float32)
