"""Retrieval measures: ranked-run measures through ``ir_measures`` and set-based document P/R/F1.

Ranked measures (``R@k``, ``MRR@k``, ``nDCG@k``, ``P@k``) are computed by
:func:`biorag.retrieve.trec.evaluate_run`, i.e. by ``ir_measures`` (trec_eval semantics: ``P@k``
divides by ``k``; ``R@k`` by the number of relevant documents; ``RR@k`` is the reciprocal rank of
the first relevant document within the top ``k``; ``nDCG@k`` uses gain = relevance and a
``log2(rank + 1)`` discount, normalised by the ideal ranking). A judged query the run does not
answer counts as 0 (like ``trec_eval -c``).

Set-based document precision/recall/F1 follow BioASQ's ``calculatePRF``
(``BioASQ/Evaluation-Measures``, ``QuestionAnswerEvaluator.java``), which IP-RAR also reports for
BioCDQA ("Mean Precision, Mean Recall, Mean F-measure"): per question ``P = |R ∩ G| / |R|``,
``R = |R ∩ G| / |G|``, ``F1 = 2PR / (P + R)``, each 0 when undefined (an empty response scores
0 on all three), then the arithmetic mean over questions. Duplicate document ids in a response are
dropped (first occurrence kept) before scoring.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from biorag.eval.metrics.qa import mean_rows
from biorag.retrieve.trec import Qrels, Run, evaluate_run

__all__ = [
    "dedupe",
    "document_prf",
    "mean_document_prf",
    "qrels_from_gold",
    "retrieval_measures",
    "run_from_ranked",
]


def dedupe(ids: Iterable[str]) -> list[str]:
    """The ids in order with repeats removed (first occurrence kept); blank ids dropped."""
    seen: set[str] = set()
    out: list[str] = []
    for raw in ids:
        d = str(raw).strip()
        if d and d not in seen:
            seen.add(d)
            out.append(d)
    return out


def run_from_ranked(ranked: Mapping[str, Sequence[str]]) -> Run:
    """A run (query id -> ``(docid, score)``) from ranked document ids, best first.

    Scores are positional (``len - i``); :func:`evaluate_run` keeps the given order anyway.
    """
    run: Run = {}
    for qid, docs in ranked.items():
        ds = dedupe(docs)
        run[str(qid)] = [(d, float(len(ds) - i)) for i, d in enumerate(ds)]
    return run


def qrels_from_gold(gold: Mapping[str, Iterable[str]]) -> Qrels:
    """Binary qrels (relevance 1) from query id -> relevant document ids."""
    return {str(q): {d: 1 for d in dedupe(docs)} for q, docs in gold.items()}


def retrieval_measures(
    run: Mapping[str, Sequence[tuple[str, float]]],
    qrels: Mapping[str, Mapping[str, int]],
    ks: Sequence[int] = (1, 5, 10),
    *,
    missing_as_zero: bool = True,
) -> dict[str, float]:
    """``R@k``, ``MRR@k``, ``nDCG@k`` and ``P@k`` for each ``k``, averaged over judged queries.

    ``MRR@k`` is ir_measures' ``RR@k`` averaged over queries, renamed. Returns e.g.
    ``{"R@10": .., "MRR@10": .., "nDCG@10": .., "P@10": ..}``.
    """
    names: dict[str, str] = {}
    for k in ks:
        if int(k) < 1:
            raise ValueError(f"cut-off k must be >= 1, got {k}")
        for ours, theirs in (("R", "R"), ("MRR", "RR"), ("nDCG", "nDCG"), ("P", "P")):
            names[f"{theirs}@{int(k)}"] = f"{ours}@{int(k)}"
    scores = evaluate_run(run, qrels, tuple(names), missing_as_zero=missing_as_zero)
    return {names[m]: v for m, v in scores.items()}


def document_prf(gold: Iterable[str], pred: Iterable[str]) -> tuple[float, float, float]:
    """Precision, recall and F1 of one predicted document set against the gold set.

    An empty prediction scores ``(0, 0, 0)``; an empty gold set gives recall 0 (BioASQ).
    """
    g = set(dedupe(gold))
    p = dedupe(pred)
    if not p:
        return 0.0, 0.0, 0.0
    tp = sum(1 for d in p if d in g)
    precision = tp / len(p)
    recall = tp / len(g) if g else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
    return precision, recall, f1


def mean_document_prf(
    golds: Sequence[Iterable[str]], preds: Sequence[Iterable[str]]
) -> dict[str, float]:
    """Mean of :func:`document_prf` over questions: ``precision``, ``recall``, ``f1``, ``n``."""
    if len(golds) != len(preds):
        raise ValueError(f"{len(golds)} gold lists but {len(preds)} predictions")
    rows = [document_prf(g, p) for g, p in zip(golds, preds, strict=True)]
    return mean_rows(rows, ("precision", "recall", "f1"))
