"""Dry-run answers of the CLAIMS component metrics' judges (:mod:`biorag.llm.dry_run`)."""

from __future__ import annotations

import json

from biorag.llm.dry_run import dry_run_reply, first_words, passage_texts, sentences
from biorag.llm.types import ChatRequest


@dry_run_reply("eval_key_claims", "eval_summary_claims")
def claim_lists(req: ChatRequest) -> str:
    prompt = req.last_user_message()
    text = " ".join(passage_texts(prompt)) or prompt
    return json.dumps({"claims": sentences(text)[:5] or [first_words(text, 20)]})


@dry_run_reply("eval_*")
def yes(req: ChatRequest) -> str:  # the component metrics' yes/no judges
    return "Yes"
