"""Dry-run answers of VectorGraphRAG's triplet extraction (:mod:`biorag.llm.dry_run`)."""

from __future__ import annotations

import json

from biorag.extract.dry_replies import triple_lines
from biorag.llm.dry_run import after, dry_run_reply, first_passage, first_words, numbers
from biorag.llm.types import ChatRequest


@dry_run_reply("kg_triplets")
def kg_triplets(req: ChatRequest) -> str:
    prompt = req.last_user_message()
    question = first_words(after(prompt, "Question:").splitlines()[0], 6)
    answer = after(prompt, "Correct answer:").splitlines()[0]
    return f"SUBJECT: {question}\nPREDICATE: has the answer\nOBJECT: {answer}"


@dry_run_reply("kg_triplets_text")
def kg_triplets_text(req: ChatRequest) -> str:

    return triple_lines(first_passage(req.last_user_message(), "Sentence:").splitlines()[0])


@dry_run_reply("kg_triplets_batch")
def kg_triplets_batch(req: ChatRequest) -> str:
    rows = [
        {"id": n, "subject": "item", "predicate": "relates to", "object": f"answer {n}"}
        for n in numbers(req.last_user_message())
    ]
    return json.dumps(rows)
