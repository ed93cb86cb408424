"""From per-passage verdicts to a sentence's verdict, and citation quality.

A sentence's verdict over the union of its citations is the strongest of its passages'
verdicts, except that a contradiction outranks partial support (a reader must see it):
supported > contradicted > partly supported > not supported. A sentence citing nothing is not
supported.

Citation quality (after ALCE, Gao et al. 2023), from the verdicts of a set of answers:
- citation recall: the share of sentences their citations support fully. The verifiers judge
  each cited passage on its own, so "the union supports" is read as "one of them supports": a
  sentence backed only by two passages together counts as not supported (a floor of ALCE's
  joint check);
- citation precision: the share of citations that support their sentence at least in part on
  their own. (ALCE also counts a citation needed when removing it loses the sentence's support;
  with the union read as the best single passage, that never adds one: a needed passage
  supports on its own.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from biorag.verify.models import Label, PassageVerdict

_RANK: dict[str, int] = {
    "supported": 3, "contradicted": 2, "partly_supported": 1, "not_supported": 0,
}  # fmt: skip


def strongest(labels: Iterable[Label]) -> Label:
    """The sentence's verdict over its passages' ``labels`` (not supported when there are
    none)."""
    return max(labels, key=lambda label: _RANK[label], default="not_supported")


def union_label(verdicts: Sequence[PassageVerdict]) -> Label:
    """The sentence's verdict over all of ``verdicts`` (its cited passages)."""
    return strongest(v.label for v in verdicts)


def citation_counts(sentences: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Counts for citation recall and precision over answer sentences as dumped
    (``{"chunk_ids", "support": {"label", "verdicts"}}``); sentences without a verdict are left
    out and counted in ``unverified``; ``uncited``: checked sentences that cite nothing."""
    c = {"sentences": 0, "supported": 0, "citations": 0, "needed": 0, "uncited": 0,
         "unverified": 0}  # fmt: skip
    for s in sentences:
        support = s.get("support")
        if not support:
            c["unverified"] += 1
            continue
        c["sentences"] += 1
        verdicts = [PassageVerdict.model_validate(v) for v in support.get("verdicts") or []]
        c["uncited"] += not s.get("chunk_ids")
        c["supported"] += union_label(verdicts) == "supported"
        for v in verdicts:
            c["citations"] += 1
            c["needed"] += v.label in ("supported", "partly_supported")
    return c


def citation_quality(sentences: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Citation recall and precision (None where there is nothing to divide) with their counts."""
    c = citation_counts(sentences)
    return {
        "recall": c["supported"] / c["sentences"] if c["sentences"] else None,
        "precision": c["needed"] / c["citations"] if c["citations"] else None,
        **c,
    }
