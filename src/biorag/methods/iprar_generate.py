"""IP-RAR progressive reasoning-based generation (section 4.3 of the IP-RAR paper), and the
BioASQ exact-answer step after it.

:class:`ProgressiveGeneration` is a mixin of :class:`~biorag.methods.iprar.IPRAR`; it needs
``self.rt``, ``self.options``, ``self.name`` and ``self.reasoning_llm()``. Over the aggregated
ranking it runs:

1. the relevance check (:meth:`~ProgressiveGeneration.relevance`): chunks in ranked order until
   ``relevant_target`` are relevant. ``relevance_batch = 1`` (the paper) asks one Yes/No call
   per chunk (``iprar_relevance``); ``relevance_batch = N > 1`` asks about N chunks at a time in
   one call (``iprar_relevance_batch``, JSON verdicts per numbered passage), still in ranked
   order, taking a batch's relevant chunks in rank order up to the target and stopping there. A
   passage the model gives no verdict for is not relevant (its row says ``"missing": true``;
   when a reply gives no verdict at all, every row of its batch also holds ``parse_error``).
   In every mode: fewer relevant when the ranking ends, the top ``relevant_target`` when none is.
   No LLM: relevant = cosine to the question >= ``relevance_threshold``;
2. a draft answer from the relevant chunks (``iprar_answer``), support scores 0-100 per chunk
   (``iprar_support``, one JSON call; no LLM: cosine x 100), and the chunks scoring
   >= ``support_min`` (else the best ``support_fallback``);
3. the final answer over those chunks by the reasoning model: the project reader for
   multiple-choice questions, else ``iprar_final``; no LLM: the floor answerer;
4. the exact answer (``exact_answer`` option) for factoid, list and option-less yes/no questions
   (:mod:`biorag.answer.exact`): the main model (not the reasoning one: the paper refines the
   reasoning model's ideal answer into the type's format with DeepSeek-V3) over the final
   chunks and the final answer text, or the no-LLM floor (also when the model's call fails:
   ``details["exact_answer"]["error"]`` and a note say so, and the answer is kept).
   ``Answer.exact`` and ``details["exact_answer"]`` hold it.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import numpy as np

from biorag.answer.reader import read_multiple_choice
from biorag.llm import budget
from biorag.llm.base import ChatModel
from biorag.llm.evidence import format_passage, neutralize, numbered_passages
from biorag.llm.jsonparse import parse_json_lenient
from biorag.llm.prompts import PromptTemplate
from biorag.llm.types import ChatResponse
from biorag.methods import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.methods.base import Answer, AnswerSentence, Question
from biorag.methods.context import ContextItem, answer_from_context, evidence_for
from biorag.methods.details import IPRARDetails
from biorag.methods.exact_step import wants_exact, with_exact
from biorag.methods.iprar_prompts import RELEVANCE_BATCH_SCHEMA, SUPPORT_SCHEMA
from biorag.runtime import Runtime

PROMPTS = "biorag.methods.iprar_prompts"
_YES_NO = re.compile(r"\b(yes|no)\b", re.I)
_VERDICT_WORD = re.compile(r"\b(yes|no|true|false)\b", re.I)
_CITE = re.compile(r"\[(\d+)\]")


def numbered(texts: list[str]) -> str:
    """Texts as ``<passage id="n">`` blocks, n counting from 1 (the ids the answers use)."""
    return numbered_passages(texts)


def _verdict(value: Any) -> bool | None:
    """A relevance verdict as a bool: true/false, 1/0, or a text naming yes/no/true/false
    ("Yes.", "true", "1"); None when it is none of these."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value) if value in (0, 1) else None
    if isinstance(value, str):
        if value.strip() in ("0", "1"):
            return value.strip() == "1"
        m = _VERDICT_WORD.search(value)
        return m.group(1).lower() in ("yes", "true") if m else None
    return None


