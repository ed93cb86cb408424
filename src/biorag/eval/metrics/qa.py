"""Answer accuracy and macro-F1 for multiple-choice and label questions.

Definitions
-----------
* **Accuracy** (CLAIMS Table 1, VectorGraphRAG Table 2, PubMedQA ``evaluation.py``): the fraction
  of questions whose prediction equals the gold answer. An unanswered question (``None``, an
  empty string, a parse failure mapped to ``None`` by the caller) counts as wrong and stays in
  the denominator.
* **Macro-F1** (PubMedQA official ``evaluation.py``: ``sklearn.metrics.f1_score(truth, preds,
  average='macro')``): the unweighted mean over labels of ``F1 = 2TP / (2TP + FP + FN)``. With
  ``labels=None`` the labels are, as in scikit-learn's default, the union of the gold labels and
  the labels actually predicted. An unanswered prediction never forms a class of its own: it is a
  false negative for its gold label only (the official script refuses missing predictions; this
  is the natural extension). A label with no gold, no prediction (possible only when ``labels``
  is given) scores 0, as scikit-learn's ``zero_division`` default does.

Values are compared after ``str.strip`` and ``str.casefold``, so ``"B"`` equals ``"b "``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

__all__ = ["accuracy", "f1_per_label", "is_unanswered", "macro_f1", "norm_label", "per_subset"]


def is_unanswered(value: Any) -> bool:
    """True for ``None``, an empty or blank string, or an empty list/tuple/set."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, list | tuple | set | frozenset):
        return len(value) == 0
    return False


def norm_label(value: Any) -> str | None:
    """A comparable label: stripped and case-folded text, or ``None`` when unanswered."""
    if is_unanswered(value):
        return None
    return str(value).strip().casefold()


def _check_lengths(golds: Sequence[Any], preds: Sequence[Any]) -> None:
    if len(golds) != len(preds):
        raise ValueError(f"{len(golds)} gold answers but {len(preds)} predictions")


def accuracy(golds: Sequence[Any], preds: Sequence[Any]) -> float:
    """Fraction of predictions equal to their gold answer; unanswered counts as wrong.

    Returns 0.0 for no questions.
    """
    _check_lengths(golds, preds)
    if not golds:
        return 0.0
    hits = 0
    for g, p in zip(golds, preds, strict=True):
        pg, pp = norm_label(g), norm_label(p)
        hits += int(pp is not None and pp == pg)
    return hits / len(golds)


def f1_per_label(
    golds: Sequence[Any], preds: Sequence[Any], labels: Sequence[Any] | None = None
) -> dict[str, float]:
    """F1 of each label, ``2TP / (2TP + FP + FN)`` (0.0 when the denominator is 0), by
    scikit-learn's ``f1_score``.

    ``labels=None`` uses the union of gold and predicted labels (scikit-learn's default), sorted.
    """
    _check_lengths(golds, preds)
    g = [norm_label(x) for x in golds]
    p = [norm_label(x) for x in preds]
    if labels is None:
        names = sorted({x for x in g if x is not None} | {x for x in p if x is not None})
    else:
        names = [n for n in (norm_label(x) for x in labels) if n is not None]
    if not names or not g:
        return dict.fromkeys(names, 0.0)
    from sklearn.metrics import f1_score

    # an unreadable answer (None) is a label of its own outside ``names``: a miss for the gold
    # label, a false positive for none
    none = "\x00unanswered"
    scores = f1_score(
        [none if x is None else x for x in g],
        [none if x is None else x for x in p],
        labels=names,
        average=None,
        zero_division=0.0,
    )
    return {label: float(v) for label, v in zip(names, scores, strict=True)}


def macro_f1(
    golds: Sequence[Any], preds: Sequence[Any], labels: Sequence[Any] | None = None
) -> float:
    """Unweighted mean of :func:`f1_per_label` (the PubMedQA official measure). 0.0 if no labels."""
    per = f1_per_label(golds, preds, labels)
    return sum(per.values()) / len(per) if per else 0.0


def per_subset(
    subsets: Sequence[Hashable],
    golds: Sequence[Any],
    preds: Sequence[Any],
    metrics: dict[str, Callable[[Sequence[Any], Sequence[Any]], float]] | None = None,
) -> dict[str, dict[str, float]]:
    """Each metric computed within each subset (e.g. an MMLU subject), keyed by subset name.

    ``metrics`` maps a name to ``f(golds, preds)``; the default is ``{"accuracy": accuracy}``.
    Every entry also carries ``n``, the subset size. Subsets appear in sorted order.
    """
    _check_lengths(golds, preds)
    if len(subsets) != len(golds):
        raise ValueError(f"{len(subsets)} subset names but {len(golds)} gold answers")
    chosen = metrics if metrics is not None else {"accuracy": accuracy}
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(subsets):
        groups.setdefault(str(s), []).append(i)
    out: dict[str, dict[str, float]] = {}
    for name in sorted(groups):
        idx = groups[name]
        gs = [golds[i] for i in idx]
        ps = [preds[i] for i in idx]
        row: dict[str, float] = {"n": len(idx)}
        for mname, fn in chosen.items():
            row[mname] = fn(gs, ps)
        out[name] = row
    return out


def mean_rows(rows: Sequence[Sequence[float]], names: Sequence[str]) -> dict[str, float]:
    """Per-question score rows averaged column by column: ``{name: mean, ..., "n": count}``
    (every mean 0.0 when there is no row)."""
    n = len(rows)
    out: dict[str, float] = {
        name: (sum(r[i] for r in rows) / n if n else 0.0) for i, name in enumerate(names)
    }
    out["n"] = n
    return out
