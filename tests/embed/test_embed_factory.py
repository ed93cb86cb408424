"""build_embedder: backends, cache wrapping, configuration errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from biorag.config import EmbedSettings
from biorag.embed import CachedEmbedder, build_embedder
from biorag.embed.openai_embedder import OpenAIEmbedder
from biorag.embed.st_embedder import SentenceTransformerEmbedder
from biorag.errors import ConfigError


def test_default_is_bundled_minilm_with_cache(tmp_path: Path) -> None:
    e = build_embedder(EmbedSettings(), tmp_path)
    assert isinstance(e, CachedEmbedder)
    assert isinstance(e.inner, SentenceTransformerEmbedder)
    assert e.model_id == "sentence-transformers:all-MiniLM-L6-v2"
    assert (tmp_path / "embeddings.sqlite").is_file()
    assert isinstance(build_embedder(EmbedSettings(), None), SentenceTransformerEmbedder)
    plain = build_embedder(EmbedSettings(cache=False), tmp_path)
    assert isinstance(plain, SentenceTransformerEmbedder)


def test_openai_backend() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        build_embedder(EmbedSettings(backend="openai"))
    e = build_embedder(
        EmbedSettings(
            backend="openai", base_url="http://localhost:8080/v1", model="bge", batch_size=7
        )
    )
    assert isinstance(e, OpenAIEmbedder)
    assert (e.url, e.model_id, e.batch_size) == (
        "http://localhost:8080/v1/embeddings",
        "openai:bge",
        7,
    )
