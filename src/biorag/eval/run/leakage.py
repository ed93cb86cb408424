"""Questions whose answers went into the knowledge graph an eval uses: found, refused or set aside.

A KG built from QA pairs holds their answers (VectorGraphRAG's KG is built from a QA dataset).
Scoring a question on a KG built from that same question measures recall of the KG, not
answering. Before anything is answered, :func:`check_overlap` compares the questions with the
provenance of every KG the methods read (:mod:`biorag.kg.provenance`). A question overlaps when
its id, its question text or its question with its correct answer went into the KG. Policies:

* ``refuse`` (default): a :class:`~biorag.errors.BioragError` naming the KG, the count and a
  few ids, before any answer;
* ``exclude``: the overlapping questions are left out of the run (the rest is scored);
* ``allow``: every question is scored.

Whatever the policy, the result goes into ``metrics.json`` (``kg_overlap``) and ``report.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biorag.errors import BioragError
from biorag.kg.provenance import load_provenance, text_hash

__all__ = ["POLICIES", "OverlapCheck", "check_overlap", "gold_answer_text"]

POLICIES = ("refuse", "exclude", "allow")
SHOW = 5


def gold_answer_text(item: Any) -> str:
    """The text of ``item``'s correct answer: the gold option's text for multiple choice, else
    the gold answer itself ('' when there is none)."""
    gold = item.gold
    if isinstance(gold, str) and gold in (item.options or {}):
        return str(item.options[gold])
    if isinstance(gold, list):
        first = gold[0] if gold else ""
        return str(first[0] if isinstance(first, list) and first else first)
    return "" if gold is None else str(gold)


@dataclass
class OverlapCheck:
    """What :func:`check_overlap` found and kept."""

    policy: str
    kgs: list[dict[str, Any]] = field(default_factory=list)
    overlapping: list[str] = field(default_factory=list)
    items: list[Any] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "kgs": self.kgs,
            "overlapping": len(self.overlapping),
            "examples": self.overlapping[:SHOW],
            "scored": len(self.items),
        }

    def note(self) -> str | None:
        """One line for report.md ('' when no KG was checked)."""
        if not self.kgs:
            return None
        names = ", ".join(k["kg"] for k in self.kgs)
        partial = any(not k["complete"] for k in self.kgs)
        how = " (ids only: the KG predates provenance.json)" if partial else ""
        if not self.overlapping:
            return f"KG overlap: none of the questions went into {names}{how}."
        n = len(self.overlapping)
        if self.policy == "exclude":
            return (
                f"KG overlap: {n} questions went into {names}{how} and were left out "
                f"(overlap policy exclude); {len(self.items)} scored."
            )
        return (
            f"KG overlap: {n} of the scored questions went into {names}{how}; scored anyway "
            "(overlap policy allow): these scores are not held out."
        )


def _overlaps(item: Any, prov: Any) -> bool:
    if str(item.id) in prov.ids:
        return True
    if text_hash(item.question) in prov.question_hashes:
        return True
    answer = gold_answer_text(item)
    return bool(answer) and text_hash(item.question, answer) in prov.pair_hashes


def check_overlap(items: list[Any], kg_dirs: Iterable[str | Path], policy: str) -> OverlapCheck:
    """Compare ``items`` with every KG in ``kg_dirs`` and apply ``policy`` (see the module)."""
    if policy not in POLICIES:
        raise BioragError(f"overlap policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    result = OverlapCheck(policy, items=list(items))
    hit: set[str] = set()
    for d in dict.fromkeys(str(k) for k in kg_dirs):
        prov = load_provenance(d)
        found = [str(it.id) for it in items if _overlaps(it, prov)]
        hit.update(found)
        result.kgs.append({"kg": d, "complete": prov.complete, "overlapping": len(found)})
    result.overlapping = [str(it.id) for it in items if str(it.id) in hit]
    if not result.overlapping:
        return result
    if policy == "refuse":
        names = ", ".join(k["kg"] for k in result.kgs if k["overlapping"])
        shown = ", ".join(result.overlapping[:SHOW])
        more = len(result.overlapping) - SHOW
        raise BioragError(
            f"{len(result.overlapping)} of {len(items)} questions went into the knowledge graph "
            f"{names} (ids {shown}{f' and {more} more' if more > 0 else ''}): their answers are "
            "in it. Build the KG from other data (MedMCQA: its train file), or set the overlap "
            "policy to exclude (score only the other questions) or allow (score them anyway; "
            "report.md says so)",
            param="overlap",
        )
    if policy == "exclude":
        result.items = [it for it in items if str(it.id) not in hit]
        if not result.items:
            raise BioragError(
                f"every one of the {len(items)} questions went into the knowledge graph "
                f"{', '.join(k['kg'] for k in result.kgs)}: nothing is left to score; build the "
                "KG from other data"
            )
    return result
