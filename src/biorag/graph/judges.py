"""Relevance judges for denoising: is a claim, seen with its 1-hop neighbours, useful?

Following the arXiv version of CLAIMS, a claim is noise when it neither answers the question
directly nor connects claims that do; the judge therefore sees the claim's own text plus the
texts of its neighbour claims. Every judge answers a list of :class:`Verdict` in item order;
``relevant=None`` means undecided (unparseable answer, failed call) and the claim is kept.

* :class:`LLMRelevanceJudge`, faithful (``batched=False``): one Yes/No call per claim; reads
  P(yes) from the first token's logprobs when the backend returns them (relevant when
  ``P(yes) >= 0.5``), otherwise parses the text.
* :class:`LLMRelevanceJudge`, batched: ``batch_size`` numbered claims per call, answered as a
  JSON object ``{"1": "yes", ...}`` under a JSON schema. Items a malformed or partial answer
  leaves out are re-asked one per call (counted in ``stats["fallbacks"]``), never dropped.
* :class:`EmbeddingRelevanceJudge` (no LLM): score = max(cos(question, claim),
  cos(question, claim + neighbour texts)); a claim is relevant when its score is
  ``>= threshold`` (0.2: unrelated sentences of a MiniLM-type model score about 0-0.15 against
  a question) **or** it ranks in the top ``keep_top_fraction`` (half) of the claims judged
  together. The rank floor keeps the floor method from pruning most of a graph when an
  embedder's cosines run low; so it never drops more than half of the claims.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from biorag.embed.base import Embedder, l2_normalize
from biorag.errors import LLMError, LLMUnavailableError
from biorag.graph import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.llm import budget
from biorag.llm.accounting import note_fallback
from biorag.llm.base import ChatModel
from biorag.llm.evidence import format_passage, format_passages
from biorag.llm.jsonparse import parse_json_lenient
from biorag.llm.prompts import PromptTemplate
from biorag.llm.types import ChatResponse, yes_no_probability

STAGE = "denoise"
PROMPTS = "biorag.graph.prompts"
_YES_NO = re.compile(r"\b(yes|no)\b", re.I)


@dataclass
class JudgeItem:
    """A claim to judge: its id, text and the texts of its neighbour claims (with their ids in
    ``context_ids`` when known; the prompt numbers them otherwise)."""

    claim_id: str
    text: str
    context: list[str] = field(default_factory=list)
    context_ids: list[str] = field(default_factory=list)


@dataclass
class Verdict:
    """A judge's answer. ``score``: P(yes) for LLM logprobs, the cosine for embeddings."""

    claim_id: str
    relevant: bool | None
    score: float | None = None
    how: str = ""


class RelevanceJudge(Protocol):
    """Anything that judges a list of items against a question."""

    async def judge(self, question: str, items: Sequence[JudgeItem]) -> list[Verdict]: ...


def parse_yes_no(text: str) -> bool | None:
    """Yes/No from an answer: its first word, else the only yes/no word in it; else None."""
    words = re.findall(r"[A-Za-z]+", text)
    if words and words[0].lower() in ("yes", "no"):
        return words[0].lower() == "yes"
    found = {m.lower() for m in _YES_NO.findall(text)}
    return (found == {"yes"}) if len(found) == 1 else None


