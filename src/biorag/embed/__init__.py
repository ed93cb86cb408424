"""Embedding models, an on-disk embedding cache and rerankers.

Importing this package does not import torch or sentence-transformers; the model backends load
them on first use.
"""

from biorag.embed.base import Embedder, l2_normalize
from biorag.embed.cache import CachedEmbedder, EmbeddingCache
from biorag.embed.factory import build_embedder
from biorag.embed.rerank import (
    BiEncoderReranker,
    CrossEncoderReranker,
    LLMJudgeReranker,
    Reranker,
    build_reranker,
)

__all__ = [
    "BiEncoderReranker",
    "CachedEmbedder",
    "CrossEncoderReranker",
    "Embedder",
    "EmbeddingCache",
    "LLMJudgeReranker",
    "Reranker",
    "build_embedder",
    "build_reranker",
    "l2_normalize",
]
