"""Shared plumbing of the LLM extract operators: prompts, concurrent calls, claim records."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from functools import cache
from typing import Any

from biorag.corpus.models import Chunk
from biorag.errors import LLMUnavailableError
from biorag.extract import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.extract.models import Claim
from biorag.extract.parsing import normalize_claim
from biorag.llm import budget
from biorag.llm.base import ChatModel
from biorag.llm.evidence import format_passage, numbered_passages
from biorag.llm.prompts import PromptTemplate
from biorag.llm.types import ChatRequest, ChatResponse

log = logging.getLogger(__name__)

PROMPTS = "biorag.extract.prompts"


@cache
def template(name: str) -> PromptTemplate:
    """The extract prompt template ``name`` (loaded once)."""
    return PromptTemplate.load(PROMPTS, name)


def _budget(name: str, values: dict[str, Any], cap: int | None) -> int:
    """``max_tokens`` of template ``name``'s answer (:mod:`biorag.llm.budget`), at most ``cap``:
    list answers by the length of the chunk text (``values["text"]``), rewrites by the length
    of what they rewrite, single triples and their fallbacks by their fixed size."""
    text = str(values.get("text", ""))
    if name in ("claims", "claims_plain"):
        return budget.CLAIMS.for_text(text, cap)
    if name == "claims_gleaning":
        return budget.CLAIMS.for_more(text, cap)
    if name == "claims_triples":
        return budget.CLAIMS_TRIPLES.for_text(text, cap)
    if name == "claims_triples_gleaning":
        return budget.CLAIMS_TRIPLES.for_more(text, cap)
    if name == "decontextualize":
        return budget.rewrite_budget(str(values.get("claims", "")), cap)
    if name in ("direct_triples", "pair_relations"):
        return budget.TRIPLE_BLOCKS.for_text(text, cap)
    if name == "pair_entities":
        return budget.ENTITIES.for_text(text, cap)
    fixed = {
        "triples": budget.TRIPLE,
        "triples_repair": budget.TRIPLE,
        "triples_entities": budget.ENTITY_LINES,
        "triples_relation": budget.RELATION_LINE,
    }
    if name in fixed:
        return min(fixed[name], cap) if cap is not None else fixed[name]
    return cap or 0  # another template: the ceiling, or (0) the configured default


#: where a template's answer format ends: the next few-shot example's label
_STOPS = {
    "claims": budget.STOP_TEXT,
    "claims_plain": budget.STOP_TEXT,
    "claims_triples": budget.STOP_TEXT,
    "triples": budget.STOP_CLAIM,
}


def request(name: str, stage: str, max_tokens: int | None = None, **values: Any) -> ChatRequest:
    """A request for template ``name`` filled with ``values``, tagged with ``stage``.

    ``max_tokens`` is the ceiling of the answer's budget, which is sized to what the template
    asks for (see :func:`_budget`); the template's stop sequences are set too."""
    options: dict[str, Any] = {"temperature": 0.0}
    tokens = _budget(name, values, max_tokens)
    if tokens > 0:
        options["max_tokens"] = tokens
    if name in _STOPS:
        options["stop"] = list(_STOPS[name])
    return template(name).request(values, stage=stage, **options)


async def chat_all(
    llm: ChatModel, reqs: Sequence[ChatRequest], *, raise_if_all_failed: bool = False
) -> list[ChatResponse | None]:
    """Answer all requests concurrently (within the client's limit), in order.

    Like ``LLM.chat_many``, except that one request failing for good does not sink the others:
    its slot is None (the client's accounting counts it as a failure). With
    ``raise_if_all_failed`` the first error is raised when every request failed.
    """
    if not reqs:
        return []
    results = await asyncio.gather(*(llm.chat(r) for r in reqs), return_exceptions=True)
    out: list[ChatResponse | None] = []
    errors: list[BaseException] = []
    for req, res in zip(reqs, results, strict=True):
        if isinstance(res, BaseException):
            if not isinstance(res, Exception):
                raise res
            log.warning("extract: a %s call failed: %s", req.stage, res)
            errors.append(res)
            out.append(None)
        else:
            out.append(res)
    unavailable = [e for e in errors if isinstance(e, LLMUnavailableError)]
    if unavailable:
        raise unavailable[0]  # no model at all: stop, do not run on without it
    if raise_if_all_failed and errors and len(errors) == len(reqs):
        raise errors[0]
    return out


def usable_text(resp: ChatResponse | None) -> str:
    """The answer text ('' for a failed call)."""
    return resp.text if resp is not None else ""


def truncated(resp: ChatResponse | None) -> bool:
    return resp is not None and resp.finish_reason == "length"


def drop_cut_claim(texts: list[str], resp: ChatResponse | None) -> list[str]:
    """Drop the last claim of an answer cut off at ``max_tokens`` when it looks unfinished."""
    if texts and truncated(resp) and texts[-1].rstrip()[-1:] not in ".!?)":
        return texts[:-1]
    return texts


def make_claim(chunk: Chunk, text: str) -> Claim:
    text = " ".join(text.split())
    return Claim(
        id=Claim.make_id(chunk.id, text), text=text, chunk_id=chunk.id, doc_id=chunk.doc_id
    )


def quote_claims(texts: Sequence[str]) -> str:
    """Claims already taken from a chunk, as passage blocks numbered from 1 ('(none)')."""
    return numbered_passages(texts) if texts else "(none)"


def quote_chunks(chunks: Sequence[Chunk], bodies: Sequence[str]) -> list[str]:
    """Each chunk's (cleaned) text as one passage block with the chunk id."""
    return [format_passage(c.id, b) for c, b in zip(chunks, bodies, strict=True)]


class ClaimSet:
    """Claims deduplicated on normalized text across chunks (the first occurrence is kept)."""

    def __init__(self) -> None:
        self.claims: list[Claim] = []
        self._keys: set[str] = set()

    def add(self, claim: Claim) -> bool:
        key = normalize_claim(claim.text)
        if not key or key in self._keys:
            return False
        self._keys.add(key)
        self.claims.append(claim)
        return True

    def __contains__(self, text: str) -> bool:
        return normalize_claim(text) in self._keys