def _passage_number(value: Any) -> int | None:
    """A passage number from an id: 3, 3.0, "3", "[3]", "3.0"; None when it is none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip().strip("[]() "))
        except ValueError:
            return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def batch_verdicts(parsed: Any, text: str) -> dict[int, bool]:
    """Passage number -> relevant, from ``{"verdicts": [{"id", "relevant"}]}`` (or, leniently,
    a bare list of such rows or an ``{"1": "yes", ...}`` map). Ids may be numbers, numeric
    strings or ``"[3]"``; verdicts booleans, 1/0 or yes/no/true/false strings. Unusable rows
    are skipped; the first verdict for a passage wins."""
    value = parsed
    if not isinstance(value, dict | list):
        value, _err = parse_json_lenient(text)
    rows: Any = value.get("verdicts", value) if isinstance(value, dict) else value
    if isinstance(rows, dict):
        rows = [{"id": k, "relevant": v} for k, v in rows.items()]
    out: dict[int, bool] = {}
    for r in rows if isinstance(rows, list) else []:
        if not isinstance(r, dict):
            continue
        ok, n = _verdict(r.get("relevant")), _passage_number(r.get("id"))
        if ok is not None and n is not None:
            out.setdefault(n, ok)
    return out


#: answer budgets of the prompts whose size does not depend on the call (:mod:`biorag.llm.budget`)
_MAX_TOKENS = {
    "iprar_prereason": budget.PREREASON,
    "iprar_relevance": budget.YES_NO,
    "iprar_answer": budget.DRAFT_ANSWER,
    "iprar_final": budget.FINAL_ANSWER,
}


class ProgressiveGeneration:
    """IP-RAR's progressive generation and exact-answer step (see module doc)."""

    rt: Runtime
    options: dict[str, Any]
    name: str

    def reasoning_llm(self) -> ChatModel | None:
        """The final-answer model (the method overrides this)."""
        return self.rt.llm

    async def _chat(
        self, llm: ChatModel, name: str, values: dict[str, Any], **kw: Any
    ) -> ChatResponse:
        if name in _MAX_TOKENS:
            kw.setdefault("max_tokens", _MAX_TOKENS[name])
        tpl = PromptTemplate.load(PROMPTS, name)
        return await llm.chat(tpl.request(values, stage=name, **kw))

    def _cosines(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        v = np.asarray(self.rt.embedder.embed([query, *texts]), dtype=np.float64)
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        return [float(x) for x in v[1:] @ v[0]]

    # -- relevance check ---------------------------------------------------------------------
    async def relevance(
        self, question: Question, ranked: list[Any], texts: dict[str, str]
    ) -> tuple[list[str], list[dict]]:
        """Check chunks in ranked order until ``relevant_target`` are relevant:
        ``(selected, verdicts)``."""
        target = int(self.options["relevant_target"])
        if not self.options["use_relevance_check"]:
            return [c.chunk_id for c in ranked[:target]], []
        llm = self.rt.llm
        verdicts: list[dict] = []
        relevant: list[str] = []
        if llm is not None and int(self.options["relevance_batch"]) > 1:
            relevant, verdicts = await self._relevance_batched(question, ranked, texts, target)
            return relevant or [c.chunk_id for c in ranked[:target]], verdicts
        thr = float(self.options["relevance_threshold"])
        cos = (
            []
            if llm
            else await asyncio.to_thread(
                self._cosines, question.text, [texts[c.chunk_id] for c in ranked]
            )
        )
        for i, c in enumerate(ranked):
            if llm is None:
                v = {"chunk_id": c.chunk_id, "relevant": cos[i] >= thr, "cosine": cos[i]}
            else:
                resp = await self._chat(
                    llm,
                    "iprar_relevance",
                    {
                        "question": question.text,
                        "passage": format_passage(c.chunk_id, texts[c.chunk_id]),
                    },
                    max_tokens=budget.YES_NO,
                )
                m = _YES_NO.search(resp.text)
                v = {
                    "chunk_id": c.chunk_id,
                    "relevant": bool(m and m.group(1).lower() == "yes"),
                    "raw": resp.text.strip()[:40],
                }
            verdicts.append(v)
            if v["relevant"]:
                relevant.append(c.chunk_id)
                if len(relevant) >= target:
                    break
        return relevant or [c.chunk_id for c in ranked[:target]], verdicts

    async def _relevance_batched(
        self, question: Question, ranked: list[Any], texts: dict[str, str], target: int
    ) -> tuple[list[str], list[dict]]:
        """``relevance_batch`` chunks per ``iprar_relevance_batch`` call, in ranked order."""
        size = int(self.options["relevance_batch"])
        llm = self.rt.llm
        assert llm is not None  # relevance() batches only with an LLM
        verdicts: list[dict] = []
        relevant: list[str] = []
        for b, start in enumerate(range(0, len(ranked), size)):
            batch = ranked[start : start + size]
            values = {
                "question": question.text,
                "context": numbered([texts[c.chunk_id] for c in batch]),
            }
            resp = await self._chat(
                llm,
                "iprar_relevance_batch",
                values,
                json_schema=RELEVANCE_BATCH_SCHEMA,
                max_tokens=budget.fixed_list(len(batch), budget.BATCH_RELEVANCE),
            )
            got = batch_verdicts(resp.parsed, resp.text)
            # A reply with no usable verdict at all: say why in each of the batch's rows.
            why = {} if got else {"parse_error": resp.parse_error or "no verdict in the reply"}
            for n, c in enumerate(batch, start=1):
                v: dict[str, Any] = {"chunk_id": c.chunk_id, "relevant": got.get(n, False)}
                verdicts.append(v | {"batch": b} | ({} if n in got else {"missing": True}) | why)
                if v["relevant"] and len(relevant) < target:
                    relevant.append(c.chunk_id)
            if len(relevant) >= target:
                break
        return relevant, verdicts

    # -- draft, support, choice --------------------------------------------------------------
    async def support(
        self, question: Question, ids: list[str], texts: dict[str, str], draft: str
    ) -> list[dict]:
        """A 0-100 support score per selected chunk (no LLM: cosine to the question x 100)."""
        llm = self.rt.llm
        if llm is None:
            sims = await asyncio.to_thread(self._cosines, question.text, [texts[c] for c in ids])
            return [
                {"chunk_id": c, "score": round(100 * max(s, 0.0), 2)}
                for c, s in zip(ids, sims, strict=True)
            ]
        values = {
            "question": question.text,
            "draft": neutralize(draft),
            "context": numbered([texts[c] for c in ids]),
        }
        resp = await self._chat(
            llm,
            "iprar_support",
            values,
            json_schema=SUPPORT_SCHEMA,
            max_tokens=budget.fixed_list(len(ids), budget.BATCH_SUPPORT),
        )
        got: dict[str, float] = {}
        rows = resp.parsed.get("scores") if isinstance(resp.parsed, dict) else None
        for r in rows if isinstance(rows, list) else []:
            try:
                got[str(r["id"]).strip("[] ")] = float(r["score"])
            except (KeyError, TypeError, ValueError):
                continue
        return [
            {
                "chunk_id": c,
                "score": got.get(str(i), 0.0),
                **({} if str(i) in got else {"missing": True}),
            }
            for i, c in enumerate(ids, start=1)
        ]

    def choose(self, ids: list[str], scores: list[dict]) -> list[str]:
        """Chunks with support >= ``support_min`` (rank order), else the best few."""
        if not scores:
            return ids
        good = [s["chunk_id"] for s in scores if s["score"] >= float(self.options["support_min"])]
        if good:
            return good
        best = sorted(scores, key=lambda s: -s["score"])[: int(self.options["support_fallback"])]
        keep = {s["chunk_id"] for s in best}
        return [c for c in ids if c in keep]

    async def generate(
        self,
        question: Question,
        ranked: list[Any],
        passages: dict[str, Any],
        details: IPRARDetails,
    ) -> Answer:
        """Steps 1-4 of the module doc over the aggregated ``ranked`` chunks; ``details`` (the
        retrieval part) is extended with the generation keys."""
        texts = {cid: p.text for cid, p in passages.items()}
        selected, verdicts = await self.relevance(question, ranked, texts)
        llm, draft = self.rt.llm, ""
        if llm is not None and self.options["use_support_scores"] and selected:
            values = {
                "question": question.text,
                "options": question.options_block(),
                "context": numbered([texts[c] for c in selected]),
            }
            draft = (await self._chat(llm, "iprar_answer", values)).text.strip()
        scores = (
            await self.support(question, selected, texts, draft)
            if self.options["use_support_scores"] and selected
            else []
        )
        final = self.choose(selected, scores)
        details.relevance, details.selected, details.draft_answer = verdicts, selected, draft
        details.support, details.final_chunks = scores, final
        items = [ContextItem(text=texts[c], chunk_ids=[c], key=c) for c in final]
        plist = list(passages.values())
        if llm is None:
            ans = await answer_from_context(
                self.rt, self.name, question, items, plist, details=details, exact=False
            )
        else:
            ans = await self._final(question, items, plist, details)
        return await self._exact(question, ans, [it.text for it in items])

    # -- final answer ------------------------------------------------------------------------
    async def _final(
        self,
        question: Question,
        items: list[ContextItem],
        passages: list[Any],
        details: IPRARDetails,
    ) -> Answer:

        llm = self.reasoning_llm()
        # called with an LLM only, and reasoning_model cannot set backend "none"
        assert llm is not None
        ctx = [it.text for it in items]
        base: dict[str, Any] = {
            "method": self.name,
            "question_id": question.id,
            "context": "\n\n".join(ctx),
            "evidence": evidence_for(items, passages),
            "details": details,
            "llm_used": True,
        }
        if question.options:
            r = await read_multiple_choice(
                llm, question.text, question.options, ctx, self.rt.settings.answer.extraction
            )
            return Answer(
                **base,
                answer=r.answer,
                answer_text=r.answer_text,
                raw_output=r.raw_output,
                parse_failed=r.parse_failed,
            )
        resp = await self._chat(
            llm, "iprar_final", {"question": question.text, "context": numbered(ctx)}
        )
        text = resp.text.strip()
        sentences = []
        for sent in re.split(r"(?<=[.!?\]])\s+(?=[A-Z])", text):
            cites = [int(n) for n in _CITE.findall(sent) if 1 <= int(n) <= len(items)]
            if clean := _CITE.sub("", sent).strip():
                sentences.append(
                    AnswerSentence(
                        text=clean, chunk_ids=list(dict.fromkeys(items[i - 1].key for i in cites))
                    )
                )
        return Answer(
            **base, answer=text, answer_text=text, raw_output=resp.text, sentences=sentences
        )

    # -- exact answer ------------------------------------------------------------------------
    def wants_exact(self, question: Question) -> bool:
        """Whether the exact-answer step runs: factoid, list, or yes/no without options."""
        return bool(self.options["exact_answer"]) and wants_exact(question)

    async def _exact(self, question: Question, ans: Answer, contexts: list[str]) -> Answer:
        """``ans`` with its exact answer (:func:`~biorag.methods.exact_step.with_exact`)."""
        if not self.wants_exact(question):
            return ans
        return await with_exact(self.rt, question, ans, contexts)
