"""The extract stage as one object: chunks in, deduplicated claims with triples out.

:func:`build_extraction` picks the operators:

=============  ==================  ===================================================
llm            mode / strategy     operators
=============  ==================  ===================================================
None           (any)               RuleClaimExtractor + PatternTripleExtractor (floor)
given          batched / single    BatchedClaimTripleExtractor (the default)
given          faithful / single   LLMClaimExtractor(single_stage) + LLMTripleExtractor
given          faithful / two      LLMClaimExtractor(two_stage) + LLMTripleExtractor
given          * / direct_triples  DirectTripleExtractor
given          * / entity_pairs    EntityPairExtractor
=============  ==================  ===================================================

``batched`` with ``two_stage`` is refused (the decontextualization step needs the claims
before their triples). Chunks longer than ``max_chunk_tokens`` are first cut into pieces, as
CLAIMS does before extraction; the claims of a piece keep their chunk's id.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from biorag.corpus.chunking import split_by_tokens
from biorag.corpus.models import Chunk
from biorag.corpus.tokens import TokenCounter
from biorag.extract._llm import ClaimSet
from biorag.extract.alternatives import DirectTripleExtractor, EntityPairExtractor
from biorag.extract.batched import BatchedClaimTripleExtractor
from biorag.extract.claims import LLMClaimExtractor, RuleClaimExtractor
from biorag.extract.coref import count_references
from biorag.extract.entities import rule_based_triple
from biorag.extract.models import Claim
from biorag.extract.triples import (
    LLMTripleExtractor,
    PatternTripleExtractor,
    has_triple,
    with_triple,
)
from biorag.llm.base import ChatModel
from biorag.llm.stage_yield import StageYield, warn_if_low

__all__ = ["Extraction", "Mode", "Strategy", "build_extraction"]

#: the LLM stage that finds the claims, by (mode, strategy)
_CLAIM_STAGE = {
    ("batched", "single_stage"): "claims_triples",
    ("batched", "direct_triples"): "direct_triples",
    ("faithful", "direct_triples"): "direct_triples",
    ("batched", "entity_pairs"): "pair_relations",
    ("faithful", "entity_pairs"): "pair_relations",
}
_LLM_TRIPLES = frozenset({"llm", "llm_repair", "llm_entities_relation"})

Mode = Literal["batched", "faithful"]
Strategy = Literal["single_stage", "two_stage", "direct_triples", "entity_pairs"]


class Extraction:
    """Runs a claim extractor and (when it does not set triples itself) a triple extractor.

    ``stats`` describes the last :meth:`run`: ``chunks``, ``pieces``, ``claims``,
    ``unresolved_references`` (left by the no-LLM extractor), ``reference_words`` (pronouns and
    demonstratives still in the claims, any mode), ``triple_sources`` (count per source),
    ``mode``, ``strategy`` and ``floor`` (True for the no-LLM operators); with an LLM also
    ``llm_yield``: per LLM stage the inputs, those with usable output, the outputs and the
    fallbacks to the no-LLM floor (:class:`~biorag.llm.stage_yield.StageYield`; the claims stage
    counts chunks with at least one claim, the triples stage claims whose triple came from the
    LLM, the rule-based triple being its floor). A stage where under 20% of the inputs gave
    usable output is logged as a WARNING (once per process and stage).
    """

    def __init__(
        self,
        claim_extractor: Any,
        triple_extractor: Any | None = None,
        *,
        mode: str,
        strategy: str,
        floor: bool = False,
        max_chunk_tokens: int | None = 1024,
        counter: TokenCounter | None = None,
    ) -> None:
        self.claim_extractor = claim_extractor
        self.triple_extractor = triple_extractor
        self.mode = mode
        self.strategy = strategy
        self.floor = floor
        self.max_chunk_tokens = max_chunk_tokens
        self.counter = counter
        self.stats: dict[str, Any] = {}

    def __repr__(self) -> str:
        kind = "no-LLM floor" if self.floor else f"{self.mode}/{self.strategy}"
        return f"Extraction({kind}: {type(self.claim_extractor).__name__})"

    def pieces(self, chunks: list[Chunk]) -> list[Chunk]:
        """Chunks cut to at most ``max_chunk_tokens`` tokens (a piece keeps its chunk's id)."""
        limit = self.max_chunk_tokens
        out: list[Chunk] = []
        for chunk in chunks:
            if limit is None or len(chunk.text) <= limit:  # a token has at least one character
                out.append(chunk)
                continue
            for s, e in split_by_tokens(chunk.text, limit, 0, self.counter):
                out.append(chunk.model_copy(update={"text": chunk.text[s:e]}))
        return out

    async def run(self, chunks: list[Chunk]) -> list[Claim]:
        """Deduplicated claims of ``chunks``, each with a triple and its source."""
        pieces = self.pieces(chunks)
        claims = await self.claim_extractor.extract_claims(pieces)
        if self.triple_extractor is not None:
            claims = await self.triple_extractor.extract_triples(claims)
        unique = ClaimSet()
        for c in claims:
            if not has_triple(c):  # a safety net: every operator sets one already
                c = with_triple(c, rule_based_triple(c.text), "rule_based")
            unique.add(c)
        out = unique.claims
        self.stats = {
            "mode": self.mode,
            "strategy": self.strategy,
            "floor": self.floor,
            "chunks": len(chunks),
            "pieces": len(pieces),
            "claims": len(out),
            "unresolved_references": sum(c.unresolved_references for c in out),
            "reference_words": sum(count_references(c.text) for c in out),
            "triple_sources": dict(Counter(c.triple_source for c in out)),
            # LLM claims dropped as not taken from their chunk (biorag.extract.grounding)
            "ungrounded_claims": int(getattr(self.claim_extractor, "ungrounded", 0) or 0),
        }
        if not self.floor:
            yields = self._yields(chunks, out)
            for y in yields:
                warn_if_low(y, once=True)
            self.stats["llm_yield"] = {y.stage: y.to_dict() for y in yields}
        return out

    def _yields(self, chunks: list[Chunk], claims: list[Claim]) -> list[StageYield]:
        asked = {c.id for c in chunks if c.text.strip()}
        stage = _CLAIM_STAGE.get((self.mode, self.strategy), "claims")
        found = asked & {c.chunk_id for c in claims}
        out = [
            StageYield(
                stage,
                inputs=len(asked),
                usable=len(found),
                outputs=len(claims),
                unit="chunks",
                output_unit="claims",
            )
        ]
        if self.strategy in ("single_stage", "two_stage") and claims:
            llm = sum(c.triple_source in _LLM_TRIPLES for c in claims)
            rules = sum(c.triple_source == "rule_based" for c in claims)
            out.append(
                StageYield(
                    "triples",
                    inputs=len(claims),
                    usable=llm,
                    outputs=llm,
                    fallbacks=rules,
                    unit="claims",
                    output_unit="triples",
                )
            )
        return out


def build_extraction(
    llm: ChatModel | None,
    mode: Mode = "batched",
    strategy: Strategy = "single_stage",
    *,
    gleaning: bool = True,
    max_chunk_tokens: int | None = 1024,
    counter: TokenCounter | None = None,
    ground_claims: bool = True,
) -> Extraction:
    """The extract stage for ``llm`` (None: the no-LLM floor); see the module docstring.
    ``ground_claims``: drop LLM claims not taken from their chunk (:mod:`.grounding`)."""
    if mode not in ("batched", "faithful"):
        raise ValueError(f"unknown extraction mode {mode!r}; use batched or faithful")
    if strategy not in ("single_stage", "two_stage", "direct_triples", "entity_pairs"):
        raise ValueError(
            f"unknown extraction strategy {strategy!r}; use single_stage, two_stage, "
            "direct_triples or entity_pairs"
        )
    common: dict[str, Any] = {"max_chunk_tokens": max_chunk_tokens, "counter": counter}
    if llm is None:
        return Extraction(
            RuleClaimExtractor(), PatternTripleExtractor(), mode="rules", strategy="rules",
            floor=True, **common,
        )  # fmt: skip
    if strategy == "direct_triples":
        return Extraction(DirectTripleExtractor(llm), mode=mode, strategy=strategy, **common)
    if strategy == "entity_pairs":
        return Extraction(EntityPairExtractor(llm), mode=mode, strategy=strategy, **common)
    if mode == "batched":
        if strategy == "two_stage":
            raise ValueError(
                "strategy two_stage needs mode='faithful' (claims are decontextualized before "
                "their triples are extracted)"
            )
        extractor = BatchedClaimTripleExtractor(llm, gleaning=gleaning, ground_claims=ground_claims)
        return Extraction(extractor, mode=mode, strategy=strategy, **common)
    return Extraction(
        LLMClaimExtractor(llm, strategy, gleaning, grounded=ground_claims),
        LLMTripleExtractor(llm),
        mode=mode,
        strategy=strategy,
        **common,
    )
