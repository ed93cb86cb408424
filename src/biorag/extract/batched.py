"""Batched extraction: claims and their triples in one call per chunk, plus one gleaning call.

The answer format (prompt ``claims_triples``, stage ``claims_triples``)::

    CLAIM: <atomic, self-contained claim>
    SUBJECT: <subject>
    PREDICATE: <predicate>
    OBJECT: <object>

    CLAIM: ...

The gleaning call (prompt ``claims_triples_gleaning``, stage ``claims_gleaning``) lists the
claims found and asks for the missed ones in the same format, or ``NO_ADDITIONAL_CLAIMS``.

Nothing an answer loses is dropped; it is recovered by per-item calls:

* a claim whose triple lines are malformed goes through :class:`~biorag.extract.triples.
  LLMTripleExtractor`'s fallback chain, its batched lines standing in for the first attempt (so
  the next call is the repair); a claim with no triple lines at all gets the per-claim triple
  prompt first;
* triple lines without a claim become a claim "subject predicate object";
* a chunk whose first answer has no parsable claim is extracted again by
  :class:`~biorag.extract.claims.LLMClaimExtractor` (claims + gleaning), then triples per claim.

With ``ground_claims`` (default) a claim whose words are mostly absent from its chunk is dropped as
made up (:mod:`biorag.extract.grounding`; counted in ``ungrounded``), before its triple is
checked or repaired and before the gleaning call lists it.

This halves the calls of the faithful pipeline (two per chunk instead of two per chunk plus one
per claim) when the model follows the format.
"""

from __future__ import annotations

import asyncio
from typing import Any

from biorag.corpus.models import Chunk
from biorag.corpus.text import clean_text
from biorag.extract._llm import (
    ClaimSet,
    chat_all,
    make_claim,
    quote_chunks,
    quote_claims,
    request,
    truncated,
    usable_text,
)
from biorag.extract.claims import LLMClaimExtractor
from biorag.extract.grounding import is_grounded
from biorag.extract.models import Claim
from biorag.extract.parsing import Block, parse_blocks, triple_problem
from biorag.extract.triples import LLMTripleExtractor, with_triple
from biorag.llm.base import ChatModel

__all__ = ["BatchedClaimTripleExtractor"]


