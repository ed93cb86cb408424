"""SELF-RAG (Asai et al., 2024), a baseline of the IP-RAR comparison: retrieval on demand and
answers criticized by the model that writes them.

SELF-RAG fine-tunes its generator to emit reflection tokens. No such model runs here, so a
prompted model is asked for the same judgements, as JSON:
1. **retrieve?** (``retrieval="adaptive"``, the paper's default): the model says whether the
   question needs evidence (``selfrag_retrieve``). If not, it answers without passages. With
   ``"always"`` it always retrieves. A question's own passages (PubMedQA, BioASQ snippets) are
   always used.
2. **one segment per passage:** the top ``k`` chunks (5, as the paper's short-form setting) are
   each given to the model alone (``selfrag_segment``, concurrently). The model returns:
   - ``relevance`` ([IsRel]: relevant / irrelevant);
   - its answer from that passage;
   - ``support`` ([IsSup]: fully / partially / no);
   - ``utility`` ([IsUse]: 1-5).
3. **critique score:** each segment is scored
   ``w_rel * IsRel + w_sup * IsSup + w_use * IsUse``, with:
   - IsRel: 1 / 0;
   - IsSup: 1 / 0.5 / 0;
   - IsUse: (utility - 1) / 4;
   - weights 1, 1, 0.5 (the paper's defaults).

   The paper weighs the normalized probabilities of the reflection tokens; a prompted model
   gives only its choice, so the categories' values stand in for them.
4. **answer:** the best-scoring usable segment is the answer.
   - Multiple choice: its option letter.
   - Otherwise: its text, each sentence citing the passage.

   The passages are the evidence, ranked by their segments' scores: BioASQ's document
   measures score that order. Factoid, list and yes/no questions then get their exact answer
   (:func:`~biorag.methods.exact_step.with_exact`), as in the IP-RAR paper's comparison.

A segment the model does not return as the schema asks is dropped and counted; when no passage
gives a usable one, the reader answers over the passages (a counted fallback). Without a model
there is no reflection: the no-LLM floor answers over the chunks ranked by the reranker, and a
note says so. ``details`` is :class:`~biorag.methods.details.SelfRAGDetails`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from biorag.answer.regex_extract import extract_letter_regex
from biorag.corpus.sentences import split_sentences
from biorag.errors import BioragError, LLMError, LLMUnavailableError
from biorag.llm.accounting import note_fallback
from biorag.llm.evidence import numbered_passages
from biorag.llm.prompts import PromptTemplate
from biorag.methods import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.methods.base import (
    Answer,
    AnswerSentence,
    Evidence,
    QAMethod,
    Question,
    retrieve_passages,
)
from biorag.methods.context import ContextItem, answer_from_context, merge_options
from biorag.methods.details import SelfRAGDetails, SelfRAGSegment
from biorag.methods.exact_step import wants_exact, with_exact
from biorag.methods.selfrag_prompts import RETRIEVE_SCHEMA, segment_schema

PROMPTS = "biorag.methods.selfrag_prompts"
DEFAULTS: dict[str, Any] = {
    "k": 5,
    "retriever": None,
    "retrieval": "adaptive",
    "w_rel": 1.0,
    "w_sup": 1.0,
    "w_use": 0.5,
    "exact_answer": True,
}
RETRIEVAL_MODES = ("adaptive", "always")
SUPPORT = {"fully": 1.0, "partially": 0.5, "no": 0.0}
SEGMENT_TOKENS = 320  # a relevance word, an answer of up to three sentences, two judgements
MC_INSTRUCTION = (
    "the letter of the option the passage supports best (if it supports none, the option you "
    "judge most likely)."
)
TEXT_INSTRUCTION = "answer the question in one to three sentences, using the passage."


def critique_score(seg: SelfRAGSegment, w_rel: float, w_sup: float, w_use: float) -> float:
    """The segment's critique score (step 3 of the module docstring)."""
    rel = 1.0 if seg.relevance == "relevant" else 0.0
    return w_rel * rel + w_sup * SUPPORT[seg.support] + w_use * (seg.utility - 1) / 4


