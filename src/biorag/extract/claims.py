"""Claim extraction: atomic, decontextualized claims from chunks (CLAIMS section 3.1, app. A).

:class:`LLMClaimExtractor` (the paper's method and its component-study alternative):

* ``strategy="single_stage"``: one call per chunk (stage ``claims``) asks for atomic,
  self-contained claims, one per line starting with ``CLAIM:``;
* ``gleaning=True``: a second call per chunk (stage ``claims_gleaning``) shows the claims
  already extracted and asks only for the missed ones (``NO_ADDITIONAL_CLAIMS`` when none);
* ``strategy="two_stage"``: plain atomic claims first (stage ``claims``, then the gleaning),
  then one call per chunk (stage ``decontextualize``) rewrites them to be self-contained.

Chunks run concurrently; answers are parsed leniently (:func:`~biorag.extract.parsing.
parse_claim_lines`); claims are deduplicated on normalized text within and across chunks and keep
their ``chunk_id`` and ``doc_id``. :class:`RuleClaimExtractor` is the no-LLM floor.
"""

from __future__ import annotations

from typing import Literal

from biorag.corpus.models import Chunk
from biorag.corpus.text import clean_text
from biorag.extract._llm import (
    ClaimSet,
    chat_all,
    drop_cut_claim,
    make_claim,
    quote_chunks,
    quote_claims,
    request,
    truncated,
    usable_text,
)
from biorag.extract.grounding import is_grounded
from biorag.extract.models import Claim
from biorag.extract.parsing import dedupe_texts, is_no_additional, parse_claim_lines
from biorag.extract.rule_claims import RuleClaimExtractor
from biorag.llm.base import ChatModel

__all__ = ["ClaimStrategy", "LLMClaimExtractor", "RuleClaimExtractor"]

ClaimStrategy = Literal["single_stage", "two_stage"]


class LLMClaimExtractor:
    """LLM claim extraction with gleaning; ``extract_claims(chunks) -> list[Claim]``."""

    def __init__(
        self,
        llm: ChatModel,
        strategy: ClaimStrategy = "single_stage",
        gleaning: bool = True,
        *,
        max_tokens: int | None = 1024,
        clean: bool = True,
        grounded: bool = True,
    ) -> None:
        if strategy not in ("single_stage", "two_stage"):
            raise ValueError(f"unknown claim strategy {strategy!r}; use single_stage or two_stage")
        self.llm = llm
        self.strategy = strategy
        self.gleaning = gleaning
        self.max_tokens = max_tokens
        self.clean = clean
        self.grounded = grounded
        self.ungrounded = 0  # claims of the last call dropped as not taken from their chunk

    async def extract_claims(self, chunks: list[Chunk]) -> list[Claim]:
        """Claims of all chunks (deduplicated; chunks without text are skipped)."""
        texts = await self.chunk_claim_texts(chunks)
        out = ClaimSet()
        for chunk, claims in zip(chunks, texts, strict=True):
            for text in claims:
                out.add(make_claim(chunk, text))
        return out.claims

    async def chunk_claim_texts(self, chunks: list[Chunk]) -> list[list[str]]:
        """Claim texts per chunk (deduplicated within each chunk), in chunk order."""
        bodies = [clean_text(c.text) if self.clean else c.text for c in chunks]
        todo = [i for i, b in enumerate(bodies) if b.strip()]
        result: list[list[str]] = [[] for _ in chunks]
        if not todo:
            return result
        quoted = quote_chunks(chunks, bodies)
        first = "claims" if self.strategy == "single_stage" else "claims_plain"
        reqs = [request(first, "claims", self.max_tokens, text=quoted[i]) for i in todo]
        resps = await chat_all(self.llm, reqs, raise_if_all_failed=True)
        for i, resp in zip(todo, resps, strict=True):
            result[i] = drop_cut_claim(parse_claim_lines(usable_text(resp)), resp)
        if self.gleaning:
            await self._glean(todo, quoted, result)
        if self.strategy == "two_stage":
            await self._decontextualize(todo, quoted, result)
        self.ungrounded = 0
        if self.grounded:  # made-up claims (biorag.extract.grounding) are dropped and counted
            for i in todo:
                kept = [t for t in result[i] if is_grounded(t, bodies[i])]
                self.ungrounded += len(result[i]) - len(kept)
                result[i] = kept
        return result

    async def _glean(self, todo: list[int], quoted: list[str], result: list[list[str]]) -> None:
        reqs = [
            request(
                "claims_gleaning",
                "claims_gleaning",
                self.max_tokens,
                text=quoted[i],
                claims=quote_claims(result[i]),
            )
            for i in todo
        ]
        for i, resp in zip(todo, await chat_all(self.llm, reqs), strict=True):
            text = usable_text(resp)
            new = drop_cut_claim(parse_claim_lines(text), resp)
            if is_no_additional(text) and not new:
                continue
            result[i] = dedupe_texts(result[i] + new)

    async def _decontextualize(
        self, todo: list[int], quoted: list[str], result: list[list[str]]
    ) -> None:
        """Rewrite each chunk's claims to be self-contained: one-to-one when the answer has as
        many claims as were sent, else the answer's claims; the originals when it has none."""
        todo = [i for i in todo if result[i]]
        reqs = [
            request(
                "decontextualize",
                "decontextualize",
                self.max_tokens,
                text=quoted[i],
                claims=quote_claims(result[i]),
            )
            for i in todo
        ]
        for i, resp in zip(todo, await chat_all(self.llm, reqs), strict=True):
            rewritten = parse_claim_lines(usable_text(resp))
            if rewritten and (len(rewritten) == len(result[i]) or not truncated(resp)):
                result[i] = rewritten
            elif rewritten:  # cut off: keep the rewritten ones and the originals left over
                result[i] = dedupe_texts(rewritten[:-1] + result[i][len(rewritten) - 1 :])
