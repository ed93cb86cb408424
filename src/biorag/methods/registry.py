"""Method names as the CLI and the evaluation runner know them."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from biorag.errors import BioragError
from biorag.methods.base import QAMethod
from biorag.methods.claim_chunks import ClaimChunks
from biorag.methods.claims import Claims
from biorag.methods.closed_book import ClosedBook
from biorag.methods.crag import CRAG
from biorag.methods.hyde import HyDE
from biorag.methods.iprar import IPRAR
from biorag.methods.options import OPTION_DEFAULTS, check_options
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
assert set(OPTION_DEFAULTS) == set(METHODS), "every method declares its options"


def build_method(name: str, runtime: Runtime, options: Mapping[str, Any] | None = None) -> QAMethod:
    """The method ``name`` on ``runtime``, its ``options`` checked first
    (:func:`~biorag.methods.options.check_options`): an unknown method or a bad option is one
    :class:`BioragError` line naming what to change."""
    try:
        cls = METHODS[name]
    except KeyError:
        near = difflib.get_close_matches(name, list(METHODS), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise BioragError(
            f"unknown method {name!r}{hint}; available: {', '.join(sorted(METHODS))}"
        ) from None
    return cls(runtime, **check_options(name, options, getattr(cls, "DEFAULTS", None)))


#: One line per method, for the lists a client reads (``GET /v1/models``).
DESCRIPTIONS: dict[str, str] = {
    "closed-book": "The model answers alone, with no retrieval (needs an LLM: without one it "
    "has nothing to say).",
    "retrieve-read": "Retrieve passages, then read them into an answer with citations.",
    "claims": "CLAIMS: propositional claims from the retrieved documents, a knowledge graph of "
    "their triples, layerwise summaries around the key claims, then the answer.",
    "rewrite": "The Rewrite baseline: the question rewritten for retrieval, then read.",
    "hyde": "The HyDE baseline: retrieve with a hypothetical answer, then read.",
    "raptor": "The RAPTOR baseline: a tree of clustered summaries over the retrieved chunks.",
    "claim": "The claim-chunks ablation: claims as the retrieved units, reranked and read.",
    "vectorgraphrag": "VectorGraphRAG: ranked triplets from a knowledge graph as the context.",
    "iprar": "IP-RAR: multi-level retrieval over BioStrataKG with progressive, self-reflective "
    "generation.",
    "crag": "CRAG: retrieval graded and corrected before the answer.",
    "selfrag": "Self-RAG: retrieval on demand, with the passages and the answer critiqued.",
}
assert set(DESCRIPTIONS) == set(METHODS), "every method has a description"
