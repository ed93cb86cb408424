"""Dry-run answer of the LLM reranker (:mod:`biorag.llm.dry_run`): every passage relevant."""

from __future__ import annotations

from biorag.llm.dry_run import dry_run_reply
from biorag.llm.types import ChatRequest


@dry_run_reply("rerank")
def rerank(req: ChatRequest) -> str:
    return "Yes"
