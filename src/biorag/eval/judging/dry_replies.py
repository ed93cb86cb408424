"""Dry-run answers of the five-point judge (:mod:`biorag.llm.dry_run`)."""

from __future__ import annotations

import json

from biorag.llm.dry_run import dry_run_reply
from biorag.llm.types import ChatRequest


@dry_run_reply("judge_score")
def judge_score(req: ChatRequest) -> str:
    return json.dumps({"score": 3, "reason": "dry run"})
