"""Triple extraction: one (subject, predicate, object) per claim (CLAIMS section 3.1, app. B).

:class:`LLMTripleExtractor` asks a few-shot prompt (stage ``triples``) for exactly three lines
``SUBJECT:`` / ``PREDICATE:`` / ``OBJECT:``. An answer is valid when all three fields are present
and non-empty and (softly) the subject and object share a content word with the claim. Invalid
answers go through the paper's fallbacks, in order, each concurrently for the claims still
without a triple:

1. ``triples_repair``: the malformed answer is shown with what is wrong, and the correct format
   asked for again -> ``triple_source = "llm_repair"``;
2. ``triples_entities`` + ``triples_relation``: two key entities (the first two when more are
   given), then the relation between them -> ``"llm_entities_relation"``;
3. rules: the first two :func:`~biorag.extract.entities.rule_based_entities`, relation
   ``"associated"`` -> ``"rule_based"``.

A failed call counts as a malformed answer. No claim is ever dropped.
:class:`PatternTripleExtractor` is the no-LLM floor: lexicon patterns (``"pattern"``), then the
same rule-based fallback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from biorag.extract._llm import chat_all, request, usable_text
from biorag.extract.entities import rule_based_entities, rule_based_triple
from biorag.extract.models import Claim, Triple, TripleSource
from biorag.extract.parsing import parse_entities, parse_relation, parse_triple, triple_problem
from biorag.extract.patterns import pattern_triple
from biorag.llm.base import ChatModel
from biorag.llm.evidence import format_passage, neutralize

__all__ = [
    "LLMTripleExtractor",
    "PatternTripleExtractor",
    "has_triple",
    "rule_based_entities",
    "rule_based_triple",
    "with_triple",
]


def has_triple(claim: Claim) -> bool:
    return (
        claim.triple is not None and claim.triple.is_complete() and claim.triple_source is not None
    )


def _quote(claim: Claim) -> str:
    """The claim as the one passage block of its prompt (id: the claim id)."""
    return format_passage(claim.id, claim.text)


def with_triple(claim: Claim, triple: Triple, source: TripleSource) -> Claim:
    return claim.model_copy(update={"triple": triple, "triple_source": source})


class LLMTripleExtractor:
    """Few-shot triple extraction with the three fallbacks; ``extract_triples(claims)``.

    ``grounded`` turns the soft check (subject and object words occur in the claim) on or off.
    Claims that already have a triple are passed through unchanged.
    """

    def __init__(
        self, llm: ChatModel, *, grounded: bool = True, max_tokens: int | None = 128
    ) -> None:
        self.llm = llm
        self.grounded = grounded
        self.max_tokens = max_tokens

    async def extract_triples(
        self, claims: list[Claim], previous_outputs: Mapping[str, str] | None = None
    ) -> list[Claim]:
        """``claims`` with ``triple`` and ``triple_source`` set, in the same order.

        ``previous_outputs`` maps a claim id to an answer already given for it elsewhere (a
        batched call): that answer stands in for the first prompt, so a malformed one goes
        straight to the repair fallback.
        """
        out = list(claims)
        todo = [i for i, c in enumerate(out) if not has_triple(c)]
        previous = dict(previous_outputs or {})
        outputs: dict[int, str] = {}
        ask = [i for i in todo if out[i].id not in previous]
        reqs = [request("triples", "triples", self.max_tokens, claim=_quote(out[i])) for i in ask]
        for i, resp in zip(ask, await chat_all(self.llm, reqs), strict=True):
            outputs[i] = usable_text(resp)
        for i in todo:
            outputs.setdefault(i, previous.get(out[i].id, ""))
        todo = self._accept(out, todo, outputs, "llm")
        todo = await self._repair(out, todo, outputs)
        todo = await self._entities_relation(out, todo)
        for i in todo:
            out[i] = with_triple(out[i], rule_based_triple(out[i].text), "rule_based")
        return out

    def _accept(
        self, out: list[Claim], todo: list[int], outputs: dict[int, str], source: TripleSource
    ) -> list[int]:
        """Set the valid triples; return the indices still without one."""
        left = []
        for i in todo:
            triple = parse_triple(outputs[i])
            if triple_problem(triple, out[i].text, self.grounded) is None:
                assert triple is not None
                out[i] = with_triple(out[i], triple, source)
            else:
                left.append(i)
        return left

    async def _repair(self, out: list[Claim], todo: list[int], outputs: dict[int, str]):
        reqs = []
        for i in todo:
            problem = triple_problem(parse_triple(outputs[i]), out[i].text, self.grounded)
            reqs.append(
                request(
                    "triples_repair",
                    "triples_repair",
                    self.max_tokens,
                    claim=_quote(out[i]),
                    previous=neutralize(outputs[i].strip()) or "(an empty answer)",
                    problem=problem or "the format was wrong",
                )
            )
        repaired = {
            i: usable_text(r) for i, r in zip(todo, await chat_all(self.llm, reqs), strict=True)
        }
        return self._accept(out, todo, repaired, "llm_repair")

    async def _entities_relation(self, out: list[Claim], todo: list[int]) -> list[int]:
        reqs = [
            request("triples_entities", "triples_entities", self.max_tokens, claim=_quote(out[i]))
            for i in todo
        ]
        pairs: dict[int, tuple[str, str]] = {}
        for i, resp in zip(todo, await chat_all(self.llm, reqs), strict=True):
            ents = parse_entities(usable_text(resp))
            if len(ents) >= 2:
                pair = Triple(subject=ents[0], predicate="related", object=ents[1])
                if triple_problem(pair, out[i].text, self.grounded) is None:
                    pairs[i] = (ents[0], ents[1])
        asked = list(pairs)
        reqs = [
            request(
                "triples_relation",
                "triples_relation",
                self.max_tokens,
                claim=_quote(out[i]),
                subject=pairs[i][0],
                object=pairs[i][1],
            )
            for i in asked
        ]
        for i, resp in zip(asked, await chat_all(self.llm, reqs), strict=True):
            relation = parse_relation(usable_text(resp))
            if relation:
                triple = Triple(subject=pairs[i][0], predicate=relation, object=pairs[i][1])
                out[i] = with_triple(out[i], triple, "llm_entities_relation")
        return [i for i in todo if not has_triple(out[i])]


class PatternTripleExtractor:
    """No-LLM triples (the floor): lexicon patterns, then the rule-based fallback."""

    async def extract_triples(self, claims: list[Claim]) -> list[Claim]:
        return await asyncio.to_thread(
            lambda: [self.triple_for(c) if not has_triple(c) else c for c in claims]
        )

    def triple_for(self, claim: Claim) -> Claim:
        triple = pattern_triple(claim.text)
        if triple is not None:
            return with_triple(claim, triple, "pattern")
        return with_triple(claim, rule_based_triple(claim.text), "rule_based")
