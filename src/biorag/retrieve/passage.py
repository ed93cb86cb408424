"""A retrieved chunk with everything needed to cite it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Passage:
    """One retrieved chunk with everything needed to cite it."""

    chunk_id: str
    doc_id: str
    source_id: str
    title: str
    text: str
    score: float
    rank: int
    corpus: str
    retriever: str
    start: int = 0
    end: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
