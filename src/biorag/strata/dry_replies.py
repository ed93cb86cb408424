"""Dry-run answers of the BioStrataKG stages (:mod:`biorag.llm.dry_run`)."""

from __future__ import annotations

import json
import re

from biorag.llm.dry_run import dry_run_reply, first_words, passage_texts, sentences
from biorag.llm.types import ChatRequest


@dry_run_reply("strata_triplets")
def strata_triplets(req: ChatRequest) -> str:
    return "[]"


@dry_run_reply("strata_doc")
def strata_doc(req: ChatRequest) -> str:
    return json.dumps({"methods": [], "datasets": [], "domains": []})


@dry_run_reply("strata_normalize")
def strata_normalize(req: ChatRequest) -> str:
    return json.dumps({"choice": 0})


@dry_run_reply("biocdqa_generate")
def biocdqa_generate(req: ChatRequest) -> str:
    """A question of the asked type on the first paper, its first sentence quoted verbatim."""
    prompt = req.last_user_message()
    m = re.search(r'of type "(\w[\w ]*)"', prompt)
    qtype = m.group(1) if m else "factual"
    abstract = re.search(r"^Abstract: (.*)$", "\n".join(passage_texts(prompt)) or prompt, re.M)
    sents = sentences(abstract.group(1)) if abstract else []
    quote = sents[0] if sents else (abstract.group(1).strip() if abstract else "")
    return json.dumps(
        {
            "question": f"What is reported about {first_words(quote, 8) or 'this'}?",
            "type": qtype,
            "ideal_answer": quote or "dry run",
            "source_sentences": [quote] if quote else [],
        }
    )


@dry_run_reply("biocdqa_ground")
def biocdqa_ground(req: ChatRequest) -> str:
    return json.dumps({"grounded": "yes", "reason": "dry run"})


@dry_run_reply("strata_refine_names")
def strata_refine_names(req: ChatRequest) -> str:
    names = re.findall(r"^- (.+)$", req.last_user_message(), re.M)
    return json.dumps({"names": [{"graph": n, "question": n.lower()} for n in names]})
