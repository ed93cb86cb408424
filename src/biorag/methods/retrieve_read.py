"""Retrieve then read: the question (and options) as the query, the top chunks as the context."""

from __future__ import annotations

from biorag.errors import BioragError
from biorag.methods.base import Answer, QAMethod, Question, retrieve_passages
from biorag.methods.context import ContextItem, answer_from_context, merge_options


class RetrieveRead(QAMethod):
    """Options: ``k`` (chunks in the context, default retrieval.k) and ``retriever``."""

    name = "retrieve-read"
    needs_index = True

    async def answer(self, question: Question) -> Answer:
        settings = self.rt.settings.retrieval
        opts = merge_options(self.name, self.options, {"k": settings.k, "retriever": None})
        k = opts["k"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise BioragError(f"{self.name} option k must be a positive integer, not {k!r}")
        retriever = str(opts["retriever"] or settings.retriever)
        query = question.text
        if question.options:
            query += " " + " ".join(question.options.values())
        passages = await retrieve_passages(self.rt, question, query, k, retriever)
        items = [ContextItem(text=p.text, chunk_ids=[p.chunk_id], score=p.score) for p in passages]
        return await answer_from_context(self.rt, self.name, question, items, passages)
