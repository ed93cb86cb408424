"""Dry-run answers of the summarization stages (:mod:`biorag.llm.dry_run`): the first claim or
the first words, keyed by the claim ids a batched prompt names."""

from __future__ import annotations

import json
import re

from biorag.llm.dry_run import dry_run_reply, first_passage, first_words, passage_texts
from biorag.llm.types import ChatRequest

_ID_LINE = re.compile(r"^### Claim id: (\S+)", re.M)


def _batched(prompt: str, marker: str) -> str:
    ids = _ID_LINE.findall(prompt)
    blocks = re.split(r"^### Claim id: \S+\n", prompt, flags=re.M)[1:]
    summaries = [
        {"claim_id": cid, "summary": first_passage(block, marker).splitlines()[0]}
        for cid, block in zip(ids, blocks, strict=False)
    ]
    return json.dumps({"summaries": summaries})


@dry_run_reply("layer_summary_batch")
def layer_summary_batch(req: ChatRequest) -> str:
    return _batched(req.last_user_message(), "Claim:")


@dry_run_reply("coi_test_summary")
def coi_test_summary(req: ChatRequest) -> str:
    prompt = req.last_user_message()
    if _ID_LINE.search(prompt):
        return _batched(prompt, "Central claim:")
    return first_words(first_passage(prompt, "Central claim:"), 60)


@dry_run_reply("layer_summary")
def layer_summary(req: ChatRequest) -> str:
    return first_passage(req.last_user_message(), "Claim:").splitlines()[0]


@dry_run_reply("compress", "raptor_summary")
def compress(req: ChatRequest) -> str:
    prompt = req.last_user_message()
    return first_words(" ".join(passage_texts(prompt)) or prompt, 60)
