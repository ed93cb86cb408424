"""Dry-run answers of the denoising judges (:mod:`biorag.llm.dry_run`): every item kept."""

from __future__ import annotations

import json

from biorag.llm.dry_run import dry_run_reply, numbers
from biorag.llm.types import ChatRequest


@dry_run_reply("denoise")
def denoise(req: ChatRequest) -> str:
    prompt = req.last_user_message()
    if req.json_schema is not None or "JSON" in prompt:
        return json.dumps({str(n): "yes" for n in numbers(prompt)})
    return "Yes"
