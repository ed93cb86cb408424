"""Retrieve then read: the question (and options) as the query, the top chunks as the context."""

from __future__ import annotations

from biorag.answer.floor import answer_without_llm
from biorag.answer.reader import read_free_text, read_multiple_choice
from biorag.methods.base import Answer, AnswerSentence, QAMethod, Question, retrieve_passages


class RetrieveRead(QAMethod):
    """Options: ``k`` (chunks in the context, default retrieval.k) and ``retriever``."""

    name = "retrieve-read"
    needs_index = True

    async def answer(self, question: Question) -> Answer:
        settings = self.rt.settings.retrieval
        k = int(self.options.get("k", settings.k))
        retriever = str(self.options.get("retriever", settings.retriever))
        query = question.text
        if question.options:
            query += " " + " ".join(question.options.values())
        passages = await retrieve_passages(self.rt, question, query, k, retriever)
        evidence = [p.to_dict() for p in passages]
        texts = [p.text for p in passages]
        llm = self.rt.llm
        base = {
            "method": self.name,
            "question_id": question.id,
            "evidence": evidence,
            "context": "\n\n".join(texts),
        }
        if llm is None:
            res = answer_without_llm(
                question.text,
                question.options,
                [(p.chunk_id, p.text) for p in passages],
                self.rt.embedder,
            )
            return Answer(
                **base,
                answer=res.answer,
                answer_text=res.answer_text,
                sentences=[AnswerSentence(text=s, chunk_ids=[c]) for s, c in res.sentences],
                notes=["no-LLM floor (configure [llm] for a real reader)", res.rationale],
            )
        if question.options:
            r = await read_multiple_choice(
                llm, question.text, question.options, texts, self.rt.settings.answer.extraction
            )
            return Answer(
                **base,
                answer=r.answer,
                answer_text=r.answer_text,
                raw_output=r.raw_output,
                parse_failed=r.parse_failed,
                llm_used=True,
            )
        r = await read_free_text(llm, question.text, texts)
        return Answer(
            **base,
            answer=r.answer,
            answer_text=r.answer_text,
            raw_output=r.raw_output,
            sentences=[
                AnswerSentence(text=s, chunk_ids=[passages[i - 1].chunk_id for i in cites])
                for s, cites in r.sentences
            ],
            llm_used=True,
        )
