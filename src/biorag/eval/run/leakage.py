"""Questions whose answers went into the knowledge graph an eval uses: found, refused or set aside.

A KG built from QA pairs holds their answers (VectorGraphRAG's KG is built from a QA dataset).
Scoring a question on a KG built from that same question measures recall of the KG, not
answering. Before anything is answered, :func:`check_overlap` compares the questions with the
provenance of every KG the methods read (:mod:`biorag.kg.provenance`). A question overlaps when
its id, its question text or its question with its correct answer went into the KG (exact
repeats, by hash), or when it is a near duplicate of a source question: a paraphrase, found by
embedding similarity (:mod:`.near_duplicates`: question cosine >= 0.92 with the bundled MiniLM,
and so for question with answer where both answers are known; KGs built before the source
questions' texts were kept are checked by ids and hashes only, and the result says so).
Policies, the same for both kinds:

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
from biorag.eval.run.near_duplicates import THRESHOLD, near_duplicates
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
    #: every overlapping question's id, exact repeats and near duplicates
    overlapping: list[str] = field(default_factory=list)
    items: list[Any] = field(default_factory=list)
    #: the near duplicates (not exact repeats): id, question, the KG's question, its id, cosine
    near: list[dict[str, Any]] = field(default_factory=list)
    threshold: float = THRESHOLD

    def to_dict(self) -> dict[str, Any]:
        near = {d["question_id"] for d in self.near}
        return {
            "policy": self.policy,
            "kgs": self.kgs,
            "overlapping": len(self.overlapping),
            "exact": len([i for i in self.overlapping if i not in near]),
            "near_duplicates": len(self.near),
            "threshold": self.threshold,
            "examples": self.overlapping[:SHOW],
            "near_examples": self.near[:SHOW],
            "scored": len(self.items),
        }

    def _how(self) -> str:
        if any(not k["complete"] for k in self.kgs):
            return " (ids only: the KG predates provenance.json; paraphrases not checked)"
        if any(not k["paraphrases_checked"] for k in self.kgs):
            return " (ids/hashes only: the KG kept no source questions; paraphrases not checked)"
        if any(not k["source_questions_complete"] for k in self.kgs):
            return " (paraphrases checked against the builds that kept their source questions)"
        return ""

    def note(self) -> str | None:
        """One line for report.md ('' when no KG was checked)."""
        if not self.kgs:
            return None
        names = ", ".join(k["kg"] for k in self.kgs)
        how = self._how()
        if not self.overlapping:
            return (
                f"KG overlap: none of the questions went into {names}, nor is a paraphrase of "
                f"one that did (cosine < {self.threshold}){how}."
            )
        n = len(self.overlapping)
        kinds = (
            f"{n - len(self.near)} exact repeats, {len(self.near)} paraphrases at cosine >= "
            f"{self.threshold}"
        )
        if self.policy == "exclude":
            return (
                f"KG overlap: {n} questions went into {names}{how} and were left out "
                f"(overlap policy exclude; {kinds}); {len(self.items)} scored."
            )
        return (
            f"KG overlap: {n} of the scored questions went into {names}{how} ({kinds}); scored "
            "anyway (overlap policy allow): these scores are not held out."
        )


def _overlaps(item: Any, prov: Any) -> bool:
    if str(item.id) in prov.ids:
        return True
    if text_hash(item.question) in prov.question_hashes:
        return True
    answer = gold_answer_text(item)
    return bool(answer) and text_hash(item.question, answer) in prov.pair_hashes


def _embedder(paraphrases: Any) -> Any:
    """The embedder of ``paraphrases``: itself, or what its ``get()`` gives (built late)."""
    return paraphrases.get() if hasattr(paraphrases, "get") else paraphrases


def _near(items: list[Any], prov: Any, hit: set[str], paraphrases: Any, threshold: float,
          kg: str) -> list[dict[str, Any]]:  # fmt: skip
    """The near duplicates, in ``prov``'s source questions, of the ``items`` not in ``hit``."""
    rest = [it for it in items if str(it.id) not in hit]
    if not rest or not prov.questions:
        return []
    found = near_duplicates(
        [it.question for it in rest],
        [q for _, q, _ in prov.questions],
        _embedder(paraphrases),
        threshold,
        answers=[gold_answer_text(it) for it in rest],
        source_answers=[a for _, _, a in prov.questions],
    )
    return [
        {"question_id": str(rest[i].id), "question": rest[i].question, "kg": kg,
         "kg_question_id": prov.questions[j][0], "kg_question": prov.questions[j][1],
         "cosine": cos, "cosine_with_answers": with_answers}
        for i, j, cos, with_answers in found
    ]  # fmt: skip


def check_overlap(
    items: list[Any],
    kg_dirs: Iterable[str | Path],
    policy: str,
    *,
    paraphrases: Any = None,
    threshold: float = THRESHOLD,
) -> OverlapCheck:
    """Compare ``items`` with every KG in ``kg_dirs`` and apply ``policy`` (see the module).

    ``paraphrases``: the embedder of the paraphrase check (an
    :class:`~.near_duplicates.ParaphraseModel`, built only when a KG kept its source questions,
    or an embedder); None checks exact repeats only (reported so)."""
    if policy not in POLICIES:
        raise BioragError(f"overlap policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    result = OverlapCheck(policy, items=list(items), threshold=threshold)
    hit: set[str] = set()
    for d in dict.fromkeys(str(k) for k in kg_dirs):
        prov = load_provenance(d)
        found = [str(it.id) for it in items if _overlaps(it, prov)]
        hit.update(found)
        checked = paraphrases is not None and prov.questions is not None
        near = _near(items, prov, hit, paraphrases, threshold, d) if checked else []
        hit.update(n["question_id"] for n in near)
        result.near += near
        result.kgs.append({
            "kg": d, "complete": prov.complete, "overlapping": len(found) + len(near),
            "near_duplicates": len(near), "paraphrases_checked": checked,
            "source_questions_complete": prov.questions_complete,
        })  # fmt: skip
    result.overlapping = [str(it.id) for it in items if str(it.id) in hit]
    if not result.overlapping:
        return result
    if policy == "refuse":
        names = ", ".join(k["kg"] for k in result.kgs if k["overlapping"])
        shown = ", ".join(result.overlapping[:SHOW])
        more = len(result.overlapping) - SHOW
        para = ""
        if result.near:
            first = result.near[0]
            para = (
                f"; {len(result.near)} of them are paraphrases (cosine >= {threshold}, e.g. "
                f"{first['question_id']} {first['question']!r} ~ {first['kg_question']!r}, "
                f"{first['cosine']})"
            )
        raise BioragError(
            f"{len(result.overlapping)} of {len(items)} questions went into the knowledge graph "
            f"{names} (ids {shown}{f' and {more} more' if more > 0 else ''}{para}): their "
            "answers are in it. Build the KG from other data (MedMCQA: its train file), or set "
            "the overlap policy to exclude (score only the other questions) or allow (score them "
            "anyway; report.md says so)",
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
