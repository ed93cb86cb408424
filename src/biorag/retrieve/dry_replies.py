"""Dry-run answers of the query-formulation stages (:mod:`biorag.llm.dry_run`)."""

from __future__ import annotations

from biorag.llm.dry_run import after, dry_run_reply, first_words
from biorag.llm.types import ChatRequest


@dry_run_reply("rewrite")
def rewrite(req: ChatRequest) -> str:
    return after(req.last_user_message(), "Question:").splitlines()[0]


@dry_run_reply("hyde")
def hyde(req: ChatRequest) -> str:
    return "A. " + first_words(after(req.last_user_message(), "Question:"), 40)
