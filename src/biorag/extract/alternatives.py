"""The component-study alternatives to claim extraction (CLAIMS section 4.3, appendix L.1).

* :class:`DirectTripleExtractor` (``direct_triples``): triples straight from each chunk, one call
  per chunk (stage ``direct_triples``), skipping claims; each triple's claim text is
  "subject predicate object"; ``triple_source = "direct"``.
* :class:`EntityPairExtractor` (``pairs_relations``): the entities of each chunk first (stage
  ``pair_entities``), then the relations between pairs of them (stage ``pair_relations``, one call
  per chunk for all pairs); a relation counts only when its subject and object are listed
  entities; ``triple_source = "entity_pairs"``.

Both answer in the ``SUBJECT:``/``PREDICATE:``/``OBJECT:`` line format (entities as ``ENTITY:``
lines). A triple with an empty field, or (softly) with a subject or object not in the chunk, is
left out; a chunk whose answer has no usable triple yields no claims.
"""

from __future__ import annotations

from typing import Any

from biorag.corpus.models import Chunk
from biorag.corpus.text import clean_text
from biorag.extract._llm import ClaimSet, chat_all, make_claim, quote_chunks, request, usable_text
from biorag.extract.models import Claim, Triple, TripleSource
from biorag.extract.parsing import normalize_claim, parse_blocks, parse_entities, triple_problem
from biorag.extract.triples import with_triple
from biorag.llm.base import ChatModel

__all__ = ["DirectTripleExtractor", "EntityPairExtractor"]


def _claim_text(t: Triple) -> str:
    return " ".join(x.strip() for x in (t.subject, t.predicate, t.object))


def _add(claims: ClaimSet, chunk: Chunk, triples: list[Triple], source: TripleSource) -> None:
    for t in triples:
        claims.add(with_triple(make_claim(chunk, _claim_text(t)), t, source))


class _ChunkExtractor:
    def __init__(self, llm: ChatModel, *, max_tokens: int | None = 1024, clean: bool = True,
                 grounded: bool = True) -> None:  # fmt: skip
        self.llm = llm
        self.max_tokens = max_tokens
        self.clean = clean
        self.grounded = grounded

    def _bodies(self, chunks: list[Chunk]) -> tuple[list[str], list[int]]:
        bodies = [clean_text(c.text) if self.clean else c.text for c in chunks]
        return bodies, [i for i, b in enumerate(bodies) if b.strip()]

    def _triples(self, answer: str, body: str) -> list[Triple]:
        out = []
        for block in parse_blocks(answer):
            t = block.triple()
            if t is not None and triple_problem(t, body, self.grounded) is None:
                out.append(t)
        return out


class DirectTripleExtractor(_ChunkExtractor):
    """Triples directly from chunks; ``extract_claims(chunks)`` returns claims with triples."""

    async def extract_claims(self, chunks: list[Chunk]) -> list[Claim]:
        bodies, todo = self._bodies(chunks)
        quoted = quote_chunks(chunks, bodies)
        reqs = [request("direct_triples", "direct_triples", self.max_tokens, text=quoted[i])
                for i in todo]  # fmt: skip
        claims = ClaimSet()
        resps = await chat_all(self.llm, reqs, raise_if_all_failed=True)
        for i, resp in zip(todo, resps, strict=True):
            _add(claims, chunks[i], self._triples(usable_text(resp), bodies[i]), "direct")
        return claims.claims


class EntityPairExtractor(_ChunkExtractor):
    """Entities first, then relations between pairs of them; ``extract_claims(chunks)``."""

    def __init__(self, llm: ChatModel, *, max_entities: int = 30, **kw: Any) -> None:
        super().__init__(llm, **kw)
        self.max_entities = max_entities

    async def extract_claims(self, chunks: list[Chunk]) -> list[Claim]:
        bodies, todo = self._bodies(chunks)
        quoted = quote_chunks(chunks, bodies)
        reqs = [request("pair_entities", "pair_entities", self.max_tokens, text=quoted[i])
                for i in todo]  # fmt: skip
        entities: dict[int, list[str]] = {}
        resps = await chat_all(self.llm, reqs, raise_if_all_failed=True)
        for i, resp in zip(todo, resps, strict=True):
            ents = parse_entities(usable_text(resp))[: self.max_entities]
            if len(ents) >= 2:
                entities[i] = ents
        asked = list(entities)
        reqs = [
            request(
                "pair_relations",
                "pair_relations",
                self.max_tokens,
                text=quoted[i],
                entities="\n".join(f"- {e}" for e in entities[i]),
            )
            for i in asked
        ]
        claims = ClaimSet()
        for i, resp in zip(asked, await chat_all(self.llm, reqs), strict=True):
            triples = [
                t
                for t in self._triples(usable_text(resp), bodies[i])
                if _listed(t.subject, entities[i]) and _listed(t.object, entities[i])
                and normalize_claim(t.subject) != normalize_claim(t.object)
            ]  # fmt: skip
            _add(claims, chunks[i], triples, "entity_pairs")
        return claims.claims


def _listed(name: str, entities: list[str]) -> bool:
    """Whether ``name`` is one of ``entities`` (normalized; containment either way counts)."""
    n = normalize_claim(name)
    if not n:
        return False
    for e in entities:
        k = normalize_claim(e)
        if n == k or (len(n) >= 3 and n in k) or (len(k) >= 3 and k in n):
            return True
    return False
