"""The IP-RAR aggregator: one ranking from several retrieval lists (section 4.3.1, eq. 1).

Each chunk ``i`` found by any list gets

    S_i = w_S * sim_i / sim_max + w_M * M_i / M_max + w_R * R_i / R_max

where ``sim_i`` is the chunk's similarity (the largest any list gave it), ``M_i`` the number of
distinct lists (retrieval methods) that found it and ``R_i`` the number of distinct retrieved
chunks (over all lists) from its document; the maxima are over all retrieved chunks. The paper's
weights are ``w_S = 5, w_M = 3, w_R = 1``. A maximum that is not positive makes its term 0.
Ties keep a deterministic order: higher similarity first, then the order of first appearance
(lists in the given order, each best first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

DEFAULT_WEIGHTS: tuple[float, float, float] = (5.0, 3.0, 1.0)


@dataclass
class AggregatedChunk:
    """One retrieved chunk with the three factors of its aggregated score."""

    chunk_id: str
    doc_id: str
    similarity: float
    methods: list[str]
    same_doc: int
    score: float
    terms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ratio(value: float, top: float) -> float:
    return value / top if top > 0 else 0.0


def aggregate(
    lists: Mapping[str, Sequence[tuple[str, str, float]]],
    weights: Sequence[float] = DEFAULT_WEIGHTS,
) -> list[AggregatedChunk]:
    """Rank every chunk of ``lists`` (method name -> ``(chunk_id, doc_id, similarity)`` best
    first) by the aggregated score, best first."""
    if len(weights) != 3:
        raise ValueError(f"aggregate needs three weights (w_S, w_M, w_R), got {list(weights)}")
    w_s, w_m, w_r = (float(w) for w in weights)
    sim: dict[str, float] = {}
    doc: dict[str, str] = {}
    methods: dict[str, set[str]] = {}
    first: dict[str, int] = {}
    for name, rows in lists.items():
        for chunk_id, doc_id, s in rows:
            if chunk_id not in first:
                first[chunk_id] = len(first)
                doc[chunk_id] = doc_id
                sim[chunk_id] = float(s)
            else:
                sim[chunk_id] = max(sim[chunk_id], float(s))
            methods.setdefault(chunk_id, set()).add(name)
    if not first:
        return []
    per_doc: dict[str, int] = {}
    for cid in first:
        per_doc[doc[cid]] = per_doc.get(doc[cid], 0) + 1
    sim_max = max(sim.values())
    m_max = max(len(m) for m in methods.values())
    r_max = max(per_doc.values())
    out: list[AggregatedChunk] = []
    for cid in first:
        r = per_doc[doc[cid]]
        terms = {
            "similarity": w_s * _ratio(sim[cid], sim_max),
            "methods": w_m * _ratio(len(methods[cid]), m_max),
            "same_doc": w_r * _ratio(r, r_max),
        }
        out.append(
            AggregatedChunk(
                chunk_id=cid,
                doc_id=doc[cid],
                similarity=sim[cid],
                methods=sorted(methods[cid]),
                same_doc=r,
                score=sum(terms.values()),
                terms=terms,
            )
        )
    out.sort(key=lambda c: (-c.score, -c.similarity, first[c.chunk_id]))
    return out


def by_similarity(lists: Mapping[str, Sequence[tuple[str, str, float]]]) -> list[AggregatedChunk]:
    """The aggregator switched off: the same chunks, ranked by similarity alone (score =
    similarity; ties by first appearance)."""
    ranked = aggregate(lists, (1.0, 0.0, 0.0))
    for c in ranked:
        c.score, c.terms = c.similarity, {"similarity": c.similarity}
    ranked.sort(key=lambda c: -c.similarity)  # stable: keeps the tie order above
    return ranked
