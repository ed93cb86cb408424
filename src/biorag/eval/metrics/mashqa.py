"""MASH-QA sentence-level measures (Zhu et al., EMNLP Findings 2020; IP-RAR Table 3).

MASH-QA answers are sets of (possibly non-contiguous) sentences of a long document. Per question,
with ``P`` the predicted sentence set and ``G`` the gold set:

* precision = ``|P ∩ G| / |P|`` (0 when ``P`` is empty),
* recall = ``|P ∩ G| / |G|`` (0 when ``G`` is empty),
* F1 = ``2PR / (P + R)`` (0 when either is 0),
* exact match = 1 when ``P == G`` as sets, else 0 (an empty prediction never matches a
  non-empty gold set),

each averaged over questions (macro average). IP-RAR scores its LLM answers' EM with a GPT-4o
judge; this module computes the dataset's own set-equality definition.

Sentences are identified either by index (``int``) or by text; text is compared after stripping,
collapsing inner whitespace and case-folding. A dict entry uses its ``"text"`` field (the shape of
``biorag.methods.base.AnswerSentence``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from biorag.eval.metrics.qa import mean_rows

__all__ = ["sentence_key", "sentence_measures", "sentence_scores"]


def sentence_key(value: Any) -> int | str | None:
    """A comparable key for one sentence: an index, normalised text, or ``None`` if blank."""
    if isinstance(value, bool):
        raise TypeError("a sentence is an index or a text, not a bool")
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        value = value.get("text", "")
    text = " ".join(str(value).split()).casefold()
    return text or None


def _keys(values: Iterable[Any] | None) -> set[int | str]:
    if values is None:
        return set()
    if isinstance(values, str):
        values = [values]
    return {k for k in (sentence_key(v) for v in values) if k is not None}


def sentence_scores(
    gold: Iterable[Any] | None, pred: Iterable[Any] | None
) -> tuple[float, float, float, float]:
    """Precision, recall, F1 and exact match of one predicted sentence set."""
    g, p = _keys(gold), _keys(pred)
    tp = len(g & p)
    precision = tp / len(p) if p else 0.0
    recall = tp / len(g) if g else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
    em = 1.0 if p and p == g else 0.0
    return precision, recall, f1, em


def sentence_measures(
    golds: Sequence[Iterable[Any] | None], preds: Sequence[Iterable[Any] | None]
) -> dict[str, float]:
    """Mean ``precision``, ``recall``, ``f1`` and ``exact_match`` over questions; ``n``."""
    if len(golds) != len(preds):
        raise ValueError(f"{len(golds)} gold sets but {len(preds)} predictions")
    rows = [sentence_scores(g, p) for g, p in zip(golds, preds, strict=True)]
    return mean_rows(rows, ("precision", "recall", "f1", "exact_match"))
