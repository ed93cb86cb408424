"""Pseudo-relevance feedback for BM25: RM3 (Abdul-Jaleel et al., 2004; Anserini's defaults).

The first BM25 search's top ``docs`` chunks stand for the relevant set. Each term's relevance
model weight is ``P(t|R) = sum_d P(t|d) P(d|q)``, with ``P(t|d)`` the term's share of chunk d's
tokens and ``P(d|q)`` the chunk's BM25 score over the feedback scores' sum; the ``terms`` best
terms are kept and renormalized, then mixed with the query's own term distribution:
``w(t) = orig * P(t|q) + (1 - orig) * P(t|R)``. The second search scores with those weights.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from biorag.retrieve.hits import Hit


def rm3_weights(
    query_tokens: Sequence[str],
    feedback: Sequence[tuple[Sequence[str], float]],
    terms: int = 10,
    orig: float = 0.5,
) -> dict[str, float]:
    """The expanded query's term weights from ``feedback`` ((tokens, score) per chunk)."""
    q = Counter(query_tokens)
    total_q = sum(q.values())
    weights = {t: orig * c / total_q for t, c in q.items()} if total_q else {}
    mass = sum(max(s, 0.0) for _, s in feedback)
    if not feedback or mass <= 0:
        return {t: c / total_q for t, c in q.items()} if total_q else {}
    rel: dict[str, float] = {}
    for toks, score in feedback:
        if not toks or score <= 0:
            continue
        p_d = score / mass
        for t, c in Counter(toks).items():
            rel[t] = rel.get(t, 0.0) + p_d * c / len(toks)
    top = sorted(rel.items(), key=lambda kv: (-kv[1], kv[0]))[:terms]
    z = sum(v for _, v in top)
    for t, v in top:
        weights[t] = weights.get(t, 0.0) + (1 - orig) * v / z
    return weights


def rm3_search(
    bm25: object,
    queries: list[str],
    depth: int,
    texts_of: Callable[[list[str]], dict[str, str]],
    docs: int = 10,
    terms: int = 10,
    orig: float = 0.5,
) -> list[list[Hit]]:
    """BM25 rankings of ``queries`` after one round of RM3 feedback; ``bm25`` is a segmented
    BM25 (``tokenize``, ``search``, ``search_weighted``), ``texts_of`` maps chunk ids to texts."""
    first = bm25.search(queries, docs)  # type: ignore[attr-defined]
    texts = texts_of(sorted({h.id for hits in first for h in hits}))
    tok = bm25.tokenize  # type: ignore[attr-defined]
    out = []
    for query, hits in zip(queries, first, strict=True):
        fb = [(tok(texts[h.id]), h.score) for h in hits if h.id in texts]
        w = rm3_weights(tok(query), fb, terms, orig)
        out.append(bm25.search_weighted(w, depth))  # type: ignore[attr-defined]
    return out