def _verdict_value(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("true", "relevant"):
            return True
        if v in ("false", "irrelevant"):
            return False
        return parse_yes_no(v)
    if isinstance(value, dict):
        for key in ("relevant", "answer", "verdict"):
            if key in value:
                return _verdict_value(value[key])
    return None


def _batch_answers(resp: ChatResponse, n: int) -> dict[int, bool]:
    """Number (1-based) -> verdict from a batched answer, keeping whatever is usable."""
    value = resp.parsed
    if value is None:
        value, _ = parse_json_lenient(resp.text)
    out: dict[int, bool] = {}
    if isinstance(value, dict):
        for key, val in value.items():
            digits = re.sub(r"\D", "", str(key))
            verdict = _verdict_value(val)
            if digits and verdict is not None and 1 <= int(digits) <= n:
                out[int(digits)] = verdict
    elif isinstance(value, list):
        for pos, val in enumerate(value, start=1):
            num = pos
            if isinstance(val, dict):
                ident = val.get("id", val.get("number"))
                if ident is None or not re.fullmatch(r"\s*\d+\s*", str(ident)):
                    continue
                num = int(ident)
            elif len(value) != n:
                break  # positional answers only when every item is there
            verdict = _verdict_value(val)
            if verdict is not None and 1 <= num <= n:
                out[num] = verdict
    return out


def _context_blocks(item: JudgeItem, prefix: str | None = None) -> str:
    """The neighbour claims as passage blocks: ids ``prefix`` + 1, 2, ... when a prefix is
    given (a batch, where statement numbers are the ids that matter), else the claim ids (1,
    2, ... when unknown)."""
    if not item.context:
        return "(none)"
    ids = item.context_ids
    if prefix is not None or len(ids) != len(item.context):
        ids = [f"{prefix or ''}{k}" for k in range(1, len(item.context) + 1)]
    return format_passages(zip(ids, item.context, strict=True))


class LLMRelevanceJudge:
    """Yes/No relevance from an LLM, one claim per call or ``batch_size`` per call."""

    def __init__(
        self, llm: ChatModel, batched: bool = False, batch_size: int = 20, threshold: float = 0.5
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.llm = llm
        self.batched = batched
        self.batch_size = batch_size
        self.threshold = threshold
        self.single = PromptTemplate.load(PROMPTS, "relevance")
        self.batch = PromptTemplate.load(PROMPTS, "relevance_batch")
        self.stats = {"calls": 0, "batch_calls": 0, "fallbacks": 0, "failures": 0}

    async def judge(self, question: str, items: Sequence[JudgeItem]) -> list[Verdict]:
        if not self.batched:
            return list(await asyncio.gather(*(self._one(question, it) for it in items)))
        batches = [items[i : i + self.batch_size] for i in range(0, len(items), self.batch_size)]
        results = await asyncio.gather(*(self._batch(question, b) for b in batches))
        return [v for batch in results for v in batch]

    async def _one(self, question: str, item: JudgeItem, how: str = "") -> Verdict:
        req = self.single.request(
            {
                "question": question,
                "claim": format_passage(item.claim_id, item.text),
                "context": _context_blocks(item),
            },
            stage=STAGE,
            logprobs=True,
            top_logprobs=5,
            max_tokens=budget.YES_NO,
        )
        self.stats["calls"] += 1
        try:
            resp = await self.llm.chat(req)
        except LLMUnavailableError:
            raise  # no model at all: stop, do not run on without it
        except LLMError:
            self.stats["failures"] += 1
            note_fallback(self.llm, STAGE)
            return Verdict(item.claim_id, None, how=how + "error")
        p_yes = yes_no_probability(resp)
        if p_yes is not None:
            return Verdict(item.claim_id, p_yes >= self.threshold, p_yes, how + "logprob")
        answer = parse_yes_no(resp.text)
        return Verdict(
            item.claim_id, answer, how=how + ("text" if answer is not None else "unparsed")
        )

    async def _batch(self, question: str, items: Sequence[JudgeItem]) -> list[Verdict]:
        n = len(items)
        keys = [str(i) for i in range(1, n + 1)]
        schema = {
            "type": "object",
            "properties": {k: {"type": "string", "enum": ["yes", "no"]} for k in keys},
            "required": keys,
            "additionalProperties": False,
        }
        # Statement i is passage "i" (the key of its verdict); its neighbours follow it.
        blocks = [
            f"Statement {i}:\n{format_passage(i, it.text)}\n"
            f"Connected statements:\n{_context_blocks(it, f'{i}.')}"
            for i, it in enumerate(items, start=1)
        ]
        req = self.batch.request(
            {"question": question, "count": n, "items": "\n\n".join(blocks)},
            stage=STAGE,
            json_schema=schema,
            max_tokens=budget.fixed_list(n, budget.BATCH_VERDICT),
        )
        self.stats["calls"] += 1
        self.stats["batch_calls"] += 1
        try:
            answers = _batch_answers(await self.llm.chat(req), n)
        except LLMUnavailableError:
            raise  # no model at all: stop, do not run on without it
        except LLMError:
            self.stats["failures"] += 1
            answers = {}
        out: list[Verdict | None] = [
            Verdict(it.claim_id, answers[i], how="batch") if i in answers else None
            for i, it in enumerate(items, start=1)
        ]
        missing = [i for i, v in enumerate(out) if v is None]
        note_fallback(self.llm, STAGE, len(missing))  # asked one by one
        self.stats["fallbacks"] += len(missing)
        redo = await asyncio.gather(*(self._one(question, items[i], "fallback-") for i in missing))
        for i, verdict in zip(missing, redo, strict=True):
            out[i] = verdict
        return [v for v in out if v is not None]


class EmbeddingRelevanceJudge:
    """No-LLM floor: cosine of (claim, claim + neighbours) to the question; see the module."""

    def __init__(
        self, embedder: Embedder, threshold: float = 0.2, keep_top_fraction: float = 0.5
    ) -> None:
        if not 0.0 <= keep_top_fraction <= 1.0:
            raise ValueError("keep_top_fraction must be in [0, 1]")
        self.embedder = embedder
        self.threshold = threshold
        self.keep_top_fraction = keep_top_fraction

    def scores(self, question: str, items: Sequence[JudgeItem]) -> np.ndarray:
        """max(cos(q, claim), cos(q, claim + context)) per item."""
        if not items:
            return np.zeros(0, dtype=np.float32)
        q = l2_normalize(self.embedder.embed([question]))[0]
        own = l2_normalize(self.embedder.embed([it.text for it in items])) @ q
        with_ctx = [i for i, it in enumerate(items) if it.context]
        if with_ctx:
            texts = [" ".join([items[i].text, *items[i].context]) for i in with_ctx]
            ctx = l2_normalize(self.embedder.embed(texts)) @ q
            own[with_ctx] = np.maximum(own[with_ctx], ctx)
        return own

    async def judge(self, question: str, items: Sequence[JudgeItem]) -> list[Verdict]:
        scores = await asyncio.to_thread(self.scores, question, items)
        keep_top = math.ceil(self.keep_top_fraction * len(items))
        rank = np.empty(len(items), dtype=np.int64)
        rank[np.argsort(-scores, kind="stable")] = np.arange(len(items))
        return [
            Verdict(it.claim_id, bool(s >= self.threshold or r < keep_top), float(s), "embedding")
            for it, s, r in zip(items, scores.tolist(), rank.tolist(), strict=True)
        ]
