"""Dry-run answers of the methods' own stages (IP-RAR, CRAG, SELF-RAG, VectorGraphRAG;
:mod:`biorag.llm.dry_run`)."""

from __future__ import annotations

import json
import re

from biorag.llm.dry_run import after, dry_run_reply, first_words, numbers
from biorag.llm.types import ChatRequest


def _scores(req: ChatRequest) -> str:
    return json.dumps(
        {"scores": [{"id": str(n), "score": 80} for n in numbers(req.last_user_message())]}
    )


dry_run_reply("crag_evaluate", "iprar_support")(_scores)


@dry_run_reply("iprar_answer")
def iprar_answer(req: ChatRequest) -> str:
    return "Dry-run draft answer [1]."


@dry_run_reply("iprar_final")
def iprar_final(req: ChatRequest) -> str:
    return "Dry-run answer [1]."


@dry_run_reply("iprar_relevance")
def iprar_relevance(req: ChatRequest) -> str:
    return "Yes"


@dry_run_reply("iprar_relevance_batch")
def iprar_relevance_batch(req: ChatRequest) -> str:
    verdicts = [{"id": str(n), "relevant": True} for n in numbers(req.last_user_message())]
    return json.dumps({"verdicts": verdicts})


@dry_run_reply("iprar_prereason")
def iprar_prereason(req: ChatRequest) -> str:
    question = after(req.last_user_message(), "Question:").splitlines()[0]
    words = re.findall(r"[A-Za-z][A-Za-z0-9-]{3,}", question)[:5]
    return json.dumps({"keywords": words, "synonyms": {}, "virtual_answer": question})


@dry_run_reply("crag_keywords")
def crag_keywords(req: ChatRequest) -> str:
    return first_words(after(req.last_user_message(), "Question:").splitlines()[0], 6)


@dry_run_reply("kg_answer")
def kg_answer(req: ChatRequest) -> str:
    return "The answer is A."


@dry_run_reply("selfrag_retrieve")
def selfrag_retrieve(req: ChatRequest) -> str:
    return json.dumps({"retrieve": "yes"})


@dry_run_reply("selfrag_segment")
def selfrag_segment(req: ChatRequest) -> str:
    mc = re.search(r"^A\. ", req.last_user_message(), re.M)
    answer = "A" if mc else "Dry-run answer from the passage."
    reply = {"relevance": "relevant", "answer": answer, "support": "fully", "utility": 4}
    return json.dumps(reply)
