"""The summarizer interface shared by the LLM and the extractive (no-LLM) implementations.

A :class:`Summarizer` offers four operations, each counted as one *call* at a named stage:

* ``test_summary`` (stage ``coi_test_summary``): a claim of interest summarized from its 1-hop
  neighbour claims, emphasizing the central claim (used to rerank claims of interest);
* ``summarize_layer`` (stages ``layer_summary`` / ``layer_summary_batch``): every claim of one
  layer summarized with the summaries of its connected claims one layer further out;
* ``compress_cluster`` (stage ``compress``): several summaries merged into one shorter text;
* ``vectors``: embeddings for the KMeans clustering of the compression step.

For the extractive summarizer a "call" is one extractive operation (no model is asked); counting
it the same way keeps the accounting of both paths comparable.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from biorag.corpus.tokens import TokenCounter, default_counter
from biorag.extract.models import Claim

STAGE_TEST = "coi_test_summary"
STAGE_LAYER = "layer_summary"
STAGE_LAYER_BATCH = "layer_summary_batch"
STAGE_COMPRESS = "compress"


@runtime_checkable
class ClaimGraphLike(Protocol):
    """The part of the claim graph the summarize stage reads."""

    claims: dict[str, Claim]

    def neighbors(self, claim_id: str) -> set[str]:
        """1-hop neighbour claims (claims sharing an entity)."""
        ...

    def layers(self, root_claim_id: str) -> list[list[str]]:
        """Layer i = claims exactly i hops from the root; layer 0 = [root]."""
        ...


@dataclass
class LayerItem:
    """One claim to summarize: its own text and the summaries of its outer neighbours."""

    claim_id: str
    text: str
    context: list[str]


@dataclass
class LayerOutcome:
    """Summaries of one layer by claim id, the calls they took per stage, sequential rounds."""

    summaries: dict[str, str]
    calls: Counter[str] = field(default_factory=Counter)
    rounds: int = 0


def format_options(options: dict[str, str] | None) -> str:
    """Answer options as ``A. text`` lines ('(none)' when there are none)."""
    if not options:
        return "(none)"
    return "\n".join(f"{k}. {v}" for k, v in options.items())


def truncate_tokens(text: str, budget: int, counter: TokenCounter | None = None) -> str:
    """``text`` cut to at most ``budget`` tokens (at a token boundary)."""
    counter = counter or default_counter()
    if budget <= 0:
        return ""
    offsets = counter.offsets(text)
    if len(offsets) <= budget:
        return text
    return text[: offsets[budget - 1][1]].rstrip()


def take_within_budget(texts: list[str], budget: int, counter: TokenCounter) -> list[str]:
    """The longest prefix of ``texts`` whose token total stays within ``budget``; texts that
    do not fit are skipped (a later, shorter one may still fit)."""
    out: list[str] = []
    used = 0
    for t, n in zip(texts, counter.count_many(texts), strict=True):
        if used + n <= budget:
            out.append(t)
            used += n
    return out


class Summarizer(ABC):
    """What the claims-of-interest and layerwise steps need from a summarizer."""

    #: the most tokens the connected summaries of one claim may have before compression
    token_limit: int
    counter: TokenCounter

    @abstractmethod
    async def test_summary(
        self, question: str, options: dict[str, str] | None, claim: str, related: list[str]
    ) -> str:
        """A test summary of ``claim`` given its 1-hop ``related`` claims (one call)."""

    async def test_summaries(
        self,
        question: str,
        options: dict[str, str] | None,
        items: list[tuple[str, str, list[str]]],
    ) -> list[str]:
        """Test summaries of several ``(claim_id, claim, related)`` items, concurrently."""
        import asyncio

        return list(
            await asyncio.gather(
                *(self.test_summary(question, options, claim, rel) for _, claim, rel in items)
            )
        )

    @abstractmethod
    async def summarize_layer(self, question: str, items: list[LayerItem]) -> LayerOutcome:
        """One summary per item (never dropped), keeping the item's own claim first."""

    @abstractmethod
    async def compress_cluster(self, question: str, texts: list[str], budget: int) -> str:
        """``texts`` merged into one text of at most about ``budget`` tokens (one call)."""

    @abstractmethod
    def vectors(self, texts: list[str]) -> np.ndarray:
        """One row per text, for clustering (rows L2-normalized)."""

    def count(self, text: str) -> int:
        """Tokens in ``text`` by the shared counter."""
        return self.counter.count(text)


def relevance(claim: Claim) -> float:
    """A claim's relevance to the question on the embedder's cosine scale (``Claim.relevance``),
    or its reranker score where it has none (a graph built without it)."""
    return claim.score if claim.relevance is None else claim.relevance
