"""Chunking: sentence-aware token packing, semantic breakpoints, and document -> chunks.

* :func:`split_by_tokens` packs whole sentences into chunks of at most ``chunk_tokens`` tokens and
  starts each next chunk with the previous chunk's last whole sentences that fit in
  ``overlap_tokens`` (the LlamaIndex ``SentenceSplitter`` behaviour). A sentence longer than the
  budget is cut at token boundaries (at word starts where possible) using the tokenizer's offsets.
* :func:`semantic_breakpoints` / :func:`split_semantic`: a new chunk starts where the cosine
  distance between consecutive sentence embeddings is above the given percentile of all such
  distances (the LlamaIndex/LangChain semantic chunker rule); groups over ``max_tokens`` are split
  further by tokens.
* :func:`chunk_document` turns a :class:`Document` into :class:`Chunk` records (fixed ``spans``
  when the document has them) and :func:`rechunk` is the CLAIMS re-chunk step before extraction.

All spans are ``(start, end)`` character offsets into the original text, never padded with
whitespace; every chunk satisfies ``chunk.text == doc.text[chunk.start:chunk.end]``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from biorag.config import ChunkingSettings
from biorag.corpus.models import Chunk, Document
from biorag.corpus.sentences import split_sentences
from biorag.corpus.tokens import TokenCounter, default_counter

__all__ = [
    "EmbedFn",
    "chunk_document",
    "chunk_documents",
    "consecutive_distances",
    "rechunk",
    "semantic_breakpoints",
    "split_by_tokens",
    "split_semantic",
]

EmbedFn = Callable[[list[str]], np.ndarray]
Span = tuple[int, int]
_Unit = tuple[int, int, int]  # start, end, tokens


def _split_long(text: str, start: int, end: int, budget: int, counter: TokenCounter) -> list[_Unit]:
    """Cut ``text[start:end]`` into pieces of <= ``budget`` tokens, at word starts when possible."""
    enc = counter.encode(text[start:end])
    offsets = enc.offsets
    words = enc.word_ids
    n = len(offsets)
    pieces: list[_Unit] = []
    i = 0
    while i < n:
        j = min(i + budget, n)
        if j < n:
            k = j
            while k > i and words[k] is not None and words[k] == words[k - 1]:
                k -= 1
            if k > i:
                j = k
        pieces.append((start + offsets[i][0], start + offsets[j - 1][1], j - i))
        i = j
    return pieces


def _units(text: str, spans: Sequence[Span], budget: int, counter: TokenCounter) -> list[_Unit]:
    """Sentence units with token counts; sentences over ``budget`` become several pieces."""
    counts = counter.count_many([text[s:e] for s, e in spans])
    units: list[_Unit] = []
    for (s, e), n in zip(spans, counts, strict=True):
        if n <= budget:
            units.append((s, e, n))
        else:
            units.extend(_split_long(text, s, e, budget, counter))
    return units


def _pack(units: Sequence[_Unit], budget: int, overlap: int) -> list[Span]:
    """Greedy packing of units into chunks of at most ``budget`` tokens with sentence overlap."""
    chunks: list[Span] = []
    cur: list[int] = []
    cur_tok = 0
    for i, (_, _, n) in enumerate(units):
        if cur and cur_tok + n > budget:
            chunks.append((units[cur[0]][0], units[cur[-1]][1]))
            keep: list[int] = []
            keep_tok = 0
            for k in reversed(cur):
                if keep_tok + units[k][2] > overlap:
                    break
                keep.insert(0, k)
                keep_tok += units[k][2]
            while keep and keep_tok + n > budget:  # the overlap must leave room for the new unit
                keep_tok -= units[keep.pop(0)][2]
            cur, cur_tok = keep, keep_tok
        cur.append(i)
        cur_tok += n
    if cur:
        chunks.append((units[cur[0]][0], units[cur[-1]][1]))
    return chunks


def _check_budget(chunk_tokens: int, overlap_tokens: int) -> None:
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens must be positive, got {chunk_tokens}")
    if overlap_tokens < 0 or overlap_tokens >= chunk_tokens:
        raise ValueError(
            f"overlap_tokens must be in [0, chunk_tokens), got {overlap_tokens} for {chunk_tokens}"
        )


def split_by_tokens(
    text: str,
    chunk_tokens: int,
    overlap_tokens: int = 0,
    counter: TokenCounter | None = None,
) -> list[Span]:
    """Sentence-aware spans of at most ``chunk_tokens`` tokens, overlapping by whole sentences.

    Token counts are the sums of the sentences' counts (exact for WordPiece-style tokenizers, whose
    pre-tokenizer splits on the whitespace between sentences).
    """
    _check_budget(chunk_tokens, overlap_tokens)
    counter = counter or default_counter()
    sents = split_sentences(text)
    if not sents:
        return []
    return _pack(_units(text, sents, chunk_tokens, counter), chunk_tokens, overlap_tokens)


def _normalize_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D array (sentences x dims), got shape {x.shape}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def consecutive_distances(embeddings: np.ndarray) -> np.ndarray:
    """Cosine distance ``1 - cos(e[i], e[i+1])`` for each consecutive pair (length n-1)."""
    e = _normalize_rows(embeddings)
    if len(e) < 2:
        return np.zeros(0)
    return 1.0 - np.einsum("ij,ij->i", e[:-1], e[1:])


def semantic_breakpoints(sentences_embeddings: np.ndarray, percentile: float = 95.0) -> list[int]:
    """Sentence indices where a new group starts: ``b`` means split between ``b-1`` and ``b``.

    A split happens where the consecutive cosine distance is strictly above the ``percentile``-th
    percentile of all consecutive distances. Fewer than three sentences never split.
    """
    if not 0 < percentile < 100:
        raise ValueError(f"percentile must be in (0, 100), got {percentile}")
    dist = consecutive_distances(sentences_embeddings)
    if len(dist) < 2:
        return []
    threshold = float(np.percentile(dist, percentile))
    return [int(i) + 1 for i in np.flatnonzero(dist > threshold)]


def split_semantic(
    text: str,
    embed_fn: EmbedFn,
    percentile: float = 95.0,
    max_tokens: int = 1024,
    counter: TokenCounter | None = None,
    buffer_size: int = 1,
) -> list[Span]:
    """Semantic chunk spans: sentence groups split at embedding-distance breakpoints.

    Each sentence is embedded together with ``buffer_size`` neighbours on each side (1, as in
    LlamaIndex and LangChain; 0 embeds sentences alone). Groups over ``max_tokens`` are re-split
    with :func:`split_by_tokens`' packing (no overlap).
    """
    _check_budget(max_tokens, 0)
    counter = counter or default_counter()
    sents = split_sentences(text)
    if not sents:
        return []
    units = _units(text, sents, max_tokens, counter)
    groups: list[list[_Unit]]
    if len(units) < 3:
        groups = [units]
    else:
        b = max(0, buffer_size)
        windows = [
            text[units[max(0, i - b)][0] : units[min(len(units) - 1, i + b)][1]]
            for i in range(len(units))
        ]
        emb = np.asarray(embed_fn(windows))
        if emb.shape[0] != len(windows):
            raise ValueError(f"embed_fn returned {emb.shape[0]} rows for {len(windows)} texts")
        cuts = [0, *semantic_breakpoints(emb, percentile), len(units)]
        groups = [units[a:z] for a, z in itertools.pairwise(cuts)]
    spans: list[Span] = []
    for group in groups:
        spans.extend(_pack(group, max_tokens, 0))
    return spans


def _trim(text: str, start: int, end: int) -> Span | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _fixed_spans(
    doc: Document, settings: ChunkingSettings, counter: TokenCounter, budget: int, overlap: int
) -> list[Span]:
    text = doc.text
    spans: list[Span] = []
    for s, e in doc.spans or []:
        if not (0 <= s <= e <= len(text)):
            raise ValueError(f"document {doc.source_id}: span {(s, e)} outside its text")
        t = _trim(text, s, e)
        if t:
            spans.append(t)
    counts = counter.count_many([text[s:e] for s, e in spans])
    out: list[Span] = []
    for (s, e), n in zip(spans, counts, strict=True):
        if n <= settings.max_chunk_tokens:
            out.append((s, e))
        else:
            out.extend(
                (s + a, s + z) for a, z in split_by_tokens(text[s:e], budget, overlap, counter)
            )
    return out


def chunk_document(
    doc: Document,
    settings: ChunkingSettings | None = None,
    counter: TokenCounter | None = None,
    embed_fn: EmbedFn | None = None,
) -> list[Chunk]:
    """The chunks of one document.

    Fixed ``doc.spans`` are used as they are (any over ``max_chunk_tokens`` split by tokens);
    otherwise ``settings.method`` picks sentence packing (``chunk_tokens``/``overlap_tokens``,
    capped by ``max_chunk_tokens``) or semantic splitting (needs ``embed_fn``).
    """
    settings = settings or ChunkingSettings()
    counter = counter or default_counter()
    budget = min(settings.chunk_tokens, settings.max_chunk_tokens)
    overlap = min(settings.overlap_tokens, budget - 1)
    if doc.spans is not None:
        spans = _fixed_spans(doc, settings, counter, budget, overlap)
    elif settings.method == "semantic":
        if embed_fn is None:
            raise ValueError("semantic chunking needs an embed_fn (list[str] -> normalized array)")
        spans = split_semantic(
            doc.text, embed_fn, settings.semantic_percentile, settings.max_chunk_tokens, counter
        )
    else:
        spans = split_by_tokens(doc.text, budget, overlap, counter)
    chunks: list[Chunk] = []
    seen: set[Span] = set()
    for s, e in spans:
        if (s, e) in seen:
            continue
        seen.add((s, e))
        chunks.append(
            Chunk(
                id=Chunk.make_id(doc.id, s, e),
                doc_id=doc.id,
                index=len(chunks),
                start=s,
                end=e,
                text=doc.text[s:e],
            )
        )
    return chunks


def chunk_documents(
    docs: Iterable[Document],
    settings: ChunkingSettings | None = None,
    counter: TokenCounter | None = None,
    embed_fn: EmbedFn | None = None,
) -> list[Chunk]:
    """The chunks of many documents, in document order."""
    out: list[Chunk] = []
    for doc in docs:
        out.extend(chunk_document(doc, settings, counter, embed_fn))
    return out


def rechunk(text: str, max_tokens: int = 1024, counter: TokenCounter | None = None) -> list[str]:
    """The CLAIMS re-chunk step: pieces of at most ``max_tokens`` tokens, no overlap."""
    return [text[s:e] for s, e in split_by_tokens(text, max_tokens, 0, counter)]
