"""From per-passage verdicts to a sentence's verdict, and citation quality.

A sentence's verdict over the union of its citations is the strongest of its passages'
verdicts, except that a contradiction outranks partial support (a reader must see it):
supported > contradicted > partly supported > not supported; or, when the rules verifier
found the passages together back it more strongly than any alone, their joint verdict
(:mod:`biorag.verify.joint`). A sentence citing nothing is not supported.

Citation quality (after ALCE, Gao et al. 2023), from the verdicts of a set of answers:
- citation recall: the share of sentences the union of their citations supports fully;
- citation precision: the share of citations that support their sentence at least in part on
  their own, or without which the joint support is weaker (ALCE's "needed").

The LLM verifier judges each passage alone: under it the union is the best single passage.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from biorag.verify.models import JointSupport, Label, PassageVerdict

RANK: dict[str, int] = {
    "supported": 3, "contradicted": 2, "partly_supported": 1, "not_supported": 0,
}  # fmt: skip


def strongest(labels: Iterable[Label]) -> Label:
    """The sentence's verdict over its passages' ``labels`` (not supported when there are
    none)."""
    return max(labels, key=lambda label: RANK[label], default="not_supported")


def union_label(verdicts: Sequence[PassageVerdict], joint: JointSupport | None = None) -> Label:
    """The sentence's verdict over all of ``verdicts`` (its cited passages) and, when there is
    one, their ``joint`` verdict."""
    return strongest([*(v.label for v in verdicts), *([joint.label] if joint else [])])


def citation_counts(sentences: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Counts for citation recall and precision over answer sentences as dumped
    (``{"chunk_ids", "support": {"label", "verdicts"}}``); sentences without a verdict are left
    out and counted in ``unverified``; ``uncited``: checked sentences that cite nothing;
    ``jointly_supported``: the supported ones only their passages together support."""
    c = {"sentences": 0, "supported": 0, "jointly_supported": 0, "citations": 0, "needed": 0,
         "uncited": 0, "unverified": 0}  # fmt: skip
    for s in sentences:
        support = s.get("support")
        if not support:
            c["unverified"] += 1
            continue
        c["sentences"] += 1
        verdicts = [PassageVerdict.model_validate(v) for v in support.get("verdicts") or []]
        joint = JointSupport.model_validate(support["joint"]) if support.get("joint") else None
        needed = set(joint.needed) if joint else set()
        c["uncited"] += not s.get("chunk_ids")
        c["supported"] += union_label(verdicts, joint) == "supported"
        c["jointly_supported"] += joint is not None and joint.label == "supported"
        for v in verdicts:
            c["citations"] += 1
            c["needed"] += v.label in ("supported", "partly_supported") or v.passage_id in needed
    return c


def citation_quality(sentences: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Citation recall and precision (None where there is nothing to divide) with their counts."""
    c = citation_counts(sentences)
    return {
        "recall": c["supported"] / c["sentences"] if c["sentences"] else None,
        "precision": c["needed"] / c["citations"] if c["citations"] else None,
        **c,
    }
