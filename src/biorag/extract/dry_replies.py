"""Dry-run answers of the claim and triple extraction stages (:mod:`biorag.llm.dry_run`):
``CLAIM:`` lines from the text's sentences, triples from the no-LLM pattern extractor."""

from __future__ import annotations

from biorag.extract.entities import rule_based_entities, rule_based_triple
from biorag.extract.patterns import pattern_triple
from biorag.llm.dry_run import dry_run_reply, first_passage, sentences
from biorag.llm.types import ChatRequest


def triple_lines(claim: str) -> str:

    t = pattern_triple(claim) or rule_based_triple(claim)
    return f"SUBJECT: {t.subject}\nPREDICATE: {t.predicate}\nOBJECT: {t.object}"


@dry_run_reply("claims", "claims_plain")
def claims(req: ChatRequest) -> str:
    text = first_passage(req.last_user_message(), "Text:")
    return "\n".join(f"CLAIM: {s}" for s in sentences(text))


@dry_run_reply("claims_triples")
def claims_triples(req: ChatRequest) -> str:
    sents = sentences(first_passage(req.last_user_message(), "Text:"))
    return "\n\n".join(f"CLAIM: {s}\n{triple_lines(s)}" for s in sents)


@dry_run_reply("claims_gleaning")
def claims_gleaning(req: ChatRequest) -> str:
    return "NO_ADDITIONAL_CLAIMS"


@dry_run_reply("triples", "triples_repair")
def triples(req: ChatRequest) -> str:
    return triple_lines(first_passage(req.last_user_message(), "Claim:").splitlines()[0])


@dry_run_reply("triples_entities")
def triples_entities(req: ChatRequest) -> str:

    claim = first_passage(req.last_user_message(), "Claim:").splitlines()[0]
    return "\n".join(f"ENTITY: {e}" for e in rule_based_entities(claim)[:2])


@dry_run_reply("triples_relation")
def triples_relation(req: ChatRequest) -> str:
    return "RELATION: is associated with"
