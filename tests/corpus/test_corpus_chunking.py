"""Chunking: token packing with sentence overlap, long sentences, semantic breaks, documents."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from biorag.config import ChunkingSettings
from biorag.corpus.chunking import (
    chunk_document,
    chunk_documents,
    rechunk,
    semantic_breakpoints,
    split_by_tokens,
    split_semantic,
)
from biorag.corpus.models import Chunk, Document
from biorag.corpus.sentences import split_sentences
from biorag.corpus.tokens import TokenCounter

TOPICS = ["insulin glucose", "statin cholesterol", "aspirin platelet", "vitamin bone"]


def _text(n: int = 60) -> str:
    return " ".join(
        f"Sentence {i} says that {TOPICS[i % 4]} levels changed in cohort {i}." for i in range(n)
    )


def _check_spans(text: str, spans: list[tuple[int, int]], budget: int, counter: TokenCounter):
    assert spans
    for s, e in spans:
        assert 0 <= s < e <= len(text)
        assert not text[s].isspace() and not text[e - 1].isspace()
        assert counter.count(text[s:e]) <= budget
    starts = [s for s, _ in spans]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    covered = [False] * len(text)  # every non-space character is in some chunk
    for s, e in spans:
        covered[s:e] = [True] * (e - s)
    assert all(c or ch.isspace() for c, ch in zip(covered, text, strict=True))


def test_pack_whole_sentences_with_overlap(counter: TokenCounter) -> None:
    text = _text()
    spans = split_by_tokens(text, chunk_tokens=80, overlap_tokens=30, counter=counter)
    _check_spans(text, spans, 80, counter)
    sent_starts = {s for s, _ in split_sentences(text)}
    sent_ends = {e for _, e in split_sentences(text)}
    for (s1, e1), (s2, e2) in itertools.pairwise(spans):
        assert s1 in sent_starts and e1 in sent_ends  # chunks hold whole sentences
        assert s1 < s2 < e1 < e2  # consecutive chunks overlap ...
        overlap = text[s2:e1]
        assert 0 < counter.count(overlap) <= 30  # ... by whole sentences within the budget


def test_no_overlap_partitions_text(counter: TokenCounter) -> None:
    text = _text()
    spans = split_by_tokens(text, chunk_tokens=100, overlap_tokens=0, counter=counter)
    _check_spans(text, spans, 100, counter)
    for (_, e1), (s2, _) in itertools.pairwise(spans):
        assert e1 < s2 and text[e1:s2].isspace()
    assert split_by_tokens("Short text.", 100, 10, counter) == [(0, 11)]
    assert split_by_tokens("   ", 100, 10, counter) == []


def test_long_sentence_split_at_token_boundaries(counter: TokenCounter) -> None:
    long = " ".join(f"word{i}" for i in range(300)) + "."
    text = f"Intro sentence. {long} Outro sentence."
    spans = split_by_tokens(text, chunk_tokens=50, overlap_tokens=0, counter=counter)
    _check_spans(text, spans, 50, counter)
    pieces = [text[s:e] for s, e in spans]
    assert pieces[0].startswith("Intro sentence.")
    assert pieces[-1].endswith("Outro sentence.")
    assert all(not p.startswith("#") and p.split()[0] in text.split() for p in pieces)
    joined = " ".join(pieces).split()
    assert [w for w in joined if w.startswith("word")] == [f"word{i}" for i in range(299)] + [
        "word299."
    ]


def test_invalid_budgets() -> None:
    with pytest.raises(ValueError):
        split_by_tokens("x.", 10, 10)
    with pytest.raises(ValueError):
        split_by_tokens("x.", 0, 0)


def test_semantic_breakpoints_on_hand_made_embeddings() -> None:
    a, b, c = np.eye(3)
    emb = np.stack([a, a, a * 0.9 + b * 0.1, b, b, c, c])
    # distances: 0, ~0.006, ~0.994, 0, 1, 0 -> above the 70th percentile: the two big jumps
    assert semantic_breakpoints(emb, percentile=70) == [3, 5]
    assert semantic_breakpoints(emb, percentile=95) == [5]
    assert semantic_breakpoints(np.stack([a, b]), 50) == []  # one distance never splits
    assert semantic_breakpoints(np.stack([a, a, a, a]), 50) == []  # all equal: nothing above
    with pytest.raises(ValueError):
        semantic_breakpoints(emb, percentile=100)


def test_split_semantic_groups_by_topic(counter: TokenCounter) -> None:
    sents = [f"Insulin sentence {i}." for i in range(4)] + [
        f"Statin sentence {i}." for i in range(4)
    ]
    text = " ".join(sents)

    def embed(texts: list[str]) -> np.ndarray:
        out = np.array([[t.count("Insulin"), t.count("Statin")] for t in texts], dtype=float)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    spans = split_semantic(
        text, embed, percentile=80, max_tokens=500, counter=counter, buffer_size=0
    )
    assert [text[s:e] for s, e in spans] == [" ".join(sents[:4]), " ".join(sents[4:])]
    # a group over max_tokens is split further
    small = split_semantic(text, embed, percentile=80, max_tokens=8, counter=counter, buffer_size=0)
    assert len(small) > 2 and all(counter.count(text[s:e]) <= 8 for s, e in small)


def test_chunk_document_sentence_method(counter: TokenCounter) -> None:
    doc = Document.create(source_id="x", title="T", text=_text(120))
    settings = ChunkingSettings(chunk_tokens=100, overlap_tokens=20, max_chunk_tokens=1024)
    chunks = chunk_document(doc, settings, counter)
    assert len(chunks) > 3
    for i, ch in enumerate(chunks):
        assert ch.index == i and ch.doc_id == doc.id
        assert ch.text == doc.text[ch.start : ch.end]
        assert ch.id == Chunk.make_id(doc.id, ch.start, ch.end)
        assert counter.count(ch.text) <= 100


def test_chunk_document_uses_spans_and_splits_oversized_ones(counter: TokenCounter) -> None:
    big = _text(80)
    text = "First snippet.\n" + big + "\nLast snippet."
    spans = [(0, 14), (15, 15 + len(big)), (16 + len(big), len(text))]
    doc = Document.create(source_id="y", text=text, spans=spans)
    settings = ChunkingSettings(chunk_tokens=200, overlap_tokens=50, max_chunk_tokens=300)
    chunks = chunk_document(doc, settings, counter)
    assert chunks[0].text == "First snippet." and chunks[-1].text == "Last snippet."
    assert len(chunks) > 3  # the 1000-token middle snippet was split
    for ch in chunks:
        assert ch.text == doc.text[ch.start : ch.end]
        assert counter.count(ch.text) <= 300
    assert [c.index for c in chunks] == list(range(len(chunks)))


def test_chunk_document_semantic_needs_embed_fn(counter: TokenCounter) -> None:
    doc = Document.create(source_id="z", text=_text(12))
    settings = ChunkingSettings(method="semantic")
    with pytest.raises(ValueError, match="embed_fn"):
        chunk_document(doc, settings, counter)

    def embed(texts: list[str]) -> np.ndarray:
        out = np.array([[float(any(w in t for w in ("insulin", "statin"))), 1.0] for t in texts])
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    chunks = chunk_documents([doc], settings, counter, embed)
    assert chunks and all(c.text == doc.text[c.start : c.end] for c in chunks)


def test_rechunk(counter: TokenCounter) -> None:
    text = _text(50)
    pieces = rechunk(text, max_tokens=64, counter=counter)
    assert len(pieces) > 1 and all(counter.count(p) <= 64 for p in pieces)
    assert " ".join(pieces) == text