class BatchedClaimTripleExtractor:
    """Claims with triples, one call per chunk plus one gleaning call; ``extract_claims(chunks)``
    returns claims whose ``triple`` is already set."""

    def __init__(
        self,
        llm: ChatModel,
        *,
        gleaning: bool = True,
        max_tokens: int | None = 1536,
        clean: bool = True,
        grounded: bool = True,
        ground_claims: bool = True,
    ) -> None:
        self.llm = llm
        self.gleaning = gleaning
        self.max_tokens = max_tokens
        self.clean = clean
        self.grounded = grounded  # triples must use the claim's words
        self.ground_claims = ground_claims  # claims must use the chunk's words
        self.claim_fallback = LLMClaimExtractor(
            llm, "single_stage", gleaning, clean=clean, grounded=ground_claims
        )
        self.triple_extractor = LLMTripleExtractor(llm, grounded=grounded)
        self.fallback_chunks = 0  # chunks re-extracted by LLMClaimExtractor in the last run
        self.ungrounded = 0  # claims of the last run dropped as not taken from their chunk

    async def extract_claims(self, chunks: list[Chunk]) -> list[Claim]:
        bodies = [clean_text(c.text) if self.clean else c.text for c in chunks]
        todo = [i for i, b in enumerate(bodies) if b.strip()]
        quoted = quote_chunks(chunks, bodies)
        blocks: dict[int, list[Block]] = {}
        reqs = [request("claims_triples", "claims_triples", self.max_tokens, text=quoted[i])
                for i in todo]  # fmt: skip
        resps = await chat_all(self.llm, reqs, raise_if_all_failed=True)
        self.ungrounded = 0
        for i, resp in zip(todo, resps, strict=True):
            parsed = _cut(parse_blocks(usable_text(resp)), resp)
            if any(b.claim for b in parsed):  # the format was followed (made-up claims or not:
                blocks[i] = self._grounded(parsed, bodies[i])  # asking again would not help)
        lost = [i for i in todo if i not in blocks]
        self.fallback_chunks = len(lost)
        # The first pass's claims are complete: their triples (and any repair fallbacks) run
        # while gleaning and the lost chunks' re-extraction are under way, one round saved.
        first = ClaimSet()
        first_prev: dict[str, str] = {}
        for i, chunk in enumerate(chunks):
            for block in blocks.get(i, []):
                self._add_block(chunk, block, first, first_prev)
        counts = {i: len(found) for i, found in blocks.items()}

        async def more_claims() -> list[Claim]:
            async def glean() -> None:
                if self.gleaning and blocks:
                    await self._glean(list(blocks), quoted, bodies, blocks)

            async def refetch() -> dict[int, list[str]]:
                if not lost:
                    return {}
                texts = await self.claim_fallback.chunk_claim_texts([chunks[i] for i in lost])
                self.ungrounded += self.claim_fallback.ungrounded
                return dict(zip(lost, texts, strict=True))

            _, plain = await asyncio.gather(glean(), refetch())
            later = ClaimSet()
            later._keys = set(first._keys)  # never a second copy of a first-pass claim
            later_prev: dict[str, str] = {}
            for i, chunk in enumerate(chunks):
                for block in blocks.get(i, [])[counts.get(i, 0) :]:
                    self._add_block(chunk, block, later, later_prev)
                for text in plain.get(i, []):
                    later.add(make_claim(chunk, text))
            return await self.triple_extractor.extract_triples(later.claims, later_prev)

        done, extra = await asyncio.gather(
            self.triple_extractor.extract_triples(first.claims, first_prev), more_claims()
        )
        return [*done, *extra]

    async def _glean(
        self, todo: list[int], quoted: list[str], bodies: list[str], blocks: dict[int, list[Block]]
    ) -> None:
        reqs = [
            request(
                "claims_triples_gleaning",
                "claims_gleaning",
                self.max_tokens,
                text=quoted[i],
                claims=quote_claims([b.claim or _spo(b) for b in blocks[i]]),
            )
            for i in todo
        ]
        for i, resp in zip(todo, await chat_all(self.llm, reqs), strict=True):
            text = usable_text(resp)
            cut = _cut(parse_blocks(text), resp)  # NO_ADDITIONAL_CLAIMS parses to no block
            blocks[i].extend(self._grounded(cut, bodies[i]))

    def _grounded(self, blocks: list[Block], body: str) -> list[Block]:
        """The blocks whose claim (or triple words) come from ``body``; the others are counted
        in ``ungrounded`` (see :mod:`biorag.extract.grounding`). All when ``ground_claims`` is
        off."""
        if not self.ground_claims:
            return blocks
        kept = [b for b in blocks if is_grounded(b.claim or _spo(b), body)]
        self.ungrounded += len(blocks) - len(kept)
        return kept

    def _add_block(
        self, chunk: Chunk, block: Block, claims: ClaimSet, previous: dict[str, str]
    ) -> None:
        triple = block.triple()
        if not block.claim:  # an orphan triple: its words are the claim
            assert triple is not None
            if triple.is_complete():
                claims.add(with_triple(make_claim(chunk, _spo(block)), triple, "llm"))
            return
        claim = make_claim(chunk, block.claim)
        if triple_problem(triple, claim.text, self.grounded) is None:
            assert triple is not None
            claim = with_triple(claim, triple, "llm")
        if claims.add(claim) and claim.triple is None and block.fields:
            previous[claim.id] = "\n".join(block.raw)


def _cut(blocks: list[Block], resp: Any) -> list[Block]:
    """Usable blocks: a claim or a full triple; the last one dropped when the answer was cut
    off at ``max_tokens`` in the middle of it."""
    blocks = [b for b in blocks if b.claim or b.triple()]
    if blocks and truncated(resp):
        last = blocks[-1]
        if last.triple() is None and last.claim.rstrip()[-1:] not in ".!?)":
            blocks = blocks[:-1]
    return blocks


def _spo(block: Block) -> str:
    f = block.fields
    return " ".join(f.get(k, "").strip() for k in ("SUBJECT", "PREDICATE", "OBJECT")).strip()
