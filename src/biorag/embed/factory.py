"""Build the configured embedder."""

from __future__ import annotations

from pathlib import Path

from biorag.config import EmbedSettings
from biorag.embed.base import Embedder
from biorag.embed.cache import CachedEmbedder
from biorag.embed.openai_embedder import OpenAIEmbedder
from biorag.embed.st_embedder import SentenceTransformerEmbedder
from biorag.errors import ConfigError


def build_embedder(settings: EmbedSettings, cache_dir: Path | None = None) -> Embedder:
    """The embedder ``settings`` describe, wrapped in a :class:`CachedEmbedder` on
    ``cache_dir`` when ``settings.cache`` is on and a directory is given.

    ``sentence-transformers``: ``settings.model`` is a local directory or the bundled
    all-MiniLM-L6-v2 (nothing is downloaded; the model loads on first use).
    ``openai``: ``settings.base_url`` (required) serves ``/v1/embeddings`` for ``settings.model``;
    the key is read from ``$settings.api_key_env``; its dimension, once learnt, is remembered in
    ``cache_dir`` (no probe request in later processes).
    """
    embedder: Embedder
    if settings.backend == "sentence-transformers":
        embedder = SentenceTransformerEmbedder(
            settings.model,
            device=settings.device,
            batch_size=settings.batch_size,
            precision=settings.precision,
            long_texts=settings.long_texts,
        )
    elif settings.backend == "openai":
        if not settings.base_url:
            raise ConfigError(
                "embed.backend 'openai' needs embed.base_url (e.g. http://localhost:8080/v1)"
            )

        embedder = OpenAIEmbedder(
            settings.base_url,
            settings.model,
            api_key_env=settings.api_key_env,
            batch_size=settings.batch_size,
            state_dir=cache_dir,
        )
    else:  # pragma: no cover - the settings model rejects other values
        raise ConfigError(f"unknown embed.backend {settings.backend!r}")
    if settings.cache and cache_dir is not None:
        return CachedEmbedder(embedder, cache_dir)
    return embedder
