"""How one local index ranks chunks for a query: the retrievers a setting turns on, then fusion.

    query ── abbreviation expansion ──> BM25 (RM3 feedback when on) ─┐
                                     └> dense (the index's encoder) ─┼─> score fusion or RRF
                                     └> second encoder (when set) ───┘

Each step is a ``[retrieval]`` setting measured in ``benchmarks/bench_retrieval_ablation.py``;
:func:`doc_ranking` is the document-level score (``doc_score``) the searcher applies after.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from biorag.config import RetrievalSettings
from biorag.errors import BioragError
from biorag.retrieve import abbreviations as abbr
from biorag.retrieve.fusion import convex_score_fusion, reciprocal_rank_fusion
from biorag.retrieve.hits import Hit
from biorag.retrieve.prf import rm3_search

log = logging.getLogger(__name__)


def fuse(
    lists: list[list[Hit]], weights: list[float], st: RetrievalSettings, depth: int
) -> list[Hit]:
    if st.fusion == "score":
        return convex_score_fusion(lists, weights, limit=depth)
    return reciprocal_rank_fusion(lists, k=st.rrf_k, weights=weights, limit=depth)


def hybrid_weights(st: RetrievalSettings, second: bool) -> list[float]:
    """BM25's, the dense encoder's and (when set) the second encoder's fusion weights."""
    w = st.dense_weight
    if not second:
        return [1 - w, w]
    s = st.second_weight
    return [(1 - w) * (1 - s), w * (1 - s), s]


def expander(index: Path, key: str, st: RetrievalSettings, texts: Callable[[], Any]) -> Any:
    """The query expander ``retrieval.abbreviations`` names for index ``index``, or None."""
    choice = st.abbreviations.strip()
    if choice in ("", "off"):
        return None
    if choice == "corpus":
        pairs = abbr.corpus_pairs(index, key, texts())
        log.info("%s: %d abbreviations mined from the corpus", index.name, len(pairs))
    else:
        pairs = abbr.load_pairs(choice)
    return abbr.Expander(pairs)


class LocalRanking:
    """The chunk ranking of an index kept on disk, with the settings' retrievers fused."""

    def __init__(
        self,
        bm25: Any,
        dense: Any,
        embedder: Callable[[], Any],
        settings: RetrievalSettings,
        texts_of: Callable[[list[str]], dict[str, str]],
        expand: Any = None,
        second: Any = None,
    ):
        self.bm25 = bm25
        self.dense = dense
        self.embedder = embedder
        self.settings = settings
        self.texts_of = texts_of
        self.expand = expand
        self.second = second

    def _bm25(self, queries: list[str], depth: int) -> list[list[Hit]]:
        st = self.settings
        if st.prf == "none":
            return self.bm25.search(queries, depth)
        if not hasattr(self.bm25, "search_weighted"):
            raise BioragError(
                "retrieval.prf = rm3 needs an index with search segments; this index was built "
                "before them: add to it or rebuild it once, or set retrieval.prf = none",
                param="retrieval.prf",
            )
        return rm3_search(
            self.bm25, queries, depth, self.texts_of, st.prf_docs, st.prf_terms, st.prf_weight
        )

    def rank(self, queries: list[str], depth: int, retriever: str) -> list[list[Hit]]:
        st = self.settings
        expanded = [self.expand.expand(q) for q in queries] if self.expand else queries
        dense_q = expanded if st.abbreviations_for == "all" else queries
        bm = self._bm25(expanded, depth) if retriever in ("bm25", "hybrid") else None
        de = None
        if retriever in ("dense", "hybrid"):
            de = self.dense.search(self.embedder().embed(dense_q), depth)
        if retriever == "bm25":
            return bm  # type: ignore[return-value]
        if retriever == "dense" and self.second is None:
            return de  # type: ignore[return-value]
        lists = [bm, de] if retriever == "hybrid" else [de]
        weights = hybrid_weights(st, self.second is not None)
        if retriever == "dense":  # the two encoders alone
            weights = [weights[1], weights[2]]
        if self.second is not None:
            lists.append(self.second.search(dense_q, depth))
        return [fuse(list(row), weights, st, depth) for row in zip(*lists, strict=True)]


def doc_ranking(ranking: list[Hit], chunk_doc: dict[str, str], how: str) -> list[Hit]:
    """One hit per document, ordered by ``how`` of its chunks' scores (``max``: the best one,
    as the ranking already orders documents; ``sum``; ``top2``: the two best), each the
    document's best chunk carrying the document's score. Hits of unknown chunks are dropped."""
    if how == "max":
        return ranking
    per: dict[str, list[Hit]] = {}
    for h in ranking:
        doc = chunk_doc.get(h.id)
        if doc is not None:
            per.setdefault(doc, []).append(h)
    take = None if how == "sum" else 2
    scored = []
    for hits in per.values():
        top = sorted(hits, key=lambda h: (-h.score, h.rank))
        scored.append((sum(h.score for h in top[:take]), top[0]))
    scored.sort(key=lambda x: (-x[0], x[1].rank))
    return [Hit(id=h.id, score=s, rank=i) for i, (s, h) in enumerate(scored, start=1)]
