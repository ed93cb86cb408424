"""Official BioASQ Task B measures (document retrieval, Phase A; exact answers, Phase B).

Reference: the organisers' evaluator, ``BioASQ/Evaluation-Measures`` (``EvaluatorTask1b.java``,
``QuestionAnswerEvaluator.java``, ``ExactAnswer.java``, ``Task1bData.java``), version ``-e 8``/
``9`` (BioASQ8 and later), and the BioASQ participants-area FAQ (Task 8b).

Documents (per question, then the arithmetic mean; questions without gold documents are skipped,
as the BioASQ9 evaluator does)
  * precision / recall / F1: :func:`~biorag.eval.metrics.retrieval.document_prf` on the submitted
    list, at most ``max_docs = 10`` documents (the submission limit).
  * AP = ``sum_r P@r * rel(r) / min(|gold|, 10)`` over the (at most 10) submitted documents. Since
    BioASQ8 the denominator is ``min(|L_R|, 10)``; BioASQ3-7 divided by 10, BioASQ1-2 by |L_R|.
    MAP is the mean AP.
  * GMAP = ``exp(mean(log(AP + eps)))``. The official evaluator uses ``eps = 0.00001``
    (``double epsilon = 0.00001``), which is the default here; pass ``epsilon=0.01`` for the
    value some descriptions quote.

Yes/no: accuracy, F1 of "yes", F1 of "no", macro F1 = (F1_yes + F1_no) / 2. The official code
builds each label's confusion from per-question correctness: for label L, TP = gold L and
correct, FN = gold L and wrong, FP = gold not-L and wrong; F1 = 2TP / (2TP + FP + FN), 0 when the
denominator is 0. An unanswered question is wrong (so it is a false positive of the other label).

Factoid (up to 5 ranked candidates; each candidate may carry synonyms): strict accuracy = the
first candidate matches a gold synonym; lenient accuracy = any of the top 5 does; MRR = mean of
1/rank of the first matching candidate within the top 5 (0 if none). The official evaluator does
not cut at 5 (a submission rule), so ``official`` mode counts every submitted candidate.

List: per question precision = TP / |submitted|, recall = TP / (TP + FN), F1 = 2PR / (P + R)
(0 when P or R is 0), then the mean over list questions. Each submitted entry matches at most one
gold entry (the first, in gold order, sharing a synonym), and a matched gold entry is consumed, so
repeated answers are false positives.

Matching: the evaluator lower-cases answers as it reads them and compares strings exactly. In
``official`` mode that is all that is done, and, as the reader of ``-e 5``/``8``/``9`` does
(``readExactAnswerListOfArraysv3``), only the first synonym of a submitted entry counts (gold
entries keep all theirs) and an empty submitted entry ``[]`` is dropped (it holds no rank; an
empty string is an entry matching nothing). Else answers are also stripped, inner whitespace
runs collapsed, and every synonym of a submitted entry counts. Submitted documents are read
once each (the evaluator's ``readDocuments`` drops repeats), in both modes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from biorag.eval.metrics.qa import mean_rows
from biorag.eval.metrics.retrieval import dedupe, document_prf

__all__ = [
    "EPSILON",
    "MAX_DOCS",
    "MAX_FACTOID",
    "average_precision",
    "document_measures",
    "factoid_measures",
    "factoid_scores",
    "gmap",
    "list_measures",
    "list_prf",
    "norm_answer",
    "split_answers",
    "yesno_label",
    "yesno_label_substring",
    "yesno_measures",
]

EPSILON = 0.00001
MAX_DOCS = 10
MAX_FACTOID = 5

_PUNCT_EDGE = re.compile(r"^[\s\W_]+|[\s\W_]+$")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")


def norm_answer(text: Any) -> str:
    """Lower-cased, stripped, inner whitespace collapsed: the string BioASQ compares."""
    return " ".join(str(text).split()).lower()


# ---------------------------------------------------------------- documents


def average_precision(
    gold: Iterable[str], pred: Iterable[str], max_docs: int | None = MAX_DOCS, unique: bool = True
) -> float:
    """BioASQ8+ AP: ``sum_r P@r * rel(r) / min(|gold|, 10)`` over the top ``max_docs`` (all when
    None); ``unique=False`` keeps repeated submitted ids (the official reader drops them)."""
    g = set(dedupe(gold))
    p = (dedupe(pred) if unique else [str(d).strip() for d in pred])[:max_docs]
    if not g:
        return 0.0
    hits = 0
    total = 0.0
    for rank, d in enumerate(p, start=1):
        if d in g:
            hits += 1
            total += hits / rank
    return total / min(len(g), MAX_DOCS)


def gmap(aps: Sequence[float], epsilon: float = EPSILON) -> float:
    """Geometric mean of ``AP + epsilon`` over questions (BioASQ GMAP); 0.0 for no questions."""
    if not aps:
        return 0.0
    return math.exp(sum(math.log(a + epsilon) for a in aps) / len(aps))


def document_measures(
    golds: Sequence[Iterable[str]],
    preds: Sequence[Iterable[str]],
    *,
    max_docs: int | None = MAX_DOCS,
    epsilon: float = EPSILON,
    unique: bool = True,
) -> dict[str, float]:
    """Mean precision, recall, F1, MAP and GMAP of document lists; ``n`` questions scored.

    Questions whose gold list is empty are skipped; a missing/empty prediction scores 0.
    ``max_docs=None`` is the official evaluator: every submitted id counts, each once (its
    ``readDocuments`` drops repeats). ``unique=False`` counts a repeated id each time
    (``calculatePRF`` over such a list: TP/FP per submitted item, FN per gold item absent).
    """
    if len(golds) != len(preds):
        raise ValueError(f"{len(golds)} gold lists but {len(preds)} predictions")
    rows: list[tuple[float, float, float, float]] = []
    for g, p in zip(golds, preds, strict=True):
        gl = dedupe(g)
        if not gl:
            continue
        pl = (dedupe(p) if unique else [str(d).strip() for d in p])[:max_docs]
        prec, rec, f1 = document_prf(gl, pl) if unique else _official_prf(gl, pl)
        rows.append((prec, rec, f1, average_precision(gl, pl, max_docs, unique)))
    n = len(rows)
    if not n:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0, "map": 0.0, "gmap": 0.0, "n": 0}
    return {
        "precision": sum(r[0] for r in rows) / n,
        "recall": sum(r[1] for r in rows) / n,
        "f1": sum(r[2] for r in rows) / n,
        "map": sum(r[3] for r in rows) / n,
        "gmap": gmap([r[3] for r in rows], epsilon),
        "n": n,
    }


def _official_prf(gold: list[str], pred: list[str]) -> tuple[float, float, float]:
    """The official ``calculatePRF``: each submitted item is a TP (in gold) or an FP, each gold
    item absent from the submission an FN; an empty submission scores 0."""
    if not pred:
        return 0.0, 0.0, 0.0
    g = set(gold)
    tp = sum(1 for d in pred if d in g)
    fn = sum(1 for d in gold if d not in set(pred))
    precision = tp / len(pred)
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
    return precision, recall, f1


# ---------------------------------------------------------------- yes/no


def yesno_label(value: Any) -> str | None:
    """``"yes"``/``"no"`` for an answer that is exactly yes or no (case, surrounding spaces and
    punctuation ignored), else ``None`` (scored as wrong).

    The official reader maps any string *containing* "yes" (else "no") to that label; that would
    turn "unknown" into "no", so only an answer that is the word itself is accepted here.
    """
    if value is None:
        return None
    text = _PUNCT_EDGE.sub("", str(value).lower())
    return text if text in ("yes", "no") else None


def yesno_label_substring(value: Any) -> str | None:
    """The official reader's label: lower-cased, "yes" when the answer contains "yes", else
    "no" when it contains "no" (so "unknown" is "no"), else none (wrong)."""
    if value is None:
        return None
    text = str(value).lower()
    return "yes" if "yes" in text else "no" if "no" in text else None


def _f1_label(golds: Sequence[str | None], correct: Sequence[bool], label: str) -> float:
    tp = sum(1 for g, c in zip(golds, correct, strict=True) if g == label and c)
    fn = sum(1 for g, c in zip(golds, correct, strict=True) if g == label and not c)
    fp = sum(1 for g, c in zip(golds, correct, strict=True) if g != label and not c)
    denom = 2 * tp + fp + fn
    return 2 * tp / denom if denom else 0.0


def yesno_measures(
    golds: Sequence[Any], preds: Sequence[Any], official: bool = False
) -> dict[str, float]:
    """``accuracy``, ``f1_yes``, ``f1_no``, ``macro_f1`` and ``n`` for yes/no questions; a
    prediction is read by :func:`yesno_label` (biorag) or :func:`yesno_label_substring`
    (``official``)."""
    if len(golds) != len(preds):
        raise ValueError(f"{len(golds)} gold answers but {len(preds)} predictions")
    g = [yesno_label(x) for x in golds]
    p = [(yesno_label_substring if official else yesno_label)(x) for x in preds]
    correct = [pp is not None and pp == gg for gg, pp in zip(g, p, strict=True)]
    n = len(g)
    if not n:
        return {"accuracy": 0.0, "f1_yes": 0.0, "f1_no": 0.0, "macro_f1": 0.0, "n": 0}
    f1_yes, f1_no = _f1_label(g, correct, "yes"), _f1_label(g, correct, "no")
    return {
        "accuracy": sum(correct) / n,
        "f1_yes": f1_yes,
        "f1_no": f1_no,
        "macro_f1": (f1_yes + f1_no) / 2,
        "n": n,
    }


# ---------------------------------------------------------------- factoid and list


def _entry(value: Any) -> set[str]:
    """One answer entry (a string or a list of synonyms) as a set of normalised strings."""
    if isinstance(value, str):
        items: Iterable[Any] = [value]
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    elif value is None:
        items = []
    else:
        items = [value]
    return {s for s in (norm_answer(x) for x in items if x is not None) if s}


def _entries(value: Any, *, flat_is_synonyms: bool) -> list[set[str]]:
    """A gold or predicted answer as a list of entries, each a set of synonyms.

    A string is one entry. A flat list of strings is one entry of synonyms when
    ``flat_is_synonyms`` (factoid gold) and otherwise one entry per string (ranked factoid
    candidates, list answers). A list of lists is taken as entries of synonyms.
    """
    if value is None:
        return []
    if isinstance(value, str):
        e = _entry(value)
        return [e] if e else []
    if not isinstance(value, list | tuple):
        e = _entry(value)
        return [e] if e else []
    if flat_is_synonyms and all(isinstance(x, str) for x in value):
        e = _entry(list(value))
        return [e] if e else []
    out = [_entry(x) for x in value]
    return [e for e in out if e]


def _official_entries(value: Any) -> list[set[str]]:
    """A submitted answer as the official reader takes it: each entry the lower-cased first
    synonym, an empty entry (``[]``) dropped (``readExactAnswerListOfArraysv3`` adds nothing
    for it, so it holds no rank), a string one entry."""
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, list | tuple):
        return [{str(value).lower()}]
    out: list[set[str]] = []
    for x in value:
        if isinstance(x, list | tuple):
            if x:
                out.append({str(x[0]).lower()})
        else:
            out.append({str(x).lower()} if x is not None else set())
    return out


def _official_gold(value: Any, *, flat_is_synonyms: bool) -> list[set[str]]:
    """Gold entries with every synonym lower-cased only (no stripping), empty ones skipped."""
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, list | tuple):
        return [{str(value).lower()}]
    if flat_is_synonyms and all(isinstance(x, str) for x in value):
        return [{x.lower() for x in value}] if value else []
    rows = (
        {str(y).lower() for y in x} if isinstance(x, list | tuple) else {str(x).lower()}
        for x in value
        if x is not None
    )
    return [r for r in rows if r]


def split_answers(value: Any) -> Any:
    """A string holding several answers as a list; other values unchanged.

    A JSON array (``'["IL-6", "TNF"]'``) is parsed; otherwise the text is split at line breaks
    and semicolons (never commas: names such as "2,4-D" contain them), and leading bullets or
    list numbers (``"- "``, ``"1. "``) are dropped.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            return parsed
    parts = (_BULLET.sub("", p).strip() for p in re.split(r"[\n;]+", text))
    return [p for p in parts if p]


