"""Dry-run answer of the verifier (:mod:`biorag.llm.dry_run`): "supported" for every listed
pair, each with the first words of its passage as the span."""

from __future__ import annotations

import json
import re

from biorag.llm.dry_run import dry_run_reply
from biorag.llm.evidence import parse_passages
from biorag.llm.types import ChatRequest

_PAIR = re.compile(r"^\d+\. sentence \d+ against (\S+)$", re.M)


@dry_run_reply("verify")
def verify(req: ChatRequest) -> str:
    prompt = req.messages[-1]["content"]
    text_of = dict(parse_passages(prompt))
    verdicts = [
        {"label": "supported", "span": " ".join(text_of.get(pid, "").split()[:8])}
        for pid in _PAIR.findall(prompt)
    ]
    return json.dumps({"verdicts": verdicts})
