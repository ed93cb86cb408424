"""A question's own source documents kept out of its retrieved context (``--source-docs``).

A PubMedQA question is its abstract's title, and its answer the abstract's conclusion: a
PubMed corpus (MedRAG's, or one built from PubMedQA's contexts) holds the answer, in the
question's own document. In the open (retrieval) setting an evaluation therefore hands each ask
a :class:`~biorag.retrieve.exclusion.DocExclusion` of the question's own documents
(:func:`exclusion_for`), which every searching method obeys (``rt.searcher`` of the ask's
runtime leaves them out). Policies:

* ``exclude`` (default): each question's *source* document is left out: PubMedQA's (and MIRAGE's
  pubmedqa subset's) PMID. Gold documents that are the benchmark's retrieval target are kept:
  BioASQ's (Task B phase A asks systems to find exactly those in PubMed; phase B gives them;
  the task forbids neither), BioCDQA's and MASH-QA's;
* ``exclude-gold``: every gold document is left out as well (BioASQ: answering without the
  documents the experts cited; the document measures then score nothing);
* ``allow``: nothing is left out; the source documents' hits are still counted, so the report
  says how often a question retrieved its own abstract.

Each prediction record keeps what its ask's searches met (``source_docs``);
:func:`source_exclusion` sums them into ``metrics.json`` (``source_exclusion``) and one line
of ``report.md``. Settings whose questions carry their own context search nothing: the
policy changes nothing there. Nor for ``vectorgraphrag``, which reads a knowledge graph, not
the index (a KG built from the evaluated questions is :mod:`.leakage`'s to find).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from biorag.corpus.datasets.base import QAItem
from biorag.errors import BioragError
from biorag.retrieve.exclusion import DocExclusion

__all__ = [
    "POLICIES",
    "check_policy",
    "exclusion_for",
    "policy_effect",
    "source_documents",
    "source_exclusion",
]

POLICIES = ("exclude", "exclude-gold", "allow")
#: the datasets (or MIRAGE subsets) whose questions are written from one document of theirs
SOURCE_DATASETS = frozenset({"pubmedqa"})


def check_policy(policy: str) -> None:
    if policy not in POLICIES:
        raise BioragError(
            f"source-docs policy must be one of {', '.join(POLICIES)}, not {policy!r} (exclude: "
            "leave out each PubMedQA question's own abstract; exclude-gold: every gold document "
            "too; allow: keep them, counted)",
            param="source_docs",
        )


def source_documents(item: QAItem) -> list[str]:
    """The documents ``item`` was written from (PubMedQA: its PMID, the item's one gold
    document); [] for the others."""
    if item.dataset in SOURCE_DATASETS or (
        item.dataset == "mirage" and item.subset in SOURCE_DATASETS
    ):
        return list(item.gold_docs)
    return []


def policy_effect(policy: str | None, items: Iterable[QAItem]) -> str | None:
    """What ``policy`` does to ``items``, as ``run.json`` records and a resume compares it:
    ``None`` where it changes nothing (no question has a source document of its own, and
    ``exclude-gold`` leaves no gold document out: BioASQ under ``exclude``, MedMCQA, MMLU),
    ``exclude`` for ``exclude-gold`` where every gold document is a source document (PubMedQA:
    both leave out the same ids), else ``policy``."""
    if policy is None:
        return None
    items = list(items)
    if policy == "exclude-gold" and all(
        set(it.gold_docs) <= set(source_documents(it)) for it in items
    ):
        policy = "exclude"
    if policy != "exclude-gold" and not any(source_documents(it) for it in items):
        return None
    return policy


def exclusion_for(item: QAItem, policy: str) -> DocExclusion | None:
    """The exclusion one ask of ``item`` searches under (None: nothing to leave out or count)."""
    own = source_documents(item)
    ids = [*own, *item.gold_docs] if policy == "exclude-gold" else own
    if not ids:
        return None
    return DocExclusion.of(ids, drop=policy != "allow")


def _what(policy: str) -> str:
    if policy == "exclude-gold":
        return "each question's source and gold documents left out of retrieval"
    if policy == "exclude":
        return (
            "each question's own source document (PubMedQA: its abstract, by PMID) left out of "
            "retrieval; gold documents that are the retrieval target (BioASQ) kept"
        )
    return "nothing left out; each question's own source document counted where retrieved"


def source_exclusion(
    policy: str, items: Iterable[QAItem], latest: dict[tuple[str, str], dict[str, Any]],
    methods: list[str],
) -> dict[str, Any]:  # fmt: skip
    """``metrics.json``'s ``source_exclusion``: the policy, how many questions had documents
    to leave out, and per method and in all how many retrieved hits of them were removed (or,
    with ``allow``, kept) in how many questions; ``latest``: the latest record per
    ``(method, question id)``."""
    items = list(items)
    with_docs = [it for it in items if exclusion_for(it, policy) is not None]
    per_method: dict[str, dict[str, int]] = {}
    questions_hit: set[str] = set()
    unrecorded = 0
    for m in methods:
        entry = {"answers": 0, "answers_with_hits": 0, "hits": 0}
        for it in with_docs:
            rec = latest.get((m, it.id))
            if rec is None:
                continue
            info = rec.get("source_docs")
            if not isinstance(info, dict):
                unrecorded += 1
                continue
            entry["answers"] += 1
            hits = int(info.get("hits") or 0)
            entry["hits"] += hits
            if hits:
                entry["answers_with_hits"] += 1
                questions_hit.add(it.id)
        per_method[m] = entry
    out: dict[str, Any] = {
        "policy": policy,
        "what": _what(policy),
        "questions": len(items),
        "questions_with_documents": len(with_docs),
        "questions_hit": len(questions_hit),
        "hits": sum(e["hits"] for e in per_method.values()),
        "per_method": per_method,
    }
    if unrecorded:
        out["answers_unrecorded"] = unrecorded
    out["note"] = _note(out)
    return out


def _note(s: dict[str, Any]) -> str:
    """The one line of report.md."""
    policy, n, hit, hits = s["policy"], s["questions_with_documents"], s["questions_hit"], s["hits"]
    if not n:
        return (
            f"Source documents (--source-docs {policy}): no question has a source document of "
            "its own to leave out"
            + ("; gold documents are kept (exclude-gold leaves them out)." if policy == "exclude"
               else ".")
        )  # fmt: skip
    if policy == "allow":
        return (
            f"Source documents kept (--source-docs allow): {hit} of {n} questions retrieved "
            f"their own source document ({hits} hits): those scores are not held out."
        )
    kind = "source and gold documents" if policy == "exclude-gold" else "own source document"
    return (
        f"Source documents (--source-docs {policy}): each question's {kind} was left out of "
        f"retrieval: {hits} retrieved hits removed, in {hit} of {n} questions."
    )