def factoid_scores(
    gold: Any, pred: Any, k: int | None = MAX_FACTOID, split: bool = True, official: bool = False
) -> tuple[float, float, float]:
    """Strict accuracy, lenient accuracy and reciprocal rank of one factoid answer.

    ``gold``: a string, a list of synonyms, or a list of synonym lists (any matches);
    ``pred``: a ranked list whose items are strings or synonym lists (top ``k``), or a string
    (see :func:`split_answers`). ``official``: the evaluator's reading (module docstring):
    every submitted entry, its first synonym only, a string one entry (``k``/``split`` unused).
    """
    if official:
        synonyms = set().union(*_official_gold(gold, flat_is_synonyms=True))
        cands = _official_entries(pred)
    else:
        synonyms = set().union(*_entries(gold, flat_is_synonyms=True))
        cands = _entries(split_answers(pred) if split else pred, flat_is_synonyms=False)[:k]
    for rank, cand in enumerate(cands, start=1):
        if cand & synonyms:
            return (1.0 if rank == 1 else 0.0), 1.0, 1.0 / rank
    return 0.0, 0.0, 0.0


def factoid_measures(
    golds: Sequence[Any],
    preds: Sequence[Any],
    k: int | None = MAX_FACTOID,
    split: bool = True,
    official: bool = False,
) -> dict[str, float]:
    """Mean ``strict_accuracy``, ``lenient_accuracy`` and ``mrr`` over factoid questions
    (``official``: the evaluator's reading, see :func:`factoid_scores`)."""
    if len(golds) != len(preds):
        raise ValueError(f"{len(golds)} gold answers but {len(preds)} predictions")
    rows = [factoid_scores(g, p, k, split, official) for g, p in zip(golds, preds, strict=True)]
    n = len(rows)
    if not n:
        return {"strict_accuracy": 0.0, "lenient_accuracy": 0.0, "mrr": 0.0, "n": 0}
    return {
        "strict_accuracy": sum(r[0] for r in rows) / n,
        "lenient_accuracy": sum(r[1] for r in rows) / n,
        "mrr": sum(r[2] for r in rows) / n,
        "n": n,
    }


