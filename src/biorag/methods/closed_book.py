"""Closed book: the model answers from its own knowledge, with no retrieval (the Baseline)."""

from __future__ import annotations

from biorag.answer.floor import answer_without_llm
from biorag.answer.reader import read_multiple_choice
from biorag.errors import BioragError
from biorag.methods.base import Answer, QAMethod, Question


class ClosedBook(QAMethod):
    name = "closed-book"
    needs_index = False

    async def answer(self, question: Question) -> Answer:
        llm = self.rt.llm
        if llm is None:
            # No model and no context: the floor can only compare options with the question.
            if not question.options:
                raise BioragError(
                    "closed-book needs an LLM for open questions; configure [llm] or use "
                    "--method retrieve-read"
                )
            res = answer_without_llm(
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
        if not question.options:
            raise BioragError("closed-book answers multiple-choice questions; pass --options JSON")
        res = await read_multiple_choice(
            llm, question.text, question.options, None, self.rt.settings.answer.extraction
        )
        return Answer(
            method=self.name,
            question_id=question.id,
            answer=res.answer,
            answer_text=res.answer_text,
            raw_output=res.raw_output,
            parse_failed=res.parse_failed,
            llm_used=True,
        )
