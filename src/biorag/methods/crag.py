"""CRAG (Yan et al., 2024), a baseline of the IP-RAR comparison: corrective retrieval.

1. retrieval: the top ``k`` chunks per index for the question (or its given passages);
2. evaluation: every chunk gets a relevance score in [0, 1] (``crag_evaluate``: the LLM rates
   all chunks 0-100 in one call; CRAG's fine-tuned T5 evaluator is not available. No LLM: the
   reranker's score against the question, clipped to [0, 1]);
3. action: **correct** when some chunk scores at least ``upper`` (0.6), **incorrect** when all
   score below ``lower`` (0.3), else **ambiguous**;
4. knowledge: *correct* keeps the chunks above ``lower`` and refines them: each is cut into
   strips of ``strip_sentences`` sentences (a chunk of at most that many is one strip), the
   strips are scored like the chunks and those at least ``strip_min`` (0.25) are kept in rank
   order. *incorrect* replaces them by a second search: CRAG searches the web with a keyword
   rewrite of the question; offline, biorag searches the same indexes with that rewrite
   (``crag_keywords``; no LLM: the question's content words) and refines the result the same
   way. *ambiguous* uses both;
5. answer: the reader over the kept strips, at most ``token_limit`` tokens.

``details["crag"]`` records the action, every chunk's score and the strips kept.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import numpy as np

from biorag.corpus.sentences import split_sentences
from biorag.errors import BioragError, LLMError, LLMUnavailableError
from biorag.llm import budget
from biorag.llm.accounting import note_fallback
from biorag.llm.evidence import numbered_passages
from biorag.llm.prompts import PromptTemplate
from biorag.methods import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.methods.base import Answer, QAMethod, Question, retrieve_passages
from biorag.methods.context import (
    DEFAULT_TOKEN_LIMIT,
    ContextItem,
    merge_options,
    read_ranked,
)
from biorag.methods.crag_prompts import SCORES_SCHEMA
from biorag.methods.details import CragDetails, CragTrace

PROMPTS = "biorag.methods.crag_prompts"
DEFAULTS: dict[str, Any] = {
    "k": None,
    "retriever": None,
    "upper": 0.6,
    "lower": 0.3,
    "strip_sentences": 2,
    "strip_min": 0.25,
    "token_limit": DEFAULT_TOKEN_LIMIT,
    "reader": "two-call",
}
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9-]{2,}")


def strips_of(text: str, size: int) -> list[str]:
    """``text`` cut into strips of ``size`` sentences (one strip when it has at most that)."""

    spans = split_sentences(text)
    if len(spans) <= size:
        return [text.strip()] if text.strip() else []
    return [
        text[spans[i][0] : spans[min(i + size, len(spans)) - 1][1]].strip()
        for i in range(0, len(spans), size)
    ]


def action_of(scores: list[float], upper: float, lower: float) -> str:
    """CRAG's action: ``correct``, ``incorrect`` or ``ambiguous`` (``incorrect`` with no chunk)."""
    if scores and max(scores) >= upper:
        return "correct"
    if not scores or max(scores) < lower:
        return "incorrect"
    return "ambiguous"