def list_prf(
    gold: Any, pred: Any, split: bool = True, official: bool = False
) -> tuple[float, float, float]:
    """Precision, recall and F1 of one list answer (BioASQ ``calculatePRFforListQuestions``).

    ``gold``: entries (strings or synonym lists); ``pred``: entries likewise, or a string (see
    :func:`split_answers`). An empty prediction scores ``(0, 0, 0)``. ``official``: the
    evaluator's reading (first synonym of a submitted entry; an empty entry ``[]`` dropped).
    """
    if official:
        g = _official_gold(gold, flat_is_synonyms=False)
        p = _official_entries(pred)
    else:
        g = _entries(gold, flat_is_synonyms=False)
        p = _entries(split_answers(pred) if split else pred, flat_is_synonyms=False)
    if not p:
        return 0.0, 0.0, 0.0
    unmatched = list(range(len(g)))
    tp = fp = 0
    for entry in p:
        hit = next((i for i in unmatched if entry & g[i]), None)
        if hit is None:
            fp += 1
        else:
            tp += 1
            unmatched.remove(hit)
    # False negatives: gold entries still unmatched that no remaining submitted entry names
    # (each submitted entry can excuse one gold entry here too, as in the official loop).
    remaining = list(p)
    fn = 0
    for i in unmatched:
        j = next((j for j, e in enumerate(remaining) if e & g[i]), None)
        if j is None:
            fn += 1
        else:
            remaining.pop(j)
    precision = tp / (tp + fp)
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
    return precision, recall, f1


def list_measures(
    golds: Sequence[Any], preds: Sequence[Any], split: bool = True, official: bool = False
) -> dict[str, float]:
    """Mean ``precision``, ``recall`` and ``f1`` over list questions; ``n`` questions
    (``official``: the evaluator's reading, see :func:`list_prf`)."""
    if len(golds) != len(preds):
        raise ValueError(f"{len(golds)} gold answers but {len(preds)} predictions")
    rows = [list_prf(g, p, split, official) for g, p in zip(golds, preds, strict=True)]
    return mean_rows(rows, ("precision", "recall", "f1"))
