"""Texts longer than the encoder reads: counted, and optionally embedded whole by windows.

all-MiniLM-L6-v2 reads 256 word pieces and drops the rest, while biorag's chunks are up to
1,000 tokens (the papers' chunk size). An index build counts the chunks longer than the window
and says so (``index stats``: ``long_chunks``). ``embed.long_texts = "truncate"`` (the default)
keeps the encoder's behaviour: dense retrieval sees a long chunk's start. ``"pool"`` cuts each
text over the window into overlapping windows on token boundaries, embeds every window and
takes the renormalized mean; texts that fit get the same vectors either way. Measured on the
1,000 PubMedQA abstracts as whole documents (docs/benchmarks.md), the mean of windows retrieves
worse than the start alone; chunking at the window (``chunking.chunk_tokens = 250``) is the way
to have every word embedded.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from biorag.embed.base import l2_normalize

OVERLAP_TOKENS = 32
_SPECIAL_TOKENS = 2  # [CLS] and [SEP]
_MARGIN = 4  # re-tokenizing a window's text can add a piece at its edges


def window_tokens(model: Any) -> int:
    """How many word pieces of text one forward pass of ``model`` reads."""
    return max(16, int(model.max_seq_length) - _SPECIAL_TOKENS - _MARGIN)


def token_spans(tokenizer: Any, texts: list[str]) -> list[list[tuple[int, int]]]:
    """Character spans of every word piece of each text (no special tokens, no truncation)."""
    quiet = logging.getLogger("transformers.tokenization_utils_base")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # "sequence length is longer than the maximum": intended
    try:
        enc = tokenizer(
            texts, add_special_tokens=False, return_offsets_mapping=True, truncation=False
        )
    finally:
        quiet.setLevel(level)
    return [[(int(a), int(b)) for a, b in spans] for spans in enc["offset_mapping"]]


def split_windows(
    texts: list[str], spans: list[list[tuple[int, int]]], window: int, overlap: int
) -> tuple[list[str], list[int]]:
    """``(pieces, owner)``: each text whole when it fits ``window`` tokens, else its windows of
    ``window`` tokens, ``overlap`` shared between neighbours; ``owner[i]`` is the text of piece
    ``i``."""
    step = max(1, window - overlap)
    pieces: list[str] = []
    owner: list[int] = []
    for i, (text, tok) in enumerate(zip(texts, spans, strict=True)):
        if len(tok) <= window:
            pieces.append(text)
            owner.append(i)
            continue
        start = 0
        while True:
            end = min(start + window, len(tok))
            pieces.append(text[tok[start][0] : tok[end - 1][1]])
            owner.append(i)
            if end == len(tok):
                break
            start += step
    return pieces, owner


def pool(vectors: np.ndarray, owner: list[int], n: int) -> np.ndarray:
    """The renormalized mean of each text's window vectors, shape ``(n, dim)``."""
    out = np.zeros((n, vectors.shape[1]), dtype=np.float32)
    np.add.at(out, np.asarray(owner), vectors.astype(np.float32))
    return l2_normalize(out)


def over_window(model: Any, texts: list[str]) -> int:
    """How many of ``texts`` are longer than ``model`` reads in one pass."""
    window = window_tokens(model)
    return sum(len(s) > window for s in token_spans(model.tokenizer, texts))


def mismatch_hint(built: str, configured: str) -> str:
    """What to do when an index built with ``built`` meets the ``configured`` embedder and they
    differ only in how long texts are embedded; empty otherwise."""
    if configured == built + "#pool":
        return ' It was built with embed.long_texts = "truncate": set that again to use it.'
    if built == configured + "#pool":
        return ' It was built with embed.long_texts = "pool": set that again to use it.'
    return ""


def long_chunk_policy(model_id: str) -> str:
    """How an index built with ``model_id`` embedded chunks longer than the model reads."""
    if model_id.endswith("#pool"):
        return (
            "pooled: a chunk longer than the model's window is split into windows whose "
            "vectors are averaged (embed.long_texts = pool)"
        )
    if model_id.startswith("sentence-transformers:"):
        return (
            "truncated: dense retrieval sees only the start of chunks longer than the model's "
            "window (BM25 reads them whole); chunking.chunk_tokens = 250 aligns chunks with it"
        )
    return "as the embedding server handles them"


def window_of(embedder: Any) -> tuple[Any, int] | None:
    """``(model, window)`` of a local sentence-transformers embedder (through a cache wrapper),
    None for others (a server decides for itself)."""
    inner = getattr(embedder, "inner", embedder)
    load = getattr(inner, "_load", None)
    if load is None or not hasattr(inner, "long_texts"):
        return None
    model = load()
    return model, window_tokens(model)


def count_over_window(embedder: Any, texts: list[str]) -> dict[str, int] | None:
    """``{"window": word pieces, "over_window": texts longer}``, or None for a server."""
    found = window_of(embedder)
    if found is None:
        return None
    model, window = found
    return {"window": window, "over_window": over_window(model, texts) if texts else 0}
