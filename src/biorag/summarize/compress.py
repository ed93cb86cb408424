"""Compression of connected summaries that exceed the token limit (CLAIMS appendix D).

When the summaries feeding one claim total more than ``limit`` tokens they are clustered with
KMeans over their vectors (``n_init=10``, ``random_state=0``) into
``min(count, ceil(total / limit) + 1)`` clusters; each cluster is merged into one text of at
most ``limit // clusters`` tokens (stage ``compress``; a lone text already within that budget is
kept as it is, without a call), all clusters concurrently (one sequential round). This repeats
while the total is still over the limit, for at most ``max_rounds`` rounds; whatever is still
too long after that is cut at token boundaries, so the result always fits the limit.
"""

from __future__ import annotations

import asyncio
import math
import warnings
from dataclasses import dataclass

import numpy as np

from biorag.summarize.base import Summarizer, truncate_tokens


@dataclass
class Compressed:
    """The texts to use (total within the limit), compress calls made and sequential rounds."""

    texts: list[str]
    calls: int = 0
    rounds: int = 0


def cluster_texts(vectors: np.ndarray, k: int) -> list[list[int]]:
    """Indices grouped into at most ``k`` KMeans clusters, each group and the groups ordered
    by their first index (deterministic)."""
    n = len(vectors)
    if n == 0:
        return []
    distinct = len(np.unique(np.round(np.asarray(vectors, dtype=np.float64), 6), axis=0))
    k = max(1, min(k, n, distinct))
    if k == 1:
        return [list(range(n))]
    if k == n:
        return [[i] for i in range(n)]
    from sklearn.cluster import KMeans

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = KMeans(n_clusters=k, n_init=10, random_state=0).fit_predict(vectors)
    groups: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        groups.setdefault(int(label), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


async def compress_summaries(
    texts: list[str],
    summarizer: Summarizer,
    question: str,
    limit: int | None = None,
    *,
    max_rounds: int = 3,
) -> Compressed:
    """``texts`` brought within ``limit`` tokens in total (``summarizer.token_limit`` when
    None); returned unchanged, with no calls, when they already fit."""
    limit = limit or summarizer.token_limit
    counter = summarizer.counter
    texts = [t.strip() for t in texts if t and t.strip()]
    counts = counter.count_many(texts)
    out = Compressed(texts)
    while sum(counts) > limit and out.rounds < max_rounds:
        k = min(len(texts), math.ceil(sum(counts) / limit) + 1)
        groups = await asyncio.to_thread(_groups, summarizer, texts, k)
        budget = max(1, limit // len(groups))
        jobs = []
        for group in groups:
            if len(group) == 1 and counts[group[0]] <= budget:
                jobs.append(_keep(texts[group[0]]))
            else:
                out.calls += 1
                jobs.append(
                    summarizer.compress_cluster(question, [texts[i] for i in group], budget)
                )
        texts = [t.strip() for t in await asyncio.gather(*jobs) if t and t.strip()]
        counts = counter.count_many(texts)
        out.rounds += 1
    if sum(counts) > limit:  # the model would not shorten enough: cut to a fair share each
        share = max(1, limit // max(len(texts), 1))
        texts = [truncate_tokens(t, share, counter) for t in texts[:limit]]
    out.texts = texts
    return out


def _groups(summarizer: Summarizer, texts: list[str], k: int) -> list[list[int]]:
    return cluster_texts(summarizer.vectors(texts), k)


async def _keep(text: str) -> str:
    return text
