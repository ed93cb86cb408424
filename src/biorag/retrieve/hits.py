"""The ranked hit every retriever returns and every fusion step consumes, plus the small
helper the on-disk indexes share to replace a directory atomically."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Hit:
    """One retrieved item: its ``id``, the retriever's ``score`` (higher is better) and its 1-based
    ``rank`` within one ranking."""

    id: str
    score: float
    rank: int


def ranked(pairs: list[tuple[str, float]]) -> list[Hit]:
    """Turn ``(id, score)`` pairs that are already in rank order into hits ranked 1, 2, 3..."""
    return [Hit(id=i, score=float(s), rank=r) for r, (i, s) in enumerate(pairs, start=1)]
