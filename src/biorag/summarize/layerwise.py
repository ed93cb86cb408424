"""Layerwise summarization of the claim graph around each claim of interest (CLAIMS 3.3).

For a root claim the graph gives layers (layer i = claims exactly i hops away). Summaries are
built from the outermost layer inwards: a claim in layer i is summarized together with the
summaries of its neighbours in layer i + 1 (``neighbors(c) & layer[i+1]``). Each claim is
processed exactly once, in its own layer, and only reads summaries already made, so cycles
cannot loop. A claim with no neighbour further out (all of the outermost layer, and dead ends
nearer in) needs no call: its summary is its own claim text, kept verbatim so no fact is lost
before it reaches an inner summary. When the connected summaries of a claim exceed the
summarizer's token limit they are compressed first (:mod:`biorag.summarize.compress`).

All roots are summarized concurrently; within a root, the claims of a layer are summarized
together (one batch call, or one call each) and layers follow one another. ``rounds`` counts the
sequential steps on a root's critical path: one per layer that needed a call (two when a batch
answer needed per-claim fallbacks) plus the compression rounds of each layer.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

from biorag.summarize.base import (
    STAGE_COMPRESS,
    ClaimGraphLike,
    LayerItem,
    Summarizer,
    relevance,
)
from biorag.summarize.compress import compress_summaries


@dataclass
class RootSummary:
    """The layerwise summary of one claim of interest.

    ``claim_ids``: every claim the summary covers (the root's connected component, layer by
    layer); ``layer_sizes``: claims per layer; ``calls``: summarizer calls made for this root
    (``calls_by_stage`` splits them by stage); ``rounds``: sequential rounds on its critical path.
    """

    root_claim_id: str
    text: str
    claim_ids: list[str]
    layer_sizes: list[int]
    calls: int
    rounds: int
    calls_by_stage: dict[str, int] = field(default_factory=dict)


def relevant_layers(
    graph: ClaimGraphLike, layers: list[list[str]], min_relevance: float | None
) -> list[list[str]]:
    """``layers`` with only the claims whose relevance to the question (:func:`relevance`) is at
    least ``min_relevance`` and that still link to a kept claim of the layer inside theirs (the
    root is always kept); ``None``: all of them, as the paper."""
    if min_relevance is None:
        return layers
    out = [list(layers[0])]
    for layer in layers[1:]:
        inner = set(out[-1])
        kept = [
            c for c in layer
            if c in graph.claims and relevance(graph.claims[c]) >= min_relevance
            and graph.neighbors(c) & inner
        ]  # fmt: skip
        if not kept:
            break
        out.append(kept)
    return out


async def summarize_root(
    graph: ClaimGraphLike,
    root: str,
    summarizer: Summarizer,
    question: str,
    min_relevance: float | None = None,
) -> RootSummary:
    """The layerwise summary of ``root`` (see the module docstring) over the claims at least
    ``min_relevance`` relevant to the question (:func:`relevant_layers`)."""
    layers = [list(layer) for layer in graph.layers(root)] or [[root]]
    layers = relevant_layers(graph, layers, min_relevance)
    summaries: dict[str, str] = {}
    calls: Counter[str] = Counter()
    rounds = 0

    def text_of(cid: str) -> str:
        claim = graph.claims.get(cid)
        return claim.text if claim is not None else ""

    def score_of(cid: str) -> float:
        claim = graph.claims.get(cid)
        return claim.score if claim is not None else 0.0

    for i in range(len(layers) - 1, -1, -1):
        outer = layers[i + 1] if i + 1 < len(layers) else []
        position = {cid: p for p, cid in enumerate(outer)}
        pending: list[tuple[str, list[str]]] = []
        for cid in layers[i]:
            if cid in summaries:  # listed twice: processed once
                continue
            linked = sorted(
                (n for n in graph.neighbors(cid) if n in position and n in summaries),
                key=lambda n: (-score_of(n), position[n]),
            )
            if linked:
                pending.append((cid, [summaries[n] for n in linked]))
            else:
                summaries[cid] = text_of(cid)
        if not pending:
            continue
        compressed = await asyncio.gather(
            *(compress_summaries(ctx, summarizer, question) for _, ctx in pending)
        )
        calls[STAGE_COMPRESS] += sum(c.calls for c in compressed)
        items = [
            LayerItem(cid, text_of(cid), comp.texts)
            for (cid, _), comp in zip(pending, compressed, strict=True)
        ]
        outcome = await summarizer.summarize_layer(question, items)
        calls.update(outcome.calls)
        rounds += max(c.rounds for c in compressed) + outcome.rounds
        for item in items:
            summaries[item.claim_id] = outcome.summaries.get(item.claim_id) or item.text

    return RootSummary(
        root_claim_id=root,
        text=summaries.get(root) or text_of(root),
        claim_ids=[cid for layer in layers for cid in layer],
        layer_sizes=[len(layer) for layer in layers],
        calls=sum(calls.values()),
        rounds=rounds,
        calls_by_stage={k: v for k, v in calls.items() if v},
    )


async def summarize_layerwise(
    graph: ClaimGraphLike,
    roots: list[str],
    summarizer: Summarizer,
    question: str,
    min_relevance: float | None = None,
) -> list[RootSummary]:
    """Layerwise summaries of all ``roots``, computed concurrently, in the order given."""
    return list(
        await asyncio.gather(
            *(summarize_root(graph, r, summarizer, question, min_relevance) for r in roots)
        )
    )


def critical_rounds(root_summaries: list[RootSummary]) -> int:
    """Sequential rounds of the whole run: roots run concurrently, so the longest root counts."""
    return max((r.rounds for r in root_summaries), default=0)


def total_calls(root_summaries: list[RootSummary]) -> dict[str, int]:
    """Summarizer calls per stage over all roots."""
    total: Counter[str] = Counter()
    for r in root_summaries:
        total.update(r.calls_by_stage)
    return dict(total)


def build_context(root_summaries: list[RootSummary]) -> str:
    """The final context: the root summaries in rank order, separated by blank lines."""
    return "\n\n".join(r.text.strip() for r in root_summaries if r.text.strip())
