"""The no-LLM verifier: claim alignment, a floor labelled as one.

A sentence is aligned with every span of a cited passage (each passage sentence, and each two
adjacent ones); a span's support score is the mean of two similarities, the share of the
sentence's content words (cut to 6-letter stems) that the span has and the cosine of their
embeddings. The best-scoring span decides:

- score >= ``supported``: supported; >= ``partial``: partly supported; below: not supported;
- a span scoring at least ``contradicted`` whose negation, numbers (with their units) or
  direction of effect disagree with the sentence (:mod:`biorag.verify.agreement`):
  contradicted (a disagreement with a span that says something else is no contradiction).

The thresholds are the ``answer.verify_supported`` / ``verify_partial`` / ``verify_contradicted``
settings; their
defaults were chosen on BioASQ 7b-10b sentences and are reported on 11b
(``benchmarks/bench_verify.py``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from biorag.answer.floor import content_words
from biorag.corpus.sentences import split_sentences
from biorag.embed.base import Embedder
from biorag.verify.agreement import disagreement
from biorag.verify.models import Label, PassageVerdict, Span

SUPPORTED, PARTIAL, CONTRADICTED = 0.82, 0.40, 0.5  # chosen on BioASQ 7b-10b: bench_verify.py


@dataclass(frozen=True)
class Thresholds:
    supported: float = SUPPORTED
    partial: float = PARTIAL
    contradicted: float = CONTRADICTED  # the least score of a span that can contradict


def stems(text: str) -> set[str]:
    """Content words of ``text`` cut to 6 letters (a crude stemmer: "increased" ~ "increase")."""
    return {w[:6] for w in content_words(text)}


def coverage(sentence: set[str], span: set[str]) -> float:
    """The share of the sentence's stems the span has (0 when the sentence has none)."""
    return len(sentence & span) / len(sentence) if sentence else 0.0


def candidate_spans(text: str) -> list[tuple[int, int]]:
    """The spans a sentence is aligned with: each sentence of ``text`` and each adjacent pair
    (the whole text when it has no sentence boundary)."""
    sents = split_sentences(text)
    if not sents:
        return [(0, len(text))] if text.strip() else []
    pairs = [(a[0], b[1]) for a, b in itertools.pairwise(sents)]
    return [*sents, *pairs]


def span_score(own: set[str], sentence_vector: np.ndarray, span: str, vector: np.ndarray) -> float:
    """A span's support score: the mean of its stem coverage of the sentence (``own``: the
    sentence's stems) and the clipped cosine of their embeddings."""
    cos = float(np.clip(vector @ sentence_vector, 0.0, 1.0))
    return 0.5 * coverage(own, stems(span)) + 0.5 * cos


def label_of(score: float, reason: str, th: Thresholds) -> Label:
    if score >= th.contradicted and reason:
        return "contradicted"
    if score >= th.supported:
        return "supported"
    return "partly_supported" if score >= th.partial else "not_supported"


def verify_pairs(
    pairs: Sequence[tuple[str, str, str]],
    embedder: Embedder,
    th: Thresholds = Thresholds(),
) -> list[PassageVerdict]:
    """A verdict for each ``(sentence, passage_id, passage_text)``, in order; an empty passage
    is "not supported" with no span."""
    spans = [candidate_spans(text) for _, _, text in pairs]
    texts = sorted({s for s, _, _ in pairs} | {
        t[a:b] for (_, _, t), sp in zip(pairs, spans, strict=True) for a, b in sp
    })  # fmt: skip
    index = {t: i for i, t in enumerate(texts)}
    vectors = embedder.embed(texts) if texts else np.zeros((0, 1), dtype=np.float32)
    out = []
    for (sentence, pid, text), sp in zip(pairs, spans, strict=True):
        if not sp:
            empty = PassageVerdict(passage_id=pid, label="not_supported", reason="empty passage")
            out.append(empty)
            continue
        own = stems(sentence)
        sv = vectors[index[sentence]]
        best, best_score = sp[0], -1.0
        for a, b in sp:
            span = text[a:b]
            score = span_score(own, sv, span, vectors[index[span]])
            if score > best_score:
                best, best_score = (a, b), score
        a, b = best
        reason = disagreement(sentence, text[a:b])
        out.append(
            PassageVerdict(
                passage_id=pid,
                label=label_of(best_score, reason, th),
                score=round(best_score, 4),
                span=Span(text=text[a:b], start=a, end=b),
                reason=reason,
            )
        )
    return out


def locate(span: str, passage: str) -> tuple[int, int] | None:
    """Where ``span`` (as a model copied it) is in ``passage``: case and runs of whitespace
    ignored; None when it is not there."""
    words = span.split()
    if not words:
        return None
    pattern = r"\s+".join(re.escape(w) for w in words)
    m = re.search(pattern, passage, re.IGNORECASE)
    return (m.start(), m.end()) if m else None