def parse_segment(chunk_id: str, parsed: Any, options: dict[str, str]) -> SelfRAGSegment | None:
    """The model's segment as the schema asks, or ``None`` (its letter resolved for a
    multiple-choice question: a segment without a clear option is unusable)."""

    if not isinstance(parsed, dict):
        return None
    rel = str(parsed.get("relevance", "")).strip().lower()
    sup = str(parsed.get("support", "")).strip().lower()
    text = str(parsed.get("answer", "")).strip()
    use = parsed.get("utility")
    if rel not in ("relevant", "irrelevant") or sup not in SUPPORT or not text:
        return None
    if isinstance(use, bool) or not isinstance(use, int | float) or not 1 <= use <= 5:
        return None
    letter = ""
    if options:
        letter = extract_letter_regex(text, list(options), options) or ""
        if not letter:
            return None
    return SelfRAGSegment.model_validate(
        {"chunk_id": chunk_id, "relevance": rel, "support": sup, "utility": int(use),
         "answer": text, "letter": letter}
    )  # fmt: skip


def _sentences(
    seg: SelfRAGSegment, options: dict[str, str], cite: list[str]
) -> list[AnswerSentence]:
    """The chosen segment's sentences, each citing its passage (the chosen option, as one
    sentence, for a multiple-choice question)."""
    if seg.letter:
        return [AnswerSentence(text=f"{seg.letter}. {options[seg.letter]}", chunk_ids=cite)]
    spans = [seg.answer[a:b].strip() for a, b in split_sentences(seg.answer)]
    return [AnswerSentence(text=t, chunk_ids=cite) for t in spans if t]


