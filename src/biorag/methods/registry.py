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
