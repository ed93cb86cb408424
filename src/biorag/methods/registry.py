"""Method names as the CLI and the evaluation runner know them."""

from __future__ import annotations

from typing import Any

from biorag.errors import BioragError
from biorag.methods.base import QAMethod
from biorag.methods.claim_chunks import ClaimChunks
from biorag.methods.claims import Claims
from biorag.methods.closed_book import ClosedBook
from biorag.methods.crag import CRAG
from biorag.methods.hyde import HyDE
from biorag.methods.iprar import IPRAR
from biorag.methods.raptor import Raptor
from biorag.methods.retrieve_read import RetrieveRead
from biorag.methods.rewrite import Rewrite
from biorag.methods.selfrag import SelfRAG
from biorag.methods.vectorgraphrag import VectorGraphRAG
from biorag.runtime import Runtime

METHODS: dict[str, type[QAMethod]] = {
    ClosedBook.name: ClosedBook,
    RetrieveRead.name: RetrieveRead,
    Claims.name: Claims,
    Rewrite.name: Rewrite,
    HyDE.name: HyDE,
    Raptor.name: Raptor,
    ClaimChunks.name: ClaimChunks,
    VectorGraphRAG.name: VectorGraphRAG,
    IPRAR.name: IPRAR,
    CRAG.name: CRAG,
    SelfRAG.name: SelfRAG,
}


def build_method(name: str, runtime: Runtime, options: dict[str, Any] | None = None) -> QAMethod:
    try:
        cls = METHODS[name]
    except KeyError:
        raise BioragError(
            f"unknown method {name!r}; available: {', '.join(sorted(METHODS))}"
        ) from None
    return cls(runtime, **(options or {}))
