"""Retrieve then read: the question (and options) as the query, the top chunks as the context."""

from __future__ import annotations

from biorag.methods.base import Answer, QAMethod, Question, retrieve_passages
from biorag.methods.context import ContextItem, answer_from_context


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
        items = [ContextItem(text=p.text, chunk_ids=[p.chunk_id], score=p.score) for p in passages]
        return await answer_from_context(self.rt, self.name, question, items, passages)