class SelfRAG(QAMethod):
    """Options: ``DEFAULTS`` (``retriever`` None: the ``[retrieval]`` setting)."""

    name = "selfrag"
    needs_index = True

    def __init__(self, runtime: Any, **options: Any):
        merged = merge_options(self.name, options, DEFAULTS)
        if merged["retrieval"] not in RETRIEVAL_MODES:
            raise BioragError(
                f"selfrag retrieval must be one of {', '.join(RETRIEVAL_MODES)}, "
                f"not {merged['retrieval']!r}",
                param="retrieval",
            )
        if int(merged["k"]) < 1:
            raise BioragError("selfrag k must be at least 1", param="k")
        super().__init__(runtime, **merged)

    # -- 1. retrieve? -----------------------------------------------------------------------
    async def needs_retrieval(self, question: Question) -> bool:
        if question.passages or self.options["retrieval"] == "always" or self.rt.llm is None:
            return True
        tpl = PromptTemplate.load(PROMPTS, "selfrag_retrieve")
        req = tpl.request(
            {"question": question.text, "options": question.options_block()},
            stage="selfrag_retrieve",
            json_schema=RETRIEVE_SCHEMA,
            max_tokens=16,
        )
        try:
            resp = await self.rt.llm.chat(req)
        except LLMUnavailableError:
            raise
        except LLMError:
            return True  # when in doubt, retrieve
        said = resp.parsed.get("retrieve") if isinstance(resp.parsed, dict) else resp.text
        return str(said).strip().lower() != "no"

    # -- 2. one segment per passage ---------------------------------------------------------
    async def segment(self, question: Question, passage: Any) -> SelfRAGSegment | None:
        assert self.rt.llm is not None
        tpl = PromptTemplate.load(PROMPTS, "selfrag_segment")
        req = tpl.request(
            {
                "question": question.text,
                "options": question.options_block(),
                "passage": numbered_passages([passage.text]),
                "answer_instruction": MC_INSTRUCTION if question.options else TEXT_INSTRUCTION,
            },
            stage="selfrag_segment",
            json_schema=segment_schema(list(question.options)),
            max_tokens=SEGMENT_TOKENS,
        )
        try:
            resp = await self.rt.llm.chat(req)
        except LLMUnavailableError:
            raise
        except LLMError:
            return None
        return parse_segment(passage.chunk_id, resp.parsed, question.options)

    # -- the method ------------------------------------------------------------------------
    async def answer(self, question: Question) -> Answer:
        retrieve = await self.needs_retrieval(question)
        if not retrieve:
            details = self._details(retrieved=False)
            ans = await answer_from_context(
                self.rt, self.name, question, [], [], details=details,
                notes=["SELF-RAG: the model judged that no retrieval was needed"], exact=False,
            )  # fmt: skip
            return await self._exact(question, ans, [])
        s = self.rt.settings.retrieval
        retriever = str(self.options["retriever"] or s.retriever)
        k = int(self.options["k"])
        passages = await retrieve_passages(self.rt, question, question.text, k, retriever)
        if self.rt.llm is None:
            return await self._floor(question, passages)
        found = await asyncio.gather(*(self.segment(question, p) for p in passages))
        w_rel, w_sup, w_use = (float(self.options[x]) for x in ("w_rel", "w_sup", "w_use"))
        segments = [seg for seg in found if seg is not None]
        for seg in segments:
            seg.score = round(critique_score(seg, w_rel, w_sup, w_use), 4)
        segments.sort(key=lambda seg: -seg.score)
        details = self._details(
            retrieved=True, segments=segments, unusable=len(passages) - len(segments)
        )
        return await self._from_segments(question, passages, segments, details)

    async def _from_segments(
        self,
        question: Question,
        passages: list[Any],
        segments: list[SelfRAGSegment],
        details: SelfRAGDetails,
    ) -> Answer:
        by_id = {p.chunk_id: p for p in passages}
        order = [seg.chunk_id for seg in segments]
        order += [p.chunk_id for p in passages if p.chunk_id not in order]
        evidence = [Evidence.of_passage(by_id[c]) for c in order]
        for rank, e in enumerate(evidence, 1):
            e.rank = rank
        notes = []
        if details.unusable:
            notes.append(f"SELF-RAG: {details.unusable} segment(s) not usable, dropped")
        base: dict[str, Any] = {
            "method": self.name,
            "question_id": question.id,
            "evidence": evidence,
            "details": details,
            "llm_used": True,
            "notes": notes,
        }
        if not segments:  # the reader answers over the passages, and that is counted
            note_fallback(self.rt.llm, "selfrag_segment")
            items = [ContextItem(p.text, [p.chunk_id], 0.0, p.chunk_id) for p in passages]
            notes.append("SELF-RAG: no passage gave a usable segment; the reader answered")
            ans = await answer_from_context(
                self.rt,
                self.name,
                question,
                items,
                passages,
                details=details,
                notes=notes,
                exact=False,
            )
            return await self._exact(question, ans, [p.text for p in passages])
        best = segments[0]
        passage = by_id[best.chunk_id]
        cite = [best.chunk_id]
        ans = Answer(
            **base,
            context=passage.text,
            answer=best.letter or best.answer,
            answer_text=question.options.get(best.letter, "") if best.letter else best.answer,
            raw_output=best.answer,
            sentences=_sentences(best, question.options, cite),
        )
        return await self._exact(question, ans, [passage.text])

    async def _floor(self, question: Question, passages: list[Any]) -> Answer:
        """No model, no reflection: the floor over the chunks in the reranker's order."""
        scores = await asyncio.to_thread(
            self.rt.reranker.score, question.text, [p.text for p in passages]
        )
        ranked = sorted(zip(passages, scores, strict=True), key=lambda t: -float(t[1]))
        items = [ContextItem(p.text, [p.chunk_id], float(sc), p.chunk_id) for p, sc in ranked]
        details = self._details(retrieved=True)
        ans = await answer_from_context(
            self.rt, self.name, question, items, [p for p, _ in ranked], details=details,
            notes=["SELF-RAG needs a model for its reflection: chunks ranked by the reranker"],
            exact=False,
        )  # fmt: skip
        return await self._exact(question, ans, [it.text for it in items])

    def _details(self, **fields: Any) -> SelfRAGDetails:
        return SelfRAGDetails.model_validate({"mode": self.options["retrieval"], **fields})

    async def _exact(self, question: Question, ans: Answer, contexts: list[str]) -> Answer:
        if not (self.options["exact_answer"] and wants_exact(question)):
            return ans
        return await with_exact(self.rt, question, ans, contexts)
