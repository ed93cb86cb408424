"""Extract: propositional claims from chunks, and one (subject, predicate, object) per claim.

Build the stage and run it::

    extraction = build_extraction(llm)                 # batched single-stage (the default)
    extraction = build_extraction(llm, "faithful")     # claims + gleaning, then triples per claim
    extraction = build_extraction(None)                # the no-LLM floor (rules + patterns)
    claims = await extraction.run(chunks)              # deduplicated, each with a triple
    extraction.stats                                   # claims, unresolved refs, triple sources

Operators (each ``async``): claim extractors ``extract_claims(chunks) -> list[Claim]``
(:class:`LLMClaimExtractor`, :class:`RuleClaimExtractor`; :class:`BatchedClaimTripleExtractor`,
:class:`DirectTripleExtractor` and :class:`EntityPairExtractor` set triples too) and triple
extractors ``extract_triples(claims) -> list[Claim]`` (:class:`LLMTripleExtractor` with the
paper's fallbacks, :class:`PatternTripleExtractor`). LLM stages for accounting: ``claims``,
``claims_gleaning``, ``decontextualize``, ``triples``, ``triples_repair``, ``triples_entities``,
``triples_relation``, ``claims_triples``, and for the component-study alternatives
``direct_triples``, ``pair_entities``, ``pair_relations``.
"""

from biorag.extract.alternatives import DirectTripleExtractor, EntityPairExtractor
from biorag.extract.batched import BatchedClaimTripleExtractor
from biorag.extract.claims import LLMClaimExtractor, RuleClaimExtractor
from biorag.extract.coref import count_references
from biorag.extract.entities import rule_based_entities, rule_based_triple
from biorag.extract.models import Claim, Triple, TripleSource
from biorag.extract.parsing import (
    NO_ADDITIONAL,
    normalize_claim,
    parse_blocks,
    parse_claim_lines,
    parse_triple,
)
from biorag.extract.patterns import pattern_triple
from biorag.extract.pipeline import Extraction, build_extraction
from biorag.extract.rule_claims import split_clauses
from biorag.extract.triples import LLMTripleExtractor, PatternTripleExtractor

STAGES = (
    "claims",
    "claims_gleaning",
    "decontextualize",
    "triples",
    "triples_repair",
    "triples_entities",
    "triples_relation",
    "claims_triples",
    "direct_triples",
    "pair_entities",
    "pair_relations",
)

__all__ = [
    "NO_ADDITIONAL",
    "STAGES",
    "BatchedClaimTripleExtractor",
    "Claim",
    "DirectTripleExtractor",
    "EntityPairExtractor",
    "Extraction",
    "LLMClaimExtractor",
    "LLMTripleExtractor",
    "PatternTripleExtractor",
    "RuleClaimExtractor",
    "Triple",
    "TripleSource",
    "build_extraction",
    "count_references",
    "normalize_claim",
    "parse_blocks",
    "parse_claim_lines",
    "parse_triple",
    "pattern_triple",
    "rule_based_entities",
    "rule_based_triple",
    "split_clauses",
]
