"""Scoring modes: the official tools' numbers, or biorag's own variants.

``official`` (the default) reproduces what each benchmark's own evaluator reports, so a table
made with biorag can stand next to the papers':

* **PubMedQA** (``evaluation.py`` of github.com/pubmedqa/pubmedqa):
  ``sklearn.metrics.accuracy_score`` and ``f1_score(truth, preds, average="macro")`` over every
  test question. The script requires a prediction for every question; an unanswered one is
  submitted as :data:`UNANSWERED`, which scikit-learn then counts as a class of its own (F1 0),
  so macro-F1 is averaged over four classes whenever a question went unanswered.
* **MIRAGE** (github.com/Teddy-XiongGZ/MIRAGE): accuracy per subset (MMLU-Med, MedQA-US,
  MedMCQA, PubMedQA*, BioASQ-Y/N), and the benchmark's score is the mean of the five subset
  accuracies, not the accuracy over the pooled questions. MIRAGE's evaluator never leaves a
  question unanswered: its ``locate_answer`` reads a letter from the text after
  ``"answer_choice": "`` and falls back to "A" when no rule matches
  (:func:`mirage_locate_answer`). So an answer biorag could not parse is scored as the letter
  ``locate_answer`` finds in its raw output ("A" by default), not as wrong; a parsed answer
  keeps biorag's letter.

``biorag`` keeps the stricter or different variants biorag used before, under their own name:
PubMedQA macro-F1 over the answered labels only (an unanswered question is a false negative of
its gold label, not a class), MIRAGE accuracy pooled over all questions.

Every scores block says which mode made it (``scoring``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from biorag.answer.locate import mirage_locate_answer
from biorag.errors import BioragError

__all__ = [
    "SCORING_MODES",
    "UNANSWERED",
    "check_scoring",
    "mean_of_subsets",
    "mirage_locate_answer",
    "sklearn_choice",
]

SCORING_MODES = ("official", "biorag")
#: the label an unanswered question is submitted as to the official PubMedQA script
UNANSWERED = "<unanswered>"


def check_scoring(scoring: str) -> str:
    """``scoring`` if it is a known mode, else a one-line error naming the modes."""
    if scoring not in SCORING_MODES:
        raise BioragError(
            f"scoring must be one of {', '.join(SCORING_MODES)}, not {scoring!r} (official: "
            "each benchmark's own evaluator; biorag: biorag's variants, see docs/fidelity.md)",
            param="scoring",
        )
    return scoring


def sklearn_choice(golds: Sequence[str | None], preds: Sequence[str | None]) -> dict[str, float]:
    """Accuracy and macro-F1 exactly as PubMedQA's ``evaluation.py`` computes them (an
    unanswered prediction submitted as :data:`UNANSWERED`)."""
    from sklearn.metrics import accuracy_score, f1_score

    truth = [UNANSWERED if g is None else g for g in golds]
    submitted = [UNANSWERED if p is None else p for p in preds]
    if not truth:
        return {"accuracy": 0.0, "macro_f1": 0.0}
    return {
        "accuracy": float(accuracy_score(truth, submitted)),
        "macro_f1": float(f1_score(truth, submitted, average="macro")),
    }


def mean_of_subsets(per_subset: Mapping[str, Mapping[str, Any]], key: str = "accuracy") -> float:
    """The unweighted mean of ``key`` over the subsets (MIRAGE's benchmark average)."""
    values = [float(row[key]) for row in per_subset.values() if key in row]
    return sum(values) / len(values) if values else 0.0
