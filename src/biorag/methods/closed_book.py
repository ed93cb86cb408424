"""Closed book: the model answers from its own knowledge, with no retrieval (the Baseline).

Multiple-choice questions get the reader's choice; open questions (BioASQ factoid, list,
summary, yes/no without options) a short free-text answer and, where the question is scored on
one, an exact answer (:mod:`biorag.methods.exact_step`). This is also IP-RAR's "w/o retrieval"
ablation. Without a model, an open question has nothing to be answered from: it is recorded as
unanswered, with a note, and the run goes on.
"""

from __future__ import annotations

import asyncio

from biorag.answer.floor import answer_without_llm
from biorag.answer.reader import (
    read_free_text,
    read_multiple_choice,
    read_multiple_choice_mirage,
)
from biorag.methods.base import Answer, AnswerSentence, QAMethod, Question
from biorag.methods.exact_step import with_exact


class ClosedBook(QAMethod):
    name = "closed-book"
    needs_index = False

    async def answer(self, question: Question) -> Answer:
        llm = self.rt.llm
        if not question.options:
            return await self._open(question)
        if llm is None:
            # No model and no context: the floor can only compare options with the question.
            res = await asyncio.to_thread(
                answer_without_llm,
                question.text,
                question.options,
                [("question", question.text)],
                self.rt.embedder,
            )
            return Answer(
                method=self.name,
                question_id=question.id,
                answer=res.answer,
                answer_text=res.answer_text,
                notes=["no-LLM floor: options compared with the question only", res.rationale],
            )
        if self.rt.settings.answer.prompt == "mirage":
            read = await read_multiple_choice_mirage(llm, question.text, question.options, None)
        else:
            read = await read_multiple_choice(
                llm, question.text, question.options, None, self.rt.settings.answer.extraction
            )
        return Answer(
            method=self.name,
            question_id=question.id,
            answer=read.answer,
            answer_text=read.answer_text,
            raw_output=read.raw_output,
            parse_failed=read.parse_failed,
            llm_used=True,
        )

    async def _open(self, question: Question) -> Answer:
        """A free-text answer from the model's knowledge (and its exact answer, when scored)."""
        llm = self.rt.llm
        if llm is None:
            return Answer(
                method=self.name,
                question_id=question.id,
                answer="",
                parse_failed=True,
                notes=[
                    "no-LLM floor: a closed-book open question has no evidence to answer from "
                    "(configure [llm], or use a retrieving method such as retrieve-read)"
                ],
            )
        r = await read_free_text(llm, question.text, [])
        ans = Answer(
            method=self.name,
            question_id=question.id,
            answer=r.answer,
            answer_text=r.answer_text,
            raw_output=r.raw_output,
            sentences=[AnswerSentence(text=s) for s, _ in r.sentences],
            llm_used=True,
        )
        return await with_exact(self.rt, question, ans, [])