class CRAG(QAMethod):
    """Options: ``DEFAULTS`` (``k``/``retriever`` None: the ``[retrieval]`` settings)."""

    name = "crag"
    needs_index = True

    def __init__(self, runtime: Any, **options: Any):
        merged = merge_options(self.name, options, DEFAULTS)
        if not 0 <= float(merged["lower"]) <= float(merged["upper"]) <= 1:
            raise BioragError("crag needs 0 <= lower <= upper <= 1")
        if int(merged["strip_sentences"]) < 1:
            raise BioragError("crag strip_sentences must be at least 1")
        super().__init__(runtime, **merged)

    async def evaluate(self, question: str, texts: list[str]) -> list[float]:
        """A relevance score in [0, 1] per text (one LLM call, or the reranker)."""
        if not texts:
            return []
        llm = self.rt.llm
        if llm is not None:
            tpl = PromptTemplate.load(PROMPTS, "crag_evaluate")
            req = tpl.request(
                {"question": question, "context": numbered_passages(texts)},
                stage="crag_evaluate",
                json_schema=SCORES_SCHEMA,
                max_tokens=budget.fixed_list(len(texts), budget.BATCH_SUPPORT),
            )
            try:
                resp = await llm.chat(req)
                rows = resp.parsed.get("scores") if isinstance(resp.parsed, dict) else None
                got = {str(r.get("id")): r.get("score") for r in rows or [] if isinstance(r, dict)}
                scores = [got.get(str(i)) for i in range(1, len(texts) + 1)]
                if all(isinstance(s, int | float) and not isinstance(s, bool) for s in scores):
                    return [min(max(float(s) / 100.0, 0.0), 1.0) for s in scores]  # type: ignore[arg-type]
            except LLMUnavailableError:
                raise
            except LLMError:
                pass
            note_fallback(llm, "crag_evaluate")  # unusable scores: the reranker decides
        raw = await asyncio.to_thread(self.rt.reranker.score, question, texts)
        return [float(x) for x in np.clip(np.asarray(raw, dtype=float), 0.0, 1.0)]

    async def keywords(self, question: str) -> str:
        """The keyword rewrite of the question that replaces CRAG's web-search query."""
        if self.rt.llm is None:
            return " ".join(dict.fromkeys(w.lower() for w in _WORD.findall(question)))
        tpl = PromptTemplate.load(PROMPTS, "crag_keywords")
        resp = await self.rt.llm.chat(
            tpl.request({"question": question}, stage="crag_keywords", max_tokens=budget.QUERY_LINE)
        )
        return " ".join(resp.text.split()) or question

    async def refine(self, question: str, passages: list[Any]) -> list[tuple[Any, str, float]]:
        """The strips of ``passages`` scoring at least ``strip_min``, best first."""
        strips = [
            (p, s)
            for p in passages
            for s in strips_of(p.text, int(self.options["strip_sentences"]))
        ]
        scores = await self.evaluate(question, [s for _, s in strips])
        kept = [(p, s, sc) for (p, s), sc in zip(strips, scores, strict=True)
                if sc >= float(self.options["strip_min"])]  # fmt: skip
        return sorted(kept, key=lambda t: -t[2])

    async def answer(self, question: Question) -> Answer:
        s = self.rt.settings.retrieval
        k = int(self.options["k"] if self.options["k"] is not None else s.k)
        retriever = str(self.options["retriever"] or s.retriever)
        passages = await retrieve_passages(self.rt, question, question.text, k, retriever)
        scores = await self.evaluate(question.text, [p.text for p in passages])
        action = action_of(scores, float(self.options["upper"]), float(self.options["lower"]))
        internal = [
            p for p, sc in zip(passages, scores, strict=True) if sc >= self.options["lower"]
        ]
        strips: list[tuple[Any, str, float]] = []
        searched: list[Any] = []
        rewrite = ""
        if action in ("correct", "ambiguous"):
            strips += await self.refine(question.text, internal)
        if action in ("incorrect", "ambiguous") and not question.passages:
            rewrite = await self.keywords(question.text)
            searched = await retrieve_passages(self.rt, question, rewrite, k, retriever)
            seen = {p.chunk_id for p in internal}
            strips += await self.refine(
                question.text, [p for p in searched if p.chunk_id not in seen]
            )
        strips.sort(key=lambda t: -t[2])
        details = CragDetails(
            crag=CragTrace(
                action=action,
                scores={p.chunk_id: round(sc, 4) for p, sc in zip(passages, scores, strict=True)},
                keyword_query=rewrite,
                searched_again=[p.chunk_id for p in searched],
                strips_kept=len(strips),
            )
        )
        notes = [f"CRAG action: {action}"]
        if action != "correct" and question.passages:
            notes.append("CRAG: no second search (the question's own passages are the evidence)")
        ranked = [ContextItem(t, [p.chunk_id], sc, p.chunk_id) for p, t, sc in strips]
        return await read_ranked(
            self, question, ranked, [*passages, *searched], lambda items, fit: details, notes=notes
        )
