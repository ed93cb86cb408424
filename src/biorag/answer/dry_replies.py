"""Dry-run answers of the reading stages (:mod:`biorag.llm.dry_run`): option A, a cited
sentence, or exact answers in the format of the question type."""

from __future__ import annotations

import json
import re

from biorag.llm.dry_run import after, dry_run_reply, passage_texts
from biorag.llm.types import ChatRequest

_QTYPE = re.compile(r"^Question type: (yesno|factoid|list)\b", re.M)


@dry_run_reply("answer")
def answer(req: ChatRequest) -> str:
    if req.json_schema is not None:
        return json.dumps({"reasoning": "dry run", "answer": "A"})
    return "Dry-run answer: A [1]."  # reasoning or a cited free-text answer; never an echo


@dry_run_reply("answer_extract")
def answer_extract(req: ChatRequest) -> str:
    return '{"answer": "A"}'


@dry_run_reply("exact_answer")
def exact_answer(req: ChatRequest) -> str:
    """``{"answer": ...}`` in the format of the question type the prompt names: "yes", or
    capitalised words of the passages (up to 5 for a factoid, 3 for a list)."""
    prompt = req.last_user_message()
    m = _QTYPE.search(prompt)
    qtype = m.group(1) if m else "factoid"
    if qtype == "yesno":
        return json.dumps({"answer": "yes"})
    passages = (
        "\n".join(passage_texts(prompt)) or after(prompt, "Passages:").split("\nQuestion:")[0]
    )
    names = list(dict.fromkeys(re.findall(r"\b[A-Z][A-Za-z0-9-]{2,}\b", passages)))
    return json.dumps({"answer": names[: 5 if qtype == "factoid" else 3] or ["dry run"]})


@dry_run_reply("answer_mirage")
def answer_mirage(req: ChatRequest) -> str:
    return json.dumps({"step_by_step_thinking": "Dry run.", "answer_choice": "A"})
