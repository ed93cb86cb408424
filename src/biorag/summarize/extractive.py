"""The no-LLM summarizer: extractive summaries by maximal marginal relevance (MMR).

A summary is the head text (the claim being summarized, always kept whole and first) followed
by sentences taken from the context texts. Sentences are chosen greedily by MMR against the
head (plus the question, when given): relevant to it, yet unlike the head and the sentences
already chosen. Exact repeats and near-duplicates (cosine above ``dedup``) are skipped, and a
sentence is taken only if it still fits the token budget (head included). Everything is
deterministic: same inputs, same embedder, same output.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter

import numpy as np

from biorag.corpus.sentences import split_sentences
from biorag.corpus.tokens import TokenCounter, default_counter
from biorag.embed.base import Embedder
from biorag.summarize.base import (
    STAGE_LAYER,
    LayerItem,
    LayerOutcome,
    Summarizer,
    truncate_tokens,
)

_SPACE = re.compile(r"\s+")


def _norm(sentence: str) -> str:
    return _SPACE.sub(" ", sentence.strip().lower()).rstrip(".")


def context_sentences(contexts: list[str], exclude: str = "") -> list[str]:
    """Sentences of ``contexts`` in order, without repeats or sentences of ``exclude``."""
    seen = {_norm(exclude[s:e]) for s, e in split_sentences(exclude)} if exclude else set()
    out: list[str] = []
    for text in contexts:
        for s, e in split_sentences(text):
            sent = text[s:e].strip()
            key = _norm(sent)
            if key and key not in seen:
                seen.add(key)
                out.append(sent)
    return out


def mmr_extract(
    head: str,
    contexts: list[str],
    embedder: Embedder,
    budget: int,
    *,
    query: str | None = None,
    lam: float = 0.7,
    dedup: float = 0.95,
    counter: TokenCounter | None = None,
) -> str:
    """``head`` followed by MMR-chosen sentences of ``contexts``, within ``budget`` tokens.

    ``head`` (may be empty) is kept whole even when it alone exceeds the budget. With an empty
    head and no sentence that fits, the most relevant sentence is cut to the budget.
    """
    counter = counter or default_counter()
    head = head.strip()
    sents = context_sentences(contexts, exclude=head)
    remaining = budget - counter.count(head)
    if not sents or remaining <= 0:
        return head
    anchors = [t for t in (head, query) if t and t.strip()]
    vecs = embedder.embed(anchors + sents)
    anchor_vecs, cand = vecs[: len(anchors)], vecs[len(anchors) :]
    if len(anchors):
        target = anchor_vecs.sum(axis=0)
        target = target / max(float(np.linalg.norm(target)), 1e-12)
        rel = cand @ target
    else:  # no head, no query: favour sentences central to the whole context
        centre = cand.mean(axis=0)
        rel = cand @ (centre / max(float(np.linalg.norm(centre)), 1e-12))
    sizes = counter.count_many(sents)
    chosen_vecs = [anchor_vecs[0]] if head else []
    chosen: list[int] = []
    alive = np.ones(len(sents), dtype=bool)
    zeros = np.zeros(len(sents))
    while alive.any():
        sim = (cand @ np.stack(chosen_vecs).T).max(axis=1) if chosen_vecs else zeros
        alive &= sim <= dedup
        alive &= np.asarray(sizes) <= remaining
        if not alive.any():
            break
        score = np.where(alive, lam * rel - (1.0 - lam) * sim, -np.inf)
        best = int(np.argmax(score))
        chosen.append(best)
        chosen_vecs.append(cand[best])
        remaining -= sizes[best]
        alive[best] = False
    if not head and not chosen:
        return truncate_tokens(sents[int(np.argmax(rel))], budget, counter)
    parts = ([head] if head else []) + [sents[i] for i in chosen]
    return " ".join(parts)


class ExtractiveSummarizer(Summarizer):
    """Summaries without a language model: :func:`mmr_extract` with the given embedder.

    Every summary (test, layer, compressed cluster) stays within ``token_limit`` tokens (the
    claim itself excepted). One extractive operation counts as one call at its stage.
    """

    name = "extractive"

    def __init__(
        self,
        embedder: Embedder,
        token_limit: int = 2000,
        *,
        lam: float = 0.7,
        counter: TokenCounter | None = None,
    ) -> None:
        self.embedder = embedder
        self.token_limit = token_limit
        self.lam = lam
        self.counter = counter or default_counter()

    def __repr__(self) -> str:
        return f"ExtractiveSummarizer(token_limit={self.token_limit})"

    def _extract(self, head: str, contexts: list[str], budget: int, query: str | None) -> str:
        return mmr_extract(
            head, contexts, self.embedder, budget, query=query, lam=self.lam, counter=self.counter
        )

    async def test_summary(
        self, question: str, options: dict[str, str] | None, claim: str, related: list[str]
    ) -> str:
        """The claim, then the related claims' sentences most relevant to claim and question."""
        return await asyncio.to_thread(self._extract, claim, related, self.token_limit, question)

    async def summarize_layer(self, question: str, items: list[LayerItem]) -> LayerOutcome:
        """Each claim followed by the most relevant sentences of its context summaries."""
        summaries = await asyncio.to_thread(
            lambda: {
                it.claim_id: self._extract(it.text, it.context, self.token_limit, question)
                for it in items
            }
        )
        calls: Counter[str] = Counter({STAGE_LAYER: len(items)} if items else {})
        return LayerOutcome(summaries, calls, 1 if items else 0)

    async def compress_cluster(self, question: str, texts: list[str], budget: int) -> str:
        """The sentences of ``texts`` most relevant to the question, within ``budget``."""
        return await asyncio.to_thread(self._extract, "", texts, budget, question)

    def vectors(self, texts: list[str]) -> np.ndarray:
        """The embedder's vectors."""
        return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
