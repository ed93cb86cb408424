"""The bundled MiniLM for the verifier tests: the rules verifier's similarity is the point."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def minilm():
    from biorag.embed.st_embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()
